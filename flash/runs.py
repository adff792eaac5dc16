"""A device's host reads, and its host writes of a run of pages, on its fast model, each
in one compiled call.

``Ssd.write`` of a run the FTL places by its run kernel (``FTL.runs_first``: two pages
or more, under a block per plane) makes some twenty Python calls around five kernels:
the write buffer's admission, the data on the host link, the SLC cache's choice, the
FTL's placement, the dies' programs, then the buffering and the read cache's copies
dropped. A DMA write-back of a chunk is such a write, so a study's run spends about a
third of its wall time there, a third of it in that Python. ``write_run_fused`` does
the same steps on the same arrays in one call (``RunWriter.book``): the placement
first, since it declines with nothing changed (a plane that must collect, a block to
open that only Python opens), and no timing step reads what it changes; then the
others in ``Ssd.write``'s order. A read (``read_run_fused``, ``RunReader.book``) is
``read_front`` (the pages the write buffer and the read cache hold, the read cache's
moves, the rest looked up in the map), the NAND reads of the pages that miss as one
chunk, and the data on the link, where ``Ssd.read`` made some fifteen Python calls
around three kernels. What only Python does stays there, before or after the call: the
NVMe queue and the controller (``HostInterface.fetch``), the FTL's map of a run whose
segments are not dense and its blocks to open (``FTL.write_run_by``), the counters, a
background collection and ``Ssd._finish``.

Where the call cannot finish a step for lack of room in its arrays (the link's row, the
write buffer's, a die lane's or a channel's, the read cache's), it declines before
anything is done (the caller grows the arrays, or books the write in Python), or hands
the rest to the Python steps it replaces (``model.program`` then ``Ssd.write_done``;
``DataCache.invalidate``; ``model.read`` or ``read1`` then ``Ssd.read_done``), which
grow the arrays and book it the same; a read of one page from NAND is
``FastModel.read1``'s. So every read and write books what ``Ssd``'s Python steps book,
which the tests hold them to (``tests/flash/test_flash_runs.py``).

Taken only where the dies record nothing (their spans go through the Python path,
which reserves their records); a write also only where the link records nothing.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.cache import Buffer, DataCache, admit_write, buffer_room, buffer_run, held_pages
from flash.engine.chunks import Lanes, program_chunk, read_chunk
from flash.engine.gaps import Meta, gap_book, gap_room
from flash.fast import FastModel
from flash.ftl import FTL
from flash.ftl.kernels import DECLINED, DONE, PLACED, Blocks, Fresh, L2p, write_run
from flash.ftl.mapping import L2pArrays, l2p_read_run
from flash.host import HostInterface
from flash.intmap import LIVE
from flash.runlru import SIZE as LRU_SIZE
from flash.runlru import LruArrays, lru_push, lru_remove, lru_runs_in, lru_spare, lru_trim
from flash.slc import SlcCache, slc_take
from tmhw.sim.jit import Directs, njit, njit_noref

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: ``read_front``'s fills of the read cache: none, every page read from NAND (an
#: in-place read), or the end pages a read wanted only part of
NO_FILL, FILL_ALL, FILL_PARTIAL = 0, 1, 2
#: ``read_front``'s results: write-buffer hits, read-cache hits, unmapped pages read,
#: bytes wanted of the NAND pages
BUF_HITS, CACHE_HITS, UNMAPPED, WANTED = range(4)

#: ``write_run_fused``'s results (``res``): the write buffer's admission (-1: written
#: through), the end of the data's time on the link and the first time its programs
#: may take data, whether in SLC mode, the program commands, the end of the last
#: program, when the write completes, and what is left to the caller (``STAGE``)
ADM, L_END, FIRST_IN, SLC, CMDS, P_END, END, STAGE = range(8)
#: ``STAGE``: nothing left; the programs and all after them (no room in a die lane's or
#: a channel's row); the read cache's copies (no spare row to cut a run in two)
ALL_DONE, PROGRAM_LEFT, INVALIDATE_LEFT = range(3)


@njit
def write_run_fused(lo: int, n: int, geo: npt.NDArray[np.void], stripes: tuple[I64, I64],
                    l2p: L2p, blocks: Blocks, fresh: Fresh, seq: int,
                    io: tuple[I64, I64, I64], t0: int, busy_until: int, dur: int,
                    wcap: int, store_forward: int, wbuf: Buffer, lanes: Lanes,
                    dev: tuple[npt.NDArray[np.void], npt.NDArray[np.void],
                               npt.NDArray[np.void]],
                    ppn0: int, device: int, link: tuple[I64, Meta],
                    slc: tuple[I64, F64, int], lru: LruArrays, ppns: I64, times: I64,
                    pres: I64, res: I64) -> int:
    """``Ssd.write`` of the run [lo, lo + n) taken at ``t0`` (module docstring): the
    answer of ``kernels.write_run`` (its first nine arguments; the run placed into
    ``io``'s ``out``), and where it is ``DONE`` or ``PLACED`` the rest booked as
    ``Ssd.write`` books it: the write buffer of ``wcap`` pages (``wbuf``; 0: none, or
    a write larger than it) admits it, its data crosses the link's write direction for
    ``dur`` from then, the SLC cache (``slc``: its state and pages; 0: none) chooses the
    mode with the device busy until ``busy_until``, its pages (in the lanes' numbering
    from ``ppn0``, into ``ppns``) are programmed as one chunk on ``lanes`` (``dev``: the
    geometry, in SLC mode, and the command times) from the data's first time on the link
    (its last under ``store_forward``), and it is buffered until its programs end or
    completes with them; the read cache (``lru``) drops its copies. Into ``res``: the
    fields above; ``device`` is the device's column of ``pres`` (``program_chunk``'s
    results), ``times`` two slots for its times. ``DECLINED`` (nothing done) where the
    link's or the write buffer's rows have no room."""
    liv, lmeta = link
    if not gap_room(liv, lmeta, 1):
        return DECLINED
    buffered = wcap > 0 and n <= wcap
    if buffered and not buffer_room(wbuf, n):
        return DECLINED  # (``DataCache._room`` grows them)
    got = write_run(lo, n, geo, stripes, l2p, blocks, fresh, seq, io)
    if got != DONE and got != PLACED:
        return got
    out = io[2]
    adm = -1
    t = t0
    if buffered:  # (``DataCache.admit``: its data crosses once it fits)
        adm = admit_write(wbuf, n, wcap, t0)
        if adm > t:
            t = adm
    l_end = gap_book(liv, lmeta, 1, t, dur)
    first_in = l_end if store_forward else l_end - dur
    s = 0
    if slc[2] > 0 and slc_take(slc[0], slc[1], slc[2], n, t0, busy_until):
        s = 1
    res[ADM], res[L_END], res[FIRST_IN], res[SLC] = adm, l_end, first_in, s
    for i in range(n):
        ppns[i] = out[i] + ppn0
    times[0], times[1] = first_in, l_end
    why = program_chunk(lanes, dev[1] if s else dev[0], dev[2], ppns, times[:1],
                        times[1:], pres)
    if why:
        res[STAGE] = PROGRAM_LEFT
        return got
    p_end = pres[2, device]
    res[CMDS], res[P_END] = pres[0, device], p_end
    end = p_end
    if buffered:  # (``DataCache.buffered``: acknowledged from the buffer)
        buffer_run(wbuf, lo, lo + n, p_end)
        end = l_end
    res[END], res[STAGE] = end, ALL_DONE
    if lru[2][LRU_SIZE] and lru_remove(lru[0], lru[1], lru[2], lru[3], lo, lo + n) < 0:
        res[STAGE] = INVALIDATE_LEFT
    return got


#: one entry per FTL map dtypes (``tmhw.sim.jit.Directs``)
_WRITE_FUSED = Directs(write_run_fused)


class RunWriter:
    """The compiled half of ``Ssd.write`` of a run on a device's fast model (module
    docstring): the device keeps the NVMe queue, the counters and what follows."""

    def __init__(self, ftl: FTL, cache: DataCache, host: HostInterface, slc: SlcCache,
                 model: FastModel, store_forward: bool) -> None:
        """The device's parts (``Ssd``), and whether its data is stored before it is
        programmed (``Ssd.store_forward``)."""
        self.ftl, self.cache, self.host, self.slc = ftl, cache, host, slc
        self.model = model
        self.store_forward = int(store_forward)
        self._kernel = _WRITE_FUSED.get(ftl.mapping.dtypes)
        self._ppns = np.zeros(64, dtype=np.int64)
        self._times = np.zeros(2, dtype=np.int64)
        self._pres = np.zeros((3, model.former.devices), dtype=np.int64)
        self._res = np.zeros(8, dtype=np.int64)
        self._dev = (model.geo, model.geo_slc, model.cmds)

    def takes(self, n: int) -> bool:
        """Whether a write of ``n`` pages goes this way: a run the FTL's run kernel
        places first, nothing recorded."""
        return (n > 1 and self.ftl.runs_first(n) and not self.model.dies.record
                and not self.host.links.record)

    def book(self, lo: int, n: int, nbytes: int, t0: int,
             busy_until: int) -> tuple[I64, list[int]] | None:
        """``write_run_fused`` of the ``n`` pages from ``lo`` (``nbytes`` on the link)
        taken at ``t0``, the device busy until ``busy_until``: the run's pages (in the
        device's numbering) and ``res``; None where it declined (nothing done)."""
        model, cache, host, slc = self.model, self.cache, self.host, self.slc
        if self._ppns.size < n:
            self._ppns = np.zeros(2 * n, dtype=np.int64)
        wbuf, lru = cache.read_state()
        extra = (t0, busy_until, host.write_ps(nbytes), cache.write_pages,
                 self.store_forward, wbuf, model.lanes(), self._dev, model.ppn0,
                 model.device, host.links.arrays(), (slc.ints, slc.floats, slc.cap), lru,
                 self._ppns[:n], self._times, self._pres, self._res)
        kernel = self._kernel
        out = self.ftl.write_run_by(lo, n, lambda *a: int(kernel.call(*a, *extra)))
        if out is None:
            return None
        return out, self._res.tolist()


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
    if meta[LRU_SIZE] > 0:
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
READ_FRONT = Directs(read_front)


