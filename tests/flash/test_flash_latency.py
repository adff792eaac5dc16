"""Unloaded latency of one page, from each preset's datasheet numbers.

Read: read command (tCS + 6 tWC + tWB + tRR) + tR + data-out (tRPRE + tDQSRE + page at
the channel rate). Program: program command (tCS + 6 tWC + tADL + tWPST + tWPSTH + tWB)
+ data-in + tPROG. The host link is faster than one channel in every preset, and a page
crosses it cut-through, so it adds nothing on an idle device.
"""

from __future__ import annotations

import dataclasses

import pytest
import simpy
from flash_devices import plain

from flash import PRESETS, FlashTarget
from flash.host import HostInterface
from tmhw.sim import Op, Transfer
from tmhw.validate.flash import runs as mqsim_runs


def _read_formula(name: str) -> int:
    c = PRESETS[name]
    o = c.onfi
    cmd = o.t_cs + 6 * o.t_wc + o.t_wb + o.t_rr
    data = c.page_size * 8 * 10**6 / (c.channel_width_bits * c.channel_rate_mtps)
    return int(cmd + c.t_r + o.t_rpre + o.t_dqsre + data + 0.999)


def _program_formula(name: str) -> int:
    c = PRESETS[name]
    o = c.onfi
    cmd = o.t_cs + 6 * o.t_wc + o.t_adl + o.t_wpst + o.t_wpsth + o.t_wb
    data = c.page_size * 8 * 10**6 / (c.channel_width_bits * c.channel_rate_mtps)
    # an unloaded device's SLC cache has room: the program is in SLC mode
    return int(cmd + data + (c.t_prog_slc if c.slc_cache_bytes else c.t_prog) + 0.999)


@pytest.mark.parametrize("model", ["fast", "detailed"])
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_unloaded_page_read_is_command_plus_tr_plus_transfer(name: str, model: str) -> None:
    cfg = PRESETS[name]
    t = FlashTarget(simpy.Environment(), "flash", None, cfg, model=model)
    start = 5_000_000
    end = t.transport(Transfer(Op.READ, 7 * cfg.page_size, cfg.page_size), start)
    assert end - start == _read_formula(name)


@pytest.mark.parametrize("model", ["fast", "detailed"])
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_unloaded_page_program_is_command_plus_transfer_plus_tprog(name: str,
                                                                  model: str) -> None:
    # written through: acknowledged when programmed
    cfg = dataclasses.replace(PRESETS[name], write_buffer_bytes=0)
    t = FlashTarget(simpy.Environment(), "flash", None, cfg, model=model)
    start = 5_000_000
    end = t.transport(Transfer(Op.WRITE, 3 * cfg.page_size, cfg.page_size), start)
    assert end - start == _program_formula(name)


@pytest.mark.parametrize("model", ["fast", "detailed"])
@pytest.mark.parametrize("name", ["990pro", "pm1743", "slc-ull"])
def test_a_buffered_write_completes_when_its_data_has_crossed_the_link(name: str,
                                                                        model: str) -> None:
    cfg = PRESETS[name]
    assert cfg.write_buffer_bytes > 0
    t = FlashTarget(simpy.Environment(), "flash", None, cfg, model=model)
    start = 5_000_000
    end = t.transport(Transfer(Op.WRITE, 3 * cfg.page_size, cfg.page_size), start)
    assert end - start == HostInterface(cfg).write_ps(cfg.page_size)


def test_read_after_read_on_the_same_die_waits_for_tr() -> None:
    cfg = plain("990pro")
    t = FlashTarget(simpy.Environment(), "flash", None, cfg)
    # logical pages 0 and cfg.planes share plane 0 of die 0 (static striping)
    a = t.transport(Transfer(Op.READ, 0, cfg.page_size), 0)
    b = t.transport(Transfer(Op.READ, cfg.planes * cfg.page_size, cfg.page_size), 0)
    assert b - a == cfg.t_r


def test_reads_on_two_channels_proceed_in_parallel() -> None:
    cfg = plain("990pro")
    t = FlashTarget(simpy.Environment(), "flash", None, cfg)
    a = t.transport(Transfer(Op.READ, 0, cfg.page_size), 0)
    b = t.transport(Transfer(Op.READ, cfg.page_size, cfg.page_size), 0)  # channel 1
    assert a == b == cfg.unloaded_read_ps()


def test_trim_takes_no_flash_time_and_unmaps() -> None:
    cfg = PRESETS["990pro"]
    t = FlashTarget(simpy.Environment(), "flash", None, cfg, precondition=0.5)
    assert t.transport(Transfer(Op.TRIM, 0, 4 * cfg.page_size), 123) == 123
    assert t.ftl.lookup1(0) == -1 and t.ftl.lookup1(4) >= 0
    assert t.report()["trimmed_pages"] == 4


# MQSim 7ec40e3 on the mqsim-default device, QD 1, 8 KiB random requests; the figures,
# configuration and command are in tmhw/validate/data/mqsim.toml. MQSim reports whole us.
MQSIM_QD1_US = {Op.READ: mqsim_runs()["rr_qd1"]["stock_us"],
                Op.WRITE: mqsim_runs()["rw_qd1"]["stock_us"]}


@pytest.mark.parametrize("op", [Op.READ, Op.WRITE])
def test_unloaded_latency_matches_mqsim(op: Op) -> None:
    cfg = PRESETS["mqsim-default"]
    t = FlashTarget(simpy.Environment(), "flash", None, cfg)
    ours = t.transport(Transfer(op, 11 * cfg.page_size, cfg.page_size), 0)
    # MQSim moves the page over PCIe after (read) or before (write) the flash, store and
    # forward; tmhw streams it through (cut-through), so add that transfer back.
    assert not cfg.pcie_overheads  # MQSim's link: data at the lane rate alone
    pcie = cfg.page_size / cfg.host_read_bytes_per_s * 1e12
    assert round((ours + pcie) / 1e6) == MQSIM_QD1_US[op]
