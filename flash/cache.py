"""The data cache manager: the controller DRAM between the host link and the NAND
(MQSim's ``Data_Cache_Manager_Flash_Advanced``).

- **Write buffer** (``FlashConfig.write_buffer_bytes``). A write is acknowledged once
  its data is in the buffer; the buffer flushes eagerly, every page handed to the
  transaction scheduler as soon as it arrives, and a page's space is free again when its
  program ends. A write that finds the buffer full waits for the earliest programs
  (``admit``), so a burst smaller than the buffer completes at link speed and a
  sustained stream settles at the NAND program rate. Space is freed in the order
  programs end, not in the order writes arrived: a page held up behind garbage
  collection on its die does not hold back the pages other dies have programmed (a
  controller frees each DRAM slot when its program completes). A transaction larger
  than the whole buffer is written through (acknowledged when programmed).
- **Read cache** (``FlashConfig.read_cache_bytes``). A NAND page the host read only part
  of stays in DRAM whole, least recently used first out (the rest of the page is what
  a small read's neighbour wants; a page delivered whole is not kept). A read of a page
  still in the write buffer or in the read cache costs no NAND read (``held_runs``).
  A write drops the page's cached copy, so a read always returns the latest version.

The write buffer's three rules are written once each, as compiled kernels over its
state (``Buffer``), which the per-command path (``Ssd``) and the batch path
(``flash.pages``) both call: buffering a write (``_buffer``), releasing the write
whose programs end first (``_release``) and whether the buffer holds a page
(``_held``).

Pages here are logical NAND pages (``page_size`` bytes) of one device. DRAM time is not
booked: its bandwidth exceeds the host link's on every preset, so a hit costs link time
only. Pure: no SimPy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from flash.intmap import MASK, IntMap, im_find, im_has_room, im_put, im_remove
from flash.runlru import LruArrays, RunLru
from tmhw.sim.jit import Direct, njit_noref
from tmhw.sim.rowheap import row_pop, row_push

I64 = npt.NDArray[np.int64]
#: ``DataCache._fmeta``: the writes buffered so far (each one's arrival number), the
#: writes held, their pages
SEQ, COUNT, USED = range(3)
#: the write buffer's state as its kernels take it: the heap of buffered writes (rows
#: of last program end, arrival number, first page, last page + 1; the least (end,
#: arrival) first), its ``SEQ``, ``COUNT`` and ``USED``, and the map of each buffered
#: page to the end of the program of its newest buffered copy (an ``IntMap``'s table
#: and meta)
Buffer = tuple[I64, I64, I64, I64]

#: log2 of the pages per block of ``DataCache.first_cached``'s test
_LRU_BITS = 9


class DataCache:
    """Controller DRAM of one device: write buffer and read cache, in NAND pages."""

    def __init__(self, write_pages: int, read_pages: int) -> None:
        self.write_pages = write_pages
        self.read_pages = read_pages
        #: buffered writes, a binary heap of rows (last program end, arrival number,
        #: first page, last page + 1) on (end, arrival), ``_fmeta[COUNT]`` of them,
        #: their pages ``_fmeta[USED]``
        self._heap = np.zeros((16, 4), dtype=np.int64)
        self._fmeta = np.zeros(3, dtype=np.int64)
        #: logical page -> end of the program of its newest buffered copy
        self._pages = IntMap()
        #: what the kernels take (made again when the ring or the map grows, ``_room``)
        self._buf: Buffer = (self._heap, self._fmeta, self._pages.table, self._pages.meta)
        #: the read cache's pages, least recently used first, as runs
        self._lru = RunLru()
        self.write_hits = 0       # pages acknowledged from the buffer
        self.write_waits = 0      # writes that waited for buffer space
        self.buffer_read_hits = 0  # pages read from the write buffer
        self.cache_read_hits = 0   # pages read from the read cache

    @property
    def used_pages(self) -> int:
        return self._fmeta.item(USED)

    def writes(self) -> list[tuple[int, int, int]]:
        """The buffered writes in the order they leave (program end, then arrival):
        (last program end, first page, last + 1)."""
        rows = sorted(self._heap[:self._fmeta.item(COUNT)].tolist())
        return [(e, a, b) for e, _, a, b in rows]

    def buffered_map(self) -> dict[int, int]:
        """Each buffered page -> the end of the program of its newest buffered copy."""
        return self._pages.as_dict()

    def _room(self, writes: int, pages: int) -> None:
        """Room in the heap for ``writes`` more writes (doubled) and in the map for
        ``pages`` more pages."""
        table = self._pages.table
        self._pages.reserve(pages)
        heap, m = self._heap, self._fmeta
        size = heap.shape[0]
        count = m.item(COUNT)
        if count + writes > size:
            while size < count + writes:
                size *= 2
            grown = np.zeros((size, 4), dtype=np.int64)
            grown[:count] = heap[:count]
            self._heap = grown
        elif self._pages.table is table:
            return
        self._buf = (self._heap, m, self._pages.table, self._pages.meta)

    def make_room(self, writes: int, pages: int) -> None:
        """Room for ``writes`` more writes of ``pages`` pages in all, for a kernel that
        buffers them (``flash.pages``' write loop: ``buffer_run``)."""
        self._room(writes, pages)

    def admit(self, pages: int, earliest: int) -> int:
        """Earliest time >= ``earliest`` at which ``pages`` fit in the write buffer;
        -1 when the transaction is larger than the buffer (written through)."""
        if pages > self.write_pages:
            return -1
        t = int(_ADMIT_WRITE.call(self._buf, pages, self.write_pages, earliest))
        if t > earliest:
            self.write_waits += 1
        return t

    def release_until(self, t: int) -> None:
        """``admit``'s first step at ``t``: the buffered writes whose programs ended
        by ``t`` free their space (``release_ended``)."""
        if self._fmeta.item(COUNT):
            release_ended(self._buf, t)

    def buffered(self, lpns: range, end: int) -> None:
        """Pages ``lpns`` are in the buffer until their programs end at ``end``; their
        read-cache copies are stale."""
        n = len(lpns)
        self._room(1, n)
        _BUFFER_RUN.call(self._buf, lpns.start, lpns.stop, end)
        self.write_hits += n
        self.invalidate(lpns)

    def buffered_pages(self, lpns: I64, ends: I64) -> None:
        """``buffered`` of each one-page write ``lpns[k]`` until ``ends[k]``, in turn."""
        n = int(lpns.size)
        self._room(n, n)
        buffer_pages(self._buf, lpns, ends)
        self.write_hits += n
        if self._lru:
            for lpn in lpns.tolist():
                self._lru.remove(lpn, lpn + 1)

    def first_cached(self, lpns: Sequence[int]) -> int:
        """The first of ``lpns`` whose block of ``2 ** _LRU_BITS`` pages the read cache
        holds a page of (``len(lpns)``: none; then ``invalidate`` of each is no work):
        the read cache's one test of whether it may hold a page."""
        lru = self._lru
        if lru:
            seen: dict[int, bool] = {}
            for k, p in enumerate(lpns):
                block = p >> _LRU_BITS
                held = seen.get(block)
                if held is None:
                    held = seen[block] = lru.overlaps(block << _LRU_BITS,
                                                      (block + 1) << _LRU_BITS)
                if held:
                    return k
        return len(lpns)

    def holds_nothing(self) -> bool:
        """Neither the write buffer nor the read cache holds a page (``held_runs`` finds
        nothing at any time until a write or a partial read)."""
        return not self._pages and not self._lru

    def first_held(self, lpns: list[int], now: int) -> int:
        """``held_runs`` of each one-page range of ``lpns`` in turn at ``now``, for as
        long as DRAM holds none of them: the buffered copies of those pages whose
        programs ended leave the buffer, as ``held_runs`` drops them. The index of the
        first page DRAM (maybe) holds, which is left as it is (``len(lpns)``: none)."""
        k = self.first_cached(lpns) if self._lru else len(lpns)
        if self._pages and k:
            return int(first_held_page(self._pages.table, self._pages.meta,
                                       np.array(lpns[:k], dtype=np.int64), now))
        return k

    def read_state(self) -> tuple[Buffer, LruArrays]:
        """The write buffer and the read cache as a read's kernel takes them
        (``flash.runs.read_front``: ``held_runs``, then ``filled`` or ``filled_runs``,
        in one call)."""
        return self._buf, self._lru.arrays()

    def grow_read_cache(self) -> None:
        """Room for a read's moves in the read cache's order (``read_state``)."""
        self._lru.grow()

    # -- the read cache ------------------------------------------------------------------
    def invalidate(self, lpns: range) -> None:
        """Drop the read-cache copies of ``lpns`` (they were rewritten or trimmed)."""
        if self._lru:
            self._lru.remove(lpns.start, lpns.stop)

    def held_runs(self, lpns: range, now: int) -> list[tuple[int, int]]:
        """The pages of ``lpns`` (consecutive) DRAM holds (write buffer or read cache),
        as maximal runs [a, b) in page order. A buffered page whose program has ended
        leaves the buffer here (then only the read cache may hold it); a read-cache hit
        becomes the most recently used, in page order. (A device's read runs this rule,
        then ``filled`` or ``filled_runs``, compiled in one call, ``read_state``; these
        three are the rules it is tested against.)"""
        lru = self._lru
        buffered = bool(self._pages)
        if not buffered and not lru:
            return []
        lo, hi = lpns.start, lpns.stop
        held: list[tuple[int, int]] = []
        mask = np.zeros(hi - lo if buffered else 0, dtype=np.bool_)
        if buffered:
            hits = int(held_pages(self._buf, lo, now, mask))
            if hits:
                self.buffer_read_hits += hits
                held = _mask_runs(mask, lo)
        if lru:
            cached = lru.runs_in(lo, hi)
            if cached and held:  # the buffer holds these: not read-cache hits
                hit = np.zeros(hi - lo, dtype=np.bool_)
                for a, b in cached:
                    hit[a - lo:b - lo] = True
                hit &= ~mask
                cached = _mask_runs(hit, lo)
            if cached:
                # each hit becomes the most recently used, in page order
                for a, b in cached:
                    lru.push(a, b)
                self.cache_read_hits += sum(b - a for a, b in cached)
                if not held:
                    return cached
                mask |= hit
                return _mask_runs(mask, lo)
        return held

    def filled(self, lpns: Iterable[int]) -> None:
        """Pages read from NAND for the host now stay in the read cache: each becomes
        the most recently used, in the order given, then the least recently used leave
        down to the capacity."""
        if self.read_pages:
            self._lru.push_pages(lpns)
            self._lru.trim(self.read_pages)

    def filled_runs(self, runs: Iterable[tuple[int, int]]) -> None:
        """``filled`` of the pages of ``runs`` [a, b), run after run, each in ascending
        order."""
        if self.read_pages:
            lru = self._lru
            for a, b in runs:
                lru.push(a, b)
            lru.trim(self.read_pages)

    def holds(self, lpn: int, now: int) -> str:
        """Where DRAM holds ``lpn`` at ``now``: "buffer", "cache" or "" (not at all)."""
        if buffer_holds(self._pages.table, self._pages.meta, lpn, now):
            return "buffer"
        return "cache" if lpn in self._lru else ""

    def cached_pages(self) -> list[int]:
        """The read cache's pages, least recently used first."""
        return list(self._lru)


def _mask_runs(mask: npt.NDArray[np.bool_], lo: int) -> list[tuple[int, int]]:
    """The set entries of ``mask`` (page ``lo + i`` at ``i``) as maximal runs [a, b)."""
    edges = np.flatnonzero(np.diff(mask, prepend=False, append=False)) + lo
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


# -- the write buffer's rules ----------------------------------------------------------
@njit_noref
def _buffer(buf: Buffer, lo: int, hi: int, end: int) -> None:
    """A write of pages [lo, hi) whose programs end by ``end`` enters the buffer: a row
    into the heap (room made), and each page's newest copy ends at ``end`` (room
    reserved in the map)."""
    heap, fmeta, table, meta = buf
    i = fmeta[COUNT]
    heap[i, 0] = end
    heap[i, 1] = fmeta[SEQ]
    heap[i, 2] = lo
    heap[i, 3] = hi
    fmeta[COUNT] = row_push(heap, i)  # (ordered on (end, arrival))
    fmeta[SEQ] += 1
    fmeta[USED] += hi - lo
    for p in range(lo, hi):
        im_put(table, meta, p, end)


@njit_noref
def _release(buf: Buffer) -> int:
    """The buffered write whose programs end first (the earliest arrival among equal
    ends) frees its space; each of its pages leaves the buffer unless a newer copy of
    it, whose program ends later, is still there. When its programs ended."""
    heap, fmeta, table, meta = buf
    end, lo, hi = heap[0, 0], heap[0, 2], heap[0, 3]
    fmeta[COUNT] = row_pop(heap, fmeta[COUNT])
    fmeta[USED] -= hi - lo
    for p in range(lo, hi):
        i = im_find(table, meta[MASK], p)
        if i >= 0 and table[i, 1] <= end:
            im_remove(table, meta, i)
    return int(end)


@njit_noref
def _held(table: I64, meta: I64, lpn: int, now: int, drop: bool) -> bool:
    """Whether the buffer holds ``lpn`` at ``now``: its newest copy's program ends
    after ``now``; a copy whose program ended leaves if ``drop``."""
    i = im_find(table, meta[MASK], lpn)
    if i < 0:
        return False
    if table[i, 1] > now:
        return True
    if drop:
        im_remove(table, meta, i)
    return False


@njit_noref
def buffer_holds(table: I64, meta: I64, lpn: int, now: int) -> bool:
    """``_held`` of ``lpn`` at ``now``, the buffer left as it is (``DataCache.holds``)."""
    return _held(table, meta, lpn, now, False)


@njit_noref
def release_ended(buf: Buffer, t: int) -> None:
    """``_release`` of each buffered write whose programs ended by ``t``."""
    heap, fmeta = buf[0], buf[1]
    while fmeta[COUNT] and heap[0, 0] <= t:
        _release(buf)


@njit_noref
def admit_write(buf: Buffer, pages: int, capacity: int, earliest: int) -> int:
    """``DataCache.admit`` of a write of ``pages`` (at most ``capacity``): the writes
    ended by ``earliest`` leave, then those whose programs end first in turn until the
    pages fit; the latest of ``earliest`` and those writes' ends."""
    release_ended(buf, earliest)
    fmeta = buf[1]
    t = earliest
    while fmeta[USED] + pages > capacity:
        end = _release(buf)
        if end > t:
            t = end
    return t


@njit_noref
def buffer_room(buf: Buffer, pages: int) -> bool:
    """Whether the buffer's arrays take one more write of ``pages`` pages without
    growing (``DataCache._room``, which a kernel that buffers asks for otherwise)."""
    return buf[1][COUNT] + 1 <= buf[0].shape[0] and im_has_room(buf[2], buf[3], pages)


@njit_noref
def buffer_run(buf: Buffer, lo: int, hi: int, end: int) -> None:
    """``_buffer`` of one write (``DataCache.buffered``)."""
    _buffer(buf, lo, hi, end)


@njit_noref
def buffer_pages(buf: Buffer, lpns: I64, ends: I64) -> None:
    """``_buffer`` of each one-page write ``lpns[k]`` until ``ends[k]`` in turn."""
    for k in range(lpns.size):
        _buffer(buf, lpns[k], lpns[k] + 1, ends[k])


@njit_noref
def held_pages(buf: Buffer, lo: int, now: int, mask: npt.NDArray[np.bool_]) -> int:
    """``_held`` of each page ``lo + j`` of ``mask`` at ``now``, into ``mask[j]``; how
    many the buffer holds. None where no buffered write (a row of the heap, ended or
    not) overlaps the pages, which is looked at first where the writes are fewer than
    the pages: a page the map holds is one of the write whose program end it holds,
    until that write leaves the heap (``_release``)."""
    heap, fmeta, table, meta = buf
    n = mask.size
    count = fmeta[COUNT]
    if count < n:
        overlaps = False
        for i in range(count):
            if heap[i, 2] < lo + n and heap[i, 3] > lo:
                overlaps = True
                break
        if not overlaps:
            return 0
    hits = 0
    for j in range(n):
        if _held(table, meta, lo + j, now, True):
            mask[j] = True
            hits += 1
    return hits


@njit_noref
def first_held_page(table: I64, meta: I64, lpns: I64, now: int) -> int:
    """``_held`` of each of ``lpns`` in turn at ``now``, up to the first the buffer
    holds; its index (``lpns.size``: none)."""
    for j in range(lpns.size):
        if _held(table, meta, lpns[j], now, True):
            return j
    return lpns.size


#: the write buffer's kernels past their dispatcher (``tmhw.sim.jit.Direct``)
_ADMIT_WRITE = Direct(admit_write)
_BUFFER_RUN = Direct(buffer_run)
