"""The results of ``tmhw validate`` as a text table, Markdown (docs/VALIDATION.md) or
JSON: one row per check, reference | figure | tmhw | reference value | error |
tolerance | holds, grouped by component."""

from __future__ import annotations

import json
from collections.abc import Iterator

from tmhw.validate.check import Result, number, percent
from tmhw.validate.registry import COMPONENTS

HEADER = ("reference", "figure", "tmhw", "reference value", "error", "tolerance", "holds")


def _holds(r: Result) -> str:
    if r.holds:
        return "yes"
    return "no" if r.check.ci else "no (not in CI yet)"


def _cells(r: Result) -> tuple[str, ...]:
    c = r.check
    return (c.reference, c.figure, f"{number(r.value)} {c.unit}",
            f"{number(c.reference_value)} {c.unit}", percent(r.error), c.tolerance_text(),
            _holds(r))


def _groups(results: list[Result]) -> Iterator[tuple[str, list[Result]]]:
    for comp, heading in COMPONENTS.items():
        rows = [r for r in results if r.check.component == comp]
        if rows:
            yield heading, rows


def summary(results: list[Result], seconds: float) -> str:
    bad = sum(not r.holds for r in results)
    verdict = ("every row holds" if not bad else "1 row does not hold" if bad == 1 else
               f"{bad} rows do not hold")
    return f"{len(results)} checks, {verdict} ({seconds:.0f} s)"


def text(results: list[Result], seconds: float) -> str:
    """Aligned columns, a heading line per component."""
    widths = [max([len(h)] + [len(_cells(r)[i]) for r in results])
              for i, h in enumerate(HEADER)]
    right = {2, 3, 4}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [line(HEADER)]
    for heading, rows in _groups(results):
        out += ["", heading] + [line(_cells(r)) for r in rows]
    out += ["", summary(results, seconds)]
    return "\n".join(out)


def markdown(results: list[Result]) -> str:
    """docs/VALIDATION.md: a table per component, then the sources of its rows."""
    out = ["# Validation: tmhw against its references", "",
           "Every reference comparison tmhw ships, as `tmhw validate` runs them. Regenerate "
           "this file with", "", "    tmhw validate --markdown > docs/VALIDATION.md", "",
           "`tmhw validate --quick` runs the subset CI runs; `--component NAME` one group "
           f"({', '.join(COMPONENTS)}); `--json` for scripts. The reference data and "
           "its provenance are in `tmhw/validate/data/`; error is tmhw / reference - 1.",
           "Rows marked \"not in CI yet\" are known not to hold with today's presets."]
    for heading, rows in _groups(results):
        out += ["", f"## {heading}", "", "| " + " | ".join(HEADER) + " |",
                "|" + "---|" * len(HEADER)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |"
                for r in rows]
        out += ["", "Sources:", ""]
        for tool in dict.fromkeys(r.check.tool for r in rows):
            out.append(f"- {tool}")
            out += [f"  - {r.check.figure}: {r.check.source}" for r in rows
                    if r.check.tool == tool]
    bad = sum(not r.holds for r in results)
    out += ["", f"{len(results)} checks; " + ("every row holds." if not bad else
                                               f"{bad} do not hold.")]
    return "\n".join(out) + "\n"


def as_json(results: list[Result], seconds: float) -> str:
    return json.dumps({"holds": all(r.holds for r in results), "seconds": seconds,
                       "checks": [r.as_dict() for r in results]}, indent=1)
