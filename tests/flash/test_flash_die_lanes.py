"""The die lanes' rules (``flash.engine.dies``) as properties and worked cases: a lane
never runs two ops at once, recording spans changes no booking, a page joins the newest
fitting waiting program within four commands, and reads move a deep queue as the rule
does op by op."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flash.engine.dies import DieLanes, SuspendRule

N = 24  # lanes
RULE = SuspendRule(program=True, erase=True, t_program=50, t_erase=80, min_remaining=100)

batch = st.lists(st.tuples(st.integers(0, N - 1), st.integers(0, 6_000),
                           st.integers(1, 900), st.integers(0, 15), st.integers(0, 3)),
                 min_size=1, max_size=N)
step = st.tuples(st.sampled_from(["read", "read", "prog", "prog", "hold", "work"]), batch)


def _run(steps: list[Any], chips: bool, record: bool) -> tuple[Any, ...]:
    d = DieLanes("die", N, RULE, record=record, planes_per_die=4)
    ends: list[Any] = []
    for kind, raw in steps:
        b = list({x[0]: x for x in reversed(raw)}.values())  # distinct lanes
        lanes = np.array([x[0] for x in b], dtype=np.int64)
        t = np.array([x[1] for x in b], dtype=np.int64)
        dur = np.array([x[2] for x in b], dtype=np.int64)
        masks = np.array([x[3] for x in b], dtype=np.int64)  # plane bits or chip dies
        pages = np.array([x[4] for x in b], dtype=np.int64)
        if kind == "read":
            dies = np.maximum(masks, 1) if chips else np.zeros_like(masks)
            # (on a chip, when it reached the scheduler: before any wait for the chip)
            arrive = np.maximum(t - pages * 10, 0) if chips else np.full_like(t, -1)
            ends.append([d.read1(*a) for a in zip(lanes.tolist(), t.tolist(), dur.tolist(),
                                                   dies.tolist(), arrive.tolist(),
                                                   strict=True)])
        elif kind == "prog":
            ends.append([d.prog1(*a) for a in zip(lanes.tolist(), t.tolist(), dur.tolist(),
                                                   masks.tolist(), pages.tolist(),
                                                   strict=True)])
        elif kind == "hold":
            for i, u in zip(lanes.tolist(), t.tolist(), strict=True):
                d.hold1(i, u)
        else:
            ends.append([d.work1(int(lanes[0]), int(t[0]), int(dur[0]) * 4,
                                 erase=bool(pages[0]))])
    return (ends, d.busy_until.tolist(), d.busy_ps.tolist(), d.count.tolist(),
            dict(d.suspends), [d.merged_on(i) for i in range(N)], d.spans)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=40), chips=st.booleans())
def test_a_lane_runs_one_op_at_a_time_and_recording_changes_nothing(
        steps: list[Any], chips: bool) -> None:
    """Reads, programs, holds and garbage-collection work on lanes (dies, or chips
    whose reads batch): each lane's recorded spans never overlap, and a lane that does
    not record them books the same times, counts, suspends and merged pages (recording
    writes every queued op's times out after each read; without it the ops behind a
    lane's head keep their booked times and are read through the head)."""
    want = _run(steps, chips, record=True)
    spans = want[-1]
    assert spans is not None
    for lane in spans:
        ordered = sorted(s for s in lane if s[1] > s[0])
        assert all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:], strict=False)), ordered
    assert _run(steps, chips, record=False)[:-1] == want[:-1]


def test_a_page_joins_the_newest_fitting_program_within_four_commands() -> None:
    """The rule's cases on one chip lane (two planes per die): a page looks back past
    programs of other dies and at other offsets, stops at a program of its die that has
    its plane, and looks no further back than four commands."""
    d = DieLanes("die", 4, planes_per_die=2)

    def prog(lanes: list[int], masks: list[int], pages: list[int]) -> list[int]:
        return [d.prog1(i, 0, 1000, m, p) for i, m, p in zip(lanes, masks, pages,
                                                                strict=True)]

    # lanes 0-3 each queue: die 0 plane 0 offset 0, die 1 offset 0, die 0 offset 1
    assert prog([0, 1, 2, 3], [0b01] * 4, [0] * 4) == [1000] * 4
    assert prog([0, 1, 2, 3], [0b0100] * 4, [0] * 4) == [2000] * 4
    assert prog([0, 1, 2, 3], [0b01] * 4, [1] * 4) == [3000] * 4
    # lanes 1 and 2 get a fourth command at another offset, lane 2 a fifth; lane 3
    # garbage-collection work, then a fifth
    assert prog([1, 2], [0b0100, 0b0100], [1, 1]) == [4000] * 2
    assert prog([2], [0b0100], [2]) == [5000]
    assert d.work1(3, 0, 1000) == 4000
    assert prog([3], [0b0100], [1]) == [5000]
    # plane 1 of die 0 at offset 0: lane 0 joins its first program (three back),
    # lane 1 its first (four back: past programs of die 1 and one at offset 1);
    # lane 2 would find it five back (too far), lane 3 stops at the work
    got = prog([0, 1, 2, 3], [0b10] * 4, [0] * 4)
    assert got == [1000, 1000, 6000, 6000]
    assert d.merged == 2 and [d.merged_on(i) for i in range(4)] == [1, 1, 0, 0]
    # plane 1 of die 0 at offset 0 again: the program already has it, the search
    # stops there (lane 0's new command; lane 1 the same)
    assert prog([0, 1], [0b10, 0b10], [0, 0]) == [4000, 5000]
    assert d.merged == 2


