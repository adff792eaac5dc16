"""The cases of ``tmhw bench`` that run many points: each scenario (``study-NAME``) and
a sweep on Dask (``dask-speedup``). Each returns one measurement and runs inside its own
process (``tmhw.bench.suite``).

- ``dask-speedup``: eight equal runs (BERT-base at seq 512, batch 8, under TM-Training at
  1/8 HBM, one seed each) on a Dask ``LocalCluster`` of one worker, then two; throughput is
  the speedup (target at least 1.7), ``extra`` says whether the reports agree.
- ``study-NAME``: the scenario ``tmhw.scenarios.NAME`` at full size (``--small``: quick)
  with two local workers; throughput in simulated ops (ops x iterations) per wall
  second, and ``extra`` has the wall time per simulated op and per inter-tier GiB, the
  longest point and the points that did not fit. Targets: ``paper_headline`` under 5
  minutes, ``regime_map`` under 20, no point over 60 s. Full-size studies take minutes
  to hours each, so ``tmhw bench`` runs them with ``--studies`` or by name (``--case``);
  with ``--small`` they run quick.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Any

from tmhw.bench.cases import Measure
from tmhw.sim.errors import TmhwError

#: the scenarios (``tmhw.scenarios``), each a bench case ``study-NAME``
STUDIES = ("paper_headline", "regime_map", "robustness", "capacity_sweep", "flash_sensitivity",
           "ablation", "energy_breakdown", "endurance", "timeline", "llm_scaling", "hybrid")
#: wall-clock targets of the study cases (issue-level: a full study in minutes), seconds
STUDY_TARGETS = {"paper_headline": 60.0, "regime_map": 300.0}
#: the longest any one point of a study may take (so that no point dominates a study)
POINT_TARGET_S = 60.0
STUDY_WORKERS = 2
DASK_POINTS = 8


def study_figures(results: list[dict[str, Any]]) -> dict[str, Any]:
    """What a study simulated, from its points' results (each point once): points that
    ran, did not fit or failed, simulated ops (ops x iterations), inter-tier bytes over
    every iteration (warm-up included), events, and the longest point's wall time."""
    seen: dict[str, dict[str, Any]] = {r["id"]: r for r in results}
    ok = [r for r in seen.values() if r["status"] == "ok" and r["report"] is not None]
    ops = sum(r["report"]["workload"]["ops"] * r["report"]["measurement"]["iterations"] for r in ok)
    moved = sum(it["flash_to_hbm_bytes"] + it["hbm_to_flash_bytes"]
                + it["flash_to_npu_bytes"]
                for r in ok for it in r["report"]["per_iteration"])
    walls = [r["report"]["host"]["wall_s"] for r in ok]
    return {"points": len(seen), "ok": len(ok),
            "does_not_fit": sum(r["status"] == "does-not-fit" for r in seen.values()),
            "failed": sum(r["status"] not in ("ok", "does-not-fit") for r in seen.values()),
            "ops": ops, "inter_tier_gib": moved / 2**30,
            "events": sum(r["report"]["host"]["events"] for r in ok),
            "max_point_s": max(walls, default=0.0), "points_s": sum(walls)}


def case_study(name: str, small: bool, workers: int = STUDY_WORKERS, **_: Any) -> Measure:
    """Run the scenario ``NAME`` (``--small``: ``--quick``) with ``workers`` local
    processes into a temporary folder. Wall time per simulated op and per inter-tier GiB,
    and the longest point, against the study's target where it has one."""
    import tempfile

    from tmhw.studies.cli import load_study
    from tmhw.studies.study import Study

    fn = load_study(name)
    with tempfile.TemporaryDirectory() as d:
        st = Study(name, small, Path(d), workers, progress=False)
        t0 = time.perf_counter()
        fn(st)
        wall = time.perf_counter() - t0
    f = study_figures(st.results)
    extra: dict[str, Any] = {
        **f, "workers": workers,
        "wall_per_op_ms": 1e3 * wall / f["ops"] if f["ops"] else None,
        "wall_per_gib_s": wall / f["inter_tier_gib"] if f["inter_tier_gib"] else None}
    if name in STUDY_TARGETS and not small:
        extra.update(target_s=STUDY_TARGETS[name], point_target_s=POINT_TARGET_S,
                     within_target=wall < STUDY_TARGETS[name]
                     and f["max_point_s"] < POINT_TARGET_S)
    return {"wall_s": wall, "events": f["events"], "sim_time_ps": 0,
            "throughput": f["ops"] / wall if wall else 0.0, "unit": "simulated ops/s",
            "extra": extra}


def dask_points(small: bool) -> list[dict[str, Any]]:
    """The Dask case's grid: ``DASK_POINTS`` runs of equal size, a few seconds each, so
    that the measure is of the sweep and not of Dask's per-task overhead (BERT-base, 12
    layers at seq 512 and batch 8, under TM-Training at 1/8 HBM, one seed each;
    ``--small``: ResNet-18 at batch 2)."""
    import tmhw.sweeps as SW

    base = ({"workload.model": "resnet18", "workload.batch": 2}
            if small else {"workload.model": "bert-base", "workload.batch": 8,
                           "workload.seq": 512, "workload.layers": 12})
    return [SW.make_point("paper", {**base, "policy.name": "tm-training",
                                    "policy.hbm_ratio": 0.125, "run.iterations": 2,
                                    "run.warmup_iterations": 1,
                                    "run.seed": seed}, {"seed": seed})
            for seed in range(DASK_POINTS)]


def case_dask(small: bool, **_: Any) -> Measure:
    """The same grid on a Dask ``LocalCluster`` (loopback, no dashboard) of one worker,
    then of two, each worker with the simulator imported before the clock starts: the
    wall-time speedup (target 1.7) and whether the reports agree."""
    try:
        import distributed
    except ImportError:
        raise TmhwError("dask: Dask distributed is not installed; "
                        "pip install 'tmhw[cluster]'") from None
    import tmhw.sweeps as SW
    from tmhw.report import strip_host

    pts = dask_points(small)
    walls: dict[int, float] = {}
    reports: dict[int, list[Any]] = {}
    for n in (1, 2):
        with distributed.LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=None) as cl, \
                distributed.Client(cl) as client:  # type: ignore[no-untyped-call]
            # the workers import the simulator before the clock starts
            client.run(importlib.import_module, "tmhw.system")
            t0 = time.perf_counter()
            res = SW.run_points(pts, cluster=cl.scheduler_address, progress=False)
            walls[n] = time.perf_counter() - t0
        reports[n] = [strip_host(r["report"]) if r["report"] else r["status"] for r in res]
    f = study_figures(res)
    speedup = walls[1] / walls[2] if walls[2] else 0.0
    return {"wall_s": walls[2], "events": f["events"], "sim_time_ps": 0,
            "throughput": speedup, "unit": "x speedup, 2 workers",
            "extra": {"wall_s_1_worker": walls[1], "wall_s_2_workers": walls[2],
                      "speedup": speedup, "target_speedup": 1.7,
                      "within_target": speedup >= 1.7, "points": len(pts),
                      "same_reports": reports[1] == reports[2]}}
