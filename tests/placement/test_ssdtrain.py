"""SSDTrain as a placement table: activations only, written as their layer is done with
them, read back one block ahead in reverse layer order, and the adaptive choice of which
layers to offload (``tmhw.placement.ssdtrain``)."""

from __future__ import annotations

import numpy as np
import pytest

import tmhw
from tmhw.placement.base import make_policy
from tmhw.placement.gaps import GapPlan, table_profile
from tmhw.placement.ssdtrain import SSDTrainParams, block_runs
from tmhw.placement.table import Action
from tmhw.sim.errors import DoesNotFit, TmhwError
from tmhw.system import System
from tmhw.workload.graph import Kind, Phase

#: BERT-base, 4 layers, s128 b8: weights and optimizer state take about half of it
QUICK = ["workload.layers=4", "run.iterations=2"]


def system(ratio: float, *sets: str) -> System:
    return System(tmhw.load_config("quick", [*QUICK, "policy.name=ssdtrain",
                                             f"policy.hbm_ratio={ratio}", *sets]))


def test_only_activations_move_written_after_their_last_forward_use_read_a_block_ahead(
        ) -> None:
    s = system(0.97, "policy.ssdtrain.adaptive=false")
    wl, tab = s.workload, s.table
    rid, first = block_runs(GapPlan(s.ctx))
    uses = wl.uses()
    moved = [m for m in tab.moves if m.action != Action.DROP]
    assert moved
    for m in moved:
        t = wl.tensors[m.tensor]
        assert t.kind == Kind.ACTIVATION, t.name
        ops = [wl.ops[i] for i, _ in uses[t.id]]
        last_fwd = max(o.index for o in ops if o.phase == Phase.FORWARD)
        first_bwd = min(o.index for o in ops if o.phase == Phase.BACKWARD)
        if m.action == Action.WRITEBACK:
            assert m.issue_op == last_fwd
        else:
            # the first op of the block that runs just before the consumer's block
            assert m.deadline_op == first_bwd
            assert m.issue_op == max(int(first[rid[first_bwd] - 1]), last_fwd + 2)
    assert table_profile(wl, tab).max() <= s.capacity_pages


def test_adaptive_offloads_a_leading_subset_of_what_it_may_and_fits() -> None:
    every = system(0.97, "policy.ssdtrain.adaptive=false").table.notes
    adaptive = system(0.97).table.notes
    assert every["offloaded_layers"] == every["offload_layers"] > 1
    assert adaptive["hideable_layers"] <= adaptive["offloaded_layers"] \
        < every["offloaded_layers"]
    assert adaptive["offloaded_bytes"] < every["offloaded_bytes"]


def test_with_room_for_every_activation_nothing_moves() -> None:
    """At ratio 1 HBM holds the whole footprint and SSDTrain offloads nothing (a user
    runs without it then; its adaptive rule used to offload the layers whose transfers
    the profile could hide, 7.9 MB an iteration on the quick preset's 2 layers): the
    run is hbm-only's."""
    s = system(1.0)
    assert "offloaded_layers" not in s.table.notes
    rep = s.run()
    hbm = System(tmhw.load_config("quick", [*QUICK, "policy.name=hbm-only"])).run()
    assert rep["steady"]["traffic_bytes"]["inter_tier"] == 0
    assert rep["steady"]["iteration_time_ps"] == hbm["steady"]["iteration_time_ps"]


def test_that_cannot_fit_names_the_ratio_it_fits_from() -> None:
    with pytest.raises(DoesNotFit, match=r"^policy\.hbm_ratio: ssdtrain keeps weights, "
                       r"gradients and optimizer state in HBM; .* ssdtrain fits from "
                       r"policy\.hbm_ratio = 0\.\d+$"):
        system(0.25)


def test_params_are_checked() -> None:
    with pytest.raises(TmhwError, match="prefetch_layers"):
        tmhw.load_config("quick", ["policy.ssdtrain.prefetch_layers=0"])
    assert SSDTrainParams().prefetch_layers == 1
    assert np.all(np.diff(block_runs(GapPlan(system(0.97).ctx))[1]) > 0)
    assert make_policy("ssdtrain").name == "ssdtrain"
