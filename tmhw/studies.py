"""Studies: the scenario scripts that reproduce the paper's figures from the model.

    tmhw scenario NAME [--quick] [--out DIR] [--workers N] [--set a.b=v ...] [--quiet]
    python scenarios/NAME.py [same options]

Scenarios (each writes ``summary.csv``, ``summary.md`` and figures as PNG and SVG into
``--out``, and prints the markdown table):

- ``paper_headline``: ResNet-50, BERT-large and a GPT-3 block at 12.5% HBM under every
  policy: inter-tier traffic and throughput per watt of TM-Training against each baseline,
  and memory cost against HBM-only, beside the paper's 64%, 55% and 87% (TM-Training,
  ACM ToS 21(4), 2025, abstract). Also writes ``report.json``: the TM-Training run of the
  first model (the first run that completed if that one did not).
- ``capacity_sweep``: HBM at 6.25, 12.5, 25, 50 and 100% of the footprint, per policy.
- ``flash_sensitivity``: flash channels, channel rate, device presets, PCIe generation.
- ``ablation``: TM-Training's static table alone, then + prefetch, + splitting, + monitor.
- ``energy_breakdown``: energy per component (and per action) per policy.
- ``endurance``: flash writes, write amplification and projected lifetime per policy.
- ``timeline``: one iteration of TM-Training, FlatFlash and demand paging, one lane per
  component, with each prefetch drawn as an arrow to the op that needs it (green: in
  time, red: late).

Every point is a ``tmhw.sweeps`` point (the paper preset with overrides) run in a local
process pool; a point the system refuses (the policy does not fit the HBM, the ILP is too
big, the policy is not in this build) is a row with status ``skipped`` and the reason,
never a failed study. ``--quick`` shrinks the workloads to stand-ins of the same kind
(ResNet-50 at batch 4, BERT-base with 3 layers at seq 512, GPT-2 small at seq 128) so a
study takes seconds to a few minutes; a quick run is given up after a minute of wall time
(``--point-timeout``) and AutoTM's ILP after 10 s, each shown as such in the table. The
markdown says which sizes and limits applied.

``tmhw scenario NAME`` runs ``scenarios/NAME.py`` next to the package when there is one
(so a user's own study script in that folder runs the same way), else the built-in study.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tmhw.sweeps as SW
from tmhw.sim.errors import TmhwError

#: Every policy, TM-Training first (the subject), the baselines, then the references:
#: demand paging, its oracle (Belady's eviction) and HBM-only.
POLICIES = ("tm-training", "flatflash", "flashneuron", "sentinel", "autotm", "demand",
            "demand-belady", "hbm-only")
#: The prior systems the paper compares against (its "prior work").
BASELINES = ("flatflash", "flashneuron", "sentinel", "autotm")
#: The paper's headline figures (abstract, doi:10.1145/3721484).
PAPER_TRAFFIC_REDUCTION = 0.64
PAPER_SPJ_GAIN = 0.55
PAPER_COST_REDUCTION = 0.87


@dataclass(frozen=True)
class Model:
    """A workload of a study: what it stands for, what runs, its overrides."""

    stands_for: str
    label: str
    sets: dict[str, Any]


def _wl(model: str, batch: int, seq: int = 0, layers: int = 0) -> dict[str, Any]:
    return {"workload.model": model, "workload.batch": batch, "workload.seq": seq,
            "workload.layers": layers}


FULL_MODELS = (
    Model("ResNet-50", "resnet50 b32", _wl("resnet50", 32)),
    Model("BERT-large", "bert-large s512 b32", _wl("bert-large", 32, 512)),
    Model("GPT-3 block", "gpt3-block s2048 b4 1 layer", _wl("gpt3-block", 4, 2048, 1)),
)
#: Stand-ins small enough for seconds per run, each still at least 8x its largest op so
#: that 12.5% HBM can hold every op's operands (the Adam update of BERT's word
#: embeddings is 143 MiB, so BERT-base needs 3 layers at seq 512 to reach 1.4 GB).
#: Wall seconds per point in quick studies (see Study.timeout_s), and the AutoTM ILP's
#: node budget there (a budget of work, so it never depends on the machine's load): a
#: quick study is for a first look in a minute.
QUICK_TIMEOUT_S = 60.0
QUICK_ILP_NODES = 500

QUICK_MODELS = (
    Model("ResNet-50", "resnet50 b4", _wl("resnet50", 4)),
    Model("BERT-large", "bert-base 3 layers s512 b8", _wl("bert-base", 8, 512, 3)),
    Model("GPT-3 block", "gpt2-small s128 b4", _wl("gpt2-small", 4, 128, 12)),
)


@dataclass
class Study:
    """One scenario's run: options, output folder, and the helpers every study uses."""

    name: str
    quick: bool
    out: Path
    workers: int | None = None
    user_sets: dict[str, Any] = field(default_factory=dict)
    progress: bool = True
    #: Wall seconds after which a point is given up (0: never); quick studies default to
    #: QUICK_TIMEOUT_S so that one slow policy cannot hold up the whole study.
    timeout_s: float = 0.0
    preset: str = "paper"
    started: float = field(default_factory=time.perf_counter)
    figures: list[Path] = field(default_factory=list)

    # -- points --------------------------------------------------------------------------
    @property
    def models(self) -> tuple[Model, ...]:
        return QUICK_MODELS if self.quick else FULL_MODELS

    @property
    def model(self) -> Model:
        """The one workload of single-model studies: BERT-large at full size, the
        cheapest stand-in (ResNet-50 at batch 4) when quick."""
        return self.models[0] if self.quick else self.models[1]

    @property
    def iterations(self) -> int:
        return 1 if self.quick else 2

    def point(self, base: dict[str, Any], params: dict[str, Any],
              swept: dict[str, Any]) -> SW.Point:
        """``base`` overrides, then the user's ``--set``, then the swept values."""
        quick = {"policy.ilp_node_limit": QUICK_ILP_NODES} if self.quick else {}
        overrides = {"run.iterations": self.iterations, **quick, **base, **self.user_sets,
                     **swept}
        return SW.make_point(self.preset, overrides, params, self.timeout_s or None)

    def run(self, points: Sequence[SW.Point]) -> list[SW.Result]:
        return SW.run_points(points, workers=self.workers, progress=self.progress,
                             desc=self.name)

    # -- outputs -------------------------------------------------------------------------
    def write_csv(self, results: Sequence[SW.Result],
                  extra: Callable[[SW.Result], dict[str, Any]] | None = None) -> None:
        rows = SW.summary_rows(results)
        if extra is not None:
            for row, r in zip(rows, results, strict=True):
                row.update(extra(r))
        SW.write_csv(rows, self.out / "summary.csv")

    def fig(self, paths: list[Path]) -> None:
        self.figures.extend(p for p in paths if p.suffix == ".png")

    def write_md(self, title: str, intro: str, sections: Sequence[str],
                 iterations: int | None = None) -> str:
        sizes = "quick stand-in sizes" if self.quick else "full sizes"
        limits = ""
        if self.timeout_s:
            limits = f"; a run is given up after {self.timeout_s:g} s of wall time"
        if self.quick:
            limits += f"; AutoTM's ILP explores at most {QUICK_ILP_NODES} nodes"
        parts = [f"# {title}", "", intro, "",
                 f"Scenario `{self.name}`, {sizes}, {iterations or self.iterations} "
                 "iteration(s) per run"
                 + (f", with {_sets_text(self.user_sets)}" if self.user_sets else "")
                 + limits + ".", ""]
        for s in sections:
            parts += [s, ""]
        if self.figures:
            parts.append("Figures: " + ", ".join(
                f"[{p.stem}]({p.name}) (+ .svg)" for p in self.figures) + ".")
        text = "\n".join(parts).rstrip() + "\n"
        (self.out / "summary.md").write_text(text)
        return text


