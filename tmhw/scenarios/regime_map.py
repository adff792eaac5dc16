"""Regime map: where static placement pays, across HBM capacity and flash bandwidth.

BERT-large and a GPT-3 block (quick: their stand-ins) at HBM from 1/16 to all of the
footprint, and with 1 to 16 SSDs of the 990 PRO class in RAID-0 (``flash.devices``; the
NPU's PCIe port widens with them, 4 lanes per SSD and at least 16, so that the axis is
the flash bandwidth and not the port). Each cell runs TM-Training and every prior
system (2 iterations, the first warm-up; full: 2 measured after a warm-up that ends
where the iterations repeat), and gives TM-Training's gain over the best
prior system that runs there: in time (the best's iteration time over TM-Training's,
minus 1), in traffic (1 minus TM-Training's over the fewest bytes any prior system
moves) and in samples per joule. A thick line separates the cells where TM-Training's
time lower bound is the NPU's compute from those where it is flash or the link.

The practitioner's question beside it: per cell, which strategy trains fastest on this
machine, among recomputation alone (the ``recompute`` policy: nothing offloaded), the
best offloading policy (TM-Training, the prior systems, SSDTrain, ZeRO-Infinity), and
TM-Training with recomputation (``policy.tm_training.recompute`` selective, per
layer or per tensor, the fastest); the winners' map gives the winner and its margin
over the next. The machine whose HBM holds the footprint is the other answer, at its
own price: the table gives its throughput per dollar of memory and NPU
(``samples_per_s_per_usd``) over the winner's.

    tmhw scenario regime_map [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

import math
from typing import Any

import tmhw.sweeps as SW
from tmhw import config as C
from tmhw.studies import (
    BASELINES,
    DOES_NOT_FIT,
    Study,
    best_of,
    by_params,
    does_not_fit,
    fig_of,
    md_table,
    pct,
)
from tmhw.studies.figures import heatmaps

RATIOS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)
DEVICES = (1, 2, 4, 8, 16)
QUICK_RATIOS = (1 / 8, 1.0)
QUICK_DEVICES = (1, 4)
ITERATIONS = 2
POLICIES = ("tm-training", *BASELINES)
#: every run of a cell: (policy, TM-Training's recomputation or "") beyond ``POLICIES``
OFFLOAD = ("tm-training", *BASELINES, "ssdtrain", "zero-infinity")
RUNS = (*((p, "") for p in OFFLOAD), ("recompute", ""), ("tm-training", "selective"),
        ("tm-training", "layer"), ("tm-training", "tensors"))
#: the strategies of the winners' map, each the best of its runs (HBM-only is a run of
#: its own per model and SSD count)
STRATEGIES = {"recompute": (("recompute", ""),),
              "offload": tuple((p, "") for p in OFFLOAD),
              "TM + recompute": (("tm-training", "selective"), ("tm-training", "layer"),
                                 ("tm-training", "tensors"))}
#: strategies within this fraction of the fastest's time tie with it
TIE = 0.001
NO_BASELINE = "no prior system fits"
NOTHING_FITS = "no policy fits"
TM_UNFIT = "TM-Training does not fit"
#: metric -> (figure, whether lower is better): the gain is positive where TM-Training wins
METRICS = {"time": ("iteration_time_ms", True), "traffic": ("inter_tier_bytes", True),
           "samples per joule": ("samples_per_joule", False)}


def gain(tm: SW.Result | None, best: SW.Result | None, name: str,
         lower: bool) -> float | str:
    """TM-Training's gain over ``best`` on figure ``name`` (positive: TM-Training wins)."""
    a, b = fig_of(tm, name), fig_of(best, name)
    if does_not_fit(tm):
        return TM_UNFIT if best is not None else NOTHING_FITS
    if best is None:
        return NO_BASELINE
    if a is None or b is None:
        return "-"
    if name == "inter_tier_bytes":
        return 1 - a / b if b else 0.0
    return (b / a - 1 if lower else a / b - 1) if a and b else 0.0


def compute_bound(r: SW.Result | None) -> bool:
    """Whether the run's time lower bound is the NPU's compute (not flash or the link)."""
    b = r["report"]["bounds"] if r is not None and r["report"] is not None else {}
    return bool(b) and b["npu_ps"] >= b["iteration_time_ps"]


