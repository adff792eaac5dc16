"""What each shipped SSD preset's datasheet states, under the conditions it was measured
in, and how to measure the same figure on the model (``measure``): the one home of
these numbers (the tests, ``tmhw validate`` and docs/PARAMETERS.md read them here).

A figure holds when the model is within ``tolerance`` of the datasheet: 10%, 15% for
random writes, 25% for power. Sequential figures are MB/s (10^6 bytes)
of 128 KiB requests, random figures IOPS of 4 KiB requests, each measured as
``flash.bench``'s steady rate (the second half of the requests, after the write buffer
and the queue have ramped up).

Conditions the model reproduces and what it leaves out:

- sequential reads and random reads run on preconditioned (mapped) data; writes on a
  device half full, so a consumer drive's writes land in its SLC cache (where its
  datasheet measures them);
- an enterprise drive's random-write figure is for the sustained state (after the
  drive has been filled and overwritten), where garbage collection bounds it: it is
  measured on a copy with 128 blocks per plane (every plane's share of spare, free and
  written blocks as the preset's, so the same write amplification), aged by one
  overwrite of its data, over 400,000 requests (100,000 pages, eight times the write
  buffer, so the rate is the dies' and not the buffer's);
- power is the device's mean over the run (NAND V x I per operation, channel I/O,
  controller while active, idle). The PM1743's controller power is derived from its
  stated efficiency (``flash.config``), so its row checks that the rest of the model
  (NAND, channels, the rate reached) stays consistent with it; the 990 PRO's row holds
  an estimated 2 W controller against an independent figure.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from flash.bench import run_bench
from flash.config import PRESETS, FlashConfig
from tmhw.sim.units import KiB


@dataclass(frozen=True, slots=True)
class Figure:
    """One datasheet figure of one preset."""

    preset: str
    figure: str              # "seqread", "seqwrite", "randread", "randwrite"
    value: float             # MB/s for sequential, IOPS for random
    qd: int                  # outstanding requests (queue depth x threads)
    source: str
    tolerance: float = 0.10
    count: int = 8000        # requests measured
    precondition: float = 1.0
    age: float = 0.0
    #: blocks per plane of the measured copy (0: the preset's; a sustained
    #: random-write state is reached on a copy with fewer blocks, all else the same)
    blocks_per_plane: int = 0
    holds_today: bool = True
    #: "rate" (MB/s or IOPS), "watts" (the device's mean power over the run) or
    #: "mbps_per_watt" (its rate over that power)
    quantity: str = "rate"

    @property
    def unit(self) -> str:
        if self.quantity == "watts":
            return "W"
        if self.quantity == "mbps_per_watt":
            return "MB/s per W"
        return "MB/s" if self.figure.startswith("seq") else "IOPS"

    @property
    def size(self) -> int:
        return 128 * KiB if self.figure.startswith("seq") else 4 * KiB

    def config(self) -> FlashConfig:
        cfg = PRESETS[self.preset]
        if self.blocks_per_plane:
            cfg = dataclasses.replace(cfg, blocks_per_plane=self.blocks_per_plane)
        return cfg


_990 = ("Samsung 990 PRO 2 TB data sheet (2022): sequential 128 KiB, random 4 KiB at "
        "QD32 x 16 threads, IOmeter")
_PM = ("Samsung PM1743 product brief (2022), 3.84 TB class: sequential 128 KiB, "
       "random 4 KiB")

FIGURES: tuple[Figure, ...] = (
    Figure("990pro", "seqread", 7450, 64, _990),
    Figure("990pro", "seqwrite", 6900, 64, _990, count=16000, precondition=0.5),
    Figure("990pro", "randread", 1_400_000, 512, _990, count=60000),
    Figure("990pro", "randwrite", 1_550_000, 512, _990, tolerance=0.15, count=200000,
           precondition=0.5),
    Figure("pm1743", "seqread", 13000, 64, _PM),
    Figure("pm1743", "seqwrite", 6600, 64, _PM, count=16000, precondition=0.5),
    Figure("pm1743", "randread", 2_500_000, 256, _PM, count=60000),
    Figure("pm1743", "randwrite", 250_000, 256, _PM, tolerance=0.15, count=400000,
           age=1.0, blocks_per_plane=128),
    # power (within 25%): the 990 PRO's stated average, taken as the power of its
    # sequential writes (its busiest figure; the data sheet states no workload), and the
    # PM1743's stated efficiency, taken on sequential reads
    Figure("990pro", "seqwrite", 6.5, 64, "Samsung 990 PRO data sheet: average power "
           "6.5 W (no workload stated; taken as sequential writes)", tolerance=0.25,
           count=16000, precondition=0.5, quantity="watts"),
    Figure("pm1743", "seqread", 608, 64, "Samsung PM1743 announcement (2021): up to 608 "
           "MB/s per watt (no workload stated; taken as sequential reads)", tolerance=0.25,
           quantity="mbps_per_watt"),
)


def measure(f: Figure) -> float:
    """The model's figure under the datasheet's conditions (``f.unit``)."""
    r: dict[str, Any] = run_bench(f.config(), pattern=f.figure, size=f.size, qd=f.qd,
                                  count=f.count, precondition=f.precondition, age=f.age)
    if f.quantity != "rate":
        # the whole run's energy (NAND, channels, controller, idle) over its time
        watts = float(r["energy_pj_per_byte"]) * f.count * f.size / int(r["elapsed_ps"])
        return watts if f.quantity == "watts" else float(r["bandwidth_mbps"]) / watts
    return float(r["steady_bandwidth_mbps"] if f.unit == "MB/s" else r["steady_iops"])


def error(f: Figure, measured: float) -> float:
    """Relative error of ``measured`` against the datasheet."""
    return measured / f.value - 1
