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
from flash.runs import (
    ALL_DONE,
    FILL_ALL,
    FILL_PARTIAL,
    INVALIDATE_LEFT,
    NO_FILL,
    PROGRAM_LEFT,
    READ1_LEFT,
    READ_FRONT,
    RunReader,
    RunWriter,
)
from flash.scheduler import CommandFormer, Counters
from flash.slc import SlcCache
from tmhw.sim.errors import TmhwError

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
        one array of lanes, each on its own (``flash.fast``): the first one makes it,
        the others are given it as ``shared`` (the first device)."""
        self.cfg = cfg
        self.device = device
        self.page = cfg.page_size
        self.ftl = FTL(cfg)
        self._read_front = READ_FRONT.get(self.ftl.mapping.dtypes)
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
        #: ``read_map``'s scratch for ``read_front``: a read's pages DRAM holds, the
        #: runs that miss, and its results
        self._mask = np.zeros(0, dtype=np.bool_)
        self._runs = np.zeros((1, 2), dtype=np.int64)
        self._res = np.zeros(4, dtype=np.int64)
        #: the SLC write cache (``flash.slc``) and whether the last write taken
        #: (``write_map``) programs in SLC mode
        self.slc = SlcCache(cfg)
        self.slc_mode = False
        #: small writes share NAND pages (module docstring): only under ONFI rules and
        #: with a write buffer to gather them in; the bytes gathered so far
        self.packs = cfg.compat == "onfi" and cfg.write_buffer_bytes > 0
        self.packed = 0
        self.packed_writes = 0
        #: a read and a run's write in one compiled call, on the fast model
        #: (``flash.runs``)
        self._run_writer = None if self.fast is None else RunWriter(
            self.ftl, self.cache, self.host, self.slc, self.fast, self.store_forward)
        self._run_reader = None if self.fast is None else RunReader(
            self.ftl, self.cache, self.host, self.fast, self.store_forward)

    # -- serving -----------------------------------------------------------------------
    def read(self, address: int, nbytes: int, earliest: int, wire_bytes: int = 0) -> int:
        reader = self._run_reader
        page = self.page
        if reader is not None and (address + nbytes - 1) // page > address // page \
                and reader.takes():
            # (more than one page: one page from NAND is ``read1``'s, in Python)
            return self._read_run(reader, address, nbytes, earliest, wire_bytes)
        t0, start, x_end, ppns, nb = self.read_map(address, nbytes, earliest, wire_bytes)
        if ppns is not None:
            x_start, x_end = self.model.read(ppns, nb, t0)
            if start < 0 or x_start < start:
                start = x_start
        return self.read_done(t0, start, x_end, nbytes, wire_bytes)

    def _read_run(self, reader: RunReader, address: int, nbytes: int, earliest: int,
                  wire_bytes: int) -> int:
        """``read`` of more than one page, its steps but the NVMe queue's in one
        compiled call (``flash.runs``) where more than one page is read from NAND or
        none."""
        t0, lo, hi, fill = self._read_taken(address, nbytes, earliest, wire_bytes)
        host = self.host
        got, ppns, nb, front, rres = reader.book(
            lo, hi, t0, fill, address, nbytes, self._mask, self._runs,
            host.read_ps(wire_bytes or nbytes, not wire_bytes))
        self._count_front(got, front)
        start, x_end, end, cmds, stage = rres
        if stage == ALL_DONE:
            self.c.read_cmds += cmds
            if wire_bytes:
                self.mmio_reads += 1
            self._finish(t0, end)
            return end
        if stage == READ1_LEFT:
            x_start, x_end = self.model.read1(ppns.item(0), nb.item(0), t0)
        else:  # (the rows grow, and the rest as ``read`` books it)
            x_start, x_end = self.model.read(ppns[:got], nb[:got], t0)
        if start < 0 or x_start < start:
            start = x_start
        return self.read_done(t0, start, x_end, nbytes, wire_bytes)

    def _read_taken(self, address: int, nbytes: int, earliest: int,
                    wire_bytes: int) -> tuple[int, int, int, int]:
        """``read`` up to its pages in DRAM: when the device takes the command, its
        logical pages [lo, hi), and which of them the read cache keeps
        (``flash.runs.read_front``'s ``fill``); ``read_front``'s scratch sized."""
        page = self.page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        self.bytes_read += nbytes
        t0 = self.host.fetch(earliest)
        n = hi - lo
        ftl = self.ftl
        if lo < 0 or hi > ftl.n_lpn:
            raise TmhwError(f"flash: logical page out of range [0, {ftl.n_lpn})")
        cache = self.cache
        if not cache.read_pages:
            fill = NO_FILL
        elif wire_bytes:
            # in place: the controller serves lines from DRAM, so the page stays
            fill = FILL_ALL
        else:
            # the read cache keeps the NAND pages the host read only part of (only
            # the first and the last page of a read can be partial, and only if the
            # read does not start or end on a page boundary)
            fill = FILL_PARTIAL if address % page or (address + nbytes) % page else NO_FILL
        if self._mask.size < n:
            self._mask = np.zeros(2 * n, dtype=np.bool_)
            self._runs = np.zeros((2 * n + 1, 2), dtype=np.int64)
        return t0, lo, hi, fill

    def _count_front(self, got: int, front: list[int]) -> None:
        """The counters of ``read_front``'s results (``front``), ``got`` pages missing."""
        bufs, hits, unmapped, wanted = front
        cache = self.cache
        cache.buffer_read_hits += bufs
        cache.cache_read_hits += hits
        if got:
            c = self.c
            c.unmapped_reads += unmapped
            c.host_pages_read += got
            c.channel_bytes += wanted

    def read_map(self, address: int, nbytes: int, earliest: int, wire_bytes: int,
                 nand1: bool = True) -> tuple[int, int, int, I64 | None, I64]:
        """``read`` up to the NAND read of several pages: when the device takes the
        command, the first data-out start so far (-1: none), the last end so far, and
        the pages still to read with the bytes wanted of each (None: none; a single
        page is read here, unless ``nand1`` is False)."""
        t0, lo, hi, fill = self._read_taken(address, nbytes, earliest, wire_bytes)
        n = hi - lo
        cache = self.cache
        ppns = np.empty(n, dtype=np.int64)
        nb = np.empty(n, dtype=np.int64)
        res = self._res
        l2p = self.ftl.l2p.kernel_state()
        while (got := int(self._read_front.call(cache.read_state(), l2p, lo, hi, t0, fill,
                                                address, nbytes, self.page,
                                                cache.read_pages, self._mask, self._runs,
                                                ppns, nb, res))) < 0:
            cache.grow_read_cache()
        self._count_front(got, res.tolist())
        start = t0 if got < n else -1
        if not got:
            return t0, start, t0, None, _NONE
        if got > 1 or not nand1:
            return t0, start, t0, ppns[:got], nb[:got]
        x_start, x_end = self.model.read1(ppns.item(0), nb.item(0), t0)
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

    def write(self, address: int, nbytes: int, earliest: int) -> int:
        t0 = -1
        runs = self._run_writer
        if runs is not None:
            page = self.page
            lo = address // page
            n = (address + nbytes + page - 1) // page - lo
            if runs.takes(n):
                self.bytes_written += nbytes
                t0 = self.host.fetch(earliest)
                end = self._write_run(address, nbytes, lo, n, t0)
                if end >= 0:
                    return end
        t0, adm, first_in, l_end, p_end, ppns = self.write_map(address, nbytes, earliest,
                                                               t0)
        if ppns is not None:
            p_end = self.model.program(ppns, first_in, l_end, self.slc_mode)
        return self.write_done(address, nbytes, t0, adm, l_end, p_end)

    def _write_run(self, address: int, nbytes: int, lo: int, n: int, t0: int) -> int:
        """``write`` of the run of ``n`` pages from ``lo`` taken at ``t0``, its steps
        but the NVMe queue's in one compiled call (``flash.runs``); -1 where that
        call declined (nothing done)."""
        assert self._run_writer is not None
        got = self._run_writer.book(lo, n, nbytes, t0, self._active_until)
        if got is None:
            return -1
        out, (adm, l_end, first_in, slc, cmds, p_end, end, stage) = got
        self.slc_mode = bool(slc)
        cache = self.cache
        if adm > t0:
            cache.write_waits += 1
        if stage == PROGRAM_LEFT:  # (their rows grow, then the rest as ``write`` books it)
            p_end = self.model.program(out, first_in, l_end, self.slc_mode)
            return self.write_done(address, nbytes, t0, adm, l_end, p_end)
        self.c.programmed(n, cmds, self.page)
        if adm >= 0:
            cache.write_hits += n
        if stage == INVALIDATE_LEFT:
            cache.invalidate(range(lo, lo + n))
        return self._written(t0, p_end, end)

    def write_map(self, address: int, nbytes: int, earliest: int, t0: int = -1
                  ) -> tuple[int, int, int, int, int, I64 | None]:
        """``write`` up to the programming of several pages: when the device takes the
        command, when the write buffer admits it (-1: written through), when its data
        starts and ends crossing the link, and the pages to program (None: none; a
        single page is programmed here, the end of its program next to it). ``t0``:
        when the device took the command, where it already has (-1: not yet)."""
        page = self.page
        lo = address // page
        hi = (address + nbytes + page - 1) // page
        if t0 < 0:
            self.bytes_written += nbytes
            t0 = self.host.fetch(earliest)
        cache = self.cache
        adm = cache.admit(hi - lo, t0) if cache.write_pages else -1
        l_start, l_end = self.host.from_host(adm if adm > t0 else t0, nbytes)
        first_in = l_end if self.store_forward else l_start
        ftl = self.ftl
        model = self.model
        if hi - lo == 1 and nbytes < page and self.packs:
            self.packed += nbytes
            if self.packed < page:  # its data waits in the buffer for the page to fill
                self.packed_writes += 1
                return t0, adm, first_in, l_end, l_end, None
            self.packed -= page
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
        return self._written(t0, p_end, end)

    def _written(self, t0: int, p_end: int, end: int) -> int:
        """A write's last steps, its programs ending at ``p_end``: a background
        collection where a plane is under the soft threshold, and ``_finish``."""
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
