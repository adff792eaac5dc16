#!/usr/bin/env python3
"""Run the study tmhw/scenarios/capacity_sweep.py from a checkout, with the options of
``tmhw scenario capacity_sweep`` (``--help`` lists them):

    .venv/bin/python scenarios/capacity_sweep.py [--quick] [--out DIR] [--set a.b=v ...]
"""

from tmhw.studies import script_main

if __name__ == "__main__":
    raise SystemExit(script_main(__file__))
