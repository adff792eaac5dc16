"""FlashNeuron (Bae et al., "FlashNeuron: SSD-Enabled Large-Batch Training of Very Deep
Neural Networks", FAST'21) as a placement table.

**What the paper built.** FlashNeuron trains on a GPU with an NVMe SSD as backing store
for the activations only: the tensors the forward pass saves for the backward pass.
Weights, their gradients and the optimizer state stay in GPU memory throughout. Its
offloading scheduler works in two phases, from one profiling iteration in which every
saved activation is offloaded and the forward time between offloads is measured
(authors' code, SNU-ARC/flashneuron, ``FlashNeuronEngine::offloading_scheduler`` in
``torch/csrc/autograd/saved_variable.cpp``):

1. It selects activations in forward order, from the first layer on, until the
   activations it has not selected fit in the memory left over (60% of the free GPU
   memory the profiling iteration measured, a safety margin). It then estimates the
   forward pass with these offloads: one SSD write stream at the profiled write
   bandwidth, each write starting when its tensor is produced or when the previous
   write ends, whichever is later. It checks whether the last write ends before the
   forward pass does.
2. If not, it swaps selected uncompressed tensors for later tensors it can compress
   (sparse ReLU outputs in a compressed format, fp32 tensors stored as fp16).

It writes each selected tensor to the SSD as soon as the forward pass saves it, frees
the GPU copy when the write has completed and the forward pass is done with the
tensor, and reads it back in the backward pass. Each backward function issues the
read for the next function's tensors as it is launched, so a tensor is fetched one
backward op ahead of the op that consumes it. It is freed after its last backward
use. Reads and writes go over GPUDirect-like peer-to-peer DMA between the SSD and GPU
memory, bypassing the host, and overlap compute.

**Adapted to an NPU with HBM and flash.** The DMA engine here is already a direct
path between flash and HBM. The candidates are the workload's ``ACTIVATION`` tensors
with a forward use and a backward use, and at least one op between the two, during
which the tensor can be out of HBM. In phase 1 the stopping rule is the occupancy
profile of the iteration (the gap model of ``tmhw.placement.gaps``): selection stops
once no op holds more than the HBM capacity, counting a write-back's pages until flash
has absorbed them (FlashNeuron frees a tensor only once its write has completed). If
even every candidate cannot fit so, selection starts again with pages free at their
op's end: FlashNeuron's size rule, made exact at every op and without the 60% margin;
the executor then waits for write-backs where the plan runs ahead of them. A write
is released at the end of the tensor's last forward use; FlashNeuron issues it when the
tensor is produced, and the two are the same op or adjacent ones for most activations.
The prefetch is released at the start of the op before the consumer (one op ahead,
as the authors' code does). The phase-1 time estimate is kept as the table's notes
(``offload_ps``, ``offload_overrun_ps``: how far the estimated last write ends after
the forward pass). Phase 2 has nothing to swap here: the model does not compress.

**Does not fit.** Where even every candidate offloaded leaves some op over the capacity
(with writes freeing their pages at their op's end, the most favourable case), the run
fails with ``DoesNotFit``. The message gives the op, what it needs, how much of that
is the resident weights, gradients and optimizer state, and the HBM ratio from which
FlashNeuron fits. The binding op is usually a backward op: by then the weight gradients
have joined the resident state, and its own operands must be resident too. With mixed
precision and Adam, the weights and optimizer state are 14 bytes per parameter and the
gradients 2 more.

**Idealised.** The profile is the stall-free op schedule of the NPU model, exact. The
capacity check is exact at every op, with no allocator fragmentation and no margin.
Offloaded tensors are not compressed; the model has no compression to reward, so
FlashNeuron moves its activations at full size.

Pure: no SimPy.
"""

from __future__ import annotations

import math

import numpy as np

from tmhw.placement.base import PlanContext, Policy
from tmhw.placement.gaps import GapPlan, finish, saved_activations
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import DoesNotFit
from tmhw.sim.units import MiB
from tmhw.workload.graph import Kind, Phase


