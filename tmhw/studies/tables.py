"""Markdown tables of a study's results, and the figures read out of each result.

A point that did not run shows why in every cell that would have held its figures:
``does not fit`` where the system refused the policy at this HBM capacity (the expected
outcome of a too-small HBM, with the refusal's reason in the status column), ``-``
otherwise (see the status column).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import tmhw.sweeps as SW

#: The label of a policy that the system refuses at this HBM capacity, in every table
#: and figure.
DOES_NOT_FIT = "does not fit"


def does_not_fit(r: SW.Result | None) -> bool:
    """Whether the point was refused because its policy cannot fit the HBM (an op's
    operands, or a policy's resident set, exceed the capacity): status
    ``does-not-fit``."""
    return r is not None and r["status"] == "does-not-fit"


def why_missing(r: SW.Result | None) -> str:
    """What a table cell or a figure shows instead of a figure of ``r``."""
    return DOES_NOT_FIT if does_not_fit(r) else "-"


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


Figure = Callable[[SW.Result | None, str], float | None]


def change(new: SW.Result | None, old: SW.Result | None, name: str,
           value: Figure | None = None) -> float | None:
    """The relative change of figure ``name`` (or ``value(result, name)``) from ``old`` to
    ``new``; None where either is missing."""
    get = value or fig_of
    a, b = get(new, name), get(old, name)
    return a / b - 1 if a is not None and b else None


def nand_bytes(r: SW.Result | None, _name: str = "") -> float | None:
    """Inter-tier bytes per iteration counted as the NAND pages they cost: scaled by the
    run's NAND page bytes (read and programmed, GC included) per host byte."""
    moved = fig_of(r, "inter_tier_bytes")
    if r is None or r["report"] is None or moved is None:
        return None
    f = r["report"]["run_total"]["system"]["flash"]
    page = r["report"]["config"]["flash"]["page_size"]
    host = f["bytes_read"] + f["bytes_written"]
    return moved * (f["pages_read"] + f["pages_programmed"]) * page / host if host else None


def best_of(results: Sequence[SW.Result | None], name: str, lower: bool = True,
            value: Figure | None = None) -> SW.Result | None:
    """The result with the lowest (or highest) figure ``name`` among those that have it."""
    get = value or fig_of
    ran = [(v, r) for r in results if r is not None and (v := get(r, name)) is not None]
    if not ran:
        return None
    return (min if lower else max)(ran, key=lambda vr: vr[0])[1]


def gib(v: Any) -> Any:
    return v / 2**30 if isinstance(v, int | float) and not isinstance(v, bool) else ""


def status_text(r: SW.Result) -> str:
    if r["status"] == "ok":
        return "ok"
    msg = r["error"].replace("|", "/")
    if does_not_fit(r):
        return f"{DOES_NOT_FIT}: {msg.removeprefix('policy.hbm_ratio: ')[:140]}"
    return f"{r['status']}: {msg[:140]}"


def fig_of(r: SW.Result | None, name: str) -> float | None:
    """One summary figure of a result, None where the point did not run."""
    if r is None or r["report"] is None:
        return None
    v = SW.figures(r["report"]).get(name, "")
    return float(v) if isinstance(v, int | float) else None


def cell(r: SW.Result | None, name: str, scale: float = 1.0, digits: int = 3) -> str:
    """A table cell: figure ``name`` of ``r`` times ``scale``, or why it is missing."""
    v = fig_of(r, name)
    return num(v * scale, digits) if v is not None else why_missing(r)


def bar(r: SW.Result | None, value: float | None) -> float | str:
    """A figure's value of ``r``: the number, or the label drawn in its place."""
    return value if value is not None else why_missing(r)


def figure_values(results: Sequence[SW.Result | None], name: str,
                  scale: float = 1.0) -> list[float | str]:
    """Figure ``name`` of each result (times ``scale``) for a chart, or its label."""
    return [bar(r, None if (v := fig_of(r, name)) is None else v * scale) for r in results]


def by_params(results: Sequence[SW.Result], *keys: str) -> dict[tuple[Any, ...], SW.Result]:
    return {tuple(r["params"][k] for k in keys): r for r in results}


def last_iteration(rep: dict[str, Any] | None, key: str = "time_ps") -> float | None:
    if rep is None or not rep.get("per_iteration"):
        return None
    v = rep["per_iteration"][-1].get(key)
    return float(v) if isinstance(v, int | float) else None
