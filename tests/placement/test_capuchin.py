"""The ``capuchin`` rival (``tmhw.placement.capuchin``): per tensor, swap or recompute by
Capuchin's cost rule, weights and optimizer state in HBM."""

from __future__ import annotations

from typing import Any

import pytest

import tmhw
from tmhw.sim.errors import ConfigError, DoesNotFit
from tmhw.system import System
from tmhw.workload.graph import Phase

#: activations dominate: GPT-2 small, 4 layers, seq 1024, batch 8 (footprint 5.2 GiB of
#: which the model state is 0.7)
CELL = ["workload.model=gpt2-small", "workload.layers=4", "workload.seq=1024",
        "workload.batch=8", "run.iterations=3"]


def sets(ratio: float, *more: str) -> list[str]:
    return [*CELL, "policy.name=capuchin", f"policy.hbm_ratio={ratio}", *more]


def run(policy: str, ratio: float, *more: str) -> dict[str, Any]:
    return tmhw.simulate("quick", [*sets(ratio, *more), f"policy.name={policy}"]).to_dict()


def test_at_ratio_one_it_moves_and_recomputes_nothing() -> None:
    cp, ho = run("capuchin", 1.0), run("hbm-only", 1.0)
    assert cp["workload"]["recompute"] == "none"
    assert cp["steady"]["traffic_bytes"]["inter_tier"] == 0
    assert cp["steady"]["iteration_time_ps"] == ho["steady"]["iteration_time_ps"]


def test_its_recomputed_ops_are_the_forward_ops_they_replay() -> None:
    """Every recompute op runs the GEMMs and vector work of the forward op of its name
    and writes as many bytes; every op it chose is a forward op; HBM never holds more
    than its capacity."""
    s = System(tmhw.load_config("quick", sets(0.5)))
    wl = s.workload
    assert wl.meta["recompute"].startswith("ops-")
    chosen = wl.meta["recompute_ops"].split(",")
    fwd = {op.name: op for op in wl.ops if op.phase == Phase.FORWARD}
    re = [op for op in wl.ops if op.name.endswith(".recompute")]
    assert len(re) == len(chosen) > 0
    for op in re:
        f = fwd[op.name.removesuffix(".recompute") + ".fwd"]
        assert f.name in chosen and op.phase == Phase.BACKWARD
        assert (op.gemms, op.vector_elems, op.vector_ops_per_elem) == \
            (f.gemms, f.vector_elems, f.vector_ops_per_elem)
        assert sum(wl.tensors[t].nbytes for t in op.writes) == \
            sum(wl.tensors[t].nbytes for t in f.writes)
    rep = s.run()
    assert rep["run_total"]["hbm_peak_occupancy_bytes"] <= rep["policy"]["hbm_capacity_bytes"]


def test_the_rule_recomputes_what_the_flash_cannot_hide() -> None:
    """At half the footprint on one SSD, swapping the attention's 192 MiB tensors adds
    14-28 ms each and recomputing them 0.2-0.5 ms: Capuchin recomputes 37 ops and moves
    396 MiB an iteration (82.3 ms; swaps alone 5.4 GiB, SSDTrain 800 ms). With 16 SSDs
    behind a 64-lane port the swaps hide and it recomputes 2 (76.9 ms)."""
    one, fast = run("capuchin", 0.5), run("capuchin", 0.5, "flash.devices=16",
                                             "link.lanes=64")
    swaps = run("capuchin", 0.5, "policy.capuchin.recompute=false")
    n_one, n_fast = (int(r["workload"]["recompute"].removeprefix("ops-"))
                     for r in (one, fast))
    assert n_fast < n_one
    assert swaps["workload"]["recompute"] == "none"
    t = {k: r["steady"]["iteration_time_ps"] for k, r in
         (("one", one), ("fast", fast), ("swaps", swaps))}
    assert t["fast"] < t["one"] < t["swaps"]
    tr = {k: r["steady"]["traffic_bytes"]["inter_tier"] for k, r in
          (("one", one), ("fast", fast), ("swaps", swaps))}
    assert tr["one"] < tr["fast"] and tr["one"] < tr["swaps"]
    for r in (one, fast, swaps):
        assert r["bounds"]["time_ratio"] >= 1 and r["bounds"]["traffic_ratio"] >= 1


def test_where_the_model_state_leaves_no_room_it_says_so() -> None:
    with pytest.raises(DoesNotFit, match="^policy.hbm_ratio: capuchin keeps weights"):
        run("capuchin", 0.3)


def test_a_bad_parameter_names_its_field() -> None:
    with pytest.raises(ConfigError, match="^policy.capuchin.recompute"):
        tmhw.load_config("quick", ["policy.name=capuchin", "policy.capuchin.recompute=2"])


def test_recompute_ops_name_forward_ops() -> None:
    """``workload.recompute = "ops"`` needs the names, and each must be a forward op."""
    with pytest.raises(ConfigError, match="^workload.recompute_ops"):
        tmhw.load_config("quick", ['workload.recompute="ops"'])
    with pytest.raises(ConfigError, match="^workload.recompute_ops = 'l0.nope'"):
        System(tmhw.load_config("quick", ['workload.recompute="ops"',
                                     'workload.recompute_ops=["l0.nope"]']))
