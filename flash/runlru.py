"""A least-recently-used set of pages kept as runs: the read cache's order
(``flash.cache.DataCache``) without a Python object per page.

The pages are held as segments, each a run of consecutive pages ``[lo, hi)`` whose
pages became the most recently used in ascending order (``lo`` the least recent of
them); the segments are chained from least to most recently used. A run made the most
recently used is one segment (joined to the newest one where it continues it), so a
stream of runs costs per run what a per-page map costs per page: an in-place reader
streams millions of pages an iteration through a drive's read cache. Removing a range
cuts at most the two segments at its ends and drops the ones inside it.

The order it keeps is exactly that of an ``OrderedDict`` of pages where each page of a
run is moved to the end in turn and the oldest leave first (property-tested against
one).

Segments are found by page through a sorted index of their first pages (they never
overlap); the chain is links between rows of one array. The changes and the look-ups
are compiled kernels over those arrays (a read's look-up and the move of its hits
were about 5 us in Python, a page-run's removal 2 us, on a GPT-3 block's in-place
reads); the class is their state and the Python face the read cache calls. Pure: no
SimPy.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from tmhw.sim.jit import Direct, njit_noref

I64 = npt.NDArray[np.int64]
#: the arrays the kernels take (``RunLru.arrays``): the rows, the index, the counters,
#: the rows given back and the rows for runs out
LruArrays = tuple[I64, I64, I64, I64, I64]

#: a segment's row: its first page, its last page + 1, the rows before and after it in
#: the order; row 0 is the chain's sentinel (``NEXT`` the least recently used segment,
#: ``PREV`` the most)
LO, HI, PREV, NEXT = 0, 1, 2, 3
HEAD = 0
#: the counters: segments (the index's length), pages held, rows given back (on the
#: free stack), rows ever used (row 0 included)
SEGS, SIZE, FREED, USED = 0, 1, 2, 3


# -- kernels over (seg, idx, meta, free) ---------------------------------------------------
@njit_noref
def _right(idx: I64, k: int, page: int) -> int:
    """The first index position whose start is above ``page`` (``bisect_right``)."""
    a, b = 0, k
    while a < b:
        m = (a + b) >> 1
        if idx[m, 0] <= page:
            a = m + 1
        else:
            b = m
    return a


@njit_noref
def _left(idx: I64, a: int, k: int, page: int) -> int:
    """The first index position from ``a`` whose start is at or above ``page``
    (``bisect_left``)."""
    b = k
    while a < b:
        m = (a + b) >> 1
        if idx[m, 0] < page:
            a = m + 1
        else:
            b = m
    return a


@njit_noref
def lru_spare(seg: I64, meta: I64) -> int:
    """Rows a change may still take without the arrays growing."""
    return int(meta[FREED] + seg.shape[0] - meta[USED])


@njit_noref
def _take(seg: I64, meta: I64, free: I64, lo: int, hi: int) -> int:
    """A row for a new segment [lo, hi) (one given back first, the last given back)."""
    if meta[FREED]:
        meta[FREED] -= 1
        s = int(free[meta[FREED]])
    else:
        s = int(meta[USED])
        meta[USED] += 1
    seg[s, LO] = lo
    seg[s, HI] = hi
    return s


@njit_noref
def _link_after(seg: I64, p: int, s: int) -> None:
    n = seg[p, NEXT]
    seg[p, NEXT] = s
    seg[s, PREV] = p
    seg[s, NEXT] = n
    seg[n, PREV] = s


@njit_noref
def _drop(seg: I64, meta: I64, free: I64, s: int) -> None:
    """Unlink row ``s`` and give it back."""
    p, n = seg[s, PREV], seg[s, NEXT]
    seg[p, NEXT] = n
    seg[n, PREV] = p
    free[meta[FREED]] = s
    meta[FREED] += 1


@njit_noref
def _splice(idx: I64, meta: I64, j0: int, j1: int, m: int) -> None:
    """Make room for ``m`` entries in place of the index's ``j0 .. j1-1``."""
    k = int(meta[SEGS])
    shift = m - (j1 - j0)
    if shift > 0:
        for j in range(k - 1, j1 - 1, -1):
            idx[j + shift, 0] = idx[j, 0]
            idx[j + shift, 1] = idx[j, 1]
    elif shift < 0:
        for j in range(j1, k):
            idx[j + shift, 0] = idx[j, 0]
            idx[j + shift, 1] = idx[j, 1]
    meta[SEGS] = k + shift


