"""Timeline: the busy-until FIFO server. A reservation starts at max(earliest, previous
end), never earlier; busy time is the sum of the durations booked; utilisation is busy
time over elapsed time, within [0, 1] once the elapsed time covers the last end."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.sim.timeline import Timeline

requests = st.lists(st.tuples(st.integers(-10**6, 10**12), st.integers(0, 10**9)),
                    min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(requests)
def test_reservation_starts_no_earlier_than_asked_nor_before_previous_end(
        reqs: list[tuple[int, int]]) -> None:
    tl = Timeline("die", record=True)
    prev_end = 0
    booked = []
    for earliest, dur in reqs:
        predicted = tl.start_time(earliest)
        end = tl.reserve(earliest, dur)
        start = end - dur
        assert start == predicted
        assert start >= earliest
        assert start >= prev_end
        # FIFO and work-conserving: it starts as soon as both allow, not later.
        assert start == max(earliest, prev_end)
        booked.append((start, end, ""))
        prev_end = end
    assert tl.spans == booked


@settings(max_examples=200, deadline=None)
@given(requests)
def test_busy_time_is_the_sum_of_durations_and_spans_never_overlap(
        reqs: list[tuple[int, int]]) -> None:
    tl = Timeline("channel", record=True)
    for earliest, dur in reqs:
        tl.reserve(earliest, dur, "x")
    assert tl.busy_ps == sum(d for _, d in reqs)
    assert tl.count == len(reqs)
    spans = tl.spans
    assert sum(e - s for s, e, _ in spans) == tl.busy_ps
    for (_, e0, _), (s1, _, _) in zip(spans, spans[1:], strict=False):
        assert s1 >= e0
    assert tl.busy_until == spans[-1][1]
    assert tl.first_start == spans[0][0]


@settings(max_examples=200, deadline=None)
@given(requests, st.integers(0, 10**9))
def test_utilisation_is_a_fraction_once_elapsed_covers_the_last_end(
        reqs: list[tuple[int, int]], extra: int) -> None:
    tl = Timeline("bank")
    for earliest, dur in reqs:
        tl.reserve(earliest, dur)
    elapsed = tl.busy_until + extra
    u = tl.utilization(elapsed)
    assert 0.0 <= u <= 1.0
    if elapsed > 0:
        assert u == pytest.approx(tl.busy_ps / elapsed)
    rep = tl.report(elapsed)
    assert rep["busy_ps"] == tl.busy_ps and rep["count"] == len(reqs)
    assert 0.0 <= rep["utilization"] <= 1.0


def test_back_to_back_requests_queue_behind_each_other() -> None:
    tl = Timeline("array")
    assert tl.reserve(0, 10) == 10
    assert tl.reserve(0, 10) == 20         # waits for the first
    assert tl.reserve(100, 5) == 105       # idle gap: starts when asked
    assert tl.busy_ps == 25
    assert tl.utilization(0) == 0.0
    assert tl.utilization(105) == pytest.approx(25 / 105)


def test_zero_duration_reservation_books_nothing_but_counts() -> None:
    tl = Timeline()
    assert tl.reserve(7, 0) == 7
    assert tl.busy_ps == 0 and tl.count == 1 and tl.busy_until == 7


def test_negative_duration_is_refused() -> None:
    tl = Timeline("die3")
    with pytest.raises(ValueError, match="die3"):
        tl.reserve(0, -1)
    assert tl.busy_ps == 0 and tl.count == 0


def test_spans_are_kept_only_when_recording() -> None:
    off, on = Timeline(), Timeline(record=True)
    for tl in (off, on):
        tl.reserve(0, 4, "a")
        tl.reserve(2, 4, "b")
    assert off.spans == []
    assert on.spans == [(0, 4, "a"), (4, 8, "b")]