def _sets_text(sets: dict[str, Any]) -> str:
    return ", ".join(f"`{k}={json.dumps(v)}`" for k, v in sets.items())


# -- formatting helpers --------------------------------------------------------------------
def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def num(v: Any, digits: int = 3) -> str:
    if not isinstance(v, int | float) or isinstance(v, bool):
        return "-"
    if math.isinf(v) or math.isnan(v):
        return str(v)
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.{digits}g}"
    return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:,.{max(0, digits - 1)}f}"


def pct(v: float | None) -> str:
    return "-" if v is None else f"{v:+.0%}"


def gib(v: Any) -> Any:
    return v / 2**30 if isinstance(v, int | float) and not isinstance(v, bool) else ""


def status_text(r: SW.Result) -> str:
    if r["status"] == "ok":
        return "ok"
    msg = r["error"].replace("|", "/")
    return f"{r['status']}: {msg[:140]}"


def fig_of(r: SW.Result | None, name: str) -> float | None:
    """One summary figure of a result, None where the point did not run."""
    if r is None or r["report"] is None:
        return None
    v = SW.figures(r["report"]).get(name, "")
    return float(v) if isinstance(v, int | float) else None


def nan(v: float | None) -> float:
    return math.nan if v is None else v


def by_params(results: Sequence[SW.Result], *keys: str) -> dict[tuple[Any, ...], SW.Result]:
    return {tuple(r["params"][k] for k in keys): r for r in results}


def last_iteration(rep: dict[str, Any] | None, key: str = "time_ps") -> float | None:
    if rep is None or not rep.get("per_iteration"):
        return None
    v = rep["per_iteration"][-1].get(key)
    return float(v) if isinstance(v, int | float) else None


