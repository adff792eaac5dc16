"""LLM scaling: Llama-family models from 1B to 8B parameters, with and without
recomputation, from 1/16 to 1/2 of the footprint in HBM, under every policy.

Models (Hugging Face configs, ``tmhw.workload.hf``): Llama 3.2 1B and 3B, Llama 2 7B
and Llama 3 8B at sequence 2048, batch 1, bf16 with Adam, each reduced to its first
``LAYERS`` layers (the full depth repeats the same layers: a study of every policy at
full depth would take hours on two cores; the table names the layers run). Per model,
recomputation off and per layer (``workload.recompute``), at each HBM ratio, every
tiered policy plus hbm-only; the footprint (the ratio's base) is each variant's own, so
recomputation, which shrinks it, is compared at equal HBM in bytes in the table's
"HBM GiB" column. Quick: Llama 3.2 1B, 2 layers, sequence 512, at 1/8 and 1/2, with
TM-Training and demand paging. Two iterations a run (quick: the first warm-up; full: two
measured after a warm-up that ends where the iterations repeat).

    tmhw scenario llm_scaling [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from typing import Any

from tmhw.studies import (
    DOES_NOT_FIT,
    Study,
    by_params,
    does_not_fit,
    fig_of,
    md_table,
    num,
    why_missing,
)
from tmhw.studies.figures import grouped_bars

MODELS = (("Llama 3.2 1B", "hf:llama-3.2-1b"), ("Llama 3.2 3B", "hf:llama-3.2-3b"),
          ("Llama 2 7B", "hf:llama-2-7b"), ("Llama 3 8B", "hf:llama-3-8b"))
QUICK_MODELS = MODELS[:1]
#: layers run of each model (module docstring); quick: 2
LAYERS, QUICK_LAYERS = 4, 2
SEQ, QUICK_SEQ = 2048, 512
RATIOS, QUICK_RATIOS = (0.0625, 0.125, 0.25, 0.5), (0.125, 0.5)
RECOMPUTE = ("none", "layer")
POLICIES = ("tm-training", "demand", "demand-belady", "sentinel", "autotm", "flatflash",
            "flashneuron", "ssdtrain", "zero-infinity", "hbm-only")
QUICK_POLICIES = ("tm-training", "demand")


def study(st: Study) -> str:
    """Every policy on Llama-family models, with and without recomputation."""
    models = QUICK_MODELS if st.quick else MODELS
    ratios = QUICK_RATIOS if st.quick else RATIOS
    policies = QUICK_POLICIES if st.quick else POLICIES
    layers = QUICK_LAYERS if st.quick else LAYERS
    seq = QUICK_SEQ if st.quick else SEQ
    points = [st.point({"workload.model": hf, "workload.batch": 1, "workload.seq": seq,
                        "workload.layers": layers, "workload.recompute": rc,
                        "run.iterations": 2},
                       {"model": name, "recompute": rc, "hbm_ratio": x, "policy": p},
                       {"policy.name": p, "policy.hbm_ratio": x})
              for name, hf in models for rc in RECOMPUTE for x in ratios for p in policies]
    results = st.run(points)
    st.write_csv(results)
    got = by_params(results, "model", "recompute", "hbm_ratio", "policy")
    tiered = [p for p in policies if p != "hbm-only"]

    def best(name: str, rc: str, x: float) -> tuple[str, float | None]:
        ran = [(t, p) for p in tiered
               if (t := fig_of(got[(name, rc, x, p)], "iteration_time_ms")) is not None]
        return (min(ran)[1], min(ran)[0]) if ran else ("-", None)

    rows = []
    for name, _ in models:
        for rc in RECOMPUTE:
            for x in ratios:
                p, t = best(name, rc, x)
                tm = got[(name, rc, x, "tm-training")]
                hbm = fig_of(tm, "hbm_capacity_bytes")
                rows.append([name, f"{layers} of its layers", rc, f"{x:g}",
                             num(hbm / 2**30) if hbm is not None else why_missing(tm),
                             num(fig_of(tm, "iteration_time_ms")) if tm is not None
                             and tm["report"] is not None else why_missing(tm),
                             f"{p} ({num(t)})" if t is not None else "no policy fits",
                             num(fig_of(tm, "samples_per_joule"))
                             if fig_of(tm, "samples_per_joule") is not None
                             else why_missing(tm),
                             ", ".join(q for q in tiered
                                       if does_not_fit(got[(name, rc, x, q)])) or "-"])
    table = md_table(["model", "depth", "recompute", "HBM ratio", "HBM GiB",
                      "TM-Training ms", "fastest tiered policy (ms)", "TM-Training samples/J",
                      DOES_NOT_FIT], rows)

    def series(rc: str) -> dict[str, list[Any]]:
        return {f"{name}, {x:g} HBM": [
            fig_of(got[(name, rc, x, p)], "iteration_time_ms")
            if fig_of(got[(name, rc, x, p)], "iteration_time_ms") is not None
            else why_missing(got[(name, rc, x, p)]) for p in tiered]
            for name, _ in models for x in ratios}

    for rc in RECOMPUTE:
        st.fig(grouped_bars(tiered, series(rc), st.out / f"llm_scaling_recompute_{rc}",
                            "iteration time (ms)",
                            f"Llama family, {layers} layers, seq {seq}: recompute={rc}"))
    intro = ("Llama-family models from Hugging Face configs, bf16 with Adam, batch 1, "
             f"sequence {seq}, the first {layers} layers of each, with recomputation off "
             "and per layer, under every policy at each HBM ratio. The fastest tiered "
             "policy per cell, and TM-Training's time and samples per joule; the HBM "
             "ratio is of each variant's own footprint (recomputation shrinks it), so "
             "compare recomputation at equal HBM in GiB.")
    return st.write_md("LLM scaling", intro, ["## Every cell\n\n" + table], iterations=2)
