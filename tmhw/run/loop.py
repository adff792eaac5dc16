"""The executor: the closed loop that runs training iterations on the machine.

A Component whose process walks the ops on the NPU (docs/ARCHITECTURE.md, data flow).
Before each op it releases the placement table's prefetches, has the pager allocate the
op's new outputs in HBM and fault in whatever operand is still missing, and waits until
the op may start (that wait is the stall charged to the memory system); then the NPU
runs the op's tiles against HBM; after the op, the pager releases the table's
write-backs and drops. The DMA engine works ahead in its own process, earliest deadline
first. Between warm-up iterations the policy may adjust its table from what was
measured (TM-Training's timing monitor); the iterations after the warm-up replay the
last table, so the steady state is one plan's. Residency and eviction are the pager's
(``tmhw.run.pager``), the records and figures ``tmhw.run.metrics``'.

**Warm-up.** The first iteration (``run.warmup_iterations``) moves the machine from the
common start (``Pager.initial_state``) to the policy's steady state, and the report's
headline figures leave it out.

**Data splitting.** A prefetch row that covers only the tail of a tensor (the head stays
resident, TM-Training's split ratio) is a streamed tail: its op starts as soon as the
head is complete in HBM and the tail is booked, and consumes the tensor in order, tile
by tile: a page a fraction ``f`` into the tensor is needed ``f`` of the way through the
op. When the tail arrives later than that, the op's end waits for it; that wait is
stall inside the op, measured on the real timeline.

**In-place reads** (FlatFlash): an operand an op only reads and finds (partly) missing
is read in place by the pager when the op starts, and the op cannot end before the last
line has arrived. An operand the op also writes is faulted in as usual.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from npu import NPU, ComputeTask, Gemm
from tmhw.config import SystemConfig
from tmhw.dma import FETCH, INPLACE, WRITEBACK, DmaRequest
from tmhw.placement.base import Feedback, PlanContext, Policy
from tmhw.placement.table import Move, PlacementTable
from tmhw.run.metrics import IterationRecord, figures
from tmhw.run.pager import Pager
from tmhw.sim.component import Component
from tmhw.sim.transfer import MemoryTarget
from tmhw.workload.graph import Op, Workload


class Executor(Component):
    """The per-op loop of one workload under one table, over a pager."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 cfg: SystemConfig, workload: Workload, policy: Policy, capacity_pages: int,
                 npu: NPU, hbm: MemoryTarget, flash: MemoryTarget, *,
                 record_dma_order: bool = False, streamed: np.ndarray | None = None,
                 on_op: Callable[[], None] | None = None,
                 on_warmup_end: Callable[[int], None] | None = None) -> None:
        """``streamed`` marks the ops run tile by tile through a window of HBM (module
        docstring, data splitting); ``on_op`` is called after each op (a progress bar),
        ``on_warmup_end`` with the time the warm-up ended."""
        super().__init__(env, name, parent)
        self.cfg = cfg
        self.workload = wl = workload
        self.policy = policy
        self.npu = npu
        self.capacity_pages = capacity_pages
        self.on_op = on_op
        self.on_warmup_end = on_warmup_end
        self.pager = Pager(env, parent, cfg, wl, policy, capacity_pages, hbm, flash,
                           record_dma_order=record_dma_order)
        self.res = self.pager.res
        self.dma = self.pager.dma
        self.ranges = self.pager.ranges
        self.tasks = [self._task(op) for op in wl.ops]
        self.streamed = np.zeros(len(wl.ops), dtype=bool) if streamed is None else streamed
        #: stall-free compute time of each op, from the NPU model
        self.op_ps = np.array([npu.compute_ps(t) for t in self.tasks], dtype=np.int64)
        self.table: PlacementTable | None = None
        self.ctx: PlanContext | None = None
        self._iteration = 0
        self.records: list[IterationRecord] = []
        self.op_stall = np.zeros(len(wl.ops), dtype=np.int64)
        self.faults = 0
        self.late_prefetches = 0
        self.streamed_bytes = 0
        self.npu_read = 0
        self.npu_write = 0
        #: the operands the op now starting or computing reads in place (FlatFlash)
        self.in_place_operands: list[int] = []
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
        self.pager.bind(table)

    def _elaborate(self) -> None:
        if self.table is None or self.ctx is None:
            raise self.fail("no placement table bound (call bind before elaborate)")
        if self.table.nops != len(self.workload.ops):
            raise self.fail(f"the table has {self.table.nops} ops, the workload "
                            f"{len(self.workload.ops)}")

    def _start(self) -> None:
        self.pager.initial_state()
        self.done = self.env.process(self._core())

    # -- the core process ----------------------------------------------------------------
    def _core(self) -> Generator[simpy.Event, Any, None]:
        wl, run, pager = self.workload, self.cfg.run, self.pager
        n = len(wl.ops)
        assert self.table is not None and self.ctx is not None
        for it in range(run.iterations):
            if it == run.warmup_iterations and it > 0 and self.on_warmup_end is not None:
                self.on_warmup_end(int(self.env.now))
            self._iteration = it
            start = int(self.env.now)
            faults0, emerg0, streamed0 = self.faults, pager.emergency, self.streamed_bytes
            rd0, wr0 = self.npu_read, self.npu_write
            dead0 = pager.dead_writeback_bytes
            pager.begin_iteration(it)
            if it > 0:
                yield from pager.host_input()
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
                    pager.finish(op, writes=False)
                    if self.on_op is not None:
                        self.on_op()
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
                pager.finish(op)
                if self.on_op is not None:
                    self.on_op()
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
                pager.bind(self.table)
                changes = int(self.table.notes.get("monitor_changes", 0)) \
                    if self.table is not before else 0
            self.records.append(IterationRecord(
                index=it, start_ps=start, end_ps=int(self.env.now),
                stall_ps=int(self.op_stall.sum()), compute_ps=compute,
                faults=self.faults - faults0, emergency_evictions=pager.emergency - emerg0,
                npu_hbm_stall_ps=npu_stall, streamed_bytes=self.streamed_bytes - streamed0,
                monitor_changes=changes, npu_hbm_read=self.npu_read - rd0,
                npu_hbm_write=self.npu_write - wr0,
                dead_writeback_bytes=pager.dead_writeback_bytes - dead0))
        yield from self._drain()

    def _drain(self) -> Generator[simpy.Event, Any, None]:
        """What the last iteration released is its traffic too: the engine finishes its
        write-backs; the prefetches it released for the next iteration (which does not
        run, so no op frees their space) are counted by the pages they still miss, as
        the next iteration would move them, and not simulated. Its cleans are the next
        iteration's traffic (``DmaEngine`` counts a clean's bytes in the iteration of
        the eviction it saves); those not booked yet are dropped, as that iteration
        would have written the pages by the clean or the eviction. Iteration times end
        at the last op."""
        carried = 0
        for r in self.dma.unfinished():
            if r.kind == FETCH:
                carried += self.res.count_missing(r.cursor, r.p1) * self.workload.page_size
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

    def _prepare(self, op: Op) -> Generator[simpy.Event, Any, tuple[int, int]]:
        """Release prefetches, allocate outputs, fault in operands, wait until the op may
        start. Returns (lateness of the prefetches due at this op, negative if early;
        the time by which the op's streamed tails let it end)."""
        env, res, wl, pager = self.env, self.res, self.workload, self.pager
        assert self.table is not None
        n = len(wl.ops)
        pager.current_op = op.index
        pager.claim(list(op.tensors))
        if self.policy.prefetches or self.table.reactive:
            for m in self.table.released_at_start(op.index):
                nxt = m.deadline_op < op.index      # due at an op of the next iteration
                pager.prefetch(m, self._iteration + (1 if nxt else 0))
        reads = set(op.reads)
        yield from pager.allocate([t for t in op.writes if t not in reads], op.index)
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
                if pager.prefetch_pending(t):
                    # Released but not yet booked: a late prefetch, boosted to the front.
                    self.late_prefetches += 1
                else:
                    self.faults += 1
                reqs.append(pager.fetch_now(t, p0, p1, op.index))
        self.in_place_operands = cold
        yield from self._booked(reqs)
        ready, tail_due = self._ready(op, tails, cold)
        t_want = int(env.now)
        if ready > t_want:
            yield env.timeout(ready - t_want)
        # A promotion booked while the op waited may have put more of a cold operand in
        # HBM, still in flight: the op waits for those pages too (it reads in place only
        # what HBM does not hold).
        while cold and (late := pager.held_ready(cold)) > env.now:
            yield env.timeout(late - int(env.now))
        self._check_operands(op, tails, cold)
        if cold:
            tail_due = max(tail_due, pager.read_in_place(op, cold))
        pager.touch(op.tensors)
        due = self.table.due_at(op.index) if n else []
        late = max((res.ready_time(m.p0, m.p1) for m in due if m.p1 > m.p0),
                   default=t_want) - t_want
        return late, tail_due

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
                ready = max(ready, self.pager.held_ready([t]))
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
        env, res, wl, pager = self.env, self.res, self.workload, self.pager
        pager.current_op = op.index
        pager.claim(list(op.tensors))
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
            yield from pager.room_for(need, op.index)
            now = int(env.now)
            reqs = []
            for t, (a, b) in sl.items():
                if t in reads:
                    if res.count_missing(a, b):
                        self.faults += 1
                        reqs.append(pager.fetch_now(t, a, b, op.index))
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
                    pager.written(a, b)
                pager.release_tile(t, a, b, now)
        pager.touch(op.tensors)
        self.streamed_bytes += sum(wl.tensors[t].npages for t in op.reads) * wl.page_size
        return first, first + busy, (rd, wr, hstall)

    # -- report --------------------------------------------------------------------------
    def figures(self) -> dict[str, Any]:
        """The run's figures for the report (``tmhw.run.metrics.figures``)."""
        pager, end = self.pager, int(self.env.now)
        return figures(self.records, self.cfg.run.warmup_iterations, self.workload.batch,
                       end, {
                           "faults": self.faults, "late_prefetches": self.late_prefetches,
                           "cancelled_prefetches": pager.cancelled_prefetches,
                           "streamed_bytes": self.streamed_bytes,
                           "emergency_evictions": pager.emergency,
                           "carried_fetch_bytes": self.carried_fetch_bytes,
                           "npu_hbm_read_bytes": self.npu_read,
                           "npu_hbm_write_bytes": self.npu_write,
                           "dead_writeback_bytes": pager.dead_writeback_bytes},
                       (int(self.res.level.peak), self.res.level.mean(end)))

    def _report(self) -> dict[str, Any]:
        pager = self.pager
        return {"faults": self.faults, "late_prefetches": self.late_prefetches,
                "cancelled_prefetches": pager.cancelled_prefetches,
                "streamed_bytes": self.streamed_bytes,
                "emergency_evictions": pager.emergency, "trims": pager.trims,
                "inplace_reads": pager.inplace_reads, "promotions": pager.promotions}
