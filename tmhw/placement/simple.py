"""The two simplest policies: everything in HBM, and demand paging.

``hbm-only`` sizes HBM to the whole footprint and never touches flash: the speed
ceiling and the cost ceiling.

``demand`` is a pager with no plan: the floor any proactive policy must beat. It models
the paging a unified-memory runtime (CUDA UVM, an OS swapping to the SSD) does for an
accelerator, adapted to an NPU with HBM and flash; there is no single paper to follow.
What it knows, and what it is given beyond a real pager:

- **Residency and faults.** It knows which pages are in HBM. When an op is about to
  run, every operand page it misses is a fault; it fetches on a fault and nothing
  ahead of one. The iteration starts from the executor's common placement (the
  mini-batch in HBM, persistent tensors on flash or in HBM as they fit); the table
  plans no prefetch or eviction.
- **Perfect readahead (idealised).** A fault fetches the whole missing part of the
  tensor as one request (``PlacementTable.fault_chunk_pages`` 0), split only into the
  DMA engine's transfers: the pager knows the extent of the tensor behind the faulting
  page. A UVM driver faults 4 KiB pages and prefetches within 64 KiB-2 MiB regions by
  access density; an OS reads ahead a fixed window. Neither knows a tensor's bounds, so
  each pays more faults and more, smaller requests than this pager does.
- **Allocation without a fetch (idealised).** An op's new output is allocated in HBM
  without reading its pages' old contents from flash: the pager knows the op writes
  them whole. A page-granular pager would fault in a swapped-out page it is asked to
  write, unless the runtime discards it first.
- **Frees (``policy.demand.frees``).** With "runtime" (the default), the framework
  frees every temporary tensor after its last use in the iteration (the table's DROP
  rows, as a caching allocator would release it and tell the pager): its pages leave
  HBM without a write-back and any flash copy is trimmed. With "none", the pager sees
  no frees, as an OS or a UVM driver does: a dead tensor's pages stay in HBM, dirty,
  until eviction writes them back to flash, and they are reallocated (without a fetch)
  when the next iteration writes the tensor again. Every tensor has pages of its own
  here: no allocator hands a dead tensor's pages to the next tensor within the
  iteration. So the HBM this pager needs never to evict is every page of the
  iteration, not the footprint (the peak of live data that ``policy.hbm_ratio`` is a
  fraction of), and even at ratio 1 it writes dead data back: on the quick preset,
  338.8 ms per iteration and 1047 MB of dead data written back, against hbm-only's
  15.4 ms. "none" is thus the pessimistic end. A pager under a caching allocator that
  reuses freed blocks would keep the reused pages resident and write back only dead
  pages evicted before their reuse; at ratio 1 it would evict nothing.
  Measured in the steady state (``tmhw run --preset quick --policy demand --hbm-ratio
  0.125 --set run.iterations=4 --set run.warmup_iterations=2``): with "runtime" 377.0 ms
  per iteration, 2263 MB fetched and 2085 MB written back; with "none" 462.6 ms (+23%),
  2346 MB fetched and 2860 MB written back (+37%), of which 717 MB (684 MiB) is dead
  data (``traffic_bytes.hbm_to_flash_dead``).
- **Eviction.** When an allocation or a fault finds HBM full, the least recently used
  tensors leave (``LruEviction.eviction_order``), tail pages first and in batches of one
  write-back chunk, as a pager's watermark would; dirty pages are written back.

``demand-belady`` is demand paging with Belady's eviction (the tensor whose next use is
furthest away leaves first, which needs the future): the best a reactive policy can
do, and so the one a static plan, which knows the same future and may also act ahead
of time, must beat. ``policy.demand.frees`` applies to it too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tmhw.placement.base import (
    PlanContext,
    Policy,
    TensorUses,
    drop_moves,
    input_mask,
    persistent_mask,
)
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import ConfigError

#: What a demand pager learns of tensor deaths (``policy.demand.frees``).
DEMAND_FREES = ("runtime", "none")


@dataclass(frozen=True, slots=True, kw_only=True)
class DemandParams:
    """``[policy.demand]``: the demand pagers' parameters (``demand``, ``demand-belady``).

    ``frees`` "runtime": whether the pager learns when a tensor dies. "runtime": the
    framework frees each temporary tensor after its last use in the iteration and the
    pager hears of it, so its pages leave HBM without a write-back and any flash copy
    is trimmed. "none": the pager sees page faults and evictions only, as an OS or UVM
    pager does; a dead tensor's dirty pages stay until evicted and are then written
    back. The default is the project's reference demand baseline (the more favourable
    one to demand paging); the module docstring says what each setting costs."""

    frees: str = "runtime"

    def __post_init__(self) -> None:
        if self.frees not in DEMAND_FREES:
            raise ConfigError("frees", self.frees,
                              f"one of {', '.join(map(repr, DEMAND_FREES))}")


class LruEviction(Policy):
    """A reactive policy whose pager evicts the tensor used longest ago first (ties:
    lower id first), as a pager's clock approximates with no knowledge of the future:
    the demand pager and FlatFlash's page cache."""

    def eviction_order(self, held: np.ndarray, op_index: int,
                       uses: TensorUses) -> np.ndarray:
        out: np.ndarray = held[np.argsort(uses.last_use[held], kind="stable")]
        return out


def fits_whole(ctx: PlanContext) -> bool:
    """Whether HBM holds the iteration's footprint (its peak live bytes): nothing has
    to leave it."""
    wl = ctx.workload
    return -(-wl.peak_live_bytes() // wl.page_size) <= ctx.capacity_pages


def everything_resident(policy: str, ctx: PlanContext) -> PlacementTable:
    """The table of a policy that keeps every tensor in HBM: the model state and the
    mini-batch resident from the start, each other tensor freed after its last use."""
    wl = ctx.workload
    initial = persistent_mask(wl) | input_mask(wl)
    t = PlacementTable(policy, len(wl.ops), initial, drop_moves(wl))
    t.index()
    return t


class HbmOnly(Policy):
    name = "hbm-only"
    whole_footprint = True

    def plan(self, ctx: PlanContext) -> PlacementTable:
        return everything_resident(self.name, ctx)


class Demand(LruEviction):
    name = "demand"
    reactive = True
    #: a pager faults operands in as an op needs them, so an op larger than HBM runs
    #: tile by tile like any other (the executor's streaming)
    streams = True
    Params = DemandParams
    section = "demand"
    params: DemandParams

    def plan(self, ctx: PlanContext) -> PlacementTable:
        wl = ctx.workload
        initial = input_mask(wl)
        # Without the runtime's frees, no row tells the executor a tensor died.
        frees = drop_moves(wl) if self.params.frees == "runtime" else []
        t = PlacementTable(self.name, len(wl.ops), initial, frees, reactive=True)
        t.index()
        return t


class DemandBelady(Demand):
    name = "demand-belady"

    def plan(self, ctx: PlanContext) -> PlacementTable:
        t = super().plan(ctx)
        t.policy = self.name
        return t

    def eviction_order(self, held: np.ndarray, op_index: int,
                       uses: TensorUses) -> np.ndarray:
        """Belady's rule, the base policy's: the next use furthest away leaves first."""
        return Policy.eviction_order(self, held, op_index, uses)