# -- paper_headline ------------------------------------------------------------------------
def paper_headline(st: Study) -> str:
    from tmhw.plots import grouped_bars

    points = [st.point(m.sets, {"model": m.stands_for, "workload": m.label, "policy": p},
                       {"policy.name": p, "policy.hbm_ratio": 0.125})
              for m in st.models for p in POLICIES]
    results = st.run(points)
    st.write_csv(results)
    cell = by_params(results, "model", "policy")

    per_model = []
    for m in st.models:
        rows = []
        for p in POLICIES:
            r = cell[(m.stands_for, p)]
            rep = r["report"]
            f = SW.figures(rep)
            rows.append([p, num(f["iteration_time_ms"]), num(f["stall_ms"]),
                         num(gib(f["inter_tier_bytes"])), num(f["samples_per_s"]),
                         num(f["samples_per_joule"]), num(f["memory_usd"], 4),
                         status_text(r)])
        per_model.append(f"## {m.stands_for} ({m.label}), HBM 12.5% of the footprint\n\n"
                         + md_table(["policy", "iteration ms", "stall ms", "inter-tier GiB",
                                     "samples/s", "samples/J", "memory $", "status"], rows))

    head_rows = []
    for m in st.models:
        tm = cell[(m.stands_for, "tm-training")]
        t_tm, e_tm = fig_of(tm, "inter_tier_bytes"), fig_of(tm, "samples_per_joule")
        traffic, spj = [], []
        for b in BASELINES:
            t_b = fig_of(cell[(m.stands_for, b)], "inter_tier_bytes")
            e_b = fig_of(cell[(m.stands_for, b)], "samples_per_joule")
            traffic.append(t_tm / t_b - 1 if t_tm is not None and t_b else None)
            spj.append(e_tm / e_b - 1 if e_tm is not None and e_b else None)
        c_tm = fig_of(tm, "memory_usd")
        c_hbm = fig_of(cell[(m.stands_for, "hbm-only")], "memory_usd")
        cost = c_tm / c_hbm - 1 if c_tm is not None and c_hbm else None
        head_rows.append([m.stands_for] + [pct(v) for v in traffic] + [_mean_pct(traffic)]
                         + [pct(v) for v in spj] + [_mean_pct(spj)] + [pct(cost)])
    head_rows.append(["**paper**"] + ["" for _ in BASELINES]
                     + [f"-{PAPER_TRAFFIC_REDUCTION:.0%}"] + ["" for _ in BASELINES]
                     + [f"+{PAPER_SPJ_GAIN:.0%}", f"-{PAPER_COST_REDUCTION:.0%}"])
    headers = (["model"] + [f"traffic vs {b}" for b in BASELINES] + ["traffic vs prior (mean)"]
               + [f"samples/J vs {b}" for b in BASELINES] + ["samples/J vs prior (mean)"]
               + ["memory cost vs hbm-only"])
    headline = ("## Headline: TM-Training against each policy\n\n"
                "Inter-tier traffic change (negative: less traffic), throughput-per-watt "
                "change (positive: better) and memory cost change against HBM-only; the "
                "paper's figures are in the last row. '-' where either run is missing "
                "(see the status column above).\n\n" + md_table(headers, head_rows))

    models = [m.stands_for for m in st.models]
    def series(name: str, policies: Sequence[str], scale: float = 1.0
               ) -> dict[str, Sequence[float]]:
        return {p: [nan(fig_of(cell[(mm, p)], name)) * scale for mm in models]
                for p in policies}

    ser_t = series("inter_tier_bytes", [p for p in POLICIES if p != "hbm-only"], 2**-30)
    st.fig(grouped_bars(models, ser_t, st.out / "inter_tier_traffic",
                        "inter-tier traffic per iteration (GiB)",
                        "Flash <-> HBM traffic at 12.5% HBM"))
    ser_e = series("samples_per_joule", POLICIES)
    st.fig(grouped_bars(models, ser_e, st.out / "throughput_per_watt", "samples per joule",
                        "Throughput per watt at 12.5% HBM", log=True))
    ser_c = series("memory_usd", ("tm-training", "hbm-only"))
    st.fig(grouped_bars(models, ser_c, st.out / "memory_cost", "memory cost (US$)",
                        "Memory hardware cost: 12.5% HBM + flash vs HBM-only", log=True))

    first = next((r for r in results if r["report"] is not None), None)
    note = "No run completed, so no report.json was written."
    if first is not None:
        SW._write_json_atomic(first["report"], st.out / "report.json")
        note = (f"`report.json` is the {first['params']['policy']} run of "
                f"{first['params']['workload']}.")
    intro = ("TM-Training against FlatFlash, FlashNeuron, Sentinel, AutoTM, demand paging "
             "and HBM-only at 12.5% HBM (HBM = 1/8 of the training footprint). " + note)
    return st.write_md("Paper headline", intro, [headline] + per_model)


def _mean_pct(vals: Sequence[float | None]) -> str:
    got = [v for v in vals if v is not None]
    return pct(sum(got) / len(got)) if got else "-"


# -- capacity_sweep ------------------------------------------------------------------------
RATIOS = (0.0625, 0.125, 0.25, 0.5, 1.0)
QUICK_RATIOS = (0.125, 0.5, 1.0)


