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
        "workload.batch=8", "run.iterations=3", "run.warmup_iterations=1"]


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


def test_tm_recompute_is_tm_training_with_the_fastest_recomputation() -> None:
    """``tm-recompute`` tunes ``policy.tm_training.recompute`` over none, selective,
    per layer and per tensor: never slower than TM-Training alone (its "none" trial),
    and where the recomputed iteration fits HBM whole it moves nothing, as ``recompute``
    does. At 25% of the footprint, where recomputation alone does not fit, it offloads
    the rest."""
    for ratio in (0.5, 0.25):
        hy = run("tm-recompute", ratio, "policy.tune=true")
        tm = run("tm-training", ratio)
        trials = hy["policy"]["tuning"]["trials"]
        assert [t["recompute"] for t in trials] == ["none", "selective", "layer", "tensors"]
        best = min(trials, key=lambda t: t["iteration_time_ps"])
        label = hy["workload"]["recompute"]
        assert best["recompute"] != "none"
        assert label == best["recompute"] or (best["recompute"] == "tensors"
                                              and label.startswith("ops-"))
        assert hy["steady"]["iteration_time_ps"] == best["iteration_time_ps"]
        assert hy["steady"]["iteration_time_ps"] <= tm["steady"]["iteration_time_ps"]
        assert hy["bounds"]["time_ratio"] >= 1 and hy["bounds"]["traffic_ratio"] >= 1
    # at half the footprint the per-tensor hybrid recomputes 37 ops and moves 342 MiB
    # an iteration: 79.8 ms, against 82.9 ms recomputing every layer (which moves
    # nothing) and 82.3 ms under Capuchin, whose rule chose the same ops
    rc, cp = run("recompute", 0.5), run("capuchin", 0.5)
    hy = run("tm-recompute", 0.5, "policy.tune=true")
    assert hy["workload"]["recompute"] == cp["workload"]["recompute"] == "ops-37"
    assert rc["steady"]["traffic_bytes"]["inter_tier"] == 0
    assert 0 < hy["steady"]["traffic_bytes"]["inter_tier"]
    t = hy["steady"]["iteration_time_ps"]
    assert t < rc["steady"]["iteration_time_ps"] and t < cp["steady"]["iteration_time_ps"]


def test_a_streamed_op_writes_back_nothing_that_dies_with_it() -> None:
    """At 25% HBM the loss (reading 823 MB of logits, writing their gradient) runs
    streamed; the logits die with their tiles and its gradient's tiles stay while they
    fit, so what is written to flash is what is read back, to 0.1% (five pages; before:
    785 MiB of dead logits more written per iteration) and no bound is beaten."""
    rep = run("tm-training", 0.25, 'policy.tm_training.recompute="layer"')
    tr = rep["steady"]["traffic_bytes"]
    assert rep["steady"]["streamed_bytes"] > 0
    assert tr["hbm_to_flash"] <= 1.001 * tr["flash_to_hbm"]
    assert rep["bounds"]["time_ratio"] >= 1 and rep["bounds"]["traffic_ratio"] >= 1


def test_with_fast_flash_the_hybrid_recomputes_nothing() -> None:
    """With 64 SSDs behind a 256-lane port, moving activations costs less than
    recomputing them: tm-recompute keeps recompute = none (77.1 ms against 77.6 ms
    selective and 82.9 ms per layer), and its per-tensor trial recomputes nothing (at 16
    SSDs it still recomputes 2 ops); on one SSD it recomputes (test above)."""
    hy = run("tm-recompute", 0.5, "policy.tune=true", "flash.devices=64", "link.lanes=256")
    assert hy["workload"]["recompute"] == "none"
    trials = {t["recompute"]: t["iteration_time_ps"] for t in hy["policy"]["tuning"]["trials"]}
    assert trials["tensors"] == trials["none"] < trials["selective"] < trials["layer"]


def test_with_free_recomputation_the_hybrid_moves_no_activation() -> None:
    """On an NPU 10^4 times faster (``npu.freq_mhz``: every MAC and vector op free, only
    streaming operands from HBM left), recomputing costs less than any move: the
    per-tensor hybrid recomputes and moves nothing at all between the tiers, where
    TM-Training alone moves gigabytes."""
    fast = "npu.freq_mhz=10000000"
    hy = run("tm-recompute", 0.5, "policy.tune=true", fast)
    tm = run("tm-training", 0.5, fast)
    tensors = run("tm-training", 0.5, 'policy.tm_training.recompute="tensors"', fast)
    assert tensors["workload"]["recompute"].startswith("ops-")
    assert tensors["steady"]["traffic_bytes"]["inter_tier"] == 0
    assert hy["steady"]["traffic_bytes"]["inter_tier"] == 0
    assert tm["steady"]["traffic_bytes"]["inter_tier"] > 2**30


def test_a_reactive_pager_streams_an_op_larger_than_hbm_too() -> None:
    """Streaming is the executor's: at 25% HBM the loss (823 MB of logits and their
    gradient, more than HBM) runs tile by tile under the demand pagers and FlatFlash as
    under TM-Training (before, they did not fit there); a static plan that holds every
    operand whole (Sentinel) still does not, and says which op."""
    for policy in ("demand", "demand-belady", "flatflash"):
        rep = run(policy, 0.25)
        assert rep["steady"]["streamed_bytes"] >= 823_410_688
        assert rep["run_total"]["hbm_peak_occupancy_bytes"] \
            <= rep["policy"]["hbm_capacity_bytes"]
        assert rep["bounds"]["time_ratio"] >= 1 and rep["bounds"]["traffic_ratio"] >= 1
    with pytest.raises(DoesNotFit, match="op loss needs .* under sentinel"):
        run("sentinel", 0.25)


def test_a_streamed_op_evicts_its_own_pages_outside_the_tile() -> None:
    """The demand pager faults in the Adam state of Llama 3.2 1B's embeddings (1066 MiB
    an update op, more than 1/8 of the footprint) and holds it; when that op runs
    streamed and nothing else is left to evict, its own pages outside the current tile
    leave (before: "cannot free 2728 pages for op embed.tokens.adam.0")."""
    rep = tmhw.simulate("paper", ["workload.model=hf:llama-3.2-1b", "workload.batch=1",
                                  "workload.seq=512", "workload.layers=2",
                                  "workload.recompute=layer", "run.iterations=1",
                                  "policy.name=demand", "policy.hbm_ratio=0.125"]).to_dict()
    assert rep["steady"]["streamed_bytes"] > 0
    assert rep["run_total"]["hbm_peak_occupancy_bytes"] <= rep["policy"]["hbm_capacity_bytes"]
