"""The NPU component: cores of systolic arrays fed from HBM through a double-buffered
scratchpad.

An op arrives as a ``ComputeTask``: GEMMs (each ``count`` times), plus element-wise vector
work. ``NPU.execute(task)`` is a process body (``yield from npu.execute(task)``):

1. Tiling. Each GEMM goes to the cores either as whole copies (``count`` split across the
   cores) or split along M or N (``dataflow.split_gemm``: never along K, which would need a
   cross-core sum), whichever finishes first. Inside a core the folds are dealt out to its
   arrays (``dataflow.multi_array_cycles``). The cores work in lockstep on an op; the op's
   matrix time is the slowest core's.
2. Vector work (activations, norms, optimizer updates) runs on each core's vector unit at
   ``vector_elems_per_cycle``. When an op has GEMMs its vector work is fused: it processes
   drained output tiles while the arrays compute, so the op takes max(matrix, vector).
3. Memory. The op's HBM traffic (``dataflow.gemm_traffic`` per core part, with that core's
   scratchpad) is cut into chunks of one scratchpad half (at most ``max_transfers_per_op``
   chunks). Chunk i+1 is fetched while chunk i computes (double buffering: its buffer is
   free once chunk i-1 has computed); chunk i computes when its operands have arrived and
   chunk i-1 has finished; its outputs are written back when it finishes. The busy-until
   arithmetic runs over the chunks with ``hbm.transport`` (no events); the process then
   yields once, to the op's end. Stall = end - start - stall-free compute time.

Operands are read from ``[hbm_address, hbm_address + reads)`` and outputs written after
them; a system that places tensors elsewhere sets ``hbm_address`` per op. Booking HBM
reservations ahead of simulated time is the loosely timed approximation of docs/ARCHITECTURE.md: a
transfer another initiator issues meanwhile queues behind them.

Energy: per MAC, per scratchpad byte (array-side operand reads and output writes, plus the
bytes filled from and drained to HBM), per vector element operation, and static power of
every core for the whole run. Defaults and sources: ``npu.config``.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

import npu.dataflow as df
from npu.config import NpuConfig
from tmhw.sim import (
    ChunkedOps,
    Component,
    Counter,
    EnergyMeter,
    EnergyTable,
    MemoryTarget,
    Op,
    Timeline,
    TmhwError,
    Transfer,
)
from tmhw.sim.units import cycles_to_ps


@dataclass(frozen=True, slots=True)
class Gemm:
    """``count`` independent GEMMs C[M, N] = A[M, K] @ B[K, N] (e.g. attention heads)."""

    m: int
    n: int
    k: int
    count: int = 1

    def __post_init__(self) -> None:
        for name in ("m", "n", "k", "count"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise TmhwError(f"Gemm.{name}: must be a positive integer, got {v!r}")

    @property
    def macs(self) -> int:
        return self.m * self.n * self.k * self.count


#: the MAC precisions a task may name
PRECISIONS = ("fp8", "bf16", "fp16", "fp32")


def array_passes(n: int, precision: str, cfg: NpuConfig) -> int:
    """``n`` bf16 MACs' (or cycles') worth of the arrays at ``precision``: fp8 runs
    ``cfg.fp8_speedup`` times as many per cycle (rounded up), fp32 takes
    ``cfg.fp32_passes`` bf16 passes."""
    if precision == "fp8":
        return -(-n // cfg.fp8_speedup)
    return n * cfg.fp32_passes if precision == "fp32" else n


@dataclass(frozen=True, slots=True)
class ComputeTask:
    """One op for the NPU. ``vector_elems * vector_ops_per_elem`` element operations run on
    the vector units. HBM traffic is computed from the GEMMs (and, for an op without GEMMs,
    ``vector_elems * dtype_bytes`` read and written) unless ``read_bytes``/``write_bytes``
    give it explicitly."""

    name: str
    gemms: tuple[Gemm, ...] = ()
    vector_elems: int = 0
    vector_ops_per_elem: float = 1.0
    dtype_bytes: int = 2
    hbm_address: int = 0
    read_bytes: int | None = None
    write_bytes: int | None = None
    #: the MACs' precision (``PRECISIONS``): "fp8" runs the GEMMs at ``fp8_speedup`` and
    #: ``fp8_mac_pj``, "fp32" in ``fp32_passes`` bf16 passes (``npu.config``)
    precision: str = "bf16"

    def __post_init__(self) -> None:
        if self.vector_elems < 0 or self.vector_ops_per_elem < 0:
            raise TmhwError(f"ComputeTask {self.name}: negative vector work")
        if self.dtype_bytes < 1 or self.hbm_address < 0:
            raise TmhwError(f"ComputeTask {self.name}: dtype_bytes >= 1, hbm_address >= 0")
        if self.precision not in PRECISIONS:
            raise TmhwError(f"ComputeTask {self.name}: precision {self.precision!r}, one "
                            f"of {', '.join(PRECISIONS)}")
        for v in (self.read_bytes, self.write_bytes):
            if v is not None and v < 0:
                raise TmhwError(f"ComputeTask {self.name}: negative read/write bytes")

    @property
    def macs(self) -> int:
        return sum(g.macs for g in self.gemms)


@dataclass(frozen=True, slots=True)
class ComputePlan:
    """Stall-free figures of one task on one NPU config (pure; see ``NPU.plan``)."""

    matrix_cycles: int
    vector_cycles: int
    compute_ps: int
    macs: int
    vector_ops: float
    hbm_read_bytes: int
    hbm_write_bytes: int
    spad_bytes: int

    @property
    def cycles(self) -> int:
        return max(self.matrix_cycles, self.vector_cycles)


@dataclass(frozen=True, slots=True)
class ComputeResult:
    """What one ``execute`` did. Times in ps."""

    name: str
    start: int
    end: int
    compute_ps: int
    stall_ps: int
    hbm_read_bytes: int
    hbm_write_bytes: int
    macs: int
    vector_ops: float
    cycles: int


def _core_parts(g: Gemm, cfg: NpuConfig) -> list[tuple[int, int, int, int]]:
    """(m, n, k, copies) run by each core for ``g``: the faster of dealing the copies out
    to the cores and splitting every copy along M or N (``dataflow.split_gemm``, which
    weighs the arrays of a core). Both candidates only improve with more cores."""
    by_copies = [(g.m, g.n, g.k, c) for c in df.split_even(g.count, cfg.cores)]
    if cfg.cores == 1:
        return by_copies
    shapes = df.split_gemm(g.m, g.n, g.k, cfg.cores, cfg.array_rows, cfg.array_cols,
                           cfg.dataflow, cfg.convention, arrays=cfg.arrays_per_core,
                           copies=g.count)
    by_shape = [(m, n, k, g.count) for m, n, k in shapes]
    return min((by_copies, by_shape),
               key=lambda ps: (max(_part_cycles(p, cfg) for p in ps), len(ps)))


def _part_cycles(p: tuple[int, int, int, int], cfg: NpuConfig) -> int:
    m, n, k, copies = p
    rf, cf = df.fold_counts(m, n, k, cfg.array_rows, cfg.array_cols, cfg.dataflow)
    _, _, t = df.spatio_temporal(m, n, k, cfg.dataflow)
    per_fold = df.cycles_per_fold(cfg.array_rows, cfg.array_cols, t, cfg.dataflow,
                                  cfg.convention)
    folds = -(-rf * cf * copies // cfg.arrays_per_core)
    return folds * per_fold - (1 if cfg.convention == "scalesim" else 0)


def plan_task(task: ComputeTask, cfg: NpuConfig) -> ComputePlan:
    """Stall-free cycles, time, MACs and HBM traffic of ``task`` on ``cfg`` (pure)."""
    matrix = reads = writes = spad = macs = 0
    for g in task.gemms:
        core_cycles = [0] * cfg.cores
        for i, p in enumerate(_core_parts(g, cfg)):
            core_cycles[i] += _part_cycles(p, cfg)
            m, n, k, copies = p
            macs += m * n * k * copies
            tr = df.gemm_traffic(m, n, k, cfg.array_rows, cfg.array_cols, cfg.dataflow,
                                 dtype_bytes=task.dtype_bytes, acc_bytes=cfg.acc_bytes,
                                 ifmap_buf=cfg.ifmap_spad_bytes,
                                 filter_buf=cfg.filter_spad_bytes,
                                 ofmap_buf=cfg.ofmap_spad_bytes)
            reads += tr.read_bytes * copies
            writes += tr.write_bytes * copies
            sram = tr.sram_ifmap_reads + tr.sram_filter_reads + tr.sram_ofmap_writes
            spad += (sram * task.dtype_bytes + tr.read_bytes + tr.write_bytes) * copies
        # GEMMs of one op run one after another, each spread over all cores
        matrix += array_passes(max(core_cycles), task.precision, cfg)
    vector_ops = task.vector_elems * task.vector_ops_per_elem
    lanes = cfg.vector_elems_per_cycle * cfg.cores
    vector = int(-(-vector_ops // lanes)) if vector_ops > 0 else 0
    if not task.gemms:
        reads = writes = task.vector_elems * task.dtype_bytes
        spad += reads + writes
    if task.read_bytes is not None:
        reads = task.read_bytes
    if task.write_bytes is not None:
        writes = task.write_bytes
    cycles = max(matrix, vector)
    return ComputePlan(matrix_cycles=matrix, vector_cycles=vector,
                       compute_ps=cycles_to_ps(cycles, cfg.freq_mhz) if cycles else 0,
                       macs=macs, vector_ops=vector_ops, hbm_read_bytes=reads,
                       hbm_write_bytes=writes, spad_bytes=spad)


class NPU(Component):
    """Cores of systolic arrays that pull operands from ``hbm`` (any ``MemoryTarget``)."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 cfg: NpuConfig, hbm: MemoryTarget) -> None:
        super().__init__(env, name, parent)
        self.cfg = cfg
        self.hbm = hbm
        self.energy = EnergyMeter(EnergyTable(
            action_pj={"mac": cfg.mac_pj, "mac_fp8": cfg.fp8_mac_pj,
                       "spad_byte": cfg.spad_byte_pj,
                       "vector_op": cfg.vector_op_pj},
            idle_mw=cfg.static_mw_per_core * cfg.cores))
        #: the arrays as one lockstep resource: busy from an op's start to its end
        self.timeline = Timeline(f"{name}.arrays")
        self.ops = Counter()
        self.macs = Counter()
        #: array MAC slots the MACs took (fewer at fp8, more at fp32): utilization's
        self.mac_slots = Counter()
        self.compute_ps_total = Counter()
        self.stall_ps_total = Counter()
        self.hbm_read_bytes = Counter()
        self.hbm_write_bytes = Counter()
        self._plans: dict[ComputeTask, ComputePlan] = {}
        #: the HBM books an op's chunks in one call (``ChunkedOps``)
        self._serve_op = hbm.serve_op if isinstance(hbm, ChunkedOps) else None
        #: per task: its plan, its chunks' read, write and compute sizes (``execute``),
        #: its MAC slots, and the chunks as arrays
        self._chunks: dict[ComputeTask, tuple[ComputePlan, tuple[int, ...], tuple[int, ...],
                                              tuple[int, ...], int,
                                              tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}

    def _elaborate(self) -> None:
        if not isinstance(self.hbm, MemoryTarget):
            raise self.fail(f"hbm port bound to {self.hbm!r}, which is not a MemoryTarget")

    # -- pure timing -------------------------------------------------------------------
    def plan(self, task: ComputeTask) -> ComputePlan:
        """Stall-free figures of ``task`` (memoised: a training iteration repeats ops)."""
        p = self._plans.get(task)
        if p is None:
            p = plan_task(task, self.cfg)
            self._plans[task] = p
        return p

    def compute_ps(self, task: ComputeTask) -> int:
        """Stall-free time of ``task`` in ps (HBM never late)."""
        return self.plan(task).compute_ps

    # -- process body ------------------------------------------------------------------
    def execute(self, task: ComputeTask) -> Generator[simpy.Event, Any, ComputeResult]:
        """Run ``task``: overlap chunked operand fetches with compute, stall on HBM; yields
        one timeout to the op's end and returns a ``ComputeResult``."""
        result = self.book(task, int(self.now))
        yield self.env.timeout(result.end - self.now)
        return result

    def _chunked(self, task: ComputeTask) -> tuple[ComputePlan, tuple[int, ...],
                                                   tuple[int, ...], tuple[int, ...], int,
                                                   tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``task``'s plan, its chunks' read, write and compute sizes, its MAC slots and
        the chunks as arrays (memoised)."""
        cfg = self.cfg
        # one lookup of the task (hashing a task hashes all its fields)
        known = self._chunks.get(task)
        if known is None:
            p = self.plan(task)
            reads, writes = p.hbm_read_bytes, p.hbm_write_bytes
            half = cfg.cores * (cfg.ifmap_spad_bytes + cfg.filter_spad_bytes) // 2
            n = max(1, min(cfg.max_transfers_per_op, -(-reads // half)))
            r_split = df.split_even(reads, n) if reads >= n else (reads,) + (0,) * (n - 1)
            w_split = df.split_even(writes, n) if writes >= n else (0,) * (n - 1) + (writes,)
            c_split = (df.split_even(p.compute_ps, n) if p.compute_ps >= n
                       else (0,) * (n - 1) + (p.compute_ps,))
            known = (p, r_split, w_split, c_split, array_passes(p.macs, task.precision, cfg),
                     (np.array(r_split, dtype=np.int64), np.array(w_split, dtype=np.int64),
                      np.array(c_split, dtype=np.int64)))
            self._chunks[task] = known
        return known

    def prepare(self, tasks: Sequence[ComputeTask]) -> None:
        """Plan and chunk each of ``tasks`` now (memoised, as ``book`` and
        ``back_to_back`` would at their first use), so that those then book alone: the
        bounds' NPU-alone passes do this Python work on the caller's thread, and only
        the compiled booking on a thread of their own."""
        for t in tasks:
            self._chunked(t)

    def books_ops_at_once(self) -> bool:
        """Whether ``back_to_back`` books (in one compiled call of the HBM a pass,
        which lets go of Python's lock while it runs) rather than returning None."""
        hbm = self.hbm
        return (isinstance(hbm, ChunkedOps) and hbm.books_ops_at_once()
                and not self.timeline.busy_ps)

    def back_to_back(self, tasks: Sequence[ComputeTask], passes: int) -> np.ndarray | None:
        """Each op's time in each of ``passes`` passes over ``tasks``, every op starting
        as the one before ends from time 0 (``book`` of each in turn, on an NPU and an
        HBM nothing else uses), in one compiled call of the HBM (``ChunkedOps.serve_ops``):
        an array of ``passes`` rows. None (nothing booked) where the HBM books op by op.
        It counts nothing (no counters, energy or timeline): the bounds' NPU-alone passes
        (``tmhw.lower_bounds.npu_alone_ps``) want the times alone."""
        hbm = self.hbm
        if not isinstance(hbm, ChunkedOps) or self.timeline.busy_ps:
            return None
        chunks = [self._chunked(t) for t in tasks]
        first = np.zeros(len(tasks) + 1, dtype=np.int64)
        first[1:] = np.cumsum([len(k[1]) for k in chunks])
        r_all, w_all, c_all = (np.concatenate([k[5][i] for k in chunks]) if chunks
                               else np.zeros(0, dtype=np.int64) for i in range(3))
        r_addrs = np.array([t.hbm_address for t in tasks], dtype=np.int64)
        w_addrs = r_addrs + np.array([k[0].hbm_read_bytes for k in chunks], dtype=np.int64)
        out = np.zeros((passes, len(tasks)), dtype=np.int64)
        now = 0
        for k in range(passes):
            end = hbm.serve_ops(r_all, w_all, c_all, first, r_addrs, w_addrs, now, out[k])
            if end is None:
                return None
            now = end
        return out

    def book(self, task: ComputeTask, now: int) -> ComputeResult:
        """``execute`` of ``task`` from ``now`` without the wait: its chunks booked on
        the NPU's timeline and the HBM, its counters and energy added, and its result
        (its ``end`` is when ``execute`` would return). For a caller that runs ops back
        to back with nothing else on the HBM, with no event per op (the bounds'
        NPU-alone passes on the detailed HBM model; ``back_to_back`` books them in one
        call on the fast one)."""
        known = self._chunked(task)
        p, r_chunks, w_chunks, c_chunks, slots, arrays = known
        start = self.timeline.start_time(now)
        reads, writes = p.hbm_read_bytes, p.hbm_write_bytes
        n = len(r_chunks)
        hbm, tag = self.hbm, task.name
        r_addr = task.hbm_address
        w_addr = task.hbm_address + reads

        def fetch(i: int, earliest: int) -> int:
            nonlocal r_addr
            if not r_chunks[i]:
                return earliest
            t = hbm.transport(Transfer(Op.READ, r_addr, r_chunks[i], tag=tag), earliest)
            r_addr += r_chunks[i]
            return t

        fused = None
        if self._serve_op is not None:  # the loop below in one compiled call
            fused = self._serve_op(arrays[0], arrays[1], arrays[2], r_addr, w_addr, start)
        if fused is not None:
            end = fused
        else:
            fetched = fetch(0, start)
            done_prev = start  # when chunk i-1 finished computing (its buffer is free)
            end = start
            for i in range(n):
                begin = fetched if fetched > done_prev else done_prev
                done = begin + c_chunks[i]
                if i + 1 < n:
                    fetched = fetch(i + 1, done_prev)
                if w_chunks[i]:
                    wend = hbm.transport(Transfer(Op.WRITE, w_addr, w_chunks[i], tag=tag), done)
                    w_addr += w_chunks[i]
                    end = wend if wend > end else end
                done_prev = done
            end = max(end, done_prev)
        self.timeline.reserve(start, end - start, task.name)
        stall = (end - start) - p.compute_ps

        self.ops.add()
        self.macs.add(p.macs)
        self.mac_slots.add(slots)
        self.compute_ps_total.add(p.compute_ps)
        self.stall_ps_total.add(stall)
        self.hbm_read_bytes.add(reads)
        self.hbm_write_bytes.add(writes)
        assert self.energy is not None
        # an fp8 MAC costs its own energy; an fp32 MAC one bf16 MAC per pass
        if task.precision == "fp8":
            self.energy.add("mac_fp8", p.macs)
        else:
            self.energy.add("mac", slots)
        self.energy.add("spad_byte", p.spad_bytes)
        self.energy.add("vector_op", p.vector_ops)
        self.energy.add_busy(end - start)
        self.tracer.span(self.path, start, end, task.name,
                         {"stall_ps": stall, "macs": p.macs})
        return ComputeResult(name=task.name, start=start, end=end, compute_ps=p.compute_ps,
                             stall_ps=stall, hbm_read_bytes=reads, hbm_write_bytes=writes,
                             macs=p.macs, vector_ops=p.vector_ops, cycles=p.cycles)

    # -- reporting ---------------------------------------------------------------------
    def _report(self) -> dict[str, Any]:
        elapsed = self.finalized_at if self.finalized_at is not None else self.now
        peak = self.cfg.peak_macs_per_s * elapsed / 1e12
        return {
            "ops": self.ops.value,
            "macs": self.macs.value,
            "compute_ps": self.compute_ps_total.value,
            "stall_ps": self.stall_ps_total.value,
            "hbm_read_bytes": self.hbm_read_bytes.value,
            "hbm_write_bytes": self.hbm_write_bytes.value,
            "busy_ps": self.timeline.busy_ps,
            "utilization": self.mac_slots.value / peak if peak > 0 else 0.0,
        }
