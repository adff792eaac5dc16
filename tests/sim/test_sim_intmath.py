"""Division by a shift where the divisor is a power of two (``tmhw.sim.intmath``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.sim.intmath import div, log2_exact


def test_log2_exact_of_powers_of_two_and_of_others() -> None:
    assert [log2_exact(1 << k) for k in range(40)] == list(range(40))
    assert [log2_exact(d) for d in (3, 5, 6, 12, 1000, (1 << 20) + 1)] == [-1] * 6


@settings(max_examples=200, deadline=None)
@given(a=st.integers(0, 2**62), d=st.integers(1, 2**40))
def test_div_is_floor_division(a: int, d: int) -> None:
    assert div(a, d, log2_exact(d)) == a // d
    p = 1 << (d.bit_length() - 1)
    assert div(a, p, log2_exact(p)) == a // p
