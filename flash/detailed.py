"""The detailed flash timing model: every page command booked on its die and channel.

Per transaction the controller splits the logical range into flash pages, maps them
through the FTL and forms commands: the pages of one die on distinct planes go as one
multi-plane command (MQSim's ``Transaction_Scheduling_Unit``). Commands are booked in
round-robin order over the dies, each phase on its own resource:

- read: command cycles on the channel, tR in the die (the longest page type of the
  command), then each plane's data-out on the channel, then the host link (cut-through);
- program: the host link brings the data, command + data-in on the channel, then tPROG;
- GC: per valid page a read and a program (with the data crossing the channel twice
  unless ``gc_copyback``), then the block erase (command, tBERS).

Dies and channels are gap-filling lanes (``flash.lanes.GapBank``): a command takes the earliest idle
interval long enough for it, so work for one die never waits behind another die's
transfer (out-of-order across dies) and later reads use idle time left between booked
writes. Each die holds at most ``die_queue_depth`` commands: a command is accepted only
when the one that many places ahead of it has finished. Garbage collection under the
soft threshold is background work filling idle die and channel time; under the hard
threshold it runs before the write that needs the space, and that write waits for it.

The model is loosely timed like the fast one (``transport`` returns the completion time
and creates no SimPy event), so it orders the commands it knows of when a transaction
arrives; a read arriving later cannot pre-empt a program already booked, only use the
idle time around it.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from flash.ftl import GcJob
from flash.lanes import GapBank
from flash.target import SMALL
from tmhw.sim import Op, Timeline, Transfer

if TYPE_CHECKING:
    from flash.target import FlashTarget


class DetailedModel:
    """Per-page timing for a ``FlashTarget`` (see the module docstring)."""

    def __init__(self, target: FlashTarget) -> None:
        self.t = target
        cfg = target.cfg
        assert isinstance(target.dies, GapBank) and isinstance(target.channels, GapBank)
        self.dies: GapBank = target.dies
        self.channels: GapBank = target.channels
        self.link_rd: Timeline = target.link_rd
        self.link_wr: Timeline = target.link_wr
        self.queues: list[deque[int]] = [deque(maxlen=cfg.die_queue_depth)
                                          for _ in range(cfg.dies)]

    def start(self) -> None:
        """Nothing to start: the model books on demand (no standing process)."""

    # -- helpers -----------------------------------------------------------------------
    def _issue(self, die: int, t: int) -> int:
        """When the controller can hand die ``die`` a new command at ``t``."""
        q = self.queues[die]
        if len(q) == q.maxlen and q[0] > t:
            return q[0]
        return t

    def _done(self, die: int, end: int) -> None:
        self.queues[die].append(end)

    def _die_book(self, die: int, t: int, dur: int) -> int:
        return self.dies.reserve1(die, t, dur)

    def _ch_book(self, ch: int, t: int, dur: int) -> int:
        return self.channels.reserve1(ch, t, dur)

    def _ops(self, ppns: list[int]) -> list[tuple[int, list[int]]]:
        """Commands as (die, page indices), at most one page per plane each, ordered
        round-robin over dies in order of first appearance."""
        t = self.t
        ppp = t._pages_per_plane
        planes = [p // ppp for p in ppns]
        P = t._P
        multi = t.cfg.multiplane and P > 1
        per_die: dict[int, list[list[int]]] = {}
        for i, pl in enumerate(planes):
            die = pl // P
            ops = per_die.setdefault(die, [])
            bit = 1 << (pl % P)
            for op in ops:
                if multi and not op[0] & bit:
                    op[0] |= bit
                    op.append(i)
                    break
            else:
                ops.append([bit, i])
        out: list[tuple[int, list[int]]] = []
        rnd = 0
        while True:
            added = False
            for die, ops in per_die.items():
                if rnd < len(ops):
                    out.append((die, ops[rnd][1:]))
                    added = True
            if not added:
                return out
            rnd += 1

    # -- transactions ------------------------------------------------------------------
    def transport(self, tr: Transfer, earliest: int) -> int:
        if tr.op is Op.READ:
            return self._read(tr.address, tr.nbytes, earliest)
        return self._write(tr.address, tr.nbytes, earliest)

    def _read(self, address: int, nbytes: int, earliest: int) -> int:
        t = self.t
        cfg = t.cfg
        page = t._page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        n = hi - lo
        t.host_pages_read += n
        t.bytes_read += nbytes
        t.channel_bytes += nbytes
        ppn_l = (t._ppn_list_for_read(lo, n) if n <= SMALL
                 else t._ppns_for_read(lo, n).tolist())
        nb = [page] * n
        nb[0] -= address - lo * page
        nb[-1] -= hi * page - (address + nbytes)
        link_ps = t._link_ps_per_byte
        end = earliest
        for die, idx in self._ops(ppn_l):
            k = len(idx)
            ch = die // t._dpc
            t.read_cmds += 1
            cmd = t._rcmd[k]
            issue = self._issue(die, earliest)
            t_r = max(t._t_r[(ppn_l[i] % t._ppb) % t._bits] for i in idx)
            d_end = self._die_book(die, issue + cmd, t_r)
            x_end = d_end
            for j, i in enumerate(idx):
                setup = t._rsetup[1] if j == 0 else t._rsetup[2] - t._rsetup[1]
                # The command cycles are charged to the channel with the first data-out:
                # a controller slips them between transfers rather than queueing them
                # behind data booked for later.
                x_dur = setup + cfg.data_ps(nb[i]) + (cmd if j == 0 else 0)
                x_end = self._ch_book(ch, x_end - (cmd if j == 0 else 0), x_dur)
                l_end = self.link_rd.reserve(x_end - x_dur, int(nb[i] * link_ps))
                fin = x_end if x_end > l_end else l_end
                if fin > end:
                    end = fin
            self._done(die, x_end)
        return end

    def _write(self, address: int, nbytes: int, earliest: int) -> int:
        t = self.t
        page = t._page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        n = hi - lo
        t.bytes_written += nbytes
        link_ps = t._link_ps_per_byte
        l_dur = int(nbytes * link_ps)
        l_end = self.link_wr.reserve(earliest, l_dur)
        l_start = l_end - l_dur
        ftl = t.ftl
        ppns, jobs = t._ftl_write(lo, hi)
        # Hard threshold: the reclaim runs first and the write waits for it.
        blocked: dict[int, int] = {}
        for job in jobs:
            die = job.plane // t._P
            blocked[die] = max(blocked.get(die, 0), self._gc(job, earliest))
        t.pages_programmed += n
        t.channel_bytes += n * page
        ppn_l = ppns.tolist()
        page_link = int(page * link_ps)
        end = earliest
        for die, idx in self._ops(ppn_l):
            k = len(idx)
            ch = die // t._dpc
            t.program_cmds += 1
            issue = self._issue(die, max(earliest, blocked.get(die, 0)))
            dur = t._pcmd[k] + k * t._page_data
            # cut-through: the last page of the command must have crossed the host link
            arrive = l_start + (max(idx) + 1) * page_link
            c_end = self._ch_book(ch, max(issue, arrive - dur), dur)
            tp = max(t._t_prog[(ppn_l[i] % t._ppb) % t._bits] for i in idx)
            d_end = self._die_book(die, c_end, tp)
            self._done(die, d_end)
            if d_end > end:
                end = d_end
        soft = ftl.soft_blocks
        for p in sorted(ftl.low_planes):
            while ftl.free_count[p] < soft:
                got = ftl.collect(p)
                if not got:
                    break
                for job in got:
                    self._gc(job, earliest)
        return end

    def _gc(self, job: GcJob, earliest: int) -> int:
        """Book one block's relocation and erase; return when the erase ends."""
        t = self.t
        cfg = t.cfg
        die = job.plane // t._P
        ch = die // t._dpc
        m = job.moved
        t.gc_pages_read += m
        t.pages_programmed += m
        t.read_cmds += m
        t.program_cmds += m
        t.erase_cmds += 1
        copyback = cfg.gc_copyback
        src = job.src.tolist()
        dst = job.dst.tolist()
        now = earliest
        for s, d in zip(src, dst, strict=True):
            issue = self._issue(die, now)
            t_r = t._t_r[(s % t._ppb) % t._bits]
            if copyback:
                r_end = self._die_book(die, self._ch_book(ch, issue, t._rcmd[1]), t_r)
            else:
                r_end = self._die_book(die, issue + t._rcmd[1], t_r)
                r_end = self._ch_book(ch, r_end - t._rcmd[1],
                                      t._rcmd[1] + t._rsetup[1] + t._page_data)
                t.channel_bytes += 2 * t._page
            p_end = self._ch_book(ch, r_end, t._pcmd[1] + (0 if copyback else t._page_data))
            now = self._die_book(die, p_end, t._t_prog[(d % t._ppb) % t._bits])
            self._done(die, now)
        c_end = self._ch_book(ch, self._issue(die, now), t._ecmd)
        e_end = self._die_book(die, c_end, cfg.t_bers)
        self._done(die, e_end)
        return e_end
