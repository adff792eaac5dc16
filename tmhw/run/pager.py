"""The pager: HBM residency and eviction, and the DMA engine that moves pages.

The pager is the only writer of residency (``tmhw.residency``) besides the DMA engine it
owns (a booked fetch holds pages, a finished write-back marks them on flash): the
executor's loop asks it to place the common start, allocate an op's outputs, fault in,
read in place, mark what an op wrote, release the table's write-backs, cleans and drops,
and make room.

**Initial placement, the same for every policy.** At time 0 every tensor that lives
across iterations (weights, master copies, optimizer state) is on flash, the
checkpoint; HBM holds the first mini-batch and clean copies of as many of those tensors
as fit, in the order of their first use in the iteration.

**Eviction.** Static tables plan their evictions; when the pager still needs space (an
allocation or a fault finds HBM full), it first books the write-backs the table has
queued, then evicts the tensors the policy names (``Policy.victims``: least recently
used for the demand pager and FlatFlash, furthest next use otherwise). A static table's
such evictions are counted as ``emergency``: a sound static plan needs none in steady
state, and the report warns when one does.

**In-place reads** (a table with ``in_place``, FlatFlash). An operand an op only reads
and finds (partly) missing from HBM is not faulted in: each run of its missing pages is
read through the SSD's BAR in cache lines (``DmaEngine.inplace_read``: one flash request
per run), and the op cannot end before the last line has arrived. Each such read counts
one access on its pages; a page whose count reaches ``policy.flatflash.promote_after``
is promoted: a background fetch into HBM, released as the op starts, behind its in-place
reads; an access that finds the pages missing until the fetch is booked reads them in
place again.
"""

from __future__ import annotations

import bisect
from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from tmhw.config import SystemConfig
from tmhw.dma import FETCH, WRITEBACK, DmaEngine, DmaRequest
from tmhw.placement.base import Policy
from tmhw.placement.table import Action, Move, PlacementTable
from tmhw.residency import Residency
from tmhw.sim.component import Component
from tmhw.sim.errors import DoesNotFit
from tmhw.sim.transfer import MemoryTarget, Transfer
from tmhw.sim.transfer import Op as TOp
from tmhw.workload.graph import Kind, Op, Workload


