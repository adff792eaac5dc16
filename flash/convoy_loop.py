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
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.engine.dies import DieState, die_hold, die_prune, plane_read
from flash.engine.gaps import Meta, gap_book, gap_prune, gap_room
from flash.host import nvme_done, nvme_fetch
from flash.scheduler import TimingBase
from flash.ssd import Ssd
from tmhw.sim.jit import njit, njit_inline
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
#: the link's read time per request; why the loop stopped
SCALARS = np.dtype([(name, np.int64) for name in (
    "count", "qd", "nxt", "started", "nev", "eid", "holding", "nq", "depth", "waits",
    "bhead", "bn", "ctl", "ctl_ps", "transfers", "active", "active_until", "t0", "cmds",
    "now", "npool", "ch0", "lane0", "cpc", "multi", "dur", "stop")])
#: event kinds: a channel's command ends (``_free``), a command's tR ends (``_ready``),
#: a page's data is out (``_out``), a request's transfer to the host ends
#: (``_complete``), a worker resumes with its request's completion
FREE, READY, OUT, COMPLETE, RESUME = range(5)
#: the event heap's columns: time, id (the order scheduled), kind, and two arguments
EVENT_COLS = 5
#: ``stop``: a channel's or the link's row is full (the caller grows them and calls
#: again); the loop is done
ROOM, DONE = 1, 2
#: bookings between prunes (``Ssd._finish``)
PRUNE_EVERY = 256

#: the reads (one per page of each request, in request order): chip lane (the device's
#: own numbering), die, plane, page offset in its block, tR, data-out time of its bytes,
#: request
Reads = tuple[I64, I64, I64, I64, I64, I64, I64]
#: the device's rows: channels (intervals, numbers), the die lanes, the link, the wait
#: windows
Rows = tuple[I64, Meta, DieState, I64, Meta, I64, Meta]


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
                queue: I64, lat: I64, done: I64, upto: int) -> None:
    """Run the loop (module docstring) until the request ``upto`` has been issued (all
    done when ``upto`` is past the last), or a row to book on is full (``stop``)."""
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
        if s["started"] < s["qd"] and s["nxt"] < s["count"]:
            # the workers start at 0, in order, before any event (SimPy's URGENT
            # initialisation)
            s["started"] += 1
            _worker_next(rows, reads, req_first, req_n, phy, s, lanes_q, chans, wnext, x,
                         reqs, ev, pool, backlog, queue)
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
                       ev, pool, queue, phy, i)
        else:  # RESUME: the worker's request is done; it issues the next
            lat[a] = b - reqs[4][a]
            done[a] = b
            if s["nxt"] < s["count"]:
                _worker_next(rows, reads, req_first, req_n, phy, s, lanes_q, chans, wnext,
                             x, reqs, ev, pool, backlog, queue)


@njit_inline
def _worker_next(rows: Rows, reads: Reads, req_first: I64, req_n: I64,
                 phy: tuple[I64, I64], s: np.void, lanes_q: tuple[I64, I64, I64, I64],
                 chans: tuple[I64, I64, I64, I64], wnext: I64, x: I64,
                 reqs: tuple[I64, I64, I64, I64, I64], ev: I64, pool: I64, backlog: I64,
                 queue: I64) -> None:
    """A worker issues the bench's next request now (``EventReads.read``): into the
    backlog if the device holds its queue's depth, else started."""
    i = s["nxt"]
    s["nxt"] += 1
    now = s["now"]
    reqs[4][i] = now
    while s["nq"] and queue[0, 0] <= now:  # (``HostInterface.held``)
        s["nq"] = row_pop(queue, s["nq"])
    if s["holding"] + s["nq"] >= s["depth"]:
        s["waits"] += 1
        backlog[(s["bhead"] + s["bn"]) % backlog.size] = i
        s["bn"] += 1
        return
    _start(rows, reads, req_first, req_n, s, lanes_q, chans, wnext, x, reqs, ev, pool,
           queue, phy, i)


@njit_inline
def _start(rows: Rows, reads: Reads, req_first: I64, req_n: I64, s: np.void,
           lanes_q: tuple[I64, I64, I64, I64], chans: tuple[I64, I64, I64, I64],
           wnext: I64, x: I64, reqs: tuple[I64, I64, I64, I64, I64], ev: I64, pool: I64,
           queue: I64, phy: tuple[I64, I64], i: int) -> None:
    """Request ``i`` taken by the device now (``EventReads._start``): the NVMe queue
    and the controller take it (``Ssd.read_map``'s fetch), its pages queue at their
    chips, and each channel they touch steps, in channel order."""
    s["holding"] += 1
    now = s["now"]
    t = nvme_fetch(queue, s, now)
    if s["ctl_ps"]:
        if s["ctl"] > t:
            t = s["ctl"]
        s["ctl"] = t + s["ctl_ps"]
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
    # ``Ssd._finish``
    nvme_done(queue, s, fin)
    s["transfers"] += 1
    t = t0[i]
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
    s["holding"] -= 1
    _schedule(ev, s, fin, COMPLETE, i, fin)


