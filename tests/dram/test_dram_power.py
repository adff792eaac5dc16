"""IDD-based energy (times in ns), the pJ/bit override, and HBM2's energy per bit (against
O'Connor et al. and DRAMsim3: checks of ``tmhw.validate.energy``, run by
tests/test_validate.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dram import PRESETS
from dram.bench import run_bench
from dram.config import HBM2
from dram.power import energies


def test_idd_energies_of_hbm2_use_nanoseconds() -> None:
    e = energies(HBM2)
    # VDD (IDD0 tRC - (IDD3N tRAS + IDD2N tRP)) = 1.2 (65*48 - (55*34 + 40*14)) pJ
    assert e.act_pj == pytest.approx(1.2 * (65 * 48 - (55 * 34 + 40 * 14)))
    # VDD (IDD4R - IDD3N) t_burst + interface energy of 512 bits
    assert e.rd_pj == pytest.approx(1.2 * (390 - 55) * 2 + HBM2.io_pj_per_bit * 512)
    assert e.wr_pj == pytest.approx(1.2 * (500 - 55) * 2 + HBM2.io_pj_per_bit * 512)
    assert e.ref_pj == pytest.approx(1.2 * (250 - 55) * 260)
    assert e.active_standby_mw == pytest.approx(1.2 * 55)
    assert e.precharged_standby_mw == pytest.approx(1.2 * 40)


def test_energy_scales_with_time_not_cycles() -> None:
    # The same currents at half the clock period, with the same times in ns, give the same
    # per-action energies: DRAMsim3's mA x V x cycles would halve them (its issue 18).
    fast_clock = replace(HBM2, tck=500, t_ccd_s=1000, t_rtw=2000, t_rtrs=1000, data_rate=4)
    a, b = energies(HBM2), energies(fast_clock)
    assert (a.act_pj, a.ref_pj) == pytest.approx((b.act_pj, b.ref_pj))


def test_ddr4_scales_idd_by_the_devices_of_a_rank() -> None:
    ddr4 = PRESETS["ddr4-3200"]
    one = replace(ddr4, devices_per_rank=1)
    assert energies(ddr4).act_pj == pytest.approx(8 * energies(one).act_pj)


def test_idd_terms_alone_give_hbm2_about_2_pj_per_bit() -> None:
    # The interface term is an estimate; what the IDDs give is pinned separately.
    cfg = replace(HBM2, channels=1, io_pj_per_bit=0.0)
    res = run_bench(cfg, "stream", 4096, 400, "detailed")
    assert 1.8 <= res["energy_pj_per_bit"] <= 2.2, res["energy_pj_per_bit"]


@pytest.mark.parametrize("model", ["detailed", "fast"])
def test_pj_per_bit_override_is_the_whole_energy(model: str) -> None:
    cfg = replace(PRESETS["hbm3"], channels=1)
    res = run_bench(cfg, "stream", 4096, 100, model)
    assert res["energy_pj_per_bit"] == pytest.approx(cfg.pj_per_bit)


@pytest.mark.parametrize("model", ["detailed", "fast"])
def test_energy_is_non_negative_and_additive(model: str) -> None:
    from dram.bench import run_requests, workload
    cfg = replace(PRESETS["ddr4-3200"])
    target, _, _ = run_requests(cfg, workload(cfg, "mix", 4096, 60), model)
    assert target.energy is not None
    by = target.energy.by_action
    assert all(v >= 0 for v in by.values())
    assert sum(by.values()) == pytest.approx(target.energy.total_pj)
    assert {"act", "rd", "wr", "ref", "background"} <= {k for k, v in by.items() if v > 0}
