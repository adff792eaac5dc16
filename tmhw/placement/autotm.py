"""AutoTM (Hildebrand et al., "AutoTM: Automatic Tensor Movement in Heterogeneous Memory
Systems using Integer Linear Programming", ASPLOS'20) as a placement table.

**What the paper built.** AutoTM is a pass of the nGraph compiler for training on DRAM
plus Intel Optane DC persistent memory (PMM), with a variant for GPU memory backed by
host DRAM. It profiles every kernel of the compute graph with each placement of its
inputs and outputs (DRAM or PMM: kernels read and write PMM in place), and measures the
moves between the two memories. Its integer linear program is formulated on the compute
graph: per tensor, a network flow through the kernels of its lifetime, with a node per
kernel and memory and edges for staying put or moving synchronously between kernels
(asynchronously, overlapped with compute, in the GPU variant). The objective is the
iteration's time, profiled kernel times under the chosen placements plus move times.
The constraint is DRAM capacity at every kernel. Solved with Gurobi, the program
chooses, among other things, which tensors kernels use straight from PMM.

**What differs here.** This is an ILP on our gap model (``tmhw.placement.gaps``), not the
ASPLOS formulation:

- No use in place: flash behind PCIe is not byte-addressable for an NPU that streams
  operands from HBM, so every operand is in HBM during its op, and kernel time does not
  depend on placement (there is nothing to profile per placement).
- Variables are per gap between two uses of a tensor, not per kernel: stay in HBM, or
  leave right after the first use (a write-back if dirty) and come back by a prefetch
  released at one of a few candidate ops:

  - ``hide``: the latest op from which the profile's compute time until the next use
    covers the fetch at the flash read bandwidth (the fetch hides entirely if flash
    is free);
  - ``late``: the op of the next use itself (frees the most capacity, stalls for the
    whole fetch), which stands for AutoTM's synchronous move between kernels;
  - ``mid`` (off by default: it doubles the solver's time for a hardly better plan):
    halfway between, by op index.

  Tensors smaller than ``min_share`` of the capacity (biases, norm gains and their
  optimizer state) stay resident and cost no variables.
- The objective is estimated stall, in microseconds, from a fluid model of one flash
  device, not profiled kernel times. It counts the part of each chosen fetch its window
  cannot cover, plus, per op, the flash time demanded beyond the op's duration: chosen
  prefetches spread their fetch evenly over their window and write-backs their drain
  over the ops after the eviction, as shares of the read and write bandwidth that add
  up (one device serves both). A small term per byte moved breaks ties toward less
  traffic.
- Constraints: at most one choice per gap; at every op the pages held (everything
  live, less the gaps evicted there, a write-back's pages counted until flash has
  absorbed them) within the capacity. Both running sums (occupancy, flash demand) are
  chained from op to op, so each choice enters only where its window starts and ends:
  the program has O(gaps + ops) non-zeros. If even evicting every gap cannot meet the
  drain-aware capacity, the program is solved with write-backs freeing at their op's
  end.
- The solver is scipy's ``milp`` (HiGHS) within a budget of branch-and-bound nodes
  (``policy.autotm.ilp_node_limit``), and the best solution within the budget is used. The
  budget is work, not seconds, so the table depends on the inputs only, never on how
  busy the machine is. It stops once its solution is proven within 1% of the optimum
  or within 0.1% of the iteration's time of it, whichever is looser: with fast flash
  the stall is a few percent of the iteration, many schedules nearly tie, and 1% of
  that stall alone would send the solver through hundreds of nodes to prove
  microseconds the fluid estimate cannot resolve. AutoTM solved to its solver's
  optimality.

**Refusals.** A program too large to try (``max_variables``) or without a solution
within the node budget raises a one-line TmhwError (a sweep shows it as ``skipped``).
A program infeasible even with write-backs freeing at once raises ``DoesNotFit``.

**Idealised.** The profile (op times) is exact and the same for every placement, and
the fluid model's flash bandwidths are the device's sustained rates for large
transfers.

Pure: no SimPy (scipy is imported when a plan is made).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tmhw.placement.base import PlanContext, Policy
from tmhw.placement.gaps import GapPlan, finish
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import ConfigError, DoesNotFit, TmhwError
from tmhw.sim.units import US


@dataclass(slots=True)
class _Option:
    gap: int
    release: int
    lo: int              # first unrolled op out of HBM (after the write-back drains)
    hi: int              # last unrolled op out of HBM (release - 1)
    stall_us: float      # the fetch time its window cannot cover
    frac: float          # share of the flash read bandwidth it uses over [release, b)
    wb_frac: float       # share of the write bandwidth its write-back uses over [a+1, wb_hi]
    wb_hi: int           # last unrolled op its write-back drains over
    traffic_us: float    # its bytes at the flash bandwidths


def _fold(lo: int, hi: int, n: int) -> list[tuple[int, int]]:
    """An unrolled op range (within [0, 2n)) as ranges of one iteration."""
    if hi < n:
        return [(lo, hi)]
    if lo >= n:
        return [(lo - n, hi - n)]
    return [(lo, n - 1), (0, hi - n)]


@dataclass(slots=True)
class _Program:
    c: np.ndarray                 # objective
    constraints: Any              # scipy LinearConstraint
    integrality: np.ndarray
    bounds: Any                   # scipy Bounds


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoTMParams:
    """``[policy.autotm]``. ``ilp_node_limit`` 5000: branch-and-bound nodes the ILP may
    explore (HiGHS ``node_limit``); the best solution found within them is used. A
    budget of work, not of time, so the plan never depends on how busy the machine is.
    Estimate: 5000 solves every quick and ResNet-50 cell of the TM-Training grid."""

    ilp_node_limit: int = 5000

    def __post_init__(self) -> None:
        if not isinstance(self.ilp_node_limit, int) or self.ilp_node_limit < 1:
            raise ConfigError("ilp_node_limit", self.ilp_node_limit, "an integer >= 1")


class AutoTM(Policy):
    """Per gap: stay or move, from an ILP minimising estimated stall under capacity."""

    name = "autotm"
    Params = AutoTMParams
    section = "autotm"
    params: AutoTMParams
    #: ``policy.tune`` tries a fifth, one and four times the default node budget: the
    #: ILP ranks plans on an estimate of stall, so a better-solved ILP is not always a
    #: faster run
    tunables = {"ilp_node_limit": (1000, 5000, 20000)}
    tunes_plan_only = True

    def plan_is_final(self, table: PlacementTable) -> bool:
        """A plan the solver proved optimal (or that needed no solver) is the plan of any
        larger node budget: branch and bound stops at the same node whatever the limit
        beyond it (BERT-large b32 s512 at 12.5%: optimal at the root node, 13 s a
        solve)."""
        return table.notes.get("ilp_status", 0.0) == 0.0
    #: weight of moved bytes (as flash time) against stall in the objective
    traffic_weight: ClassVar[float] = 1e-3
    #: programs with more variables are not attempted
    max_variables: ClassVar[int] = 200_000
    #: relative optimality gap at which the solver stops (1%: the stall estimate is
    #: coarser than that)
    mip_rel_gap: ClassVar[float] = 1e-2
    #: ... or at an absolute gap of this share of the profiled iteration time (0.1%: a
    #: stall estimate finer than that is not meaningful either). With fast flash the
    #: stall is small and schedules almost tie; the relative gap alone then asks for
    #: microseconds and the solver spends hundreds of nodes proving them (BERT-large
    #: at half the footprint on 16 SSDs: 677 nodes, 145 s, the incumbent of the root)
    mip_abs_share: ClassVar[float] = 1e-3
    #: tensors smaller than this share of the capacity stay resident (no variables)
    min_share: ClassVar[float] = 1e-4
    #: offer a release halfway between ``hide`` and ``late``
    mid: ClassVar[bool] = False
    #: print the solver log (HiGHS) to stdout
    verbose: ClassVar[bool] = False

    def plan(self, ctx: PlanContext) -> PlacementTable:
        info: dict[str, float] = {}
        for drain in (True, False):
            gp = GapPlan(ctx)
            opts = self._options(gp, drain)
            if drain and not self._can_fit(gp, opts):
                continue                      # not even evicting every gap fits: skip
            x, info = self._solve(gp, opts, ctx, drain)
            if x is None:
                continue
            for o, v in zip(opts, x, strict=True):
                if v > 0.5:
                    g = gp.gaps[o.gap]
                    gp.evict(o.gap, g.a, o.release)
            # the solver's tolerances may leave an op a few pages over: evict to fit
            repairs = gp.fit(drain=False)
            info.update({"fits_with_writeback_drain": float(drain), "repairs": float(repairs)})
            return finish(gp, self.name, info)
        raise DoesNotFit(f"policy.hbm_ratio: autotm ILP with "
                         f"{info.get('ilp_variables', 0):.0f} variables found no schedule "
                         f"within the HBM capacity; raise the HBM ratio or use another "
                         f"policy")

    # -- the program ---------------------------------------------------------------------
    def _options(self, gp: GapPlan, drain: bool) -> list[_Option]:
        ctx = gp.ctx
        s2, e2 = gp.start2, gp.end2
        fbw = max(1.0, ctx.fetch_bytes_per_s)
        wbw = max(1.0, ctx.writeback_bytes_per_s)
        out: list[_Option] = []
        for gi, g in enumerate(gp.gaps):
            if g.b - g.a < 2:
                continue                      # no op in between: nothing to free
            t = g.tensor
            if gp.pages[t] < self.min_share * gp.cap:
                continue                      # too small to matter: stays resident
            nbytes = int(gp.pages[t]) * gp.ps
            dirty = True                      # conservative: write-backs drain
            wb_us = nbytes / wbw * 1e6
            # the write-back drains over ops a+1 .. wb_hi at the write bandwidth; with
            # ``drain`` the pages stay in HBM until then
            t_free = int(e2[g.a]) + gp.writeback_ps(t)
            wb_end = max(g.a + 1, int(np.searchsorted(s2, t_free, side="left")))
            wb_hi = min(wb_end - 1, g.a + gp.n - 1)
            lo = wb_end if drain else g.a + 1
            if lo > g.b - 1:
                continue                      # still draining when it is needed again
            drain_end = int(s2[wb_end]) if wb_end < len(s2) else int(e2[-1])
            drain_ps = max(1, drain_end - int(e2[g.a]))
            wb_frac = min(1.0, gp.writeback_ps(t) / drain_ps) if dirty else 0.0
            if g.pure_write:
                out.append(_Option(gi, g.b, lo, g.b - 1, 0.0, 0.0, wb_frac, wb_hi, wb_us))
                continue
            fetch_ps = gp.fetch_ps(t)
            earliest = lo + 1
            if ctx.lookahead_ops:
                earliest = max(earliest, g.b - ctx.lookahead_ops)
            if earliest > g.b:
                continue
            target = int(s2[g.b]) - fetch_ps
            r_hide = int(np.searchsorted(s2, target, side="right")) - 1
            r_hide = min(max(r_hide, earliest), g.b)
            cands = sorted({r_hide, g.b, (r_hide + g.b) // 2} if self.mid else {r_hide, g.b})
            for r in cands:
                if r < earliest:
                    continue
                window = int(s2[g.b]) - int(s2[r])
                stall = max(0, fetch_ps - window)
                frac = min(1.0, fetch_ps / window) if window > 0 else 0.0
                out.append(_Option(gi, r, lo, r - 1, stall / US, frac, wb_frac, wb_hi,
                                   wb_us + nbytes / fbw * 1e6))
        return out

    @staticmethod
    def _can_fit(gp: GapPlan, opts: list[_Option]) -> bool:
        """Whether the program is feasible at all: every gap takes its option that frees
        the most (the widest window), and every op must fit."""
        widest: dict[int, _Option] = {}
        for o in opts:
            w = widest.get(o.gap)
            if w is None or o.hi - o.lo > w.hi - w.lo:
                widest[o.gap] = o
        occ = gp._base.copy()
        for o in widest.values():
            gp._apply(occ, [(o.lo, o.hi)], -int(gp.pages[gp.gaps[o.gap].tensor]))
        return bool(occ.max() <= gp.cap) if len(occ) else True

    def _solve(self, gp: GapPlan, opts: list[_Option], ctx: PlanContext,
               drain: bool) -> tuple[np.ndarray | None, dict[str, float]]:
        from scipy.optimize import milp

        prog, info = self._program(gp, opts, ctx)
        nvar, nopt = len(prog.c), len(opts)
        nodes = self.params.ilp_node_limit
        abs_gap = self.mip_abs_share * gp.iter_ps / US
        with warnings.catch_warnings():
            # scipy does not list HiGHS's mip_abs_gap among its options; it passes it on
            warnings.filterwarnings("ignore", "Unrecognized options", RuntimeWarning)
            res: Any = milp(prog.c, constraints=prog.constraints,
                            integrality=prog.integrality, bounds=prog.bounds,
                            options={"node_limit": nodes, "mip_rel_gap": self.mip_rel_gap,
                                     "mip_abs_gap": abs_gap, "disp": self.verbose})
        info["ilp_status"] = float(res.status)
        info["ilp_nodes"] = float(getattr(res, "mip_node_count", 0) or 0)
        if res.x is None:
            if res.status == 2:           # infeasible: let the caller relax the drain
                return None, info
            raise TmhwError(f"policy.name: autotm ILP with {nvar} variables found no "
                            f"solution within {nodes} branch-and-bound nodes; raise "
                            f"policy.autotm.ilp_node_limit, or use a smaller model/batch or "
                            f"another policy")
        info["ilp_objective_us"] = float(res.fun)
        gap = getattr(res, "mip_gap", None)
        if gap is not None and math.isfinite(gap):
            info["ilp_mip_gap"] = float(gap)
        return np.asarray(res.x[:nopt]), info

    def _program(self, gp: GapPlan, opts: list[_Option],
                 ctx: PlanContext) -> tuple[_Program, dict[str, float]]:
        """The mixed-integer program: the option variables come first."""
        from scipy.optimize import Bounds, LinearConstraint
        from scipy.sparse import coo_matrix

        n, nopt = gp.n, len(opts)
        # variables: y (nopt, binary) | O occupancy (n) | F flash busy share (n) |
        #            E excess flash time in us (n)
        iy, io, iflash, ie = 0, nopt, nopt + n, nopt + 2 * n
        nvar = nopt + 3 * n
        info: dict[str, float] = {"ilp_variables": float(nvar), "ilp_options": float(nopt)}
        if nvar > self.max_variables:
            raise TmhwError(f"policy.name: autotm ILP with {nvar} variables is larger than "
                            f"the {self.max_variables} it tries; use a smaller model/batch or "
                            f"another policy")
        unit = max(1.0, gp.cap / 1000.0)      # occupancy in thousandths of the capacity
        dur_us = (np.asarray(ctx.op_end_ps) - np.asarray(ctx.op_start_ps)) / US
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        lb: list[float] = []
        ub: list[float] = []
        r = 0

        def add(row: int, col: int, v: float) -> None:
            rows.append(row)
            cols.append(col)
            vals.append(v)

        # at most one choice per gap
        by_gap: dict[int, list[int]] = {}
        for k, o in enumerate(opts):
            by_gap.setdefault(o.gap, []).append(k)
        for ks in by_gap.values():
            for k in ks:
                add(r, iy + k, 1.0)
            lb.append(-np.inf)
            ub.append(1.0)
            r += 1

        # chained sums: S_i - S_{i-1} - sum(starting at i) c y + sum(ended at i-1) c y = d_i
        def chain(base_col: int, terms: list[tuple[int, int, int, float]],
                  rhs: np.ndarray) -> None:
            nonlocal r
            starts: list[list[tuple[int, float]]] = [[] for _ in range(n + 1)]
            for k, lo_, hi_, c in terms:
                for a, b in _fold(lo_, hi_, n):
                    starts[a].append((k, c))
                    starts[b + 1].append((k, -c))
            for i in range(n):
                add(r + i, base_col + i, 1.0)
                if i:
                    add(r + i, base_col + i - 1, -1.0)
                for k, c in starts[i]:
                    add(r + i, iy + k, -c)
                lb.append(float(rhs[i]))
                ub.append(float(rhs[i]))
            r += n

        base = gp._base.astype(float) / unit
        d_base = np.diff(np.concatenate(([0.0], base)))
        # occupancy O_i = base_i - sum of evicted pages: O_i - O_{i-1} + ... = base diff
        chain(io, [(k, o.lo, o.hi, -float(gp.pages[gp.gaps[o.gap].tensor]) / unit)
                   for k, o in enumerate(opts)], d_base)
        # flash busy share F_i: reads (share of the read bandwidth) plus write-backs
        # (share of the write bandwidth)
        terms = [(k, o.release, gp.gaps[o.gap].b - 1, o.frac)
                 for k, o in enumerate(opts) if o.frac > 0 and o.release < gp.gaps[o.gap].b]
        terms += [(k, gp.gaps[o.gap].a + 1, o.wb_hi, o.wb_frac)
                  for k, o in enumerate(opts) if o.wb_frac > 0 and o.wb_hi > gp.gaps[o.gap].a]
        chain(iflash, terms, np.zeros(n))
        # E_i >= dur_i * (F_i - 1)
        for i in range(n):
            add(r, ie + i, 1.0)
            add(r, iflash + i, -float(dur_us[i]))
            lb.append(-float(dur_us[i]))
            ub.append(np.inf)
            r += 1

        c = np.zeros(nvar)
        for k, o in enumerate(opts):
            c[iy + k] = o.stall_us + self.traffic_weight * o.traffic_us
        c[ie:ie + n] = 1.0
        integrality = np.zeros(nvar)
        integrality[iy:iy + nopt] = 1
        lo_b = np.zeros(nvar)
        hi_b = np.full(nvar, np.inf)
        hi_b[iy:iy + nopt] = 1.0
        hi_b[io:io + n] = gp.cap / unit     # tolerance overshoot is repaired after
        lo_b[io:io + n] = -np.inf
        a_mat = coo_matrix((vals, (rows, cols)), shape=(r, nvar)).tocsr()
        info["ilp_constraints"] = float(r)
        return _Program(c, LinearConstraint(a_mat, lb, ub), integrality,
                        Bounds(lo_b, hi_b)), info
