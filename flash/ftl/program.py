"""The program path: logical pages programmed at a plane's write frontier, for host
writes and for GC relocation (after MQSim's ``allocate_page_in_plane_for_user_write``
and ``Allocate_new_page_for_gc`` of ``Address_Mapping_Unit_Page_Level``, which take the
page at ``Flash_Block_Manager``'s write frontier and record it in the maps).

Per plane, host writes and GC writes each have an active block (the block manager's
``host_blk``/``gc_blk`` and write pointers). A page goes at the write pointer: its
logical page into the block's P2L row, its ppn into the L2P map, and the block's valid
count and write stamp advance. A full active block is closed; the next page opens a free
block, and a host write first collects synchronously while the plane is at the hard GC
threshold. (``program_long`` is the same path for a run of at least a block per plane,
in vectorised arithmetic over the run's pages; one host page, a batch of them and a run
that needs no collection are placed by ``flash.ftl.kernels``.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from flash.ftl.blocks import FULL, BlockManager
from flash.ftl.gc import GcJob
from flash.ftl.kernels import place_long
from flash.ftl.mapping import I64, SEG, AddressMap, SparseL2P


class Programmer:
    """Programs unmapped logical pages into their planes.

    Collaborators: the ``BlockManager`` (active blocks, write pointers, free blocks),
    the ``AddressMap`` (P2L rows, L2P) and ``make_room``, the garbage collector's forced
    collection for a plane at the hard threshold (it appends its jobs to the list)."""

    def __init__(self, blocks: BlockManager, amap: AddressMap,
                 make_room: Callable[[int, list[GcJob]], None]) -> None:
        self.blocks = blocks
        self.amap = amap
        self.make_room = make_room
        self.ppb = amap.ppb

    def program_gc(self, plane: int, lpns: I64) -> I64:
        """Program relocated pages into the GC active block of ``plane``."""
        return self.program(plane, lpns, True, [])

    def program(self, plane: int, lpns: I64, gc: bool, jobs: list[GcJob]) -> I64:
        """Program ``lpns`` (already unmapped) into ``plane``; return their ppns."""
        n = int(lpns.size)
        out = np.empty(n, dtype=np.int64)
        ppb = self.ppb
        b = self.blocks
        i = 0
        while i < n:
            if gc:
                blk, wp = b.gc_blk[plane], b.gc_wp[plane]
            else:
                blk, wp = int(b.host_blk[plane]), int(b.host_wp[plane])
            if blk < 0:
                if not gc:
                    self.make_room(plane, jobs)
                blk, wp = b.take_free(plane), 0
            k = min(ppb - wp, n - i)
            row = self.amap.p2l_row(blk)
            if (row[wp:wp + k] != -1).any():
                raise AssertionError(f"FTL: program to a non-erased page in block {blk}")
            row[wp:wp + k] = lpns[i:i + k]
            out[i:i + k] = np.arange(blk * ppb + wp, blk * ppb + wp + k, dtype=np.int64)
            # mapped now: a block this run fills may be the next victim of make_room
            self.amap.l2p.set(lpns[i:i + k], out[i:i + k])
            b.valid[blk] += k
            b.seq += k
            b.stamp[blk] = b.seq
            wp += k
            i += k
            if wp == ppb:
                b.state[blk] = FULL
                blk, wp = -1, 0
            if gc:
                b.gc_blk[plane], b.gc_wp[plane] = blk, wp
            else:
                b.host_blk[plane], b.host_wp[plane] = blk, wp
        return out

    def program_planes(self, planes: I64, lpns: I64, jobs: list[GcJob]) -> I64:
        """Host-program ``lpns`` (already unmapped), grouped by plane (sorted, or each
        plane once). Planes whose active block has room go in one vectorised step; the
        rest page run by page run."""
        n = int(lpns.size)
        ppb = self.ppb
        b = self.blocks
        m = self.amap
        out = np.empty(n, dtype=np.int64)
        edge = np.empty(n, dtype=bool)
        edge[0] = True
        np.not_equal(planes[1:], planes[:-1], out=edge[1:])
        first = np.flatnonzero(edge)
        uniq = planes[first]
        counts = np.diff(np.append(first, n))
        hb = b.host_blk[uniq]
        hw = b.host_wp[uniq]
        fits = (hb >= 0) & (hw + counts <= ppb)
        if fits.any():
            fb, fw, fc = hb[fits], hw[fits], counts[fits]
            for blk in fb[m.row1_of[fb] == 0].tolist():
                m.row(blk)
            if uniq.size == n:  # one page per plane
                sel, blk_p, wp_p = fits, fb, fw
            else:
                sel = np.repeat(fits, counts)
                rank = np.arange(n, dtype=np.int64) - np.repeat(first, counts)
                blk_p = np.repeat(fb, fc)
                wp_p = np.repeat(fw, fc) + rank[sel]
            rows = m.row1_of[blk_p] - 1
            if (m.pool[rows, wp_p] != -1).any():
                raise AssertionError("FTL: program to a non-erased page")
            m.pool[rows, wp_p] = lpns[sel]
            ppns = blk_p * ppb + wp_p
            out[sel] = ppns
            b.valid[fb] += fc.astype(np.int32)
            b.seq += int(fc.sum())
            b.stamp[fb] = b.seq
            new_wp = fw + fc
            full = new_wp == ppb
            b.state[fb[full]] = FULL
            b.host_wp[uniq[fits]] = np.where(full, 0, new_wp)
            b.host_blk[uniq[fits]] = np.where(full, -1, fb)
            m.l2p.set(lpns[sel], ppns)
        for g in np.flatnonzero(~fits).tolist():
            lo = int(first[g])
            hi = lo + int(counts[g])
            out[lo:hi] = self.program(int(uniq[g]), lpns[lo:hi], False, jobs)
        return out

    def program_long(self, lo: int, hi: int, unmap: Callable[[], object]) -> I64 | None:
        """Host-program the run [lo, hi) of at least a block per plane, where no plane
        must collect on the way: the end state of ``unmap`` (the run's old copies
        invalidated, called once the run is known to take this path) then
        ``program_planes`` on the run grouped by plane (each plane's pages in turn at
        its write pointer, opening free blocks in plane order; its blocks' valid
        counts, stamps in that order, states, P2L rows and the L2P map), its pages
        placed by one compiled loop (``place_long``). Returns the ppns in logical order,
        or None (nothing done, ``unmap`` not called) when a plane would have to collect
        (at the hard threshold before one of its block openings), or when the
        plane-by-plane path would take a run's page counts per L2P segment otherwise
        than ``SparseL2P.set_each`` takes them (fewer than 66 planes: a block's pages
        fill a segment's dict by ``DENSE_AT // 4`` at once)."""
        b = self.blocks
        m = self.amap
        U, ppb = m.U, self.ppb
        n = hi - lo
        if n < U * ppb or -(-SEG // U) >= SparseL2P.DENSE_AT // 4:
            return None
        sp = m.stripe_plane
        s = np.arange(U, dtype=np.int64)
        first_s = lo + (s - lo) % U  # the run's first page at each stripe position
        cnt = np.empty(U, dtype=np.int64)
        cnt[sp] = (hi - first_s + U - 1) // U  # pages per plane (each >= ppb)
        hb = b.host_blk.copy()
        hw = b.host_wp.copy()
        act = hb >= 0
        a = np.where(act, np.minimum(ppb - hw, cnt), 0)  # pages into the active block
        nnew = -(-(cnt - a) // ppb)
        fc = np.array(b.free_count, dtype=np.int64)
        # make_room collects before a block opening while free_count <= hard_blocks
        if bool((fc - nnew < b.hard_blocks).any()):
            return None
        unmap()
        # the pieces, plane by plane: the active block's, then each opened block's
        blks: list[int] = []
        sizes: list[int] = []
        take = b.take_free
        for p, left, k0, new in zip(range(U), cnt.tolist(), a.tolist(), nnew.tolist(),
                                    strict=True):
            if k0:
                blks.append(int(hb[p]))
                sizes.append(k0)
            left -= k0
            for _ in range(new):
                blks.append(take(p))
                sizes.append(min(ppb, left))
                left -= ppb
        blk_a = np.array(blks, dtype=np.int64)
        size_a = np.array(sizes, dtype=np.int64)
        pstart = np.zeros(U, dtype=np.int64)  # each plane's first piece
        np.cumsum((act.astype(np.int64) + nnew)[:-1], out=pstart[1:])
        start_wp = np.zeros(blk_a.size, dtype=np.int64)
        start_wp[pstart[act]] = hw[act]
        # rows: the active blocks' (made by ``row`` where they have none), then the
        # opened blocks' at once
        for blk in hb[act][m.row1_of[hb[act]] == 0].tolist():
            m.row(blk)
        opened = np.ones(blk_a.size, dtype=bool)
        opened[pstart[act]] = False
        m.new_rows(blk_a[opened])
        row_a = m.row1_of[blk_a].astype(np.int64) - 1
        out = np.empty(n, dtype=np.int64)
        # per stripe position: its plane's first piece, active pages, write pointer
        if place_long(lo, hi, U, ppb,
                      (first_s, a[sp], pstart[sp], act[sp].astype(np.int64), hw[sp]),
                      (row_a, blk_a), m.pool, out) >= 0:
            raise AssertionError("FTL: program to a non-erased page")
        b.valid[blk_a] += size_a.astype(np.int32)
        b.stamp[blk_a] = b.seq + np.cumsum(size_a)
        b.seq += n
        end_wp = start_wp + size_a
        b.state[blk_a[end_wp == ppb]] = FULL
        last = pstart + act.astype(np.int64) + nnew - 1  # each plane's last piece
        full = end_wp[last] == ppb
        b.host_blk[:] = np.where(full, -1, blk_a[last])
        b.host_wp[:] = np.where(full, 0, end_wp[last])
        m.l2p.set_each(lo, out)
        return out
