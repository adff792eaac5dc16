"""The DMA engine: moves page runs between flash and HBM ahead of the NPU.

Requests are ``fetch`` (flash -> link -> HBM) and ``writeback`` (HBM -> link -> flash).
Every request carries a deadline: the iteration and op by whose start it must be done
(for a prefetch, the op that reads the data; for a write-back, the op from which its HBM
space is needed). The engine serves the earliest deadline first; on equal deadlines a
write-back goes first, since the fetches due at that op may need its space. A fault
(``urgent``) goes ahead of everything: its op is already waiting.

A fetch is booked only into free HBM space, or space a write-back in flight is freeing:
then its data is read from flash at once and crosses into HBM once that space is free,
so reads overlap the write-backs that make room for them. When the earliest fetch has
no room, the engine books queued write-backs (earliest first) to make some, and for an
urgent fetch it then asks its ``client`` (the pager) to evict; a non-urgent fetch
otherwise waits for space. So a write-back never delays a fetch with an earlier
deadline, and a fetch never waits behind a write-back except for the space that
write-back frees.

Booking is loosely timed through ``MemoryTarget.transport`` on both tiers and the link,
with at most ``max_outstanding`` chunks in flight in each direction: fetches and
write-backs have a window of slots each (the link is full duplex, and a fetch must not
wait for a slot a write-back holds, nor a write-back for a fetch's), and a chunk is
issued when a slot of its direction frees. The engine books at most one window of
chunks per wake-up and then sleeps until half the window of a direction with queued
requests has drained, about ``2 / max_outstanding`` events per chunk.

A write-back with ``keep`` is a clean: its dirty pages are written to flash and stay in
HBM (flash then holds their current version), so the eviction that follows frees them
at once. A clean frees no space, so cleans have a queue of their own that neither a
fetch waiting for room nor ``expedite_writebacks`` draws on; they share the write-back
window, earliest deadline first with the write-backs. Pages a clean is still copying
out keep their space until its write ends, even if they are released earlier
(``Residency.cleaning``).

The engine reads the residency and changes it only through its ``pages`` port (the
pager, ``tmhw.run.pager``): pages landing, ready times, written back. Each request says
which iteration released it (``origin``, whose traffic it is) and which iteration's op
is its deadline (``iteration``); the engine keeps no iteration of its own.

In-place reads (``inplace_read``, FlatFlash) are not requests: the NPU reads a run of
flash pages through the SSD's PCIe BAR in cache lines, straight into its scratchpad,
as one booking on the flash and on the link (with each line's framing), and nothing
lands in HBM. Their bytes are counted as ``inplace`` traffic.

The link is PCIe: full duplex, one timeline per direction, and cut-through (a
reservation ends no earlier than its source tier's). A write-back's data crosses the
NPU's port and the SSD's own link together, at the slower one's rate; its HBM pages and
its slot are free once the SSD acknowledges the write (NVMe: the host buffer is then
free), which with the controller's write buffer is when the data is in it; the flash
program continues in the device.

Chunk sizes follow the flash tier unless set (``tmhw.dma_chunks``): a chunk reaches every
plane of every die of every device, and a fetch chunk carries enough pages per die
that the program suspend its reads cause is a small part of their die time.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol

import simpy

from flash import FlashConfig
from tmhw.config import DmaConfig, LinkConfig
from tmhw.dma_chunks import chunk_sizes
from tmhw.residency import Residency
from tmhw.sim.component import Component
from tmhw.sim.energy import EnergyMeter, EnergyTable
from tmhw.sim.errors import TmhwError
from tmhw.sim.stats import Counter, Tally
from tmhw.sim.timeline import Timeline
from tmhw.sim.transfer import MemoryTarget, Op, Pattern, Transfer
from tmhw.sim.units import transfer_ps

#: Fetches smaller than this share one HBM booking per window (page-sized faults).
SMALL_TRANSFER = 64 * 1024

FETCH = "fetch"
WRITEBACK = "writeback"
INPLACE = "inplace"

Key = tuple[int, int, int, int, int]


def _refill(slots: list[int], end: int) -> None:
    """The earliest free slot of a window (``slots``, in time order) is taken until
    ``end``."""
    del slots[0]
    bisect.insort(slots, end)


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
    iteration: int = 0                      # the training iteration whose op is the deadline
    origin: int = 0                         # the iteration that released it (its traffic)
    tensor: int = -1                        # the tensor the pages belong to (or -1)
    generation: int = 0                     # its use count when the request was made
    keep: bool = False                      # write-back only: a clean (pages stay held)

    def key(self) -> Key:
        # Op indices restart every iteration: order by iteration first, so work left
        # from one iteration is not ranked behind the next one's early ops.
        return (0 if self.urgent else 1, self.iteration, self.deadline_op,
                0 if self.kind == WRITEBACK else 1, self.seq)

    @property
    def done(self) -> bool:
        return self.cursor >= self.p1


class PageWriter(Protocol):
    """How the engine changes the residency (the pager, its only writer)."""

    @property
    def res(self) -> Residency:
        """The residency, for reading."""
        ...

    def landing(self, p0: int, p1: int, ready: int, now: int) -> None:
        """Pages [p0, p1) are held in HBM from ``now``, complete at ``ready``."""
        ...

    def set_ready(self, p0: int, p1: int, ready: int) -> None:
        """Pages [p0, p1)' HBM copies are complete at ``ready``."""
        ...

    def claim_freeing(self, pages: int, now: int) -> int | None:
        """``Residency.claim_freeing``: space in-flight write-backs free, for a fetch."""
        ...

    def written_back(self, p0: int, p1: int, done: int, now: int, keep: bool) -> None:
        """Flash holds pages [p0, p1) from ``done``; they leave HBM then, or stay held
        (``keep``, a clean)."""
        ...

    def release_clean(self, p0: int, p1: int, now: int) -> None:
        """Pages of [p0, p1) that flash holds, or that are dead, leave HBM."""
        ...


