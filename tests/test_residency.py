"""Per-page state of the executor (``tmhw.residency``): its size per page, and ready
times kept exactly while the times in use are renumbered."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.residency import CapacityError, Residency
from tmhw.sim.pagebits import PageBits

PAGE = 4096


def per_page_bytes(res: Residency) -> float:
    """Bytes of every array indexed by page, per page."""
    return sum(a.nbytes for a in vars(res).values()
               if isinstance(a, np.ndarray) and a.shape == (res.npages,)) / res.npages


def bits_per_page(res: Residency) -> float:
    """Bits of the flags packed a bit a page (``PageBits``), per page."""
    return sum(8 * a.nbytes for a in vars(res).values() if isinstance(a, PageBits)) / res.npages


def index_bytes(res: Residency) -> int:
    """Bytes of the ready times' index (``Ready``): a word per sub-block of 64 pages
    and a row of 64 four-byte indices per sub-block whose pages' times differ."""
    return int(res._sub_ix.nbytes + res._ready_meta[0] * res._rows.shape[1] * 4)


def test_per_page_state_is_a_byte_and_two_bits_a_page_and_the_times_index_a_few() -> None:
    """The held flag a byte a page (the compiled counts read eight at a time), the live
    and on-flash flags a bit each; the ready time's index once per sub-block of 64 pages
    (1 bit a page) and per page only in the sub-blocks at the ends of runs given a
    time: 0.15 GB on eight GPT-3 blocks (114M pages) where a byte a flag and a 4-byte
    index a page made it 0.8 GB, and an 8-byte time 1.3 GB. The times themselves are
    one per distinct value in use."""
    res = Residency(100_000, 20_000, PAGE, starts=np.array([0, 40_000, 100_000]))
    assert per_page_bytes(res) == 1
    assert 2 <= bits_per_page(res) < 2.01
    assert index_bytes(res) == 100_000 // 64 * 8 + 8
    for k in range(50):  # runs of 64-page sub-blocks: no row
        res.hold(slice(k * 128, (k + 1) * 128), 1_000 + k, 0)
    assert index_bytes(res) == 100_000 // 64 * 8 + 8
    for k in range(50):  # runs of 100 pages: a row at each end that is not a boundary
        res.hold(slice(20_000 + k * 100, 20_000 + (k + 1) * 100), 2_000 + k, 0)
    rows = int(res._ready_meta[0])
    assert 0 < rows <= 51
    assert per_page_bytes(res) == 1
    assert res._ntimes == 101 and len(res._times) == 1024


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2_999), st.integers(1, 400),
                          st.integers(0, 10**13)), min_size=1, max_size=60),
       st.integers(0, 2**32))
def test_ready_times_are_exact_across_renumbering(sets: list[tuple[int, int, int]],
                                                  seed: int) -> None:
    """Thousands of distinct times over overlapping runs (past the first renumbering at
    1024 times): every page reads back the time it was last given, the range maxima
    (from the block maxima and the ends' pages) agree, and the times kept never exceed
    twice those still in use (plus the first 1024)."""
    n = 3_000
    res = Residency(n, n, PAGE)
    ref = np.zeros(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    extra = rng.integers(0, n, size=(2_000, 2))
    times = rng.integers(0, 10**13, size=2_000)
    runs = [(a, min(n, a + ln), t) for a, ln, t in sets]
    runs += [(int(min(a, b)), int(max(a, b)) + 1, int(t))
             for (a, b), t in zip(extra, times, strict=True)]
    for i, (a, b, t) in enumerate(runs):
        if i % 5 == 4:
            pages = np.arange(a, b)[::3]     # scattered pages, as a fault's may be
            res.set_ready(pages, t)
            ref[pages] = t
        else:
            res.set_ready(slice(a, b), t)
            ref[a:b] = t
    assert np.array_equal(res.ready_of(slice(None)), ref)
    for a, b in [r[:2] for r in runs[::37]] + [tuple(sorted(p)) for p in extra[::53]]:
        assert res.ready_time(a, b) == (ref[a:b].max() if b > a else 0)
    live = len(np.unique(ref))
    assert res._ntimes <= max(1024, 2 * live) + 1


def test_check_finds_lost_pages_and_miscounts_across_its_blocks() -> None:
    """``check`` reads a million pages at a time: a live page in neither tier is found
    (and counted) in any block, and a held count that disagrees with the bitmap too."""
    n = (1 << 20) * 2 + 5
    res = Residency(n, n, PAGE, starts=np.array([0, 1_500_000, n]))
    res.hold(slice(1_048_570, 1_048_580), 7, 0)
    res.check()
    res.live[[3, (1 << 20) + 9, n - 1]] = True
    with pytest.raises(AssertionError, match="^3 live pages in neither tier, first 3$"):
        res.check()
    res.live[:] = False
    res.held_by_owner[0] -= 1
    res.held_by_owner[1] += 1
    with pytest.raises(AssertionError, match="per-owner"):
        res.check()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 1_999), st.integers(1, 300),
                          st.integers(0, 10**9)), min_size=1, max_size=80))
