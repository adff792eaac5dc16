"""The DMA engine: moves page runs between flash and HBM ahead of the NPU.

Requests (``fetch``: flash -> link -> HBM; ``writeback``: HBM -> link -> flash, then the
HBM space is released) wait in a priority queue ordered by the op that needs them, so a
late prefetch goes ahead of an early one and a fault goes ahead of both. The engine books
each chunk loosely timed through ``MemoryTarget.transport`` on both tiers and the link's
timeline, with at most ``max_outstanding`` chunks in flight: chunk ``c`` is issued when a
slot frees. It books at most one window of chunks per wake-up and then sleeps until half
the window has drained, so it never books far ahead of what the queue's priorities
allow, and costs about ``2 / max_outstanding`` events per chunk.

The link is cut-through: its reservation ends no earlier than the source tier's, and the
destination tier is written as the data arrives.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from tmhw.config import DmaConfig, LinkConfig
from tmhw.residency import Residency
from tmhw.sim.component import Component
from tmhw.sim.energy import EnergyMeter, EnergyTable
from tmhw.sim.stats import Counter, Tally
from tmhw.sim.timeline import Timeline
from tmhw.sim.transfer import MemoryTarget, Op, Pattern, Transfer
from tmhw.sim.units import transfer_ps

#: Fetches smaller than this share one HBM booking per window (page-sized faults).
SMALL_TRANSFER = 64 * 1024

FETCH = "fetch"
WRITEBACK = "writeback"


@dataclass(slots=True)
class DmaRequest:
    """Move pages [p0, p1) (fetch: only those not already held in HBM)."""

    kind: str
    p0: int
    p1: int
    deadline_op: int
    tag: str = ""
    urgent: bool = False
    chunk_pages: int = 0                    # 0: the engine's chunk size
    booked: simpy.Event | None = None       # succeeds when every page is booked
    end_ps: int = 0                         # latest completion among booked chunks
    cursor: int = -1                        # next page to book
    submitted_ps: int = 0
    seq: int = 0
    pages_moved: int = 0
    iteration: int = 0                      # the training iteration that made it
    tensor: int = -1                        # the tensor the pages belong to (or -1)
    generation: int = 0                     # its use count when the request was made

    def key(self) -> tuple[int, int, int, int]:
        # Op indices restart every iteration: order by iteration first, so work left
        # from one iteration is not ranked behind the next one's early ops.
        return (0 if self.urgent else 1, self.iteration, self.deadline_op, self.seq)


Evictor = Callable[[int, int, int], int]
"""evictor(pages_needed, now, protect_op) -> pages it released or scheduled for release."""


class DmaEngine(Component):
    """Executes fetches and write-backs against two MemoryTargets over a link."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 cfg: DmaConfig, link: LinkConfig, hbm: MemoryTarget, flash: MemoryTarget,
                 residency: Residency, page_size: int) -> None:
        super().__init__(env, name, parent)
        self.cfg = cfg
        self.link_cfg = link
        self.hbm = hbm
        self.flash = flash
        self.res = residency
        self.page_size = page_size
        self.chunk_pages = max(1, cfg.chunk_bytes // page_size)
        self.link = Timeline(f"{self.path}.link", record=self.tracer.enabled)
        self.slots = [0] * cfg.max_outstanding
        self._queue: list[tuple[tuple[int, int, int, int], DmaRequest]] = []
        #: the iteration new requests belong to (the executor sets it)
        self.iteration = 0
        self._seq = itertools.count()
        self._kick: simpy.Event = env.event()
        self.evictor: Evictor | None = None
        #: stale(req) -> True when a write-back's tensor has been used again since the
        #: request was made: its pages are needed in HBM, so the eviction is void.
        self.stale: Callable[[DmaRequest], bool] | None = None
        #: headroom() -> pages a prefetch must leave free for the NPU's imminent
        #: allocations (its next ops' new outputs); urgent fetches may use them.
        self.headroom: Callable[[], int] | None = None
        #: too_early(req) -> True while a prefetch's deadline is beyond the lookahead.
        self.too_early: Callable[[DmaRequest], bool] | None = None
        self.meter = EnergyMeter(EnergyTable({"byte": cfg.pj_per_byte}, idle_mw=cfg.idle_mw))
        self.energy = self.meter
        self.link_energy_pj = 0.0
        self.bytes = {FETCH: Counter(), WRITEBACK: Counter()}
        self.chunks = Counter()
        self.requests = Counter()
        self.wakeups = Counter()
        self.void_writebacks = 0
        self._small: list[tuple[int, int, int]] = []
        self._small_bytes = 0
        self.fetch_latency = Tally()
        self._flash_addr_base = 0

    # -- interface -----------------------------------------------------------------------
    def submit(self, req: DmaRequest) -> DmaRequest:
        req.seq = next(self._seq)
        req.iteration = self.iteration
        req.cursor = req.p0
        req.submitted_ps = self.now
        if req.booked is None:
            req.booked = self.env.event()
        heapq.heappush(self._queue, (req.key(), req))
        self.requests.add()
        self.kick()
        return req

    def kick(self) -> None:
        """Wake the engine: a request arrived or HBM space was freed."""
        if not self._kick.triggered:
            self._kick.succeed()

    def writeback_now(self, p0: int, p1: int, now: int, tag: str = "") -> int:
        """Book a write-back of pages [p0, p1) at once, ahead of the queue (an eviction
        that must make room now). Returns when their HBM space is free."""
        k = min(range(len(self.slots)), key=self.slots.__getitem__)
        req = DmaRequest(WRITEBACK, p0, p1, -1, tag, urgent=True)
        req.submitted_ps = now
        end = self._writeback(p0, p1, max(now, self.slots[k]), req)
        self.slots[k] = end
        return end

    def pending(self) -> int:
        return len(self._queue)

    def _start(self) -> None:
        self.env.process(self._run())

    # -- the engine process --------------------------------------------------------------
    def _run(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        half = max(1, len(self.slots) // 2)
        while True:
            if not self._queue:
                self._kick = env.event()
                yield self._kick
                continue
            now = int(env.now)
            _, req = self._queue[0]
            progressed = self._book_window(req, now)
            if req.cursor >= req.p1:
                heapq.heappop(self._queue)
                assert req.booked is not None
                if not req.booked.triggered:
                    req.booked.succeed(req.end_ps)
            if not progressed and req.cursor < req.p1:
                # No HBM space for the head request: wait for space or a new request.
                self.wakeups.add()
                self._kick = env.event()
                nxt = self.res.next_free_time()
                if nxt is not None and nxt > now:
                    yield self._kick | env.timeout(nxt - now)
                else:
                    yield self._kick
                continue
            ends = sorted(self.slots)
            if ends[half - 1] > now:
                self.wakeups.add()
                self._kick = env.event()
                yield self._kick | env.timeout(ends[half - 1] - now)

    def _book_window(self, req: DmaRequest, now: int) -> bool:
        """Book chunks of ``req`` while a slot is free at ``now``. False if none fit."""
        chunk = req.chunk_pages or self.chunk_pages
        booked_any = False
        while req.cursor < req.p1:
            k = min(range(len(self.slots)), key=self.slots.__getitem__)
            if self.slots[k] > now and booked_any:
                break
            c0 = req.cursor
            c1 = min(req.p1, c0 + chunk)
            if req.kind == FETCH:
                pages = self.res.missing(c0, c1)
                if len(pages) == 0:
                    req.cursor = c1
                    continue
                if not req.urgent and self.too_early is not None and self.too_early(req):
                    self._flush_small()
                    return booked_any
                reserve = 0 if req.urgent or self.headroom is None else self.headroom()
                if self.res.free_pages(now) - reserve < len(pages):
                    if not req.urgent:
                        self._flush_small()
                        return booked_any
                    if self.evictor is not None:
                        self.evictor(len(pages) - self.res.free_pages(now), now,
                                     req.deadline_op)
                    if self.res.free_pages(now) < len(pages):
                        self._flush_small()
                        return booked_any
                end = self._fetch(pages, max(now, self.slots[k]), req)
            else:
                if self.stale is not None and self.stale(req):
                    self.void_writebacks += 1
                    req.cursor = req.p1
                    break
                end = self._writeback(c0, c1, max(now, self.slots[k]), req)
            self.slots[k] = end
            req.end_ps = max(req.end_ps, end)
            req.cursor = c1
            booked_any = True
        self._flush_small()
        return booked_any

    def _flush_small(self) -> None:
        """Book the HBM writes of the page-sized fetches of one window as one transfer;
        their pages are complete when both their data and that write are."""
        if not self._small:
            return
        now = int(self.env.now)
        h_end = self.hbm.transport(Transfer(Op.WRITE, self._hbm_addr(self._small[0][0]),
                                            self._small_bytes, Pattern.RANDOM), now)
        ready = self.res.ready_at
        for a, b, l_end in self._small:
            if h_end > l_end:
                ready[a:b] = h_end
        self._small.clear()
        self._small_bytes = 0

    def _runs(self, pages: np.ndarray) -> list[tuple[int, int]]:
        """Contiguous runs [a, b) of a sorted page array."""
        if len(pages) == 0:
            return []
        if pages[-1] - pages[0] + 1 == len(pages):
            return [(int(pages[0]), int(pages[-1]) + 1)]
        cut = np.flatnonzero(np.diff(pages) != 1) + 1
        starts = np.concatenate(([0], cut))
        stops = np.concatenate((cut, [len(pages)]))
        return [(int(pages[a]), int(pages[b - 1]) + 1) for a, b in zip(starts, stops, strict=False)]

    def _link(self, src_end: int, nbytes: int) -> int:
        dur = transfer_ps(nbytes, self.link_cfg.bandwidth)
        end = self.link.reserve(max(0, src_end - dur), dur, "xfer")
        self.link_energy_pj += nbytes * 8 * self.link_cfg.pj_per_bit
        return max(end, src_end) + self.link_cfg.latency_ps

    def _fetch(self, pages: np.ndarray, issue: int, req: DmaRequest) -> int:
        ps = self.page_size
        end = issue
        t0 = issue + self.cfg.setup_ps
        for a, b in self._runs(pages):
            n = (b - a) * ps
            f_end = self.flash.transport(Transfer(Op.READ, a * ps, n, Pattern.STREAM,
                                                  req.tag), t0)
            l_end = self._link(f_end, n)
            if n < SMALL_TRANSFER:
                # Page-sized faults: their HBM writes go as one transfer per window
                # (``_flush_small``); HBM time for a few KiB is nanoseconds, and one
                # DRAM booking per page would cost the simulator more than the flash.
                h_end = l_end
                self._small.append((a, b, l_end))
                self._small_bytes += n
            else:
                # The HBM write is booked now, not at the data's arrival: HBM timelines
                # are busy-until FIFOs, and a reservation far in the future would hold
                # back the NPU's own traffic in between. The chunk is complete when the
                # data has arrived and its HBM write has had its share of the channels.
                h_end = max(l_end, self.hbm.transport(
                    Transfer(Op.WRITE, self._hbm_addr(a), n, Pattern.STREAM, req.tag),
                    int(self.env.now)))
            self.res.hold(slice(a, b), h_end, int(self.env.now))
            end = max(end, h_end)
            self._account(FETCH, n, t0, h_end, req)
        self.fetch_latency.add(end - req.submitted_ps)
        return end

    def _writeback(self, c0: int, c1: int, issue: int, req: DmaRequest) -> int:
        """Evict pages [c0, c1): dirty ones (live, newer than flash) are written back and
        free when the flash write completes; clean or dead ones free at once."""
        ps = self.page_size
        res = self.res
        now = int(self.env.now)
        held = res.in_hbm[c0:c1]
        dirty_mask = held & res.live[c0:c1] & ~res.in_flash[c0:c1]
        clean = np.flatnonzero(held & ~dirty_mask) + c0
        for a, b in self._runs(clean):
            ready = res.ready_time(a, b)
            res.release(slice(a, b), now, until=ready if ready > now else None)
        dirty = np.flatnonzero(dirty_mask) + c0
        end = issue
        t0 = issue + self.cfg.setup_ps
        for a, b in self._runs(dirty):
            n = (b - a) * ps
            ready = self.res.ready_time(a, b)
            h_end = max(t0, ready, self.hbm.transport(
                Transfer(Op.READ, self._hbm_addr(a), n, Pattern.STREAM, req.tag),
                int(self.env.now)))
            l_end = self._link(h_end, n)
            f_end = self.flash.transport(Transfer(Op.WRITE, a * ps, n, Pattern.STREAM,
                                                  req.tag), l_end)
            self.res.in_flash[a:b] = True
            self.res.release(slice(a, b), int(self.env.now), until=f_end)
            end = max(end, f_end)
            self._account(WRITEBACK, n, t0, f_end, req)
        return end

    def _hbm_addr(self, page: int) -> int:
        return (page % max(1, self.res.capacity)) * self.page_size

    def _account(self, kind: str, nbytes: int, start: int, end: int, req: DmaRequest) -> None:
        self.bytes[kind].add(nbytes)
        self.chunks.add()
        self.meter.add("byte", nbytes)
        req.pages_moved += nbytes // self.page_size
        self.tracer.span(f"{self.path}.{kind}", start, end, req.tag or kind,
                         {"bytes": nbytes, "deadline_op": req.deadline_op})

    # -- report --------------------------------------------------------------------------
    def _finalize(self, now: int) -> None:
        self.meter.add_pj("link", self.link_energy_pj)

    def _report(self) -> dict[str, Any]:
        return {
            "fetch_bytes": self.bytes[FETCH].value,
            "writeback_bytes": self.bytes[WRITEBACK].value,
            "chunks": self.chunks.value,
            "requests": self.requests.value,
            "wakeups": self.wakeups.value,
            "void_writebacks": self.void_writebacks,
            "fetch_latency_ps": self.fetch_latency.report(),
            "link": {"busy_ps": self.link.busy_ps, "transfers": self.link.count},
        }
