"""The gap-filling lanes: the channels and the host link's two directions, each a
resource serving one thing at a time, with its bookings kept as sorted disjoint busy
intervals so a booking takes the earliest idle interval long enough for it. A loosely
timed model books a read's data-out at the end of its tR, in the future; on a FIFO lane
that would keep every other die's earlier transfer off the channel until then.

``GapBank`` holds ``n`` lanes in arrays, booked by the kernels here (``gap_book``,
``gap_fit``, ``gap_prune``, ``gap_cover``): the only implementation of the rules.
``BankLane`` is one row of a bank with a single lane's interface. A bank may also be
of windows rather than of work (MQSim's data-out convoy, ``flash.engine.chunks``): its
lanes keep the intervals they are told to cover (``GapBank.cover``) and answer fits.

State (``GapBank.arrays()``, handed to every kernel): ``intervals[row, lane, slot]``,
per lane its busy intervals (rows ``START``, ``END``: the first ``meta[FILL, lane]``
slots, sorted and disjoint) and, on a bank that records its bookings (for timelines),
every booking in order (rows ``REC_START``, ``REC_END``: the first ``meta[COUNT, lane]``
slots), which ``gap_book`` appends; ``meta[row, lane]``: intervals kept, busy time,
bookings.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tmhw.sim.jit import Direct, njit_noref

I64 = npt.NDArray[np.int64]
Meta = npt.NDArray[np.int64]


class GapBank:
    """``n_lanes`` gap-filling lanes (module docstring), their state in arrays: per
    lane its sorted disjoint busy intervals as a row of ``_intervals`` (module
    docstring), its busy time and its booking count. A booking is one compiled call
    (``gap_book``; a chunk's bookings of its channels are the chunk kernels',
    ``flash.engine.chunks``); a row that fills doubles every row's slots. ``record``:
    every booking is kept (``spans``)."""

    def __init__(self, prefix: str, n_lanes: int, record: bool = False) -> None:
        self.prefix = prefix
        self._cap = 64
        self._intervals = np.zeros((4 if record else 2, n_lanes, self._cap), dtype=np.int64)
        self._meta = np.zeros((3, n_lanes), dtype=np.int64)
        self.record = record

    def __len__(self) -> int:
        return int(self._meta.shape[1])

    def grow(self) -> None:
        """Double every row's slots."""
        n_lanes, cap = len(self), self._cap
        grown = np.zeros((self._intervals.shape[0], n_lanes, 2 * cap), dtype=np.int64)
        grown[:, :, :cap] = self._intervals
        self._intervals, self._cap = grown, 2 * cap

    @property
    def busy_until(self) -> I64:
        fill = self._meta[FILL]
        last = self._intervals[END, np.arange(fill.size), np.maximum(fill - 1, 0)]
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

    def arrays(self) -> tuple[I64, Meta]:
        """The state a compiled booking takes (``gap_book``): the intervals and the
        per-lane numbers."""
        return self._intervals, self._meta

    @property
    def spans(self) -> list[list[tuple[int, int]]] | None:
        """(start, end) of every booking per lane, in booking order, when recording."""
        if not self.record:
            return None
        return [list(zip(self._intervals[REC_START, lane, :count].tolist(),
                         self._intervals[REC_END, lane, :count].tolist(), strict=True))
                for lane, count in enumerate(self._meta[COUNT].tolist())]

    def intervals(self, lane: int) -> tuple[list[int], list[int]]:
        """Lane ``lane``'s busy intervals: (starts, ends), sorted."""
        fill = self._meta[FILL].item(lane)
        return (self._intervals[START, lane, :fill].tolist(),
                self._intervals[END, lane, :fill].tolist())

    def fit(self, lane: int, earliest: int, duration: int) -> int:
        """Earliest start >= ``earliest`` of an idle interval of length ``duration`` on
        lane ``lane``."""
        return int(gap_fit(self._intervals, self._meta, lane, earliest, duration))

    def start_time(self, lane: int, earliest: int) -> int:
        return self.fit(lane, earliest, 0)

    def reserve1(self, lane: int, earliest: int, duration: int) -> int:
        """Reserve ``duration`` on lane ``lane`` at its earliest fit no earlier than
        ``earliest``; the end."""
        end = int(_GAP_BOOK.call(self._intervals, self._meta, lane, earliest, duration))
        if end < 0:  # the lane's row is full
            self.grow()
            end = int(_GAP_BOOK.call(self._intervals, self._meta, lane, earliest, duration))
        return end

    def cover(self, lane: int, start: int, end: int) -> None:
        """Mark [start, end) busy on lane ``lane``, joining any intervals it overlaps or
        touches (for a lane of windows rather than of work: no busy time or count)."""
        while gap_cover(self._intervals, self._meta, lane, start, end) < 0:
            self.grow()

    def prune(self, before: int, lo: int = 0, hi: int | None = None) -> None:
        """Forget the intervals of lanes ``lo`` to ``hi`` (default: all) that ended
        before ``before`` (no booking can reach them), past the last ``PRUNE_KEEP``."""
        gap_prune(self._intervals, self._meta, before, lo, len(self) if hi is None else hi)

    def report(self, lane: int, elapsed: int) -> dict[str, float | int]:
        busy: int = self._meta[BUSY].item(lane)
        return {"busy_ps": busy, "count": self._meta[COUNT].item(lane),
                "utilization": round(busy / elapsed, 9) if elapsed > 0 else 0.0}


