"""Recording spans changes no booking, and the channel lanes book by their rule.

The fast model books a chunk's reads and programs in one compiled call
(``flash.engine.chunks.read_chunk``, ``program_chunk``); when spans are recorded, the
same kernels also write every booking into the lanes' buffers. So a device that
records and one that does not, driven alike, must return the same completion times
and end in the same state: every lane's busy time and bookings, the suspends, the
merged pages, the commands, under the ONFI rules and MQSim's (chip lock, data-out
convoy). The gap lanes (``flash.engine.gaps``) are checked against their rule over
every time unit."""

from __future__ import annotations

import dataclasses
from typing import Any

import simpy
from flash_devices import small
from hypothesis import given, settings
from hypothesis import strategies as st

from flash import FlashTarget
from flash.engine.dies import _now_slot as now_slot
from flash.engine.gaps import GapBank
from tmhw.sim import Op, Transfer

CFG = small(blocks_per_plane=32, pages_per_block=8, over_provisioning=0.2)

requests = st.lists(
    st.tuples(st.sampled_from([Op.READ, Op.READ, Op.WRITE, Op.WRITE, Op.TRIM]),
              st.integers(0, CFG.capacity - 1),
              st.integers(1, 40 * CFG.page_size),
              st.integers(0, 3_000_000_000)),
    min_size=1, max_size=60)


def _drive(cfg: Any, reqs: list[Any], record: bool, precondition: float) -> tuple[Any, ...]:
    t = FlashTarget(simpy.Environment(), "flash", None, cfg, precondition=precondition,
                    record=record)
    cap = cfg.total_capacity
    ends = [t.transport(Transfer(op, addr, min(n, cap - addr)), earliest)
            for op, addr, n, earliest in reqs]
    rep = t.report()
    return ends, rep, _lane_state(t.devices[0].model.dies)


def _lane_state(dies: Any) -> list[Any]:
    """Every die lane's numbers (free, last read's end, busy, bookings, durations
    queued) and its queued ops (true start and end, kind, planes, page offset,
    durations queued before it), wherever in its row they sit. (Recording writes the
    queued ops' true times out after each read; otherwise only the head op's are kept,
    the others' worked out when read: ``flash.engine.dies._now_slot``.)"""
    lane, ops, _par, _rec = dies.state
    out: list[Any] = [lane[["sus_p", "sus_e", "merged"]].tolist()]
    for i in range(lane.shape[0]):
        h, t = int(lane[i]["head"]), int(lane[i]["tail"])
        times = [now_slot(ops, h, k) for k in range(h, t)]
        st, en = [int(a) for a, _ in times], [int(b) for _, b in times]
        out.append(([int(lane[i][f]) for f in ("until", "rd", "busy", "count", "qsum")],
                    st, en,
                    [(ops[f][h:t] - (ops[h][f] if f == "qs" and t > h else 0)).tolist()
                     for f in ("kind", "mask", "page", "qs")]))
    return out


def _same(cfg: Any, reqs: list[Any], precondition: float) -> None:
    ends_k, rep_k, lanes_k = _drive(cfg, reqs, False, precondition)
    ends_n, rep_n, lanes_n = _drive(cfg, reqs, True, precondition)
    assert ends_k == ends_n
    assert rep_k == rep_n
    assert lanes_k == lanes_n


@settings(max_examples=40, deadline=None)
@given(reqs=requests, precondition=st.sampled_from([0.0, 0.98]),
       multiplane=st.booleans(), suspend=st.booleans(), mqsim=st.booleans())
def test_recording_changes_no_booking(reqs: list[Any], precondition: float,
                                      multiplane: bool, suspend: bool, mqsim: bool) -> None:
    """Reads that meet queued programs (read priority, suspend), programs that join a
    waiting one (multi-plane), with and without a write buffer (same-offset programs),
    on die lanes or MQSim's chip lanes."""
    cfg = dataclasses.replace(CFG, multiplane=multiplane, program_suspend=suspend,
                              compat="mqsim" if mqsim else CFG.compat)
    _same(cfg, reqs, precondition)
    _same(dataclasses.replace(cfg, write_buffer_bytes=0, read_cache_bytes=0), reqs,
          precondition)


@settings(max_examples=20, deadline=None)
@given(reqs=requests)
def test_recording_on_striped_devices_changes_no_booking(reqs: list[Any]) -> None:
    """Two devices striped: each device's part of a chunk from its own start time."""
    cfg = dataclasses.replace(CFG, devices=2, stripe_bytes=4 * CFG.page_size)
    _same(cfg, reqs, 0.5)


bookings = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 400), st.integers(0, 30)),
                    min_size=1, max_size=300)


@settings(max_examples=60, deadline=None)
@given(books=bookings, prune_every=st.integers(5, 50))
def test_gap_bank_books_the_earliest_idle_interval(books: list[tuple[int, int, int]],
                                                   prune_every: int) -> None:
    """Each booking takes the earliest idle interval long enough at or after its
    earliest start (checked against every time unit of the lane), bookings never
    overlap, busy intervals that touch merge, and prune drops only intervals no booking
    can reach, through the rows' growth (more than 64 intervals on a lane); every
    booking is recorded, in order."""
    bank = GapBank("ch", 3, record=True)
    busy: list[set[int]] = [set(), set(), set()]  # each lane's busy time units
    total = [0, 0, 0]
    booked: list[list[tuple[int, int]]] = [[], [], []]
    t = 0
    for k, (i, gap, dur) in enumerate(books):
        t += gap // 4
        earliest = t + gap  # some bookings fall into earlier idle gaps, some after all
        fit = bank.fit(i, earliest, dur)
        end = bank.reserve1(i, earliest, dur)
        start = end - dur
        booked[i].append((start, end))
        assert start == fit >= earliest
        units = set(range(start, end))
        assert not units & busy[i]  # no overlap
        if dur:  # no earlier start fits
            assert all(set(range(s, s + dur)) & busy[i] for s in range(earliest, start))
        busy[i] |= units
        total[i] += dur
        if k % prune_every == prune_every - 1:
            bank.prune(t)
    for i in range(3):
        starts, ends = bank.intervals(i)
        # sorted, disjoint, not touching: the union of the kept bookings
        assert all(e0 < s1 for e0, s1 in zip(ends, starts[1:], strict=False))
        kept = set().union(*(range(s, e) for s, e in zip(starts, ends, strict=True)))
        assert kept == {u for u in busy[i] if u >= (starts[0] if starts else 0)}
        assert bank.report(i, 10**6)["busy_ps"] == total[i]
        assert int(bank.busy_until[i]) == (max(busy[i]) + 1 if busy[i] else 0)
    assert bank.spans == booked


@settings(max_examples=60, deadline=None)
@given(windows=st.lists(st.tuples(st.integers(0, 500), st.integers(0, 40)), max_size=200))
def test_gap_bank_covers_windows_as_their_union(windows: list[tuple[int, int]]) -> None:
    """A lane of windows (MQSim's data-out convoy) keeps the union of the windows it
    covers as sorted disjoint intervals, overlapping and touching ones joined, through
    the rows' growth; a fit avoids every window."""
    bank = GapBank("wait", 1)
    covered: set[int] = set()
    for s, n in windows:
        bank.cover(0, s, s + n)
        covered |= set(range(s, s + n))
        starts, ends = bank.intervals(0)
        assert all(e0 < s1 for e0, s1 in zip(ends, starts[1:], strict=False))
        assert set().union(*(range(a, b) for a, b in zip(starts, ends, strict=True))) \
            == covered
        f = bank.fit(0, s, 3)
        assert f >= s and not set(range(f, f + 3)) & covered
