"""The ``recompute`` rival (``tmhw.placement.recompute``): everything in HBM, the
forward recomputed in the backward as far as the capacity needs, at the capacity the
ratio gives the model without recomputation."""

from __future__ import annotations

from typing import Any

import pytest

import tmhw
from tmhw.sim.errors import ConfigError, DoesNotFit

#: activations dominate: GPT-2 small, 4 layers, seq 1024, batch 8 (footprint 5.2 GiB of
#: which the model state is 0.7)
CELL = ["workload.model=gpt2-small", "workload.layers=4", "workload.seq=1024",
        "workload.batch=8", "run.iterations=3"]


def run(policy: str, ratio: float, *sets: str) -> dict[str, Any]:
    return tmhw.simulate("quick", [*CELL, f"policy.name={policy}",
                                   f"policy.hbm_ratio={ratio}", *sets]).to_dict()


def test_at_ratio_one_it_recomputes_nothing_and_is_hbm_only() -> None:
    rc, ho = run("recompute", 1.0), run("hbm-only", 1.0)
    assert rc["workload"]["recompute"] == "none"
    assert rc["steady"]["iteration_time_ps"] == ho["steady"]["iteration_time_ps"]
    assert rc["bounds"]["time_ratio"] == 1.0


def test_it_recomputes_to_fit_and_moves_nothing() -> None:
    """At half the footprint the per-layer recomputation fits: no steady inter-tier
    traffic, HBM never over its capacity, one more forward pass of compute (the
    iteration within 4/3 of HBM-only's, Chen et al.: at most one extra forward), and no
    faster than the bound of the iteration it ran."""
    rc, ho = run("recompute", 0.5), run("hbm-only", 1.0)
    assert rc["workload"]["recompute"] == "layer"
    assert rc["steady"]["traffic_bytes"]["inter_tier"] == 0
    assert rc["run_total"]["hbm_peak_occupancy_bytes"] <= rc["policy"]["hbm_capacity_bytes"]
    # the capacity is the ratio of the model's footprint without recomputation
    assert rc["policy"]["hbm_capacity_bytes"] == pytest.approx(
        0.5 * ho["workload"]["footprint_bytes"], rel=1e-3)
    t, t0 = rc["steady"]["iteration_time_ps"], ho["steady"]["iteration_time_ps"]
    assert t0 < t <= 4 / 3 * t0 * 1.01
    assert rc["workload"]["macs"] > ho["workload"]["macs"]
    assert rc["bounds"]["time_ratio"] >= 1.0


def test_where_nothing_fits_it_says_so() -> None:
    with pytest.raises(DoesNotFit, match="no recomputation fits .* the least peak, with"):
        run("recompute", 0.2)
    with pytest.raises(DoesNotFit, match="model state alone"):
        run("recompute", 0.05)
    # a named mode is the only one tried
    with pytest.raises(DoesNotFit, match="with selective"):
        run("recompute", 0.5, 'policy.recompute.mode="selective"')


def test_a_bad_mode_names_its_field() -> None:
    with pytest.raises(ConfigError, match="^policy.recompute.mode"):
        tmhw.load_config("quick", ["policy.name=recompute",
                                   'policy.recompute.mode="often"'])
