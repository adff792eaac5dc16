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

Segments are found by page through a sorted list of their first pages (they never
overlap); the chain is two dicts of links. Pure: no SimPy.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator


class RunLru:
    """Pages in least-recently-used order, as runs (module docstring)."""

    __slots__ = ("_lo", "_hi", "_prev", "_next", "_starts", "_at", "_size", "_ids")

    #: the chain's sentinel: ``_next[HEAD]`` is the least recently used segment,
    #: ``_prev[HEAD]`` the most
    HEAD = 0

    def __init__(self) -> None:
        self._lo: dict[int, int] = {}
        self._hi: dict[int, int] = {}
        self._prev: dict[int, int] = {self.HEAD: self.HEAD}
        self._next: dict[int, int] = {self.HEAD: self.HEAD}
        #: the segments' first pages, sorted, and the segment starting at each
        self._starts: list[int] = []
        self._at: dict[int, int] = {}
        self._size = 0
        self._ids = 0

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def __iter__(self) -> Iterator[int]:
        """The pages, least recently used first."""
        nxt, s = self._next, self._next[self.HEAD]
        while s != self.HEAD:
            yield from range(self._lo[s], self._hi[s])
            s = nxt[s]

    def __contains__(self, page: object) -> bool:
        try:
            page = operator.index(page)  # type: ignore[arg-type]
        except TypeError:
            return False
        i = bisect_right(self._starts, page) - 1
        return i >= 0 and page < self._hi[self._at[self._starts[i]]]

    def segments(self) -> list[tuple[int, int]]:
        """The segments, least recently used first."""
        out = []
        nxt, s = self._next, self._next[self.HEAD]
        while s != self.HEAD:
            out.append((self._lo[s], self._hi[s]))
            s = nxt[s]
        return out

    def overlaps(self, lo: int, hi: int) -> bool:
        """Whether any of pages [lo, hi) is held."""
        starts = self._starts
        i = bisect_left(starts, hi) - 1   # the last segment starting before hi
        return i >= 0 and self._hi[self._at[starts[i]]] > lo

    def runs_in(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The held pages of [lo, hi) as maximal runs in page order (segments that meet
        joined)."""
        starts, at, his = self._starts, self._at, self._hi
        i = max(0, bisect_right(starts, lo) - 1)
        out: list[tuple[int, int]] = []
        while i < len(starts) and starts[i] < hi:
            a, b = max(starts[i], lo), min(his[at[starts[i]]], hi)
            if b > a:
                if out and out[-1][1] == a:
                    out[-1] = (out[-1][0], b)
                else:
                    out.append((a, b))
            i += 1
        return out

    # -- changes ---------------------------------------------------------------------
    def remove(self, lo: int, hi: int) -> int:
        """Pages [lo, hi) leave; how many were held."""
        if hi <= lo or not self._size:
            return 0
        starts, at, los, his = self._starts, self._at, self._lo, self._hi
        j0 = max(0, bisect_right(starts, lo) - 1)
        if j0 < len(starts) and his[at[starts[j0]]] <= lo:
            j0 += 1
        j1 = bisect_left(starts, hi, j0)     # segments j0 .. j1-1 start before hi
        if j0 >= j1:
            return 0
        first, last = at[starts[j0]], at[starts[j1 - 1]]
        keep_left = los[first] < lo
        keep_right = his[last] > hi
        right_hi = his[last]
        gone = 0
        for k in range(j0, j1):
            s = at[starts[k]]
            gone += min(his[s], hi) - max(los[s], lo)
        # the segments inside go, and the two ends are cut
        new_starts: list[int] = []
        for k in range(j0, j1):
            s = at.pop(starts[k])
            if (s == first and keep_left) or (s == last and keep_right):
                continue
            self._unlink(s)
        if keep_left:
            his[first] = lo
            at[los[first]] = first
            new_starts.append(los[first])
        if keep_right:
            if last == first and keep_left:
                # the range was inside one segment: its right part follows its left
                # part in the order (its pages became recent after them)
                r = self._new(hi, right_hi)
                self._link_after(first, r)
            else:
                r = last
                los[r] = hi
            at[hi] = r
            new_starts.append(hi)
        starts[j0:j1] = new_starts
        self._size -= gone
        return gone

    def push(self, lo: int, hi: int) -> None:
        """Pages [lo, hi) become the most recently used, in ascending order (held ones
        move)."""
        if hi <= lo:
            return
        self.remove(lo, hi)
        tail = self._prev[self.HEAD]
        if tail != self.HEAD and self._hi[tail] == lo:
            self._hi[tail] = hi                # continues the newest segment
        else:
            s = self._new(lo, hi)
            self._link_after(tail, s)
            self._at[lo] = s
            starts = self._starts
            starts.insert(bisect_left(starts, lo), lo)
        self._size += hi - lo

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
        over = self._size - capacity
        gone = []
        los, his, starts = self._lo, self._hi, self._starts
        while over > 0:
            s = self._next[self.HEAD]
            a, b = los[s], his[s]
            if b - a <= over:
                self._unlink(s)
                del self._at[a]
                del starts[bisect_left(starts, a)]
                over -= b - a
                self._size -= b - a
                gone.append((a, b))
            else:
                cut = a + over
                los[s] = cut
                del self._at[a]
                self._at[cut] = s
                starts[bisect_left(starts, a)] = cut
                self._size -= over
                gone.append((a, cut))
                over = 0
        return gone

    def check(self) -> None:
        """Raise if the segments, their index and the count disagree."""
        segs = self.segments()
        assert all(a < b for a, b in segs), segs
        assert sorted(a for a, _ in segs) == self._starts
        assert sorted(segs) == [(a, self._hi[self._at[a]]) for a in self._starts]
        ordered = sorted(segs)
        assert all(b0 <= a1 for (_, b0), (a1, _) in zip(ordered, ordered[1:], strict=False))
        assert sum(b - a for a, b in segs) == self._size

    # -- the chain -------------------------------------------------------------------
    def _new(self, lo: int, hi: int) -> int:
        self._ids += 1
        s = self._ids
        self._lo[s] = lo
        self._hi[s] = hi
        return s

    def _link_after(self, p: int, s: int) -> None:
        n = self._next[p]
        self._next[p] = s
        self._prev[s] = p
        self._next[s] = n
        self._prev[n] = s

    def _unlink(self, s: int) -> None:
        p, n = self._prev.pop(s), self._next.pop(s)
        self._next[p] = n
        self._prev[n] = p
        del self._lo[s], self._hi[s]
