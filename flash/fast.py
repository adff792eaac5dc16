"""The fast flash timing model: one booking per touched die lane and one per touched
channel for a whole transaction, from per-die page and command counts.

Timing of a transaction's pages (``flash.phy`` gives the command and data times):

- read: per die, the read commands and ``ops x tR`` in the die (multi-plane commands read
  every plane at once; the cache register lets tR of the next command overlap the
  data-out of the last), then the dies' data-outs as one span on their channel, placed in
  the channel's earliest idle gap that lets each die's data leave once read. The die
  holds its last command's data in its cache register until that data-out starts, and
  starts nothing new before (one page per plane in the register, no more).
- program: the channel carries command and data-in for the dies of the chunk, each die
  programs once its first command's data is in (``ops x tPROG``); a page that joins a
  program still waiting in its die's queue costs no die time (``flash.engine.dies.die_prog``).
- garbage collection: a block's relocation (per valid page tR + tPROG, with the data
  crossing the channel twice unless copyback) and its erase, booked as die work; in the
  background once a plane falls under the soft threshold.

Reads take priority over programs and suspend them (``flash.engine.dies``). Under
``flash.compat = "mqsim"`` the lanes are chips (MQSim's chip lock: the dies of a chip
work on one transaction at a time, in parallel, and a queued program only absorbs pages
of its own die), a read command needs idle channel time, so it waits while the channel
drains data-outs (MQSim's data-out convoy), and a die has no cache read: it is busy
until its data is out. Booked when its request arrives, a command cannot be pushed back
by the data-out of a read that arrives later, as MQSim's PHY does: callers that can wait
on an event (``FlashTarget.request``, the flash bench) have reads arbitrated when the
channel frees instead (``flash.convoy``).

Several devices striped together (``FastArray``) keep their dies and channels in one
array, device by device: a transfer's pages on every device it touches are read or
programmed in one call, each device from its own start time and with its own ends and
counters. Devices share no lane, so this books what a call per device would.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from flash.engine.chunks import program_chunk, program_page, read_chunk, read_page
from flash.ftl import GcJob
from flash.phy import OnfiPhy
from flash.scheduler import CommandFormer, Counters, TimingBase

I64 = npt.NDArray[np.int64]


class FastModel(TimingBase):
    """Chunk-level timing of one device (module docstring)."""

    def __init__(self, cfg: FlashConfig, phy: OnfiPhy, former: CommandFormer,
                 counters: Counters, record: bool = False, shared: FastModel | None = None,
                 device: int = 0) -> None:
        super().__init__(cfg, phy, former, counters, record, shared, device)
        self.t_r = int(cfg.t_r_mean)
        self.t_prog = int(cfg.t_prog_mean)
        self.chip_lock = former.chip_lock
        self.dpchip = cfg.dies_per_chip
        self.die0 = device * cfg.dies
        self.device = device
        self.lanes_per_device = self.lane1 - self.lane0
        #: the ONFI rules on die lanes, spans not recorded: a chunk's or a page's read
        #: or program is one compiled call
        self.compiled = not (self.convoy or self.chip_lock) and self.dies.spans is None
        f = self.former
        self._geo = np.array([f.ppp, f.P, f.multi, f.lanes_per_channel,
                              self.lanes_per_device, self.t_r, phy.page_data, self.page],
                             dtype=np.int64)
        self._res = np.zeros((3, f.devices), dtype=np.int64)
        #: and for programs: tPROG, pages per block, whether a multi-plane program's
        #: pages share their offset
        self._pgeo = np.array([self.t_prog, self.ppb, self.same_offset], dtype=np.int64)

    # -- lanes -------------------------------------------------------------------------
    def _lanes(self, udies: I64, *vals: I64) -> tuple[I64, I64 | None, list[I64]]:
        """Die values onto lanes: the dies themselves, or under the chip lock their
        chips, taking the largest value of a chip's dies (they work in parallel). Also
        each die's lane index under the chip lock (None otherwise)."""
        if not self.chip_lock:
            return udies, None, list(vals)
        uc, inv = np.unique(udies // self.dpchip, return_inverse=True)
        out = []
        for v in vals:
            m = np.zeros(uc.size, dtype=np.int64)
            np.maximum.at(m, inv, v)
            out.append(m)
        return uc, inv, out

    @staticmethod
    def _lane_sum(inv: I64, v: I64) -> I64:
        """Sum of die values per chip lane (``inv`` from ``_lanes``)."""
        out: I64 = np.bincount(inv, weights=v).astype(np.int64)
        return out

    # -- reads -------------------------------------------------------------------------
    def read1(self, ppn: int, nbytes: int, earliest: int) -> tuple[int, int]:
        """One page: (start of its data-out, end of it)."""
        phy = self.phy
        ppn += self.ppn0
        die = self.former.die_of(ppn)
        t_r = self.t_r_of[(ppn % self.ppb) % self.bits]
        cmd = phy.rcmd[1]
        x = phy.rsetup[1] + (phy.page_data if nbytes == self.page else phy.data_ps(nbytes))
        self.c.read_cmds += 1
        lane = self.former.lane_of(die)
        ch = die // self.former.dpc
        if self.compiled:
            iv, meta = self.channels.arrays()
            c_end = read_page(self.dies.state, iv, meta, lane, ch, earliest, cmd, t_r, x)
            if c_end < 0:  # the channel's row is full
                self.channels.grow()
                iv, meta = self.channels.arrays()
                c_end = read_page(self.dies.state, iv, meta, lane, ch, earliest, cmd, t_r,
                                   x)
            c_end = int(c_end)  # (a numpy integer where the kernels run uncompiled)
            return c_end - x, c_end
        arrive = earliest + cmd
        if self.convoy:  # the command needs idle channel time, between drains
            earliest = self.command_slot(ch, max(earliest, self.dies.read_free(lane)), cmd)
        d_end = self.dies.read1(lane, earliest + cmd, t_r,
                                1 << (die % self.dpchip) if self.chip_lock else 0, arrive)
        c_end = self.channels.reserve1(ch, d_end - cmd, cmd + x)
        if self.convoy:
            self.data_waits(ch, d_end, c_end - x)
        # cache read frees the die as its data starts out; MQSim's chip waits for the end
        self.dies.hold1(lane, c_end if self.convoy else c_end - x)
        return c_end - x, c_end

    def read(self, ppns: I64, nb: I64, earliest: int) -> tuple[int, int]:
        """Pages ``ppns`` with ``nb`` bytes wanted of each: (start of the first data-out,
        end of the last)."""
        if self.ppn0:
            ppns = ppns + self.ppn0
        if self.compiled:
            cmds, first, last = self.read_compiled(ppns, nb, earliest)[:, self.device].tolist()
            self.c.read_cmds += cmds
            return first, last
        _, ops_d, _, c_start, c_end = self.read_lanes(ppns, nb, earliest)
        self.c.read_cmds += int(ops_d.sum())
        return int(c_start.min()), int(c_end.max())

    def read_lanes(self, ppns: I64, nb: I64, earliest: int | I64
                   ) -> tuple[I64, I64, I64, I64, I64]:
        """``read`` of pages in the shared numbering, from ``earliest`` (one time, or
        one per device): the dies touched and their read commands, the channels and
        the start and end of each one's span."""
        phy = self.phy
        udies, bytes_d, _pages_d, ops_d, kp, _ = self.former.die_groups(ppns, nb)
        t_r = self.t_r
        cmd = phy.rcmd_a[kp]
        # one command's data-out: setup plus its share of the die's bytes
        x_op = phy.rsetup_a[kp] + bytes_d * phy.page_data // (self.page * ops_d)
        lanes, chip_of, (ops_l, cmd_l, x_l, busy_l) = self._lanes(
            udies, ops_d, cmd, x_op, ops_d * (cmd + x_op))
        if chip_of is not None:  # the chip's data-outs all cross its channel
            busy_l = self._lane_sum(chip_of, ops_d * (cmd + x_op))
        dies = self.dies
        uch, starts, gidx = self.former.channel_groups(lanes)
        if not isinstance(earliest, int):  # per device: per lane
            earliest = earliest[lanes // self.lanes_per_device]
        arrive = earliest + cmd_l
        if self.convoy:  # a command needs idle channel time, between drains
            issue = np.array([self.command_slot(c, max(e, dies.read_free(ln)), k) + k
                              for c, ln, k, e in zip(
                                  uch[gidx].tolist(), lanes.tolist(), cmd_l.tolist(),
                                  np.broadcast_to(earliest, lanes.shape).tolist(),
                                  strict=True)],
                             dtype=np.int64)
        else:
            issue = arrive
        masks = None
        if chip_of is not None:  # the dies each chip's read uses
            masks = self._lane_sum(chip_of, 1 << (udies % self.dpchip))
        d_end = dies.read_many(lanes, issue, ops_l * t_r, masks, arrive)
        busy_c = np.add.reduceat(busy_l, starts)
        ready = d_end - (ops_l - 1) * t_r - cmd_l
        need = d_end + x_l
        c_earliest = np.maximum(np.minimum.reduceat(ready, starts),
                                np.maximum.reduceat(need, starts) - busy_c)
        c_end = self.channels.reserve(uch, c_earliest, busy_c)
        c_start = c_end - busy_c
        # each lane's data leaves in lane order within its channel's span: the lane
        # holds its last command's data until that data-out starts (cache read), or
        # under MQSim's rules until it ends
        before = np.cumsum(busy_l) - busy_l
        before -= before[starts][gidx]
        out_end = c_start[gidx] + before + busy_l
        free = out_end if self.convoy else out_end - x_l
        dies.hold_many(lanes, free)
        if self.convoy:  # each lane's last data waits from its read's end to its turn
            for c, r, s in zip(uch[gidx].tolist(), d_end.tolist(), (out_end - x_l).tolist(),
                               strict=True):
                self.data_waits(c, r, s)
        return udies, ops_d, uch, c_start, c_end

    def read_compiled(self, ppns: I64, nb: I64, earliest: int | I64) -> I64:
        """``read_lanes`` under the ONFI rules on die lanes, in one compiled call
        (``read_chunk``; another after each growth of the channels' rows): per device
        of the lanes' array, its read commands, the start of its first data-out and the
        end of its last (-1: no page there). The result is overwritten by the next
        call."""
        per_dev = not isinstance(earliest, int)
        e = _times(earliest)
        phy = self.phy
        res = self._res
        while True:
            iv, meta = self.channels.arrays()
            if not read_chunk(ppns, nb, e, per_dev, self._geo, phy.rcmd_a, phy.rsetup_a,
                               self.dies.state, iv, meta, res):
                return res
            self.channels.grow()

    # -- programs ----------------------------------------------------------------------
    def program1(self, ppn: int, first_in: int, l_end: int) -> int:
        """One page whose data crosses the host link in [first_in, l_end]."""
        phy = self.phy
        ppn += self.ppn0
        plane = ppn // self.former.ppp
        die = plane // self.P
        busy = phy.pcmd[1] + phy.page_data
        lane = self.former.lane_of(die)
        bit = plane % self.P + (die % self.dpchip) * self.P * self.chip_lock
        mask = (1 << bit) if self.former.multi else 0
        self.c.pages_programmed += 1
        self.c.channel_bytes += self.page
        if self.compiled:
            t_prog = self.t_prog_of[(ppn % self.ppb) % self.bits]
            page = ppn % self.ppb if self.same_offset else -1
            while True:
                iv, meta = self.channels.arrays()
                end = program_page(self.dies.state, iv, meta, lane,
                                    die // self.former.dpc, max(first_in, l_end - busy),
                                    busy, t_prog, mask, page)
                if end >= 0:
                    break
                if end == -1:
                    self.channels.grow()
                else:
                    self.dies.make_room(np.array([lane], dtype=np.int64))
            if not end & 1:  # a command of its own, not joined to a waiting one
                self.c.program_cmds += 1
            return int(end >> 1)
        c_end = self.channels.reserve1(die // self.former.dpc, max(first_in, l_end - busy),
                                       busy)
        merged = self.dies.merged_on(lane)
        end = self.dies.prog1(lane, c_end, self.t_prog_of[(ppn % self.ppb) % self.bits],
                              mask, ppn % self.ppb if self.same_offset else -1)
        if self.dies.merged_on(lane) == merged:  # a command of its own
            self.c.program_cmds += 1
        return end

    def program(self, ppns: I64, first_in: int, l_end: int) -> int:
        """Pages ``ppns`` whose data crosses the host link in [first_in, l_end]; the end
        of the last program."""
        n = int(ppns.size)
        if self.ppn0:
            ppns = ppns + self.ppn0
        c = self.c
        c.pages_programmed += n
        c.channel_bytes += n * self.page
        if self.compiled:
            cmds, _, last = self.program_compiled(
                ppns, first_in, l_end)[:, self.device].tolist()
            c.program_cmds += cmds
            return int(last)
        _, ops_d, _, ends, joined = self.program_lanes(ppns, first_in, l_end)
        c.program_cmds += int(ops_d.sum())
        if joined is not None:
            c.program_cmds -= int(np.count_nonzero(joined))
        return int(ends.max())

    def program_lanes(self, ppns: I64, first_in: int | I64, l_end: int | I64
                      ) -> tuple[I64, I64, I64, I64, npt.NDArray[np.bool_] | None]:
        """``program`` of pages in the shared numbering (``first_in`` and ``l_end``: one
        time, or one per device): the dies touched and their program commands, the
        lanes, each one's end, and which of them joined a waiting program (None: none
        did)."""
        phy = self.phy
        udies, _, pages_d, ops_d, kp, mask = self.former.die_groups(ppns)
        op_busy = phy.pcmd_a[kp] + pages_d * phy.page_data // ops_d
        if self.chip_lock:
            mask = mask << ((udies % self.dpchip) * self.P)
        lanes, chip_of, (ops_l, op_busy_l) = self._lanes(udies, ops_d, op_busy)
        if chip_of is not None:
            mask = self._lane_sum(chip_of, mask)
            chan_l = self._lane_sum(chip_of, ops_d * op_busy)
        else:
            chan_l = ops_l * op_busy_l
        uch, starts, cidx = self.former.channel_groups(lanes)
        busy_c = np.add.reduceat(chan_l, starts)
        if not isinstance(first_in, int) and not isinstance(l_end, int):  # per device
            dev = uch // (self.ch1 - self.ch0)
            first_in, l_end = first_in[dev], l_end[dev]
        c_ends = self.channels.reserve(uch, np.maximum(first_in, l_end - busy_c), busy_c)
        c_start = c_ends - busy_c
        # a lane programs once its first command's data is in, and its last command
        # cannot start before the channel has delivered everything
        t_prog = self.t_prog
        e0 = np.maximum(c_start[cidx] + op_busy_l, c_ends[cidx] - (ops_l - 1) * t_prog)
        # a lane's first page gives the page offset its command programs
        if self.same_offset:
            srt = np.sort(ppns)
            offs = srt[np.searchsorted(srt // self.former.ppp // self.P, udies)] % self.ppb
            if self.chip_lock:
                offs = offs[np.searchsorted(udies // self.dpchip, lanes)]
        else:
            offs = np.full(lanes.size, -1, dtype=np.int64)
        # a lane of several commands programs no page into a waiting one
        ends, joined = self.dies.prog_lanes(lanes, e0, ops_l * t_prog,
                                            np.where(ops_l == 1, mask, 0), offs)
        return udies, ops_d, lanes, ends, joined

    def program_compiled(self, ppns: I64, first_in: int | I64, l_end: int | I64) -> I64:
        """``program_lanes`` under the ONFI rules on die lanes, in one compiled call
        (``program_chunk``; another after each growth of the rows): per device of the
        lanes' array, its program commands, its pages that joined a waiting program and
        the end of its last program (-1: no page there). The result is overwritten by
        the next call."""
        per_dev = not isinstance(first_in, int)
        f, le = _times(first_in), _times(l_end)
        res = self._res
        while True:
            iv, meta = self.channels.arrays()
            full = program_chunk(ppns, f, le, per_dev, self._geo, self._pgeo,
                                  self.phy.pcmd_a, self.dies.state, iv, meta, res)
            if full == 0:
                return res
            if full == 1:
                self.channels.grow()
            else:
                self.dies.make_room(self.former.die_groups(ppns)[0])

    # -- garbage collection ------------------------------------------------------------
    def gc(self, job: GcJob, earliest: int) -> int:
        """Book one block's relocation and erase; return when the erase ends."""
        m = job.moved
        die = job.plane // self.P + self.die0
        cfg, phy, c = self.cfg, self.phy, self.c
        c.gc_pages_read += m
        c.pages_programmed += m
        c.read_cmds += m
        c.program_cmds += m
        c.erase_cmds += 1
        lane = self.former.lane_of(die)
        # Command cycles always cross the channel; the data too unless copyback.
        ch_busy = m * (phy.rcmd[1] + phy.pcmd[1]) + phy.ecmd
        if not cfg.gc_copyback:
            ch_busy += m * (phy.rsetup[1] + 2 * phy.page_data)
            c.channel_bytes += 2 * m * self.page
        # From now, not from the die's start: booked as one span in the future it would
        # leave the channel idle in front of it for every other die.
        self.channels.reserve1(die // self.former.dpc, earliest, ch_busy)
        if m:
            self.dies.work1(lane, earliest, int(m * (cfg.t_r_mean + cfg.t_prog_mean)))
        return self.dies.work1(lane, earliest, cfg.t_bers, erase=True)


def _times(t: int | I64) -> I64:
    """A kernel's time argument: one time for all devices, or one per device."""
    if isinstance(t, int):
        return np.array([t], dtype=np.int64)
    return np.ascontiguousarray(t, dtype=np.int64)


class FastArray:
    """The fast timing of several devices whose lanes are one array (``models``, one
    per device, sharing the first one's lanes): a transfer's pages on every device it
    touches are read or programmed in one call, each device from its own start time,
    with each device's end and counters its own. The devices share no lane, so this
    books exactly what a call per device would."""

    def __init__(self, models: list[FastModel]) -> None:
        self.models = models
        self.m = models[0]
        self.n = len(models)
        self.ppn0 = np.array([m.ppn0 for m in models], dtype=np.int64)
        self.dies_per_device = models[0].cfg.dies
        self.channels_per_device = models[0].ch1 - models[0].ch0

    def _pages(self, devs: list[int], ppns: list[I64]) -> I64:
        """The devices' pages, in the shared numbering."""
        out: I64 = np.concatenate(ppns)
        out += np.repeat(self.ppn0[devs], [p.size for p in ppns])
        return out

    def _per_device(self, devs: list[int], times: list[int]) -> I64:
        out = np.zeros(self.n, dtype=np.int64)
        out[devs] = times
        return out

    def _groups(self, units: I64, per_device: int) -> tuple[I64, I64]:
        """Devices of sorted ``units`` (channels, lanes, dies numbered device by device)
        and where each device's run starts."""
        dev = units // per_device
        edge = np.empty(dev.size, dtype=bool)
        edge[0] = True
        np.not_equal(dev[1:], dev[:-1], out=edge[1:])
        starts = np.flatnonzero(edge)
        return dev[starts], starts

    def read(self, devs: list[int], ppns: list[I64], nb: list[I64],
             t0: list[int]) -> dict[int, tuple[int, int]]:
        """``FastModel.read(ppns[i], nb[i], t0[i])`` on device ``devs[i]`` for each
        ``i``, in one call: per device, (start of its first data-out, end of its last)."""
        m = self.m
        if m.compiled:
            res = m.read_compiled(self._pages(devs, ppns), np.concatenate(nb),
                                   self._per_device(devs, t0)).tolist()
            out = {}
            for k in devs:
                self.models[k].c.read_cmds += res[0][k]
                out[k] = (res[1][k], res[2][k])
            return out
        udies, ops_d, uch, c_start, c_end = m.read_lanes(
            self._pages(devs, ppns), np.concatenate(nb), self._per_device(devs, t0))
        cmds = np.bincount(udies // self.dies_per_device, weights=ops_d,
                           minlength=self.n).astype(np.int64).tolist()
        dev, starts = self._groups(uch, self.channels_per_device)
        first = np.minimum.reduceat(c_start, starts).tolist()
        last = np.maximum.reduceat(c_end, starts).tolist()
        models = self.models
        out = {}
        for k, a, b in zip(dev.tolist(), first, last, strict=True):
            models[k].c.read_cmds += cmds[k]
            out[k] = (a, b)
        return out

    def program(self, devs: list[int], ppns: list[I64], first_in: list[int],
                l_end: list[int]) -> dict[int, int]:
        """``FastModel.program(ppns[i], first_in[i], l_end[i])`` on device ``devs[i]``
        for each ``i``, in one call: per device, the end of its last program."""
        m = self.m
        if m.compiled:
            res = m.program_compiled(self._pages(devs, ppns), self._per_device(devs, first_in),
                                      self._per_device(devs, l_end)).tolist()
            out = {}
            for k, p in zip(devs, ppns, strict=True):
                c = self.models[k].c
                c.program_cmds += res[0][k]
                c.pages_programmed += int(p.size)
                c.channel_bytes += int(p.size) * m.page
                out[k] = res[2][k]
            return out
        udies, ops_d, lanes, ends, joined = m.program_lanes(
            self._pages(devs, ppns), self._per_device(devs, first_in),
            self._per_device(devs, l_end))
        cmds = np.bincount(udies // self.dies_per_device, weights=ops_d, minlength=self.n)
        lpd = m.lanes_per_device
        if joined is not None:
            cmds -= np.bincount(lanes[joined] // lpd, minlength=self.n)
        cmds_l = cmds.astype(np.int64).tolist()
        dev, starts = self._groups(lanes, lpd)
        models = self.models
        page = m.page
        out = {}
        for k, e in zip(dev.tolist(), np.maximum.reduceat(ends, starts).tolist(),
                        strict=True):
            models[k].c.program_cmds += cmds_l[k]
            out[k] = e
        for k, p in zip(devs, ppns, strict=True):
            c = models[k].c
            c.pages_programmed += int(p.size)
            c.channel_bytes += int(p.size) * page
        return out
