"""Flash sensitivity: throughput as each flash parameter changes, one at a time.

One model (BERT-large; quick: ResNet-50 b4) at 12.5% HBM on the 990 PRO-like SSD, with
one factor changed at a time: flash channels, channel transfer rate, the device presets,
and the PCIe generation of both the SSD's and the NPU's link (x4 and x16 lanes kept).
Every tiered policy at full size; TM-Training and demand paging when quick.

    tmhw scenario flash_sensitivity [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from typing import Any

from tmhw.studies import (
    POLICIES,
    Study,
    by_params,
    cell,
    figure_values,
    md_table,
    status_text,
)
from tmhw.studies.figures import bar_panels

#: PCIe generations by label (``flash.pcie``: their lane rates and coding)
PCIE_GEN = {"gen3": 3, "gen4": 4, "gen5": 5}


def variants(quick: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """(factor, value label, overrides) of every flash configuration run."""
    channels = (4,) if quick else (4, 8, 16)
    rates = (1200,) if quick else (800, 1600, 2400, 3200)
    presets = ("pm1743", "slc-ull") if quick else \
        ("990pro", "mqsim-default", "pm1743", "slc-ull")
    gens = ("gen5",) if quick else ("gen3", "gen4", "gen5")
    out: list[tuple[str, str, dict[str, Any]]] = [("baseline", "990pro", {})] if quick \
        else []
    out += [("channels", str(c), {"flash.channels": c}) for c in channels]
    out += [("channel rate (MT/s)", str(r), {"flash.channel_rate_mtps": r}) for r in rates]
    out += [("device", d, {"flash.preset": d}) for d in presets]
    out += [("PCIe", g, {"flash.pcie_gen": PCIE_GEN[g]}) for g in gens]
    return out


def study(st: Study) -> str:
    """Throughput by flash channels, channel rate, device and PCIe generation."""
    m = st.model
    policies = ("tm-training", "demand") if st.quick else POLICIES[:-1]
    grid = variants(st.quick)
    # -- the grid: flash configuration x policy ------------------------------------------
    points = [st.point(m.sets, {"factor": f, "value": v, "policy": p},
                       {**o, "policy.name": p, "policy.hbm_ratio": 0.125})
              for f, v, o in grid for p in policies]
    results = st.run(points)
    st.write_csv(results)
    got = by_params(results, "factor", "value", "policy")

    # -- one panel per factor, each starting with the unchanged device where that is not
    # -- one of its values ---------------------------------------------------------------
    base = [("baseline", "990pro")] if ("baseline", "990pro", policies[0]) in got else []
    panels = {}
    for f in dict.fromkeys(f for f, _, _ in grid if f != "baseline"):
        keys = base + [(f, v) for ff, v, _ in grid if ff == f]
        labels = [f"{v} (base)" if ff == "baseline" else v for ff, v in keys]
        panels[f] = (labels, {p: figure_values([got[(*k, p)] for k in keys],
                                               "samples_per_s") for p in policies})
    st.fig(bar_panels(panels, st.out / "flash_sensitivity", "samples/s",
                      f"{m.label} at 12.5% HBM: throughput by flash configuration"))
    rows = [[f, v, p, cell(r, "iteration_time_ms"), cell(r, "stall_ms"),
             cell(r, "samples_per_s"), cell(r, "samples_per_joule"), status_text(r)]
            for f, v, _ in grid for p in policies for r in [got[(f, v, p)]]]
    table = md_table(["factor", "value", "policy", "iteration ms", "stall ms", "samples/s",
                      "samples/J", "status"], rows)
    intro = (f"{m.stands_for} ({m.label}) at 12.5% HBM on the 990 PRO-like SSD, one factor "
             "changed at a time: flash channels, channel transfer rate, the device presets, "
             "and the PCIe generation of both the SSD's and the NPU's link (x4 and x16 "
             "lanes kept). The paper gives no sensitivity figure.")
    return st.write_md("Flash sensitivity", intro, [table])
