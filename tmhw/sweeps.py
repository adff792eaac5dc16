"""Parameter sweeps: many runs of the system, each a point of overrides on a base config,
in a local process pool or on a Dask distributed cluster.

    tmhw sweep SPEC.toml [--out DIR] [--workers N] [--cluster tcp://HOST:PORT] [--quiet]

A spec is TOML::

    preset = "quick"                      # the base system preset (default "paper")

    [base]                                # overrides every point shares
    "workload.layers" = 12                # dotted keys or nested tables, as in --set
    flash.preset = "pm1743"               # a section preset, as in a config file

    [grid]                                # the cartesian product of these lists
    "policy.name" = ["demand", "hbm-only"]
    "policy.hbm_ratio" = [0.125, 0.25]

    [[points]]                            # and/or an explicit list of points
    "policy.name" = "tm-training"

With both ``points`` and ``grid``, every point is crossed with the grid, so a key may
be in one of them only (nor in both ``[base]`` and ``[grid]``, where the grid would
replace the base value everywhere); a spec with neither, an empty ``[grid]`` or an
empty ``points`` is refused (one config is ``tmhw run``). Every point's config is
built and validated, and the output folder checked (``tmhw.outputs``: a study's or
another spec's outputs are refused unless ``--force``), before anything runs, so a bad
value fails the whole sweep at once with a one-line error.

Outputs in DIR: ``points/<id>/report.json`` per point (``id`` is a hash of the point's
whole config, so a point keeps its id when the spec around it changes) and
``summary.csv``, one row per point in spec order: the varied parameters, the status
(``ok``; ``does-not-fit`` with the reason when the policy cannot run in the HBM it is
given; ``skipped`` with the reason when the system refuses the point otherwise;
``error`` for anything else) and the headline figures. A sweep that
is interrupted resumes: points that already have a report.json are not run again.

``--cluster`` sends the same points to a Dask distributed scheduler (the ``cluster``
extra, ``pip install 'tmhw[cluster]'``); each worker needs tmhw installed. A worker that
dies mid-point loses nothing: the scheduler runs its points elsewhere. Reports are the
same as the local pool's except for the ``host`` key (wall time, process).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import math
import os
import socket
import sys
import time
import tomllib
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tmhw.report import write_json
from tmhw.report_schema import FIGURES
from tmhw.sim.errors import DoesNotFit, TmhwError

Point = dict[str, Any]
Result = dict[str, Any]

SPEC_KEYS = ("preset", "base", "grid", "points")


# -- points --------------------------------------------------------------------------------
def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables to dotted keys: {"a": {"b": 1}, "c.d": 2} -> {"a.b": 1, "c.d": 2}."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def config_dict(preset: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The full plain config of ``preset`` with dotted ``overrides`` applied (validated)."""
    from tmhw import config as C
    from tmhw.sim import tomlio

    cfg = C.from_dict(tomlio.nest([(k.split("."), v) for k, v in overrides.items()]),
                      C.preset(preset))
    out: dict[str, Any] = tomlio.to_dict(cfg)
    return out


def make_point(preset: str, overrides: dict[str, Any],
               params: dict[str, Any] | None = None) -> Point:
    """A self-contained point: its params (for the CSV), its whole config and its id.
    A point runs to its end: no wall-clock limit decides a result (a solver inside a
    policy stops on a budget of work, e.g. ``policy.autotm.ilp_node_limit``)."""
    cfg = config_dict(preset, overrides)
    blob = json.dumps(cfg, sort_keys=True, default=str).encode()
    pid = hashlib.sha256(blob).hexdigest()[:12]
    p: Point = {"id": pid, "params": dict(params if params is not None else overrides),
                "config": cfg}
    return p


