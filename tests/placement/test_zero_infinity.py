"""ZeRO-Infinity as a placement table: DeepSpeed's ZeRO-3 parameter fetch with its
prefetch bucket, reuse distance and persistence threshold, the optimizer state streamed
from flash, activation checkpoints offloaded (``tmhw.placement.zero_infinity``)."""

from __future__ import annotations

from typing import Any

import pytest

import tmhw
from tmhw.placement.gaps import table_profile
from tmhw.placement.table import Action
from tmhw.sim.errors import TmhwError
from tmhw.sim.units import S
from tmhw.system import System
from tmhw.workload.graph import Kind, Phase

#: BERT-base, 2 layers, s128 b8
QUICK = ["workload.layers=2", "run.iterations=2"]


def system(ratio: float, *sets: str) -> System:
    return System(tmhw.load_config("quick", [*QUICK, "policy.name=zero-infinity",
                                             f"policy.hbm_ratio={ratio}", *sets]))


def elems(t: Any) -> int:
    return int(t.nbytes // t.dtype_bytes)


def test_deepspeeds_defaults() -> None:
    """deepspeed/runtime/zero/config.py (stage3_prefetch_bucket_size 5e7,
    stage3_param_persistence_threshold 1e5, stage3_max_live_parameters 1e9,
    stage3_max_reuse_distance 1e9), offload_config.py (offload_param buffer_count 5,
    offload_optimizer buffer_count 4), aio config (block_size 1 MiB, queue_depth 8)."""
    p = tmhw.load_config("quick").policy.zero_infinity
    assert (p.prefetch_bucket_size, p.param_persistence_threshold, p.max_live_parameters,
            p.max_reuse_distance) == (50_000_000, 100_000, 10**9, 10**9)
    assert (p.param_buffer_count, p.optimizer_buffer_count, p.aio_block_size,
            p.aio_queue_depth) == (5, 4, 1 << 20, 8)


def test_at_reuse_distance_zero_every_large_weight_is_fetched_per_use_within_the_bucket(
        ) -> None:
    bucket = 3_000_000
    s = system(0.9, "policy.zero_infinity.max_reuse_distance=0",
               f"policy.zero_infinity.prefetch_bucket_size={bucket}")
    wl, tab = s.workload, s.table
    assert tab.notes["reuse_distance"] == 0 and tab.notes["repairs"] == 0
    uses = wl.uses()
    fetched = {m.tensor for m in tab.moves if m.action == Action.PREFETCH}
    for t in wl.tensors:
        if t.kind != Kind.WEIGHT or not uses[t.id]:
            continue
        small = elems(t) < 100_000
        # a small weight is never partitioned; a large one comes back before each use
        # after a gap of at least one op
        assert (t.id in fetched) != small or all(
            b - a <= 1 for (a, _), (b, _) in zip(uses[t.id], uses[t.id][1:], strict=False))
    # DeepSpeed's prefetcher: a parameter is fetched while the elements already in
    # flight (released, not yet used) are fewer than the bucket
    pf = sorted((m.issue_op, m.deadline_op, elems(wl.tensors[m.tensor]), k)
                for k, m in enumerate(tab.moves)
                if m.action == Action.PREFETCH and wl.tensors[m.tensor].kind == Kind.WEIGHT)
    assert sum(i < d for i, d, _, _ in pf) > len(pf) // 2     # most come ahead of use
    for issue, due, _, k in pf:
        if issue == due:
            continue
        # in flight when it is released, and used before it
        before = sum(e for i, d, e, kk in pf if kk != k and i <= issue <= d < due)
        assert before < bucket


def test_optimizer_state_comes_back_buffer_count_minus_one_optimizer_ops_ahead() -> None:
    s = system(0.9)
    wl, tab = s.workload, s.table
    opt = [op.index for op in wl.ops if op.phase == Phase.OPTIMIZER]
    ahead = tmhw.load_config("quick").policy.zero_infinity.optimizer_buffer_count - 1
    seen = 0
    for m in tab.moves:
        if m.action != Action.PREFETCH or wl.tensors[m.tensor].kind not in (
                Kind.MASTER, Kind.OPT_STATE):
            continue
        k = opt.index(m.deadline_op)
        assert m.issue_op == opt[max(0, k - ahead)] or m.issue_op == m.deadline_op
        seen += 1
    assert seen


def test_the_step_time_approaches_the_nvme_bound_of_the_optimizer_state() -> None:
    """ZeRO-Infinity's rule of thumb: with parameters and optimizer state on NVMe, the
    step is bound by NVMe bandwidth for the optimizer state's read and write. At 90% HBM
    every weight stays (reuse distance 1e9) and the activations fit, so what moves is the
    optimizer side: master weights and Adam moments read and written once each, and the
    gradients the backward produces more than an op before their update. A write-back
    still queued when the next step's prefetch of the same state is released is void
    (the executor keeps the data: ``void_writebacks``), so slightly less than the whole
    state crosses the link each step. Measured over two steps after two of warm-up: the
    SSD's write buffer takes one step's writes before they are programmed, so a step
    measured right after the first can beat the program rate (63.2 against 66.7 ms
    with the derived DMA chunk sizes); from the third step on it is full."""
    s = system(0.9, "run.iterations=4", "run.warmup_iterations=2")
    rep = s.run()
    wl = s.workload
    state = sum(t.npages for t in wl.tensors
                if t.kind in (Kind.MASTER, Kind.OPT_STATE)) * wl.page_size
    tr = rep["steady"]["traffic_bytes"]
    assert rep["run_total"]["system"]["dma"]["void_writebacks"] > 0
    assert tr["flash_to_hbm"] >= 0.9 * state and tr["hbm_to_flash"] >= 0.9 * state
    fl = s.cfg.flash
    link = s.cfg.link_bytes_per_s
    bound_ps = max(tr["flash_to_hbm"] / min(fl.read_bandwidth_bound(), link),
                   tr["hbm_to_flash"] / min(fl.write_bandwidth_bound(), link)) * S
    assert bound_ps <= rep["steady"]["iteration_time_ps"] <= 1.25 * bound_ps


def test_low_hbm_lowers_the_reuse_distance_until_the_plan_fits() -> None:
    """At half the footprint, halving the reuse distance three times fits (1e9 / 8); at
    0.3 even releasing every weight after each use does not, and the ops over capacity
    evict what they do not use."""
    half, low = system(0.5).table.notes, system(0.3).table.notes
    assert half["reuse_distance"] == 10**9 // 8 and half["repairs"] == 0
    assert low["reuse_distance"] == 0 and low["repairs"] > 0
    for s in (system(0.5), system(0.3)):
        assert table_profile(s.workload, s.table).max() <= s.capacity_pages


def test_params_are_checked() -> None:
    with pytest.raises(TmhwError, match="optimizer_buffer_count"):
        tmhw.load_config("quick", ["policy.zero_infinity.optimizer_buffer_count=0"])
    with pytest.raises(TmhwError, match="prefetch_bucket_size"):
        tmhw.load_config("quick", ["policy.zero_infinity.prefetch_bucket_size=-1"])