@njit_noref
def lru_remove(seg: I64, idx: I64, meta: I64, free: I64, lo: int, hi: int) -> int:
    """``RunLru.remove``: how many of pages [lo, hi) were held; -1 (nothing changed)
    where a segment would be cut in two and no row is spare."""
    if hi <= lo or meta[SIZE] == 0:
        return 0
    k = int(meta[SEGS])
    j0 = max(0, _right(idx, k, lo) - 1)
    if j0 < k and seg[idx[j0, 1], HI] <= lo:
        j0 += 1
    j1 = _left(idx, j0, k, hi)          # segments j0 .. j1-1 start before hi
    if j0 >= j1:
        return 0
    first, last = int(idx[j0, 1]), int(idx[j1 - 1, 1])
    keep_left = seg[first, LO] < lo
    keep_right = seg[last, HI] > hi
    if keep_left and keep_right and first == last and lru_spare(seg, meta) < 1:
        return -1
    right_hi = seg[last, HI]
    gone = 0
    for j in range(j0, j1):
        s = idx[j, 1]
        gone += min(seg[s, HI], hi) - max(seg[s, LO], lo)
    # the segments inside go, and the two ends are cut
    for j in range(j0, j1):
        s = int(idx[j, 1])
        if (s == first and keep_left) or (s == last and keep_right):
            continue
        _drop(seg, meta, free, s)
    m = 0
    if keep_left:
        seg[first, HI] = lo
        m += 1
    if keep_right:
        m += 1
    _splice(idx, meta, j0, j1, m)
    at = j0
    if keep_left:
        idx[at, 0] = seg[first, LO]
        idx[at, 1] = first
        at += 1
    if keep_right:
        if last == first and keep_left:
            # the range was inside one segment: its right part follows its left part
            # in the order (its pages became recent after them)
            r = _take(seg, meta, free, hi, right_hi)
            _link_after(seg, first, r)
        else:
            r = last
            seg[r, LO] = hi
        idx[at, 0] = hi
        idx[at, 1] = r
    meta[SIZE] -= gone
    return gone


@njit_noref
def lru_push(seg: I64, idx: I64, meta: I64, free: I64, lo: int, hi: int) -> bool:
    """``RunLru.push``; False (nothing changed) where fewer than two rows are spare."""
    if hi <= lo:
        return True
    if lru_spare(seg, meta) < 2:
        return False
    lru_remove(seg, idx, meta, free, lo, hi)
    tail = int(seg[HEAD, PREV])
    if tail != HEAD and seg[tail, HI] == lo:
        seg[tail, HI] = hi                 # continues the newest segment
    else:
        s = _take(seg, meta, free, lo, hi)
        _link_after(seg, tail, s)
        j = _left(idx, 0, int(meta[SEGS]), lo)
        _splice(idx, meta, j, j, 1)
        idx[j, 0] = lo
        idx[j, 1] = s
    meta[SIZE] += hi - lo
    return True


@njit_noref
def lru_trim(seg: I64, idx: I64, meta: I64, free: I64, capacity: int, out: I64) -> int:
    """``RunLru.trim``: the runs that left, oldest first, into ``out``; how many."""
    over = meta[SIZE] - capacity
    n = 0
    while over > 0:
        s = int(seg[HEAD, NEXT])
        a, b = seg[s, LO], seg[s, HI]
        j = _left(idx, 0, int(meta[SEGS]), a)
        if b - a <= over:
            _drop(seg, meta, free, s)
            _splice(idx, meta, j, j + 1, 0)
            over -= b - a
            meta[SIZE] -= b - a
            out[n, 0] = a
            out[n, 1] = b
        else:
            cut = a + over
            seg[s, LO] = cut
            idx[j, 0] = cut
            meta[SIZE] -= over
            out[n, 0] = a
            out[n, 1] = cut
            over = 0
        n += 1
    return n


@njit_noref
def lru_runs_in(seg: I64, idx: I64, meta: I64, lo: int, hi: int, out: I64) -> int:
    """``RunLru.runs_in`` into ``out``; how many runs."""
    k = int(meta[SEGS])
    i = max(0, _right(idx, k, lo) - 1)
    n = 0
    while i < k and idx[i, 0] < hi:
        a = max(idx[i, 0], lo)
        b = min(seg[idx[i, 1], HI], hi)
        if b > a:
            if n and out[n - 1, 1] == a:
                out[n - 1, 1] = b
            else:
                out[n, 0] = a
                out[n, 1] = b
                n += 1
        i += 1
    return n


@njit_noref
def lru_overlaps(seg: I64, idx: I64, meta: I64, lo: int, hi: int) -> bool:
    """``RunLru.overlaps``."""
    i = _left(idx, 0, int(meta[SEGS]), hi) - 1   # the last segment starting before hi
    return i >= 0 and seg[idx[i, 1], HI] > lo