def test_held_counts_per_group_and_ready_times_follow_every_hold_and_release(
        steps: list[tuple[bool, int, int, int]]) -> None:
    """Holds (compiled on a run, ``_hold_run``) and releases of overlapping runs across
    group boundaries: the pages newly held are counted, each group's held count is the
    number of its pages held, every held page reads back the ready time it was last held
    with, and a hold past capacity raises and changes nothing."""
    n = 2_000
    starts = np.array([0, 7, 300, 301, 1_024, 1_500, n])
    res = Residency(n, 1_200, PAGE, starts=starts)
    held = np.zeros(n, dtype=bool)
    ready = np.zeros(n, dtype=np.int64)
    over = 0
    for hold, a, ln, t in steps:
        b = min(n, a + ln)
        if hold:
            new = int((~held[a:b]).sum())
            if held.sum() + new > res.capacity:
                before = (res.in_hbm.copy(), res.held_by_owner.copy(), res.held)
                with pytest.raises(CapacityError):
                    res.hold(slice(a, b), t, 0)
                after = (res.in_hbm, res.held_by_owner, res.held)
                assert all(np.array_equal(x, y) for x, y in zip(before, after, strict=True))
                over += 1
                continue
            assert res.hold(slice(a, b), t, 0) == new
            held[a:b] = True
            ready[a:b] = t
        else:
            assert res.release(slice(a, b), 0) == int(held[a:b].sum())
            held[a:b] = False
        owner = np.searchsorted(starts, np.flatnonzero(held), side="right") - 1
        assert res.held_by_owner.tolist() == np.bincount(owner, minlength=6).tolist()
        assert np.array_equal(res.in_hbm, held) and res.held == int(held.sum())
        # the latest ready time over the held pages of a run (0: none held)
        lo, hi = a // 2, min(n, b + 150)
        part = held[lo:hi]
        assert res.held_ready_time(lo, hi) == (int(ready[lo:hi][part].max())
                                               if part.any() else 0)
    assert np.array_equal(res.ready_of(slice(None))[held], ready[held])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 499), st.integers(1, 90)),
                min_size=1, max_size=25),
       st.integers(0, 499), st.integers(0, 200), st.integers(1, 120))
def test_last_held_is_the_span_of_the_last_k_pages_held(
        steps: list[tuple[bool, int, int]], lo: int, length: int, k: int) -> None:
    """``Residency.last_held``: from the ``k``-th last held page of a run (the first, if
    fewer are held) to the last held one, and how many those are, as from the held
    pages' indices; words of eight pages none of them held are skipped whole, and
    words all held are counted whole while the count stays within ``k``."""
    n = 500
    res = Residency(n, n, PAGE)
    for hold, a, ln in steps:
        b = min(n, a + ln)
        if hold:
            res.hold(slice(a, b), 1, 0)
        else:
            res.release(slice(a, b), 0)
    hi = min(n, lo + length)
    held = np.flatnonzero(res.in_hbm[lo:hi]) + lo
    take = held[-k:]
    want = (int(take[0]), int(take[-1]) + 1, len(take)) if len(take) else (0, 0, 0)
    assert res.last_held(lo, hi, k) == want


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["hold", "release", "live", "dead", "flash",
                                           "written"]),
                          st.integers(0, 4_999), st.integers(1, 3_000)),
                min_size=1, max_size=30),
       st.integers(0, 4_999), st.integers(0, 5_000))
