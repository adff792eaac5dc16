"""The Report: every figure of a run, nested like the config, with the roll-ups of energy,
power, throughput per watt, hardware cost and flash endurance that ``tmhw.system``
computes when a run ends. This module reads reports only: JSON out, the text summary.

``report.json`` holds the config that produced it and the package version; wall-clock
figures live under ``host`` only, so two runs with the same config and seed give
byte-identical JSON once ``host`` is removed.
"""

from __future__ import annotations

import importlib.metadata as _metadata
import json
from pathlib import Path
from typing import Any

from tmhw.sim.units import GB, S

#: The package's version, from its metadata (``pyproject.toml`` is the one source).
VERSION = _metadata.version("tmhw")


def subtree_energy_pj(node: dict[str, Any]) -> float:
    """Energy of a component and all its descendants, from its report subtree."""
    total = 0.0
    for key, value in node.items():
        if key == "energy_pj" and isinstance(value, dict):
            total += float(value.get("total", 0.0))
        elif isinstance(value, dict):
            total += subtree_energy_pj(value)
    return total


def _metered(node: dict[str, Any]) -> bool:
    """Whether a component or one of its descendants has an energy meter."""
    return "energy_pj" in node or any(_metered(v) for v in node.values()
                                      if isinstance(v, dict))


def rollup(rep: dict[str, Any]) -> dict[str, Any]:
    """Add the roll-ups to a run's figures, reading only the report (and the config in
    it): energy per top-level component and in total, average power, throughput per
    watt, hardware cost and flash endurance."""
    cfg = rep["config"]
    end = rep["sim_time_ps"]
    # Steady state: what each component spent in the measured window, from the end of
    # the warm-up to the last op (the run's energy per component, whole run, stays under
    # ``system``; what it spent after the last op is the drain's).
    warm = rep.get("energy_warmup_pj") or {}
    whole = {name: subtree_energy_pj(node) for name, node in rep["system"].items()
             if isinstance(node, dict) and _metered(node)}
    upto = rep.get("energy_window_pj") or whole
    energy = {name: float(upto.get(name, e)) - float(warm.get(name, 0.0))
              for name, e in whole.items()}
    energy["total"] = sum(energy.values())
    drain = {name: e - float(upto.get(name, e)) for name, e in whole.items()}
    drain["total"] = sum(drain.values())
    rep["drain"] = {"time_ps": rep["run_total"]["sim_time_ps"]
                    - rep.get("window_end_ps", rep["run_total"]["sim_time_ps"]),
                    "energy_pj": drain}
    cost = cfg["cost"]
    hbm_usd = rep["policy"]["hbm_capacity_bytes"] / GB * cost["hbm_usd_per_gb"]
    flash_usd = rep["policy"]["flash_tier_bytes"] / GB * cost["nand_usd_per_gb"]
    memory_usd = hbm_usd + flash_usd
    system_usd = memory_usd + cost["npu_usd"]
    rep["energy_pj"] = energy
    # pJ per ps is W; x1e3 gives mW
    rep["avg_power_mw"] = energy["total"] / end * 1e3 if end else 0.0
    rep["samples_per_joule"] = (rep["samples"] / (energy["total"] * 1e-12)
                                if energy["total"] else 0.0)
    rep["cost"] = {
        "hbm_usd": hbm_usd, "flash_usd": flash_usd, "memory_usd": memory_usd,
        "npu_usd": cost["npu_usd"], "system_usd": system_usd,
        "samples_per_s_per_usd": rep["samples_per_s"] / system_usd if system_usd else 0.0,
    }
    rep["endurance"] = endurance(rep)
    return rep


#: The layout's version (``report.json``'s ``schema_version``; the schema is
#: ``tmhw/data/report.schema.json``, described in ``docs/REPORT.md``). Raised when a key
#: is renamed or moves, or its meaning changes.
SCHEMA_VERSION = 1

#: per-iteration record keys renamed in the report (the executor's names -> the schema's)
_RECORD_KEYS = {"compute_ps": "npu_busy_ps", "stall_ps": "flash_stall_ps"}


