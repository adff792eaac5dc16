"""Running ``tmhw bench``: each case in its own Python process, the bare kernel sized to
the busiest, the table or JSON, and the command's options; ``python -m tmhw.bench
--child NAME`` is the child that runs one case and prints its measurement as JSON.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tmhw.bench.cases import (
    Measure,
    case_dram_bench,
    case_e2e_bert,
    case_e2e_gpt,
    case_e2e_llama,
    case_e2e_scaling,
    case_flash,
    case_hbm,
    case_hbm_8gib,
    case_kernel,
    case_npu,
    case_npu_resnet50,
    case_zoo_build,
)
from tmhw.bench.peers import case_e2e_depth, case_flash_mqsim
from tmhw.bench.studies import STUDIES, case_dask, case_study
from tmhw.sim.errors import TmhwError

CASES = ("kernel", "flash-fast", "flash-detailed", "flash-mqsim", "hbm-fast", "hbm-detailed",
         "npu-cycles", "e2e-bert", "e2e-gpt", "e2e-llama", "e2e-scaling", "e2e-depth",
         "npu-resnet50", "zoo-build", "hbm-8gib", "dram-bench", "dask-speedup",
         *(f"study-{n}" for n in STUDIES))


def _timeit(fn: Callable[[], Measure], repeat: int) -> Measure:
    """``fn`` run ``repeat`` times: the measure of the run whose wall time is the median
    (the lower middle one of an even count), every figure of it that run's (a target a
    case judges from its own wall time, a throughput), and every run's wall time."""
    runs = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        m = fn()
        m.setdefault("wall_s", time.perf_counter() - t0)
        runs.append(m)
    walls = [m["wall_s"] for m in runs]
    out = runs[walls.index(statistics.median_low(walls))]
    if len(walls) > 1:
        out.setdefault("extra", {})["wall_s_runs"] = walls
    return out

RUNNERS: dict[str, Callable[..., Measure]] = {
    "kernel": case_kernel,
    "flash-fast": lambda small, **kw: case_flash(small, "fast", **kw),
    "flash-detailed": lambda small, **kw: case_flash(small, "detailed", **kw),
    "flash-mqsim": case_flash_mqsim,
    "hbm-fast": lambda small, **kw: case_hbm(small, "fast", **kw),
    "hbm-detailed": lambda small, **kw: case_hbm(small, "detailed", **kw),
    "npu-cycles": case_npu,
    "e2e-bert": case_e2e_bert,
    "e2e-gpt": case_e2e_gpt,
    "e2e-llama": case_e2e_llama,
    "e2e-scaling": case_e2e_scaling,
    "e2e-depth": case_e2e_depth,
    "npu-resnet50": case_npu_resnet50,
    "zoo-build": case_zoo_build,
    "hbm-8gib": case_hbm_8gib,
    "dram-bench": case_dram_bench,
    "dask-speedup": case_dask,
    **{f"study-{n}": functools.partial(case_study, n) for n in STUDIES},
}


def run_case(name: str, *, small: bool = False, repeat: int = 1, policy: str = "tm-training",
             kernel_events: int | None = None) -> Measure:
    """Run one case in this process; the measurement with ``peak_rss_mb``. A case the
    build cannot run (a timing model or policy not present) has ``note`` and no figures."""
    if name not in RUNNERS:
        raise TmhwError(f"--case: {name!r} is unknown; one of {', '.join(CASES)}")
    fn = RUNNERS[name]
    try:
        m = _timeit(lambda: fn(small, policy=policy, events=kernel_events), repeat)
    except TmhwError as e:
        m = {"wall_s": None, "events": None, "sim_time_ps": None, "throughput": None,
             "unit": "", "note": f"not run: {e}"}
    m["name"] = name
    m["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return m
# -- the parent: one process per case --------------------------------------------------
def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                else "")
    return env


