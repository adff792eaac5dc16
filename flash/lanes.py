"""The channel and die lanes: the flash device's busy resources.

``DieLanes`` holds the dies as busy-until lanes with read priority and suspension (see
the class). An SSD has hundreds of dies and booking a 2 MiB chunk touches a hundred of
them; each booking is scalar arithmetic on Python lists.

``GapBank`` (the channels) keeps each lane's bookings as sorted disjoint intervals, so a
booking takes the earliest idle interval long enough for it. A loosely timed model books
a read's data-out at the end of its tR, in the future; on a FIFO lane that would keep
every other die's earlier transfer off the channel until then. Lanes of either kind
never overlap themselves.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
PROG, ERASE, GC = 0, 1, 2


@dataclass(frozen=True, slots=True)
class SuspendRule:
    """When a read may suspend the program or erase it finds on its die, and at what
    cost (``FlashConfig.program_suspend`` and its siblings)."""

    program: bool
    erase: bool
    t_program: int
    t_erase: int
    min_remaining: int


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

    The per-lane numbers are numpy arrays; the queued programs and erases are Python
    lists per lane, with the end of each lane's newest one (and its start, if it is a
    program) mirrored in arrays. A chunk's bookings are one call on its distinct lanes
    (``read_many``, ``prog_many``, ``hold_many``), booked as ``read1``, ``prog1`` and
    ``hold1`` on each lane would book them: the lanes whose queue leaves nothing to
    decide (the common case) in a few numpy operations over all of them at once, the
    rest one by one."""

    def __init__(self, prefix: str, n: int, rule: SuspendRule | None = None,
                 record: bool = False, planes_per_die: int = 1) -> None:
        self.prefix = prefix
        self.rule = rule
        #: plane bits per die in a mask (a lane that is a chip has several dies' bits)
        self.P = planes_per_die
        self._until = np.zeros(n, dtype=np.int64)
        self._rd = np.zeros(n, dtype=np.int64)
        #: per die, the programs and erases booked after its last read:
        #: [start, end, kind (PROG, ERASE, GC), plane mask, span index, page offset]
        self._q: list[deque[list[int]]] = [deque() for _ in range(n)]
        #: per die, the end of its newest queued op (-1: none queued), and its start if
        #: it is a program (-1 otherwise)
        self._qend = np.full(n, -1, dtype=np.int64)
        self._qprog = np.full(n, -1, dtype=np.int64)
        self._busy = np.zeros(n, dtype=np.int64)
        self._count = np.zeros(n, dtype=np.int64)
        self.suspends = {"program": 0, "erase": 0}
        self.merged = 0
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

    # -- reads ---------------------------------------------------------------------------
    def read1(self, i: int, earliest: int, duration: int, dies: int = 0,
              arrive: int = -1) -> int:
        """Book a read of ``duration`` on die ``i`` no earlier than ``earliest``; return
        its end. On a lane that is a chip, ``dies`` is the bit mask of its dies the read
        uses and ``arrive`` when it reached the scheduler (``read_many``)."""
        qe: int = self._qend.item(i)
        if dies and qe < 0:
            bs: int = self._bstart.item(i)
            if (earliest if arrive < 0 else arrive) <= bs and not self._bmask.item(i) & dies:
                self._join([i], [bs + duration], [dies])
                return bs + duration
        r: int = self._rd.item(i)
        s = earliest if earliest > r else r
        if qe > s:
            return self._read_queued([i], [s], [duration])[0]
        if qe >= 0:
            self._q[i].clear()
            self._qend[i] = self._qprog[i] = -1
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

    def _read_queued(self, lanes: list[int], starts: list[int],
                     durations: list[int]) -> list[int]:
        """Reads of ``durations`` from ``starts`` on dies ``lanes``, whose queues have
        work left to run after the read's start: each queues ahead of it, or suspends
        it; their ends."""
        rd, until, busy, count = self._rd, self._until, self._busy, self._count
        qs, spans, rule = self._q, self.spans, self.rule
        out = []
        for i, s, d in zip(lanes, starts, durations, strict=True):
            q = qs[i]
            while q[0][1] <= s:
                q.popleft()
            lat = 0
            op = q[0]
            if s < op[0]:
                start = s  # ahead of every waiting program and erase
            else:
                erasing = op[2] == ERASE
                if (rule is not None and (rule.erase if erasing else rule.program)
                        and op[2] != GC and op[1] - s >= rule.min_remaining
                        and op[1] - s > (rule.t_erase if erasing else rule.t_program)):
                    lat = rule.t_erase if erasing else rule.t_program
                    self.suspends["erase" if erasing else "program"] += 1
                    if spans is not None:  # the part done before the suspend
                        spans[i][op[4]] = (op[0], s)
                        spans[i].append((s, op[1]))
                        op[4] = len(spans[i]) - 1
                    op[0] = s  # the rest runs after the read
                    start = s + lat
                else:
                    start = op[1]  # after the running one
                    q.popleft()
            end = start + d
            rd[i] = end
            t = end
            for op in q:  # the work behind moves later, in order
                if op[0] >= t:
                    break
                sh = t - op[0]
                op[0] += sh
                op[1] += sh
                t = op[1]
                if spans is not None:
                    spans[i][op[4]] = (op[0], op[1])
            if q:
                op = q[-1]
                u = op[1]
                until[i] = u if u > end else end
                self._qend[i] = u
                self._qprog[i] = op[0] if op[2] == PROG else -1
            else:
                if until.item(i) < end:
                    until[i] = end
                self._qend[i] = self._qprog[i] = -1
            busy[i] += d + lat
            count[i] += 1
            if spans is not None:
                spans[i].append((start - lat, end))
            out.append(end)
        return out

    def read_many(self, lanes: I64, earliest: I64, durations: I64,
                  dies: I64 | None = None, arrive: I64 | None = None) -> I64:
        """``read1`` on each of distinct ``lanes``; their ends. A lane with no program
        or erase left to run past the read's start (the common case of a chunk's reads)
        is booked with the others in numpy; the rest one by one.

        ``dies``: on lanes that are chips (MQSim's chip lock), the bit mask of the dies
        each read uses. A chip takes a new command only when all its dies are idle, and
        then issues every waiting read of a die not already reading together (MQSim's
        die-interleaved read): a read issued before the chip's latest batch of reads
        starts joins it if its dies are free in it (``arrive``: when each read reached
        the scheduler, before any wait for its chip; default ``earliest``)."""
        rd, until = self._rd, self._until
        s = np.maximum(earliest, rd[lanes])
        end = s + durations
        qe = self._qend[lanes]
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
            end[slow] = self._read_queued(lanes[slow].tolist(), s[slow].tolist(),
                                          durations[slow].tolist())
        if not book.all():
            lanes, s, end_b, durations = lanes[book], s[book], end[book], durations[book]
            qe = qe[book]
            if dies is not None:
                dies = dies[book]
        else:
            end_b = end
        stale = qe >= 0  # queued work that ended before the read: forgotten
        if stale.any():
            done = lanes[stale]
            for i in done.tolist():
                self._q[i].clear()
            self._qend[done] = -1
            self._qprog[done] = -1
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
        if planes and ready <= self._qprog.item(i):
            joined = self._merge([i], [ready], [planes], [page])[0]
            if joined >= 0:
                return joined
        return self._append(i, ready, duration, PROG, planes, page)

    def _merge(self, lanes: list[int], ready: list[int], planes: list[int],
               pages: list[int]) -> list[int]:
        """Per lane, the end of the waiting program its page of planes ``planes`` at
        offset ``pages`` joins (``prog1``), or -1."""
        qs, P = self._q, self.P
        out = []
        for i, r, m, page in zip(lanes, ready, planes, pages, strict=True):
            q = qs[i]
            die = (m.bit_length() - 1) // P
            joined = -1
            # the die's newest waiting program, among the last few commands of the lane
            k = len(q) - 1
            stop = k - 4 if k > 3 else -1
            while k > stop:
                op = q[k]
                if op[0] < r or op[2] != PROG:
                    break
                if op[3] and (op[3].bit_length() - 1) // P == die:
                    if op[3] & m:
                        break
                    if op[5] == page:
                        op[3] |= m
                        self.merged += 1
                        joined = op[1]
                        break
                    # an older waiting program may be at this offset
                k -= 1
            out.append(joined)
        return out

    def prog_many(self, lanes: I64, ready: I64, durations: I64, planes: I64,
                  pages: I64) -> int:
        """``prog1`` on each of distinct ``lanes``; the latest end (0 for none). The
        lanes whose newest queued op is no program still waiting at ``ready`` (no page
        can join one) are booked in numpy, the others one by one."""
        last = 0
        cand = (planes != 0) & (ready <= self._qprog[lanes])
        if cand.any():
            joined = np.full(lanes.size, -1, dtype=np.int64)
            joined[cand] = self._merge(lanes[cand].tolist(), ready[cand].tolist(),
                                       planes[cand].tolist(), pages[cand].tolist())
            own = joined < 0
            if not own.all():
                last = int(joined.max())
                lanes, ready, durations = lanes[own], ready[own], durations[own]
                planes, pages = planes[own], pages[own]
        if not lanes.size:
            return last
        until = self._until
        s = np.maximum(ready, until[lanes])
        end = s + durations
        until[lanes] = end
        self._qend[lanes] = end
        self._qprog[lanes] = s
        self._busy[lanes] += durations
        self._count[lanes] += 1
        qs, spans = self._q, self.spans
        lane_l = lanes.tolist()
        if spans is None:
            for i, a, b, m, pg in zip(lane_l, s.tolist(), end.tolist(), planes.tolist(),
                                      pages.tolist(), strict=True):
                qs[i].append([a, b, PROG, m, -1, pg])
        else:
            for i, a, b, m, pg in zip(lane_l, s.tolist(), end.tolist(), planes.tolist(),
                                      pages.tolist(), strict=True):
                spans[i].append((a, b))
                qs[i].append([a, b, PROG, m, len(spans[i]) - 1, pg])
        e = int(end.max())
        return e if e > last else last

    def work1(self, i: int, earliest: int, duration: int, erase: bool = False) -> int:
        """Book garbage-collection work on die ``i``: a relocation, or an erase."""
        return self._append(i, earliest, duration, ERASE if erase else GC, 0)

    def _append(self, i: int, earliest: int, duration: int, kind: int, planes: int,
                page: int = -1) -> int:
        b: int = self._until.item(i)
        s = earliest if earliest > b else b
        end = s + duration
        self._until[i] = end
        self._qend[i] = end
        self._qprog[i] = s if kind == PROG else -1
        self._q[i].append([s, end, kind, planes, self._book(i, s, end, duration), page])
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
        s, i = self._fit(t, dur)
        e = s + dur
        self.busy_ps += dur
        self.count += 1
        if self.spans is not None:
            self.spans.append((s, e))
        if dur == 0:
            return e
        starts, ends = self.starts, self.ends
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

    def prune(self, before: int) -> None:
        """Forget intervals that ended before ``before`` (no booking can reach them)."""
        k = bisect_right(self.ends, before)
        if k > 64:
            del self.starts[:k], self.ends[:k]

    @property
    def busy_until(self) -> int:
        return self.ends[-1] if self.ends else 0


