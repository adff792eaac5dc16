"""``run.warmup_iterations = "auto"``: the warm-up ends where the iterations repeat
(time and traffic within ``run.steady_tolerance``, over a period of 1 to
``MAX_PERIOD``, or a cycle's traffic and mean time up to ``MAX_CYCLE``), and the run
measures whole periods after it; a run that finds none by ``run.max_iterations`` says
so."""

from __future__ import annotations

from typing import Any

import pytest

import tmhw
from tmhw.config import MAX_CYCLE, MAX_PERIOD
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


def test_a_cycle_longer_than_any_period_is_found_and_measured_whole() -> None:
    """FlatFlash's promotions cycle on BERT-base, 6 layers at 1/8 HBM behind 32
    channels: its iterations 6 apart move the same bytes, but their times differ by up
    to 1.2%, so no period up to ``MAX_PERIOD`` repeats. Before cycles were looked for, the
    run went to ``run.max_iterations`` (48) and measured its last two, 121.45 ms. The
    cycle's mean is the steady state: 119.625 ms over iterations 216-227 of a run with
    every iteration simulated (``tmhw run --preset quick --policy flatflash --hbm-ratio
    0.125 --set workload.layers=6 --set flash.channels=32 --set flash.pcie_lanes=16
    --set run.warmup_iterations=216 --set run.iterations=228``)."""
    rep = tmhw.simulate("quick", [
        "workload.layers=6", "policy.name=flatflash", "policy.hbm_ratio=0.125",
        "flash.channels=32", "flash.pcie_lanes=16", 'run.warmup_iterations="auto"']).to_dict()
    m, t = rep["measurement"], times(rep)
    assert m["converged"] and MAX_PERIOD < m["period"] <= MAX_CYCLE and not rep["warnings"]
    warm, p = m["warmup_iterations"], m["period"]
    assert m["measured_iterations"] == p and warm >= 2 * p + 1
    # single iterations a cycle apart do not repeat within the tolerance; the cycles do
    assert any(abs(t[j] - t[j - p]) > 0.005 * t[j - p] for j in range(warm - p, warm))
    assert abs(sum(t[warm - p:warm]) - sum(t[warm - 2 * p:warm - p])) <= \
        0.005 * sum(t[warm - 2 * p:warm - p])
    assert abs(rep["steady"]["iteration_time_ps"] - 119.625e9) <= 0.005 * 119.625e9


def test_a_given_warm_up_is_not_a_verdict() -> None:
    rep = tmhw.simulate("quick", ["workload.layers=3", "run.iterations=2",
                                  "run.warmup_iterations=1"]).to_dict()
    assert rep["measurement"]["converged"] is None and rep["measurement"]["period"] == 0


@pytest.mark.parametrize("sets, field", [
    (['run.warmup_iterations="soon"'], "run.warmup_iterations"),
    (["run.warmup_iterations=-1"], "run.warmup_iterations"),
    (["run.max_iterations=1"], "run.max_iterations"),
    (['run.warmup_iterations="auto"', "run.iterations=48"], "run.iterations"),
    (["run.steady_tolerance=0"], "run.steady_tolerance"),
    (["run.steady_tolerance=0.5"], "run.steady_tolerance"),
])
def test_bad_steady_state_settings_name_their_field(sets: list[str], field: str) -> None:
    with pytest.raises(ConfigError, match=f"^{field}"):
        tmhw.load_config("quick", sets)


def test_a_sweep_row_says_whether_its_run_converged() -> None:
    # (the quick preset's SLC cache fills in 380 iterations of these writes: skipped,
    # the change to TLC speed takes three, so the run needs eleven to repeat)
    base = {"workload.layers": 3, "policy.hbm_ratio": 0.25, "run.iterations": 2,
            "run.max_iterations": 12, "run.warmup_iterations": "auto"}
    rows = tmhw.sweep({"preset": "quick", "base": base,
                       "grid": {"run.steady_tolerance": [0.005, 1e-12],
                                "policy.name": ["demand"]}})
    by_tol = {float(r["run.steady_tolerance"]): r["converged"] for r in rows}
    assert by_tol == {0.005: "true", 1e-12: "false"}
    given = tmhw.sweep({"preset": "quick", "base": {"workload.layers": 3,
                                                    "run.warmup_iterations": 1},
                        "grid": {"policy.name": ["demand"]}})
    assert given[0]["converged"] == ""