class DmaClient(Protocol):
    """What the engine asks of the pager that owns HBM."""

    def make_room(self, pages: int, now: int, protect_op: int) -> int:
        """Evict so that ``pages`` become free (now or as write-backs drain), never
        the operands of op ``protect_op``. Returns pages released or scheduled."""
        ...

    def is_stale(self, req: DmaRequest) -> bool:
        """A write-back whose tensor has been claimed again since it was requested (its
        pages are needed in HBM, so the eviction is void)."""
        ...


class DmaEngine(Component):
    """Executes fetches and write-backs against two MemoryTargets over a duplex link."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 cfg: DmaConfig, link: LinkConfig, link_bytes_per_s: float, hbm: MemoryTarget,
                 flash: MemoryTarget, pages: PageWriter, page_size: int,
                 client: DmaClient | None = None, record_order: bool = False) -> None:
        """``link_bytes_per_s`` is the port's rate per direction
        (``SystemConfig.link_bytes_per_s``). ``pages`` reads and writes the residency.
        ``client`` may be None only where no urgent
        fetch can lack space and no write-back can go stale (a test rig);
        ``record_order`` keeps, per booked chunk, its request's key and the earliest key
        then queued that could have been booked (``order_log``), for the deadline-order
        property."""
        super().__init__(env, name, parent)
        self.cfg = cfg
        self.link_cfg = link
        self.link_bw = link_bytes_per_s
        self.hbm = hbm
        self.flash = flash
        self.pages = pages
        self.res = pages.res
        self.page_size = page_size
        self.client = client
        # the flash tier's geometry, or the default device's behind a stand-in tier
        fcfg = getattr(flash, "cfg", None)
        fetch_b, wb_b = chunk_sizes(cfg, fcfg if isinstance(fcfg, FlashConfig) else
                                    FlashConfig(), pages.res.capacity * page_size)
        self.chunk_pages = max(1, fetch_b // page_size)
        self.wb_chunk_pages = max(1, wb_b // page_size)
        rec = self.tracer.enabled
        #: flash -> HBM and HBM -> flash: PCIe is full duplex
        self.link_in = Timeline(f"{self.path}.link_in", record=rec)
        self.link_out = Timeline(f"{self.path}.link_out", record=rec)
        #: per direction, when each slot of the window is free again, in time order (the
        #: earliest free is the first; half the window is free at the middle one): a
        #: window of any size costs a few operations a chunk (``_refill``)
        self.fetch_slots = [0] * cfg.max_outstanding
        self.wb_slots = [0] * cfg.max_outstanding
        self._fetches: list[tuple[Key, DmaRequest]] = []
        self._writebacks: list[tuple[Key, DmaRequest]] = []
        #: cleans: write-backs whose pages stay in HBM; they free no space, so they
        #: share the write-back window but not the queue that makes room
        self._cleans: list[tuple[Key, DmaRequest]] = []
        self._seq = itertools.count()
        self._kick: simpy.Event = env.event()
        self.order_log: list[tuple[Key, Key | None]] | None = [] if record_order else None
        self.meter = EnergyMeter(EnergyTable({"byte": cfg.pj_per_byte}, idle_mw=cfg.idle_mw))
        self.energy = self.meter
        self.link_energy_pj = 0.0
        self.bytes = {FETCH: Counter(), WRITEBACK: Counter(), INPLACE: Counter()}
        self.inplace_reads = Counter()
        #: (kind, iteration that released the request; for a clean, the iteration of
        #: the eviction it saves) -> bytes moved
        self.bytes_by_origin: dict[tuple[str, int], int] = {}
        self.chunks = Counter()
        self.requests = Counter()
        self.wakeups = Counter()
        self.void_writebacks = 0
        #: per tensor: write-backs booked only because a fetch was waiting for their
        #: space (the executor hands these to the policy after each iteration)
        self.late_writebacks: dict[int, int] = {}
        self._small: list[tuple[int, int, int]] = []
        self._small_bytes = 0
        self.fetch_latency = Tally()

    def _elaborate(self) -> None:
        for port, what in ((self.hbm, "hbm"), (self.flash, "flash")):
            if not isinstance(port, MemoryTarget):
                raise TmhwError(f"{self.path}: port {what} is not a MemoryTarget")
        if self.res.page_size != self.page_size:
            raise TmhwError(f"{self.path}: residency pages of {self.res.page_size} B, "
                            f"engine pages of {self.page_size} B")

    # -- interface -----------------------------------------------------------------------
    def submit(self, req: DmaRequest) -> DmaRequest:
        """Queue ``req`` (its ``origin`` and ``iteration`` as the caller set them)."""
        req.seq = next(self._seq)
        req.cursor = req.p0
        req.submitted_ps = self.now
        if req.booked is None:
            req.booked = self.env.event()
        heap = self._fetches if req.kind != WRITEBACK else \
            self._cleans if req.keep else self._writebacks
        heapq.heappush(heap, (req.key(), req))
        self.requests.add()
        self.kick()
        return req

    def cancel(self, req: DmaRequest) -> bool:
        """Drop what is left of a queued request (its op has run, or its tensor died).
        True if anything was left."""
        if req.done:
            return False
        req.cursor = req.p1
        return True

    def kick(self) -> None:
        """Wake the engine: a request arrived or HBM space was freed."""
        if not self._kick.triggered:
            self._kick.succeed()

    def writeback_now(self, p0: int, p1: int, now: int, origin: int, tag: str = "") -> int:
        """Book a write-back of pages [p0, p1) at once, ahead of the queue (an eviction
        in iteration ``origin`` that must make room now). Returns when their HBM space
        is free."""
        req = DmaRequest(WRITEBACK, p0, p1, -1, tag, urgent=True, origin=origin)
        req.submitted_ps = now
        req.cursor = p0
        while not req.done:
            self._book_writeback(req, now)
        return max(now, req.end_ps)

    def expedite_writebacks(self, pages: int, now: int) -> int:
        """Book queued write-backs at once, earliest deadline first, until ``pages``
        pages are on their way out of HBM (the executor needs the space now). Returns
        the pages scheduled to free."""
        freed = 0
        while freed < pages and (req := self._head(self._writebacks)) is not None:
            if self.client is not None and self.client.is_stale(req):
                self.void_writebacks += 1
                req.cursor = req.p1
                continue
            before = self.res.held
            self._book_writeback(req, now)
            freed += before - self.res.held
        self._head(self._writebacks)
        return freed

    def inplace_read(self, p0: int, p1: int, now: int, line_bytes: int,
                     line_overhead_bytes: int, origin: int, tag: str = "") -> int:
        """Read pages [p0, p1) in place through the SSD's BAR from ``now`` on, in
        iteration ``origin``: one
        flash read whose data crosses the SSD's link and the NPU's port as cache lines
        of ``line_bytes``, each with ``line_overhead_bytes`` of framing; returns when
        the last line has arrived. HBM is not touched."""
        n = (p1 - p0) * self.page_size
        wire = n + -(-n // line_bytes) * line_overhead_bytes
        f_end = self.flash.transport(Transfer(Op.READ, p0 * self.page_size, n,
                                              Pattern.STREAM, tag, wire_bytes=wire), now)
        end = self._link(self.link_in, f_end, wire)
        self.inplace_reads.add()
        self.bytes[INPLACE].add(n)
        key = (INPLACE, origin)
        self.bytes_by_origin[key] = self.bytes_by_origin.get(key, 0) + n
        self.tracer.span(f"{self.path}.{INPLACE}", now, end, tag or INPLACE, {"bytes": n})
        return end

    def unfinished(self) -> list[DmaRequest]:
        """Requests not yet completely booked."""
        return [r for _, r in self._fetches + self._writebacks + self._cleans
                if not r.done]

    def take_late_writebacks(self) -> frozenset[int]:
        """The tensors whose write-back was booked only because a fetch was waiting for
        its space, since the last call."""
        out = frozenset(self.late_writebacks)
        self.late_writebacks.clear()
        return out

    def _start(self) -> None:
        self.env.process(self._run())

    # -- the engine process --------------------------------------------------------------
    @staticmethod
    def _head(heap: list[tuple[Key, DmaRequest]]) -> DmaRequest | None:
        while heap:
            req = heap[0][1]
            if not req.done:
                return req
            heapq.heappop(heap)
            booked = req.booked
            assert booked is not None
            if not booked.triggered:
                booked.succeed(req.end_ps)
        return None

    def _run(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        half = max(1, len(self.fetch_slots) // 2)
        while True:
            f, w = self._head(self._fetches), self._head(self._writebacks)
            if w is None and self._cleans:
                # a clean only takes write bandwidth no write-back is waiting for
                w = self._head(self._cleans)
            if f is None and w is None:
                self._kick = env.event()
                yield self._kick
                continue
            now = int(env.now)
            # a direction is open while at least half its window is free; an urgent
            # fetch (a fault) is booked at once
            f_at = (now if f is not None and f.urgent
                    else self.fetch_slots[half - 1] if f is not None else None)
            w_at = self.wb_slots[half - 1] if w is not None else None
            if (f_at is None or f_at > now) and (w_at is None or w_at > now):
                self.wakeups.add()
                self._kick = env.event()
                at = min(t for t in (f_at, w_at) if t is not None)
                yield self._kick | env.timeout(at - now)
                continue
            if f_at is None or f_at > now:
                f = None
            if w_at is None or w_at > now:
                w = None
            if w is not None and (f is None or w.key() < f.key()):
                progressed = self._book_window(w, now, None if f is None else f.key())
            else:
                assert f is not None
                progressed = self._book_window(f, now, None if w is None else w.key())
                if not progressed:
                    # No room for the earliest fetch: write-backs make some.
                    while not progressed and (w := self._head(self._writebacks)) is not None:
                        progressed = self._book_window(w, now, f.key(), blocked=True)
                        if w.tensor >= 0:
                            # its space was wanted before it left: a late write-back
                            self.late_writebacks[w.tensor] = \
                                self.late_writebacks.get(w.tensor, 0) + 1
                    if not progressed and f.urgent and self.client is not None:
                        self.client.make_room(self._need(f, now), now, f.deadline_op)
                        progressed = self._book_window(f, now, None)
            for heap in (self._fetches, self._writebacks, self._cleans):
                if heap and heap[0][1].done:
                    self._head(heap)  # (requests booked whole: their events succeed)
            if not progressed:
                # Nothing could be booked: wait for space or a new request.
                self.wakeups.add()
                self._kick = env.event()
                nxt = self.res.next_free_time()
                if nxt is not None and nxt > now:
                    yield self._kick | env.timeout(nxt - now)
                else:
                    yield self._kick
                continue

    def _need(self, req: DmaRequest, now: int) -> int:
        chunk = req.chunk_pages or self.chunk_pages
        c1 = min(req.p1, req.cursor + chunk)
        return self.res.count_missing(req.cursor, c1) - self.res.free_pages(now)

    def _book_window(self, req: DmaRequest, now: int, other: Key | None,
                     blocked: bool = False) -> bool:
        """Book chunks of ``req`` while a slot is free at ``now``. False if it could not
        advance.
        ``other`` is the earliest key of the other queue (for the order log);
        ``blocked``: that request could not be booked for lack of space."""
        chunk = req.chunk_pages or (self.wb_chunk_pages if req.kind == WRITEBACK
                                    else self.chunk_pages)
        booked_any = False
        start = req.cursor
        slots = self.wb_slots if req.kind == WRITEBACK else self.fetch_slots
        while req.cursor < req.p1:
            if slots[0] > now and booked_any:  # (the earliest free slot)
                break
            c0 = req.cursor
            c1 = min(req.p1, c0 + chunk)
            if req.kind == FETCH:
                n_miss, miss = self.res.missing_runs(c0, c1)
                if n_miss == 0:
                    req.cursor = c1
                    continue
                free = self.res.free_pages(now)
                after = now
                if free < n_miss:
                    # Space a write-back in flight is freeing: the data may be read
                    # from flash now and land in HBM once that space is free.
                    t = self.pages.claim_freeing(n_miss - free, now)
                    if t is None:
                        break
                    after = t
                end = self._fetch(miss, max(now, slots[0]), req, after)
            else:
                if not req.keep and self.client is not None and self.client.is_stale(req):
                    self.void_writebacks += 1
                    req.cursor = req.p1
                    break
                if self.order_log is not None:
                    self.order_log.append((req.key(), None if blocked else other))
                self._book_writeback(req, now)
                booked_any = True
                continue
            if self.order_log is not None:
                self.order_log.append((req.key(), None if blocked else other))
            _refill(slots, end)
            req.end_ps = max(req.end_ps, end)
            req.cursor = c1
            booked_any = True
        self._flush_small()
        # A request whose remaining pages were all present has advanced too (to its
        # end): the next one must be tried now, not after a wake-up nobody sends.
        return booked_any or req.cursor > start

    def _book_writeback(self, req: DmaRequest, now: int) -> None:
        """Book the next chunk of write-back ``req`` in the earliest free slot; the
        slot, and the request's completion, are when its space is free."""
        c0 = req.cursor
        c1 = min(req.p1, c0 + (req.chunk_pages or self.wb_chunk_pages))
        slots = self.wb_slots
        free_at, _ = self._writeback(c0, c1, max(now, slots[0]), req)  # the earliest free
        _refill(slots, free_at)
        req.end_ps = max(req.end_ps, free_at)
        req.cursor = c1

    def _flush_small(self) -> None:
        """Book the HBM writes of the page-sized fetches of one window as one transfer;
        their pages are complete when both their data and that write are."""
        if not self._small:
            return
        now = int(self.env.now)
        h_end = self.hbm.transport(Transfer(Op.WRITE, self._hbm_addr(self._small[0][0]),
                                            self._small_bytes, Pattern.RANDOM), now)
        for a, b, l_end in self._small:
            if h_end > l_end:
                self.pages.set_ready(a, b, h_end)
        self._small.clear()
        self._small_bytes = 0

    def _link_ps(self, nbytes: int) -> int:
        return transfer_ps(nbytes, self.link_bw) + self.link_cfg.latency_ps

    def _link(self, line: Timeline, src_end: int, nbytes: int) -> int:
        dur = transfer_ps(nbytes, self.link_bw)
        end = line.reserve(max(0, src_end - dur), dur, "xfer")
        self.link_energy_pj += nbytes * 8 * self.link_cfg.pj_per_bit
        return max(end, src_end) + self.link_cfg.latency_ps

    def _fetch(self, miss: list[tuple[int, int]], issue: int, req: DmaRequest,
               after: int = 0) -> int:
        """Read the runs of pages ``miss`` from flash from ``issue`` on; their data
        crosses into HBM no earlier than ``after`` (when the HBM space it takes over is
        free)."""
        ps = self.page_size
        end = issue
        t0 = issue + self.cfg.setup_ps
        now = int(self.env.now)
        for a, b in miss:
            n = (b - a) * ps
            f_end = self.flash.transport(Transfer(Op.READ, a * ps, n, Pattern.STREAM,
                                                  req.tag), t0)
            l_end = self._link(self.link_in, max(f_end, after), n)
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
                    Transfer(Op.WRITE, self._hbm_addr(a), n, Pattern.STREAM, req.tag), now))
            self.pages.landing(a, b, h_end, now)
            end = max(end, h_end)
            self._account(FETCH, n, t0, h_end, req)
        self.fetch_latency.add(end - req.submitted_ps)
        return end

    def _writeback(self, c0: int, c1: int, issue: int, req: DmaRequest) -> tuple[int, int]:
        """Evict pages [c0, c1): dirty ones (live, newer than flash) are written back and
        free once their data has crossed the link; clean or dead ones free at once.
        Returns (when the last page's space is free, when the last flash write ends)."""
        ps = self.page_size
        res = self.res
        now = int(self.env.now)
        if c1 > c0 and res.dirty_count(c0, c1) == c1 - c0:
            dirty = [(c0, c1)]  # the usual case: all dirty, so none clean to release
        else:
            dirty = res.dirty_runs(c0, c1)
            if not req.keep:
                self.pages.release_clean(c0, c1, now)
        free_at = end = issue
        t0 = issue + self.cfg.setup_ps
        for a, b in dirty:
            n = (b - a) * ps
            ready = res.ready_time(a, b)
            h_end = max(t0, ready, self.hbm.transport(
                Transfer(Op.READ, self._hbm_addr(a), n, Pattern.STREAM, req.tag), now))
            l_end = self._link(self.link_out, h_end, n)
            # The data crosses the NPU's port and the SSD's link together (cut-through),
            # at the slower one's rate; the pages are free once the SSD has acknowledged
            # the write (its data in the controller's write buffer, or programmed).
            f_end = self.flash.transport(Transfer(Op.WRITE, a * ps, n, Pattern.STREAM,
                                                  req.tag), l_end - self._link_ps(n))
            done = max(l_end, f_end)
            self.pages.written_back(a, b, done, now, req.keep)
            free_at = max(free_at, done)
            end = max(end, done)
            self._account(WRITEBACK, n, t0, f_end, req)
        return free_at, end

    def _hbm_addr(self, page: int) -> int:
        return (page % max(1, self.res.capacity)) * self.page_size

    def _account(self, kind: str, nbytes: int, start: int, end: int, req: DmaRequest) -> None:
        self.bytes[kind].add(nbytes)
        # a clean's bytes belong to the iteration of the eviction it saves
        key = (kind, req.iteration if req.keep else req.origin)
        self.bytes_by_origin[key] = self.bytes_by_origin.get(key, 0) + nbytes
        self.chunks.add()
        self.meter.add("byte", nbytes)
        req.pages_moved += nbytes // self.page_size
        if self.tracer.enabled:
            self.tracer.span(f"{self.path}.{kind}", start, end, req.tag or kind,
                             {"bytes": nbytes, "deadline_op": req.deadline_op})

    # -- report --------------------------------------------------------------------------
    def _finalize(self, now: int) -> None:
        # Assigned, not added: finalizing at the end of the warm-up and again at the
        # end of the run must not count the link twice.
        self.meter.extra_pj["link"] = self.link_energy_pj

    def _report(self) -> dict[str, Any]:
        return {
            "fetch_bytes": self.bytes[FETCH].value,
            "writeback_bytes": self.bytes[WRITEBACK].value,
            "inplace_bytes": self.bytes[INPLACE].value,
            "inplace_reads": self.inplace_reads.value,
            "chunks": self.chunks.value,
            "requests": self.requests.value,
            "wakeups": self.wakeups.value,
            "void_writebacks": self.void_writebacks,
            "fetch_latency_ps": self.fetch_latency.report(),
            "link": {"in_busy_ps": self.link_in.busy_ps, "out_busy_ps": self.link_out.busy_ps,
                     "transfers": self.link_in.count + self.link_out.count},
        }
