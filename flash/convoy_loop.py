"""The flash bench's closed loop of reads under ``flash.compat = "mqsim"``, compiled: the
events ``flash.convoy`` schedules (a command's end, a tR's end, a page's data-out, a
request's end on the host link) and the bench's workers' resumptions, in the order
SimPy processes them (time, then the order they were scheduled in), on one heap in
one call, with the same arbitration (``ConvoyArbiter``: the data-out convoy, the chip
lock, multi-plane forming, round robin), the same NVMe queue and backlog
(``EventReads``) and the same bookings (``Ssd.read_map``'s fetch, ``Ssd.read_done``'s
store-and-forward transfer and ``_finish``). The event path is the reference it is
tested against (``tests/flash/test_flash_read_loop.py``); this is what lets a device
study under MQSim's rules run its requests at a few microseconds each instead of some
thirty.

Only one device, reads of whole pages or parts of pages the controller's DRAM never
keeps (no read cache, or whole pages), with nothing in that DRAM, and nothing recorded.

A mix (fio's ``rwmixread``) of reads and writes within a page each, through no buffer
and no read cache keeping parts of pages, is this loop too: a read's page is looked
up when the device takes it (``_look_up``, the FTL's map as the writes before it left
it), and a write is booked when its worker issues it, as ``Ssd.write`` books it
(``transport``, then the worker's timeout): placed as ``FTL.write1`` places it
(``kernels.write_open``), its data on the link's write direction, its program command
by command (``program_cmds``), ``_finish``. A
write the kernel does not place (a block to open, a collection, a segment of the map
to make dense) is handed to Python, and the loop goes on from it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.detailed import DetailedModel
from flash.engine.chunks import LANE_FULL, NO_WAIT
from flash.engine.commands import RESULTS, TIMES, program_cmds
from flash.engine.dies import DieState, die_hold, die_prune, lane_full, plane_read
from flash.engine.gaps import Meta, gap_book, gap_prune, gap_room
from flash.ftl.kernels import Blocks, Fresh, L2p, write_open
from flash.host import ctl_take, nvme_done, nvme_fetch
from flash.intmap import im_has_room
from flash.pages import Device, Lookup, PageBatch, page_of
from flash.scheduler import TimingBase
from flash.ssd import Ssd
from tmhw.sim.jit import njit, njit_inline, njit_noref
from tmhw.sim.rowheap import row_pop, row_push

I64 = npt.NDArray[np.int64]

#: the loop's scalars (one record): the bench's requests, queue depth, the next request
#: to issue and the workers started; the event heap's rows and the next event id;
#: the device's reads held and the NVMe queue (``flash.pages.LOOP``'s fields: ``nq``,
#: ``depth``, ``waits``), its backlog (a ring of requests: first, count), the controller
#: (when it can take a command, its time per command); the device's activity
#: (``Ssd.activity``) and the request being finished's fetch time (``t0``); read
#: commands; the time of the last event, the cmd pool's fill; the device's first
#: channel, lane and page (shared numbering), lanes per channel, multi-plane reads,
#: the link's read time per request; why the loop stopped. A mix's: whether it is one,
#: the write a worker issued and the loop has not booked yet (-1: none) and whether its
#: page is placed, whether a plane is under the soft collection threshold (every write
#: then goes to Python), the FTL's write sequence and the writes it placed, program
#: commands and pages programmed, reads of pages never written and pages read (looked
#: up); the link's write time per request, store and forward (MQSim's rules), the
#: device's first page
SCALARS = np.dtype([(name, np.int64) for name in (
    "count", "qd", "nxt", "started", "nev", "eid", "holding", "nq", "depth", "waits",
    "bhead", "bn", "ctl", "ctl_ps", "transfers", "active", "active_until", "t0", "cmds",
    "now", "npool", "ch0", "lane0", "cpc", "multi", "dur", "stop", "mix", "pending",
    "wplaced", "low", "seq", "runs", "wcmds", "wpages", "unmapped", "rpages", "wdur",
    "sf", "ppn0")])
#: event kinds: a channel's command ends (``_free``), a command's tR ends (``_ready``),
#: a page's data is out (``_out``), a request's transfer to the host ends
#: (``_complete``), a worker resumes with its request's completion
FREE, READY, OUT, COMPLETE, RESUME = range(5)
#: the event heap's columns: time, id (the order scheduled), kind, and two arguments
EVENT_COLS = 5
#: ``stop``: a channel's or the link's row is full (the caller grows them and calls
#: again); the loop is done; a die lane's row is full (the caller makes room); a mix's
#: write (``pending``) is Python's (``Ssd.write``) or its page made a segment of the
#: map's dict full (the caller makes it dense and calls again)
ROOM, DONE, LANE_ROOM, BY_COMMAND, DENSIFY = 1, 2, 3, 4, 5
#: bookings between prunes (``Ssd._finish``)
PRUNE_EVERY = 256

#: the reads (one per page of each request, in request order): chip lane (the device's
#: own numbering), die, plane, page offset in its block, tR, data-out time of its bytes,
#: request
Reads = tuple[I64, I64, I64, I64, I64, I64, I64]
#: the device's rows: channels (intervals, numbers), the die lanes, the link, the wait
#: windows
Rows = tuple[I64, Meta, DieState, I64, Meta, I64, Meta]
#: a mix (``ConvoyLoop``): each request a read or not, its logical page, the map as
#: reads look it up, a read's page geometry (``_look_up``) and tR per page offset; the
#: FTL's run state (``FTL.run_state``), ``write_open``'s scratch (its ppn, the dict's
#: counts per segment, the page if sparse, the counts), the model (its device
#: records, its dies' queues, ``program_cmds``' times and results, the page in the
#: lanes' numbering)
Mix = tuple[npt.NDArray[np.bool_], I64, Lookup, I64, I64,
            tuple[npt.NDArray[np.void], tuple[I64, I64], L2p, Blocks, Fresh, I64, I64],
            tuple[I64, npt.NDArray[np.int32], I64, I64, I64],
            tuple[Device, I64, I64, I64, I64]]
#: ``_look_up``'s geometry: pages per plane, planes per die, pages per block, dies per
#: chip, the chip lock, bits per cell, a whole page's data-out time
PPP, PL, PPB, DPC, CHIP, BITS, DATA = range(7)


@njit_inline
def _schedule(ev: I64, s: np.void, t: int, kind: int, a: int, b: int) -> None:
    """An event at ``t`` after every one scheduled before it at that time."""
    n = s["nev"]
    ev[n, 0] = t
    ev[n, 1] = s["eid"]
    ev[n, 2] = kind
    ev[n, 3] = a
    ev[n, 4] = b
    s["eid"] += 1
    s["nev"] = row_push(ev, n)


@njit
def convoy_loop(rows: Rows, reads: Reads, req_first: I64, req_n: I64, phy: tuple[I64, I64],
                sc: npt.NDArray[np.void], lanes_q: tuple[I64, I64, I64, I64],
                chans: tuple[I64, I64, I64, I64], wnext: I64, x: I64,
                reqs: tuple[I64, I64, I64, I64, I64], ev: I64, pool: I64, backlog: I64,
                queue: I64, lat: I64, done: I64, upto: int, mix: Mix) -> None:
    """Run the loop (module docstring) until the request ``upto`` has been issued (all
    done when ``upto`` is past the last), or a row to book on is full, or a mix's write
    is Python's (``stop``)."""
    ch_iv, ch_meta, dies, liv, lmeta, wiv, wmeta = rows
    s = sc[0]
    s["stop"] = 0
    nch = chans[0].size
    while True:
        # room for what the next step may book: one booking per channel and one on the
        # link's read direction
        for c in range(nch):
            if not gap_room(ch_iv, ch_meta, s["ch0"] + c):
                s["stop"] = ROOM
                return
        if not gap_room(liv, lmeta, 0):
            s["stop"] = ROOM
            return
        if s["pending"] >= 0:  # a mix's write its worker issued (the last of its step)
            why = _write(rows, s, lanes_q, chans, ev, queue, mix)
            if why:
                s["stop"] = why
                return
            continue
        if s["started"] < s["qd"] and s["nxt"] < s["count"]:
            # the workers start at 0, in order, before any event (SimPy's URGENT
            # initialisation)
            s["started"] += 1
            _worker_next(rows, reads, req_first, req_n, phy, s, lanes_q, chans, wnext, x,
                         reqs, ev, pool, backlog, queue, mix)
            continue
        if s["nxt"] >= upto or s["nev"] == 0:
            if s["nev"] == 0:
                s["stop"] = DONE
            return
        t, kind, a, b = ev[0, 0], ev[0, 2], ev[0, 3], ev[0, 4]
        s["nev"] = row_pop(ev, s["nev"])
        s["now"] = t
        if kind == FREE:
            chans[0][a] = 0
            _step(rows, reads, phy, s, lanes_q, chans, wnext, x, ev, pool, a)
        elif kind == READY:  # the command's pages wait for the channel, in its order
            for i in range(b + 1, b + 1 + pool[b]):
                _wait(chans, wnext, a, pool[i])
            _step(rows, reads, phy, s, lanes_q, chans, wnext, x, ev, pool, a)
        elif kind == OUT:
            _out(rows, reads, s, lanes_q, chans, wnext, x, reqs, ev, queue, a, b, t)
            _step(rows, reads, phy, s, lanes_q, chans, wnext, x, ev, pool, a)
        elif kind == COMPLETE:
            _schedule(ev, s, t, RESUME, a, b)
            if s["bn"]:
                i = backlog[s["bhead"]]
                s["bhead"] = (s["bhead"] + 1) % backlog.size
                s["bn"] -= 1
                _start(rows, reads, req_first, req_n, s, lanes_q, chans, wnext, x, reqs,
                       ev, pool, queue, phy, i, mix)
        else:  # RESUME: the worker's request is done; it issues the next
            lat[a] = b - reqs[4][a]
            done[a] = b
            if s["mix"] and not mix[0][a]:
                # a write: reads waiting for its place in the NVMe queue start
                # (``EventReads.wake``, its timeout's callback before the worker's)
                while s["bn"]:
                    while s["nq"] and queue[0, 0] <= t:  # (``HostInterface.held``)
                        s["nq"] = row_pop(queue, s["nq"])
                    if s["holding"] + s["nq"] >= s["depth"]:
                        break
                    i = backlog[s["bhead"]]
                    s["bhead"] = (s["bhead"] + 1) % backlog.size
                    s["bn"] -= 1
                    _start(rows, reads, req_first, req_n, s, lanes_q, chans, wnext, x,
                           reqs, ev, pool, queue, phy, i, mix)
            if s["nxt"] < s["count"]:
                _worker_next(rows, reads, req_first, req_n, phy, s, lanes_q, chans, wnext,
                             x, reqs, ev, pool, backlog, queue, mix)