#: an SLC cache of about eight iterations' writes of ``CELL`` (570 MB each): it fills
#: during the warm-up, and writes then program at TLC speed
SMALL_SLC = "flash.slc_cache_bytes=4600000000"


@pytest.mark.parametrize("policy", ["demand", "tm-training"])
def test_an_slc_cache_that_fills_is_skipped_to_full_and_measured_after(policy: str) -> None:
    """The cache fills at a steady rate; "auto" moves it ahead instead of simulating
    that, simulates the change to TLC speed, and measures what a run that simulated
    every iteration up to it measures (within the tolerance). TM-Training's monitor is
    off: with a fixed warm-up it judges its trials on whatever the device does during
    them, the cliff included, so the two runs could keep different trials; the skip is
    what is measured here."""
    pol = [f"policy.name={policy}", "policy.tm_training.monitor=false"]
    auto = run(*pol, SMALL_SLC, "run.iterations=2")
    given = tmhw.simulate("quick", ["workload.layers=3", "policy.hbm_ratio=0.25", *pol,
                                    SMALL_SLC, "run.warmup_iterations=16",
                                    "run.iterations=18"]).to_dict()
    m = auto["measurement"]
    assert m["converged"] and m["skipped_iterations"] >= 1
    t_auto, t_given = (r["steady"]["iteration_time_ps"] for r in (auto, given))
    assert abs(t_auto - t_given) <= 0.005 * t_given
    # both measure after the cliff: TLC programs take 3x as long as SLC ones
    assert t_given > 1.3 * times(given)[2]
    # and neither beats the time bound, which charges the cache's folding in a
    # steady state that was found
    assert auto["bounds"]["time_ratio"] >= 1 and given["bounds"]["time_ratio"] >= 1
    slc = auto["run_total"]["system"]["flash"]["slc"]
    assert slc["slc_advanced_pages"] > 0


def test_a_monitor_judges_its_trials_on_the_device_it_will_run_on() -> None:
    """TM-Training's monitor starts again once the SLC cache stops filling, so its
    trials run after the change to TLC speed."""
    rep = run("policy.name=tm-training", SMALL_SLC, "run.iterations=2")
    t = times(rep)
    cliff = next(j for j in range(1, len(t)) if t[j] > 1.3 * t[1])
    trials = [j for j, it in enumerate(rep["per_iteration"]) if it["monitor_changes"]]
    # a trial begun before the drift showed (it takes three warm iterations to) is
    # undone; none is begun while it lasts, and the monitor's trials follow the cliff
    assert all(j < 3 or j > cliff for j in trials) and max(trials) > cliff


def test_the_warm_up_ends_only_once_the_writes_past_a_full_cache_repeat() -> None:
    """At 75% HBM on the quick preset (6 layers) the SLC cache is moved ahead to one
    iteration short of full after iteration 3; it is full two iterations before the
    time settles (41 ms at SLC speed, then 68, 77, 76, 76 ms), as writes past the full
    cache leave less idle time to fold in. Before the work past the cache had to repeat
    too, "auto" measured the last iteration at SLC speed (41.2 ms)."""
    rep = tmhw.simulate("quick", ["workload.layers=6", "policy.hbm_ratio=0.75",
                                  'run.warmup_iterations="auto"', "run.iterations=1",
                                  "policy.tm_training.monitor=false"]).to_dict()
    m, t = rep["measurement"], times(rep)
    assert m["converged"] and m["skipped_iterations"] > 0
    assert rep["steady"]["iteration_time_ps"] > 1.5 * t[3]
    assert abs(t[-1] - t[-2]) <= 0.005 * t[-2]


