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

State (``GapBank.arrays()``, handed to every kernel): ``iv[row, i, k]``, per lane ``i``
its busy intervals (rows ``START``, ``END``: the first ``meta[FILL, i]`` slots, sorted
and disjoint) and, on a bank that records its bookings (for timelines), every booking
in order (rows ``REC_START``, ``REC_END``: the first ``meta[COUNT, i]`` slots), which
``gap_book`` appends; ``meta[row, i]``: intervals kept, busy time, bookings.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tmhw.sim.jit import njit_noref

I64 = npt.NDArray[np.int64]
Meta = npt.NDArray[np.int64]


class GapBank:
    """``n`` gap-filling lanes (module docstring), their state in arrays: per lane
    its sorted disjoint busy intervals as a row of ``_iv`` (module docstring), its busy
    time and its booking count. A booking is one compiled call (``gap_book``; a chunk's
    bookings of its channels are the chunk kernels', ``flash.engine.chunks``); a row
    that fills doubles every row's slots. ``record``: every booking is kept
    (``spans``)."""

    def __init__(self, prefix: str, n: int, record: bool = False) -> None:
        self.prefix = prefix
        self._cap = 64
        self._iv = np.zeros((4 if record else 2, n, self._cap), dtype=np.int64)
        self._meta = np.zeros((3, n), dtype=np.int64)
        self.record = record

    def __len__(self) -> int:
        return int(self._meta.shape[1])

    def grow(self) -> None:
        """Double every row's slots."""
        n, cap = len(self), self._cap
        iv = np.zeros((self._iv.shape[0], n, 2 * cap), dtype=np.int64)
        iv[:, :, :cap] = self._iv
        self._iv, self._cap = iv, 2 * cap

    @property
    def busy_until(self) -> I64:
        fill = self._meta[FILL]
        last = self._iv[END, np.arange(fill.size), np.maximum(fill - 1, 0)]
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
        return self._iv, self._meta

    @property
    def spans(self) -> list[list[tuple[int, int]]] | None:
        """(start, end) of every booking per lane, in booking order, when recording."""
        if not self.record:
            return None
        return [list(zip(self._iv[REC_START, i, :k].tolist(),
                         self._iv[REC_END, i, :k].tolist(), strict=True))
                for i, k in enumerate(self._meta[COUNT].tolist())]

    def intervals(self, i: int) -> tuple[list[int], list[int]]:
        """Lane ``i``'s busy intervals: (starts, ends), sorted."""
        k = self._meta[FILL].item(i)
        return self._iv[START, i, :k].tolist(), self._iv[END, i, :k].tolist()

    def fit(self, i: int, t: int, dur: int) -> int:
        """Earliest start >= ``t`` of an idle interval of length ``dur`` on lane ``i``
        ."""
        return int(gap_fit(self._iv, self._meta, i, t, dur))

    def start_time(self, i: int, earliest: int) -> int:
        return self.fit(i, earliest, 0)

    def reserve1(self, i: int, earliest: int, duration: int) -> int:
        """Reserve ``duration`` on lane ``i`` at its earliest fit no earlier than
        ``earliest``; the end."""
        e = int(gap_book(self._iv, self._meta, i, earliest, duration))
        if e < 0:  # the lane's row is full
            self.grow()
            e = int(gap_book(self._iv, self._meta, i, earliest, duration))
        return e

    def cover(self, i: int, s: int, e: int) -> None:
        """Mark [s, e) busy on lane ``i``, joining any intervals it overlaps or
        touches (for a lane of windows rather than of work: no busy time or count)."""
        while gap_cover(self._iv, self._meta, i, s, e) < 0:
            self.grow()

    def prune(self, before: int, lo: int = 0, hi: int | None = None) -> None:
        """Forget the intervals of lanes ``lo`` to ``hi`` (default: all) that ended
        before ``before`` (no booking can reach them), past the last ``PRUNE_KEEP``."""
        gap_prune(self._iv, self._meta, before, lo, len(self) if hi is None else hi)

    def report(self, i: int, elapsed: int) -> dict[str, float | int]:
        busy: int = self._meta[BUSY].item(i)
        return {"busy_ps": busy, "count": self._meta[COUNT].item(i),
                "utilization": round(busy / elapsed, 9) if elapsed > 0 else 0.0}


