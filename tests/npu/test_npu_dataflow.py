"""Properties of the systolic-array formulas that hold for any GEMM and array."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu.dataflow import (
    compute_cycles,
    compute_utilization,
    conv_output_size,
    conv_to_gemm,
    gemm_cycles,
    gemm_traffic,
    mapping_efficiency,
    multi_array_cycles,
    split_even,
    split_gemm,
    utilization,
)
from tmhw.sim import TmhwError

dim = st.integers(1, 3000)
side = st.integers(1, 160)
dataflow = st.sampled_from(["os", "ws", "is"])
convention = st.sampled_from(["scalesim", "paper"])
FAST = settings(max_examples=150, deadline=None)


@FAST
@given(m=dim, n=dim, k=dim, rows=side, cols=side, df=dataflow, conv=convention,
       which=st.integers(0, 2), extra=st.integers(1, 500))
def test_cycles_never_decrease_when_a_gemm_dimension_grows(
        m: int, n: int, k: int, rows: int, cols: int, df: str, conv: str, which: int,
        extra: int) -> None:
    base = compute_cycles(m, n, k, rows, cols, df, conv)
    dims = [m, n, k]
    dims[which] += extra
    assert compute_cycles(dims[0], dims[1], dims[2], rows, cols, df, conv) >= base


@FAST
@given(m=dim, n=dim, k=dim, rows=side, cols=side, df=dataflow)
def test_utilisation_and_mapping_efficiency_lie_in_0_1(
        m: int, n: int, k: int, rows: int, cols: int, df: str) -> None:
    assert 0 < utilization(m, n, k, rows, cols, df, "paper") <= 1
    for conv in ("scalesim", "paper"):
        g = gemm_cycles(m, n, k, rows, cols, df, conv)
        assert g.cycles == compute_cycles(m, n, k, rows, cols, df, conv)
        assert g.utilization == utilization(m, n, k, rows, cols, df, conv)
        assert g.compute_utilization == pytest.approx(
            compute_utilization(m, n, k, rows, cols, df, conv), rel=1e-12)
    assert 0 < mapping_efficiency(m, n, k, rows, cols, df) <= 1
    if rows * cols >= 2:
        # scalesim's OS form gives a 1x1 array T cycles per fold and then drops one cycle,
        # so only there can it claim more MACs than PE-cycles
        assert 0 < utilization(m, n, k, rows, cols, df, "scalesim") <= 1


def test_scalesim_os_form_on_a_1x1_array_undercounts_by_its_trailing_minus_one() -> None:
    # 1 fold of T + R + C - 2 = 2 cycles, minus 1: one cycle for two MACs
    assert compute_cycles(1, 1, 2, 1, 1, "os", "scalesim") == 1
    assert compute_cycles(1, 1, 2, 1, 1, "os", "paper") == 3


@FAST
@given(m=dim, n=dim, k=dim, rows=side, cols=side, df=dataflow, conv=convention,
       arrays=st.integers(1, 16), more=st.integers(1, 16))
def test_more_arrays_never_make_a_gemm_slower(
        m: int, n: int, k: int, rows: int, cols: int, df: str, conv: str, arrays: int,
        more: int) -> None:
    few = multi_array_cycles(m, n, k, rows, cols, arrays, df, conv)
    assert multi_array_cycles(m, n, k, rows, cols, arrays + more, df, conv) <= few
    assert multi_array_cycles(m, n, k, rows, cols, 1, df, conv) == compute_cycles(
        m, n, k, rows, cols, df, conv)


@FAST
@given(m=dim, n=dim, k=dim, rows=side, cols=side, df=dataflow, parts=st.integers(1, 8))
def test_splitting_a_gemm_across_cores_keeps_its_mac_count_and_is_never_slower(
        m: int, n: int, k: int, rows: int, cols: int, df: str, parts: int) -> None:
    split = split_gemm(m, n, k, parts, rows, cols, df)
    assert 1 <= len(split) <= parts
    assert sum(a * b * c for a, b, c in split) == m * n * k
    assert all(c == k for _, _, c in split)  # never the reduction dimension
    slowest = max(compute_cycles(a, b, c, rows, cols, df) for a, b, c in split)
    assert slowest <= compute_cycles(m, n, k, rows, cols, df)


@FAST
@given(m=dim, n=dim, k=dim, rows=side, cols=side, df=dataflow,
       buf=st.integers(1, 1 << 24))
def test_traffic_reads_each_operand_at_least_once_and_writes_each_output_once(
        m: int, n: int, k: int, rows: int, cols: int, df: str, buf: int) -> None:
    t = gemm_traffic(m, n, k, rows, cols, df, dtype_bytes=2, acc_bytes=4, ifmap_buf=buf,
                     filter_buf=buf, ofmap_buf=buf)
    assert t.ifmap_read >= m * k * 2 and t.filter_read >= k * n * 2
    assert t.ofmap_write == m * n * 2
    assert t.psum_read == t.psum_write
    unlimited = gemm_traffic(m, n, k, rows, cols, df)
    assert unlimited.read_bytes == (m * k + k * n) * 2  # compulsory traffic only
    assert unlimited.psum_write == 0
    assert t.read_bytes >= unlimited.read_bytes


def test_ws_cuts_m_to_keep_partial_sums_on_chip_and_spills_only_when_that_costs_more() -> None:
    m, n, k = 1000, 256, 1024  # 8 row folds of 128 on a 128 x 128 array
    tile = m * 128 * 4  # M x C fp32 partial sums
    fits = gemm_traffic(m, n, k, 128, 128, "ws", ofmap_buf=2 * tile)
    assert fits.psum_write == 0 and fits.filter_read == k * n * 2
    # half the tile fits: cut M in two, load the weights twice, no spill
    cut = gemm_traffic(m, n, k, 128, 128, "ws", ofmap_buf=tile)
    assert cut.psum_write == 0 and cut.filter_read == 2 * k * n * 2
    # 16 rows fit: 63 weight loads would cost more than spilling the partial sums
    tiny = gemm_traffic(m, n, k, 128, 128, "ws", ofmap_buf=2 * 16 * 128 * 4)
    assert tiny.psum_write == tiny.psum_read == m * n * 4 * (8 - 1)
    assert tiny.filter_read == k * n * 2


def test_is_mirrors_ws_with_n_as_the_time_dimension() -> None:
    ws = gemm_traffic(300, 700, 500, 32, 32, "ws", ifmap_buf=1 << 16, filter_buf=1 << 16,
                      ofmap_buf=1 << 14)
    is_ = gemm_traffic(700, 300, 500, 32, 32, "is", ifmap_buf=1 << 16, filter_buf=1 << 16,
                       ofmap_buf=1 << 14)
    assert (ws.ifmap_read, ws.filter_read, ws.psum_write) == (
        is_.filter_read, is_.ifmap_read, is_.psum_write)


def test_os_keeps_partial_sums_in_the_array() -> None:
    assert gemm_traffic(1000, 256, 1 << 16, 128, 128, "os", ofmap_buf=2).psum_write == 0


def test_conv_lowers_to_gemm_with_stride_and_padding() -> None:
    # ResNet conv1: 224 x 224 x 3, 7 x 7 / 2, pad 3, 64 filters -> 112 x 112 outputs
    assert conv_to_gemm(224, 224, 7, 7, 3, 64, stride_h=2, pad_h=3) == (112 * 112, 64, 147)
    for h in range(5, 40):
        for r in range(1, 6):
            for s in range(1, 4):
                assert conv_output_size(h, r, s) == len(range(0, h - r + 1, s))
    assert conv_to_gemm(15, 17, 3, 5, 7, 19, stride_h=2) == (7 * 7, 19, 105)
    assert conv_to_gemm(10, 12, 3, 3, 1, 1, stride_h=1, stride_w=2, pad_h=1, pad_w=0) == (
        10 * 5, 1, 9)


@pytest.mark.parametrize("bad", [
    lambda: compute_cycles(0, 1, 1, 8, 8, "ws"),
    lambda: compute_cycles(1, 1, 1, 8, 8, "xs"),
    lambda: compute_cycles(1, 1, 1, 8, 8, "ws", "tool"),
    lambda: conv_to_gemm(2, 2, 3, 3, 1, 1),
    lambda: multi_array_cycles(1, 1, 1, 8, 8, 0, "ws"),
])
def test_bad_dimensions_are_one_line_errors(bad: object) -> None:
    with pytest.raises(TmhwError):
        bad()  # type: ignore[operator]


def test_ws_groups_column_folds_so_a_weight_gradient_gemm_streams_its_input_few_times() -> None:
    """(M, N, K) = (1024, 3072, 16384), a BERT-large weight gradient, with 4/4 MiB
    input/output buffers: SCALE-Sim's order streams A (32 MiB) once per each of the 24
    column folds; tiles of 1024 rows x 4 column folds (2 MiB of fp32 partial sums) stream
    it 6 times and load B (96 MiB) once."""
    mib = 1 << 20
    t = gemm_traffic(1024, 3072, 16384, 128, 128, "ws", ifmap_buf=4 * mib,
                     filter_buf=4 * mib, ofmap_buf=4 * mib)
    assert t.psum_write == 0
    assert t.ifmap_read + t.filter_read == 6 * 32 * mib + 96 * mib


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9), st.integers(-2, 200))
def test_split_even_gives_near_equal_parts_larger_first_that_sum_to_the_total(
        total: int, parts: int) -> None:
    got = split_even(total, parts)
    assert len(got) == max(1, min(parts, total)) and sum(got) == total
    assert max(got) - min(got) <= 1 and list(got) == sorted(got, reverse=True)
