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
- ``geometry_rec`` (``GEOMETRY``, one record, read as ``geometry``): the device's geometry
  and cell timing;
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
def group_dies(ppns: I64, weights: I64, weighted: bool, pages_per_plane: int,
               planes_per_die: int, multi: bool) -> tuple[I64, I64, I64, I64, I64, I64]:
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
    plane_shift = log2_exact(pages_per_plane)
    for j in range(n):
        planes[j] = div(ppns[j], pages_per_plane, plane_shift)
    lo = planes.min()
    span = planes.max() - lo + 1
    if span <= 4 * n + 64:
        count = np.zeros(span, dtype=np.int64)
        weight_sum = np.zeros(span, dtype=np.int64)
        for j in range(n):
            count[planes[j] - lo] += 1
            weight_sum[planes[j] - lo] += weights[j] if weighted else 1
        planes_hit = np.flatnonzero(count)
        per_plane = count[planes_hit]
        weight_plane = weight_sum[planes_hit]
        planes_hit += lo
    else:
        sorted_planes = np.sort(planes)
        n_planes_hit = 1
        for j in range(1, n):
            n_planes_hit += sorted_planes[j] != sorted_planes[j - 1]
        planes_hit = np.empty(n_planes_hit, dtype=np.int64)
        per_plane = np.zeros(n_planes_hit, dtype=np.int64)
        weight_plane = np.zeros(n_planes_hit, dtype=np.int64)
        pos = -1
        for j in range(n):
            if pos < 0 or sorted_planes[j] != planes_hit[pos]:
                pos += 1
                planes_hit[pos] = sorted_planes[j]
            per_plane[pos] += 1
        if weighted:
            for j in range(n):
                weight_plane[np.searchsorted(planes_hit, planes[j])] += weights[j]
        else:
            weight_plane[:] = per_plane
    n_planes_hit = planes_hit.size
    dies_hit = np.empty(n_planes_hit, dtype=np.int64)
    weight_d = np.zeros(n_planes_hit, dtype=np.int64)
    pages_d = np.zeros(n_planes_hit, dtype=np.int64)
    ops_d = np.zeros(n_planes_hit, dtype=np.int64)
    planes_per_cmd = np.ones(n_planes_hit, dtype=np.int64)
    mask = np.zeros(n_planes_hit, dtype=np.int64)
    die_pos = -1
    die_shift = log2_exact(planes_per_die)
    for pos in range(n_planes_hit):
        die = div(planes_hit[pos], planes_per_die, die_shift)
        if die_pos < 0 or die != dies_hit[die_pos]:
            die_pos += 1
            dies_hit[die_pos] = die
        pages_d[die_pos] += per_plane[pos]
        weight_d[die_pos] += weight_plane[pos]
        if multi:
            if per_plane[pos] > ops_d[die_pos]:
                ops_d[die_pos] = per_plane[pos]
            mask[die_pos] |= np.int64(1) << (planes_hit[pos] - die * planes_per_die)
    n_dies_hit = die_pos + 1
    if multi:
        for pos in range(n_dies_hit):
            per_cmd = -(-pages_d[pos] // ops_d[pos])
            planes_per_cmd[pos] = per_cmd if per_cmd < planes_per_die else planes_per_die
    else:
        ops_d[:n_dies_hit] = pages_d[:n_dies_hit]
    return (dies_hit[:n_dies_hit], weight_d[:n_dies_hit], pages_d[:n_dies_hit],
            ops_d[:n_dies_hit], planes_per_cmd[:n_dies_hit], mask[:n_dies_hit])


@njit_noref
def command_slot(ch_intervals: I64, ch_meta: Meta, wait_intervals: I64, wait_meta: Meta,
                 ch: int, earliest: int, cmd: int) -> int:
    """Under MQSim's convoy: the earliest start >= ``earliest`` of a command of ``cmd`` on
    channel ``ch`` with the channel idle (``ch_intervals``, ``ch_meta``) and no read data
    waiting for it (the wait windows ``wait_intervals``, ``wait_meta``)."""
    while True:
        idle = gap_fit(ch_intervals, ch_meta, ch, earliest, cmd)
        fit = gap_fit(wait_intervals, wait_meta, ch, idle, cmd)
        if fit == earliest:
            return earliest
        earliest = fit


@njit_noref
def read_page(lanes: Lanes, geometry_rec: npt.NDArray[np.void], cmds: npt.NDArray[np.void],
              cell: npt.NDArray[np.void], ppn: int, earliest: int, data_out_ps: int) -> int:
    """One page ``ppn`` (in the lanes' numbering) read from ``earliest``, its data-out
    ``data_out_ps`` with setup: the die's read, its data-out on the die's channel and the
    cache-register hold (module docstring for MQSim's rules); the data-out's end, or
    minus why nothing was booked (``CH_FULL``, ``WAIT_FULL``). A
    recording die lane needs room for two more spans (``DieLanes.reserve_records``)."""
    die_state, ch_intervals, ch_meta, wait_intervals, wait_meta = lanes
    geometry = geometry_rec[0]
    planes_per_die, dies_per_lane = geometry["planes"], geometry["dies_per_lane"]
    convoy = geometry["convoy"] != 0
    die = ppn // geometry["ppp"] // planes_per_die
    lane = die // dies_per_lane
    ch = lane // geometry["lanes_per_channel"]
    if not gap_room(ch_intervals, ch_meta, ch):
        return -CH_FULL
    if convoy and wait_meta[FILL, ch] == wait_intervals.shape[2]:
        return -WAIT_FULL
    cmd = cmds[1]["rcmd"]
    t_r = cell[(ppn % geometry["ppb"]) % geometry["bits"]]["t_r"]
    arrive = earliest + cmd
    issue = arrive
    if convoy:  # the command needs idle channel time, between drains
        read_free = die_state[0][lane]["rd"]
        issue = command_slot(ch_intervals, ch_meta, wait_intervals, wait_meta, ch,
                             earliest if earliest > read_free else read_free, cmd) + cmd
    dies = (1 << (die % dies_per_lane)) if geometry["chip_lock"] else 0
    share = geometry["plane_reads"]
    die_end = plane_read(die_state, lane, issue, t_r, share, dies, arrive)
    channel_end = gap_book(ch_intervals, ch_meta, ch, die_end - cmd, cmd + data_out_ps)
    if convoy:  # its data waits from its tR's end until its data-out starts
        gap_cover(wait_intervals, wait_meta, ch, die_end, channel_end - data_out_ps)
    # cache read frees the die as its data starts out; MQSim's chip waits for the end
    # (with independent plane reads each plane has its own page register)
    if share == 1:
        die_hold(die_state, lane, channel_end if convoy else channel_end - data_out_ps)
    return channel_end


@njit_noref
def program_page(lanes: Lanes, geometry_rec: npt.NDArray[np.void], cmds: npt.NDArray[np.void],
                 cell: npt.NDArray[np.void], ppn: int, first_in: int, l_end: int) -> int:
    """One page ``ppn`` (in the lanes' numbering) programmed, its data crossing the host
    link in [``first_in``, ``l_end``]: its command and data-in on the die's channel
    from the later of ``first_in`` and the time that lets them end with the link's
    (cut-through), then the program, or the page joining a waiting one (``die_prog``).
    Its end times two, plus one if it joined (end times are far below 2**62), or minus
    why nothing was booked (``CH_FULL``, ``LANE_FULL``). A recording die lane needs
    room for one more span."""
    die_state, ch_intervals, ch_meta = lanes[0], lanes[1], lanes[2]
    geometry = geometry_rec[0]
    busy = cmds[1]["pcmd"] + geometry["page_data"]
    earliest = first_in if first_in > l_end - busy else l_end - busy
    planes_per_die, dies_per_lane = geometry["planes"], geometry["dies_per_lane"]
    plane = ppn // geometry["ppp"]
    die = plane // planes_per_die
    lane = die // dies_per_lane
    ch = lane // geometry["lanes_per_channel"]
    if not gap_room(ch_intervals, ch_meta, ch):
        return -CH_FULL
    if lane_full(die_state, lane):
        return -LANE_FULL
    # the page's plane bit (a chip lane has a run of bits per die)
    mask = ((1 << (plane % planes_per_die + (die % dies_per_lane) * planes_per_die))
            if geometry["multi"] else 0)
    pages_per_block = geometry["ppb"]
    page = ppn % pages_per_block if geometry["same_offset"] else -1
    channel_end = gap_book(ch_intervals, ch_meta, ch, earliest, busy)
    merged = die_state[0][lane]["merged"]
    t_prog = cell[(ppn % pages_per_block) % geometry["bits"]]["t_prog"]
    end = die_prog(die_state, lane, channel_end, t_prog, mask, page)
    return 2 * end + int(die_state[0][lane]["merged"] != merged)


@njit
def _onto_lanes(dies: I64, dies_per_lane: int) -> tuple[I64, I64]:
    """The lanes of sorted dies ``dies`` (``dies_per_lane`` dies a lane) and where each
    lane's run of dies starts, with their count last."""
    n_dies = dies.size
    lanes = np.empty(n_dies, dtype=np.int64)
    first = np.empty(n_dies + 1, dtype=np.int64)
    lane_pos = -1
    for die_pos in range(n_dies):
        lane = dies[die_pos] // dies_per_lane
        if lane_pos < 0 or lane != lanes[lane_pos]:
            lane_pos += 1
            lanes[lane_pos] = lane
            first[lane_pos] = die_pos
    first[lane_pos + 1] = n_dies
    return lanes[:lane_pos + 1], first[:lane_pos + 2]


@njit
def _channel_runs(lanes: I64, lanes_per_channel: int) -> I64:
    """Where each channel's run of the sorted ``lanes`` starts (``lanes_per_channel``
    lanes per channel), and their count last: run ``run`` is lanes ``first[run]`` to
    ``first[run + 1]``."""
    n_lanes = lanes.size
    first = np.empty(n_lanes + 1, dtype=np.int64)
    run = -1
    shift = log2_exact(lanes_per_channel)
    prev_channel = -1
    for lane_pos in range(n_lanes):
        channel = div(lanes[lane_pos], lanes_per_channel, shift)
        if run < 0 or channel != prev_channel:
            run += 1
            first[run] = lane_pos
            prev_channel = channel
    first[run + 1] = n_lanes
    return first[:run + 2]


@njit_noref
def _at(times: I64, device: int) -> int:
    """A time argument given for all devices (one value) or per device: ``device``'s."""
    return int(times[device]) if times.size > 1 else int(times[0])


@njit
def read_chunk(lanes: Lanes, geometry_rec: npt.NDArray[np.void], cmds: npt.NDArray[np.void],
               ppns: I64, nb: I64, earliest: I64, res: I64) -> int:
    """Pages ``ppns`` (in the lanes' numbering) with ``nb`` bytes wanted of each read
    from ``earliest`` (one time, or one per device), as ``flash.fast`` describes: per
    die ``ops x tR`` after its command, then the dies' data-outs as one span on their
    channel, in lane order, each lane holding its last command's data until its
    data-out starts. Into ``res`` per device: its read commands, its first data-out's
    start and its last one's end (-1: none). 0, or why nothing was booked (``CH_FULL``,
    ``WAIT_FULL``). A recording die lane needs room for two spans a page."""
    die_state, ch_intervals, ch_meta, wait_intervals, wait_meta = lanes
    geometry = geometry_rec[0]
    planes_per_die, dies_per_lane = geometry["planes"], geometry["dies_per_lane"]
    lanes_per_channel = geometry["lanes_per_channel"]
    lanes_per_device = geometry["lanes_per_device"]
    t_r, page_data, page = geometry["t_r"], geometry["page_data"], geometry["page"]
    chip, convoy = geometry["chip_lock"] != 0, geometry["convoy"] != 0
    dies_hit, bytes_d, _p, ops_d, planes_per_cmd, _m = group_dies(
        ppns, nb, True, geometry["ppp"], planes_per_die, geometry["multi"] != 0)
    lanes_hit, lane_first = _onto_lanes(dies_hit, dies_per_lane)
    n_lanes = lanes_hit.size
    channel_first = _channel_runs(lanes_hit, lanes_per_channel)
    n_ch = channel_first.size - 1
    channel_shift, device_shift = log2_exact(lanes_per_channel), log2_exact(lanes_per_device)
    page_shift = log2_exact(page)
    channels_hit = np.empty(n_ch, dtype=np.int64)
    for run in range(n_ch):
        channels_hit[run] = div(lanes_hit[channel_first[run]], lanes_per_channel, channel_shift)
        if not gap_room(ch_intervals, ch_meta, channels_hit[run]):
            return CH_FULL
        lanes_on = channel_first[run + 1] - channel_first[run]
        if convoy and wait_meta[FILL, channels_hit[run]] + lanes_on > wait_intervals.shape[2]:
            return WAIT_FULL
    # per lane: commands, command time, one command's data-out (the largest of its
    # dies'), its channel time and its dies' commands (summed), the dies its read uses
    ops_l = np.zeros(n_lanes, dtype=np.int64)
    cmd_l = np.zeros(n_lanes, dtype=np.int64)
    data_out_l = np.zeros(n_lanes, dtype=np.int64)
    busy_l = np.zeros(n_lanes, dtype=np.int64)
    cmds_l = np.zeros(n_lanes, dtype=np.int64)
    dies_l = np.zeros(n_lanes, dtype=np.int64)
    for lane_pos in range(n_lanes):
        for die_pos in range(lane_first[lane_pos], lane_first[lane_pos + 1]):
            cmd = cmds[planes_per_cmd[die_pos]]["rcmd"]
            # one command's data-out: setup plus its share of the die's bytes
            part = bytes_d[die_pos] * page_data
            data_out_ps = cmds[planes_per_cmd[die_pos]]["rsetup"] + (
                div(part, page, page_shift) if ops_d[die_pos] == 1
                else part // (page * ops_d[die_pos]))
            ops_l[lane_pos] = max(ops_l[lane_pos], ops_d[die_pos])
            cmd_l[lane_pos] = max(cmd_l[lane_pos], cmd)
            data_out_l[lane_pos] = max(data_out_l[lane_pos], data_out_ps)
            busy_l[lane_pos] += ops_d[die_pos] * (cmd + data_out_ps)
            cmds_l[lane_pos] += ops_d[die_pos]
            if chip:
                dies_l[lane_pos] += 1 << (dies_hit[die_pos] % dies_per_lane)
    # when each lane's command can go: from its device's start, and under the convoy in
    # idle channel time outside the wait windows (all before any of the chunk's bookings)
    arrive = np.empty(n_lanes, dtype=np.int64)
    issue = np.empty(n_lanes, dtype=np.int64)
    for run in range(n_ch):
        for lane_pos in range(channel_first[run], channel_first[run + 1]):
            dev_start = _at(earliest, div(lanes_hit[lane_pos], lanes_per_device, device_shift))
            arrive[lane_pos] = dev_start + cmd_l[lane_pos]
            issue[lane_pos] = arrive[lane_pos]
            if convoy:
                read_free = die_state[0][lanes_hit[lane_pos]]["rd"]
                issue[lane_pos] = command_slot(
                    ch_intervals, ch_meta, wait_intervals, wait_meta, channels_hit[run],
                    dev_start if dev_start > read_free else read_free,
                    cmd_l[lane_pos]) + cmd_l[lane_pos]
    die_end = np.empty(n_lanes, dtype=np.int64)
    for lane_pos in range(n_lanes):
        die_end[lane_pos] = die_read(die_state, lanes_hit[lane_pos], issue[lane_pos],
                                     ops_l[lane_pos] * t_r, dies_l[lane_pos], arrive[lane_pos])
    res[0, :] = 0
    res[1:, :] = -1
    for run in range(n_ch):
        busy = 0
        lo = -1
        hi = -1
        for lane_pos in range(channel_first[run], channel_first[run + 1]):
            busy += busy_l[lane_pos]
            ready = die_end[lane_pos] - (ops_l[lane_pos] - 1) * t_r - cmd_l[lane_pos]
            need = die_end[lane_pos] + data_out_l[lane_pos]
            if lo < 0 or ready < lo:
                lo = ready
            if need > hi:
                hi = need
        channel_end = gap_book(ch_intervals, ch_meta, channels_hit[run], max(lo, hi - busy),
                               busy)
        channel_start = channel_end - busy
        # the channel's device
        device = div(lanes_hit[channel_first[run]], lanes_per_device, device_shift)
        if res[1, device] < 0 or channel_start < res[1, device]:
            res[1, device] = channel_start
        if channel_end > res[2, device]:
            res[2, device] = channel_end
        # each lane's data leaves in lane order within the channel's span: the lane
        # holds its last command's data until that data-out starts (cache read), or
        # under MQSim's rules until it ends, its data waiting from its tR's end
        out = channel_start
        for lane_pos in range(channel_first[run], channel_first[run + 1]):
            out += busy_l[lane_pos]
            data_start = out - data_out_l[lane_pos]
            die_hold(die_state, lanes_hit[lane_pos], out if convoy else data_start)
            res[0, device] += cmds_l[lane_pos]
            if convoy:
                gap_cover(wait_intervals, wait_meta, channels_hit[run], die_end[lane_pos],
                          data_start)
    return 0


@njit_noref
def _share(time: int, n_cmds: int) -> int:
    """One of ``n_cmds`` commands' share of ``time`` (one command: all of it, no
    division)."""
    return time if n_cmds == 1 else time // n_cmds


@njit
def program_chunk(lanes: Lanes, geometry_rec: npt.NDArray[np.void], cmds: npt.NDArray[np.void],
                  ppns: I64, first_in: I64, last_in: I64, res: I64) -> int:
    """Pages ``ppns`` (in the lanes' numbering) programmed, their data crossing the
    host link in [``first_in``, ``last_in``] (one time, or one per device), as
    ``flash.fast`` describes: each channel carries the commands and data-in of its
    lanes as one span, each lane programs once its first command's data is in (a lane
    of one command may join a waiting program, ``die_prog``). Into ``res`` per device:
    its program commands, its lanes that joined a waiting program and its last
    program's end (-1: none). 0, or why nothing was booked (``CH_FULL``,
    ``LANE_FULL``). A recording die lane needs room for a span a page."""
    die_state, ch_intervals, ch_meta = lanes[0], lanes[1], lanes[2]
    geometry = geometry_rec[0]
    pages_per_plane, planes_per_die, dies_per_lane = (geometry["ppp"], geometry["planes"],
                                                      geometry["dies_per_lane"])
    lanes_per_channel = geometry["lanes_per_channel"]
    lanes_per_device = geometry["lanes_per_device"]
    page_data, t_prog, pages_per_block = geometry["page_data"], geometry["t_prog"], geometry["ppb"]
    chip = geometry["chip_lock"] != 0
    dies_hit, _w, pages_d, ops_d, planes_per_cmd, mask = group_dies(
        ppns, ppns, False, pages_per_plane, planes_per_die, geometry["multi"] != 0)
    lanes_hit, lane_first = _onto_lanes(dies_hit, dies_per_lane)
    n_lanes = lanes_hit.size
    channel_first = _channel_runs(lanes_hit, lanes_per_channel)
    n_ch = channel_first.size - 1
    pages_per_die = pages_per_plane * planes_per_die
    channel_shift, device_shift = log2_exact(lanes_per_channel), log2_exact(lanes_per_device)
    die_shift, block_shift = log2_exact(pages_per_die), log2_exact(pages_per_block)
    for run in range(n_ch):
        channel = div(lanes_hit[channel_first[run]], lanes_per_channel, channel_shift)
        if not gap_room(ch_intervals, ch_meta, channel):
            return CH_FULL
    for lane_pos in range(n_lanes):
        if lane_full(die_state, lanes_hit[lane_pos]):
            return LANE_FULL
    # the page offset a die's command programs: its first page's, when a multi-plane
    # program's pages share their offset
    offsets = np.full(dies_hit.size, -1, dtype=np.int64)
    if geometry["same_offset"]:
        first_die = dies_hit[0]
        # the first page per die, indexed by die
        if dies_hit[-1] - first_die < 4 * dies_hit.size + 64:
            lowest_page = np.full(dies_hit[-1] - first_die + 1, -1, dtype=np.int64)
            for j in range(ppns.size):
                die_pos = div(ppns[j], pages_per_die, die_shift) - first_die
                if lowest_page[die_pos] < 0 or ppns[j] < lowest_page[die_pos]:
                    lowest_page[die_pos] = ppns[j]
            offsets = lowest_page[dies_hit - first_die]
        else:
            for j in range(ppns.size):
                die_pos = int(np.searchsorted(dies_hit, div(ppns[j], pages_per_die, die_shift)))
                if offsets[die_pos] < 0 or ppns[j] < offsets[die_pos]:
                    offsets[die_pos] = ppns[j]
        for die_pos in range(dies_hit.size):
            block = div(offsets[die_pos], pages_per_block, block_shift)
            offsets[die_pos] -= block * pages_per_block
    # per lane: commands and one command's time (the largest of its dies'), channel
    # time and commands (summed), plane mask (a chip's dies each a run of bits) and the
    # offset of its first die
    ops_l = np.zeros(n_lanes, dtype=np.int64)
    busy_op = np.zeros(n_lanes, dtype=np.int64)
    chan_l = np.zeros(n_lanes, dtype=np.int64)
    cmds_l = np.zeros(n_lanes, dtype=np.int64)
    mask_l = np.zeros(n_lanes, dtype=np.int64)
    for lane_pos in range(n_lanes):
        for die_pos in range(lane_first[lane_pos], lane_first[lane_pos + 1]):
            cmd_busy = cmds[planes_per_cmd[die_pos]]["pcmd"] + _share(
                pages_d[die_pos] * page_data, ops_d[die_pos])
            ops_l[lane_pos] = max(ops_l[lane_pos], ops_d[die_pos])
            busy_op[lane_pos] = max(busy_op[lane_pos], cmd_busy)
            chan_l[lane_pos] += ops_d[die_pos] * cmd_busy
            cmds_l[lane_pos] += ops_d[die_pos]
            mask_l[lane_pos] += ((mask[die_pos]
                                  << ((dies_hit[die_pos] % dies_per_lane) * planes_per_die))
                                 if chip else mask[die_pos])
    res[0, :] = 0
    res[1, :] = 0
    res[2, :] = -1
    for run in range(n_ch):
        # the channel's device
        device = div(lanes_hit[channel_first[run]], lanes_per_device, device_shift)
        busy = 0
        for lane_pos in range(channel_first[run], channel_first[run + 1]):
            busy += chan_l[lane_pos]
        dev_first_in, dev_last_in = _at(first_in, device), _at(last_in, device)
        channel = div(lanes_hit[channel_first[run]], lanes_per_channel, channel_shift)
        channel_end = gap_book(ch_intervals, ch_meta, channel,
                               max(dev_first_in, dev_last_in - busy), busy)
        channel_start = channel_end - busy
        for lane_pos in range(channel_first[run], channel_first[run + 1]):
            # a lane programs once its first command's data is in, and its last command
            # cannot start before the channel has delivered everything; a lane of
            # several commands programs no page into a waiting one
            program_ready = max(channel_start + busy_op[lane_pos],
                                channel_end - (ops_l[lane_pos] - 1) * t_prog)
            lane = lanes_hit[lane_pos]
            merged = die_state[0][lane]["merged"]
            end = die_prog(die_state, lane, program_ready, ops_l[lane_pos] * t_prog,
                           mask_l[lane_pos] if ops_l[lane_pos] == 1 else 0,
                           offsets[lane_first[lane_pos]])
            if die_state[0][lane]["merged"] != merged:
                res[1, device] += 1
                res[0, device] += cmds_l[lane_pos] - 1
            else:
                res[0, device] += cmds_l[lane_pos]
            if end > res[2, device]:
                res[2, device] = end
    return 0
