"""Where every page of the iteration lives: the executor's per-page state, in numpy.

Per page: whether HBM holds it (or is receiving it), the time its HBM copy is complete,
whether flash holds its current version, and whether its data is live: a byte and
two bits a page
(a time is an index into the times in use, held once per sub-block of 64 pages that
share it: ``Ready``; 8 bytes a page would be 0.9 GB on eight GPT-3 blocks, whose 114M
pages each count). HBM occupancy
counts pages held plus pages whose HBM copy is still being written back (they free when
the flash write completes), so capacity is a hard limit at every instant, in-flight
prefetches included. Pure: times are passed in, no SimPy.

Holding, releasing and timing a run of pages are compiled (``tmhw.sim.jit``):
``_hold_run``, ``_release_run``, ``_ready_run`` and ``_ready_max`` are the steps of
``hold``, ``release``, ``set_ready`` and ``ready_time`` on a run, page by page, on the
same arrays (a chunk's hold is one call, not a dozen numpy calls). They take the state
by name, in two records of arrays: ``Held`` (the flags and group counts a hold or a
release changes) and ``Ready`` (the pages' ready times and their block maxima).
"""

from __future__ import annotations

import heapq
from typing import NamedTuple

import numpy as np

from tmhw.sim.jit import Direct, njit, njit_noref
from tmhw.sim.pagebits import PageBits, _bit, _popcount
from tmhw.sim.stats import Level


def runs(pages: np.ndarray) -> list[tuple[int, int]]:
    """Contiguous runs [first, stop) of a sorted page array."""
    if len(pages) == 0:
        return []
    if pages[-1] - pages[0] + 1 == len(pages):
        return [(int(pages[0]), int(pages[-1]) + 1)]
    cut = np.flatnonzero(np.diff(pages) != 1) + 1
    starts = np.concatenate(([0], cut))
    stops = np.concatenate((cut, [len(pages)]))
    return [(int(pages[first]), int(pages[stop - 1]) + 1)
            for first, stop in zip(starts, stops, strict=True)]


#: pages per block of the ready times' block maxima (``Residency.ready_time``); the
#: kernels read it as a compile-time constant
READY_BLOCK = 256
#: pages per sub-block of the ready times' index (``Ready``): a sub-block all of whose
#: pages share their time holds it once; one whose pages differ has a row of its own
SUB_BITS = 6
SUB = 1 << SUB_BITS


class Held(NamedTuple):
    """What holding and releasing a run of pages changes (``_hold_run``,
    ``_release_run``): per page whether HBM holds it; the groups' first pages, the
    page count after the last (empty: no group is counted); per group its held pages.
    The kernels take it as a plain tuple (numba types a named tuple by a slow path on
    every call) and unpack it in this order."""

    in_hbm: np.ndarray
    starts: np.ndarray
    held_by_owner: np.ndarray


class Ready(NamedTuple):
    """When each page's HBM copy is (was last) complete (``_ready_run``,
    ``_ready_max``), as an index into ``times`` per page, kept in two levels: per
    sub-block of ``SUB`` pages, the index all its pages share, or ``-1 - r`` where they
    differ and row ``r`` of ``rows`` holds one index per page (a sub-block keeps its
    row once it has one); per block of ``READY_BLOCK`` pages the latest of its pages'
    times; the times in use; and the rows in use and the pages. A time is set over a
    run of pages at once (a chunk, a tensor), so only the sub-blocks at runs' ends need
    rows: 4 bytes a page for a flat index would be 2.6 GB at 660 M pages, these are a
    few percent of that. A plain tuple to the kernels, as ``Held``."""

    sub_ix: np.ndarray
    rows: np.ndarray
    block_max: np.ndarray
    times: np.ndarray
    meta: np.ndarray


Arrays3 = tuple[np.ndarray, np.ndarray, np.ndarray]
Arrays5 = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
#: ``Ready.meta``: rows in use, pages
ROWS_USED, NPAGES = 0, 1


def _plain(state: Held) -> Arrays3:
    """``state`` as the plain tuple the kernels take."""
    first, second, third = state
    return first, second, third


def _plain_ready(state: Ready) -> Arrays5:
    """``state`` as the plain tuple the kernels take."""
    a, b, c, d, e = state
    return a, b, c, d, e


@njit_noref
def _ix(ready: Arrays5, page: int) -> int:
    """The index of ``page``'s ready time in ``times``."""
    v = ready[0][page >> SUB_BITS]
    if v < 0:
        return int(ready[1][-1 - v, page & (SUB - 1)])
    return int(v)


@njit_noref
def _block_max_at(ready: Arrays5, block: int,
                  time: int) -> None:
    """Block ``block``, some of whose pages were just given time ``time``: its maximum."""
    block_max = ready[2]
    if time >= block_max[block]:
        block_max[block] = time  # the others are no later than the old maximum
        return
    hi = min((block + 1) * READY_BLOCK, ready[4][NPAGES])
    block_max[block] = _times_max(ready, block * READY_BLOCK, hi)


