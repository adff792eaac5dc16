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