@njit_inline
def _worker_next(rows: Rows, reads: Reads, req_first: I64, req_n: I64,
                 phy: tuple[I64, I64], s: np.void, lanes_q: tuple[I64, I64, I64, I64],
                 chans: tuple[I64, I64, I64, I64], wnext: I64, x: I64,
                 reqs: tuple[I64, I64, I64, I64, I64], ev: I64, pool: I64, backlog: I64,
                 queue: I64, mix: Mix) -> None:
    """A worker issues the bench's next request now (``EventReads.read``): into the
    backlog if the device holds its queue's depth, else started; a mix's write is
    ``pending``, booked next (``_write``)."""
    i = s["nxt"]
    s["nxt"] += 1
    now = s["now"]
    reqs[4][i] = now
    if s["mix"] and not mix[0][i]:
        s["pending"] = i
        return
    while s["nq"] and queue[0, 0] <= now:  # (``HostInterface.held``)
        s["nq"] = row_pop(queue, s["nq"])
    if s["holding"] + s["nq"] >= s["depth"]:
        s["waits"] += 1
        backlog[(s["bhead"] + s["bn"]) % backlog.size] = i
        s["bn"] += 1
        return
    _start(rows, reads, req_first, req_n, s, lanes_q, chans, wnext, x, reqs, ev, pool,
           queue, phy, i, mix)


