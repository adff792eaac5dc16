"""HBM capacity sweep: HBM at 6.25-100% of the footprint, per policy.

One model (BERT-large; quick: ResNet-50 b4) with HBM at 6.25, 12.5, 25, 50 and 100% of
the training footprint (quick: 12.5, 50 and 100%) under every policy: inter-tier traffic,
memory stall, throughput, throughput per watt and memory cost. HBM-only always holds
the whole footprint (drawn flat).

    tmhw scenario capacity_sweep [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from collections.abc import Sequence

from tmhw.studies import (
    POLICIES,
    Study,
    by_params,
    cell,
    figure_values,
    md_table,
    status_text,
)
from tmhw.studies.figures import line_panels

RATIOS = (0.0625, 0.125, 0.25, 0.5, 1.0)
QUICK_RATIOS = (0.125, 0.5, 1.0)
#: The figures drawn and tabled: title -> (summary.csv column, scale).
FIGURES = {"inter-tier traffic per iteration (GiB)": ("inter_tier_bytes", 2**-30),
           "memory stall (ms)": ("stall_ms", 1.0),
           "throughput (samples/s)": ("samples_per_s", 1.0),
           "throughput per watt (samples/J)": ("samples_per_joule", 1.0),
           "memory cost (US$)": ("memory_usd", 1.0)}


def study(st: Study) -> str:
    """HBM at 6.25-100% of the footprint under every policy."""
    m = st.model
    ratios = QUICK_RATIOS if st.quick else RATIOS
    # -- the grid: policy x HBM ratio (HBM-only at 1.0 only) -----------------------------
    points = [st.point(m.sets, {"policy": p, "hbm_ratio": x},
                       {"policy.name": p, "policy.hbm_ratio": x})
              for p in POLICIES for x in (ratios if p != "hbm-only" else (1.0,))]
    results = st.run(points)
    st.write_csv(results)
    got = by_params(results, "policy", "hbm_ratio")
    line = {p: [got[(p, 1.0 if p == "hbm-only" else x)] for x in ratios] for p in POLICIES}

    # -- one figure of five panels, and one table per panel ------------------------------
    # hbm-only runs at 1.0 only: drawn across as the reference it is
    shown = {p: "hbm-only (whole footprint in HBM: a reference line)" if p == "hbm-only"
             else p for p in POLICIES}
    panels: dict[str, dict[str, Sequence[float | str]]] = {
        title: {shown[p]: figure_values(line[p], name, scale) for p in POLICIES}
        for title, (name, scale) in FIGURES.items()}
    st.fig(line_panels(ratios, panels, st.out / "capacity_sweep", "HBM / footprint",
                       f"{m.label}: HBM capacity sweep", logx=True,
                       xticklabels=[f"{x:.4g}" for x in ratios],
                       # hbm-only's throughput is many times a tiered policy's: on a
                       # linear axis the tiered policies were one line near zero
                       logy=("throughput (samples/s)", "throughput per watt (samples/J)")))
    sections = [f"## {title}\n\n" + md_table(
        ["policy"] + [f"{x:.2%}" for x in ratios],
        [[p] + [cell(r, name, scale) for r in line[p]] for p in POLICIES])
        for title, (name, scale) in FIGURES.items()]
    skipped = [r for r in results if r["status"] != "ok"]
    if skipped:
        sections.append("## Points that did not run\n\n" + md_table(
            ["policy", "HBM ratio", "status"],
            [[r["params"]["policy"], r["params"]["hbm_ratio"], status_text(r)]
             for r in skipped]))
    intro = (f"{m.stands_for} ({m.label}) with HBM at "
             f"{', '.join(f'{x:.4g}' for x in ratios)} of the training "
             "footprint. HBM-only always holds the whole footprint (drawn flat). The paper "
             "gives no figure per capacity beyond the 12.5% headline.")
    return st.write_md("HBM capacity sweep", intro, sections)
