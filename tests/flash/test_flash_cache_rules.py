"""The write buffer and read cache (``DataCache``, its rules compiled) answer every
question as ``PageMap`` below, the rules written plainly in Python: a dict of page ->
program end of its newest buffered copy, a list of writes that leave in the order
their programs end (then in arrival order), an LRU dict. The two are
driven with the same writes (of runs and batches of one-page writes), admissions,
reads, holds queries and read-cache fills, and must agree on every answer and
counter."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flash import cache as cache_mod
from flash.cache import DataCache

WRITE_PAGES, READ_PAGES, SPAN = 12, 6, 40


class PageMap:
    """The write buffer and read cache with one dict entry per buffered page."""

    def __init__(self) -> None:
        self.fifo: list[tuple[int, int, range]] = []  # (end, arrival, pages)
        self.seq = 0
        self.used = 0
        self.b: dict[int, int] = {}
        self.lru: OrderedDict[int, None] = OrderedDict()
        self.hits = [0, 0, 0, 0]  # write, waits, buffer reads, cache reads

    def admit(self, pages: int, earliest: int) -> int:
        if pages > WRITE_PAGES:
            return -1
        t = earliest
        while self.fifo and min(self.fifo)[0] <= t:
            self._release()
        while self.used + pages > WRITE_PAGES:
            t = max(t, self._release())
        if t > earliest:
            self.hits[1] += 1
        return t

    def _release(self) -> int:
        first = min(self.fifo)
        self.fifo.remove(first)
        end, _, lpns = first
        self.used -= len(lpns)
        for lpn in lpns:
            if self.b.get(lpn, end + 1) <= end:
                del self.b[lpn]
        return end

    def buffered(self, lpns: range, end: int) -> None:
        self.fifo.append((end, self.seq, lpns))
        self.seq += 1
        self.used += len(lpns)
        self.hits[0] += len(lpns)
        for lpn in lpns:
            self.b[lpn] = end
            self.lru.pop(lpn, None)

    def split_read(self, lpns: range, now: int) -> list[bool]:
        out = [False] * len(lpns)
        for lpn in lpns:
            end = self.b.get(lpn)
            if end is not None:
                if end > now:
                    self.hits[2] += 1
                    out[lpn - lpns.start] = True
                    continue
                del self.b[lpn]
            if lpn in self.lru:
                self.lru.move_to_end(lpn)
                self.hits[3] += 1
                out[lpn - lpns.start] = True
        return out

    def filled(self, lpns: list[int]) -> None:
        for lpn in lpns:
            self.lru[lpn] = None
            self.lru.move_to_end(lpn)
        while len(self.lru) > READ_PAGES:
            self.lru.popitem(last=False)

    def holds(self, lpn: int, now: int) -> str:
        end = self.b.get(lpn)
        if end is not None and end > now:
            return "buffer"
        return "cache" if lpn in self.lru else ""


step = st.tuples(st.sampled_from(["write", "write", "read", "fill", "holds", "ones"]),
                 st.integers(0, SPAN - 1), st.integers(1, 8), st.integers(0, 300),
                 st.integers(0, 400))


@pytest.mark.parametrize("lru_bits", [9, 2])
@settings(max_examples=100, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=60))
def test_buffer_and_cache_answer_as_the_plain_rules(
        lru_bits: int, steps: list[tuple[str, int, int, int, int]]) -> None:
    """Also with the read cache counted in blocks of 4 pages (``_LRU_BITS`` 2), so that
    reads and writes that touch no block holding a cached page skip the lookups."""
    with patch.object(cache_mod, "_LRU_BITS", lru_bits):
        _drive(steps)
    assert cache_mod._LRU_BITS == 9


def _runs_of(held: list[bool], lo: int) -> list[tuple[int, int]]:
    """The maximal runs [a, b) of the pages flagged held, pages numbered from ``lo``."""
    out: list[tuple[int, int]] = []
    for i, h in enumerate(held):
        if h and out and out[-1][1] == lo + i:
            out[-1] = (out[-1][0], lo + i + 1)
        elif h:
            out.append((lo + i, lo + i + 1))
    return out


def _drive(steps: list[tuple[str, int, int, int, int]]) -> None:
    cache, pages = DataCache(WRITE_PAGES, READ_PAGES), PageMap()
    now = 0
    for kind, lo, n, gap, prog in steps:
        now += gap
        lpns = range(lo, min(SPAN, lo + n))
        got: Any
        want: Any
        if kind == "write":
            got, want = cache.admit(len(lpns), now), pages.admit(len(lpns), now)
            if got >= 0:
                cache.buffered(lpns, got + prog)
                pages.buffered(lpns, want + prog)
        elif kind == "read":
            got, want = cache.held_runs(lpns, now), _runs_of(pages.split_read(lpns, now),
                                                             lpns.start)
        elif kind == "ones":
            # a batch of one-page writes (``flash.pages``): those the buffer takes
            # without waiting, pages ``lo``, ``lo + 7``, ... (mod the span), buffered at
            # once; a page's program ends ``prog`` + 1 + its index ps later (after
            # ``now``, as a program does)
            cache.release_until(now)
            ps = [(lo + 7 * i) % SPAN for i in range(n)]
            ps = ps[:max(0, min(n, WRITE_PAGES - cache.used_pages))]
            for i, p in enumerate(ps):
                assert pages.admit(1, now) == now
                pages.buffered(range(p, p + 1), now + prog + 1 + i)
            cache.buffered_pages(np.array(ps, dtype=np.int64),
                                np.arange(len(ps), dtype=np.int64) + now + prog + 1)
            got = want = None
        elif kind == "fill":
            cache.filled(list(lpns))
            pages.filled(list(lpns))
            got = want = None
        else:
            got = [cache.holds(p, now) for p in lpns]
            want = [pages.holds(p, now) for p in lpns]
        assert got == want
        assert cache.used_pages == pages.used
        assert cache.writes() == [(e, r.start, r.stop) for e, _, r in sorted(pages.fifo)]
        assert cache.buffered_map() == pages.b
        assert [cache.write_hits, cache.write_waits, cache.buffer_read_hits,
                cache.cache_read_hits] == pages.hits
        assert cache.cached_pages() == list(pages.lru)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3_000), st.integers(1, 400), st.booleans()),
                min_size=1, max_size=30))
def test_read_cache_fills_many_pages_as_one_at_a_time(
        runs: list[tuple[int, int, bool]]) -> None:
    """``DataCache.filled`` of runs of pages, up to several times the read cache's
    capacity (taken at once from 64 pages, at most the last ``capacity`` of a longer
    one), ends in the state one page at a time gives: the least recently used order,
    its blocks' sets, and what a later read finds there (runs and hits); so does
    ``invalidate`` of many pages at once."""
    from collections import OrderedDict

    cap = 150
    cache = DataCache(0, cap)
    ref: OrderedDict[int, None] = OrderedDict()
    for lo, n, look in runs:
        pages = list(range(lo, lo + n))
        cache.filled(iter(pages))
        for p in pages:
            ref[p] = None
            ref.move_to_end(p)
        while len(ref) > cap:
            ref.popitem(last=False)
        assert cache.cached_pages() == list(ref)
        if not look and n > 100:  # a rewrite of part of a run drops its cached pages
            a, b = lo + n // 4, lo + n
            cache.invalidate(range(a, b))
            for p in [p for p in ref if a <= p < b]:
                del ref[p]
            assert cache.cached_pages() == list(ref)
        if look:  # a read of a range: the pages held, as runs; hits become most recent
            a, b = max(0, lo - 50), lo + 50
            hits = sorted(p for p in ref if a <= p < b)
            got = cache.held_runs(range(a, b), 0)
            assert [p for r0, r1 in got for p in range(r0, r1)] == hits
            for p in hits:
                ref.move_to_end(p)
            assert cache.cached_pages() == list(ref)
