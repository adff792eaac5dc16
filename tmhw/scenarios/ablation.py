"""Ablation: TM-Training's mechanisms switched on one by one, demand paging the floor.

One model (BERT-large; quick: ResNet-50 b4) at 12.5% HBM: the static placement table
alone, then + proactive prefetch, + write-backs scheduled for when their space is needed,
+ data splitting, + the timing monitor. The monitor settles, then judges each trial
over two iterations, so a full run's warm-up is found (``run.warmup_iterations =
"auto"``, which waits for the monitor's last trial) and 2 iterations are measured
(quick: 1); the last iteration is the steady state compared.

    tmhw scenario ablation [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from typing import Any

import tmhw.sweeps as SW
from tmhw.studies import (
    Study,
    cell,
    figure_values,
    last_iteration,
    md_table,
    num,
    status_text,
    why_missing,
)
from tmhw.studies.figures import grouped_bars, stacked_bars

_TM = "policy.tm_training."
_OFF = {f"{_TM}{k}": False
        for k in ("prefetch", "writeback_schedule", "split", "monitor")}
_WB = {**_OFF, f"{_TM}prefetch": True, f"{_TM}writeback_schedule": True}
#: (variant, TM-Training's switches), each adding one mechanism to the one before.
VARIANTS = (
    ("static table", _OFF),
    ("+ prefetch", {**_OFF, f"{_TM}prefetch": True}),
    ("+ write-back scheduling", _WB),
    ("+ splitting", {**_WB, f"{_TM}split": True}),
    ("+ monitor", {**_WB, f"{_TM}split": True, f"{_TM}monitor": True}),
)


def last_ms(r: SW.Result) -> dict[str, Any]:
    """The last iteration's time and stall, ms ('' where the point did not run)."""
    t, s = last_iteration(r["report"]), last_iteration(r["report"], "flash_stall_ps")
    return {"last_iteration_ms": t / 1e9 if t is not None else "",
            "last_stall_ms": s / 1e9 if s is not None else ""}


def study(st: Study) -> str:
    """TM-Training's static table, + prefetch, + write-back scheduling, + splitting,
    + monitor, and demand paging, at 12.5% HBM."""
    m = st.model
    # quick too: with a fixed short warm-up the monitor's trials are still running in
    # the measured iteration (quick, 3 of 4 warm-up: "+ monitor" 99.0 ms against 93.5)
    iters, warm = (1 if st.quick else 2), "auto"
    run = {"policy.hbm_ratio": 0.125, "run.iterations": iters,
           "run.warmup_iterations": warm}
    # -- the grid: one point per variant, and the floor ----------------------------------
    points = [st.point(m.sets, {"variant": v, "policy": "tm-training"},
                       {**o, "policy.name": "tm-training", **run}) for v, o in VARIANTS]
    points.append(st.point(m.sets, {"variant": "demand paging", "policy": "demand"},
                           {"policy.name": "demand", **run}))
    results = st.run(points)
    st.write_csv(results, last_ms)

    # -- figures: the last iteration's time split into compute and stall; the traffic ----
    names = [r["params"]["variant"] for r in results]
    last = [last_ms(r) for r in results]
    stall = [x["last_stall_ms"] if x["last_stall_ms"] != "" else why_missing(r)
             for x, r in zip(last, results, strict=True)]
    busy = [x["last_iteration_ms"] - s if not isinstance(s, str) else s
            for x, s in zip(last, stall, strict=True)]
    st.fig(stacked_bars(names, {"compute (and overlap)": busy, "memory stall": stall},
                        st.out / "ablation_time", "last iteration (ms)",
                        f"{m.label} at 12.5% HBM: TM-Training's mechanisms"))
    st.fig(grouped_bars(names, {"inter-tier GiB": figure_values(results, "inter_tier_bytes",
                                                                2**-30)},
                        st.out / "ablation_traffic", "GiB per iteration",
                        "Inter-tier traffic"))
    rows = [[r["params"]["variant"], num(x["last_iteration_ms"] or None),
             num(x["last_stall_ms"] or None), cell(r, "inter_tier_bytes", 2**-30),
             cell(r, "samples_per_joule"), status_text(r)]
            for r, x in zip(results, last, strict=True)]
    table = md_table(["variant", "last iteration ms", "last stall ms",
                      "inter-tier GiB per iteration", "samples/J", "status"], rows)
    over = f"over {iters} iteration(s) after a warm-up that ends where the iterations repeat"
    intro = (f"TM-Training on {m.stands_for} ({m.label}) at 12.5% HBM {over}, "
             "its mechanisms switched on one by one: "
             "the static placement table alone (operands fetched on demand at each op, "
             "write-backs as soon as released), + proactive prefetch, + write-backs due "
             "when their space is needed, + data splitting, + the timing monitor (which "
             "tries its changes during the warm-up). Demand paging is the floor.")
    return st.write_md("Ablation of TM-Training", intro, [table], iters)