class FlashNeuron(Policy):
    """Activations to flash in the forward pass, back one op ahead in the backward."""

    name = "flashneuron"

    def plan(self, ctx: PlanContext) -> PlacementTable:
        # phase 1: from the first layer on, until every op fits; counting write-backs
        # until flash has them if that can fit, else with pages free at their op's end
        # (FlashNeuron's own size rule)
        for drain in (True, False):
            gp = GapPlan(ctx)
            cands = self.candidates(gp)
            occ = gp.occupancy(drain)
            chosen: list[tuple[int, int, int, int]] = []
            for cand in cands:
                if occ.max() <= gp.cap:
                    break
                t, gi, e, r = cand
                gp.retarget(occ, t, drain, [(gi, e, r)])
                chosen.append(cand)
            if occ.max() <= gp.cap:
                break
        else:
            raise self._does_not_fit(gp, occ)
        offload_ps, overrun_ps = self.offload_estimate(gp, chosen)
        return finish(gp, self.name, {
            "offload_candidates": float(len(cands)), "offloaded": float(len(chosen)),
            "offloaded_bytes": float(sum(int(gp.pages[t]) for t, *_ in chosen) * gp.ps),
            "offload_ps": float(offload_ps), "offload_overrun_ps": float(overrun_ps),
            "fits_with_writeback_drain": float(drain)})

    @staticmethod
    def candidates(gp: GapPlan) -> list[tuple[int, int, int, int]]:
        """The activations FlashNeuron may offload, in forward order of production:
        (tensor, its gap from last forward use to first backward use, the op it leaves
        after, the op whose start releases its prefetch)."""
        # fetched one backward op ahead of the consumer; none where no op lies between
        # offload and fetch (nothing to gain)
        return [(t, gi, e, c - 1) for _, t, gi, e, c in saved_activations(gp)
                if c - 1 > e + 1]

    @staticmethod
    def offload_estimate(gp: GapPlan, chosen: list[tuple[int, int, int, int]]) -> tuple[
            int, int]:
        """FlashNeuron's phase-1 check on the profile: one write stream at the write
        bandwidth, each write starting at the end of its tensor's last forward use or
        when the previous write ends. Returns (the writes' total time, how far the last
        one ends after the forward pass)."""
        wl = gp.wl
        fwd = [op.index for op in wl.ops if op.phase == Phase.FORWARD]
        if not chosen or not fwd:
            return 0, 0
        fwd_end = int(gp.end2[fwd[-1]])
        busy = total = 0
        for t, _, e, _ in sorted(chosen, key=lambda c: c[2]):
            w = gp.writeback_ps(t)
            busy = max(busy, int(gp.end2[e])) + w
            total += w
        return total, max(0, busy - fwd_end)

    def _does_not_fit(self, gp: GapPlan, occ: np.ndarray) -> DoesNotFit:
        wl = gp.wl
        i = int(occ.argmax())
        r = wl.live_ranges()
        state = grads = 0
        for t, tt in enumerate(wl.tensors):
            if gp.persistent[t] and gp.of_tensor[t]:
                state += int(gp.pages[t])
            elif tt.kind == Kind.WEIGHT_GRAD and r[t, 0] <= i <= r[t, 1]:
                grads += int(gp.pages[t])
        foot = -(-wl.peak_live_bytes() // gp.ps)
        need = int(occ.max())
        ratio = math.ceil(1000 * need / max(1, foot)) / 1000

        def mib(pages: int) -> str:
            return f"{pages * gp.ps / MiB:.1f} MiB"

        return DoesNotFit(
            f"policy.hbm_ratio: flashneuron keeps weights and optimizer state "
            f"({mib(state)}) in HBM; with every activation it can offload offloaded, op "
            f"{wl.ops[i].name} needs {mib(need)} (that state, weight gradients "
            f"{mib(grads)}, the rest {mib(need - state - grads)}) but HBM holds "
            f"{mib(gp.cap)}; flashneuron fits from policy.hbm_ratio = {ratio:g}")
