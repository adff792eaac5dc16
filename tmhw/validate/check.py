"""One reference comparison: a figure tmhw computes, the value a reference tool or
document gives for the same figure, and how close the two must be.

A check holds when ``|tmhw / reference - 1| <= tolerance`` (tolerance 0: the two are
equal), or, where the source states a range rather than a value, when tmhw's figure lies
in ``bounds``. ``tool`` and ``source`` are the provenance a reader needs to redo the
reference run: the tool, its commit and build (or the document), then the run's config,
input and exact command (or where in the document).
"""

from __future__ import annotations

import math
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

#: the reference data shipped with the package
DATA = Path(__file__).parent / "data"


@cache
def reference_data(name: str) -> dict[str, Any]:
    """A TOML file of ``data/``: reference figures, each run with its provenance."""
    with open(DATA / f"{name}.toml", "rb") as f:
        return tomllib.load(f)


def tool_text(tool: dict[str, Any]) -> str:
    """A reference tool as its runs share it: name, commit, repository and build."""
    return f"{tool['name']} {tool['commit']} ({tool['repository']}; build: {tool['build']})"


def run_text(run: dict[str, Any]) -> str:
    """A reference run: its config, input and command."""
    return "; ".join(f"{k}: {run[k]}" for k in ("config", "workload", "trace", "command")
                     if k in run)


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """A reference comparison of the registry (``tmhw.validate.registry``)."""

    name: str                 # unique, e.g. "flash/mqsim-stock/rr_qd64"
    component: str            # the registry group: npu, dram, flash, ssd, energy
    reference: str            # who gives the value, e.g. "MQSim 7ec40e3"
    figure: str               # what is compared, under which conditions
    unit: str                 # the unit of both values
    reference_value: float
    measure: Callable[[], float]  # computes tmhw's value
    tolerance: float = 0.0    # largest |tmhw / reference - 1|; 0: equal
    bounds: tuple[float, float] | None = None  # the range a source states, instead
    tool: str                 # the reference tool, commit and build, or the document
    source: str               # the run: config, input, command (or where in the document)
    quick: bool = False       # part of ``tmhw validate --quick`` (and CI)
    ci: bool = True           # False: known not to hold yet, so kept out of --quick

    def error(self, value: float) -> float:
        """tmhw's relative error against the reference value."""
        if self.reference_value == 0:
            return 0.0 if value == 0 else math.inf
        return value / self.reference_value - 1.0

    def holds_for(self, value: float) -> bool:
        """Whether tmhw's ``value`` is within the tolerance (or the bounds)."""
        if self.bounds is not None:
            return self.bounds[0] <= value <= self.bounds[1]
        if self.tolerance == 0:
            return value == self.reference_value
        return abs(self.error(value)) <= self.tolerance

    def tolerance_text(self) -> str:
        """The tolerance as the table shows it: "equal", "±10%" or a range."""
        if self.bounds is not None:
            return f"{number(self.bounds[0])}-{number(self.bounds[1])} {self.unit}"
        if self.tolerance == 0:
            return "equal"
        return f"±{self.tolerance * 100:g}%"

    def run(self) -> Result:
        t0 = time.perf_counter()
        value = float(self.measure())
        return Result(check=self, value=value, seconds=time.perf_counter() - t0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """A check's outcome: tmhw's value and the wall time it took."""

    check: Check
    value: float
    seconds: float

    @property
    def error(self) -> float:
        return self.check.error(self.value)

    @property
    def holds(self) -> bool:
        return self.check.holds_for(self.value)

    def line(self) -> str:
        """One line for a failing row: what, tmhw's value, the reference's, the error."""
        c = self.check
        return (f"{c.name}: {c.figure}: tmhw {number(self.value)} {c.unit}, {c.reference} "
                f"{number(c.reference_value)} {c.unit} ({percent(self.error)}, allowed "
                f"{c.tolerance_text()})")

    def as_dict(self) -> dict[str, Any]:
        c = self.check
        return {"name": c.name, "component": c.component, "reference": c.reference,
                "figure": c.figure, "unit": c.unit, "tmhw": self.value,
                "reference_value": c.reference_value, "error": self.error,
                "tolerance": c.tolerance, "bounds": list(c.bounds) if c.bounds else None,
                "holds": self.holds, "ci": c.ci, "quick": c.quick, "tool": c.tool,
                "source": c.source, "seconds": self.seconds}


def number(x: float) -> str:
    """A value as a table shows it: integers whole, others to four significant digits
    (one decimal from 1000 up)."""
    if not math.isfinite(x):
        return str(x)
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 1000:
        return f"{x:,.1f}"
    return f"{x:.4g}"


def percent(err: float) -> str:
    """A relative error as the table shows it: "0", "+7.3%", "-0.055%"."""
    if err == 0:
        return "0"
    if math.isinf(err):
        return "inf"
    return f"{err * 100:+.2g}%" if abs(err) < 0.001 else f"{err * 100:+.1f}%"
