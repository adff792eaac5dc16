"""Energy breakdown: energy per iteration by component and by action, per policy.

One model (BERT-large; quick: ResNet-50 b4) at 12.5% HBM under every policy: NPU (MACs,
scratchpad, vector unit, static power), HBM (activate, read, write, refresh,
background), flash (array, channel, controller, idle) and the DMA engine and host link.
The paper gives throughput per watt only (see paper_headline).

    tmhw scenario energy_breakdown [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from typing import Any

import tmhw.sweeps as SW
from tmhw.studies import POLICIES, Study, cell, md_table, num, status_text, why_missing
from tmhw.studies.figures import stacked_bars

COMPONENTS = ("npu", "hbm", "flash", "dma")


def per_iteration_j(r: SW.Result, pj: float) -> float:
    """``pj`` picojoules of the whole run of ``r`` as joules per iteration."""
    return float(pj) / max(1, int(r["report"]["measurement"]["iterations"])) * 1e-12


def actions(r: SW.Result) -> dict[str, float]:
    """Energy per iteration of each component action, J, from the report's
    system.<component>.energy_pj.<action> (empty where the point did not run)."""
    out: dict[str, float] = {}
    system = r["report"]["run_total"]["system"] if r["report"] is not None else {}
    for comp in COMPONENTS:
        for k, v in system.get(comp, {}).get("energy_pj", {}).items():
            if k != "total" and isinstance(v, int | float):
                out[f"{comp}.{k}"] = out.get(f"{comp}.{k}", 0.0) + per_iteration_j(r, v)
    return out


def study(st: Study) -> str:
    """Energy per iteration by component and by action, every policy at 12.5% HBM."""
    m = st.model
    points = [st.point(m.sets, {"policy": p}, {"policy.name": p, "policy.hbm_ratio": 0.125})
              for p in POLICIES]
    results = st.run(points)

    def extra(r: SW.Result) -> dict[str, Any]:
        return {f"energy_{k}_j_per_iteration": v for k, v in sorted(actions(r).items())}

    st.write_csv(results, extra)

    # -- figures: one stacked bar per policy, by component and by action -----------------
    names = [r["params"]["policy"] for r in results]

    def stack(keys: list[str], value: Any) -> dict[str, list[float | str]]:
        return {k: [value(r, k) if r["report"] is not None else why_missing(r)
                    for r in results] for k in keys}

    st.fig(stacked_bars(names, stack(list(COMPONENTS), lambda r, c: float(
        r["report"]["steady"]["energy_pj"].get(c, 0.0)) * 1e-12), st.out / "energy_by_component",
        "energy per iteration (J)", f"{m.label} at 12.5% HBM"))
    acts = sorted({k for r in results for k in actions(r)})
    st.fig(stacked_bars(names, stack(acts, lambda r, a: actions(r).get(a, 0.0)),
                        st.out / "energy_by_action", "energy per iteration (J)",
                        f"{m.label}: energy per component action"))

    # -- the table -----------------------------------------------------------------------
    def joules(r: SW.Result, c: str) -> str:
        e = r["report"]["steady"]["energy_pj"] if r["report"] is not None else {}
        return num(float(e[c]) * 1e-12) if c in e else why_missing(r)

    rows = [[r["params"]["policy"], *(joules(r, c) for c in COMPONENTS), joules(r, "total"),
             cell(r, "avg_power_w"), cell(r, "samples_per_joule"), status_text(r)]
            for r in results]
    table = md_table(["policy"] + [f"{c} J" for c in COMPONENTS]
                     + ["total J", "avg W", "samples/J", "status"], rows)
    intro = (f"Energy per iteration of {m.stands_for} ({m.label}) at 12.5% HBM, by "
             "component (NPU MACs, scratchpad, vector unit and static power; HBM "
             "activate/read/write/refresh/background; flash array, channel, controller and "
             "idle; DMA engine and host link) and, in energy_by_action, by action. The "
             "paper gives throughput per watt only (see paper_headline).")
    return st.write_md("Energy breakdown", intro, [table])
