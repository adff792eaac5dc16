"""What ``tmhw run`` writes and prints: a folder of its own under ``out/`` (named from
the config, never a scenario's files), a summary whose figures are per steady-state
iteration and which says which iterations those are, and help for every option."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tmhw import config as C
from tmhw.cli import build_parser, config_from_args, run_folder

#: A two-layer BERT-base on HBM only: every steady iteration is the same.
SMALL = ["run", "--preset", "quick", "--policy", "hbm-only", "--set", "workload.layers=2",
         "--quiet"]


def _energy_j(summary: str) -> float:
    m = re.search(r"^energy\s+([0-9.]+) J", summary, re.M)
    assert m, summary
    return float(m.group(1))


def test_run_writes_its_own_folder_and_leaves_a_scenarios_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmhw: Callable) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "summary.md").write_text("a scenario's summary\n")
    r = tmhw(*SMALL)
    assert r.rc == 0, r.err
    runs = sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir())
    assert len(runs) == 1 and runs[0].startswith("run-bert-base-hbm-only-")
    folder = tmp_path / "out" / runs[0]
    assert {p.name for p in folder.iterdir()} == {"report.json", "summary.txt"}
    assert (tmp_path / "out" / "summary.md").read_text() == "a scenario's summary\n"
    assert not (tmp_path / "out" / "report.json").exists()
    assert f"report: {Path('out') / runs[0] / 'report.json'}" in r.out
    # the file holds what was printed
    assert (folder / "summary.txt").read_text() in r.out
    # another config finds another folder; the same config its own again
    r2 = tmhw(*SMALL, "--seed", "7")
    assert r2.rc == 0
    assert len([p for p in (tmp_path / "out").iterdir() if p.is_dir()]) == 2


def test_the_folder_name_is_a_function_of_the_whole_config() -> None:
    p = build_parser()
    a = run_folder(config_from_args(p.parse_args(["run", "--preset", "quick"])))
    b = run_folder(config_from_args(p.parse_args(["run", "--preset", "quick"])))
    c = run_folder(config_from_args(p.parse_args(["run", "--preset", "quick",
                                                  "--set", "flash.channels=16"])))
    q = C.preset("quick")
    assert a == b != c
    assert a.parent == Path("out")
    assert a.name.startswith(f"run-{q.workload.model}-{q.policy.name}-{q.policy.hbm_ratio:g}-")


def test_summary_figures_are_per_steady_iteration(tmp_path: Path, tmhw: Callable) -> None:
    warm = ("--set", "run.warmup_iterations=1")
    two = tmhw(*SMALL, "--iterations", "2", *warm, "--out", str(tmp_path / "two"))
    three = tmhw(*SMALL, "--iterations", "3", *warm, "--out", str(tmp_path / "three"))
    assert two.rc == 0 and three.rc == 0
    assert "iteration 0 warm-up, iteration 1 steady state" in two.out
    assert "iteration 0 warm-up, iterations 1-2 steady state" in three.out
    # HBM-only repeats one iteration exactly: per iteration, two steady iterations
    # cost what one does (the report's energy_pj sums them).
    assert _energy_j(three.out) == pytest.approx(_energy_j(two.out), rel=1e-3)
    for name in ("iteration time", "flash -> HBM", "NPU <-> HBM"):
        line2 = next(ln for ln in two.out.splitlines() if ln.startswith(name))
        line3 = next(ln for ln in three.out.splitlines() if ln.startswith(name))
        assert line2 == line3


def test_without_warm_up_the_summary_says_which_iterations_it_averages(
        tmp_path: Path, tmhw: Callable) -> None:
    r = tmhw(*SMALL, "--iterations", "2", "--set", "run.warmup_iterations=0",
             "--out", str(tmp_path / "o"))
    assert r.rc == 0, r.err
    assert re.search(r"^iterations\s+2; mean of iterations 0-1$", r.out, re.M)


def test_every_run_option_has_help() -> None:
    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    run = sub.choices["run"]
    missing = [a.option_strings for a in run._actions if not a.help]
    assert missing == []


#: The smallest run: one iteration of a one-layer BERT-base on HBM only.
TINY = ["run", "--preset", "quick", "--policy", "hbm-only", "--set", "workload.layers=1",
        "--iterations", "1", "--quiet"]


def test_a_run_replaces_its_own_outputs_and_another_only_with_force(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmhw: Callable) -> None:
    monkeypatch.chdir(tmp_path)
    assert tmhw(*TINY, "--out", "o").rc == 0
    first = (tmp_path / "o" / "report.json").read_text()
    assert tmhw(*TINY, "--out", "o").rc == 0          # the same config: its own
    other = tmhw(*TINY, "--out", "o", "--seed", "3")
    assert other.rc == 2 and "another run's outputs" in other.err
    assert (tmp_path / "o" / "report.json").read_text().split('"host"')[0] == \
        first.split('"host"')[0]
    forced = tmhw(*TINY, "--out", "o", "--seed", "3", "--force")
    assert forced.rc == 0, forced.err
    assert '"seed": 3' in (tmp_path / "o" / "report.json").read_text()


def test_a_sweep_resumes_into_its_own_folder_and_no_other_sweeps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmhw: Callable) -> None:
    monkeypatch.chdir(tmp_path)
    spec = ('preset = "quick"\n[base]\n"workload.layers" = 1\n"run.iterations" = 1\n'
            '[grid]\n"policy.name" = ["hbm-only"]\n')
    (tmp_path / "a.toml").write_text(spec)
    (tmp_path / "b.toml").write_text(spec)
    r = tmhw("sweep", "a.toml", "--out", "o", "--workers", "1")
    assert r.rc == 0, r.err
    assert (tmp_path / "o" / ".tmhw-outputs").read_text() == "sweep a\n"
    again = tmhw("sweep", "a.toml", "--out", "o", "--workers", "1")
    assert again.rc == 0, again.err
    b = tmhw("sweep", "b.toml", "--out", "o", "--workers", "1")
    assert b.rc == 2 and "the outputs of sweep a" in b.err and "--force" in b.err
    run = tmhw(*TINY, "--out", "o")
    assert run.rc == 2 and "the outputs of sweep a" in run.err


def test_no_progress_bar_goes_into_a_pipe_from_any_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmhw: Callable) -> None:
    """stderr here is a capture, not a terminal: no command draws a bar into it, even
    without --quiet (a bar drawn at once would show its 0% here)."""
    import tmhw.sim.progress as P

    monkeypatch.setattr(P, "DELAY_S", 0.0)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(
        'preset = "quick"\n[base]\n"workload.layers" = 1\n"run.iterations" = 1\n'
        '[grid]\n"policy.name" = ["hbm-only", "demand"]\n')
    for argv in (["sweep", "s.toml", "--out", "sw", "--workers", "1"],
                 [*TINY[:-1], "--out", "r"]):
        r = tmhw(*argv)
        assert r.rc == 0, r.err
        assert "%|" not in r.err and "\r" not in r.err, (argv, r.err)


def test_a_study_folder_from_before_markers_is_the_studys_though_it_holds_a_report(
        tmp_path: Path) -> None:
    """paper_headline writes a report.json (its first TM-Training run's) beside its
    summary.md: a folder it wrote before output markers existed is still its own."""
    from tmhw import outputs

    (tmp_path / "summary.md").write_text("# Paper headline\n\nScenario `paper_headline`, "
                                         "quick stand-in sizes.\n")
    (tmp_path / "report.json").write_text("{}")
    assert outputs.holder(tmp_path) == "scenario paper_headline"
    outputs.check_study(tmp_path, "scenario", "paper_headline", force=False)
