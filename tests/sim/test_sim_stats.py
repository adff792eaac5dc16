"""Statistics: a Tally's summary is numpy's (percentiles with linear interpolation), a
Level's mean is the time-weighted mean of a piecewise-constant signal."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tmhw.sim.stats import Counter, Level, Tally

samples = st.lists(st.floats(-1e12, 1e12, allow_nan=False), min_size=1, max_size=200)


@settings(max_examples=150, deadline=None)
@given(samples, st.floats(0, 100))
@example([998758325359.9999, -998657226568.0], 0.0)
def test_tally_summary_matches_numpy(xs: list[float], q: float) -> None:
    t = Tally()
    t.extend(np.asarray(xs[: len(xs) // 2]))
    for x in xs[len(xs) // 2:]:
        t.add(x)
    a = np.asarray(xs)
    assert t.count == len(xs)
    assert t.min == a.min() and t.max == a.max()
    assert t.mean == pytest.approx(float(np.mean(a)), rel=1e-9, abs=1e-3)
    assert t.mean == math.fsum(xs) / len(xs)
    # Interpolating between two samples rounds at the samples' magnitude, not the
    # result's (the median of 998758325359.9999 and -998657226568.0 is 50549396 give or
    # take an ulp of 1e12, about 1.2e-4): a few ulps of the largest sample.
    ulps = 4 * float(np.spacing(np.abs(a).max()))
    assert t.percentile(q) == pytest.approx(float(np.percentile(a, q)), rel=1e-12,
                                            abs=max(1e-6, ulps))
    rep = t.report()
    assert rep["p50"] == pytest.approx(float(np.median(a)), rel=1e-12, abs=max(1e-6, ulps))
    assert rep["p99"] == pytest.approx(float(np.percentile(a, 99)), rel=1e-12,
                                       abs=max(1e-6, ulps))
    assert rep["min"] <= rep["p50"] <= rep["p99"] <= rep["max"]


def test_empty_tally_reports_zeros() -> None:
    assert Tally().report() == {"count": 0, "min": 0.0, "max": 0.0, "mean": 0.0,
                                "p50": 0.0, "p99": 0.0}


def test_counter_adds() -> None:
    c = Counter()
    c.add()
    c.add(41)
    assert c.report() == 42


# A piecewise-constant signal: (time step to the next change, value after the change).
steps = st.lists(st.tuples(st.integers(0, 10**9), st.floats(0, 1e9, allow_nan=False)),
                 max_size=50)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**6), st.floats(0, 1e9), steps, st.integers(0, 10**9))
def test_level_mean_is_the_time_weighted_mean(t0: int, v0: float,
                                              changes: list[tuple[int, float]],
                                              tail: int) -> None:
    lvl = Level(t0, v0)
    t, v = t0, v0
    area = 0.0
    peak = v0
    for dt, nv in changes:
        area += v * dt
        t += dt
        lvl.set(t, nv)
        v = nv
        peak = max(peak, nv)
    now = t + tail
    area += v * tail
    span = now - t0
    expected = area / span if span > 0 else v
    assert lvl.mean(now) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert lvl.peak == peak
    assert lvl.report(now) == {"mean": lvl.mean(now), "peak": peak, "final": v}
    # A mean of values in [min, max] lies in that range.
    lo = min([v0] + [c[1] for c in changes])
    assert lo * (1 - 1e-12) <= lvl.mean(now) <= peak * (1 + 1e-12)


def test_level_add_is_a_relative_set_and_time_cannot_go_back() -> None:
    lvl = Level()
    lvl.add(10, 4)        # 0 over [0, 10)
    lvl.add(20, -1)       # 4 over [10, 20), then 3
    assert lvl.mean(30) == pytest.approx((0 * 10 + 4 * 10 + 3 * 10) / 30)
    assert lvl.peak == 4
    with pytest.raises(ValueError):
        lvl.set(19, 0)