def expand_spec(spec: dict[str, Any]) -> list[Point]:
    """The points of a parsed spec, in order (see the module docstring)."""
    if "timeout_s" in spec:
        raise TmhwError("sweep spec: timeout_s is not supported: a wall-clock limit would "
                        "make results depend on the machine's load; remove it")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise TmhwError(f"sweep spec: unknown key {unknown[0]!r}; allowed: "
                        f"{', '.join(SPEC_KEYS)}")
    preset = spec.get("preset", "paper")
    if not isinstance(preset, str):
        raise TmhwError(f"sweep spec: preset must be a preset name, got {preset!r}")
    base = spec.get("base", {})
    if not isinstance(base, dict):
        raise TmhwError("sweep spec: [base] must be a table of overrides")
    base_flat = flatten(base)
    if "grid" not in spec and "points" not in spec:
        raise TmhwError("sweep spec: nothing to sweep; give a [grid] of value lists and/or "
                        "[[points]] (tmhw run runs a single config)")
    raw_grid = spec.get("grid", {})
    if not isinstance(raw_grid, dict):
        raise TmhwError("sweep spec: [grid] must be a table of value lists")
    grid = flatten(raw_grid)
    if "grid" in spec and not grid:
        raise TmhwError("sweep spec: [grid] is empty; give each swept key a non-empty list "
                        "of values, e.g. \"policy.hbm_ratio\" = [0.125, 0.25]")
    for k, v in grid.items():
        if not isinstance(v, list) or not v:
            raise TmhwError(f"sweep spec: grid {k!r} must be a non-empty list of values")
        seen: list[Any] = []
        for x in v:
            if x in seen:   # two equal points would be one id: one silently dropped
                raise TmhwError(f"sweep spec: grid {k!r} lists {x!r} twice; give each "
                                "value once")
            seen.append(x)
    raw_points = spec.get("points", [{}])
    if not isinstance(raw_points, list) or not raw_points \
            or not all(isinstance(p, dict) for p in raw_points):
        raise TmhwError("sweep spec: points must be a non-empty array of tables "
                        "([[points]])")
    points: list[Point] = []
    keys = list(grid)
    both = sorted(set(base_flat) & set(grid))
    if both:
        raise TmhwError(f"sweep spec: {both[0]!r} is in both [base] and [grid]; the grid "
                        "would replace the base value in every point: set it in one place")
    for i, p in enumerate(raw_points, 1):
        pflat = flatten(p)
        both = sorted(set(pflat) & set(grid))
        if both:
            raise TmhwError(f"sweep spec: [[points]] entry {i} sets {both[0]!r}, which [grid] "
                            "also sweeps; every point is crossed with the grid, so set it "
                            "in one place")
        for combo in itertools.product(*(grid[k] for k in keys)):
            params = {**pflat, **dict(zip(keys, combo, strict=True))}
            points.append(make_point(preset, {**base_flat, **params}, params))
    first: dict[str, Point] = {}
    for pt in points:
        same = first.setdefault(pt["id"], pt)
        if same is not pt:   # one id: one of the two would silently replace the other
            raise TmhwError(f"sweep spec: two points give the same config ({same['params']} "
                            f"and {pt['params']}); each point must differ")
    return points


def load_spec(path: str | Path) -> list[Point]:
    p = Path(path)
    try:
        spec = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise TmhwError(f"sweep spec: cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise TmhwError(f"sweep spec: {path} is not UTF-8 text (TOML must be): byte "
                        f"{e.start} is {e.object[e.start:e.start + 1]!r}") from None
    except tomllib.TOMLDecodeError as e:
        raise TmhwError(f"sweep spec: {path}: {e}") from None
    return expand_spec(spec)


# -- running one point ---------------------------------------------------------------------
def run_point(point: Point) -> Result:
    """Run one point in this process. Never raises for a point the system refuses: the
    result's status is ``does-not-fit`` (the policy cannot run in its HBM), ``skipped``
    (another TmhwError) or ``error`` (anything else, with its type), and ``report`` is
    None."""
    from tmhw import config as C
    from tmhw.tune import simulate

    t0 = time.perf_counter()
    res: Result = {"id": point["id"], "params": point["params"], "status": "ok",
                   "error": "", "report": None}
    try:
        _, rep, events = simulate(C.from_dict(point["config"], C.PAPER))
        rep["host"] = {"wall_s": time.perf_counter() - t0, "events": events,
                       "hostname": socket.gethostname(), "pid": os.getpid()}
        res["report"] = rep
    except TmhwError as e:
        res.update(status=refusal_status(e), error=str(e))
    except Exception as e:  # a point that crashes must not take the sweep down
        last = traceback.extract_tb(e.__traceback__)[-1:]
        where = f" ({Path(last[0].filename).name}:{last[0].lineno})" if last else ""
        res.update(status="error", error=f"{type(e).__name__}: {e}{where}")
    return res


def refusal_status(e: TmhwError) -> str:
    """The status of a point the system refuses with ``e``."""
    return "does-not-fit" if isinstance(e, DoesNotFit) else "skipped"


def _get(rep: dict[str, Any], path: tuple[str, ...]) -> Any:
    v: Any = rep
    for k in path:
        if not isinstance(v, dict) or k not in v:
            return ""
        v = v[k]
    return v


def figures(rep: dict[str, Any] | None) -> dict[str, Any]:
    """The summary.csv figures of one report (empty strings where absent)."""
    out: dict[str, Any] = {}
    for name, (path, scale) in FIGURES.items():
        v = _get(rep, path) if rep is not None else ""
        if isinstance(v, bool) or not isinstance(v, int | float):
            out[name] = ""
        elif scale == 1.0:
            out[name] = v
        else:
            out[name] = v * scale
    return out


