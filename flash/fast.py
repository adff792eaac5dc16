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
  background once a plane falls under the soft threshold, with the other planes of its
  die at the threshold as multi-plane commands (``gc_die``).

Reads take priority over programs and suspend them (``flash.engine.dies``). Under
``flash.compat = "mqsim"`` the lanes are chips (MQSim's chip lock: the dies of a chip
work on one transaction at a time, in parallel, and a queued program only absorbs pages
of its own die), a read command needs idle channel time, so it waits while the channel
drains data-outs (MQSim's data-out convoy), and a die has no cache read: it is busy
until its data is out. Booked when its request arrives, a command cannot be pushed back
by the data-out of a read that arrives later, as MQSim's PHY does: callers that can wait
on an event (``FlashTarget.request``, the flash bench) have reads arbitrated when the
channel frees instead (``flash.convoy``).

Several devices striped together keep their dies and channels in one array, device by
device (``FastModel``'s ``shared``): each device books on its own lanes only, from its
own start time and with its own ends and counters, and the tier's timelines are one.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from flash.engine.chunks import (
    NO_WAIT,
    Lanes,
    program_chunk,
    program_page,
    read_chunk,
    read_page,
)
from flash.ftl import GcJob
from flash.ftl.gc import die_rows, step_planes
from flash.phy import OnfiPhy
from flash.scheduler import CommandFormer, Counters, TimingBase
from tmhw.sim.jit import Direct

I64 = npt.NDArray[np.int64]


#: the chunk kernels past their dispatcher (``tmhw.sim.jit.Direct``)
_READ_CHUNK = Direct(read_chunk)
_PROGRAM_CHUNK = Direct(program_chunk)


class FastModel(TimingBase):
    """Chunk-level timing of one device (module docstring): every booking is a call of
    a kernel of ``flash.engine.chunks`` on the lanes' state, with the device's
    geometry, command times and cell timing as records (``geo``, ``cmds``, ``cell``)."""

    def __init__(self, cfg: FlashConfig, phy: OnfiPhy, former: CommandFormer,
                 counters: Counters, record: bool = False, shared: FastModel | None = None,
                 device: int = 0) -> None:
        super().__init__(cfg, phy, former, counters, record, shared, device)
        self.die0 = device * cfg.dies
        self.lanes_per_device = self.lane1 - self.lane0
        self._res = np.zeros((3, self.former.devices), dtype=np.int64)
        #: one-time arguments of the kernels, reused (``_time``)
        self._tbuf = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))

    # -- lanes -------------------------------------------------------------------------
    def lanes(self) -> Lanes:
        """The lanes' state the kernels take (new arrays after each growth)."""
        iv, meta = self.channels.arrays()
        wait = NO_WAIT if self.waiting is None else self.waiting.arrays()
        return self.dies.state, iv, meta, wait[0], wait[1]

    # -- reads -------------------------------------------------------------------------
    def read1(self, ppn: int, nbytes: int, earliest: int) -> tuple[int, int]:
        """One page: (start of its data-out, end of it)."""
        x = self.phy.read1_ps(nbytes)
        self.c.read_cmds += 1
        ppn += self.ppn0
        if self.dies.record:
            self.dies.reserve_records(2)
        while True:
            c_end = read_page(self.lanes(), self.geo, self.cmds, self.cell, ppn, earliest, x)
            if c_end >= 0:
                break
            self.grow(-c_end, np.array([ppn], dtype=np.int64))
        c_end = int(c_end)  # (a numpy integer where the kernels run uncompiled)
        return c_end - x, c_end

    def read(self, ppns: I64, nb: I64, earliest: int) -> tuple[int, int]:
        """Pages ``ppns`` with ``nb`` bytes wanted of each: (start of the first data-out,
        end of the last), in one call of ``read_chunk`` (another after each growth of
        the rows)."""
        if self.ppn0:
            ppns = ppns + self.ppn0
        e = self._time(earliest, 0)
        nb = np.ascontiguousarray(nb, dtype=np.int64)
        if self.dies.record:
            self.dies.reserve_records(2 * ppns.size)
        while why := _READ_CHUNK.call(self.lanes(), self.geo, self.cmds, ppns, nb, e,
                                      self._res):
            self.grow(why, ppns)
        # (the kernel's answer is per device of the lanes' array: this one's)
        cmds, first, last = self._res[:, self.device].tolist()
        self.c.read_cmds += cmds
        return first, last

    # -- programs ----------------------------------------------------------------------
    def program1(self, ppn: int, first_in: int, l_end: int, slc: bool = False) -> int:
        """One page whose data crosses the host link in [first_in, l_end] (``slc``: in
        SLC mode)."""
        ppn += self.ppn0
        self.c.pages_programmed += 1
        self.c.channel_bytes += self.page
        if self.dies.record:
            self.dies.reserve_records(1)
        while True:
            end = program_page(self.lanes(), self.geo, self.cmds,
                               self.cell_slc if slc else self.cell, ppn, first_in, l_end)
            if end >= 0:
                break
            self.grow(-end, np.array([ppn], dtype=np.int64))
        if not end & 1:  # a command of its own, not joined to a waiting one
            self.c.program_cmds += 1
        return int(end >> 1)

    def program(self, ppns: I64, first_in: int, l_end: int, slc: bool = False) -> int:
        """Pages ``ppns`` whose data crosses the host link in [first_in, l_end] (``slc``:
        in SLC mode), in one call of ``program_chunk`` (another after each growth of the
        rows); the end of the last program."""
        n = int(ppns.size)
        if self.ppn0:
            ppns = ppns + self.ppn0
        f, le = self._time(first_in, 0), self._time(l_end, 1)
        if self.dies.record:
            self.dies.reserve_records(n)
        while why := _PROGRAM_CHUNK.call(self.lanes(), self.geo_slc if slc else self.geo,
                                         self.cmds, ppns, f, le, self._res):
            self.grow(why, ppns)
        # (per device of the lanes' array: this one's commands and end of its last
        # program)
        cmds, _, last = self._res[:, self.device].tolist()
        self.c.programmed(n, cmds, self.page)
        return int(last)

    def _time(self, t: int, slot: int) -> I64:
        """A kernel's time argument, the same for every device of the lanes' array (in a
        buffer of this model's, ``slot`` 0 or 1, valid until the next call)."""
        buf = self._tbuf[slot]
        buf[0] = t
        return buf

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

    def gc_die(self, jobs: list[GcJob], earliest: int) -> int:
        """Book the relocation and erase of victims of one die's planes together
        (``FTL.collect_die``): step ``i`` reads the ``i``-th page to move of each of
        its planes in one multi-plane read and programs them in one multi-plane
        program, then the victims are erased a block per plane in each multi-plane
        erase (``flash.ftl.gc.die_rows``). The die is busy for as many steps as the
        plane that moves the most pages, the channel for every step's commands (and
        data, unless copyback). Return when the last erase ends."""
        if len(jobs) == 1 or not self.former.multi:
            end = earliest
            for job in jobs:
                end = max(end, self.gc(job, earliest))
            return end
        rows, erases = die_rows(jobs)
        steps = step_planes(rows)
        moved = sum(steps)
        die = jobs[0].plane // self.P + self.die0
        cfg, phy, c = self.cfg, self.phy, self.c
        c.gc_pages_read += moved
        c.pages_programmed += moved
        c.read_cmds += len(steps)
        c.program_cmds += len(steps)
        c.erase_cmds += len(erases)
        ch_busy = (sum(phy.rcmd[k] + phy.pcmd[k] for k in steps)
                   + sum(cfg.erase_command_ps(k) for k in erases))
        if not cfg.gc_copyback:
            ch_busy += sum(phy.rsetup[k] for k in steps) + 2 * moved * phy.page_data
            c.channel_bytes += 2 * moved * self.page
        # (from now, as ``gc`` books it)
        self.channels.reserve1(die // self.former.dpc, earliest, ch_busy)
        lane = self.former.lane_of(die)
        if steps:
            self.dies.work1(lane, earliest, int(len(steps) * (cfg.t_r_mean + cfg.t_prog_mean)))
        end = earliest
        for _ in erases:
            end = self.dies.work1(lane, earliest, cfg.t_bers, erase=True)
        return end