class BankLane:
    """Row ``i`` of a ``GapBank`` as one lane: its state
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
        return int(self.bank.arrays()[1][BUSY, self.i])

    @property
    def count(self) -> int:
        return int(self.bank.arrays()[1][COUNT, self.i])

    @property
    def busy_until(self) -> int:
        iv, meta = self.bank.arrays()
        k = int(meta[FILL, self.i])
        return int(iv[END, self.i, k - 1]) if k else 0

    def report(self, elapsed: int) -> dict[str, float | int]:
        return self.bank.report(self.i, elapsed)


#: the rows of ``iv`` (module docstring): busy intervals, and recorded bookings
START, END, REC_START, REC_END = range(4)
#: the rows of ``meta``: per lane, intervals kept, busy time, bookings (rows of int64,
#: not a record per lane: numba takes a structured array from Python some 90 ns slower,
#: and the detailed model books a channel from Python for every page)
FILL, BUSY, COUNT = range(3)
#: intervals a lane keeps that no booking can reach before ``prune`` drops them
PRUNE_KEEP = 64


@njit_noref
def gap_fit(iv: I64, meta: Meta, i: int, t: int, dur: int) -> int:
    """The earliest start >= ``t`` of an idle interval of length ``dur`` on row
    ``i``."""
    n = meta[FILL, i]
    st, en = iv[START, i], iv[END, i]
    j = np.searchsorted(en[:n], t, side="right")
    s = t
    while j < n and st[j] < s + dur:
        if en[j] > s:
            s = en[j]
        j += 1
    return s


@njit_noref
def gap_room(iv: I64, meta: Meta, i: int) -> bool:
    """Whether row ``i`` has a free slot for a booking (and for its record)."""
    cap = iv.shape[2]
    return bool(meta[FILL, i] < cap and (iv.shape[0] == 2 or meta[COUNT, i] < cap))


@njit_noref
def gap_book(iv: I64, meta: Meta, i: int, t: int, dur: int) -> int:
    """Reserve ``dur`` on row ``i`` at its earliest fit no earlier than ``t``: its end,
    or -1 (nothing booked) when the row has no free slot (``gap_room``)."""
    if not gap_room(iv, meta, i):
        return -1
    n = meta[FILL, i]
    st, en = iv[START, i], iv[END, i]
    s = t
    j = n
    if n and t < en[n - 1]:  # the earliest idle interval long enough (``_fit``)
        j = np.searchsorted(en[:n], t, side="right")
        while j < n and st[j] < s + dur:
            if en[j] > s:
                s = en[j]
            j += 1
    e = s + dur
    if iv.shape[0] > 2:
        iv[REC_START, i, meta[COUNT, i]] = s
        iv[REC_END, i, meta[COUNT, i]] = e
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
def gap_prune(iv: I64, meta: Meta, before: int, lo: int, hi: int) -> None:
    """``GapBank.prune`` of rows ``lo`` to ``hi``."""
    for i in range(lo, hi):
        n = meta[FILL, i]
        st, en = iv[START, i], iv[END, i]
        k = np.searchsorted(en[:n], before, side="right")
        if k > PRUNE_KEEP:
            for x in range(n - k):
                st[x] = st[x + k]
                en[x] = en[x + k]
            meta[FILL, i] = n - k


@njit_noref
def gap_cover(iv: I64, meta: Meta, i: int, s: int, e: int) -> int:
    """``GapBank.cover`` on row ``i``: 0, or -1 (nothing changed) when the row has no
    free slot."""
    if e <= s:
        return 0
    n = meta[FILL, i]
    st, en = iv[START, i], iv[END, i]
    a = np.searchsorted(en[:n], s, side="left")  # the first that ends at or after s
    b = np.searchsorted(st[:n], e, side="right")  # the first that starts after e
    if a < b:
        if st[a] < s:
            s = st[a]
        if en[b - 1] > e:
            e = en[b - 1]
    m = n - (b - a) + 1
    if m > iv.shape[2]:
        return -1
    if m > n:  # one more interval: shift the later ones up
        for k in range(n, b, -1):
            st[k] = st[k - 1]
            en[k] = en[k - 1]
    elif m < n:  # intervals a + 1 .. b - 1 joined: shift the later ones down
        for k in range(b, n):
            st[k - (b - a) + 1] = st[k]
            en[k - (b - a) + 1] = en[k]
    st[a] = s
    en[a] = e
    meta[FILL, i] = m
    return 0