class GapBank:
    """``n`` gap-filling lanes with ``LaneBank``'s interface."""

    def __init__(self, prefix: str, n: int, record: bool = False) -> None:
        self.prefix = prefix
        self.lanes = [GapLane(record) for _ in range(n)]
        self.spans: list[list[tuple[int, int]]] | None = (
            [lane.spans for lane in self.lanes]  # type: ignore[misc]
            if record else None)

    def __len__(self) -> int:
        return len(self.lanes)

    @property
    def busy_until(self) -> I64:
        return np.array([lane.busy_until for lane in self.lanes], dtype=np.int64)

    @property
    def busy_ps(self) -> I64:
        return np.array([lane.busy_ps for lane in self.lanes], dtype=np.int64)

    @property
    def count(self) -> I64:
        return np.array([lane.count for lane in self.lanes], dtype=np.int64)

    def start_time(self, i: int, earliest: int) -> int:
        return self.lanes[i].fit(earliest, 0)

    def reserve1(self, i: int, earliest: int, duration: int) -> int:
        return self.lanes[i].book(earliest, duration)

    def reserve(self, idx: I64, earliest: I64, duration: I64) -> I64:
        return np.array([self.reserve1(i, e, d) for i, e, d in
                         zip(idx.tolist(), earliest.tolist(), duration.tolist(), strict=True)],
                        dtype=np.int64)

    def prune(self, before: int) -> None:
        for lane in self.lanes:
            lane.prune(before)

    def report(self, i: int, elapsed: int) -> dict[str, float | int]:
        lane = self.lanes[i]
        return {"busy_ps": lane.busy_ps, "count": lane.count,
                "utilization": round(lane.busy_ps / elapsed, 9) if elapsed > 0 else 0.0}
