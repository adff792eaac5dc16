"""The fast model's chunk and page bookings (``flash.fast``), compiled: a chunk's pages
grouped into commands per die (``group_dies``: multi-plane and die-interleaved forming),
its dies' reads or programs (``flash.engine.dies``), each channel's one span
(``flash.engine.gaps``) and the cache-register holds, in one call; and one page's read
or program, for the batch path (``flash.pages``) and single pages. The only
implementation of these steps on die lanes; under MQSim's chip lock or data-out convoy,
or when spans are recorded, ``FastModel`` takes the same steps in numpy around calls of
the die and gap kernels.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.engine.dies import CAP, MERGED, TAIL, DieState, die_hold, die_prog, die_read
from flash.engine.gaps import FILL, gap_book
from tmhw.sim.intmath import div, log2_exact
from tmhw.sim.jit import njit, njit_noref

I64 = npt.NDArray[np.int64]


@njit
def group_dies(ppns: I64, weights: I64, weighted: bool, ppp: int, P: int, multi: bool
               ) -> tuple[I64, I64, I64, I64, I64, I64]:
    """``CommandFormer.die_groups``: the pages counted per plane (their weights summed),
    then one pass over the planes in order, a die's run of planes at a time: its pages,
    its weight, its commands (the most pages on one of its planes under multi-plane
    forming, else its pages), its planes per command and plane mask. The counts are
    kept per plane of the pages' span of planes where that span is short (a chunk, or a
    batch of gigabytes over every plane: no sort), else over the pages sorted by plane
    (a few pages over many devices' planes)."""
    n = ppns.size
    planes = np.empty(n, dtype=np.int64)
    if n == 0:
        return planes, planes, planes, planes, planes, planes
    s_ppp = log2_exact(ppp)
    for j in range(n):
        planes[j] = div(ppns[j], ppp, s_ppp)
    lo = planes.min()
    span = planes.max() - lo + 1
    if span <= 4 * n + 64:
        cnt = np.zeros(span, dtype=np.int64)
        wsum = np.zeros(span, dtype=np.int64)
        for j in range(n):
            cnt[planes[j] - lo] += 1
            wsum[planes[j] - lo] += weights[j] if weighted else 1
        up = np.flatnonzero(cnt)
        per_plane = cnt[up]
        w_plane = wsum[up]
        up += lo
    else:
        srt = np.sort(planes)
        k = 1
        for j in range(1, n):
            k += srt[j] != srt[j - 1]
        up = np.empty(k, dtype=np.int64)
        per_plane = np.zeros(k, dtype=np.int64)
        w_plane = np.zeros(k, dtype=np.int64)
        x = -1
        for j in range(n):
            if x < 0 or srt[j] != up[x]:
                x += 1
                up[x] = srt[j]
            per_plane[x] += 1
        if weighted:
            for j in range(n):
                w_plane[np.searchsorted(up, planes[j])] += weights[j]
        else:
            w_plane[:] = per_plane
    m = up.size
    udies = np.empty(m, dtype=np.int64)
    w_d = np.zeros(m, dtype=np.int64)
    pages_d = np.zeros(m, dtype=np.int64)
    ops_d = np.zeros(m, dtype=np.int64)
    kp = np.ones(m, dtype=np.int64)
    mask = np.zeros(m, dtype=np.int64)
    d = -1
    s_p = log2_exact(P)
    for x in range(m):
        die = div(up[x], P, s_p)
        if d < 0 or die != udies[d]:
            d += 1
            udies[d] = die
        pages_d[d] += per_plane[x]
        w_d[d] += w_plane[x]
        if multi:
            if per_plane[x] > ops_d[d]:
                ops_d[d] = per_plane[x]
            mask[d] |= np.int64(1) << (up[x] - die * P)
    k = d + 1
    if multi:
        for x in range(k):
            c = -(-pages_d[x] // ops_d[x])
            kp[x] = c if c < P else P
    else:
        ops_d[:k] = pages_d[:k]
    return udies[:k], w_d[:k], pages_d[:k], ops_d[:k], kp[:k], mask[:k]


@njit_noref
def read_page(dst: DieState, iv: I64, meta: I64, i: int, ch: int, earliest: int, cmd: int,
               t_r: int, x: int) -> int:
    """``FastModel.read1`` on die lanes (no chip lock, no convoy, no recorded spans):
    the die's read, its data-out on channel ``ch`` and the cache-register hold; the
    data-out's end, or -1 (nothing booked) when the channel's row is full."""
    if meta[FILL, ch] == iv.shape[2]:
        return -1
    d_end = die_read(dst, i, earliest + cmd, t_r, 0, -1)
    c_end = gap_book(iv, meta, ch, d_end - cmd, cmd + x)
    die_hold(dst, i, c_end - x)  # cache read frees the die as its data starts out
    return c_end


@njit_noref
def program_page(dst: DieState, iv: I64, meta: I64, i: int, ch: int, earliest: int,
                  busy: int, t_prog: int, mask: int, page: int) -> int:
    """``FastModel.program1`` on die lanes (no chip lock, no recorded spans): the
    command and data-in on channel ``ch`` from ``earliest``, then the program, or the
    page joining a waiting one. Its end times two, plus one if it joined (end times are
    far below 2**62); -1 when the channel's row is full, -2 when the lane's is (nothing
    booked)."""
    if meta[FILL, ch] == iv.shape[2]:
        return -1
    lane = dst[0]
    if lane[TAIL, i] == (i + 1) * dst[2][0, CAP]:
        return -2
    c_end = gap_book(iv, meta, ch, earliest, busy)
    before = lane[MERGED, i]
    end = die_prog(dst, i, c_end, t_prog, mask, page)
    return 2 * end + int(lane[MERGED, i] != before)


@njit
def _channel_runs(udies: I64, lpc: int) -> I64:
    """Where each channel's run of the sorted lanes ``udies`` starts (``lpc`` lanes per
    channel), and their count last: run ``g`` is lanes ``first[g]`` to
    ``first[g + 1]``."""
    m = udies.size
    first = np.empty(m + 1, dtype=np.int64)
    g = -1
    s = log2_exact(lpc)
    ch = -1
    for x in range(m):
        c = div(udies[x], lpc, s)
        if g < 0 or c != ch:
            g += 1
            first[g] = x
            ch = c
    first[g + 1] = m
    return first[:g + 2]


@njit
def read_chunk(ppns: I64, nb: I64, earliest: I64, per_dev: bool, geo: I64, rcmd: I64,
                rsetup: I64, dst: DieState, iv: I64, meta: I64, res: I64) -> bool:
    """``FastModel.read_lanes`` on die lanes (no chip lock, no convoy, no recorded
    spans): the same steps, each die and channel booked by the scalar rule it books in
    numpy. ``geo``: planes' pages, planes per die, multi-plane, lanes per channel and
    per device, tR, a page's data-out and its bytes; the lanes' and channels' arrays are
    ``DieLanes.state`` and ``GapBank.arrays()``. Into ``res``, per device of the
    lanes (one column each): its read commands, its first data-out's start and its last
    one's end (-1: none). True when a channel's row is full: nothing booked; grow the
    rows and call again. (Results go into ``res`` and not out as new arrays: numba
    builds each array it returns from a pickled type, a few microseconds each.)"""
    ppp, P, multi, lpc, lpd, t_r, page_data, page = (geo[0], geo[1], geo[2], geo[3],
                                                     geo[4], geo[5], geo[6], geo[7])
    udies, bytes_d, _p, ops_d, kp, _m = group_dies(ppns, nb, True, ppp, P, multi != 0)
    m = udies.size
    first = _channel_runs(udies, lpc)
    n_ch = first.size - 1
    s_lpc, s_lpd, s_page = log2_exact(lpc), log2_exact(lpd), log2_exact(page)
    uch = np.empty(n_ch, dtype=np.int64)
    for g in range(n_ch):
        uch[g] = div(udies[first[g]], lpc, s_lpc)
        if meta[FILL, uch[g]] == iv.shape[2]:
            return True
    res[0, :] = 0
    res[1:, :] = -1
    cmd = np.empty(m, dtype=np.int64)
    x_op = np.empty(m, dtype=np.int64)
    busy_l = np.empty(m, dtype=np.int64)
    dev = np.empty(m, dtype=np.int64)  # each lane's device
    for x in range(m):
        cmd[x] = rcmd[kp[x]]
        # one command's data-out: setup plus its share of the die's bytes
        part = bytes_d[x] * page_data
        x_op[x] = rsetup[kp[x]] + (div(part, page, s_page) if ops_d[x] == 1
                                   else part // (page * ops_d[x]))
        busy_l[x] = ops_d[x] * (cmd[x] + x_op[x])
        dev[x] = div(udies[x], lpd, s_lpd)
    d_end = np.empty(m, dtype=np.int64)
    for x in range(m):
        e = earliest[dev[x]] if per_dev else earliest[0]
        d_end[x] = die_read(dst, udies[x], e + cmd[x], ops_d[x] * t_r, 0, -1)
    c_start = np.empty(n_ch, dtype=np.int64)
    c_end = np.empty(n_ch, dtype=np.int64)
    for g in range(n_ch):
        busy = 0
        lo = -1
        hi = -1
        for x in range(first[g], first[g + 1]):
            busy += busy_l[x]
            ready = d_end[x] - (ops_d[x] - 1) * t_r - cmd[x]
            need = d_end[x] + x_op[x]
            if lo < 0 or ready < lo:
                lo = ready
            if need > hi:
                hi = need
        c_end[g] = gap_book(iv, meta, uch[g], max(lo, hi - busy), busy)
        c_start[g] = c_end[g] - busy
        k = dev[first[g]]  # the channel's device
        if res[1, k] < 0 or c_start[g] < res[1, k]:
            res[1, k] = c_start[g]
        if c_end[g] > res[2, k]:
            res[2, k] = c_end[g]
        # each lane's data leaves in lane order within the channel's span; the lane
        # holds its last command's data until that data-out starts (cache read)
        out = c_start[g]
        for x in range(first[g], first[g + 1]):
            out += busy_l[x]
            die_hold(dst, udies[x], out - x_op[x])
            res[0, dev[x]] += ops_d[x]
    return False


@njit_noref
def _share(t: int, ops: int) -> int:
    """One of ``ops`` commands' share of time ``t`` (one command: all of it, no division)."""
    return t if ops == 1 else t // ops


@njit
def program_chunk(ppns: I64, first_in: I64, l_end: I64, per_dev: bool, geo: I64,
                   pgeo: I64, pcmd: I64, dst: DieState, iv: I64, meta: I64, res: I64) -> int:
    """``FastModel.program_lanes`` on die lanes (no chip lock, no recorded spans): the
    same steps, each die and channel booked by the scalar rule it books in numpy.
    ``geo`` as ``read_chunk``'s, ``pgeo``: tPROG, pages per block, same-offset
    programs. Into ``res``, per device (one column each): its program commands, its
    pages that joined a waiting program and its last program's end (-1: none). 0 when
    booked; nothing is booked when a channel's row is full (1) or a die lane's row has
    no free slot (2): grow them and call again."""
    ppp, P, multi, lpc, lpd, page_data = geo[0], geo[1], geo[2], geo[3], geo[4], geo[6]
    t_prog, ppb, same_offset = pgeo[0], pgeo[1], pgeo[2]
    udies, _w, pages_d, ops_d, kp, mask = group_dies(ppns, ppns, False, ppp, P, multi != 0)
    m = udies.size
    first = _channel_runs(udies, lpc)
    n_ch = first.size - 1
    s_lpc, s_lpd, s_die, s_ppb = (log2_exact(lpc), log2_exact(lpd), log2_exact(ppp * P),
                                  log2_exact(ppb))
    for g in range(n_ch):
        if meta[FILL, div(udies[first[g]], lpc, s_lpc)] == iv.shape[2]:
            return 1
    lane = dst[0]
    for x in range(m):
        i = udies[x]
        if lane[TAIL, i] == (i + 1) * dst[2][0, CAP]:
            return 2
    offs = np.full(m, -1, dtype=np.int64)
    if same_offset:  # a lane's first page gives the offset its command programs
        d0 = udies[0]
        if udies[m - 1] - d0 < 4 * m + 64:  # the first page per die, indexed by die
            low = np.full(udies[m - 1] - d0 + 1, -1, dtype=np.int64)
            for j in range(ppns.size):
                x = div(ppns[j], ppp * P, s_die) - d0
                if low[x] < 0 or ppns[j] < low[x]:
                    low[x] = ppns[j]
            offs = low[udies - d0]
        else:
            for j in range(ppns.size):
                x = int(np.searchsorted(udies, div(ppns[j], ppp * P, s_die)))
                if offs[x] < 0 or ppns[j] < offs[x]:
                    offs[x] = ppns[j]
        for x in range(m):
            offs[x] -= div(offs[x], ppb, s_ppb) * ppb
    res[0, :] = 0
    res[1, :] = 0
    res[2, :] = -1
    for g in range(n_ch):
        k = div(udies[first[g]], lpd, s_lpd)  # the channel's device
        busy = 0
        for x in range(first[g], first[g + 1]):
            busy += ops_d[x] * (pcmd[kp[x]] + _share(pages_d[x] * page_data, ops_d[x]))
        fi = first_in[k] if per_dev else first_in[0]
        le = l_end[k] if per_dev else l_end[0]
        c_end = gap_book(iv, meta, div(udies[first[g]], lpc, s_lpc), max(fi, le - busy),
                         busy)
        c_start = c_end - busy
        for x in range(first[g], first[g + 1]):
            # a lane programs once its first command's data is in, and its last command
            # cannot start before the channel has delivered everything; a lane of
            # several commands programs no page into a waiting one
            op_busy = pcmd[kp[x]] + _share(pages_d[x] * page_data, ops_d[x])
            e0 = max(c_start + op_busy, c_end - (ops_d[x] - 1) * t_prog)
            i = udies[x]
            before = lane[MERGED, i]
            end = die_prog(dst, i, e0, ops_d[x] * t_prog, mask[x] if ops_d[x] == 1 else 0,
                           offs[x])
            if lane[MERGED, i] != before:
                res[1, k] += 1
            else:
                res[0, k] += ops_d[x]
            if end > res[2, k]:
                res[2, k] = end
    return 0
