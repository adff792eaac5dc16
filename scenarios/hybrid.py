#!/usr/bin/env python3
"""Run the study tmhw/scenarios/hybrid.py from a checkout, with the options of
``tmhw scenario hybrid`` (``--help`` lists them):

    .venv/bin/python scenarios/hybrid.py [--quick] [--out DIR] [--set a.b=v ...]
"""

from tmhw.studies import script_main

if __name__ == "__main__":
    raise SystemExit(script_main(__file__))
