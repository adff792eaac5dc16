"""Address mapping: where each logical page lives and which logical page each physical
page holds (after MQSim's ``Address_Mapping_Unit_Page_Level``).

- Logical-to-physical (L2P) and physical-to-logical (P2L) maps. A physical page is valid
  exactly when ``L2P[P2L[ppn]] == ppn``, so no separate validity bitmap is kept.
- Static plane allocation: logical page ``lpn`` lives in the plane at stripe position
  ``lpn % planes``, where stripe positions enumerate planes in ``allocation_order``
  (``CWDP``: channel fastest, then way, die, plane), so consecutive writes stripe over
  channels, dies and planes.
- The preconditioned state is a closed form: the first ``n_pre`` logical pages were
  written sequentially, so page ``j`` of a plane holds that plane's ``j``-th logical
  page, until a part of it is modified.

Memory grows with the pages a run touches, not with the device: scattered logical pages
written during the run go into a dict (about 100 bytes each); a 4096-page L2P segment
that gets dense becomes a numpy array (4 bytes a page); P2L rows exist only for blocks
written during the run (4 bytes a page), in a pool whose rows erased blocks give back.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from flash.ftl.blocks import ACTIVE, FULL, BlockManager
from flash.intmap import LIVE, IntMap, im_get, im_get_many, im_pop, im_put
from tmhw.sim.jit import Directs, njit, njit_noref

SEG_BITS = 12
SEG = 1 << SEG_BITS
I64 = npt.NDArray[np.int64]


def _ascending(lpns: I64) -> bool:
    """Whether ``lpns`` are consecutive in order (a run), not a permutation of one."""
    return lpns.size < 2 or bool((np.diff(lpns) == 1).all())


def stripe_planes(cfg: FlashConfig) -> I64:
    """Canonical plane id at each stripe position, for ``cfg.allocation_order``.

    Canonical ids nest channel > chip > die > plane:
    ``((ch * chips + chip) * dies + die) * planes + plane``."""
    radix = {"C": cfg.channels, "W": cfg.chips_per_channel, "D": cfg.dies_per_chip,
             "P": cfg.planes_per_die}
    digits: dict[str, I64] = {}
    s = np.arange(cfg.planes, dtype=np.int64)
    for letter in cfg.allocation_order:
        digits[letter] = s % radix[letter]
        s = s // radix[letter]
    return (((digits["C"] * cfg.chips_per_channel + digits["W"]) * cfg.dies_per_chip
             + digits["D"]) * cfg.planes_per_die + digits["P"])


#: the L2P as its kernels take it: the dict's table and meta, the per-segment dict
#: counts, each segment's row in the pool (-1: not dense) and the pool's rows
L2pArrays = tuple[I64, I64, npt.NDArray[np.int32], I64, npt.NDArray[np.signedinteger]]

#: a sparse segment given at least this many pages in one ``set`` turns dense at once
#: (``l2p_set_pieces``); a run longer than it makes every segment it touches dense
SET_AT_ONCE = (SEG // 16) // 4


@njit_noref
def l2p_at(table: I64, meta: I64, seg_row: I64, rows: npt.NDArray[np.signedinteger],
           pre: tuple[I64, int, int], lpn: int, probe: bool = True) -> int:
    """The physical page of ``lpn`` (-1: unmapped): from its dense segment's row, or else
    its entry in the dict (``table``, ``meta``; not looked for without ``probe``: the
    segment has none), or else the preconditioned closed form (page ``lpn // U`` of its
    plane, below ``n_pre``; ``pre``: each stripe position's plane's first ppn, the stripe
    and ``n_pre``). The one lookup rule of the L2P's kernels (``l2p_get``,
    ``flash.ftl.kernels.l2p_of``)."""
    row = seg_row[lpn >> SEG_BITS]
    if row >= 0:
        return int(rows[row, lpn & (SEG - 1)])
    if probe:
        v = im_get(table, meta, lpn, -2)
        if v != -2:
            return int(v)
    plane_base, U, n_pre = pre
    return int(plane_base[lpn % U] + lpn // U) if lpn < n_pre else -1


@njit_noref
def l2p_read_run(l2p: L2pArrays, pre: tuple[I64, int, int], lo: int, out: I64) -> int:
    """Where a read finds each of the logical pages [lo, lo + out.size): its physical
    page (``l2p_at``), or where one never written sits in the preconditioned layout
    (page ``lpn // U`` of its plane, written or not: ``AddressMap.static_ppn``), into
    ``out``; how many were unmapped."""
    table, meta, per_seg, seg_row, rows = l2p
    plane_base, U = pre[0], pre[1]
    unmapped = 0
    for j in range(out.size):
        lpn = lo + j
        v = l2p_at(table, meta, seg_row, rows, pre, lpn, per_seg[lpn >> SEG_BITS] > 0)
        if v < 0:
            unmapped += 1
            v = plane_base[lpn % U] + lpn // U
        out[j] = v
    return unmapped


@njit
def l2p_get(l2p: L2pArrays,
            pre: tuple[I64, int, int], lpns: I64, out: I64) -> None:
    """``SparseL2P.get`` compiled: ``out[j]``, the physical page of ``lpns[j]``
    (``l2p_at``). ``l2p``: the dict's table and meta, the per-segment dict counts, each
    segment's row (-1: not dense) and the rows; ``pre``: each stripe position's plane's
    first ppn, the stripe (planes) and ``n_pre``."""
    table, meta, per_seg, seg_row, rows = l2p
    for j in range(lpns.size):
        lpn = lpns[j]
        out[j] = l2p_at(table, meta, seg_row, rows, pre, lpn, per_seg[lpn >> SEG_BITS] > 0)


@njit_noref
def valid_of(p2l: I64, ppn0: int, l2p: L2pArrays, pre: tuple[I64, int, int], src: I64,
             lpns: I64) -> int:
    """The valid pages of a block whose first page is ``ppn0`` and whose pages hold the
    logical pages ``p2l`` (-1: none): those the L2P maps to them (``l2p_at``), in page
    order, their ppns into ``src`` and logical pages into ``lpns``; how many."""
    table, meta, per_seg, seg_row, rows = l2p
    k = 0
    for i in range(p2l.size):
        lpn = p2l[i]
        if lpn >= 0 and l2p_at(table, meta, seg_row, rows, pre, lpn,
                               per_seg[lpn >> SEG_BITS] > 0) == ppn0 + i:
            src[k] = ppn0 + i
            lpns[k] = lpn
            k += 1
    return k


@njit
def _densify_seg(l2p: L2pArrays,
                 pre: tuple[I64, int, int], n_lpn: int, dense: I64, si: int,
                 whole: bool = False) -> int:
    """``SparseL2P._densify`` of sparse segment ``si`` compiled: the next row of the
    pool (``dense[0]``, the segments made dense so far, advanced) filled from the
    closed form (-1 past ``n_pre`` and past the last logical page) and the dict's
    entries of the segment, which leave the dict. With ``whole`` the caller sets every
    page of the segment next: only the row past the last logical page is filled, and
    the dict's entries leave it unread. Returns the row."""
    table, meta, per_seg, seg_row, rows = l2p
    plane_base, U, n_pre = pre
    row = dense[0]
    dense[0] = row + 1
    lo = si << SEG_BITS
    hi = min(lo + SEG, n_lpn)
    for lpn in range(hi if whole else lo, lo + SEG):
        rows[row, lpn - lo] = (plane_base[lpn % U] + lpn // U
                               if lpn < n_pre and lpn < hi else -1)
    if per_seg[si]:
        for lpn in range(lo, hi):
            v = im_pop(table, meta, lpn, -2)
            if v != -2 and not whole:
                rows[row, lpn - lo] = v
        per_seg[si] = 0
    seg_row[si] = row
    return int(row)


@njit
def l2p_set_pieces(l2p: L2pArrays,
                   pre: tuple[I64, int, int], n_lpn: int, dense: I64,
                   lpns: I64, vals: I64, pieces: I64, made: I64) -> int:
    """``SparseL2P.set`` of each piece ``(a, k)`` of ``pieces`` (``lpns[a:a + k]`` to
    ``vals[a:a + k]``) in turn, compiled. A piece that is a run of more than
    ``SET_AT_ONCE`` pages makes every segment it touches dense and writes its rows.
    Any other piece goes segment by segment, in ascending order, each segment taking
    its pages in the piece's order: a dense segment writes
    them into its row; a sparse one given fewer than ``SET_AT_ONCE`` takes them into
    the dict (room reserved) and turns dense once the dict holds ``DENSE_AT`` of its
    pages; given more, it turns dense first. The segments made dense go into ``made``
    in turn; returns how many. Where the dict may lack room for the pages it could
    take (those of pieces that are not runs, in segments not dense), nothing is done
    and the result is -1 - that count: the caller reserves it and calls again."""
    table, meta, per_seg, seg_row, rows = l2p
    # per piece: -1 a run, else its pages in segments not dense
    sparse = np.empty(pieces.shape[0], dtype=np.int64)
    may_put = 0
    for p in range(pieces.shape[0]):
        a = pieces[p, 0]
        k = pieces[p, 1]
        run = k > SET_AT_ONCE and lpns[a + k - 1] - lpns[a] == k - 1
        if run:
            for j in range(a + 1, a + k):
                if lpns[j] != lpns[j - 1] + 1:
                    run = False
                    break
        sparse[p] = -1
        if not run:
            count = 0
            for j in range(a, a + k):
                if seg_row[lpns[j] >> SEG_BITS] < 0:
                    count += 1
            sparse[p] = count
            may_put += count
    if 2 * (meta[LIVE] + may_put) > table.shape[0]:
        return -1 - may_put
    nmade = 0
    for p in range(pieces.shape[0]):
        a = pieces[p, 0]
        k = pieces[p, 1]
        if k == 0:
            continue
        if sparse[p] == 0:  # every page in a dense segment
            for j in range(a, a + k):
                lpn = lpns[j]
                rows[seg_row[lpn >> SEG_BITS], lpn & (SEG - 1)] = vals[j]
            continue
        if sparse[p] < 0:
            for j in range(a, a + k):
                lpn = lpns[j]
                si = lpn >> SEG_BITS
                row = seg_row[si]
                if row < 0:
                    row = _densify_seg(l2p, pre, n_lpn, dense, si)
                    made[nmade] = si
                    nmade += 1
                rows[row, lpn & (SEG - 1)] = vals[j]
            continue
        ordered = True
        for j in range(a + 1, a + k):
            if lpns[j] >> SEG_BITS < lpns[j - 1] >> SEG_BITS:
                ordered = False
                break
        if ordered:
            order = np.arange(a, a + k)
        else:
            order = np.argsort(lpns[a:a + k] >> SEG_BITS, kind="mergesort") + a
        i = 0
        while i < k:
            si = lpns[order[i]] >> SEG_BITS
            e = i + 1
            while e < k and lpns[order[e]] >> SEG_BITS == si:
                e += 1
            row = seg_row[si]
            if row < 0 and e - i < SET_AT_ONCE:
                added = 0
                for t in range(i, e):
                    added += im_put(table, meta, lpns[order[t]], vals[order[t]])
                if added:
                    count = per_seg[si] + added
                    if count >= SEG // 16:
                        _densify_seg(l2p, pre, n_lpn, dense, si)
                        made[nmade] = si
                        nmade += 1
                    else:
                        per_seg[si] = count
            else:
                if row < 0:
                    row = _densify_seg(l2p, pre, n_lpn, dense, si)
                    made[nmade] = si
                    nmade += 1
                for t in range(i, e):
                    lpn = lpns[order[t]]
                    rows[row, lpn & (SEG - 1)] = vals[order[t]]
            i = e
    return nmade


class SparseL2P:
    """Logical-to-physical map: a closed form for the preconditioned range, an ``IntMap`` of
    overrides where writes are sparse, and dense 4096-entry numpy segments where they
    are not (a segment is materialised once it holds 1/16 of its pages in the dict,
    the point where the array becomes the smaller of the two).

    The dense segments are rows of one array (``pool``; ``seg_row[si]`` is segment
    ``si``'s row, -1 while it is not dense), so pages spread over many dense segments,
    as one plane's pages are, are set and got in one numpy step. ``segs[si]`` keeps a
    view of that row (None while sparse): the scalar and run paths reach a segment by a
    list index, with no numpy call per segment. The pool has a row for every segment
    from the start, allocated and never filled: the operating system gives a row
    memory when it is first written, so the pool costs what its dense rows take, and
    it never has to be grown and copied (growing it by half, a training run's L2P
    copied itself 17 times, 0.35 s of a GPT-3 run).

    ``set`` and ``set_pieces`` (a placement's pieces, a collection's relocations, the
    old copies unmapped) and ``get`` of scattered pages are one compiled call each
    (``l2p_set_pieces``, ``l2p_get``), not numpy steps per segment: the aging of the
    validation's PM1743 at 128 blocks a plane (``FTL.age``: every preconditioned page
    rewritten once at random, through its collections) 17.3 -> 9.4 s."""

    DENSE_AT = SEG // 16

    def __init__(self, amap: AddressMap) -> None:
        self.amap = amap
        self.segs: list[npt.NDArray[np.signedinteger] | None] = (
            [None] * ((amap.n_lpn + SEG - 1) // SEG))
        #: the overrides of pages of sparse segments (an ``IntMap``: a batch of
        #: one-page writes updates it in its compiled call)
        self.sparse = IntMap()
        self.sparse_per_seg = np.zeros(len(self.segs), dtype=np.int32)
        #: the segments made dense so far (an array: the kernels advance it)
        self._dense = np.zeros(1, dtype=np.int64)
        #: ``set``'s one piece, and the kernel's list of the segments it made dense
        self._pieces1 = np.zeros((1, 2), dtype=np.int64)
        self._made = np.empty(64, dtype=np.int64)
        self._set_pieces = _SET_PIECES.get(amap.dtypes)
        #: -1s, read by ``set_pieces`` where pages are unmapped (never written)
        self._unmapped = np.full(64, -1, dtype=np.int64)
        self.seg_row = np.full(len(self.segs), -1, dtype=np.int64)
        self.pool = np.empty((len(self.segs), SEG), dtype=amap.ppn_dtype)

    @property
    def dense_segs(self) -> int:
        """Segments made dense so far (each has the next row of the pool)."""
        return self._dense.item(0)

    def any_written(self) -> bool:
        return bool(self.sparse) or self.dense_segs > 0

    def get1(self, lpn: int) -> int:
        seg = self.segs[lpn >> SEG_BITS]
        if seg is not None:
            return int(seg[lpn & (SEG - 1)])
        v = self.sparse.get(lpn)
        return self.amap.implicit_l2p1(lpn) if v is None else v

    def get(self, lpns: I64) -> I64:
        n = int(lpns.size)
        if n and int(lpns[-1]) - int(lpns[0]) == n - 1 and _ascending(lpns):
            return self.get_run(int(lpns[0]), n)
        out = np.empty(n, dtype=np.int64)
        l2p_get(self._state(), self._pre(), np.ascontiguousarray(lpns, dtype=np.int64), out)
        return out

    def _state(self) -> L2pArrays:
        """The map as the kernels take it: the dict's table and meta, the per-segment
        dict counts, each segment's row and the rows."""
        sp = self.sparse
        return sp.table, sp.meta, self.sparse_per_seg, self.seg_row, self.pool

    def kernel_state(self) -> tuple[L2pArrays, tuple[I64, int, int]]:
        """The map and its closed form as the lookup kernels take them (``l2p_get``;
        new arrays after any change)."""
        return self._state(), self._pre()

    def _pre(self) -> tuple[I64, int, int]:
        """The closed form as the kernels take it: each stripe position's plane's first
        ppn, the stripe and the preconditioned pages."""
        amap = self.amap
        return amap.plane_base, amap.U, amap.n_pre

    def read_run(self, lo: int, out: I64) -> int:
        """``l2p_read_run`` of the logical pages [lo, lo + out.size): each one's physical
        page, or its place in the preconditioned layout where unmapped, into ``out``;
        how many were unmapped."""
        amap = self.amap
        sp = self.sparse
        return int(l2p_read_run((sp.table, sp.meta, self.sparse_per_seg, self.seg_row,
                                 self.pool), (amap.plane_base, amap.U, amap.n_pre), lo, out))

    def get_run(self, lo: int, n: int) -> I64:
        """``get`` of the contiguous run [lo, lo + n), by segment slices."""
        out = np.empty(n, dtype=np.int64)
        hi = lo + n
        a = lo
        while a < hi:
            si = a >> SEG_BITS
            b = min(hi, (si + 1) << SEG_BITS)
            seg = self.segs[si]
            if seg is not None:
                out[a - lo:b - lo] = seg[a - (si << SEG_BITS):b - (si << SEG_BITS)]
            else:
                part = out[a - lo:b - lo]
                part[:] = self.amap.implicit_run(a, b)
                if self.sparse_per_seg[si]:
                    # the segment's dict entries among them
                    got = np.empty(b - a, dtype=np.int64)
                    im_get_many(self.sparse.table, self.sparse.meta,
                                np.arange(a, b, dtype=np.int64), -2, got)
                    held = got != -2
                    part[held] = got[held]
            a = b
        return out

    def held(self, lpns: list[int]) -> I64:
        """The dict's entry of each of ``lpns`` (-2: none), for ``kernels.l2p_of``."""
        out = np.full(len(lpns), -2, dtype=np.int64)
        if self.sparse:
            im_get_many(self.sparse.table, self.sparse.meta,
                        np.array(lpns, dtype=np.int64), -2, out)
        return out

    def arrays(self) -> tuple[I64, npt.NDArray[np.signedinteger]]:
        """What ``kernels.l2p_of`` reads: each segment's row (-1: not dense) and the
        rows (a view: use it before the pool grows)."""
        return self.seg_row, self.pool

    def densify_reached(self, lpns: I64) -> None:
        """The end of ``set1`` of each of ``lpns`` (of segments not dense) in turn, once
        they are in the dict and their dict counts ``sparse_per_seg`` raised
        (``kernels.write_open``): each segment of theirs whose dict reached
        ``DENSE_AT`` entries turns dense (taking them; ``set1`` would have turned it
        dense at that entry and put the rest in its row: the same map)."""
        segs = lpns >> SEG_BITS
        for si in np.unique(segs[self.sparse_per_seg[segs] >= self.DENSE_AT]).tolist():
            self._densify(si)

    def set1(self, lpn: int, ppn: int) -> None:
        si = lpn >> SEG_BITS
        seg = self.segs[si]
        if seg is not None:
            seg[lpn & (SEG - 1)] = ppn
            return
        if self.sparse.put(lpn, ppn):
            # a new entry: at DENSE_AT of them the segment turns dense, taking them all
            n = self.sparse_per_seg.item(si) + 1
            self.sparse_per_seg[si] = n
            if n >= self.DENSE_AT:
                self._densify(si)

    def set(self, lpns: I64, ppns: I64 | int) -> None:
        """``lpns`` (distinct) map to ``ppns`` (one value for all, or one each): a run of
        more than ``SET_AT_ONCE`` pages makes every segment it touches dense; otherwise
        each segment takes its pages at once. Compiled
        (``l2p_set_pieces``)."""
        n = int(lpns.size)
        if not n:
            return
        self._pieces1[0, 1] = n
        self.set_pieces(lpns, ppns, self._pieces1)

    def set_pieces(self, lpns: I64, ppns: I64 | int, pieces: I64) -> None:
        """``set`` of each piece ``(a, k)`` of ``pieces`` (rows: ``lpns[a:a + k]`` to
        ``ppns[a:a + k]``) in turn, in one compiled call (``l2p_set_pieces``)."""
        n = int(lpns.size)
        if isinstance(ppns, int):
            if ppns == -1:  # unmapped: a collection's victim's pages, a trim
                if self._unmapped.size < n:
                    self._unmapped = np.full(2 * n, -1, dtype=np.int64)
                vals = self._unmapped[:n]
            else:
                vals = np.full(n, ppns, dtype=np.int64)
        else:
            vals = np.ascontiguousarray(ppns, dtype=np.int64)
        made = self._made if self._made.size >= n else np.empty(2 * n, dtype=np.int64)
        self._made = made
        args = (np.ascontiguousarray(lpns, dtype=np.int64), vals,
                np.ascontiguousarray(pieces, dtype=np.int64), made)
        k = self._set_pieces.call(self._state(), self._pre(), self.amap.n_lpn, self._dense,
                                  *args)
        if k < 0:  # room in the dict for the pages it may take, then again
            self.sparse.reserve(-1 - k)
            k = self._set_pieces.call(self._state(), self._pre(), self.amap.n_lpn,
                                      self._dense, *args)
        for si in made[:k].tolist():
            self.segs[si] = self.pool[self.seg_row.item(si)]

    def set_run(self, lo: int, vals: I64) -> None:
        """``set`` of the run [lo, lo + len(vals)), longer than ``DENSE_AT // 4``: every
        segment it touches is made dense, and written by slices."""
        self._set_run(lo, int(vals.size), vals)

    def unmap_run(self, lo: int, n: int) -> None:
        """``set_run`` of the run [lo, lo + n) to -1 (unmapped), without an array of its
        values (a trim's run may be millions of pages)."""
        self._set_run(lo, n, None)

    def _set_run(self, lo: int, n: int, vals: I64 | None) -> None:
        """``set_run`` of [lo, lo + n) to ``vals`` (None: -1)."""
        hi = lo + n
        a = lo
        while a < hi:
            si = a >> SEG_BITS
            b = min(hi, (si + 1) << SEG_BITS)
            seg = self._densify(si, self._whole(si, a, b))
            seg[a - (si << SEG_BITS):b - (si << SEG_BITS)] = \
                -1 if vals is None else vals[a - lo:b - lo]
            a = b

    def _whole(self, si: int, a: int, b: int) -> bool:
        """Whether [a, b) is every page of segment ``si`` (the last may be short)."""
        return a == si << SEG_BITS and b == min((si + 1) << SEG_BITS, self.amap.n_lpn)

    def set_by_segment(self, lo: int, vals: I64) -> None:
        """``set`` of the pages [lo, lo + len(vals)) given in an order that is not
        ascending (so not as a run): each segment they touch decides by its own count,
        dense when already dense or given ``DENSE_AT // 4`` pages or more (a piece per
        segment, ``set_pieces``)."""
        n = int(vals.size)
        if not n:
            return
        first = ((lo >> SEG_BITS) + 1) << SEG_BITS   # the next segment's first page
        if lo + n <= first:   # one segment: one piece
            self._pieces1[0, 1] = n
            pieces = self._pieces1
        else:
            starts = np.arange(first - lo - SEG, n, SEG, dtype=np.int64)
            starts[0] = 0
            pieces = np.empty((starts.size, 2), dtype=np.int64)
            pieces[:, 0] = starts
            pieces[:-1, 1] = SEG
            pieces[0, 1] = first - lo
            pieces[-1, 1] = n - starts[-1]
        self.set_pieces(np.arange(lo, lo + n, dtype=np.int64), vals, pieces)

    def set_each(self, lo: int, vals: I64) -> None:
        """``set1`` of each page of [lo, lo + len(vals)) in turn, at once, segment by
        segment: a dense segment takes its slice; a sparse one turns dense if its dict
        would reach ``DENSE_AT`` entries with the new pages (all of a segment's pages
        are far more), and otherwise takes them into the dict."""
        hi = lo + int(vals.size)
        a = lo
        while a < hi:
            si = a >> SEG_BITS
            b = min(hi, (si + 1) << SEG_BITS)
            part = vals[a - lo:b - lo]
            if self.segs[si] is None and b - a < self.DENSE_AT:
                sp = self.sparse
                before = len(sp)
                sp.update(np.arange(a, b, dtype=np.int64), part)
                count = int(self.sparse_per_seg[si]) + len(sp) - before
                if count >= self.DENSE_AT:
                    self._densify(si)  # takes the segment's entries, these with them
                else:
                    self.sparse_per_seg[si] = count
            else:
                self._densify(si, self._whole(si, a, b))[a - (si << SEG_BITS):
                                                         b - (si << SEG_BITS)] = part
            a = b

    def _densify(self, si: int, whole: bool = False) -> npt.NDArray[np.signedinteger]:
        """Segment ``si`` as a dense row, made from the closed form and its dict entries
        if it is sparse; with ``whole`` the caller is about to set every page of it, so
        the row is not filled (the dict entries still leave the dict)."""
        seg = self.segs[si]
        if seg is None:
            row = _densify_seg(self._state(), self._pre(), self.amap.n_lpn, self._dense, si,
                               whole)
            seg = self.segs[si] = self.pool[row]
        return seg

    def nbytes(self) -> int:
        """numpy segments plus about 100 bytes per dict entry (key, value, slot)."""
        return sum(s.nbytes for s in self.segs if s is not None) + 100 * len(self.sparse)


class AddressMap:
    """The L2P and P2L maps of one device, and the plane each logical page belongs to.

    Collaborator: the ``BlockManager``, whose erase counts and states tell which blocks
    still hold (part of) the preconditioned closed form."""

    def __init__(self, cfg: FlashConfig, blocks: BlockManager) -> None:
        self.blocks = blocks
        self.U = cfg.planes
        self.ppb = cfg.pages_per_block
        self.bpp = cfg.blocks_per_plane
        self.n_lpn = cfg.logical_pages
        self.n_ppn = cfg.physical_pages
        self.ppn_dtype = np.int32 if self.n_ppn < 2**31 else np.int64
        self.lpn_dtype = np.int32 if self.n_lpn < 2**31 else np.int64
        #: what the kernels' types depend on: the maps' dtypes (``tmhw.sim.jit.Directs``)
        self.dtypes = (self.ppn_dtype, self.lpn_dtype)
        self._valid_of = _VALID_OF.get(self.dtypes)
        self.stripe_plane = stripe_planes(cfg)
        self.stripe_plane_list: list[int] = self.stripe_plane.tolist()
        #: ``stripe_plane`` twice over: the planes of a run of at most a stripe are a slice
        self.stripe_plane2 = np.concatenate([self.stripe_plane, self.stripe_plane])
        self.plane_stripe = np.empty(self.U, dtype=np.int64)
        self.plane_stripe[self.stripe_plane] = np.arange(self.U)
        self._plane_stripe_list: list[int] = self.plane_stripe.tolist()
        #: the first ppn of the plane at each stripe position
        self._plane_base = self.stripe_plane * (self.bpp * self.ppb)
        self._plane_base_list: list[int] = self._plane_base.tolist()
        #: ``_closed_form`` of the logical pages [0, SEG + planes): that of a run of at
        #: most a segment from ``lpn`` is the slice from ``lpn % planes``, plus
        #: ``lpn // planes``
        x = np.arange(SEG + self.U, dtype=np.int64)
        self._ramp = self._plane_base[x % self.U] + x // self.U
        # P2L rows live in a pool that grows with the blocks written during the run.
        #: per block, 1 + the index of its row in ``pool`` (0: none yet); zeros, so
        #: the array's memory is only touched where blocks get rows
        self.row1_of = np.zeros(cfg.blocks, dtype=np.int32)
        self.pool = np.empty((256, self.ppb), dtype=self.lpn_dtype)  # rebound as it grows
        #: the pool's rows in use, then how many were given back, whose indices
        #: ``free_rows`` stacks (last given, first taken; rebound as it grows): arrays,
        #: so that ``kernels.write_run`` makes the rows of the blocks it opens itself
        self.rows = np.zeros(2, dtype=np.int64)
        self.free_rows = np.empty(64, dtype=np.int64)
        self.n_pre = 0  # logical pages [0, n_pre) hold preconditioned data (closed form)
        self.l2p = SparseL2P(self)

    # -- addressing --------------------------------------------------------------------
    def plane_of_lpn(self, lpn: int) -> int:
        return self.stripe_plane_list[lpn % self.U]

    def planes_of_lpns(self, lpns: I64) -> I64:
        return self.stripe_plane[lpns % self.U]

    def page_in_block(self, ppn: I64) -> I64:
        return ppn % self.ppb

    # -- the preconditioned closed form ------------------------------------------------
    @property
    def plane_base(self) -> I64:
        """Each stripe position's plane's first ppn (``kernels.l2p_of``)."""
        return self._plane_base

    def static_ppn(self, lpns: I64) -> I64:
        """Where each of ``lpns`` sits in the preconditioned layout (whether or not it
        was preconditioned): page ``lpn // planes`` of its plane."""
        return self._closed_form(np.asarray(lpns, dtype=np.int64))

    def static_ppn1(self, lpn: int) -> int:
        """``static_ppn`` of one logical page, in scalar arithmetic."""
        j, s = divmod(lpn, self.U)
        return self._plane_base_list[s] + j

    def _closed_form(self, lpns: I64) -> I64:
        # page j of the plane at stripe position s: block j // ppb of the plane, page
        # j % ppb of the block, so ppn = plane's first ppn + j
        j, s = np.divmod(lpns, self.U)
        ppn: I64 = self._plane_base[s] + j
        return ppn

    def implicit_l2p(self, lpns: I64) -> I64:
        """Preconditioned location of ``lpns`` (-1 past ``n_pre``)."""
        if lpns.size and int(lpns.max()) < self.n_pre:
            return self._closed_form(lpns)
        return np.where(lpns < self.n_pre, self._closed_form(lpns), -1)

    def implicit_run(self, lo: int, hi: int) -> I64:
        """``implicit_l2p`` of the run [lo, hi): for a run of at most a segment, a slice
        of ``_ramp`` moved by the run's first stripe."""
        if hi <= self.n_pre and hi - lo <= SEG:
            j, s = divmod(lo, self.U)
            out: I64 = self._ramp[s:s + hi - lo] + j
            return out
        return self.implicit_l2p(np.arange(lo, hi, dtype=np.int64))

    def implicit_l2p1(self, lpn: int) -> int:
        if lpn >= self.n_pre:
            return -1
        j, s = divmod(lpn, self.U)
        return self._plane_base_list[s] + j

    def implicit_p2l(self, block: int) -> I64:
        """Logical pages the preconditioned layout puts in ``block`` (-1: none)."""
        plane, b = divmod(block, self.bpp)
        j = b * self.ppb + np.arange(self.ppb, dtype=np.int64)
        lpn = j * self.U + int(self.plane_stripe[plane])
        return np.where(lpn < self.n_pre, lpn, -1)

    def precondition(self, n: int) -> I64:
        """Declare logical pages [0, n) written sequentially; returns how many pages
        that puts in each (canonical) plane."""
        self.n_pre = n
        s = self.plane_stripe  # stripe position of each canonical plane
        count: I64 = np.maximum(0, (n - s + self.U - 1) // self.U)
        return count

    # -- L2P ---------------------------------------------------------------------------
    def lookup1(self, lpn: int) -> int:
        """Physical page of ``lpn`` or -1 when unmapped."""
        return self.l2p.get1(lpn)

    def lookup(self, lpns: I64) -> I64:
        """Physical pages of ``lpns`` (-1 where unmapped)."""
        return self.l2p.get(np.asarray(lpns, dtype=np.int64))

    # -- P2L ---------------------------------------------------------------------------
    def p2l(self, block: int) -> I64:
        """Logical page written at each page of ``block`` (-1: erased), read-only."""
        r = int(self.row1_of[block]) - 1
        if r >= 0:
            row: I64 = self.pool[r].astype(np.int64)
            return row
        if self.is_implicit(block):
            return self.implicit_p2l(block)
        return np.full(self.ppb, -1, dtype=np.int64)

    def is_implicit(self, block: int) -> bool:
        """Still holds (part of) the preconditioned closed form: never erased, in use."""
        blocks = self.blocks
        return self.n_pre > 0 and blocks.erases[block] == 0 and blocks.state[block] in (
            ACTIVE, FULL)

    def p2l_row(self, block: int) -> npt.NDArray[np.signedinteger]:
        """The writable P2L row of ``block`` (a view: use it before the pool grows)."""
        r = self.row(block)  # first: it may grow (replace) the pool
        row: npt.NDArray[np.signedinteger] = self.pool[r]
        return row

    def row(self, block: int) -> int:
        """Index in ``pool`` of the P2L row of ``block``, made (and filled from the
        closed form, or erased) on first use; the pool may grow, so re-read ``pool``."""
        r: int = self.row1_of.item(block) - 1
        if r < 0:
            rows = self.rows
            given = rows.item(1)
            if given:
                r = self.free_rows.item(given - 1)
                rows[1] = given - 1
            else:
                r = rows.item(0)
                if r == self.pool.shape[0]:
                    grown = np.empty((2 * r, self.ppb), dtype=self.lpn_dtype)
                    grown[:r] = self.pool
                    self.pool = grown
                rows[0] = r + 1
            if self._holds_closed_form(block):
                self.pool[r] = self.implicit_p2l(block)
            else:
                self.pool[r] = -1
            self.row1_of[block] = r + 1
        return r

    def _holds_closed_form(self, block: int) -> bool:
        """``is_implicit``, and the closed form gives ``block`` a preconditioned page
        (its first, the lowest: a block past the preconditioned ones holds none)."""
        plane, j = divmod(block, self.bpp)
        return (j * self.ppb * self.U + self._plane_stripe_list[plane] < self.n_pre
                and self.is_implicit(block))

    def new_rows(self, blocks: I64) -> I64:
        """``row`` of each of ``blocks`` (distinct, none with a row yet), at once: rows
        given back first (last given, first taken), then new ones, the pool doubling as
        ``row`` doubles it; each filled as ``row`` fills it."""
        k = int(blocks.size)
        rows = np.empty(k, dtype=np.int64)
        used, given = self.rows.tolist()
        reuse = min(k, given)
        rows[:reuse] = self.free_rows[given - reuse:given][::-1]
        self.rows[1] = given - reuse
        fresh = k - reuse
        need = used + fresh
        size = self.pool.shape[0]
        while size < need:
            size *= 2
        if size > self.pool.shape[0]:
            grown = np.empty((size, self.ppb), dtype=self.lpn_dtype)
            grown[:used] = self.pool[:used]
            self.pool = grown
        rows[reuse:] = np.arange(used, need, dtype=np.int64)
        self.rows[0] = need
        self.pool[rows] = -1
        if self.n_pre:
            # blocks that still hold part of the closed form: never erased, in use, and
            # the first logical page the layout gives them is preconditioned
            b = self.blocks
            plane, j = np.divmod(blocks, self.bpp)
            lowest = j * self.ppb * self.U + self.plane_stripe[plane]
            held = ((b.erases[blocks] == 0) & ((b.state[blocks] == ACTIVE)
                                               | (b.state[blocks] == FULL))
                    & (lowest < self.n_pre))
            for i in np.flatnonzero(held).tolist():
                self.pool[rows[i]] = self.implicit_p2l(int(blocks[i]))
        self.row1_of[blocks] = rows + 1
        return rows

    def release_row(self, block: int) -> None:
        """``block`` is being erased: its P2L row goes back to the pool."""
        r = int(self.row1_of[block]) - 1
        if r >= 0:
            given = self.rows.item(1)
            if given == self.free_rows.size:
                self.free_rows = np.concatenate([self.free_rows, np.empty_like(self.free_rows)])
            self.free_rows[given] = r
            self.rows[1] = given + 1
            self.row1_of[block] = 0

    def valid_pages(self, block: int) -> tuple[I64, I64]:
        """(ppns, lpns) of the valid pages of ``block``: those written whose logical
        page the L2P maps there (``valid_of``)."""
        src = np.empty(self.ppb, dtype=np.int64)
        lpns = np.empty(self.ppb, dtype=np.int64)
        state, pre = self.l2p.kernel_state()
        k = int(self._valid_of.call(self.p2l(block), block * self.ppb, state, pre, src,
                                    lpns))
        return src[:k], lpns[:k]

    def nbytes(self) -> int:
        """Bytes held: touched L2P segments and entries, the P2L row pool."""
        return self.l2p.nbytes() + self.pool.nbytes + self.row1_of.nbytes


#: the garbage collector's and the general write path's kernels past their dispatcher
#: (``tmhw.sim.jit.Directs``, by the maps' dtypes): a collection sets the map and finds a
#: victim's valid pages once per block it moves
_SET_PIECES = Directs(l2p_set_pieces)
_VALID_OF = Directs(valid_of)
