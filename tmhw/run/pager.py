"""The pager: HBM residency and eviction, the only writer of the per-page state.

``PageBook`` is every change of a page's flags (held in HBM, on flash, live) and of its
HBM space, as methods: the DMA engine books pages landing and written back through it,
and the pager allocates, frees and trims through it. Nothing else writes the residency
(``tmhw.residency``); everything else reads it.

``Pager`` adds what the run does with HBM on the table's behalf: the common initial
placement, releasing the table's prefetches, write-backs, cleans and drops, faults'
fetches, and eviction when HBM is full.

**Initial placement, the same for every policy.** At time 0 every tensor that lives
across iterations (weights, master copies, optimizer state) is on flash, the
checkpoint; HBM holds the first mini-batch and clean copies of as many of those tensors
as fit, in the order of their first use in the iteration.

**Eviction.** Static tables plan their evictions; when the run still needs space (an
allocation or a fault finds HBM full), the pager first books the write-backs the table
has queued, then evicts in the policy's order (``Policy.eviction_order``: least recently
used for ``demand`` and FlatFlash, Belady's furthest next use otherwise). For a static
table such an eviction is an emergency, counted per iteration as
``emergency_evictions``: a sound plan needs none in steady state, and the report warns
when one does.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from tmhw.config import SystemConfig
from tmhw.dma import FETCH, WRITEBACK, DmaEngine, DmaRequest
from tmhw.placement.base import Policy
from tmhw.placement.table import Action, Move, PlacementTable
from tmhw.residency import Residency
from tmhw.run.metrics import Totals
from tmhw.sim.component import Component
from tmhw.sim.errors import DoesNotFit
from tmhw.sim.transfer import MemoryTarget, Transfer
from tmhw.sim.transfer import Op as TOp
from tmhw.workload.graph import Kind, Op, Workload


class PageBook:
    """Every write to a residency: the flags and HBM space of runs of pages."""

    def __init__(self, res: Residency) -> None:
        self.res = res

    # -- what the DMA engine books ---------------------------------------------------------
    def landing(self, p0: int, p1: int, ready: int, now: int) -> None:
        self.res.hold(slice(p0, p1), ready, now)

    def set_ready(self, p0: int, p1: int, ready: int) -> None:
        self.res.set_ready(slice(p0, p1), ready)

    def claim_freeing(self, pages: int, now: int) -> int | None:
        return self.res.claim_freeing(pages, now)

    def written_back(self, p0: int, p1: int, done: int, now: int, keep: bool) -> None:
        res = self.res
        res.in_flash[p0:p1] = True
        if keep:
            res.cleaning(p0, p1, done)
        else:
            res.release(slice(p0, p1), now, until=done)

    def release_clean(self, p0: int, p1: int, now: int) -> None:
        self.res.release_clean(p0, p1, now)

    # -- what ops, the host and the table do -------------------------------------------
    def allocate(self, p0: int, p1: int, now: int) -> None:
        """Hold pages [p0, p1) in HBM from ``now``, ready at once (an op's output, the
        host's mini-batch, a copy placed before time 0)."""
        self.res.hold(slice(p0, p1), now, now)

    def mark_live(self, p0: int, p1: int) -> None:
        """Pages [p0, p1) hold data some op will read."""
        self.res.live[p0:p1] = True

    def on_flash(self, p0: int, p1: int) -> None:
        """Flash holds the current version of pages [p0, p1)."""
        self.res.in_flash[p0:p1] = True

    def written(self, p0: int, p1: int) -> None:
        """An op wrote pages [p0, p1): live, and newer than any flash copy."""
        self.res.live[p0:p1] = True
        self.res.in_flash[p0:p1] = False

    def died(self, p0: int, p1: int) -> bool:
        """Pages [p0, p1) hold dead data; True if flash held a copy (now stale)."""
        res = self.res
        res.live[p0:p1] = False
        if res.in_flash.run_any(p0, p1):
            res.in_flash[p0:p1] = False
            return True
        return False

    def release_when_ready(self, p0: int, p1: int, now: int) -> None:
        self.res.release_when_ready(p0, p1, now)

    def settle(self, now: int) -> None:
        self.res.settle(now)


class Pager(PageBook):
    """HBM on the table's behalf: placement, the table's moves, faults and eviction.
    Implements the DMA engine's ``PageWriter`` and ``DmaClient``, and the policies'
    ``TensorUses`` and ``InPlacePort``."""

    def __init__(self, env: simpy.Environment, parent: Component | None, cfg: SystemConfig,
                 workload: Workload, policy: Policy, capacity_pages: int, hbm: MemoryTarget,
                 flash: MemoryTarget, totals: Totals, *, eager_writebacks: bool,
                 record_dma_order: bool = False) -> None:
        """``eager_writebacks``: a table's write-back is due at the op after its release,
        not at its planned deadline (``Policy.schedules_writebacks`` off)."""
        wl = workload
        super().__init__(Residency(wl.npages, capacity_pages, wl.page_size,
                                   starts=wl.page_starts()))
        self.env = env
        self.workload = wl
        self.policy = policy
        self.flash = flash
        self.totals = totals
        self.eager_writebacks = eager_writebacks
        self.dma = DmaEngine(env, "dma", parent, cfg.dma, cfg.link, cfg.link_bytes_per_s, hbm,
                             flash, self, wl.page_size, client=self,
                             record_order=record_dma_order)
        self.ranges = [(t.page_start, t.page_end) for t in wl.tensors]
        self.names = [t.name for t in wl.tensors]
        self.persistent = np.array([t.kind.persistent for t in wl.tensors], dtype=bool)
        self.use_ops: list[list[int]] = [[i for i, _ in u] for u in wl.uses()]
        # ``next_uses``' index: every tensor's uses in one sorted array of keys
        # (tensor x (ops + 1) + op), each tensor's from ``_use_ptr[t]``, and each
        # tensor's first use (0: none) for a next use in the next iteration
        nops, counts = len(wl.ops), [len(u) for u in self.use_ops]
        flat = np.array([i for u in self.use_ops for i in u] + [0], dtype=np.int64)
        self._use_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self._use_flat = flat
        self._use_key = np.repeat(np.arange(len(counts), dtype=np.int64) * (nops + 1),
                                  counts) + flat[:-1]
        self._use_first = np.where(np.array(counts) > 0, flat[self._use_ptr[:-1]], 0)
        #: per tensor, the ops between which it holds this iteration's data (the
        #: mini-batch from the iteration's start)
        self.live_range = wl.live_ranges()
        self.live_range[[t.id for t in wl.tensors if t.kind == Kind.INPUT], 0] = 0
        self._last_use = np.full(len(wl.tensors), -1, dtype=np.int64)
        self._last_use_view = self._last_use.view()
        self._last_use_view.flags.writeable = False
        self._in_hbm_view = self.res.in_hbm.view()
        self._in_hbm_view.flags.writeable = False
        self._clock = 0
        #: per tensor, how many times an op or a released prefetch has claimed it (a
        #: list: read and bumped one tensor at a time, a few times an op)
        self.generation = [0] * len(wl.tensors)
        self.table: PlacementTable | None = None
        self.iteration = 0
        self.current_op = 0
        self.prefetching: dict[int, DmaRequest] = {}
        #: per tensor, its clean queued or in flight (``Move.keep``)
        self.cleaning: dict[int, DmaRequest] = {}
        #: per tensor, its promotion (an in-place policy's background fetch)
        self.promoting: dict[int, DmaRequest] = {}
        #: in-place accesses per page (allocated on the first: 4 bytes a page)
        self._access_counts: np.ndarray | None = None

    def bind(self, table: PlacementTable) -> None:
        """The table the run replays from now on."""
        self.table = table

    def begin_iteration(self, index: int) -> None:
        """Requests made from now on are iteration ``index``'s traffic."""
        self.iteration = index

    @property
    def now(self) -> int:
        return int(self.env.now)

    # -- placement and claims ------------------------------------------------------------
    def place_initial(self) -> None:
        """The common start (module docstring): the mini-batch and, in order of first use,
        clean copies of as many persistent tensors as fit."""
        wl, res = self.workload, self.res
        for t in wl.tensors:
            if t.kind == Kind.INPUT:
                self.allocate(t.page_start, t.page_end, 0)
                self.mark_live(t.page_start, t.page_end)
        first = wl.live_ranges()[:, 0]
        keep = sorted((int(first[t.id]), t.id) for t in wl.tensors
                      if t.kind.persistent and first[t.id] >= 0)
        for t in wl.tensors:
            if t.kind.persistent:
                self.mark_live(t.page_start, t.page_end)
                self.on_flash(t.page_start, t.page_end)
        room = res.free_pages(0)
        for _, tid in keep:
            t = wl.tensors[tid]
            if t.npages > room:
                break
            self.allocate(t.page_start, t.page_end, 0)
            room -= t.npages

    def claim(self, op_index: int, tensors: tuple[int, ...]) -> None:
        """Op ``op_index`` is about to use ``tensors``: write-backs of them queued
        before now are void (``is_stale``)."""
        self.current_op = op_index
        generation = self.generation
        for t in tensors:  # (distinct: ``Op.tensors``)
            generation[t] += 1

    def used(self, tensors: tuple[int, ...] | list[int]) -> None:
        """An op has started with ``tensors`` (the clock of ``last_use``)."""
        self._clock += 1
        for t in tensors:
            self._last_use[t] = self._clock

    @property
    def last_use(self) -> np.ndarray:
        return self._last_use_view

    def next_uses(self, tensors: np.ndarray, after: int) -> np.ndarray:
        nops = len(self.workload.ops)
        t = np.asarray(tensors, dtype=np.int64)
        k = np.searchsorted(self._use_key, t * (nops + 1) + after, side="right")
        out: np.ndarray = np.where(k < self._use_ptr[t + 1], self._use_flat[k],
                                   nops + self._use_first[t])
        return out

    def is_stale(self, req: DmaRequest) -> bool:
        return req.tensor >= 0 and self.generation[req.tensor] != req.generation

    def dead(self, t: int, op_index: int) -> bool:
        """Tensor ``t`` holds no data any op will read at ``op_index``: it does not live
        across iterations and the op is past its last use, or before its first (what
        HBM holds of it is the previous iteration's)."""
        first, last = self.live_range[t]
        return not self.persistent[t] and not first <= op_index <= last

    # -- fetches -------------------------------------------------------------------------
    def release_prefetches(self, op_index: int) -> None:
        """Submit the table's prefetches released as op ``op_index`` starts."""
        assert self.table is not None
        for m in self.table.released_at_start(op_index):
            nxt = m.deadline_op < op_index      # due at an op of the next iteration
            self.generation[m.tensor] += 1
            self.prefetching[m.tensor] = self.dma.submit(DmaRequest(
                FETCH, m.p0, m.p1, m.deadline_op, self.names[m.tensor], tensor=m.tensor,
                origin=self.iteration, iteration=self.iteration + (1 if nxt else 0)))

    def prefetch_pending(self, t: int) -> bool:
        """A prefetch of ``t`` is released and not yet completely booked."""
        pending = self.prefetching.get(t)
        return pending is not None and not pending.done

    def fetch_now(self, t: int, p0: int, p1: int, op_index: int) -> DmaRequest:
        """Fetch the missing pages of [p0, p1) of tensor ``t`` ahead of everything: op
        ``op_index`` is waiting for them (a fault)."""
        assert self.table is not None
        return self.dma.submit(DmaRequest(
            FETCH, p0, p1, op_index, self.names[t], urgent=True,
            chunk_pages=self.table.fault_chunk_pages, tensor=t, origin=self.iteration,
            iteration=self.iteration))

    def carry_over(self) -> int:
        """End of the run: cancel the prefetches and cleans not yet booked. Returns the
        bytes those prefetches still miss (the next iteration's traffic, counted, not
        simulated)."""
        carried = 0
        for r in self.dma.unfinished():
            if r.kind == FETCH:
                carried += self.res.count_missing(r.cursor, r.p1) * self.workload.page_size
                self.dma.cancel(r)
            elif r.keep:
                self.dma.cancel(r)
        return carried

    # -- in-place reads (``InPlacePort``) ------------------------------------------------
    @property
    def in_hbm(self) -> np.ndarray:
        return self._in_hbm_view

    @property
    def access_counts(self) -> np.ndarray:
        if self._access_counts is None:
            self._access_counts = np.zeros(self.workload.npages, dtype=np.int32)
        return self._access_counts

    def pages_of(self, tensor: int) -> tuple[int, int]:
        return self.ranges[tensor]

    def missing_runs(self, p0: int, p1: int) -> list[tuple[int, int]]:
        return self.res.missing_runs(p0, p1)[1]

    def read_in_place(self, tensor: int, p0: int, p1: int, line_bytes: int,
                      line_overhead_bytes: int) -> int:
        self.totals.inplace_reads += 1
        return self.dma.inplace_read(p0, p1, self.now, line_bytes, line_overhead_bytes,
                                     self.iteration, self.names[tensor])

    def promotion_pending(self, tensor: int) -> bool:
        pending = self.promoting.get(tensor)
        return pending is not None and not pending.done

    def promote(self, tensor: int, p0: int, p1: int, op_index: int) -> None:
        res, now = self.res, self.now
        self.make_room(res.count_missing(p0, p1) - res.free_pages(now), now, op_index)
        self.totals.promotions += 1
        self.promoting[tensor] = self.dma.submit(DmaRequest(
            FETCH, p0, p1, op_index, self.names[tensor], tensor=tensor,
            origin=self.iteration, iteration=self.iteration))

    # -- after an op ---------------------------------------------------------------------
    def finish(self, op: Op, streamed: bool = False) -> None:
        """Op ``op`` has ended: its outputs are written (a streamed op's tiles were),
        its prefetches still queued are void, and the table's write-backs, cleans and
        drops released at its end go out."""
        res, wl = self.res, self.workload
        assert self.table is not None
        now = self.now
        for t in op.writes if not streamed else ():
            self.written(*self.ranges[t])
        for t in op.tensors:
            pending = self.prefetching.get(t)
            if pending is not None and pending.deadline_op == op.index:
                # Its op has run (a fault covered what was missing): a prefetch still
                # queued would only fetch pages again later.
                if self.dma.cancel(pending):
                    self.totals.cancelled_prefetches += 1
                del self.prefetching[t]
        n = len(wl.ops)
        for m in self.table.released_at_end(op.index):
            if m.action == Action.WRITEBACK and m.keep:
                self.clean(m, op.index)
            elif m.action == Action.WRITEBACK:
                pending = self.cleaning.pop(m.tensor, None)
                if pending is not None:
                    # the eviction writes back whatever its clean has not
                    self.dma.cancel(pending)
                self.release_clean(m.p0, m.p1, now)
                if not (res.in_hbm[m.p0:m.p1] & res.live[m.p0:m.p1]).any():
                    continue
                due = op.index + 1 if self.eager_writebacks or m.deadline_op < 0 \
                    else m.deadline_op
                nxt = due <= op.index or due >= n
                self.dma.submit(DmaRequest(
                    WRITEBACK, m.p0, m.p1, due % n, self.names[m.tensor], tensor=m.tensor,
                    generation=self.generation[m.tensor], origin=self.iteration,
                    iteration=self.iteration + (1 if nxt else 0)))
            elif m.action == Action.DROP:
                self.drop(m, now)
        self.dma.kick()

    def clean(self, m: Move, op_index: int) -> None:
        """Queue a clean: the dirty pages of ``m`` go to flash and stay in HBM, so the
        eviction the table releases later frees them at once (``Move.keep``)."""
        res = self.res
        if not res.dirty_count(m.p0, m.p1):
            return
        nxt = m.deadline_op <= op_index
        self.cleaning[m.tensor] = self.dma.submit(DmaRequest(
            WRITEBACK, m.p0, m.p1, m.deadline_op, self.names[m.tensor], tensor=m.tensor,
            keep=True, origin=self.iteration, iteration=self.iteration + (1 if nxt else 0)))

    def drop(self, m: Move, now: int) -> None:
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
            if self._access_counts is not None:
                self._access_counts[p0:p1] = 0
            if self.died(p0, p1):
                self.flash.transport(Transfer(TOp.TRIM, p0 * res.page_size,
                                              (p1 - p0) * res.page_size), now)
                self.totals.trims += 1
        else:
            if res.dirty_count(p0, p1):
                raise AssertionError(f"{self.policy.name}: drop of live dirty pages of "
                                     f"{self.names[tid]}")
        self.release_when_ready(p0, p1, now)

    def tile_done(self, t: int, p0: int, p1: int, wrote: bool, now: int) -> None:
        """A streamed op's tile of tensor ``t``, pages [p0, p1), leaves HBM: written
        back where it is the only copy of live data; an input whose last use this op is
        dies with its tile (a loss's logits), never written back."""
        res = self.res
        uses = self.use_ops[t]
        if not wrote and not self.persistent[t] and uses and uses[-1] <= self.current_op:
            self.drop(Move(Action.DROP, t, p0, p1, self.current_op), now)
            return
        if wrote:
            self.written(p0, p1)
        if res.dirty_count(p0, p1):
            self.dma.writeback_now(p0, p1, now, self.iteration, self.names[t])
        else:
            self.release_clean(p0, p1, now)

    # -- eviction ------------------------------------------------------------------------
    def wait_for_room(self, need: int, op_index: int,
                      tile: dict[int, tuple[int, int]] | None = None,
                      ) -> Generator[simpy.Event, Any, None]:
        """Until ``need`` pages are free: evict now, then wait for write-backs to drain.
        ``tile``: the op runs streamed and needs only these page ranges of its tensors;
        where nothing else is left to evict, its own pages outside them leave too (a
        pager that faulted them in earlier holds them: the demand pager on the Adam
        update of Llama 3.2 1B's embeddings at 1/8 HBM)."""
        res = self.res
        while res.free_pages(int(self.env.now)) < need:
            now = int(self.env.now)
            self.make_room(need - res.free_pages(now), now, op_index)
            if res.free_pages(now) >= need:
                break
            t = res.next_free_time()
            if t is None and tile is not None and self.make_room(
                    need - res.free_pages(now), now, op_index, tile) > 0:
                continue
            if t is None:
                raise DoesNotFit(f"policy.hbm_ratio: cannot free {need} pages for op "
                                 f"{self.workload.ops[op_index].name}; HBM holds only the "
                                 f"pages that op needs")
            yield self.env.timeout(max(0, t - now))
        self.dma.kick()

    def make_room(self, need: int, now: int, protect_op: int,
                  tile: dict[int, tuple[int, int]] | None = None) -> int:
        """Free at least ``need`` pages (now, or when their write-back has left HBM),
        never from the tensors of ``protect_op``: first the write-backs already in
        flight or queued, then in the policy's order (module docstring). With ``tile``
        (a streamed op's page ranges now in use), only from ``protect_op``'s own tensors,
        outside those ranges."""
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
        own = list(wl.ops[protect_op].tensors)
        held_count = res.held_by_owner.copy()
        if tile is None:
            held_count[own] = 0
        else:
            mine = np.zeros_like(held_count)
            mine[own] = held_count[own]
            held_count = mine
        held_t = np.flatnonzero(held_count)
        if len(held_t) == 0:
            return 0
        if not self.table.reactive:
            self.totals.emergency_evictions += 1
        order = self.policy.eviction_order(held_t, protect_op, self)
        freed = 0
        for t in order:
            if freed >= need:
                break
            p0, p1 = self.ranges[int(t)]
            # the pages in use stay: the runs above and below a streamed op's tile
            runs = [(p0, p1)] if tile is None or int(t) not in tile else \
                [(tile[int(t)][1], p1), (p0, tile[int(t)][0])]
            for lo, hi in runs:
                if freed >= need:
                    break
                # the last ``need - freed`` pages of the run HBM holds
                a, b, taken = res.last_held(lo, hi, need - freed)
                if not taken:
                    continue
                dirty = res.dirty_count(a, b)
                if dirty:
                    if self.dead(int(t), protect_op):
                        self.totals.dead_writeback_bytes += dirty * wl.page_size
                    self.dma.writeback_now(a, b, now, self.iteration, self.names[t])
                else:
                    self.release_when_ready(a, b, now)
                freed += taken
        return freed
