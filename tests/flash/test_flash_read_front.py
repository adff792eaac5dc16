"""A read up to its NAND read is one compiled call (``flash.runs.read_front``) that
books exactly what the rules it replaces book one by one (``Ssd.read_map`` as it was):
the write buffer's probe (``DataCache.held_runs``), the read cache's hits made the most
recently used run by run, the misses between, the fills of the read cache
(``filled_runs`` for an in-place read, ``filled`` of the partial end pages), the FTL's
mapping of the missing runs and the bytes wanted of each page. Every return value, and
the device's whole state, after random mixes of writes and of reads whole, partial,
in place and one page long, through a read cache small enough to trim and fragmented
enough that its rows grow."""

from __future__ import annotations

from typing import Any

import numpy as np
from flash_devices import device_state, small
from hypothesis import given, settings
from hypothesis import strategies as st

from flash.ssd import Ssd

I64 = Any


def reference_read_map(ssd: Ssd, address: int, nbytes: int, earliest: int, wire_bytes: int,
                       nand1: bool = True) -> tuple[int, int, int, I64 | None, I64]:
    """``Ssd.read_map`` as the Python rules booked it, call by call."""
    page = ssd.page
    lo = address // page
    hi = (address + nbytes + page - 1) // page
    ssd.bytes_read += nbytes
    t0 = ssd.host.fetch(earliest)
    held = ssd.cache.held_runs(range(lo, hi), t0)
    miss: list[tuple[int, int]] = []
    at = lo
    for a, b in held:
        if a > at:
            miss.append((at, a))
        at = b
    if at < hi:
        miss.append((at, hi))
    n_miss = sum(b - a for a, b in miss)
    start = t0 if n_miss < hi - lo else -1
    if not n_miss:
        return t0, start, t0, None, np.zeros(0, dtype=np.int64)
    if wire_bytes and ssd.cache.read_pages:
        ssd.cache.filled_runs(miss)
    elif ssd.cache.read_pages and (address % page or (address + nbytes) % page):
        end_b = address + nbytes
        gone = {lo} if miss[0][0] == lo else set()
        if miss[-1][1] == hi:
            gone.add(hi - 1)
        part = [p for p in sorted(gone) if p * page < address or (p + 1) * page > end_b]
        if part:
            ssd.cache.filled(part)
    c = ssd.c
    ppns = np.empty(n_miss, dtype=np.int64)
    k = 0
    for a, b in miss:
        c.unmapped_reads += ssd.ftl.read_run(a, ppns[k:k + b - a])
        k += b - a
    nb = np.full(n_miss, page, dtype=np.int64)
    first_off = address - miss[0][0] * page
    last_cut = miss[-1][1] * page - (address + nbytes)
    if first_off > 0:
        nb[0] -= first_off
    if last_cut > 0:
        nb[-1] -= last_cut
    c.host_pages_read += n_miss
    c.channel_bytes += int(nb.sum())
    if n_miss > 1 or not nand1:
        return t0, start, t0, ppns, nb
    x_start, x_end = ssd.model.read1(int(ppns[0]), int(nb[0]), t0)
    return t0, x_start if start < 0 or x_start < start else start, x_end, None, \
        np.zeros(0, dtype=np.int64)


def _device(model: str, cache_pages: int) -> Ssd:
    cfg = small(blocks_per_plane=32, pages_per_block=16, over_provisioning=0.2,
                write_buffer_bytes=8 * 16384,
                read_cache_bytes=cache_pages * 16384, page_size=16384)
    return Ssd(cfg, model=model, precondition=0.5, seed=3, age=0.0, record=False)


#: one command: write or read, first byte, length, in place, the NAND read done here
_CMD = st.tuples(st.sampled_from(["write", "read", "read", "read"]),
                 st.integers(0, 200 * 16384), st.integers(1, 9 * 16384),
                 st.booleans(), st.booleans())


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(["fast", "detailed"]), cache_pages=st.sampled_from([3, 40]),
       cmds=st.lists(_CMD, min_size=1, max_size=120))
def test_the_compiled_read_books_what_the_rules_booked(
        model: str, cache_pages: int, cmds: list[tuple[str, int, int, bool, bool]]) -> None:
    a, b = _device(model, cache_pages), _device(model, cache_pages)
    a.cache._lru.__init__(rows=2)  # (its rows grow)
    b.cache._lru.__init__(rows=2)
    now = 0
    for op, address, nbytes, in_place, nand1 in cmds:
        now += 20_000_000
        if op == "write":
            assert a.write(address, nbytes, now) == b.write(address, nbytes, now)
            continue
        wire = nbytes + 64 if in_place else 0
        got = a.read_map(address, nbytes, now, wire, nand1)
        want = reference_read_map(b, address, nbytes, now, wire, nand1)
        assert got[:3] == want[:3]
        assert (got[3] is None) == (want[3] is None)
        if got[3] is not None:
            assert got[3].tolist() == want[3].tolist()
        assert got[4].tolist() == want[4].tolist()
    assert device_state(a) == device_state(b)
    a.cache._lru.check()
