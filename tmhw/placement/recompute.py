"""Activation recomputation as a rival to offloading: everything in HBM, no tier traffic
in the steady state, and as much of the forward pass recomputed in the backward as it
takes to fit.

**What practitioners do.** Gradient checkpointing (Chen et al., "Training Deep Nets with
Sublinear Memory Cost", 2016) keeps only some layers' inputs through the forward pass and
re-runs the forward of the layers between before their backward; with a checkpoint every
sqrt(n) of n layers the activations need O(sqrt(n)) memory for one extra forward pass.
Megatron-LM's full recomputation keeps each transformer layer's input; its selective
recomputation (Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models", MLSys 2023) re-runs only the attention's scores, softmax and
dropout, the largest activations and the cheapest to recompute. Frameworks apply them to
make a model fit device memory; nothing moves to a slower tier.

**Here.** The workload transforms of ``tmhw.workload.builder`` (``workload.recompute``)
build the recomputed iteration; its recompute ops are real NPU ops in the backward,
timed and counted. The policy tries them in order of their extra compute, at the HBM
capacity the requested ratio gives the model *without* recomputation (so every policy
sees the same capacity for the same ratio), and runs the first whose peak live bytes and
every op's working set fit, with everything resident as ``hbm-only`` keeps it: the
weights, gradients and optimizer state stay in HBM, dead tensors are freed. The order
(``policy.recompute.mode`` "auto"): none, selective, per layer, then checkpoints every k
layers for k from 2 up to 2 sqrt(n) (the same extra forward pass as per layer, fewer
inputs kept and a longer span recomputed at once; Chen et al.'s sqrt(n) among them).
``mode`` "selective", "layer" or "sqrt" (k = round(sqrt(n)), at least 2) tries only that
one. Where none fits, the run does not fit (``DoesNotFit``) and says the least peak that
any reached. The report's ``workload.recompute`` and ``workload.recompute_every`` say
what ran (``System``, which builds the candidates: a policy plans on a built workload).

**Idealised.** The choice is made on the built graph's peak live bytes, which the
executor's allocation reaches exactly (pages, not a fragmenting allocator); the
recomputation runs at the NPU model's stall-free rate like any op.

Pure: no SimPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from tmhw.placement.base import PlanContext, Policy
from tmhw.placement.simple import everything_resident
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import ConfigError

#: ``policy.recompute.mode``
MODES = ("auto", "selective", "layer", "sqrt")


@dataclass(frozen=True, slots=True, kw_only=True)
class RecomputeParams:
    """``[policy.recompute]``. ``mode`` "auto": the cheapest recomputation that fits
    (module docstring); "selective", "layer", "sqrt": only that one."""

    mode: str = "auto"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError("mode", self.mode, f"one of {', '.join(map(repr, MODES))}")


class Recompute(Policy):
    """Everything resident; the forward recomputed in the backward as far as needed."""

    name = "recompute"
    Params = RecomputeParams
    section = "recompute"
    params: RecomputeParams
    recompute_fits_hbm: ClassVar[bool] = True

    def recompute_candidates(self, layers: int) -> list[tuple[str, int]]:
        """``(workload.recompute, workload.recompute_every)`` to try in order, for a
        model of ``layers`` transformer layers (0: none, so no every-k)."""
        sqrt_k = max(2, round(math.sqrt(layers)))
        if self.params.mode == "selective":
            return [("selective", 2)]
        if self.params.mode == "layer":
            return [("layer", 2)]
        if self.params.mode == "sqrt":
            return [("every-k", sqrt_k)] if layers >= 2 else [("layer", 2)]
        every = [("every-k", k) for k in range(2, min(layers, 2 * sqrt_k) + 1)]
        return [("none", 2), ("selective", 2), ("layer", 2), *every]

    def plan(self, ctx: PlanContext) -> PlacementTable:
        return everything_resident(self.name, ctx)
