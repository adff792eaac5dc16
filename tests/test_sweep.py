"""Sweeps: a spec becomes points, points run in a local pool or on a Dask cluster with the
same reports, an interrupted sweep resumes, and a point the system refuses is a row with
its reason rather than a failed sweep."""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tmhw import sweeps as SW
from tmhw.report import strip_host
from tmhw.sim.errors import TmhwError

#: A tiny workload: ResNet-18 at batch 2 runs in well under a second per point.
TINY = {"workload.model": "resnet18", "workload.batch": 2}


def _spec(**grid: list[Any]) -> dict[str, Any]:
    return {"preset": "paper", "base": dict(TINY), "grid": {k.replace("__", "."): v
                                                            for k, v in grid.items()}}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return json.dumps(strip_host(a), sort_keys=True) == json.dumps(strip_host(b),
                                                                    sort_keys=True)


def test_grid_is_the_cartesian_product_in_spec_order() -> None:
    pts = SW.expand_spec(_spec(policy__name=["demand", "hbm-only"],
                               policy__hbm_ratio=[0.25, 0.5, 1.0]))
    assert [(p["params"]["policy.name"], p["params"]["policy.hbm_ratio"]) for p in pts] == [
        ("demand", 0.25), ("demand", 0.5), ("demand", 1.0),
        ("hbm-only", 0.25), ("hbm-only", 0.5), ("hbm-only", 1.0)]
    assert all(p["config"]["workload"]["model"] == "resnet18" for p in pts)
    assert len({p["id"] for p in pts}) == 6


def test_points_cross_the_grid_and_nested_tables_equal_dotted_keys() -> None:
    spec = {"base": {"workload": {"model": "resnet18", "batch": 2}},
            "points": [{"policy.name": "demand"}, {"policy": {"name": "hbm-only"}}],
            "grid": {"policy.hbm_ratio": [0.25, 0.5]}}
    pts = SW.expand_spec(spec)
    assert [(p["params"]["policy.name"], p["params"]["policy.hbm_ratio"]) for p in pts] == [
        ("demand", 0.25), ("demand", 0.5), ("hbm-only", 0.25), ("hbm-only", 0.5)]
    dotted = SW.expand_spec(_spec(policy__name=["demand"], policy__hbm_ratio=[0.25]))
    assert dotted[0]["id"] == pts[0]["id"]   # the same config, the same id


def test_section_preset_in_a_point_changes_the_device() -> None:
    pts = SW.expand_spec({"base": TINY, "grid": {"flash.preset": ["990pro", "pm1743"]}})
    assert [p["config"]["flash"]["name"] for p in pts] == ["990pro", "pm1743"]


@pytest.mark.parametrize("spec, msg", [
    ({"gird": {}}, "unknown key 'gird'"),
    ({"grid": {"policy.name": "demand"}}, "non-empty list"),
    ({"grid": {"policy.name": []}}, "non-empty list"),
    ({"grid": {"policy.hbm_ratio": [0.0]}}, "hbm_ratio"),
    ({"grid": {"flash.channels_typo": [4]}}, "channels_typo"),
    # a wall-clock limit would make a point's result depend on the machine's load
    ({"timeout_s": 60, "grid": {"policy.name": ["demand"]}}, "timeout_s is not supported"),
])
def test_a_bad_spec_fails_before_anything_runs(spec: dict[str, Any], msg: str) -> None:
    with pytest.raises(TmhwError, match=msg):
        SW.expand_spec(spec)


def test_a_point_that_does_not_fit_is_a_row_with_its_reason(tmp_path: Path) -> None:
    """At 1% of the footprint an op's operands exceed HBM: status ``does-not-fit``."""
    pts = SW.expand_spec(_spec(policy__name=["demand"], policy__hbm_ratio=[0.01, 0.5]))
    res = SW.run_points(pts, workers=1, out=tmp_path, progress=False)
    assert [r["status"] for r in res] == ["does-not-fit", "ok"]
    assert "hbm_ratio" in res[0]["error"]
    rows = SW.summary_rows(res)
    SW.write_csv(rows, tmp_path / "summary.csv")
    with (tmp_path / "summary.csv").open() as fh:
        got = list(csv.DictReader(fh))
    assert [g["status"] for g in got] == ["does-not-fit", "ok"]
    assert got[0]["error"] == res[0]["error"] and got[0]["iteration_time_ms"] == ""
    assert float(got[1]["iteration_time_ms"]) > 0
    assert not (tmp_path / "points" / pts[0]["id"]).exists()
    # whether a row's figures are a steady state's, from its report (empty: none)
    assert [g["steady_state"] for g in got] == [
        "", str(res[1]["report"]["measurement"]["steady_state"]).lower()]


def test_local_pool_matches_one_process_and_an_interrupted_sweep_resumes(
        tmp_path: Path) -> None:
    pts = SW.expand_spec(_spec(policy__name=["demand", "hbm-only"],
                               policy__hbm_ratio=[0.25, 0.5]))
    serial = SW.run_points(pts, workers=1, progress=False)
    out = tmp_path / "sweep"
    pooled = SW.run_points(pts, workers=2, out=out, progress=False)
    for a, b in zip(serial, pooled, strict=True):
        assert a["status"] == b["status"] == "ok"
        assert _same(a["report"], b["report"])
    for p in pts:
        assert (out / "points" / p["id"] / "report.json").is_file()
    # "Interrupt": lose two points' reports, then run again: only those two run.
    for p in pts[1:3]:
        (out / "points" / p["id"] / "report.json").unlink()
    ran: list[str] = []
    again = SW.run_points(pts, workers=2, out=out, progress=False,
                          on_result=lambda r: ran.append(r["id"]))
    assert sorted(ran) == sorted(p["id"] for p in pts[1:3])
    for a, b in zip(pooled, again, strict=True):
        assert _same(a["report"], b["report"])


