#!/usr/bin/env python3
"""Run the study tmhw/scenarios/llm_scaling.py from a checkout, with the options of
``tmhw scenario llm_scaling`` (``--help`` lists them):

    .venv/bin/python scenarios/llm_scaling.py [--quick] [--out DIR] [--set a.b=v ...]
"""

from tmhw.studies import script_main

if __name__ == "__main__":
    raise SystemExit(script_main(__file__))
