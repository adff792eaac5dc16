"""Builds the machine from a SystemConfig, runs training iterations, returns a report.

Wiring only: the workload, the HBM capacity the policy gets, the components (HBM, flash,
NPU, and the executor with its pager, the DMA engine and its metrics, see
``tmhw.run``), the policy's plan, and the report. The system, not the executor,
finalizes the component tree: at the end of the warm-up (for the steady state's
energy) and at the end of the run. The report's headline figures are
the steady state: the mean over the iterations after ``run.warmup_iterations``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np

from dram import DramTarget
from flash import FlashTarget
from npu import NPU
from tmhw.config import SystemConfig
from tmhw.lower_bounds import BoundsInput, iteration_bounds, solve_ahead, start_bounds
from tmhw.placement.base import (
    PlanContext,
    Policy,
    check_fits,
    make_policy,
    policy_class,
    streamable,
)
from tmhw.placement.bounds import ratios
from tmhw.placement.table import PlacementTable
from tmhw.report import VERSION, rollup, shape
from tmhw.run.loop import Executor, op_task
from tmhw.sim import tomlio
from tmhw.sim.component import Component
from tmhw.sim.env import Environment
from tmhw.sim.errors import DoesNotFit, TmhwError
from tmhw.sim.trace import NULL_TRACER, Tracer
from tmhw.workload.builder import Transforms
from tmhw.workload.graph import Workload
from tmhw.workload.sources import build as build_workload

#: Deeper than this, a model's pages are counted before it is built; shallower, building
#: it (tens of milliseconds) is the cheap check.
PRECHECK_LAYERS = 100


def configured_workload(cfg: SystemConfig) -> Workload:
    """The training iteration ``cfg.workload`` names, built by its source
    (``tmhw.workload.sources``: the model zoo, a SCALE-Sim topology). A deep
    model whose pages cannot fit the flash tier is refused before it is built
    (``check_flash_tier``): building 100,000 layers alone takes a minute."""
    wc = cfg.workload
    layers = wc.layers
    if layers is not None and layers > PRECHECK_LAYERS:
        # Every layer of a zoo model is the same tensors, so its pages grow by one
        # layer's worth per layer: two tiny builds give the count of a deep one exactly.
        one, two = (configured_workload(dataclasses.replace(
            cfg, workload=dataclasses.replace(wc, layers=n))).npages for n in (1, 2))
        check_flash_tier(cfg, (one + (layers - 1) * (two - one)) * wc.page_size)
    return build_workload(wc.model, batch=wc.batch, seq=wc.seq, layers=layers,
                          page_size=wc.page_size, optimizer=wc.optimizer,
                          transforms=Transforms(wc.precision, wc.recompute,
                                                wc.recompute_every, wc.micro_batches,
                                                wc.onnx_unknown, wc.recompute_ops))


def transformer_layers(wl: Workload) -> int:
    """The transformer layers of ``wl`` (ops of layers named ``l<i>``), 0 for none."""
    heads = {op.layer.split(".", 1)[0] for op in wl.ops}
    return sum(1 for h in heads if re.fullmatch(r"l\d+", h))


def rebuilt_workload(cfg: SystemConfig, wl: Workload, policy: Policy,
                     candidates: list[tuple[str, int]], cap_pages: int) -> Workload:
    """The iteration of the first of ``candidates`` (``(workload.recompute,
    workload.recompute_every)``, ``Policy.recompute_candidates``) that fits: for a
    policy that keeps everything in HBM (``Policy.recompute_fits_hbm``), whose peak live
    bytes and every op's operands fit ``cap_pages``, ``DoesNotFit`` naming the least
    peak reached when none does; for one that offloads, the first."""
    def built(mode: str, every: int) -> Workload:
        if mode == cfg.workload.recompute == "none":
            return wl
        return configured_workload(dataclasses.replace(cfg, workload=dataclasses.replace(
            cfg.workload, recompute=mode, recompute_every=every)))

    if not policy.recompute_fits_hbm:
        return built(*candidates[0])
    cap = cap_pages * wl.page_size
    # weights, their gradients, master copies and optimizer state do not change with
    # recomputation: where they alone exceed HBM, nothing recomputed fits
    state = sum(t.nbytes for t in wl.tensors if t.kind.persistent)
    if state > cap:
        raise DoesNotFit(f"policy.hbm_ratio: {policy.name}: the model state alone "
                         f"({state / 2**20:.1f} MiB: weights, master copies and "
                         f"optimizer state) exceeds HBM's {cap / 2**20:.1f} MiB, and "
                         "recomputation does not shrink it")
    least: tuple[int, str] | None = None
    for mode, every in candidates:
        cand = built(mode, every)
        peak = cand.peak_live_bytes()
        what = mode if mode != "every-k" else f"every-k (k = {every})"
        if least is None or peak < least[0]:
            least = (peak, what)
        if peak <= cap:
            try:
                check_fits(cand, cap_pages, policy.name)
            except DoesNotFit:
                continue
            return cand
    assert least is not None
    raise DoesNotFit(f"policy.hbm_ratio: {policy.name}: no recomputation fits HBM's "
                     f"{cap / 2**20:.1f} MiB; the least peak, with {least[1]}, is "
                     f"{least[0] / 2**20:.1f} MiB")


def streamed_ops(wl: Workload, policy: Policy, cap_pages: int) -> np.ndarray:
    """Per op, whether ``policy`` runs it streamed through HBM (``streamable``)."""
    if policy.streams and policy.splits:
        return streamable(wl, cap_pages)
    return np.zeros(len(wl.ops), dtype=bool)


def plan_context(cfg: SystemConfig, wl: Workload, cap_pages: int, dur: np.ndarray,
                 streamed: np.ndarray) -> PlanContext:
    """What a policy plans ``wl`` from: the stall-free profile of op times ``dur`` (ps)
    and the sustained flash rates each way, capped by the link."""
    ends = np.cumsum(dur)
    fetch_bw = min(cfg.flash.read_bandwidth_bound(), cfg.link_bytes_per_s)
    wb_bw = min(cfg.flash.write_bandwidth_bound(), cfg.link_bytes_per_s)
    fc = cfg.flash
    dram = fc.devices * (fc.write_buffer_bytes + fc.read_cache_bytes) // wl.page_size
    return PlanContext(wl, cap_pages, ends - dur, ends, fetch_bw, wb_bw,
                       cfg.policy.lookahead_ops, cfg.run.seed, streamed, dram)


def chosen_workload(cfg: SystemConfig, wl: Workload, policy: Policy,
                    cap_pages: int) -> Workload:
    """The iteration with the forward ops ``policy`` chooses to recompute
    (``Policy.choose_recompute``) from a stall-free profile of ``wl`` on the NPU model,
    or ``wl`` itself when it chooses none."""
    env = Environment()
    root = Component(env, "profile")
    npu = NPU(env, "npu", root, cfg.npu,
              DramTarget(env, "hbm", root, cfg.hbm, model=cfg.run.hbm_model))
    dur = np.array([npu.compute_ps(op_task(cfg, wl, op, cap_pages)) for op in wl.ops],
                   dtype=np.int64)
    ops = policy.choose_recompute(plan_context(cfg, wl, cap_pages, dur,
                                               streamed_ops(wl, policy, cap_pages)))
    if not ops:
        return wl
    return configured_workload(dataclasses.replace(cfg, workload=dataclasses.replace(
        cfg.workload, recompute="ops", recompute_ops=tuple(ops))))


def check_flash_tier(cfg: SystemConfig, nbytes: int) -> None:
    """Refuse a workload of ``nbytes`` (its pages) that the flash tier cannot hold: every
    page has a home on flash, whatever the policy keeps in HBM."""
    if nbytes > cfg.flash.total_capacity:
        raise TmhwError(f"flash: the workload's {nbytes / 2**30:.1f} GiB do not fit the "
                        f"flash tier's {cfg.flash.total_capacity / 2**30:.1f} GiB logical "
                        "space (workload.layers, workload.batch or workload.seq smaller, or "
                        "flash.devices more)")


class System:
    """One machine running one workload under one placement policy."""

    def __init__(self, cfg: SystemConfig, *, tracer: Tracer | None = None,
                 progress: Any = None, workload: Workload | None = None,
                 record_dma_order: bool = False) -> None:
        """``workload`` replaces the one ``cfg.workload`` names (a SCALE-Sim import, a
        hand-built graph in a test); its page size must be ``cfg.workload.page_size``."""
        self.cfg = cfg
        wc = cfg.workload
        self._zoo_workload = workload is None
        if workload is None:
            workload = configured_workload(cfg)
        elif workload.page_size != wc.page_size:
            raise TmhwError(f"workload.page_size: the workload is laid out in "
                            f"{workload.page_size} B pages, the config says {wc.page_size}")
        self.workload = wl = workload
        section = policy_class(cfg.policy.name).section
        self.policy = make_policy(cfg.policy.name, cfg.policy.params(section))
        ps = wl.page_size
        self.footprint_bytes = wl.peak_live_bytes()
        footprint_pages = -(-self.footprint_bytes // ps)
        if self.policy.whole_footprint:
            cap_pages = footprint_pages
        else:
            cap_pages = max(1, int(math.floor(cfg.policy.hbm_ratio * footprint_pages)))
        self.capacity_pages = cap_pages
        candidates = self.policy.recompute_candidates(transformer_layers(wl))
        if (candidates or self.policy.chooses_recompute) and not self._zoo_workload:
            raise TmhwError(f"policy.name: {self.policy.name} rebuilds the workload "
                            "from the config; it cannot run a workload given to System")
        if candidates:
            self.workload = wl = rebuilt_workload(cfg, wl, self.policy, candidates,
                                                  cap_pages)
        if self.policy.chooses_recompute:
            self.workload = wl = chosen_workload(cfg, wl, self.policy, cap_pages)
        self.streamed = streamed_ops(wl, self.policy, cap_pages)
        check_fits(wl, cap_pages, self.policy.name, self.streamed)
        check_flash_tier(cfg, wl.npages * ps)

        self.env = Environment()
        self.tracer = tracer or NULL_TRACER
        self.root = Component(self.env, "system", tracer=self.tracer)
        self.hbm = DramTarget(self.env, "hbm", self.root, cfg.hbm, model=cfg.run.hbm_model)
        # The workload's pages occupy the device's first logical bytes; preconditioning
        # at least that far maps them, so weights and optimizer state that start on
        # flash are there at time 0 (untimed), as in a device in steady state.
        precondition = max(cfg.run.precondition, wl.npages * ps / cfg.flash.total_capacity)
        self.flash = FlashTarget(self.env, "flash", self.root, cfg.flash,
                                 model=cfg.run.flash_model, precondition=precondition,
                                 seed=cfg.run.seed, record=self.tracer.enabled)
        self.npu = NPU(self.env, "npu", self.root, cfg.npu, self.hbm)
        self.executor = Executor(self.env, "executor", self.root, cfg, wl, self.policy,
                                 cap_pages, self.npu, self.hbm, self.flash,
                                 read_energy=self._read_energy, progress=progress,
                                 record_dma_order=record_dma_order, streamed=self.streamed)
        self.pager = self.executor.pager
        self.dma = self.executor.dma
        self.res = self.executor.res

        # Profile: the stall-free schedule of one iteration, from the NPU model.
        dur = self.executor.op_ps
        ends = np.cumsum(dur)
        self.profile_start = ends - dur
        self.profile_end = ends
        self.ctx = plan_context(cfg, wl, cap_pages, dur, self.streamed)
        # the bounds' LPs and flash batch beside the plan (``solve_ahead``)
        solve_ahead(self.bounds_input())
        self.table: PlacementTable = self.policy.plan(self.ctx)
        self.first_table_rows = self.table.rows
        self.first_table_bytes = self.table.size_bytes()
        self.executor.bind(self.table, self.ctx)

    def _read_energy(self, now: int) -> dict[str, float]:
        """Read the energy meters at ``now`` (the end of the warm-up, the end of the last
        iteration's last op); returns each component's energy so far (pJ). Every meter
        converts its cumulative counts, so finalizing again later is exact."""
        self.root.finalize(now)
        return {name: c.total_energy_pj() for name, c in self.root.children.items()}

    def bounds(self) -> dict[str, Any]:
        """The lower bounds of this workload at this capacity (``placement.bounds``):
        the fewest inter-tier bytes of a steady-state iteration, and the shortest
        iteration (``tmhw.lower_bounds``). They do not depend on the policy, so a process
        computes each part once per what it depends on (``tmhw.lower_bounds.MEMO``): a
        sweep's policies share them, and its SSD counts share the NPU's own times."""
        return iteration_bounds(self.bounds_input())

    def bounds_input(self) -> BoundsInput:
        """What the bounds depend on, as a record (``tmhw.lower_bounds.BoundsInput``)."""
        return BoundsInput(
            cfg=self.cfg, workload=self.workload, ctx=self.ctx,
            capacity_pages=self.capacity_pages,
            whole_footprint=self.policy.whole_footprint,
            footprint_bytes=self.footprint_bytes, op_ps=self.executor.op_ps,
            streamed=self.streamed, tasks_at=self.executor.tasks_at,
            memo_key=self.memo_key)

    def memo_key(self, *parts: str) -> str | None:
        """A key naming the config sections ``parts`` (``"capacity"`` for the HBM
        capacity in pages) and the workload, for results that depend on those alone;
        None when the workload was handed in rather than built from the config."""
        if not self._zoo_workload:
            return None
        cfg = self.cfg
        named = {"capacity": self.capacity_pages, "whole": self.policy.whole_footprint,
                 "seed": cfg.run.seed, "hbm_model": cfg.run.hbm_model}
        # a rebuilt workload (``Policy.recompute_candidates``) is not the one the config
        # names
        built = (self.workload.meta.get("recompute", "none"),
                 self.workload.meta.get("recompute_ops", ""))
        return repr([cfg.workload, built, *(named[p] if p in named else getattr(cfg, p)
                                            for p in parts)])

    def run(self) -> dict[str, Any]:
        """Elaborate, simulate every iteration, finalize; return the report dict.

        The bounds come first: they do not depend on the run, and their solvers'
        memory (the traffic LP and the flash drain's batch) is then given back before
        the run's per-page state fills in, instead of piling on top of it; the NPU-alone
        passes and the NAND LPs run on beside the run, on threads of their own
        (``tmhw.lower_bounds.start_bounds``)."""
        bounds = start_bounds(self.bounds_input())
        self.root.elaborate()
        self.root.start()
        assert self.executor.done is not None
        self.env.run(until=self.executor.done)
        end = int(self.env.now)
        self.root.finalize(end)
        self.res.check()
        self.table = self.executor.table or self.table
        if self.tracer.enabled:
            self.trace_resources()
        return build_report(self, bounds())

    def trace_resources(self) -> None:
        """Add to the trace the bookings of the resources that serve its lanes (kept
        while tracing): one lane per flash channel, serving ``system.flash``, and the
        DMA link's two directions, serving fetches and write-backs; so a lane's
        utilisation is its resources' (``Tracer.serve``), not the time a request was
        outstanding on it."""
        tr = self.tracer
        per_device = self.cfg.flash.channels
        lanes = []
        for c, spans in enumerate(self.flash.channels.spans or []):
            lane = (f"{self.flash.path}.ch{c}" if self.cfg.flash.devices == 1 else
                    f"{self.flash.path}.dev{c // per_device}.ch{c % per_device}")
            lanes.append(lane)
            for s, e in spans:
                tr.span(lane, int(s), int(e), "busy")
        if lanes:
            tr.serve(self.flash.path, lanes)
        # the link in also carries the reads in place (FlatFlash's), drawn on a lane of
        # their own: the fetch lane's utilisation, the link's, includes them
        inplace = [f"{self.dma.path}.inplace"] if self.dma.inplace_reads.value else []
        for kind, link, shared in (("fetch", self.dma.link_in, inplace),
                                   ("writeback", self.dma.link_out, [])):
            for s, e, _label in link.spans:
                tr.span(link.name, s, e, "link")
            tr.serve(f"{self.dma.path}.{kind}", [link.name], shared)


def compile_kernels() -> None:
    """Every component's compiled kernels (``tmhw.sim.jit``) into numba's on-disk cache:
    a process that finds them there loads them in a fraction of a second instead of
    compiling them for several. ``make`` runs this before the tests and the default
    study."""
    from dram.controller import compile_kernels as dram_detailed_kernels
    from dram.fast import compile_kernels as dram_kernels
    from flash import compile_kernels as flash_kernels
    from tmhw.residency import compile_kernels as residency_kernels
    from tmhw.sim.pagebits import compile_kernels as pagebits_kernels

    flash_kernels()
    dram_kernels()
    dram_detailed_kernels()
    residency_kernels()
    pagebits_kernels()


def build_report(system: System, bounds: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every figure of the run, nested like the config; ``tmhw.report.rollup`` then adds
    energy, power, throughput per watt, cost and endurance from these figures alone.
    Headline figures are the steady state (the iterations after the warm-up).
    ``bounds``: ``system.bounds()``, if already computed."""
    cfg, wl, ex = system.cfg, system.workload, system.executor
    tiered = not system.policy.whole_footprint
    rep: dict[str, Any] = {
        "version": VERSION,
        "workload": {
            "model": wl.name, "batch": wl.batch, "seq": wl.seq, "params": wl.params,
            "ops": len(wl.ops), "tensors": len(wl.tensors), "pages": wl.npages,
            "page_size": wl.page_size, "footprint_bytes": system.footprint_bytes,
            "tensor_bytes": wl.npages * wl.page_size, "macs": wl.total_macs(),
            "recompute": wl.meta.get("recompute", "none"),
        },
        "policy": {
            "name": system.policy.name, "hbm_ratio": cfg.policy.hbm_ratio,
            "hbm_capacity_bytes": system.capacity_pages * wl.page_size,
            # what the flash tier holds: every page of the iteration, when tiered
            "flash_tier_bytes": wl.npages * wl.page_size if tiered else 0,
            "table_rows": system.first_table_rows, "table_bytes": system.first_table_bytes,
            "table_bytes_by_action": system.table.bytes_by_action(wl.page_size),
            "notes": dict(system.table.notes),
        },
        **ex.figures(),
        "system": system.root.report(),
        "config": tomlio.to_dict(cfg),
    }
    warnings = []
    if rep["converged"] is False:
        warnings.append(f"{system.policy.name}: the iterations did not repeat within "
                        f"run.steady_tolerance = {cfg.run.steady_tolerance:g} by "
                        f"run.max_iterations = {cfg.run.max_iterations}; the figures are the "
                        f"mean of the last {rep['iterations'] - rep['warmup_iterations']}, "
                        "not a steady state")
    if not system.table.reactive and rep["emergency_evictions"]:
        warnings.append(f"{system.policy.name}: the executor made "
                        f"{rep['emergency_evictions']} emergency evictions per steady-state "
                        f"iteration: the plan does not fit HBM as it ran")
    overflow = system.table.notes.get("plan_overflow_pages", 0)
    if overflow:
        warnings.append(f"{system.policy.name}: the plan exceeds HBM by {overflow:.0f} "
                        f"pages at its peak (policy.notes.plan_overflow_pages)")
    rep["warnings"] = warnings
    b = dict(bounds) if bounds is not None else system.bounds()
    b.update(ratios(rep["traffic_bytes"]["inter_tier"], rep["iteration_time_ps"],
                    b["traffic_bytes"], b["iteration_time_ps"]))
    rep["bounds"] = b
    return shape(rollup(rep))
