"""FlashNeuron (Bae et al., "FlashNeuron: SSD-Enabled Large-Batch Training of Very Deep
Neural Networks", FAST'21) as a placement table.

FlashNeuron keeps weights, optimizer state and gradients in device memory and offloads
the activations that the backward pass needs: each is written to the SSD in the forward
pass as soon as the forward pass is done with it, and read back during the backward pass
one layer ahead of the layer that consumes it. Its offloading scheduler, profiled once,
chooses which activations to offload so that the iteration fits in device memory; here
the candidates are taken in forward order (the earliest have the longest round trip to
hide) until the occupancy profile fits the HBM capacity. If it cannot fit even with every
activation offloaded, FlashNeuron cannot run and ``plan`` says so (``policy.hbm_ratio``).
What we leave out: FlashNeuron's compression of offloaded tensors and its GPUDirect
path around the host (the DMA engine here is already a direct path); a "layer" is a
module of the workload (``Op.layer``: a convolution, linear, norm, activation...).

The gap model it plans on is ``tmhw.placement.gaps``.

Pure: no SimPy.
"""

from __future__ import annotations

from tmhw.placement.base import PlanContext, Policy
from tmhw.placement.gaps import GapPlan, finish
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import TmhwError
from tmhw.sim.units import MiB
from tmhw.workload.graph import Kind, Phase


# -- FlashNeuron --------------------------------------------------------------------------
class FlashNeuron(Policy):
    """Activations to flash in the forward pass, back one layer ahead in the backward."""

    name = "flashneuron"

    def plan(self, ctx: PlanContext) -> PlacementTable:
        gp = GapPlan(ctx)
        wl = gp.wl
        rid, first, _ = gp.layer_runs()
        cands: list[tuple[int, int, int]] = []          # (write op, gap, release)
        for t, tt in enumerate(wl.tensors):
            if tt.kind != Kind.ACTIVATION or not gp.of_tensor[t]:
                continue
            fwd = [i for i, _ in gp.uses[t] if wl.ops[i].phase == Phase.FORWARD]
            bwd = [i for i, _ in gp.uses[t] if wl.ops[i].phase == Phase.BACKWARD]
            if not fwd or not bwd:
                continue
            e, c = fwd[-1], bwd[0]
            gi = next(g for g in gp.of_tensor[t] if gp.gaps[g].a == e)
            # one layer ahead: the prefetch leaves with the first op of the layer the
            # backward pass runs just before the consumer's
            r = int(first[rid[c] - 1]) if rid[c] > 0 else c
            if r <= e + 1:
                continue  # no op between offload and fetch: nothing to gain
            cands.append((fwd[0], gi, r))
        cands.sort()
        occ = gp.occupancy(drain=True)
        chosen = 0
        for _, gi, r in cands:
            if occ.max() <= gp.cap:
                break
            g = gp.gaps[gi]
            gp.retarget(occ, g.tensor, True, [(gi, g.a, r)])
            chosen += 1
        free_occ = gp.occupancy(drain=False)
        if free_occ.max() > gp.cap:
            i = int(free_occ.argmax())
            raise TmhwError(
                f"policy.hbm_ratio: flashneuron keeps weights, optimizer state and "
                f"gradients in HBM and needs {free_occ[i] * gp.ps / MiB:.1f} MiB at op "
                f"{wl.ops[i].name} with every activation offloaded, but HBM holds "
                f"{gp.cap * gp.ps / MiB:.1f} MiB; raise the HBM ratio or lower the batch")
        return finish(gp, self.name, {
            "offload_candidates": float(len(cands)), "offloaded": float(chosen),
            "fits_with_writeback_drain": float(occ.max() <= gp.cap)})
