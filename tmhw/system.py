"""Builds the machine from a SystemConfig, runs training iterations, returns a report.

The executor here is the closed loop DESIGN.md describes: the NPU core process walks the
ops; before each op it releases the placement table's prefetches, allocates the op's
outputs in HBM, faults in whatever operand is still missing, and waits until every
operand page is complete in HBM (that wait is the stall charged to the memory system);
then the NPU runs the op's tiles against HBM; after the op, the table's write-backs and
drops are released and dead tensors are freed. The DMA engine works ahead in its own
process. Between iterations the policy may adjust its table from what was measured
(TM-Training's timing monitor).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from dram import DramTarget
from flash import FlashTarget
from npu import NPU, ComputeTask, Gemm
from tmhw import tomlio
from tmhw.config import SystemConfig
from tmhw.dma import FETCH, WRITEBACK, DmaEngine, DmaRequest
from tmhw.placement import Feedback, PlacementTable, PlanContext, make_policy
from tmhw.placement.base import check_fits
from tmhw.placement.table import Action
from tmhw.report import VERSION, rollup
from tmhw.residency import Residency
from tmhw.sim.component import Component
from tmhw.sim.env import Environment
from tmhw.sim.errors import TmhwError
from tmhw.sim.trace import NULL_TRACER, Tracer
from tmhw.sim.transfer import Op as TOp
from tmhw.sim.transfer import Transfer
from tmhw.sim.units import S
from tmhw.workload.graph import Kind, Op, Workload
from tmhw.workload.zoo import build as build_workload

#: Ops ahead whose new outputs a non-urgent prefetch must leave room for.
HEADROOM_OPS = 3


@dataclass(slots=True)
class IterationRecord:
    index: int
    start_ps: int
    end_ps: int
    stall_ps: int
    compute_ps: int
    faults: int
    fetch_bytes: int
    writeback_bytes: int
    emergency_evictions: int
    npu_hbm_stall_ps: int = 0     # inside ops: the arrays waiting on HBM operand traffic

    @property
    def time_ps(self) -> int:
        return self.end_ps - self.start_ps


class System:
    """One machine running one workload under one placement policy."""

    def __init__(self, cfg: SystemConfig, *, tracer: Tracer | None = None,
                 progress: Any = None, workload: Workload | None = None) -> None:
        """``workload`` replaces the one ``cfg.workload`` names (a SCALE-Sim import, a
        hand-built graph in a test); its page size must be ``cfg.workload.page_size``."""
        self.cfg = cfg
        self.progress = progress
        wc = cfg.workload
        if workload is None:
            workload = build_workload(
                wc.model, batch=wc.batch or None, seq=wc.seq or None,
                page_size=wc.page_size, optimizer=wc.optimizer, layers=wc.layers or None)
        elif workload.page_size != wc.page_size:
            raise TmhwError(f"workload.page_size: the workload is laid out in "
                            f"{workload.page_size} B pages, the config says {wc.page_size}")
        self.workload: Workload = workload
        wl = self.workload
        self.policy = make_policy(cfg.policy.name)
        ps = wl.page_size
        self.footprint_bytes = wl.peak_live_bytes()
        footprint_pages = -(-self.footprint_bytes // ps)
        if self.policy.whole_footprint:
            cap_pages = footprint_pages
        else:
            cap_pages = max(1, int(math.floor(cfg.policy.hbm_ratio * footprint_pages)))
        self.capacity_pages = cap_pages
        check_fits(wl, cap_pages, self.policy.name)

        self.env = Environment()
        self.tracer = tracer or NULL_TRACER
        self.root = Component(self.env, "system", tracer=self.tracer)
        self.hbm = DramTarget(self.env, "hbm", self.root, cfg.hbm, model=cfg.run.hbm_model)
        if wl.npages * ps > cfg.flash.capacity:
            raise TmhwError(f"flash: the workload's {wl.npages * ps / 2**30:.1f} GiB do not fit "
                            f"the device's {cfg.flash.capacity / 2**30:.1f} GiB logical space")
        # The workload's pages occupy the device's first logical bytes; preconditioning
        # at least that far maps them, so weights and optimizer state that start on
        # flash are there at time 0 (untimed), as in a device in steady state.
        precondition = max(cfg.run.precondition, wl.npages * ps / cfg.flash.capacity)
        self.flash = FlashTarget(self.env, "flash", self.root, cfg.flash,
                                 model=cfg.run.flash_model, precondition=precondition,
                                 seed=cfg.run.seed, record=self.tracer.enabled)
        self.npu = NPU(self.env, "npu", self.root, cfg.npu, self.hbm)
        self.res = Residency(wl.npages, cap_pages, ps, owner=wl.page_tensor())
        self.dma = DmaEngine(self.env, "dma", self.root, cfg.dma, cfg.link, self.hbm,
                             self.flash, self.res, ps)
        self.dma.evictor = self._evict
        self.dma.stale = self._stale
        self.dma.headroom = self._headroom
        if cfg.policy.lookahead_ops:
            self.dma.too_early = self._too_early
        self.tasks = [self._task(op) for op in wl.ops]
        # Pages of tensors each op writes without reading (allocated as it starts).
        self.alloc_need = np.array(
            [sum(wl.tensors[t].npages for t in op.writes if t not in op.reads)
             for op in wl.ops], dtype=np.int64)

        # Profile: the stall-free schedule of one iteration, from the NPU model.
        dur = np.array([self.npu.compute_ps(t) for t in self.tasks], dtype=np.int64)
        ends = np.cumsum(dur)
        self.profile_start = ends - dur
        self.profile_end = ends
        fetch_bw = min(cfg.flash.read_bandwidth_bound(), cfg.link.bandwidth)
        wb_bw = min(cfg.flash.write_bandwidth_bound(), cfg.link.bandwidth)
        p = cfg.policy
        self.ctx = PlanContext(wl, cap_pages, self.profile_start, self.profile_end,
                               fetch_bw, wb_bw, p.split, p.monitor, p.prefetch,
                               p.monitor_gain, p.lookahead_ops, p.ilp_time_limit_s,
                               cfg.run.seed)
        self.table: PlacementTable = self.policy.plan(self.ctx)
        self.first_table_rows = self.table.rows
        self.first_table_bytes = self.table.size_bytes()

        # Per-tensor bookkeeping for eviction choices.
        self.ranges = [(t.page_start, t.page_end) for t in wl.tensors]
        self.persistent = np.array([t.kind.persistent for t in wl.tensors], dtype=bool)
        self.last_use = np.full(len(wl.tensors), -1, dtype=np.int64)
        self.use_ops: list[list[int]] = [[i for i, _ in u] for u in wl.uses()]
        self._clock = 0
        self._current_op = 0
        #: per tensor, how many times an op or a released prefetch has claimed it
        self.generation = np.zeros(len(wl.tensors), dtype=np.int64)

        self.records: list[IterationRecord] = []
        self.op_stall = np.zeros(len(wl.ops), dtype=np.int64)
        self.stall_by_iter: list[np.ndarray] = []
        self.faults = 0
        self.late_prefetches = 0
        self.cancelled_prefetches = 0
        self.streamed_bytes = 0
        self.prefetching: dict[int, DmaRequest] = {}
        self.emergency = 0
        self.trims = 0
        self.npu_read = 0
        self.npu_write = 0
        self._initial_state()

    # -- construction helpers ------------------------------------------------------------
    def _task(self, op: Op) -> ComputeTask:
        wl = self.workload
        addr = wl.tensors[op.reads[0]].page_start * wl.page_size if op.reads else 0
        return ComputeTask(
            name=op.name,
            gemms=tuple(Gemm(g.m, g.n, g.k, g.count) for g in op.gemms),
            vector_elems=op.vector_elems, vector_ops_per_elem=op.vector_ops_per_elem,
            dtype_bytes=self.cfg.npu.dtype_bytes,
            hbm_address=addr % max(1, self.capacity_pages * wl.page_size))

    def _initial_state(self) -> None:
        wl, res = self.workload, self.res
        init = self.table.initial
        n_init = int(np.count_nonzero(init))
        if n_init > self.capacity_pages:
            raise TmhwError(f"policy.name: {self.policy.name} starts with "
                            f"{n_init * wl.page_size / 2**20:.1f} MiB resident, over the HBM "
                            f"capacity of {self.capacity_pages * wl.page_size / 2**20:.1f} MiB")
        res.hold(np.flatnonzero(init), 0, 0)
        for t in wl.tensors:
            if t.kind.persistent or t.kind == Kind.INPUT:
                res.live[t.page_start:t.page_end] = True
                if t.kind.persistent and not init[t.page_start:t.page_end].all():
                    # Weights and optimizer state not resident start on flash, untimed.
                    res.in_flash[t.page_start:t.page_end] = True

    # -- run -----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Elaborate, simulate every iteration, finalize; return the report dict."""
        self.root.elaborate()
        self.root.start()
        done = self.env.process(self._core())
        self.env.run(until=done)
        end = int(self.env.now)
        self.root.finalize(end)
        self.res.check()
        return build_report(self)

    def _core(self) -> Generator[simpy.Event, Any, None]:
        wl = self.workload
        for it in range(self.cfg.run.iterations):
            start = int(self.env.now)
            f0 = self.dma.bytes[FETCH].value
            w0 = self.dma.bytes[WRITEBACK].value
            faults0, emerg0 = self.faults, self.emergency
            self.dma.iteration = it
            if it > 0:
                yield from self._host_input()
            self.op_stall = np.zeros(len(wl.ops), dtype=np.int64)
            lateness = np.zeros(len(wl.ops), dtype=np.int64)
            op_start = np.zeros(len(wl.ops), dtype=np.int64)
            op_end = np.zeros(len(wl.ops), dtype=np.int64)
            compute = 0
            npu_stall = 0
            peak0 = self.res.level.peak
            occ_op = np.zeros(len(wl.ops), dtype=np.int64)
            for op in wl.ops:
                t_op = int(self.env.now)
                late = yield from self._prepare(op)
                t_run = int(self.env.now)
                self.op_stall[op.index] = t_run - t_op
                lateness[op.index] = late
                occ_start = self.res.occupied_pages
                result = yield from self.npu.execute(self.tasks[op.index])
                self.res.settle(int(self.env.now))
                occ_op[op.index] = max(occ_start, self.res.occupied_pages)
                self.npu_read += result.hbm_read_bytes
                self.npu_write += result.hbm_write_bytes
                npu_stall += result.stall_ps
                compute += int(self.env.now) - t_run
                op_start[op.index] = t_run
                op_end[op.index] = int(self.env.now)
                if self.tracer.enabled:
                    if t_run > t_op:
                        self.tracer.span("npu.stall", t_op, t_run, op.name)
                    self.tracer.span("npu.compute", t_run, int(self.env.now), op.name)
                self._finish(op)
                if self.progress is not None:
                    self.progress.update(1)
            end = int(self.env.now)
            rec = IterationRecord(it, start, end, int(self.op_stall.sum()), compute,
                                  self.faults - faults0,
                                  self.dma.bytes[FETCH].value - f0,
                                  self.dma.bytes[WRITEBACK].value - w0,
                                  self.emergency - emerg0, npu_stall)
            self.records.append(rec)
            self.stall_by_iter.append(self.op_stall.copy())
            if it + 1 < self.cfg.run.iterations:
                fb = Feedback(it, self.op_stall.copy(), lateness, op_start, op_end,
                              int(self.res.level.peak // wl.page_size),
                              {"peak_before": peak0}, occ_op)
                self.table = self.policy.adjust(self.table, self.ctx, fb)
                self.table.index()

    def _host_input(self) -> Generator[simpy.Event, Any, None]:
        """The next mini-batch lands in HBM from the host (not inter-tier traffic)."""
        for t in self.workload.tensors:
            if t.kind == Kind.INPUT:
                yield from self._make_room(self.res.count_missing(t.page_start, t.page_end), 0)
                self.res.hold(slice(t.page_start, t.page_end), int(self.env.now),
                              int(self.env.now))
                self.res.live[t.page_start:t.page_end] = True

    def _prepare(self, op: Op) -> Generator[simpy.Event, Any, int]:
        """Release prefetches, allocate outputs, fault in operands, wait until resident.
        Returns the lateness of the prefetches due at this op (negative: early)."""
        env, res, wl = self.env, self.res, self.workload
        self._current_op = op.index
        self.generation[list(op.tensors)] += 1
        if self.cfg.policy.prefetch or self.table.reactive:
            for m in self.table.released_at_start(op.index):
                self.generation[m.tensor] += 1
                self.prefetching[m.tensor] = self.dma.submit(DmaRequest(
                    FETCH, m.p0, m.p1, m.deadline_op, wl.tensors[m.tensor].name))
        reads = set(op.reads)
        new_out = [t for t in op.writes if t not in reads]
        need = sum(res.count_missing(*self.ranges[t]) for t in new_out)
        if need:
            yield from self._make_room(need, op.index)
            now = int(env.now)
            for t in new_out:
                p0, p1 = self.ranges[t]
                res.hold(slice(p0, p1), now, now)
        reqs = []
        for t in op.reads:
            p0, p1 = self.ranges[t]
            if res.count_missing(p0, p1):
                pending = self.prefetching.get(t)
                if pending is not None and pending.cursor < pending.p1:
                    # Released but not yet booked: a late prefetch, boosted to the front.
                    self.late_prefetches += 1
                else:
                    self.faults += 1
                reqs.append(self.dma.submit(DmaRequest(
                    FETCH, p0, p1, op.index, wl.tensors[t].name, urgent=True,
                    chunk_pages=self.table.fault_chunk_pages)))
        for r in reqs:
            assert r.booked is not None
            if not r.booked.triggered:
                yield r.booked
        ready = self._ready(op)
        t_want = int(env.now)
        late = ready - t_want
        if ready > t_want:
            yield env.timeout(ready - t_want)
        self._check_operands(op)
        self._clock += 1
        for t in op.tensors:
            self.last_use[t] = self._clock
        return late

    def _headroom(self) -> int:
        """Pages the next ops will allocate for their new outputs (a prefetch booked
        into that space would only be evicted again to make room for them)."""
        i = self._current_op
        return int(self.alloc_need[i:i + HEADROOM_OPS].max(initial=0))

    def _too_early(self, req: DmaRequest) -> bool:
        return req.deadline_op > self._current_op + self.cfg.policy.lookahead_ops

    def _stale(self, req: DmaRequest) -> bool:
        return req.tensor >= 0 and int(self.generation[req.tensor]) != req.generation

    def _check_operands(self, op: Op) -> None:
        """Invariant: every page an op touches is held in HBM when it starts, and complete
        (a split tensor's streamed tail: by the time the op reaches it)."""
        res, now = self.res, int(self.env.now)
        dur = int(self.profile_end[op.index] - self.profile_start[op.index])
        for t in op.tensors:
            p0, p1 = self.ranges[t]
            if p1 > p0 and not res.in_hbm[p0:p1].all():
                raise AssertionError(f"op {op.name} starts without all of "
                                     f"{self.workload.tensors[t].name} in HBM")
            if p1 > p0 and res.ready_at[p0:p1].max() > now + dur:
                raise AssertionError(f"op {op.name} starts before "
                                     f"{self.workload.tensors[t].name} can arrive")

    def _ready(self, op: Op) -> int:
        """When ``op`` may start: every operand page complete in HBM, except the
        streamed tail of a split tensor, which the op consumes after the resident head
        (a fraction ``s`` of the tensor, so ``s`` of the op's time later)."""
        res = self.res
        tails = {m.tensor: m for m in self.table.due_at(op.index) if
                 m.p0 > self.ranges[m.tensor][0]}
        ready = 0
        dur = int(self.profile_end[op.index] - self.profile_start[op.index])
        for t in op.tensors:
            p0, p1 = self.ranges[t]
            m = tails.get(t)
            if m is None or not (p0 < m.p0 < m.p1 <= p1):
                ready = max(ready, res.ready_time(p0, p1))
                continue
            s = (m.p0 - p0) / (p1 - p0)
            ready = max(ready, res.ready_time(p0, m.p0),
                        res.ready_time(m.p0, m.p1) - int(s * dur),
                        res.ready_time(m.p1, p1))
            self.streamed_bytes += (m.p1 - m.p0) * self.workload.page_size
        return ready

    def _finish(self, op: Op) -> None:
        res, wl = self.res, self.workload
        now = int(self.env.now)
        for t in op.writes:
            p0, p1 = self.ranges[t]
            res.live[p0:p1] = True
            res.in_flash[p0:p1] = False
        for t in op.tensors:
            pending = self.prefetching.get(t)
            if pending is not None and pending.deadline_op == op.index:
                # Its op has run (a fault covered what was missing): a prefetch still
                # queued would only fetch pages again later.
                if pending.cursor < pending.p1:
                    pending.cursor = pending.p1
                    self.cancelled_prefetches += 1
                del self.prefetching[t]
        for m in self.table.released_at_end(op.index):
            if m.action == Action.WRITEBACK:
                self.dma.submit(DmaRequest(WRITEBACK, m.p0, m.p1, op.index,
                                           wl.tensors[m.tensor].name, tensor=m.tensor,
                                           generation=int(self.generation[m.tensor])))
            elif m.action == Action.DROP:
                self._drop(m.tensor, m.p0, m.p1, now)
        self.dma.kick()

    def _drop(self, tid: int, p0: int, p1: int, now: int) -> None:
        """Free pages from HBM. A non-persistent tensor past its last use is dead: flash
        copies are trimmed. Live dirty data must never be dropped (it would be lost)."""
        res = self.res
        dead = (not self.persistent[tid]) and self.use_ops[tid] and \
            self.use_ops[tid][-1] <= self._current_op
        if dead:
            res.live[p0:p1] = False
            if res.in_flash[p0:p1].any():
                self.flash.transport(Transfer(TOp.TRIM, p0 * res.page_size,
                                              (p1 - p0) * res.page_size), now)
                res.in_flash[p0:p1] = False
                self.trims += 1
        else:
            dirty = res.in_hbm[p0:p1] & ~res.in_flash[p0:p1] & res.live[p0:p1]
            if dirty.any():
                raise AssertionError(f"{self.table.policy}: drop of live dirty pages of "
                                     f"{self.workload.tensors[tid].name}")
        ready = res.ready_time(p0, p1) if res.in_hbm[p0:p1].any() else 0
        res.release(slice(p0, p1), now, until=ready if ready > now else None)

    # -- eviction ------------------------------------------------------------------------
    def _make_room(self, need: int, op_index: int) -> Generator[simpy.Event, Any, None]:
        res = self.res
        while res.free_pages(int(self.env.now)) < need:
            now = int(self.env.now)
            self._evict(need - res.free_pages(now), now, op_index)
            if res.free_pages(now) >= need:
                break
            t = res.next_free_time()
            if t is None:
                raise TmhwError(f"policy.hbm_ratio: cannot free {need} pages for op "
                                f"{self.workload.ops[op_index].name}; HBM holds only the "
                                f"pages that op needs")
            yield self.env.timeout(max(0, t - now))
        self.dma.kick()

    def _evict(self, need: int, now: int, protect_op: int) -> int:
        """Free at least ``need`` pages (now, or when their write-back completes),
        never from the tensors of ``protect_op``. Reactive policies evict the least
        recently used tensor first; static ones, the tensor used furthest in future."""
        res, wl = self.res, self.workload
        # Pages already on their way out (write-backs in flight) count toward the need:
        # evicting more would only thrash.
        need -= res.freeing_pages
        if need <= 0:
            return 0
        # Evict a batch at least the DMA's window deep, as a pager's watermark does, so
        # a stream of faults does not call back once per chunk.
        need = max(need, self.dma.chunk_pages * len(self.dma.slots))
        held_count = res.held_by_owner.copy()
        held_count[list(wl.ops[protect_op].tensors)] = 0
        held_t = np.flatnonzero(held_count)
        if len(held_t) == 0:
            return 0
        if self.table.reactive:
            order = held_t[np.argsort(self.last_use[held_t], kind="stable")]
        else:
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
                self.dma.writeback_now(a, b, now, wl.tensors[t].name)
            else:
                ready = res.ready_time(a, b)
                res.release(slice(a, b), now, until=ready if ready > now else None)
            freed += len(take)
        return freed

    def _next_use(self, t: int, after: int) -> int:
        uses = self.use_ops[t]
        k = bisect.bisect_right(uses, after)
        if k < len(uses):
            return uses[k]
        return len(self.workload.ops) + (uses[0] if uses else 0)


# -- the report of a finished run -----------------------------------------------------

def build_report(system: System) -> dict[str, Any]:
    """Every figure of the run, nested like the config; ``tmhw.report.rollup`` then adds
    energy, power, throughput per watt, cost and endurance from these figures alone."""
    cfg = system.cfg
    wl = system.workload
    end = int(system.env.now)
    iters = len(system.records)
    dma_rep = system.dma.report()
    fetch = dma_rep["fetch_bytes"]
    wb = dma_rep["writeback_bytes"]
    samples = wl.batch * iters
    hbm_bytes = system.capacity_pages * wl.page_size
    tiered = not system.policy.whole_footprint
    rep: dict[str, Any] = {
        "version": VERSION,
        "workload": {
            "model": wl.name, "batch": wl.batch, "seq": wl.seq, "params": wl.params,
            "ops": len(wl.ops), "tensors": len(wl.tensors), "pages": wl.npages,
            "page_size": wl.page_size, "footprint_bytes": system.footprint_bytes,
            "tensor_bytes": wl.npages * wl.page_size, "macs": wl.total_macs(),
        },
        "policy": {
            "name": system.policy.name, "hbm_ratio": cfg.policy.hbm_ratio,
            "hbm_capacity_bytes": hbm_bytes,
            # what the flash tier holds: every page of the iteration, when tiered
            "flash_tier_bytes": wl.npages * wl.page_size if tiered else 0,
            "table_rows": system.first_table_rows, "table_bytes": system.first_table_bytes,
            "table_bytes_by_action": system.table.bytes_by_action(wl.page_size),
            "notes": dict(system.table.notes),
        },
        "iterations": iters,
        "samples": samples,
        "sim_time_ps": end,
        "iteration_time_ps": end // iters if iters else 0,
        "samples_per_s": samples / (end / S) if end else 0.0,
        # Time the NPU waited for operands to reach HBM from flash (the memory-tier stall);
        # time inside ops lost to HBM bandwidth is npu_hbm_stall_ps, part of compute_ps.
        "stall_ps": sum(r.stall_ps for r in system.records) // max(1, iters),
        "compute_ps": sum(r.compute_ps for r in system.records) // max(1, iters),
        "npu_hbm_stall_ps": sum(r.npu_hbm_stall_ps for r in system.records) // max(1, iters),
        "per_iteration": [
            {"index": r.index, "time_ps": r.time_ps, "stall_ps": r.stall_ps,
             "compute_ps": r.compute_ps, "npu_hbm_stall_ps": r.npu_hbm_stall_ps,
             "faults": r.faults,
             "flash_to_hbm_bytes": r.fetch_bytes, "hbm_to_flash_bytes": r.writeback_bytes,
             "emergency_evictions": r.emergency_evictions}
            for r in system.records],
        "traffic_bytes": {
            "flash_to_hbm": fetch, "hbm_to_flash": wb, "inter_tier": fetch + wb,
            "npu_hbm_read": system.npu_read, "npu_hbm_write": system.npu_write,
        },
        "faults": system.faults,
        "late_prefetches": system.late_prefetches,
        "cancelled_prefetches": system.cancelled_prefetches,
        "streamed_bytes": system.streamed_bytes,
        "emergency_evictions": system.emergency,
        "hbm_peak_occupancy_bytes": int(system.res.level.peak),
        "hbm_mean_occupancy_bytes": system.res.level.mean(end),
        "flash_writes_bytes": int(system.flash.bytes_written),
        "system": system.root.report(),
        "config": tomlio.to_dict(cfg),
    }
    return rollup(rep)
