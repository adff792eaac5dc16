"""MQSim's data-out convoy decided when the channel frees (``flash.convoy``), on three
8 KiB reads of the mqsim-default device issued together at time 0: A and B on die 0
(chip 0 of channel 0, plane 0), C on chip 1 of the same channel.

With c the read command (tCS + 6 tWC + tWB + tRR), R = tR, x a page's data-out (tRPRE +
tDQSRE + 8 KiB at the channel rate) and L the page on the host link:

- MQSim's rules (``compat = "mqsim"``, ``FlashTarget.request``): A's command, then C's;
  A's data leaves at c + R. Chip 0 is locked until A's data is out (c + R + x), and by
  then C's data has waited since 2c + R: it leaves first, and B's command follows it at
  c + R + 2x. Each request crosses the link once its data is out. A = c + R + x + L,
  C = c + R + 2x + L, B = 2c + 2R + 3x + L.
- Booked when each request arrives (``transport``, the loosely timed path of the same
  mode), B's command goes at c + R + x, before C's data: B = 2c + 2R + 2x + L.
- ONFI rules (the default): die 0 starts B's tR when A's data enters its cache register
  (c + R), and no command waits for a data-out. C's data follows A's on the channel
  (the model books a read's command cycles on the channel next to its data-out, so
  C's span there is c + x), and the link is cut-through: A = c + R + x,
  C = 2c + R + 2x, B = c + 2R + x.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

import pytest
import simpy

from flash import PRESETS, FlashConfig, FlashTarget
from flash.host import HostInterface
from tmhw.sim import Op, Transfer
from tmhw.sim.units import NS

LPNS = {"A": 0, "B": 128, "C": 8}


def _device(compat: str) -> tuple[FlashConfig, FlashTarget]:
    cfg = dataclasses.replace(PRESETS["mqsim-default"], compat=compat)
    t = FlashTarget(simpy.Environment(), "flash", None, cfg)
    ppp = cfg.blocks_per_plane * cfg.pages_per_block
    where = {}  # never written: each page where sequential preconditioning puts it
    for k, lpn in LPNS.items():
        plane = t.ftl.static_ppn1(lpn) // ppp
        die = plane // cfg.planes_per_die
        where[k] = (plane % cfg.planes_per_die, die, die // cfg.dies_per_chip,
                    die // cfg.dies_per_channel)
    # (plane, die, chip, channel)
    assert where == {"A": (0, 0, 0, 0), "B": (0, 0, 0, 0), "C": (0, 2, 1, 0)}
    return cfg, t


def _times(cfg: FlashConfig) -> tuple[int, int, int, int]:
    """c, R, x and L of the module docstring, in ps."""
    page = cfg.page_size
    if cfg.compat == "mqsim":  # MQSim's whole-ns transfer cycle
        data = page * 8 // cfg.channel_width_bits * (1000 // cfg.channel_rate_mtps) * NS
    else:
        data = cfg.data_ps(page)
    return (cfg.read_command_ps(1), cfg.t_r, cfg.read_setup_ps(1) + data,
            HostInterface(cfg).read_ps(page))


def _by_events(t: FlashTarget) -> dict[str, int]:
    env = t.env
    ends: dict[str, int] = {}

    def read(name: str) -> Generator[simpy.Event, Any, None]:
        ends[name] = yield t.request(Transfer(Op.READ, LPNS[name] * t.cfg.page_size,
                                              t.cfg.page_size))

    for name in LPNS:
        env.process(read(name))
    env.run()
    return ends


def test_a_ready_data_out_goes_before_a_waiting_command_under_mqsims_rules() -> None:
    cfg, t = _device("mqsim")
    c, R, x, L = _times(cfg)
    assert _by_events(t) == {"A": c + R + x + L, "C": c + R + 2 * x + L,
                             "B": 2 * c + 2 * R + 3 * x + L}


def test_booked_on_arrival_the_waiting_command_goes_first() -> None:
    cfg, t = _device("mqsim")
    c, R, x, L = _times(cfg)
    ends = {k: t.transport(Transfer(Op.READ, lpn * cfg.page_size, cfg.page_size), 0)
            for k, lpn in LPNS.items()}
    assert ends["B"] == 2 * c + 2 * R + 2 * x + L


@pytest.mark.parametrize("events", [True, False], ids=["request", "transport"])
def test_under_onfi_rules_no_command_waits_for_a_data_out(events: bool) -> None:
    cfg, t = _device("onfi")
    c, R, x, _ = _times(cfg)
    ends = (_by_events(t) if events else
            {k: t.transport(Transfer(Op.READ, lpn * cfg.page_size, cfg.page_size), 0)
             for k, lpn in LPNS.items()})
    assert ends == {"A": c + R + x, "C": 2 * c + R + 2 * x, "B": c + 2 * R + x}


def test_a_read_over_two_devices_completes_when_both_halves_have() -> None:
    """Striped over two devices a page each, under MQSim's rules: each device reads its
    page and sends it over its own link, so the read completes at c + R + x + L."""
    cfg = dataclasses.replace(PRESETS["mqsim-default"], compat="mqsim", devices=2,
                              stripe_bytes=PRESETS["mqsim-default"].page_size)
    t = FlashTarget(simpy.Environment(), "flash", None, cfg)
    c, R, x, L = _times(cfg)
    ends: list[int] = []

    def read() -> Generator[simpy.Event, Any, None]:
        ends.append((yield t.request(Transfer(Op.READ, 0, 2 * cfg.page_size))))

    t.env.process(read())
    t.env.run()
    assert ends == [c + R + x + L]
    assert [d.c.host_pages_read for d in t.devices] == [1, 1]