class BankLane:
    """Row ``row`` of a ``GapBank`` as one lane: its state
    stays in the bank's arrays, so a compiled caller books on it as on any row (the
    host link's directions, ``flash.host``, which ``flash.pages`` books in a kernel)."""

    __slots__ = ("bank", "row")

    def __init__(self, bank: GapBank, row: int) -> None:
        self.bank = bank
        self.row = row

    def fit(self, earliest: int, duration: int) -> int:
        """Earliest start >= ``earliest`` of an idle interval of length ``duration``."""
        return self.bank.fit(self.row, earliest, duration)

    def book(self, earliest: int, duration: int) -> int:
        """Reserve ``duration`` at the earliest fit no earlier than ``earliest``; return
        the end."""
        return self.bank.reserve1(self.row, earliest, duration)

    def prune(self, before: int) -> None:
        """Forget intervals that ended before ``before`` (no booking can reach them)."""
        self.bank.prune(before, self.row, self.row + 1)

    @property
    def starts(self) -> list[int]:
        return self.bank.intervals(self.row)[0]

    @property
    def ends(self) -> list[int]:
        return self.bank.intervals(self.row)[1]

    @property
    def spans(self) -> list[tuple[int, int]] | None:
        spans = self.bank.spans
        return None if spans is None else spans[self.row]

    @property
    def busy_ps(self) -> int:
        return int(self.bank.arrays()[1][BUSY, self.row])

    @property
    def count(self) -> int:
        return int(self.bank.arrays()[1][COUNT, self.row])

    @property
    def busy_until(self) -> int:
        intervals, meta = self.bank.arrays()
        fill = int(meta[FILL, self.row])
        return int(intervals[END, self.row, fill - 1]) if fill else 0

    def report(self, elapsed: int) -> dict[str, float | int]:
        return self.bank.report(self.row, elapsed)


#: the rows of ``intervals`` (module docstring): busy intervals, and recorded bookings
START, END, REC_START, REC_END = range(4)
#: the rows of ``meta``: per lane, intervals kept, busy time, bookings (rows of int64,
#: not a record per lane: numba takes a structured array from Python some 90 ns slower,
#: and the detailed model books a channel from Python for every page)
FILL, BUSY, COUNT = range(3)
#: intervals a lane keeps that no booking can reach before ``prune`` drops them
PRUNE_KEEP = 64


@njit_noref
def gap_fit(intervals: I64, meta: Meta, lane: int, earliest: int, duration: int) -> int:
    """The earliest start >= ``earliest`` of an idle interval of length ``duration`` on
    row ``lane``."""
    fill = meta[FILL, lane]
    starts, ends = intervals[START, lane], intervals[END, lane]
    pos = np.searchsorted(ends[:fill], earliest, side="right")
    start = earliest
    while pos < fill and starts[pos] < start + duration:
        if ends[pos] > start:
            start = ends[pos]
        pos += 1
    return start


@njit_noref
def gap_room(intervals: I64, meta: Meta, lane: int) -> bool:
    """Whether row ``lane`` has a free slot for a booking (and for its record)."""
    return gap_room_for(intervals, meta, lane, 1)