def test_a_deep_queue_grows_its_row_and_a_read_moves_all_of_it() -> None:
    """Forty programs back to back on one die outgrow a row of slots; a read that
    suspends the running one moves every waiting one later by what it took."""
    d = DieLanes("die", 2, RULE)
    ends = [d.prog1(0, 0, 1_000) for _ in range(40)]
    assert ends == [1_000 * (k + 1) for k in range(40)]
    end = [d.read1(0, 500, 200), d.read1(1, 500, 200)]
    assert end == [500 + 50 + 200, 700]  # suspend latency, then tR
    assert d.busy_until.tolist() == [40_000 + 250, 700]
    assert d.suspends["program"] == 1


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 40)), min_size=20, max_size=60),
       st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 60)), min_size=1, max_size=6),
       )
def test_reads_move_a_deep_queue_as_op_by_op(ops: list[tuple[int, int]],
                                             reads: list[tuple[int, int]]) -> None:
    """Reads move the programs queued on a die as the rule does op by op: a read goes
    ahead of the ops not started when it starts (no suspension here) and after the
    running one; from there each op starts no earlier than it was booked and after the
    one before has ended. The recorded spans follow, and a lane that does not record
    them ends the same."""
    recorded = DieLanes("die", 1, record=True)
    plain = DieLanes("die", 1)
    want: list[list[int]] = []  # [start, end] of each queued op, moved op by op
    rd = 0
    for gap, dur in ops:  # a queue in order, with gaps
        e = [x.prog1(0, (want[-1][1] if want else 0) + gap, dur)
             for x in (recorded, plain)]
        assert e[0] == e[1]
        want.append([e[0] - dur, e[0]])
    for at, dur in reads:
        s = max(at, rd)
        running = [k for k, (a, b) in enumerate(want) if a <= s < b]
        start = want[running[0]][1] if running else s
        end = start + dur
        rd = end
        u = end
        for w in want:  # each op not ended by the read's start moves after it
            if w[1] <= start or w[0] >= u:
                continue
            w[1] += u - w[0]
            w[0] = u
            u = w[1]
        got = [x.read1(0, at, dur) for x in (recorded, plain)]
        assert got == [end, end]
        assert recorded.busy_until.tolist() == plain.busy_until.tolist() == [
            max(end, max(w[1] for w in want))]
    assert recorded.spans is not None
    assert recorded.spans[0][:len(ops)] == [tuple(w) for w in want]


deep_step = st.tuples(st.sampled_from(["read", "prog", "prog", "prog", "prog", "work"]),
                      st.integers(0, 2), st.integers(0, 3000), st.integers(100, 900),
                      st.integers(0, 15), st.integers(0, 3))