class ConvoyLoop:
    """The compiled loop (module docstring) of reads of ``nbytes`` at ``addresses``,
    ``qd`` outstanding, on device ``ssd`` of an idle ``EventReads`` (``m``, ``turn``:
    its arbiter's model and round-robin turns): ``run`` goes on until a request has
    been issued, ``finish`` gives the device its state back and the time of the
    loop's last event. Made by ``make`` only where it books what the events
    book."""

    @staticmethod
    def make(ssd: Ssd, m: TimingBase, turn: list[int], addresses: I64, nbytes: int,
             qd: int) -> ConvoyLoop | None:
        """The loop, or None where it would book otherwise than the events: the
        device's DRAM holding a page or keeping the parts of pages read (a read
        cache), or anything recorded. (The caller checks that the reads by events are
        idle, ``EventReads.idle``.)"""
        page = ssd.page
        partial = bool((addresses % page).any()) or nbytes % page != 0
        if (not ssd.cache.holds_nothing() or (ssd.cache.read_pages and partial)
                or m.dies.record or ssd.host.links.record or m.waiting is None):
            return None
        return ConvoyLoop(ssd, m, turn, addresses, nbytes, qd)

    def __init__(self, ssd: Ssd, m: TimingBase, turn: list[int], addresses: I64,
                 nbytes: int, qd: int) -> None:
        self.ssd = ssd
        self.m = m
        self.turn = turn
        f = m.former
        page = ssd.page
        count = int(addresses.size)
        self.count = count
        self.nbytes = nbytes
        lo = addresses // page
        req_n = (addresses + nbytes + page - 1) // page - lo
        req_first = np.zeros(count, dtype=np.int64)
        np.cumsum(req_n[:-1], out=req_first[1:])
        total = int(req_n.sum())
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
        self.pages = (total, int(nb.sum()), int(unmapped.sum()))
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
        self.reads: Reads = (lane, die, plane_g % f.P, off, t_r, xdata.astype(np.int64),
                             req_of)
        self.req_first, self.req_n = req_first, req_n
        self.phy = (phy.rcmd_a, phy.rsetup_a)
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
                        ("multi", int(f.multi)), ("dur", host.read_ps(nbytes))):
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

    def run(self, upto: int, lat: I64, done: I64) -> None:
        """Go on until request ``upto`` has been issued (to the end when ``upto`` is the
        count); latencies into ``lat``, completions into ``done``."""
        m = self.m
        assert m.waiting is not None
        end = upto + 1 if upto >= self.count else upto
        while True:
            iv, meta = m.channels.arrays()
            liv, lmeta = self.ssd.host.links.arrays()
            wiv, wmeta = m.waiting.arrays()
            rows: Rows = (iv, meta, m.dies.state, liv, lmeta, wiv, wmeta)
            convoy_loop(rows, self.reads, self.req_first, self.req_n, self.phy, self.sc,
                        self.lanes_q, self.chans, self.wnext, self.x, self.reqs, self.ev,
                        self.pool, self.backlog, self.queue, lat, done, end)
            if self.sc[0]["stop"] != ROOM:
                return
            m.channels.grow()
            self.ssd.host.links.grow()

    def finish(self) -> int:
        """The device's counters, NVMe queue, controller, activity and channels'
        round-robin turns as the loop left them; the time of its last event."""
        ssd = self.ssd
        s = self.sc[0]
        host = ssd.host
        host.take_back(self.queue, int(s["nq"]), int(s["waits"]), int(s["ctl"]))
        ssd.finished_many((int(s["transfers"]), int(s["active"]), int(s["active_until"])),
                          [])
        total, channel_bytes, unmapped = self.pages
        c = ssd.c
        c.read_cmds += int(s["cmds"])
        c.host_pages_read += total
        c.channel_bytes += channel_bytes
        c.unmapped_reads += unmapped
        ssd.bytes_read += self.count * self.nbytes
        self.turn[:] = self.chans[1].tolist()
        return int(s["now"])