def capacity_sweep(st: Study) -> str:
    from tmhw.plots import line_panels

    m = st.model
    ratios = QUICK_RATIOS if st.quick else RATIOS
    points = []
    for p in POLICIES:
        for ratio in (ratios if p != "hbm-only" else (1.0,)):
            points.append(st.point(m.sets, {"policy": p, "hbm_ratio": ratio},
                                   {"policy.name": p, "policy.hbm_ratio": ratio}))
    results = st.run(points)
    st.write_csv(results)
    cell = by_params(results, "policy", "hbm_ratio")

    def get(p: str, ratio: float, name: str) -> float | None:
        r = cell.get((p, 1.0 if p == "hbm-only" else ratio))
        return fig_of(r, name)

    figs = {"inter-tier traffic per iteration (GiB)": ("inter_tier_bytes", 2**-30),
            "memory stall (ms)": ("stall_ms", 1.0),
            "throughput (samples/s)": ("samples_per_s", 1.0),
            "throughput per watt (samples/J)": ("samples_per_joule", 1.0),
            "memory cost (US$)": ("memory_usd", 1.0)}
    panels: dict[str, dict[str, Sequence[float]]] = {
        t: {p: [nan(get(p, x, k)) * s for x in ratios] for p in POLICIES}
        for t, (k, s) in figs.items()}
    st.fig(line_panels(ratios, panels, st.out / "capacity_sweep", "HBM / footprint",
                       f"{m.label}: HBM capacity sweep", logx=True,
                       xticklabels=[f"{x:.4g}" for x in ratios]))
    sections = []
    for t, (k, s) in figs.items():
        rows = [[p] + [num(v * s if v is not None else None)
                       for v in (get(p, x, k) for x in ratios)] for p in POLICIES]
        sections.append(f"## {t}\n\n" + md_table(["policy"] + [f"{x:.2%}" for x in ratios],
                                                  rows))
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


# -- flash_sensitivity ---------------------------------------------------------------------
#: PCIe per-lane rates after 128b/130b coding, GB/s (PCI-SIG base specifications 3.0-5.0).
PCIE_GEN = {"gen3": 0.985, "gen4": 1.969, "gen5": 3.938}


