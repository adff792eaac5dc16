"""The program path: logical pages programmed at a plane's write frontier, for host
writes and for GC relocation (after MQSim's ``allocate_page_in_plane_for_user_write``
and ``Allocate_new_page_for_gc`` of ``Address_Mapping_Unit_Page_Level``, which take the
page at ``Flash_Block_Manager``'s write frontier and record it in the maps).

Per plane, host writes and GC writes each have an active block (the block manager's
``host_blk``/``gc_blk`` and write pointers). A page goes at the write pointer: its
logical page into the block's P2L row, its ppn into the L2P map, and the block's valid
count and write stamp advance. A full active block is closed; the next page opens a free
block, and a host write first collects synchronously while the plane is at the hard GC
threshold.

The placement is one compiled kernel (``kernels.place``), which stops where a block
must be opened or a P2L row made; ``Programmer.place`` is the one loop that does that
(collecting first where it must), sets the L2P map of the pages placed so far (a block
the write fills may be the collection's victim) and lets the kernel go on. Host writes
of one page, a batch of them and a run that needs no collection are placed by
``kernels.write_open`` and ``write_run``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from flash.ftl.blocks import BlockManager
from flash.ftl.gc import GcJob
from flash.ftl.kernels import (
    C_PHASE,
    C_PIECES,
    C_WHAT,
    FINISHED,
    FITS_PLACED,
    MAKE_ROW,
    NOT_ERASED,
    OPEN_BLOCK,
    Opened,
    place,
)
from flash.ftl.mapping import I64, SEG, AddressMap, SparseL2P
from tmhw.sim.jit import Directs

#: ``place``'s source of logical pages where they are the indices plus a base
_BY_INDEX = np.empty(0, dtype=np.int64)
#: ``kernels.place`` past its dispatcher (``tmhw.sim.jit.Directs``, by the maps' dtypes): a
#: collection places each block it moves
_PLACE = Directs(place)


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
        self._place = _PLACE.get(amap.dtypes)
        #: ``place``'s blocks opened in advance: none
        self._none_ahead = (np.empty(0, dtype=np.int64), np.zeros(amap.U, dtype=np.int64),
                            np.zeros(amap.U, dtype=np.int64))
        #: ``program``'s group (plane, first index, pages), for host and GC programs
        self._one_group = {gc: (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
                                np.zeros(1, dtype=np.int64)) for gc in (False, True)}

    def program_gc(self, plane: int, lpns: I64) -> I64:
        """Program relocated pages into the GC active block of ``plane``."""
        return self.program(plane, lpns, True, [])

    def program(self, plane: int, lpns: I64, gc: bool, jobs: list[GcJob]) -> I64:
        """Program ``lpns`` (already unmapped) into ``plane``; return their ppns."""
        n = int(lpns.size)
        # one group: the plane, from index 0, n pages (arrays kept per kind: a host
        # program's ``place`` may collect, and the collection's programs place inside it)
        planes, first, counts = self._one_group[gc]
        planes[0] = plane
        counts[0] = n
        return self.place((lpns, 0), n, (planes, first, counts, 1), gc, jobs, False)

    def program_planes(self, planes: I64, lpns: I64, jobs: list[GcJob]) -> I64:
        """Host-program ``lpns`` (already unmapped), grouped by plane (sorted, or each
        plane once): the planes whose active block has room for their pages at once,
        then the others in turn (``place``)."""
        n = int(lpns.size)
        edge = np.empty(n, dtype=bool)
        edge[0] = True
        np.not_equal(planes[1:], planes[:-1], out=edge[1:])
        first = np.flatnonzero(edge)
        counts = np.diff(np.append(first, n))
        return self.place((lpns, 0), n, (planes[first], first, counts, 1), False, jobs, True)

    def place(self, src: tuple[I64, int], n: int, groups: tuple[I64, I64, I64, int],
              gc: bool, jobs: list[GcJob], fits_first: bool,
              ahead: Opened | None = None) -> I64:
        """``kernels.place`` of ``groups`` (host or GC, the groups that fit first with
        ``fits_first``) to the end: where it stops, the block the plane must open is
        opened (a host write collecting first while the plane is at the hard threshold,
        its jobs appended to ``jobs``) or the P2L row made, and it goes on. Where the
        pages are given (``src`` (lpns, 0)), the L2P map of those placed is set before
        anything may collect, a piece at a time (the groups that fit at once), as
        their pages are found valid there; with none (``src`` (empty, base): page
        ``base + i`` at index ``i``), the caller sets it. The ppns of the ``n`` pages,
        by index. ``ahead``: blocks opened in advance, which planes take before they
        stop to open one (``kernels.Opened``)."""
        b, m = self.blocks, self.amap
        lpns = src[0]
        mapped = lpns.size > 0
        n_groups = int(groups[0].size)
        out = np.empty(n, dtype=np.int64)
        cursor = np.zeros(5, dtype=np.int64)
        cursor[C_PHASE] = 0 if fits_first else 1
        fit = np.zeros(n_groups, dtype=np.bool_)
        seq = np.empty(1, dtype=np.int64)
        act_blk, act_wp = (b.gc_blk, b.gc_wp) if gc else (b.host_blk, b.host_wp)
        l2p = m.l2p
        if ahead is None:
            ahead = self._none_ahead
        # a piece ends a group or fills a block: the planes' active blocks, then those
        # opened in advance, before the kernel stops to open one
        pieces = np.empty(2 * (2 * n_groups + 1 + int(ahead[0].size)), dtype=np.int64)
        io = (cursor, fit, pieces, ahead)
        while True:  # (a collection and the P2L rows rebind what the kernel takes)
            seq[0] = b.seq
            got = self._place.call(src, groups, (act_blk, act_wp, m.row1_of, m.pool,
                                                 b.valid, b.stamp, b.state), seq, out, io)
            b.seq = seq.item(0)
            if mapped:
                if got == FITS_PLACED and fit.any():
                    sel = np.repeat(fit, groups[2])
                    l2p.set(lpns[sel], out[sel])
                if cursor.item(C_PIECES):
                    l2p.set_pieces(lpns, out,
                                   pieces[:2 * cursor.item(C_PIECES)].reshape(-1, 2))
            cursor[C_PIECES] = 0
            if got == FINISHED:
                return out
            what = cursor.item(C_WHAT)
            if got == OPEN_BLOCK:
                if not gc:
                    self.make_room(what, jobs)
                blk = b.take_free(what)
                act_blk[what] = blk
                act_wp[what] = 0
                m.row(blk)
            elif got == MAKE_ROW:
                m.row(what)
            elif got == NOT_ERASED:
                raise AssertionError(f"FTL: program to a non-erased page in block {what}")

    def program_long(self, lo: int, hi: int, unmap: Callable[[], object]) -> I64 | None:
        """Host-program the run [lo, hi) of at least a block per plane, where no plane
        must collect on the way: the end state of ``unmap`` (the run's old copies
        invalidated, called once the run is known to take this path) then
        ``program_planes`` on the run grouped by plane (each plane's pages in turn at
        its write pointer, opening free blocks in plane order), its pages given as
        progressions (``place``, no array of them), the blocks it fills opened first
        (with their P2L rows, at once) and its L2P map set at the end
        (``SparseL2P.set_each``). Returns the ppns in logical order, or None (nothing
        done, ``unmap`` not called) when a plane would have to collect (at the hard
        threshold before one of its block openings), or when the plane-by-plane path
        would take a run's page counts per L2P segment otherwise than ``set_each``
        takes them (fewer than 66 planes: a block's pages fill a segment's dict by
        ``DENSE_AT // 4`` at once)."""
        b = self.blocks
        U, ppb = self.amap.U, self.ppb
        n = hi - lo
        if n < U * ppb or -(-SEG // U) >= SparseL2P.DENSE_AT // 4:
            return None
        sp = self.amap.stripe_plane
        s = np.arange(U, dtype=np.int64)
        first_s = lo + (s - lo) % U  # the run's first page at each stripe position
        cnt = np.empty(U, dtype=np.int64)
        cnt[sp] = (hi - first_s + U - 1) // U  # pages per plane (each >= ppb)
        first = np.empty(U, dtype=np.int64)
        first[sp] = first_s - lo  # each plane's first page, by index
        act = b.host_blk >= 0
        a = np.where(act, np.minimum(ppb - b.host_wp, cnt), 0)  # into the active block
        nnew = -(-(cnt - a) // ppb)
        fc = np.array(b.free_count, dtype=np.int64)
        # make_room collects before a block opening while free_count <= hard_blocks
        if bool((fc - nnew < b.hard_blocks).any()):
            return None
        unmap()
        take = b.take_free
        opened = np.array([take(p) for p, k in enumerate(nnew.tolist()) for _ in range(k)],
                          dtype=np.int64)
        end = np.cumsum(nnew)
        m = self.amap
        active = b.host_blk[act]
        for blk in active[m.row1_of[active] == 0].tolist():
            m.row(blk)
        m.new_rows(opened)
        out = self.place((_BY_INDEX, lo), n, (s, first, cnt, U), False, [], False,
                         (opened, end - nnew, end))
        self.amap.l2p.set_each(lo, out)
        return out
