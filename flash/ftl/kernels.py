"""The FTL's compiled kernels (``tmhw.sim.jit``): where a host write puts each page.

One page at a time, ``write_open`` is the host write of ``FTL.write1`` and of a batch
of one-page writes (``FTL.write_many``): the page's plane by the stripe, its old copy
invalidated, the page at the write pointer of the plane's active block. A run of pages
(``write_run``) is the general host write path (``FTL._write_pages``: pages grouped by
plane, each plane's in turn) for a run that needs no collection: the steady state of a
training run, which rewrites the same tensors' pages iteration after iteration. A
plane ``write_run`` fills opens a never-used block itself, with its P2L row
(``open_fresh``, as ``BlockManager.take_free`` and ``AddressMap.row`` open one), where
that leaves the plane above the soft collection threshold; any other block is opened
by the caller, since opening it may mean a collection, which stays in Python.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.ftl.blocks import ACTIVE, FULL
from flash.ftl.mapping import l2p_at
from flash.intmap import im_put
from tmhw.sim.intmath import div, log2_exact
from tmhw.sim.jit import njit, njit_noref

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
Rows = npt.NDArray[np.signedinteger]
#: the FTL's geometry (one record): logical pages, preconditioned pages, planes in the
#: stripe, pages per block, log2 of an L2P segment's pages, the dict entries that
#: make a segment dense, blocks per plane, and the soft and hard collection thresholds
#: (free blocks of a plane)
GEOMETRY = np.dtype([(name, np.int64) for name in (
    "n_lpn", "n_pre", "stripe", "ppb", "seg_bits", "dense_at", "bpp", "soft", "hard")])
#: the L2P the kernels read and write (``FTL._l2p_state``): its dict of sparse pages
#: (``IntMap.table``, ``meta``), each stripe position's plane's first page (the
#: preconditioned closed form), each segment's row (-1: not dense) and the rows
L2p = tuple[I64, I64, I64, I64, Rows]
#: the blocks' state the kernels change (``FTL._block_state``): per plane its active
#: block and write pointer; per block its P2L row + 1 (0: none), then the P2L rows, and
#: per block its valid pages, stamp and state
Blocks = tuple[I64, I64, I32, Rows, I32, I64, npt.NDArray[np.int8]]
#: the free blocks and P2L rows ``open_fresh`` takes (``FTL._fresh_state``): per plane
#: its next never-used block and its free blocks (``BlockManager.fresh_next``,
#: ``free_count``), the pool's rows in use and given back, and the rows given back
#: (``AddressMap.rows``, ``free_rows``)
Fresh = tuple[I64, I64, I64, I64]
#: ``write_run``'s answers: done; declined (the general path must do it); a target page
#: not erased; blocks to open first (their planes in ``need``); P2L rows to make first
#: (their blocks in ``need``); placed, the L2P map left to the caller (a segment of the
#: run is not dense)
DONE, DECLINED, NOT_ERASED, NEEDS_BLOCKS, NEEDS_ROWS, PLACED = range(6)


@njit
def write_run(lo: int, n: int, geo: npt.NDArray[np.void], stripe: tuple[I64, I64],
              l2p: L2p, blocks: Blocks, fresh: Fresh, seq: int,
              io: tuple[I64, I64, I64]) -> int:
    """The host write of the run [lo, lo + n) (n >= 2) into ``io``'s ``out`` (its ppns;
    ``stripe``: the stripe's planes twice over, and each plane's stripe position), as
    ``FTL._write_pages`` does it with no collection: the old copies' valid counts
    drop; the planes whose active block has room for their pages ("fit") take them
    there at once, and every such block gets the stamp of the write sequence after all
    of them; then each other plane in turn (in stripe order for a run of at most a
    stripe, in plane order for a longer one) fills its active block and continues in
    the block ``opened[plane]``, each piece stamped as it is programmed; a block filled
    is closed. The write sequence ends at ``seq + n``. The L2P map is set where every
    segment of the run is dense (``DONE``); else ``PLACED``, the map the caller's.

    Declined (nothing changed) when a plane has more than a block's pages, or a plane
    that does not fit must open a block while a segment is not dense (the general path
    sets the map piece by piece then); ``NOT_ERASED`` (nothing changed) if a target page
    is not erased; ``NEEDS_BLOCKS`` (nothing changed) when planes that do not fit have
    no opened block: ``need[0]`` of them, in the order they would open, in ``need[1:]``;
    ``NEEDS_ROWS`` (nothing changed) when active blocks to write have no P2L row:
    ``need[0]`` of them in ``need[1:]``. The blocks to open are opened here where
    ``open_fresh`` can open them all (each plane's ``opened`` is -1 again after); then
    nothing is asked."""
    g = geo[0]
    U, ppb, seg_bits = g["stripe"], g["ppb"], g["seg_bits"]
    sp2, plane_stripe = stripe
    seg_row, l2p_rows = l2p[3], l2p[4]
    host_blk, host_wp, row1_of, p2l, valid, stamp, state = blocks
    opened, need, out = io
    mask = (1 << seg_bits) - 1
    dense = True
    for si in range(lo >> seg_bits, ((lo + n - 1) >> seg_bits) + 1):
        if seg_row[si] < 0:
            dense = False
    s0 = lo % U
    w = min(n, U)
    # the planes of the run in the order the general path takes the ones that do not fit:
    # stripe order for a run of at most a stripe, else plane order, the stripe positions
    # sorted by their planes (``plane_stripe`` is the inverse of the stripe's order, so
    # plane ``j``'s position in the run is ``plane_stripe[j] - s0``, mod U: no sort)
    xs = np.arange(w)
    if n > U:
        for j in range(U):
            v = plane_stripe[j] - s0
            xs[j] = v + U if v < 0 else v
    # the run's pages at stripe position x: q, and one more for the first ``rem`` (the
    # loops below keep integer division, some 40 cycles, out of their steps)
    q = n // U
    rem = n - q * U
    fit = np.empty(w, dtype=np.bool_)  # per stripe position of the run
    k = 0
    for j in range(w):
        x = xs[j]
        plane = sp2[s0 + x]
        hb = host_blk[plane]
        c = q + (1 if x < rem else 0)  # the plane's pages in the run
        if c > ppb:
            return DECLINED
        fit[x] = hb >= 0 and host_wp[plane] + c <= ppb
        if not fit[x]:
            if not dense:
                return DECLINED
            if opened[plane] < 0:
                k += 1
                need[k] = plane
            elif row1_of[opened[plane]] == 0:
                return DECLINED
    if k:
        need[0] = k
        for j in range(w):
            hb = host_blk[sp2[s0 + xs[j]]]
            if hb >= 0 and row1_of[hb] == 0:
                return NEEDS_BLOCKS  # the caller opens them, then makes the rows
        if not open_fresh(need, opened, geo, plane_stripe, blocks, fresh):
            return NEEDS_BLOCKS
    else:
        for j in range(w):
            hb = host_blk[sp2[s0 + xs[j]]]
            if hb >= 0 and row1_of[hb] == 0:
                k += 1
                need[k] = hb
        if k:
            need[0] = k
            return NEEDS_ROWS
    # a plane at a time (``_piece``), so each block's P2L row is looked up once and walked
    # in order: page ``r`` of the plane at stripe position ``x`` is the run's page
    # ``r * U + x``; every target page is checked erased before anything changes
    for x in range(w):
        plane = sp2[s0 + x]
        c = q + (1 if x < rem else 0)
        for part in range(2):
            blk, r0, r1, first = _piece(plane, c, fit[x], part, ppb, host_blk, host_wp, opened)
            if r1 > r0:
                p2l_row = row1_of[blk] - 1
                for r in range(r0, r1):
                    if p2l[p2l_row, first + r - r0] != -1:
                        return NOT_ERASED
    s_ppb = log2_exact(ppb)
    for x in range(w):
        plane = sp2[s0 + x]
        c = q + (1 if x < rem else 0)
        for part in range(2):
            blk, r0, r1, first = _piece(plane, c, fit[x], part, ppb, host_blk, host_wp, opened)
            if r1 <= r0:
                continue
            p2l_row = row1_of[blk] - 1
            for r in range(r0, r1):
                slot = first + r - r0
                i = r * U + x
                lpn = lo + i
                # the old copy's valid count drops, the page maps to its new place
                row = seg_row[lpn >> seg_bits]
                old = l2p_rows[row, lpn & mask] if row >= 0 else l2p_of(l2p, geo, lpn)
                if old >= 0:
                    valid[div(old, ppb, s_ppb)] -= 1
                p2l[p2l_row, slot] = lpn
                ppn = blk * ppb + slot
                if dense:
                    l2p_rows[row, lpn & mask] = ppn
                out[i] = ppn
    # the planes that fit, at once
    for x in range(w):
        if fit[x]:
            seq += q + (1 if x < rem else 0)
    for x in range(w):
        if not fit[x]:
            continue
        plane = sp2[s0 + x]
        hb = host_blk[plane]
        c = q + (1 if x < rem else 0)
        valid[hb] += c
        stamp[hb] = seq
        _advance(plane, hb, host_wp[plane] + c, ppb, state, host_blk, host_wp)
    # then the others in turn: the active block's room, then the opened block
    for j in range(w):
        x = xs[j]
        if fit[x]:
            continue
        plane = sp2[s0 + x]
        hb = host_blk[plane]
        left = q + (1 if x < rem else 0)
        if hb >= 0:
            k1 = ppb - host_wp[plane]
            seq = _programmed(plane, hb, ppb, k1, blocks, seq)
            left -= k1
        seq = _programmed(plane, opened[plane], left, left, blocks, seq)
    for i in range(1, k + 1):  # the blocks opened here are the planes' active ones now
        opened[need[i]] = -1
    return DONE if dense else PLACED


@njit_noref
def _piece(plane: int, c: int, fits: bool, part: int, ppb: int, host_blk: I64, host_wp: I64,
           opened: I64) -> tuple[int, int, int, int]:
    """Where ``write_run`` puts the ``c`` pages of ``plane`` in a run, in two pieces: 0,
    in its active block from its write pointer while they fit (all of them where the
    plane ``fits``); 1, the rest in the block opened for it, from its first page. The
    piece's block, the plane's pages ``r0`` to ``r1`` it takes, and the first one's page
    in the block."""
    hb = host_blk[plane]
    wp = host_wp[plane]
    room = c if fits else (ppb - wp if hb >= 0 else 0)
    if part == 0:
        return hb, 0, room, wp
    return opened[plane], room, c, 0


@njit_noref
def open_fresh(need: I64, opened: I64, geo: npt.NDArray[np.void], plane_stripe: I64,
               blocks: Blocks, fresh: Fresh) -> bool:
    """Open a never-used block on each of the ``need[0]`` planes ``need[1:]``, in that
    order, into ``opened``, each with an erased P2L row, as ``BlockManager.take_free``
    then ``AddressMap.row`` would: the plane's next never-used block (``fresh_next``)
    becomes active, its free count drops, and the row is the last one given back, else
    the pool's next. Only where every one can be opened so (nothing changed and False
    otherwise): each plane has a never-used block, is above the hard threshold and
    stays at or above the soft one (no plane joins ``low_planes``), the pool has
    room for the rows (the caller grows it), and no block gets preconditioned data
    (whose row the closed form fills)."""
    g = geo[0]
    ppb, bpp, U, n_pre = g["ppb"], g["bpp"], g["stripe"], g["n_pre"]
    soft, hard = g["soft"], g["hard"]
    row1_of, pool, state = blocks[2], blocks[3], blocks[6]
    fresh_next, free_count, rows, free_rows = fresh
    k = need[0]
    if rows[0] + max(0, k - rows[1]) > pool.shape[0]:
        return False
    for i in range(1, k + 1):
        p = need[i]
        j = fresh_next[p]
        if j >= bpp or free_count[p] <= hard or free_count[p] - 1 < soft \
                or row1_of[p * bpp + j] != 0 \
                or (n_pre > 0 and j * ppb * U + plane_stripe[p] < n_pre):
            return False
    for i in range(1, k + 1):
        p = need[i]
        blk = p * bpp + fresh_next[p]
        fresh_next[p] += 1
        free_count[p] -= 1
        state[blk] = ACTIVE
        if rows[1] > 0:
            rows[1] -= 1
            r = free_rows[rows[1]]
        else:
            r = rows[0]
            rows[0] += 1
        pool[r, :] = -1
        row1_of[blk] = r + 1
        opened[p] = blk
    return True


@njit_noref
def _advance(plane: int, blk: int, wp: int, ppb: int, state: npt.NDArray[np.int8],
             host_blk: I64, host_wp: I64) -> None:
    """``plane``'s active block is ``blk`` with write pointer ``wp``, or none if that
    filled it (closed)."""
    if wp == ppb:
        state[blk] = FULL
        host_blk[plane] = -1
        host_wp[plane] = 0
    else:
        host_blk[plane] = blk
        host_wp[plane] = wp


@njit_noref
def _programmed(plane: int, blk: int, wp_end: int, m: int, blocks: Blocks, s: int) -> int:
    """``m`` pages of ``plane``'s block ``blk`` up to ``wp_end`` were programmed: its valid
    count and the write sequence advance, the block's stamp is the sequence after them,
    and a block filled is closed. The write sequence after them (the rule of every piece
    a host write or a collection programs; the pages that fit at once are stamped
    together instead, see ``place``)."""
    act_blk, act_wp, _row1_of, p2l, valid, stamp, state = blocks
    valid[blk] += m
    s += m
    stamp[blk] = s
    _advance(plane, blk, wp_end, p2l.shape[1], state, act_blk, act_wp)
    return s


@njit_noref
def drop_old(valid: npt.NDArray[np.int32], old: I64, ppb: int) -> int:
    """One valid page fewer in the block of each mapped page of ``old`` (ppns, -1:
    unmapped); how many were mapped."""
    k = 0
    for x in old:
        if x >= 0:
            valid[x // ppb] -= 1
            k += 1
    return k


#: ``place``'s answers (beside ``NOT_ERASED``, the block in ``cursor[C_WHAT]``): every
#: page placed; the plane in ``cursor[C_WHAT]`` must open a block (a host write collects
#: first where the plane is at the hard threshold); the block in ``cursor[C_WHAT]``
#: needs its P2L row; the groups that fit placed (``Programmer.place``'s first step)
FINISHED, OPEN_BLOCK, MAKE_ROW, FITS_PLACED = 6, 7, 8, 9
#: ``place``'s cursor: the group and its page to go on from, 1 once the groups that fit
#: are placed (or when none are to be placed first), what an answer names, and how many
#: pieces were placed since the caller last took them
C_GROUP, C_PAGE, C_PHASE, C_WHAT, C_PIECES = range(5)
#: blocks ``place`` opens as planes need them, opened in advance by the caller: the
#: blocks, and per plane the index of its next one and the end of its own
Opened = tuple[I64, I64, I64]


@njit_noref
def place(src: tuple[I64, int], groups: tuple[I64, I64, I64, int], blocks: Blocks,
          seq: I64, out: I64, io: tuple[I64, npt.NDArray[np.bool_], I64, Opened]) -> int:
    """Program pages at their planes' write pointers, group by group, until a plane
    must open a block or a block needs its P2L row: where the next write of a logical
    page goes on a plane. Group ``g`` is ``count[g]`` pages of plane ``plane[g]``, at
    indices ``start[g] + k * step`` of ``out`` (their ppns) and of ``src``'s logical
    pages (``lpns[i]``, or ``base + i`` where ``lpns`` is empty); ``groups`` is
    (``plane``, ``start``, ``count``, ``step``). ``blocks``' first two arrays are the
    planes' active blocks and write pointers (host or GC).

    A page goes at the write pointer of its plane's active block: its logical page into
    the block's P2L row, its ppn into ``out``; the block's valid count, the write
    sequence (``seq[0]``) and the block's stamp (the sequence after its last page)
    advance; a block filled is closed (full; the plane has none then). A piece (one
    group's pages in one block) is checked erased whole before it is written, and
    listed in ``pieces`` as (first index, pages) for the caller's L2P map.

    With ``cursor[C_PHASE] == 0`` the groups whose plane's active block has room for
    all their pages ("fit", flagged in ``fit``) go first, at once, each such block
    stamped with the sequence after all of them (``FITS_PLACED``); then the others in
    turn. A plane with no active block takes the next of the blocks opened for it in
    advance, if any (``opened``: (blocks, each plane's next one, each plane's end)), and
    else stops. The answer says where it stopped, the cursor where to go on (``io`` is
    (``cursor``, ``fit``, ``pieces``, ``opened``))."""
    lpns, base = src
    g_plane, g_start, g_count, step = groups
    act_blk, act_wp, row1_of, p2l, valid, stamp, state = blocks
    cursor, fit, pieces, (ahead, ahead_next, ahead_end) = io
    ppb = p2l.shape[1]
    n_groups = g_plane.size
    s = seq[0]
    if cursor[C_PHASE] == 0:
        for g in range(n_groups):
            hb = act_blk[g_plane[g]]
            fit[g] = hb >= 0 and act_wp[g_plane[g]] + g_count[g] <= ppb
            if fit[g] and row1_of[hb] == 0:
                cursor[C_WHAT] = hb
                return MAKE_ROW
        for g in range(n_groups):
            if fit[g]:
                hb = act_blk[g_plane[g]]
                r = row1_of[hb] - 1
                wp = act_wp[g_plane[g]]
                for j in range(g_count[g]):
                    if p2l[r, wp + j] != -1:
                        cursor[C_WHAT] = hb
                        return NOT_ERASED
        for g in range(n_groups):
            if fit[g]:
                plane = g_plane[g]
                hb = act_blk[plane]
                c = g_count[g]
                _put(hb, act_wp[plane], c, (g_start[g], step, base), lpns,
                     p2l[row1_of[hb] - 1], out)
                valid[hb] += c
                s += c
        for g in range(n_groups):
            if fit[g]:
                plane = g_plane[g]
                hb = act_blk[plane]
                stamp[hb] = s
                _advance(plane, hb, act_wp[plane] + g_count[g], ppb, state, act_blk, act_wp)
        seq[0] = s
        cursor[C_PHASE] = 1
        return FITS_PLACED
    g = cursor[C_GROUP]
    k = cursor[C_PAGE]
    n_pieces = cursor[C_PIECES]
    answer = FINISHED
    while g < n_groups:
        plane = g_plane[g]
        c = g_count[g]
        while k < c and not fit[g]:
            blk = act_blk[plane]
            if blk < 0 and ahead_next[plane] < ahead_end[plane]:
                blk = ahead[ahead_next[plane]]
                ahead_next[plane] += 1
                act_blk[plane] = blk
                act_wp[plane] = 0
            if blk < 0:
                answer = OPEN_BLOCK
                cursor[C_WHAT] = plane
                break
            r = row1_of[blk] - 1
            if r < 0:
                answer = MAKE_ROW
                cursor[C_WHAT] = blk
                break
            wp = act_wp[plane]
            m = min(ppb - wp, c - k)
            for j in range(m):
                if p2l[r, wp + j] != -1:
                    answer = NOT_ERASED
                    cursor[C_WHAT] = blk
            if answer != FINISHED:
                break
            first = g_start[g] + k * step
            _put(blk, wp, m, (first, step, base), lpns, p2l[r], out)
            pieces[2 * n_pieces] = first
            pieces[2 * n_pieces + 1] = m
            n_pieces += 1
            s = _programmed(plane, blk, wp + m, m, blocks, s)
            k += m
        if answer != FINISHED:
            break
        g += 1
        k = 0
    cursor[C_GROUP] = g
    cursor[C_PAGE] = k
    cursor[C_PIECES] = n_pieces
    seq[0] = s
    return answer


@njit_noref
def _put(blk: int, wp: int, m: int, at: tuple[int, int, int], lpns: I64, row: Rows,
         out: I64) -> None:
    """Pages ``wp`` to ``wp + m`` of block ``blk`` (P2L ``row``) take the logical pages
    at indices ``first + j * step`` (``at``: (first, step, base); ``lpns[i]``, or
    ``base + i`` where ``lpns`` is empty), their ppns into ``out`` there."""
    first, step, base = at
    ppb = row.size
    for j in range(m):
        i = first + j * step
        row[wp + j] = base + i if lpns.size == 0 else lpns[i]
        out[i] = blk * ppb + wp + j


@njit
def l2p_of(l2p: L2p, geo: npt.NDArray[np.void], lpn: int) -> int:
    """``SparseL2P.get1`` compiled: the physical page of ``lpn`` (-1 unmapped), by the
    L2P's lookup rule (``flash.ftl.mapping.l2p_at``) on the map as the FTL's kernels
    take it."""
    sp, sp_meta, plane_base, seg_row, rows = l2p
    g = geo[0]
    return l2p_at(sp, sp_meta, seg_row, rows, (plane_base, g["stripe"], g["n_pre"]), lpn)


@njit
def write_open(lpns: I64, geo: npt.NDArray[np.void], stripe_plane: I64, l2p: L2p,
               blocks: Blocks, seq: I64, outs: tuple[I64, I32, I64, I64], k0: int) -> int:
    """``FTL.write1`` of each of ``lpns`` in turn (a page may repeat), their ppns into
    ``out``, from ``k0`` on, for as long as the page is in range and its plane has an
    active block with a P2L row and an erased page at its write pointer: the old
    copy's valid count drops (``l2p_of``; the L2P's dict has room for every page; a
    repeated page's old copy is its last write here), the page goes at the write
    pointer, its block's stamp is the write sequence (``seq[0]``, advanced), a block it
    fills is full, and a page of a dense L2P segment is mapped there. The others are
    mapped in the dict, their pages listed in ``sparse`` (from ``res[0]``, which counts
    them), and a page new to the dict counts in its segment's ``per_seg``; ``res[1]`` is
    set when a segment reaches ``dense_at`` entries there (the caller makes it dense);
    ``outs`` is (``out``, ``per_seg``, ``sparse``, ``res``). Where it stopped:
    ``lpns.size``, or the first page not written, which needs what only ``write1``
    does (open a block or its row, collect, raise)."""
    g = geo[0]
    n_lpn, U, ppb, seg_bits, dense_at = (g["n_lpn"], g["stripe"], g["ppb"], g["seg_bits"],
                                         g["dense_at"])
    sp, sp_meta, _base, seg_row, rows = l2p
    host_blk, host_wp, row1_of, p2l, valid, stamp, state = blocks
    out, per_seg, sparse, res = outs
    n = lpns.size
    s = seq[0]
    for k in range(k0, n):
        lpn = lpns[k]
        if lpn < 0 or lpn >= n_lpn:
            seq[0] = s
            return k
        plane = stripe_plane[lpn % U]
        blk = host_blk[plane]
        if blk < 0:
            seq[0] = s
            return k
        r = row1_of[blk] - 1
        wp = host_wp[plane]
        if r < 0 or p2l[r, wp] != -1:
            seq[0] = s
            return k
        old = -2
        for j in range(k - 1, -1, -1):
            if lpns[j] == lpn:
                old = out[j]
                break
        if old == -2:
            old = l2p_of(l2p, geo, lpn)
        if old >= 0:
            valid[old // ppb] -= 1
        _put(blk, wp, 1, (k, 1, 0), lpns, p2l[r], out)
        ppn = out[k]
        s = _programmed(plane, blk, wp + 1, 1, blocks, s)
        si = lpn >> seg_bits
        row = seg_row[si]
        if row >= 0:
            rows[row, lpn & ((1 << seg_bits) - 1)] = ppn
        else:
            sparse[res[0]] = lpn
            res[0] += 1
            if im_put(sp, sp_meta, lpn, ppn):  # a new entry of the dict
                per_seg[si] += 1
                if per_seg[si] >= dense_at:
                    res[1] = 1
    seq[0] = s
    return n


@njit_noref
def place_run(lo: int, stripe_plane: I64, ppb: int, bpp: int, placing: tuple[I64, I64],
              host: tuple[I64, I64], out: I64) -> int:
    """``FTL.place_only``'s placement of the run of ``out.size`` pages from ``lo``: page
    ``i`` at the next ppn of its stripe position's plane plus ``i // U``, its ``i // U``
    pages of the run before it there (into ``out``). Then each plane's next ppn is past
    its pages of the run, its active block and write pointer (``host``) are those of
    that ppn (none when it starts a block), and ``placing``'s second array holds its
    blocks opened so far; the planes whose count grew are listed at its end (from
    index U on), and their number returned."""
    nxt, used = placing
    host_blk, host_wp = host
    n = out.size
    U = stripe_plane.size
    s0 = lo % U
    x = s0
    r = 0
    for i in range(n):
        out[i] = nxt[stripe_plane[x]] + r
        x += 1
        if x == U:
            x = 0
        if x == s0:
            r += 1
    q = n // U
    rem = n - q * U
    grew = 0
    for k in range(U):
        x = s0 + k
        if x >= U:
            x -= U
        plane = stripe_plane[x]
        c = q + (1 if k < rem else 0)
        if c == 0:
            continue
        nxt[plane] += c
        local = nxt[plane] - plane * bpp * ppb  # the plane's pages used
        blocks = (local + ppb - 1) // ppb
        if blocks != used[plane]:
            used[plane] = blocks
            used[U + grew] = plane
            grew += 1
        wp = local - (local // ppb) * ppb
        host_blk[plane] = plane * bpp + blocks - 1 if wp else -1
        host_wp[plane] = wp
    return grew
