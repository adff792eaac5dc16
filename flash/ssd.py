"""One SSD: its host interface, data cache manager, FTL, transaction scheduler and
flash timing, wired in MQSim's order (``flash.host`` -> ``flash.cache`` -> ``flash.ftl``
-> ``flash.scheduler`` -> ``flash.fast`` or ``flash.detailed`` -> ``flash.phy`` and
``flash.engine``).

``Ssd.transport`` serves one device-local byte range and returns its completion time:

- read: the pages the controller DRAM holds cost no NAND read (the read cache keeps
  the NAND pages a read wanted only part of); the rest are mapped by the FTL (a page
  never written is read where sequential preconditioning would have put it, counted as
  ``unmapped_reads``) and read by the timing model; the data leaves over
  the host link as it comes off the channels (cut-through);
- byte-addressed read (``wire_bytes`` > 0: MMIO through the PCIe BAR, FlatFlash's
  in-place access): the host reads cache lines, which the controller serves from its
  DRAM, so every NAND page the read brings stays in the read cache whole (a later line
  of it costs no NAND read), and the data occupies the link for ``wire_bytes`` (each
  line a completion with its own framing; ``mmio_reads`` counts such reads);
- write: the data crosses the link once the write buffer has room, the FTL maps the
  pages (collecting synchronously under the hard threshold), the timing model programs
  them, and the write completes when its data is in the buffer (or, written through,
  when programmed); background GC follows once a plane is under the soft threshold;
- trim: whole pages are unmapped, in no time.

Small writes are packed (real controllers map 4 KiB units and fill a NAND page with
several of them): with a write buffer and under ONFI rules, the write of part of a
page that does not complete a page's worth of such writes since the last program is
acknowledged from the buffer and programs nothing (``packed_writes``); the one that
completes it programs its page. The FTL maps pages, not 4 KiB units, so the packed
writes' own pages keep their old mapping (a later read of one costs the same one
NAND read); each page's worth of small writes consumes and invalidates one page, as
a 4 KiB-unit FTL's would. Without a write buffer (or under ``compat = "mqsim"``) the
write of part of a page programs the whole page (the read-modify-write of the rest is
not modelled). Not a component: ``flash.target.FlashTarget`` owns one per device.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from flash.cache import DataCache
from flash.config import FlashConfig
from flash.detailed import DetailedModel
from flash.engine.dies import DieLanes
from flash.engine.gaps import GapBank
from flash.fast import FastModel
from flash.ftl import FTL, GcJob
from flash.host import HostInterface
from flash.phy import OnfiPhy
from flash.scheduler import CommandFormer, Counters
from flash.slc import SlcCache

I64 = npt.NDArray[np.int64]
_NONE: I64 = np.zeros(0, dtype=np.int64)
MODELS = ("fast", "detailed")


class TimingModel(Protocol):
    """What an ``Ssd`` needs of a flash timing model (``flash.fast``, ``flash.detailed``)."""

    dies: DieLanes
    channels: GapBank

    def start(self) -> None: ...

    def prune(self, now: int) -> None: ...

    def idle_from(self) -> int: ...

    def lane_counts(self) -> tuple[dict[str, int], int]: ...

    def lane_reports(self, elapsed: int) -> dict[str, dict[str, Any]]: ...

    def read1(self, ppn: int, nbytes: int, earliest: int) -> tuple[int, int]: ...

    def read(self, ppns: I64, nb: I64, earliest: int) -> tuple[int, int]: ...

    def program1(self, ppn: int, first_in: int, l_end: int, slc: bool = False) -> int: ...

    def program(self, ppns: I64, first_in: int, l_end: int, slc: bool = False) -> int: ...

    def gc(self, job: GcJob, earliest: int) -> int: ...

    def gc_die(self, jobs: list[GcJob], earliest: int) -> int: ...


class Ssd:
    """One device of the flash tier (module docstring)."""

    def __init__(self, cfg: FlashConfig, *, model: str, precondition: float, seed: int,
                 age: float, record: bool, device: int = 0, devices: int = 1,
                 shared: Ssd | None = None) -> None:
        """Device ``device`` of ``devices``. Several devices on the fast model book on
        one array of lanes (``flash.fast.FastArray``): the first one makes it, the others
        are given it as ``shared`` (the first device)."""
        self.cfg = cfg
        self.device = device
        self.page = cfg.page_size
        self.ftl = FTL(cfg)
        self.ftl.precondition(precondition)
        self.ftl.age(age, seed)
        self.c = Counters()
        self.host = HostInterface(cfg, record)
        self.cache = DataCache(cfg.write_buffer_bytes // cfg.page_size,
                               cfg.read_cache_bytes // cfg.page_size)
        phy = OnfiPhy(cfg)
        self.model: TimingModel
        self.fast: FastModel | None = None
        if model == "detailed":
            self.model = DetailedModel(cfg, phy, CommandFormer(cfg), self.c, record)
        else:
            self.model = self.fast = FastModel(
                cfg, phy, CommandFormer(cfg, devices), self.c, record,
                shared.fast if shared is not None else None, device)
        #: MQSim moves a request's data over PCIe in one piece: a read's once all of it
        #: is off the channels, a write's before any of it is programmed
        self.store_forward = cfg.compat == "mqsim"
        self.bytes_read = 0
        self.bytes_written = 0
        self.transfers = 0
        self.mmio_reads = 0
        self._active_until = 0
        self.active_ps = 0
        #: the SLC write cache (``flash.slc``) and whether the last write taken
        #: (``write_map``) programs in SLC mode
        self.slc = SlcCache(cfg)
        self.slc_mode = False
        #: small writes share NAND pages (module docstring): only under ONFI rules and
        #: with a write buffer to gather them in; the bytes gathered so far
        self.packs = cfg.compat == "onfi" and cfg.write_buffer_bytes > 0
        self._packed = 0
        self.packed_writes = 0

    # -- serving -----------------------------------------------------------------------
    def read(self, address: int, nbytes: int, earliest: int, wire_bytes: int = 0) -> int:
        t0, start, x_end, ppns, nb = self.read_map(address, nbytes, earliest, wire_bytes)
        if ppns is not None:
            x_start, x_end = self.model.read(ppns, nb, t0)
            if start < 0 or x_start < start:
                start = x_start
        return self.read_done(t0, start, x_end, nbytes, wire_bytes)

    def read_map(self, address: int, nbytes: int, earliest: int, wire_bytes: int,
                 nand1: bool = True) -> tuple[int, int, int, I64 | None, I64]:
        """``read`` up to the NAND read of several pages: when the device takes the
        command, the first data-out start so far (-1: none), the last end so far, and
        the pages still to read with the bytes wanted of each (None: none; a single
        page is read here, unless ``nand1`` is False)."""
        page = self.page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        self.bytes_read += nbytes
        t0 = self.host.fetch(earliest)
        held = self.cache.held_runs(range(lo, hi), t0)
        if held:  # the runs between them miss
            miss: list[tuple[int, int]] = []
            at = lo
            for a, b in held:
                if a > at:
                    miss.append((at, a))
                at = b
            if at < hi:
                miss.append((at, hi))
        else:
            miss = [(lo, hi)]
        n_miss = sum(b - a for a, b in miss)
        start = t0 if n_miss < hi - lo else -1
        if not n_miss:
            return t0, start, t0, None, _NONE
        if wire_bytes and self.cache.read_pages:
            # in place: the controller serves lines from DRAM, so the page stays
            self.cache.filled_runs(miss)
        elif self.cache.read_pages and (address % page or (address + nbytes) % page):
            # the read cache keeps the NAND pages the host read only part of (only
            # the first and the last page of a read can be partial, and only if the
            # read does not start or end on a page boundary)
            end_b = address + nbytes
            gone = {lo} if miss[0][0] == lo else set()  # the end pages that missed
            if miss[-1][1] == hi:
                gone.add(hi - 1)
            part = [p for p in sorted(gone)
                    if p * page < address or (p + 1) * page > end_b]
            if part:
                self.cache.filled(part)
        if n_miss > 1:
            ppns, nb = self._map_read(miss, n_miss, address, nbytes)
            return t0, start, t0, ppns, nb
        ppn, nb1 = self._page1(miss[0][0], address, nbytes)
        if not nand1:
            return t0, start, t0, np.array([ppn]), np.array([nb1])
        x_start, x_end = self.model.read1(ppn, nb1, t0)
        return t0, x_start if start < 0 or x_start < start else start, x_end, None, _NONE

    def read_done(self, t0: int, start: int, x_end: int, nbytes: int,
                  wire_bytes: int) -> int:
        """``read`` from the NAND read on: the data crosses the host link."""
        if self.store_forward:
            start = x_end  # MQSim: the request's data crosses once all of it is read
        if wire_bytes:
            self.mmio_reads += 1
        end = self.host.to_host(start, wire_bytes or nbytes, not wire_bytes)
        if x_end > end:
            end = x_end
        self._finish(t0, end)
        return end

    def serve_many(self, read: bool, addresses: list[int], nbytes: int,
                   earliest: int) -> list[int]:
        """``read`` (or ``write``) of ``nbytes`` at each of ``addresses`` in turn, from
        ``earliest``; their completion times. (The reference of ``flash.pages``, which
        books the same in a few calls per batch.)"""
        f = self.read if read else self.write
        return [f(a, nbytes, earliest) for a in addresses]

    def _page1(self, lpn: int, address: int, nbytes: int) -> tuple[int, int]:
        """The physical page of one missing logical page, and the bytes wanted of it."""
        page = self.page
        c = self.c
        ppn = self.ftl.lookup1(lpn)
        if ppn < 0:
            c.unmapped_reads += 1
            ppn = self.ftl.static_ppn1(lpn)
        nb1 = page - max(address - lpn * page, 0) - max((lpn + 1) * page - (address + nbytes), 0)
        c.host_pages_read += 1
        c.channel_bytes += nb1
        return ppn, nb1

    def _map_read(self, miss: list[tuple[int, int]], n: int, address: int,
                  nbytes: int) -> tuple[I64, I64]:
        """The physical pages of the missing logical pages (the runs ``miss``, ``n``
        pages in all), and the bytes wanted of each."""
        page = self.page
        c = self.c
        first_off = address - miss[0][0] * page
        last_cut = miss[-1][1] * page - (address + nbytes)
        ftl = self.ftl
        ppns = np.empty(n, dtype=np.int64)
        k = 0
        for a, b in miss:
            c.unmapped_reads += ftl.read_run(a, ppns[k:k + b - a])
            k += b - a
        nb = np.full(n, page, dtype=np.int64)
        total = n * page
        if first_off > 0:
            nb[0] -= first_off
            total -= first_off
        if last_cut > 0:
            nb[-1] -= last_cut
            total -= last_cut
        c.host_pages_read += n
        c.channel_bytes += total
        return ppns, nb

    def write(self, address: int, nbytes: int, earliest: int) -> int:
        t0, adm, first_in, l_end, p_end, ppns = self.write_map(address, nbytes, earliest)
        if ppns is not None:
            p_end = self.model.program(ppns, first_in, l_end, self.slc_mode)
        return self.write_done(address, nbytes, t0, adm, l_end, p_end)

    def write_map(self, address: int, nbytes: int, earliest: int
                  ) -> tuple[int, int, int, int, int, I64 | None]:
        """``write`` up to the programming of several pages: when the device takes the
        command, when the write buffer admits it (-1: written through), when its data
        starts and ends crossing the link, and the pages to program (None: none; a
        single page is programmed here, the end of its program next to it)."""
        page = self.page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        self.bytes_written += nbytes
        t0 = self.host.fetch(earliest)
        cache = self.cache
        adm = cache.admit(hi - lo, t0) if cache.write_pages else -1
        l_start, l_end = self.host.from_host(adm if adm > t0 else t0, nbytes)
        first_in = l_end if self.store_forward else l_start
        ftl = self.ftl
        model = self.model
        if hi - lo == 1 and nbytes < page and self.packs:
            self._packed += nbytes
            if self._packed < page:  # its data waits in the buffer for the page to fill
                self.packed_writes += 1
                return t0, adm, first_in, l_end, l_end, None
            self._packed -= page
        slc = self.slc_mode = bool(self.slc) and self.slc.take(hi - lo, t0, self._active_until)
        if hi - lo == 1:
            ppn, jobs = ftl.write1(lo)
            for job in jobs:
                model.gc(job, t0)
            return t0, adm, first_in, l_end, model.program1(ppn, first_in, l_end, slc), None
        ppns, jobs = ftl.write_range(lo, hi)
        for job in jobs:
            model.gc(job, t0)
        return t0, adm, first_in, l_end, 0, ppns

    def write_done(self, address: int, nbytes: int, t0: int, adm: int, l_end: int,
                   p_end: int) -> int:
        """``write`` from the end of its programs on."""
        page = self.page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        cache = self.cache
        if adm >= 0:
            cache.buffered(range(lo, hi), p_end)
            end = l_end
        else:
            cache.invalidate(range(lo, hi))
            end = p_end
        if self.ftl.low_planes:
            self._background_gc(p_end)
        self._finish(t0, end)
        return end

    def trim(self, address: int, nbytes: int) -> None:
        """Unmap the whole pages in the range (partial pages keep their data)."""
        page = self.page
        lo = -(-address // page)
        hi = (address + nbytes) // page
        if hi > lo:
            self.ftl.trim_range(lo, hi)
            self.cache.invalidate(range(lo, hi))

    def _background_gc(self, now: int) -> None:
        """Planes under the soft threshold reclaim blocks, taking die and channel time:
        with the other planes of their die that are at the threshold, relocated and
        erased together (``FTL.collect_die``, ``TimingModel.gc_die``)."""
        ftl = self.ftl
        soft = ftl.soft_blocks
        fc = ftl.free_count
        for p in sorted(ftl.low_planes):
            while fc[p] < soft:
                jobs = ftl.collect_die(p)
                if not jobs:
                    break
                self.model.gc_die(jobs, now)

    def _finish(self, t0: int, end: int) -> None:
        self.host.done(end)
        self.transfers += 1
        if not self.transfers & 255:
            # Channel and link bookings that ended before now can no longer be reached.
            self.model.prune(t0)
            self.host.link_rd.prune(t0)
            self.host.link_wr.prune(t0)
        # Controller active time: the union of the transactions' lifetimes.
        if end > self._active_until:
            self.active_ps += end - max(t0, self._active_until)
            self._active_until = end

    def activity(self) -> tuple[int, int, int]:
        """What ``_finish`` keeps: the transactions served, the controller's active
        time and the end of the last transaction that extended it."""
        return self.transfers, self.active_ps, self._active_until

    def finished_many(self, activity: tuple[int, int, int], ends: list[int]) -> None:
        """Transactions that a compiled batch (``flash.pages``) finished as ``_finish``
        does, ending at ``ends``: their completions into the NVMe queue, and the
        ``activity`` it carried on from this device's."""
        self.host.done_many(ends)
        self.transfers, self.active_ps, self._active_until = activity

    def idle_from(self) -> int:
        """When every die, channel and link direction is free again."""
        return max(self.model.idle_from(), self.host.link_rd.busy_until,
                   self.host.link_wr.busy_until)

    # -- reporting ---------------------------------------------------------------------
    def report(self, elapsed: int) -> dict[str, Any]:
        ftl, c, m = self.ftl, self.c, self.model
        cache = self.cache
        suspends, merged = m.lane_counts()
        out: dict[str, Any] = {
            "transfers": self.transfers,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "host_pages_read": c.host_pages_read,
            "unmapped_reads": c.unmapped_reads,
            "gc_pages_read": c.gc_pages_read,
            "pages_read": c.host_pages_read + c.gc_pages_read,
            "host_pages_written": ftl.host_pages,
            "pages_programmed": c.pages_programmed,
            "gc_pages_moved": ftl.gc_pages,
            "wl_pages_moved": ftl.wl_pages,
            "erases": ftl.erase_count,
            "gc_count": ftl.gc_count,
            "forced_gc_count": ftl.forced_gc_count,
            "wl_count": ftl.wl_count,
            "bad_blocks": ftl.bad_blocks,
            "trimmed_pages": ftl.trimmed_pages,
            "waf": ftl.waf,
            "commands": {"read": c.read_cmds, "program": c.program_cmds,
                         "erase": c.erase_cmds},
            "suspends": suspends,
            "merged_program_pages": merged,
            "cache": {"write_buffered_pages": cache.write_hits,
                      "write_buffer_waits": cache.write_waits,
                      "buffer_read_hits": cache.buffer_read_hits,
                      "cache_read_hits": cache.cache_read_hits},
            "nvme_queue_waits": self.host.queue_waits,
            "packed_writes": self.packed_writes,
            "channel_bytes": c.channel_bytes,
            "ftl_state_bytes": ftl.state_bytes(),
            "max_erase_count": int(ftl.erases.max()),
            "link_rd": self.host.link_rd.report(elapsed),
            "link_wr": self.host.link_wr.report(elapsed),
        }
        if self.slc:
            out["slc"] = self.slc.report()
        out.update(m.lane_reports(elapsed))
        return out
