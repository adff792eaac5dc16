"""Paper headline: every policy on three models at 12.5% HBM in steady state, beside the
paper's figures and the conditions under which the model reproduces them.

ResNet-50, BERT-large and a GPT-3 block (quick: ResNet-50 b4, BERT-base 3 layers, GPT-2
small), 2 measured iterations per run after a warm-up that ends where the iterations
repeat (quick: 3 iterations, the first warm-up). TM-Training's traffic and samples
per joule against each prior system and the best of them, its time against what
practitioners deploy (SSDTrain, ZeRO-Infinity) and the fastest strategy per model, and
its memory cost against HBM-only, beside the paper's -64%, +55% and -87% (TM-Training,
ACM ToS 21(4), 2025, abstract, doi:10.1145/3721484); then each of those figures computed
under other conditions. ``report.json`` is the TM-Training run of the first model.

    tmhw scenario paper_headline [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tmhw
import tmhw.studies.tables as T
import tmhw.sweeps as SW
from tmhw.studies import BASELINES, POLICIES, PRACTICAL, Study
from tmhw.studies.figures import grouped_bars

HBM_RATIO = 0.125
#: quick: 3 iterations, the first warm-up; full: 2 measured after an "auto" warm-up
QUICK_ITERATIONS, MEASURED = 3, 2
#: The paper's headline figures (abstract), each against the prior systems.
PAPER = {"traffic": -0.64, "samples/J": 0.55, "memory cost": -0.87}
#: The conditions' extra runs: (variant, overrides, policies).
NO_FREES = "demand without runtime frees"
VARIANTS = ((NO_FREES, {"policy.demand.frees": "none"}, ("demand",)),
            ("2 SSDs", {"flash.devices": 2}, ("tm-training", *BASELINES)),
            ("4 SSDs", {"flash.devices": 4}, ("tm-training", *BASELINES)))
QUICK_VARIANTS = (VARIANTS[0], VARIANTS[2])
COLUMNS = {"iteration ms": ("iteration_time_ms", 1.0), "stall ms": ("stall_ms", 1.0),
           "flash->HBM GiB": ("flash_to_hbm_bytes", 2**-30),
           "HBM->flash GiB": ("hbm_to_flash_bytes", 2**-30),
           "flash->NPU GiB (in place)": ("flash_to_npu_bytes", 2**-30),
           "samples/J": ("samples_per_joule", 1.0), "memory $": ("memory_usd", 1.0),
           "time / bound": ("time_bound_ratio", 1.0),
           "traffic / bound": ("traffic_bound_ratio", 1.0)}


def study(st: Study) -> str:
    """Every policy on three models at 12.5% HBM, beside the paper's headline figures."""
    # -- the grid (models x policies), and the conditions' variants ----------------------
    def point(m: Any, p: str, variant: str = "", sets: Any = None) -> SW.Point:
        return st.point({**m.sets,
                         "run.iterations": QUICK_ITERATIONS if st.quick else MEASURED},
                        {"model": m.stands_for, "workload": m.label, "policy": p,
                         "variant": variant},
                        {"policy.name": p, "policy.hbm_ratio": HBM_RATIO, **(sets or {})})
    variants = QUICK_VARIANTS if st.quick else VARIANTS
    points = [point(m, p) for m in st.models for p in POLICIES]
    points += [point(m, p, v, sets) for m in st.models for v, sets, ps in variants for p in ps]
    results = st.run(points)
    st.write_csv(results)
    got = T.by_params(results, "model", "policy", "variant")
    models = [m.stands_for for m in st.models]

    def tm(m: str, variant: str = "") -> SW.Result | None:
        return got.get((m, "tm-training", variant))

    def best(m: str, name: str, variant: str = "", lower: bool = True,
             value: Any = None) -> SW.Result | None:
        return T.best_of([got.get((m, b, variant)) for b in BASELINES], name, lower, value)

    # -- per model: every policy's steady-state figures ----------------------------------
    per_model = [f"## {m.stands_for} ({m.label}), HBM 12.5% of the footprint\n\n" + T.md_table(
        ["policy", *COLUMNS, "status"],
        [[p, *[T.cell(r, n, k, digits=4 if n == "memory_usd" else 3)
               for n, k in COLUMNS.values()], T.status_text(r)]
         for p in POLICIES for r in [got[(m.stands_for, p, "")]]]) for m in st.models]

    # -- the headline: TM-Training against each prior system and the best of them ---------
    def against(m: str, name: str, lower: bool) -> list[str]:
        cols = [T.pct(v) if (v := T.change(tm(m), got[(m, b, "")], name)) is not None
                else T.why_missing(got[(m, b, "")]) for b in BASELINES]
        top = best(m, name, lower=lower)
        return [*cols, "-" if top is None else
                f"{T.pct(T.change(tm(m), top, name))} ({top['params']['policy']})"]

    head = [[m, *against(m, "inter_tier_bytes", True), *against(m, "samples_per_joule", False),
             T.pct(T.change(tm(m), got[(m, "hbm-only", "")], "memory_usd"))] for m in models]
    blank = [""] * len(BASELINES)
    head.append(["**paper**", *blank, T.pct(PAPER["traffic"]), *blank,
                 T.pct(PAPER["samples/J"]), T.pct(PAPER["memory cost"])])
    headline = ("## Headline: TM-Training against each prior system and the best of them\n\n"
                "Steady-state change in inter-tier traffic (negative: less) and in samples "
                "per joule (positive: better); 'best' is the prior system with the least "
                "traffic or the most samples per joule on that model (named); memory cost "
                "against HBM-only. 'does not fit': the baseline cannot run at this HBM "
                "capacity.\n\n" + T.md_table(
                    ["model", *[f"traffic vs {b}" for b in BASELINES], "traffic vs best",
                     *[f"samples/J vs {b}" for b in BASELINES], "samples/J vs best",
                     "memory cost vs hbm-only"], head))

    # -- the paper's figures under other conditions, computed ----------------------------
    def row(figure: str, condition: str, vals: list[float | None]) -> list[str]:
        return [figure, condition, *[T.pct(v) for v in vals], T.pct(PAPER[figure])]

    cond = [row("traffic", "link bytes, vs the best prior system",
                [T.change(tm(m), best(m, "inter_tier_bytes"), "inter_tier_bytes")
                 for m in models]),
            row("traffic", "vs demand paging without runtime frees",
                [T.change(tm(m), got[(m, "demand", NO_FREES)], "inter_tier_bytes")
                 for m in models]),
            row("traffic", "NAND page bytes, vs the best prior system in NAND bytes",
                [T.change(tm(m), best(m, "", value=T.nand_bytes), "", T.nand_bytes)
                 for m in models]),
            row("samples/J", "vs demand paging without runtime frees",
                [T.change(tm(m), got[(m, "demand", NO_FREES)], "samples_per_joule")
                 for m in models])]
    cond += [row("samples/J", f"{v or '1 SSD'}, vs the best prior system",
                 [T.change(tm(m, v), best(m, "samples_per_joule", v, lower=False),
                         "samples_per_joule") for m in models])
             for v in ("", *[name for name, _, _ in variants[1:]])]
    cond += [row("memory cost", f"{what}, vs HBM-only holding the footprint",
                 [T.change(tm(m), got[(m, "hbm-only", "")], name) for m in models])
             for what, name in (("memory alone", "memory_usd"),
                                ("the whole system, NPU included", "system_usd"))]
    # -- against what practitioners deploy, and the best strategy per model -------------
    def fastest(m: str) -> SW.Result | None:
        return T.best_of([got.get((m, p, "")) for p in POLICIES if p != "hbm-only"],
                         "iteration_time_ms")

    def practical(m: str) -> list[str]:
        cols = []
        for p in PRACTICAL:
            r = got[(m, p, "")]
            cols += [T.pct(v) if (v := T.change(tm(m), r, "iteration_time_ms")) is not None
                     else T.why_missing(r),
                     T.pct(v) if (v := T.change(tm(m), r, "samples_per_joule")) is not None
                     else T.why_missing(r)]
        top = fastest(m)
        ran = [p for p in POLICIES if p != "hbm-only"
               and T.fig_of(got.get((m, p, "")), "iteration_time_ms") is not None]
        if top is None:
            return [*cols, "-"]
        what = f"{top['params']['policy']} ({T.num(T.fig_of(top, 'iteration_time_ms'))} ms)"
        # a strategy that alone fits is not faster than anything: say so
        return [*cols, f"only {what} fits" if len(ran) == 1 else what]

    deployed = ("## Against what practitioners deploy\n\n"
                "TM-Training's change in iteration time (negative: faster) and samples per "
                "joule against SSDTrain (activations to flash layer by layer), "
                "ZeRO-Infinity (parameters, gradients and optimizer state on flash) and "
                "recomputation (nothing moved: the forward re-run in the backward as far "
                "as HBM needs) and TM-Training's hybrid with recomputation (tm-recompute: "
                "the recomputation that runs fastest), and the "
                "fastest strategy of every policy at this HBM (hbm-only left out: it is a "
                "larger machine).\n\n" + T.md_table(
                    ["model", *[f"{w} vs {p}" for p in PRACTICAL
                                for w in ("time", "samples/J")], "fastest strategy"],
                    [[m, *practical(m)] for m in models]))

    conditions = ("## The paper's figures under other conditions (computed)\n\n"
                  "TM-Training's change under each condition, per model, beside the "
                  "paper's figure.\n\n" + T.md_table(["figure", "condition", *models, "paper"],
                                                   cond))

    # -- figures -------------------------------------------------------------------------
    def series(name: str, policies: tuple[str, ...], scale: float = 1.0
               ) -> dict[str, Sequence[float | str]]:
        return {p: T.figure_values([got[(m, p, "")] for m in models], name, scale)
                for p in policies}

    # the figures name each workload as it ran (a quick run's stand-ins by their own names)
    shown = [m.stands_for if m.label == m.stands_for else f"{m.stands_for}\n({m.label})"
             for m in st.models]
    st.fig(grouped_bars(shown, series("inter_tier_bytes", POLICIES[:-1], 2**-30),
                        st.out / "inter_tier_traffic", "inter-tier traffic per iteration (GiB)",
                        "Flash <-> HBM traffic at 12.5% HBM (steady state)"))
    st.fig(grouped_bars(shown, series("samples_per_joule", POLICIES),
                        st.out / "throughput_per_watt", "samples per joule",
                        "Throughput per watt at 12.5% HBM (steady state)", log=True))
    st.fig(grouped_bars(shown, series("memory_usd", ("tm-training", "hbm-only")),
                        st.out / "memory_cost", "memory cost (US$)",
                        "Memory hardware cost: 12.5% HBM + flash vs HBM-only"))

    first = tm(models[0])
    note = "The TM-Training run of the first model did not complete: no report.json."
    if first is not None and first["report"] is not None:
        tmhw.Report(first["report"]).save(st.out)
        note = f"`report.json` is the TM-Training run of {first['params']['workload']}."
    intro = ("TM-Training against FlatFlash, FlashNeuron, Sentinel, AutoTM, SSDTrain, "
             "ZeRO-Infinity, demand paging and HBM-only at 12.5% HBM (HBM = 1/8 of the "
             "training footprint). " + note)
    return st.write_md("Paper headline", intro, [headline, deployed, conditions, *per_model],
                       iterations=QUICK_ITERATIONS if st.quick else MEASURED)