@njit_noref
def _index_run(ready: Arrays5, start: int, stop: int, idx: int) -> None:
    """Pages [start, stop) (stop > start) get index ``idx``: a sub-block covered whole
    and without a row holds it once; one covered in part gets a row (the caller leaves
    room for two, ``Residency._room_rows``)."""
    sub_ix, rows, meta = ready[0], ready[1], ready[4]
    npages = meta[NPAGES]
    for b in range(start >> SUB_BITS, ((stop - 1) >> SUB_BITS) + 1):
        lo = b << SUB_BITS
        hi = min(lo + SUB, npages)
        v = sub_ix[b]
        if v >= 0:
            if start <= lo and stop >= hi:
                sub_ix[b] = idx
                continue
            if v == idx:
                continue
            r = meta[ROWS_USED]
            meta[ROWS_USED] = r + 1
            rows[r, :] = v
            sub_ix[b] = -1 - r
            v = -1 - r
        rows[-1 - v, max(start, lo) - lo:min(stop, hi) - lo] = idx


@njit_noref
def _index_pages(ready: Arrays5, pages: np.ndarray, idx: int) -> None:
    """Each of ``pages`` gets index ``idx`` (room left for a row each)."""
    sub_ix, rows, meta = ready[0], ready[1], ready[4]
    for page in pages:
        b = page >> SUB_BITS
        v = sub_ix[b]
        if v == idx:
            continue
        if v >= 0:
            r = meta[ROWS_USED]
            meta[ROWS_USED] = r + 1
            rows[r, :] = v
            sub_ix[b] = -1 - r
            v = -1 - r
        rows[-1 - v, page & (SUB - 1)] = idx


@njit_noref
def _ready_of(ready: Arrays5, pages: np.ndarray, out: np.ndarray) -> None:
    """The ready time of each of ``pages``."""
    times = ready[3]
    for j in range(pages.size):
        out[j] = times[_ix(ready, pages[j])]


