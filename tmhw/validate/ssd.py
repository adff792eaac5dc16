"""SSD presets against the data sheets of the devices they are named after.

Each figure of ``data/datasheets.toml`` is a ``DatasheetFigure``: the preset, what the
data sheet states (value, unit, conditions) and how tmhw measures it, a closed-loop
``flash.bench.run_bench`` run, the library call of ``tmhw flash bench --preset P
--pattern PAT --size S --qd Q --count N`` (fast model, fresh device). Bandwidth is
``bandwidth_mbps`` (10^6 B/s, as data sheets count), IOPS ``iops``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flash.bench import run_bench
from flash.config import PRESETS
from tmhw.sim.units import KiB
from tmhw.validate.check import Check, reference_data

#: what each unit reads from run_bench's figures
FIGURE_KEY = {"MB/s": "bandwidth_mbps", "IOPS": "iops"}


@dataclass(frozen=True, slots=True, kw_only=True)
class DatasheetFigure:
    """One data-sheet figure of one preset and the bench run that measures it."""

    preset: str
    device: str       # the device and capacity point the data sheet describes
    document: str     # the data sheet
    figure: str       # e.g. "sequential read"
    conditions: str   # the data sheet's conditions, and tmhw's where they differ
    pattern: str      # run_bench's pattern
    size: int         # bytes per request
    qd: int
    count: int
    value: float      # the data sheet's figure
    unit: str         # MB/s or IOPS
    tolerance: float
    ci: bool          # False: known not to hold with today's preset

    def measure(self) -> float:
        r = run_bench(PRESETS[self.preset], pattern=self.pattern, size=self.size,
                      qd=self.qd, count=self.count)
        return float(r[FIGURE_KEY[self.unit]])

    def check(self) -> Check:
        size = f"{self.size // KiB} KiB"
        return Check(
            name=f"ssd/{self.preset}/{self.pattern}", component="ssd",
            reference=self.document,
            figure=f"{self.preset}: {self.figure} {size} QD{self.qd}, {self.count} requests",
            unit=self.unit, reference_value=self.value, measure=self.measure,
            tolerance=self.tolerance,
            tool=f"{self.document} ({self.device})",
            source=f"{self.figure}, {self.conditions}; tmhw: tmhw flash bench --preset "
                   f"{self.preset} --pattern {self.pattern} --size {self.size // KiB}KiB "
                   f"--qd {self.qd} --count {self.count}",
            # a steady random write takes 200,000 requests: seconds, full run only
            quick=self.ci and self.pattern != "randwrite", ci=self.ci)


def figures() -> list[DatasheetFigure]:
    """Every data-sheet figure of ``data/datasheets.toml``, preset by preset."""
    out = []
    for preset, sheet in reference_data("datasheets").items():
        for f in sheet["figures"]:
            out.append(_figure(preset, sheet, f))
    return out


def _figure(preset: str, sheet: dict[str, Any], f: dict[str, Any]) -> DatasheetFigure:
    return DatasheetFigure(
        preset=preset, device=sheet["device"], document=sheet["document"],
        figure=f["figure"], conditions=f["conditions"], pattern=f["pattern"],
        size=int(f["size_kib"]) * KiB, qd=int(f["qd"]), count=int(f["count"]),
        value=float(f["value"]), unit=f["unit"], tolerance=float(f["tolerance"]),
        ci=bool(f["ci"]))


def checks() -> list[Check]:
    """Every data-sheet figure; rows with ``ci = false`` stay out of the quick set."""
    return [f.check() for f in figures()]
