"""Banks of busy resources: the flash dies and channels.

``LaneBank`` holds busy-until timelines (``tmhw.sim.Timeline``) in numpy arrays. An SSD
has hundreds of dies and booking a 2 MiB chunk touches a hundred of them, so it books
many distinct lanes in one vectorised step (and one lane in scalar arithmetic) with
``Timeline.reserve``'s semantics: a reservation starts at ``max(earliest, busy_until)``.

``GapBank`` keeps each lane's bookings as sorted disjoint intervals instead, so a
booking takes the earliest idle interval long enough for it. A loosely timed model books
a read's data-out at the end of its tR, in the future; on a FIFO lane that would keep
every other die's earlier transfer off the channel until then. Lanes of either kind
never overlap themselves.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


class LaneBank:
    """``n`` FIFO busy-until lanes named ``prefix0 .. prefix{n-1}``. Times in ps.

    State is kept in Python lists: a one-lane booking is then as cheap as
    ``Timeline.reserve``, and a many-lane booking converts only the lanes it touches."""

    def __init__(self, prefix: str, n: int, record: bool = False) -> None:
        self.prefix = prefix
        self._until = [0] * n
        self._busy = [0] * n
        self._count = [0] * n
        #: (start, end) of every reservation per lane when recording (tests, plots).
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

    def reserve1(self, i: int, earliest: int, duration: int) -> int:
        """Book lane ``i`` for ``duration`` no earlier than ``earliest``; return the end."""
        b = self._until[i]
        start = earliest if earliest > b else b
        end = start + duration
        self._until[i] = end
        self._busy[i] += duration
        self._count[i] += 1
        if self.spans is not None:
            self.spans[i].append((start, end))
        return end

    def reserve(self, idx: I64, earliest: I64, duration: I64) -> I64:
        """Book distinct lanes ``idx`` at once; return their end times."""
        il = idx.tolist()
        until = self._until
        start = np.maximum(earliest, np.array([until[i] for i in il], dtype=np.int64))
        end: I64 = start + duration
        busy, count = self._busy, self._count
        for i, e, d in zip(il, end.tolist(), duration.tolist(), strict=True):
            until[i] = e
            busy[i] += d
            count[i] += 1
        if self.spans is not None:
            for i, s, e in zip(il, start.tolist(), end.tolist(), strict=True):
                self.spans[i].append((s, e))
        return end

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
