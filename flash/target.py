"""The SSD as a memory target: controller, ONFI channels, dies and the host link.

``FlashTarget`` serves ``Transfer``s of logical byte ranges (``Op.READ``, ``Op.WRITE``,
``Op.TRIM``) through the FTL (``flash.ftl``) and books busy-until timelines per die, per
channel and for each direction of the host link; ``transport`` returns the completion
time, the latest page's end, and creates no SimPy event.

Timing of one page (MQSim's ONFI NV-DDR2 PHY, ``flash.config``):

- read: read command on the channel, tR in the die, data-out on the channel (setup +
  bytes at the channel rate), then the host link, cut-through (a page leaves over PCIe
  while it crosses the channel, so an unloaded read costs command + tR + transfer when
  the link is faster than one channel);
- program: the host link brings the data in, program command + data-in on the channel,
  then tPROG in the die;
- erase (garbage collection): erase command, tBERS in the die.

Dies read with the cache register (tR of the next page overlaps the data-out of the
previous one), so a die streams planes x page per tR. Same-die pages on different planes
of one request go as one multi-plane command.

Two models behind one interface (DESIGN.md, "Event economy"):

- ``fast`` books each chunk with one reservation per touched die and one per touched
  channel, from per-die page counts (numpy), and charges garbage collection as die and
  channel time when a plane falls under the soft threshold;
- ``detailed`` (``flash.detailed``) reserves every page command in order with per-die
  command queues, read priority and background GC.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import simpy

from flash.config import FlashConfig
from flash.ftl import FTL, GcJob
from tmhw.sim import Component, EnergyMeter, EnergyTable, Op, Timeline, TmhwError, Transfer
from tmhw.sim.trace import Tracer
from tmhw.sim.units import S

MODELS = ("fast",)


class FlashTarget(Component):
    """An SSD serving logical byte ranges. ``model`` is ``fast`` or ``detailed``;
    ``precondition`` fills that fraction of the logical space before time 0."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 cfg: FlashConfig, *, model: str = "fast", precondition: float = 0.0,
                 seed: int = 0, tracer: Tracer | None = None, record: bool = False) -> None:
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
        self.dies = [Timeline(f"die{d}", record) for d in range(cfg.dies)]
        self.channels = [Timeline(f"ch{c}", record) for c in range(cfg.channels)]
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
        self._ecmd = cfg.erase_command_ps(1)
        self._page_data = cfg.data_ps(self._page)
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
        if end_byte > self.cfg.capacity:
            raise TmhwError(f"{self.path}: bytes [{t.address}, {end_byte}) beyond the "
                            f"logical capacity {self.cfg.capacity}")
        self.transfers += 1
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

    # -- fast model: reads -------------------------------------------------------------
    def _read(self, address: int, nbytes: int, earliest: int) -> int:
        page = self._page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        n = hi - lo
        self.host_pages_read += n
        self.bytes_read += nbytes
        self.channel_bytes += nbytes
        self.energy.add("page_read", n)  # type: ignore[union-attr]
        self.energy.add("channel_byte", nbytes)  # type: ignore[union-attr]
        if n == 1:
            return self._read1(lo, nbytes, earliest)
        ppns = self._ppns_for_read(lo, n)
        planes = ppns // self._pages_per_plane
        dies = planes // self._P
        # bytes per page: the first and last may be partial
        nb = np.full(n, page, dtype=np.int64)
        nb[0] -= address - lo * page
        nb[-1] -= hi * page - (address + nbytes)
        udies, inv = np.unique(dies, return_inverse=True)
        bytes_d = np.bincount(inv, weights=nb).astype(np.int64)
        pages_d = np.bincount(inv)
        if self.cfg.multiplane and self._P > 1:
            plane_in_die = planes % self._P
            per_plane = np.bincount(inv * self._P + plane_in_die,
                                    minlength=udies.size * self._P).reshape(-1, self._P)
            ops_d = per_plane.max(axis=1)
        else:
            ops_d = pages_d
        self.read_cmds += int(ops_d.sum())
        t_r = self.cfg.t_r_mean
        link_start = -1
        end = earliest
        for ch, idx in self._by_channel(udies):
            chan = self.channels[ch]
            ready_first = 1 << 62
            need_end = 0
            busy = 0
            for i in idx:
                k = int(ops_d[i])
                kp = min(self._P, -(-int(pages_d[i]) // k))
                cmd = self._rcmd[kp]
                x_op = self._rsetup[kp] + int(bytes_d[i]) * self._page_data // (page * k)
                d_end = self.dies[int(udies[i])].reserve(earliest + cmd, int(k * t_r))
                first = d_end - (k - 1) * int(t_r)
                if first - cmd < ready_first:
                    ready_first = first - cmd
                if d_end + x_op > need_end:
                    need_end = d_end + x_op
                busy += k * (cmd + x_op)
            c_end = chan.reserve(max(ready_first, need_end - busy), busy)
            c_start = c_end - busy
            if link_start < 0 or c_start < link_start:
                link_start = c_start
            if c_end > end:
                end = c_end
        l_end = self.link_rd.reserve(link_start, int(nbytes * self._link_ps_per_byte))
        return end if end > l_end else l_end

    def _read1(self, lpn: int, nbytes: int, earliest: int) -> int:
        ppn = self.ftl.lookup1(lpn)
        if ppn < 0:
            self.unmapped_reads += 1
            ppn = int(self._static_ppn(np.array([lpn]))[0])
        die = ppn // self._pages_per_plane // self._P
        t_r = self._t_r[(ppn % self._ppb) % self._bits]
        cmd = self._rcmd[1]
        x = self._rsetup[1] + self.cfg.data_ps(nbytes)
        self.read_cmds += 1
        d_end = self.dies[die].reserve(earliest + cmd, t_r)
        c_end = self.channels[die // self._dpc].reserve(d_end - cmd, cmd + x)
        l_end = self.link_rd.reserve(c_end - x, int(nbytes * self._link_ps_per_byte))
        return c_end if c_end > l_end else l_end

    def _by_channel(self, udies: np.ndarray) -> list[tuple[int, list[int]]]:
        chans = (udies // self._dpc).tolist()
        out: dict[int, list[int]] = {}
        for i, c in enumerate(chans):
            out.setdefault(c, []).append(i)
        return list(out.items())

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
        ppns, jobs = self.ftl.write(np.arange(lo, hi, dtype=np.int64))
        for job in jobs:
            self._charge_gc(job, earliest)
        self.pages_programmed += n
        self.program_cmds += n
        self.channel_bytes += n * page
        self.energy.add("page_program", n)  # type: ignore[union-attr]
        self.energy.add("channel_byte", n * page)  # type: ignore[union-attr]
        t_prog = self.cfg.t_prog_mean
        planes = ppns // self._pages_per_plane
        dies = planes // self._P
        if n == 1:
            die = int(dies[0])
            cmd = self._pcmd[1]
            busy = cmd + self._page_data
            c_end = self.channels[die // self._dpc].reserve(max(first_in, l_end - busy),
                                                            busy)
            tp = self._t_prog[int(ppns[0] % self._ppb) % self._bits]
            end = self.dies[die].reserve(c_end, tp)
        else:
            udies, inv = np.unique(dies, return_inverse=True)
            pages_d = np.bincount(inv)
            if self.cfg.multiplane and self._P > 1:
                per_plane = np.bincount(inv * self._P + planes % self._P,
                                        minlength=udies.size * self._P).reshape(-1, self._P)
                ops_d = per_plane.max(axis=1)
            else:
                ops_d = pages_d
            self.program_cmds += int(ops_d.sum()) - n
            end = earliest
            for ch, idx in self._by_channel(udies):
                ops = [int(ops_d[i]) for i in idx]
                op_busy = []
                for i, k in zip(idx, ops, strict=True):
                    kp = min(self._P, -(-int(pages_d[i]) // k))
                    op_busy.append(self._pcmd[kp] + int(pages_d[i]) * self._page_data // k)
                busy = sum(k * b for k, b in zip(ops, op_busy, strict=True))
                c_end = self.channels[ch].reserve(max(first_in, l_end - busy), busy)
                c_start = c_end - busy
                for i, k, b in zip(idx, ops, op_busy, strict=True):
                    e0 = max(c_start + b, c_end - (k - 1) * int(t_prog))
                    d_end = self.dies[int(udies[i])].reserve(e0, int(k * t_prog))
                    if d_end > end:
                        end = d_end
        self._background_gc(planes, end)
        return end

    # -- garbage collection ------------------------------------------------------------
    def _background_gc(self, planes: np.ndarray, now: int) -> None:
        """Planes under the soft threshold reclaim blocks, taking die and channel time."""
        ftl = self.ftl
        soft = ftl.soft_blocks
        fc = ftl.free_count
        for p in set(planes.tolist()):
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
        self.energy.add("page_read", m)  # type: ignore[union-attr]
        self.energy.add("page_program", m)  # type: ignore[union-attr]
        self.energy.add("block_erase", 1)  # type: ignore[union-attr]
        die_busy = int(m * (cfg.t_r_mean + cfg.t_prog_mean)) + cfg.t_bers
        start = self.dies[die].start_time(earliest)
        if not cfg.gc_copyback and m:
            ch_busy = m * (self._rcmd[1] + self._rsetup[1] + self._pcmd[1]
                           + 2 * self._page_data) + self._ecmd
            self.channel_bytes += 2 * m * self._page
            self.energy.add("channel_byte", 2 * m * self._page)  # type: ignore[union-attr]
            self.channels[die // self._dpc].reserve(start, ch_busy)
        self.dies[die].reserve(start, die_busy)

    # -- lifecycle ---------------------------------------------------------------------
    def _start(self) -> None:
        if self._detailed is not None:
            self._detailed.start()

    def _finalize(self, now: int) -> None:
        assert self.energy is not None
        self.energy.add_busy(self._active_ps)

    def _report(self) -> dict[str, Any]:
        ftl = self.ftl
        elapsed = self.finalized_at if self.finalized_at else self.now
        out: dict[str, Any] = {
            "model": self.model,
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
        for c, chan in enumerate(self.channels):
            d: dict[str, Any] = dict(chan.report(elapsed))
            for k in range(self._dpc):
                die = c * self._dpc + k
                d[f"die{k}"] = self.dies[die].report(elapsed)
            out[f"ch{c}"] = d
        return out
