"""A device's chunk and page bookings, compiled: a chunk's pages grouped into commands
per die (``group_dies``: multi-plane and die-interleaved forming), its dies' reads or
programs (``flash.engine.dies``), each channel's one span (``flash.engine.gaps``) and
the cache-register holds, in one call (``read_chunk``, ``program_chunk``); and one
page's read or program (``read_page``, ``program_page``). The only implementation of
these steps: ``flash.fast`` and the batch path (``flash.pages``) call them.

Under ``flash.compat = "mqsim"`` (``Geometry.chip_lock``, ``Geometry.convoy``) the lanes
are chips: a chip lane takes the largest command count, command time and data-out of
its dies (they work in parallel), its channel time is their sum, and its read uses the
bit mask of those dies (MQSim's chip batches, ``die_read``). A read command then needs
idle channel time outside the windows in which read data waits for the channel
(``command_slot``: MQSim's PHY drains waiting data-outs before it takes a command), each
read's data waits from its tR's end to its data-out's start (those windows, covered in
the lanes' ``wait`` bank), and a chip is busy until its data is out (no cache read).

State handed to the kernels, declared once here:

- ``lanes`` (``Lanes``): the die lanes' state (``DieLanes.state``), the channels'
  ``GapBank.arrays()`` and the wait windows' (empty rows when not ``convoy``);
- ``geo`` (``GEOMETRY``, one record): the device's geometry and cell timing;
- ``cmds`` (``COMMANDS``, a record per planes in a command, 0 unused): command cycles
  and data-out setup times;
- ``cell`` (``CELL``, a record per bit of a cell): a page's tR and tPROG by its bit.

Results of a chunk go into ``res``, per device of the lanes (one column each), rather
than out as new arrays: numba builds each array it returns from a pickled type, a few
microseconds each.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.engine.dies import DieState, die_hold, die_prog, die_read, lane_full, plane_read
from flash.engine.gaps import FILL, Meta, gap_book, gap_cover, gap_fit, gap_room
from tmhw.sim.intmath import div, log2_exact
from tmhw.sim.jit import njit, njit_noref

I64 = npt.NDArray[np.int64]
#: (dies, channel intervals, channel numbers, wait-window intervals, their numbers)
Lanes = tuple[DieState, I64, Meta, I64, Meta]

#: a device's geometry (one record): pages per plane, planes per die, multi-plane
#: forming, dies per lane (a chip's under the chip lock, else 1), lanes per channel and
#: per device, MQSim's chip lock and data-out convoy, a page's bytes and data-out time,
#: pages per block, bits per cell, the mean tR and tPROG, and whether a multi-plane
#: program's pages share their page offset, and how many one-page reads a die overlaps
#: (``planes`` with independent plane reads, else 1: ``plane_read``)
GEOMETRY = np.dtype([(name, np.int64) for name in (
    "ppp", "planes", "multi", "dies_per_lane", "lanes_per_channel", "lanes_per_device",
    "chip_lock", "convoy", "page", "page_data", "ppb", "bits", "t_r", "t_prog",
    "same_offset", "plane_reads")])
#: per planes in one command: read command cycles, data-out setup, program command cycles
COMMANDS = np.dtype([("rcmd", np.int64), ("rsetup", np.int64), ("pcmd", np.int64)])
#: per bit of a cell: a page's tR and tPROG
CELL = np.dtype([("t_r", np.int64), ("t_prog", np.int64)])
#: the wait windows' arrays of lanes with no convoy (the kernels never read them)
NO_WAIT = (np.zeros((2, 0, 0), dtype=np.int64), np.zeros((3, 0), dtype=np.int64))
#: ``read_chunk``'s and ``program_chunk``'s answers besides 0 (booked): nothing booked,
#: grow the channels' rows, the die lanes' rows, or the wait windows' rows and call again
CH_FULL, LANE_FULL, WAIT_FULL = 1, 2, 3


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
def command_slot(iv: I64, meta: Meta, wiv: I64, wmeta: Meta, ch: int, t: int,
                 cmd: int) -> int:
    """Under MQSim's convoy: the earliest start >= ``t`` of a command of ``cmd`` on
    channel ``ch`` with the channel idle (``iv``, ``meta``) and no read data waiting
    for it (the wait windows ``wiv``, ``wmeta``)."""
    while True:
        u = gap_fit(wiv, wmeta, ch, gap_fit(iv, meta, ch, t, cmd), cmd)
        if u == t:
            return t
        t = u


@njit_noref
def read_page(lanes: Lanes, geo: npt.NDArray[np.void], cmds: npt.NDArray[np.void],
              cell: npt.NDArray[np.void], ppn: int, earliest: int, x: int) -> int:
    """One page ``ppn`` (in the lanes' numbering) read from ``earliest``, its data-out
    ``x`` with setup: the die's read, its data-out on the die's channel and the
    cache-register hold (module docstring for MQSim's rules); the data-out's end, or
    minus why nothing was booked (``CH_FULL``, ``WAIT_FULL``). A
    recording die lane needs room for two more spans (``DieLanes.reserve_records``)."""
    dst, iv, meta, wiv, wmeta = lanes
    g = geo[0]
    P, dpl, convoy = g["planes"], g["dies_per_lane"], g["convoy"] != 0
    die = ppn // g["ppp"] // P
    lane = die // dpl
    ch = lane // g["lanes_per_channel"]
    if not gap_room(iv, meta, ch):
        return -CH_FULL
    if convoy and wmeta[FILL, ch] == wiv.shape[2]:
        return -WAIT_FULL
    cmd = cmds[1]["rcmd"]
    t_r = cell[(ppn % g["ppb"]) % g["bits"]]["t_r"]
    arrive = earliest + cmd
    issue = arrive
    if convoy:  # the command needs idle channel time, between drains
        lane_rd = dst[0][lane]["rd"]
        issue = command_slot(iv, meta, wiv, wmeta, ch,
                             earliest if earliest > lane_rd else lane_rd, cmd) + cmd
    dies = (1 << (die % dpl)) if g["chip_lock"] else 0
    share = g["plane_reads"]
    d_end = plane_read(dst, lane, issue, t_r, share, dies, arrive)
    c_end = gap_book(iv, meta, ch, d_end - cmd, cmd + x)
    if convoy:  # its data waits from its tR's end until its data-out starts
        gap_cover(wiv, wmeta, ch, d_end, c_end - x)
    # cache read frees the die as its data starts out; MQSim's chip waits for the end
    # (with independent plane reads each plane has its own page register)
    if share == 1:
        die_hold(dst, lane, c_end if convoy else c_end - x)
    return c_end


@njit_noref
def program_page(lanes: Lanes, geo: npt.NDArray[np.void], cmds: npt.NDArray[np.void],
                 cell: npt.NDArray[np.void], ppn: int, earliest: int, busy: int) -> int:
    """One page ``ppn`` (in the lanes' numbering) programmed: its command and data-in,
    ``busy``, on the die's channel from ``earliest``, then the program, or the page
    joining a waiting one (``die_prog``). Its end times two, plus one if it joined (end
    times are far below 2**62), or minus why nothing was booked (``CH_FULL``,
    ``LANE_FULL``). A recording die lane needs room for one more span."""
    dst, iv, meta = lanes[0], lanes[1], lanes[2]
    g = geo[0]
    P, dpl = g["planes"], g["dies_per_lane"]
    plane = ppn // g["ppp"]
    die = plane // P
    lane = die // dpl
    ch = lane // g["lanes_per_channel"]
    if not gap_room(iv, meta, ch):
        return -CH_FULL
    if lane_full(dst, lane):
        return -LANE_FULL
    # the page's plane bit (a chip lane has a run of bits per die)
    mask = (1 << (plane % P + (die % dpl) * P)) if g["multi"] else 0
    ppb = g["ppb"]
    page = ppn % ppb if g["same_offset"] else -1
    c_end = gap_book(iv, meta, ch, earliest, busy)
    merged = dst[0][lane]["merged"]
    end = die_prog(dst, lane, c_end, cell[(ppn % ppb) % g["bits"]]["t_prog"], mask, page)
    return 2 * end + int(dst[0][lane]["merged"] != merged)


@njit
def _onto_lanes(udies: I64, dpl: int) -> tuple[I64, I64]:
    """The lanes of sorted dies ``udies`` (``dpl`` dies a lane) and where each lane's
    run of dies starts, with their count last."""
    m = udies.size
    lanes = np.empty(m, dtype=np.int64)
    first = np.empty(m + 1, dtype=np.int64)
    y = -1
    for x in range(m):
        ln = udies[x] // dpl
        if y < 0 or ln != lanes[y]:
            y += 1
            lanes[y] = ln
            first[y] = x
    first[y + 1] = m
    return lanes[:y + 1], first[:y + 2]


@njit
def _channel_runs(lanes: I64, lpc: int) -> I64:
    """Where each channel's run of the sorted ``lanes`` starts (``lpc`` lanes per
    channel), and their count last: run ``g`` is lanes ``first[g]`` to
    ``first[g + 1]``."""
    m = lanes.size
    first = np.empty(m + 1, dtype=np.int64)
    g = -1
    s = log2_exact(lpc)
    ch = -1
    for x in range(m):
        c = div(lanes[x], lpc, s)
        if g < 0 or c != ch:
            g += 1
            first[g] = x
            ch = c
    first[g + 1] = m
    return first[:g + 2]


@njit_noref
def _at(t: I64, k: int) -> int:
    """A time argument given for all devices (one value) or per device: device ``k``'s."""
    return int(t[k]) if t.size > 1 else int(t[0])


@njit
def read_chunk(lanes: Lanes, geo: npt.NDArray[np.void], cmds: npt.NDArray[np.void],
               ppns: I64, nb: I64, earliest: I64, res: I64) -> int:
    """Pages ``ppns`` (in the lanes' numbering) with ``nb`` bytes wanted of each read
    from ``earliest`` (one time, or one per device), as ``flash.fast`` describes: per
    die ``ops x tR`` after its command, then the dies' data-outs as one span on their
    channel, in lane order, each lane holding its last command's data until its
    data-out starts. Into ``res`` per device: its read commands, its first data-out's
    start and its last one's end (-1: none). 0, or why nothing was booked (``CH_FULL``,
    ``WAIT_FULL``). A recording die lane needs room for two spans a page."""
    dst, iv, meta, wiv, wmeta = lanes
    g = geo[0]
    P, dpl, lpc, lpd = g["planes"], g["dies_per_lane"], g["lanes_per_channel"], \
        g["lanes_per_device"]
    t_r, page_data, page = g["t_r"], g["page_data"], g["page"]
    chip, convoy = g["chip_lock"] != 0, g["convoy"] != 0
    udies, bytes_d, _p, ops_d, kp, _m = group_dies(ppns, nb, True, g["ppp"], P,
                                                    g["multi"] != 0)
    ln, dfirst = _onto_lanes(udies, dpl)
    m = ln.size
    first = _channel_runs(ln, lpc)
    n_ch = first.size - 1
    s_lpc, s_lpd, s_page = log2_exact(lpc), log2_exact(lpd), log2_exact(page)
    uch = np.empty(n_ch, dtype=np.int64)
    for c in range(n_ch):
        uch[c] = div(ln[first[c]], lpc, s_lpc)
        if not gap_room(iv, meta, uch[c]):
            return CH_FULL
        if convoy and wmeta[FILL, uch[c]] + first[c + 1] - first[c] > wiv.shape[2]:
            return WAIT_FULL
    # per lane: commands, command time, one command's data-out (the largest of its
    # dies'), its channel time and its dies' commands (summed), the dies its read uses
    ops_l = np.zeros(m, dtype=np.int64)
    cmd_l = np.zeros(m, dtype=np.int64)
    x_l = np.zeros(m, dtype=np.int64)
    busy_l = np.zeros(m, dtype=np.int64)
    cmds_l = np.zeros(m, dtype=np.int64)
    dies_l = np.zeros(m, dtype=np.int64)
    for y in range(m):
        for x in range(dfirst[y], dfirst[y + 1]):
            cmd = cmds[kp[x]]["rcmd"]
            # one command's data-out: setup plus its share of the die's bytes
            part = bytes_d[x] * page_data
            xo = cmds[kp[x]]["rsetup"] + (div(part, page, s_page) if ops_d[x] == 1
                                          else part // (page * ops_d[x]))
            ops_l[y] = max(ops_l[y], ops_d[x])
            cmd_l[y] = max(cmd_l[y], cmd)
            x_l[y] = max(x_l[y], xo)
            busy_l[y] += ops_d[x] * (cmd + xo)
            cmds_l[y] += ops_d[x]
            if chip:
                dies_l[y] += 1 << (udies[x] % dpl)
    # when each lane's command can go: from its device's start, and under the convoy in
    # idle channel time outside the wait windows (all before any of the chunk's bookings)
    arrive = np.empty(m, dtype=np.int64)
    issue = np.empty(m, dtype=np.int64)
    for c in range(n_ch):
        for y in range(first[c], first[c + 1]):
            e = _at(earliest, div(ln[y], lpd, s_lpd))
            arrive[y] = e + cmd_l[y]
            issue[y] = arrive[y]
            if convoy:
                rd = dst[0][ln[y]]["rd"]
                issue[y] = command_slot(iv, meta, wiv, wmeta, uch[c], e if e > rd else rd,
                                        cmd_l[y]) + cmd_l[y]
    d_end = np.empty(m, dtype=np.int64)
    for y in range(m):
        d_end[y] = die_read(dst, ln[y], issue[y], ops_l[y] * t_r, dies_l[y], arrive[y])
    res[0, :] = 0
    res[1:, :] = -1
    for c in range(n_ch):
        busy = 0
        lo = -1
        hi = -1
        for y in range(first[c], first[c + 1]):
            busy += busy_l[y]
            ready = d_end[y] - (ops_l[y] - 1) * t_r - cmd_l[y]
            need = d_end[y] + x_l[y]
            if lo < 0 or ready < lo:
                lo = ready
            if need > hi:
                hi = need
        c_end = gap_book(iv, meta, uch[c], max(lo, hi - busy), busy)
        c_start = c_end - busy
        k = div(ln[first[c]], lpd, s_lpd)  # the channel's device
        if res[1, k] < 0 or c_start < res[1, k]:
            res[1, k] = c_start
        if c_end > res[2, k]:
            res[2, k] = c_end
        # each lane's data leaves in lane order within the channel's span: the lane
        # holds its last command's data until that data-out starts (cache read), or
        # under MQSim's rules until it ends, its data waiting from its tR's end
        out = c_start
        for y in range(first[c], first[c + 1]):
            out += busy_l[y]
            die_hold(dst, ln[y], out if convoy else out - x_l[y])
            res[0, k] += cmds_l[y]
            if convoy:
                gap_cover(wiv, wmeta, uch[c], d_end[y], out - x_l[y])
    return 0


@njit_noref
def _share(t: int, ops: int) -> int:
    """One of ``ops`` commands' share of time ``t`` (one command: all of it, no division)."""
    return t if ops == 1 else t // ops


@njit
def program_chunk(lanes: Lanes, geo: npt.NDArray[np.void], cmds: npt.NDArray[np.void],
                  ppns: I64, first_in: I64, l_end: I64, res: I64) -> int:
    """Pages ``ppns`` (in the lanes' numbering) programmed, their data crossing the
    host link in [``first_in``, ``l_end``] (one time, or one per device), as
    ``flash.fast`` describes: each channel carries the commands and data-in of its
    lanes as one span, each lane programs once its first command's data is in (a lane
    of one command may join a waiting program, ``die_prog``). Into ``res`` per device:
    its program commands, its lanes that joined a waiting program and its last
    program's end (-1: none). 0, or why nothing was booked (``CH_FULL``,
    ``LANE_FULL``). A recording die lane needs room for a span a page."""
    dst, iv, meta = lanes[0], lanes[1], lanes[2]
    g = geo[0]
    ppp, P, dpl, lpc, lpd = (g["ppp"], g["planes"], g["dies_per_lane"],
                             g["lanes_per_channel"], g["lanes_per_device"])
    page_data, t_prog, ppb = g["page_data"], g["t_prog"], g["ppb"]
    chip = g["chip_lock"] != 0
    udies, _w, pages_d, ops_d, kp, mask = group_dies(ppns, ppns, False, ppp, P,
                                                     g["multi"] != 0)
    ln, dfirst = _onto_lanes(udies, dpl)
    m = ln.size
    first = _channel_runs(ln, lpc)
    n_ch = first.size - 1
    s_lpc, s_lpd, s_die, s_ppb = (log2_exact(lpc), log2_exact(lpd), log2_exact(ppp * P),
                                  log2_exact(ppb))
    for c in range(n_ch):
        if not gap_room(iv, meta, div(ln[first[c]], lpc, s_lpc)):
            return CH_FULL
    for y in range(m):
        if lane_full(dst, ln[y]):
            return LANE_FULL
    # the page offset a die's command programs: its first page's, when a multi-plane
    # program's pages share their offset
    offs = np.full(udies.size, -1, dtype=np.int64)
    if g["same_offset"]:
        d0 = udies[0]
        if udies[-1] - d0 < 4 * udies.size + 64:  # the first page per die, indexed by die
            low = np.full(udies[-1] - d0 + 1, -1, dtype=np.int64)
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
        for x in range(udies.size):
            offs[x] -= div(offs[x], ppb, s_ppb) * ppb
    # per lane: commands and one command's time (the largest of its dies'), channel
    # time and commands (summed), plane mask (a chip's dies each a run of bits) and the
    # offset of its first die
    ops_l = np.zeros(m, dtype=np.int64)
    busy_op = np.zeros(m, dtype=np.int64)
    chan_l = np.zeros(m, dtype=np.int64)
    cmds_l = np.zeros(m, dtype=np.int64)
    mask_l = np.zeros(m, dtype=np.int64)
    for y in range(m):
        for x in range(dfirst[y], dfirst[y + 1]):
            op = cmds[kp[x]]["pcmd"] + _share(pages_d[x] * page_data, ops_d[x])
            ops_l[y] = max(ops_l[y], ops_d[x])
            busy_op[y] = max(busy_op[y], op)
            chan_l[y] += ops_d[x] * op
            cmds_l[y] += ops_d[x]
            mask_l[y] += (mask[x] << ((udies[x] % dpl) * P)) if chip else mask[x]
    res[0, :] = 0
    res[1, :] = 0
    res[2, :] = -1
    for c in range(n_ch):
        k = div(ln[first[c]], lpd, s_lpd)  # the channel's device
        busy = 0
        for y in range(first[c], first[c + 1]):
            busy += chan_l[y]
        fi, le = _at(first_in, k), _at(l_end, k)
        c_end = gap_book(iv, meta, div(ln[first[c]], lpc, s_lpc), max(fi, le - busy), busy)
        c_start = c_end - busy
        for y in range(first[c], first[c + 1]):
            # a lane programs once its first command's data is in, and its last command
            # cannot start before the channel has delivered everything; a lane of
            # several commands programs no page into a waiting one
            e0 = max(c_start + busy_op[y], c_end - (ops_l[y] - 1) * t_prog)
            i = ln[y]
            merged = dst[0][i]["merged"]
            end = die_prog(dst, i, e0, ops_l[y] * t_prog, mask_l[y] if ops_l[y] == 1 else 0,
                           offs[dfirst[y]])
            if dst[0][i]["merged"] != merged:
                res[1, k] += 1
                res[0, k] += cmds_l[y] - 1
            else:
                res[0, k] += cmds_l[y]
            if end > res[2, k]:
                res[2, k] = end
    return 0