def summary_rows(results: Sequence[Result]) -> list[dict[str, Any]]:
    """One flat row per result: id, params, status, error, steady_state, then FIGURES."""
    keys: dict[str, None] = {}
    for r in results:
        for k in r["params"]:
            keys.setdefault(k, None)
    rows = []
    for r in results:
        row: dict[str, Any] = {"id": r["id"]}
        row.update({k: _cell(r["params"].get(k, "")) for k in keys})
        row.update(status=r["status"], error=r["error"])
        rep = r.get("report")
        # whether the figures are a steady state's (false: every iteration was warm-up)
        row["steady_state"] = "" if rep is None else str(bool(rep["measurement"][
            "steady_state"])).lower()
        # "auto" warm-up: whether the iterations repeated (empty: the warm-up was given)
        conv = None if rep is None else rep["measurement"]["converged"]
        row["converged"] = "" if conv is None else str(conv).lower()
        row.update(figures(rep))
        rows.append(row)
    return rows


def _cell(v: Any) -> Any:
    return json.dumps(v) if isinstance(v, list | dict) else v


def write_csv(rows: Sequence[dict[str, Any]], path: str | Path) -> None:
    cols: dict[str, None] = {}
    for r in rows:
        for k in r:
            cols.setdefault(k, None)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    with tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(cols))
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(v) for k, v in r.items()})
    os.replace(tmp, p)


def _fmt(v: Any) -> Any:
    if isinstance(v, float):
        return "inf" if math.isinf(v) else f"{v:.6g}"
    return v



# -- running many --------------------------------------------------------------------------
def run_points(points: Sequence[Point], *, workers: int | None = None,
               cluster: str | None = None, out: str | Path | None = None,
               progress: bool = True, desc: str = "sweep",
               on_result: Callable[[Result], None] | None = None,
               resume: bool = True) -> list[Result]:
    """Run ``points`` and return their results in the same order.

    ``workers``: local processes (default ``os.cpu_count()``; 1 runs in this process).
    ``cluster``: a Dask scheduler address instead of the local pool. ``out``: if given,
    each report goes to ``out/points/<id>/report.json`` as it arrives, and points that
    already have one are read back instead of run (``resume``; without it every point
    runs and its report replaces the old one). ``on_result`` is called in
    this process with each new result as it arrives."""
    results: dict[str, Result] = {}
    todo: list[Point] = []
    seen: set[str] = set()
    for p in points:
        if p["id"] in seen:
            continue
        seen.add(p["id"])
        done = _load_done(p, out) if resume else None
        if done is not None:
            results[p["id"]] = done
        else:
            todo.append(p)

    bar = None
    if progress and todo:
        # the one terminal check every command uses: no bar into a pipe or a log file
        from tmhw.sim.progress import progress as progress_bar

        bar = progress_bar(len(todo), desc, "pt")

    def collect(r: Result) -> None:
        results[r["id"]] = r
        if out is not None and r["report"] is not None:
            write_json(r["report"], Path(out) / "points" / r["id"] / "report.json")
        if bar is not None:
            bar.update(1)
            if r["status"] != "ok":
                bar.write(f"{desc}: point {r['id']} {r['status']}: {r['error']}",
                          file=sys.stderr)
        if on_result is not None:
            on_result(r)

    todo = longest_first(todo)
    try:
        if cluster is not None:
            _run_dask(todo, cluster, collect)
        else:
            _run_local(todo, workers or os.cpu_count() or 1, collect)
    finally:
        if bar is not None:
            bar.close()
    by_id = [results[p["id"]] for p in points]
    return [{**r, "params": p["params"]} for r, p in zip(by_id, points, strict=True)]


def point_size(point: Point) -> int:
    """How much a point simulates, for ordering: its workload's pages times its
    iterations (a run's work grows with both); 0 when its config does not build."""
    from tmhw import config as C
    from tmhw.system import configured_workload

    try:
        cfg = C.from_dict(point["config"], C.PAPER)
        wl = configured_workload(cfg)
    except Exception:  # the point itself will report why
        return 0
    return wl.npages * cfg.run.iterations


def longest_first(points: Sequence[Point]) -> list[Point]:
    """``points`` largest first (``point_size``), ties in their given order: workers
    take points in this order, so the long ones do not start last and leave one worker
    running alone at the end (longest-processing-time-first list scheduling)."""
    sizes: dict[str, int] = {}

    def size(p: Point) -> int:
        cfg = p["config"]
        key = json.dumps([cfg.get("workload", {}), cfg.get("run", {})], sort_keys=True)
        if key not in sizes:
            sizes[key] = point_size(p)
        return sizes[key]

    return sorted(points, key=lambda p: -size(p))


