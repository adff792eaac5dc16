"""Sentinel (Ren et al., "Sentinel: Efficient Tensor Migration and Allocation on
Heterogeneous Memory Systems for Deep Learning", HPCA'21) as a placement table.

**What the paper built.** Sentinel is a runtime for TensorFlow training on
heterogeneous memory: DRAM with Intel Optane persistent memory on a CPU, and GPU memory
with host memory behind it. It relies on training repeating one step. It profiles a
step dynamically, coordinating OS-level page-access profiling
with the runtime's tensor allocations, which gives access counts per tensor. It then
re-allocates tensors so that tensors of like lifetime and access frequency share
pages: no page mixes hot short-lived data with cold long-lived data ("page-level false
sharing"), which would cause needless migration. The many short-lived tensors (produced
and consumed within a few layers) are hot and stay in fast memory. Long-lived tensors
migrate at layer boundaries: before a layer runs, what it needs is brought into fast
memory; after it, what the next layers do not need goes out. The migration interval,
how many layers ahead data is brought in, is chosen by test-and-trial over a few
training steps. On the CPU, slow memory is byte-addressable: cold data can also be used
where it lies.

**Adapted to an NPU with HBM and flash**, on the gap model of ``tmhw.placement.gaps``:

- Flash is not byte-addressable for an NPU that streams its operands from HBM, so every
  operand is in HBM during its op; "cold" means migrated out between uses, never used
  in place.
- Hotness is accesses per byte per second of lifetime. Every op reads or writes each
  byte of its tensors once, so a tensor's accesses per byte per iteration are its
  number of uses, over the time from its first to its last use in the stall-free
  profile (the whole iteration for weights, master copies and optimizer state).
  Short-lived tensors come out hottest, as Sentinel observes.
- Co-location: tensors whose lifetimes start and end in the same layers form one
  group and are placed together, hot or cold as a whole. Page runs are per tensor here,
  so no page ever holds two tensors and false sharing cannot arise; the groups keep
  Sentinel's all-or-nothing treatment of like tensors.
- Migration: every gap long enough to migrate across goes cold. The tensor leaves HBM
  at the end of the layer of its last use before the gap (a write-back if dirty, a
  drop if flash has it). Its prefetch is released at the first op of the layer
  ``lead`` layers before the next use. Hot groups are then pinned resident, hottest
  first, while the occupancy profile stays within the capacity at every op
  (write-backs counted until flash absorbs them).
- ``lead`` (the migration interval) is chosen as the test-and-trial does: each
  candidate of ``policy.sentinel.leads`` is planned, and the one with the least
  estimated stall (then least traffic) on the fluid model of ``gaps.predict_starts``
  wins. Sentinel tries candidates on real training steps; this plan tries them on the
  model. A layer is a module of the workload (``Op.layer``).

**Idealised.** The profile is exact and free: the stall-free op times of the NPU model
and the exact access counts of the op list, with none of the page-fault profiling
overhead Sentinel pays in its profiling steps. Where even the all-cold plan does not fit,
the ops over capacity evict what they do not use and delay its prefetch (the
``repairs`` note counts these changes); that is where Sentinel would stall on
migration. If no plan fits at all, planning raises ``DoesNotFit``.

Pure: no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tmhw.placement.base import PlanContext, Policy
from tmhw.placement.gaps import GapPlan, estimate_stall_ps, finish
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import ConfigError, TmhwError


@dataclass(frozen=True, slots=True, kw_only=True)
class SentinelParams:
    """``[policy.sentinel]``. ``leads`` (1, 2, 4) layers: the migration intervals
    Sentinel's test-and-trial chooses among (estimate: Sentinel tries a few intervals
    of whole layers; the paper does not list them). The plan ranks them on the fluid
    model; with ``policy.tune`` each of 1, 2, 4 and 8 layers is run on the machine
    and the fastest kept, which is Sentinel's test-and-trial on real steps."""

    leads: tuple[int, ...] = (1, 2, 4)

    def __post_init__(self) -> None:
        if not self.leads or min(self.leads) < 1:
            raise ConfigError("leads", self.leads, "a non-empty list of integers >= 1")