#: ``read_run_fused``'s results (``rres``): the read's first data-out start (-1: none),
#: its last end, when the read completes (-1: the rest is the caller's, ``STAGE``), the
#: read commands and what is left (``STAGE``: ``ALL_DONE``, or ``READ1_LEFT``,
#: ``CHUNK_LEFT``: the one page's read, or the chunk's, and all after it)
R_START, R_XEND, R_END, R_CMDS, R_STAGE = range(5)
READ1_LEFT, CHUNK_LEFT = 3, 4


@njit
def read_run_fused(dram: tuple[Buffer, LruArrays],
                   l2p: tuple[L2pArrays, tuple[I64, int, int]], lo: int, hi: int, t0: int,
                   fill: int, address: int, nbytes: int, page: int, capacity: int,
                   mask: npt.NDArray[np.bool_], runs: I64, ppns: I64, nb: I64, fres: I64,
                   lanes: Lanes, geo: npt.NDArray[np.void], cmds: npt.NDArray[np.void],
                   ppn0: int, device: int, lppns: I64, times: I64, pres: I64,
                   link: tuple[I64, Meta], dur: int, store_forward: int,
                   rres: I64) -> int:
    """``Ssd.read`` of the pages [lo, hi) (``nbytes`` from ``address``) taken at ``t0``
    (``RunReader``): ``read_front`` (its arguments first; its answer returned, -1 with
    nothing done where the read cache must grow), then where more than one page misses
    their NAND reads as one chunk on ``lanes`` (in the lanes' numbering from ``ppn0``,
    into ``lppns``; ``device`` is the device's column of ``pres``, ``read_chunk``'s
    results; ``times`` a slot for its time), and the data's ``dur`` on the link's read
    direction from its first data-out (its last under ``store_forward``); one page
    that misses is left to the caller (``READ1_LEFT``), and so is a chunk whose lane's
    or channel's row is full (``CHUNK_LEFT``). Into ``rres``: the fields above. -2
    (nothing done) where the link's row has no room."""
    liv, lmeta = link
    if not gap_room(liv, lmeta, 0):
        return -2
    got = read_front(dram, l2p, lo, hi, t0, fill, address, nbytes, page, capacity, mask,
                     runs, ppns, nb, fres)
    if got < 0:
        return got
    start = t0 if got < hi - lo else -1
    x_end = t0
    rres[R_CMDS] = 0
    if got == 1:
        rres[R_START], rres[R_STAGE] = start, READ1_LEFT
        return got
    if got:
        for i in range(got):
            lppns[i] = ppns[i] + ppn0
        times[0] = t0
        why = read_chunk(lanes, geo, cmds, lppns[:got], nb[:got], times, pres)
        if why:
            rres[R_START], rres[R_STAGE] = start, CHUNK_LEFT
            return got
        rres[R_CMDS] = pres[0, device]
        x_end = pres[2, device]
        if start < 0 or pres[1, device] < start:
            start = pres[1, device]
    if store_forward:
        start = x_end  # (MQSim: the request's data crosses once all of it is read)
    end = gap_book(liv, lmeta, 0, start, dur)
    if x_end > end:
        end = x_end
    rres[R_START], rres[R_XEND], rres[R_END], rres[R_STAGE] = start, x_end, end, ALL_DONE
    return got


