"""The SSD as a memory target: controller, ONFI channels, dies and the host link.

``FlashTarget`` serves ``Transfer``s of logical byte ranges (``Op.READ``, ``Op.WRITE``,
``Op.TRIM``) through the FTL (``flash.ftl``) and books the dies, the channels and each
direction of the host link (``flash.lanes``); ``transport`` returns the completion time,
the latest page's end, and creates no SimPy event. With a tracer on, each transaction is
one span on the target's lane.

Timing of one page (MQSim's ONFI NV-DDR2 PHY, ``flash.config``):

- read: read command on the channel, tR in the die, data-out on the channel (setup +
  bytes at the channel rate), then the host link, cut-through (a page leaves over PCIe
  while it crosses the channel, so an unloaded read costs command + tR + transfer when
  the link is faster than one channel);
- program: the host link brings the data in, program command + data-in on the channel,
  then tPROG in the die;
- erase (garbage collection): erase command, tBERS in the die.

A write of part of a page programs the whole page (the read-modify-write of the rest is
not modelled); a trim unmaps whole pages only. A read of a page never written costs a
read at the place sequential preconditioning would have put it (data present before
time 0), and is counted as ``unmapped_reads``.

Dies read with the cache register (tR of the next page overlaps the data-out of the
previous one), so a die streams planes x page per tR. Same-die pages on different planes
of one request go as one multi-plane command.

Two models behind one interface (DESIGN.md, "Event economy"):

- ``fast`` books each chunk with one reservation per touched die (busy-until, in order)
  and one per touched channel (the earliest idle gap), from per-die page counts, and
  charges garbage collection as die and channel time when a plane falls under the soft
  threshold;
- ``detailed`` (``flash.detailed``) books every command on gap-filling die and channel
  lanes, with bounded per-die command queues, reads using idle die time between booked
  programs, background GC in idle time and forced GC ahead of the write that needs it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import simpy

from flash.config import FlashConfig
from flash.ftl import FTL, GcJob
from flash.lanes import GapBank, LaneBank
from tmhw.sim import Component, EnergyMeter, EnergyTable, Op, Timeline, TmhwError, Transfer
from tmhw.sim.trace import Tracer
from tmhw.sim.units import S

MODELS = ("fast", "detailed")
#: Chunks of at most this many pages take scalar paths through the FTL.
SMALL = 8


class FlashTarget(Component):
    """An SSD serving logical byte ranges. ``model`` is ``fast`` or ``detailed``;
    ``precondition`` fills that fraction of the logical space before time 0, and ``age``
    then overwrites ``age`` x those pages at random (with GC, without time, drawing from
    ``seed``) so random writes start in steady state. The timing models are
    deterministic. ``record`` keeps every die and channel booking (for tests and
    timeline plots)."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 cfg: FlashConfig, *, model: str = "fast", precondition: float = 0.0,
                 seed: int = 0, age: float = 0.0, tracer: Tracer | None = None,
                 record: bool = False) -> None:
        super().__init__(env, name, parent, tracer)
        if model not in MODELS:
            raise TmhwError(f"flash.model: {model!r} is not one of {MODELS}")
        if not 0.0 <= precondition <= 1.0:
            raise TmhwError(f"flash.precondition: {precondition} must be in [0, 1]")
        self.cfg = cfg
        self.model = model
        self.seed = seed
        self.ftl = FTL(cfg)
        self.ftl.precondition(precondition)
        self.ftl.age(age, seed)
        # Dies serve their commands in order in the fast model; the detailed one lets a
        # command use an idle gap. Channels fill gaps in both (see flash.lanes).
        self.dies: LaneBank | GapBank = (GapBank("die", cfg.dies, record)
                                         if model == "detailed"
                                         else LaneBank("die", cfg.dies, record))
        self.channels = GapBank("ch", cfg.channels, record)
        self.link_rd = Timeline("link_rd", record)
        self.link_wr = Timeline("link_wr", record)
        self.energy = EnergyMeter(EnergyTable(
            action_pj={"page_read": cfg.read_page_pj(), "page_program": cfg.program_page_pj(),
                       "block_erase": cfg.erase_block_pj(),
                       "channel_byte": cfg.energy.channel_pj_per_byte},
            active_mw=cfg.energy.controller_mw, idle_mw=cfg.energy.idle_mw))
        # Constants of the hot path, precomputed once.
        self._ppb = cfg.pages_per_block
        self._pages_per_plane = cfg.blocks_per_plane * cfg.pages_per_block
        self._P = cfg.planes_per_die
        self._dpc = cfg.dies_per_channel
        self._page = cfg.page_size
        self._bits = cfg.bits_per_cell
        self._t_r = [cfg.t_r_of(i) for i in range(self._bits)]
        self._t_prog = [cfg.t_prog_of(i) for i in range(self._bits)]
        self._rcmd = [0] + [cfg.read_command_ps(k) for k in range(1, self._P + 1)]
        self._rsetup = [0] + [cfg.read_setup_ps(k) for k in range(1, self._P + 1)]
        self._pcmd = [0] + [cfg.program_command_ps(k) for k in range(1, self._P + 1)]
        self._rcmd_a = np.array(self._rcmd, dtype=np.int64)
        self._rsetup_a = np.array(self._rsetup, dtype=np.int64)
        self._pcmd_a = np.array(self._pcmd, dtype=np.int64)
        self._ecmd = cfg.erase_command_ps(1)
        self._page_data = cfg.data_ps(self._page)
        self._capacity = cfg.capacity
        self._link_ps_per_byte = S / cfg.host_bytes_per_s
        # counters
        self.host_pages_read = 0
        self.gc_pages_read = 0
        self.pages_programmed = 0
        self.unmapped_reads = 0
        self.read_cmds = 0
        self.program_cmds = 0
        self.erase_cmds = 0
        self.channel_bytes = 0
        self.transfers = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self._active_until = 0
        self._active_ps = 0
        self._detailed: Any = None
        if model == "detailed":
            from flash.detailed import DetailedModel
            self._detailed = DetailedModel(self)

    # -- the MemoryTarget protocol -----------------------------------------------------
    def peak_bandwidth(self) -> float:
        """Sequential read bound: min(dies x planes x page / tR, channels, host link)."""
        return self.cfg.read_bandwidth_bound()

    def transport(self, t: Transfer, earliest: int) -> int:
        """Serve ``t`` no earlier than ``earliest``; return its completion time (ps)."""
        if t.nbytes == 0:
            return earliest
        end_byte = t.address + t.nbytes
        if end_byte > self._capacity:
            raise TmhwError(f"{self.path}: bytes [{t.address}, {end_byte}) beyond the "
                            f"logical capacity {self.cfg.capacity}")
        self.transfers += 1
        if not self.transfers & 255:
            # Bookings that ended before now can no longer be reached: drop them so
            # gap searches stay short.
            now = self.now
            self.channels.prune(now)
            if isinstance(self.dies, GapBank):
                self.dies.prune(now)
        if t.op is Op.TRIM:
            # Only whole pages can be unmapped; partial pages keep their data.
            lo = -(-t.address // self._page)
            hi = end_byte // self._page
            if hi > lo:
                self.ftl.trim(np.arange(lo, hi, dtype=np.int64))
            return earliest
        if self._detailed is not None:
            end: int = self._detailed.transport(t, earliest)
        elif t.op is Op.READ:
            end = self._read(t.address, t.nbytes, earliest)
        else:
            end = self._write(t.address, t.nbytes, earliest)
        if self.tracer.enabled:
            self.tracer.span(self.path, earliest, end, t.op.value, {"bytes": t.nbytes})
        # Controller active time: the union of the transactions' lifetimes.
        if end > self._active_until:
            self._active_ps += end - max(earliest, self._active_until)
            self._active_until = end
        return end

    # -- address helpers ---------------------------------------------------------------
    def _static_ppn(self, lpns: np.ndarray) -> np.ndarray:
        """Where an unwritten page would sit: its preconditioned location (reads of
        never-written data still cost a flash read, as for data loaded before time 0)."""
        ftl = self.ftl
        j = lpns // ftl.U
        plane = ftl.stripe_plane[lpns % ftl.U]
        out: np.ndarray = (plane * ftl.bpp + j // self._ppb) * self._ppb + j % self._ppb
        return out

    def _ppns_for_read(self, lo: int, n: int) -> np.ndarray:
        lpns = np.arange(lo, lo + n, dtype=np.int64)
        ppns = self.ftl.lookup(lpns)
        miss = ppns < 0
        if miss.any():
            self.unmapped_reads += int(miss.sum())
            ppns[miss] = self._static_ppn(lpns[miss])
        return ppns

    def _static_ppn1(self, lpn: int) -> int:
        ftl = self.ftl
        j = lpn // ftl.U
        plane = ftl._stripe_plane_list[lpn % ftl.U]
        return (plane * ftl.bpp + j // self._ppb) * self._ppb + j % self._ppb

    def _ppn_list_for_read(self, lo: int, n: int) -> list[int]:
        out = [self.ftl.lookup1(lpn) for lpn in range(lo, lo + n)]
        for i, p in enumerate(out):
            if p < 0:
                self.unmapped_reads += 1
                out[i] = self._static_ppn1(lo + i)
        return out

    def _groups_small(self, ppns: list[int]) -> dict[int, list[int]]:
        """Per die (ascending): [pages, ops, planes per op, page indices...]."""
        P = self._P
        multi = self.cfg.multiplane and P > 1
        per: dict[int, list[int]] = {}
        for i, ppn in enumerate(ppns):
            plane = ppn // self._pages_per_plane
            per.setdefault(plane // P, []).append(plane % P if multi else i)
        out: dict[int, list[int]] = {}
        for die in sorted(per):
            pl = per[die]
            pages = len(pl)
            ops = max(pl.count(x) for x in set(pl)) if multi else pages
            out[die] = [pages, ops, min(P, -(-pages // ops))]
        return out

    def _read_small(self, ppns: list[int], nb: list[int], earliest: int,
                    nbytes: int) -> int:
        """``_read``'s arithmetic for a few pages, in Python scalars."""
        groups = self._groups_small(ppns)
        page = self._page
        bytes_d: dict[int, int] = {}
        for ppn, b in zip(ppns, nb, strict=True):
            die = ppn // self._pages_per_plane // self._P
            bytes_d[die] = bytes_d.get(die, 0) + b
        t_r = int(self.cfg.t_r_mean)
        chans: dict[int, list[int]] = {}
        for die, (_pages, k, kp) in groups.items():
            self.read_cmds += k
            cmd = self._rcmd[kp]
            x_op = self._rsetup[kp] + bytes_d[die] * self._page_data // (page * k)
            d_end = self.dies.reserve1(die, earliest + cmd, k * t_r)
            ready = d_end - (k - 1) * t_r - cmd
            need = d_end + x_op
            busy = k * (cmd + x_op)
            c = chans.get(die // self._dpc)
            if c is None:
                chans[die // self._dpc] = [ready, need, busy]
            else:
                c[0] = min(c[0], ready)
                c[1] = max(c[1], need)
                c[2] += busy
        end = earliest
        link_start = -1
        for ch, (ready, need, busy) in chans.items():
            c_end = self.channels.reserve1(ch, max(ready, need - busy), busy)
            end = max(end, c_end)
            if link_start < 0 or c_end - busy < link_start:
                link_start = c_end - busy
        l_end = self.link_rd.reserve(link_start, int(nbytes * self._link_ps_per_byte))
        return end if end > l_end else l_end

    def _write_small(self, ppns: list[int], first_in: int, l_end: int) -> int:
        """``_write``'s arithmetic for a few pages, in Python scalars."""
        groups = self._groups_small(ppns)
        t_prog = int(self.cfg.t_prog_mean)
        chans: dict[int, list[tuple[int, int, int]]] = {}
        for die, (pages, k, kp) in groups.items():
            self.program_cmds += k - pages
            op_busy = self._pcmd[kp] + pages * self._page_data // k
            chans.setdefault(die // self._dpc, []).append((die, k, op_busy))
        end = first_in
        for ch, dies in chans.items():
            busy = sum(k * ob for _, k, ob in dies)
            c_end = self.channels.reserve1(ch, max(first_in, l_end - busy), busy)
            c_start = c_end - busy
            for die, k, ob in dies:
                e0 = max(c_start + ob, c_end - (k - 1) * t_prog)
                end = max(end, self.dies.reserve1(die, e0, k * t_prog))
        return end

    # -- fast model: reads -------------------------------------------------------------
    def _read(self, address: int, nbytes: int, earliest: int) -> int:
        page = self._page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        n = hi - lo
        self.host_pages_read += n
        self.bytes_read += nbytes
        self.channel_bytes += nbytes
        if n == 1:
            return self._read1(lo, nbytes, earliest)
        if n <= SMALL:
            nb_l = [page] * n
            nb_l[0] -= address - lo * page
            nb_l[-1] -= hi * page - (address + nbytes)
            return self._read_small(self._ppn_list_for_read(lo, n), nb_l, earliest, nbytes)
        ppns = self._ppns_for_read(lo, n)
        # bytes per page: the first and last may be partial
        nb = np.full(n, page, dtype=np.int64)
        nb[0] -= address - lo * page
        nb[-1] -= hi * page - (address + nbytes)
        udies, inv, pages_d, ops_d, kp = self._die_groups(ppns)
        self.read_cmds += int(ops_d.sum())
        bytes_d = np.bincount(inv, weights=nb).astype(np.int64)
        t_r = int(self.cfg.t_r_mean)
        cmd = self._rcmd_a[kp]
        # one op's data-out: setup plus its share of the die's bytes
        x_op = self._rsetup_a[kp] + bytes_d * self._page_data // (page * ops_d)
        d_end = self.dies.reserve(udies, earliest + cmd, ops_d * t_r)
        ready = d_end - (ops_d - 1) * t_r - cmd
        need = d_end + x_op
        busy = ops_d * (cmd + x_op)
        uch, starts = self._channel_groups(udies)
        busy_c = np.add.reduceat(busy, starts)
        c_earliest = np.maximum(np.minimum.reduceat(ready, starts),
                                np.maximum.reduceat(need, starts) - busy_c)
        c_end = self.channels.reserve(uch, c_earliest, busy_c)
        end = int(c_end.max())
        link_start = int((c_end - busy_c).min())
        l_end = self.link_rd.reserve(link_start, int(nbytes * self._link_ps_per_byte))
        return end if end > l_end else l_end

    def _die_groups(self, ppns: np.ndarray) -> tuple[np.ndarray, ...]:
        """Dies touched (sorted), each page's die group, pages and commands per die and
        planes per command (same-die pages on distinct planes share a multi-plane op)."""
        planes = ppns // self._pages_per_plane
        dies = planes // self._P
        udies, inv = np.unique(dies, return_inverse=True)
        pages_d = np.bincount(inv)
        if self.cfg.multiplane and self._P > 1:
            per_plane = np.bincount(inv * self._P + planes % self._P,
                                    minlength=udies.size * self._P).reshape(-1, self._P)
            ops_d = per_plane.max(axis=1)
        else:
            ops_d = pages_d
        kp = np.minimum(self._P, -(-pages_d // ops_d))
        return udies, inv, pages_d, ops_d, kp

    def _channel_groups(self, udies: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Channels of sorted dies and where each channel's run of dies starts."""
        ch = udies // self._dpc
        edge = np.empty(ch.size, dtype=bool)
        edge[0] = True
        np.not_equal(ch[1:], ch[:-1], out=edge[1:])
        starts = np.flatnonzero(edge)
        return ch[starts], starts

    def _read1(self, lpn: int, nbytes: int, earliest: int) -> int:
        ppn = self.ftl.lookup1(lpn)
        if ppn < 0:
            self.unmapped_reads += 1
            ppn = self._static_ppn1(lpn)
        die = ppn // self._pages_per_plane // self._P
        t_r = self._t_r[(ppn % self._ppb) % self._bits]
        cmd = self._rcmd[1]
        x = self._rsetup[1] + (self._page_data if nbytes == self._page
                               else self.cfg.data_ps(nbytes))
        self.read_cmds += 1
        d_end = self.dies.reserve1(die, earliest + cmd, t_r)
        c_end = self.channels.reserve1(die // self._dpc, d_end - cmd, cmd + x)
        l_end = self.link_rd.reserve(c_end - x, int(nbytes * self._link_ps_per_byte))
        return c_end if c_end > l_end else l_end

    # -- fast model: writes ------------------------------------------------------------
    def _write(self, address: int, nbytes: int, earliest: int) -> int:
        page = self._page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        n = hi - lo
        self.bytes_written += nbytes
        l_dur = int(nbytes * self._link_ps_per_byte)
        l_end = self.link_wr.reserve(earliest, l_dur)
        l_start = l_end - l_dur
        # Cut-through: the channel may start as data arrives but cannot finish before.
        first_in = l_start
        self.pages_programmed += n
        self.program_cmds += n
        self.channel_bytes += n * page
        if n == 1:
            ppn, jobs = self.ftl.write1(lo)
            for job in jobs:
                self._charge_gc(job, earliest)
            plane = ppn // self._pages_per_plane
            die = plane // self._P
            busy = self._pcmd[1] + self._page_data
            c_end = self.channels.reserve1(die // self._dpc, max(first_in, l_end - busy),
                                           busy)
            end = self.dies.reserve1(die, c_end, self._t_prog[(ppn % self._ppb) % self._bits])
            if self.ftl.low_planes:
                self._background_gc(sorted(self.ftl.low_planes), end)
            return end
        ppns, jobs = self._ftl_write(lo, hi)
        for job in jobs:
            self._charge_gc(job, earliest)
        if n <= SMALL:
            ppn_l = ppns.tolist()
            w_end = self._write_small(ppn_l, first_in, l_end)
            if self.ftl.low_planes:
                self._background_gc(sorted(self.ftl.low_planes), w_end)
            return w_end
        t_prog = int(self.cfg.t_prog_mean)
        udies, _, pages_d, ops_d, kp = self._die_groups(ppns)
        self.program_cmds += int(ops_d.sum()) - n
        op_busy = self._pcmd_a[kp] + pages_d * self._page_data // ops_d
        uch, starts = self._channel_groups(udies)
        busy_c = np.add.reduceat(ops_d * op_busy, starts)
        c_ends = self.channels.reserve(uch, np.maximum(first_in, l_end - busy_c), busy_c)
        c_start = c_ends - busy_c
        # A die programs once its first op's data is in, and its last op cannot start
        # before the channel has delivered everything
        cidx = np.repeat(np.arange(starts.size), np.diff(np.append(starts, udies.size)))
        e0 = np.maximum(c_start[cidx] + op_busy, c_ends[cidx] - (ops_d - 1) * t_prog)
        w_end = int(self.dies.reserve(udies, e0, ops_d * t_prog).max())
        if self.ftl.low_planes:
            self._background_gc(sorted(self.ftl.low_planes), w_end)
        return w_end

    def _ftl_write(self, lo: int, hi: int) -> tuple[np.ndarray, list[GcJob]]:
        if hi - lo > SMALL:
            return self.ftl.write(np.arange(lo, hi, dtype=np.int64))
        # a few pages: scalar FTL steps beat numpy's per-call overhead
        jobs: list[GcJob] = []
        out = []
        for lpn in range(lo, hi):
            ppn, got = self.ftl.write1(lpn)
            out.append(ppn)
            jobs.extend(got)
        return np.array(out, dtype=np.int64), jobs

    # -- garbage collection ------------------------------------------------------------
    def _background_gc(self, planes: list[int], now: int) -> None:
        """Planes under the soft threshold reclaim blocks, taking die and channel time."""
        ftl = self.ftl
        soft = ftl.soft_blocks
        fc = ftl.free_count
        for p in set(planes):
            while fc[p] < soft:
                jobs = ftl.collect(p)
                if not jobs:
                    break
                for job in jobs:
                    self._charge_gc(job, now)

    def _charge_gc(self, job: GcJob, earliest: int) -> None:
        """Book one block's relocation and erase on its die (and channel unless copyback)."""
        m = job.moved
        die = job.plane // self._P
        cfg = self.cfg
        self.gc_pages_read += m
        self.pages_programmed += m
        self.read_cmds += m
        self.program_cmds += m
        self.erase_cmds += 1
        die_busy = int(m * (cfg.t_r_mean + cfg.t_prog_mean)) + cfg.t_bers
        start = self.dies.start_time(die, earliest)
        # Command cycles always cross the channel; the data too unless copyback.
        ch_busy = m * (self._rcmd[1] + self._pcmd[1]) + self._ecmd
        if not cfg.gc_copyback:
            ch_busy += m * (self._rsetup[1] + 2 * self._page_data)
            self.channel_bytes += 2 * m * self._page
        # From now, not from the die's start: booked as one span in the future it would
        # leave the channel idle in front of it for every other die.
        self.channels.reserve1(die // self._dpc, earliest, ch_busy)
        self.dies.reserve1(die, start, die_busy)

    # -- lifecycle ---------------------------------------------------------------------
    def _start(self) -> None:
        if self._detailed is not None:
            self._detailed.start()

    def finalize(self, now: int) -> None:
        # Actions are counted on the hot path as plain integers and handed to the meter
        # before it converts counts to energy (only what is new since the last call, so
        # finalizing twice, or at intermediate times, never double counts).
        e = self.energy
        assert e is not None
        for action, n in (("page_read", self.host_pages_read + self.gc_pages_read),
                          ("page_program", self.pages_programmed),
                          ("block_erase", self.erase_cmds),
                          ("channel_byte", self.channel_bytes)):
            e.add(action, n - e.counts[action])
        e.add_busy(self._active_ps - e.busy_ps)
        super().finalize(now)

    def _report(self) -> dict[str, Any]:
        ftl = self.ftl
        elapsed = self.finalized_at if self.finalized_at else self.now
        out: dict[str, Any] = {
            "model": self.model,
            "seed": self.seed,
            "transfers": self.transfers,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "host_pages_read": self.host_pages_read,
            "unmapped_reads": self.unmapped_reads,
            "gc_pages_read": self.gc_pages_read,
            "pages_read": self.host_pages_read + self.gc_pages_read,
            "host_pages_written": ftl.host_pages,
            "pages_programmed": self.pages_programmed,
            "gc_pages_moved": ftl.gc_pages,
            "wl_pages_moved": ftl.wl_pages,
            "erases": ftl.erase_count,
            "gc_count": ftl.gc_count,
            "forced_gc_count": ftl.forced_gc_count,
            "wl_count": ftl.wl_count,
            "bad_blocks": ftl.bad_blocks,
            "trimmed_pages": ftl.trimmed_pages,
            "waf": ftl.waf,
            "commands": {"read": self.read_cmds, "program": self.program_cmds,
                         "erase": self.erase_cmds},
            "channel_bytes": self.channel_bytes,
            "ftl_state_bytes": ftl.state_bytes(),
            "max_erase_count": int(ftl.erases.max()),
            "link_rd": self.link_rd.report(elapsed),
            "link_wr": self.link_wr.report(elapsed),
        }
        for c in range(self.cfg.channels):
            d: dict[str, Any] = dict(self.channels.report(c, elapsed))
            for k in range(self._dpc):
                d[f"die{k}"] = self.dies.report(c * self._dpc + k, elapsed)
            out[f"ch{c}"] = d
        return out
