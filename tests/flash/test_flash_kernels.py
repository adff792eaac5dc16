"""The compiled kernels book what the Python rules they replace book.

The fast model books a chunk's reads and programs on die lanes in one compiled call
(``flash.fast._read_chunk``, ``_program_chunk``, built on ``flash.lanes.read_lane`` and
``prog_lane``), unless spans are recorded; recording takes the numpy path
(``DieLanes.read_many``, ``prog_lanes``), which the die-lane tests pin to the op-by-op
rule. So a device that records and one that does not, driven alike, must return the same
completion times and end in the same state: every lane's busy time and bookings, the
suspends, the merged pages, the commands. The channels' arrays (``GapBank``) must book as
``GapLane``'s sorted interval lists do, through gap filling, merging, pruning and the
rows' growth."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import simpy
from flash_devices import small
from hypothesis import given, settings
from hypothesis import strategies as st

from flash import FlashTarget
from flash.lanes import KIND, MASK, PAGE, QS, GapBank, GapLane
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
    the others' worked out when read: ``DieLanes._now``.)"""
    lane, ops, _cap, sus, _rule, merged = dies.arrays()
    out: list[Any] = [sus.tolist(), merged.tolist()]
    for i in range(lane.shape[1]):
        h, t = int(dies._head[i]), int(dies._tail[i])
        k = np.arange(h, t, dtype=np.int64)
        st, en = dies._now(np.full(k.size, h, dtype=np.int64), k)
        out.append((lane[:5, i].tolist(), st.tolist(), en.tolist(),
                    [(ops[h:t, f] - (ops[h, f] if f == QS and t > h else 0)).tolist()
                     for f in (KIND, MASK, PAGE, QS)]))
    return out


def _same(cfg: Any, reqs: list[Any], precondition: float) -> None:
    ends_k, rep_k, lanes_k = _drive(cfg, reqs, False, precondition)
    ends_n, rep_n, lanes_n = _drive(cfg, reqs, True, precondition)
    assert ends_k == ends_n
    assert rep_k == rep_n
    assert lanes_k == lanes_n


@settings(max_examples=40, deadline=None)
@given(reqs=requests, precondition=st.sampled_from([0.0, 0.98]),
       multiplane=st.booleans(), suspend=st.booleans())
def test_compiled_chunks_book_as_the_numpy_lanes_do(reqs: list[Any], precondition: float,
                                                    multiplane: bool, suspend: bool) -> None:
    """Reads that meet queued programs (read priority, suspend), programs that join a
    waiting one (multi-plane), with and without a write buffer (same-offset programs)."""
    cfg = dataclasses.replace(CFG, multiplane=multiplane, program_suspend=suspend)
    _same(cfg, reqs, precondition)
    _same(dataclasses.replace(cfg, write_buffer_bytes=0, read_cache_bytes=0), reqs,
          precondition)


@settings(max_examples=20, deadline=None)
@given(reqs=requests)
def test_compiled_chunks_on_striped_devices_book_as_the_numpy_lanes_do(
        reqs: list[Any]) -> None:
    """Two devices striped: each device's part of a chunk from its own start time."""
    cfg = dataclasses.replace(CFG, devices=2, stripe_bytes=4 * CFG.page_size)
    _same(cfg, reqs, 0.5)


bookings = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 400), st.integers(0, 30)),
                    min_size=1, max_size=300)


@settings(max_examples=60, deadline=None)
@given(books=bookings, prune_every=st.integers(5, 50))
def test_gap_bank_books_as_gap_lanes_do(books: list[tuple[int, int, int]],
                                        prune_every: int) -> None:
    """Each booking takes the earliest idle interval long enough, busy intervals that
    touch merge, and prune drops only intervals no booking can reach: the same ends and
    intervals as ``GapLane``'s lists, one booking at a time or a batch at once, through
    the rows' growth (more than 64 intervals on a lane)."""
    bank, batch = GapBank("ch", 3), GapBank("ch", 3)
    lanes = [GapLane() for _ in range(3)]
    t = 0
    for k, (i, gap, dur) in enumerate(books):
        t += gap // 4
        earliest = t + gap  # some bookings fall into earlier idle gaps, some after all
        want = lanes[i].book(earliest, dur)
        assert bank.reserve1(i, earliest, dur) == want
        assert int(batch.reserve(*(_arr([i]), _arr([earliest]), _arr([dur])))[0]) == want
        if k % prune_every == prune_every - 1:
            for lane in lanes:
                lane.prune(t)
            bank.prune(t)
            batch.prune(t)
        assert bank.fit(i, t, dur) == lanes[i].fit(t, dur)
    for i, lane in enumerate(lanes):
        assert bank.intervals(i) == (lane.starts, lane.ends)
        assert batch.intervals(i) == (lane.starts, lane.ends)
        assert bank.report(i, 10**6) == lane.report(10**6)
        assert int(bank.busy_until[i]) == lane.busy_until


def _arr(x: list[int]) -> Any:
    return np.array(x, dtype=np.int64)