def shape(rep: dict[str, Any]) -> dict[str, Any]:
    """The report as ``report.json`` holds it, from the run's figures and roll-ups: every
    figure under the section that says its scope (``steady``: per measured iteration,
    their mean; ``per_iteration``: each iteration; ``warmup``; ``run_total``: the whole
    run, the component tree included; ``bounds``: per iteration), so that no key means
    two things at two levels (``docs/REPORT.md``)."""
    measured = max(1, rep["iterations"] - rep["warmup_iterations"])
    cost = dict(rep["cost"])
    steady = {
        "iteration_time_ps": rep["iteration_time_ps"],
        "npu_busy_ps": rep["compute_ps"],
        "npu_hbm_stall_ps": rep["npu_hbm_stall_ps"],
        "flash_stall_ps": rep["stall_ps"],
        "faults": rep["faults"],
        "streamed_bytes": rep["streamed_bytes"],
        "emergency_evictions": rep["emergency_evictions"],
        "traffic_bytes": rep["traffic_bytes"],
        "energy_pj": {k: v / measured for k, v in rep["energy_pj"].items()},
        "samples_per_s": rep["samples_per_s"],
        "avg_power_mw": rep["avg_power_mw"],
        "samples_per_joule": rep["samples_per_joule"],
        "samples_per_s_per_usd": cost.pop("samples_per_s_per_usd"),
    }
    total = dict(rep["run_total"])
    total.update(hbm_peak_occupancy_bytes=rep["hbm_peak_occupancy_bytes"],
                 hbm_mean_occupancy_bytes=rep["hbm_mean_occupancy_bytes"],
                 system=rep["system"])
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "version": rep["version"],
        "workload": rep["workload"],
        "policy": rep["policy"],
        "measurement": {"iterations": rep["iterations"],
                        "warmup_iterations": rep["warmup_iterations"],
                        "measured_iterations": rep["iterations"] - rep["warmup_iterations"],
                        "steady_state": rep["steady_state"],
                        "samples_per_iteration": rep["samples"] // measured,
                        "converged": rep["converged"], "period": rep["period"],
                        "skipped_iterations": rep["skipped_iterations"],
                        "window_end_ps": rep.get("window_end_ps",
                                                 rep["run_total"]["sim_time_ps"])},
        "steady": steady,
        "per_iteration": [{_RECORD_KEYS.get(k, k): v for k, v in r.items()}
                          for r in rep["per_iteration"]],
        "run_total": total,
        "bounds": rep["bounds"],
        "cost": cost,
        "endurance": rep["endurance"],
        "warnings": rep["warnings"],
        "config": rep["config"],
    }
    if "energy_warmup_pj" in rep:
        out["warmup"] = {"end_ps": rep["energy_since_ps"],
                         "energy_pj": rep["energy_warmup_pj"]}
    out["drain"] = rep["drain"]
    return out


def endurance(rep: dict[str, Any]) -> dict[str, float]:
    """P/E cycles consumed per iteration and the days of continuous training until the
    flash device reaches its P/E limit, from the pages it programmed (host writes times
    the FTL's write amplification, garbage collection included)."""
    f = rep["config"]["flash"]
    flash = rep["system"].get("flash", {})
    blocks = (f["channels"] * f["chips_per_channel"] * f["dies_per_chip"]
              * f["planes_per_die"] * f["blocks_per_plane"])
    physical_pages = blocks * f["pages_per_block"]
    programmed = int(flash.get("pages_programmed", 0))
    iters = max(1, rep["iterations"])
    pe_per_iter = programmed / physical_pages / iters if physical_pages else 0.0
    it_s = rep["iteration_time_ps"] / S
    days = f["pe_limit"] / pe_per_iter * it_s / 86400.0 if pe_per_iter > 0 else -1.0
    return {"erases": int(flash.get("erases", 0)), "pages_programmed": programmed,
            "blocks": blocks, "waf": float(flash.get("waf", 1.0)),
            "pe_cycles_per_iteration": pe_per_iter, "lifetime_days": days}


def strip_host(rep: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rep.items() if k != "host"}


def write_json(rep: dict[str, Any], path: str | Path) -> None:
    """Write a run's report to ``path``, whole or not at all, after checking it against
    its schema (``tmhw.report_schema``): every ``report.json`` any command or the library
    writes goes through here."""
    from tmhw.outputs import atomic_write
    from tmhw.report_schema import validate
    validate(rep)
    atomic_write(Path(path), json.dumps(rep, indent=1, sort_keys=False, default=float) + "\n")