def test_sweep_command_writes_summary_and_reports(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('preset = "paper"\n[base]\n"workload.model" = "resnet18"\n'
                    'workload.batch = 2\n'
                    '[grid]\n"policy.name" = ["demand", "hbm-only"]\n'
                    '"policy.hbm_ratio" = [0.5]\n')
    ap = argparse.ArgumentParser()
    SW.register(ap.add_subparsers(dest="cmd", required=True))
    args = ap.parse_args(["sweep", str(spec), "--out", str(tmp_path / "o"), "--workers", "1",
                          "--quiet"])
    assert args.func(args) == 0
    assert "2 points: 2 ok, 0 do not fit, 0 skipped, 0 error" in capsys.readouterr().out
    with (tmp_path / "o" / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["policy.name"] for r in rows] == ["demand", "hbm-only"]
    assert len(list((tmp_path / "o" / "points").glob("*/report.json"))) == 2


def test_cluster_without_dask_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    pts = SW.expand_spec(_spec(policy__name=["hbm-only"]))
    with pytest.raises(TmhwError, match=r"pip install 'tmhw\[cluster\]'"):
        SW.run_points(pts, cluster="tcp://127.0.0.1:1", progress=False)


def test_cluster_address_must_be_a_url() -> None:
    pts = SW.expand_spec(_spec(policy__name=["hbm-only"]))
    with pytest.raises(TmhwError, match="tcp://HOST:PORT"):
        SW.run_points(pts, cluster="localhost", progress=False)


@pytest.mark.timeout(180)
def test_dask_cluster_gives_the_local_reports_and_survives_a_killed_worker(
        tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    pts = SW.expand_spec(_spec(policy__name=["demand"],
                               policy__hbm_ratio=[0.25, 0.35, 0.45, 0.5]))
    # the reference in this process (a pool would start two more interpreters)
    local = SW.run_points(pts, workers=1, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as ctl:
        addr = cluster.scheduler_address
        assert addr.startswith("tcp://127.0.0.1:")
        # A clean run through the scheduler, its points spread over both workers (all
        # submitted at once: nothing makes one wait for another).
        remote = SW.run_points(pts, cluster=addr, out=tmp_path / "a", progress=False)
        pids: dict[str, int] = ctl.run(os.getpid)
        assert {r["report"]["host"]["pid"] for r in remote} == set(pids.values())
        killed: list[tuple[str, list[str]]] = []
        stop = threading.Event()

        def kill_a_busy_worker() -> None:
            # As soon as a worker holds a point, kill its process (SIGKILL: no goodbye).
            while not stop.is_set():
                busy = {a: list(ks) for a, ks in ctl.processing().items()
                        if ks and a in pids}
                if busy:
                    victim, keys = next(iter(busy.items()))
                    os.kill(pids[victim], signal.SIGKILL)
                    killed.append((victim, keys))
                    return
                time.sleep(0.02)

        killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
        killer.start()
        try:
            again = SW.run_points(pts, cluster=addr, out=tmp_path / "b", progress=False)
        finally:
            stop.set()
            killer.join(10)
    assert killed and killed[0][1], "no worker was killed while holding a point"
    for a, b, c in zip(local, remote, again, strict=True):
        assert a["status"] == b["status"] == c["status"] == "ok"
        assert _same(a["report"], b["report"]) and _same(a["report"], c["report"])
    assert len(list((tmp_path / "b" / "points").glob("*/report.json"))) == len(pts)
    assert killed[0][0] in pids



@pytest.mark.parametrize("spec,words", [
    ({"points": [{"policy.name": "demand"}], "grid": {"policy.name": ["hbm-only"]}},
     ("[[points]] entry 1", "'policy.name'", "[grid]")),
    ({"points": [{"run.seed": 1}, {"policy": {"hbm_ratio": 0.5}}],
      "grid": {"policy.hbm_ratio": [0.25]}},
     ("[[points]] entry 2", "'policy.hbm_ratio'")),
    ({"base": {"policy.name": "demand"}, "grid": {"policy": {"name": ["hbm-only"]}}},
     ("[base]", "'policy.name'", "[grid]")),
])
def test_a_key_the_grid_would_replace_is_refused_not_dropped(
        spec: dict[str, Any], words: tuple[str, ...]) -> None:
    with pytest.raises(TmhwError) as e:
        SW.expand_spec({"preset": "quick", **spec})
    assert all(w in str(e.value) for w in words), str(e.value)


def test_the_example_grid_measures_a_steady_state() -> None:
    from tmhw import config as C

    pts = SW.load_spec(Path(SW.__file__).parent / "scenarios" / "capacity_grid.toml")
    assert len(pts) == 9
    run = C.from_dict(pts[0]["config"]).run
    assert run.warmup_iterations == "auto" and run.iterations >= 1