class _Mixing:
    """A flash tier whose cache stands full from the start while the work it does past
    the cache varies from iteration to iteration (``Drifting``): ``mix[i]`` of 1000
    pages an iteration written past it."""

    def __init__(self, mix: list[int]) -> None:
        self.mix, self.i = mix, 0

    def drift(self) -> tuple[Any, Any, Any]:
        import numpy as np
        return np.array([500.0]), np.array([500.0]), np.array([1000.0 * self.i])

    def regime(self) -> Any:
        import numpy as np
        return np.array([float(sum(self.mix[:self.i]))])

    def advance_drift(self, pages: Any) -> None:
        raise AssertionError("a drift at its bound is not moved")


def _skips(flash: Any, n: int) -> list[bool]:
    """``Executor._skip_drift`` after each of ``n`` iterations on ``flash`` (``i``: the
    iterations done), on an executor holding only what the rule reads."""
    from types import SimpleNamespace

    from tmhw.run.loop import Executor
    from tmhw.run.metrics import Metrics

    ex = object.__new__(Executor)
    ex.pager = SimpleNamespace(flash=flash)
    ex.cfg = SimpleNamespace(run=SimpleNamespace(steady_tolerance=0.005))
    ex.metrics = object.__new__(Metrics)
    ex.metrics.skipped_iterations = 0
    ex._drift, ex._moved, ex._regime, ex._at_bound = [], [], [], 0
    out = []
    for it in range(n):
        flash.i = it + 1
        out.append(ex._skip_drift(it))
    return out


class _Level:
    """A flash tier whose cache fill after iteration ``i`` is ``fill[i - 1]`` of
    1,000,000 pages, 40,000 pages written an iteration; ``advance_drift`` moves it (and
    every fill after it) as an SSD's cache would be moved."""

    def __init__(self, fill: list[float]) -> None:
        self.fill, self.i, self.moved = list(fill), 0, 0.0

    def drift(self) -> tuple[Any, Any, Any]:
        import numpy as np
        return (np.array([self.fill[self.i - 1] + self.moved]), np.array([1e6]),
                np.array([40_000.0 * self.i]))

    def regime(self) -> Any:
        import numpy as np
        return np.array([0.0])

    def advance_drift(self, pages: Any) -> None:
        self.moved += float(pages[0])


def test_a_fill_that_stands_at_a_level_is_not_skipped_to_a_bound() -> None:
    """A cache that fills steadily is skipped ahead; one whose fill stands at a level,
    moving by noise just over the tolerance (0.5% of the 40,000 pages written: 200),
    is not: two moves of the same sign but unlike sizes (a dip and its recovery, then
    the noise) are no drift. The regime map's BERT-large at 1/8 HBM on four SSDs with
    per-layer recomputation (25,000 pages, +-214 an iteration) was skipped to full and
    back every four iterations, 315,632 iterations in all, and never converged."""
    steady = _Level([30_000.0 * k for k in range(1, 13)])
    assert any(_skips(steady, 12)) and steady.moved > 0
    level = [25_000.0 + (214 if k % 2 else 0) for k in range(12)]
    level[5] -= 1_000          # a dip: -1,214, then +1,000 back, then the noise again
    noisy = _Level(level)
    assert not any(_skips(noisy, 12)) and noisy.moved == 0


def test_a_mix_of_regimes_that_never_repeats_settles_after_twice_the_longest_period(
        ) -> None:
    """``Executor._skip_drift`` at the drift's bound: a mix of the two regimes that
    repeats ends the drift at once; one that never repeats (353 to 444 of 1000 pages
    past the cache, no period) ends it once the bound has held for ``2 * MAX_PERIOD``
    iterations, and from then on any two iterations' regimes count as the same."""
    def drifting(mix: list[int]) -> list[bool]:
        flash = _Mixing(mix)
        return _skips(flash, len(mix))

    steady = drifting([400] * 12)
    assert steady[:3] == [False] * 3 and not any(steady[3:])
    # no two of them within the tolerance (5 pages) of each other
    noisy = [360, 402, 374, 416, 388, 430, 367, 409, 381, 423, 395, 437, 353, 444]
    got = drifting(noisy)
    # from the fourth iteration (the first the rule looks at) at the bound: drifting
    # until the bound has held for 2 * MAX_PERIOD of them
    assert got[3:3 + 2 * MAX_PERIOD - 1] == [True] * (2 * MAX_PERIOD - 1)
    assert not any(got[3 + 2 * MAX_PERIOD - 1:])
