"""SCALE-Sim topology CSVs are read as scalesim 3.0.0's topology_utils reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu.topology import detect_form, parse_conv, parse_gemm, read_topology
from tmhw.sim import TmhwError

HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, " \
         "Num Filter, Strides,"


def test_conv_row_fields_map_to_layer_and_gemm() -> None:
    (lay,) = parse_conv([HEADER, "c1, 15, 17, 3, 5, 7, 19, 2,"])
    assert (lay.name, lay.ifmap_h, lay.ifmap_w, lay.filt_h, lay.filt_w) == ("c1", 15, 17, 3, 5)
    assert (lay.channels, lay.num_filters, lay.stride_h, lay.stride_w) == (7, 19, 2, 2)
    assert lay.gemm == (7 * 7, 19, 3 * 5 * 7)


def test_first_line_is_a_header_whatever_it_holds_and_blank_lines_are_skipped() -> None:
    layers = parse_conv(["a, 8, 8, 3, 3, 1, 1, 1,", "", "b, 9, 9, 3, 3, 2, 4, 1,", "  "])
    assert [lay.name for lay in layers] == ["b"]


def test_the_last_field_is_dropped_so_rows_need_a_trailing_comma() -> None:
    with pytest.raises(TmhwError, match="trailing comma"):
        parse_conv([HEADER, "c, 8, 8, 3, 3, 1, 1, 1"])
    # with 9 fields and no trailing comma, SCALE-Sim silently loses the 9th (sparsity)
    (lay,) = parse_conv([HEADER, "c, 8, 8, 3, 3, 1, 1, 1, 2:4"])
    assert (lay.sparsity_n, lay.sparsity_m) == (1, 1)
    (lay,) = parse_conv([HEADER, "c, 8, 8, 3, 3, 1, 1, 1, 2:4,"])
    assert (lay.sparsity_n, lay.sparsity_m) == (2, 4)


def test_output_size_is_scalesims_ceil_form_with_a_partial_window() -> None:
    """scalesim 3.0.0: ofmap = ceil((H - R + s) / s); 16 - 3 = 13 is odd, so stride 2 gives
    8 outputs (the true count is 7). tests/npu/reference/quirk_conv.csv ran through
    scalesim and matches in test_npu_scalesim."""
    (lay,) = parse_conv([HEADER, "q, 16, 16, 3, 3, 8, 12, 2,"])
    assert (lay.ofmap_h, lay.ofmap_w) == (8, 8)
    (lay,) = parse_conv([HEADER, "q, 15, 15, 3, 3, 8, 12, 2,"])
    assert (lay.ofmap_h, lay.ofmap_w) == (7, 7)


def test_dp_in_the_name_makes_one_single_channel_layer_per_channel() -> None:
    layers = parse_conv([HEADER, "DPconv, 10, 10, 3, 3, 3, 1, 1,"])
    assert [lay.name for lay in layers] == ["DPconvChannel_0", "DPconvChannel_1",
                                            "DPconvChannel_2"]
    assert all(lay.channels == 1 for lay in layers)


def test_filter_larger_than_input_is_an_error() -> None:
    with pytest.raises(TmhwError, match="filter height"):
        parse_conv([HEADER, "c, 2, 8, 3, 3, 1, 1, 1,"])


def test_gemm_rows_become_an_m_by_k_input_with_a_1_by_k_filter() -> None:
    (lay,) = parse_gemm(["Layer, M, N, K,", "fc, 37, 91, 53,"])
    assert (lay.ifmap_h, lay.ifmap_w, lay.filt_h, lay.filt_w, lay.channels,
            lay.num_filters) == (37, 53, 1, 53, 1, 91)
    assert lay.gemm == (37, 91, 53)
    with pytest.raises(TmhwError, match="trailing comma"):
        parse_gemm(["Layer, M, N, K,", "fc, 37, 91, 53"])


def test_form_detection_and_non_integer_fields(tmp_path: Path) -> None:
    assert detect_form(["Layer, M, N, K,", "fc, 1, 2, 3,"]) == "gemm"
    assert detect_form([HEADER, "c, 8, 8, 3, 3, 1, 1, 1,"]) == "conv"
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "\nc, 8, eight, 3, 3, 1, 1, 1,\n")
    with pytest.raises(TmhwError, match="bad.csv:2"):
        read_topology(bad)
    with pytest.raises(TmhwError, match="cannot read"):
        read_topology(tmp_path / "missing.csv")


def test_crlf_files_read_like_unix_files(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_bytes(b"Layer, M, N, K,\r\nfc, 4, 5, 6,\r\n")
    assert read_topology(p)[0].gemm == (4, 5, 6)
