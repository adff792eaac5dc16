"""The Report: every figure of a run, nested like the config, plus roll-ups of energy,
power, throughput per watt, hardware cost and flash endurance.

``report.json`` holds the config that produced it and the package version; wall-clock
figures live under ``host`` only, so two runs with the same config and seed give
byte-identical JSON once ``host`` is removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tmhw import tomlio
from tmhw.sim.units import GB, S

if TYPE_CHECKING:
    from tmhw.system import System

VERSION = "0.1.0"


def _energy_of(system: System, name: str) -> float:
    comp = system.root.children[name]
    return comp.total_energy_pj()


def build_report(system: System) -> dict[str, Any]:
    cfg = system.cfg
    wl = system.workload
    end = int(system.env.now)
    iters = len(system.records)
    dma_rep = system.dma.report()
    fetch = dma_rep["fetch_bytes"]
    wb = dma_rep["writeback_bytes"]
    energy = {n: _energy_of(system, n) for n in ("npu", "hbm", "flash", "dma")}
    energy["total"] = sum(energy.values())
    samples = wl.batch * iters
    seconds = end / S
    avg_power_mw = energy["total"] / end * 1e3 if end else 0.0   # pJ/ps = W; x1e3 = mW
    iteration_time = end // iters if iters else 0
    stall_total = sum(r.stall_ps for r in system.records)
    hbm_bytes = system.capacity_pages * wl.page_size
    tiered = not system.policy.whole_footprint
    flash_bytes = wl.npages * wl.page_size if tiered else 0
    mem_usd = hbm_bytes / GB * cfg.cost.hbm_usd_per_gb + flash_bytes / GB * cfg.cost.nand_usd_per_gb
    sys_usd = mem_usd + cfg.cost.npu_usd
    sps = samples / seconds if seconds else 0.0
    flash_rep = system.flash.report()
    rep: dict[str, Any] = {
        "version": VERSION,
        "workload": {
            "model": wl.name, "batch": wl.batch, "seq": wl.seq, "params": wl.params,
            "ops": len(wl.ops), "tensors": len(wl.tensors), "pages": wl.npages,
            "page_size": wl.page_size, "footprint_bytes": system.footprint_bytes,
            "tensor_bytes": wl.npages * wl.page_size, "macs": wl.total_macs(),
        },
        "policy": {
            "name": system.policy.name, "hbm_ratio": cfg.policy.hbm_ratio,
            "hbm_capacity_bytes": hbm_bytes,
            "table_rows": system.first_table_rows, "table_bytes": system.first_table_bytes,
            "table_bytes_by_action": system.table.bytes_by_action(wl.page_size),
            "notes": dict(system.table.notes),
        },
        "iterations": iters,
        "sim_time_ps": end,
        "iteration_time_ps": iteration_time,
        "samples_per_s": sps,
        # Time the NPU waited for operands to reach HBM from flash (the memory-tier stall);
        # time inside ops lost to HBM bandwidth is npu_hbm_stall_ps, part of compute_ps.
        "stall_ps": stall_total // iters if iters else 0,
        "compute_ps": sum(r.compute_ps for r in system.records) // max(1, iters),
        "npu_hbm_stall_ps": sum(r.npu_hbm_stall_ps for r in system.records) // max(1, iters),
        "per_iteration": [
            {"index": r.index, "time_ps": r.time_ps, "stall_ps": r.stall_ps,
             "compute_ps": r.compute_ps, "npu_hbm_stall_ps": r.npu_hbm_stall_ps,
             "faults": r.faults,
             "flash_to_hbm_bytes": r.fetch_bytes, "hbm_to_flash_bytes": r.writeback_bytes,
             "emergency_evictions": r.emergency_evictions}
            for r in system.records],
        "traffic_bytes": {
            "flash_to_hbm": fetch, "hbm_to_flash": wb, "inter_tier": fetch + wb,
            "npu_hbm_read": system.npu_read, "npu_hbm_write": system.npu_write,
        },
        "faults": system.faults,
        "late_prefetches": system.late_prefetches,
        "cancelled_prefetches": system.cancelled_prefetches,
        "streamed_bytes": system.streamed_bytes,
        "emergency_evictions": system.emergency,
        "hbm_peak_occupancy_bytes": int(system.res.level.peak),
        "hbm_mean_occupancy_bytes": system.res.level.mean(end),
        "flash_writes_bytes": flash_rep.get("host_write_bytes", wb),
        "energy_pj": energy,
        "avg_power_mw": avg_power_mw,
        "samples_per_joule": samples / (energy["total"] * 1e-12) if energy["total"] else 0.0,
        "cost": {
            "hbm_usd": hbm_bytes / GB * cfg.cost.hbm_usd_per_gb,
            "flash_usd": flash_bytes / GB * cfg.cost.nand_usd_per_gb,
            "memory_usd": mem_usd, "npu_usd": cfg.cost.npu_usd, "system_usd": sys_usd,
            "samples_per_s_per_usd": sps / sys_usd if sys_usd else 0.0,
        },
        "endurance": endurance(system, end),
        "system": system.root.report(),
        "config": tomlio.to_dict(cfg),
    }
    return rep


def endurance(system: System, end: int) -> dict[str, float]:
    """P/E cycles per iteration and days of continuous training to the P/E limit."""
    f = system.cfg.flash
    erases = int(system.flash.erase_cmds)
    programmed = int(system.flash.pages_programmed)
    iters = max(1, len(system.records))
    blocks = f.blocks
    physical_pages = f.physical_pages
    # Wear per iteration: flash pages programmed (host writes x WAF, GC included) over the
    # device's pages, in P/E cycles per block on average.
    pe_per_iter = programmed / physical_pages / iters if physical_pages else 0.0
    it_s = end / iters / S
    days = (f.pe_limit / pe_per_iter * it_s / 86400.0) if pe_per_iter > 0 else float("inf")
    return {"erases": erases, "pages_programmed": programmed, "blocks": blocks,
            "pe_cycles_per_iteration": pe_per_iter,
            "lifetime_days": days if days != float("inf") else -1.0}


def strip_host(rep: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rep.items() if k != "host"}


def write_json(rep: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(rep, indent=1, sort_keys=False, default=float) + "\n")


def summary_table(rep: dict[str, Any]) -> str:
    """A short text summary for stdout."""
    from tmhw.sim.units import fmt_bytes, fmt_time

    t = rep["traffic_bytes"]
    e = rep["energy_pj"]
    w = rep["workload"]
    p = rep["policy"]
    rows = [
        ("model", f"{w['model']} batch {w['batch']}" + (f" seq {w['seq']}" if w["seq"] else "")),
        ("policy", f"{p['name']} (HBM {fmt_bytes(p['hbm_capacity_bytes'])}, "
                   f"{p['hbm_capacity_bytes'] / max(1, w['footprint_bytes']):.1%} of "
                   f"{fmt_bytes(w['footprint_bytes'])} footprint)"),
        ("iterations", str(rep["iterations"])),
        ("iteration time", fmt_time(rep["iteration_time_ps"])),
        ("  compute", fmt_time(rep["compute_ps"])),
        ("    of which HBM-bound", fmt_time(rep["npu_hbm_stall_ps"])),
        ("  memory stall", fmt_time(rep["stall_ps"])),
        ("throughput", f"{rep['samples_per_s']:.2f} samples/s"),
        ("flash -> HBM", fmt_bytes(t["flash_to_hbm"])),
        ("HBM -> flash", fmt_bytes(t["hbm_to_flash"])),
        ("NPU <-> HBM", fmt_bytes(t["npu_hbm_read"] + t["npu_hbm_write"])),
        ("HBM peak occupancy", fmt_bytes(rep["hbm_peak_occupancy_bytes"])),
        ("energy", f"{e['total'] * 1e-12:.3f} J (npu {e['npu'] / e['total']:.0%}, "
                   f"hbm {e['hbm'] / e['total']:.0%}, flash {e['flash'] / e['total']:.0%}, "
                   f"dma {e['dma'] / e['total']:.0%})" if e["total"] else "0 J"),
        ("average power", f"{rep['avg_power_mw'] / 1e3:.1f} W"),
        ("throughput per watt", f"{rep['samples_per_joule']:.3f} samples/J"),
        ("memory cost", f"${rep['cost']['memory_usd']:.0f}"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
