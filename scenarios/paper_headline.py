#!/usr/bin/env python3
"""TM-Training against every baseline at 12.5% HBM: traffic, throughput per watt, cost.

    python scenarios/paper_headline.py [--quick] [--out DIR] [--workers N] [--set a.b=v ...]
    tmhw scenario paper_headline [same options]

The study itself is ``tmhw.studies.paper_headline``; this script is its command-line entry.
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

NAME = "paper_headline"


def main(argv: Sequence[str] | None = None) -> int:
    return run_scenario(NAME, argv)


if __name__ == "__main__":
    raise SystemExit(script_main(NAME))