class RunLru:
    """Pages in least-recently-used order, as runs (module docstring)."""

    __slots__ = ("_seg", "_idx", "_meta", "_free", "_out")

    def __init__(self, rows: int = 64) -> None:
        self._seg = np.zeros((rows, 4), dtype=np.int64)
        #: the segments' first pages, sorted, and the row of the segment starting at each
        self._idx = np.zeros((rows, 2), dtype=np.int64)
        self._meta = np.array([0, 0, 0, 1], dtype=np.int64)
        #: rows given back, a stack
        self._free = np.zeros(rows, dtype=np.int64)
        #: the runs a trim or a look-up gives, one row each (at most a row per segment)
        self._out = np.zeros((rows, 2), dtype=np.int64)

    def grow(self) -> None:
        """Twice the rows (row numbers, and so the chain, stay as they are), for a kernel
        that found too few spare ones."""
        rows = 2 * len(self._seg)

        def wider(a: I64) -> I64:
            out = np.zeros((rows, *a.shape[1:]), dtype=np.int64)
            out[:len(a)] = a
            return out

        self._seg, self._idx = wider(self._seg), wider(self._idx)
        self._free, self._out = wider(self._free), wider(self._out)

    def arrays(self) -> LruArrays:
        """The state as the kernels take it (new arrays after each growth, ``grow``)."""
        return self._seg, self._idx, self._meta, self._free, self._out

    def __len__(self) -> int:
        return int(self._meta[SIZE])

    def __bool__(self) -> bool:
        return bool(self._meta[SIZE])

    def __iter__(self) -> Iterator[int]:
        """The pages, least recently used first."""
        for a, b in self.segments():
            yield from range(a, b)

    def __contains__(self, page: object) -> bool:
        try:
            p = operator.index(page)  # type: ignore[arg-type]
        except TypeError:
            return False
        return self.overlaps(p, p + 1)

    def segments(self) -> list[tuple[int, int]]:
        """The segments, least recently used first."""
        seg = self._seg.tolist()
        out = []
        s = seg[HEAD][NEXT]
        while s != HEAD:
            out.append((seg[s][LO], seg[s][HI]))
            s = seg[s][NEXT]
        return out

    def overlaps(self, lo: int, hi: int) -> bool:
        """Whether any of pages [lo, hi) is held."""
        return bool(lru_overlaps(self._seg, self._idx, self._meta, lo, hi))

    def runs_in(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The held pages of [lo, hi) as maximal runs in page order (segments that meet
        joined)."""
        n = lru_runs_in(self._seg, self._idx, self._meta, lo, hi, self._out)
        return [(a, b) for a, b in self._out[:n].tolist()] if n else []

    # -- changes ---------------------------------------------------------------------
    def remove(self, lo: int, hi: int) -> int:
        """Pages [lo, hi) leave; how many were held."""
        while (gone := _LRU_REMOVE.call(self._seg, self._idx, self._meta, self._free,
                                        lo, hi)) < 0:
            self.grow()
        return int(gone)

    def push(self, lo: int, hi: int) -> None:
        """Pages [lo, hi) become the most recently used, in ascending order (held ones
        move)."""
        while not lru_push(self._seg, self._idx, self._meta, self._free, lo, hi):
            self.grow()

    def push_pages(self, pages: Iterable[int]) -> None:
        """Each of ``pages`` becomes the most recently used in turn: their ascending
        consecutive stretches as runs (``push``)."""
        a = b = -1
        for p in pages:
            if p == b:
                b += 1
                continue
            if b > a:
                self.push(a, b)
            a, b = p, p + 1
        if b > a:
            self.push(a, b)

    def trim(self, capacity: int) -> list[tuple[int, int]]:
        """The least recently used pages leave until at most ``capacity`` are held;
        the runs that left, oldest first."""
        if self._meta[SIZE] <= capacity:
            return []
        n = lru_trim(self._seg, self._idx, self._meta, self._free, capacity, self._out)
        return [(a, b) for a, b in self._out[:n].tolist()]

    def check(self) -> None:
        """Raise if the segments, their index and the count disagree."""
        segs = self.segments()
        k = int(self._meta[SEGS])
        starts = self._idx[:k, 0].tolist()
        assert all(a < b for a, b in segs), segs
        assert sorted(a for a, _ in segs) == starts
        assert sorted(segs) == [(a, int(self._seg[r, HI])) for a, r in self._idx[:k].tolist()]
        ordered = sorted(segs)
        assert all(b0 <= a1 for (_, b0), (a1, _) in zip(ordered, ordered[1:], strict=False))
        assert sum(b - a for a, b in segs) == len(self)
        live = int(self._meta[USED]) - 1 - int(self._meta[FREED])
        assert live == len(segs), (live, len(segs))


#: ``lru_remove`` past its dispatcher (``tmhw.sim.jit.Direct``)
_LRU_REMOVE = Direct(lru_remove)