def steady_text(rep: dict[str, Any]) -> str:
    """Which iterations the headline figures are the mean of, in words."""
    m = rep["measurement"]
    n, warm = m["iterations"], m["warmup_iterations"]
    if not m["steady_state"] or warm == 0:
        which = "iteration 0" if n == 1 else f"iterations 0-{n - 1}"
        return (f"{n}; mean of {which}" + ("" if m["steady_state"] else
                                          " (no iteration after the warm-up)"))
    warm_it = "iteration 0" if warm == 1 else f"iterations 0-{warm - 1}"
    steady = f"iteration {warm}" if n - warm == 1 else f"iterations {warm}-{n - 1}"
    return f"{n}: {warm_it} warm-up, {steady} steady state (the figures below are their mean)"


def summary_table(rep: dict[str, Any]) -> str:
    """A short text summary for stdout: every figure per steady-state iteration, then
    any warnings; labels from the report's schema (``tmhw.report_schema``)."""
    from tmhw.report_schema import label as L
    from tmhw.sim.units import fmt_bytes, fmt_time

    st = rep["steady"]
    t = st["traffic_bytes"]
    w = rep["workload"]
    p = rep["policy"]
    e = st["energy_pj"]
    npu_hbm = t["npu_hbm_read"] + t["npu_hbm_write"]
    rows = [
        (L("workload.model"), f"{w['model']} batch {w['batch']}"
         + (f" seq {w['seq']}" if w["seq"] else "")),
        (L("policy.name"), f"{p['name']} (HBM {fmt_bytes(p['hbm_capacity_bytes'])}, "
                           f"{p['hbm_capacity_bytes'] / max(1, w['footprint_bytes']):.1%} of "
                           f"{fmt_bytes(w['footprint_bytes'])} footprint)"),
        (L("measurement.iterations"), steady_text(rep)),
        ("per iteration:", ""),
        (L("steady.iteration_time_ps"), fmt_time(st["iteration_time_ps"])),
        ("  " + L("steady.npu_busy_ps"), fmt_time(st["npu_busy_ps"])),
        ("    " + L("steady.npu_hbm_stall_ps"), fmt_time(st["npu_hbm_stall_ps"])),
        ("  " + L("steady.flash_stall_ps"), fmt_time(st["flash_stall_ps"])),
        (L("steady.traffic_bytes.flash_to_hbm"), fmt_bytes(t["flash_to_hbm"])),
        (L("steady.traffic_bytes.hbm_to_flash"), fmt_bytes(t["hbm_to_flash"])),
        ("NPU <-> HBM", fmt_bytes(npu_hbm)),
        (L("steady.energy_pj"),
         f"{e['total'] * 1e-12:.3f} J (npu {e['npu'] / e['total']:.0%}, "
         f"hbm {e['hbm'] / e['total']:.0%}, flash {e['flash'] / e['total']:.0%}, "
         f"dma {e['dma'] / e['total']:.0%})" if e["total"] else "0 J"),
        ("rates:", ""),
        (L("steady.samples_per_s"), f"{st['samples_per_s']:.2f} samples/s"),
        (L("steady.avg_power_mw"), f"{st['avg_power_mw'] / 1e3:.1f} W"),
        (L("steady.samples_per_joule"), f"{st['samples_per_joule']:.3f} samples/J"),
        ("other:", ""),
        (L("run_total.hbm_peak_occupancy_bytes"),
         fmt_bytes(rep["run_total"]["hbm_peak_occupancy_bytes"]) + " (whole run)"),
        (L("cost.memory_usd"), f"${rep['cost']['memory_usd']:.0f} (HBM and flash tier)"),
    ]
    if t.get("flash_to_npu"):
        rows.insert(rows.index((L("steady.traffic_bytes.hbm_to_flash"),
                                fmt_bytes(t["hbm_to_flash"]))) + 1,
                    (L("steady.traffic_bytes.flash_to_npu"), fmt_bytes(t["flash_to_npu"])))
    b = rep.get("bounds")
    if b:
        rows.insert(5, ("  " + L("bounds.iteration_time_ps"),
                        f"{fmt_time(b['iteration_time_ps'])} (x{b['time_ratio']:.2f})"
                        if b.get("time_ratio") else fmt_time(b["iteration_time_ps"])))
        inter = rows.index(("NPU <-> HBM", fmt_bytes(npu_hbm)))
        rows.insert(inter, ("  " + L("bounds.traffic_bytes"),
                            f"{fmt_bytes(b['traffic_bytes'])} (flash <-> HBM)"))
    rows += [("warning", w) for w in rep.get("warnings", [])]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}".rstrip() for k, v in rows)
