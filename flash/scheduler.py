"""The transaction scheduler: how a device's pages become flash commands (MQSim's
``TSU_OutOfOrder`` and ``TSU_Priority_OutOfOrder``).

- **Multi-plane and die-interleaved forming.** The pages of one transaction that fall on
  one die go as few commands as its planes allow: pages on distinct planes share one
  multi-plane command (``FlashConfig.multiplane``). ``die_groups`` gives the per-die
  page and command counts a chunk-level model books; ``ops`` lists the commands
  themselves, round-robin over the dies, for the per-command model. A program that
  waits in a die's queue also absorbs pages of later transactions for its other planes
  (``flash.engine.dies.die_prog``), so sequential writes cut into chunks of fewer pages
  than a stripe still program every plane at once.
- **Read priority and suspend.** Reads queue ahead of programs and erases, and suspend
  the one running on their die (``suspend_rule``, ``flash.engine.dies.die_read``).
- **Chip lock** (``flash.compat = "mqsim"`` only). Stock MQSim gives a chip a new
  command only when all of its dies are idle, so the dies of a package never overlap
  transactions. The models then book a chip, not a die, as the lane (``lane_of``).

``Counters`` are the commands and bytes a device has issued. Pure: no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from flash.engine.chunks import (
    CELL,
    CH_FULL,
    COMMANDS,
    GEOMETRY,
    LANE_FULL,
    command_slot,
    group_dies,
)
from flash.engine.commands import form_commands
from flash.engine.dies import DieLanes, SuspendRule
from flash.engine.gaps import GapBank
from flash.phy import OnfiPhy

I64 = npt.NDArray[np.int64]


@dataclass(slots=True)
class Counters:
    """What one device has done, counted on the hot path."""

    host_pages_read: int = 0     # NAND pages read for the host
    gc_pages_read: int = 0
    pages_programmed: int = 0
    read_cmds: int = 0
    program_cmds: int = 0
    erase_cmds: int = 0
    channel_bytes: int = 0
    unmapped_reads: int = 0

    def programmed(self, pages: int, cmds: int, page_bytes: int) -> None:
        """``pages`` host pages of ``page_bytes`` programmed by ``cmds`` commands."""
        self.pages_programmed += pages
        self.channel_bytes += pages * page_bytes
        self.program_cmds += cmds


def suspend_rule(cfg: FlashConfig) -> SuspendRule | None:
    """The device's suspend rule, or None when it suspends nothing."""
    if not (cfg.program_suspend or cfg.erase_suspend):
        return None
    return SuspendRule(program=cfg.program_suspend, erase=cfg.erase_suspend,
                       t_program=cfg.t_suspend_program, t_erase=cfg.t_suspend_erase,
                       min_remaining=cfg.suspend_min_remaining)