class Sentinel(Policy):
    """Hot tensors stay in HBM; cold ones migrate at layer boundaries."""

    name = "sentinel"
    Params = SentinelParams
    section = "sentinel"
    tunables = {"leads": ((1,), (2,), (4,), (8,))}
    tunes_plan_only = True
    params: SentinelParams

    def plan(self, ctx: PlanContext) -> PlacementTable:
        best: tuple[tuple[int, int], PlacementTable] | None = None
        for lead in self.params.leads:
            tab = self._plan(ctx, lead)
            traffic = sum(tab.bytes_by_action(ctx.page_size).values())
            key = (estimate_stall_ps(ctx.workload, tab, ctx), traffic)
            if best is None or key < best[0]:
                best = (key, tab)
        assert best is not None
        return best[1]

    def _plan(self, ctx: PlanContext, lead: int) -> PlacementTable:
        gp = GapPlan(ctx)
        wl, n = gp.wl, gp.n
        rid, first, last = gp.layer_runs()

        # every gap long enough to migrate across goes cold
        cold = 0
        for gi, g in enumerate(gp.gaps):
            e = min(int(last[rid[g.a]]), g.b - 1, n - 1)
            if g.pure_write:
                if e + 1 <= g.b - 1:
                    gp.evict(gi, e, g.b)
                    cold += 1
                continue
            r = int(first[max(0, int(rid[g.b]) - lead)])
            if ctx.lookahead_ops:
                r = max(r, g.b - ctx.lookahead_ops)
            if e + 2 <= r <= g.b:
                gp.evict(gi, e, r)
                cold += 1
        drain = True
        try:
            repairs = gp.fit(drain=True)
        except TmhwError:
            drain = False
            repairs = gp.fit(drain=False)
        occ = gp.occupancy(drain)

        # hotness per tensor, and groups of like lifetime
        groups: dict[tuple[bool, int, int], list[int]] = {}
        hot = np.zeros(len(wl.tensors))
        for t, u in enumerate(gp.uses):
            if not gp.of_tensor[t]:
                continue
            lo = 0 if gp.is_input[t] else u[0][0]
            hi = u[-1][0]
            life = gp.iter_ps if gp.persistent[t] else int(gp.end2[hi] - gp.start2[lo])
            hot[t] = len(u) / max(1, life)
            key = (bool(gp.persistent[t]), int(rid[lo]), int(rid[hi]))
            groups.setdefault(key, []).append(t)
        ranked = sorted(groups.values(), key=lambda ts: -float(
            (hot[ts] * gp.pages[ts]).sum() / max(1, int(gp.pages[ts].sum()))))

        pinned = 0
        for ts in ranked:
            if self._pin(gp, occ, ts, drain):
                pinned += len(ts)
            elif len(ts) > 1:
                for t in sorted(ts, key=lambda t: -hot[t]):
                    pinned += self._pin(gp, occ, [t], drain)
        return finish(gp, self.name, {
            "lead_layers": float(lead), "cold_gaps": float(cold), "repairs": float(repairs),
            "pinned_tensors": float(pinned), "fits_with_writeback_drain": float(drain)})

    @staticmethod
    def _pin(gp: GapPlan, occ: np.ndarray, ts: list[int], drain: bool) -> bool:
        """Keep tensors ``ts`` resident through all their gaps if every op still fits;
        otherwise leave the plan as it was."""
        saved = {t: [(gi, gp.gaps[gi].evict_op, gp.gaps[gi].release)
                     for gi in gp.of_tensor[t]] for t in ts}
        todo = [t for t in ts if any(e >= 0 for _, e, _ in saved[t])]
        if not todo:
            return False
        for t in todo:
            gp.retarget(occ, t, drain, [(gi, -1, -1) for gi in gp.of_tensor[t]])
        if occ.max() <= gp.cap:
            return True
        for t in todo:
            gp.retarget(occ, t, drain, saved[t])
        return False