def _flash_variants(quick: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """(factor, value label, overrides)."""
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
    out += [("PCIe", g, {"flash.pcie_lane_gbps": PCIE_GEN[g]}) for g in gens]
    return out


def flash_sensitivity(st: Study) -> str:
    from tmhw.plots import bar_panels

    m = st.model
    policies = ("tm-training", "demand") if st.quick else \
        tuple(p for p in POLICIES if p != "hbm-only")
    variants = _flash_variants(st.quick)
    points = [st.point(m.sets, {"factor": f, "value": v, "policy": p},
                       {**o, "policy.name": p, "policy.hbm_ratio": 0.125})
              for f, v, o in variants for p in policies]
    results = st.run(points)
    st.write_csv(results)
    cell = by_params(results, "factor", "value", "policy")
    factors = [f for f in dict.fromkeys(f for f, _, _ in variants) if f != "baseline"]
    panels: dict[str, tuple[Sequence[str], dict[str, Sequence[float]]]] = {}
    for f in factors:
        # Each panel starts with the unchanged device where that is not one of its values.
        keys = ([("baseline", "990pro")] if ("baseline", "990pro", policies[0]) in cell
                else []) + [(f, v) for ff, v, _ in variants if ff == f]
        labels = [f"{v} (base)" if ff == "baseline" else v for ff, v in keys]
        panels[f] = (labels, {p: [nan(fig_of(cell[(ff, v, p)], "samples_per_s"))
                                  for ff, v in keys] for p in policies})
    st.fig(bar_panels(panels, st.out / "flash_sensitivity", "samples/s",
                      f"{m.label} at 12.5% HBM: throughput by flash configuration"))
    rows = []
    for f, v, _ in variants:
        for p in policies:
            r = cell[(f, v, p)]
            rows.append([f, v, p, num(fig_of(r, "iteration_time_ms")),
                         num(fig_of(r, "stall_ms")), num(fig_of(r, "samples_per_s")),
                         num(fig_of(r, "samples_per_joule")), status_text(r)])
    table = md_table(["factor", "value", "policy", "iteration ms", "stall ms", "samples/s",
                      "samples/J", "status"], rows)
    intro = (f"{m.stands_for} ({m.label}) at 12.5% HBM on the 990 PRO-like SSD, one factor "
             "changed at a time: flash channels, channel transfer rate, the device presets, "
             "and the PCIe generation of both the SSD's and the NPU's link (x4 and x16 "
             "lanes kept). The paper gives no sensitivity figure.")
    return st.write_md("Flash sensitivity", intro, [table])


# -- ablation ------------------------------------------------------------------------------
_OFF = {"policy.prefetch": False, "policy.writeback_schedule": False,
        "policy.split": False, "policy.monitor": False}
ABLATION = (
    ("static table", _OFF),
    ("+ prefetch", {**_OFF, "policy.prefetch": True}),
    ("+ write-back scheduling", {**_OFF, "policy.prefetch": True,
                                 "policy.writeback_schedule": True}),
    ("+ splitting", {**_OFF, "policy.prefetch": True, "policy.writeback_schedule": True,
                     "policy.split": True}),
    ("+ monitor", {"policy.prefetch": True, "policy.writeback_schedule": True,
                   "policy.split": True, "policy.monitor": True}),
)


def ablation(st: Study) -> str:
    from tmhw.plots import grouped_bars, stacked_bars

    m = st.model
    # The monitor settles, then judges each trial over two iterations: its trials are
    # the warm-up, and the last iterations are the steady state compared.
    iters, warm = (4, 3) if st.quick else (12, 10)
    run = {"policy.hbm_ratio": 0.125, "run.iterations": iters,
           "run.warmup_iterations": warm}
    points = [st.point(m.sets, {"variant": v, "policy": "tm-training"},
                       {**o, "policy.name": "tm-training", **run}) for v, o in ABLATION]
    points.append(st.point(m.sets, {"variant": "demand paging", "policy": "demand"},
                           {"policy.name": "demand", **run}))
    results = st.run(points)

    def extra(r: SW.Result) -> dict[str, Any]:
        rep = r["report"]
        t = last_iteration(rep)
        s = last_iteration(rep, "stall_ps")
        return {"last_iteration_ms": t / 1e9 if t is not None else "",
                "last_stall_ms": s / 1e9 if s is not None else ""}

    st.write_csv(results, extra)
    names = [r["params"]["variant"] for r in results]
    last = [nan(last_iteration(r["report"])) / 1e9 for r in results]
    stall = [nan(last_iteration(r["report"], "stall_ps")) / 1e9 for r in results]
    st.fig(stacked_bars(names, {"compute (and overlap)": [a - b for a, b in
                                                          zip(last, stall, strict=True)],
                                "memory stall": stall},
                        st.out / "ablation_time", "last iteration (ms)",
                        f"{m.label} at 12.5% HBM: TM-Training's mechanisms"))
    st.fig(grouped_bars(names, {"inter-tier GiB": [nan(fig_of(r, "inter_tier_bytes")) / 2**30
                                                   for r in results]},
                        st.out / "ablation_traffic", "GiB per iteration",
                        "Inter-tier traffic"))
    rows = [[r["params"]["variant"], num(extra(r)["last_iteration_ms"] or None),
             num(extra(r)["last_stall_ms"] or None),
             num(gib(fig_of(r, "inter_tier_bytes"))), num(fig_of(r, "samples_per_joule")),
             status_text(r)] for r in results]
    table = md_table(["variant", "last iteration ms", "last stall ms",
                      "inter-tier GiB per iteration", "samples/J", "status"], rows)
    intro = (f"TM-Training on {m.stands_for} ({m.label}) at 12.5% HBM over {iters} "
             f"iterations ({warm} of them warm-up), its mechanisms switched on one by one: "
             "the static placement table alone (operands fetched on demand at each op, "
             "write-backs as soon as released), + proactive prefetch, + write-backs due "
             "when their space is needed, + data splitting, + the timing monitor (which "
             "tries its changes during the warm-up). Demand paging is the floor.")
    return st.write_md("Ablation of TM-Training", intro, [table], iters)


# -- energy_breakdown ----------------------------------------------------------------------
COMPONENTS = ("npu", "hbm", "flash", "dma")


def _actions(rep: dict[str, Any]) -> dict[str, float]:
    """Energy per component action, pJ, from system.<comp>.energy_pj.<action>."""
    out: dict[str, float] = {}
    system = rep.get("system", {})
    for comp in COMPONENTS:
        e = system.get(comp, {}).get("energy_pj", {})
        for k, v in e.items():
            if k != "total" and isinstance(v, int | float):
                out[f"{comp}.{k}"] = out.get(f"{comp}.{k}", 0.0) + float(v)
    return out


def energy_breakdown(st: Study) -> str:
    from tmhw.plots import stacked_bars

    m = st.model
    points = [st.point(m.sets, {"policy": p}, {"policy.name": p, "policy.hbm_ratio": 0.125})
              for p in POLICIES]
    results = st.run(points)
    ok = [r for r in results if r["report"] is not None]

    def per_iter(r: SW.Result, v: float) -> float:
        return float(v) / max(1, int(r["report"]["iterations"]))

    def extra(r: SW.Result) -> dict[str, Any]:
        if r["report"] is None:
            return {}
        return {f"energy_{k}_j_per_iteration": per_iter(r, v) * 1e-12
                for k, v in sorted(_actions(r["report"]).items())}

    st.write_csv(results, extra)
    names = [r["params"]["policy"] for r in ok]
    comp: dict[str, Sequence[float]] = {
        c: [per_iter(r, r["report"]["energy_pj"].get(c, 0.0)) * 1e-12 for r in ok]
        for c in COMPONENTS}
    st.fig(stacked_bars(names, comp, st.out / "energy_by_component",
                        "energy per iteration (J)", f"{m.label} at 12.5% HBM"))
    acts = sorted({k for r in ok for k in _actions(r["report"])})
    st.fig(stacked_bars(names, {a: [per_iter(r, _actions(r["report"]).get(a, 0.0)) * 1e-12
                                    for r in ok] for a in acts},
                        st.out / "energy_by_action", "energy per iteration (J)",
                        f"{m.label}: energy per component action"))
    rows = []
    for r in results:
        rep = r["report"]
        e = rep["energy_pj"] if rep is not None else {}
        rows.append([r["params"]["policy"]]
                    + [num(per_iter(r, e[c]) * 1e-12) if c in e else "-" for c in COMPONENTS]
                    + [num(per_iter(r, e["total"]) * 1e-12) if "total" in e else "-",
                       num(fig_of(r, "avg_power_w")), num(fig_of(r, "samples_per_joule")),
                       status_text(r)])
    table = md_table(["policy"] + [f"{c} J" for c in COMPONENTS]
                     + ["total J", "avg W", "samples/J", "status"], rows)
    intro = (f"Energy per iteration of {m.stands_for} ({m.label}) at 12.5% HBM, by "
             "component (NPU MACs, scratchpad, vector unit and static power; HBM "
             "activate/read/write/refresh/background; flash array, channel, controller and "
             "idle; DMA engine and host link) and, in energy_by_action, by action. The "
             "paper gives throughput per watt only (see paper_headline).")
    return st.write_md("Energy breakdown", intro, [table])


# -- endurance -----------------------------------------------------------------------------
def endurance(st: Study) -> str:
    from tmhw.plots import grouped_bars

    m = st.model
    tiered = tuple(p for p in POLICIES if p != "hbm-only")
    # A device in steady state (90% full, as after months of use) so that writes make
    # garbage collection run and write amplification show.
    points = [st.point(m.sets, {"policy": p}, {"policy.name": p, "policy.hbm_ratio": 0.125,
                                               "run.precondition": 0.9})
              for p in tiered]
    results = st.run(points)

    def extra(r: SW.Result) -> dict[str, Any]:
        rep = r["report"]
        if rep is None:
            return {}
        return {"flash_writes_bytes_per_iteration":
                rep.get("flash_writes_bytes", 0) / max(1, rep["iterations"])}

    st.write_csv(results, extra)
    names = [r["params"]["policy"] for r in results]
    st.fig(grouped_bars(names, {"flash writes per iteration (GiB)":
                                [nan(gib(extra(r).get("flash_writes_bytes_per_iteration")) or
                                     None) for r in results]},
                        st.out / "flash_writes", "GiB", f"{m.label}: flash writes"))
    life = [fig_of(r, "lifetime_days") for r in results]
    st.fig(grouped_bars(names, {"projected lifetime (days)":
                                [nan(v if v is not None and v >= 0 else None) for v in life]},
                        st.out / "lifetime", "days of continuous training",
                        f"{m.label}: days to the P/E limit", log=True))
    rows = []
    for r in results:
        lt = fig_of(r, "lifetime_days")
        rows.append([r["params"]["policy"],
                     num(gib(extra(r).get("flash_writes_bytes_per_iteration"))),
                     num(fig_of(r, "waf")), num(fig_of(r, "erases")),
                     num(fig_of(r, "pe_cycles_per_iteration")),
                     "no wear" if lt is not None and lt < 0 else num(lt), status_text(r)])
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


# -- timeline ------------------------------------------------------------------------------
TIMELINE_POLICIES = ("tm-training", "flatflash", "demand")


def _traced_run(cfg: Any) -> tuple[Any, dict[str, Any], Any]:
    from tmhw.sim.trace import Tracer
    from tmhw.system import System

    tracer = Tracer()
    system = System(cfg, tracer=tracer)
    rep = system.run()
    rep["host"] = {"events": system.env.events}
    # One lane per flash channel where the flash kept its bookings (a target built with
    # recording on); otherwise the flash's own lane shows each transaction.
    for c, spans in enumerate(_lane_spans(getattr(system.flash, "channels", None))):
        for s, e in spans:
            tracer.span(f"system.flash.ch{c}", s, e, "busy")
    return system, rep, tracer


def _lane_spans(lanes: Any) -> list[list[tuple[int, int]]]:
    """(start, end) per lane of a bank of lanes with ``spans`` (None when not recorded)
    or of a list of Timelines."""
    if isinstance(lanes, list):
        return [[(s, e) for s, e, *_ in tl.spans] for tl in lanes]
    spans = getattr(lanes, "spans", None)
    return [[(int(s), int(e)) for s, e, *_ in lane] for lane in spans] if spans else []


#: Lane order in the timeline figure: the NPU, the DMA engine, HBM, then the flash.
LANE_ORDER = ("npu.compute", "npu.stall", "system.dma.fetch", "system.dma.writeback",
              "system.hbm", "system.flash")
MAX_ARROWS = 200


def _figure_tracer(tracer: Any) -> Any:
    """A copy of ``tracer`` for the figure: lanes in LANE_ORDER (the NPU's own lane, which
    repeats npu.compute with its HBM waits, left out) and at most MAX_ARROWS arrows spread
    over the iteration, half of them late ones where there are that many."""
    from tmhw.sim.trace import Tracer

    def rank(lane: str) -> tuple[int, str]:
        for i, prefix in enumerate(LANE_ORDER):
            if lane.startswith(prefix):
                return (i, lane)
        return (len(LANE_ORDER), lane)

    fig = Tracer()
    fig.spans = sorted((sp for sp in tracer.spans if sp[0] != "system.npu"),
                       key=lambda sp: rank(sp[0]))
    late = [f for f in tracer.flows if f[4].startswith("late")]
    on_time = [f for f in tracer.flows if not f[4].startswith("late")]
    n_late = min(len(late), max(MAX_ARROWS // 2, MAX_ARROWS - len(on_time)))
    fig.flows = _spread(late, n_late) + _spread(on_time, MAX_ARROWS - n_late)
    return fig


def _spread(items: list[Any], n: int) -> list[Any]:
    """At most ``n`` of ``items``, evenly spaced over the list."""
    if n <= 0 or not items:
        return []
    if len(items) <= n:
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def _prefetch_flows(system: Any, tracer: Any) -> tuple[int, int]:
    """Arrows from the end of each fetch request to the start of the op it was for;
    "late" where the data arrived after the op wanted to start. Returns (in time, late)."""
    ops = system.workload.ops
    want: dict[str, int] = {}
    run: dict[str, int] = {}
    for lane, s, _e, name, _a in tracer.spans:
        if lane == "npu.stall":
            want.setdefault(name, s)
        elif lane == "npu.compute":
            run.setdefault(name, s)
    ends: dict[tuple[str, int], tuple[int, str]] = {}
    for lane, _s, e, name, args in tracer.spans:
        if lane.endswith("dma.fetch") and args and args.get("deadline_op", -1) >= 0:
            key = (name, int(args["deadline_op"]))
            if key not in ends or e > ends[key][0]:
                ends[key] = (e, lane)
    on_time = late = 0
    for (tag, op_i), (end, lane) in ends.items():
        op = ops[op_i].name
        if op not in run:
            continue
        deadline = want.get(op, run[op])
        is_late = end > deadline
        late += is_late
        on_time += not is_late
        tracer.flow(lane, end, "npu.compute", run[op],
                    f"{'late' if is_late else 'in time'}: {tag} -> {op}")
    return on_time, late


def timeline(st: Study) -> str:
    from tmhw import config as C
    from tmhw.plots import timeline_figure

    m = st.model
    rows, results = [], []
    for p in TIMELINE_POLICIES:
        pt = st.point(m.sets, {"policy": p}, {"policy.name": p, "policy.hbm_ratio": 0.125,
                                              "run.iterations": 1})
        res: SW.Result = {"id": pt["id"], "params": pt["params"], "status": "ok",
                          "error": "", "report": None}
        on_time = late = 0
        try:
            with SW.wall_limit(st.timeout_s):
                system, rep, tracer = _traced_run(C.from_dict(pt["config"], C.PAPER))
            on_time, late = _prefetch_flows(system, tracer)
            res["report"] = rep
            st.fig(timeline_figure(_figure_tracer(tracer), st.out / f"timeline_{p}",
                                   title=f"{m.label} at 12.5% HBM: {p} (arrows: "
                                         f"{on_time} prefetches in time, {late} late)"))
            tracer.write_chrome(st.out / f"timeline_{p}.trace.json")
        except TmhwError as e:
            res.update(status="skipped", error=str(e))
        except SW.PointTimeout:
            res.update(status="skipped", error=SW.timeout_text(st.timeout_s))
        except Exception as e:  # as in a sweep: one broken run must not end the study
            res.update(status="error", error=f"{type(e).__name__}: {e}")
        results.append(res)
        rows.append([p, num(fig_of(res, "iteration_time_ms")), num(fig_of(res, "stall_ms")),
                     str(on_time), str(late), status_text(res)])
    st.write_csv(results)
    table = md_table(["policy", "iteration ms", "stall ms", "prefetches in time",
                      "prefetches late", "status"], rows)
    intro = (f"One iteration of {m.stands_for} ({m.label}) at 12.5% HBM: lanes for NPU "
             "compute and stall, the DMA engine's fetches and write-backs, HBM and the "
             "flash (one lane per channel where the flash records its bookings). An arrow "
             "runs from the end of each fetch request to the op that needs it: green when "
             "the data arrived before the op wanted to start, red when the op stalled for "
             f"it (the figure draws at most {MAX_ARROWS}, spread over the iteration; the "
             "counts below are of all). `timeline_<policy>.trace.json` has every span and "
             "arrow and opens in Perfetto.")
    return st.write_md("Timeline of one iteration", intro, [table], 1)


# -- the command ---------------------------------------------------------------------------
SCENARIOS: dict[str, Callable[[Study], str]] = {
    "paper_headline": paper_headline,
    "capacity_sweep": capacity_sweep,
    "flash_sensitivity": flash_sensitivity,
    "ablation": ablation,
    "energy_breakdown": energy_breakdown,
    "endurance": endurance,
    "timeline": timeline,
}


def scenarios_dir() -> Path:
    """The repository's scenarios/ folder beside the package (may not exist when the
    package is installed from a wheel)."""
    return Path(__file__).resolve().parent.parent / "scenarios"


def available() -> list[str]:
    names = dict.fromkeys(SCENARIOS)
    d = scenarios_dir()
    if d.is_dir():
        for f in sorted(d.glob("*.py")):
            if not f.name.startswith("_"):
                names.setdefault(f.stem, None)
    return list(names)


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help="small stand-in workloads: seconds per run")
    p.add_argument("--out", help="output directory (default out/<scenario>)")
    p.add_argument("--workers", type=int, help="local processes (default: CPU count)")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override a config field in every run (repeatable)")
    p.add_argument("--point-timeout", type=float, metavar="S",
                   help=f"give up a run after S wall seconds (0: never; default "
                        f"{QUICK_TIMEOUT_S:g} with --quick, else never)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run_scenario(name: str, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (the options of ``tmhw scenario``) and run built-in study ``name``;
    print its markdown table. The ``main`` of every scenarios/NAME.py."""
    if name not in SCENARIOS:
        raise TmhwError(f"scenario: {name!r} is unknown; one of {', '.join(SCENARIOS)}")
    p = argparse.ArgumentParser(prog=f"scenarios/{name}.py",
                                description=f"Run the {name} study.")
    add_options(p)
    args = p.parse_args(list(argv) if argv is not None else None)
    return _run(name, args)


def _check_options(name: str, args: argparse.Namespace) -> tuple[dict[str, Any], Path]:
    """Every option of a scenario checked before anything runs or is written: the user's
    --set overrides (as a config), --workers, --point-timeout and the output folder.
    Returns the overrides and the output folder."""
    from tmhw import config as C
    from tmhw.cli import check_out_dir
    from tmhw.sim import tomlio

    if args.workers is not None and args.workers < 1:
        raise TmhwError(f"--workers: {args.workers} is not allowed; an integer >= 1")
    t = args.point_timeout
    if t is not None and not (math.isfinite(t) and t >= 0):
        raise TmhwError(f"--point-timeout: {t} is not allowed; a number of seconds >= 0 "
                        "(0: never give up)")
    C.with_overrides(C.preset(Study.preset), list(args.set))
    sets = {".".join(k): v for k, v in (tomlio.parse_override(s) for s in args.set)}
    out = Path(args.out) if args.out else Path("out") / name
    check_out_dir(out, "--out")
    return sets, out


def _run(name: str, args: argparse.Namespace) -> int:
    sets, out = _check_options(name, args)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TmhwError(f"--out: cannot create {out}: {e.strerror}") from None
    timeout = args.point_timeout if args.point_timeout is not None else \
        (QUICK_TIMEOUT_S if args.quick else 0.0)
    st = Study(name, bool(args.quick), out, args.workers, sets, not args.quiet, timeout)
    text = SCENARIOS[name](st)
    print(text, end="")
    print(f"\n{name}: {time.perf_counter() - st.started:.1f} s; outputs in {out}/")
    return 0


def script_main(name: str, argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python scenarios/NAME.py``: errors end with one line and status 2."""
    try:
        return run_scenario(name, argv)
    except TmhwError as e:
        sys.stderr.write(f"{name}: error: {e}\n")
        return 2


def _load_script(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"tmhw_scenario_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise TmhwError(f"scenario: cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cmd(args: argparse.Namespace) -> int:
    name = args.name
    if args.list:
        for n in available():
            print(n)
        return 0
    if name is None:
        raise TmhwError(f"scenario: give a NAME; one of {', '.join(available())}")
    script = scenarios_dir() / f"{name}.py"
    if not script.is_file() and name not in SCENARIOS:
        raise TmhwError(f"scenario: {name!r} is unknown; one of {', '.join(available())}")
    _check_options(name, args)
    argv = (["--quick"] if args.quick else []) + (["--out", args.out] if args.out else []) \
        + (["--workers", str(args.workers)] if args.workers is not None else []) \
        + [a for s in args.set for a in ("--set", s)] + (["--quiet"] if args.quiet else []) \
        + (["--point-timeout", str(args.point_timeout)] if args.point_timeout is not None
           else [])
    if script.is_file():
        mod = _load_script(script)
        if not hasattr(mod, "main"):
            raise TmhwError(f"scenario: {script} has no main(argv)")
        return int(mod.main(argv))
    return _run(name, args)


def register(sub: Any) -> None:
    """Add ``tmhw scenario`` to the top-level sub-parsers."""
    p = sub.add_parser("scenario", help="run a study that reproduces the paper's figures",
                       description="Run a study: " + ", ".join(SCENARIOS) + ".")
    p.add_argument("name", nargs="?", metavar="NAME", help="the scenario to run")
    p.add_argument("--list", action="store_true", help="list the scenarios")
    add_options(p)
    p.set_defaults(func=_cmd)

