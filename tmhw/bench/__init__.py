"""The benchmark suite: ``tmhw bench [--json] [--case NAME] [--repeat N] [--small]``.

The suite measures the simulator's speed; wall-clock targets live here as reported
figures (``extra``: the target and whether it was met), never as test assertions, so the
tests' verdict does not depend on how busy the machine is.

Each case runs in its own Python process (so its peak RSS is its own) and reports its
wall time (the median of ``--repeat`` runs of the timed part, every figure that run's;
set-up such as preconditioning is timed apart in ``extra``), the SimPy events it
processed (``tmhw.sim.env.Environment`` counts them), the simulated time, peak RSS, a
throughput figure of its own and ``kernel_ratio``: its wall time per event over the bare
kernel's, measured in the same run (absolute times vary between machines; the ratio much
less).

The cases live in ``cases`` (the bare kernel, each device, the NPU, end-to-end runs)
and ``studies`` (each scenario, and a sweep on Dask); ``suite`` runs each in a process
of its own (``python -m tmhw.bench --child NAME``), prints the table and holds the
command's options. ``--small`` runs each case at a size for tests (seconds in all).
``--policy`` changes the policy of the e2e cases.
"""

from __future__ import annotations

from tmhw.bench.cases import FLASH_QD, HBM_BATCH, Measure
from tmhw.bench.studies import STUDIES, case_study, dask_points, study_figures
from tmhw.bench.suite import (
    CASES,
    FIELDS,
    HEADER,
    add_options,
    register,
    run_case,
    run_in_child,
    run_suite,
    selected,
)

__all__ = ["CASES", "FIELDS", "FLASH_QD", "HBM_BATCH", "HEADER", "STUDIES", "Measure",
           "add_options", "case_study", "dask_points", "register", "run_case", "run_in_child",
           "run_suite", "selected", "study_figures"]
