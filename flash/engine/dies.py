"""The die lanes: each die (or, under MQSim's chip lock, each chip) as a busy lane with
read priority and suspension, and the kernels that book on it (the only implementation
of each rule; ``DieLanes`` calls them from Python, the chunk and batch kernels from
compiled code).

Rules (times in ps, never negative):

- **Read priority and suspension** (``die_read``). Per lane the state keeps the end of
  its last read and the programs and erases booked after it, in order. A read queues
  behind reads only: it goes ahead of programs and erases still waiting to start, and
  if one is running it suspends it (when the ``SuspendRule`` allows: enabled, at least
  ``min_remaining`` of it left, and more than the suspend latency), starting after the
  suspend latency; otherwise it follows the running one. The work behind the read
  moves later by what the read took, in order.
- **Chip batches** (MQSim's die-interleaved read, ``dies`` != 0). A chip takes a new
  command only when all its dies are idle, and then issues every waiting read of a die
  not already reading together: a read that reached the scheduler (``arrive``) before
  the chip's latest batch of reads started joins it if its dies are free in it.
- **Multi-plane programs** (``die_prog``). A program may absorb a page for other planes
  of its die while it waits to start: if one of the die's waiting programs (the last
  few commands of the lane; on a chip, those of the same die) has not started by the
  page's ready time, programs none of its planes and the same page offset (ONFI: one
  page per plane at one offset), the page joins the newest such program at no die
  time. The search stops at the newest waiting program of the die that already
  programs one of these planes.
- **Hold** (``die_hold``): a die starts nothing before its cache register drains.
- **Work** (``die_work``): garbage-collection relocations and erases, queued.

A read moves the work queued behind it without touching it: an op's start is the latest
of its stored start and the head op's end plus the durations queued between them (a
prefix sum of durations kept per slot, ``QS``), so only the head op is kept at its true
times and a read costs the same whatever the queue's depth. When spans are recorded,
every queued op's times are written out after each read, for timelines.

State (``DieLanes.state``, one tuple of int64 arrays handed to every kernel):
``lane[row, i]`` per lane (rows ``UNTIL`` .. ``BEND``), ``ops[slot, field]`` the queued
ops (lane ``i``'s row is slots ``i * cap`` on; fields ``ST`` .. ``QS``), ``par[0, f]``
the parameters (``CAP`` .. ``NREC``), and ``rec[k] = (lane, start, end)`` the recorded
spans (no rows when not recording), appended by the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tmhw.sim.jit import njit_noref

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
#: (lane, ops, par, rec): the module docstring's state
DieState = tuple[I64, I64, I64, I64]

#: the kinds of queued op
PROG, ERASE, GC = 0, 1, 2
#: the fields of a queued op, and their count with one spare: a slot is one 64-byte row,
#: so a booking touches one cache line per slot. ``SPAN``: its row of ``rec``
ST, EN, KIND, MASK, PAGE, SPAN, QS = range(7)
FIELDS = 8
#: the rows of ``lane``: when it is next free, the end of its last read, its busy time,
#: its bookings, the durations of every op queued on it so far (``QS``'s running sum:
#: only differences are read, so it is never reset), its queue's head and tail slots,
#: reads' suspends of programs and of erases, pages merged into waiting programs, and
#: its latest batch of reads (chip lanes: start, dies, end)
(UNTIL, RD, BUSY_D, COUNT_D, QSUM, HEAD, TAIL, SUS_P, SUS_E, MERGED, BSTART, BMASK,
 BEND) = range(13)
LANE_ROWS = 13
#: ``par``'s fields: slots per lane's row, plane bits per die in a mask, the suspend
#: rule (``SuspendRule``: any, program, erase, their latencies, least remaining time),
#: and the recorded spans' count
CAP, PLANES, R_ANY, R_PROG, R_ERASE, R_TPROG, R_TERASE, R_MIN, NREC = range(9)
PAR = 9


@dataclass(frozen=True, slots=True)
class SuspendRule:
    """When a read may suspend the program or erase it finds on its die, and at what
    cost (``FlashConfig.program_suspend`` and its siblings)."""

    program: bool
    erase: bool
    t_program: int
    t_erase: int
    min_remaining: int


# -- kernels --------------------------------------------------------------------------
@njit_noref
def _now_slot(ops: I64, h: int, k: int) -> tuple[int, int]:
    """The true start and end of queued slot ``k`` of a lane whose head op is at slot
    ``h`` (module docstring)."""
    a = ops[k, ST]
    e = ops[k, EN]
    if k > h:
        base = ops[h, EN] + ops[k, QS] - ops[h + 1, QS]
        if base > a:
            return base, e + base - a
    return a, e


@njit_noref
def _record(par: I64, rec: I64, i: int, s: int, e: int) -> int:
    """Append span (``s``, ``e``) of lane ``i`` when recording; its row, or -1."""
    if rec.shape[0] == 0:
        return -1
    n: int = par[0, NREC]
    rec[n, 0] = i
    rec[n, 1] = s
    rec[n, 2] = e
    par[0, NREC] = n + 1
    return n


@njit_noref
def _suspend_latency(par: I64, kind: int, left: int) -> int:
    """The suspend latency of an op of ``kind`` with ``left`` to run that a read
    suspends, or -1 when the rule lets it run on."""
    if par[0, R_ANY] == 0 or kind == GC:
        return -1
    if not (par[0, R_ERASE] if kind == ERASE else par[0, R_PROG]):
        return -1
    lat = par[0, R_TERASE] if kind == ERASE else par[0, R_TPROG]
    return lat if left >= par[0, R_MIN] and left > lat else -1


@njit_noref
def die_read(st: DieState, i: int, earliest: int, d: int, dies: int, arrive: int) -> int:
    """A read of ``d`` on lane ``i`` no earlier than ``earliest``; its end. On a chip
    lane, ``dies`` is the bit mask of its dies the read uses and ``arrive`` when it
    reached the scheduler (-1: ``earliest``); 0 on a die lane."""
    lane, ops, par, rec = st
    t = lane[TAIL, i]
    h = lane[HEAD, i]
    qe = _now_slot(ops, h, t - 1)[1] if t != h else -1  # the newest queued op's end
    if dies and qe < 0:
        bs: int = lane[BSTART, i]
        if (earliest if arrive < 0 else arrive) <= bs and not lane[BMASK, i] & dies:
            end = bs + d  # joins the chip's batch
            lane[BMASK, i] |= dies
            be = lane[BEND, i]
            if end > be:
                lane[BUSY_D, i] += end - be
                _record(par, rec, i, be, end)
                lane[BEND, i] = end
            if lane[RD, i] < end:
                lane[RD, i] = end
            if lane[UNTIL, i] < end:
                lane[UNTIL, i] = end
            return end
    r = lane[RD, i]
    s = earliest if earliest > r else r
    if qe > s:
        return _read_queued(st, i, s, d)
    if qe >= 0:  # queued work that ended before the read: forgotten
        lane[HEAD, i] = i * par[0, CAP]
        lane[TAIL, i] = i * par[0, CAP]
    end = s + d
    lane[RD, i] = end
    if lane[UNTIL, i] < end:
        lane[UNTIL, i] = end
    lane[BUSY_D, i] += d
    lane[COUNT_D, i] += 1
    _record(par, rec, i, s, end)
    if dies:  # this read opens the chip's next batch
        lane[BSTART, i] = s
        lane[BMASK, i] = dies
        lane[BEND, i] = end
    return end


@njit_noref
def _read_queued(st: DieState, i: int, s: int, d: int) -> int:
    """A read of ``d`` from ``s`` on lane ``i``, whose queue has work left to run after
    ``s``: it queues ahead of it, or suspends it; its end."""
    lane, ops, par, rec = st
    h = lane[HEAD, i]
    t = lane[TAIL, i]
    st0 = ops[h, ST]
    en0 = ops[h, EN]
    while en0 <= s:  # ended before the read: forgotten, and the next is the head
        h += 1
        st0, en0 = _now_slot(ops, h - 1, h)
        ops[h, ST] = st0
        ops[h, EN] = en0
    lat = 0
    kind = ops[h, KIND]
    if s < st0:
        start = s  # ahead of every waiting program and erase
    else:
        sl = _suspend_latency(par, kind, en0 - s)
        if sl >= 0:
            lat = sl
            lane[SUS_E if kind == ERASE else SUS_P, i] += 1
            if rec.shape[0]:  # the part done before the suspend, then the rest
                rec[ops[h, SPAN], 1] = st0
                rec[ops[h, SPAN], 2] = s
                ops[h, SPAN] = _record(par, rec, i, s, en0)
            ops[h, ST] = s  # the rest runs after the read
            start = s + lat
        else:
            start = en0  # after the running one
            h += 1
    end = start + d
    lane[RD, i] = end
    if h < t:
        # the head starts after the read (the next op's start is at least the end of
        # the one that ran, which the read follows); the ops behind follow it
        a = ops[h, ST]
        if end > a:
            ops[h, ST] = end
            ops[h, EN] += end - a
            if rec.shape[0]:
                rec[ops[h, SPAN], 1] = end
                rec[ops[h, SPAN], 2] = ops[h, EN]
        last = _now_slot(ops, h, t - 1)[1]
        lane[UNTIL, i] = last if last > end else end
        lane[HEAD, i] = h
        if rec.shape[0]:  # every queued op where it now runs, for timelines
            for k in range(h + 1, t):
                a, e = _now_slot(ops, h, k)
                if a != ops[k, ST]:
                    ops[k, ST] = a
                    ops[k, EN] = e
                    rec[ops[k, SPAN], 1] = a
                    rec[ops[k, SPAN], 2] = e
    else:
        if lane[UNTIL, i] < end:
            lane[UNTIL, i] = end
        lane[HEAD, i] = i * par[0, CAP]
        lane[TAIL, i] = i * par[0, CAP]
    lane[BUSY_D, i] += d + lat
    lane[COUNT_D, i] += 1
    _record(par, rec, i, start - lat, end)
    return end


@njit_noref
def die_hold(st: DieState, i: int, t: int) -> None:
    """Lane ``i`` starts nothing before ``t`` (its cache register is still full)."""
    lane = st[0]
    if lane[RD, i] < t:
        lane[RD, i] = t
    if lane[UNTIL, i] < t:
        lane[UNTIL, i] = t


@njit_noref
def die_work(st: DieState, i: int, earliest: int, d: int, kind: int, planes: int,
             page: int) -> int:
    """Queue an op of ``kind`` and ``d`` on lane ``i`` no earlier than ``earliest``; its
    end. The lane's row must have a free slot at its tail (``DieLanes.make_room``)."""
    lane, ops, par, rec = st
    b = lane[UNTIL, i]
    s = earliest if earliest > b else b
    end = s + d
    t = lane[TAIL, i]
    ops[t, QS] = lane[QSUM, i]
    lane[QSUM, i] += d
    ops[t, ST] = s
    ops[t, EN] = end
    ops[t, KIND] = kind
    ops[t, MASK] = planes
    ops[t, PAGE] = page
    ops[t, SPAN] = _record(par, rec, i, s, end)
    lane[BUSY_D, i] += d
    lane[COUNT_D, i] += 1
    lane[TAIL, i] = t + 1
    lane[UNTIL, i] = end
    return end


