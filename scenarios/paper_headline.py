#!/usr/bin/env python3
"""Paper headline: every policy on three models at 12.5% HBM, beside the paper's figures.

ResNet-50, BERT-large and a GPT-3 block (quick: ResNet-50 b4, BERT-base 3 layers, GPT-2
small) at 12.5% HBM under every policy. The headline compares TM-Training's inter-tier
traffic and throughput per watt with each prior system, and its memory cost with
HBM-only, beside the paper's -64%, +55% and -87% (TM-Training, ACM ToS 21(4), 2025,
abstract, doi:10.1145/3721484). Also writes ``report.json``: the TM-Training run of the
first model (the first run that completed if that one did not).

    .venv/bin/python scenarios/paper_headline.py [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from collections.abc import Sequence

import tmhw
import tmhw.sweeps as SW
from tmhw.studies import (
    BASELINES,
    POLICIES,
    Study,
    by_params,
    cell,
    fig_of,
    figure_values,
    md_table,
    mean_pct,
    pct,
    script_main,
    status_text,
    why_missing,
)
from tmhw.studies.figures import grouped_bars

HBM_RATIO = 0.125
#: The paper's headline figures (abstract): traffic and memory cost reductions, and the
#: gain in samples per joule, each against the prior systems.
PAPER_TRAFFIC_REDUCTION = 0.64
PAPER_SPJ_GAIN = 0.55
PAPER_COST_REDUCTION = 0.87


def change(new: SW.Result, old: SW.Result, name: str) -> float | None:
    """The relative change of figure ``name`` from ``old`` to ``new`` (None if missing)."""
    a, b = fig_of(new, name), fig_of(old, name)
    return a / b - 1 if a is not None and b else None


def study(st: Study) -> str:
    """Every policy on three models at 12.5% HBM, beside the paper's headline figures."""
    # -- the grid: models x policies -----------------------------------------------------
    points = [st.point(m.sets, {"model": m.stands_for, "workload": m.label, "policy": p},
                       {"policy.name": p, "policy.hbm_ratio": HBM_RATIO})
              for m in st.models for p in POLICIES]
    results = st.run(points)
    st.write_csv(results)
    got = by_params(results, "model", "policy")

    # -- per model: every policy's figures -----------------------------------------------
    per_model = []
    for m in st.models:
        rows = [[p, cell(r, "iteration_time_ms"), cell(r, "stall_ms"),
                 cell(r, "inter_tier_bytes", 2**-30), cell(r, "samples_per_s"),
                 cell(r, "samples_per_joule"), cell(r, "memory_usd", digits=4),
                 status_text(r)]
                for p in POLICIES for r in [got[(m.stands_for, p)]]]
        per_model.append(f"## {m.stands_for} ({m.label}), HBM 12.5% of the footprint\n\n"
                         + md_table(["policy", "iteration ms", "stall ms", "inter-tier GiB",
                                     "samples/s", "samples/J", "memory $", "status"], rows))

    # -- the headline: TM-Training against each baseline ----------------------------------
    def vs(m: str, name: str, b: str) -> float | None:
        return change(got[(m, "tm-training")], got[(m, b)], name)

    def col(m: str, name: str) -> list[str]:
        return [pct(v) if v is not None else why_missing(got[(m, b)])
                for b in BASELINES for v in [vs(m, name, b)]]

    head_rows = []
    for m in (mm.stands_for for mm in st.models):
        traffic = [vs(m, "inter_tier_bytes", b) for b in BASELINES]
        spj = [vs(m, "samples_per_joule", b) for b in BASELINES]
        head_rows.append([m, *col(m, "inter_tier_bytes"), mean_pct(traffic),
                          *col(m, "samples_per_joule"), mean_pct(spj),
                          pct(vs(m, "memory_usd", "hbm-only"))])
    head_rows.append(["**paper**", *["" for _ in BASELINES],
                      f"-{PAPER_TRAFFIC_REDUCTION:.0%}", *["" for _ in BASELINES],
                      f"+{PAPER_SPJ_GAIN:.0%}", f"-{PAPER_COST_REDUCTION:.0%}"])
    headers = (["model"] + [f"traffic vs {b}" for b in BASELINES] + ["traffic vs prior (mean)"]
               + [f"samples/J vs {b}" for b in BASELINES] + ["samples/J vs prior (mean)"]
               + ["memory cost vs hbm-only"])
    headline = ("## Headline: TM-Training against each policy\n\n"
                "Inter-tier traffic change (negative: less traffic), throughput-per-watt "
                "change (positive: better) and memory cost change against HBM-only; the "
                "paper's figures are in the last row. 'does not fit' where the baseline "
                "cannot run at this HBM capacity, '-' where a run is missing (see the "
                "status column below); the means are over the baselines that ran.\n\n"
                + md_table(headers, head_rows))

    # -- figures -------------------------------------------------------------------------
    models = [m.stands_for for m in st.models]

    def series(name: str, policies: Sequence[str], scale: float = 1.0
               ) -> dict[str, Sequence[float | str]]:
        return {p: figure_values([got[(m, p)] for m in models], name, scale)
                for p in policies}

    st.fig(grouped_bars(models, series("inter_tier_bytes", POLICIES[:-1], 2**-30),
                        st.out / "inter_tier_traffic",
                        "inter-tier traffic per iteration (GiB)",
                        "Flash <-> HBM traffic at 12.5% HBM"))
    st.fig(grouped_bars(models, series("samples_per_joule", POLICIES),
                        st.out / "throughput_per_watt", "samples per joule",
                        "Throughput per watt at 12.5% HBM", log=True))
    st.fig(grouped_bars(models, series("memory_usd", ("tm-training", "hbm-only")),
                        st.out / "memory_cost", "memory cost (US$)",
                        "Memory hardware cost: 12.5% HBM + flash vs HBM-only", log=True))

    # -- one whole report ----------------------------------------------------------------
    first = next((r for r in results if r["report"] is not None), None)
    note = "No run completed, so no report.json was written."
    if first is not None:
        tmhw.Report(first["report"]).save(st.out)
        note = (f"`report.json` is the {first['params']['policy']} run of "
                f"{first['params']['workload']}.")
    intro = ("TM-Training against FlatFlash, FlashNeuron, Sentinel, AutoTM, demand paging "
             "and HBM-only at 12.5% HBM (HBM = 1/8 of the training footprint). " + note)
    return st.write_md("Paper headline", intro, [headline] + per_model)


if __name__ == "__main__":
    raise SystemExit(script_main(study))
