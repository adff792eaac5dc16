"""Timing rules, probed as Ramulator's tests do: a command at its constraint minus one
clock is illegal, at the constraint legal."""

from __future__ import annotations

import pytest

from dram import PRESETS, DramConfig
from dram.checker import check_log
from dram.timing import Cmd, Command, earliest_issue

NAMES = sorted(PRESETS)


def _bank(cfg: DramConfig, bg: int, ba: int = 0) -> dict[str, int]:
    return {"rank": 0, "bank_group": bg, "bank": bg * cfg.banks_per_group + ba}


@pytest.mark.parametrize("name", NAMES)
def test_read_after_activate_waits_for_trcd(name: str) -> None:
    cfg = PRESETS[name]
    act = Command(0, Cmd.ACT, row=7, **_bank(cfg, 1))
    rd = Command(0, Cmd.RD, row=7, **_bank(cfg, 1))
    assert earliest_issue([act], rd, cfg) == cfg.t_rcd
    early = Command(cfg.t_rcd - cfg.tck, Cmd.RD, row=7, **_bank(cfg, 1))
    assert check_log(cfg, [act, early])
    assert not check_log(cfg, [act, Command(cfg.t_rcd, Cmd.RD, row=7, **_bank(cfg, 1))])


@pytest.mark.parametrize("name", NAMES)
def test_activate_to_activate_same_bank_waits_for_trc(name: str) -> None:
    cfg = PRESETS[name]
    b = _bank(cfg, 0)
    log = [Command(0, Cmd.ACT, row=1, **b), Command(cfg.t_ras, Cmd.PRE, **b)]
    assert earliest_issue(log, Command(0, Cmd.ACT, row=2, **b), cfg) == max(
        cfg.t_rc, cfg.t_ras + cfg.t_rp)


@pytest.mark.parametrize("name", NAMES)
def test_fifth_activate_waits_for_the_four_activate_window(name: str) -> None:
    cfg = PRESETS[name]
    log = []
    t = 0
    for i in range(4):
        log.append(Command(t, Cmd.ACT, row=0, **_bank(cfg, i % cfg.bank_groups, i // 4)))
        t += cfg.t_rrd_l
    nxt = Command(0, Cmd.ACT, row=0, **_bank(cfg, 0, 1 % cfg.banks_per_group))
    # The first ACT (bank group 0) bounds by tFAW and tRRD_L, the last (group 3) by tRRD_S.
    want = max(cfg.t_faw, cfg.t_rrd_l, log[-1].time + cfg.t_rrd_s)
    assert earliest_issue(log, nxt, cfg) == -(-want // cfg.tck) * cfg.tck


@pytest.mark.parametrize("name", NAMES)
def test_read_after_write_same_bank_group_waits_for_twtr_l(name: str) -> None:
    cfg = PRESETS[name]
    b = _bank(cfg, 0)
    log = [Command(0, Cmd.ACT, row=3, **b), Command(cfg.t_rcd_wr, Cmd.WR, row=3, **b)]
    got = earliest_issue(log, Command(0, Cmd.RD, row=3, **b), cfg)
    assert got == cfg.t_rcd_wr + cfg.t_cwl + cfg.t_burst + cfg.t_wtr_l


@pytest.mark.parametrize("name", NAMES)
def test_activate_after_all_bank_refresh_waits_for_trfc(name: str) -> None:
    cfg = PRESETS[name]
    b = _bank(cfg, 2)
    got = earliest_issue([Command(0, Cmd.REF, **b)], Command(0, Cmd.ACT, row=0, **b), cfg)
    assert got == cfg.t_rfc


def test_write_to_read_turnaround_on_the_data_bus() -> None:
    cfg = PRESETS["hbm2"]
    b0, b1 = _bank(cfg, 0), _bank(cfg, 1)
    log = [Command(0, Cmd.ACT, row=0, **b0), Command(4000, Cmd.ACT, row=0, **b1),
           Command(20_000, Cmd.RD, row=0, **b0)]
    # RD -> WR: CL + BL + t_rtw - CWL = 14 + 2 + 2 - 4 ns.
    assert earliest_issue(log, Command(0, Cmd.WR, row=0, **b1), cfg) == 20_000 + 14_000


def test_checker_flags_state_errors() -> None:
    cfg = PRESETS["hbm2"]
    b = _bank(cfg, 0)
    bad = check_log(cfg, [Command(0, Cmd.ACT, row=1, **b), Command(100_000, Cmd.RD, row=2, **b),
                          Command(200_000, Cmd.REF, **b)])
    reasons = " ".join(v.reason for v in bad)
    assert "column access to row 2" in reasons and "REF with a bank open" in reasons
