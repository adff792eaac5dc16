"""``policy.tune``: each rival runs once per setting of what its authors tune, and the
fastest trial is the report (``tmhw.tune``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

import tmhw
from tmhw.config import SystemConfig
from tmhw.placement.base import Policy, policy_class
from tmhw.placement.registry import POLICIES
from tmhw.system import System
from tmhw.tune import trials, tuned

#: a small cell where Sentinel's migration interval matters: 2 BERT-base layers, s128 b8
CELL = ["workload.layers=2", "policy.hbm_ratio=0.25", "run.iterations=2"]


def run(c: SystemConfig) -> dict[str, Any]:
    return System(c).run()


def test_every_tunable_range_holds_the_default() -> None:
    """The default of every tuned parameter is among the values tried, or (Sentinel's
    several leads, ranked on a model) each of its values is: a tuned rival is then never
    slower than the same rival at its defaults."""
    for name in POLICIES:
        cls = policy_class(name)
        for key, values in cls.tunables.items():
            default = getattr(cls.Params(), key)
            if isinstance(default, tuple) and len(default) > 1:
                assert all((v,) in values for v in default), (name, key)
            else:
                assert default in values, (name, key)


def test_tuned_sentinel_is_the_fastest_trial_and_never_slower_than_its_default() -> None:
    cfg = tmhw.load_config("quick", [*CELL, "policy.name=sentinel", "policy.tune=true"])
    chosen, rep = tuned(cfg, run)
    tuning = rep["policy"]["tuning"]
    times = [t["iteration_time_ps"] for t in tuning["trials"]]
    assert len(times) == len(policy_class("sentinel").tunables["leads"])
    assert rep["steady"]["iteration_time_ps"] == min(times)
    # The report's config names the chosen values, and running it reproduces the trial.
    assert tuple(rep["config"]["policy"]["sentinel"]["leads"]) == chosen.policy.sentinel.leads
    assert list(chosen.policy.sentinel.leads) == tuning["chosen"]["leads"]
    assert System(chosen).run()["steady"]["iteration_time_ps"] == rep["steady"]["iteration_time_ps"]
    default = tmhw.load_config("quick", [*CELL, "policy.name=sentinel"])
    assert rep["steady"]["iteration_time_ps"] <= run(default)["steady"]["iteration_time_ps"]


def test_a_policy_with_nothing_to_tune_runs_once_unchanged() -> None:
    cfg = tmhw.load_config("quick", [*CELL, "policy.name=demand", "policy.tune=true"])
    assert trials(cfg) == []
    calls: list[SystemConfig] = []

    def counted(c: SystemConfig) -> dict[str, Any]:
        calls.append(c)
        return run(c)

    chosen, rep = tuned(cfg, counted)
    assert calls == [cfg] and chosen is cfg and "tuning" not in rep["policy"]


def test_tune_off_runs_the_defaults() -> None:
    cfg = tmhw.load_config("quick", [*CELL, "policy.name=flatflash"])
    assert trials(cfg) == []


def test_the_command_line_reports_the_trials(tmhw: Callable[..., Any],
                                             tmp_path: Path) -> None:
    r = tmhw("run", "--preset", "quick", "--policy", "autotm", "--quiet", "--out",
             str(tmp_path / "o"), "--set", "policy.tune=true", *sum(
                 (["--set", s] for s in CELL), []))
    assert r.rc == 0, r.err
    import json

    rep = json.loads((tmp_path / "o" / "report.json").read_text())
    tried = [t["ilp_node_limit"] for t in rep["policy"]["tuning"]["trials"]]
    assert tried == list(policy_class("autotm").tunables["ilp_node_limit"])


def test_tune_must_be_a_boolean(tmhw: Callable[..., Any], tmp_path: Path) -> None:
    r = tmhw("run", "--preset", "quick", "--quiet", "--out", str(tmp_path / "o"),
             "--set", 'policy.tune="yes"')
    assert r.rc == 2 and "tune" in r.err and "'yes'" in r.err
    assert len(r.err.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_a_tunable_that_is_not_a_parameter_is_refused() -> None:
    with pytest.raises(TypeError, match="tunable 'nope'"):
        class Bad(Policy):  # noqa: F841 (the class statement is the check)
            name = "bad"
            tunables: ClassVar[dict[str, tuple[Any, ...]]] = {"nope": (1, 2)}


@pytest.mark.parametrize("name", ["autotm", "sentinel"])
def test_a_trial_that_plans_an_earlier_trials_table_is_not_simulated_again(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the tunables change only the plan, the same table runs the same: reusing
    its figures changes no figure of the report, and simulates fewer events when two
    trials plan one table."""
    from tmhw import tune
    cfg = tmhw.load_config("quick", [*CELL, f"policy.name={name}", "policy.tune=true"])
    _, reused, ev_reused = tune.simulate(cfg)
    monkeypatch.setattr(policy_class(name), "tunes_plan_only", False)
    _, every, ev_every = tune.simulate(cfg)
    assert reused == every
    tables = {System(c).table.digest() for _, c in trials(cfg)}
    assert len(tables) <= len(trials(cfg))
    if len(tables) < len(trials(cfg)):
        assert ev_reused < ev_every
    else:
        assert ev_reused == ev_every


def test_an_autotm_plan_proved_optimal_is_not_planned_again_for_a_larger_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """AutoTM's solver stops at the node where it proves optimality whatever the limit
    beyond it, so once a trial's plan is optimal the larger budgets are its figures."""
    import tmhw.system as sysmod
    from tmhw import tune
    built: list[int] = []

    class Counting(sysmod.System):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            built.append(self.cfg.policy.params("autotm").ilp_node_limit)

    monkeypatch.setattr(sysmod, "System", Counting)
    cfg = tmhw.load_config("quick", [*CELL, "policy.name=autotm", "policy.tune=true"])
    _, rep, _ = tune.simulate(cfg)
    assert rep["policy"]["notes"]["ilp_status"] == 0.0
    assert built == [1000]
    rows = rep["policy"]["tuning"]["trials"]
    assert len(rows) == 3 and len({r["iteration_time_ps"] for r in rows}) == 1