class CommandFormer:
    """Groups a transaction's physical pages into commands for ``cfg``'s geometry."""

    __slots__ = ("ppp", "P", "multi", "dpc", "lanes_per_channel", "chip_lock", "dies_per_chip",
                 "lanes", "dies", "planes", "devices", "pages_per_device")

    def __init__(self, cfg: FlashConfig, devices: int = 1) -> None:
        """``devices`` > 1: the pages, dies, lanes and channels of that many devices
        numbered one after the other (device k's die i is k x dies + i), for a timing
        model that books them in one array."""
        self.ppp = cfg.blocks_per_plane * cfg.pages_per_block
        self.P = cfg.planes_per_die
        self.multi = cfg.multiplane and self.P > 1
        self.dpc = cfg.dies_per_channel
        self.chip_lock = cfg.compat == "mqsim"
        self.dies_per_chip = cfg.dies_per_chip
        #: die lanes: one per die, or one per chip under the chip lock
        self.lanes = devices * (cfg.dies // cfg.dies_per_chip if self.chip_lock else cfg.dies)
        self.lanes_per_channel = self.lanes // (devices * cfg.channels)
        self.devices = devices
        self.dies = devices * cfg.dies
        self.planes = self.dies * self.P
        self.pages_per_device = cfg.dies * self.P * self.ppp

    def die_of(self, ppn: int) -> int:
        return ppn // self.ppp // self.P

    def lane_of(self, die: int) -> int:
        """The lane a die's commands are booked on (its chip under the chip lock)."""
        return die // self.dies_per_chip if self.chip_lock else die

    def die_groups(self, ppns: I64, weights: I64 | None = None
                   ) -> tuple[I64, I64, I64, I64, I64, I64]:
        """Dies touched (sorted), the sum of ``weights`` over each die's pages (pages
        when None), pages and commands per die, planes per command, and each die's
        plane bit mask (same-die pages on distinct planes share a multi-plane command).
        Counted in one compiled pass (``group_dies``) over the planes the pages span, or
        over the pages sorted by plane where they span many more planes than they
        number: a chunk of 128 pages costs about the same on one device's 512 planes as
        on 16 devices' 8192."""
        if weights is None:
            return group_dies(ppns, ppns, False, self.ppp, self.P, self.multi)
        return group_dies(ppns, weights, True, self.ppp, self.P, self.multi)

    def ops(self, ppns: list[int]) -> list[tuple[int, list[int]]]:
        """Commands as (die, page indices), at most one page per plane each, ordered
        round-robin over dies in order of first appearance (``flash.engine.commands.
        form_commands``, the one implementation of the rule; one page is one command)."""
        if len(ppns) == 1:
            return [(ppns[0] // self.ppp // self.P, [0])]
        dies, first, order = form_commands(np.array(ppns, dtype=np.int64), self.ppp,
                                           self.P, self.multi)
        idx = order.tolist()
        bounds = first.tolist()
        return [(die, idx[bounds[k]:bounds[k + 1]]) for k, die in enumerate(dies.tolist())]


class TimingBase:
    """What both timing models hold: the device's geometry and cell timing, its PHY, the
    command former, the counters, and the die and channel lanes.

    With ``shared``, the device is number ``device`` of several whose lanes are one
    array (``former`` numbers their dies one device after the other, and ``shared`` owns
    the lanes): the model takes device-local page numbers and books on its own range of
    lanes and channels, and its counters are its own."""

    def __init__(self, cfg: FlashConfig, phy: OnfiPhy, former: CommandFormer,
                 counters: Counters, record: bool = False, shared: TimingBase | None = None,
                 device: int = 0) -> None:
        self.cfg = cfg
        self.phy = phy
        self.former = former
        self.c = counters
        self.device = device
        self.chip_lock = former.chip_lock
        if shared is None:
            self.dies = DieLanes("die", former.lanes, suspend_rule(cfg), record,
                                 cfg.planes_per_die)
            self.channels = GapBank("ch", former.lanes // former.lanes_per_channel, record)
        else:
            self.dies, self.channels = shared.dies, shared.channels
        self.page = cfg.page_size
        self.bits = cfg.bits_per_cell
        self.ppb = cfg.pages_per_block
        self.P = cfg.planes_per_die
        self.t_r_of = [cfg.t_r_of(i) for i in range(self.bits)]
        self.t_prog_of = [cfg.t_prog_of(i) for i in range(self.bits)]
        self.t_prog_slc = cfg.t_prog_slc
        self.convoy = cfg.compat == "mqsim"
        #: one-page reads a die overlaps (``flash.engine.dies.plane_read``): its planes
        #: with independent plane reads, none under MQSim's rules
        self.plane_reads = (self.P if cfg.independent_plane_reads
                            and not (self.convoy or former.chip_lock) else 1)
        #: Under MQSim's data-out convoy, per channel the windows in which a read's data
        #: waits for the channel: the PHY drains waiting data-outs before it takes a
        #: command, so no command starts inside one.
        self.waiting: GapBank | None = (
            shared.waiting if shared is not None
            else GapBank("wait", len(self.channels)) if self.convoy else None)
        #: this device's first page, lane and channel in the shared numbering
        n_lanes = former.lanes // former.devices
        self.ppn0 = device * former.pages_per_device
        self.lane0, self.lane1 = device * n_lanes, (device + 1) * n_lanes
        self.ch0, self.ch1 = device * cfg.channels, (device + 1) * cfg.channels
        #: Pages of one multi-plane program share their page offset (ONFI addresses one
        #: page per plane at one offset). Where writes land in the controller's write
        #: buffer first, the FTL places them when they flush, a superpage across the
        #: die's planes at a time, so any of a die's buffered pages can share a program;
        #: written through, or under MQSim's rules (static plane allocation by logical
        #: page), a page joins a program only at the same offset.
        self.same_offset = cfg.compat == "mqsim" or cfg.write_buffer_bytes == 0
        # The device's geometry, command times and cell timing as the booking kernels
        # take them (``flash.engine.chunks``: ``GEOMETRY``, ``COMMANDS``, ``CELL``).
        f = former
        self.geo = np.zeros(1, dtype=GEOMETRY)
        g = self.geo[0]
        for name, value in (
                ("ppp", f.ppp), ("planes", f.P), ("multi", f.multi),
                ("dies_per_lane", cfg.dies_per_chip if f.chip_lock else 1),
                ("lanes_per_channel", f.lanes_per_channel),
                ("lanes_per_device", self.lane1 - self.lane0), ("chip_lock", f.chip_lock),
                ("convoy", self.convoy), ("page", self.page), ("page_data", phy.page_data),
                ("ppb", self.ppb), ("bits", self.bits), ("t_r", int(cfg.t_r_mean)),
                ("t_prog", int(cfg.t_prog_mean)), ("same_offset", self.same_offset),
                ("plane_reads", self.plane_reads)):
            g[name] = value
        self.cmds = np.zeros(len(phy.rcmd), dtype=COMMANDS)
        self.cmds["rcmd"], self.cmds["rsetup"], self.cmds["pcmd"] = (
            phy.rcmd_a, phy.rsetup_a, phy.pcmd_a)
        self.cell = np.zeros(self.bits, dtype=CELL)
        self.cell["t_r"], self.cell["t_prog"] = self.t_r_of, self.t_prog_of
        #: the same records for programs in SLC mode (``flash.slc``): every page type's
        #: tPROG is ``t_prog_slc``
        self.geo_slc, self.cell_slc = self.geo.copy(), self.cell.copy()
        if cfg.t_prog_slc:
            self.geo_slc[0]["t_prog"] = cfg.t_prog_slc
            self.cell_slc["t_prog"] = cfg.t_prog_slc

    def grow(self, why: int, ppns: I64) -> None:
        """Room where a kernel stopped (``flash.engine.chunks``' ``CH_FULL``, ...), for
        pages ``ppns`` (in the lanes' numbering); the bookings are unchanged."""
        if why == CH_FULL:
            self.channels.grow()
        elif why == LANE_FULL:
            self.dies.make_room(np.unique(self.former.die_groups(ppns)[0]
                                          // int(self.geo[0]["dies_per_lane"])))
        else:
            assert self.waiting is not None
            self.waiting.grow()

    def start(self) -> None:
        """Nothing to start: a model books on demand (no standing process)."""

    def prune(self, now: int) -> None:
        """Forget the device's channel bookings that ended before ``now``, and its dies'
        queued ops that ended by then."""
        self.channels.prune(now, self.ch0, self.ch1)
        self.dies.prune(now, self.lane0, self.lane1)
        if self.waiting is not None:
            self.waiting.prune(now, self.ch0, self.ch1)

    def idle_from(self) -> int:
        """When the device's dies and channels are free again."""
        return max(int(self.dies.busy_until[self.lane0:self.lane1].max()),
                   int(self.channels.busy_until[self.ch0:self.ch1].max()))

    def lane_counts(self) -> tuple[dict[str, int], int]:
        """The device's suspends (programs, erases) and pages merged into waiting
        programs."""
        return self.dies.counts(self.lane0, self.lane1)

    def lane_reports(self, elapsed: int) -> dict[str, dict[str, Any]]:
        """Per channel of the device (``ch0``, ...) its report, with each of its die
        lanes' (``die0``, ...)."""
        lanes_per_channel = self.former.lanes_per_channel
        out: dict[str, dict[str, Any]] = {}
        for ch in range(self.ch1 - self.ch0):
            report: dict[str, Any] = dict(self.channels.report(self.ch0 + ch, elapsed))
            first_lane = self.lane0 + ch * lanes_per_channel
            for k in range(lanes_per_channel):
                report[f"die{k}"] = self.dies.report(first_lane + k, elapsed)
            out[f"ch{ch}"] = report
        return out

    def command_slot(self, ch: int, earliest: int, cmd: int) -> int:
        """Under MQSim's convoy: the earliest start >= ``earliest`` of ``cmd`` on channel
        ``ch`` with the channel idle and no read data waiting for it (the kernels' rule,
        ``flash.engine.chunks.command_slot``)."""
        assert self.waiting is not None
        iv, meta = self.channels.arrays()
        wiv, wmeta = self.waiting.arrays()
        return int(command_slot(iv, meta, wiv, wmeta, ch, earliest, cmd))

    def data_waits(self, ch: int, ready: int, start: int) -> None:
        """Under MQSim's convoy: read data ready at ``ready`` waits for channel ``ch``
        until its data-out starts at ``start``."""
        assert self.waiting is not None
        self.waiting.cover(ch, ready, start)
