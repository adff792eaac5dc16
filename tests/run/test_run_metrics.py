"""The run's figures: each iteration's record holds what changed over it, the headline
figures are means over the iterations after the warm-up, and inter-tier bytes count in
the iteration that released them (the last one also what its prefetches for an
iteration that does not run still miss)."""

from __future__ import annotations

from tmhw.dma import FETCH, INPLACE, WRITEBACK
from tmhw.run.metrics import Metrics
from tmhw.sim.stats import Level


def three_iterations() -> Metrics:
    """Iterations of 100, 50 and 100 ps with 3, 1 and 2 faults; one of warm-up."""
    m = Metrics(warmup_iterations=1, batch=4)
    for index, (start, end, faults) in enumerate([(0, 100, 3), (100, 150, 1),
                                                  (150, 250, 2)]):
        m.begin_iteration()
        m.totals.faults += faults
        m.totals.npu_hbm_read += 1000
        m.end_iteration(index=index, start_ps=start, end_ps=end, stall_ps=end - start - 10,
                        compute_ps=10, npu_hbm_stall_ps=0, monitor_changes=0)
    m.settle_traffic({(FETCH, 0): 10, (FETCH, 1): 20, (FETCH, 2): 40,
                      (WRITEBACK, 2): 8, (INPLACE, 1): 6}, carried=4)
    return m


def test_each_record_holds_what_changed_over_its_iteration() -> None:
    recs = three_iterations().records
    assert [r.faults for r in recs] == [3, 1, 2]
    assert [r.npu_hbm_read for r in recs] == [1000] * 3
    assert [r.time_ps for r in recs] == [100, 50, 100]
    assert [(r.fetch_bytes, r.writeback_bytes, r.inplace_bytes) for r in recs] == [
        (10, 0, 0), (20, 0, 6), (44, 8, 0)]


def test_headline_figures_are_steady_state_means_and_totals_cover_the_run() -> None:
    fig = three_iterations().figures(300, Level())
    assert (fig["iterations"], fig["warmup_iterations"], fig["steady_state"]) == (3, 1, True)
    assert fig["iteration_time_ps"] == 75 and fig["sim_time_ps"] == 150
    assert fig["samples"] == 8 and fig["samples_per_s"] == 8 / 150e-12
    assert fig["faults"] == 1                               # (1 + 2) // 2
    assert fig["traffic_bytes"]["flash_to_hbm"] == 32       # (20 + 44) // 2
    assert fig["traffic_bytes"]["inter_tier"] == 32 + 4 + 3
    assert [r["warmup"] for r in fig["per_iteration"]] == [True, False, False]
    assert fig["run_total"]["faults"] == 6
    assert fig["run_total"]["carried_fetch_bytes"] == 4
    assert fig["run_total"]["sim_time_ps"] == 300


def test_without_iterations_past_the_warm_up_every_iteration_is_averaged() -> None:
    m = Metrics(warmup_iterations=5, batch=1)
    m.begin_iteration()
    m.end_iteration(index=0, start_ps=0, end_ps=40, stall_ps=0, compute_ps=40,
                    npu_hbm_stall_ps=0, monitor_changes=0)
    m.end_warmup(40, {"npu": 1.0})
    fig = m.figures(40, Level())
    assert (fig["steady_state"], fig["warmup_iterations"], fig["iteration_time_ps"]) == (
        False, 0, 40)
    assert "energy_warmup_pj" not in fig