def run_in_child(name: str, *, small: bool = False, repeat: int = 1,
                 policy: str = "tm-training", kernel_events: int | None = None,
                 timeout: float | None = None) -> Measure:
    cmd = [sys.executable, "-m", "tmhw.bench", "--child", name, "--repeat", str(repeat),
           "--policy", policy]
    if small:
        cmd.append("--small")
    if kernel_events:
        cmd += ["--kernel-events", str(kernel_events)]
    empty: Measure = {"name": name, "wall_s": None, "events": None, "sim_time_ps": None,
                      "peak_rss_mb": None, "throughput": None, "unit": ""}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=_child_env())
    except subprocess.TimeoutExpired:
        return {**empty, "note": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {**empty, "note": f"failed: {err}"}
    m: Measure = json.loads(lines[-1])
    return m


def run_suite(cases: list[str], *, small: bool = False, repeat: int = 1,
              policy: str = "tm-training", timeout: float | None = None,
              progress: Callable[[Measure], None] | None = None) -> list[Measure]:
    """Every case in ``cases`` in its own process, then ``kernel`` sized to the busiest
    one; each gets its ``kernel_ratio``."""
    out: list[Measure] = []
    for name in cases:
        if name == "kernel":
            continue
        m = run_in_child(name, small=small, repeat=repeat, policy=policy, timeout=timeout)
        out.append(m)
        if progress is not None:
            progress(m)
    busiest = max((m["events"] or 0 for m in out), default=0)
    k = run_in_child("kernel", small=small, repeat=repeat, timeout=timeout,
                     kernel_events=busiest or None)
    if progress is not None:
        progress(k)
    per_event = (k["wall_s"] / k["events"]) if k.get("wall_s") and k.get("events") else None
    for m in [k] + out:
        ev, wall = m.get("events"), m.get("wall_s")
        m["kernel_ratio"] = (wall / ev / per_event) if per_event and ev and wall else None
    ordered = [k] + out if "kernel" in cases else out + [k]
    return ordered


FIELDS = ("name", "wall_s", "events", "sim_time_ps", "peak_rss_mb", "throughput", "unit",
          "kernel_ratio")


def _row(m: Measure) -> str:
    def f(v: Any, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    return (f"{m['name']:<15} {f(m.get('wall_s'), '10.3f')} {f(m.get('events'), '>10')} "
            f"{f(m.get('sim_time_ps'), '>16')} {f(m.get('peak_rss_mb'), '8.0f')} "
            f"{f(m.get('throughput'), '14.4g')} {m.get('unit', ''):<18} "
            f"{f(m.get('kernel_ratio'), '6.2f')}  {m.get('note', '')}{_target(m)}")


def _target(m: Measure) -> str:
    """A case's wall-clock target and whether it was met, for the table."""
    x = m.get("extra") or {}
    if "target_s" in x:
        return f"target < {x['target_s']:g} s each: {'met' if x['within_target'] else 'MISSED'}"
    if "target" in x:
        return f"target {x['target']}: {'met' if x['within_target'] else 'MISSED'}"
    return ""


HEADER = (f"{'case':<15} {'wall_s':>10} {'events':>10} {'sim_time_ps':>16} {'rss_mb':>8} "
          f"{'throughput':>14} {'unit':<18} {'k_ratio':>6}")


def selected(names: list[str] | None, *, studies: bool, small: bool) -> list[str]:
    """The cases to run: ``names`` (each checked), or every case but the full-size
    studies, which take minutes to hours each (all of them with ``studies`` or
    ``small``)."""
    if names:
        for c in names:
            if c not in CASES:
                raise TmhwError(f"--case: {c!r} is unknown; one of {', '.join(CASES)}")
        return list(dict.fromkeys(names))
    return [c for c in CASES if studies or small or not c.startswith("study-")]


def _cmd(args: argparse.Namespace) -> int:
    if args.repeat < 1:
        raise TmhwError(f"--repeat: {args.repeat} is not allowed; an integer >= 1")
    if not 0 < args.timeout < math.inf:
        raise TmhwError(f"--timeout: {args.timeout:g} is not allowed; a number of seconds "
                        "> 0")
    from tmhw.placement.registry import POLICIES

    if args.policy not in POLICIES:
        raise TmhwError(f"--policy: {args.policy!r} is not allowed; one of "
                        f"{', '.join(POLICIES)}")
    cases = selected(args.case, studies=args.studies, small=args.small)
    from tmhw.sim.progress import progress

    # every case but the kernel, then the kernel sized to the busiest
    total = sum(c != "kernel" for c in cases) + 1
    with progress(total, "bench", "case") as bar:

        def show(m: Measure) -> None:
            # progress on stderr; the table, with kernel ratios, is printed once at the end
            wall = m.get("wall_s")
            done = m.get("note") or ("done" if wall is None else f"{wall:.3f} s")
            bar.write(f"bench: {m['name']}: {done}", file=sys.stderr)
            bar.update(1)

        res = run_suite(cases, small=args.small, repeat=args.repeat, policy=args.policy,
                        timeout=args.timeout, progress=show)
    if args.json:
        print(json.dumps({"cases": [{**{k: m.get(k) for k in FIELDS},
                                     **{k: v for k, v in m.items() if k not in FIELDS}}
                                    for m in res]}, indent=1))
    else:
        print(HEADER)
        for m in res:
            print(_row(m))
    return 0


def register(sub: Any) -> None:
    """Add ``tmhw bench`` to the top-level sub-parsers."""
    p = sub.add_parser("bench", help="benchmark the simulator (each case in its own process)",
                       description="Benchmark the simulator: each case runs in its own "
                       "process and reports wall time, events, simulated time, peak RSS, "
                       "a throughput and its time per event over the bare kernel's.")
    add_options(p)
    p.set_defaults(func=_cmd)


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--case", action="append", metavar="NAME",
                   help=f"run this case only (repeatable): {', '.join(CASES)}")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs per case; the figures are the median run's")
    p.add_argument("--small", action="store_true", help="test-sized cases")
    p.add_argument("--studies", action="store_true",
                   help="also run every full-size study case (study-NAME: minutes to hours "
                        "each; without it they run by name with --case, or with --small)")
    p.add_argument("--policy", default="tm-training", help="policy of the e2e cases")
    p.add_argument("--timeout", type=float, default=1800.0,
                   help="seconds before a case is abandoned (default 1800)")


def child_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="tmhw.bench")
    p.add_argument("--child", required=True)
    p.add_argument("--small", action="store_true")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--policy", default="tm-training")
    p.add_argument("--kernel-events", type=int)
    a = p.parse_args(argv)
    m = run_case(a.child, small=a.small, repeat=a.repeat, policy=a.policy,
                 kernel_events=a.kernel_events)
    print(json.dumps(m, default=float))
    return 0
