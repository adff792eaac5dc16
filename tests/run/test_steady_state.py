"""``run.warmup_iterations = "auto"``: the warm-up ends where the iterations repeat
(time and traffic within ``run.steady_tolerance``, over a period of 1 to
``MAX_PERIOD``), and the run measures whole periods after it; a run that finds none by
``run.max_iterations`` says so."""

from __future__ import annotations

from typing import Any

import pytest

import tmhw
from tmhw.config import MAX_PERIOD
from tmhw.sim.errors import ConfigError

CELL = ["workload.layers=3", "policy.hbm_ratio=0.25", 'run.warmup_iterations="auto"']


def run(*sets: str) -> dict[str, Any]:
    return tmhw.simulate("quick", [*CELL, *sets]).to_dict()


def times(rep: dict[str, Any]) -> list[int]:
    return [it["time_ps"] for it in rep["per_iteration"]]


@pytest.mark.parametrize("policy", ["demand", "sentinel", "tm-training"])
def test_the_warm_up_ends_where_the_iterations_repeat(policy: str) -> None:
    rep = run(f"policy.name={policy}", "run.iterations=2")
    m = rep["measurement"]
    assert m["converged"] and 1 <= m["period"] <= MAX_PERIOD
    warm, p, t = m["warmup_iterations"], m["period"], times(rep)
    # two periods of repeated iterations, none of them the cold first, end the warm-up
    assert warm >= 2 * p + 1
    for j in range(warm - p, warm):
        assert abs(t[j] - t[j - p]) <= 0.005 * t[j - p]
    # then whole periods, at least the iterations asked for
    assert m["measured_iterations"] % p == 0 and m["measured_iterations"] >= 2
    assert m["iterations"] == warm + m["measured_iterations"] and not rep["warnings"]
    if policy == "tm-training":
        # its monitor judges every trial first (two iterations each)
        assert sum(it["monitor_changes"] for it in rep["per_iteration"]) > 0
        assert warm >= 8


def test_a_run_that_does_not_repeat_says_so_and_measures_its_last_iterations() -> None:
    rep = run("policy.name=demand", "run.iterations=2", "run.steady_tolerance=1e-12",
              "run.max_iterations=6")
    m = rep["measurement"]
    assert m["converged"] is False and m["period"] == 0
    assert m["iterations"] == 6 and m["measured_iterations"] == 2
    assert any("did not repeat" in w for w in rep["warnings"])


def test_a_given_warm_up_is_not_a_verdict() -> None:
    rep = tmhw.simulate("quick", ["workload.layers=3", "run.iterations=2"]).to_dict()
    assert rep["measurement"]["converged"] is None and rep["measurement"]["period"] == 0


@pytest.mark.parametrize("sets, field", [
    (['run.warmup_iterations="soon"'], "run.warmup_iterations"),
    (["run.warmup_iterations=-1"], "run.warmup_iterations"),
    (["run.max_iterations=1"], "run.max_iterations"),
    (['run.warmup_iterations="auto"', "run.iterations=32"], "run.iterations"),
    (["run.steady_tolerance=0"], "run.steady_tolerance"),
    (["run.steady_tolerance=0.5"], "run.steady_tolerance"),
])
def test_bad_steady_state_settings_name_their_field(sets: list[str], field: str) -> None:
    with pytest.raises(ConfigError, match=f"^{field}"):
        tmhw.load_config("quick", sets)


def test_a_sweep_row_says_whether_its_run_converged() -> None:
    base = {"workload.layers": 3, "policy.hbm_ratio": 0.25, "run.iterations": 2,
            "run.max_iterations": 6, "run.warmup_iterations": "auto"}
    rows = tmhw.sweep({"preset": "quick", "base": base,
                       "grid": {"run.steady_tolerance": [0.005, 1e-12],
                                "policy.name": ["demand"]}})
    by_tol = {float(r["run.steady_tolerance"]): r["converged"] for r in rows}
    assert by_tol == {0.005: "true", 1e-12: "false"}
    given = tmhw.sweep({"preset": "quick", "base": {"workload.layers": 3},
                        "grid": {"policy.name": ["demand"]}})
    assert given[0]["converged"] == ""