@njit_noref
def _top(x: int) -> int:
    """``x.bit_length() - 1`` of positive ``x``."""
    b = -1
    while x:
        x >>= 1
        b += 1
    return b


@njit_noref
def die_prog(st: DieState, i: int, ready: int, d: int, planes: int, page: int) -> int:
    """A program of ``d`` of plane mask ``planes`` (0: no multi-plane forming) at page
    offset ``page`` on lane ``i``, its data in at ``ready``: its end, or the end of the
    waiting program the page joined (module docstring), counted in ``lane[MERGED]``.
    The lane's row must have a free slot at its tail (``DieLanes.make_room``)."""
    lane, ops, par, _ = st
    t = lane[TAIL, i]
    h = lane[HEAD, i]
    # the page may join a program only if the newest queued op is one still waiting
    if (planes and t != h and ops[t - 1, KIND] == PROG
            and ready <= _now_slot(ops, h, t - 1)[0]):
        P = par[0, PLANES]
        die = _top(planes) // P
        k = t - 1
        stop = max(k - 4, h - 1)  # among the last four commands of the lane
        while k > stop:
            s, end = _now_slot(ops, h, k)
            if s < ready or ops[k, KIND] != PROG:
                break
            om = ops[k, MASK]
            if om and _top(om) // P == die:
                if om & planes:
                    break
                if ops[k, PAGE] == page:
                    ops[k, MASK] = om | planes
                    lane[MERGED, i] += 1
                    return int(end)
                # an older waiting program may be at this offset
            k -= 1
    return die_work(st, i, ready, d, PROG, planes, page)


