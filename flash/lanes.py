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
    ``flash.scheduler``). Times in ps.

    Per die the lane keeps the end of its last read and the programs and erases booked
    after it, in order. A read queues behind reads only: it goes ahead of programs and
    erases still waiting to start, and if one is running on the die it suspends it (when
    ``rule`` allows: enabled, at least ``rule.min_remaining`` of it left, and more than
    the suspend latency), starting after the suspend latency; otherwise it follows the
    running one. The work behind the read moves later by what the read took, in order.
    A program may absorb a page for another plane of its die while it waits to start
    (multi-plane command forming, ``prog1``). ``hold1`` keeps a die from its next
    command until its cache register drains.

    State is kept in Python lists: a booking is a few list operations, and a chunk's
    bookings are one call (``read_many``, ``prog_many``, ``hold_many``), one loop over
    its dies; ``read1`` and ``prog1`` are one lane of those."""

    def __init__(self, prefix: str, n: int, rule: SuspendRule | None = None,
                 record: bool = False, planes_per_die: int = 1) -> None:
        self.prefix = prefix
        self.rule = rule
        #: plane bits per die in a mask (a lane that is a chip has several dies' bits)
        self.P = planes_per_die
        self._until = [0] * n
        self._rd = [0] * n
        #: per die, the programs and erases booked after its last read:
        #: [start, end, kind (PROG, ERASE, GC), plane mask, span index, page offset]
        self._q: list[deque[list[int]]] = [deque() for _ in range(n)]
        self._busy = [0] * n
        self._count = [0] * n
        self.suspends = {"program": 0, "erase": 0}
        self.merged = 0
        #: chip lanes (``read_many``'s ``dies``): the latest batch of reads, its start,
        #: dies and end
        self._bstart = [-1] * n
        self._bmask = [0] * n
        self._bend = [0] * n
        #: (start, end) of every booking per lane when recording (tests, plots).
        self.spans: list[list[tuple[int, int]]] | None = (
            [[] for _ in range(n)] if record else None)

    def __len__(self) -> int:
        return len(self._until)

    @property
    def busy_until(self) -> I64:
        return np.array(self._until, dtype=np.int64)

    @property
    def busy_ps(self) -> I64:
        return np.array(self._busy, dtype=np.int64)

    @property
    def count(self) -> I64:
        return np.array(self._count, dtype=np.int64)

    def start_time(self, i: int, earliest: int) -> int:
        b = self._until[i]
        return earliest if earliest > b else b

    def _book(self, i: int, start: int, end: int, busy: int) -> int:
        self._busy[i] += busy
        self._count[i] += 1
        if self.spans is None:
            return -1
        self.spans[i].append((start, end))
        return len(self.spans[i]) - 1

    def read1(self, i: int, earliest: int, duration: int) -> int:
        """Book a read of ``duration`` on die ``i`` no earlier than ``earliest``; return
        its end."""
        return self.read_many([i], [earliest], [duration])[0]

    def read_many(self, lanes: list[int], earliest: list[int], durations: list[int],
                  dies: list[int] | None = None,
                  arrive: list[int] | None = None) -> list[int]:
        """A read on each of distinct ``lanes`` (``read1``); their ends. One loop over
        the lanes: a lane with no program or erase left to run past the read's start
        (the common case of a chunk's reads) takes the short path.

        ``dies``: on lanes that are chips (MQSim's chip lock), the bit mask of the dies
        each read uses. A chip takes a new command only when all its dies are idle, and
        then issues every waiting read of a die not already reading together (MQSim's
        die-interleaved read): a read issued before the chip's latest batch of reads
        starts joins it if its dies are free in it (``arrive``: when each read reached
        the scheduler, before any wait for its chip; default ``earliest``)."""
        rd, until, qs = self._rd, self._until, self._q
        busy, count, spans = self._busy, self._count, self.spans
        out = []
        for k, (i, e, d) in enumerate(zip(lanes, earliest, durations, strict=True)):
            q = qs[i]
            if dies is not None and not q:
                m = dies[k]
                bs = self._bstart[i]
                a = e if arrive is None else arrive[k]
                if a <= bs and not self._bmask[i] & m:   # joins the waiting batch
                    end = bs + d
                    self._bmask[i] |= m
                    if end > self._bend[i]:
                        busy[i] += end - self._bend[i]
                        if spans is not None:
                            spans[i].append((self._bend[i], end))
                        self._bend[i] = end
                    if rd[i] < end:
                        rd[i] = end
                    if until[i] < end:
                        until[i] = end
                    out.append(end)
                    continue
            r = rd[i]
            s = e if e > r else r
            if q:
                if q[-1][1] > s:  # work left to run: queue ahead of it, or suspend it
                    while q[0][1] <= s:
                        q.popleft()
                    lat = 0
                    op = q[0]
                    if s < op[0]:
                        start = s  # ahead of every waiting program and erase
                    else:
                        rule = self.rule
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
                        u = q[-1][1]
                        until[i] = u if u > end else end
                    elif until[i] < end:
                        until[i] = end
                    busy[i] += d + lat
                    count[i] += 1
                    if spans is not None:
                        spans[i].append((start - lat, end))
                    out.append(end)
                    continue
                q.clear()
            end = s + d
            rd[i] = end
            if until[i] < end:
                until[i] = end
            busy[i] += d
            count[i] += 1
            if spans is not None:
                spans[i].append((s, end))
            if dies is not None:  # this read opens the chip's next batch
                self._bstart[i], self._bmask[i], self._bend[i] = s, dies[k], end
            out.append(end)
        return out

    def hold_many(self, lanes: list[int], times: list[int]) -> None:
        """``hold1`` on each of ``lanes``."""
        rd, until = self._rd, self._until
        for i, t in zip(lanes, times, strict=True):
            if rd[i] < t:
                rd[i] = t
            if until[i] < t:
                until[i] = t

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
        return self.prog_many([i], [ready], [duration], [planes], [page])

    def prog_many(self, lanes: list[int], ready: list[int], durations: list[int],
                  planes: list[int], pages: list[int]) -> int:
        """``prog1`` on each lane in turn, in one loop; the latest end."""
        qs, until = self._q, self._until
        busy, count, spans = self._busy, self._count, self.spans
        P = self.P
        last = 0
        for i, r, d, m, page in zip(lanes, ready, durations, planes, pages, strict=True):
            q = qs[i]
            if m and q:
                die = (m.bit_length() - 1) // P
                # the die's newest waiting program, among the last few commands of the lane
                k = len(q) - 1
                stop = k - 4 if k > 3 else -1
                joined = -1
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
                if joined >= 0:
                    if joined > last:
                        last = joined
                    continue
            b = until[i]
            s = r if r > b else b
            end = s + d
            until[i] = end
            busy[i] += d
            count[i] += 1
            idx = -1
            if spans is not None:
                spans[i].append((s, end))
                idx = len(spans[i]) - 1
            q.append([s, end, PROG, m, idx, page])
            if end > last:
                last = end
        return last

    def work1(self, i: int, earliest: int, duration: int, erase: bool = False) -> int:
        """Book garbage-collection work on die ``i``: a relocation, or an erase."""
        return self._append(i, earliest, duration, ERASE if erase else GC, 0)

    def _append(self, i: int, earliest: int, duration: int, kind: int, planes: int,
                page: int = -1) -> int:
        b = self._until[i]
        s = earliest if earliest > b else b
        end = s + duration
        self._until[i] = end
        self._q[i].append([s, end, kind, planes, self._book(i, s, end, duration), page])
        return end

    def read_free(self, i: int) -> int:
        """When die ``i`` can start a new read (its last read and its cache register)."""
        return self._rd[i]

    def hold1(self, i: int, t: int) -> None:
        """Die ``i`` starts nothing before ``t`` (its cache register is still full)."""
        if self._rd[i] < t:
            self._rd[i] = t
        if self._until[i] < t:
            self._until[i] = t

    def report(self, i: int, elapsed: int) -> dict[str, float | int]:
        busy = self._busy[i]
        return {"busy_ps": busy, "count": self._count[i],
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