def _load_done(p: Point, out: str | Path | None) -> Result | None:
    if out is None:
        return None
    f = Path(out) / "points" / p["id"] / "report.json"
    if not f.is_file():
        return None
    try:
        rep = json.loads(f.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return {"id": p["id"], "params": p["params"], "status": "ok", "error": "",
            "report": rep}


def _run_local(todo: Sequence[Point], workers: int,
               collect: Callable[[Result], None]) -> None:
    if workers <= 1 or len(todo) <= 1:
        for p in todo:
            collect(run_point(p))
        return
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    with ProcessPoolExecutor(max_workers=min(workers, len(todo))) as pool:
        pending = {pool.submit(run_point, p) for p in todo}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    collect(f.result())
        except BaseException:
            for f in pending:
                f.cancel()
            raise


def _run_dask(todo: Sequence[Point], address: str,
              collect: Callable[[Result], None]) -> None:
    if "://" not in address:
        raise TmhwError(f"--cluster: {address!r} is not a scheduler address; "
                        "tcp://HOST:PORT")
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise TmhwError("--cluster: Dask distributed is not installed; "
                        "pip install 'tmhw[cluster]'") from None
    try:
        client = Client(address, timeout=10,  # type: ignore[no-untyped-call]
                        set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise TmhwError(f"--cluster: cannot reach the scheduler at {address}: {e}") from None
    with client:
        if not todo:
            return
        futures = client.map(run_point, list(todo), pure=False)
        try:
            for fut in as_completed(futures, loop=client.loop):  # type: ignore[no-untyped-call]
                collect(fut.result())
        except BaseException:
            client.cancel(futures)  # type: ignore[no-untyped-call]
            raise


# -- the command ---------------------------------------------------------------------------
def sweep(spec: str | Path, out: str | Path, *, workers: int | None = None,
          cluster: str | None = None, progress: bool = True,
          force: bool = False) -> list[Result]:
    """Run a spec file into ``out`` (resuming) and write ``out/summary.csv``. The spec
    and ``out`` are checked before any point runs: ``out`` may hold this spec's own
    outputs, not a study's or a run's, unless ``force`` (``tmhw.outputs``)."""
    from tmhw.cli import check_out_dir
    from tmhw.outputs import check_study, mark

    points = load_spec(spec)
    check_out_dir(out, "--out")
    name = Path(spec).stem
    check_study(Path(out), "sweep", name, force)
    marked: list[bool] = []

    def mark_once(_: Result) -> None:
        # the marker goes in with the first output, so a sweep refused on its way in
        # (an unreachable cluster) leaves nothing behind
        if not marked:
            mark(Path(out), "sweep", name)
            marked.append(True)

    results = run_points(points, workers=workers, cluster=cluster, out=out,
                         progress=progress, desc=name, on_result=mark_once)
    mark_once(results[0])
    write_csv(summary_rows(results), Path(out) / "summary.csv")
    return results


def _cmd(args: argparse.Namespace) -> int:
    if args.workers is not None and args.workers < 1:
        raise TmhwError(f"--workers: {args.workers} is not allowed; an integer >= 1")
    out = Path(args.out) if args.out is not None else Path("out") / Path(args.spec).stem
    results = sweep(args.spec, out, workers=args.workers, cluster=args.cluster,
                    progress=not args.quiet, force=args.force)
    counts = {s: sum(r["status"] == s for r in results)
              for s in ("ok", "does-not-fit", "skipped", "error")}
    print(f"{len(results)} points: {counts['ok']} ok, {counts['does-not-fit']} do not "
          f"fit, {counts['skipped']} skipped, {counts['error']} error")
    for r in results:
        if r["status"] != "ok":
            print(f"  {r['id']} {r['status']}: {r['error']}")
    print(f"summary: {out / 'summary.csv'}")
    return 1 if counts["error"] else 0


def register(sub: Any) -> None:
    """Add ``tmhw sweep`` to the top-level sub-parsers."""
    p = sub.add_parser("sweep", help="run a grid or list of config points (local pool or "
                       "Dask cluster)", description=__doc__.split("\n\n")[0])
    from tmhw.cli import path_arg

    p.add_argument("spec", type=path_arg, metavar="SPEC.toml",
                   help="preset, [base], [grid], [[points]]")
    p.add_argument("--out", type=path_arg, help="output directory (default out/<spec name>)")
    p.add_argument("--workers", type=int, help="local processes (default: CPU count)")
    p.add_argument("--cluster", metavar="tcp://HOST:PORT",
                   help="run on a Dask distributed scheduler instead")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--force", action="store_true",
                   help="write into --out even where it holds a study's, a run's or "
                        "another spec's outputs (this spec's own are resumed)")
    p.set_defaults(func=_cmd)


def iter_ok(results: Iterable[Result]) -> Iterable[Result]:
    """The results that have a report."""
    return (r for r in results if r["report"] is not None)
