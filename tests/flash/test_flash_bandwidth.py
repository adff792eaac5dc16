"""Sequential read bandwidth against min(dies x planes x page / tR, channels x rate x
width, host link), and the knee where the channels stop being the bottleneck.

Requests are ``planes x page`` bytes, so with CWDP striping each one touches every plane
of every die once (one multi-plane read per die), four outstanding.
"""

from __future__ import annotations

import dataclasses

import pytest

from flash import PRESETS, FlashConfig
from flash.bench import run_bench


def _seqread(cfg: FlashConfig, model: str, count: int = 40) -> dict[str, object]:
    return run_bench(cfg, pattern="seqread", size=cfg.planes * cfg.page_size, qd=4,
                     count=count, model=model)


@pytest.mark.parametrize("model", ["fast", "detailed"])
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_sequential_read_bandwidth_is_the_min_of_dies_channels_and_link(name: str,
                                                                        model: str) -> None:
    cfg = PRESETS[name]
    bound = min(cfg.dies * cfg.planes_per_die * cfg.page_size / (cfg.t_r / 1e12),
                cfg.channels * cfg.channel_rate_mtps * 1e6 * cfg.channel_width_bits / 8,
                cfg.pcie.read_throughput(cfg.planes * cfg.page_size))
    bw = float(_seqread(cfg, model)["bandwidth_mbps"]) * 1e6  # type: ignore[arg-type]
    assert bw == pytest.approx(bound, rel=0.05)
    assert bw <= bound


# MQSim-default timing on 8 dies (one per channel) and an unlimited host link: the dies
# deliver 8 x 2 x 8 KiB / 75 us = 1.748 GB/s, the channels 8 x rate x 1 byte, so the
# channels saturate below 1.748e9 / 8 / 1e6 = 218 MT/s and the dies above.
KNEE_BASE = dataclasses.replace(PRESETS["mqsim-default"], chips_per_channel=1,
                                dies_per_chip=1, pcie_lane_gbps=100.0,
                                pcie_overheads=False)
RATES = (100, 150, 200, 250, 300, 400)


@pytest.mark.parametrize("model", ["fast", "detailed"])
def test_channel_saturation_knee_is_where_the_formula_puts_it(model: str) -> None:
    die_bw = KNEE_BASE.die_read_bytes_per_s
    knee_rate = die_bw / KNEE_BASE.channels / 1e6
    assert 200 < knee_rate < 250
    measured = []
    for rate in RATES:
        cfg = dataclasses.replace(KNEE_BASE, channel_rate_mtps=rate)
        r = _seqread(cfg, model, count=120)
        bw = float(r["bandwidth_mbps"]) * 1e6  # type: ignore[arg-type]
        assert bw == pytest.approx(min(die_bw, cfg.channels_bytes_per_s), rel=0.05)
        rep = r["report"]
        ch_util = rep["ch0"]["utilization"]  # type: ignore[index]
        die_util = rep["ch0"]["die0"]["utilization"]  # type: ignore[index]
        if rate < knee_rate:
            assert ch_util > 0.95 and die_util < 0.95
        else:
            assert die_util > 0.95 and ch_util < 0.95
        measured.append(bw)
    # below the knee bandwidth follows the channel rate; above it, it stays flat
    below = [bw / (8 * r * 1e6) for bw, r in zip(measured, RATES, strict=True) if r < knee_rate]
    above = [bw / die_bw for bw, r in zip(measured, RATES, strict=True) if r > knee_rate]
    assert min(below) > 0.95 and min(above) > 0.95
    assert max(measured[3:]) / min(measured[3:]) < 1.01
