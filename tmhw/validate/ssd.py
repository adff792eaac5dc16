"""SSD presets against the data sheets of the devices they are named after.

The figures, their sources and conditions, and how each is measured live in
``flash.datasheets`` (the flash package's own record of its presets); each becomes a
check here. A figure is measured as ``tmhw flash bench`` measures it, steady rate
(``flash.bench``: the second half of the requests), on the preset (or, for a sustained
random-write state, a copy with fewer blocks per plane, all else the preset's).
"""

from __future__ import annotations

from flash.datasheets import FIGURES, Figure, measure
from tmhw.validate.check import Check

_NAMES = {"seqread": "sequential read", "seqwrite": "sequential write",
          "randread": "random read", "randwrite": "random write"}


def _check(f: Figure) -> Check:
    size = f"{f.size // 1024} KiB"
    run = (f"tmhw flash bench --preset {f.preset} --pattern {f.figure} --size "
           f"{f.size // 1024}KiB --qd {f.qd} --count {f.count} --precondition "
           f"{f.precondition}" + (f" --age {f.age}" if f.age else "")
           + " (steady rate" + (f"; on a copy with blocks_per_plane = {f.blocks_per_plane}"
                                if f.blocks_per_plane else "") + ")")
    what = {"rate": "", "watts": ": power", "mbps_per_watt": ": MB/s per watt"}[f.quantity]
    return Check(
        name=f"ssd/{f.preset}/{f.figure}" + ("" if f.quantity == "rate" else f"/{f.quantity}"),
        component="ssd", reference=f.source.split(":")[0],
        figure=f"{f.preset}: {_NAMES[f.figure]} {size} QD{f.qd}{what}", unit=f.unit,
        reference_value=f.value, measure=lambda: measure(f), tolerance=f.tolerance,
        tool=f.source, source=run,
        # a steady random write takes 100,000 requests or more: seconds, full run only
        quick=f.holds_today and f.figure != "randwrite", ci=f.holds_today)


def checks() -> list[Check]:
    """Every data-sheet figure; those that do not hold yet stay out of the quick set."""
    return [_check(f) for f in FIGURES]