@njit_noref
def die_read_many(st: DieState, lanes: I64, earliest: I64, d: I64, dies: I64,
                  arrive: I64, out: I64) -> None:
    """``die_read`` on each of distinct ``lanes`` in turn, their ends into ``out``
    (``dies`` and ``arrive`` per lane as ``die_read``'s)."""
    for x in range(lanes.size):
        out[x] = die_read(st, lanes[x], earliest[x], d[x], dies[x], arrive[x])


@njit_noref
def die_prog_many(st: DieState, lanes: I64, ready: I64, d: I64, planes: I64, pages: I64,
                  out: I64) -> None:
    """``die_prog`` on each of distinct ``lanes`` in turn, into ``out`` each end times
    two, plus one if the page joined a waiting program (ends are far below 2**62)."""
    lane = st[0]
    for x in range(lanes.size):
        i = lanes[x]
        before = lane[MERGED, i]
        end = die_prog(st, i, ready[x], d[x], planes[x], pages[x])
        out[x] = 2 * end + (lane[MERGED, i] != before)


@njit_noref
def die_hold_many(st: DieState, lanes: I64, times: I64) -> None:
    """``die_hold`` on each of ``lanes``."""
    for x in range(lanes.size):
        die_hold(st, lanes[x], times[x])


# -- the lanes ------------------------------------------------------------------------
class DieLanes:
    """``n`` die lanes (module docstring), their state in arrays (``state``): each
    booking is one call of a kernel, a chunk's bookings on its distinct lanes too
    (``read_many``, ``prog_lanes``, ``hold_many``). Growing a lane's row of queued ops
    and the recorded spans' buffer is done here, before the kernels need it."""

    def __init__(self, prefix: str, n: int, rule: SuspendRule | None = None,
                 record: bool = False, planes_per_die: int = 1) -> None:
        self.prefix = prefix
        self.rule = rule
        #: plane bits per die in a mask (a lane that is a chip has several dies' bits)
        self.P = planes_per_die
        lane = np.zeros((LANE_ROWS, n), dtype=np.int64)
        cap = 16
        lane[HEAD] = np.arange(n, dtype=np.int64) * cap
        lane[TAIL] = lane[HEAD]
        lane[BSTART] = -1
        par = np.zeros((1, PAR), dtype=np.int64)
        par[0, CAP] = cap
        par[0, PLANES] = planes_per_die
        if rule is not None:
            par[0, R_ANY:R_MIN + 1] = (1, rule.program, rule.erase, rule.t_program,
                                       rule.t_erase, rule.min_remaining)
        rec = np.zeros((1024 if record else 0, 3), dtype=np.int64)
        self.state: DieState = (lane, np.zeros((n * cap, FIELDS), dtype=np.int64), par, rec)
        self.record = record

    def __len__(self) -> int:
        return int(self.state[0].shape[1])

    @property
    def _lane(self) -> I64:
        return self.state[0]

    @property
    def cap(self) -> int:
        """Slots per lane's row of queued ops."""
        return int(self.state[2][0, CAP])

    # -- room ----------------------------------------------------------------------------
    def make_room(self, lanes: I64) -> None:
        """A free slot at the tail of each of ``lanes`` (their rows compacted, or every
        row given more slots); the lanes' bookings are unchanged."""
        lanes = np.asarray(lanes, dtype=np.int64)
        lane, ops, par, rec = self.state
        cap = int(par[0, CAP])
        head, tail = lane[HEAD], lane[TAIL]
        full = tail[lanes] >= (lanes + 1) * cap
        if not full.any():
            return
        for i in lanes[full].tolist():
            h, t = head.item(i), tail.item(i)
            if h > i * cap:
                ops[i * cap:i * cap + t - h] = ops[h:t]
                head[i], tail[i] = i * cap, i * cap + t - h
        if (tail[lanes] >= (lanes + 1) * cap).any():
            n = len(self)
            grown = np.zeros((n, 2 * cap, FIELDS), dtype=np.int64)
            grown[:, :cap] = ops.reshape(n, cap, FIELDS)
            base = np.arange(n, dtype=np.int64) * cap
            head += base
            tail += base
            par[0, CAP] = 2 * cap
            self.state = (lane, grown.reshape(-1, FIELDS), par, rec)

    def _room1(self, i: int) -> None:
        if self.state[0][TAIL, i] == (i + 1) * self.state[2][0, CAP]:
            self.make_room(np.array([i], dtype=np.int64))

    def reserve_records(self, k: int) -> None:
        """Room in the recorded spans for ``k`` more (when recording): a kernel that
        books on the lanes appends to them without growing them."""
        lane, ops, par, rec = self.state
        if self.record and par[0, NREC] + k > rec.shape[0]:
            grown = np.zeros((2 * rec.shape[0] + k, 3), dtype=np.int64)
            grown[:rec.shape[0]] = rec
            self.state = (lane, ops, par, grown)

    # -- bookings ------------------------------------------------------------------------
    def read1(self, i: int, earliest: int, duration: int, dies: int = 0,
              arrive: int = -1) -> int:
        """``die_read`` on lane ``i``; its end."""
        if self.record:
            self.reserve_records(2)
        return int(die_read(self.state, i, earliest, duration, dies, arrive))

    def read_many(self, lanes: I64, earliest: I64, durations: I64,
                  dies: I64 | None = None, arrive: I64 | None = None) -> I64:
        """``read1`` on each of distinct ``lanes``; their ends (``dies``: on chip lanes,
        the dies each read uses; ``arrive``: when it reached the scheduler, default
        ``earliest``)."""
        lanes = np.ascontiguousarray(lanes, dtype=np.int64)
        earliest = np.ascontiguousarray(earliest, dtype=np.int64)
        if self.record:
            self.reserve_records(2 * lanes.size)
        out = np.empty(lanes.size, dtype=np.int64)
        die_read_many(self.state, lanes, earliest,
                      np.ascontiguousarray(durations, dtype=np.int64),
                      np.zeros(lanes.size, dtype=np.int64) if dies is None
                      else np.ascontiguousarray(dies, dtype=np.int64),
                      earliest if arrive is None
                      else np.ascontiguousarray(arrive, dtype=np.int64), out)
        return out

    def hold1(self, i: int, t: int) -> None:
        """Lane ``i`` starts nothing before ``t`` (its cache register is still full)."""
        die_hold(self.state, i, t)

    def hold_many(self, lanes: I64, times: I64) -> None:
        """``hold1`` on each of ``lanes``."""
        die_hold_many(self.state, np.ascontiguousarray(lanes, dtype=np.int64),
                      np.ascontiguousarray(times, dtype=np.int64))

    def read_free(self, i: int) -> int:
        """When lane ``i`` can start a new read (its last read and its cache register)."""
        return int(self.state[0][RD, i])

    def prog1(self, i: int, ready: int, duration: int, planes: int = 0,
              page: int = -1) -> int:
        """``die_prog`` on lane ``i``; its end."""
        self._room1(i)
        if self.record:
            self.reserve_records(1)
        return int(die_prog(self.state, i, ready, duration, planes, page))

    def prog_lanes(self, lanes: I64, ready: I64, durations: I64, planes: I64,
                   pages: I64) -> tuple[I64, B | None]:
        """``prog1`` on each of distinct ``lanes``: each lane's end, and which lanes'
        pages joined a waiting program (None: none did)."""
        lanes = np.ascontiguousarray(lanes, dtype=np.int64)
        self.make_room(lanes)
        if self.record:
            self.reserve_records(lanes.size)
        out = np.empty(lanes.size, dtype=np.int64)
        die_prog_many(self.state, lanes, np.ascontiguousarray(ready, dtype=np.int64),
                      np.ascontiguousarray(durations, dtype=np.int64),
                      np.ascontiguousarray(planes, dtype=np.int64),
                      np.ascontiguousarray(pages, dtype=np.int64), out)
        joined = (out & 1).astype(bool)
        return out >> 1, (joined if joined.any() else None)

    def prog_many(self, lanes: I64, ready: I64, durations: I64, planes: I64,
                  pages: I64) -> int:
        """``prog1`` on each of distinct ``lanes``; the latest end (0 for none)."""
        ends = self.prog_lanes(lanes, ready, durations, planes, pages)[0]
        return int(ends.max()) if ends.size else 0

    def work1(self, i: int, earliest: int, duration: int, erase: bool = False) -> int:
        """Book garbage-collection work on lane ``i``: a relocation, or an erase."""
        self._room1(i)
        if self.record:
            self.reserve_records(1)
        return int(die_work(self.state, i, earliest, duration, ERASE if erase else GC,
                            0, -1))

    # -- figures -------------------------------------------------------------------------
    def start_time(self, i: int, earliest: int) -> int:
        b = int(self.state[0][UNTIL, i])
        return earliest if earliest > b else b

    @property
    def busy_until(self) -> I64:
        out: I64 = self.state[0][UNTIL].copy()
        return out

    @property
    def busy_ps(self) -> I64:
        out: I64 = self.state[0][BUSY_D].copy()
        return out

    @property
    def count(self) -> I64:
        out: I64 = self.state[0][COUNT_D].copy()
        return out

    @property
    def merged(self) -> int:
        """Pages that joined a waiting program, on every lane."""
        return int(self.state[0][MERGED].sum())

    def merged_on(self, i: int) -> int:
        """Pages that joined a waiting program on lane ``i``."""
        return int(self.state[0][MERGED, i])

    @property
    def suspends(self) -> dict[str, int]:
        """Reads' suspends of programs and of erases, on every lane."""
        lane = self.state[0]
        return {"program": int(lane[SUS_P].sum()), "erase": int(lane[SUS_E].sum())}

    def counts(self, lo: int, hi: int) -> tuple[dict[str, int], int]:
        """Reads' suspends of programs and erases, and pages that joined a waiting
        program, on lanes ``lo`` to ``hi`` (one device's, of lanes spanning several)."""
        lane = self.state[0]
        return ({"program": int(lane[SUS_P, lo:hi].sum()),
                 "erase": int(lane[SUS_E, lo:hi].sum())}, int(lane[MERGED, lo:hi].sum()))

    @property
    def spans(self) -> list[list[tuple[int, int]]] | None:
        """(start, end) of every booking per lane, in booking order, when recording."""
        if not self.record:
            return None
        _, _, par, rec = self.state
        out: list[list[tuple[int, int]]] = [[] for _ in range(len(self))]
        for i, s, e in rec[:par[0, NREC]].tolist():
            out[i].append((s, e))
        return out

    def report(self, i: int, elapsed: int) -> dict[str, float | int]:
        lane = self.state[0]
        busy = int(lane[BUSY_D, i])
        return {"busy_ps": busy, "count": int(lane[COUNT_D, i]),
                "utilization": round(busy / elapsed, 9) if elapsed > 0 else 0.0}
