"""What the scenario scripts share: a study's run, its tables, its figures, its command.

Each study is its own module, ``tmhw/scenarios/NAME.py``, readable from top to bottom:
its grid, its runs, its table and its figures, in one function ``study(st)``. Run it as

    tmhw scenario NAME [--quick] [--out DIR] [--workers N] [--set a.b=v]
    .venv/bin/python scenarios/NAME.py [same options]      (from a checkout)

Each writes ``summary.csv`` (one row per point), ``summary.md`` (its tables, printed
too) and its figures as PNG and SVG into ``--out`` (default ``out/NAME``). A point the
system refuses is a row with its reason, never a failed study: status ``does-not-fit``
where the policy cannot run in the HBM it is given (shown as "does not fit" in every
table and figure), ``skipped`` otherwise. A full study runs every rival tuned per cell
(``policy.tune``, ``tmhw.tune``). ``--quick`` runs small stand-ins of the same kind
(``QUICK_MODELS``) with the rivals at their defaults and AutoTM's ILP held to
``QUICK_ILP_NODES`` branch-and-bound nodes: a budget of work, never of wall time, so the
same options give the same results on any machine.

- ``study``: ``Study`` (options, points, outputs), the models and policy lists;
- ``tables``: markdown tables and the figures read out of each result;
- ``figures``: the charts, with "does not fit" drawn where a bar would be;
- ``cli``: options, their validation, ``tmhw scenario`` and ``script_main``.
"""

from __future__ import annotations

from tmhw.studies.cli import available, load_study, register, script_main
from tmhw.studies.study import (
    BASELINES,
    FULL_MODELS,
    POLICIES,
    PRACTICAL,
    QUICK_ILP_NODES,
    QUICK_MODELS,
    Model,
    Study,
    workload,
)
from tmhw.studies.tables import (
    DOES_NOT_FIT,
    bar,
    best_of,
    by_params,
    cell,
    change,
    does_not_fit,
    fig_of,
    figure_values,
    gib,
    last_iteration,
    md_table,
    nand_bytes,
    num,
    pct,
    status_text,
    why_missing,
)

__all__ = ["BASELINES", "DOES_NOT_FIT", "FULL_MODELS", "POLICIES", "PRACTICAL",
           "QUICK_ILP_NODES",
           "QUICK_MODELS", "Model", "Study", "available", "bar", "best_of", "by_params",
           "cell", "change", "does_not_fit", "fig_of", "figure_values", "gib", "last_iteration",
           "load_study", "md_table", "nand_bytes", "num", "pct", "register",
           "script_main", "status_text", "why_missing", "workload"]
