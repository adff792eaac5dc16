"""TM-Training and the executor that replays its table: invariants over random small
workloads and capacities, and the mechanisms' visible effects."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tmhw import config as C
from tmhw.placement.tm_training import Planner
from tmhw.system import System
from tmhw.workload.builder import WorkloadBuilder
from tmhw.workload.graph import Workload


def mlp(widths: list[int], batch: int, residual: bool) -> Workload:
    """A small MLP: linear + GELU per layer, optional residual adds."""
    b = WorkloadBuilder("mlp", batch)
    x = b.input("x", batch * widths[0])
    for i, (d_in, d_out) in enumerate(zip(widths, widths[1:], strict=False)):
        y = b.linear(f"fc{i}", x, batch, d_in, d_out)
        y = b.eltwise(f"act{i}", (y,), batch * d_out, 8.0)
        if residual and d_in == d_out:
            y = b.eltwise(f"res{i}", (x, y), batch * d_out, 1.0)
        x = y
    return b.finish(x)


def run(wl: Workload, ratio: float, *sets: str, iterations: int = 2) -> tuple[System, dict]:
    cfg = C.with_overrides(C.PAPER, [f"policy.hbm_ratio={ratio}",
                                     f"run.iterations={iterations}",
                                     'policy.name="tm-training"', *sets])
    system = System(cfg, workload=wl)
    return system, system.run()


workloads = st.builds(
    mlp,
    st.lists(st.sampled_from([256, 512, 1024, 2048]), min_size=3, max_size=6),
    st.sampled_from([64, 256, 1024]),
    st.booleans(),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads, ratio=st.floats(0.3, 1.0),
       mode=st.sampled_from(["", "policy.split=false", "policy.prefetch=false",
                             "policy.monitor=false"]))
def test_tm_training_respects_capacity_residency_and_conserves_bytes(
        wl: Workload, ratio: float, mode: str) -> None:
    from tmhw.placement.base import op_working_set_pages

    cap = int(np.floor(ratio * (-(-wl.peak_live_bytes() // wl.page_size))))
    if cap < op_working_set_pages(wl).max():
        return  # no policy can run an op larger than HBM; check_fits says so
    system, rep = run(wl, ratio, *([mode] if mode else []))
    # HBM occupancy never exceeds capacity (in-flight prefetches included).
    assert rep["hbm_peak_occupancy_bytes"] <= rep["policy"]["hbm_capacity_bytes"]
    # Every operand was resident before its op: System checks each op as it starts, and
    # no live page was lost (Residency.check at the end); reaching here means both held.
    # Bytes moved between the tiers are the bytes the flash device served and took.
    t = rep["traffic_bytes"]
    assert t["flash_to_hbm"] == system.flash.bytes_read
    assert t["hbm_to_flash"] == system.flash.bytes_written
    assert t["inter_tier"] == t["flash_to_hbm"] + t["hbm_to_flash"]


def test_planner_replays_a_cyclic_table() -> None:
    """Pages resident at the start of an iteration are the pages the table leaves
    resident: every persistent page a write-back evicts over a wrap-around gap is
    prefetched back in the next iteration, so the table is a fixed point."""
    wl = mlp([1024] * 6, 256, True)
    system, rep = run(wl, 0.4, "policy.monitor=false", iterations=3)
    table = system.table
    # Without the monitor the table is the same every iteration, and so is the traffic.
    per_it = rep["per_iteration"]
    assert per_it[1]["flash_to_hbm_bytes"] == per_it[2]["flash_to_hbm_bytes"]
    # Pages resident when an iteration starts come back before the iteration ends.
    for m in table.moves:
        if m.action.value == "writeback" and table.initial[m.p0:m.p1].any():
            back = [p for p in table.moves if p.action.value == "prefetch" and
                    p.tensor == m.tensor and p.p0 <= m.p0 and p.deadline_op > m.issue_op]
            assert back, f"{wl.tensors[m.tensor].name} evicted and never fetched back"
    for m in table.moves:
        if m.action.value == "prefetch":
            assert m.issue_op <= m.deadline_op


def test_eviction_choice_moves_fewer_bytes_than_demand_paging() -> None:
    """With the future known, the table evicts what is used furthest ahead and never
    writes back clean data: fewer bytes cross the tiers than LRU demand paging moves."""
    wl = mlp([2048] * 8, 1024, True)
    _, tm = run(wl, 0.5, iterations=2)
    cfg = C.with_overrides(C.PAPER, ["policy.hbm_ratio=0.5", "run.iterations=2",
                                     'policy.name="demand"'])
    dm = System(cfg, workload=wl).run()
    last_tm = tm["per_iteration"][-1]
    last_dm = dm["per_iteration"][-1]
    moved_tm = last_tm["flash_to_hbm_bytes"] + last_tm["hbm_to_flash_bytes"]
    moved_dm = last_dm["flash_to_hbm_bytes"] + last_dm["hbm_to_flash_bytes"]
    assert moved_tm < moved_dm


def test_split_keeps_head_resident_and_streams_tail() -> None:
    """A gap whose fetch cannot hide behind compute keeps a head resident (split > 0)
    when capacity has room, and the prefetch covers only the tail."""
    wl = mlp([2048] * 6, 64, False)
    cfg = C.with_overrides(C.PAPER, ["policy.hbm_ratio=0.6", 'policy.name="tm-training"'])
    system = System(cfg, workload=wl)
    planner = Planner(system.ctx)
    planner.plan()
    for g in planner.gaps:
        if g.evicted and g.split > 0:
            table = planner.table()
            t = wl.tensors[g.tensor]
            pre = [m for m in table.moves if m.tensor == g.tensor and
                   m.action.value == "prefetch"]
            assert any(m.p0 > t.page_start for m in pre)
            return
    # No gap needed splitting at this capacity: then every evicted gap is hidden.
    assert all(planner.hidden(g) for g in planner.gaps if g.evicted)


def test_monitor_lowers_stall_over_iterations() -> None:
    """The timing monitor's effect is visible: with it, the last iteration's stall is
    below the first steady iteration's; without it the table (and stall) stay put."""
    overrides = ['workload.model="bert-base"', "workload.batch=8", "workload.seq=128",
                 "workload.layers=4", "policy.hbm_ratio=0.9", "run.iterations=4"]
    with_m = System(C.with_overrides(C.PAPER, overrides)).run()
    without = System(C.with_overrides(C.PAPER, overrides + ["policy.monitor=false"])).run()
    s_with = [it["stall_ps"] for it in with_m["per_iteration"]]
    s_without = [it["stall_ps"] for it in without["per_iteration"]]
    # Without the monitor the table is fixed: once the devices' state (write-backs in
    # flight across the boundary, refresh phase, FTL placement) has settled after the
    # first two iterations, the stall repeats to within 1%.
    assert abs(s_without[3] - s_without[2]) <= 0.01 * s_without[2]
    assert s_with[3] < s_with[1]
    assert s_with[3] < s_without[3]


def test_bert_large_layer_compute_matches_formula_with_ample_hbm_and_stalls_on_a_tenth() -> None:
    """One BERT-large layer (seq 512, batch 32) on HBM-only: with HBM far wider than the
    arrays need, op time is the dataflow formula's (within 2%); with an eighth of the
    paper's HBM bandwidth (2 of 16 channels) the arrays wait on operand traffic."""
    base = ['policy.name="hbm-only"', 'workload.model="bert-large"', "workload.batch=32",
            "workload.seq=512", "workload.layers=1"]
    wide = System(C.with_overrides(C.PAPER, [*base, "hbm.channels=512"]))
    formula = sum(wide.npu.compute_ps(t) for t in wide.tasks)
    rep = wide.run()
    assert abs(rep["compute_ps"] - formula) <= 0.02 * formula
    narrow = System(C.with_overrides(C.PAPER, [*base, "hbm.channels=2"])).run()
    assert narrow["npu_hbm_stall_ps"] > 0.5 * formula
    assert narrow["compute_ps"] > 2 * formula
