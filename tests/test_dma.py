"""The DMA engine over two fake memory tiers: a bounded number of events per chunk, HBM
capacity never exceeded, every request completed, and urgent requests booked first.

The tiers are FIFO ports at a fixed bandwidth plus a fixed latency, so every booking is
visible in their logs and the engine is the only thing under test."""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.config import PAPER, DmaConfig, LinkConfig
from tmhw.dma import FETCH, WRITEBACK, DmaEngine, DmaRequest, _refill
from tmhw.residency import Residency
from tmhw.run.pager import PageBook
from tmhw.sim.component import Component
from tmhw.sim.env import Environment
from tmhw.sim.timeline import Timeline
from tmhw.sim.transfer import MemoryTarget, Op, Transfer
from tmhw.sim.units import NS, US, KiB, transfer_ps

PAGE = 4 * KiB


class FakeTier(Component):
    """One FIFO port: ``nbytes / bandwidth`` of occupancy, then a fixed latency."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component,
                 bandwidth: float, latency: int) -> None:
        super().__init__(env, name, parent)
        self.port = Timeline(name)
        self.bandwidth = bandwidth
        self.latency = latency
        #: (time of booking, op, address, nbytes, tag, completion)
        self.log: list[tuple[int, Op, int, int, str, int]] = []

    def transport(self, t: Transfer, earliest: int) -> int:
        end = self.port.reserve(earliest, transfer_ps(t.nbytes, self.bandwidth)) + self.latency
        self.log.append((self.now, t.op, t.address, t.nbytes, t.tag, end))
        return end

    def peak_bandwidth(self) -> float:
        return self.bandwidth


class CheckedResidency(Residency):
    """Checks the capacity invariant after every allocation the engine makes."""

    def __init__(self, npages: int, capacity_pages: int, page_size: int) -> None:
        super().__init__(npages, capacity_pages, page_size)
        self.first_ready = np.full(npages, -1, dtype=np.int64)

    def hold(self, pages: np.ndarray | slice, ready: int, now: int) -> int:
        n = super().hold(pages, ready, now)
        self.check()
        fresh = self.first_ready[pages] < 0
        self.first_ready[pages] = np.where(fresh, self.ready_of(pages), self.first_ready[pages])
        return n


class Rig:
    def __init__(self, npages: int, capacity: int, chunk_bytes: int = 64 * KiB,
                 outstanding: int = 8) -> None:
        self.env = Environment()
        self.root = Component(self.env, "system")
        self.hbm = FakeTier(self.env, "hbm", self.root, 200e9, 100 * NS)
        self.flash = FakeTier(self.env, "flash", self.root, 7e9, 60 * US)
        assert isinstance(self.hbm, MemoryTarget) and isinstance(self.flash, MemoryTarget)
        self.res = CheckedResidency(npages, capacity, PAGE)
        self.book = PageBook(self.res)
        self.dma = DmaEngine(self.env, "dma", self.root,
                             DmaConfig(chunk_bytes=chunk_bytes, max_outstanding=outstanding),
                             LinkConfig(), PAPER.link_bytes_per_s, self.hbm, self.flash,
                             self.book, PAGE)
        self.root.elaborate()
        self.root.start()

    def fetch(self, p0: int, p1: int, tag: str, deadline: int = 0,
              urgent: bool = False) -> DmaRequest:
        return self.dma.submit(DmaRequest(FETCH, p0, p1, deadline, tag, urgent=urgent))

    def booking_order(self) -> list[str]:
        """Tags of the flash reads in the order the engine booked them."""
        return [tag for _, op, _, _, tag, _ in self.flash.log if op == Op.READ]


def _runs(tags: list[str]) -> list[str]:
    """Consecutive duplicates collapsed: the order in which requests were served."""
    return [t for i, t in enumerate(tags) if i == 0 or tags[i - 1] != t]


# -- events per chunk --------------------------------------------------------------------


@pytest.mark.parametrize("outstanding", [2, 8, 16, 64])
@pytest.mark.parametrize("nreq,pages_each", [(1, 4096), (4, 1024), (16, 100)])
def test_events_per_chunk_are_bounded_by_one_sleep_per_half_window(
        outstanding: int, nreq: int, pages_each: int) -> None:
    """The engine books a window of chunks per wake-up and sleeps until half of them
    have drained. So, for requests queued at time 0 with HBM room for all:

    - wake-ups <= ceil(chunks / half) + requests (a request that ends mid-window starts
      the next window early), half = max_outstanding // 2;
    - each sleep costs two events: its timeout and the condition joining it with the
      kick event;
    - plus one event per request (its ``booked`` event), the kick, and the engine's start.
    """
    rig = Rig(nreq * pages_each, nreq * pages_each, outstanding=outstanding)
    reqs = [rig.fetch(i * pages_each, (i + 1) * pages_each, f"t{i}", deadline=i)
            for i in range(nreq)]
    rig.env.run()
    chunk_pages = rig.dma.chunk_pages
    chunks = sum(math.ceil(pages_each / chunk_pages) for _ in reqs)
    assert rig.dma.chunks.value == chunks
    half = max(1, outstanding // 2)
    wakeups = math.ceil(chunks / half) + nreq
    assert rig.dma.wakeups.value <= wakeups
    assert rig.env.events <= 2 * wakeups + nreq + 2
    # With long requests that is about 4 / max_outstanding events per chunk.
    if nreq == 1:
        assert rig.env.events / chunks <= 4 / outstanding + 4 / chunks


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.lists(st.integers(0, 50), max_size=120))
def test_a_chunk_takes_the_earliest_free_slot_of_its_window(
        outstanding: int, ends: list[int]) -> None:
    """The window's slots, kept in time order (``_refill``), are the ones a window that
    hands each chunk its earliest free slot keeps: the same earliest slot, and the same
    time by which half the window is free (the engine's wake-up)."""
    slots, ref = [0] * outstanding, [0] * outstanding
    half = max(1, outstanding // 2)
    for end in ends:
        assert slots[0] == min(ref)
        ref[ref.index(min(ref))] = max(end, min(ref))
        _refill(slots, max(end, slots[0]))
        assert slots == sorted(ref) and slots[half - 1] == sorted(ref)[half - 1]


@pytest.mark.parametrize("outstanding", [2, 16, 1024])
def test_a_window_of_n_slots_books_n_chunks_at_once_and_the_next_only_later(
        outstanding: int) -> None:
    """``dma.max_outstanding`` chunks go out together and the next waits for a slot;
    a window wider than the work (1024 slots, 64 chunks) books all of it at time 0.
    Its slots stay in time order whatever its width."""
    rig = Rig(1024, 1024, chunk_bytes=64 * KiB, outstanding=outstanding)
    rig.fetch(0, 1024, "w")
    rig.env.run()
    assert sorted(rig.dma.fetch_slots) == rig.dma.fetch_slots
    assert rig.dma.chunks.value == 64
    starts = sorted(t for t, op, *_ in rig.flash.log if op == Op.READ)
    assert len(starts) == 64
    if outstanding >= 64:
        assert starts[-1] == starts[0]         # all 64 chunks issued at once
    else:
        assert starts[outstanding] > starts[0]  # the chunk past the window waits


def test_event_budget_does_not_grow_with_chunk_size() -> None:
    """The same bytes in 16x smaller chunks cost about 16x the events, not more: no
    per-page or per-byte events hide in a chunk."""
    big, small = Rig(4096, 4096, chunk_bytes=1024 * KiB), Rig(4096, 4096, chunk_bytes=64 * KiB)
    for rig in (big, small):
        rig.fetch(0, 4096, "w")
        rig.env.run()
    assert small.dma.chunks.value == 16 * big.dma.chunks.value
    # a 64 KiB chunk is 16 pages: per-page events would cost 16 a chunk
    for rig in (big, small):
        assert rig.env.events <= rig.dma.chunks.value


# -- capacity, completion, conservation ---------------------------------------------------

requests = st.lists(st.tuples(st.integers(1, 96), st.booleans(), st.integers(0, 20)),
                    min_size=1, max_size=10)


def _drain(rig: Rig, every: int, stop: simpy.Event) -> Generator[simpy.Event, Any, None]:
    """The consumer: frees every page whose copy is complete, then wakes the engine."""
    res = rig.res
    while not stop.triggered:
        yield rig.env.timeout(every)
        now = int(rig.env.now)
        done = np.flatnonzero(res.in_hbm & (res.ready_of(slice(None)) <= now))
        if len(done):
            res.release(done, now)
            rig.dma.kick()


@settings(max_examples=40, deadline=None)
@given(requests, st.integers(16, 128), st.sampled_from([2, 4, 16]))
def test_fetches_never_exceed_hbm_capacity_and_every_request_completes(
        spec: list[tuple[int, bool, int]], capacity: int, outstanding: int) -> None:
    sizes = [min(n, capacity) for n, _, _ in spec]
    npages = sum(sizes)
    rig = Rig(npages, capacity, chunk_bytes=16 * KiB, outstanding=outstanding)
    reqs, p = [], 0
    for (_, urgent, deadline), n in zip(spec, sizes, strict=True):
        reqs.append(rig.fetch(p, p + n, f"r{len(reqs)}", deadline, urgent))
        p += n
    booked = [r.booked for r in reqs]
    stop = rig.env.all_of(booked)           # type: ignore[arg-type]
    rig.env.process(_drain(rig, 20 * US, stop))
    rig.env.run(until=stop)
    rig.res.check()
    assert rig.res.level.peak <= capacity * PAGE
    for r in reqs:
        assert r.booked is not None and r.booked.triggered
        assert r.booked.value == r.end_ps
        assert r.pages_moved == r.p1 - r.p0          # disjoint ranges: every page moved
        assert r.end_ps >= r.submitted_ps
    # Bytes conserved: what left flash is what entered HBM is what the engine counted.
    reads = sum(nb for _, op, _, nb, _, _ in rig.flash.log if op == Op.READ)
    writes = sum(nb for _, op, _, nb, _, _ in rig.hbm.log if op == Op.WRITE)
    assert reads == writes == rig.dma.bytes[FETCH].value == npages * PAGE
    # A request completes no earlier than its last flash read and its last HBM write,
    # and each page is ready in HBM by then.
    for r in reqs:
        mine = [e for log in (rig.flash.log, rig.hbm.log) for *_, tag, e in log
                if tag == r.tag]
        assert r.end_ps >= max(mine)
        assert r.end_ps >= max(e for *_, tag, e in rig.flash.log if tag == r.tag) \
            + rig.dma.link_cfg.latency_ps
        ready = rig.res.first_ready[r.p0:r.p1]
        assert (ready >= 0).all() and (ready <= r.end_ps).all()


def test_writeback_frees_hbm_once_the_ssd_has_acknowledged_it() -> None:
    """HBM space is free when the SSD acknowledges the write (NVMe: the host buffer is
    then free): its data has crossed the NPU's port and the SSD's own link, which it
    crosses at the same time (cut-through)."""
    rig = Rig(64, 64)
    res = rig.res
    rig.book.allocate(0, 64, 0)
    rig.book.mark_live(0, rig.res.npages)
    req = rig.dma.submit(DmaRequest(WRITEBACK, 0, 64, 0, "grad"))
    rig.env.run(until=req.booked)
    freed = req.end_ps                      # the request completes when its space is free
    acks = [(t0, e) for t0, op, _, _, _, e in rig.flash.log if op == Op.WRITE]
    link_end = rig.dma.link_out.busy_until + rig.dma.link_cfg.latency_ps
    assert not res.in_hbm.any() and res.in_flash.all()
    assert res.free_pages(freed - 1) < 64 <= res.free_pages(freed)
    assert freed == max(link_end, max(e for _, e in acks))
    writes = sum(nb for _, op, _, nb, _, _ in rig.flash.log if op == Op.WRITE)
    assert writes == rig.dma.bytes[WRITEBACK].value == 64 * PAGE
    res.check()


def test_a_clean_writes_dirty_pages_back_keeps_them_and_their_space_until_it_ends() -> None:
    """A clean (``keep``) writes the dirty pages to flash and leaves them held in HBM,
    now clean; released before the write has ended, their space stays taken until
    then, as a write-back's would."""
    rig = Rig(64, 64)
    res = rig.res
    rig.book.allocate(0, 64, 0)
    rig.book.mark_live(0, rig.res.npages)
    req = rig.dma.submit(DmaRequest(WRITEBACK, 0, 64, 0, "weight", keep=True))
    rig.env.run(until=req.booked)
    writes = [(nb, e) for _, op, _, nb, _, e in rig.flash.log if op == Op.WRITE]
    assert sum(nb for nb, _ in writes) == rig.dma.bytes[WRITEBACK].value == 64 * PAGE
    assert res.in_hbm.all() and res.in_flash.all() and res.free_pages(int(rig.env.now)) == 0
    end = req.end_ps
    assert end > rig.env.now
    rig.book.release_clean(0, 64, int(rig.env.now))
    assert not res.in_hbm.any()
    assert res.free_pages(end - 1) == 0 and res.free_pages(end) == 64
    res.check()


def test_a_clean_goes_only_when_no_write_back_waits() -> None:
    """A clean frees no space: with one write-back slot, a write-back queued after it
    with a later deadline is still booked first."""
    rig = Rig(2 * 64, 2 * 64, outstanding=1)
    res = rig.res
    rig.book.allocate(0, 128, 0)
    rig.book.mark_live(0, rig.res.npages)
    rig.dma.submit(DmaRequest(WRITEBACK, 0, 64, 0, "clean", keep=True))
    rig.dma.submit(DmaRequest(WRITEBACK, 64, 128, 9, "evict"))
    rig.env.run()
    assert _runs([tag for _, op, _, _, tag, _ in rig.flash.log if op == Op.WRITE]) == [
        "evict", "clean"]
    assert res.in_hbm[:64].all() and not res.in_hbm[64:].any() and res.in_flash.all()


def test_a_clean_counts_in_the_iteration_of_the_eviction_it_saves() -> None:
    """A clean released in one iteration for an eviction in the next (a weight cleaned
    at its update) is that next iteration's traffic; a write-back is its releaser's."""
    rig = Rig(2 * 64, 2 * 64)
    rig.book.allocate(0, 128, 0)
    rig.book.mark_live(0, rig.res.npages)
    rig.dma.submit(DmaRequest(WRITEBACK, 0, 64, 3, "clean", keep=True, iteration=1))
    rig.dma.submit(DmaRequest(WRITEBACK, 64, 128, 3, "evict", iteration=1))
    rig.env.run()
    assert rig.dma.bytes_by_origin == {(WRITEBACK, 1): 64 * PAGE, (WRITEBACK, 0): 64 * PAGE}


def test_link_is_full_duplex_each_direction_on_its_own_timeline() -> None:
    """PCIe carries both directions at full rate at once: a transfer in and a transfer
    out booked at the same instant both end one transfer time later."""
    rig = Rig(64, 64)
    n = 1 << 20
    t = transfer_ps(n, rig.dma.link_bw) + rig.dma.link_cfg.latency_ps
    assert rig.dma._link(rig.dma.link_in, 0, n) == t
    assert rig.dma._link(rig.dma.link_out, 0, n) == t
    # the same direction twice queues
    assert rig.dma._link(rig.dma.link_in, 0, n) == 2 * t - rig.dma.link_cfg.latency_ps


def test_each_direction_serves_its_queue_earliest_deadline_first() -> None:
    """Fetches and write-backs have a window of slots each (one here): the write-back
    due at op 1 goes before the one due at op 9, and the fetch does not wait for
    either's slot."""
    rig = Rig(3 * 64, 3 * 64, outstanding=1)
    rig.book.allocate(0, 128, 0)
    rig.book.mark_live(0, rig.res.npages)
    rig.book.on_flash(128, rig.res.npages)
    rig.dma.submit(DmaRequest(WRITEBACK, 0, 64, 9, "late-wb"))
    rig.fetch(128, 192, "fetch", deadline=2)
    rig.dma.submit(DmaRequest(WRITEBACK, 64, 128, 1, "early-wb"))
    rig.env.run()
    log = rig.flash.log
    assert _runs([tag for _, op, _, _, tag, _ in log if op == Op.WRITE]) == [
        "early-wb", "late-wb"]
    fetch_start = min(t for t, op, _, _, _, _ in log if op == Op.READ)
    late_start = min(t for t, _, _, _, tag, _ in log if tag == "late-wb")
    assert fetch_start < late_start


def test_a_request_with_nothing_left_to_fetch_does_not_stall_the_next() -> None:
    """A queued fetch whose pages all arrived by other means finishes at once, and the
    request behind it is booked in the same wake-up."""
    rig = Rig(64, 64)
    rig.book.on_flash(0, rig.res.npages)
    rig.book.mark_live(0, rig.res.npages)
    first = rig.fetch(0, 32, "already-there", deadline=0, urgent=True)
    rig.book.allocate(0, 32, 0)            # arrived by another path
    second = rig.fetch(32, 64, "next", deadline=0, urgent=True)
    rig.env.run()
    assert first.booked is not None and first.booked.triggered
    assert second.booked is not None and second.booked.triggered
    assert _runs(rig.booking_order()) == ["next"]


# -- priorities --------------------------------------------------------------------------


def test_urgent_request_is_booked_before_queued_non_urgent_ones() -> None:
    rig = Rig(3 * 256, 3 * 256, outstanding=4)
    rig.fetch(0, 256, "late", deadline=3)
    rig.fetch(256, 512, "early", deadline=1)
    rig.fetch(512, 768, "fault", deadline=9, urgent=True)
    rig.env.run()
    # Urgent first whatever its deadline, then the non-urgent ones by deadline.
    assert _runs(rig.booking_order()) == ["fault", "early", "late"]


def test_urgent_request_overtakes_one_already_being_booked() -> None:
    rig = Rig(2048 + 64, 2048 + 64, outstanding=4)
    rig.fetch(0, 2048, "prefetch", deadline=5)
    t_fault = 1_234_567

    def fault() -> Generator[simpy.Event, Any, None]:
        yield rig.env.timeout(t_fault)
        rig.fetch(2048, 2048 + 64, "fault", deadline=2, urgent=True)

    rig.env.process(fault())
    rig.env.run()
    after = [tag for t, op, _, _, tag, _ in rig.flash.log if op == Op.READ and t >= t_fault]
    before = [tag for t, op, _, _, tag, _ in rig.flash.log if op == Op.READ and t < t_fault]
    assert before and set(before) == {"prefetch"}
    assert "prefetch" in after                      # the prefetch was not finished
    assert _runs(after) == ["fault", "prefetch"]    # the fault went ahead of its remainder
    # ...and it was booked at the instant it arrived, not after the engine's nap.
    assert min(t for t, op, _, _, tag, _ in rig.flash.log if tag == "fault") == t_fault


def test_a_fetch_takes_over_space_a_writeback_is_freeing_and_lands_after_it() -> None:
    """HBM full of dirty pages, one write-back and one fetch queued: the fetch's flash
    read starts at once, and its data lands in HBM no earlier than the write-back's data
    has left, so occupancy never exceeds capacity."""
    rig = Rig(128, 64, outstanding=4)
    res = rig.res
    rig.book.allocate(0, 64, 0)
    rig.book.mark_live(0, rig.res.npages)
    rig.book.on_flash(64, rig.res.npages)
    wb = rig.dma.submit(DmaRequest(WRITEBACK, 0, 64, 0, "out"))
    fetch = rig.fetch(64, 128, "in", deadline=1)
    rig.env.run()
    res.check()
    assert rig.res.level.peak <= 64 * PAGE
    first_read = min(t for t, op, _, _, tag, _ in rig.flash.log if op == Op.READ)
    assert first_read < wb.end_ps                 # read issued before the space was free
    assert (rig.res.first_ready[64:128] >= wb.end_ps).all()
    assert fetch.pages_moved == 64
