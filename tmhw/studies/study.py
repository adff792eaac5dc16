"""A study's run: its workloads, its points, and where its table and figures go.

Every point is a ``tmhw.sweeps`` point (the paper preset with overrides) run in a local
process pool. The overrides of a point are applied in this order: the study's run
length, the quick studies' ILP budget, the workload, the user's ``--set``, then the
values the study sweeps (so a study's own grid always wins).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tmhw.sweeps as SW

#: Every policy, TM-Training first (the subject), the baselines, then the references:
#: demand paging, its oracle (Belady's eviction) and HBM-only.
POLICIES = ("tm-training", "flatflash", "flashneuron", "sentinel", "autotm", "ssdtrain",
            "zero-infinity", "recompute", "capuchin", "tm-recompute", "demand",
            "demand-belady", "hbm-only")
#: The prior systems the paper compares against (its "prior work").
BASELINES = ("flatflash", "flashneuron", "sentinel", "autotm")
#: What practitioners deploy today, which the paper predates: SSDTrain's activation
#: offload, DeepSpeed's ZeRO-Infinity, recomputation (nothing offloaded), Capuchin's
#: per-tensor swap or recompute, and TM-Training with the recomputation that runs
#: fastest (the hybrid).
PRACTICAL = ("ssdtrain", "zero-infinity", "recompute", "capuchin", "tm-recompute")
#: The AutoTM ILP's branch-and-bound node budget in quick studies: a budget of work, so
#: that the result never depends on the machine's load.
QUICK_ILP_NODES = 500


@dataclass(frozen=True)
class Model:
    """A workload of a study: what it stands for, what runs, its overrides."""

    stands_for: str
    label: str
    sets: dict[str, Any]


def workload(model: str, batch: int, seq: int | None = None, layers: int | None = None,
             **more: Any) -> dict[str, Any]:
    """The ``workload.*`` overrides of one model (``seq``/``layers`` None: the model's
    own, by leaving the key out)."""
    shape = {f"workload.{k}": v for k, v in (("seq", seq), ("layers", layers))
             if v is not None}
    return {"workload.model": model, "workload.batch": batch, **shape,
            **{f"workload.{k}": v for k, v in more.items()}}


FULL_MODELS = (
    Model("ResNet-50", "resnet50 b32", workload("resnet50", 32)),
    Model("BERT-large", "bert-large s512 b32", workload("bert-large", 32, 512)),
    Model("GPT-3 block", "gpt3-block s2048 b4 1 layer", workload("gpt3-block", 4, 2048, 1)),
)
#: Stand-ins small enough for seconds per run, each still at least 8x its largest op so
#: that 12.5% HBM can hold every op's operands (the Adam update of BERT's word
#: embeddings is 143 MiB, so BERT-base needs 3 layers at seq 512 to reach 1.4 GB).
QUICK_MODELS = (
    Model("ResNet-50", "resnet50 b4", workload("resnet50", 4)),
    Model("BERT-large", "bert-base 3 layers s512 b8", workload("bert-base", 8, 512, 3)),
    Model("GPT-3 block", "gpt2-small s128 b4", workload("gpt2-small", 4, 128, 12)),
)


@dataclass
class Study:
    """One scenario's run: options, output folder, and the helpers every study uses.

    ``models`` are the workloads of multi-model studies and ``one`` (``model``) the
    workload of single-model studies; by default FULL_MODELS and BERT-large, or when
    quick QUICK_MODELS and the cheapest stand-in (ResNet-50 at batch 4)."""

    name: str
    quick: bool
    out: Path
    workers: int | None = None
    user_sets: dict[str, Any] = field(default_factory=dict)
    progress: bool = True
    models: tuple[Model, ...] = ()
    one: Model | None = None
    preset: str = "paper"
    started: float = field(default_factory=time.perf_counter)
    figures: list[Path] = field(default_factory=list)
    #: reuse the reports an earlier run of this study left in ``out/points`` (``--resume``)
    resume: bool = False
    #: every point's result, in the order the study ran them (``tmhw bench``'s study
    #: cases read their simulated ops, bytes and wall times from here)
    results: list[SW.Result] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.models:
            self.models = QUICK_MODELS if self.quick else FULL_MODELS
        if self.one is None:
            self.one = self.models[0 if self.quick or len(self.models) == 1 else 1]

    @property
    def model(self) -> Model:
        assert self.one is not None
        return self.one

    @property
    def iterations(self) -> int:
        return 1 if self.quick else 2

    # -- points --------------------------------------------------------------------------
    def point(self, base: dict[str, Any], params: dict[str, Any],
              swept: dict[str, Any], preset: str | None = None) -> SW.Point:
        """``base`` overrides, then the user's ``--set``, then the swept values, over the
        study's preset (or ``preset``)."""
        # Full studies compare rivals at their best (``tmhw.tune``) in a steady state that
        # is found (``run.warmup_iterations = "auto"``: ``run.iterations`` then counts
        # the measured iterations); quick ones at their defaults, with AutoTM's ILP held
        # to a small budget, over one iteration (a forced warm-up of one: a smoke test
        # of the study, not its steady state).
        mode: dict[str, Any] = {"policy.autotm.ilp_node_limit": QUICK_ILP_NODES,
                                "run.warmup_iterations": 1} \
            if self.quick else {"policy.tune": True, "run.warmup_iterations": "auto"}
        overrides = {"run.iterations": self.iterations, **mode, **base, **self.user_sets,
                     **swept}
        return SW.make_point(preset or self.preset, overrides, params)

    def run(self, points: Sequence[SW.Point]) -> list[SW.Result]:
        out = SW.run_points(points, workers=self.workers, progress=self.progress,
                            desc=self.name, out=self.out, resume=self.resume)
        self.results.extend(out)
        return out

    def failed(self) -> list[SW.Result]:
        """The points run so far that stopped with an error (``tmhw.sweeps.run_point``:
        a crash, not a refusal)."""
        return [r for r in self.results if r["status"] == "error"]

    # -- outputs -------------------------------------------------------------------------
    def write_csv(self, results: Sequence[SW.Result],
                  extra: Callable[[SW.Result], dict[str, Any]] | None = None) -> None:
        rows = SW.summary_rows(results)
        if extra is not None:
            for row, r in zip(rows, results, strict=True):
                row.update(extra(r))
        SW.write_csv(rows, self.out / "summary.csv")

    def fig(self, paths: list[Path]) -> None:
        self.figures.extend(p for p in paths if p.suffix == ".png")

    def write_md(self, title: str, intro: str, sections: Sequence[str],
                 iterations: int | None = None) -> str:
        sizes = "quick stand-in sizes" if self.quick else "full sizes"
        limits = f"; rivals at their defaults, AutoTM's ILP at most {QUICK_ILP_NODES} " \
            "nodes" if self.quick else "; rivals tuned per cell (`policy.tune`)"
        sets = ", ".join(f"`{k}={json.dumps(v)}`" for k, v in self.user_sets.items())
        parts = [f"# {title}", "", intro, "",
                 f"Scenario `{self.name}`, {sizes}, {iterations or self.iterations} "
                 + ("iteration(s) per run" if self.quick else "measured iteration(s) per "
                    "run after a warm-up that ends where the iterations repeat")
                 + (f", with {sets}" if sets else "")
                 + limits + ".", ""]
        failed = self.failed()
        if failed:
            parts += [f"**Failed:** {len(failed)} of the {len(self.results)} runs stopped "
                      "with an error (`status` error in summary.csv, the error beside it); "
                      "every table and chart leaves their figures out.", ""]
        warm = sum(1 for r in self.results
                   if r.get("report") is not None
                   and not r["report"]["measurement"]["steady_state"])
        if warm:
            parts += [f"**Not a steady state:** {warm} of the {len(self.results)} runs measured "
                      "warm-up iterations only (`steady_state` false in summary.csv); give "
                      "them more iterations than `run.warmup_iterations`.", ""]
        loose = sum(1 for r in self.results
                    if r.get("report") is not None
                    and r["report"]["measurement"]["converged"] is False)
        if loose:
            parts += [f"**Did not converge:** {loose} of the {len(self.results)} runs found "
                      "no repeating iterations by `run.max_iterations` (`converged` false "
                      "in summary.csv): their figures are the mean of the last iterations, "
                      "not a steady state.", ""]
        for s in sections:
            parts += [s, ""]
        if self.figures:
            parts.append("Figures: " + ", ".join(
                f"[{p.stem}]({p.name}) (+ .svg)" for p in self.figures) + ".")
        text = "\n".join(parts).rstrip() + "\n"
        (self.out / "summary.md").write_text(text)
        return text
