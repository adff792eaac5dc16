"""The FTL's functional state: a stateful model check against a dict, striping, wear
levelling, bad-block retirement and the memory it holds."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest
from flash_devices import small
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from flash import PRESETS
from flash.ftl import BAD, FTL, FULL, I64, stripe_planes
from flash.ftl.mapping import SEG_BITS
from tmhw.sim import TmhwError
from tmhw.sim.units import GiB

# 4 planes x 16 blocks x 8 pages, 40% spare: GC runs every few dozen writes.
TINY = small(channels=2, dies_per_chip=1, blocks_per_plane=16, pages_per_block=8,
             over_provisioning=0.4, static_wl_threshold=3)


class FtlMachine(RuleBasedStateMachine):
    """Writes, overwrites, trims, reads and forced GC against a shadow of what is
    mapped: nothing lost or duplicated, valid counts exact, erase counts only grow."""

    def __init__(self) -> None:
        super().__init__()
        self.ftl = FTL(TINY)
        self.n = self.ftl.n_lpn
        self.shadow: set[int] = set()
        self.erases = self.ftl.erases.copy()

    @initialize(occupancy=st.sampled_from([0.0, 0.3, 0.9]))
    def fill(self, occupancy: float) -> None:
        self.ftl.precondition(occupancy)
        self.shadow = set(range(int(occupancy * self.n)))

    @rule(start=st.integers(0, 10_000), length=st.integers(1, 12))
    def write_range(self, start: int, length: int) -> None:
        lo = start % self.n
        lpns = np.arange(lo, min(lo + length, self.n), dtype=np.int64)
        ppns, _ = self.ftl.write(lpns)
        assert np.unique(ppns).size == lpns.size
        self.shadow.update(lpns.tolist())

    @rule(lpn=st.integers(0, 10_000))
    def write_one(self, lpn: int) -> None:
        lpn %= self.n
        self.ftl.write1(lpn)
        self.shadow.add(lpn)

    @rule(lpns=st.lists(st.integers(0, 10_000), min_size=2, max_size=10, unique=True))
    def write_scattered(self, lpns: list[int]) -> None:
        arr = np.unique(np.array(lpns, dtype=np.int64) % self.n)
        self.ftl.write(arr)
        self.shadow.update(arr.tolist())

    @rule(start=st.integers(0, 10_000), length=st.integers(1, 20))
    def trim(self, start: int, length: int) -> None:
        lo = start % self.n
        lpns = np.arange(lo, min(lo + length, self.n), dtype=np.int64)
        k = self.ftl.trim(lpns)
        assert k == len(self.shadow.intersection(lpns.tolist()))
        self.shadow.difference_update(lpns.tolist())

    @rule(lpn=st.integers(0, 10_000))
    def read(self, lpn: int) -> None:
        lpn %= self.n
        ppn = self.ftl.lookup1(lpn)
        assert (ppn >= 0) == (lpn in self.shadow)
        if ppn >= 0:
            block, page = divmod(ppn, self.ftl.ppb)
            assert self.ftl.p2l(block)[page] == lpn
            assert self.ftl.state[block] != BAD

    @rule(plane=st.integers(0, TINY.planes - 1))
    def forced_gc(self, plane: int) -> None:
        self.ftl.collect(plane, reason="forced")

    @invariant()
    def consistent(self) -> None:
        self.ftl.check()
        mapped = self.ftl.lookup(np.arange(self.n, dtype=np.int64)) >= 0
        assert set(np.flatnonzero(mapped).tolist()) == self.shadow
        assert int(self.ftl.valid.sum()) == len(self.shadow)
        assert (self.ftl.erases >= self.erases).all()
        self.erases = self.ftl.erases.copy()


FtlMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=120,
                                        deadline=None)
test_ftl_never_loses_or_duplicates_a_mapping = FtlMachine.TestCase


def test_cwdp_stripes_consecutive_pages_over_channels_first() -> None:
    cfg = PRESETS["990pro"]
    planes = stripe_planes(cfg)
    per_ch = cfg.dies_per_channel * cfg.planes_per_die
    assert (planes[:8] // per_ch).tolist() == list(range(8))       # C fastest
    assert len(set((planes[:cfg.dies] // cfg.planes_per_die).tolist())) == cfg.dies
    assert (planes[: cfg.dies] % cfg.planes_per_die == 0).all()    # P slowest
    assert sorted(planes.tolist()) == list(range(cfg.planes))


def test_pcwd_puts_consecutive_pages_on_the_planes_of_one_die() -> None:
    cfg = dataclasses.replace(PRESETS["990pro"], allocation_order="PCWD")
    planes = stripe_planes(cfg)
    assert (planes[:4] // cfg.planes_per_die).tolist() == [0, 0, 0, 0]


def test_overwrites_are_programmed_to_fresh_pages_and_invalidate_the_old() -> None:
    ftl = FTL(TINY)
    a, _ = ftl.write1(5)
    b, _ = ftl.write1(5)
    assert a != b and ftl.lookup1(5) == b
    assert int(ftl.valid.sum()) == 1
    assert ftl.p2l(a // ftl.ppb)[a % ftl.ppb] == 5  # the stale copy is still on flash ...
    assert a not in ftl.valid_pages(a // ftl.ppb)[0].tolist()  # ... but no longer valid
    ftl.check()


def test_blocks_retire_at_the_pe_limit_and_data_survives() -> None:
    cfg = dataclasses.replace(TINY, pe_limit=6, static_wear_leveling=False)
    ftl = FTL(cfg)
    ftl.precondition(0.5)
    rng = np.random.default_rng(0)
    n = int(0.5 * ftl.n_lpn)
    with pytest.raises(TmhwError, match="worn out|nothing is reclaimable|no free block"):
        for _ in range(100_000):
            ftl.write1(int(rng.integers(0, n)))
    assert ftl.bad_blocks > 0
    assert (ftl.erases[ftl.state == BAD] == cfg.pe_limit).all()


def test_static_wear_levelling_bounds_the_erase_spread_under_a_hot_spot() -> None:
    def spread(static: bool) -> int:
        cfg = dataclasses.replace(TINY, static_wear_leveling=static, static_wl_threshold=4)
        ftl = FTL(cfg)
        ftl.precondition(0.9)  # cold data everywhere ...
        for i in range(6000):  # ... and a hot set of 8 pages rewritten over and over
            ftl.write1(i % 8)
        ftl.check()
        return int(ftl.erases.max() - ftl.erases.min())

    leveled, unleveled = spread(True), spread(False)
    assert leveled < unleveled
    assert leveled <= 4 + 2


def test_dynamic_wear_levelling_opens_the_least_worn_free_block() -> None:
    ftl = FTL(TINY)
    ftl.erases[:] = 50
    ftl.erases[3] = 1  # block 3 of plane 0
    ftl.fresh_next[0] = TINY.blocks_per_plane  # no never-used blocks left
    for b in range(TINY.blocks_per_plane):
        ftl._put_free(0, b)
        ftl.free_count[0] -= 1  # _put_free counts; the plane started full of free blocks
    assert ftl._take_free(0) == 3


def test_full_blocks_are_what_gc_chooses_from() -> None:
    ftl = FTL(TINY)
    ftl.precondition(0.9)
    plane = 0
    victim = ftl.select_victim(plane)
    assert victim < 0  # every full block is entirely valid: nothing to gain
    ftl.write1(0)  # invalidate one page of plane 0's first block
    assert ftl.select_victim(stripe_planes(TINY)[0]) >= 0
    assert ftl.state[ftl.select_victim(stripe_planes(TINY)[0])] == FULL


def test_ftl_state_grows_with_pages_touched_not_device_capacity() -> None:
    cfg = PRESETS["990pro"]  # 8 TiB raw, 7.2 TiB logical
    ftl = FTL(cfg)
    ftl.precondition(0.9)
    base = ftl.state_bytes()
    assert base < 64e6  # per-block arrays: ~20 bytes x 2M blocks
    pages = GiB // cfg.page_size
    chunk = 128
    for lo in range(0, pages, chunk):  # 1 GiB written sequentially, 2 MiB at a time
        ftl.write(np.arange(10**6 + lo, 10**6 + lo + chunk, dtype=np.int64))
    seq_growth = ftl.state_bytes() - base
    assert seq_growth < 16 * pages  # L2P + P2L: 4 + 4 bytes per page, plus slack
    rng = np.random.default_rng(1)
    before = ftl.state_bytes()
    for lpn in rng.integers(0, ftl.n_lpn, 20_000).tolist():
        ftl.write1(lpn)
    assert ftl.state_bytes() - before < 200 * 20_000
    # Extrapolated to a 40 GB working set: well under a few hundred MB.
    assert base + seq_growth * 40 < 400e6


def test_a_rewritten_two_stripe_run_maps_every_page_where_it_was_programmed() -> None:
    """A run of two stripes is programmed plane by plane (its pages ordered by plane);
    the map must record each page's own physical page, not treat the plane-ordered
    pages as one consecutive run."""
    f = FTL(PRESETS["pm1743"])
    f.precondition(1e-4)
    f.write(np.arange(2 * f.U))
    out, _ = f.write(np.arange(2 * f.U))
    assert (f.lookup(np.arange(2 * f.U)) == out).all()


def test_a_write_that_fills_a_block_and_forces_gc_leaves_its_pages_mapped() -> None:
    """A run of pages longer than a block, on one plane at the hard GC threshold: the
    block the run fills is mapped before forced GC may pick it as the victim (it can:
    the block's older pages may already be stale). Each write keeps valid counts exact."""
    cfg = small(channels=1, dies_per_chip=1, planes_per_die=1, blocks_per_plane=64,
                pages_per_block=8)
    ftl = FTL(cfg)
    rng = np.random.default_rng(1)
    shadow: set[int] = set()
    for _ in range(600):
        k = int(rng.integers(1, 20))
        lo = int(rng.integers(0, ftl.n_lpn - k))
        ftl.write(np.arange(lo, lo + k, dtype=np.int64))
        shadow.update(range(lo, lo + k))
        ftl.check()
        assert int(ftl.valid.sum()) == len(shadow)
    assert ftl.forced_gc_count > 0


def _ftl_state(f: FTL) -> tuple[object, ...]:
    """Everything a host write changes, as comparable values."""
    m, b, l2p = f.mapping, f.blocks, f.l2p
    rows = [m.pool[r - 1].tolist() if r else None for r in m.row1_of.tolist()]
    return (l2p.sparse.as_dict(), l2p.sparse_per_seg.tolist(),
            [s.tolist() if s is not None else None for s in l2p.segs],
            f.valid.tolist(), f.stamp.tolist(), f.state.tolist(), f.erases.tolist(),
            b.host_blk.tolist(), b.host_wp.tolist(), b.gc_blk.tolist(), b.gc_wp.tolist(), b.seq,
            list(f.free_count), sorted(f.low_planes), rows, f.host_pages, f.gc_pages,
            f.state_bytes())


@pytest.mark.parametrize(("seed", "ppb"), [(0, 16), (1, 16), (2, 12)])
def test_run_writes_end_in_the_state_of_the_plane_by_plane_path(
        seed: int, ppb: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled write of a run (``FTL._write_run``, taken for runs of two pages up
    to a stripe, and for runs longer than ``DENSE_AT // 4``) leaves every map, count and
    block state exactly where the general path (group by plane, program plane by plane)
    leaves it, the run given as an array or as its bounds (``write_range``): runs of 1
    to 2 stripes + 3 pages, overwriting, straddling L2P segments and filling blocks (so
    some go through GC), with the map's segments both sparse and dense. 64 planes (a
    2 MiB chunk of 16 KiB pages is 128 pages), 16 pages a block (and 12: the kernel
    shifts where a block's pages are a power of two, and divides otherwise), 4096-page
    L2P segments. The kernel (``write_run``) sets the map of runs whose segments are all
    dense, opening blocks where planes need them, and leaves the map of the others to
    ``SparseL2P``: each is taken. The kernel opens never-used blocks itself
    (``open_fresh``), with rows given back by collections or new ones; the caller the
    others, erased ones after a collection."""
    import flash.ftl as ftl_mod
    from flash.ftl.kernels import DONE, NEEDS_BLOCKS, PLACED

    kernel = ftl_mod.write_run
    answers: list[int] = []
    #: runs the kernel did in one call that opened blocks, and that took rows given back
    opened_here = [0, 0]

    def counted(*args: object) -> int:
        fresh_next, _, rows, _ = args[6]  # type: ignore[index]
        before, given = int(fresh_next.sum()), int(rows[1])
        got: int = kernel(*args)
        answers.append(got)
        if got in (DONE, PLACED) and int(fresh_next.sum()) > before:
            opened_here[0] += 1
            opened_here[1] += int(rows[1]) < given
        return got

    cfg = small(channels=4, dies_per_chip=4, planes_per_die=4, blocks_per_plane=32,
                pages_per_block=ppb, over_provisioning=0.3)
    run, ref = FTL(cfg), FTL(cfg)
    monkeypatch.setattr(run._run_direct, "call", counted)
    ref._write_run = lambda lo, n: None  # type: ignore[method-assign]
    for f in (run, ref):
        f.precondition(0.3)
    rng = np.random.default_rng(seed)
    U = cfg.planes
    seen_sparse = False
    for k in range(700):
        n = int(rng.choice([2, 3, 17, 32, U - 1, U, U + 1, 2 * U + 3, 65, 200]))
        lo = int(rng.choice([int(rng.integers(0, run.n_lpn - n)),
                             4096 - n // 2, 8192 - 5]))  # some straddle a segment
        lpns = np.arange(lo, lo + n, dtype=np.int64)
        a, ja = run.write(lpns) if k % 2 else run.write_range(lo, lo + n)
        b, jb = ref.write(lpns)
        assert np.array_equal(a, b) and len(ja) == len(jb)
        if k % 50 == 0:
            seen_sparse |= bool(run.l2p.sparse)
            assert _ftl_state(run) == _ftl_state(ref), k
    assert run.forced_gc_count > 0 and seen_sparse
    assert any(s is not None for s in run.l2p.segs)
    # the kernel wrote runs, opened blocks for some (asking for them first), placed
    # some into segments not dense yet and left others to the general path (a plane
    # to collect)
    assert answers.count(DONE) > 50 and answers.count(NEEDS_BLOCKS) > 5
    assert answers.count(PLACED) > 2
    assert len(answers) > sum(answers.count(a) for a in (DONE, NEEDS_BLOCKS, PLACED))
    assert opened_here[0] > 20 and opened_here[1] > 0, opened_here
    assert _ftl_state(run) == _ftl_state(ref)


def test_l2p_set_of_a_few_pages_a_segment_ends_as_page_by_page_set1() -> None:
    """``SparseL2P.set`` and ``set_by_segment`` of fewer than ``DENSE_AT // 4`` pages in
    a sparse segment (taken into its dict at once) leave the map (the dict, per-segment
    counts, dense segments and their values) as ``set1`` of each page in turn leaves it,
    including batches that bring a segment to ``DENSE_AT`` entries, turning it dense
    part-way."""
    from flash.ftl import SparseL2P

    ftl_a, ftl_b = FTL(small()), FTL(small())
    for f in (ftl_a, ftl_b):
        f.precondition(0.2)
    a, b = ftl_a.l2p, ftl_b.l2p
    assert len(a.segs) >= 4 and SparseL2P.DENSE_AT // 4 == 64
    rng = np.random.default_rng(3)
    n_lpn = ftl_a.n_lpn
    seen_sparse = False
    for k in range(1500):
        n = int(rng.choice([1, 2, 5, 30, 63]))
        if k % 3:
            lpns = np.unique(rng.integers(0, n_lpn, n))
        else:
            lo = int(rng.integers(0, n_lpn - n))
            lpns = np.arange(lo, lo + n, dtype=np.int64)
        vals = rng.integers(-1, 10**6, lpns.size)
        if k % 6 == 0:
            a.set_by_segment(int(lpns[0]), vals)
        else:
            a.set(lpns, vals)
        for lpn, v in zip(lpns.tolist(), vals.tolist(), strict=True):
            b.set1(lpn, v)
        assert a.sparse.as_dict() == b.sparse.as_dict(), k
        seen_sparse |= bool(a.sparse)
        assert a.sparse_per_seg.tolist() == b.sparse_per_seg.tolist()
        assert [s is None for s in a.segs] == [s is None for s in b.segs]
        assert all(np.array_equal(x, y) for x, y in zip(a.segs, b.segs, strict=True)
                   if x is not None)
    assert seen_sparse and a.dense_segs == len(a.segs) and a.nbytes() == b.nbytes()


def test_l2p_set_of_pieces_ends_as_set_of_each_piece_in_turn() -> None:
    """``SparseL2P.set_pieces`` (the placement's pieces, at once where every page is in
    a dense segment) leaves the map as ``set`` of each piece in turn, whether the
    segments are dense, sparse or mixed."""
    ftl_a, ftl_b = FTL(small()), FTL(small())
    for f in (ftl_a, ftl_b):
        f.precondition(0.2)
    a, b = ftl_a.l2p, ftl_b.l2p
    rng = np.random.default_rng(5)
    n_lpn = ftl_a.n_lpn
    at_once = 0
    for k in range(400):
        n = int(rng.choice([2, 8, 70, 300]))
        lpns = rng.permutation(n_lpn)[:n].astype(np.int64)
        if k % 2:
            lpns = np.sort(lpns)
        ppns = rng.integers(0, 10**6, n).astype(np.int64)
        cuts = np.unique(rng.integers(1, n, int(rng.integers(1, 6))))
        starts = np.concatenate(([0], cuts))
        pieces = np.stack((starts, np.diff(np.append(starts, n))), axis=1).astype(np.int64)
        dense_before = a.dense_segs
        all_dense = bool((a.seg_row[lpns >> SEG_BITS] >= 0).all()) if dense_before else False
        at_once += all_dense
        a.set_pieces(lpns, ppns, pieces)
        for p0, k0 in pieces.tolist():
            b.set(lpns[p0:p0 + k0], ppns[p0:p0 + k0])
        assert a.sparse.as_dict() == b.sparse.as_dict(), k
        assert a.sparse_per_seg.tolist() == b.sparse_per_seg.tolist()
        assert [s is None for s in a.segs] == [s is None for s in b.segs]
        assert all(np.array_equal(x, y) for x, y in zip(a.segs, b.segs, strict=True)
                   if x is not None)
    assert at_once > 0


class _RefL2P:
    """The L2P's rule in plain Python (``SparseL2P``): a sparse segment's pages in a dict
    until it holds ``DENSE_AT`` of them or is given ``DENSE_AT // 4`` at once; a dense
    segment an array made from the closed form and its dict entries; a run longer than
    ``DENSE_AT // 4`` makes every segment it touches dense."""

    def __init__(self, n_lpn: int, closed: Callable[[int], int], seg: int,
                 dense_at: int) -> None:
        self.n_lpn, self.closed, self.seg, self.dense_at = n_lpn, closed, seg, dense_at
        self.sparse: dict[int, int] = {}
        self.per_seg: dict[int, int] = {}
        self.dense: dict[int, list[int]] = {}
        self.order: list[int] = []   # segments in the order they turned dense

    def densify(self, si: int) -> list[int]:
        if si not in self.dense:
            lo = si * self.seg
            row = [self.closed(lpn) if lpn < self.n_lpn else -1
                   for lpn in range(lo, lo + self.seg)]
            for lpn in range(lo, min(lo + self.seg, self.n_lpn)):
                if lpn in self.sparse:
                    row[lpn - lo] = self.sparse.pop(lpn)
            self.per_seg.pop(si, None)
            self.dense[si] = row
            self.order.append(si)
        return self.dense[si]

    def set(self, lpns: list[int], vals: list[int]) -> None:
        at_once = self.dense_at // 4
        self.last_counts: list[int] = []
        if len(lpns) > at_once and lpns == list(range(lpns[0], lpns[0] + len(lpns))):
            for lpn, v in zip(lpns, vals, strict=True):
                self.densify(lpn // self.seg)[lpn % self.seg] = v
            return
        for si in sorted({lpn // self.seg for lpn in lpns}):
            mine = [(lpn, v) for lpn, v in zip(lpns, vals, strict=True)
                    if lpn // self.seg == si]
            if si not in self.dense and len(mine) < at_once:
                new = 0
                for lpn, v in mine:
                    new += lpn not in self.sparse
                    self.sparse[lpn] = v
                if new:
                    count = self.per_seg.get(si, 0) + new
                    self.last_counts.append(count)
                    if count >= self.dense_at:
                        self.densify(si)
                    else:
                        self.per_seg[si] = count
            else:
                row = self.densify(si)
                for lpn, v in mine:
                    row[lpn % self.seg] = v

    def get(self, lpn: int) -> int:
        si = lpn // self.seg
        if si in self.dense:
            return self.dense[si][lpn % self.seg]
        return self.sparse.get(lpn, self.closed(lpn))


def test_the_compiled_l2p_set_and_get_follow_the_rule_of_segments() -> None:
    """``SparseL2P.set`` and ``set_pieces`` (one compiled call) and ``get`` against the
    rule in plain Python: the dict, its per-segment counts, which segments are dense,
    their rows in the order they turned dense, and every lookup, over pieces of one to
    300 pages (runs, sorted and unsorted scatters, a segment's pages at once, one value
    for all) on a device with a short last segment."""
    from flash.ftl import SparseL2P

    ftl = FTL(small(blocks_per_plane=256, over_provisioning=0.3))
    ftl.precondition(0.4)
    l2p, amap = ftl.l2p, ftl.mapping
    seg, dense_at = 1 << SEG_BITS, SparseL2P.DENSE_AT
    n_lpn = ftl.n_lpn
    assert n_lpn % seg and len(l2p.segs) >= 20   # the last segment is short
    hot = [0, 5, len(l2p.segs) - 1]
    ref = _RefL2P(n_lpn, lambda lpn: amap.implicit_l2p1(lpn), seg, dense_at)
    rng = np.random.default_rng(11)
    kinds = set()
    at_threshold = 0
    for step in range(600):
        n = int(rng.choice([1, 3, 40, 63, 64, 65, 300]))
        kind = step % 4
        if kind == 0 and step % 8 == 0:   # a run of 64 across a sparse segment's start
            sparse = np.flatnonzero(l2p.seg_row[1:-1] < 0) + 1
            n = 64
            lo = int(seg * rng.choice(sparse if sparse.size else [1]) - rng.integers(1, n))
            lpns = np.arange(lo, lo + n, dtype=np.int64)
        elif kind == 0:   # a run
            lo = int(rng.integers(0, n_lpn - n))
            lpns = np.arange(lo, lo + n, dtype=np.int64)
        elif kind == 1:   # within one of a few segments, often a page at a time
            si = int(rng.choice(hot))
            span = min(seg, n_lpn - si * seg)
            lpns = si * seg + rng.permutation(span)[:min(n if n > 3 else 1, span)]
        else:   # scattered, sorted or not
            lpns = rng.permutation(n_lpn)[:n].astype(np.int64)
            if kind == 2:
                lpns = np.sort(lpns)
        scalar = step % 7 == 0
        vals = rng.integers(0, 10**6, lpns.size).astype(np.int64)
        if scalar:
            vals[:] = -1
        k = lpns.size
        cuts = np.unique(rng.integers(1, k, int(rng.integers(0, 4)))) if k > 1 else []
        starts = np.concatenate(([0], cuts)).astype(np.int64)
        pieces = np.stack((starts, np.diff(np.append(starts, k))), axis=1)
        if step % 2:
            l2p.set_pieces(lpns, -1 if scalar else vals, pieces)
        else:
            for a, m in pieces.tolist():
                l2p.set(lpns[a:a + m], -1 if scalar else vals[a:a + m])
        for a, m in pieces.tolist():
            ref.set(lpns[a:a + m].tolist(), vals[a:a + m].tolist())
        kinds.add((kind, bool(l2p.sparse), l2p.dense_segs))
        at_threshold += any(c == dense_at for c in ref.last_counts)
        assert l2p.sparse.as_dict() == ref.sparse, step
        assert {si: c for si, c in enumerate(l2p.sparse_per_seg.tolist()) if c} == \
            ref.per_seg
        assert [si for si, s in enumerate(l2p.segs) if s is not None] == sorted(ref.dense)
        assert [int(l2p.seg_row[si]) for si in ref.order] == list(range(len(ref.order)))
        for si, row in ref.dense.items():
            assert l2p.segs[si] is not None and l2p.segs[si].tolist() == row, (step, si)
        probe = rng.integers(0, n_lpn, 200).astype(np.int64)
        assert l2p.get(probe).tolist() == [ref.get(x) for x in probe.tolist()]
    # steps that found some segments dense and others holding pages in the dict, and
    # segments whose dict reached DENSE_AT exactly
    assert any(sp and 0 < dense < len(l2p.segs) for _, sp, dense in kinds)
    assert at_threshold > 0


@pytest.mark.parametrize("seed", [0, 1])
def test_a_write_of_blocks_per_plane_ends_in_the_state_of_the_plane_by_plane_path(
        seed: int) -> None:
    """The write of a run of at least a block per plane (``Programmer.program_long``,
    taken by ``write_range``: its blocks opened in advance, its pages given by index,
    its L2P map set once at the end) leaves every map, count and block state exactly
    where the plane-by-plane path (its L2P map set a piece at a time) leaves it, with
    the same ppns:
    runs of 1 to 5 blocks per plane and a few pages, among short and scattered writes
    that leave the map's segments sparse and dense and blocks half-written, over a
    preconditioned range and past it, until GC runs (where the long path declines and
    the general one collects). 128 planes, 16 pages a block."""
    cfg = small(channels=4, dies_per_chip=4, planes_per_die=8, blocks_per_plane=96,
                pages_per_block=16, over_provisioning=0.3)
    fast, ref = FTL(cfg), FTL(cfg)
    ref.programmer.program_long = lambda lo, hi, unmap: None  # type: ignore[method-assign]
    for f in (fast, ref):
        f.precondition(0.25)
    U, ppb = cfg.planes, cfg.pages_per_block
    assert U == 128
    taken: list[bool] = []
    long = fast.programmer.program_long

    def counted(lo: int, hi: int, unmap: Callable[[], object]) -> I64 | None:
        out = long(lo, hi, unmap)
        taken.append(out is not None)
        return out

    fast.programmer.program_long = counted  # type: ignore[method-assign]
    rng = np.random.default_rng(seed)
    seen_sparse = False
    for k in range(160):
        kind = k % 4
        if kind == 0:
            n = int(rng.integers(1, 5)) * U * ppb + int(rng.integers(0, 300))
            lo = int(rng.integers(0, fast.n_lpn - n))
            before = fast.host_pages
            sparse = bool(fast.l2p.sparse)
            a, ja = fast.write_range(lo, lo + n)
            seen_sparse |= sparse and taken[-1]
            b, jb = ref.write_range(lo, lo + n)
            assert fast.host_pages - before == n
        else:
            n = int(rng.choice([1, 7, 40, 300]))
            lo = int(rng.integers(0, fast.n_lpn - n))
            lpns = (np.arange(lo, lo + n, dtype=np.int64) if kind == 1
                    else np.unique(rng.integers(0, fast.n_lpn, n)))
            a, ja = fast.write(lpns)
            b, jb = ref.write(lpns)
        assert np.array_equal(a, b) and len(ja) == len(jb), k
        if k % 20 == 0:
            assert _ftl_state(fast) == _ftl_state(ref), k
    fast.check()
    assert sum(taken) >= 10 and not all(taken) and fast.forced_gc_count > 0
    assert seen_sparse and any(s is not None for s in fast.l2p.segs)
    assert _ftl_state(fast) == _ftl_state(ref)


def test_the_closed_form_of_a_run_is_that_of_its_pages() -> None:
    """``AddressMap.implicit_run`` (a slice of a precomputed ramp for a run of at most a
    segment) gives the closed form page by page, ``implicit_l2p``: runs from every
    stripe position, of one page to a whole segment, across segments, and across the
    end of the preconditioned range."""
    from flash.ftl import SEG

    ftl = FTL(small(channels=4, dies_per_chip=4, planes_per_die=8, blocks_per_plane=96,
                    pages_per_block=16, over_provisioning=0.3))
    ftl.precondition(0.5)
    m = ftl.mapping
    rng = np.random.default_rng(0)
    n_pre = m.n_pre
    for k in range(400):
        n = int(rng.choice([1, 2, m.U - 1, m.U, m.U + 3, SEG - 1, SEG, SEG + 7]))
        lo = int(rng.choice([int(rng.integers(0, n_pre - n)), n_pre - n, n_pre - n // 2,
                             k % m.U]))
        lo = max(0, lo)
        want = m.implicit_l2p(np.arange(lo, lo + n, dtype=np.int64))
        assert np.array_equal(m.implicit_run(lo, lo + n), want), (lo, n)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_trim_by_bounds_ends_in_the_state_of_a_trim_of_the_pages(seed: int) -> None:
    """``FTL.trim_range`` (the SSD's trim: the run's old copies read per L2P segment)
    unmaps what ``trim`` of the same pages as an array unmaps, and leaves every map,
    count and block state where it leaves them: runs of 1 page to two L2P segments,
    over preconditioned, rewritten, sparse and dense segments, some trimmed twice."""
    from flash.ftl import FTL

    cfg = small(channels=4, dies_per_chip=4, planes_per_die=4, blocks_per_plane=32,
                pages_per_block=16, over_provisioning=0.3)
    by_range, by_pages = FTL(cfg), FTL(cfg)
    for f in (by_range, by_pages):
        f.precondition(0.3)
    rng = np.random.default_rng(seed)
    seen_sparse = False
    for k in range(300):
        n = int(rng.choice([1, 3, 64, 200, 4096, 9000]))
        lo = int(rng.choice([int(rng.integers(0, by_range.n_lpn - n)),
                             max(0, 4096 - n // 2)]))  # some straddle a segment
        if k % 3:
            for f in (by_range, by_pages):
                f.write_range(lo, lo + n)
        else:
            got = by_range.trim_range(lo, lo + n)
            assert got == by_pages.trim(np.arange(lo, lo + n, dtype=np.int64)), k
        seen_sparse |= bool(by_range.l2p.sparse)
        if k % 50 == 0:
            assert _ftl_state(by_range) == _ftl_state(by_pages), k
    assert by_range.trimmed_pages > 0 and seen_sparse
    assert _ftl_state(by_range) == _ftl_state(by_pages)
    assert by_range.trim_range(5, 5) == 0
    with pytest.raises(TmhwError, match="out of range"):
        by_range.trim_range(by_range.n_lpn - 1, by_range.n_lpn + 1)


def test_a_read_finds_each_page_where_the_map_or_the_preconditioned_layout_puts_it() -> None:
    """``FTL.read_run`` (the SSD's read of a run, compiled) gives each logical page's
    physical page as ``lookup`` does, and an unmapped one's place in the preconditioned
    layout (``static_ppn``), counting those: over preconditioned, written (sparse and
    dense segments), trimmed and never-written pages."""
    from flash.ftl import FTL

    cfg = small(channels=4, dies_per_chip=4, planes_per_die=4, blocks_per_plane=32,
                pages_per_block=16, over_provisioning=0.3)
    ftl = FTL(cfg)
    ftl.precondition(0.3)
    rng = np.random.default_rng(0)
    kinds = set()
    for k in range(200):
        n = int(rng.choice([1, 3, 64, 200, 4096]))
        lo = int(rng.integers(0, ftl.n_lpn - n))
        if k % 4 == 0:
            ftl.trim_range(lo, lo + n)
        else:
            ftl.write_range(lo, lo + n)
        n = int(rng.choice([1, 2, 17, 300, 5000]))
        lo = int(rng.integers(0, ftl.n_lpn - n))
        lpns = np.arange(lo, lo + n, dtype=np.int64)
        want = ftl.lookup(lpns)
        unmapped = want < 0
        want[unmapped] = ftl.static_ppn(lpns[unmapped])
        out = np.empty(n, dtype=np.int64)
        assert ftl.read_run(lo, out) == int(unmapped.sum())
        assert np.array_equal(out, want), k
        kinds |= {bool(unmapped.any()), bool((~unmapped).any())}
        kinds.add("sparse" if ftl.l2p.sparse else "dense")
    assert kinds == {True, False, "sparse", "dense"}
    with pytest.raises(TmhwError, match="out of range"):
        ftl.read_run(ftl.n_lpn - 1, np.empty(2, dtype=np.int64))
