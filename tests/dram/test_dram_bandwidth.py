"""Streaming and random bandwidth of the detailed controller, and the refresh share.

The channels of a stack are independent (own banks, bus and refresh), so these run one
channel of each preset; the figures are fractions of that channel's peak."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from dram import PRESETS, DramConfig, DramTarget
from dram.bench import run_requests, workload
from dram.checker import check_log
from dram.controller import DetailedModel
from tmhw.sim.units import S

HBM = ["hbm2", "hbm2e", "hbm3"]
RUN_US = 20  # five refresh intervals


@cache
def _stream(name: str, refresh: str = "all-bank") -> tuple[float, float, DramTarget]:
    cfg = replace(PRESETS[name], channels=1, refresh=refresh)
    size = 4096
    count = int(RUN_US * 1e-6 * cfg.peak_bandwidth() / size)
    target, end, _ = run_requests(cfg, workload(cfg, "stream", size, count), "detailed",
                                  log=True)
    bw = size * count / (end / S)
    return bw / cfg.peak_bandwidth(), target.report()["refresh_share"], target


@pytest.mark.parametrize("name", HBM)
def test_streaming_reads_reach_85_to_100_percent_of_peak_with_refresh(name: str) -> None:
    ratio, share, target = _stream(name)
    assert 0.85 <= ratio <= 1.0, ratio
    cfg = target.cfg
    # The refresh share is what tRFC/tREFI says, within one percentage point.
    assert abs(share - cfg.t_rfc / cfg.t_refi) < 0.01, (share, cfg.t_rfc / cfg.t_refi)
    assert isinstance(target.impl, DetailedModel)
    for log in target.impl.logs():
        assert check_log(cfg, log) == []


@pytest.mark.parametrize("name", HBM)
def test_refresh_costs_the_stream_about_trfc_over_trefi(name: str) -> None:
    on, _, target = _stream(name)
    off, share_off, _ = _stream(name, refresh="off")
    c = target.cfg
    assert share_off == 0.0
    # Each REF costs tRFC, and the bus also idles for the precharge before it (tRTP + tRP)
    # and the activation after it (tRCD).
    lo = c.t_rfc / c.t_refi
    hi = (c.t_rtp + c.t_rp + c.t_rfc + c.t_rcd) / c.t_refi
    assert lo <= off - on <= hi + 0.01, (off - on, lo, hi)


def _random_share(cfg: DramConfig, count: int = 3000) -> float:
    _, end, _ = run_requests(cfg, workload(cfg, "random", 64, count), "detailed")
    return 64 * count / (end / S) / cfg.peak_bandwidth()


@pytest.mark.parametrize("name, ranks, below", [("hbm2", 1, 0.3), ("hbm2e", 1, 0.2),
                                                ("hbm3", 1, 0.55), ("ddr4-3200", 1, 0.5)])
def test_random_64b_reads_land_well_below_peak(name: str, ranks: int, below: float) -> None:
    # Each access opens a row: tFAW (HBM2, HBM2E, DDR4: 4 x 64 B / tFAW is 47% of DDR4's
    # peak) or tRC over the busy banks (HBM3) bounds the rate, not the data bus.
    assert _random_share(replace(PRESETS[name], channels=1, ranks=ranks)) < below


def test_two_ranks_double_random_reads_up_to_the_shared_bus() -> None:
    # tRRD and tFAW bind each rank, so two ranks activate twice as often; the data bus is
    # shared, and a burst from the other rank waits tRTRS: on random accesses half of
    # them, so the bus caps the rate at t_burst / (t_burst + tRTRS / 2) of peak.
    one = replace(PRESETS["ddr4-3200"], channels=1, ranks=1)
    two = replace(one, ranks=2)
    r1, r2 = _random_share(one), _random_share(two)
    assert 1.7 * r1 < r2 < two.t_burst / (two.t_burst + two.t_rtrs / 2), (r1, r2)


def test_per_bank_refresh_keeps_other_banks_streaming() -> None:
    all_bank, _, _ = _stream("hbm3")
    per_bank, share, target = _stream("hbm3", refresh="per-bank")
    assert per_bank > all_bank
    cfg = target.cfg
    assert abs(share - cfg.t_rfc_pb / (cfg.t_refi // cfg.banks) / cfg.banks) < 0.01
    assert isinstance(target.impl, DetailedModel)
    for log in target.impl.logs():
        assert check_log(cfg, log) == []