def _run_pruned(steps: list[Any], prune: bool, record: bool) -> tuple[Any, ...]:
    """Ops on three lanes, step ``k`` no earlier than ``k`` x 60 (so queues grow deep,
    and reads land inside them), the lanes pruned before each step at that time when
    ``prune``."""
    d = DieLanes("die", 3, RULE, record=record, planes_per_die=4)
    ends = []
    for k, (kind, lane, t, dur, mask, page) in enumerate(steps):
        floor = 60 * k
        if prune:
            d.prune(floor, 0, 3)
        t = floor + (t if kind == "read" else t // 20)   # programs ready at once
        if kind == "read":
            ends.append(d.read1(lane, t, dur))
        elif kind == "prog":
            ends.append(d.prog1(lane, t, dur, mask, page))
        else:
            ends.append(d.work1(lane, t, 4 * dur, erase=bool(page)))
    last = 60 * len(steps)
    lanes = d.state[0]
    return (ends, d.busy_until.tolist(), d.busy_ps.tolist(), d.count.tolist(),
            dict(d.suspends), [d.merged_on(i) for i in range(3)],
            [d.busy_after(i, last) for i in range(3)], d.spans,
            int((lanes["tail"] - lanes["head"]).max()))


@settings(max_examples=120, deadline=None)
@given(steps=st.lists(deep_step, min_size=20, max_size=90), record=st.booleans())
def test_pruning_the_ops_that_ended_changes_no_booking(steps: list[Any],
                                                       record: bool) -> None:
    """``DieLanes.prune`` at a time no later booking comes before: the same ends, busy
    times, counts, suspends, merged pages, work queued past the end and recorded spans
    as without it (the head moves on as a read moves it: every op behind it keeps its
    times), with at most ``PRUNE_KEEP`` of the ops that ended kept."""
    want = _run_pruned(steps, prune=False, record=record)
    got = _run_pruned(steps, prune=True, record=record)
    assert got[:-1] == want[:-1]
    assert got[-1] <= want[-1]


def test_a_write_stream_keeps_a_short_queue_once_pruned() -> None:
    """A lane programmed far ahead of time (no read moves its head) keeps every op in
    its row unless pruned; pruned at the time of each booking, its queue is the ops
    still to run after that time, and at least ``PRUNE_KEEP``."""
    from flash.engine.dies import PRUNE_KEEP

    rows = []
    for prune in (False, True):
        d = DieLanes("die", 1, RULE)
        for k in range(2000):
            if prune:
                d.prune(100 * k, 0, 1)
            d.prog1(0, 100 * k, 150)   # 1.5x the rate the lane takes: it falls behind
        lanes = d.state[0]
        rows.append(int(lanes["tail"][0] - lanes["head"][0]))
    # unpruned: every op; pruned: the third queued behind ``now``
    assert rows[0] == 2000
    assert PRUNE_KEEP <= rows[1] <= 2000 // 3 + PRUNE_KEEP + 1


def test_steady_queues_stop_to_make_room_once_per_quarter_row_for_all_lanes() -> None:
    """Eight lanes programmed alike (a striped write), each queue staying near a fixed
    length (pruned at each booking, programmed at the rate it runs): a stop to make
    room compacts every lane used up past three quarters of its row and leaves the
    stopping lane a quarter of its row free (or doubles every row), so the lanes
    together stop about as often as one lane, at most once per quarter row of its ops
    besides the doublings. Rows of 32 or 128 slots doubled only when full after
    compacting only the full lane stopped 11,993 and 2,995 times here, with queues of 30
    and 120 ops (a BERT-large trial's programs made 2,667 stops, 0.26 s of its 10 s)."""
    lanes = 8
    for queue in (30, 120):
        d = DieLanes("die", lanes, RULE)
        stops = [0]
        room = d.make_room

        def counted(which: Any, room: Any = room, stops: list[int] = stops) -> None:
            stops[0] += 1
            room(which)

        d.make_room = counted  # type: ignore[method-assign]
        for _ in range(queue):
            for lane in range(lanes):
                d.prog1(lane, 0, 100)
        ops = 3000
        for k in range(ops):
            d.prune(100 * k, 0, lanes)
            for lane in range(lanes):
                assert d.prog1(lane, 100 * k, 100) == 100 * (queue + k + 1)
        doublings = int(np.log2(d.cap // 16))
        assert stops[0] <= ops // (d.cap // 4) + doublings + 1, (queue, stops[0], d.cap)


def test_a_pruned_head_that_a_read_moved_keeps_its_true_times() -> None:
    """A read moves a lane's queued programs later without rewriting them (only the
    head's times are true). Pruning past ops that ended must give the new head its true
    times (``_now_slot`` from the old head), or the ops behind it would run earlier:
    later reads, programs and the work queued past the end are the same as unpruned."""
    out = []
    for prune in (False, True):
        d = DieLanes("die", 1, SuspendRule(program=False, erase=False, t_program=0,
                                           t_erase=0, min_remaining=0))
        ends = [d.prog1(0, 0, 100) for _ in range(20)]   # back to back: 100 .. 2000
        ends.append(d.read1(0, 0, 300))                  # ahead of the waiting ones
        if prune:
            d.prune(900, 0, 1)
            lanes = d.state[0]
            assert lanes["head"][0] > 0   # it dropped the ops that ended by 900
        ends += [d.read1(0, 1000, 50), d.prog1(0, 1100, 100), d.read1(0, 1500, 50)]
        out.append((ends, d.busy_after(0, 1600), d.busy_until.tolist()))
    assert out[1] == out[0]