#: one entry per FTL map dtypes (``tmhw.sim.jit.Directs``)
_READ_FUSED = Directs(read_run_fused)


class RunReader:
    """The compiled half of ``Ssd.read`` on a device's fast model (``read_run_fused``):
    the device keeps the NVMe queue, the counters and what follows."""

    def __init__(self, ftl: FTL, cache: DataCache, host: HostInterface, model: FastModel,
                 store_forward: bool) -> None:
        self.ftl, self.cache, self.host = ftl, cache, host
        self.model = model
        self.store_forward = int(store_forward)
        self._kernel = _READ_FUSED.get(ftl.mapping.dtypes)
        self._ppns = np.zeros(64, dtype=np.int64)
        self._nb = np.zeros(64, dtype=np.int64)
        self._lppns = np.zeros(64, dtype=np.int64)
        self._times = np.zeros(1, dtype=np.int64)
        self._pres = np.zeros((3, model.former.devices), dtype=np.int64)
        self._fres = np.zeros(4, dtype=np.int64)
        self._rres = np.zeros(5, dtype=np.int64)

    def takes(self) -> bool:
        """Whether reads go this way: nothing recorded."""
        return not self.model.dies.record

    def book(self, lo: int, hi: int, t0: int, fill: int, address: int, nbytes: int,
             mask: npt.NDArray[np.bool_], runs: I64,
             dur: int) -> tuple[int, I64, I64, list[int], list[int]]:
        """``read_run_fused`` of the pages [lo, hi) taken at ``t0`` (``mask`` and
        ``runs``: ``read_front``'s scratch; ``dur``: the data's time on the link), the
        read cache and the link grown as it asks: how many pages miss, their pages and
        bytes wanted (valid until the next call), ``read_front``'s results and
        ``rres``."""
        n = hi - lo
        if self._ppns.size < n:
            self._ppns = np.zeros(2 * n, dtype=np.int64)
            self._nb = np.zeros(2 * n, dtype=np.int64)
            self._lppns = np.zeros(2 * n, dtype=np.int64)
        model, cache, links = self.model, self.cache, self.host.links
        l2p = self.ftl.l2p.kernel_state()
        while True:
            got = int(self._kernel.call(
                cache.read_state(), l2p, lo, hi, t0, fill, address, nbytes, model.page,
                cache.read_pages, mask, runs, self._ppns, self._nb, self._fres,
                model.lanes(), model.geo, model.cmds, model.ppn0, model.device,
                self._lppns, self._times, self._pres, links.arrays(), dur,
                self.store_forward, self._rres))
            if got >= 0:
                break
            if got == -1:
                cache.grow_read_cache()
            else:  # (its row grown before any booking: the same bookings)
                links.grow()
        return got, self._ppns, self._nb, self._fres.tolist(), self._rres.tolist()
