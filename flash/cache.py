"""The data cache manager: the controller DRAM between the host link and the NAND
(MQSim's ``Data_Cache_Manager_Flash_Advanced``).

- **Write buffer** (``FlashConfig.write_buffer_bytes``). A write is acknowledged once
  its data is in the buffer; the buffer flushes eagerly, every page handed to the
  transaction scheduler as soon as it arrives, and a page's space is free again when its
  program ends. A write that finds the buffer full waits for the earliest programs
  (``admit``), so a burst smaller than the buffer completes at link speed and a
  sustained stream settles at the NAND program rate. A transaction larger than the whole
  buffer is written through (acknowledged when programmed).
- **Read cache** (``FlashConfig.read_cache_bytes``). A NAND page the host read only part
  of stays in DRAM whole, least recently used first out (the rest of the page is what
  a small read's neighbour wants; a page delivered whole is not kept). A read of a page
  still in the write buffer or in the read cache costs no NAND read (``held_runs``).
  A write drops the page's cached copy, so a read always returns the latest version.

Pages here are logical NAND pages (``page_size`` bytes) of one device. DRAM time is not
booked: its bandwidth exceeds the host link's on every preset, so a hit costs link time
only. Pure: no SimPy.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

from flash.intmap import MASK, IntMap, im_find, im_put, im_remove
from tmhw.sim.jit import njit_noref

I64 = npt.NDArray[np.int64]
#: ``DataCache._fmeta``: the ring's first row, its writes, their pages
HEAD, COUNT, USED = range(3)

#: log2 of the pages per block of the read cache's sets (``DataCache._lru_blocks``)
_LRU_BITS = 9


class DataCache:
    """Controller DRAM of one device: write buffer and read cache, in NAND pages."""

    def __init__(self, write_pages: int, read_pages: int) -> None:
        self.write_pages = write_pages
        self.read_pages = read_pages
        #: buffered writes in arrival order, a ring of rows (last program end, first
        #: page, last page + 1) from row ``_fmeta[HEAD]``, ``_fmeta[COUNT]`` of them,
        #: their pages ``_fmeta[USED]`` (arrays: a batch of one-page writes is buffered
        #: and released in a compiled call, ``flash.pages``)
        self._fifo = np.zeros((16, 3), dtype=np.int64)
        self._fmeta = np.zeros(3, dtype=np.int64)
        #: logical page -> end of the program of its newest buffered copy, as disjoint
        #: runs of pages in page order: run k is pages [_lo[k], _hi[k]), all mapped to
        #: _end[k] (a write buffers a run at one time, so a few runs hold the buffer)
        self._lo: list[int] = []
        self._hi: list[int] = []
        self._end: list[int] = []
        #: the pages buffered by one-page writes, page -> end (a run each would make a
        #: random small-write stream insert into and delete from long lists)
        self._one = IntMap()
        self._lru: OrderedDict[int, None] = OrderedDict()
        #: per block of ``2 ** _LRU_BITS`` pages, the pages of it the read cache holds
        #: (none: not a key), so that a read or write looks up the few it holds of its
        #: blocks, not each of its pages
        self._lru_blocks: dict[int, set[int]] = {}
        self.write_hits = 0       # pages acknowledged from the buffer
        self.write_waits = 0      # writes that waited for buffer space
        self.buffer_read_hits = 0  # pages read from the write buffer
        self.cache_read_hits = 0   # pages read from the read cache

    @property
    def used_pages(self) -> int:
        return self._fmeta.item(USED)

    def writes(self) -> list[tuple[int, int, int]]:
        """The buffered writes, oldest first: (last program end, first page, last + 1)."""
        m = self._fmeta
        rows = np.roll(self._fifo, -m.item(HEAD), axis=0)[:m.item(COUNT)]
        return [(e, a, b) for e, a, b in rows.tolist()]

    def _push(self, end: int, lo: int, hi: int) -> None:
        """A buffered write of pages [lo, hi) at the ring's tail, until ``end``."""
        self._ring_room(1)
        fifo, m = self._fifo, self._fmeta
        fifo[(m.item(HEAD) + m.item(COUNT)) & (fifo.shape[0] - 1)] = (end, lo, hi)
        m[COUNT] += 1
        m[USED] += hi - lo

    def _ring_room(self, n: int) -> None:
        """Room in the ring for ``n`` more writes (doubled, its rows from the head on
        moved to the start)."""
        fifo, m = self._fifo, self._fmeta
        size = fifo.shape[0]
        count = m.item(COUNT)
        if count + n <= size:
            return
        while size < count + n:
            size *= 2
        grown = np.zeros((size, 3), dtype=np.int64)
        grown[:count] = np.roll(fifo, -m.item(HEAD), axis=0)[:count]
        self._fifo = grown
        m[HEAD] = 0

    def admit(self, pages: int, earliest: int) -> int:
        """Earliest time >= ``earliest`` at which ``pages`` fit in the write buffer;
        -1 when the transaction is larger than the buffer (written through)."""
        if pages > self.write_pages:
            return -1
        m = self._fmeta
        t = earliest
        while m.item(COUNT) and self._fifo.item(m.item(HEAD), 0) <= t:
            self._release()
        while m.item(USED) + pages > self.write_pages:
            end = self._release()
            if end > t:
                t = end
        if t > earliest:
            self.write_waits += 1
        return t

    def _release(self) -> int:
        """Free the oldest buffered write's space; return when its programs ended."""
        m = self._fmeta
        h = m.item(HEAD)
        end: int
        end, lo, hi = self._fifo[h].tolist()
        m[HEAD] = (h + 1) & (self._fifo.shape[0] - 1)
        m[COUNT] -= 1
        m[USED] -= hi - lo
        # the pages whose newest copy ends by then go
        self._drop(lo, hi, lambda e: e <= end)
        return end

    def buffered(self, lpns: range, ends: list[int] | int) -> None:
        """Pages ``lpns`` are in the buffer until their programs end (``ends``: one
        time per page, or one for all); their read-cache copies are stale."""
        n = len(lpns)
        last = ends if isinstance(ends, int) else max(ends)
        self._push(last, lpns.start, lpns.stop)
        self.write_hits += n
        if isinstance(ends, int):
            self._assign(lpns.start, lpns.stop, ends)
        else:
            for lpn, e in zip(lpns, ends, strict=True):
                self._assign(lpn, lpn + 1, e)
        self.invalidate(lpns)

    # -- one-page commands in batches (``flash.pages``) -----------------------------------
    @property
    def runs(self) -> bool:
        """Whether a multi-page write's run is buffered (only one-page writes'
        pages are, else)."""
        return bool(self._lo)

    def release_until(self, t: int) -> None:
        """``admit``'s first step at ``t``: the oldest buffered writes whose programs
        ended by ``t`` free their space, a one-page write's page leaving the buffer
        unless a newer copy of it is still there (``_release`` of each, its steps in C
        compiled, ``release_ones``, while no run is buffered)."""
        m = self._fmeta
        while m.item(COUNT) and self._fifo.item(m.item(HEAD), 0) <= t:
            # (runs buffered: a one-page write's release may cut one, in Python)
            if self._lo or release_ones(self._fifo, m, self._one.table, self._one.meta, t):
                self._release()  # the write of more pages it stopped at

    def buffered_pages(self, lpns: I64, ends: I64) -> None:
        """``buffered`` of each one-page write ``lpns[k]`` until ``ends[k]``, in turn.
        Compiled (``buffer_ones``) while no run is buffered and the read cache is
        empty."""
        if self._lo or self._lru:
            for lpn, e in zip(lpns.tolist(), ends.tolist(), strict=True):
                self.buffered(range(lpn, lpn + 1), e)
            return
        n = int(lpns.size)
        self._ring_room(n)
        self._one.reserve(n)
        buffer_ones(lpns, ends, self._fifo, self._fmeta, self._one.table, self._one.meta)
        self.write_hits += n

    def first_cached(self, lpns: list[int]) -> int:
        """The first of ``lpns`` whose block of ``2 ** _LRU_BITS`` pages the read cache
        holds a page of (``len(lpns)``: none; then ``invalidate`` of each is no work)."""
        blocks = self._lru_blocks
        if blocks:
            for k, p in enumerate(lpns):
                if p >> _LRU_BITS in blocks:
                    return k
        return len(lpns)

    def first_held(self, lpns: list[int], now: int) -> int:
        """``held_runs`` of each one-page range of ``lpns`` in turn at ``now``, for as
        long as DRAM holds none of them: the buffered copies of those pages whose
        programs ended leave the buffer, as ``held_runs`` drops them. The index of the
        first page DRAM (maybe) holds, which is left as it is (``len(lpns)``: none).
        Not with buffered runs (``runs``)."""
        one = self._one
        k = self.first_cached(lpns) if self._lru else len(lpns)
        if one and k:
            return int(held_ones(np.array(lpns[:k], dtype=np.int64), now, one.table,
                                 one.meta))
        return k

    # -- the runs of buffered pages ------------------------------------------------------
    def _cut(self, at: int) -> int:
        """Split the run holding page ``at`` (if it starts before it) so that a run
        starts there; the index of the first run starting at or after ``at``."""
        k = bisect_left(self._lo, at)
        if k and self._hi[k - 1] > at:
            lo, hi, e = self._lo, self._hi, self._end
            lo.insert(k, at)
            hi.insert(k, hi[k - 1])
            e.insert(k, e[k - 1])
            hi[k - 1] = at
        return k

    def _assign(self, a: int, b: int, end: int) -> None:
        """Pages [a, b) now map to ``end``."""
        if b - a == 1:
            if self._lo:
                self._drop(a, b, _always)
            self._one[a] = end  # (replacing its older copy's entry, if any)
            return
        if self._one:
            self._drop_one(a, b, _always)
        i = self._cut(a)
        j = self._cut(b)
        self._lo[i:j] = [a]
        self._hi[i:j] = [b]
        self._end[i:j] = [end]

    def _one_in(self, a: int, b: int) -> list[tuple[int, int]]:
        """The pages of one-page writes within [a, b), with their ends."""
        one = self._one
        if b - a <= len(one):
            return [(p, e) for p in range(a, b) if (e := one.get(p)) is not None]
        return [(p, e) for p, e in one.items() if a <= p < b]

    def _drop_one(self, a: int, b: int, gone: Callable[[int], bool]) -> None:
        """``_drop`` among the pages of one-page writes."""
        if b - a == 1:
            self._one.pop_if(a, gone)
            return
        for p, e in self._one_in(a, b):
            if gone(e):
                del self._one[p]

    def _drop(self, a: int, b: int, gone: Callable[[int], bool]) -> None:
        """Pages of [a, b) whose program end satisfies ``gone`` leave the buffer."""
        if self._one:
            self._drop_one(a, b, gone)
        lo = self._lo
        if not lo or b <= lo[0] or a >= self._hi[-1]:
            return
        i = self._cut(a)
        j = self._cut(b)
        keep = [k for k in range(i, j) if not gone(self._end[k])]
        if len(keep) < j - i:
            hi, e = self._hi, self._end
            lo[i:j] = [lo[k] for k in keep]
            hi[i:j] = [hi[k] for k in keep]
            e[i:j] = [e[k] for k in keep]

    def _runs(self, a: int, b: int) -> list[tuple[int, int, int]]:
        """The buffered runs' parts within [a, b): (first, last + 1, end)."""
        lo, hi, e = self._lo, self._hi, self._end
        k = bisect_right(lo, a)
        if k and hi[k - 1] > a:
            k -= 1
        # (one-page writes first, then the runs: callers only count and mark)
        out = [(p, p + 1, end) for p, end in self._one_in(a, b)] if self._one else []
        while k < len(lo) and lo[k] < b:
            out.append((max(lo[k], a), min(hi[k], b), e[k]))
            k += 1
        return out

    def _cached_in(self, lpns: range) -> bool:
        """Whether the read cache may hold a page of ``lpns``: some block of
        ``2 ** _LRU_BITS`` pages they touch holds one (a few dict lookups, where the pages'
        own lookups are one per page)."""
        blocks = self._lru_blocks
        return any(k in blocks for k in range(lpns.start >> _LRU_BITS,
                                              ((lpns.stop - 1) >> _LRU_BITS) + 1))

    def _cached(self, lpns: range) -> list[int]:
        """The pages of ``lpns`` the read cache holds, in no order: those of their
        blocks' sets within ``lpns``."""
        blocks = self._lru_blocks
        lo, hi = lpns.start, lpns.stop
        return [p for k in range(lo >> _LRU_BITS, ((hi - 1) >> _LRU_BITS) + 1)
                for p in blocks.get(k, ()) if lo <= p < hi]

    def _lru_gone(self, lpn: int) -> None:
        """``lpn`` left the read cache: out of its block's set."""
        k = lpn >> _LRU_BITS
        pages = self._lru_blocks[k]
        pages.discard(lpn)
        if not pages:
            del self._lru_blocks[k]

    def invalidate(self, lpns: range) -> None:
        """Drop the read-cache copies of ``lpns`` (they were rewritten or trimmed)."""
        lru = self._lru
        if lru and self._cached_in(lpns):
            for lpn in self._cached(lpns):
                del lru[lpn]
                self._lru_gone(lpn)

    def held_runs(self, lpns: range, now: int) -> list[tuple[int, int]]:
        """The pages of ``lpns`` (consecutive) DRAM holds (write buffer or read cache),
        as maximal runs [a, b) in page order. A buffered page whose program has ended
        leaves the buffer here (then only the read cache may hold it); a read-cache hit
        becomes the most recently used, in page order."""
        lru = self._lru
        if not self._lo and not self._one and not lru:
            return []
        lo, hi = lpns.start, lpns.stop
        held: list[tuple[int, int]] = []
        ended = False
        for a, b, end in self._runs(lo, hi):
            if end > now:
                self.buffer_read_hits += b - a
                held.append((a, b))
            else:
                ended = True
        if ended:  # programmed: the buffer copies are gone
            self._drop(lo, hi, lambda e: e <= now)
        if self._one:
            held.sort()  # (one-page writes come first)
        if lru and self._cached_in(lpns):
            hits = self._cached(lpns)
            if hits:
                starts = [a for a, _ in held]
                ones: list[tuple[int, int]] = []
                for lpn in sorted(hits):
                    k = bisect_right(starts, lpn)
                    if k and held[k - 1][1] > lpn:
                        continue  # the buffer holds it
                    lru.move_to_end(lpn)
                    self.cache_read_hits += 1
                    ones.append((lpn, lpn + 1))
                if ones:
                    held = sorted(held + ones)
        if len(held) < 2:
            return held
        merged = [held[0]]
        for a, b in held[1:]:
            if a == merged[-1][1]:
                merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        return merged

    def filled(self, lpns: Iterable[int]) -> None:
        """Pages read from NAND for the host now stay in the read cache."""
        cap = self.read_pages
        if cap == 0:
            return
        lru = self._lru
        blocks = self._lru_blocks
        for lpn in lpns:
            if lpn in lru:
                lru.move_to_end(lpn)
            else:
                lru[lpn] = None
                k = lpn >> _LRU_BITS
                pages = blocks.get(k)
                if pages is None:
                    blocks[k] = {lpn}
                else:
                    pages.add(lpn)
        while len(lru) > cap:
            self._lru_gone(lru.popitem(last=False)[0])

    def holds(self, lpn: int, now: int) -> str:
        """Where DRAM holds ``lpn`` at ``now``: "buffer", "cache" or "" (not at all)."""
        for _, _, end in self._runs(lpn, lpn + 1):
            if end > now:
                return "buffer"
        return "cache" if lpn in self._lru else ""


