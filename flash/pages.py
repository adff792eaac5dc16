"""One-page commands in batches: a host queue's batch of whole-page reads, or of
whole-page writes, issued at one time to one device (``FlashTarget.transport_many``),
served layer by layer in a few calls per batch, where ``Ssd.serve_many`` (``Ssd.read``
or ``Ssd.write`` of each in turn) makes some thirty per command.

Each layer does what the per-command path does, for the commands in order:

- NVMe queue: ``HostInterface.fetch_many`` takes the commands that would not wait;
- controller DRAM: a read of a page the write buffer or the read cache (maybe) holds
  is left to the per-command path (``DataCache.first_held``); writes are taken while
  the buffer has room for them without waiting (``DataCache.release_until``) and none
  of their pages is in the read cache, and buffered in a compiled call
  (``DataCache.buffered_pages``);
- FTL: a read's page is looked up in the timing kernel (``flash.ftl.kernels.l2p_of``,
  and the L2P's dict of sparse pages, an ``IntMap``); writes are placed and mapped by
  ``FTL.write_many`` (one kernel call, and another after each block it opens) while no
  page needs a collection;
- timing: one compiled call (``_read_pages``, ``_write_pages``) books each command's
  NAND read or program (``flash.engine.chunks.read_page``, ``program_page``), its
  transfer on the host link (``flash.host``'s rows of a ``GapBank``), its completion and the
  controller's active time, and prunes the channels, the dies' queues and the link after
  every 256th command, as ``Ssd._finish`` does.

The flash bench's closed loops (``ReadLoop``: reads within a page or of whole pages;
``WriteLoop``: writes within a page or of whole pages, through a write buffer or not,
placed by the FTL's run kernel and programmed as one chunk each on the fast model,
command by command on the detailed one, under either rules, and a mix of such reads
and writes) are this path with a time per command:
each request goes out when the earliest of the loop's outstanding ones completes, and
the NVMe queue's waits and bounded memory of completions are booked in the kernel too
(``nvme_fetch``, ``nvme_done``), so a loop of any length is one call per step of the
bench's progress bar, plus one per request the kernel hands back (a write the run
kernel declines).

The command a layer does not take goes through the per-command path, from the state
the batch left, and the batch path resumes after it (for the rest of the batch, if it
takes none of them). Only the fast model on die lanes (not ``compat = "mqsim"``: no
chip lock, no convoy) with nothing recorded and cut-through transfers take this path,
and writes only while no plane is under the soft collection threshold (each would be
followed by a background collection); the closed loop of writes also takes the
detailed model, under either rules, with nothing recorded. The per-command path is
the reference they are tested against (``tests/flash/test_flash_pages.py``,
``tests/flash/test_flash_read_loop.py``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.cache import Buffer, admit_write, buffer_room, buffer_run
from flash.detailed import DetailedModel
from flash.engine.chunks import (
    CH_FULL,
    LANE_FULL,
    NO_WAIT,
    Lanes,
    program_chunk,
    program_page,
    read_chunk,
    read_page,
)
from flash.engine.commands import RESULTS, TIMES, program_cmds, read_cmds
from flash.engine.dies import die_prune, lane_full
from flash.engine.gaps import Meta, gap_book, gap_prune, gap_room, gap_room_for
from flash.fast import FastModel
from flash.ftl import FTL
from flash.ftl.kernels import (
    DONE,
    PLACED,
    Blocks,
    Fresh,
    L2p,
    l2p_of,
    write_open,
    write_run,
)
from flash.ftl.mapping import L2pArrays
from flash.host import ctl_take, nvme_done, nvme_fetch
from flash.intmap import im_has_room
from flash.runlru import SIZE as LRU_SIZE
from flash.runlru import LruArrays, lru_remove, lru_spare
from flash.runs import (
    BUF_HITS,
    CACHE_HITS,
    FILL_PARTIAL,
    NO_FILL,
    UNMAPPED,
    WANTED,
    read_front,
)
from flash.scheduler import TimingBase
from flash.slc import slc_take
from flash.ssd import Ssd
from tmhw.sim.jit import njit, njit_inline, njit_noref
from tmhw.sim.rowheap import row_pop, row_push

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
#: an SLC cache as the write loop takes it: ``SlcCache.ints`` and ``floats``, then the
#: model's geometry and cell records in SLC mode (``TimingBase.geo_slc``, ``cell_slc``)
Slc = tuple[I64, npt.NDArray[np.float64], npt.NDArray[np.void], npt.NDArray[np.void]]
#: a batch's record (one, handed to its kernel and changed by it): the device's
#: transfers so far, its active time and the end of the last transaction that extends
#: it (``Ssd.activity``), program commands and pages joined to waiting programs in the
#: batch, reads of pages never written, and why and at which page (in the lanes'
#: numbering) a kernel stopped early; then what the kernel reads: when the commands
#: are taken, a page's time on the host link, whether writes complete once buffered,
#: the device's channels and its first page in the lanes' numbering; when the controller
#: can take the next command and its time per command (``HostInterface.fetch``)
BATCH = np.dtype([(name, np.int64) for name in (
    "transfers", "active", "active_until", "cmds", "joined", "unmapped", "stop", "ppn",
    "t0", "dur", "buffered", "ch0", "ch1", "ppn0", "ctl", "ctl_ps", "lane0", "lane1")])
#: ``stop``: a channel's row or a die lane's row (``flash.engine.chunks``), or a link
#: direction's row is full
LINK_FULL = 4
#: a closed loop's state (``ClosedLoop``): its queue depth, the requests outstanding
#: (rows of its ``work`` heap), the commands in the NVMe queue (``HostInterface``'s, as
#: a heap in ``queue``) and its depth, the commands that waited for it, and the time the
#: last request went out; for writes, how far the next request has got (``PLACED``,
#: ``SENT``), when it went out and its data's first and last time on the link, the FTL's
#: write sequence and the runs the FTL's run kernel wrote since the loop's last ``_load``;
#: for reads (a mix's too), their time on the link and on the channel after tR; for
#: reads of several pages or of parts of pages a read cache keeps
#: (``_front_read_one``): whether they are, the pages a read spans, the timing model
#: (``FAST`` or not) and the device's column of its results, the cache's capacity, the
#: page and request sizes, and the write-buffer and read-cache hits, the pages read
#: from NAND, the read commands and the bytes wanted of them so far; for writes through
#: a write buffer: its pages (0: none), whether small writes share a page
#: (``Ssd.packs``) and the bytes gathered for the next (``Ssd.packed``), whether this
#: write only waits for the page to fill, and the writes that waited for room, the pages
#: acknowledged from the buffer, the writes that only waited and the pages programmed;
#: the SLC cache's pages (0: none), whether this write programs in SLC mode and the
#: last write's (-1: none since ``_load``), and its tPROG
LOOP = np.dtype([(name, np.int64) for name in (
    "qd", "nw", "nq", "depth", "waits", "now", "pend", "req_now", "t_in", "t_end", "seq",
    "runs", "rdur", "x", "front", "span", "mode", "device", "capacity", "page", "nbytes",
    "bufhits", "hits", "got", "rcmds", "wanted", "wcap", "packs", "packed",
    "pack_now", "bwaits", "whits", "pwrites", "wprog", "slc_cap", "slc_now", "slc_last",
    "t_slc")])
#: a write's progress in ``_write_loop`` (0: not begun): its pages placed, then it went
#: out and its data crossed the link
PLACED_, SENT = 1, 2
#: ``stop`` of ``_write_loop`` besides the rows': the run kernel placed the pages and
#: left their map to the caller (``FTL.map_placed``), or declined (``Ssd.write`` serves
#: the request); a one-page write brought a segment of the map's dict to ``dense_at``
#: entries (the caller makes it dense: ``L2P.densify_reached``)
MAP_PLACED, BY_COMMAND, DENSIFY = 5, 6, 7
#: ``stop`` of ``_read_loop``: the read cache's rows have too few spare for a read's
#: move (the caller grows them: ``DataCache.grow_read_cache``); of ``_write_loop``: the
#: write buffer has no room for a write's row or pages (``DataCache.make_room``)
CACHE_FULL, BUF_ROOM = 8, 9
#: ``_write_loop``'s programs: one chunk on the fast model, or command by command on the
#: detailed one, from the data's first time on the link (cut-through) or its last
#: (``compat = "mqsim"``)
FAST, CUT_THROUGH, STORE_FORWARD = 0, 1, 2
#: ``_write_loop``'s ``prog``: the mode, the detailed model's dies' queues, and
#: ``program_cmds``' times and results
Programs = tuple[int, I64, I64, I64]
#: bookings between prunes of the channels and the link (``Ssd._finish``)
PRUNE_EVERY = 256
#: the fast model's records the page kernels take (``FastModel.geo``, ``cmds``, ``cell``)
Device = tuple[npt.NDArray[np.void], npt.NDArray[np.void], npt.NDArray[np.void]]
#: the host link's two directions (``GapBank.arrays()``: rows 0 read, 1 write)
Link = tuple[I64, Meta]
#: what the reads look up a page in: the L2P and the FTL's geometry
#: (``flash.ftl.kernels``)
Lookup = tuple[L2p, npt.NDArray[np.void]]
#: ``_front_read_one``'s: the controller's DRAM (``DataCache.read_state``), the map
#: (``SparseL2P.kernel_state``), the requests' addresses and ``ReadLoop.front``
Front = tuple[tuple[Buffer, LruArrays], tuple[L2pArrays, tuple[I64, int, int]], I64,
              npt.NDArray[np.bool_], I64, I64, I64, I64, I64, I64, I64, I64]


def _within_or_whole(addresses: I64, nbytes: int, page: int) -> bool:
    """Whether every request of ``nbytes`` at ``addresses`` lies within one page, or
    is of whole pages from a page's start (what the closed loops take)."""
    off = addresses % page
    if nbytes <= page:
        return bool((off + nbytes <= page).all())
    return not nbytes % page and not off.any()


