"""``tmhw validate``: run every shipped reference comparison and print one table.

    tmhw validate [--quick] [--component NAME] [--json | --markdown]

Exit status 0 when every row holds, 1 when one does not (one line per failing row on
stderr), 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from tmhw.validate.registry import COMPONENTS


def register(sub: Any) -> None:
    """Add ``tmhw validate`` to the top-level sub-parsers."""
    p = sub.add_parser("validate", help="run every reference comparison, print one table",
                       description="Run tmhw's reference comparisons (SCALE-Sim, DRAMsim3, "
                       "MQSim, SSD data sheets, energy sources) and print one table: "
                       "reference | figure | tmhw | reference value | error | tolerance | "
                       "holds. Exit status 1 when a row does not hold.")
    p.add_argument("--quick", action="store_true",
                   help="the subset CI runs (under a minute): the fast checks that hold")
    p.add_argument("--component", choices=list(COMPONENTS),
                   help="one group only: " + ", ".join(COMPONENTS))
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the results as JSON")
    fmt.add_argument("--markdown", action="store_true",
                     help="print docs/VALIDATION.md (tables and sources)")
    p.set_defaults(func=validate_cmd)


def validate_cmd(args: argparse.Namespace) -> int:
    from tmhw.validate import table
    from tmhw.validate.registry import checks, run

    t0 = time.perf_counter()
    results = run(checks(args.component, quick=args.quick), progress=True)
    seconds = time.perf_counter() - t0
    if args.json:
        print(table.as_json(results, seconds))
    elif args.markdown:
        sys.stdout.write(table.markdown(results))
    else:
        print(table.text(results, seconds))
    failed = [r for r in results if not r.holds]
    for r in failed:
        sys.stderr.write(f"tmhw validate: does not hold: {r.line()}\n")
    return 1 if failed else 0