def _always(_: int) -> bool:
    return True


@njit_noref
def release_ones(fifo: I64, fmeta: I64, one: I64, one_meta: I64, t: int) -> bool:
    """``DataCache._release`` of each oldest buffered write whose programs ended by
    ``t`` while it is of one page and no run is buffered (the caller's to know): the
    page leaves the map of one-page writes (``one``, ``one_meta``: an ``IntMap``)
    unless its newest copy ends later. True if it stopped at a write of more pages
    that ended by ``t`` (the caller's to release)."""
    wrap = fifo.shape[0] - 1
    h = fmeta[HEAD]
    stopped = False
    while fmeta[COUNT]:
        end = fifo[h, 0]
        if end > t:
            break
        lo = fifo[h, 1]
        if fifo[h, 2] != lo + 1:
            stopped = True
            break
        h = (h + 1) & wrap
        fmeta[COUNT] -= 1
        fmeta[USED] -= 1
        i = im_find(one, one_meta[MASK], lo)
        if i >= 0 and one[i, 1] <= end:
            im_remove(one, one_meta, i)
    fmeta[HEAD] = h
    return stopped


@njit_noref
def buffer_ones(lpns: I64, ends: I64, fifo: I64, fmeta: I64, one: I64,
                one_meta: I64) -> None:
    """``DataCache.buffered`` of each one-page write ``lpns[k]`` until ``ends[k]`` in
    turn, with no run buffered and nothing in the read cache (the caller's to know),
    room in the ring and the map reserved: the ring's rows and the map's entries."""
    wrap = fifo.shape[0] - 1
    for k in range(lpns.size):
        r = (fmeta[HEAD] + fmeta[COUNT]) & wrap
        fifo[r, 0] = ends[k]
        fifo[r, 1] = lpns[k]
        fifo[r, 2] = lpns[k] + 1
        fmeta[COUNT] += 1
        fmeta[USED] += 1
        im_put(one, one_meta, lpns[k], ends[k])


@njit_noref
def held_ones(lpns: I64, now: int, one: I64, one_meta: I64) -> int:
    """``DataCache.first_held``'s walk of the map of one-page writes (``one``,
    ``one_meta``: an ``IntMap``): the first of ``lpns`` whose buffered copy's program
    ends after ``now`` (``lpns.size``: none); the ended copies before it leave."""
    for j in range(lpns.size):
        i = im_find(one, one_meta[MASK], lpns[j])
        if i >= 0:
            if one[i, 1] > now:
                return j
            im_remove(one, one_meta, i)
    return lpns.size
