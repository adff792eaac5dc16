"""Keep, move or recompute: TM-Training with recomputation (``tm-recompute``, which tunes
none, selective, per-layer and per-tensor recomputation and keeps the fastest) against
the pure strategies and Capuchin's per-tensor hybrid.

Per model, HBM ratio and SSD count, four runs: ``tm-recompute``, TM-Training alone
(moves only), ``recompute`` (recomputes only, nothing moved) and ``capuchin`` (swap or
recompute per tensor by Capuchin's cost rule). The table gives each time, the
recomputation the hybrid chose, its time over the best of the other three (at most 1.01
is the claim this study checks) and its gain over the faster pure strategy; one figure per
model shows the four times per cell. Models: the studies' three and GPT-2 small at sequence
1024, batch 8; ratios 1/8, 1/4 and 1/2; one and four 990 PRO-class SSDs. Quick: the
stand-ins at 1/4 and 1/2 on one SSD, ``tm-recompute`` tuned as in the full study.

    tmhw scenario hybrid [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from typing import Any

from tmhw.studies import (
    DOES_NOT_FIT,
    Model,
    Study,
    by_params,
    fig_of,
    md_table,
    num,
    why_missing,
    workload,
)
from tmhw.studies.figures import grouped_bars

GPT2 = Model("GPT-2 small", "gpt2-small s1024 b8", workload("gpt2-small", 8, 1024))
RATIOS, QUICK_RATIOS = (0.125, 0.25, 0.5), (0.25, 0.5)
DEVICES, QUICK_DEVICES = (1, 4), (1,)
#: the hybrid, then what it is measured against: moving only, recomputing only, and
#: Capuchin's per-tensor choice
HYBRID = "tm-recompute"
OTHERS = ("tm-training", "recompute", "capuchin")
POLICIES = (HYBRID, *OTHERS)
#: the hybrid's time over the best of the others that the study checks against
CLAIM = 1.01


def study(st: Study) -> str:
    """The hybrid against moving only, recomputing only and Capuchin, per cell."""
    models = st.models if st.quick else (*st.models, GPT2)
    ratios = QUICK_RATIOS if st.quick else RATIOS
    devices = QUICK_DEVICES if st.quick else DEVICES
    points = [st.point({**m.sets, "flash.devices": d},
                       {"model": m.stands_for, "hbm_ratio": x, "devices": d, "policy": p},
                       {"policy.name": p, "policy.hbm_ratio": x,
                        **({"policy.tune": True} if p == HYBRID else {})})
              for m in models for x in ratios for d in devices for p in POLICIES]
    results = st.run(points)
    st.write_csv(results)
    got = by_params(results, "model", "hbm_ratio", "devices", "policy")

    def ms(m: Model, x: float, d: int, p: str) -> float | None:
        return fig_of(got[(m.stands_for, x, d, p)], "iteration_time_ms")

    rows, over, gains = [], [], []
    for m in models:
        for x in ratios:
            for d in devices:
                t = {p: ms(m, x, d, p) for p in POLICIES}
                hy = got[(m.stands_for, x, d, HYBRID)]
                shown = [num(t[p]) if t[p] is not None
                         else why_missing(got[(m.stands_for, x, d, p)]) for p in POLICIES]
                if t[HYBRID] is not None and hy["report"] is not None:
                    shown[0] += f" ({hy['report']['workload']['recompute']})"
                ran = [v for p in OTHERS if (v := t[p]) is not None]
                pure = [v for p in OTHERS[:2] if (v := t[p]) is not None]
                mine = t[HYBRID]
                ratio = mine / min(ran) if mine is not None and ran else None
                gain = min(pure) / mine - 1 if mine is not None and pure else None
                if ratio is not None:
                    over.append(ratio)
                if gain is not None and gain > 0.10:
                    gains.append(f"{m.stands_for} at {x:g} on {d} SSD(s) ({gain:+.0%})")
                rows.append([m.stands_for, f"{x:g}", str(d), *shown,
                             num(ratio) if ratio is not None else "-",
                             f"{gain:+.1%}" if gain is not None else "-"])
    table = md_table(["model", "HBM ratio", "SSDs", "TM + recompute ms (its choice)",
                      "TM-Training ms", "recompute ms", "Capuchin ms",
                      "hybrid / best other", "hybrid gain over the faster pure"], rows)

    # one figure per model, its cells side by side, so that every label stays readable
    for m in models:
        series: dict[str, list[Any]] = {
            p: [ms(m, x, d, p) if ms(m, x, d, p) is not None
                else why_missing(got[(m.stands_for, x, d, p)])
                for x in ratios for d in devices] for p in POLICIES}
        cells = [f"{x:g} HBM\n{d} SSD" for x in ratios for d in devices]
        stem = "hybrid_time_" + "".join(c if c.isalnum() else "_" for c in m.stands_for)
        st.fig(grouped_bars(cells, series, st.out / stem.lower(), "iteration time (ms)",
                            f"Keep, move or recompute: {m.label}", log=True))
    worst = max(over) if over else None
    verdict = (f"The hybrid's time is at most {num(worst)} times the best of the others "
               f"(the claim: at most {CLAIM:g})." if worst is not None
               else "No cell ran the hybrid and another strategy.")
    beats = ("It beats both pure strategies by more than 10% in: " + "; ".join(gains)
             + "." if gains else "It beats both pure strategies by more than 10% in no cell.")
    intro = ("TM-Training with recomputation (`tm-recompute`: none, selective, per layer "
             "or per tensor, the fastest kept) against moving only (TM-Training), "
             "recomputing only (`recompute`, nothing moved) and Capuchin's per-tensor "
             "swap or recompute, at each HBM ratio and SSD count. " + verdict + " "
             + beats + f" A cell marked {DOES_NOT_FIT} is one where that strategy cannot "
             "hold the model state and an op's operands in HBM.")
    return st.write_md("Keep, move or recompute", intro, ["## Every cell\n\n" + table],
                       iterations=st.iterations)
