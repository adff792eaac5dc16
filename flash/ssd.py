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

from flash.cache import Buffer, DataCache, held_pages
from flash.config import FlashConfig
from flash.detailed import DetailedModel
from flash.engine.dies import DieLanes
from flash.engine.gaps import GapBank
from flash.fast import FastModel
from flash.ftl import FTL, GcJob
from flash.ftl.mapping import L2pArrays, l2p_read_run
from flash.host import HostInterface
from flash.intmap import LIVE
from flash.phy import OnfiPhy
from flash.runlru import SIZE, LruArrays, lru_push, lru_runs_in, lru_spare, lru_trim
from flash.runwrite import INVALIDATE_LEFT, PROGRAM_LEFT, RunWriter
from flash.scheduler import CommandFormer, Counters
from flash.slc import SlcCache
from tmhw.sim.errors import TmhwError
from tmhw.sim.jit import Directs, njit_noref

I64 = npt.NDArray[np.int64]
_NONE: I64 = np.zeros(0, dtype=np.int64)
MODELS = ("fast", "detailed")
#: ``read_front``'s fills of the read cache: none, every page read from NAND (an
#: in-place read), or the end pages a read wanted only part of
NO_FILL, FILL_ALL, FILL_PARTIAL = 0, 1, 2
#: ``read_front``'s results: write-buffer hits, read-cache hits, unmapped pages read,
#: bytes wanted of the NAND pages
BUF_HITS, CACHE_HITS, UNMAPPED, WANTED = range(4)


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
        self._read_front = _READ_FRONT.get(self.ftl.mapping.dtypes)
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
        #: a run's write in one compiled call, on the fast model (``flash.runwrite``)
        self._run_writer = None if self.fast is None else RunWriter(
            self.ftl, self.cache, self.host, self.slc, self.fast, self.store_forward)

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
        ppns = np.empty(n, dtype=np.int64)
        nb = np.empty(n, dtype=np.int64)
        res = self._res
        l2p = ftl.l2p.kernel_state()
        while (got := int(self._read_front.call(cache.read_state(), l2p, lo, hi, t0, fill,
                                                address, nbytes, page, cache.read_pages,
                                                self._mask, self._runs, ppns, nb,
                                                res))) < 0:
            cache.grow_read_cache()
        bufs, hits, unmapped, wanted = res.tolist()
        cache.buffer_read_hits += bufs
        cache.cache_read_hits += hits
        start = t0 if got < n else -1
        if not got:
            return t0, start, t0, None, _NONE
        c = self.c
        c.unmapped_reads += unmapped
        c.host_pages_read += got
        c.channel_bytes += wanted
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
        but the NVMe queue's in one compiled call (``flash.runwrite``); -1 where that
        call declined (nothing done)."""
        assert self._run_writer is not None
        got = self._run_writer.book(lo, n, nbytes, t0, self._active_until)
        if got is None:
            return -1
        out, (adm, l_end, first_in, slc, cmds, p_end, end, stage, _) = got
        self.slc_mode = bool(slc)
        cache = self.cache
        if adm > t0:
            cache.write_waits += 1
        if stage == PROGRAM_LEFT:  # (their rows grow, then the rest as ``write`` books it)
            p_end = self.model.program(out, first_in, l_end, self.slc_mode)
            return self.write_done(address, nbytes, t0, adm, l_end, p_end)
        c = self.c
        c.pages_programmed += n
        c.channel_bytes += n * self.page
        c.program_cmds += cmds
        if adm >= 0:
            cache.write_hits += n
        if stage == INVALIDATE_LEFT:
            cache.invalidate(range(lo, lo + n))
        if self.ftl.low_planes:
            self._background_gc(p_end)
        self._finish(t0, end)
        return end

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


# -- a read up to its NAND read, compiled ---------------------------------------------
@njit_noref
def read_front(dram: tuple[Buffer, LruArrays], l2p: tuple[L2pArrays, tuple[I64, int, int]],
                lo: int, hi: int, now: int, fill: int, address: int, nbytes: int,
                page: int, capacity: int, mask: npt.NDArray[np.bool_], runs: I64,
                ppns: I64, nb: I64, res: I64) -> int:
    """``Ssd.read_map``'s read of the logical pages [lo, hi) (``nbytes`` from
    ``address``) taken at ``now``, from DRAM on: the pages the write buffer holds
    (``held_pages``: a buffered page whose program ended leaves it), then those the
    read cache holds besides, which become its most recently used, run by run in page
    order; the rest miss. Of these the read cache then keeps (``fill``) every one
    (``FILL_ALL``), or the end pages the read wants only part of (``FILL_PARTIAL``),
    each run in ascending order, the least recently used leaving down to ``capacity``.
    The missing pages' physical pages (``l2p_read_run``) go into ``ppns`` and the
    bytes wanted of each into ``nb``; ``res``: ``BUF_HITS``, ``CACHE_HITS``,
    ``UNMAPPED``, ``WANTED``. Returns how many pages miss, or -1 (nothing done but
    buffered pages whose programs ended leaving) where the read cache has too few
    spare rows for its moves (two a run: ``lru_push``), to grow and call again.
    ``mask`` and ``runs`` are scratch of at least ``hi - lo`` entries and
    ``hi - lo + 1`` rows."""
    buf, lru = dram
    seg, idx, meta, free, out = lru
    n = hi - lo
    for j in range(n):
        mask[j] = False
    res[BUF_HITS] = res[CACHE_HITS] = res[UNMAPPED] = res[WANTED] = 0
    if buf[3][LIVE] > 0:
        res[BUF_HITS] = held_pages(buf, lo, now, mask[:n])
    # the read-cache hits the buffer does not hold, as maximal runs in page order
    n_hit = 0
    hits = 0
    if meta[SIZE] > 0:
        k = lru_runs_in(seg, idx, meta, lo, hi, out)
        for r in range(k):
            at = -1
            for p in range(out[r, 0], out[r, 1]):
                if mask[p - lo]:
                    if at >= 0:
                        runs[n_hit, 0], runs[n_hit, 1] = at, p
                        n_hit += 1
                        at = -1
                elif at < 0:
                    at = p
            if at >= 0:
                runs[n_hit, 0], runs[n_hit, 1] = at, out[r, 1]
                n_hit += 1
    for h in range(n_hit):
        for p in range(runs[h, 0], runs[h, 1]):
            mask[p - lo] = True
    # the runs that miss (between the pages DRAM holds), after the hits' runs
    m0 = n_hit
    m = m0
    at = -1
    for j in range(n):
        if mask[j]:
            if at >= 0:
                runs[m, 0], runs[m, 1] = at, lo + j
                m += 1
                at = -1
        elif at < 0:
            at = lo + j
    if at >= 0:
        runs[m, 0], runs[m, 1] = at, hi
        m += 1
    # the read cache's moves: the hits, then the fills
    # (the end pages that missed and that the read wants only part of)
    first_part = last_part = False
    if m > m0 and fill == FILL_PARTIAL:
        end_b = address + nbytes
        first_part = runs[m0, 0] == lo and (lo * page < address or (lo + 1) * page > end_b)
        last_part = (hi - 1 > lo and runs[m - 1, 1] == hi
                     and ((hi - 1) * page < address or hi * page > end_b))
    pushes = n_hit + (m - m0 if fill == FILL_ALL else int(first_part) + int(last_part))
    if pushes and lru_spare(seg, meta) < 2 * pushes:
        return -1
    for h in range(n_hit):
        lru_push(seg, idx, meta, free, runs[h, 0], runs[h, 1])
        hits += runs[h, 1] - runs[h, 0]
    res[CACHE_HITS] = hits
    if m > m0:
        if fill == FILL_ALL:
            for r in range(m0, m):
                lru_push(seg, idx, meta, free, runs[r, 0], runs[r, 1])
            lru_trim(seg, idx, meta, free, capacity, out)
        elif first_part or last_part:
            # (two pages in a row: the second push continues the first's segment)
            if first_part:
                lru_push(seg, idx, meta, free, lo, lo + 1)
            if last_part:
                lru_push(seg, idx, meta, free, hi - 1, hi)
            lru_trim(seg, idx, meta, free, capacity, out)
    # the missing pages' physical pages and the bytes wanted of each
    table_pre = l2p[1]
    k = 0
    for r in range(m0, m):
        a, b = runs[r, 0], runs[r, 1]
        res[UNMAPPED] += l2p_read_run(l2p[0], table_pre, a, ppns[k:k + b - a])
        k += b - a
    for j in range(k):
        nb[j] = page
    wanted = k * page
    if k:
        first_off = address - runs[m0, 0] * page
        last_cut = runs[m - 1, 1] * page - (address + nbytes)
        if first_off > 0:
            nb[0] -= first_off
            wanted -= first_off
        if last_cut > 0:
            nb[k - 1] -= last_cut
            wanted -= last_cut
    res[WANTED] = wanted
    return k


#: ``read_front`` past its dispatcher (``tmhw.sim.jit.Directs``, by the FTL's maps' dtypes)
_READ_FRONT = Directs(read_front)
