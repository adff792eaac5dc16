"""End to end through ``tmhw run``: HBM-only and on-demand flash runs of BERT-base (the
``quick`` preset), their report, determinism, traces and plots.

Each simulation here runs once per module (a few seconds each) and the tests read its
outputs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tmhw import config as C
from tmhw.cli import main
from tmhw.sim.units import S

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["run", "--preset", "quick", "--quiet"]
DEMAND = [*QUICK, "--policy", "demand", "--hbm-ratio", "0.125"]
#: The demand run the tests share: at 4 flash channels (the 990 PRO-like device has 8).
DEMAND4 = [*DEMAND, "--set", "flash.channels=4"]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


class Run:
    """One finished ``tmhw run``: exit status, stdout, the out directory and its report."""

    def __init__(self, argv: list[str], out: Path) -> None:
        self.argv = [*argv, "--out", str(out)]
        self.out = out
        self.rc, self.stdout, self.stderr = _run(self.argv)
        self.text = (out / "report.json").read_text() if self.rc == 0 else ""
        self.report: dict[str, Any] = json.loads(self.text) if self.text else {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Run]:
    """Runs by name, each simulated once on first use."""
    d = tmp_path_factory.mktemp("runs")
    specs: dict[str, list[str]] = {
        "hbm-only": [*QUICK, "--policy", "hbm-only", "--plot",
                     "--trace", str(d / "hbm-only.trace.json"),
                     "--vcd", str(d / "hbm-only.vcd")],
        "demand-ch4": DEMAND4,
        "demand-ch16": [*DEMAND, "--set", "flash.channels=16"],
    }
    done: dict[str, Run] = {}

    def get(name: str) -> Run:
        if name not in done:
            done[name] = Run(specs[name], d / name)
        return done[name]

    get.dir = d  # type: ignore[attr-defined]
    return get


# -- both policies run end to end --------------------------------------------------------


def test_hbm_only_runs_end_to_end_without_flash_traffic(runs: Callable[[str], Run]) -> None:
    r = runs("hbm-only")
    assert r.rc == 0, r.stderr
    rep = r.report
    assert rep["policy"]["name"] == "hbm-only"
    assert rep["steady"]["iteration_time_ps"] > 0 and rep["steady"]["samples_per_s"] > 0
    assert rep["steady"]["traffic_bytes"]["flash_to_hbm"] == 0
    assert rep["steady"]["traffic_bytes"]["hbm_to_flash"] == 0
    assert rep["steady"]["flash_stall_ps"] == 0
    assert rep["steady"]["iteration_time_ps"] == rep["steady"]["npu_busy_ps"]
    # HBM holds the whole footprint.
    assert rep["policy"]["hbm_capacity_bytes"] >= rep["workload"]["footprint_bytes"]
    assert "iteration time" in r.stdout and f"{r.out / 'report.json'}" in r.stdout


def test_demand_at_one_eighth_hbm_moves_data_through_flash_and_stalls(
        runs: Callable[[str], Run]) -> None:
    r = runs("demand-ch4")
    assert r.rc == 0, r.stderr
    rep, base = r.report, runs("hbm-only").report
    t = rep["steady"]["traffic_bytes"]
    assert t["flash_to_hbm"] > 0 and t["hbm_to_flash"] > 0
    assert t["inter_tier"] == t["flash_to_hbm"] + t["hbm_to_flash"]
    assert rep["steady"]["flash_stall_ps"] > 0 and rep["steady"]["faults"] > 0
    # Same work; the memory system makes it slower.
    assert rep["workload"] == base["workload"]
    st = rep["steady"]
    assert st["iteration_time_ps"] == st["npu_busy_ps"] + st["flash_stall_ps"]
    assert rep["steady"]["iteration_time_ps"] > base["steady"]["iteration_time_ps"]
    cap = rep["policy"]["hbm_capacity_bytes"]
    page = rep["workload"]["page_size"]
    footprint_pages = -(-rep["workload"]["footprint_bytes"] // page)
    assert cap == int(0.125 * footprint_pages) * page
    assert rep["run_total"]["hbm_peak_occupancy_bytes"] <= cap
    # Every byte fetched from flash went through the flash device's reads.
    assert rep["run_total"]["system"]["flash"]["bytes_read"] >= t["flash_to_hbm"]


def test_more_flash_channels_lower_the_demand_stall(runs: Callable[[str], Run]) -> None:
    narrow, wide = runs("demand-ch4"), runs("demand-ch16")
    assert narrow.rc == 0 and wide.rc == 0
    assert narrow.report["config"]["flash"]["channels"] == 4
    assert wide.report["config"]["flash"]["channels"] == 16
    assert wide.report["steady"]["flash_stall_ps"] < narrow.report["steady"]["flash_stall_ps"]
    assert wide.report["steady"]["samples_per_s"] > narrow.report["steady"]["samples_per_s"]


# -- the report --------------------------------------------------------------------------


def _subtree_energy(node: dict[str, Any]) -> float:
    total = node.get("energy_pj", {}).get("total", 0.0) if isinstance(
        node.get("energy_pj"), dict) else 0.0
    return total + sum(_subtree_energy(v) for k, v in node.items()
                       if isinstance(v, dict) and k != "energy_pj")


@pytest.mark.parametrize("name", ["hbm-only", "demand-ch4"])
def test_report_has_every_figure_and_they_agree(name: str, runs: Callable[[str], Run]) -> None:
    rep = runs(name).report
    for key in ("iteration_time_ps", "samples_per_s", "flash_stall_ps", "traffic_bytes",
                "energy_pj", "avg_power_mw", "samples_per_joule"):
        assert key in rep["steady"]
    assert "config" in rep and "host" in rep
    assert set(rep["steady"]["traffic_bytes"]) >= {"hbm_to_flash", "flash_to_hbm", "npu_hbm_read",
                                         "npu_hbm_write"}
    t = rep["steady"]["traffic_bytes"]
    assert t["npu_hbm_read"] > 0 and t["npu_hbm_write"] > 0
    e = rep["steady"]["energy_pj"]
    assert set(e) == {"npu", "hbm", "flash", "dma", "total"}
    assert all(v >= 0 for v in e.values())
    assert e["total"] == pytest.approx(e["npu"] + e["hbm"] + e["flash"] + e["dma"], rel=1e-12)
    # Each component's energy is the sum of the meters in its subtree of the report, less
    # what it spent in the warm-up (the headline is the steady state).
    # (``steady.energy_pj`` is per measured iteration)
    m = rep["measurement"]
    iters = m["measured_iterations"]
    assert iters == m["iterations"] - m["warmup_iterations"] >= 1 and m["steady_state"]
    warm = rep["warmup"]["energy_pj"]
    for comp in ("npu", "hbm", "flash", "dma"):
        assert _subtree_energy(rep["run_total"]["system"][comp]) - warm[comp] == \
            pytest.approx(e[comp] * iters, rel=1e-9)
    end = sum(it["time_ps"] for it in rep["per_iteration"] if not it["warmup"])
    samples = rep["workload"]["batch"] * iters
    assert isinstance(rep["steady"]["iteration_time_ps"], int)
    assert rep["steady"]["iteration_time_ps"] == end // iters
    assert rep["steady"]["samples_per_s"] == pytest.approx(samples / (end / S))
    st = rep["steady"]
    assert st["avg_power_mw"] == pytest.approx(e["total"] * iters / end * 1e3)   # pJ/ps = W
    assert st["samples_per_joule"] == pytest.approx(samples / (e["total"] * iters * 1e-12))
    assert set(rep["host"]) >= {"wall_s", "events"} and rep["host"]["events"] > 0
    # The config in the report is the one that ran, complete enough to run it again.
    cfg = C.from_dict(rep["config"])
    assert cfg.workload.model == "bert-base" and cfg.policy.name == name.split("-ch")[0]


def test_report_config_reproduces_the_run(runs: Callable[[str], Run], tmp_path: Path) -> None:
    r = runs("hbm-only")
    path = tmp_path / "again.toml"
    path.write_text(C.dumps(C.from_dict(r.report["config"])))
    again = Run(["run", "--quiet", "--config", str(path)], tmp_path / "out")
    assert again.rc == 0, again.stderr
    assert _without_host(again.text) == _without_host(r.text)


def _without_host(text: str) -> str:
    """report.json's text with the ``host`` section cut out (it is the last key)."""
    head, sep, _ = text.partition('\n "host": ')
    assert sep, "report.json has no host section"
    rep = json.loads(text)
    rep.pop("host")
    assert json.loads(head.rstrip(",") + "\n}") == rep
    return head


