"""The channel and die lanes: the flash device's busy resources.

``DieLanes`` holds the dies as busy-until lanes with read priority and suspension (see
the class). An SSD has hundreds of dies and booking a 2 MiB chunk touches a hundred of
them: their state is in numpy arrays, and a chunk's bookings are numpy operations over
all its dies at once.

``GapBank`` (the channels) keeps each lane's bookings as sorted disjoint intervals, so a
booking takes the earliest idle interval long enough for it. A loosely timed model books
a read's data-out at the end of its tR, in the future; on a FIFO lane that would keep
every other die's earlier transfer off the channel until then. Lanes of either kind
never overlap themselves.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tmhw.sim.jit import njit_noref

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
PROG, ERASE, GC = 0, 1, 2
#: the fields of a queued op in ``DieLanes._ops``, and their count with one spare: a
#: slot's fields are one 64-byte row, so a booking touches one cache line per slot
ST, EN, KIND, MASK, PAGE, SPAN, QS = range(7)
FIELDS = 8


@dataclass(frozen=True, slots=True)
class SuspendRule:
    """When a read may suspend the program or erase it finds on its die, and at what
    cost (``FlashConfig.program_suspend`` and its siblings)."""

    program: bool
    erase: bool
    t_program: int
    t_erase: int
    min_remaining: int


def _top_bit(x: I64) -> I64:
    """The index of the highest set bit of each of positive ``x`` (``bit_length() - 1``):
    the float exponent, one less where rounding to 53 bits carried into the next power
    of two."""
    e = np.frexp(x.astype(np.float64))[1] - 1
    e -= (x >> e) == 0
    return e


#: the rows of ``DieLanes._lane``
UNTIL, RD, BUSY_D, COUNT_D, QSUM, HEAD, TAIL = range(7)


def _rule_array(rule: SuspendRule | None) -> I64:
    """A suspend rule as int64s for a kernel: (any rule, program, erase, program's
    suspend latency, erase's, least remaining time)."""
    if rule is None:
        return np.zeros(6, dtype=np.int64)
    return np.array([1, rule.program, rule.erase, rule.t_program, rule.t_erase,
                     rule.min_remaining], dtype=np.int64)


@njit_noref
def _now_slot(ops: I64, h: int, k: int) -> tuple[int, int]:
    """``DieLanes._now1``, compiled: the true start and end of queued slot ``k`` of a
    lane whose head op is at slot ``h``."""
    a = ops[k, ST]
    e = ops[k, EN]
    if k > h:
        base = ops[h, EN] + ops[k, QS] - ops[h + 1, QS]
        if base > a:
            return base, e + base - a
    return a, e


@njit_noref
def read_lane(lane: I64, ops: I64, cap: int, sus: I64, rule: I64, i: int, earliest: int,
              d: int) -> int:
    """``DieLanes.read1`` of a die lane (no chip batches, no recorded spans), compiled:
    a read of ``d`` on lane ``i`` no earlier than ``earliest``; its end. The arrays are
    ``DieLanes.arrays()``."""
    t = lane[TAIL, i]
    h = lane[HEAD, i]
    qe = _now_slot(ops, h, t - 1)[1] if t != h else -1  # ``_last1``'s end
    r = lane[RD, i]
    s = earliest if earliest > r else r
    if qe > s:
        return _read_queued_lane(lane, ops, cap, sus, rule, i, s, d)
    if qe >= 0:  # queued work that ended before the read: forgotten
        lane[HEAD, i] = i * cap
        lane[TAIL, i] = i * cap
    end = s + d
    lane[RD, i] = end
    if lane[UNTIL, i] < end:
        lane[UNTIL, i] = end
    lane[BUSY_D, i] += d
    lane[COUNT_D, i] += 1
    return end


@njit_noref
def _read_queued_lane(lane: I64, ops: I64, cap: int, sus: I64, rule: I64, i: int, s: int,
                      d: int) -> int:
    """``DieLanes._read_queued1`` (no recorded spans), compiled."""
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
        sl = -1  # ``_suspend_latency``
        left = en0 - s
        if rule[0] and kind != GC and (rule[2] if kind == ERASE else rule[1]):
            x = rule[4] if kind == ERASE else rule[3]
            if left >= rule[5] and left > x:
                sl = x
        if sl >= 0:
            lat = sl
            sus[1 if kind == ERASE else 0, i] += 1
            ops[h, ST] = s  # the rest runs after the read
            start = s + lat
        else:
            start = en0  # after the running one
            h += 1
    end = start + d
    lane[RD, i] = end
    if h < t:
        # the head starts after the read; the ops behind follow it
        a = ops[h, ST]
        if end > a:
            ops[h, ST] = end
            ops[h, EN] += end - a
        last = _now_slot(ops, h, t - 1)[1]
        lane[UNTIL, i] = last if last > end else end
        lane[HEAD, i] = h
    else:
        if lane[UNTIL, i] < end:
            lane[UNTIL, i] = end
        lane[HEAD, i] = i * cap
        lane[TAIL, i] = i * cap
    lane[BUSY_D, i] += d + lat
    lane[COUNT_D, i] += 1
    return end


@njit_noref
def hold_lane(lane: I64, i: int, t: int) -> None:
    """``DieLanes.hold1``, compiled."""
    if lane[RD, i] < t:
        lane[RD, i] = t
    if lane[UNTIL, i] < t:
        lane[UNTIL, i] = t


@njit_noref
def prog_lane(lane: I64, ops: I64, cap: int, merged: I64, P: int, i: int, ready: int,
              duration: int, planes: int, page: int) -> int:
    """``DieLanes.prog1`` of a die lane (no recorded spans), compiled: its end, or the
    end of the waiting program the page joined, counted in ``merged`` (per lane). The
    lane's row must have a free slot at its tail (``DieLanes.make_room``)."""
    t = lane[TAIL, i]
    h = lane[HEAD, i]
    # the page may join a program only if the newest queued op is one still waiting
    # at ``ready`` (``_last1``)
    if (planes and t != h and ops[t - 1, KIND] == PROG
            and ready <= _now_slot(ops, h, t - 1)[0]):
        joined = _merge_lane(lane, ops, merged, P, i, ready, planes, page)
        if joined >= 0:
            return joined
    b = lane[UNTIL, i]  # ``_append``
    s = ready if ready > b else b
    end = s + duration
    ops[t, QS] = lane[QSUM, i]
    lane[QSUM, i] += duration
    ops[t, ST] = s
    ops[t, EN] = end
    ops[t, KIND] = PROG
    ops[t, MASK] = planes
    ops[t, PAGE] = page
    ops[t, SPAN] = -1
    lane[BUSY_D, i] += duration
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
def _merge_lane(lane: I64, ops: I64, merged: I64, P: int, i: int, r: int, m: int,
                page: int) -> int:
    """``DieLanes._merge1``, compiled."""
    die = _top(m) // P
    h = lane[HEAD, i]
    k = lane[TAIL, i] - 1
    stop = max(k - 4, h - 1)
    while k > stop:
        st, end = _now_slot(ops, h, k)
        if st < r or ops[k, KIND] != PROG:
            return -1
        om = ops[k, MASK]
        if om and _top(om) // P == die:
            if om & m:
                return -1
            if ops[k, PAGE] == page:
                ops[k, MASK] = om | m
                merged[i] += 1
                return int(end)
        k -= 1
    return -1


class DieLanes:
    """``n`` die lanes with read priority (the transaction scheduler's, see
    ``flash.scheduler``). Times in ps, never negative.

    Per die the lane keeps the end of its last read and the programs and erases booked
    after it, in order. A read queues behind reads only: it goes ahead of programs and
    erases still waiting to start, and if one is running on the die it suspends it (when
    ``rule`` allows: enabled, at least ``rule.min_remaining`` of it left, and more than
    the suspend latency), starting after the suspend latency; otherwise it follows the
    running one. The work behind the read moves later by what the read took, in order.
    A program may absorb a page for another plane of its die while it waits to start
    (multi-plane command forming, ``prog1``). ``hold1`` keeps a die from its next
    command until its cache register drains.

    The lanes' state is in numpy arrays: per lane its numbers, and its queue of programs
    and erases as a row of slots, each slot's fields side by side (``_ops``, slots
    ``_head`` to ``_tail``). A chunk's bookings are one call on its distinct lanes
    (``read_many``, ``prog_many``, ``hold_many``), booked as ``read1``, ``prog1`` and
    ``hold1`` would book each lane, in numpy operations over all of them at once (a
    page's search for a waiting program to join too: four numpy steps back over the
    lanes' queues; a read's moving of the work queued behind it: its head op only,
    below). ``read1`` and ``prog1`` are the same rules in scalar code, for callers that
    book one command.

    A read moves the work queued behind it without touching it. Moving makes each op
    start at the latest of where it was booked and the end of the op before it, so an
    op's start is the latest of its stored start and the head op's end plus the
    durations queued between them (a prefix sum of durations kept per slot, ``QS``).
    Only the head op, the one a read meets, is kept at its true times; a read costs the
    same whatever the queue's depth. (When spans are recorded, every queued op's times
    and span are written out after each read, for timelines.)"""

    def __init__(self, prefix: str, n: int, rule: SuspendRule | None = None,
                 record: bool = False, planes_per_die: int = 1) -> None:
        self.prefix = prefix
        self.rule = rule
        #: plane bits per die in a mask (a lane that is a chip has several dies' bits)
        self.P = planes_per_die
        self._rule = _rule_array(rule)
        #: per lane its numbers, one row each (``UNTIL`` to ``TAIL``), so that a
        #: compiled kernel takes them as one array: when it is next free, the end of its
        #: last read, its busy time, its bookings, and ``_qsum``, ``_head``, ``_tail``
        #: below; the attributes are views of the rows
        self._lane = np.zeros((7, n), dtype=np.int64)
        (self._until, self._rd, self._busy, self._count, self._qsum, self._head,
         self._tail) = self._lane
        #: per die, the programs and erases booked after its last read, in order: slots
        #: ``_head[die]`` to ``_tail[die]`` of the die's row (slots ``die * _cap`` on) of
        #: ``_ops``, a slot's fields ``_ops[slot, f]`` (``_ops.T[f]`` is one field of
        #: every slot), for the fields ST, EN, KIND (PROG, ERASE,
        #: GC), MASK (plane bits), PAGE (page offset), SPAN (index in ``spans``), QS
        #: (the durations queued before it on the lane, from any origin); the rows grow
        #: when a lane fills its row. ST and EN are true for the head op; for the others
        #: they are as booked, and ``_now`` gives their true times (class docstring)
        self._cap = 16
        self._ops = np.zeros((n * self._cap, FIELDS), dtype=np.int64)
        #: ``_qsum``: per lane, the durations of every op queued on it so far (QS's
        #: running sum: only differences between queued ops are read, so it is never
        #: reset)
        self._head[:] = np.arange(n, dtype=np.int64) * self._cap
        self._tail[:] = self._head
        self.merged = 0
        #: the same per lane (suspended programs, suspended erases; merged pages), for a
        #: device's share of lanes that span several (``counts``)
        self._lane_sus = np.zeros((2, n), dtype=np.int64)
        self._lane_merged = np.zeros(n, dtype=np.int64)
        #: chip lanes (``read_many``'s ``dies``): the latest batch of reads, its start,
        #: dies and end
        self._bstart = np.full(n, -1, dtype=np.int64)
        self._bmask = np.zeros(n, dtype=np.int64)
        self._bend = np.zeros(n, dtype=np.int64)
        #: (start, end) of every booking per lane when recording (tests, plots).
        self.spans: list[list[tuple[int, int]]] | None = (
            [[] for _ in range(n)] if record else None)

    def __len__(self) -> int:
        return int(self._until.size)

    @property
    def suspends(self) -> dict[str, int]:
        """Reads' suspends of programs and of erases, on every lane."""
        sus = self._lane_sus.sum(axis=1).tolist()
        return {"program": sus[0], "erase": sus[1]}

    def arrays(self) -> tuple[I64, I64, int, I64, I64, I64]:
        """The state a compiled booking takes (``read_lane``, ``prog_lane``): the lanes'
        numbers, the queued ops, the slots per lane's row, the suspends per lane, the
        suspend rule (``_rule_array``) and the pages merged per lane."""
        return (self._lane, self._ops, self._cap, self._lane_sus, self._rule,
                self._lane_merged)

    def make_room(self, lanes: I64) -> None:
        """A free slot at the tail of each of ``lanes`` (their rows compacted, or every
        row given more slots); the lanes' bookings are unchanged."""
        self._room(np.ascontiguousarray(lanes, dtype=np.int64))

    @property
    def busy_until(self) -> I64:
        return self._until.copy()

    @property
    def busy_ps(self) -> I64:
        return self._busy.copy()

    @property
    def count(self) -> I64:
        return self._count.copy()

    def start_time(self, i: int, earliest: int) -> int:
        b: int = self._until.item(i)
        return earliest if earliest > b else b

    def _book(self, i: int, start: int, end: int, busy: int) -> int:
        self._busy[i] += busy
        self._count[i] += 1
        if self.spans is None:
            return -1
        self.spans[i].append((start, end))
        return len(self.spans[i]) - 1

    # -- the queues ----------------------------------------------------------------------
    def _now(self, h: I64, k: I64) -> tuple[I64, I64]:
        """The true start and end of queued slots ``k`` of lanes whose head ops are at
        slots ``h`` (class docstring)."""
        ops = self._ops.T
        a, e = ops[ST][k], ops[EN][k]
        behind = k > h
        base = ops[EN][h] + ops[QS][k] - ops[QS][np.where(behind, h + 1, k)]
        sh = np.where(behind & (base > a), base - a, 0)
        return a + sh, e + sh

    def _now1(self, h: int, k: int) -> tuple[int, int]:
        """``_now`` of one slot."""
        ops = self._ops.T
        a: int = ops[ST].item(k)
        e: int = ops[EN].item(k)
        if k == h:
            return a, e
        base: int = ops[EN].item(h) + ops[QS].item(k) - ops[QS].item(h + 1)
        return (base, e + base - a) if base > a else (a, e)

    def _last(self, lanes: I64) -> tuple[I64, I64]:
        """Per lane, the end of its newest queued op (-1: none queued) and its start if
        it is a program (-1 otherwise)."""
        t = self._tail[lanes]
        h = self._head[lanes]
        queued = t > h
        last = np.where(queued, t - 1, 0)
        st, en = self._now(h, last)
        end = np.where(queued, en, -1)
        prog = np.where(queued & (self._ops[last, KIND] == PROG), st, -1)
        return end, prog

    def _last1(self, i: int) -> tuple[int, int]:
        """``_last`` of one lane."""
        t: int = self._tail.item(i)
        h: int = self._head.item(i)
        if t == h:
            return -1, -1
        ops = self._ops.T
        k = t - 1
        st: int = ops[ST].item(k)
        en: int = ops[EN].item(k)
        if k > h:  # ``_now1``, inline: this is on every scalar read and program
            base: int = ops[EN].item(h) + ops[QS].item(k) - ops[QS].item(h + 1)
            if base > st:
                en += base - st
                st = base
        return en, (st if ops[KIND].item(k) == PROG else -1)

    def _room(self, lanes: I64) -> None:
        """Make a free slot at the tail of each of ``lanes``: move a lane's queue to the
        start of its row, or give every row more slots."""
        cap = self._cap
        full = self._tail[lanes] >= (lanes + 1) * cap
        if not full.any():
            return
        for i in lanes[full].tolist():
            h, t = self._head.item(i), self._tail.item(i)
            if h > i * cap:
                self._ops[i * cap:i * cap + t - h] = self._ops[h:t]
                self._head[i], self._tail[i] = i * cap, i * cap + t - h
        if (self._tail[lanes] >= (lanes + 1) * cap).any():
            n = len(self)
            grown = np.zeros((n, 2 * cap, FIELDS), dtype=np.int64)
            grown[:, :cap] = self._ops.reshape(n, cap, FIELDS)
            self._ops = grown.reshape(-1, FIELDS)
            base = np.arange(n, dtype=np.int64) * cap
            self._head += base
            self._tail += base
            self._cap = 2 * cap

    def _push(self, lanes: I64, start: I64, end: I64, kind: int, planes: I64,
              pages: I64) -> None:
        """Queue an op at the tail of each of distinct ``lanes``, booked on them."""
        self._room(lanes)
        t = self._tail[lanes]
        ops = self._ops.T
        ops[QS][t] = self._qsum[lanes]
        self._qsum[lanes] += end - start
        ops[ST][t] = start
        ops[EN][t] = end
        ops[KIND][t] = kind
        ops[MASK][t] = planes
        ops[PAGE][t] = pages
        self._tail[lanes] = t + 1
        self._until[lanes] = end
        self._busy[lanes] += end - start
        self._count[lanes] += 1
        if self.spans is not None:
            spans = self.spans
            idx = []
            for i, a, b in zip(lanes.tolist(), start.tolist(), end.tolist(), strict=True):
                spans[i].append((a, b))
                idx.append(len(spans[i]) - 1)
            ops[SPAN][t] = idx

    # -- reads ---------------------------------------------------------------------------
    def read1(self, i: int, earliest: int, duration: int, dies: int = 0,
              arrive: int = -1) -> int:
        """Book a read of ``duration`` on die ``i`` no earlier than ``earliest``; return
        its end. On a lane that is a chip, ``dies`` is the bit mask of its dies the read
        uses and ``arrive`` when it reached the scheduler (``read_many``)."""
        qe = self._last1(i)[0]
        if dies and qe < 0:
            bs: int = self._bstart.item(i)
            if (earliest if arrive < 0 else arrive) <= bs and not self._bmask.item(i) & dies:
                self._join([i], [bs + duration], [dies])
                return bs + duration
        r: int = self._rd.item(i)
        s = earliest if earliest > r else r
        if qe > s:
            return self._read_queued1(i, s, duration)
        if qe >= 0:  # queued work that ended before the read: forgotten
            self._head[i] = self._tail[i] = i * self._cap
        end = s + duration
        self._rd[i] = end
        if self._until.item(i) < end:
            self._until[i] = end
        self._book(i, s, end, duration)
        if dies:  # this read opens the chip's next batch
            self._bstart[i], self._bmask[i], self._bend[i] = s, dies, end
        return end

    def _join(self, lanes: list[int], ends: list[int], dies: list[int]) -> None:
        """Reads of ``dies`` join the waiting batches of chips ``lanes``, ending at
        ``ends``."""
        rd, until, bmask, bend = self._rd, self._until, self._bmask, self._bend
        for i, end, m in zip(lanes, ends, dies, strict=True):
            bmask[i] |= m
            be: int = bend.item(i)
            if end > be:
                self._busy[i] += end - be
                if self.spans is not None:
                    self.spans[i].append((be, end))
                bend[i] = end
            if rd.item(i) < end:
                rd[i] = end
            if until.item(i) < end:
                until[i] = end

    def _suspend_latency(self, kind: int, left: int) -> int:
        """The suspend latency of an op of ``kind`` with ``left`` to run that a read
        suspends, or -1 when the rule lets it run on."""
        rule = self.rule
        if rule is None or kind == GC or not (rule.erase if kind == ERASE else rule.program):
            return -1
        lat = rule.t_erase if kind == ERASE else rule.t_program
        return lat if left >= rule.min_remaining and left > lat else -1

    def _read_queued1(self, i: int, s: int, d: int) -> int:
        """A read of ``d`` from ``s`` on die ``i``, whose queue has work left to run
        after ``s``: it queues ahead of it, or suspends it; its end."""
        ops, spans = self._ops.T, self.spans
        h: int = self._head.item(i)
        t: int = self._tail.item(i)
        st0: int = ops[ST].item(h)
        en0: int = ops[EN].item(h)
        while en0 <= s:  # ended before the read: forgotten, and the next is the head
            h += 1
            st0, en0 = self._now1(h - 1, h)
            ops[ST][h], ops[EN][h] = st0, en0
        lat = 0
        kind = ops[KIND].item(h)
        if s < st0:
            start = s  # ahead of every waiting program and erase
        else:
            sus = self._suspend_latency(kind, en0 - s)
            if sus >= 0:
                lat = sus
                self._lane_sus[int(kind == ERASE), i] += 1
                if spans is not None:  # the part done before the suspend
                    spans[i][ops[SPAN].item(h)] = (st0, s)
                    spans[i].append((s, en0))
                    ops[SPAN][h] = len(spans[i]) - 1
                ops[ST][h] = s  # the rest runs after the read
                start = s + lat
            else:
                start = en0  # after the running one
                h += 1
        end = start + d
        self._rd[i] = end
        if h < t:
            # the head starts after the read (the next op's start is at least the end
            # of the one that ran, which the read follows); the ops behind follow it
            a: int = ops[ST].item(h)
            if end > a:
                ops[ST][h] = end
                ops[EN][h] += end - a
                if spans is not None:
                    spans[i][ops[SPAN].item(h)] = (end, ops[EN].item(h))
            last = self._now1(h, t - 1)[1]
            self._until[i] = last if last > end else end
            self._head[i] = h
            if spans is not None:
                self._settle(np.array([i], dtype=np.int64))
        else:
            if self._until.item(i) < end:
                self._until[i] = end
            self._head[i] = self._tail[i] = i * self._cap
        self._busy[i] += d + lat
        self._count[i] += 1
        if spans is not None:
            spans[i].append((start - lat, end))
        return end

    def _settle(self, lanes: I64) -> None:
        """Write out the true times of the ops queued behind the heads of ``lanes``,
        and their spans (when recording: a timeline shows each op where it runs)."""
        ops, spans = self._ops.T, self.spans
        assert spans is not None
        h = self._head[lanes]
        n_q = self._tail[lanes] - h - 1
        q = np.flatnonzero(n_q > 0)
        if not q.size:
            return
        nq = n_q[q]
        first = np.cumsum(nq) - nq  # each lane's first index in the flat array
        idx = np.arange(int(nq.sum()), dtype=np.int64) + np.repeat(h[q] + 1 - first, nq)
        st, en = self._now(np.repeat(h[q], nq), idx)
        moved = st != ops[ST][idx]
        mi = idx[moved]
        ops[ST][mi] = st[moved]
        ops[EN][mi] = en[moved]
        for i, x, b, c in zip(np.repeat(lanes[q], nq)[moved].tolist(), ops[SPAN][mi].tolist(),
                              st[moved].tolist(), en[moved].tolist(), strict=True):
            spans[i][x] = (b, c)

    def _read_queued(self, lanes: I64, s: I64, d: I64) -> I64:
        """``_read_queued1`` on each of distinct ``lanes``, in numpy; their ends."""
        ops, spans, rule = self._ops.T, self.spans, self.rule
        t = self._tail[lanes]
        h = self._head[lanes]
        while True:  # forget the ops that ended before the read; the next is the head
            done = ops[EN][h] <= s
            if not done.any():
                break
            o = h[done]
            n = o + 1
            a = ops[ST][n]
            sh = np.maximum(ops[EN][o] - a, 0)
            ops[ST][n] = a + sh
            ops[EN][n] += sh
            h = h + done
        st0, en0, kind = ops[ST][h], ops[EN][h], ops[KIND][h]
        ahead = s < st0
        lat = np.zeros(lanes.size, dtype=np.int64)
        sus = np.zeros(lanes.size, dtype=bool)
        if rule is not None:
            erasing = kind == ERASE
            allowed = (erasing & rule.erase) | ((kind == PROG) & rule.program)
            t_sus = np.where(erasing, rule.t_erase, rule.t_program)
            left = en0 - s
            sus = ~ahead & allowed & (left >= rule.min_remaining) & (left > t_sus)
            if sus.any():
                lat[sus] = t_sus[sus]
                ls, hs = lanes[sus], h[sus]
                e = erasing[sus]
                self._lane_sus[1, ls[e]] += 1
                self._lane_sus[0, ls[~e]] += 1
                if spans is not None:  # the part done before the suspend
                    for i, x, a, b, c in zip(ls.tolist(), ops[SPAN][hs].tolist(),
                                             st0[sus].tolist(), s[sus].tolist(),
                                             en0[sus].tolist(), strict=True):
                        spans[i][x] = (a, b)
                        spans[i].append((b, c))
                    ops[SPAN][hs] = [len(spans[i]) - 1 for i in ls.tolist()]
                ops[ST][hs] = s[sus]  # the rest runs after the read
        after = ~(ahead | sus)
        start = np.where(after, en0, s + lat)  # after the running one, or ahead of it
        h = h + after
        end = start + d
        # each head starts after its read (as in ``_read_queued1``); the ops behind
        # follow it without being touched
        queued = h < t
        hq = h[queued]
        a = ops[ST][hq]
        sh = np.maximum(end[queued] - a, 0)
        ops[ST][hq] = a + sh
        ops[EN][hq] += sh
        last = self._now(np.where(queued, h, 0), np.where(queued, t - 1, 0))[1]
        until = self._until
        until[lanes] = np.where(queued, np.maximum(last, end), np.maximum(until[lanes], end))
        self._head[lanes] = np.where(queued, h, lanes * self._cap)
        self._tail[lanes] = np.where(queued, t, lanes * self._cap)
        self._rd[lanes] = end
        self._busy[lanes] += d + lat
        self._count[lanes] += 1
        if spans is not None:
            mv = hq[sh > 0]
            for i, x, b, c in zip(lanes[queued][sh > 0].tolist(), ops[SPAN][mv].tolist(),
                                  ops[ST][mv].tolist(), ops[EN][mv].tolist(), strict=True):
                spans[i][x] = (b, c)
            self._settle(lanes[queued])
            for i, a0, b0 in zip(lanes.tolist(), (start - lat).tolist(), end.tolist(),
                                 strict=True):
                spans[i].append((a0, b0))
        return end

    def read_many(self, lanes: I64, earliest: I64, durations: I64,
                  dies: I64 | None = None, arrive: I64 | None = None) -> I64:
        """``read1`` on each of distinct ``lanes``; their ends.

        ``dies``: on lanes that are chips (MQSim's chip lock), the bit mask of the dies
        each read uses. A chip takes a new command only when all its dies are idle, and
        then issues every waiting read of a die not already reading together (MQSim's
        die-interleaved read): a read issued before the chip's latest batch of reads
        starts joins it if its dies are free in it (``arrive``: when each read reached
        the scheduler, before any wait for its chip; default ``earliest``)."""
        rd, until = self._rd, self._until
        s = np.maximum(earliest, rd[lanes])
        end = s + durations
        qe = self._last(lanes)[0]
        slow = qe > s
        book = ~slow
        if dies is not None:
            bs = self._bstart[lanes]
            join = ((qe < 0) & ((earliest if arrive is None else arrive) <= bs)
                    & ((self._bmask[lanes] & dies) == 0))
            if join.any():
                book &= ~join
                end[join] = bs[join] + durations[join]
                self._join(lanes[join].tolist(), end[join].tolist(), dies[join].tolist())
        if slow.any():
            end[slow] = self._read_queued(lanes[slow], s[slow], durations[slow])
        if not book.all():
            lanes, s, end_b, durations = lanes[book], s[book], end[book], durations[book]
            qe = qe[book]
            if dies is not None:
                dies = dies[book]
        else:
            end_b = end
        stale = lanes[qe >= 0]  # queued work that ended before the read: forgotten
        self._head[stale] = self._tail[stale] = stale * self._cap
        rd[lanes] = end_b
        until[lanes] = np.maximum(until[lanes], end_b)
        self._busy[lanes] += durations
        self._count[lanes] += 1
        if self.spans is not None:
            spans = self.spans
            for i, a, b in zip(lanes.tolist(), s.tolist(), end_b.tolist(), strict=True):
                spans[i].append((a, b))
        if dies is not None:  # these reads open their chips' next batches
            self._bstart[lanes] = s
            self._bmask[lanes] = dies
            self._bend[lanes] = end_b
        return end

    def hold1(self, i: int, t: int) -> None:
        """Die ``i`` starts nothing before ``t`` (its cache register is still full)."""
        if self._rd.item(i) < t:
            self._rd[i] = t
        if self._until.item(i) < t:
            self._until[i] = t

    def hold_many(self, lanes: I64, times: I64) -> None:
        """``hold1`` on each of distinct ``lanes``."""
        self._rd[lanes] = np.maximum(self._rd[lanes], times)
        self._until[lanes] = np.maximum(self._until[lanes], times)

    def read_free(self, i: int) -> int:
        """When die ``i`` can start a new read (its last read and its cache register)."""
        r: int = self._rd.item(i)
        return r

    # -- programs and erases -------------------------------------------------------------
    def prog1(self, i: int, ready: int, duration: int, planes: int = 0,
              page: int = -1) -> int:
        """Book a program of ``duration`` on die ``i`` once its data is in at ``ready``;
        return its end. ``planes`` is the plane bit mask it programs and ``page`` its
        page offset in the block: if one of the die's waiting programs (the last few
        commands of the lane; on a lane that is a chip, those of the same die) has not
        started by ``ready``, programs none of these planes and the same page offset (a
        multi-plane command addresses one page in each plane: ONFI, and MQSim's
        scheduler), the page joins the newest such program at no die time. The search
        stops at the newest waiting program of the die that already programs one of
        these planes."""
        if planes and ready <= self._last1(i)[1]:
            joined = self._merge1(i, ready, planes, page)
            if joined >= 0:
                return joined
        return self._append(i, ready, duration, PROG, planes, page)

    def _merge1(self, i: int, r: int, m: int, page: int) -> int:
        """The end of the waiting program on lane ``i`` that a page of planes ``m`` at
        offset ``page``, ready at ``r``, joins (``prog1``), or -1."""
        ops, P = self._ops.T, self.P
        die = (m.bit_length() - 1) // P
        # the die's newest waiting program, among the last four commands of the lane
        h: int = self._head.item(i)
        k = self._tail.item(i) - 1
        stop = max(k - 4, h - 1)
        # ``_now1`` of the slots behind the head, inline: the head's end less the
        # durations queued up to the slot after it
        e_h: int = ops[EN].item(h) - ops[QS].item(h + 1) if k > h else 0
        while k > stop:
            st: int = ops[ST].item(k)
            end: int = ops[EN].item(k)
            if k > h:
                base: int = e_h + ops[QS].item(k)
                if base > st:
                    end += base - st
                    st = base
            if st < r or ops[KIND].item(k) != PROG:
                return -1
            om = ops[MASK].item(k)
            if om and (om.bit_length() - 1) // P == die:
                if om & m:
                    return -1
                if ops[PAGE].item(k) == page:
                    ops[MASK][k] = om | m
                    self.merged += 1
                    self._lane_merged[i] += 1
                    return end
                # an older waiting program may be at this offset
            k -= 1
        return -1

    def _merge(self, lanes: I64, ready: I64, planes: I64, pages: I64) -> I64:
        """``_merge1`` on each of distinct ``lanes``, in numpy: the look-back over the
        last four commands of every lane is four steps over all the lanes still
        searching; each lane's end, or -1."""
        ops, P = self._ops.T, self.P
        out = np.full(lanes.size, -1, dtype=np.int64)
        h = self._head[lanes]
        k = self._tail[lanes] - 1
        stop = np.maximum(k - 4, h - 1)
        die = _top_bit(planes) // P
        at = np.arange(lanes.size)  # the lanes still searching, by position
        r, m, page = ready, planes, pages
        for _ in range(4):
            st, en = self._now(h, k)
            go = (k > stop) & (st >= r) & (ops[KIND][k] == PROG)
            om = ops[MASK][k]
            same = go & (om != 0)
            same[same] = _top_bit(om[same]) // P == die[same]
            clash = same & ((om & m) != 0)
            join = same & ~clash & (ops[PAGE][k] == page)
            if join.any():
                kj = k[join]
                ops[MASK][kj] = om[join] | m[join]
                out[at[join]] = en[join]
            go &= ~(clash | join)
            if not go.any():
                break
            at, h, k, stop, r, m, page, die = (at[go], h[go], k[go] - 1, stop[go], r[go],
                                               m[go], page[go], die[go])
        joined = lanes[out >= 0]
        self.merged += int(joined.size)
        self._lane_merged[joined] += 1
        return out

    def prog_many(self, lanes: I64, ready: I64, durations: I64, planes: I64,
                  pages: I64) -> int:
        """``prog1`` on each of distinct ``lanes``; the latest end (0 for none)."""
        ends = self.prog_lanes(lanes, ready, durations, planes, pages)[0]
        return int(ends.max()) if ends.size else 0

    def prog_lanes(self, lanes: I64, ready: I64, durations: I64, planes: I64,
                   pages: I64) -> tuple[I64, B | None]:
        """``prog1`` on each of distinct ``lanes``: each lane's end, and which lanes'
        pages joined a waiting program (None: none did). The lanes whose newest queued
        op is a program still waiting at ``ready`` (where the page may join one) are
        searched together (``_merge``), the rest booked in numpy."""
        cand = (planes != 0) & (ready <= self._last(lanes)[1])
        if cand.any():
            ends = np.full(lanes.size, -1, dtype=np.int64)
            ends[cand] = self._merge(lanes[cand], ready[cand], planes[cand], pages[cand])
            own = ends < 0
            if not own.all():
                if own.any():
                    ln = lanes[own]
                    s = np.maximum(ready[own], self._until[ln])
                    end = s + durations[own]
                    self._push(ln, s, end, PROG, planes[own], pages[own])
                    ends[own] = end
                return ends, ~own
        if not lanes.size:
            return lanes, None
        s = np.maximum(ready, self._until[lanes])
        end = s + durations
        self._push(lanes, s, end, PROG, planes, pages)
        return end, None

    def counts(self, lo: int, hi: int) -> tuple[dict[str, int], int]:
        """Reads' suspends of programs and erases, and pages that joined a waiting
        program, on lanes ``lo`` to ``hi`` (one device's, of lanes spanning several)."""
        sus = self._lane_sus[:, lo:hi].sum(axis=1).tolist()
        return {"program": sus[0], "erase": sus[1]}, int(self._lane_merged[lo:hi].sum())

    def work1(self, i: int, earliest: int, duration: int, erase: bool = False) -> int:
        """Book garbage-collection work on die ``i``: a relocation, or an erase."""
        return self._append(i, earliest, duration, ERASE if erase else GC, 0)

    def _append(self, i: int, earliest: int, duration: int, kind: int, planes: int,
                page: int = -1) -> int:
        """Queue an op of ``kind`` on lane ``i`` (``_push`` of one lane); its end."""
        b: int = self._until.item(i)
        s = earliest if earliest > b else b
        end = s + duration
        t: int = self._tail.item(i)
        if t == (i + 1) * self._cap:
            self._room(np.array([i], dtype=np.int64))
            t = self._tail.item(i)
        ops = self._ops.T
        q: int = self._qsum.item(i)
        ops[QS][t] = q
        self._qsum[i] = q + duration
        ops[ST][t] = s
        ops[EN][t] = end
        ops[KIND][t] = kind
        ops[MASK][t] = planes
        ops[PAGE][t] = page
        ops[SPAN][t] = self._book(i, s, end, duration)
        self._tail[i] = t + 1
        self._until[i] = end
        return end

    def report(self, i: int, elapsed: int) -> dict[str, float | int]:
        busy: int = self._busy.item(i)
        return {"busy_ps": busy, "count": self._count.item(i),
                "utilization": round(busy / elapsed, 9) if elapsed > 0 else 0.0}


class GapLane:
    """One resource that serves one thing at a time, with bookings kept as sorted
    disjoint busy intervals so a later booking can use an earlier idle gap."""

    __slots__ = ("starts", "ends", "busy_ps", "count", "spans")

    def __init__(self, record: bool = False) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.busy_ps = 0
        self.count = 0
        self.spans: list[tuple[int, int]] | None = [] if record else None

    def fit(self, t: int, dur: int) -> int:
        """Earliest start >= ``t`` of an idle interval of length ``dur``."""
        return self._fit(t, dur)[0]

    def _fit(self, t: int, dur: int) -> tuple[int, int]:
        """(start, index of the first interval after it)."""
        starts, ends = self.starts, self.ends
        i = bisect_right(ends, t)
        s = t
        n = len(starts)
        while i < n and starts[i] < s + dur:
            if ends[i] > s:
                s = ends[i]
            i += 1
        return s, i

    def book(self, t: int, dur: int) -> int:
        """Reserve ``dur`` at the earliest fit no earlier than ``t``; return the end."""
        starts, ends = self.starts, self.ends
        if not ends or t >= ends[-1]:  # after every booking: no gap to search
            s, i = t, len(ends)
        else:
            s, i = self._fit(t, dur)
        e = s + dur
        self.busy_ps += dur
        self.count += 1
        if self.spans is not None:
            self.spans.append((s, e))
        if dur == 0:
            return e
        # intervals before i end at or before s; interval i starts at or after e
        if i > 0 and ends[i - 1] == s:
            if i < len(starts) and starts[i] == e:
                ends[i - 1] = ends[i]
                del starts[i], ends[i]
            else:
                ends[i - 1] = e
        elif i < len(starts) and starts[i] == e:
            starts[i] = s
        else:
            starts.insert(i, s)
            ends.insert(i, e)
        return e

    def cover(self, s: int, e: int) -> None:
        """Mark [s, e) busy, joining any bookings it overlaps or touches (for a lane of
        windows rather than of work: it keeps no busy time or count)."""
        if e <= s:
            return
        starts, ends = self.starts, self.ends
        i = bisect_left(ends, s)
        j = bisect_right(starts, e)
        if i < j:
            s = min(s, starts[i])
            e = max(e, ends[j - 1])
        starts[i:j] = [s]
        ends[i:j] = [e]

    def prune(self, before: int) -> None:
        """Forget intervals that ended before ``before`` (no booking can reach them)."""
        k = bisect_right(self.ends, before)
        if k > PRUNE_KEEP:
            del self.starts[:k], self.ends[:k]

    @property
    def busy_until(self) -> int:
        return self.ends[-1] if self.ends else 0

    def report(self, elapsed: int) -> dict[str, float | int]:
        return {"busy_ps": self.busy_ps, "count": self.count,
                "utilization": round(self.busy_ps / elapsed, 9) if elapsed > 0 else 0.0}


class GapBank:
    """``n`` gap-filling lanes (``GapLane``'s rules), their state in arrays: per lane
    its sorted disjoint busy intervals as a row of ``_iv`` (starts in ``_iv[0]``, ends
    in ``_iv[1]``, the first ``_meta[FILL]`` slots of the row), its busy time and its
    booking count. A booking is one compiled call (``gap_book``), and so is a chunk's
    booking of each of its channels (``_gap_reserve``); a row that fills doubles every
    row's slots."""

    def __init__(self, prefix: str, n: int, record: bool = False) -> None:
        self.prefix = prefix
        self._cap = 64
        self._iv = np.zeros((2, n, self._cap), dtype=np.int64)
        self._meta = np.zeros((3, n), dtype=np.int64)
        self.spans: list[list[tuple[int, int]]] | None = (
            [[] for _ in range(n)] if record else None)

    def __len__(self) -> int:
        return int(self._meta.shape[1])

    def grow(self) -> None:
        """Double every row's slots."""
        n, cap = len(self), self._cap
        iv = np.zeros((2, n, 2 * cap), dtype=np.int64)
        iv[:, :, :cap] = self._iv
        self._iv, self._cap = iv, 2 * cap

    @property
    def busy_until(self) -> I64:
        fill = self._meta[FILL]
        last = self._iv[1, np.arange(fill.size), np.maximum(fill - 1, 0)]
        out: I64 = np.where(fill > 0, last, 0)
        return out

    @property
    def busy_ps(self) -> I64:
        out: I64 = self._meta[BUSY].copy()
        return out

    @property
    def count(self) -> I64:
        out: I64 = self._meta[COUNT].copy()
        return out

    def arrays(self) -> tuple[I64, I64]:
        """The state a compiled booking takes (``gap_book``): the intervals and the
        per-lane numbers."""
        return self._iv, self._meta

    def intervals(self, i: int) -> tuple[list[int], list[int]]:
        """Lane ``i``'s busy intervals: (starts, ends), sorted."""
        k = self._meta[FILL].item(i)
        return self._iv[0, i, :k].tolist(), self._iv[1, i, :k].tolist()

    def fit(self, i: int, t: int, dur: int) -> int:
        """Earliest start >= ``t`` of an idle interval of length ``dur`` on lane ``i``
        (``GapLane.fit``)."""
        return int(_gap_fit(self._iv, self._meta, i, t, dur))

    def start_time(self, i: int, earliest: int) -> int:
        return self.fit(i, earliest, 0)

    def reserve1(self, i: int, earliest: int, duration: int) -> int:
        """Reserve ``duration`` on lane ``i`` at its earliest fit no earlier than
        ``earliest`` (``GapLane.book``); the end."""
        e = int(gap_book(self._iv, self._meta, i, earliest, duration))
        if e < 0:  # the lane's row is full
            self.grow()
            e = int(gap_book(self._iv, self._meta, i, earliest, duration))
        if self.spans is not None:
            self.spans[i].append((e - duration, e))
        return e

    def reserve(self, idx: I64, earliest: I64, duration: I64) -> I64:
        """``reserve1`` on each of lanes ``idx`` in turn; their ends, in one compiled
        call (another after each growth of the rows)."""
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        earliest = np.ascontiguousarray(np.broadcast_to(earliest, idx.shape), dtype=np.int64)
        duration = np.ascontiguousarray(duration, dtype=np.int64)
        out = np.empty(idx.size, dtype=np.int64)
        k = int(_gap_reserve(self._iv, self._meta, idx, earliest, duration, out, 0))
        while k < idx.size:
            self.grow()
            k = int(_gap_reserve(self._iv, self._meta, idx, earliest, duration, out, k))
        if self.spans is not None:
            spans = self.spans
            for i, d, e in zip(idx.tolist(), duration.tolist(), out.tolist(), strict=True):
                spans[i].append((e - d, e))
        return out

    def prune(self, before: int, lo: int = 0, hi: int | None = None) -> None:
        """``GapLane.prune`` of lanes ``lo`` to ``hi`` (default: all)."""
        _gap_prune(self._iv, self._meta, before, lo, len(self) if hi is None else hi)

    def report(self, i: int, elapsed: int) -> dict[str, float | int]:
        busy: int = self._meta[BUSY].item(i)
        return {"busy_ps": busy, "count": self._meta[COUNT].item(i),
                "utilization": round(busy / elapsed, 9) if elapsed > 0 else 0.0}


class BankLane:
    """Row ``i`` of a ``GapBank`` as one lane with ``GapLane``'s interface: its state
    stays in the bank's arrays, so a compiled caller books on it as on any row (the
    host link's directions, ``flash.host``, which ``flash.pages`` books in a kernel)."""

    __slots__ = ("bank", "i")

    def __init__(self, bank: GapBank, i: int) -> None:
        self.bank = bank
        self.i = i

    def fit(self, t: int, dur: int) -> int:
        """Earliest start >= ``t`` of an idle interval of length ``dur``."""
        return self.bank.fit(self.i, t, dur)

    def book(self, t: int, dur: int) -> int:
        """Reserve ``dur`` at the earliest fit no earlier than ``t``; return the end."""
        return self.bank.reserve1(self.i, t, dur)

    def prune(self, before: int) -> None:
        """Forget intervals that ended before ``before`` (no booking can reach them)."""
        self.bank.prune(before, self.i, self.i + 1)

    @property
    def starts(self) -> list[int]:
        return self.bank.intervals(self.i)[0]

    @property
    def ends(self) -> list[int]:
        return self.bank.intervals(self.i)[1]

    @property
    def spans(self) -> list[tuple[int, int]] | None:
        spans = self.bank.spans
        return None if spans is None else spans[self.i]

    @property
    def busy_ps(self) -> int:
        out: int = self.bank._meta[BUSY].item(self.i)
        return out

    @property
    def count(self) -> int:
        out: int = self.bank._meta[COUNT].item(self.i)
        return out

    @property
    def busy_until(self) -> int:
        k = self.bank._meta[FILL].item(self.i)
        out: int = self.bank._iv[1, self.i, k - 1].item() if k else 0
        return out

    def report(self, elapsed: int) -> dict[str, float | int]:
        return self.bank.report(self.i, elapsed)


#: the rows of ``GapBank._meta``: intervals kept, busy time, bookings
FILL, BUSY, COUNT = range(3)
#: intervals a lane keeps that no booking can reach before ``prune`` drops them
PRUNE_KEEP = 64


@njit_noref
def _gap_fit(iv: I64, meta: I64, i: int, t: int, dur: int) -> int:
    """``GapLane._fit``'s start on row ``i``."""
    n = meta[FILL, i]
    st, en = iv[0, i], iv[1, i]
    j = np.searchsorted(en[:n], t, side="right")
    s = t
    while j < n and st[j] < s + dur:
        if en[j] > s:
            s = en[j]
        j += 1
    return s


@njit_noref
def gap_book(iv: I64, meta: I64, i: int, t: int, dur: int) -> int:
    """``GapLane.book`` on row ``i``: its end, or -1 (nothing booked) when the row has
    no free slot."""
    n = meta[FILL, i]
    if n == iv.shape[2]:
        return -1
    st, en = iv[0, i], iv[1, i]
    s = t
    j = n
    if n and t < en[n - 1]:  # the earliest idle interval long enough (``_fit``)
        j = np.searchsorted(en[:n], t, side="right")
        while j < n and st[j] < s + dur:
            if en[j] > s:
                s = en[j]
            j += 1
    e = s + dur
    meta[BUSY, i] += dur
    meta[COUNT, i] += 1
    if dur == 0:
        return e
    # intervals before j end at or before s; interval j starts at or after e
    if j > 0 and en[j - 1] == s:
        if j < n and st[j] == e:  # the booking closes the gap between two
            en[j - 1] = en[j]
            for k in range(j, n - 1):
                st[k] = st[k + 1]
                en[k] = en[k + 1]
            meta[FILL, i] = n - 1
        else:
            en[j - 1] = e
    elif j < n and st[j] == e:
        st[j] = s
    else:
        for k in range(n, j, -1):
            st[k] = st[k - 1]
            en[k] = en[k - 1]
        st[j] = s
        en[j] = e
        meta[FILL, i] = n + 1
    return e


@njit_noref
def _gap_reserve(iv: I64, meta: I64, idx: I64, t: I64, dur: I64, out: I64, k: int) -> int:
    """``gap_book`` of bookings ``k`` on into ``out``; where it stopped (a full row),
    or ``idx.size``."""
    while k < idx.size:
        e = gap_book(iv, meta, idx[k], t[k], dur[k])
        if e < 0:
            return k
        out[k] = e
        k += 1
    return k


@njit_noref
def _gap_prune(iv: I64, meta: I64, before: int, lo: int, hi: int) -> None:
    """``GapLane.prune`` of rows ``lo`` to ``hi``."""
    for i in range(lo, hi):
        n = meta[FILL, i]
        st, en = iv[0, i], iv[1, i]
        k = np.searchsorted(en[:n], before, side="right")
        if k > PRUNE_KEEP:
            for x in range(n - k):
                st[x] = st[x + k]
                en[x] = en[x + k]
            meta[FILL, i] = n - k