@njit_noref
def gap_room_for(intervals: I64, meta: Meta, lane: int, bookings: int) -> bool:
    """Whether row ``lane`` has free slots for ``bookings`` bookings (and their records):
    each adds at most one interval."""
    cap = intervals.shape[2]
    return bool(meta[FILL, lane] + bookings <= cap
                and (intervals.shape[0] == 2 or meta[COUNT, lane] + bookings <= cap))


@njit_noref
def gap_book(intervals: I64, meta: Meta, lane: int, earliest: int, duration: int) -> int:
    """Reserve ``duration`` on row ``lane`` at its earliest fit no earlier than
    ``earliest``: its end, or -1 (nothing booked) when the row has no free slot
    (``gap_room``)."""
    if not gap_room(intervals, meta, lane):
        return -1
    fill = meta[FILL, lane]
    starts, ends = intervals[START, lane], intervals[END, lane]
    start = earliest
    pos = fill
    # the earliest idle interval long enough (``gap_fit``)
    if fill and earliest < ends[fill - 1]:
        pos = np.searchsorted(ends[:fill], earliest, side="right")
        while pos < fill and starts[pos] < start + duration:
            if ends[pos] > start:
                start = ends[pos]
            pos += 1
    end = start + duration
    if intervals.shape[0] > 2:
        intervals[REC_START, lane, meta[COUNT, lane]] = start
        intervals[REC_END, lane, meta[COUNT, lane]] = end
    meta[BUSY, lane] += duration
    meta[COUNT, lane] += 1
    if duration == 0:
        return end
    # intervals before pos end at or before start; interval pos starts at or after end
    if pos > 0 and ends[pos - 1] == start:
        if pos < fill and starts[pos] == end:  # the booking closes the gap between two
            ends[pos - 1] = ends[pos]
            for k in range(pos, fill - 1):
                starts[k] = starts[k + 1]
                ends[k] = ends[k + 1]
            meta[FILL, lane] = fill - 1
        else:
            ends[pos - 1] = end
    elif pos < fill and starts[pos] == end:
        starts[pos] = start
    else:
        for k in range(fill, pos, -1):
            starts[k] = starts[k - 1]
            ends[k] = ends[k - 1]
        starts[pos] = start
        ends[pos] = end
        meta[FILL, lane] = fill + 1
    return end


@njit_noref
def gap_prune(intervals: I64, meta: Meta, before: int, lo: int, hi: int) -> None:
    """``GapBank.prune`` of rows ``lo`` to ``hi``."""
    for lane in range(lo, hi):
        fill = meta[FILL, lane]
        starts, ends = intervals[START, lane], intervals[END, lane]
        drop = np.searchsorted(ends[:fill], before, side="right")
        if drop > PRUNE_KEEP:
            for j in range(fill - drop):
                starts[j] = starts[j + drop]
                ends[j] = ends[j + drop]
            meta[FILL, lane] = fill - drop


@njit_noref
def gap_cover(intervals: I64, meta: Meta, lane: int, start: int, end: int) -> int:
    """``GapBank.cover`` on row ``lane``: 0, or -1 (nothing changed) when the row has no
    free slot."""
    if end <= start:
        return 0
    fill = meta[FILL, lane]
    starts, ends = intervals[START, lane], intervals[END, lane]
    first = np.searchsorted(ends[:fill], start, side="left")  # the first ending >= start
    past = np.searchsorted(starts[:fill], end, side="right")  # the first starting > end
    if first < past:
        if starts[first] < start:
            start = starts[first]
        if ends[past - 1] > end:
            end = ends[past - 1]
    new_fill = fill - (past - first) + 1
    if new_fill > intervals.shape[2]:
        return -1
    if new_fill > fill:  # one more interval: shift the later ones up
        for k in range(fill, past, -1):
            starts[k] = starts[k - 1]
            ends[k] = ends[k - 1]
    elif new_fill < fill:  # intervals first + 1 .. past - 1 joined: shift the later ones down
        for k in range(past, fill):
            starts[k - (past - first) + 1] = starts[k]
            ends[k - (past - first) + 1] = ends[k]
    starts[first] = start
    ends[first] = end
    meta[FILL, lane] = new_fill
    return 0


#: ``gap_book`` past its dispatcher (``tmhw.sim.jit.Direct``)
_GAP_BOOK = Direct(gap_book)