class Pager:
    """Residency, eviction and the DMA engine of one workload under one policy."""

    def __init__(self, env: simpy.Environment, parent: Component | None, cfg: SystemConfig,
                 workload: Workload, policy: Policy, capacity_pages: int,
                 hbm: MemoryTarget, flash: MemoryTarget, *,
                 record_dma_order: bool = False) -> None:
        self.env = env
        self.workload = wl = workload
        self.policy = policy
        self.flash = flash
        self.res = Residency(wl.npages, capacity_pages, wl.page_size, starts=wl.page_starts())
        self.dma = DmaEngine(env, "dma", parent, cfg.dma, cfg.link, cfg.link_bytes_per_s, hbm,
                             flash, self.res, wl.page_size, client=self,
                             record_order=record_dma_order)
        self.table: PlacementTable | None = None
        self.ranges = [(t.page_start, t.page_end) for t in wl.tensors]
        self.persistent = np.array([t.kind.persistent for t in wl.tensors], dtype=bool)
        self.use_ops: list[list[int]] = [[i for i, _ in u] for u in wl.uses()]
        #: per tensor, the use clock of its last access (least recently used eviction)
        self.last_use = np.full(len(wl.tensors), -1, dtype=np.int64)
        self._clock = 0
        #: per tensor, how many times an op or a released prefetch has claimed it
        self.generation = np.zeros(len(wl.tensors), dtype=np.int64)
        #: per tensor, the ops between which it holds this iteration's data (the
        #: mini-batch from the iteration's start)
        self.live_range = wl.live_ranges()
        self.live_range[[t.id for t in wl.tensors if t.kind == Kind.INPUT], 0] = 0
        self.current_op = 0
        #: the iteration running: the origin of every request the pager makes
        self.iteration = 0
        self.prefetching: dict[int, DmaRequest] = {}
        #: per tensor, its clean queued or in flight (``Move.keep``)
        self.cleaning: dict[int, DmaRequest] = {}
        #: in-place reads: accesses per page since it was last promoted or died
        #: (allocated on the first in-place read: 4 bytes a page), and each tensor's
        #: promotion in flight
        self._access_count: np.ndarray | None = None
        self.promoting: dict[int, DmaRequest] = {}
        self.emergency = 0
        self.trims = 0
        self.dead_writeback_bytes = 0
        self.promotions = 0
        self.inplace_reads = 0
        self.cancelled_prefetches = 0

    def bind(self, table: PlacementTable) -> None:
        self.table = table

    def begin_iteration(self, iteration: int) -> None:
        self.iteration = iteration

    # -- placement -----------------------------------------------------------------------
    def initial_state(self) -> None:
        """The common start (module docstring): the mini-batch and, in order of first use,
        clean copies of as many persistent tensors as fit."""
        wl, res = self.workload, self.res
        for t in wl.tensors:
            if t.kind == Kind.INPUT:
                res.hold(slice(t.page_start, t.page_end), 0, 0)
                res.set_live(t.page_start, t.page_end, True)
        first = wl.live_ranges()[:, 0]
        keep = sorted((int(first[t.id]), t.id) for t in wl.tensors
                      if t.kind.persistent and first[t.id] >= 0)
        for t in wl.tensors:
            if t.kind.persistent:
                res.set_live(t.page_start, t.page_end, True)
                res.set_on_flash(t.page_start, t.page_end, True)
        room = res.free_pages(0)
        for _, tid in keep:
            t = wl.tensors[tid]
            if t.npages > room:
                break
            res.hold(slice(t.page_start, t.page_end), 0, 0)
            room -= t.npages

    def host_input(self) -> Generator[simpy.Event, Any, None]:
        """The next mini-batch lands in HBM from the host (not inter-tier traffic)."""
        for t in self.workload.tensors:
            if t.kind == Kind.INPUT:
                yield from self.room_for(self.res.count_missing(t.page_start, t.page_end), 0)
                now = int(self.env.now)
                self.res.hold(slice(t.page_start, t.page_end), now, now)
                self.res.set_live(t.page_start, t.page_end, True)

    def allocate(self, tensors: list[int], op_index: int) -> Generator[simpy.Event, Any, None]:
        """Hold the missing pages of ``tensors`` (outputs the op writes whole, or a
        tile's slices given as tensors' ranges) in HBM, making room first."""
        need = sum(self.res.count_missing(*self.ranges[t]) for t in tensors)
        if need:
            yield from self.room_for(need, op_index)
            now = int(self.env.now)
            for t in tensors:
                p0, p1 = self.ranges[t]
                self.res.hold(slice(p0, p1), now, now)

    def claim(self, tensors: list[int]) -> None:
        """An op (or a released prefetch) needs ``tensors`` in HBM: write-backs of them
        queued before now are void."""
        self.generation[tensors] += 1

    def touch(self, tensors: tuple[int, ...] | list[int]) -> None:
        """``tensors`` were used now (for least recently used eviction)."""
        self._clock += 1
        for t in tensors:
            self.last_use[t] = self._clock

    def fetch_now(self, t: int, p0: int, p1: int, op_index: int) -> DmaRequest:
        """Fetch the missing pages of [p0, p1) of tensor ``t`` ahead of everything: op
        ``op_index`` is waiting for them (a fault)."""
        assert self.table is not None
        return self.dma.submit(DmaRequest(
            FETCH, p0, p1, op_index, self.workload.tensors[t].name, urgent=True,
            chunk_pages=self.table.fault_chunk_pages, tensor=t, origin=self.iteration))

    def prefetch(self, m: Move, iteration: int) -> None:
        """Release the table's prefetch ``m`` for op ``m.deadline_op`` of ``iteration``."""
        self.generation[m.tensor] += 1
        self.prefetching[m.tensor] = self.dma.submit(
            DmaRequest(FETCH, m.p0, m.p1, m.deadline_op, self.workload.tensors[m.tensor].name,
                       tensor=m.tensor, origin=self.iteration), iteration=iteration)

    def prefetch_pending(self, t: int) -> bool:
        pending = self.prefetching.get(t)
        return pending is not None and not pending.done

    def written(self, p0: int, p1: int) -> None:
        """An op wrote pages [p0, p1): live, and flash no longer holds their data."""
        self.res.set_live(p0, p1, True)
        self.res.set_on_flash(p0, p1, False)

    def release_tile(self, t: int, a: int, b: int, now: int) -> None:
        """A streamed op's tile of tensor ``t`` leaves HBM: written back where it is the
        only copy of live data, freed otherwise."""
        res = self.res
        dirty = res.in_hbm[a:b] & res.live[a:b] & ~res.in_flash[a:b]
        if dirty.any():
            self.dma.writeback_now(a, b, now, self.workload.tensors[t].name, self.iteration)
        else:
            res.release_clean(a, b, now)

    # -- in-place reads ----------------------------------------------------------------
    def read_in_place(self, op: Op, cold: list[int]) -> int:
        """Read the missing pages of ``cold`` operands in place from now on (one flash
        request per run), count the access and release the promotions it triggers.
        Returns when the last line has arrived."""
        res, wl, pol = self.res, self.workload, self.policy.params
        now = int(self.env.now)
        end = now
        if self._access_count is None:
            self._access_count = np.zeros(wl.npages, dtype=np.int32)
        access_count = self._access_count
        for t in cold:
            p0, p1 = self.ranges[t]
            for a, b in res.missing_runs(p0, p1)[1]:
                end = max(end, self.dma.inplace_read(
                    a, b, now, pol.line_bytes, pol.line_overhead_bytes,
                    wl.tensors[t].name, self.iteration))
                self.inplace_reads += 1
                access_count[a:b] += 1
        for t in cold:
            pending = self.promoting.get(t)
            if pending is not None and not pending.done:
                continue
            p0, p1 = self.ranges[t]
            hot = np.flatnonzero((access_count[p0:p1] >= pol.promote_after)
                                 & ~res.in_hbm[p0:p1])
            if len(hot) == 0:
                continue
            # One promotion per tensor and op: the hot pages' span (pages already in
            # HBM inside it are skipped by the fetch).
            a, b = p0 + int(hot[0]), p0 + int(hot[-1]) + 1
            access_count[a:b] = 0
            self.make_room(res.count_missing(a, b) - res.free_pages(now), now, op.index)
            self.promotions += 1
            self.promoting[t] = self.dma.submit(DmaRequest(
                FETCH, a, b, op.index, wl.tensors[t].name, tensor=t,
                origin=self.iteration))
        return end

    def held_ready(self, tensors: list[int]) -> int:
        """When the pages of ``tensors`` that HBM holds are all there (0: it holds none)."""
        res, out = self.res, 0
        for t in tensors:
            p0, p1 = self.ranges[t]
            held = res.in_hbm[p0:p1]
            if held.any():
                out = max(out, int(res.ready_of(slice(p0, p1))[held].max()))
        return out

    # -- after an op ---------------------------------------------------------------------
    def finish(self, op: Op, writes: bool = True) -> None:
        """After ``op``: its writes are live (``writes``), a prefetch due at it and
        still queued is void, and the table's write-backs, cleans and drops released at
        its end go out."""
        res, wl = self.res, self.workload
        assert self.table is not None
        now = int(self.env.now)
        for t in op.writes if writes else ():
            self.written(*self.ranges[t])
        for t in op.tensors:
            pending = self.prefetching.get(t)
            if pending is not None and pending.deadline_op == op.index:
                # Its op has run (a fault covered what was missing): a prefetch still
                # queued would only fetch pages again later.
                if self.dma.cancel(pending):
                    self.cancelled_prefetches += 1
                del self.prefetching[t]
        n = len(wl.ops)
        eager = not self.policy.schedules_writebacks
        for m in self.table.released_at_end(op.index):
            if m.action == Action.WRITEBACK and m.keep:
                self._clean(m, op.index)
            elif m.action == Action.WRITEBACK:
                pending = self.cleaning.pop(m.tensor, None)
                if pending is not None:
                    # the eviction writes back whatever its clean has not
                    self.dma.cancel(pending)
                res.release_clean(m.p0, m.p1, now)
                if not (res.in_hbm[m.p0:m.p1] & res.live[m.p0:m.p1]).any():
                    continue
                due = op.index + 1 if eager or m.deadline_op < 0 else m.deadline_op
                nxt = due <= op.index or due >= n
                self.dma.submit(DmaRequest(WRITEBACK, m.p0, m.p1, due % n,
                                           wl.tensors[m.tensor].name, tensor=m.tensor,
                                           generation=int(self.generation[m.tensor]),
                                           origin=self.iteration),
                                iteration=self.iteration + (1 if nxt else 0))
            elif m.action == Action.DROP:
                self._drop(m, now)
        self.dma.kick()

    def _clean(self, m: Move, op_index: int) -> None:
        """Queue a clean: the dirty pages of ``m`` go to flash and stay in HBM, so the
        eviction the table releases later frees them at once (``Move.keep``)."""
        res = self.res
        if not (res.in_hbm[m.p0:m.p1] & res.live[m.p0:m.p1] & ~res.in_flash[m.p0:m.p1]).any():
            return
        due = m.deadline_op
        nxt = due <= op_index
        self.cleaning[m.tensor] = self.dma.submit(
            DmaRequest(WRITEBACK, m.p0, m.p1, due, self.workload.tensors[m.tensor].name,
                       tensor=m.tensor, keep=True, origin=self.iteration),
            iteration=self.iteration + (1 if nxt else 0))

    def _drop(self, m: Move, now: int) -> None:
        """Free pages from HBM. Data past its last use in the iteration, or overwritten
        by its next access (``m.dead``), is dead: flash copies are trimmed. Live dirty
        data must never be dropped (it would be lost)."""
        res, tid, p0, p1 = self.res, m.tensor, m.p0, m.p1
        uses = self.use_ops[tid]
        dead = m.dead or ((not self.persistent[tid]) and bool(uses)
                          and uses[-1] <= self.current_op)
        if dead:
            pending = self.promoting.pop(tid, None)
            if pending is not None:
                self.dma.cancel(pending)
            if self._access_count is not None:
                self._access_count[p0:p1] = 0
            res.set_live(p0, p1, False)
            if res.in_flash[p0:p1].any():
                self.flash.transport(Transfer(TOp.TRIM, p0 * res.page_size,
                                              (p1 - p0) * res.page_size), now)
                res.set_on_flash(p0, p1, False)
                self.trims += 1
        else:
            dirty = res.in_hbm[p0:p1] & ~res.in_flash[p0:p1] & res.live[p0:p1]
            if dirty.any():
                raise AssertionError(f"{self.policy.name}: drop of live dirty pages of "
                                     f"{self.workload.tensors[tid].name}")
        res.release_when_ready(p0, p1, now)

    # -- eviction ------------------------------------------------------------------------
    def room_for(self, need: int, op_index: int) -> Generator[simpy.Event, Any, None]:
        """Wait until ``need`` pages are free, evicting (``make_room``) as needed."""
        res = self.res
        while res.free_pages(int(self.env.now)) < need:
            now = int(self.env.now)
            self.make_room(need - res.free_pages(now), now, op_index)
            if res.free_pages(now) >= need:
                break
            t = res.next_free_time()
            if t is None:
                raise DoesNotFit(f"policy.hbm_ratio: cannot free {need} pages for op "
                                 f"{self.workload.ops[op_index].name}; HBM holds only the "
                                 f"pages that op needs")
            yield self.env.timeout(max(0, t - now))
        self.dma.kick()

    def is_stale(self, req: DmaRequest) -> bool:
        return req.tensor >= 0 and int(self.generation[req.tensor]) != req.generation

    def make_room(self, need: int, now: int, protect_op: int) -> int:
        """Free at least ``need`` pages (now, or when their write-back has left HBM),
        never from the tensors of ``protect_op``: first the write-backs already in
        flight or queued, then the policy's victims (module docstring)."""
        res, wl = self.res, self.workload
        assert self.table is not None
        # Pages already on their way out count toward the need: evicting more would
        # only thrash.
        need -= res.freeing_pages
        if need <= 0:
            return 0
        need -= self.dma.expedite_writebacks(need, now)
        if need <= 0:
            return 0
        # Evict a batch of at least one write-back chunk, as a pager's watermark does:
        # a stream of faults does not call back once per page, and a dirty batch is
        # written with multi-plane programs (``dma.writeback_chunk_bytes``).
        need = max(need, self.dma.wb_chunk_pages)
        held_count = res.held_by_owner.copy()
        held_count[list(wl.ops[protect_op].tensors)] = 0
        held_t = np.flatnonzero(held_count)
        if len(held_t) == 0:
            return 0
        if not self.table.reactive:
            self.emergency += 1
        order = self.policy.victims(held_t, self.last_use,
                                    lambda t: self._next_use(t, protect_op))
        freed = 0
        for t in order:
            if freed >= need:
                break
            p0, p1 = self.ranges[int(t)]
            held = np.flatnonzero(res.in_hbm[p0:p1]) + p0
            take = held[-(need - freed):]
            a, b = int(take[0]), int(take[-1]) + 1
            dirty = res.live[a:b] & ~res.in_flash[a:b] & res.in_hbm[a:b]
            if dirty.any():
                if self._dead(int(t), protect_op):
                    self.dead_writeback_bytes += int(np.count_nonzero(dirty)) * wl.page_size
                self.dma.writeback_now(a, b, now, wl.tensors[t].name, self.iteration)
            else:
                res.release_when_ready(a, b, now)
            freed += len(take)
        return freed

    def _dead(self, t: int, op_index: int) -> bool:
        """Tensor ``t`` holds no data any op will read at ``op_index``: it does not live
        across iterations and the op is past its last use, or before its first (what
        HBM holds of it is the previous iteration's)."""
        first, last = self.live_range[t]
        return not self.persistent[t] and not first <= op_index <= last

    def _next_use(self, t: int, after: int) -> int:
        uses = self.use_ops[t]
        k = bisect.bisect_right(uses, after)
        if k < len(uses):
            return uses[k]
        return len(self.workload.ops) + (uses[0] if uses else 0)
