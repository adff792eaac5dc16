"""Flash endurance: flash writes, write amplification and projected lifetime per policy.

One model (BERT-large; quick: ResNet-50 b4) at 12.5% HBM under every tiered policy, on
the 990 PRO-like SSD preconditioned to 90% full (as after months of use), so that
writes make garbage collection run and write amplification show. The paper gives no
endurance figure.

    tmhw scenario endurance [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from typing import Any

import tmhw.sweeps as SW
from tmhw.studies import (
    POLICIES,
    Study,
    bar,
    cell,
    fig_of,
    gib,
    md_table,
    num,
    status_text,
    why_missing,
)
from tmhw.studies.figures import grouped_bars

#: A projected lifetime below zero means the run wore nothing out (no programs).
NO_WEAR = "no wear"


def writes_per_iteration(r: SW.Result) -> dict[str, Any]:
    """Host writes to the flash per iteration, bytes (nothing where the point did not
    run)."""
    rep = r["report"]
    if rep is None:
        return {}
    written = rep["run_total"]["system"]["flash"]["bytes_written"]
    return {"flash_writes_bytes_per_iteration":
            written / max(1, rep["measurement"]["iterations"])}


def study(st: Study) -> str:
    """Flash writes, WAF and days to the P/E limit of every tiered policy."""
    m = st.model
    points = [st.point(m.sets, {"policy": p}, {"policy.name": p, "policy.hbm_ratio": 0.125,
                                               "run.precondition": 0.9})
              for p in POLICIES[:-1]]
    results = st.run(points)
    st.write_csv(results, writes_per_iteration)
    writes = [writes_per_iteration(r).get("flash_writes_bytes_per_iteration")
              for r in results]
    life = [fig_of(r, "lifetime_days") for r in results]

    # -- figures -------------------------------------------------------------------------
    names = [r["params"]["policy"] for r in results]
    st.fig(grouped_bars(names, {"flash writes per iteration (GiB)": [
        bar(r, w / 2**30 if w is not None else None) for r, w in zip(results, writes,
                                                                      strict=True)]},
        st.out / "flash_writes", "GiB", f"{m.label}: flash writes"))
    st.fig(grouped_bars(names, {"projected lifetime (days)": [
        why_missing(r) if v is None else NO_WEAR if v < 0 else v
        for r, v in zip(results, life, strict=True)]},
        st.out / "lifetime", "days of continuous training",
        f"{m.label}: days to the P/E limit", log=True))

    # -- the table -----------------------------------------------------------------------
    rows = [[r["params"]["policy"], num(gib(w)) if w is not None else why_missing(r),
             cell(r, "waf"), cell(r, "erases"), cell(r, "pe_cycles_per_iteration"),
             NO_WEAR if v is not None and v < 0 else cell(r, "lifetime_days"),
             status_text(r)] for r, w, v in zip(results, writes, life, strict=True)]
    table = md_table(["policy", "flash writes GiB/iter", "WAF", "erases (run)",
                      "P/E cycles/iter", "lifetime days", "status"], rows)
    intro = (f"Flash wear of {m.stands_for} ({m.label}) at 12.5% HBM on the 990 PRO-like "
             "SSD preconditioned to 90% full: host writes per iteration, the FTL's write "
             "amplification, and the projected days of continuous training until the "
             "device reaches its P/E limit at this rate of programs per iteration. A short "
             "run writes far less than the device's free blocks, so garbage collection may "
             "not have started (WAF 1, no erases) and the projection is then optimistic; "
             "more iterations (`--set run.iterations=N`) approach the steady state. "
             "HBM-only writes nothing to flash. The paper gives no endurance figure.")
    return st.write_md("Flash endurance", intro, [table])
