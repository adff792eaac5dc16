#!/usr/bin/env python3
"""Flash writes, write amplification and projected lifetime per policy.

    python scenarios/endurance.py [--quick] [--out DIR] [--workers N] [--set a.b=v ...]
    tmhw scenario endurance [same options]

The study itself is ``tmhw.studies.endurance``; this script is its command-line entry.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

try:
    from tmhw.studies import run_scenario, script_main
except ModuleNotFoundError:  # run from a checkout where tmhw is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tmhw.studies import run_scenario, script_main

NAME = "endurance"


def main(argv: Sequence[str] | None = None) -> int:
    return run_scenario(NAME, argv)


if __name__ == "__main__":
    raise SystemExit(script_main(NAME))