def test_dirty_and_missing_counts_are_those_of_the_flags(
        steps: list[tuple[str, int, int]], lo: int, length: int) -> None:
    """``Residency.dirty_count`` (held, live and newer than flash), ``count_missing``
    (not held; eight flags a word, summed 255 words at a time) and ``missing_runs`` (the
    runs of pages not held; words of eight all held or all not skipped whole) against
    the same counts over the flags' arrays, after holds, releases and changes of
    liveness and of the flash copy: ranges of up to 5,000 pages (625 words)."""
    n = 5_000
    res = Residency(n, n, PAGE)
    for what, a, ln in steps:
        b = min(n, a + ln)
        if what == "hold":
            res.hold(slice(a, b), 1, 0)
        elif what == "release":
            res.release(slice(a, b), 0)
        elif what in ("live", "dead"):
            res.live[a:b] = what == "live"
        else:
            res.in_flash[a:b] = what == "flash"
    hi = min(n, lo + length)
    dirty = res.in_hbm[lo:hi] & res.live[lo:hi] & ~res.in_flash[lo:hi]
    assert res.dirty_count(lo, hi) == int(np.count_nonzero(dirty))
    assert res.count_missing(lo, hi) == (hi - lo) - int(np.count_nonzero(res.in_hbm[lo:hi]))
    # the runs of the missing pages, in order, and how many they are
    gone = np.flatnonzero(~res.in_hbm[lo:hi]) + lo
    count, runs = res.missing_runs(lo, hi)
    assert count == len(gone)
    assert [p for a, b in runs for p in range(a, b)] == gone.tolist()
    assert all(b0 < a1 for (_, b0), (a1, _) in zip(runs, runs[1:], strict=False))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2_999), st.integers(1, 900), st.integers(0, 10**12)),
                min_size=1, max_size=20),
       st.integers(0, 2_998), st.integers(1, 2_000), st.integers(0, 10**13))
def test_a_streamed_tails_due_time_is_its_latest_page_plus_the_work_after_it(
        sets: list[tuple[int, int, int]], lo: int, n: int, dur: int) -> None:
    """``tail_due``: over the tail's pages, a page's ready time plus the op's work left
    after it (``(last - page - 1) * dur // (last - first)``), as the executor computed
    it with numpy over the tail (a tail of several blocks of ``READY_BLOCK`` pages, some
    skipped whole)."""
    res = Residency(3_100, 3_100, PAGE)
    for start, k, t in sets:
        res.set_ready(slice(start, start + k), t)
    hi = min(3_000, lo + n)
    first, last = max(0, lo - 7), hi + 11
    pages = np.arange(lo, hi)
    want = int((res.ready_of(slice(lo, hi)) + ((last - pages - 1) * dur) // (last - first)).max())
    assert res.tail_due(lo, hi, first, last, dur) == want


def test_a_tails_due_time_is_exact_where_pages_times_work_pass_64_bits() -> None:
    """A tail of two million pages under an op of 20 s: a page's pages-after times the
    op's ps pass 2^63, where numpy's int64 product wraps; the due time is still the
    exact integer."""
    n = 2_000_000
    res = Residency(n, n, PAGE)
    res.set_ready(slice(0, n), 5)
    res.set_ready(slice(1_000, 1_300), 9 * 10**12)
    dur = 20 * 10**12
    want = max(t + (n - p - 1) * dur // n
               for p, t in ((0, 5), (1_000, 9 * 10**12)))
    assert (n - 1) * dur > 2**63
    assert res.tail_due(0, n, 0, n, dur) == want


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300),
       ops=st.lists(st.tuples(st.sampled_from(["run", "pages", "mask", "one", "flags"]),
                              st.integers(-320, 320), st.integers(-320, 320),
                              st.booleans()), max_size=25))
