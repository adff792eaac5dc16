"""Robustness: TM-Training against every tuned rival on cells outside the paper's grid.

Five models the headline does not run (GPT-2 large 4 layers s256 b8, BERT-base 12 layers
s128 b32, VGG-16 b16, a T5-base encoder of 6 layers s256 b16, and a six-layer MLP of
4096-wide linear layers over 512 tokens a sample, b16, from the SCALE-Sim topology
``mlp6.csv`` beside this script), at 1/4, 3/8 and 1/2 HBM, on each SSD preset (the 990
PRO-, PM1743- and SLC-class devices) with one and two devices; every tiered policy,
the rivals tuned per cell (``policy.tune``). A conclusion about static placement must
hold on cells nobody tuned the planner for: per cell, TM-Training's time against the
fastest rival and against its time bound. Quick: the quick stand-ins at 1/4 and 1/2 HBM
on one PM1743 (the die-bound device), against demand paging and AutoTM at their defaults.

    tmhw scenario robustness [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tmhw.sweeps as SW
from tmhw.studies import (
    BASELINES,
    PRACTICAL,
    Model,
    Study,
    by_params,
    does_not_fit,
    fig_of,
    md_table,
    num,
    pct,
    workload,
)
from tmhw.studies.figures import heatmaps

MLP = str(Path(__file__).with_name("mlp6.csv"))
MODELS = (
    Model("GPT-2 large", "gpt2-large 4 layers s256 b8", workload("gpt2-large", 8, 256, 4)),
    Model("BERT-base", "bert-base 12 layers s128 b32", workload("bert-base", 32, 128, 12)),
    Model("VGG-16", "vgg16 b16", workload("vgg16", 16)),
    Model("T5 encoder", "t5-encoder 6 layers s256 b16", workload("t5-encoder", 16, 256, 6)),
    Model("MLP", "mlp6 (6 x 4096 wide, 512 tokens) b16", workload(MLP, 16)),
)
RATIOS, QUICK_RATIOS = (0.25, 0.375, 0.5), (0.25, 0.5)
#: preset -> the SSD it names
PRESETS = {"paper": "990 PRO", "paper-pm1743": "PM1743", "paper-slc": "SLC"}
QUICK_PRESETS = ("paper-pm1743",)
DEVICES, QUICK_DEVICES = (1, 2), (1,)
#: the offloading rivals (recomputation, which moves nothing, and the hybrids with it,
#: Capuchin's and TM-Training's, are compared in the headline and the regime map)
RIVALS = ("demand", "demand-belady", "sentinel", "autotm", "flatflash", "flashneuron",
          *(p for p in PRACTICAL if p not in ("recompute", "capuchin", "tm-recompute")))
QUICK_RIVALS = ("demand", "autotm")
#: measured iterations, after a warm-up that ends where the iterations repeat
#: (``run.warmup_iterations = "auto"``: TM-Training's monitor has judged its trials, every
#: policy's iterations repeat within 0.5%)
ITERATIONS = 2
#: how much slower than the fastest rival TM-Training may be before a cell is flagged
SLACK = 0.01


def study(st: Study) -> str:
    """TM-Training's time against the fastest tuned rival and its bound, cell by cell."""
    models = st.models if st.quick else MODELS
    ratios = QUICK_RATIOS if st.quick else RATIOS
    presets = QUICK_PRESETS if st.quick else tuple(PRESETS)
    devices = QUICK_DEVICES if st.quick else DEVICES
    rivals = QUICK_RIVALS if st.quick else RIVALS
    policies = ("tm-training", *rivals)
    # -- the grid: model x ratio x preset x devices x policy ------------------------------
    by_name = {m.stands_for: m for m in models}
    cells = [(m.stands_for, x, p, d) for m in models for x in ratios for p in presets
             for d in devices]
    points = [st.point({**by_name[m].sets, "run.iterations": ITERATIONS,
                        "run.warmup_iterations": "auto"},
                       {"model": m, "hbm_ratio": x, "preset": p, "devices": d,
                        "policy": pol},
                       {"policy.name": pol, "policy.hbm_ratio": x, "flash.devices": d,
                        "link.lanes": max(16, 4 * d)}, preset=p)
              for m, x, p, d in cells for pol in policies]
    results = st.run(points)
    got = by_params(results, "model", "hbm_ratio", "preset", "devices", "policy")

    def verdict(m: str, x: float, p: str, d: int) -> dict[str, Any]:
        tm = got[(m, x, p, d, "tm-training")]
        ran = [(t, pol) for pol in rivals
               if (t := fig_of(got[(m, x, p, d, pol)], "iteration_time_ms")) is not None]
        t_tm = fig_of(tm, "iteration_time_ms")
        best = min(ran) if ran else None
        out: dict[str, Any] = {"tm_ms": t_tm, "best": best[1] if best else "",
                               "best_ms": best[0] if best else None,
                               "time_bound": fig_of(tm, "time_bound_ratio"),
                               # a steady state found: the iterations repeated
                               "steady": tm is not None and tm["report"] is not None
                               and bool(tm["report"]["measurement"]["steady_state"])
                               and tm["report"]["measurement"]["converged"] is not False}
        if does_not_fit(tm):
            out["gain"] = "TM-Training does not fit"
        elif best is None:
            out["gain"] = "no rival fits"
        elif t_tm is None:
            out["gain"] = "-"
        else:
            out["gain"] = best[0] / t_tm - 1
        return out

    verdicts = {c: verdict(*c) for c in cells}

    def extra(r: SW.Result) -> dict[str, Any]:
        q = r["params"]
        v = verdicts[(q["model"], q["hbm_ratio"], q["preset"], q["devices"])]
        return {"tm_gain_over_best_rival": v["gain"], "best_rival": v["best"]}

    st.write_csv(results, extra)

    # -- the table, the cells TM-Training loses, and one heatmap per device set ----------
    rows, losses = [], []
    for c in cells:
        v = verdicts[c]
        m, x, p, d = c
        gain = v["gain"]
        rows.append([m, f"{x:g}", PRESETS[p], str(d), num(v["tm_ms"]),
                     f"{v['best']} ({num(v['best_ms'])})" if v["best"] else "-",
                     pct(gain) if isinstance(gain, float) else gain,
                     num(v["time_bound"]), "yes" if v["steady"] else "no"])
        if isinstance(gain, float) and gain < -SLACK:
            losses.append(f"{m} at {x:g} HBM on {d} {PRESETS[p]}: "
                          f"{pct(-gain)} slower than {v['best']}")
    table = md_table(["model", "HBM", "SSD", "SSDs", "TM-Training ms", "fastest rival (ms)",
                      "TM-Training's gain", "TM time / bound", "steady"], rows)
    gains = [v["gain"] for v in verdicts.values() if isinstance(v["gain"], float)]
    summary = (f"TM-Training ran against a rival in {len(gains)} of {len(cells)} cells; "
               f"it is more than {SLACK:.0%} slower than the fastest rival in "
               f"{len(losses)} of them" + (f" (its smallest gain: {pct(min(gains))})."
                                           if gains else "."))
    lost = ("\n".join(f"- {line}" for line in losses) if losses
            else "- none")
    names = [m.stands_for for m in models]
    panels = {f"{PRESETS[p]}, {d} SSD{'s' if d > 1 else ''}":
              [[verdicts[(m, x, p, d)]["gain"] for x in ratios] for m in names]
              for p in presets for d in devices}
    st.fig(heatmaps(panels, names, [f"{x:g}" for x in ratios], st.out / "robustness",
                    "model", "HBM ratio", "TM-Training's time gain over the fastest "
                    "rival (positive: TM-Training faster)", cbar="gain",
                    max_cols=len(devices)))
    intro = ("TM-Training against every rival (" + ", ".join(rivals) + "; "
             + ("at their defaults" if st.quick else "each tuned per cell, `policy.tune`")
             + f") on cells outside the paper's grid, {ITERATIONS} measured iterations after a "
             "warm-up that ends where the iterations repeat (`run.warmup_iterations = "
             '"auto"`). Gain: the fastest rival\'s iteration time over TM-Training\'s, '
             f"minus one. The paper's prior systems are {', '.join(BASELINES)}.\n\n" + summary)
    return st.write_md("Robustness", intro,
                       ["## Every cell\n\n" + table,
                        f"## Cells where TM-Training is more than {SLACK:.0%} slower\n\n"
                        + lost], iterations=ITERATIONS)
