"""Energy figures against their sources: the detailed DRAM model's energy against
DRAMsim3's on the runs of ``data/dramsim3.toml`` (within 5%), HBM2's energy per bit read
against O'Connor et al. (MICRO'17), and the energy of a NAND page read against the
V x I x t form of SimpleSSD and SSDsim (``data/energy.toml``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from dram import PRESETS as DRAM_PRESETS
from dram.bench import run_bench as dram_bench
from flash.bench import run_bench as flash_bench
from flash.config import PRESETS as FLASH_PRESETS
from tmhw.validate import dram
from tmhw.validate.check import Check, reference_data


def _dramsim3_pj_per_bit(pattern: str) -> float:
    return float(dram.hbm2_bench(pattern)["energy_pj_per_bit"])


def hbm2_read_pj_per_bit() -> float:
    """One HBM2 channel with its interface energy, 400 sequential 4 KiB reads."""
    cfg = replace(DRAM_PRESETS["hbm2"], channels=1)
    return float(dram_bench(cfg, "stream", 4096, 400, "detailed")["energy_pj_per_bit"])


def nand_read_mw() -> float:
    """The power the 990pro preset charges while a die reads: its energy per page read
    over 500 random page reads, per tR."""
    cfg = FLASH_PRESETS["990pro"]
    r = flash_bench(cfg, pattern="randread", size=cfg.page_size, qd=8, count=500)
    pj = float(r["report"]["energy_pj"]["nand_read"]) / int(r["commands"]["read"])
    return pj / cfg.t_r_mean * 1e3


def checks() -> list[Check]:
    """DRAMsim3's HBM2 energy, O'Connor's HBM2 pJ/bit, a NAND page read's energy."""
    out = []
    for pattern, what in (("stream", "sequential"), ("random", "random")):
        run = dram.run(f"hbm2_{pattern}")
        out.append(Check(
            name=f"energy/dramsim3/hbm2_{pattern}", component="energy",
            reference=dram.REFERENCE,
            figure=f"HBM2, one channel, {run['reads']} {what} 64 B reads: energy per bit "
                   "(no interface term)",
            unit="pJ/bit",
            reference_value=float(run["energy_pj"]) / (int(run["reads"]) * 512),
            measure=partial(_dramsim3_pj_per_bit, pattern), tolerance=0.05,
            tool=dram.tool() + " (total_energy)", source=dram.source(f"hbm2_{pattern}"),
            quick=True))
    data = reference_data("energy")
    hbm = data["hbm2_read"]
    out.append(Check(
        name="energy/hbm2_read", component="energy", reference=hbm["reference"],
        figure="HBM2, one channel, 400 sequential 4 KiB reads: energy per bit",
        unit="pJ/bit", reference_value=float(hbm["value"]), measure=hbm2_read_pj_per_bit,
        bounds=(float(hbm["low"]), float(hbm["high"])), tool=hbm["reference"],
        source=hbm["source"], quick=True))
    nand = data["nand_page_read"]
    out.append(Check(
        name="energy/nand_page_read", component="energy", reference=nand["reference"],
        figure="990pro: a die's power while it reads (page read energy / tR)", unit="mW",
        reference_value=float(nand["value"]), measure=nand_read_mw, tolerance=1e-6,
        tool=nand["reference"], source=nand["source"], quick=True))
    return out
