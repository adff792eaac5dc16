"""The executor: the closed loop that runs training iterations on the machine.

A Component whose SimPy process walks the ops, as docs/ARCHITECTURE.md describes. Before
each op it has the pager (``tmhw.run.pager``) release the placement table's prefetches
and allocate the op's new outputs in HBM, faults in whatever operand is still missing,
and waits until the op may start (that wait is the stall charged to the memory system);
then the NPU runs the op's tiles against HBM; after the op, the pager releases the
table's write-backs and drops and frees dead tensors. The DMA engine works ahead in its
own process, earliest deadline first. Between warm-up iterations the policy may adjust
its table from what was measured (TM-Training's timing monitor); the iterations after
the warm-up replay the last table, so the steady state is one plan's. What is measured
goes to ``tmhw.run.metrics``.

The run starts from the same placement for every policy (``Pager.place_initial``). A
policy's table says what it wants resident when an iteration starts
(``PlacementTable.initial``); the first iteration (the warm-up,
``run.warmup_iterations``) moves the machine from the common start to the policy's
steady state, and the report's headline figures leave it out. At the warm-up's end, and
at the end of the last iteration's last op, the loop hands the time to ``read_energy``,
which reads the energy meters (the system's job: the loop finalizes no component); the
steady figures are the window between, and the drain after the last op (the engine
finishing the last write-backs) is reported on its own.

**Data splitting.** A prefetch row that covers only the tail of a tensor (the head stays
resident, TM-Training's split ratio) is a streamed tail: its op starts as soon as the
head is complete in HBM and the tail is booked, and consumes the tensor in order, tile
by tile: a page a fraction ``f`` into the tensor is needed ``f`` of the way through the
op. When the tail arrives later than that, the op's end waits for it; that wait is
stall inside the op, measured on the real timeline.

**In-place reads.** An operand an op only reads and finds (partly) missing from HBM is
faulted in, unless the policy reads it in place (``Policy.reads_in_place``, FlatFlash):
then the op waits only for the pages HBM holds of it, and as it starts the policy reads
the rest over the link (``Policy.read_in_place``); the op cannot end before the last
line has arrived. An operand the op also writes is faulted in as usual (the NPU writes
into HBM).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from npu import NPU, ComputeTask, Gemm
from tmhw.config import DRIFT_RATE_RATIO, MAX_CYCLE, MAX_PERIOD, SystemConfig
from tmhw.dma import FETCH, INPLACE, WRITEBACK, DmaRequest
from tmhw.placement.base import Feedback, PlanContext, Policy
from tmhw.placement.table import Move, PlacementTable
from tmhw.run.metrics import Metrics
from tmhw.run.pager import Pager
from tmhw.sim.component import Component
from tmhw.sim.transfer import Drifting, MemoryTarget
from tmhw.workload.graph import Kind, Op, Workload


class Executor(Component):
    """The per-op process of one workload under one table, with its pager and metrics."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 cfg: SystemConfig, workload: Workload, policy: Policy, capacity_pages: int,
                 npu: NPU, hbm: MemoryTarget, flash: MemoryTarget, *,
                 read_energy: Callable[[int], dict[str, float]] | None = None,
                 progress: Any = None, record_dma_order: bool = False,
                 streamed: np.ndarray | None = None) -> None:
        """``read_energy(now)`` reads the energy meters at ``now`` and returns each
        component's energy so far (pJ; None: no steady-state energy split).
        ``progress``: a bar updated once per op (or None). ``streamed`` marks the ops
        run tile by tile through a window of HBM (module docstring, data splitting)."""
        super().__init__(env, name, parent)
        self.cfg = cfg
        self.workload = wl = workload
        self.policy = policy
        self.npu = npu
        self.capacity_pages = capacity_pages
        self.progress = progress
        self.read_energy = read_energy
        # Which of the runtime's mechanisms the policy uses, read once.
        self.prefetch, self.split = policy.prefetches, policy.splits
        # "auto": no warm-up until one is found (``Metrics.found_warmup``)
        warm = cfg.run.warmup_iterations
        self.metrics = Metrics(warm if isinstance(warm, int) else 0, wl.batch)
        self.totals = self.metrics.totals
        self.pager = Pager(env, parent, cfg, wl, policy, capacity_pages, hbm, flash,
                           self.totals, eager_writebacks=not policy.schedules_writebacks,
                           record_dma_order=record_dma_order)
        self.res = self.pager.res
        self.dma = self.pager.dma
        self.tasks = [self._task(op) for op in wl.ops]
        self.streamed = np.zeros(len(wl.ops), dtype=bool) if streamed is None else streamed
        #: stall-free compute time of each op, from the NPU model
        self.op_ps = np.array([npu.compute_ps(t) for t in self.tasks], dtype=np.int64)
        self.ranges = self.pager.ranges
        self.table: PlacementTable | None = None
        self.ctx: PlanContext | None = None
        self.op_stall = np.zeros(len(wl.ops), dtype=np.int64)
        #: the operands the op now starting or computing reads in place
        self.in_place_operands: list[int] = []
        self.done: simpy.Event | None = None
        #: the flash tier's drifting state and the work behind it after each iteration
        #: (``_skip_drift``)
        self._drift: list[tuple[np.ndarray, np.ndarray]] = []
        #: how far each iteration moved it, a skip after the iteration left out
        self._moved: list[np.ndarray] = []
        #: and the work done in the regime the drift leads to (``Drifting.regime``)
        self._regime: list[np.ndarray] = []
        #: iterations in a row the drift has stood at its bound (``_skip_drift``)
        self._at_bound = 0

    # -- construction helpers ------------------------------------------------------------
    def _task(self, op: Op, capacity_pages: int | None = None) -> ComputeTask:
        """``op`` for the NPU (``op_task``) on this executor's HBM, or on one of
        ``capacity_pages``."""
        cap = self.capacity_pages if capacity_pages is None else capacity_pages
        return op_task(self.cfg, self.workload, op, cap)

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
        self.pager.place_initial()
        self.done = self.env.process(self._core())

    # -- the core process ----------------------------------------------------------------
    def _core(self) -> Generator[simpy.Event, Any, None]:
        wl, run, res, pager = self.workload, self.cfg.run, self.res, self.pager
        n = len(wl.ops)
        tot = self.totals
        assert self.table is not None and self.ctx is not None
        # a forced warm-up, or one found (``RunConfig``: "auto"), then the run's length
        warm: int | None = None if run.warmup_iterations == "auto" else run.warmup_iterations
        total = run.iterations if warm is not None else run.max_iterations
        it = -1
        while it + 1 < total:
            it += 1
            if it == warm and it > 0 and self.read_energy is not None:
                now = int(self.env.now)
                self.metrics.end_warmup(now, self.read_energy(now))
            start = int(self.env.now)
            self.metrics.begin_iteration()
            pager.begin_iteration(it)
            if it > 0:
                yield from self._host_input()
            self.op_stall = np.zeros(n, dtype=np.int64)
            lateness = np.zeros(n, dtype=np.int64)
            op_start = np.zeros(n, dtype=np.int64)
            op_end = np.zeros(n, dtype=np.int64)
            occ_op = np.zeros(n, dtype=np.int64)
            compute = npu_stall = 0
            peak0 = res.level.peak
            for op in wl.ops:
                t_op = int(self.env.now)
                if self.streamed[op.index]:
                    t_run, t_end, (rd, wr, hstall) = yield from self._run_streamed(op)
                    self.op_stall[op.index] = int(self.env.now) - t_op - (t_end - t_run)
                    compute += t_end - t_run
                    tot.npu_hbm_read += rd
                    tot.npu_hbm_write += wr
                    npu_stall += hstall
                    op_start[op.index], op_end[op.index] = t_op, int(self.env.now)
                    occ_op[op.index] = res.occupied_pages
                    if self.tracer.enabled:
                        # the tiles' compute, drawn as one span of its total length
                        self.tracer.span("npu.compute", t_run, t_end,
                                         op.name + " (streamed)")
                    pager.finish(op, streamed=True)
                    if self.progress is not None:
                        self.progress.update(1)
                    continue
                late, tail_due = yield from self._prepare(op)
                t_run = int(self.env.now)
                lateness[op.index] = late
                occ_start = res.occupied_pages
                result = yield from self.npu.execute(self.tasks[op.index])
                t_end = int(self.env.now)
                if tail_due > t_end:
                    # The op's last tiles wait for the streamed tail.
                    yield self.env.timeout(tail_due - t_end)
                pager.settle(int(self.env.now))
                occ_op[op.index] = max(occ_start, res.occupied_pages)
                tot.npu_hbm_read += result.hbm_read_bytes
                tot.npu_hbm_write += result.hbm_write_bytes
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
                if self.progress is not None:
                    self.progress.update(1)
            changes = 0
            drifting = False
            if warm is None:
                # auto: the device's slow drift is skipped, not simulated; the warm-up
                # ends where the iterations repeat on a device that no longer drifts,
                # or where only the measured iterations still fit (not converged)
                drifting = self._skip_drift(it)
                period = 0 if drifting else self._period(it, time_ps=int(self.env.now) - start)
                if period or it + 1 + run.iterations >= run.max_iterations:
                    warm = it + 1
                    total = warm + (-(-run.iterations // period) * period if period
                                    else run.iterations)
                    self.metrics.found_warmup(warm, period)
            # The policy may change its table between warm-up iterations only: the
            # steady state replays one table.
            if it + 1 < total and (warm is None or it < warm):
                fb = Feedback(it, self.op_stall.copy(), lateness, op_start, op_end,
                              int(res.level.peak // wl.page_size),
                              {"peak_before": peak0}, occ_op,
                              self.dma.take_late_writebacks(),
                              device_steady=not drifting)
                before = self.table
                self.table = self.policy.adjust(self.table, self.ctx, fb)
                self.table.index()
                pager.bind(self.table)
                changes = int(self.table.notes.get("monitor_changes", 0)) \
                    if self.table is not before else 0
            self.metrics.end_iteration(
                index=it, start_ps=start, end_ps=int(self.env.now),
                stall_ps=int(self.op_stall.sum()), compute_ps=compute,
                npu_hbm_stall_ps=npu_stall, monitor_changes=changes)
        # What the last iteration released is its traffic too: the engine finishes its
        # write-backs; the prefetches it released for the next iteration (which does
        # not run, so no op frees their space) are counted by the pages they still
        # miss, as the next iteration would move them, and not simulated. Its cleans
        # are the next iteration's traffic (``DmaEngine`` counts a clean's bytes in the
        # iteration of the eviction it saves); those not booked yet are dropped, as
        # that iteration would have written the pages by the clean or the eviction.
        # Iteration times end at the last op, and so does the measured window: the
        # meters are read here, and the drain that follows is reported on its own.
        if self.read_energy is not None:
            now = int(self.env.now)
            self.metrics.end_window(now, self.read_energy(now))
        carried = pager.carry_over()
        left = [r.booked for r in self.dma.unfinished() if r.booked is not None]
        self.dma.kick()
        if left:
            yield self.env.all_of(left)
        self.metrics.settle_traffic(self.dma.bytes_by_origin, carried)

    def _skip_drift(self, it: int) -> bool:
        """Skip the flash tier's slow drift (``Drifting``: an SSD's SLC cache filling
        over many iterations) after iteration ``it``. Where a quantity has moved by more
        than ``run.steady_tolerance`` of the work done in each of the last two warm
        iterations, in the same direction and by about as much (each move within
        ``DRIFT_RATE_RATIO`` of the other), it drifts; the run then moves it, at the
        last iteration's rate, as many whole iterations as leave one more before it
        reaches its bound (full or empty), so the change of regime is simulated, and
        counts them (``Metrics.skipped_iterations``). At the bound it still drifts
        until the work done in the far regime (``Drifting.regime``) repeats with some
        period: on the quick preset at 75% HBM the cache is full two iterations before
        the time settles, 41 ms to 76 ms. A mix of the two regimes that never repeats
        (a full cache that folds in whatever idle time each iteration leaves: BERT-large
        under TM-Training at 1/8 HBM on four SSDs, two of them writing 360k to 420k of
        their 466k pages an iteration past the cache, at random) settles all the same
        once the drift has stood at its bound for ``2 * MAX_PERIOD`` iterations (twice
        the longest period looked for); from then on the iterations' times and traffic
        alone say whether they repeat (``_period``, ``_same_regime``). Returns whether
        it still drifts."""
        flash = self.pager.flash
        if not isinstance(flash, Drifting):
            return False
        value, bound, work = flash.drift()
        self._moved.append(value - self._drift[-1][0] if self._drift else 0 * value)
        self._drift.append((value, work))
        self._regime.append(flash.regime())
        if not len(value) or it < 3:
            return False
        tol = self.cfg.run.steady_tolerance
        w1, w0 = self._drift[-2][1], self._drift[-3][1]
        g, g0 = self._moved[-1], self._moved[-2]
        moving = (np.abs(g) > tol * np.maximum(work - w1, 1)) & \
            (np.abs(g0) > tol * np.maximum(w1 - w0, 1)) & (np.sign(g) == np.sign(g0)) & \
            (np.abs(g) <= DRIFT_RATE_RATIO * np.abs(g0)) & \
            (np.abs(g0) <= DRIFT_RATE_RATIO * np.abs(g))
        if not moving.any():
            # at its bound the two regimes mix, and the mix takes iterations to settle:
            # the device still drifts until it repeats with some period, or has stood
            # there long enough that it will not
            self._at_bound += 1
            return not any(all(self._same_regime(j, p) for j in range(it - p + 1, it + 1))
                           for p in range(1, min(MAX_PERIOD, (it - 1) // 2) + 1))
        self._at_bound = 0
        room = np.where(g > 0, bound - value, value)[moving]
        k = int(np.floor(room / np.abs(g[moving])).min()) - 1
        if k < 1:
            return True
        flash.advance_drift(np.where(moving, k * g, 0.0))
        self._drift[-1] = (flash.drift()[0], work)
        self.metrics.skipped_iterations += k
        return True

    def _same_regime(self, j: int, p: int) -> bool:
        """Iteration ``j`` did as much of its work in a drift's far regime as ``j - p``
        (``Drifting.regime``), within ``run.steady_tolerance`` of the work it did; any
        two do once the drift has stood at its bound for ``2 * MAX_PERIOD`` iterations
        (``_skip_drift``)."""
        reg, drift = self._regime, self._drift
        if len(reg) <= j or j - p < 1 or not len(reg[j]) or self._at_bound >= 2 * MAX_PERIOD:
            return True
        now, then = reg[j] - reg[j - 1], reg[j - p] - reg[j - p - 1]
        work = drift[j][1] - drift[j - 1][1]
        tol = self.cfg.run.steady_tolerance
        return bool(np.all(np.abs(now - then) <= tol * np.maximum(work, 1)))

    def _period(self, it: int, *, time_ps: int) -> int:
        """The shortest period ``p`` over which iteration ``it`` (just ended, lasting
        ``time_ps``) and those before it repeat (``RunConfig``: "auto"): times of
        iterations ``it-p+1 .. it`` against ``p`` before, and the inter-tier bytes each
        of ``it-p .. it-1`` released (the last one's are still being booked), within
        ``run.steady_tolerance``, none of them the cold first. Failing that, the
        shortest cycle ``p`` (``MAX_PERIOD`` + 1 to ``MAX_CYCLE``) over which each
        iteration's traffic (and regime) repeats the one ``p`` before, but not the one
        ``MAX_PERIOD`` or fewer before, and the mean time of the last ``p`` iterations
        the ``p`` before's: a policy whose placement cycles (FlatFlash's promotions)
        with times that vary around the cycle by more than the tolerance (up to 1.2% at
        BERT-base 6 layers, 1/8 HBM, 32 channels). A run whose traffic repeats within
        ``MAX_PERIOD`` iterations is left to the periods, as its times will be. 0: none
        yet, or the policy still changes its table."""
        if not self.policy.settled:
            return 0
        tol = self.cfg.run.steady_tolerance
        times = [r.time_ps for r in self.metrics.records] + [time_ps]
        origin = self.dma.bytes_by_origin
        moved = [sum(origin.get((k, j), 0) for k in (FETCH, WRITEBACK, INPLACE))
                 for j in range(it)]

        def same(a: int, b: int) -> bool:
            return abs(a - b) <= tol * max(abs(b), 1)

        def traffic_repeats(p: int, lag: int) -> bool:
            return all(same(moved[j], moved[j - lag]) for j in range(it - p, it))

        def period(p: int) -> bool:
            return all(same(times[j], times[j - p]) and self._same_regime(j, p)
                       for j in range(it - p + 1, it + 1)) and traffic_repeats(p, p)

        def cycle(p: int) -> bool:
            last = range(it - p + 1, it + 1)
            return all(self._same_regime(j, p) for j in last) and \
                traffic_repeats(p, p) and \
                not any(traffic_repeats(p, q) for q in range(1, MAX_PERIOD + 1)) and \
                same(sum(times[j] for j in last), sum(times[j - p] for j in last))

        for p in range(1, MAX_CYCLE + 1):
            if it < 2 * p + 1:
                break
            if (period if p <= MAX_PERIOD else cycle)(p):
                return p
        return 0

    def _host_input(self) -> Generator[simpy.Event, Any, None]:
        """The next mini-batch lands in HBM from the host (not inter-tier traffic)."""
        pager = self.pager
        for t in self.workload.tensors:
            if t.kind == Kind.INPUT:
                yield from pager.wait_for_room(
                    self.res.count_missing(t.page_start, t.page_end), 0)
                pager.allocate(t.page_start, t.page_end, int(self.env.now))
                pager.mark_live(t.page_start, t.page_end)

    def _prepare(self, op: Op) -> Generator[simpy.Event, Any, tuple[int, int]]:
        """Release prefetches, allocate outputs, fault in operands, wait until the op may
        start. Returns (lateness of the prefetches due at this op, negative if early;
        the time by which the op's streamed tails let it end)."""
        env, res, pager = self.env, self.res, self.pager
        assert self.table is not None and self.ctx is not None
        n = len(self.workload.ops)
        pager.claim(op.index, op.tensors)
        if self.prefetch or self.table.reactive:
            pager.release_prefetches(op.index)
        reads = set(op.reads)
        new_out = [t for t in op.writes if t not in reads]
        need = sum(res.count_missing(*self.ranges[t]) for t in new_out)
        if need:
            yield from pager.wait_for_room(need, op.index)
            now = int(env.now)
            for t in new_out:
                pager.allocate(*self.ranges[t], now)
        tails = self._tails(op)
        reqs = []
        cold: list[int] = []
        for t in op.reads:
            p0, p1 = self.ranges[t]
            if res.count_missing(p0, p1):
                if t not in op.writes and self.policy.reads_in_place(t):
                    cold.append(t)
                    continue
                if pager.prefetch_pending(t):
                    # Released but not yet booked: a late prefetch, boosted to the front.
                    self.totals.late_prefetches += 1
                else:
                    self.totals.faults += 1
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
        while cold and (late := self._held_ready(cold)) > env.now:
            yield env.timeout(late - int(env.now))
        self._check_operands(op, tails, cold)
        if cold:
            tail_due = max(tail_due, self.policy.read_in_place(cold, op.index, pager))
        pager.used(op.tensors)
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
        if not self.split:
            return {}
        return {m.tensor: m for m in self.table.due_at(op.index)
                if m.stream and m.p1 > m.p0 and m.tensor in op.reads}

    def _held_ready(self, tensors: list[int]) -> int:
        """When the pages of ``tensors`` that HBM holds are all there (0: it holds none)."""
        res, out = self.res, 0
        for t in tensors:
            p0, p1 = self.ranges[t]
            out = max(out, res.held_ready_time(p0, p1))
        return out

    def _ready(self, op: Op, tails: dict[int, Move],
               cold: list[int] | None = None) -> tuple[int, int]:
        """(when ``op`` may start, when it may end at the earliest given its streamed
        tails). The op starts when every operand page is complete in HBM, except a
        streamed tail: a tail page ``f`` of the way into its tensor is needed ``f`` of
        the way through the op, so the op cannot end before that page's arrival plus
        the rest of the op. An operand read in place (``cold``) needs only the pages
        HBM holds."""
        res = self.res
        dur = int(self.op_ps[op.index])
        ready = tail_due = 0
        for t in op.tensors:
            p0, p1 = self.ranges[t]
            if cold and t in cold:
                ready = max(ready, self._held_ready([t]))
                continue
            m = tails.get(t)
            if m is None:
                ready = max(ready, res.ready_time(p0, p1))
                continue
            ready = max(ready, res.ready_time(p0, m.p0), res.ready_time(m.p1, p1))
            # Latest (arrival + remaining work) over the tail's pages
            tail_due = max(tail_due, res.tail_due(m.p0, m.p1, p0, p1, dur))
            self.totals.streamed_bytes += (m.p1 - m.p0) * self.workload.page_size
        return ready, tail_due

    def _check_operands(self, op: Op, tails: dict[int, Move],
                        cold: list[int] | None = None) -> None:
        """Invariant: every page an op touches is held in HBM when it starts, complete
        except a streamed tail (which the op waits for before it ends), or read in
        place (``cold``)."""
        res, now = self.res, int(self.env.now)
        # the pages HBM holds per tensor (the residency's groups are the tensors; its
        # ``check`` holds the counts to the flags)
        held = res.held_by_owner
        for t in op.tensors:
            p0, p1 = self.ranges[t]
            if cold and t in cold:
                if res.held_ready_time(p0, p1) > now:
                    raise AssertionError(f"op {op.name} starts before the resident part "
                                         f"of {self.workload.tensors[t].name} has arrived")
                continue
            if held[t] != p1 - p0:
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
        allocated, the NPU runs the slice, and then the tile's inputs leave HBM again
        (written back where they are the only copy of live data) to make room for the
        next. Its outputs stay while the outputs kept so far and a window for the next
        tile fit HBM (the rest of HBM's data is evicted for them as for any op): an op
        whose inputs die with it, as a loss reading logits and writing their gradient,
        then streams only what does not fit, not every tile out and back in (GPT-2 small,
        s1024 b8, at 25% of the footprint: the loss's 823 MB gradient written back and
        fetched again by the next op, 1.7 GiB of the iteration's 3.9 GiB).
        Returns (first tile's start, busy time end-equivalent, NPU totals)."""
        env, res, wl, pager = self.env, self.res, self.workload, self.pager
        pager.claim(op.index, op.tensors)
        task = self.tasks[op.index]
        ws = sum(wl.tensors[t].npages for t in op.tensors)
        window = max(1, self.capacity_pages // 4)
        k_tiles = max(2, -(-ws // window))
        reads = set(op.reads)
        busy = rd = wr = hstall = kept = 0
        first = -1
        for k in range(k_tiles):
            sl = {t: (p0 + (p1 - p0) * k // k_tiles, p0 + (p1 - p0) * (k + 1) // k_tiles)
                  for t, (p0, p1) in ((t, self.ranges[t]) for t in op.tensors)}
            need = sum(res.count_missing(a, b) for a, b in sl.values())
            yield from pager.wait_for_room(need, op.index, sl)
            now = int(env.now)
            reqs = []
            for t, (a, b) in sl.items():
                if t in reads:
                    if res.count_missing(a, b):
                        self.totals.faults += 1
                        reqs.append(pager.fetch_now(t, a, b, op.index))
                elif res.count_missing(a, b):
                    pager.allocate(a, b, now)
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
                if t not in reads and kept + (b - a) + window <= self.capacity_pages:
                    pager.written(a, b)             # an output tile that stays
                    kept += b - a
                else:
                    pager.tile_done(t, a, b, t in op.writes, now)
        pager.used(op.tensors)
        self.totals.streamed_bytes += sum(wl.tensors[t].npages for t in op.reads) \
            * wl.page_size
        return first, first + busy, (rd, wr, hstall)

    # -- report --------------------------------------------------------------------------
    def figures(self) -> dict[str, Any]:
        """The run's figures for the report (``Metrics.figures``)."""
        return self.metrics.figures(int(self.env.now), self.res.level)

    def _report(self) -> dict[str, Any]:
        return self.metrics.report()


def op_task(cfg: SystemConfig, wl: Workload, op: Op, capacity_pages: int) -> ComputeTask:
    """``op`` of ``wl`` for the NPU, its HBM address (its first operand's) wrapped at
    ``capacity_pages``."""
    addr = wl.tensors[op.reads[0]].page_start * wl.page_size if op.reads else 0
    # the workload's precision (``workload.precision``): fp8 GEMMs read one byte an
    # operand, fp32 ops four; bf16 and fp16 the NPU's own operand width
    precision = wl.meta.get("precision", "bf16")
    width = 4 if precision == "fp32" else 1 if precision == "fp8" and op.gemms \
        else cfg.npu.dtype_bytes
    return ComputeTask(
        name=op.name,
        gemms=tuple(Gemm(g.m, g.n, g.k, g.count) for g in op.gemms),
        vector_elems=op.vector_elems, vector_ops_per_elem=op.vector_ops_per_elem,
        dtype_bytes=width, hbm_address=addr % max(1, capacity_pages * wl.page_size),
        precision=precision)