def study(st: Study) -> str:
    """TM-Training's gain over the best prior system across HBM ratio x flash bandwidth."""
    ratios, devices = (QUICK_RATIOS, QUICK_DEVICES) if st.quick else (RATIOS, DEVICES)
    models = [m for m in st.models if m.stands_for in ("BERT-large", "GPT-3 block")] \
        or list(st.models[:1])
    # -- the grid: model x HBM ratio x SSDs x policy --------------------------------------
    def pt(m: Any, x: float, d: int, p: str, rc: str) -> dict[str, Any]:
        sets = {"policy.name": p, "policy.hbm_ratio": x, "flash.devices": d,
                "link.lanes": max(16, 4 * d)}
        if rc:
            sets["policy.tm_training.recompute"] = rc
        return st.point({**m.sets, "run.iterations": ITERATIONS},
                        {"model": m.stands_for, "hbm_ratio": x, "devices": d, "policy": p,
                         "recompute": rc}, sets)

    points = [pt(m, x, d, p, rc) for m in models for x in ratios for d in devices
              for p, rc in RUNS]
    points += [pt(m, 1.0, d, "hbm-only", "") for m in models for d in devices]
    results = st.run(points)
    every = by_params(results, "model", "hbm_ratio", "devices", "policy", "recompute")
    got = {k[:4]: r for k, r in every.items() if not k[4]}

    def cell(m: str, x: float, d: int) -> dict[str, Any]:
        tm = got[(m, x, d, "tm-training")]
        out: dict[str, Any] = {"compute_bound": compute_bound(tm)}
        for metric, (name, lower) in METRICS.items():
            best = best_of([got[(m, x, d, b)] for b in BASELINES], name, lower)
            out[metric] = gain(tm, best, name, lower)
            out[f"{metric} best"] = best["params"]["policy"] if best is not None else ""
        return out

    cells = {(m.stands_for, x, d): cell(m.stands_for, x, d)
             for m in models for x in ratios for d in devices}

    def winner(m: str, x: float, d: int) -> tuple[float | str, str, float | None]:
        """The margin in time of the fastest strategy over the next (or why there is
        none), the winner's name with its run, and HBM-only's throughput per dollar over
        the winner's (None: no winner)."""
        best = {}
        unfit = []
        for name, runs in STRATEGIES.items():
            rs = [every.get((m, x, d, p, rc)) for p, rc in runs]
            r = best_of(rs, "iteration_time_ms")
            if r is not None:
                best[name] = r
            elif all(does_not_fit(q) for q in rs):
                unfit.append(name)
        why = f"\n{', '.join(unfit)}: {DOES_NOT_FIT}" if unfit else ""
        if not best:
            return NOTHING_FITS, why.strip(), None
        ranked = sorted(best.items(), key=lambda kv: fig_of(kv[1], "iteration_time_ms")
                        or math.inf)
        top, r = ranked[0]
        run = r["params"]["policy"] + (f" ({r['params']['recompute']})"
                                       if r["params"]["recompute"] else "")
        label = (top if top == "recompute" else f"{top}: {run}") + why
        usd, ho = (fig_of(q, "samples_per_s_per_usd")
                   for q in (r, every.get((m, 1.0, d, "hbm-only", ""))))
        per_usd = ho / usd - 1 if usd and ho else None
        if len(ranked) == 1:
            return "only one fits", label, per_usd
        a = fig_of(r, "iteration_time_ms") or 0.0
        tied = [n for n, q in ranked if (fig_of(q, "iteration_time_ms") or math.inf)
                <= a * (1 + TIE)]
        if len(tied) > 1:
            label = "tie: " + ", ".join(tied) + why
            ranked = [(n, q) for n, q in ranked if n not in tied[1:]]
        if len(ranked) == 1:
            return 0.0, label, per_usd
        b = fig_of(ranked[1][1], "iteration_time_ms") or 0.0
        return (b / a - 1 if a else 0.0), label, per_usd

    wins = {(m.stands_for, x, d): winner(m.stands_for, x, d)
            for m in models for x in ratios for d in devices}

    def extra(r: SW.Result) -> dict[str, Any]:
        key = (r["params"]["model"], r["params"]["hbm_ratio"], r["params"]["devices"])
        if key not in cells:                  # HBM-only's own runs at ratio 1
            return {}
        c = cells[key]
        margin, win, per_usd = wins[key]
        return {**{f"gain_{k.replace(' ', '_')}": v for k, v in c.items()},
                "winner": win, "winner_margin": margin,
                "hbm_only_per_usd_over_winner": "" if per_usd is None else per_usd}

    st.write_csv(results, extra)

    def unfit(m: str, x: float, d: int) -> str:
        """Which policies do not fit the cell, and which failed ("" when all ran)."""
        names = [p for p in POLICIES if does_not_fit(got[(m, x, d, p)])]
        failed = [p for p in POLICIES if (r := got[(m, x, d, p)]) is not None
                  and r["status"] == "error"]
        out = [f"{DOES_NOT_FIT}: every policy" if len(names) == len(POLICIES) else
               f"{DOES_NOT_FIT}: every prior system" if len(names) == len(BASELINES) else
               f"{DOES_NOT_FIT}: {', '.join(names)}" if names else "",
               f"failed: {', '.join(failed)}" if failed else ""]
        return "; ".join(filter(None, out))

    def bound_of(m: str, x: float, d: int) -> str:
        """What bounds TM-Training's time in the cell ("" when it did not run)."""
        tm = got[(m, x, d, "tm-training")]
        if tm is None or tm["report"] is None:
            return ""
        return "compute" if cells[(m, x, d)]["compute_bound"] else "flash/link"

    # -- per model: one heatmap per metric, the compute-bound cells outlined --------------
    rows = [f"{x:.4g}" for x in ratios]
    # an SSD's share of the axis: a long read's payload rate over its PCIe link
    ssd = C.from_dict(points[0]["config"]).flash.host_read_bytes_per_s / 1e9
    cols = [f"{d} ({ssd * d:.3g} GB/s)" for d in devices]
    sections = []
    for m in models:
        key = m.stands_for
        grids = {metric: [[cells[(key, x, d)][metric] for d in devices] for x in ratios]
                 for metric in METRICS}
        bound = [[cells[(key, x, d)]["compute_bound"] for d in devices] for x in ratios]
        st.fig(heatmaps({f"gain in {k}": g for k, g in grids.items()}, rows, cols,
                        st.out / f"regime_map_{key.replace(' ', '_').lower()}",
                        "HBM / footprint", "SSDs (flash bandwidth)",
                        f"{m.label}: TM-Training's gain over the best prior system "
                        "(thick line: where its time bound turns from flash to compute)",
                        boundary=bound, boundary_label="compute-bound", cbar="gain",
                        notes=[[unfit(key, x, d) for d in devices] for x in ratios]))
        for metric, grid in grids.items():
            body = [[r, *[v if isinstance(v, str) else pct(v) for v in g]]
                    for r, g in zip(rows, grid, strict=True)]
            sections.append(f"## {key} ({m.label}): gain in {metric}\n\n"
                            + md_table(["HBM / footprint", *cols], body))
        marks = [[r, *["; ".join(filter(None, (bound_of(key, x, d), unfit(key, x, d))))
                       for d in devices]]
                 for r, x in zip(rows, ratios, strict=True)]
        sections.append(f"## {key}: what bounds TM-Training's time, and what does not "
                        "fit\n\n" + md_table(["HBM / footprint", *cols], marks))
        # -- the winners' map -------------------------------------------------------------
        margins = [[wins[(key, x, d)][0] for d in devices] for x in ratios]
        names = [[wins[(key, x, d)][1] for d in devices] for x in ratios]
        st.fig(heatmaps({"winner's margin in time over the next strategy": margins},
                        rows, cols,
                        st.out / f"regime_winners_{key.replace(' ', '_').lower()}",
                        "HBM / footprint", "SSDs (flash bandwidth)",
                        f"{m.label}: the fastest strategy on this machine (named in each "
                        "cell) and its margin over the next", cbar="margin", notes=names))

        def text(x: float, d: int, key: str = key) -> str:
            margin, name, per_usd = wins[(key, x, d)]
            # the margin beside the winner it is of, then what does not fit
            head, _, unfit_note = name.partition("\n")
            out = (f"{head} ({margin if isinstance(margin, str) else pct(margin)})"
                   + (f"; {unfit_note}" if unfit_note else ""))
            return out + (f"; HBM-only {pct(per_usd)} per $" if per_usd is not None
                          else "")
        body = [[r, *[text(x, d) for d in devices]] for r, x in zip(rows, ratios,
                                                                     strict=True)]
        sections.append(f"## {key}: the fastest strategy on this machine (its margin in "
                        "time over the next), and the throughput per dollar of HBM-only "
                        "over it\n\n" + md_table(["HBM / footprint", *cols], body))
    intro = ("TM-Training's gain over the best prior system (of "
             f"{', '.join(BASELINES)}) that runs in each cell; positive: TM-Training "
             f"wins. Columns: SSDs of the 990 PRO class ({ssd:.3g} GB/s each: a long read's "
             "payload rate over its PCIe link).")
    return st.write_md("Regime map", intro, sections, iterations=ITERATIONS)