@njit_inline
def _start(rows: Rows, reads: Reads, req_first: I64, req_n: I64, s: np.void,
           lanes_q: tuple[I64, I64, I64, I64], chans: tuple[I64, I64, I64, I64],
           wnext: I64, x: I64, reqs: tuple[I64, I64, I64, I64, I64], ev: I64, pool: I64,
           queue: I64, phy: tuple[I64, I64], i: int, mix: Mix) -> None:
    """Request ``i`` taken by the device now (``EventReads._start``): the NVMe queue
    and the controller take it (``Ssd.read_map``'s fetch), its pages queue at their
    chips (a mix's page looked up now: ``_look_up``), and each channel they touch
    steps, in channel order."""
    if s["mix"]:
        _look_up(reads, s, mix, i)
    s["holding"] += 1
    t = _fetch(queue, s)
    left, rstart, rend, t0 = reqs[0], reqs[1], reqs[2], reqs[3]
    t0[i] = t
    left[i] = req_n[i]
    rstart[i] = -1
    rend[i] = 0
    qhead, qtail, qnext = lanes_q[0], lanes_q[1], lanes_q[2]
    lane_of = reads[0]
    cpc = s["cpc"]
    touched = np.zeros(chans[0].size, dtype=np.bool_)
    for r in range(req_first[i], req_first[i] + req_n[i]):
        ln = lane_of[r]
        _append(qhead, qtail, qnext, ln, r)
        touched[ln // cpc] = True
    for c in range(touched.size):
        if touched[c]:
            _step(rows, reads, phy, s, lanes_q, chans, wnext, x, ev, pool, c)


@njit_inline
def _fetch(queue: I64, s: np.void) -> int:
    """When the NVMe queue and the controller take a command the device got now
    (``HostInterface.fetch``)."""
    return ctl_take(s, nvme_fetch(queue, s, s["now"]))


@njit_inline
def _append(head: I64, tail: I64, nxt: I64, q: int, r: int) -> None:
    """Read ``r`` last in line ``q`` (a list through ``nxt``, its ends in ``head`` and
    ``tail``, -1: empty)."""
    nxt[r] = -1
    if tail[q] < 0:
        head[q] = r
    else:
        nxt[tail[q]] = r
    tail[q] = r


@njit_inline
def _wait(chans: tuple[I64, I64, I64, I64], wnext: I64, c: int, r: int) -> None:
    """Read ``r``'s data waits for channel ``c`` (last in line)."""
    _append(chans[2], chans[3], wnext, c, r)


@njit_inline
def _step(rows: Rows, reads: Reads, phy: tuple[I64, I64], s: np.void,
          lanes_q: tuple[I64, I64, I64, I64], chans: tuple[I64, I64, I64, I64],
          wnext: I64, x: I64, ev: I64, pool: I64, c: int) -> None:
    """``ConvoyArbiter._step`` of channel ``c`` now: if idle, its oldest waiting
    data-out, else a command to the next idle chip with queued reads."""
    busy, turn, whead, wtail = chans
    if busy[c]:
        return
    now = s["now"]
    ch_iv, ch_meta = rows[0], rows[1]
    r = whead[c]
    if r >= 0:
        whead[c] = wnext[r]
        if whead[c] < 0:
            wtail[c] = -1
        end = gap_book(ch_iv, ch_meta, s["ch0"] + c, now, x[r])
        busy[c] = 1
        _schedule(ev, s, end, OUT, c, r)
        return
    cpc = s["cpc"]
    qhead, held = lanes_q[0], lanes_q[3]
    base = c * cpc
    for j in range(cpc):
        k = (turn[c] + j) % cpc
        if not held[base + k] and qhead[base + k] >= 0:
            turn[c] = (k + 1) % cpc
            _issue(rows, reads, phy, s, lanes_q, chans, x, ev, pool, c, base + k)
            return


@njit_inline
def _issue(rows: Rows, reads: Reads, phy: tuple[I64, I64], s: np.void,
           lanes_q: tuple[I64, I64, I64, I64], chans: tuple[I64, I64, I64, I64], x: I64,
           ev: I64, pool: I64, c: int, lane: int) -> None:
    """``ConvoyArbiter._issue``: a read command to chip ``lane`` now, of its oldest
    page's die, with that die's queued pages on other planes at the same offset (in
    queue order); the command's members go to the pool (count, then the reads)."""
    qhead, qtail, qnext, held = lanes_q
    _, die, plane, off, t_r, xdata, _ = reads
    rcmd, rsetup = phy
    first = qhead[lane]
    qhead[lane] = qnext[first]
    if qhead[lane] < 0:
        qtail[lane] = -1
    at = s["npool"]
    pool[at + 1] = first
    k = 1
    if s["multi"]:
        planes = 1 << plane[first]
        prev = -1
        r = qhead[lane]
        while r >= 0:
            nxt = qnext[r]
            if die[r] == die[first] and off[r] == off[first] and not planes >> plane[r] & 1:
                planes |= 1 << plane[r]
                pool[at + 1 + k] = r
                k += 1
                if prev < 0:  # out of the chip's queue
                    qhead[lane] = nxt
                else:
                    qnext[prev] = nxt
                if nxt < 0:
                    qtail[lane] = prev
            else:
                prev = r
            r = nxt
    pool[at] = k
    s["npool"] = at + 1 + k
    setup = rsetup[k]
    longest = 0
    for i in range(at + 1, at + 1 + k):  # each page's data-out: its share of the setup
        r = pool[i]
        x[r] = setup // k + xdata[r]
        if t_r[r] > longest:
            longest = t_r[r]
    x[first] += setup % k
    now = s["now"]
    c_end = gap_book(rows[0], rows[1], s["ch0"] + c, now, rcmd[k])
    d_end = plane_read(rows[2], s["lane0"] + lane, c_end, longest, 1, 0, -1)
    s["cmds"] += 1
    held[lane] = k
    chans[0][c] = 1
    _schedule(ev, s, c_end, FREE, c, 0)
    _schedule(ev, s, d_end, READY, c, at)


@njit_inline
def _out(rows: Rows, reads: Reads, s: np.void, lanes_q: tuple[I64, I64, I64, I64],
         chans: tuple[I64, I64, I64, I64], wnext: I64, x: I64,
         reqs: tuple[I64, I64, I64, I64, I64], ev: I64, queue: I64, c: int, r: int,
         end: int) -> None:
    """``ConvoyArbiter._out``: read ``r``'s data is out at ``end`` (now); its request,
    once all its pages are, crosses the host link after the last of them
    (``Ssd.read_done`` under MQSim's store and forward) and finishes
    (``Ssd._finish``)."""
    held = lanes_q[3]
    lane = reads[0][r]
    chans[0][c] = 0
    held[lane] -= 1
    if not held[lane]:  # the chip is idle again
        die_hold(rows[2], s["lane0"] + lane, end)
    i = reads[6][r]
    left, rstart, rend, t0 = reqs[0], reqs[1], reqs[2], reqs[3]
    start = end - x[r]
    if rstart[i] < 0 or start < rstart[i]:
        rstart[i] = start
    if end > rend[i]:
        rend[i] = end
    left[i] -= 1
    if left[i]:
        return
    x_end = max(t0[i], rend[i])
    fin = gap_book(rows[3], rows[4], 0, x_end, s["dur"])
    if x_end > fin:
        fin = x_end
    _finish(rows, s, lanes_q, chans, queue, t0[i], fin)
    s["holding"] -= 1
    _schedule(ev, s, fin, COMPLETE, i, fin)


@njit_inline
def _finish(rows: Rows, s: np.void, lanes_q: tuple[I64, I64, I64, I64],
            chans: tuple[I64, I64, I64, I64], queue: I64, t: int, fin: int) -> None:
    """``Ssd._finish`` of a request the device took at ``t``, complete at ``fin``."""
    nvme_done(queue, s, fin)
    s["transfers"] += 1
    if s["transfers"] % PRUNE_EVERY == 0:
        ch0, nch = s["ch0"], chans[0].size
        gap_prune(rows[0], rows[1], t, ch0, ch0 + nch)
        die_prune(rows[2], s["lane0"], s["lane0"] + lanes_q[0].size, t)
        gap_prune(rows[5], rows[6], t, ch0, ch0 + nch)
        gap_prune(rows[3], rows[4], t, 0, 1)
        gap_prune(rows[3], rows[4], t, 1, 2)
    if fin > s["active_until"]:
        s["active"] += fin - max(t, s["active_until"])
        s["active_until"] = fin


@njit_inline
def _look_up(reads: Reads, s: np.void, mix: Mix, i: int) -> None:
    """A mix's read ``i`` (its one page, ``reads``' row ``i``): the page the FTL maps it
    to now (``flash.pages.page_of``: a page never written where sequential
    preconditioning put it, counted in ``unmapped``), its chip, die, plane, offset, tR
    and data-out time, as ``ConvoyArbiter.submit`` takes them."""
    lpns, lookup, rg, t_r_of = mix[1], mix[2], mix[3], mix[4]
    ppn, unmapped = page_of(lookup, lpns[i])
    s["unmapped"] += unmapped
    s["rpages"] += 1
    g = ppn + s["ppn0"]
    plane_g = g // rg[PPP]
    die = plane_g // rg[PL]
    off = g % rg[PPB]
    reads[0][i] = (die // rg[DPC] if rg[CHIP] else die) - s["lane0"]
    reads[1][i] = die
    reads[2][i] = plane_g % rg[PL]
    reads[3][i] = off
    reads[4][i] = t_r_of[off % rg[BITS]]
    reads[5][i] = rg[DATA]
    reads[6][i] = i


@njit_inline
def _write(rows: Rows, s: np.void, lanes_q: tuple[I64, I64, I64, I64],
           chans: tuple[I64, I64, I64, I64], ev: I64, queue: I64, mix: Mix) -> int:
    """A mix's write (``pending``, issued now) as ``Ssd.write`` books one page: placed
    as ``FTL.write1`` places it (``write_open``; once, ``wplaced``), taken by the NVMe
    queue and the controller, its data on the link's write direction, its program
    from the data's first time on the link or, store and forward, its last
    (``program_cmds``), ``_finish``; its worker resumes at its end. 0 once booked, or
    why not, with nothing of it booked: a plane under the soft collection threshold or
    a page the kernel does not place (``BY_COMMAND``), its segment of the map's dict
    made full (``DENSIFY``: placed), a row full (the link's, ``ROOM``; its die lane's,
    ``LANE_ROOM``, its page in the lanes' numbering in ``ppns``; the channels' are
    checked before each step)."""
    i = s["pending"]
    fgeo, stripes, l2p, blocks, _, _, _ = mix[5]
    out, per_seg, sparse, res1, seq1 = mix[6]
    dev, queues, ptimes, pres, ppns = mix[7]
    if not s["wplaced"]:
        if s["low"] or not im_has_room(l2p[0], l2p[1], 1):
            return BY_COMMAND
        seq1[0] = s["seq"]
        res1[0] = res1[1] = 0
        if not write_open(mix[1][i:i + 1], fgeo, stripes[0], l2p, blocks, seq1,
                          (out, per_seg, sparse, res1), 0):
            return BY_COMMAND
        s["seq"] = seq1[0]
        s["runs"] += 1
        s["wplaced"] = 1
        if res1[1]:
            return DENSIFY
    dies = rows[2]
    liv, lmeta = rows[3], rows[4]
    if not gap_room(liv, lmeta, 1):
        return ROOM
    geo, cmds, cell = dev
    g = geo[0]
    ppns[0] = out[0] + s["ppn0"]
    # (``program_cmds``' other refusal: the channels have room, checked before the step)
    if lane_full(dies, ppns[0] // g["ppp"] // g["planes"] // g["dies_per_lane"]):
        return LANE_ROOM
    t = _fetch(queue, s)
    dur = s["wdur"]
    l_end = gap_book(liv, lmeta, 1, t, dur)
    first_in = l_end if s["sf"] else l_end - dur
    ptimes[0], ptimes[1], ptimes[2], ptimes[3] = first_in, l_end - first_in, -1, 0
    pres[0], pres[1], pres[2] = first_in, 0, 0
    program_cmds((dies, rows[0], rows[1], *NO_WAIT), geo, cmds, cell, ppns, queues, ptimes,
                 pres)
    s["wcmds"] += pres[1]
    s["wpages"] += 1
    end = pres[0]
    _finish(rows, s, lanes_q, chans, queue, t, end)
    s["wplaced"] = 0
    s["pending"] = -1
    _schedule(ev, s, end, RESUME, i, end)
    return 0


@njit_noref
def resume_at(ev: I64, sc: npt.NDArray[np.void], i: int, end: int) -> None:
    """Request ``i``'s worker resumes at ``end`` (a mix's write ``Ssd.write`` booked:
    its timeout, scheduled now)."""
    s = sc[0]
    _schedule(ev, s, end, RESUME, i, end)
    s["pending"] = -1


class ConvoyLoop:
    """The compiled loop (module docstring) of requests of ``nbytes`` at ``addresses``,
    ``qd`` outstanding, on device ``ssd`` of an idle ``EventReads`` (``m``, ``turn``:
    its arbiter's model and round-robin turns): ``run`` goes on until a request has
    been issued, ``finish`` gives the device its state back and the time of the
    loop's last event. Made by ``make`` only where it books what the events
    book. A mix (``is_read``: each request a read or not; ``batch``: the device's
    ``flash.pages.PageBatch``, its writes' path) has requests within a page each."""

    @staticmethod
    def make(ssd: Ssd, m: TimingBase, turn: list[int], addresses: I64, nbytes: int,
             qd: int, is_read: npt.NDArray[np.bool_] | None = None,
             batch: PageBatch | None = None) -> ConvoyLoop | None:
        """The loop, or None where it would book otherwise than the events: the
        device's DRAM holding a page or keeping the parts of pages read (a read
        cache), or anything recorded; for a mix, also requests not of one whole page
        or writes ``PageBatch.write_loop`` would decline (a write buffer, an SLC
        cache). (The caller checks that the reads by events are idle,
        ``EventReads.idle``.)"""
        page = ssd.page
        partial = bool((addresses % page).any()) or nbytes % page != 0
        if (not ssd.cache.holds_nothing() or (ssd.cache.read_pages and partial)
                or m.dies.record or ssd.host.links.record or m.waiting is None):
            return None
        if is_read is not None and (
                batch is None or nbytes > page or not isinstance(m, DetailedModel)
                or bool((addresses % page + nbytes > page).any())
                or ssd.cache.write_pages > 0 or batch.declines_writes(addresses, nbytes)):
            return None
        return ConvoyLoop(ssd, m, turn, addresses, nbytes, qd, is_read, batch)

    def __init__(self, ssd: Ssd, m: TimingBase, turn: list[int], addresses: I64,
                 nbytes: int, qd: int, is_read: npt.NDArray[np.bool_] | None = None,
                 batch: PageBatch | None = None) -> None:
        self.ssd = ssd
        self.m = m
        self.turn = turn
        f = m.former
        page = ssd.page
        count = int(addresses.size)
        self.count = count
        self.nbytes = nbytes
        lo = addresses // page
        phy = m.phy
        self.mixed = is_read is not None
        if is_read is None:
            req_n = (addresses + nbytes + page - 1) // page - lo
            req_first = np.zeros(count, dtype=np.int64)
            np.cumsum(req_n[:-1], out=req_first[1:])
            total = int(req_n.sum())
            self.reads, self.pages = self._pages(addresses, nbytes, req_first, req_n)
            is_read = np.zeros(0, dtype=np.bool_)
        else:  # a mix: one page each, a read's looked up when the device takes it
            req_n = np.ones(count, dtype=np.int64)
            req_first = np.arange(count, dtype=np.int64)
            total = count
            z = [np.zeros(count, dtype=np.int64) for _ in range(7)]
            self.reads = (z[0], z[1], z[2], z[3], z[4], z[5], z[6])
            self.pages = (0, 0, 0)  # (counted as they are looked up: ``rpages``)
        self.req_first, self.req_n = req_first, req_n
        self.phy = (phy.rcmd_a, phy.rsetup_a)
        self.is_read = is_read
        self.lpns = lo
        self.addresses = addresses
        self.batch = batch
        self.rg = np.array([f.ppp, f.P, m.ppb, f.dies_per_chip, int(f.chip_lock), m.bits,
                            phy.page_data if nbytes == page else phy.data_ps(nbytes)],
                           dtype=np.int64)
        self.t_r_of = np.array(m.t_r_of, dtype=np.int64)
        #: a write's ppn, the dict's counts per segment (the FTL's), its page if sparse,
        #: the counts and the write sequence (``write_open``'s); ``program_cmds``' times,
        #: results and the page in the lanes' numbering
        self.one = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
                    np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.int64))
        self.prog = (np.zeros(TIMES, dtype=np.int64), np.zeros(RESULTS, dtype=np.int64),
                     np.zeros(1, dtype=np.int64))
        self._no_queues = np.zeros((1, 1), dtype=np.int64)
        host = ssd.host
        self.queue, nq = host.queue_rows()
        nch = m.ch1 - m.ch0
        lanes = m.lane1 - m.lane0
        self.sc = np.zeros(1, dtype=SCALARS)
        s = self.sc[0]
        transfers, active, active_until = ssd.activity()
        for name, v in (("count", count), ("qd", qd), ("nq", nq), ("depth", host.depth),
                        ("waits", host.queue_waits), ("ctl", host.ctl_free),
                        ("ctl_ps", host.ctl_ps), ("transfers", transfers),
                        ("active", active), ("active_until", active_until),
                        ("ch0", m.ch0), ("lane0", m.lane0), ("cpc", f.lanes_per_channel),
                        ("multi", int(f.multi)), ("dur", host.read_ps(nbytes)),
                        ("mix", int(self.mixed)), ("pending", -1),
                        ("seq", ssd.ftl.blocks.seq), ("wdur", host.write_ps(nbytes)),
                        ("sf", int(ssd.store_forward)), ("ppn0", m.ppn0)):
            s[name] = v
        none = np.full(lanes, -1, dtype=np.int64)
        self.lanes_q = (none, none.copy(), np.full(total, -1, dtype=np.int64),
                        np.zeros(lanes, dtype=np.int64))
        self.chans = (np.zeros(nch, dtype=np.int64), np.array(turn, dtype=np.int64),
                      np.full(nch, -1, dtype=np.int64), np.full(nch, -1, dtype=np.int64))
        self.wnext = np.full(total, -1, dtype=np.int64)
        self.x = np.zeros(total, dtype=np.int64)
        self.reqs = (np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64),
                     np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64),
                     np.zeros(count, dtype=np.int64))
        # events pending at once: a command's two and a data-out per channel, a tR's
        # end per read outstanding, a completion and a resumption per worker
        most = int(req_n.max())
        self.ev = np.zeros((3 * nch + 2 * qd * most + 2 * qd + 8, EVENT_COLS),
                           dtype=np.int64)
        self.pool = np.zeros(2 * total, dtype=np.int64)
        self.backlog = np.zeros(qd + 1, dtype=np.int64)

    def _pages(self, addresses: I64, nbytes: int, req_first: I64, req_n: I64
               ) -> tuple[Reads, tuple[int, int, int]]:
        """Reads' pages (one per page of each request, ``Reads``), looked up before the
        loop starts (no write comes between), and the pages, bytes wanted and pages
        never written among them."""
        ssd, m = self.ssd, self.m
        f = m.former
        page = ssd.page
        count = int(addresses.size)
        total = int(req_n.sum())
        lo = addresses // page
        lpns = np.repeat(lo, req_n) + (np.arange(total, dtype=np.int64)
                                       - np.repeat(req_first, req_n))
        addr = np.repeat(addresses, req_n)
        nb = (page - np.maximum(addr - lpns * page, 0)
              - np.maximum((lpns + 1) * page - (addr + nbytes), 0))
        ftl = ssd.ftl
        ppns = ftl.lookup(lpns)
        unmapped = ppns < 0
        if unmapped.any():
            ppns[unmapped] = ftl.static_ppn(lpns[unmapped])
        g = ppns + m.ppn0
        plane_g = g // f.ppp
        die = plane_g // f.P
        off = g % m.ppb
        lane = (die // f.dies_per_chip if f.chip_lock else die) - m.lane0
        t_r = np.array(m.t_r_of, dtype=np.int64)[off % m.bits]
        phy = m.phy
        xdata = np.where(nb == page, phy.page_data, 0)
        for v in np.unique(nb[nb != page]).tolist():
            xdata[nb == v] = phy.data_ps(v)
        req_of = np.repeat(np.arange(count, dtype=np.int64), req_n)
        return ((lane, die, plane_g % f.P, off, t_r, xdata.astype(np.int64), req_of),
                (total, int(nb.sum()), int(unmapped.sum())))

    def run(self, upto: int, lat: I64, done: I64) -> None:
        """Go on until request ``upto`` has been issued (to the end when ``upto`` is the
        count); latencies into ``lat``, completions into ``done``."""
        m = self.m
        assert m.waiting is not None
        end = upto + 1 if upto >= self.count else upto
        ftl = self.ssd.ftl
        s = self.sc[0]
        while True:
            iv, meta = m.channels.arrays()
            liv, lmeta = self.ssd.host.links.arrays()
            wiv, wmeta = m.waiting.arrays()
            rows: Rows = (iv, meta, m.dies.state, liv, lmeta, wiv, wmeta)
            s["low"] = int(bool(ftl.low_planes))
            convoy_loop(rows, self.reads, self.req_first, self.req_n, self.phy, self.sc,
                        self.lanes_q, self.chans, self.wnext, self.x, self.reqs, self.ev,
                        self.pool, self.backlog, self.queue, lat, done, end, self._mix())
            stop = int(s["stop"])
            if stop == ROOM:
                m.channels.grow()
                self.ssd.host.links.grow()
            elif stop == LANE_ROOM:  # the write's page's lane (``TimingBase.grow``)
                m.grow(LANE_FULL, self.prog[2])
            elif stop == DENSIFY:  # as ``FTL.write1`` ends, then the write goes on
                sparse, res = self.one[2], self.one[3]
                ftl.l2p.densify_reached(sparse[:int(res[0])])
            elif stop == BY_COMMAND:
                self._by_command()
            else:
                return

    def _mix(self) -> Mix:
        """A mix's arrays as the kernel takes them (``Mix``; the map's and the FTL's
        taken again at each call: Python may have grown them)."""
        ftl = self.ssd.ftl
        m = self.m
        lookup = PageBatch.lookup_of(ftl)
        dev: Device = (m.geo, m.cmds, m.cell)
        out, sparse, res, seq = self.one
        times, res_p, ppns = self.prog
        queues = m.queues if isinstance(m, DetailedModel) else self._no_queues
        return (self.is_read, self.lpns, lookup, self.rg, self.t_r_of, ftl.run_state(),
                (out, ftl.l2p.sparse_per_seg, sparse, res, seq),
                (dev, queues, times, res_p, ppns))

    def _by_command(self) -> None:
        """The pending write through ``Ssd.write`` now, the loop's state given back
        first and taken again after; its worker resumes at its end."""
        ssd = self.ssd
        s = self.sc[0]
        i = int(s["pending"])
        self._give_back()
        end = ssd.write(int(self.addresses[i]), self.nbytes, int(s["now"]))
        self._take_again()
        resume_at(self.ev, self.sc, i, end)

    def _give_back(self) -> None:
        """The NVMe queue, the controller, the activity and the FTL's write sequence
        as the loop left them, into the device."""
        ssd = self.ssd
        s = self.sc[0]
        ssd.host.take_back(self.queue, int(s["nq"]), int(s["waits"]), int(s["ctl"]))
        ssd.finished_many((int(s["transfers"]), int(s["active"]), int(s["active_until"])),
                          [])
        ssd.ftl.count_run(int(s["runs"]))
        s["runs"] = 0

    def _take_again(self) -> None:
        """``_give_back``'s state from the device again."""
        ssd = self.ssd
        s = self.sc[0]
        host = ssd.host
        self.queue, nq = host.queue_rows()
        transfers, active, active_until = ssd.activity()
        for name, v in (("nq", nq), ("waits", host.queue_waits), ("ctl", host.ctl_free),
                        ("transfers", transfers), ("active", active),
                        ("active_until", active_until), ("seq", ssd.ftl.blocks.seq)):
            s[name] = v

    def finish(self) -> int:
        """The device's counters, NVMe queue, controller, activity and channels'
        round-robin turns as the loop left them; the time of its last event."""
        ssd = self.ssd
        s = self.sc[0]
        self._give_back()
        total, channel_bytes, unmapped = self.pages
        c = ssd.c
        c.read_cmds += int(s["cmds"])
        s["cmds"] = 0
        if self.mixed:  # one page a request; the writes Python booked counted there
            total, unmapped = int(s["rpages"]), int(s["unmapped"])
            channel_bytes = total * self.nbytes
            s["rpages"] = s["unmapped"] = 0
            w = int(s["wpages"])
            c.pages_programmed += w
            c.channel_bytes += w * ssd.page
            c.program_cmds += int(s["wcmds"])
            ssd.bytes_written += w * self.nbytes
        c.host_pages_read += total
        c.channel_bytes += channel_bytes
        c.unmapped_reads += unmapped
        ssd.bytes_read += total * self.nbytes if self.mixed else self.count * self.nbytes
        self.turn[:] = self.chans[1].tolist()
        return int(s["now"])
