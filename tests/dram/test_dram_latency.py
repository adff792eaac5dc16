"""Unloaded read latency, from each preset's own numbers: a row miss costs
(tRP + tRCD + tCL) plus the burst and the controller's delay, a row hit tCL plus the same,
a precharged bank tRCD + tCL. Both timing models."""

from __future__ import annotations

from dataclasses import replace

import pytest
import simpy

from dram import PRESETS, DramConfig, DramTarget
from dram.mapping import AddressMap
from tmhw.sim.transfer import Op, Transfer
from tmhw.sim.units import US

NAMES = sorted(PRESETS)


def _same_bank_other_row(cfg: DramConfig) -> int:
    """An address in the bank of address 0, on another row."""
    am = AddressMap(cfg)
    s, _ = am.fields["Ro"]
    return 1 << (s + am.burst_shift)


def _latencies(cfg: DramConfig, model: str) -> tuple[int, int, int]:
    """(first access to a precharged bank, row hit, row miss) read latencies, ps."""
    hbm = DramTarget(simpy.Environment(), "hbm", None, cfg, model=model)
    n = cfg.burst_bytes
    other = _same_bank_other_row(cfg)
    assert AddressMap(cfg).decode(other)[:2] == AddressMap(cfg).decode(0)[:2]
    t0 = 0
    closed = hbm.transport(Transfer(Op.READ, 0, n), t0) - t0
    # Requests arrive on clock edges (commands issue on them).
    t1 = -(-2 * US // cfg.tck) * cfg.tck
    hit = hbm.transport(Transfer(Op.READ, 0, n), t1) - t1
    t2 = 2 * t1
    miss = hbm.transport(Transfer(Op.READ, other, n), t2) - t2
    return closed, hit, miss


@pytest.mark.parametrize("model", ["detailed", "fast"])
@pytest.mark.parametrize("name", NAMES)
def test_unloaded_read_latency_is_trp_trcd_tcl_plus_burst(name: str, model: str) -> None:
    # Refresh off: a refresh between the accesses would close the row. The delay is whole
    # clocks: commands issue on clock edges.
    base = PRESETS[name]
    cfg = replace(base, refresh="off", controller_delay=8 * base.tck)
    closed, hit, miss = _latencies(cfg, model)
    extra = cfg.controller_delay + cfg.t_burst
    assert closed == cfg.t_rcd + cfg.t_cl + extra
    assert hit == cfg.t_cl + extra
    assert miss == cfg.t_rp + cfg.t_rcd + cfg.t_cl + extra


@pytest.mark.parametrize("name", ["hbm2", "hbm3", "ddr4-3200"])
def test_closed_page_makes_every_access_a_precharged_bank_access(name: str) -> None:
    cfg = replace(PRESETS[name], refresh="off", page_policy="closed")
    closed, hit, miss = _latencies(cfg, "detailed")
    assert closed == hit == miss == cfg.t_rcd + cfg.t_cl + cfg.t_burst