def test_page_bits_read_and_write_as_a_bool_array(
        n: int, ops: list[tuple[str, int, int, bool]]) -> None:
    """``PageBits`` against a bool array under the same writes: slices (with steps
    and ends past the array), lists of pages (negative ones from the end), masks and
    single pages, a run from a bool array, then every read: slices, pages, ``any``,
    ``all``, a run's ``any``, ``all`` and count, and the packing of the bool array
    (``PageBits.of``)."""
    bits, ref = PageBits(n), np.zeros(n, dtype=bool)
    for kind, a, b, v in ops:
        if kind == "flags":
            lo, hi, _ = slice(a, b).indices(n)
            flags = (np.arange(lo, hi) * (abs(a) + 1)) % 3 == int(v)
            bits[a:b] = flags
            ref[a:b] = flags
            assert np.array_equal(np.asarray(bits), ref)
            continue
        if kind == "run":
            key: object = slice(a, b) if a % 3 else slice(a, b, 2)
        elif kind == "pages":
            key = [x % (2 * n) - n for x in range(a, a + abs(b) % 7)]
        elif kind == "mask":
            key = (np.arange(n) % (abs(a) % 5 + 1)) == 0
        else:
            key = a % n
        bits[key] = v
        ref[key] = v
        assert np.array_equal(np.asarray(bits), ref)
    for a in range(-3, n + 3, 7):
        for b in range(a, n + 5, 11):
            assert np.array_equal(bits[a:b], ref[a:b])
            lo, hi, _ = slice(a, b).indices(n)
            assert bits.run_any(lo, hi) == bool(ref[lo:hi].any())
            assert bits.run_all(lo, hi) == bool(ref[lo:hi].all())
            assert bits.count(lo, hi) == int(np.count_nonzero(ref[lo:hi]))
    assert bits.any() == bool(ref.any()) and bits.all() == bool(ref.all())
    assert bits.count() == int(np.count_nonzero(ref))
    # a run set where two others are, and the first page where three agree (each read
    # as set or clear), against the bool arrays
    other = PageBits.of(np.arange(n) % 3 == 1)
    ref_o = np.asarray(other)
    for a in range(0, n + 1, 9):
        for b in range(a, n + 1, 13):
            for c in ((False, False, False), (False, True, True), (True, True, True),
                      (False, False, True)):
                x, y, z = (~r if neg else r for r, neg in zip((ref, ref_o, ref), c,
                                                             strict=True))
                hit = np.flatnonzero((x & y & z)[a:b])
                assert bits.first(a, b, other, bits, c) == (a + int(hit[0]) if hit.size
                                                            else -1)
    lo, hi = n // 4, n - n // 5
    both = ref.copy()
    both[lo:hi] |= ref_o[lo:hi] & ~ref[lo:hi]
    mixed = PageBits.of(ref)
    mixed.or_and(lo, hi, other, PageBits.of(~ref))
    assert np.array_equal(np.asarray(mixed), both)
    # the first page that differs from a copy, as a bool array's comparison finds it
    same = bits.copy()
    assert same.first_diff(bits) == -1 and np.array_equal(np.asarray(same), ref)
    for p in {0, n // 3, n - 1}:
        same[p] = not ref[p]
        assert same.first_diff(bits) == int(np.flatnonzero(np.asarray(same) != ref)[0])
    assert np.array_equal(np.asarray(PageBits.of(ref)), ref)
    pages = np.arange(-n, n, 3)
    assert np.array_equal(bits[pages], ref[pages])
    assert bits[n - 1] == ref[n - 1] and bits[-1] == ref[-1]


def test_page_bits_of_packs_past_its_block_as_one_array() -> None:
    """``PageBits.of`` packs a block of pages at a time (no temporary the size of the
    array); an array one block and 13 pages long, flags on every third page and on the
    pages either side of the block's edge, reads back as it was."""
    from tmhw.sim import pagebits

    n = pagebits._BLOCK + 13
    flags = np.arange(n) % 3 == 0
    flags[pagebits._BLOCK - 1:pagebits._BLOCK + 1] = True
    bits = PageBits.of(flags)
    assert np.array_equal(np.asarray(bits), flags)
    assert bits.count() == int(np.count_nonzero(flags))