def test_same_config_and_seed_give_byte_identical_reports(tmp_path: Path) -> None:
    """Two fresh interpreters with different hash seeds, run side by side (so that both
    see the same code), give the same report.json once ``host`` is cut."""
    procs = []
    for seed in ("1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed,
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "tmhw.cli", *DEMAND4, "--out", str(tmp_path / seed)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    first, second = ((tmp_path / seed / "report.json").read_text() for seed in ("1", "12345"))
    assert _without_host(first) == _without_host(second)
    assert json.loads(first)["steady"]["traffic_bytes"]["flash_to_hbm"] > 0


# -- traces and plots --------------------------------------------------------------------


def test_trace_is_a_valid_chrome_trace(runs: Callable[[str], Run]) -> None:
    r = runs("hbm-only")
    assert r.rc == 0
    doc = json.loads((runs.dir / "hbm-only.trace.json").read_text())  # type: ignore[attr-defined]
    ev = doc["traceEvents"]
    # a track's name lists every lane of its signal: "system.npu = npu.compute"
    lanes = {e["tid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    compute_track = next(n for n in lanes.values() if "npu.compute" in n.split(" = "))
    xs = [e for e in ev if e["ph"] == "X"]
    assert xs and all(e["tid"] in lanes and e["dur"] >= 0 for e in xs)
    last: dict[int, float] = {}
    for e in xs:
        assert e["ts"] >= last.get(e["tid"], 0.0)
        last[e["tid"]] = e["ts"]
    compute = [e for e in xs if lanes[e["tid"]] == compute_track]
    assert len(compute) == r.report["workload"]["ops"] * r.report["measurement"]["iterations"]
    # Trace time is microseconds: the compute slices add up to the compute time.
    total = sum(it["npu_busy_ps"] for it in r.report["per_iteration"])
    assert sum(e["dur"] for e in compute) == pytest.approx(total / 1e6, rel=1e-9)


def test_plot_writes_the_timeline_png(runs: Callable[[str], Run]) -> None:
    r = runs("hbm-only")
    png = r.out / "timeline.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 1000


def test_vcd_has_a_busy_wire_for_the_npu(runs: Callable[[str], Run]) -> None:
    runs("hbm-only")
    text = (runs.dir / "hbm-only.vcd").read_text()  # type: ignore[attr-defined]
    assert "$timescale 1 ps $end" in text and "$enddefinitions $end" in text
    assert "$var wire 1" in text and " compute $end" in text


# -- outputs when something goes wrong ---------------------------------------------------

SMALL = [*QUICK, "--policy", "hbm-only", "--set", "workload.layers=2"]


def test_unwritable_trace_is_one_line_and_writes_nothing(tmp_path: Path,
                                                         tmhw: Callable) -> None:
    out = tmp_path / "out"
    r = tmhw(*SMALL, "--out", str(out), "--trace", str(tmp_path / "no" / "such" / "t.json"))
    assert r.rc == 2 and len(r.err_lines) == 1 and "--trace" in r.err
    assert not (out / "report.json").exists()


def test_out_naming_a_file_is_one_line(tmp_path: Path, tmhw: Callable) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    r = tmhw(*SMALL, "--out", str(f))
    assert r.rc == 2 and len(r.err_lines) == 1 and "--out" in r.err
    assert f.read_text() == "x"


def test_report_json_is_readable_as_any_new_file(runs: Callable[[str], Run]) -> None:
    r = runs("hbm-only")
    umask = os.umask(0)
    os.umask(umask)
    assert (r.out / "report.json").stat().st_mode & 0o777 == 0o666 & ~umask


def test_bounds_are_computed_before_the_run_and_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``System.run`` solves the bounds (the traffic LP and the flash drain's batch)
    before any page of the run's per-page state is touched, so
    the solver's memory and the run's do not add up (the NPU-alone passes run on beside
    the run); the report's bounds are that one computation's, with the achieved ratios
    added, and equal those computed on one thread from scratch."""
    from tmhw import lower_bounds
    from tmhw import system as sysmod

    seen: list[tuple[bool, int]] = []
    real = sysmod.start_bounds
    systems: list[sysmod.System] = []

    def spy(inp: Any) -> Any:
        run = systems[0]
        seen.append((run.executor.done is None, int(run.res.held)))
        return real(inp)

    monkeypatch.setattr(sysmod, "start_bounds", spy)
    lower_bounds.MEMO.clear()
    s = sysmod.System(C.with_overrides(C.QUICK, ["policy.hbm_ratio=0.25",
                                                 "run.iterations=2"]))
    systems.append(s)
    rep = s.run()
    assert seen == [(True, 0)]
    lower_bounds.MEMO.clear()
    assert {k: v for k, v in rep["bounds"].items() if not k.endswith("_ratio")} \
        == lower_bounds.iteration_bounds(s.bounds_input())


def test_the_bounds_threads_are_waited_for_at_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The threads a ``System`` starts for its bounds (the traffic LP ahead, its NAND
    LPs, the NPU-alone passes) are not daemons: the interpreter joins them at exit. A
    daemon still in the solver's or a compiled pass's native code when the interpreter
    finalized aborted the process (``terminate called without an active exception``,
    exit status 134): a script that built Systems to read their plans and exited did,
    one run in three."""
    import threading

    from tmhw import lower_bounds
    from tmhw.system import System

    started: list[tuple[str, bool]] = []
    real = threading.Thread

    class Seen(real):  # type: ignore[misc,valid-type]
        def start(self) -> None:
            started.append((self.name, self.daemon))
            super().start()

    monkeypatch.setattr(lower_bounds.threading, "Thread", Seen)
    monkeypatch.setattr(lower_bounds, "MEMO", {})
    monkeypatch.setattr(lower_bounds, "_SOLVING", {})
    s = System(C.with_overrides(C.QUICK, ["policy.hbm_ratio=0.25", "run.iterations=2"]))
    s.run()
    assert sorted(started) == [("tmhw-bounds", False), ("tmhw-bounds-nand", False),
                               ("tmhw-npu-alone", False)]


@pytest.mark.parametrize("model", ["bert-base", "gpt2-small", "gpt3-block", "t5-encoder"])
def test_a_deep_models_pages_are_two_shallow_builds_extrapolated(model: str) -> None:
    """The flash-tier check reads a deep model's pages off its 1- and 2-layer builds:
    every layer is the same tensors, so the count grows by one layer's pages per layer."""
    from tmhw.workload.zoo import build

    one, two, seven = (build(model, batch=2, seq=64, layers=n).npages for n in (1, 2, 7))
    assert two > one and seven == one + 6 * (two - one)


def test_a_deep_model_that_fits_is_built_whole() -> None:
    from tmhw.system import PRECHECK_LAYERS, configured_workload

    deep = PRECHECK_LAYERS + 1
    cfg = C.with_overrides(C.QUICK, [f"workload.layers={deep}", "workload.batch=1",
                                     "workload.seq=16"])
    assert sum(op.name.startswith(f"l{deep - 1}.") for op in configured_workload(cfg).ops) > 0


def test_every_policy_gets_the_same_capacity_for_the_same_ratio() -> None:
    """``policy.hbm_ratio`` x the footprint, in whole pages, whatever the policy
    (``PolicyConfig``); ``hbm-only`` alone holds the whole footprint."""
    from tmhw import system as sysmod
    from tmhw.placement.registry import POLICIES
    from tmhw.sim.errors import DoesNotFit
    caps = {}
    for name in POLICIES:
        try:
            s = sysmod.System(C.with_overrides(C.QUICK, ["workload.layers=2",
                                                        "policy.hbm_ratio=0.5",
                                                        f"policy.name={name}"]))
        except DoesNotFit:
            continue
        pages = -(-s.footprint_bytes // s.workload.page_size)
        caps[name] = s.capacity_pages
        assert s.capacity_pages == (pages if name == "hbm-only" else pages // 2), name
    assert len(caps) >= 8 and len({v for k, v in caps.items() if k != "hbm-only"}) == 1
