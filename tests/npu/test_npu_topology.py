"""SCALE-Sim topology CSVs are read as scalesim 3.0.0 reads them: ``topology_utils.py``
(``load_arrays_conv``, ``load_arrays_gemm``, ``topo_calc_hyperparams``) of the scalesim
3.0.0 wheel on PyPI, identical to scalesim-project/scale-sim-v3's. The same reader serves
``tmhw npu cycles`` and ``tmhw workload show`` (tests/workload/test_scalesim.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu.topology import detect_form, parse_conv, parse_gemm, read_rows, read_topology
from tmhw.sim import TmhwError

HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, " \
         "Num Filter, Strides,"


def test_conv_row_fields_map_to_layer_and_gemm() -> None:
    (lay,) = parse_conv([HEADER, "c1, 15, 17, 3, 5, 7, 19, 2,"])
    assert (lay.name, lay.ifmap_h, lay.ifmap_w, lay.filt_h, lay.filt_w) == ("c1", 15, 17, 3, 5)
    assert (lay.channels, lay.num_filters, lay.stride) == (7, 19, 2)
    assert lay.mnk == (7 * 7, 19, 3 * 5 * 7)


def test_first_line_is_a_header_whatever_it_holds_and_blank_lines_are_skipped() -> None:
    layers = parse_conv(["a, 8, 8, 3, 3, 1, 1, 1,", "", "b, 9, 9, 3, 3, 2, 4, 1,", "  "])
    assert [lay.name for lay in layers] == ["b"]


def test_the_last_field_is_dropped_so_rows_need_a_trailing_comma() -> None:
    """SCALE-Sim: ``elems = row.split(',')[:-1]``. Without the trailing comma the stride
    is lost (SCALE-Sim then stops on ``elems[7]``, an IndexError)."""
    with pytest.raises(TmhwError, match="end the row with one"):
        parse_conv([HEADER, "c, 8, 8, 3, 3, 1, 1, 1"])
    # with 9 fields and no trailing comma, SCALE-Sim silently loses the 9th (sparsity)
    (lay,) = parse_conv([HEADER, "c, 8, 8, 3, 3, 1, 1, 1, 2:4"])
    assert (lay.sparsity_n, lay.sparsity_m) == (1, 1)


def test_the_ninth_conv_field_is_sparsity_and_strides_serve_both_axes() -> None:
    """``load_arrays_conv`` copies the 8th field into the column stride, then pops the
    last field as the N:M sparsity (scale-sim-v3 topologies/sparsity/conv.csv heads it
    "Sparsity"). A 9th number is no column stride: 20 x 20, 3 x 3, stride 1 gives 18 x 18."""
    (lay,) = parse_conv([HEADER + " Sparsity,", "c, 20, 20, 3, 3, 4, 8, 1, 2:4,"])
    assert (lay.sparsity_n, lay.sparsity_m, lay.stride) == (2, 4, 1)
    assert (lay.ofmap_h, lay.ofmap_w) == (18, 18)
    with pytest.raises(TmhwError, match=r"Sparsity '2' is not of the form N:M"):
        parse_conv([HEADER, "c, 20, 20, 3, 3, 4, 8, 1, 2,"])


def test_output_size_is_scalesims_ceil_form_with_a_partial_window() -> None:
    """scalesim 3.0.0: ofmap = ceil((H - R + s) / s); 16 - 3 = 13 is odd, so stride 2 gives
    8 outputs (the true count is 7). tmhw/validate/data/scalesim/quirk_conv.csv ran through
    scalesim and matches in test_npu_scalesim."""
    (lay,) = parse_conv([HEADER, "q, 16, 16, 3, 3, 8, 12, 2,"])
    assert (lay.ofmap_h, lay.ofmap_w) == (8, 8)
    (lay,) = parse_conv([HEADER, "q, 15, 15, 3, 3, 8, 12, 2,"])
    assert (lay.ofmap_h, lay.ofmap_w) == (7, 7)


def test_dp_in_the_name_makes_one_single_channel_layer_per_channel(tmp_path: Path) -> None:
    p = tmp_path / "dw.csv"
    p.write_text(HEADER + "\nDPconv, 10, 10, 3, 3, 3, 1, 1,\n")
    (row,) = read_rows(p)
    assert row.depthwise and row.mnk == (8 * 8, 1, 9) and row.macs == 3 * 8 * 8 * 9
    layers = read_topology(p)
    assert [lay.name for lay in layers] == ["DPconvChannel_0", "DPconvChannel_1",
                                            "DPconvChannel_2"]
    assert all(lay.channels == 1 and lay.mnk == row.mnk for lay in layers)


@pytest.mark.parametrize("row,words", [
    ("c, 2, 8, 3, 3, 1, 1, 1,", "filter 3x3 larger than IFMAP 2x8"),
    ("c, -4, 8, 3, 3, 1, 1, 0,", "IFMAP Height -4 is not allowed"),
    ("c, 8, 8, 3, 3, 1, 1, 0,", "Strides 0 is not allowed"),
    ("c, 8, eight, 3, 3, 1, 1, 1,", "IFMAP Width 'eight' is not an integer"),
    ("c, 8, 8, 3, 3, 1, 1, 1, 1:1, 5,", "at most 9 fields"),
])
def test_bad_conv_rows_name_the_line_field_and_value(row: str, words: str) -> None:
    with pytest.raises(TmhwError, match="t.csv:2") as e:
        parse_conv([HEADER, row], "t.csv")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_gemm_rows_become_an_m_by_k_input_with_a_1_by_k_filter() -> None:
    (lay,) = parse_gemm(["Layer, M, N, K,", "fc, 37, 91, 53,"])
    assert (lay.ifmap_h, lay.ifmap_w, lay.filt_h, lay.filt_w, lay.channels,
            lay.num_filters, lay.form) == (37, 53, 1, 53, 1, 91, "gemm")
    assert lay.mnk == (37, 91, 53)
    (lay,) = parse_gemm(["Layer, M, N, K, Sparsity,", "fc, 37, 91, 53, 1:4,"])
    assert (lay.sparsity_n, lay.sparsity_m) == (1, 4)
    with pytest.raises(TmhwError, match="end the row with one"):
        parse_gemm(["Layer, M, N, K,", "fc, 37, 91, 53"])


def test_form_comes_from_the_header(tmp_path: Path) -> None:
    """A GEMM topology's header has M as its second column (every GEMM file SCALE-Sim
    ships); anything else is conv, so a 4-field row under a conv header is refused."""
    assert detect_form(["Layer,M,N,K,", "fc, 1, 2, 3,"]) == "gemm"
    assert detect_form(["L, m, n, k,", "fc, 1, 2, 3,"]) == "gemm"
    assert detect_form([HEADER, "fc, 1, 2, 3,"]) == "conv"
    p = tmp_path / "four.csv"
    p.write_text(HEADER + "\nfc, 1, 2, 3,\n")
    with pytest.raises(TmhwError, match="four.csv:2: a conv row is .* M as its header's "
                       "second column"):
        read_topology(p)
    assert read_topology(p, "gemm")[0].mnk == (1, 2, 3)


def test_missing_empty_and_binary_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(TmhwError, match="cannot read"):
        read_topology(tmp_path / "missing.csv")
    for text in ("", HEADER + "\n\n"):
        (tmp_path / "e.csv").write_text(text)
        with pytest.raises(TmhwError, match="e.csv has no layer rows"):
            read_topology(tmp_path / "e.csv")
    (tmp_path / "b.csv").write_bytes(b"\xff\xfe\x00Layer\n\x80")
    with pytest.raises(TmhwError, match="b.csv is not UTF-8 text"):
        read_topology(tmp_path / "b.csv")
    with pytest.raises(TmhwError, match="one of auto, conv, gemm"):
        read_topology(tmp_path / "b.csv", "csv")


def test_crlf_files_read_like_unix_files(tmp_path: Path) -> None:
    """scale-sim-v3's topologies/GEMM_mnk/gpt2.csv, first rows, verbatim (CRLF)."""
    p = tmp_path / "gpt2.csv"
    p.write_bytes(b"Layer,M,N,K,\r\nQKT,1024,1024,64,\r\nQKTV,1024,64,1024,\r\n")
    assert [lay.mnk for lay in read_topology(p)] == [(1024, 1024, 64), (1024, 64, 1024)]
