"""The two simplest policies: everything in HBM, and demand paging.

``hbm-only`` sizes HBM to the whole footprint and never touches flash: the speed
ceiling and the cost ceiling. ``demand`` keeps the persistent tensors in flash and
fetches whatever an op needs when it needs it (a fault per missing page run), evicting
least-recently-used tensors with a write-back of dirty pages: the floor any proactive
policy must beat. ``demand-belady`` is demand paging with Belady's eviction (the tensor
whose next use is furthest away leaves first, which needs the future): the best a
reactive policy can do, and so the one a static plan, which knows the same future and
may also act ahead of time, must beat.
"""

from __future__ import annotations

from tmhw.placement.base import PlanContext, Policy, drop_moves, input_mask, persistent_mask
from tmhw.placement.table import PlacementTable


class HbmOnly(Policy):
    name = "hbm-only"
    whole_footprint = True

    def plan(self, ctx: PlanContext) -> PlacementTable:
        wl = ctx.workload
        initial = persistent_mask(wl) | input_mask(wl)
        t = PlacementTable(self.name, len(wl.ops), initial, drop_moves(wl))
        t.index()
        return t


class Demand(Policy):
    name = "demand"
    reactive = True

    def plan(self, ctx: PlanContext) -> PlacementTable:
        wl = ctx.workload
        initial = input_mask(wl)
        t = PlacementTable(self.name, len(wl.ops), initial, drop_moves(wl), reactive=True)
        t.index()
        return t



class DemandBelady(Demand):
    name = "demand-belady"

    def plan(self, ctx: PlanContext) -> PlacementTable:
        t = super().plan(ctx)
        t.policy, t.eviction = self.name, "belady"
        return t
