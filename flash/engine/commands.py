"""The detailed model's command-level bookings, compiled: one call per transaction.

``read_cmds`` books a read's pages command by command as ``flash.detailed.DetailedModel``
describes (the commands formed as for a program, below): the command cycles, then tR on
the die (the longest page type of the command; a one-page command may overlap the
die's other one-page reads, ``plane_read``), then each plane's data-out in the channel's
earliest idle interval from the end of tR (the command cycles charged with the first),
and the die's cache register held until the command's first data-out starts. Under
MQSim's rules (``Geometry.convoy``: the chip lock and the data-out convoy) a command
also needs idle channel time outside the windows in which read data waits for the
channel (``command_slot``), each page's data waits from tR's end to its data-out
(those windows), and the chip is held until the command's last data-out ends.

``program_cmds`` books a host write's pages as the detailed model describes
(``flash.detailed``): the pages are formed into commands as
``flash.scheduler.CommandFormer.ops`` forms them (the pages of one die on distinct planes
share a multi-plane command, first fit in page order; the commands ordered round-robin
over the dies in order of first appearance), and each command is booked in that order:
the controller hands it to its die once the command ``die_queue_depth`` places ahead of
it on that die has finished (the die's queue of ends), its command cycles and data-in
take the channel's earliest idle interval once its last page has crossed the host link
(cut-through), and the die programs it (``die_prog``: it may join a program still
waiting in the die's queue). The rules are the engine's (``gap_book``, ``die_prog``);
this kernel only walks a transaction's commands without returning to Python between
them.

The die queues (``queues``, one row per die): column 0 the ends held (at most the depth),
column 1 the slot of the oldest, then the depth's slots of a ring of end times.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.engine.chunks import CH_FULL, LANE_FULL, WAIT_FULL, Lanes, command_slot
from flash.engine.dies import die_hold, die_prog, lane_full, plane_read
from flash.engine.gaps import FILL, gap_book, gap_cover, gap_room, gap_room_for
from tmhw.sim.jit import njit, njit_noref

I64 = npt.NDArray[np.int64]
#: ``program_cmds``' times: when the first page starts crossing the host link, each
#: page's share of the crossing, SLC mode's tPROG (-1: the cell's), the command to start at
TIMES = 4
#: ``program_cmds``' results: the latest program end, commands formed, commands booked
RESULTS = 3
#: ``read_cmds``' results: the first data-out's start (-1: none yet), the last one's end,
#: the commands booked, the next command to book
READ_RESULTS = 4


@njit_noref
def queue_issue(queues: I64, die: int, earliest: int) -> int:
    """When die ``die`` can take a new program or erase at ``earliest``: once the one
    ``depth`` places ahead of it has finished."""
    depth = queues.shape[1] - 2
    if queues[die, 0] == depth and queues[die, 2 + queues[die, 1]] > earliest:
        return int(queues[die, 2 + queues[die, 1]])
    return earliest


@njit_noref
def queue_done(queues: I64, die: int, end: int) -> None:
    """A program or erase on die ``die`` ends at ``end``: into its queue, the oldest out
    when the queue is full."""
    depth = queues.shape[1] - 2
    held, oldest = queues[die, 0], queues[die, 1]
    if held < depth:
        queues[die, 2 + (oldest + held) % depth] = end
        queues[die, 0] = held + 1
    else:
        queues[die, 2 + oldest] = end
        queues[die, 1] = (oldest + 1) % depth


@njit
def form_commands(ppns: I64, pages_per_plane: int, planes: int,
                  multi: bool) -> tuple[I64, I64, I64]:
    """``CommandFormer.ops`` of pages ``ppns``: per command in booking order its die, and
    its pages as a run of ``order`` (indices into ``ppns``) from ``first[k]`` to
    ``first[k + 1]``."""
    n = ppns.size
    if n == 1:  # one page, one command (the forming's arrays cost more than the page)
        return (ppns // (pages_per_plane * planes), np.arange(2, dtype=np.int64),
                np.zeros(1, dtype=np.int64))
    dies = np.empty(n, dtype=np.int64)        # distinct dies in order of first appearance
    n_dies = 0
    cmd_die = np.empty(n, dtype=np.int64)
    cmd_round = np.empty(n, dtype=np.int64)   # the command's place among its die's
    cmd_rank = np.empty(n, dtype=np.int64)    # its die's place among the dies
    cmd_mask = np.zeros(n, dtype=np.int64)
    page_cmd = np.empty(n, dtype=np.int64)
    per_die = np.zeros(n, dtype=np.int64)     # commands so far, per die rank
    n_cmds = 0
    for i in range(n):
        plane = ppns[i] // pages_per_plane
        die = plane // planes
        rank = -1
        for r in range(n_dies):
            if dies[r] == die:
                rank = r
                break
        if rank < 0:
            rank = n_dies
            dies[n_dies] = die
            n_dies += 1
        bit = 1 << (plane % planes)
        found = -1
        if multi:
            for k in range(n_cmds):
                if cmd_rank[k] == rank and not cmd_mask[k] & bit:
                    found = k
                    break
        if found < 0:
            found = n_cmds
            cmd_die[found], cmd_rank[found] = die, rank
            cmd_round[found] = per_die[rank]
            per_die[rank] += 1
            n_cmds += 1
        cmd_mask[found] |= bit
        page_cmd[i] = found
    # booking order: by round, then by the die's first appearance
    key = cmd_round[:n_cmds] * n + cmd_rank[:n_cmds]
    by = np.argsort(key, kind="mergesort")
    place = np.empty(n_cmds, dtype=np.int64)
    place[by] = np.arange(n_cmds)
    first = np.zeros(n_cmds + 1, dtype=np.int64)
    for i in range(n):
        first[place[page_cmd[i]] + 1] += 1
    for k in range(n_cmds):
        first[k + 1] += first[k]
    fill = first[:n_cmds].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        k = place[page_cmd[i]]
        order[fill[k]] = i
        fill[k] += 1
    return cmd_die[by], first, order


@njit
def program_cmds(lanes: Lanes, geometry_rec: npt.NDArray[np.void],
                 cmds: npt.NDArray[np.void], cell: npt.NDArray[np.void], ppns: I64,
                 queues: I64, times: I64, res: I64) -> int:
    """Pages ``ppns`` programmed command by command (module docstring), from command
    ``times[3]`` on. Into ``res`` (set by the caller before the first call: the first
    page's crossing, 0, 0): the latest end, the commands counted (one that joins a
    waiting program is not a command of its own), the next command to book. 0, or why
    it stopped before a command (``CH_FULL``, ``LANE_FULL``: grow, and call again from
    ``res[2]``). ``times[2]``: SLC mode's tPROG, or -1. A recording die lane needs room
    for a span a page."""
    die_state, ch_intervals, ch_meta = lanes[0], lanes[1], lanes[2]
    g = geometry_rec[0]
    pages_per_plane, planes = g["ppp"], g["planes"]
    dies_per_lane, chip = g["dies_per_lane"], g["chip_lock"] != 0
    pages_per_block, bits, page_data = g["ppb"], g["bits"], g["page_data"]
    first_in, per_page, t_slc = times[0], times[1], times[2]
    cmd_die, first, order = form_commands(ppns, pages_per_plane, planes, g["multi"] != 0)
    n_cmds = cmd_die.size
    for k in range(times[3], n_cmds):
        die = cmd_die[k]
        lane = die // dies_per_lane
        ch = lane // g["lanes_per_channel"]
        if not gap_room(ch_intervals, ch_meta, ch):
            res[2] = k
            return CH_FULL
        if lane_full(die_state, lane):
            res[2] = k
            return LANE_FULL
        n_planes = first[k + 1] - first[k]
        issue = queue_issue(queues, die, first_in)
        channel_ps = cmds[n_planes]["pcmd"] + n_planes * page_data
        last, t_prog, mask = 0, 0, 0
        for j in range(first[k], first[k + 1]):
            i = order[j]
            last = max(last, i)
            t_prog = max(t_prog, cell[(ppns[i] % pages_per_block) % bits]["t_prog"])
            if g["multi"]:
                bit = (ppns[i] // pages_per_plane) % planes
                if chip:
                    bit += (die % dies_per_lane) * planes
                mask |= 1 << bit
        if t_slc >= 0:
            t_prog = t_slc
        # cut-through: the last page of the command must have crossed the host link
        arrive = first_in + (last + 1) * per_page
        channel_end = gap_book(ch_intervals, ch_meta, ch, max(issue, arrive - channel_ps),
                               channel_ps)
        page = ppns[order[first[k]]] % pages_per_block if g["same_offset"] else -1
        merged = die_state[0][lane]["merged"]
        die_end = die_prog(die_state, lane, channel_end, t_prog, mask, page)
        if die_state[0][lane]["merged"] == merged:   # not joined a waiting command
            res[1] += 1
        queue_done(queues, die, die_end)
        res[0] = max(res[0], die_end)
        res[2] = k + 1
    return 0


@njit
def read_cmds(lanes: Lanes, geometry_rec: npt.NDArray[np.void],
              cmds: npt.NDArray[np.void], cell: npt.NDArray[np.void], ppns: I64,
              data_ps: I64, earliest: int, res: I64) -> int:
    """Pages ``ppns`` read command by command (module docstring) from ``earliest``, page
    ``i``'s data-out taking ``data_ps[i]`` on the channel, from command ``res[3]`` on.
    Into ``res`` (set by the caller before the first call: -1, ``earliest``, 0, 0): the
    start of the first data-out, the end of the last, the commands booked, the next
    command to book. 0, or ``CH_FULL`` or ``WAIT_FULL`` (nothing of that command booked:
    grow the channels' or the wait windows' rows, and call again). A recording die lane
    needs room for two spans a page."""
    die_state, ch_intervals, ch_meta, wait_intervals, wait_meta = lanes
    g = geometry_rec[0]
    convoy = g["convoy"] != 0
    pages_per_block, bits = g["ppb"], g["bits"]
    dies_per_lane, lanes_per_channel = g["dies_per_lane"], g["lanes_per_channel"]
    plane_reads = g["plane_reads"]
    setup_first = cmds[1]["rsetup"]
    setup_next = cmds[2]["rsetup"] - setup_first if cmds.size > 2 else 0
    cmd_die, first, order = form_commands(ppns, g["ppp"], g["planes"], g["multi"] != 0)
    for k in range(res[3], cmd_die.size):
        die = cmd_die[k]
        lane = die // dies_per_lane
        ch = lane // lanes_per_channel
        n_planes = first[k + 1] - first[k]
        if not gap_room_for(ch_intervals, ch_meta, ch, n_planes):
            res[3] = k
            return CH_FULL
        if convoy and wait_meta[FILL, ch] + n_planes > wait_intervals.shape[2]:
            res[3] = k
            return WAIT_FULL
        cmd = cmds[n_planes]["rcmd"]
        t_r = 0
        for j in range(first[k], first[k + 1]):
            t_r = max(t_r, cell[(ppns[order[j]] % pages_per_block) % bits]["t_r"])
        # reads wait in the scheduler's priority queue, not in the die's
        issue = earliest
        if convoy:  # the command needs idle channel time, between drains
            read_free = die_state[0][lane]["rd"]
            issue = command_slot(ch_intervals, ch_meta, wait_intervals, wait_meta, ch,
                                 issue if issue > read_free else read_free, cmd)
        die_end = plane_read(die_state, lane, issue + cmd, t_r,
                             plane_reads if n_planes == 1 else 1, 0, -1)
        data_end = die_end
        op_first = -1
        for j in range(first[k], first[k + 1]):
            # the command cycles go with the first data-out: a controller slips them
            # between transfers rather than queueing them behind data booked for later
            lead = cmd if j == first[k] else 0
            data_out = (setup_first if j == first[k] else setup_next) \
                + data_ps[order[j]] + lead
            data_end = gap_book(ch_intervals, ch_meta, ch, data_end - lead, data_out)
            start = data_end - data_out + lead
            if convoy:  # its data waits from tR's end until its data-out starts
                gap_cover(wait_intervals, wait_meta, ch, die_end, start)
            if op_first < 0:
                op_first = start
            if res[0] < 0 or start < res[0]:
                res[0] = start
        # the command's data sits in the cache register until its data-out starts;
        # under MQSim's rules the chip is busy until its data is out
        if n_planes > 1 or plane_reads == 1:
            die_hold(die_state, lane, data_end if convoy else op_first)
        if data_end > res[1]:
            res[1] = data_end
        res[2] += 1
        res[3] = k + 1
    return 0
