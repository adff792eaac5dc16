"""Where a host write puts each page (``Programmer.place`` and its kernel), against a
plain model written here: per plane an active block and its write pointer, free blocks
taken in order, the planes whose active block has room for all their pages written
first at once (``program_planes``), the others page by page, each block's stamp the
write sequence after its last page."""

from __future__ import annotations

import numpy as np
from flash_devices import small

from flash.ftl import FTL, FULL


class Placement:
    """The plain model: a fresh device, no collection (enough free blocks)."""

    def __init__(self, ftl: FTL) -> None:
        self.U, self.ppb, self.bpp = ftl.U, ftl.ppb, ftl.bpp
        self.sp = ftl.stripe_plane.tolist()
        self.blk = [-1] * self.U
        self.wp = [0] * self.U
        self.fresh = [0] * self.U
        self.seq = 0
        self.where: dict[int, int] = {}  # logical page -> ppn
        self.valid: dict[int, int] = {}
        self.stamp: dict[int, int] = {}
        self.full: set[int] = set()
        self.p2l: dict[int, int] = {}  # ppn -> logical page

    def _put(self, plane: int, lpn: int) -> int:
        if self.blk[plane] < 0:
            self.blk[plane] = plane * self.bpp + self.fresh[plane]
            self.fresh[plane] += 1
            self.wp[plane] = 0
        b = self.blk[plane]
        ppn = b * self.ppb + self.wp[plane]
        self.p2l[ppn] = lpn
        self.valid[b] = self.valid.get(b, 0) + 1
        self.wp[plane] += 1
        if self.wp[plane] == self.ppb:
            self.full.add(b)
            self.blk[plane] = -1
            self.wp[plane] = 0
        return ppn

    def write(self, lpns: list[int], fits_first: bool) -> list[int]:
        for lpn in lpns:  # the old copies
            if lpn in self.where:
                self.valid[self.where[lpn] // self.ppb] -= 1
        by_plane: dict[int, list[int]] = {}
        for lpn in lpns:
            by_plane.setdefault(self.sp[lpn % self.U], []).append(lpn)
        order = sorted(by_plane)
        fits = {p for p in order if fits_first and self.blk[p] >= 0
                and self.wp[p] + len(by_plane[p]) <= self.ppb}
        out: dict[int, int] = {}
        for p in order:
            if p in fits:
                for lpn in by_plane[p]:
                    out[lpn] = self._put(p, lpn)
                self.seq += len(by_plane[p])
        for p in order:  # each block that fit: the sequence after all of them
            if p in fits:
                self.stamp[out[by_plane[p][0]] // self.ppb] = self.seq
        for p in order:
            if p not in fits:
                for lpn in by_plane[p]:
                    out[lpn] = self._put(p, lpn)
                    self.seq += 1
                    self.stamp[out[lpn] // self.ppb] = self.seq
        self.where.update(out)
        return [out[lpn] for lpn in lpns]

    def agrees(self, ftl: FTL) -> None:
        b = ftl.blocks
        assert b.host_blk.tolist() == self.blk and b.host_wp.tolist() == self.wp
        assert b.seq == self.seq
        touched = sorted(self.valid)
        assert ftl.valid[touched].tolist() == [self.valid[k] for k in touched]
        assert ftl.stamp[touched].tolist() == [self.stamp[k] for k in touched]
        assert {k for k in touched if ftl.state[k] == FULL} == self.full
        for blk in touched:
            row = ftl.p2l(blk).tolist()
            assert row == [self.p2l.get(blk * self.ppb + j, -1) for j in range(self.ppb)]
        lp = sorted(self.where)
        assert ftl.lookup(np.array(lp, dtype=np.int64)).tolist() == [self.where[k] for k in lp]


def test_scattered_and_long_writes_go_where_the_plain_model_puts_them() -> None:
    """Scattered host writes (the general path: grouped by plane, the planes that fit
    first) and runs of more than a block per plane (opened blocks in advance, pages
    given as progressions) on 128 planes of 16-page blocks: every ppn, valid count,
    stamp, closed block, P2L row and L2P entry as the model has them, rewrites
    included."""
    ftl = FTL(small(channels=4, dies_per_chip=4, planes_per_die=8, blocks_per_plane=96,
                    pages_per_block=16, over_provisioning=0.3))
    model = Placement(ftl)
    U, ppb = ftl.U, ftl.ppb
    rng = np.random.default_rng(3)
    span = 40 * U * ppb  # well inside the device: no collection
    longs = 0
    for k in range(60):
        if k % 5 == 4:
            n = int(rng.integers(U * ppb, 2 * U * ppb))
            lo = int(rng.integers(0, span - n))
            got, jobs = ftl.write_range(lo, lo + n)
            want = model.write(list(range(lo, lo + n)), fits_first=False)
            longs += 1
        else:
            lpns = np.unique(rng.integers(0, span, int(rng.choice([3, 50, 400, 2000]))))
            got, jobs = ftl._write_pages(lpns)
            want = model.write(lpns.tolist(), fits_first=True)
        assert got.tolist() == want and not jobs, k
        model.agrees(ftl)
    assert longs == 12 and ftl.gc_count == 0
    ftl.check()


def test_relocation_fills_the_gc_block_and_opens_the_next() -> None:
    """GC relocation (``program_gc``) of more pages than the GC active block has room
    for: they go at its write pointer in order, the block closes full with the stamp
    of its last page, and the rest go from the first page of the plane's next free
    block, which stays the GC active block."""
    ftl = FTL(small(channels=1, dies_per_chip=1, planes_per_die=2, blocks_per_plane=32,
                    pages_per_block=16, over_provisioning=0.3))
    b = ftl.blocks
    plane = 1
    first = ftl.programmer.program_gc(plane, np.arange(0, 20, 2, dtype=np.int64))
    blk = plane * ftl.bpp  # the plane's first free block
    assert first.tolist() == [blk * 16 + j for j in range(10)]
    more = ftl.programmer.program_gc(plane, np.arange(40, 60, 2, dtype=np.int64))
    assert more.tolist() == ([blk * 16 + j for j in range(10, 16)]
                             + [(blk + 1) * 16 + j for j in range(4)])
    assert ftl.state[blk] == FULL and ftl.stamp[blk] == 16 and ftl.valid[blk] == 16
    assert (int(b.gc_blk[plane]), int(b.gc_wp[plane])) == (blk + 1, 4)
    assert ftl.stamp[blk + 1] == 20 == b.seq and b.host_blk.tolist() == [-1, -1]
    assert ftl.p2l(blk + 1)[:5].tolist() == [52, 54, 56, 58, -1]
