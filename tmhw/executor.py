"""The executor: the closed loop that runs training iterations on the machine.

A Component that owns the HBM residency (``tmhw.residency``), the DMA engine, eviction
and the per-op loop docs/ARCHITECTURE.md describes. The NPU core process walks the ops; before each
op it releases the placement table's prefetches, allocates the op's new outputs in HBM,
faults in whatever operand is still missing, and waits until the op may start (that
wait is the stall charged to the memory system); then the NPU runs the op's tiles
against HBM; after the op, the table's write-backs and drops are released and dead
tensors are freed. The DMA engine works ahead in its own process, earliest deadline
first. Between warm-up iterations the policy may adjust its table from what was
measured (TM-Training's timing monitor); the iterations after the warm-up replay the
last table, so the steady state is one plan's.

**Initial placement, the same for every policy.** At time 0 every tensor that lives
across iterations (weights, master copies, optimizer state) is on flash, the
checkpoint; HBM holds the first mini-batch and clean copies of as many of those tensors
as fit, in the order of their first use in the iteration. A policy's table says what it
wants resident when an iteration starts (``PlacementTable.initial``); the first
iteration (the warm-up, ``run.warmup_iterations``) moves the machine from the common
start to the policy's steady state, and the report's headline figures leave it out.

**Data splitting.** A prefetch row that covers only the tail of a tensor (the head stays
resident, TM-Training's split ratio) is a streamed tail: its op starts as soon as the
head is complete in HBM and the tail is booked, and consumes the tensor in order, tile
by tile: a page a fraction ``f`` into the tensor is needed ``f`` of the way through the
op. When the tail arrives later than that, the op's end waits for it; that wait is
stall inside the op, measured on the real timeline.

**Eviction.** Static tables plan their evictions; when the executor still needs space
(an allocation or a fault finds HBM full), it first books the write-backs the table has
queued, then evicts by itself: reactive policies by their rule (least recently used, or
Belady's furthest next use for ``demand-belady``), static ones the tensor used furthest
in the future. Such evictions are counted per iteration as ``emergency_evictions``: a
sound static plan needs none in steady state, and the report warns when one does.

**In-place reads** (a table with ``in_place``, FlatFlash). An operand an op only reads
and finds (partly) missing from HBM is not faulted in: when the op starts, each run of
its missing pages is read through the SSD's BAR in cache lines (``DmaEngine.
inplace_read``: one flash request per run), and the op cannot end before the last line
has arrived. Each such read counts one access on its pages; a page whose count reaches
``policy.flatflash.promote_after`` is promoted: a background fetch into HBM, released
as the op starts, behind its in-place reads; an access that finds the pages missing
until the fetch is booked reads them in place again.
An operand the op also writes is faulted in as usual (the NPU writes into HBM).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from npu import NPU, ComputeTask, Gemm
from tmhw.config import SystemConfig
from tmhw.dma import FETCH, INPLACE, WRITEBACK, DmaEngine, DmaRequest
from tmhw.placement.base import Feedback, PlanContext, Policy
from tmhw.placement.table import Action, Move, PlacementTable
from tmhw.residency import Residency
from tmhw.sim.component import Component
from tmhw.sim.errors import DoesNotFit
from tmhw.sim.transfer import MemoryTarget, Transfer
from tmhw.sim.transfer import Op as TOp
from tmhw.sim.units import S
from tmhw.workload.graph import Kind, Op, Workload


@dataclass(slots=True)
class IterationRecord:
    index: int
    start_ps: int
    end_ps: int
    stall_ps: int
    compute_ps: int
    faults: int
    fetch_bytes: int              # moved by the requests this iteration released
    writeback_bytes: int
    emergency_evictions: int
    npu_hbm_stall_ps: int = 0     # inside ops: the arrays waiting on HBM operand traffic
    streamed_bytes: int = 0       # split tails that arrived while their op ran
    monitor_changes: int = 0      # what the policy changed for the next iteration
    npu_hbm_read: int = 0         # bytes the NPU read from HBM
    npu_hbm_write: int = 0
    #: evictions' write-backs of dead data (a tensor outside its live range in the
    #: iteration): nonzero only when the table does not free dead tensors
    dead_writeback_bytes: int = 0
    inplace_bytes: int = 0        # flash pages the NPU read in place (never in HBM)

    @property
    def time_ps(self) -> int:
        return self.end_ps - self.start_ps


class Executor(Component):
    """Residency, DMA, eviction and the per-op loop of one workload under one table."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 cfg: SystemConfig, workload: Workload, policy: Policy, capacity_pages: int,
                 npu: NPU, hbm: MemoryTarget, flash: MemoryTarget, *,
                 record_dma_order: bool = False, streamed: np.ndarray | None = None) -> None:
        """``streamed`` marks the ops run tile by tile through a window of HBM (module
        docstring, data splitting)."""
        super().__init__(env, name, parent)
        self.cfg = cfg
        self.workload = wl = workload
        self.policy = policy
        self.npu = npu
        self.hbm = hbm
        self.flash = flash
        self.capacity_pages = capacity_pages
        self.progress: Any = None
        self.res = Residency(wl.npages, capacity_pages, wl.page_size, starts=wl.page_starts())
        self.dma = DmaEngine(env, "dma", parent, cfg.dma, cfg.link, cfg.link_bytes_per_s, hbm,
                             flash, self.res, wl.page_size, client=self,
                             record_order=record_dma_order)
        self.tasks = [self._task(op) for op in wl.ops]
        self.streamed = np.zeros(len(wl.ops), dtype=bool) if streamed is None else streamed
        #: stall-free compute time of each op, from the NPU model
        self.op_ps = np.array([npu.compute_ps(t) for t in self.tasks], dtype=np.int64)
        self.ranges = [(t.page_start, t.page_end) for t in wl.tensors]
        self.persistent = np.array([t.kind.persistent for t in wl.tensors], dtype=bool)
        self.use_ops: list[list[int]] = [[i for i, _ in u] for u in wl.uses()]
        self.last_use = np.full(len(wl.tensors), -1, dtype=np.int64)
        #: per tensor, how many times an op or a released prefetch has claimed it
        self.generation = np.zeros(len(wl.tensors), dtype=np.int64)
        self.table: PlacementTable | None = None
        self.ctx: PlanContext | None = None
        self._clock = 0
        self._current_op = 0
        self._iteration = 0
        self.records: list[IterationRecord] = []
        self.op_stall = np.zeros(len(wl.ops), dtype=np.int64)
        self.faults = 0
        self.late_prefetches = 0
        self.cancelled_prefetches = 0
        self.streamed_bytes = 0
        self.emergency = 0
        self.trims = 0
        self.npu_read = 0
        self.npu_write = 0
        self.dead_writeback_bytes = 0
        #: per tensor, the ops between which it holds this iteration's data (the
        #: mini-batch from the iteration's start)
        self.live_range = wl.live_ranges()
        self.live_range[[t.id for t in wl.tensors if t.kind == Kind.INPUT], 0] = 0
        self.prefetching: dict[int, DmaRequest] = {}
        #: per tensor, its clean queued or in flight (``Move.keep``)
        self.cleaning: dict[int, DmaRequest] = {}
        #: in-place reads (FlatFlash): accesses per page since it was last promoted or
        #: died (allocated on the first in-place read: 4 bytes a page), promotions
        #: released, in-place requests, and each tensor's promotion
        self._access_count: np.ndarray | None = None
        self.promotions = 0
        self.inplace_reads = 0
        #: the operands the op now starting or computing reads in place (FlatFlash)
        self.in_place_operands: list[int] = []
        self.promoting: dict[int, DmaRequest] = {}
        #: energy per component at the end of the warm-up (pJ), for steady-state figures
        self.warm_energy: dict[str, float] | None = None
        self.warm_end_ps = 0
        self.done: simpy.Event | None = None
        #: the last iteration's prefetches for an iteration that does not run (counted)
        self.carried_fetch_bytes = 0

    # -- construction helpers ------------------------------------------------------------
    def _task(self, op: Op, capacity_pages: int | None = None) -> ComputeTask:
        """``op`` for the NPU, its HBM address (its first operand's) wrapped at
        ``capacity_pages`` (default this executor's HBM)."""
        wl = self.workload
        cap = self.capacity_pages if capacity_pages is None else capacity_pages
        addr = wl.tensors[op.reads[0]].page_start * wl.page_size if op.reads else 0
        return ComputeTask(
            name=op.name,
            gemms=tuple(Gemm(g.m, g.n, g.k, g.count) for g in op.gemms),
            vector_elems=op.vector_elems, vector_ops_per_elem=op.vector_ops_per_elem,
            dtype_bytes=self.cfg.npu.dtype_bytes,
            hbm_address=addr % max(1, cap * wl.page_size))

    def tasks_at(self, capacity_pages: int) -> list[ComputeTask]:
        """Every op's task as on a machine with ``capacity_pages`` of HBM."""
        return [self._task(op, capacity_pages) for op in self.workload.ops]

    def bind(self, table: PlacementTable, ctx: PlanContext) -> None:
        """The table to replay and the context the policy planned in (before start)."""
        self.table, self.ctx = table, ctx

    def _elaborate(self) -> None:
        if self.table is None or self.ctx is None:
            raise self.fail("no placement table bound (call bind before elaborate)")
        if self.table.nops != len(self.workload.ops):
            raise self.fail(f"the table has {self.table.nops} ops, the workload "
                            f"{len(self.workload.ops)}")

    def _start(self) -> None:
        self._initial_state()
        self.done = self.env.process(self._core())

    def _initial_state(self) -> None:
        """The common start (module docstring): the mini-batch and, in order of first use,
        clean copies of as many persistent tensors as fit."""
        wl, res = self.workload, self.res
        for t in wl.tensors:
            if t.kind == Kind.INPUT:
                res.hold(slice(t.page_start, t.page_end), 0, 0)
                res.live[t.page_start:t.page_end] = True
        first = wl.live_ranges()[:, 0]
        keep = sorted((int(first[t.id]), t.id) for t in wl.tensors
                      if t.kind.persistent and first[t.id] >= 0)
        for t in wl.tensors:
            if t.kind.persistent:
                res.live[t.page_start:t.page_end] = True
                res.in_flash[t.page_start:t.page_end] = True
        room = res.free_pages(0)
        for _, tid in keep:
            t = wl.tensors[tid]
            if t.npages > room:
                break
            res.hold(slice(t.page_start, t.page_end), 0, 0)
            room -= t.npages

    # -- the core process ----------------------------------------------------------------
    def _core(self) -> Generator[simpy.Event, Any, None]:
        wl, run = self.workload, self.cfg.run
        n = len(wl.ops)
        assert self.table is not None and self.ctx is not None
        for it in range(run.iterations):
            if it == run.warmup_iterations and it > 0:
                self._end_warmup()
            self._iteration = it
            start = int(self.env.now)
            faults0, emerg0, streamed0 = self.faults, self.emergency, self.streamed_bytes
            rd0, wr0 = self.npu_read, self.npu_write
            dead0 = self.dead_writeback_bytes
            self.dma.iteration = it
            if it > 0:
                yield from self._host_input()
            self.op_stall = np.zeros(n, dtype=np.int64)
            lateness = np.zeros(n, dtype=np.int64)
            op_start = np.zeros(n, dtype=np.int64)
            op_end = np.zeros(n, dtype=np.int64)
            occ_op = np.zeros(n, dtype=np.int64)
            compute = npu_stall = 0
            peak0 = self.res.level.peak
            for op in wl.ops:
                t_op = int(self.env.now)
                if self.streamed[op.index]:
                    t_run, t_end, res_ = yield from self._run_streamed(op)
                    self.op_stall[op.index] = int(self.env.now) - t_op - (t_end - t_run)
                    compute += t_end - t_run
                    self.npu_read += res_[0]
                    self.npu_write += res_[1]
                    npu_stall += res_[2]
                    op_start[op.index], op_end[op.index] = t_op, int(self.env.now)
                    occ_op[op.index] = self.res.occupied_pages
                    if self.tracer.enabled:
                        # the tiles' compute, drawn as one span of its total length
                        self.tracer.span("npu.compute", t_run, t_end,
                                         op.name + " (streamed)")
                    self._finish(op, streamed=True)
                    if self.progress is not None:
                        self.progress.update(1)
                    continue
                late, tail_due = yield from self._prepare(op)
                t_run = int(self.env.now)
                lateness[op.index] = late
                occ_start = self.res.occupied_pages
                result = yield from self.npu.execute(self.tasks[op.index])
                t_end = int(self.env.now)
                if tail_due > t_end:
                    # The op's last tiles wait for the streamed tail.
                    yield self.env.timeout(tail_due - t_end)
                self.res.settle(int(self.env.now))
                occ_op[op.index] = max(occ_start, self.res.occupied_pages)
                self.npu_read += result.hbm_read_bytes
                self.npu_write += result.hbm_write_bytes
                npu_stall += result.stall_ps
                now = int(self.env.now)
                self.op_stall[op.index] = (t_run - t_op) + (now - t_end)
                compute += t_end - t_run
                op_start[op.index] = t_run
                op_end[op.index] = now
                if self.tracer.enabled:
                    if t_run > t_op:
                        self.tracer.span("npu.stall", t_op, t_run, op.name)
                    self.tracer.span("npu.compute", t_run, t_end, op.name)
                    if now > t_end:
                        self.tracer.span("npu.stall", t_end, now, op.name + " (tail)")
                self._finish(op)
                if self.progress is not None:
                    self.progress.update(1)
            changes = 0
            # The policy may change its table between warm-up iterations only: the
            # steady state replays one table.
            if it + 1 < run.iterations and it < run.warmup_iterations:
                fb = Feedback(it, self.op_stall.copy(), lateness, op_start, op_end,
                              int(self.res.level.peak // wl.page_size),
                              {"peak_before": peak0}, occ_op,
                              self.dma.take_late_writebacks())
                before = self.table
                self.table = self.policy.adjust(self.table, self.ctx, fb)
                self.table.index()
                changes = int(self.table.notes.get("monitor_changes", 0)) \
                    if self.table is not before else 0
            self.records.append(IterationRecord(
                it, start, int(self.env.now), int(self.op_stall.sum()), compute,
                self.faults - faults0, 0, 0, self.emergency - emerg0, npu_stall,
                self.streamed_bytes - streamed0, changes, self.npu_read - rd0,
                self.npu_write - wr0, self.dead_writeback_bytes - dead0))
        # What the last iteration released is its traffic too: the engine finishes its
        # write-backs; the prefetches it released for the next iteration (which does
        # not run, so no op frees their space) are counted by the pages they still
        # miss, as the next iteration would move them, and not simulated. Its cleans
        # are the next iteration's traffic (``DmaEngine`` counts a clean's bytes in the
        # iteration of the eviction it saves); those not booked yet are dropped, as
        # that iteration would have written the pages by the clean or the eviction.
        # Iteration times end at the last op.
        carried = 0
        for r in self.dma.unfinished():
            if r.kind == FETCH:
                carried += self.res.count_missing(r.cursor, r.p1) * wl.page_size
                self.dma.cancel(r)
            elif r.keep:
                self.dma.cancel(r)
        left = [r.booked for r in self.dma.unfinished() if r.booked is not None]
        self.dma.kick()
        if left:
            yield self.env.all_of(left)
        for rec in self.records:
            rec.fetch_bytes = self.dma.bytes_by_origin.get((FETCH, rec.index), 0)
            rec.writeback_bytes = self.dma.bytes_by_origin.get((WRITEBACK, rec.index), 0)
            rec.inplace_bytes = self.dma.bytes_by_origin.get((INPLACE, rec.index), 0)
        if self.records:
            self.records[-1].fetch_bytes += carried
        self.carried_fetch_bytes = carried

    def _end_warmup(self) -> None:
        """Close the energy meters at the end of the warm-up (every meter converts its
        cumulative counts, so finalizing again at the end is exact)."""
        now = int(self.env.now)
        root: Component = self
        while root.parent is not None:
            root = root.parent
        root.finalize(now)
        self.warm_energy = {name: c.total_energy_pj() for name, c in root.children.items()}
        self.warm_end_ps = now

    def _host_input(self) -> Generator[simpy.Event, Any, None]:
        """The next mini-batch lands in HBM from the host (not inter-tier traffic)."""
        for t in self.workload.tensors:
            if t.kind == Kind.INPUT:
                yield from self._make_room(self.res.count_missing(t.page_start, t.page_end), 0)
                self.res.hold(slice(t.page_start, t.page_end), int(self.env.now),
                              int(self.env.now))
                self.res.live[t.page_start:t.page_end] = True

    def _prepare(self, op: Op) -> Generator[simpy.Event, Any, tuple[int, int]]:
        """Release prefetches, allocate outputs, fault in operands, wait until the op may
        start. Returns (lateness of the prefetches due at this op, negative if early;
        the time by which the op's streamed tails let it end)."""
        env, res, wl = self.env, self.res, self.workload
        assert self.table is not None
        n = len(wl.ops)
        self._current_op = op.index
        self.generation[list(op.tensors)] += 1
        if self.policy.prefetches or self.table.reactive:
            for m in self.table.released_at_start(op.index):
                nxt = m.deadline_op < op.index      # due at an op of the next iteration
                self.generation[m.tensor] += 1
                self.prefetching[m.tensor] = self.dma.submit(
                    DmaRequest(FETCH, m.p0, m.p1, m.deadline_op, wl.tensors[m.tensor].name,
                               tensor=m.tensor),
                    iteration=self._iteration + (1 if nxt else 0))
        reads = set(op.reads)
        new_out = [t for t in op.writes if t not in reads]
        need = sum(res.count_missing(*self.ranges[t]) for t in new_out)
        if need:
            yield from self._make_room(need, op.index)
            now = int(env.now)
            for t in new_out:
                p0, p1 = self.ranges[t]
                res.hold(slice(p0, p1), now, now)
        tails = self._tails(op)
        reqs = []
        in_place = self.table.in_place
        cold: list[int] = []
        for t in op.reads:
            p0, p1 = self.ranges[t]
            if res.count_missing(p0, p1):
                if in_place and t not in op.writes:
                    cold.append(t)
                    continue
                pending = self.prefetching.get(t)
                if pending is not None and not pending.done:
                    # Released but not yet booked: a late prefetch, boosted to the front.
                    self.late_prefetches += 1
                else:
                    self.faults += 1
                reqs.append(self._fetch_now(t, p0, p1, op.index))
        self.in_place_operands = cold
        yield from self._booked(reqs)
        ready, tail_due = self._ready(op, tails, cold)
        t_want = int(env.now)
        if ready > t_want:
            yield env.timeout(ready - t_want)
        # A promotion booked while the op waited may have put more of a cold operand in
        # HBM, still in flight: the op waits for those pages too (it reads in place only
        # what HBM does not hold).
        while cold and (late := self._held_ready(cold)) > env.now:
            yield env.timeout(late - int(env.now))
        self._check_operands(op, tails, cold)
        if cold:
            tail_due = max(tail_due, self._read_in_place(op, cold))
        self._clock += 1
        for t in op.tensors:
            self.last_use[t] = self._clock
        due = self.table.due_at(op.index) if n else []
        late = max((res.ready_time(m.p0, m.p1) for m in due if m.p1 > m.p0),
                   default=t_want) - t_want
        return late, tail_due

    def _fetch_now(self, t: int, p0: int, p1: int, op_index: int) -> DmaRequest:
        """Fetch the missing pages of [p0, p1) of tensor ``t`` ahead of everything: op
        ``op_index`` is waiting for them (a fault)."""
        assert self.table is not None
        return self.dma.submit(DmaRequest(
            FETCH, p0, p1, op_index, self.workload.tensors[t].name, urgent=True,
            chunk_pages=self.table.fault_chunk_pages, tensor=t))

    def _booked(self, reqs: list[DmaRequest]) -> Generator[simpy.Event, Any, None]:
        """Wait until every page of ``reqs`` is booked."""
        for r in reqs:
            assert r.booked is not None
            if not r.booked.triggered:
                yield r.booked

    def _tails(self, op: Op) -> dict[int, Move]:
        """The operands of ``op`` whose tail streams while it runs: {tensor: row}."""
        assert self.table is not None
        if not self.policy.splits:
            return {}
        return {m.tensor: m for m in self.table.due_at(op.index)
                if m.stream and m.p1 > m.p0 and m.tensor in op.reads}

    def _read_in_place(self, op: Op, cold: list[int]) -> int:
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
                    wl.tensors[t].name))
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
                FETCH, a, b, op.index, wl.tensors[t].name, tensor=t))
        return end

    def _held_ready(self, tensors: list[int]) -> int:
        """When the pages of ``tensors`` that HBM holds are all there (0: it holds none)."""
        res, out = self.res, 0
        for t in tensors:
            p0, p1 = self.ranges[t]
            held = res.in_hbm[p0:p1]
            if held.any():
                out = max(out, int(res.ready_of(slice(p0, p1))[held].max()))
        return out

    def _ready(self, op: Op, tails: dict[int, Move],
               cold: list[int] | None = None) -> tuple[int, int]:
        """(when ``op`` may start, when it may end at the earliest given its streamed
        tails). The op starts when every operand page is complete in HBM, except a
        streamed tail: a tail page ``f`` of the way into its tensor is needed ``f`` of
        the way through the op, so the op cannot end before that page's arrival plus
        the rest of the op."""
        res = self.res
        dur = int(self.op_ps[op.index])
        ready = tail_due = 0
        for t in op.tensors:
            p0, p1 = self.ranges[t]
            if cold and t in cold:
                # read in place: only the pages held in HBM must be there
                ready = max(ready, self._held_ready([t]))
                continue
            m = tails.get(t)
            if m is None:
                ready = max(ready, res.ready_time(p0, p1))
                continue
            ready = max(ready, res.ready_time(p0, m.p0), res.ready_time(m.p1, p1))
            # Latest (arrival + remaining work) over the tail's pages: vectorised.
            pages = np.arange(m.p0, m.p1)
            rest = ((p1 - pages - 1) * dur) // (p1 - p0)
            tail_due = max(tail_due, int((res.ready_of(slice(m.p0, m.p1)) + rest).max()))
            self.streamed_bytes += (m.p1 - m.p0) * self.workload.page_size
        return ready, tail_due

    def _check_operands(self, op: Op, tails: dict[int, Move],
                        cold: list[int] | None = None) -> None:
        """Invariant: every page an op touches is held in HBM when it starts, complete
        except a streamed tail (which the op waits for before it ends), or read in
        place (``cold``)."""
        res, now = self.res, int(self.env.now)
        for t in op.tensors:
            p0, p1 = self.ranges[t]
            if cold and t in cold:
                held = res.in_hbm[p0:p1]
                if held.any() and res.ready_of(slice(p0, p1))[held].max() > now:
                    raise AssertionError(f"op {op.name} starts before the resident part "
                                         f"of {self.workload.tensors[t].name} has arrived")
                continue
            if p1 > p0 and not res.in_hbm[p0:p1].all():
                raise AssertionError(f"op {op.name} starts without all of "
                                     f"{self.workload.tensors[t].name} in HBM")
            m = tails.get(t)
            head_end = m.p0 if m is not None else p1
            if head_end > p0 and res.ready_time(p0, head_end) > now:
                raise AssertionError(f"op {op.name} starts before "
                                     f"{self.workload.tensors[t].name} has arrived")

    def _run_streamed(self, op: Op) -> Generator[simpy.Event, Any, tuple[int, int,
                                                                     tuple[int, int, int]]]:
        """Run an element-wise op larger than HBM tile by tile: tile ``k`` needs the
        ``k``-th slice of every operand; its inputs are faulted in, its outputs
        allocated, the NPU runs the slice, and then the tile leaves HBM again (written
        back where it is the only copy of live data) to make room for the next.
        Returns (first tile's start, busy time end-equivalent, NPU totals)."""
        env, res, wl = self.env, self.res, self.workload
        self._current_op = op.index
        self.generation[list(op.tensors)] += 1
        task = self.tasks[op.index]
        ws = sum(wl.tensors[t].npages for t in op.tensors)
        window = max(1, self.capacity_pages // 4)
        k_tiles = max(2, -(-ws // window))
        reads = set(op.reads)
        busy = rd = wr = hstall = 0
        first = -1
        for k in range(k_tiles):
            sl = {t: (p0 + (p1 - p0) * k // k_tiles, p0 + (p1 - p0) * (k + 1) // k_tiles)
                  for t, (p0, p1) in ((t, self.ranges[t]) for t in op.tensors)}
            need = sum(res.count_missing(a, b) for a, b in sl.values())
            yield from self._make_room(need, op.index)
            now = int(env.now)
            reqs = []
            for t, (a, b) in sl.items():
                if t in reads:
                    if res.count_missing(a, b):
                        self.faults += 1
                        reqs.append(self._fetch_now(t, a, b, op.index))
                elif res.count_missing(a, b):
                    res.hold(slice(a, b), now, now)
            yield from self._booked(reqs)
            ready = max(res.ready_time(a, b) for a, b in sl.values())
            if ready > int(env.now):
                yield env.timeout(ready - int(env.now))
            for t, (a, b) in sl.items():
                if b > a and not res.in_hbm[a:b].all():
                    raise AssertionError(f"op {op.name} tile {k} without all of "
                                         f"{wl.tensors[t].name} in HBM")
            t0 = int(env.now)
            first = t0 if first < 0 else first
            share = dataclasses.replace(
                task, vector_elems=task.vector_elems * (k + 1) // k_tiles
                - task.vector_elems * k // k_tiles)
            result = yield from self.npu.execute(share)
            busy += int(env.now) - t0
            rd += result.hbm_read_bytes
            wr += result.hbm_write_bytes
            hstall += result.stall_ps
            now = int(env.now)
            for t, (a, b) in sl.items():
                if t in op.writes:
                    res.live[a:b] = True
                    res.in_flash[a:b] = False
                dirty = res.in_hbm[a:b] & res.live[a:b] & ~res.in_flash[a:b]
                if dirty.any():
                    self.dma.writeback_now(a, b, now, wl.tensors[t].name)
                else:
                    self.res.release_clean(a, b, now)
        self._clock += 1
        for t in op.tensors:
            self.last_use[t] = self._clock
        self.streamed_bytes += sum(wl.tensors[t].npages for t in op.reads) * wl.page_size
        return first, first + busy, (rd, wr, hstall)

    def _finish(self, op: Op, streamed: bool = False) -> None:
        res, wl = self.res, self.workload
        assert self.table is not None
        now = int(self.env.now)
        for t in op.writes if not streamed else ():
            p0, p1 = self.ranges[t]
            res.live[p0:p1] = True
            res.in_flash[p0:p1] = False
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
                self.res.release_clean(m.p0, m.p1, now)
                if not (res.in_hbm[m.p0:m.p1] & res.live[m.p0:m.p1]).any():
                    continue
                due = op.index + 1 if eager or m.deadline_op < 0 else m.deadline_op
                nxt = due <= op.index or due >= n
                self.dma.submit(DmaRequest(WRITEBACK, m.p0, m.p1, due % n,
                                           wl.tensors[m.tensor].name, tensor=m.tensor,
                                           generation=int(self.generation[m.tensor])),
                                iteration=self._iteration + (1 if nxt else 0))
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
                       tensor=m.tensor, keep=True),
            iteration=self._iteration + (1 if nxt else 0))

    def _drop(self, m: Move, now: int) -> None:
        """Free pages from HBM. Data past its last use in the iteration, or overwritten
        by its next access (``m.dead``), is dead: flash copies are trimmed. Live dirty
        data must never be dropped (it would be lost)."""
        res, tid, p0, p1 = self.res, m.tensor, m.p0, m.p1
        uses = self.use_ops[tid]
        dead = m.dead or ((not self.persistent[tid]) and bool(uses)
                          and uses[-1] <= self._current_op)
        if dead:
            pending = self.promoting.pop(tid, None)
            if pending is not None:
                self.dma.cancel(pending)
            if self._access_count is not None:
                self._access_count[p0:p1] = 0
            res.live[p0:p1] = False
            if res.in_flash[p0:p1].any():
                self.flash.transport(Transfer(TOp.TRIM, p0 * res.page_size,
                                              (p1 - p0) * res.page_size), now)
                res.in_flash[p0:p1] = False
                self.trims += 1
        else:
            dirty = res.in_hbm[p0:p1] & ~res.in_flash[p0:p1] & res.live[p0:p1]
            if dirty.any():
                raise AssertionError(f"{self.policy.name}: drop of live dirty pages of "
                                     f"{self.workload.tensors[tid].name}")
        res.release_when_ready(p0, p1, now)

    # -- eviction ------------------------------------------------------------------------
    def _make_room(self, need: int, op_index: int) -> Generator[simpy.Event, Any, None]:
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
        flight or queued, then by the policy's rule (module docstring)."""
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
        if self.table.reactive and self.table.eviction == "lru":
            order = held_t[np.argsort(self.last_use[held_t], kind="stable")]
        else:
            if not self.table.reactive:
                self.emergency += 1
            nxt = np.array([self._next_use(int(t), protect_op) for t in held_t])
            order = held_t[np.argsort(-nxt, kind="stable")]
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
                self.dma.writeback_now(a, b, now, wl.tensors[t].name)
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

    # -- report --------------------------------------------------------------------------
    def figures(self) -> dict[str, Any]:
        """The run's figures for the report: the steady state (per-iteration means over
        the iterations after ``run.warmup_iterations``; all of them if none is left),
        every iteration, and whole-run totals."""
        wl, records = self.workload, self.records
        warm = self.cfg.run.warmup_iterations
        steady = records[warm:] if len(records) > warm else records
        t_steady = sum(r.time_ps for r in steady)
        samples = wl.batch * len(steady)
        end = int(self.env.now)

        def mean(name: str) -> int:
            return int(sum(getattr(r, name) for r in steady)) // max(1, len(steady))

        fetch, wb = mean("fetch_bytes"), mean("writeback_bytes")
        dead_wb, inplace = mean("dead_writeback_bytes"), mean("inplace_bytes")
        out: dict[str, Any] = {
            "iterations": len(records),
            "warmup_iterations": len(records) - len(steady),
            "steady_state": len(records) > warm,
            "samples": samples,
            "sim_time_ps": t_steady,
            "iteration_time_ps": t_steady // max(1, len(steady)),
            "samples_per_s": samples / (t_steady / S) if t_steady else 0.0,
            # Time the NPU waited for operands to reach HBM from flash (the memory-tier
            # stall); time inside ops lost to HBM bandwidth is npu_hbm_stall_ps, part
            # of compute_ps.
            "stall_ps": mean("stall_ps"),
            "compute_ps": mean("compute_ps"),
            "npu_hbm_stall_ps": mean("npu_hbm_stall_ps"),
            "emergency_evictions": mean("emergency_evictions"),
            "per_iteration": [
                {"index": r.index, "warmup": r.index < len(records) - len(steady),
                 "time_ps": r.time_ps, "stall_ps": r.stall_ps,
                 "compute_ps": r.compute_ps, "npu_hbm_stall_ps": r.npu_hbm_stall_ps,
                 "faults": r.faults, "streamed_bytes": r.streamed_bytes,
                 "flash_to_hbm_bytes": r.fetch_bytes,
                 "hbm_to_flash_bytes": r.writeback_bytes,
                 "flash_to_npu_bytes": r.inplace_bytes,
                 "emergency_evictions": r.emergency_evictions,
                 "monitor_changes": r.monitor_changes}
                for r in records],
            "traffic_bytes": {
                # flash_to_npu: read in place through the SSD's BAR (FlatFlash)
                "flash_to_hbm": fetch, "hbm_to_flash": wb, "flash_to_npu": inplace,
                "inter_tier": fetch + wb + inplace,
                "npu_hbm_read": mean("npu_hbm_read"), "npu_hbm_write": mean("npu_hbm_write"),
                # of hbm_to_flash: dead data written back by evictions (no frees seen)
                "hbm_to_flash_dead": dead_wb,
            },
            "faults": mean("faults"),
            "streamed_bytes": mean("streamed_bytes"),
            "run_total": {
                "sim_time_ps": end, "faults": self.faults,
                "late_prefetches": self.late_prefetches,
                "cancelled_prefetches": self.cancelled_prefetches,
                "streamed_bytes": self.streamed_bytes, "emergency_evictions": self.emergency,
                "carried_fetch_bytes": self.carried_fetch_bytes,
                "npu_hbm_read_bytes": self.npu_read, "npu_hbm_write_bytes": self.npu_write,
                "dead_writeback_bytes": self.dead_writeback_bytes,
            },
            "hbm_peak_occupancy_bytes": int(self.res.level.peak),
            "hbm_mean_occupancy_bytes": self.res.level.mean(end),
        }
        if len(records) > warm and self.warm_energy:
            out["energy_since_ps"] = self.warm_end_ps
            out["energy_warmup_pj"] = self.warm_energy
        return out

    def _report(self) -> dict[str, Any]:
        return {"faults": self.faults, "late_prefetches": self.late_prefetches,
                "cancelled_prefetches": self.cancelled_prefetches,
                "streamed_bytes": self.streamed_bytes,
                "emergency_evictions": self.emergency, "trims": self.trims,
                "inplace_reads": self.inplace_reads, "promotions": self.promotions}