class PageBatch:
    """The batch path of one device (module docstring) on its timing ``model``: the
    fast model, or for reads alone the detailed one (whose one-page read is
    ``read_page``'s: ``DetailedModel.read`` of one page books the same)."""

    def __init__(self, ssd: Ssd, model: TimingBase) -> None:
        self.ssd = ssd
        self.model = model
        self.dev: Device = (model.geo, model.cmds, model.cell)
        #: writes too (the detailed model's programs are its own, ``program_cmds``)
        self.writes = isinstance(model, FastModel)
        #: nothing recorded
        quiet = not model.dies.record and not ssd.host.links.record
        #: whole-page transfers on this path: the fast model on die lanes (no chip lock,
        #: no convoy), data cut through, nothing recorded
        self.on = (not (model.convoy or model.chip_lock) and not ssd.store_forward
                   and quiet)
        #: the closed loop of writes (``WriteLoop``): this path's, or the detailed
        #: model's under either rules (its programs booked command by command, as
        #: ``DetailedModel.program`` books them), nothing recorded
        self.loop_writes = self.on if self.writes else quiet

    def serve(self, read: bool, addresses: list[int], nbytes: int,
              earliest: int) -> list[int]:
        """``Ssd.read`` (or ``Ssd.write``) of ``nbytes`` at each of ``addresses`` in
        turn, from ``earliest``: their completion times, booked here as far as the
        layers take the commands and per command where they do not."""
        ssd = self.ssd
        f = ssd.read if read else ssd.write
        if not self.on or not (read or self.writes):
            return [f(a, nbytes, earliest) for a in addresses]
        ends = self._batch(read, addresses, nbytes, earliest)
        while len(ends) < len(addresses):
            # the command the batch stopped at, per command; then the batch again
            ends.append(f(addresses[len(ends)], nbytes, earliest))
            more = self._batch(read, addresses[len(ends):], nbytes, earliest)
            if not more:
                return ends + [f(a, nbytes, earliest) for a in addresses[len(ends):]]
            ends += more
        return ends

    def read_loop(self, addresses: I64, nbytes: int, qd: int) -> ReadLoop | None:
        """The flash bench's closed loop of reads of ``nbytes`` at ``addresses`` at queue
        depth ``qd``, compiled (``ReadLoop``); None where it would book otherwise than
        ``Ssd.read``: off this path, a read neither within one page nor of whole pages,
        or a page the controller's DRAM holds."""
        if self._declines_reads(addresses, nbytes):
            return None
        return ReadLoop(self, addresses, qd, nbytes)

    def write_loop(self, addresses: I64, nbytes: int, qd: int) -> WriteLoop | None:
        """The flash bench's closed loop of writes of ``nbytes`` at ``addresses`` at
        queue depth ``qd``, compiled (``WriteLoop``); None where it would book otherwise
        than ``Ssd.write``: off this path, a write not within one page nor of whole pages
        of a length the FTL writes by its run kernel first (``FTL.runs_first``), one
        larger than the write buffer, or a page the controller's DRAM holds."""
        if self.declines_writes(addresses, nbytes):
            return None
        page = self.ssd.page
        return WriteLoop(self, addresses // page, qd, max(1, nbytes // page),
                         nbytes=nbytes)

    def mix_loop(self, reads: Bools, addresses: I64, nbytes: int,
                 qd: int) -> WriteLoop | None:
        """The flash bench's closed loop of requests of ``nbytes`` at ``addresses`` at
        queue depth ``qd``, each a read where ``reads`` holds and a write where it does
        not, compiled (``WriteLoop`` with its ``reads``); None where ``read_loop`` would
        decline the reads or ``write_loop`` the writes. Where DRAM may hold a page (a
        write buffer, a read cache), or a read is of several pages, the reads go as
        ``ReadLoop``'s do (``_front_read_one``), and the writes drop the read cache's
        copies."""
        ssd = self.ssd
        if (self._declines_reads(addresses, nbytes)
                or self.declines_writes(addresses, nbytes)):
            return None
        return WriteLoop(self, addresses // ssd.page, qd, max(1, nbytes // ssd.page),
                         reads, nbytes, addresses)

    def _declines_reads(self, addresses: I64, nbytes: int) -> bool:
        """``read_loop``'s refusals: off this path, a read neither within one page nor
        of whole pages, or a page the controller's DRAM holds."""
        ssd = self.ssd
        return (not self.on or not _within_or_whole(addresses, nbytes, ssd.page)
                or ssd.host.read_ps(nbytes) <= 0 or not ssd.cache.holds_nothing())

    def declines_writes(self, addresses: I64, nbytes: int) -> bool:
        """``write_loop``'s refusals (and a mix's under MQSim's rules, ``ConvoyLoop``):
        off this path, a write not within one page nor of whole pages of a length the FTL
        writes by its run kernel first, one larger than the write buffer, or a page the
        controller's DRAM holds."""
        ssd = self.ssd
        page = ssd.page
        # one page, or a part of one (``FTL.write1``'s), or a run the run kernel takes
        shape = _within_or_whole(addresses, nbytes, page) and (
            nbytes <= page or ssd.ftl.runs_first(nbytes // page))
        return bool(not self.loop_writes or not shape
                    or max(1, nbytes // page) > ssd.cache.write_pages > 0  # (through it)
                    or not ssd.cache.holds_nothing() or ssd.host.write_ps(nbytes) <= 0)

    def _batch(self, read: bool, addresses: list[int], nbytes: int,
               earliest: int) -> list[int]:
        """The completion times of the first commands of the batch that the layers
        take (module docstring); none when they take none."""
        ssd = self.ssd
        page = ssd.page
        host = ssd.host
        cache = ssd.cache
        dur = host.read_ps(nbytes) if read else host.write_ps(nbytes)
        # (a write would be followed by a background collection)
        if nbytes != page or dur <= 0 or (not read and ssd.ftl.low_planes):
            return []
        lpns, off = np.divmod(np.array(addresses, dtype=np.int64), page)
        if off.any():
            return []
        n = host.fetch_many(len(addresses), earliest)
        if not n:
            return []
        keys: list[int] = lpns[:n].tolist()
        if read:
            n = cache.first_held(keys, earliest)
        else:
            if cache.write_pages:
                cache.release_until(earliest)
                n = min(n, cache.write_pages - cache.used_pages)
            n = min(n, cache.first_cached(keys))
        if n <= 0:
            return []
        # (one call: each field set on a record costs about as much)
        model = self.model
        st = np.array([(*ssd.activity(), 0, 0, 0, 0, 0, earliest, dur,
                        cache.write_pages > 0, model.ch0, model.ch1, model.ppn0,
                        host.ctl_free, host.ctl_ps, model.lane0, model.lane1)], dtype=BATCH)
        if read:
            return self._read(lpns[:n], nbytes, st)
        return self._write(lpns[:n], keys[:n], nbytes, st)

    def _read(self, lpns: I64, nbytes: int, st: npt.NDArray[np.void]) -> list[int]:
        ssd, model = self.ssd, self.model
        c = ssd.c
        ftl = ssd.ftl
        n = int(lpns.size)
        sp = ftl.l2p.sparse
        seg_row, pool = ftl.l2p.arrays()
        lookup: Lookup = ((sp.table, sp.meta, ftl.mapping.plane_base, seg_row, pool),
                          ftl.geo)
        ends = np.empty(n, dtype=np.int64)
        k = 0
        while True:
            # (the lanes as ``FastModel.lanes``: no convoy on this path)
            lanes = (model.dies.state, *model.channels.arrays(), *NO_WAIT)
            k = int(_read_pages(lanes, self.dev, ssd.host.links.arrays(), lookup, lpns, st,
                                ends, k))
            if k == n:
                break
            self.grow(st[0])
        out: list[int] = ends.tolist()
        transfers, active, active_until, _, _, unmapped = st.item()[:6]
        ssd.host.ctl_free = int(st[0]["ctl"])
        c.unmapped_reads += unmapped
        c.read_cmds += n
        c.host_pages_read += n
        c.channel_bytes += n * ssd.page
        ssd.bytes_read += n * nbytes
        ssd.finished_many((transfers, active, active_until), out)
        return out

    def _write(self, lpns: I64, keys: list[int], nbytes: int,
               st: npt.NDArray[np.void]) -> list[int]:
        ssd, model = self.ssd, self.model
        ppns, n = ssd.ftl.write_many(lpns, keys)
        if not n:
            return []
        r = st[0]  # (the device's activity, as the batch carries it)
        slc = bool(ssd.slc) and ssd.slc.take(n, int(r["t0"]), int(r["active_until"]))
        dev = (model.geo, model.cmds, model.cell_slc) if slc else self.dev
        if model.ppn0:
            ppns += model.ppn0
        ends = np.empty(n, dtype=np.int64)
        p_ends = np.empty(n, dtype=np.int64)
        k = 0
        while True:
            lanes = (model.dies.state, *model.channels.arrays(), *NO_WAIT)
            k = int(_write_pages(lanes, dev, ssd.host.links.arrays(), ppns, st, ends,
                                 p_ends, k))
            if k == n:
                break
            self.grow(st[0])
        transfers, active, active_until, cmds = st.item()[:4]
        ssd.host.ctl_free = int(st[0]["ctl"])
        ssd.c.programmed(n, cmds, ssd.page)
        ssd.bytes_written += n * nbytes
        if ssd.cache.write_pages > 0:  # (the batch's ``buffered``)
            ssd.cache.buffered_pages(lpns[:n], p_ends)
        # written through: no read-cache copy to drop (``DataCache.first_cached``)
        out: list[int] = ends.tolist()
        ssd.finished_many((transfers, active, active_until), out)
        return out

    def lookup(self) -> Lookup:
        """The FTL's map as ``page_of`` reads it (taken again after Python changed it)."""
        return self.lookup_of(self.ssd.ftl)

    @staticmethod
    def lookup_of(ftl: FTL) -> Lookup:
        """``lookup`` of ``ftl``."""
        sp = ftl.l2p.sparse
        seg_row, pool = ftl.l2p.arrays()
        return (sp.table, sp.meta, ftl.mapping.plane_base, seg_row, pool), ftl.geo

    def count_reads(self, st: npt.NDArray[np.void], n: int, nbytes: int) -> None:
        """The device's counters of ``n`` reads of ``nbytes`` of a page booked by a
        kernel (its pages never written counted in ``st``)."""
        ssd = self.ssd
        c = ssd.c
        c.unmapped_reads += int(st[0]["unmapped"])
        st[0]["unmapped"] = 0
        c.read_cmds += n
        c.host_pages_read += n
        c.channel_bytes += n * nbytes
        ssd.bytes_read += n * nbytes

    def grow(self, r: np.void) -> None:
        """More room where a kernel stopped (``stop``), for the page it stopped at."""
        if r["stop"] == LINK_FULL:
            self.ssd.host.links.grow()
        else:
            self.model.grow(int(r["stop"]), np.array([r["ppn"]], dtype=np.int64))


class ClosedLoop:
    """The flash bench's closed loop (``flash.bench``) of one kind of whole-page commands
    at queue depth ``qd`` on the batch path: each request goes out when the earliest of
    the ``qd`` outstanding completes, booked as ``Ssd.read`` or ``Ssd.write`` books it,
    from one request to the next in a compiled call (another after each growth of the
    rows). ``run`` books them up to a request, ``finish`` gives the device's state back
    and the time the last completed. While the loop runs, the device's NVMe queue,
    controller, activity and counters are the loop's arrays (``_load``, ``_sync``)."""

    def __init__(self, batch: PageBatch, lpns: I64, qd: int, dur: int) -> None:
        self.batch = batch
        self.lpns = lpns
        self.k = 0
        self.dur = dur
        host = batch.ssd.host
        self.loop = np.zeros(1, dtype=LOOP)
        self.loop[0]["qd"] = qd
        self.loop[0]["depth"] = host.depth
        self.work = np.zeros((qd, 2), dtype=np.int64)
        self._load()

    def _load(self) -> None:
        """The device's NVMe queue, controller and activity into the loop's arrays."""
        ssd, model = self.batch.ssd, self.batch.model
        host = ssd.host
        self.st = np.array([(*ssd.activity(), 0, 0, 0, 0, 0, 0, self.dur, 0, model.ch0,
                             model.ch1, model.ppn0, host.ctl_free, host.ctl_ps, model.lane0,
                             model.lane1)], dtype=BATCH)
        lp = self.loop[0]
        self.queue, lp["nq"] = host.queue_rows()
        lp["waits"] = host.queue_waits
        self.k0 = self.k
        self._loaded()

    def _loaded(self) -> None:
        """What a kind of loop takes from the device besides (``_load``)."""

    def _sync(self) -> None:
        """The loop's arrays back into the device: the requests booked since
        ``_load`` counted."""
        ssd = self.batch.ssd
        host = ssd.host
        transfers, active, active_until = self.st.item()[:3]
        lp = self.loop[0]
        host.take_back(self.queue, int(lp["nq"]), int(lp["waits"]), int(self.st[0]["ctl"]))
        ssd.finished_many((transfers, active, active_until), [])  # (the queue is set)
        self._count(self.k - self.k0)
        self.k0 = self.k

    def run(self, upto: int, lat: I64, done: I64) -> None:
        """Book the requests up to ``upto`` (their latencies into ``lat``, their
        completions into ``done``)."""
        raise NotImplementedError

    def _reads_from(self, addresses: I64, nbytes: int, front: bool) -> None:
        """The loop's reads: of ``nbytes`` at ``addresses``, through DRAM
        (``_front_read_one``) where ``front``, else by ``_read_one``."""
        ssd, model = self.batch.ssd, self.batch.model
        self.addresses = addresses
        lp = self.loop[0]
        page = ssd.page
        span = max(1, nbytes // page)
        lp["x"] = model.phy.read1_ps(min(nbytes, page))
        lp["front"] = int(front)
        lp["span"], lp["mode"], lp["device"] = span, FAST, model.device
        if isinstance(model, DetailedModel):
            lp["mode"] = CUT_THROUGH
        lp["capacity"], lp["page"], lp["nbytes"] = ssd.cache.read_pages, page, nbytes
        #: ``read_front``'s scratch (the pages DRAM holds, its runs, the pages to read
        #: and the bytes wanted of each, its results), then the pages' data-out times
        #: (``read_cmds``'), ``read_chunk``'s time and results and ``read_cmds``' results
        self.front = (np.zeros(span + 1, dtype=np.bool_),
                      np.zeros((span + 2, 2), dtype=np.int64),
                      np.zeros(span, dtype=np.int64), np.zeros(span, dtype=np.int64),
                      np.zeros(4, dtype=np.int64),
                      np.full(span, model.phy.page_data, dtype=np.int64),
                      np.zeros(1, dtype=np.int64),
                      np.zeros((3, model.former.devices), dtype=np.int64),
                      np.zeros(4, dtype=np.int64))

    def _front(self) -> Front:
        """``_front_read_one``'s arrays (DRAM's and the map's taken again at each call:
        Python may have grown them)."""
        ssd = self.batch.ssd
        return (ssd.cache.read_state(), ssd.ftl.l2p.kernel_state(), self.addresses,
                *self.front)

    def _count_reads(self, n: int, nbytes: int) -> None:
        """The device's counters of ``n`` reads of ``nbytes`` booked by the kernel, as
        ``Ssd.read_map`` and the model's read count them (through DRAM: the pages read
        from NAND)."""
        lp = self.loop[0]
        if not lp["front"]:
            self.batch.count_reads(self.st, n, nbytes)
            return
        ssd = self.batch.ssd
        c, cache = ssd.c, ssd.cache
        cache.buffer_read_hits += int(lp["bufhits"])
        cache.cache_read_hits += int(lp["hits"])
        c.unmapped_reads += int(self.st[0]["unmapped"])
        c.read_cmds += int(lp["rcmds"])
        c.host_pages_read += int(lp["got"])
        c.channel_bytes += int(lp["wanted"])
        ssd.bytes_read += n * nbytes
        lp["bufhits"] = lp["hits"] = lp["got"] = lp["rcmds"] = lp["wanted"] = 0
        self.st[0]["unmapped"] = 0

    def _count(self, n: int) -> None:
        """The device's counters of ``n`` requests booked by the kernel."""
        raise NotImplementedError

    def finish(self) -> int:
        """The requests booked so far counted on the device, its NVMe queue and
        controller as the loop left them; when the last request completed."""
        self._sync()
        _, nw, _, _, _, now = self.loop.item()[:6]
        return max(now, int(self.work[:nw, 0].max())) if nw else now


class ReadLoop(ClosedLoop):
    """``ClosedLoop`` of reads of ``nbytes`` at ``addresses``, within a page or of whole
    pages (``_read_loop``): made by ``PageBatch.read_loop`` only where the controller's
    DRAM holds no page. Reads of several pages, and of parts of pages where a read cache
    keeps them, go through DRAM as ``Ssd.read_map`` takes them (``_front_read_one``)."""

    def __init__(self, batch: PageBatch, addresses: I64, qd: int, nbytes: int) -> None:
        ssd = batch.ssd
        super().__init__(batch, addresses // ssd.page, qd, ssd.host.read_ps(nbytes))
        self.nbytes = nbytes
        self._reads_from(addresses, nbytes, nbytes > ssd.page
                         or (nbytes < ssd.page and ssd.cache.read_pages > 0))

    def run(self, upto: int, lat: I64, done: I64) -> None:
        """Book the requests up to ``upto`` (their latencies into ``lat``, their
        completions into ``done``)."""
        b = self.batch
        ssd, model = b.ssd, b.model
        lookup = b.lookup()
        while self.k < upto:
            lanes = (model.dies.state, *model.channels.arrays(), *NO_WAIT)
            self.k = int(_read_loop(lanes, b.dev, ssd.host.links.arrays(), lookup,
                                    self.lpns, self.st, self.loop, self.work, self.queue,
                                    lat, done, self.k, upto, self._front()))
            if self.k == upto:
                break
            if self.st[0]["stop"] == CACHE_FULL:
                ssd.cache.grow_read_cache()
            else:
                b.grow(self.st[0])

    def _count(self, n: int) -> None:
        self._count_reads(n, self.nbytes)


class WriteLoop(ClosedLoop):
    """``ClosedLoop`` of writes of ``pages`` whole pages each, or of ``nbytes`` of one
    (``_write_loop``), through the write buffer if there is one: each request's pages
    placed by the FTL's run kernel (``kernels.write_run``; one page by
    ``kernels.write_open``, as ``FTL.write1`` places it)
    and programmed as one chunk (``program_chunk``) on the fast model, command by
    command (``program_cmds``, from the data's first time on the link, or its last
    under ``compat = "mqsim"``) on the detailed one, as ``Ssd.write`` does where
    ``FTL.write_range`` takes the run kernel. A request the run kernel declines (a block
    to open, a collection) is served by ``Ssd.write`` from the state the loop left, and
    so is every request while a plane is under the soft collection threshold (each is
    followed by a background collection). Made by ``PageBatch.write_loop`` only where
    its DRAM holds nothing. A mix (``PageBatch.mix_loop``: ``reads``, each request's
    kind) has its reads booked as ``ReadLoop`` books them (``_read_one``, or
    ``_front_read_one`` where DRAM may hold a page or a read is of several)."""

    def __init__(self, batch: PageBatch, lpns: I64, qd: int, pages: int,
                 reads: Bools | None = None, nbytes: int = 0,
                 addresses: I64 | None = None) -> None:
        ssd = batch.ssd
        nbytes = nbytes or pages * ssd.page
        super().__init__(batch, lpns, qd, ssd.host.write_ps(nbytes))
        self.pages = pages
        #: a request's bytes (a part of one page, or ``pages`` whole ones)
        self.nbytes = nbytes
        lp = self.loop[0]
        lp["nbytes"], lp["page"] = nbytes, ssd.page
        lp["wcap"] = ssd.cache.write_pages
        lp["packs"] = int(ssd.packs)
        lp["slc_cap"], lp["t_slc"] = ssd.slc.cap, batch.model.t_prog_slc
        #: each request a read (a mix) or not; empty: every one is a write
        self.reads = np.zeros(0, dtype=np.bool_) if reads is None else reads
        # (a mix's reads through DRAM where it may hold their pages, or of several)
        self._reads_from(lpns * ssd.page if addresses is None else addresses, nbytes,
                         ssd.cache.write_pages > 0 or ssd.cache.read_pages > 0
                         or nbytes > ssd.page)
        if self.reads.any():
            self.loop[0]["rdur"] = ssd.host.read_ps(nbytes)
        #: a request's ppns from the run kernel, and in the lanes' numbering
        self.out = np.zeros(pages, dtype=np.int64)
        self.ppns = np.zeros(pages, dtype=np.int64)
        self.res = np.zeros((3, batch.model.former.devices), dtype=np.int64)
        model = batch.model
        #: how the programs are booked (``_write_loop``'s ``mode``), and on the detailed
        #: model its dies' queues and ``program_cmds``' times and results (kept from a
        #: call that stopped for room to the next)
        self.mode = FAST
        self.queues = np.zeros((1, 1), dtype=np.int64)
        if isinstance(model, DetailedModel):
            self.mode = STORE_FORWARD if ssd.store_forward else CUT_THROUGH
            self.queues = model.queues
        self.times = np.zeros(TIMES, dtype=np.int64)
        self.cmd_res = np.zeros(RESULTS, dtype=np.int64)
        #: a one-page write's (``kernels.write_open``): the write sequence, the page if
        #: its segment of the map is not dense, and the dict's counts
        self.one = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
                    np.zeros(2, dtype=np.int64))

    def _loaded(self) -> None:
        lp = self.loop[0]
        ssd = self.batch.ssd
        lp["seq"], lp["runs"], lp["packed"] = ssd.ftl.blocks.seq, 0, ssd.packed
        lp["slc_last"] = -1

    def run(self, upto: int, lat: I64, done: I64) -> None:
        """Book the requests up to ``upto`` (their latencies into ``lat``, their
        completions into ``done``)."""
        b = self.batch
        ssd, model = b.ssd, b.model
        ftl = ssd.ftl
        while self.k < upto:
            if ftl.low_planes:  # each write is followed by a background collection
                self._by_command(upto, lat, done)
                continue
            lanes = (model.dies.state, *model.channels.arrays(), *NO_WAIT)
            self.k = int(_write_loop(lanes, b.dev, ssd.host.links.arrays(),
                                     ftl.run_state(), self.lpns, self.out, self.ppns,
                                     self.res, self.st, self.loop, self.work, self.queue,
                                     lat, done, model.device, self.k, upto,
                                     (self.mode, self.queues, self.times, self.cmd_res),
                                     (ftl.l2p.sparse_per_seg, *self.one),
                                     (self.reads, b.lookup()), ssd.cache.read_state()[0],
                                     (ssd.slc.ints, ssd.slc.floats, model.geo_slc,
                                      model.cell_slc), self._front()))
            if self.k == upto:
                break
            stop = int(self.st[0]["stop"])
            if stop == MAP_PLACED:  # the map of the run placed, then the request goes on
                ftl.map_placed(int(self.lpns[self.k]), self.out.copy())
            elif stop == DENSIFY:  # as ``FTL.write1`` ends, then the request goes on
                sparse, res = self.one[1], self.one[2]
                ftl.l2p.densify_reached(sparse[:int(res[0])])
            elif stop == BY_COMMAND:
                self._by_command(self.k + 1, lat, done)
            elif stop == LINK_FULL:
                ssd.host.links.grow()
            elif stop == BUF_ROOM:
                ssd.cache.make_room(1, self.pages)
            elif stop == CACHE_FULL:
                ssd.cache.grow_read_cache()
            else:
                model.grow(stop, self.ppns)

    def _by_command(self, upto: int, lat: I64, done: I64) -> None:
        """Requests from the next to ``upto`` through ``Ssd.write`` (a mix's reads
        through ``Ssd.read``), for as long as a plane is under the soft threshold (the
        first in any case), the loop's state given back first and taken again after."""
        ssd = self.batch.ssd
        self._sync()
        lp = self.loop[0]
        nbytes = self.nbytes
        reads = self.reads
        while self.k < upto:
            j = self.k
            now = int(lp["now"])
            if lp["nw"] == lp["qd"]:
                now = int(self.work[0, 0])
                lp["nw"] = row_pop(self.work, lp["nw"])
            serve = ssd.read if reads.size and reads[j] else ssd.write
            end = serve(int(self.addresses[j]), nbytes, now)
            lat[j] = end - now
            done[j] = end
            self.work[lp["nw"]] = end, j
            lp["nw"] = row_push(self.work, lp["nw"])
            lp["now"] = now
            self.k += 1
            if not ssd.ftl.low_planes:
                break
        self._load()

    def _count(self, n: int) -> None:
        ssd = self.batch.ssd
        lp = self.loop[0]
        if self.reads.size:  # (a mix: its reads counted as ``ReadLoop`` counts them)
            got = int(np.count_nonzero(self.reads[self.k0:self.k0 + n]))
            self._count_reads(got, self.nbytes)
            n -= got
        pages = int(lp["wprog"])
        ssd.ftl.count_run(int(lp["runs"]) * self.pages)
        c, cache = ssd.c, ssd.cache
        c.pages_programmed += pages
        c.channel_bytes += pages * ssd.page
        c.program_cmds += int(self.st[0]["cmds"])
        self.st[0]["cmds"] = 0
        ssd.bytes_written += n * self.nbytes
        cache.write_waits += int(lp["bwaits"])
        cache.write_hits += int(lp["whits"])
        ssd.packed_writes += int(lp["pwrites"])
        ssd.packed = int(lp["packed"])
        if lp["slc_last"] >= 0:  # (the last write's mode, as ``write_map`` leaves it)
            ssd.slc_mode = bool(lp["slc_last"])
            lp["slc_last"] = -1
        lp["runs"] = lp["wprog"] = lp["bwaits"] = lp["whits"] = lp["pwrites"] = 0


@njit_noref
def _finish(st: npt.NDArray[np.void], end: int, lanes: Lanes, link: Link) -> None:
    """``Ssd._finish`` of a transaction of the batch (``st``) complete at ``end`` (its
    NVMe completion is the caller's)."""
    r = st[0]
    r["transfers"] += 1
    t0 = r["t0"]
    if r["transfers"] % PRUNE_EVERY == 0:
        # bookings that ended before now can no longer be reached
        gap_prune(lanes[1], lanes[2], t0, r["ch0"], r["ch1"])
        die_prune(lanes[0], r["lane0"], r["lane1"], t0)
        gap_prune(link[0], link[1], t0, 0, 1)
        gap_prune(link[0], link[1], t0, 1, 2)
    if end > r["active_until"]:  # the union of the transactions' lifetimes
        r["active"] += end - max(t0, r["active_until"])
        r["active_until"] = end


@njit_noref
def _taken(r: np.void, t0: int) -> int:
    """When the controller takes the batch's next command (``HostInterface.fetch``)."""
    return r["ctl"] if r["ctl_ps"] and r["ctl"] > t0 else t0


@njit_noref
def page_of(lookup: Lookup, lpn: int) -> tuple[int, bool]:
    """The physical page a read of ``lpn`` reads (``flash.ftl.kernels.l2p_of``; a page
    never written where sequential preconditioning put it), and whether it was never
    written."""
    l2p, fgeo = lookup
    ppn = l2p_of(l2p, fgeo, lpn)
    if ppn >= 0:
        return ppn, False
    return l2p[2][lpn % fgeo[0]["stripe"]] + lpn // fgeo[0]["stripe"], True


@njit
def _read_pages(lanes: Lanes, dev: Device, link: Link, lookup: Lookup, lpns: I64,
                st: npt.NDArray[np.void], ends: I64, k: int) -> int:
    """Whole-page reads of ``lpns`` from ``k`` on, each taken at the batch's ``t0``: the
    page's physical page (``flash.ftl.kernels.l2p_of``; a page never written is read
    where sequential preconditioning put it, counted in ``unmapped``), its read
    (``read_page``), the data's ``dur`` on the link's read direction from its data-out
    start, and ``_finish``; each completion into ``ends``. Where it stopped:
    ``lpns.size``, or a page whose channel or link row is full (why and its page in
    ``st``; nothing of it booked)."""
    geo, cmds, cell = dev
    liv, lmeta = link
    r = st[0]
    t0, dur, ppn0 = r["t0"], r["dur"], r["ppn0"]
    x = cmds[1]["rsetup"] + geo[0]["page_data"]
    for j in range(k, lpns.size):
        ppn, unmapped = page_of(lookup, lpns[j])
        ppn += ppn0
        r["ppn"] = ppn
        if not gap_room(liv, lmeta, 0):
            r["stop"] = LINK_FULL
            return j
        t = _taken(r, t0)
        c_end = read_page(lanes, geo, cmds, cell, ppn, t, x)
        if c_end < 0:
            r["stop"] = -c_end
            return j
        r["ctl"] = t + r["ctl_ps"]
        r["unmapped"] += unmapped
        end = gap_book(liv, lmeta, 0, c_end - x, dur)
        if c_end > end:
            end = c_end
        ends[j] = end
        _finish(st, end, lanes, link)
    return lpns.size


@njit
def _write_pages(lanes: Lanes, dev: Device, link: Link, ppns: I64,
                 st: npt.NDArray[np.void], ends: I64, p_ends: I64, k: int) -> int:
    """Whole-page writes to ``ppns`` (placed by the FTL, in the lanes' numbering) from
    ``k`` on, each taken and admitted at the batch's ``t0``: the data's ``dur`` on the
    link's write direction, the page's program (``program_page``; commands and joins
    counted in ``st``), the completion (the data in the buffer, or when not
    ``buffered``, the program's end) into ``ends`` and the program's end into
    ``p_ends``, and ``_finish``. Where it stopped: ``ppns.size``, or a page whose
    channel, die lane or link row is full (why and its page in ``st``; nothing of it
    booked)."""
    geo, cmds, cell = dev
    dst, iv, meta = lanes[0], lanes[1], lanes[2]
    liv, lmeta = link
    g = geo[0]
    r = st[0]
    t0, dur = r["t0"], r["dur"]
    lpc, ppp, P = g["lanes_per_channel"], g["ppp"], g["planes"]
    for j in range(k, ppns.size):
        ppn = ppns[j]
        lane = ppn // ppp // P  # a die: no chip lock on this path
        r["ppn"] = ppn
        if not gap_room(iv, meta, lane // lpc):
            r["stop"] = CH_FULL
            return j
        if lane_full(dst, lane):
            r["stop"] = LANE_FULL
            return j
        if not gap_room(liv, lmeta, 1):
            r["stop"] = LINK_FULL
            return j
        t = _taken(r, t0)
        r["ctl"] = t + r["ctl_ps"]
        l_end = gap_book(liv, lmeta, 1, t, dur)
        e = program_page(lanes, geo, cmds, cell, ppn, l_end - dur, l_end)
        if e & 1:
            r["joined"] += 1
        else:
            r["cmds"] += 1
        p_ends[j] = e >> 1
        end = l_end if r["buffered"] else e >> 1
        ends[j] = end
        _finish(st, end, lanes, link)
    return ppns.size


@njit
def _read_loop(lanes: Lanes, dev: Device, link: Link, lookup: Lookup, lpns: I64,
               st: npt.NDArray[np.void], loop: npt.NDArray[np.void], work: I64,
               queue: I64, lat: I64, done: I64, k: int, upto: int, front: Front) -> int:
    """The flash bench's closed loop (``flash.bench``) of reads within the pages
    ``lpns`` from ``k`` to ``upto``, each as ``_read_one`` books it, or
    ``_front_read_one`` (``front`` in ``loop``). Where it stopped: ``upto``, or a
    request whose channel or link row or read cache is full (why and its page in
    ``st``; nothing of it booked, the loop as it was)."""
    dur, x = st[0]["dur"], loop[0]["x"]
    by_front = loop[0]["front"]
    for j in range(k, upto):
        if by_front:
            if not _front_read_one(lanes, dev, link, front, st, loop, work, queue, lat,
                                   done, j, dur, x):
                return j
        elif not _read_one(lanes, dev, link, lookup, lpns[j], st, loop, work, queue, lat,
                           done, j, dur, x):
            return j
    return upto


@njit_inline
def _front_read_one(lanes: Lanes, dev: Device, link: Link, front: Front,
                    st: npt.NDArray[np.void], loop: npt.NDArray[np.void], work: I64,
                    queue: I64, lat: I64, done: I64, j: int, dur: int, x: int) -> bool:
    """A closed loop's read of ``span`` whole pages, or of part of a page a read cache
    keeps, request ``j`` at its address in ``front``, as ``Ssd.read`` books it: it goes
    out as ``_read_one``'s, then DRAM serves what it holds and the rest is looked up
    and, a part of a page, kept (``flash.runs.read_front``, as ``Ssd.read_map`` takes
    it); the pages missed are read as the model reads them: one by ``read_page``
    (``x`` after tR), several by ``read_chunk`` (``FAST``) or ``read_cmds``; its data's
    ``dur`` on the link's read direction from its first data-out (from when it was
    taken where DRAM served a page) and ``_complete``. False, with nothing booked,
    where a channel's or the link's row or the read cache's rows (``CACHE_FULL``) may
    have no room for it."""
    geo, cmds, cell = dev
    liv, lmeta = link
    r = st[0]
    lp = loop[0]
    dram, l2pk, addresses, mask, runs, ppns, nb, res, data, e, cres, rres = front
    span, page, nbytes, capacity = lp["span"], lp["page"], lp["nbytes"], lp["capacity"]
    lru = dram[1]
    if capacity and lru_spare(lru[0], lru[2]) < 2 * (span + 2):  # (``read_front``'s)
        r["stop"] = CACHE_FULL
        return False
    for c in range(r["ch0"], r["ch1"]):  # (its pages are known once DRAM is asked)
        if not gap_room_for(lanes[1], lanes[2], c, span):
            r["stop"] = CH_FULL
            return False
    if not gap_room(liv, lmeta, 0):
        r["stop"] = LINK_FULL
        return False
    now, t = _go_out(r, lp, work, queue)
    address = addresses[j]
    lo = address // page
    fill = FILL_PARTIAL if capacity and nbytes < page else NO_FILL
    got = read_front(dram, l2pk, lo, lo + span, t, fill, address, nbytes, page, capacity,
                     mask, runs, ppns, nb, res)
    lp["bufhits"] += res[BUF_HITS]
    lp["hits"] += res[CACHE_HITS]
    r["unmapped"] += res[UNMAPPED]
    lp["wanted"] += res[WANTED]
    lp["got"] += got
    start = t if got < span else -1
    x_end = t
    if got == 1:
        lp["rcmds"] += 1
        x_end = read_page(lanes, geo, cmds, cell, ppns[0] + r["ppn0"], t, x)
        x_start = x_end - x
    elif got:
        for i in range(got):
            ppns[i] += r["ppn0"]
        if lp["mode"] == FAST:
            e[0] = t
            read_chunk(lanes, geo, cmds, ppns[:got], nb[:got], e, cres)
            d = lp["device"]
            lp["rcmds"] += cres[0, d]
            x_start, x_end = cres[1, d], cres[2, d]
        else:
            rres[0], rres[1], rres[2], rres[3] = -1, t, 0, 0
            read_cmds(lanes, geo, cmds, cell, ppns[:got], data[:got], t, rres)
            lp["rcmds"] += rres[2]
            x_start, x_end = rres[0], rres[1]
    if got and (start < 0 or x_start < start):
        start = x_start
    end = gap_book(liv, lmeta, 0, start, dur)
    if x_end > end:
        end = x_end
    _complete(st, lp, work, queue, lanes, link, lat, done, j, now, end)
    return True


@njit_inline
def _read_one(lanes: Lanes, dev: Device, link: Link, lookup: Lookup, lpn: int,
              st: npt.NDArray[np.void], loop: npt.NDArray[np.void], work: I64,
              queue: I64, lat: I64, done: I64, j: int, dur: int, x: int) -> bool:
    """A closed loop's read within page ``lpn``, request ``j``: it goes out when the
    earliest of the ``qd`` outstanding completes (``work``, a heap of (completion,
    request); ties in issue order), the NVMe queue (``queue``) and the controller take
    it (``nvme_fetch``, ``_taken``), then as ``_read_pages``: its page, its read, its
    data's ``dur`` on the link's read direction and ``_finish``, and its completion into
    the NVMe queue (``nvme_done``); its latency into ``lat``, its completion into
    ``done``; ``x``: its time on the channel after tR (``OnfiPhy.read1_ps``). False,
    with nothing booked, where its channel or link row is full (why and its page in
    ``st``)."""
    geo, cmds, cell = dev
    liv, lmeta = link
    g = geo[0]
    r = st[0]
    per_ch = g["ppp"] * g["planes"] * g["dies_per_lane"] * g["lanes_per_channel"]
    ppn, unmapped = page_of(lookup, lpn)
    ppn += r["ppn0"]
    r["ppn"] = ppn
    # (read_page's one refusal, checked first so that nothing is taken before it)
    if not gap_room(lanes[1], lanes[2], ppn // per_ch):
        r["stop"] = CH_FULL
        return False
    if not gap_room(liv, lmeta, 0):
        r["stop"] = LINK_FULL
        return False
    lp = loop[0]
    now, t = _go_out(r, lp, work, queue)
    c_end = read_page(lanes, geo, cmds, cell, ppn, t, x)
    r["unmapped"] += unmapped
    end = gap_book(liv, lmeta, 0, c_end - x, dur)
    if c_end > end:
        end = c_end
    _complete(st, lp, work, queue, lanes, link, lat, done, j, now, end)
    return True


@njit_noref
def _go_out(r: np.void, lp: np.void, work: I64, queue: I64) -> tuple[int, int]:
    """A closed loop's next request goes out (``ClosedLoop``): when the earliest of the
    ``qd`` outstanding completes (``work``; now, while fewer are), and when the NVMe
    queue and the controller take it (``t0`` in ``r``). (now, taken)."""
    now = lp["now"]
    if lp["nw"] == lp["qd"]:  # a worker's request completed: it issues the next
        now = work[0, 0]
        lp["nw"] = row_pop(work, lp["nw"])
    t = ctl_take(r, nvme_fetch(queue, lp, now))
    r["t0"] = t
    return now, t


@njit_inline
def _complete(st: npt.NDArray[np.void], lp: np.void, work: I64, queue: I64,
              lanes: Lanes, link: Link, lat: I64, done: I64, j: int, now: int,
              end: int) -> None:
    """Request ``j``, out at ``now``, completes at ``end``: the NVMe queue and
    ``_finish``, its latency and completion, and its worker waits for it."""
    nvme_done(queue, lp, end)
    _finish(st, end, lanes, link)
    lat[j] = end - now
    done[j] = end
    work[lp["nw"], 0] = end
    work[lp["nw"], 1] = j
    lp["nw"] = row_push(work, lp["nw"])
    lp["now"] = now


@njit
def _write_loop(lanes: Lanes, dev: Device, link: Link,
                run: tuple[npt.NDArray[np.void], tuple[I64, I64], L2p, Blocks, Fresh, I64,
                           I64],
                lpns: I64, out: I64, ppns: I64, res: I64, st: npt.NDArray[np.void],
                loop: npt.NDArray[np.void], work: I64, queue: I64, lat: I64, done: I64,
                device: int, k: int, upto: int, prog: Programs,
                one: tuple[npt.NDArray[np.int32], I64, I64, I64],
                mix: tuple[Bools, Lookup], wbuf: Buffer, slc: Slc, front: Front) -> int:
    """The flash bench's closed loop (``flash.bench``) of writes of ``out.size`` whole
    pages from each of ``lpns``, from ``k`` to ``upto``, as ``Ssd.write`` books each
    where the FTL's run kernel takes it and nothing is buffered: its pages placed
    (``write_run``, on ``run``: ``FTL.run_state``), then it goes out when the earliest
    of the ``qd`` outstanding completes (``work``), the NVMe queue and the controller
    take it (``nvme_fetch``, ``_taken``), its data's ``dur`` on the link's write
    direction from then, its pages programmed from the data's first time on the link
    to its last, and it completes when its programs end (``nvme_done``, ``_finish``);
    its latency into ``lat``, its completion into ``done``. The programs (``prog``:
    the mode, then the detailed model's dies' queues and ``program_cmds``' times and
    results): one chunk (``FAST``: ``program_chunk``; ``device``: the device's column
    of ``res``, its results), or command by command (``program_cmds``) from the data's
    first time on the link (``CUT_THROUGH``) or its last (``STORE_FORWARD``), as
    ``DetailedModel.program`` books them. A write of one page is ``FTL.write1``'s
    (``kernels.write_open``, on the map's dict counts and ``one``'s scratch: the write
    sequence, the page and the counts) and, on the fast model, ``FastModel.program1``'s
    (``program_page``). Where it stopped: ``upto``, or a request the run kernel placed
    but did not map (``MAP_PLACED``), one whose page made a segment's dict full
    (``DENSIFY``), one declined (``BY_COMMAND``; nothing of it done: a block to open,
    a collection, a dict to grow) or whose link, channel or die lane row is full (why in
    ``st``;
    ``pend`` in ``loop`` says how far it got, and the next call goes on from there: the
    detailed model's programs from the command they stopped at). A mix (``mix``: each
    request a read or not, empty for none, and the map as reads look it up): each read
    as ``_read_one`` books it, its data ``rdur`` (in ``loop``) on the link. Through a
    write buffer (``wbuf``; its pages ``wcap`` in ``loop``), as ``Ssd.write`` books it:
    the buffer admits the write (``admit_write``, its data on the link from then), a small write
    that does not fill the page being gathered (``packs``) is only buffered, and the
    write completes when its data is in the buffer, where it stays until its programs
    end (``buffer_run``); a write the buffer has no room for stops (``BUF_ROOM``). With
    an SLC cache (``slc``: its state, and the device's records in SLC mode), a write that
    programs asks it whether in SLC mode (``slc_take``), as ``Ssd.write_map`` does."""
    mode, queues, ptimes, pres = prog
    geo, cmds, cell = dev
    liv, lmeta = link
    fgeo, stripes, l2p, blocks, fresh, opened, need = run
    r = st[0]
    lp = loop[0]
    dur, ppn0 = r["dur"], r["ppn0"]
    n = out.size
    times = np.zeros(2, dtype=np.int64)
    reads, lookup = mix
    for j in range(k, upto):
        if reads.size and reads[j]:  # (never ``pend``: a read is booked whole or not)
            if lp["front"]:
                if not _front_read_one(lanes, dev, link, front, st, loop, work, queue, lat,
                                       done, j, lp["rdur"], lp["x"]):
                    return j
            elif not _read_one(lanes, dev, link, lookup, lpns[j], st, loop, work, queue,
                               lat, done, j, lp["rdur"], lp["x"]):
                return j
            continue
        if lp["pend"] == 0:
            if not gap_room(liv, lmeta, 1):  # (checked before anything is done)
                r["stop"] = LINK_FULL
                return j
            # (``DataCache._room``: a row for the write, entries for its pages)
            if lp["wcap"] and not buffer_room(wbuf, n):
                r["stop"] = BUF_ROOM
                return j
            lru = front[0][1]
            if lru[2][LRU_SIZE] and lru_spare(lru[0], lru[2]) < 1:  # (``_invalidate``)
                r["stop"] = CACHE_FULL
                return j
            lp["pack_now"] = 0
            if lp["packs"] and n == 1 and lp["nbytes"] < lp["page"] \
                    and lp["packed"] + lp["nbytes"] < lp["page"]:
                lp["pack_now"] = 1  # (its data waits in the buffer for the page to fill)
                lp["pend"] = PLACED_
            elif n == 1:
                per_seg, seq1, sparse, res1 = one
                if not im_has_room(l2p[0], l2p[1], 1):  # (``IntMap.reserve`` would grow it)
                    r["stop"] = BY_COMMAND
                    return j
                seq1[0] = lp["seq"]
                res1[0] = res1[1] = 0
                if not write_open(lpns[j:j + 1], fgeo, stripes[0], l2p, blocks, seq1,
                                  (out, per_seg, sparse, res1), 0):
                    r["stop"] = BY_COMMAND
                    return j
                lp["seq"] = seq1[0]
                lp["runs"] += 1
                lp["pend"] = PLACED_
                if res1[1]:
                    r["stop"] = DENSIFY
                    return j
            else:
                got = write_run(lpns[j], n, fgeo, stripes, l2p, blocks, fresh, lp["seq"],
                                (opened, need, out))
                if got != DONE and got != PLACED:
                    r["stop"] = BY_COMMAND
                    return j
                lp["seq"] += n
                lp["runs"] += 1
                lp["pend"] = PLACED_
                if got == PLACED:
                    r["stop"] = MAP_PLACED
                    return j
        if lp["pend"] == PLACED_:
            now, t = _go_out(r, lp, work, queue)
            lp["req_now"] = now
            if lp["wcap"]:  # (``DataCache.admit``: its data crosses once it fits)
                adm = admit_write(wbuf, n, lp["wcap"], t)
                if adm > t:
                    lp["bwaits"] += 1
                    t = adm
            if lp["packs"] and n == 1 and lp["nbytes"] < lp["page"]:
                lp["packed"] += lp["nbytes"]
                if lp["pack_now"]:
                    lp["pwrites"] += 1
                else:
                    lp["packed"] -= lp["page"]
            lp["slc_now"] = 0
            if lp["slc_cap"] and not lp["pack_now"]:  # (``SlcCache.take``)
                lp["slc_now"] = slc_take(slc[0], slc[1], lp["slc_cap"], n, r["t0"],
                                         r["active_until"])
                lp["slc_last"] = lp["slc_now"]
            l_end = gap_book(liv, lmeta, 1, t, dur)
            lp["t_in"], lp["t_end"] = l_end - dur, l_end
            lp["pend"] = SENT
            if mode != FAST:  # (``DetailedModel.program``'s times, from its first command)
                first_in = l_end if mode == STORE_FORWARD else l_end - dur
                ptimes[0], ptimes[1], ptimes[2], ptimes[3] = first_in, \
                    (l_end - first_in) // n, lp["t_slc"] if lp["slc_now"] else -1, 0
                pres[0], pres[1], pres[2] = first_in, 0, 0
        for i in range(n):
            ppns[i] = out[i] + ppn0
        if lp["pack_now"]:  # (no program: its page is not full)
            why, cmds_done, end = 0, 0, lp["t_end"]
        elif mode == FAST and n == 1:  # (``FastModel.program1``)
            got1 = program_page(lanes, geo, cmds, slc[3] if lp["slc_now"] else cell,
                                ppns[0], lp["t_in"], lp["t_end"])
            why = -got1 if got1 < 0 else 0
            cmds_done, end = 1 - (got1 & 1), got1 >> 1
        elif mode == FAST:
            times[0], times[1] = lp["t_in"], lp["t_end"]
            why = program_chunk(lanes, slc[2] if lp["slc_now"] else geo, cmds, ppns,
                                times[:1], times[1:], res)
            cmds_done, end = res[0, device], res[2, device]
        else:
            why = program_cmds(lanes, geo, cmds, cell, ppns, queues, ptimes, pres)
            if why:
                ptimes[3] = pres[2]
            cmds_done, end = pres[1], pres[0]
        if why:
            r["stop"] = why
            return j
        r["cmds"] += cmds_done
        if not lp["pack_now"]:
            lp["wprog"] += n
        if lp["wcap"]:  # (``DataCache.buffered``: acknowledged from the buffer)
            buffer_run(wbuf, lpns[j], lpns[j] + n, end)
            lp["whits"] += n
            end = lp["t_end"]
        lru = front[0][1]
        if lru[2][LRU_SIZE]:  # (``DataCache.invalidate``: the read cache's copies go)
            lru_remove(lru[0], lru[1], lru[2], lru[3], lpns[j], lpns[j] + n)
        _complete(st, lp, work, queue, lanes, link, lat, done, j, lp["req_now"], end)
        lp["pend"] = 0
    return upto
