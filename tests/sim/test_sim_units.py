"""Units: integer picoseconds, rounded up (a model never finishes early), and sizes
parsed the way datasheets write them."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.sim.units import (
    GB,
    MB,
    NS,
    US,
    GiB,
    KiB,
    MiB,
    S,
    TiB,
    cycles_to_ps,
    energy_pj,
    fmt_bytes,
    fmt_time,
    parse_size,
    ps_from_ns,
    transfer_ps,
)


def _ceil(x: Fraction) -> int:
    return -(-x.numerator // x.denominator)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 1 << 44), st.integers(1, 10**13))
def test_transfer_time_is_the_exact_ceiling_for_whole_bandwidths(nbytes: int, bw: int) -> None:
    assert transfer_ps(nbytes, float(bw)) == _ceil(Fraction(nbytes * S, bw))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 1 << 44), st.floats(1e3, 1e13))
def test_transfer_time_is_never_short_of_the_data(nbytes: int, bw: float) -> None:
    t = transfer_ps(nbytes, bw)
    exact = Fraction(nbytes * S) / Fraction(bw)
    # Fractional bandwidths go through floats: within a part in 1e15 of the exact ceiling.
    assert abs(t - _ceil(exact)) <= max(1, exact * Fraction(1, 10**15))
    assert t >= 1


def test_transfer_time_of_nothing_is_zero() -> None:
    assert transfer_ps(0, 1e9) == 0 and transfer_ps(-5, 1e9) == 0


def test_transfer_examples() -> None:
    # 4 KiB at 1 GB/s: 4096 ns; 1 MiB over PCIe 4.0 x16 (31.504 GB/s) rounds up.
    assert transfer_ps(4 * KiB, 1e9) == 4096 * NS
    assert transfer_ps(MiB, 16 * 1.969e9) == math.ceil(MiB * 1e12 / 31.504e9)
    assert transfer_ps(3, 2e12) == 2             # 1.5 ps rounds up


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**14), st.integers(1, 5000))
def test_cycles_to_ps_is_the_exact_ceiling_for_whole_clocks(cycles: int, mhz: int) -> None:
    assert cycles_to_ps(cycles, float(mhz)) == _ceil(Fraction(cycles * 10**6, mhz))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**9), st.floats(10, 5000))
def test_cycles_to_ps_never_rounds_down_by_more_than_float_noise(cycles: int, mhz: float) -> None:
    exact = Fraction(cycles * 10**6) / Fraction(mhz)
    assert abs(cycles_to_ps(cycles, mhz) - _ceil(exact)) <= 1


def test_cycle_examples() -> None:
    assert cycles_to_ps(1, 1000.0) == 1000          # 1 GHz: 1 ns
    assert cycles_to_ps(1, 1050.0) == 953           # 952.38 ps rounds up
    assert cycles_to_ps(0, 1050.0) == 0


UNITS = [("B", 1), ("KiB", KiB), ("MiB", MiB), ("GiB", GiB), ("TiB", TiB), ("KB", 1000),
         ("MB", MB), ("GB", GB), ("TB", 10**12), ("K", KiB), ("M", MiB), ("G", GiB), ("", 1)]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(UNITS), st.booleans(), st.booleans())
def test_parse_size_reads_whole_sizes_with_units(n: int, unit: tuple[str, int], space: bool,
                                                 lower: bool) -> None:
    name, mult = unit
    text = f"{n}{' ' if space else ''}{name.lower() if lower else name}"
    assert parse_size(text) == n * mult


@pytest.mark.parametrize("text,expected", [
    ("16KiB", 16384), ("4 MiB", 4 * MiB), ("2GB", 2 * 10**9), ("4096", 4096),
    ("1.5KiB", 1536), ("3.3MB", 3_300_000), ("0.5 GiB", GiB // 2), (" 7 ", 7), ("1e3", 1000),
])
def test_parse_size_examples(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "KiB", "abc", "-1", "-4KiB", "1.5", "0.1KiB", "inf",
                                  "nan", "infGiB", "16 XB", "1/2MiB", "sNaN"])
def test_parse_size_refuses_what_is_not_a_whole_number_of_bytes(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


def test_conversions() -> None:
    assert ps_from_ns(1.5) == 1500
    assert energy_pj(1.0, S) == pytest.approx(1e9)   # 1 mW for 1 s = 1 mJ = 1e9 pJ
    assert fmt_time(1500 * US) == "1.500 ms" and fmt_time(2 * S) == "2.000 s"
    assert fmt_time(999) == "0.999 ns"
    assert fmt_bytes(3 * MiB) == "3.00 MiB" and fmt_bytes(512) == "512 B"