@njit_noref
def _ready_run(ready: Arrays5, start: int, stop: int,
               idx: int, time: int) -> None:
    """``Residency.set_ready`` of the pages [start, stop) (stop > start), ``time`` being
    ``times[idx]``."""
    block_max = ready[2]
    size = READY_BLOCK
    _index_run(ready, start, stop, idx)
    first_whole = -(-start // size)
    end_whole = stop // size  # the blocks [start, stop) covers whole
    if first_whole < end_whole:
        block_max[first_whole:end_whole] = time
        if start < first_whole * size:
            _block_max_at(ready, first_whole - 1, time)
        if end_whole * size < stop:
            _block_max_at(ready, end_whole, time)
    else:
        for block in range(start // size, (stop - 1) // size + 1):
            _block_max_at(ready, block, time)


@njit_noref
def _times_max(ready: Arrays5, start: int, stop: int) -> int:
    """The latest ready time of the pages [start, stop) (stop > start): a sub-block
    without a row by its one time."""
    sub_ix, rows, times = ready[0], ready[1], ready[3]
    latest = times[_ix(ready, start)]
    page = start + 1
    while page < stop:
        b = page >> SUB_BITS
        v = sub_ix[b]
        end = min(stop, (b + 1) << SUB_BITS)
        if v >= 0:
            time = times[v]
            if time > latest:
                latest = time
        else:
            row = -1 - v
            for q in range(page, end):
                time = times[rows[row, q & (SUB - 1)]]
                if time > latest:
                    latest = time
        page = end
    return int(latest)


#: a word of eight held flags (a byte each, 1: held)
_ALL_HELD = np.uint64(0x0101010101010101)


@njit_noref
def _count_held(in_hbm: np.ndarray, words: np.ndarray, start: int, stop: int) -> int:
    """How many of the pages [start, stop) HBM holds: the pages up to a word boundary
    one by one, then eight flags a word (its bytes, each 0 or 1): up to 255 words
    added as they are (each byte then counts at most 255 flags, so none carries into
    the next), their bytes then summed by three folds, then the rest one by one."""
    count = 0
    head = min(stop, (start + 7) & ~7)
    for page in range(start, head):
        if in_hbm[page]:
            count += 1
    tail = max(head, stop & ~7)
    w, end = head >> 3, tail >> 3
    m8, m16, m32 = (np.uint64(0x00FF00FF00FF00FF), np.uint64(0x0000FFFF0000FFFF),
                    np.uint64(0xFFFFFFFF))
    while w < end:
        upto = min(end, w + 255)
        x = words[w:upto].sum()  # (a vectorised sum)
        x = (x & m8) + ((x >> np.uint64(8)) & m8)
        x = (x & m16) + ((x >> np.uint64(16)) & m16)
        count += int((x & m32) + (x >> np.uint64(32)))
        w = upto
    for page in range(tail, stop):
        if in_hbm[page]:
            count += 1
    return count


@njit_noref
def _held_pages_max(in_hbm: np.ndarray, ready: Arrays5, start: int, stop: int,
                    latest: int) -> int:
    """The latest of ``latest`` and the ready times of the held pages of [start, stop)."""
    times = ready[3]
    for page in range(start, stop):
        if in_hbm[page]:
            time = times[_ix(ready, page)]
            if time > latest:
                latest = time
    return latest


@njit_noref
def _held_times_max(held: Arrays3, ready: Arrays5, words: np.ndarray, start: int,
                    stop: int) -> int:
    """The latest ready time of the pages of [start, stop) that HBM holds (0: none): a
    block of ``READY_BLOCK`` pages all held by its maximum, one none of whose pages is
    held skipped (its held pages counted a word of eight flags at a time,
    ``_count_held``), the others page by page. ``words``: the held flags as 64-bit
    words."""
    in_hbm = held[0]
    block_max = ready[2]
    size = READY_BLOCK
    first_whole = -(-start // size)
    end_whole = stop // size
    if first_whole >= end_whole:
        return int(_held_pages_max(in_hbm, ready, start, stop, 0))
    latest = _held_pages_max(in_hbm, ready, start, first_whole * size, 0)
    for block in range(first_whole, end_whole):
        lo = block * size
        count = _count_held(in_hbm, words, lo, lo + size)
        if count == size:
            if block_max[block] > latest:
                latest = block_max[block]
        elif count:
            latest = _held_pages_max(in_hbm, ready, lo, lo + size, latest)
    return int(_held_pages_max(in_hbm, ready, end_whole * size, stop, latest))


@njit_noref
def _ready_max(ready: Arrays5, start: int, stop: int) -> int:
    """``Residency.ready_time`` of [start, stop) (stop > start): the blocks it covers whole by
    their maxima, the pages at its two ends one by one."""
    block_max = ready[2]
    size = READY_BLOCK
    first_whole = -(-start // size)
    end_whole = stop // size
    if end_whole - first_whole < 2:
        return _times_max(ready, start, stop)
    out = block_max[first_whole]
    for block in range(first_whole + 1, end_whole):
        if block_max[block] > out:
            out = block_max[block]
    if start < first_whole * size:
        out = max(out, _times_max(ready, start, first_whole * size))
    if end_whole * size < stop:
        out = max(out, _times_max(ready, end_whole * size, stop))
    return int(out)


@njit_noref
def _group_of(starts: np.ndarray, page: int) -> int:
    """The group of page ``page``: the last of ``starts`` at or before it."""
    return int(np.searchsorted(starts, page, side="right")) - 1


@njit_noref
def _count_run(held: Arrays3, start: int, stop: int,
               flag: bool, count: int, sign: int) -> None:
    """``sign`` x the pages of [start, stop) whose held flag is ``flag`` (``count`` of
    them, > 0) into their groups' counts (``starts`` not empty)."""
    in_hbm, starts, held_by_owner = held
    group = _group_of(starts, start)
    if starts[group + 1] >= stop:  # a run inside one group, the common case
        held_by_owner[group] += sign * count
        return
    for page in range(start, stop):
        while starts[group + 1] <= page:
            group += 1
        if in_hbm[page] == flag:
            held_by_owner[group] += sign


@njit_noref
def _last_held(in_hbm: np.ndarray, words: np.ndarray, start: int, stop: int,
               k: int) -> tuple[int, int, int]:
    """``Residency.last_held``: scanned from ``stop`` down, a word of eight pages at a
    time where none of them is held, or all are and the count stays within ``k``."""
    a = b = -1
    count = 0
    page = stop
    while page > start:
        if not page & 7 and page - 8 >= start:
            word = words[(page >> 3) - 1]
            if word == 0:
                page -= 8
                continue
            if word == _ALL_HELD and count + 8 <= k:
                if b < 0:
                    b = page
                page -= 8
                a = page
                count += 8
                if count == k:
                    break
                continue
        page -= 1
        if in_hbm[page]:
            if b < 0:
                b = page + 1
            a = page
            count += 1
            if count == k:
                break
    if b < 0:
        return 0, 0, 0
    return a, b, count


@njit_noref
def _release_run(held: Arrays3, words: np.ndarray, start: int, stop: int) -> int:
    """``Residency.release``'s change of the flags and group counts for the pages
    [start, stop): how many were held. ``words``: the flags as 64-bit words."""
    in_hbm, starts, _ = held
    count = _count_held(in_hbm, words, start, stop)
    if count and starts.size:
        _count_run(held, start, stop, True, count, -1)
    in_hbm[start:stop] = False
    return count


@njit_noref
def _hold_run(held: Arrays3, words: np.ndarray,
              ready: Arrays5, start: int, stop: int, free: int,
              idx: int, time: int) -> int:
    """``Residency.hold`` of the pages [start, stop) (stop > start) with ``free`` pages
    free, ready at ``time`` (``times[idx]``): the pages newly held, or -1 - that number
    (nothing changed) if more than ``free``. ``words``: the flags as 64-bit words."""
    in_hbm, starts, _ = held
    new = stop - start - _count_held(in_hbm, words, start, stop)
    if new > free:
        return -1 - new
    if new and starts.size:
        _count_run(held, start, stop, False, new, 1)
    in_hbm[start:stop] = True
    _ready_run(ready, start, stop, idx, time)
    return new


@njit_noref
def _tail_due(ready: Arrays5, lo: int, hi: int, first: int, last: int, dur: int) -> int:
    """``Residency.tail_due`` (hi > lo): the pages' ready times in one pass, a block of
    ``READY_BLOCK`` pages skipped where its latest ready time plus the work after its
    first page does not exceed the latest so far (the work after a page only shrinks
    along the tail). The work after a page, ``n * dur // span`` with ``n`` the pages
    after it, as ``n * (dur // span) + n * (dur % span) // span``: the same integer, and
    no product beyond ``dur`` or ``span ** 2`` (``n * dur`` would overflow 64 bits for a
    tail of a million pages under an op of 10 s)."""
    block_max, times = ready[2], ready[3]
    span = last - first
    q, r = dur // span, dur % span
    size = READY_BLOCK
    n = last - lo - 1
    due: int = times[_ix(ready, lo)] + n * q + (n * r) // span
    page = lo + 1
    while page < hi:
        n = last - page - 1
        after = n * q + (n * r) // span
        if not page % size and page + size <= hi and block_max[page // size] + after <= due:
            page += size
            continue
        t = times[_ix(ready, page)] + after
        if t > due:
            due = t
        page += 1
    return due


@njit
def _clear_runs(flags: np.ndarray, words: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The maximal runs [a, b) of pages of [start, stop) whose flag is clear, in order,
    as rows; ``words``: the flags eight a word (a byte each), skipped a word at a time
    where all eight are set, or all clear."""
    out = np.empty(((stop - start + 1) // 2, 2), dtype=np.int64)
    k = 0
    page = start
    while page < stop:
        while page < stop:
            if not page & 7 and page + 8 <= stop and words[page >> 3] == _ALL_HELD:
                page += 8
            elif flags[page]:
                page += 1
            else:
                break
        if page == stop:
            break
        out[k, 0] = page
        while page < stop:
            if not page & 7 and page + 8 <= stop and words[page >> 3] == 0:
                page += 8
            elif not flags[page]:
                page += 1
            else:
                break
        out[k, 1] = page
        k += 1
    return out[:k]


@njit_noref
def _pack8(x: np.uint64) -> np.uint64:
    """Eight flags, one a byte (each 0 or 1), as the low eight bits of a word: byte
    ``j``'s flag as bit ``j``."""
    return (x * np.uint64(0x0102040810204080)) >> np.uint64(56)


@njit_noref
def _dirty_count(in_hbm: np.ndarray, hbm_words: np.ndarray, live: np.ndarray,
                 in_flash: np.ndarray, start: int, stop: int) -> int:
    """How many of the pages [start, stop) are dirty: held in HBM, live, and newer than
    any flash copy (``Residency.dirty_count``; ``live`` and ``in_flash``: the
    ``PageBits``' words; ``hbm_words``: the held flags eight a word). The pages up to
    a 64-page boundary one by one, then 64 at a time (the held flags of eight words
    packed into one, ``_pack8``, against a word of each ``PageBits``), then the rest
    one by one."""
    head = min(stop, (start + 63) & ~63)
    tail = max(head, stop & ~63)
    count = _dirty_pages(in_hbm, live, in_flash, start, head)
    for w in range(head >> 6, tail >> 6):
        held = np.uint64(0)
        for j in range(8):
            held |= _pack8(hbm_words[8 * w + j]) << np.uint64(8 * j)
        count += _popcount(held & live[w] & ~in_flash[w])
    return count + _dirty_pages(in_hbm, live, in_flash, tail, stop)


@njit_noref
def _dirty_pages(in_hbm: np.ndarray, live: np.ndarray, in_flash: np.ndarray, start: int,
                 stop: int) -> int:
    """``_dirty_count`` of [start, stop) page by page."""
    count = 0
    for page in range(start, stop):
        if in_hbm[page] and _bit(live, page) and not _bit(in_flash, page):
            count += 1
    return count


def compile_kernels() -> None:
    """Compile this module's kernels into numba's on-disk cache (``make`` runs this
    before the tests and the default study, through ``tmhw.system.compile_kernels``)."""
    res = Residency(2 * READY_BLOCK, 2 * READY_BLOCK, 4096, starts=np.array([0, 3, 512]))
    res.hold(slice(1, 300), 5, 0)
    res.set_ready(slice(2, 4), 3)
    res.release(slice(2, 290), 6)
    res.ready_time(0, 2)
    res.held_ready_time(0, 300)
    res.last_held(0, 300, 5)
    res.dirty_count(0, 300)
    res.count_missing(0, 300)
    res.missing_runs(0, 300)
    res.tail_due(1, 300, 0, 400, 10**9)


class CapacityError(RuntimeError):
    """An allocation would exceed HBM capacity (the caller must evict first)."""


class Residency:
    """Page state of one workload's address space against an HBM capacity in pages."""

    def __init__(self, npages: int, capacity_pages: int, page_size: int,
                 starts: np.ndarray | None = None) -> None:
        """``starts``: the first page of each group (the tensors, in page order), and
        ``npages`` after the last; when given, ``held_by_owner`` counts held pages per
        group, kept up to date incrementally. (A group per page would cost 4 bytes a
        page: 450 MB on eight GPT-3 blocks.)"""
        self.npages = npages
        self.starts = None if starts is None else np.asarray(starts, dtype=np.int64)
        self.held_by_owner = np.zeros(len(self.starts) - 1 if self.starts is not None
                                      else 0, dtype=np.int64)
        self.capacity = capacity_pages
        self.page_size = page_size
        #: the flags live in whole 64-bit words (``_hbm_words``), so that a compiled
        #: pass tests eight pages at a time (``_held_times_max``)
        self._hbm_words = np.zeros(-(-npages // 8), dtype=np.uint64)
        self.in_hbm = self._hbm_words.view(np.bool_)[:npages]
        #: per page, the index in ``_times`` of the time its HBM copy is (was) complete,
        #: in two levels (``Ready``): every time is set over a run of pages at once (a
        #: chunk, a tensor), so the times in use are few, and the value a page was last
        #: given is kept exactly
        self._sub_ix = np.zeros(-(-npages // SUB), dtype=np.int64)
        self._rows = np.zeros((64, SUB), dtype=np.uint32)
        self._ready_meta = np.array([0, npages], dtype=np.int64)
        self._times = np.zeros(1024, dtype=np.int64)
        self._ntimes = 1                                # _times[0] = 0: never held
        self._compact_at = max(1024, npages // 16)
        #: per block of READY_BLOCK pages, the latest of their ready times: the maximum
        #: over a tensor reads a block's pages only at the tensor's two ends
        self._block_max = np.zeros(-(-npages // READY_BLOCK), dtype=np.int64)
        #: the same arrays as the compiled steps take them (``Held``, ``Ready``)
        self._held = _plain(Held(self.in_hbm, np.zeros(0, dtype=np.int64)
                                if self.starts is None else self.starts,
                                self.held_by_owner))
        self._ready = self._ready_state()
        #: whether flash holds a page's current version, and whether its data is live
        #: (a bit each)
        self.in_flash = PageBits(npages)
        self.live = PageBits(npages)
        self.held = 0                                   # pages with in_hbm set
        self._freeing: list[tuple[int, int]] = []       # (time, pages) of write-backs
        self._freeing_pages = 0
        #: (start, stop, end) of cleans in flight: pages written back that stay held; their
        #: space stays taken until the write ends, even if they are released before
        self._cleaning: list[tuple[int, int, int]] = []
        self.level = Level()                            # occupancy in bytes over time

    # -- occupancy -----------------------------------------------------------------------
    def settle(self, now: int) -> None:
        """Release the space of write-backs that completed by ``now``."""
        freeing = self._freeing
        if not freeing or freeing[0][0] > now:
            return
        while freeing and freeing[0][0] <= now:
            self._freeing_pages -= heapq.heappop(freeing)[1]
        self.level.set(now, self.occupied_pages * self.page_size)

    @property
    def freeing_pages(self) -> int:
        """Pages whose write-back is in flight: they free when it completes."""
        return self._freeing_pages

    @property
    def occupied_pages(self) -> int:
        return self.held + self._freeing_pages

    def free_pages(self, now: int) -> int:
        freeing = self._freeing
        if freeing and freeing[0][0] <= now:
            self.settle(now)
        return self.capacity - self.occupied_pages

    def claim_freeing(self, pages: int, now: int) -> int | None:
        """Hand ``pages`` of the space that in-flight write-backs will free over to a
        fetch that is about to hold them (its data lands after that space is free, so
        occupancy never exceeds capacity). Returns the time the last claimed page is
        free, or None (claiming nothing) if the write-backs in flight free too few."""
        self.settle(now)
        if pages > self._freeing_pages:
            return None
        free_at = now
        while pages > 0:
            when, count = heapq.heappop(self._freeing)
            take = min(count, pages)
            if count > take:
                heapq.heappush(self._freeing, (when, count - take))
            self._freeing_pages -= take
            pages -= take
            free_at = max(free_at, when)
        return free_at

    def next_free_time(self) -> int | None:
        """When the earliest pending write-back releases its space."""
        return self._freeing[0][0] if self._freeing else None

    # -- ready times ---------------------------------------------------------------------
    def _ready_state(self) -> Arrays5:
        """The ready times as the kernels take them (again after the rows or the times
        grow)."""
        return _plain_ready(Ready(self._sub_ix, self._rows, self._block_max, self._times,
                                  self._ready_meta))

    def _room_rows(self, more: int) -> None:
        """Room for ``more`` more rows of the ready times' index."""
        need = int(self._ready_meta[ROWS_USED]) + more
        if need > len(self._rows):
            grown = np.zeros((max(need, 2 * len(self._rows)), SUB), dtype=np.uint32)
            grown[:len(self._rows)] = self._rows
            self._rows = grown
            self._ready = self._ready_state()

    def ready_of(self, pages: np.ndarray | slice) -> np.ndarray:
        """The time each of ``pages``' HBM copy is (or was last) complete."""
        if isinstance(pages, slice):
            pages = np.arange(*pages.indices(self.npages), dtype=np.int64)
        pages = np.ascontiguousarray(pages, dtype=np.int64).ravel()
        out = np.empty(pages.size, dtype=np.int64)
        _ready_of(self._ready, pages, out)
        return out

    def tail_due(self, lo: int, hi: int, first: int, last: int, dur: int) -> int:
        """When an op of ``dur`` ps that streams the pages [lo, hi) (hi > lo) of its
        operand [first, last) can end at the earliest: the latest, over those pages, of
        a page's ready time plus the op's work after it,
        ``(last - page - 1) * dur // (last - first)`` (one compiled pass, exact past 64
        bits)."""
        return int(_D_TAIL_DUE.call(self._ready, lo, hi, first, last, dur))

    def set_ready(self, pages: np.ndarray | slice, ready: int) -> None:
        """``pages``' HBM copies are complete at ``ready``."""
        idx = self._time_index(ready)
        pages = self._pages(pages)
        if not isinstance(pages, slice):
            pages = np.ascontiguousarray(pages).ravel()
            if pages.dtype == np.bool_:
                pages = np.flatnonzero(pages)
            pages = pages.astype(np.int64, copy=False)
            self._room_rows(int(pages.size))
            _index_pages(self._ready, pages, idx)
            for k in np.unique(pages // READY_BLOCK).tolist():
                _block_max_at(self._ready, k, ready)
            return
        if pages.stop > pages.start:
            self._room_rows(2)
            _ready_run(self._ready, pages.start, pages.stop, idx, ready)

    def _pages(self, pages: np.ndarray | slice) -> np.ndarray | slice:
        """``pages`` as a run ``slice(a, b)`` (the compiled steps' form) or, for a slice
        with a step, as the page numbers it selects."""
        if not isinstance(pages, slice):
            return pages
        start, stop, step = pages.indices(self.npages)
        return slice(start, stop) if step == 1 else np.arange(start, stop, step)

    def _time_index(self, time: int) -> int:
        """The index of time ``time`` in ``_times`` (the last one, when it is the same)."""
        n_times = self._ntimes
        if self._times[n_times - 1] == time:
            return n_times - 1
        if n_times == len(self._times):
            if n_times >= self._compact_at:
                n_times = self._compact()
            if n_times == len(self._times):
                self._times = np.concatenate((self._times, np.zeros_like(self._times)))
                self._ready = self._ready_state()
        self._times[n_times] = time
        self._ntimes = n_times + 1
        return n_times

    def _compact(self) -> int:
        """Drop the times no page refers to any more, renumbering the pages' indices
        (the sub-blocks' and the rows', a slice at a time: no temporary the size of the
        index). Returns how many are left; the next compaction waits until at least as
        many again are added."""
        sub_ix, rows = self._sub_ix, self._rows[:int(self._ready_meta[ROWS_USED])]
        used = np.zeros(self._ntimes, dtype=bool)
        block = 1 << 20
        for base in range(0, len(sub_ix), block):
            part = sub_ix[base:base + block]
            used[part[part >= 0]] = True
        for base in range(0, len(rows), block // SUB):
            used[rows[base:base + block // SUB]] = True
        used[0] = True
        renum = np.cumsum(used) - 1
        for base in range(0, len(sub_ix), block):
            part = sub_ix[base:base + block]
            whole = part >= 0
            part[whole] = renum[part[whole]]
        for base in range(0, len(rows), block // SUB):
            rows[base:base + block // SUB] = renum[rows[base:base + block // SUB]]
        kept = self._times[:self._ntimes][used]
        self._times[:len(kept)] = kept
        self._ntimes = len(kept)
        self._compact_at = max(self._compact_at, 2 * len(kept))
        return self._ntimes

    # -- transitions ---------------------------------------------------------------------
    def missing_runs(self, start: int, stop: int) -> tuple[int, list[tuple[int, int]]]:
        """How many pages of [start, stop) HBM does not hold, and their runs in order
        (compiled, ``_clear_runs``; a chunk is most often all missing or all held)."""
        held = (int(_D_COUNT_HELD.call(self.in_hbm, self._hbm_words, start, stop))
                if stop > start else 0)
        if held == 0:
            return stop - start, [(start, stop)] if stop > start else []
        if held == stop - start:
            return 0, []
        return stop - start - held, [(a, b) for a, b in
                                     _clear_runs(self.in_hbm, self._hbm_words, start,
                                                 stop).tolist()]

    def last_held(self, start: int, stop: int, k: int) -> tuple[int, int, int]:
        """The span [a, b) of pages [start, stop) from the ``k``-th last page HBM holds
        (the first it holds, if it holds fewer) to the last it holds, included, and how
        many held pages it has (at most ``k``); (0, 0, 0) if it holds none. ``k`` >= 1."""
        a, b, n = _D_LAST_HELD.call(self.in_hbm, self._hbm_words, start, stop, k)
        return int(a), int(b), int(n)

    def count_missing(self, start: int, stop: int) -> int:
        """How many of the pages [start, stop) HBM does not hold (compiled, eight
        flags a word: ``_count_held``)."""
        if stop <= start:
            return 0
        return stop - start - int(_D_COUNT_HELD.call(self.in_hbm, self._hbm_words, start, stop))

    def dirty_runs(self, start: int, stop: int) -> list[tuple[int, int]]:
        """The dirty pages of [start, stop) (``dirty_count``'s) as runs in page order."""
        dirty = self.in_hbm[start:stop] & self.live[start:stop] & ~self.in_flash[start:stop]
        return runs(np.flatnonzero(dirty) + start)

    def dirty_count(self, start: int, stop: int) -> int:
        """How many of the pages [start, stop) are dirty: held in HBM, live and newer
        than any flash copy, so that evicting them needs a write-back (one compiled
        pass, no temporary masks)."""
        if stop <= start:
            return 0
        return int(_D_DIRTY_COUNT.call(self.in_hbm, self._hbm_words, self.live.words,
                                       self.in_flash.words, start, stop))

    def hold(self, pages: np.ndarray | slice, ready: int, now: int) -> int:
        """Mark pages held in HBM (allocated or being filled) with their ready times.
        Returns the number of pages newly held. Raises CapacityError past capacity."""
        pages = self._pages(pages)
        if isinstance(pages, slice):
            start, stop = pages.start, pages.stop
            if stop > start:
                self.settle(now)
                free = self.capacity - self.occupied_pages
                idx = self._time_index(ready)  # may grow the times: before the call
                self._room_rows(2)
                new = _D_HOLD_RUN.call(self._held, self._hbm_words, self._ready, start, stop,
                                       free, idx, ready)
                if new < 0:
                    raise CapacityError(f"{-1 - new} pages over {free} free")
                self.held += new
                self.level.set(now, self.occupied_pages * self.page_size)
                return int(new)
        sel = self.in_hbm[pages]
        new = int(np.size(sel) - np.count_nonzero(sel))
        self.settle(now)
        if self.occupied_pages + new > self.capacity:
            raise CapacityError(f"{new} pages over {self.capacity - self.occupied_pages} free")
        if self.starts is not None and new:
            self._count(pages, ~sel, +1)
        self.in_hbm[pages] = True
        self.set_ready(pages, ready)
        self.held += new
        self.level.set(now, self.occupied_pages * self.page_size)
        return new

    def release(self, pages: np.ndarray | slice, now: int, until: int | None = None) -> int:
        """Pages leave HBM; their space is free at ``until`` (a write-back's end) or now."""
        pages = self._pages(pages)
        if isinstance(pages, slice):
            start, stop = pages.start, pages.stop
            count = (_D_RELEASE_RUN.call(self._held, self._hbm_words, start, stop)
                     if stop > start else 0)
            if count == 0:
                return 0
        else:
            sel = self.in_hbm[pages]
            count = int(np.count_nonzero(sel))
            if count == 0:
                return 0
            if self.starts is not None:
                self._count(pages, sel, -1)
            self.in_hbm[pages] = False
        self.held -= count
        if until is not None and until > now:
            heapq.heappush(self._freeing, (until, count))
            self._freeing_pages += count
        self.settle(now)
        self.level.set(now, self.occupied_pages * self.page_size)
        return count

    def release_when_ready(self, start: int, stop: int, now: int) -> int:
        """Pages [start, stop) leave HBM; data still arriving, or still being copied out by
        a clean, keeps its space until then."""
        ready = max(self.ready_time(start, stop), self._clean_end(start, stop, now))
        return self.release(slice(start, stop), now, until=ready if ready > now else None)

    def cleaning(self, start: int, stop: int, end: int) -> None:
        """Pages [start, stop) stay held while a clean copies them to flash until ``end``."""
        self._cleaning.append((start, stop, end))

    def _clean_end(self, start: int, stop: int, now: int) -> int:
        """When the cleans in flight over any page of [start, stop) end (0: none)."""
        if not self._cleaning:
            return 0
        self._cleaning = [clean for clean in self._cleaning if clean[2] > now]
        return max((end for clean_start, clean_stop, end in self._cleaning
                    if clean_start < stop and start < clean_stop), default=0)

    def release_clean(self, start: int, stop: int, now: int) -> None:
        """Pages of [start, stop) held in HBM whose data flash has, or that are dead, leave
        (dirty live pages stay: they need a write-back first)."""
        clean = self.in_hbm[start:stop]
        if self.dirty_count(start, stop):  # (mostly none: then every held page is clean)
            clean = clean & ~(self.live[start:stop] & ~self.in_flash[start:stop])
        if clean.all():
            self.release_when_ready(start, stop, now)
            return
        for run_start, run_stop in runs(np.flatnonzero(clean) + start):
            self.release_when_ready(run_start, run_stop, now)

    def owner_of(self, pages: np.ndarray) -> np.ndarray:
        """The group of each page in ``pages``."""
        assert self.starts is not None
        return np.searchsorted(self.starts, pages, side="right") - 1

    def _count(self, pages: np.ndarray | slice, mask: np.ndarray, sign: int) -> None:
        """``sign`` x the pages of ``pages`` (page numbers, or an empty run) that
        ``mask`` selects into their groups' counts (runs: ``_count_run``)."""
        if isinstance(pages, slice) or not np.count_nonzero(mask):
            return
        sel = np.asarray(pages)[mask]
        self.held_by_owner += sign * np.bincount(self.owner_of(sel),
                                                 minlength=len(self.held_by_owner))

    def ready_time(self, start: int, stop: int) -> int:
        """When every page of [start, stop) is complete in HBM (all must be held)."""
        if stop <= start:
            return 0
        out: int = _D_READY_MAX.call(self._ready, start, stop)
        return out

    def held_ready_time(self, start: int, stop: int) -> int:
        """When the pages of [start, stop) that HBM holds are all complete (0: it holds
        none of them); one pass, no temporaries."""
        if stop <= start:
            return 0
        if start < 0 or stop > self.npages:
            raise IndexError(f"residency: pages [{start}, {stop}) outside [0, {self.npages})")
        out: int = _D_HELD_TIMES_MAX.call(self._held, self._ready, self._hbm_words, start, stop)
        return out

    def check(self) -> None:
        """Invariants: the held counter matches the bitmap; occupancy within capacity;
        every live page is in HBM or flash (no page is lost). Read a block of pages at
        a time: no temporary the size of the page array."""
        held = int(np.count_nonzero(self.in_hbm))
        if held != self.held:
            raise AssertionError(f"held counter {self.held} != bitmap {held}")
        block = 1 << 20
        spans = [(base, min(self.npages, base + block)) for base in range(0, self.npages, block)]
        if self.starts is not None:
            per_group = np.zeros(len(self.held_by_owner), dtype=np.int64)
            for lo, hi in spans:
                per_group += np.bincount(self.owner_of(np.flatnonzero(self.in_hbm[lo:hi]) + lo),
                                         minlength=len(self.held_by_owner))
            if not np.array_equal(per_group, self.held_by_owner):
                raise AssertionError("per-owner held counts disagree with the bitmap")
        if self.occupied_pages > self.capacity:
            raise AssertionError(f"occupancy {self.occupied_pages} > capacity {self.capacity}")
        lost, first_lost = 0, -1
        for lo, hi in spans:
            lost_mask = self.live[lo:hi] & ~self.in_hbm[lo:hi] & ~self.in_flash[lo:hi]
            n_lost = int(np.count_nonzero(lost_mask))
            if n_lost and first_lost < 0:
                first_lost = lo + int(np.flatnonzero(lost_mask)[0])
            lost += n_lost
        if lost:
            raise AssertionError(f"{lost} live pages in neither tier, first {first_lost}")


#: the kernels past their dispatcher (``tmhw.sim.jit.Direct``)
_D_COUNT_HELD = Direct(_count_held)
_D_DIRTY_COUNT = Direct(_dirty_count)
_D_READY_MAX = Direct(_ready_max)
_D_RELEASE_RUN = Direct(_release_run)
_D_HOLD_RUN = Direct(_hold_run)
_D_LAST_HELD = Direct(_last_held)
_D_HELD_TIMES_MAX = Direct(_held_times_max)
_D_TAIL_DUE = Direct(_tail_due)
