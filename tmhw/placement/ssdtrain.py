"""SSDTrain (Wu et al., "SSDTrain: An Activation Offloading Framework to SSDs for Faster
Large Language Model Training", DAC'25) as a placement table.

**What the paper built.** SSDTrain offloads activations, the tensors the forward pass
saves for the backward pass, to NVMe SSDs over GPUDirect Storage, and nothing else:
weights, gradients and optimizer state stay in GPU memory. It hooks the framework's
saved-tensor pack and unpack: a saved tensor is written to the SSD as soon as its layer
produces it, asynchronously, and its GPU copy is released once the write has completed;
in the backward pass the activations of the next layer to run are read back one layer
ahead, in reverse layer order, so the reads overlap the current layer's backward. A
tensor the framework saves twice is stored once (deduplication), and a tensor whose
backward use comes before its write has finished is served from the GPU copy
(forwarding). Offloading is adaptive: from a profiled step, SSDTrain offloads the layers
whose transfers it can hide behind computation, and keeps the last layers of the
forward pass, whose backward comes too soon for a write and a read to fit in between.
The paper reports its I/O fully overlapped and 45-47% less activation peak memory.

**Adapted to an NPU with HBM and flash**, on the gap model of ``tmhw.placement.gaps``:

- The candidates are the workload's ``ACTIVATION`` tensors with a forward use and a
  backward use; each belongs to the layer of the op that produced it.
  Tensors are pages of their own here, so deduplication has nothing to merge.
- A candidate leaves HBM at the end of its last forward use (a write-back) and its
  prefetch is released at the first op of the layer that runs before its consumer's
  in the backward pass: one layer ahead, in reverse layer order. A layer is a block of
  the model (``Op.layer`` up to its first dot: ``l3``, ``emb``), the unit a
  framework's layer hooks see.
- Adaptive choice, per layer in forward order, on the stall-free profile at the
  sustained flash rates: a layer is offloaded when its tensors' write and read both fit
  in the time between the write's release and the prefetch's release (the gap can hide
  them), and the writes of the layers chosen so far, as one stream starting as each
  tensor is produced, still end before the forward pass does. The first layer that
  fails either test ends the choice; the layers after it are kept, as the paper keeps
  the last ones.
- SSDTrain reduces memory at a throughput it keeps; here the HBM capacity is given.
  Where the adaptive choice leaves an op over the capacity, the layers it kept are
  offloaded too, in forward order, until every op fits (their transfers may then show as
  stall), counting a write-back's pages until flash has them if that can fit, else
  freeing them at their op's end (the executor waits for the write). If even every
  activation offloaded does not fit, the run does not fit (``DoesNotFit``), since
  weights, gradients and optimizer state stay in HBM.

Where HBM holds the whole footprint nothing is offloaded (a user runs without
SSDTrain then), so at HBM ratio 1 it is ``hbm-only``.

**Idealised.** The profile is exact (the NPU model's stall-free op times); the transfer
estimate uses the sustained flash rates with no queueing against other traffic;
forwarding is the executor's (a prefetch of pages still resident, or whose write-back is
still queued, moves nothing). The GDS path is the DMA engine's direct flash-HBM path.

Pure: no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tmhw.placement.base import PlanContext, Policy
from tmhw.placement.gaps import GapPlan, activations_do_not_fit, finish, saved_activations
from tmhw.placement.simple import everything_resident, fits_whole
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import ConfigError
from tmhw.workload.graph import Phase

#: (tensor, its gap from last forward use to first backward use, the op it leaves
#: after, the op whose start releases its prefetch)
Candidate = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class SSDTrainParams:
    """``[policy.ssdtrain]``. ``prefetch_layers`` 1: how many layers ahead of its
    consumer's layer, in backward order, an activation is read back (SSDTrain reads the
    next layer's while the current one runs: one). ``adaptive`` true: offload only the
    layers whose transfers the profile says can be hidden, unless the capacity needs
    more (module docstring); false: offload every candidate layer."""

    prefetch_layers: int = 1
    adaptive: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.prefetch_layers, int) or self.prefetch_layers < 1:
            raise ConfigError("prefetch_layers", self.prefetch_layers, "an integer >= 1")
        if not isinstance(self.adaptive, bool):
            raise ConfigError("adaptive", self.adaptive, "true or false")


class SSDTrain(Policy):
    """Activations to flash layer by layer as produced; back one layer ahead."""

    name = "ssdtrain"
    Params = SSDTrainParams
    section = "ssdtrain"
    params: SSDTrainParams

    def plan(self, ctx: PlanContext) -> PlacementTable:
        if fits_whole(ctx):
            # SSDTrain offloads to reduce activation memory; where HBM holds the whole
            # footprint a user runs without it (at ratio 1 its adaptive choice still
            # offloaded 7.9 MB an iteration, quick preset, 2 layers)
            return everything_resident(self.name, ctx)
        for drain in (True, False):
            gp = GapPlan(ctx)
            layers = self.candidates(gp)
            hidden = self.hideable(gp, layers) if self.params.adaptive else len(layers)
            occ = gp.occupancy(drain)
            chosen = 0
            for k, layer in enumerate(layers):
                if k >= hidden and occ.max() <= gp.cap:
                    break
                for t, gi, e, r in layer:
                    gp.retarget(occ, t, drain, [(gi, e, r)])
                chosen += 1
            if occ.max() <= gp.cap:
                break
        else:
            raise activations_do_not_fit(self.name, gp, occ)
        offloaded = [c for layer in layers[:chosen] for c in layer]
        return finish(gp, self.name, {
            "offload_layers": float(len(layers)), "offloaded_layers": float(chosen),
            "hideable_layers": float(hidden),
            "offloaded_bytes": float(sum(int(gp.pages[t]) for t, *_ in offloaded) * gp.ps),
            "fits_with_writeback_drain": float(drain)})

    def candidates(self, gp: GapPlan) -> list[list[Candidate]]:
        """The activations SSDTrain may offload, grouped by the layer that produced them,
        layers in forward order."""
        rid, first = block_runs(gp)
        back = self.params.prefetch_layers
        by_layer: dict[int, list[Candidate]] = {}
        for produced, t, gi, e, c in saved_activations(gp):
            # the first op of the layer ``back`` layers before the consumer's
            r = int(first[max(0, int(rid[c]) - back)])
            r = min(max(r, e + 1), c)
            if r <= e + 1:
                continue               # no op between offload and fetch: nothing to gain
            by_layer.setdefault(int(rid[produced]), []).append((t, gi, e, r))
        return [by_layer[k] for k in sorted(by_layer)]

    @staticmethod
    def hideable(gp: GapPlan, layers: list[list[Candidate]]) -> int:
        """How many leading layers SSDTrain's adaptive rule offloads (module docstring)."""
        wl = gp.wl
        fwd = [op.index for op in wl.ops if op.phase == Phase.FORWARD]
        fwd_end = int(gp.end2[fwd[-1]]) if fwd else 0
        stream = 0
        for k, layer in enumerate(layers):
            for t, _, e, r in sorted(layer, key=lambda c: c[2]):
                out_ps = gp.writeback_ps(t) + gp.fetch_ps(t)
                if int(gp.start2[r]) - int(gp.end2[e]) < out_ps:
                    return k
                stream = max(stream, int(gp.end2[e])) + gp.writeback_ps(t)
            if stream > fwd_end:
                return k
        return len(layers)


def block_runs(gp: GapPlan) -> tuple[np.ndarray, np.ndarray]:
    """Blocks as runs of consecutive ops of one block (an ``Op.layer`` up to its first
    dot: ``l3`` for ``l3.attn.qkv``, the unit a framework's layer hooks see), over one
    iteration: (run index per op, first op of each run)."""
    blocks = [op.layer.split(".", 1)[0] for op in gp.wl.ops]
    rid = np.zeros(len(blocks), dtype=np.int64)
    for i in range(1, len(blocks)):
        rid[i] = rid[i - 1] + (blocks[i] != blocks[i - 1])
    first = np.flatnonzero(np.diff(rid, prepend=-1)) if len(blocks) else rid
    return rid, first.astype(np.int64)

