"""The detailed flash timing model: every command booked on its die and channel.

Per transaction the transaction scheduler (``flash.scheduler.CommandFormer.ops``) forms
commands: the pages of one die on distinct planes go as one multi-plane command, ordered
round-robin over the dies. Each phase is booked on its own resource:

- read: command cycles on the channel, tR in the die (the longest page type of the
  command), then each plane's data-out on the channel. The die's cache register holds
  the command's data until its last data-out starts;
- program: command + data-in on the channel once the command's last page has crossed the
  host link (cut-through), then tPROG (the longest page type); a page may join a
  program still waiting in its die's queue (``flash.engine.dies.die_prog``);
- GC: per valid page a read and a program (with the data crossing the channel twice
  unless ``gc_copyback``), then the block erase (command, tBERS).

Channels are gap-filling lanes (``flash.engine.gaps``): a transfer takes the earliest
idle interval long enough for it, so work for one die never waits behind another die's
transfer (out-of-order across dies). Dies serve reads first and suspend programs and
erases for them (``flash.engine.dies``). Each die holds at most ``die_queue_depth``
programs and erases: such a command is accepted only when the one that many places
ahead of it has finished (reads wait in the scheduler's priority queue and go to the
die as soon as it can take them). Garbage collection under the soft threshold runs as
the write that needs it returns; under the hard threshold it runs before that write,
and the write waits for it.

Under ``flash.compat = "mqsim"`` the die lanes are chips (chip lock), a read command
needs idle channel time, so it waits while the channel drains data-outs (data-out
convoy), and a chip is busy until its data is out (no cache read), as in stock MQSim;
a command is booked when its request arrives (``flash.convoy`` arbitrates reads when the
channel frees, for ``FlashTarget.request``).

The model is loosely timed like the fast one (it returns completion times and creates no
SimPy event).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from flash.engine.chunks import CH_FULL, NO_WAIT, Lanes
from flash.engine.commands import (
    READ_RESULTS,
    RESULTS,
    TIMES,
    program_cmds,
    queue_done,
    queue_issue,
    read_cmds,
)
from flash.ftl import GcJob
from flash.ftl.gc import die_rows, step_planes
from flash.phy import OnfiPhy
from flash.scheduler import CommandFormer, Counters, TimingBase
from tmhw.sim.jit import Direct

I64 = npt.NDArray[np.int64]
#: ``read_cmds`` past its dispatcher (``tmhw.sim.jit.Direct``): a read of a page or two is
#: a call of a few microseconds
_READ_CMDS = Direct(read_cmds)


class DetailedModel(TimingBase):
    """Per-command timing of one device (module docstring)."""

    def __init__(self, cfg: FlashConfig, phy: OnfiPhy, former: CommandFormer,
                 counters: Counters, record: bool = False) -> None:
        super().__init__(cfg, phy, former, counters, record)
        #: per die, the ends of its last ``die_queue_depth`` programs and erases
        #: (``flash.engine.commands``' ring)
        self.queues = np.zeros((cfg.dies, 2 + cfg.die_queue_depth), dtype=np.int64)
        self._times = np.zeros(TIMES, dtype=np.int64)
        self._res = np.zeros(RESULTS, dtype=np.int64)
        self._read_res = np.zeros(READ_RESULTS, dtype=np.int64)
        self._data1 = np.zeros(1, dtype=np.int64)  # a one-page read's data-out time

    # -- helpers -----------------------------------------------------------------------
    def _issue(self, die: int, earliest: int) -> int:
        """When the controller can hand die ``die`` a new command at ``earliest``."""
        return int(queue_issue(self.queues, die, earliest))

    def _done(self, die: int, end: int) -> None:
        queue_done(self.queues, die, end)

    def lanes(self) -> Lanes:
        """The lanes' state the kernels take (new arrays after each growth)."""
        iv, meta = self.channels.arrays()
        wiv, wmeta = self.waiting.arrays() if self.waiting is not None else NO_WAIT
        return self.dies.state, iv, meta, wiv, wmeta

    # -- transactions ------------------------------------------------------------------
    def read1(self, ppn: int, nbytes: int, earliest: int) -> tuple[int, int]:
        return self.read(np.array([ppn], dtype=np.int64), np.array([nbytes]), earliest)

    def read(self, ppns: I64, nb: I64, earliest: int) -> tuple[int, int]:
        """Pages ``ppns`` with ``nb`` bytes wanted of each: (start of the first data-out,
        end of the last): ``flash.engine.commands.read_cmds``, one call a transaction."""
        res = self._read_res
        res[:] = -1, earliest, 0, 0
        if self.dies.record:
            self.dies.reserve_records(2 * len(ppns))
        ppns = np.ascontiguousarray(ppns, dtype=np.int64)
        if len(ppns) == 1:
            data = self._data1
            data[0] = self.phy.data_ps(int(nb[0]))
        else:
            data = self.phy.data_ps_of(nb)
        while why := _READ_CMDS.call(self.lanes(), self.geo, self.cmds, self.cell, ppns,
                                     data, earliest, res):
            if why == CH_FULL:
                self.channels.grow()
            else:
                assert self.waiting is not None
                self.waiting.grow()
        self.c.read_cmds += int(res[2])
        return int(res[0]), int(res[1])

    def program1(self, ppn: int, first_in: int, last_in: int, slc: bool = False) -> int:
        return self.program(np.array([ppn], dtype=np.int64), first_in, last_in, slc)

    def program(self, ppns: I64, first_in: int, last_in: int, slc: bool = False) -> int:
        """Pages ``ppns`` whose data crosses the host link in [first_in, last_in] (``slc``:
        in SLC mode, ``t_prog_slc``); the end of the last program."""
        counters = self.c
        n = len(ppns)
        counters.pages_programmed += n
        counters.channel_bytes += n * self.page
        times, res = self._times, self._res
        times[:] = first_in, (last_in - first_in) // n, self.t_prog_slc if slc else -1, 0
        res[:] = first_in, 0, 0
        if self.dies.record:
            self.dies.reserve_records(n)
        ppns = np.ascontiguousarray(ppns, dtype=np.int64)
        while why := program_cmds(self.lanes(), self.geo, self.cmds, self.cell, ppns,
                                  self.queues, times, res):
            if why == CH_FULL:
                self.channels.grow()
            else:
                self.dies.make_room(np.arange(len(self.dies), dtype=np.int64))
            times[3] = res[2]
        counters.program_cmds += int(res[1])
        return int(res[0])

    def gc(self, job: GcJob, earliest: int) -> int:
        """Book one block's relocation and erase; return when the erase ends."""
        cfg, phy, counters, former = self.cfg, self.phy, self.c, self.former
        die = job.plane // self.P
        ch = die // former.dpc
        lane = former.lane_of(die)
        moved = job.moved
        counters.gc_pages_read += moved
        counters.pages_programmed += moved
        counters.read_cmds += moved
        counters.program_cmds += moved
        counters.erase_cmds += 1
        copyback = cfg.gc_copyback
        now = earliest
        rcmd, pcmd = phy.rcmd[1], phy.pcmd[1]
        for src, dst in zip(job.src.tolist(), job.dst.tolist(), strict=True):
            issue = self._issue(die, now)
            t_r = self.t_r_of[(src % self.ppb) % self.bits]
            if copyback:
                read_end = self.dies.work1(lane, self.channels.reserve1(ch, issue, rcmd), t_r)
            else:
                read_end = self.dies.work1(lane, issue + rcmd, t_r)
                read_end = self.channels.reserve1(ch, read_end - rcmd,
                                               rcmd + phy.rsetup[1] + phy.page_data)
                counters.channel_bytes += 2 * self.page
            program_end = self.channels.reserve1(ch, read_end,
                                           pcmd + (0 if copyback else phy.page_data))
            now = self.dies.work1(lane, program_end, self.t_prog_of[(dst % self.ppb) % self.bits])
            self._done(die, now)
        channel_end = self.channels.reserve1(ch, self._issue(die, now), phy.ecmd)
        erase_end = self.dies.work1(lane, channel_end, cfg.t_bers, erase=True)
        self._done(die, erase_end)
        return erase_end

    def gc_die(self, jobs: list[GcJob], earliest: int) -> int:
        """``gc`` of victims of one die's planes together (``FTL.collect_die``): step
        ``i`` reads the ``i``-th page to move of each of its planes in one multi-plane
        read (the longest of their tR) and programs them in one multi-plane program,
        then each multi-plane erase erases a block per plane (``flash.ftl.gc.die_rows``);
        return when the last erase ends."""
        if len(jobs) == 1 or not self.former.multi:
            end = earliest
            for job in jobs:
                end = max(end, self.gc(job, earliest))
            return end
        cfg, phy, counters, former = self.cfg, self.phy, self.c, self.former
        rows, erases = die_rows(jobs)
        steps = step_planes(rows)
        die = jobs[0].plane // self.P
        ch = die // former.dpc
        lane = former.lane_of(die)
        moved = sum(steps)
        counters.gc_pages_read += moved
        counters.pages_programmed += moved
        counters.read_cmds += len(steps)
        counters.program_cmds += len(steps)
        counters.erase_cmds += len(erases)
        copyback = cfg.gc_copyback
        now = earliest
        bits, ppb = self.bits, self.ppb
        for i, k in enumerate(steps):
            src = [s[i] for s, _ in rows if len(s) > i]
            dst = [d[i] for _, d in rows if len(d) > i]
            issue = self._issue(die, now)
            t_r = max(self.t_r_of[(p % ppb) % bits] for p in src)
            rcmd = phy.rcmd[k]
            if copyback:
                read_end = self.dies.work1(lane, self.channels.reserve1(ch, issue, rcmd), t_r)
            else:
                read_end = self.dies.work1(lane, issue + rcmd, t_r)
                read_end = self.channels.reserve1(ch, read_end - rcmd,
                                                  rcmd + phy.rsetup[k] + k * phy.page_data)
                counters.channel_bytes += 2 * k * self.page
            program_end = self.channels.reserve1(
                ch, read_end, phy.pcmd[k] + (0 if copyback else k * phy.page_data))
            now = self.dies.work1(lane, program_end,
                                  max(self.t_prog_of[(p % ppb) % bits] for p in dst))
            self._done(die, now)
        for k in erases:
            channel_end = self.channels.reserve1(ch, self._issue(die, now),
                                                 cfg.erase_command_ps(k))
            now = self.dies.work1(lane, channel_end, cfg.t_bers, erase=True)
            self._done(die, now)
        return now
