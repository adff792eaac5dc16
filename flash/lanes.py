"""A bank of busy-until timelines (``tmhw.sim.Timeline``) held in numpy arrays.

An SSD has hundreds of dies; booking a 2 MiB chunk touches a hundred of them. A
``LaneBank`` books many distinct lanes in one vectorised step, and one lane in scalar
arithmetic, with exactly ``Timeline.reserve``'s semantics: a reservation starts at
``max(earliest, busy_until)`` and lasts ``duration``; lanes never overlap themselves.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


class LaneBank:
    """``n`` FIFO busy-until lanes named ``prefix0 .. prefix{n-1}``. Times in ps."""

    def __init__(self, prefix: str, n: int, record: bool = False) -> None:
        self.prefix = prefix
        self.busy_until = np.zeros(n, dtype=np.int64)
        self.busy_ps = np.zeros(n, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int64)
        #: (start, end) of every reservation per lane when recording (tests, plots).
        self.spans: list[list[tuple[int, int]]] | None = (
            [[] for _ in range(n)] if record else None)

    def __len__(self) -> int:
        return int(self.busy_until.size)

    def start_time(self, i: int, earliest: int) -> int:
        b: int = self.busy_until.item(i)
        return earliest if earliest > b else b

    def reserve1(self, i: int, earliest: int, duration: int) -> int:
        """Book lane ``i`` for ``duration`` no earlier than ``earliest``; return the end."""
        b: int = self.busy_until.item(i)
        start = earliest if earliest > b else b
        end = start + duration
        self.busy_until[i] = end
        self.busy_ps[i] += duration
        self.count[i] += 1
        if self.spans is not None:
            self.spans[i].append((start, end))
        return end

    def reserve(self, idx: I64, earliest: I64, duration: I64) -> I64:
        """Book distinct lanes ``idx`` at once; return their end times."""
        start = np.maximum(earliest, self.busy_until[idx])
        end: I64 = start + duration
        self.busy_until[idx] = end
        self.busy_ps[idx] += duration
        self.count[idx] += 1
        if self.spans is not None:
            for i, s, e in zip(idx.tolist(), start.tolist(), end.tolist(), strict=True):
                self.spans[i].append((s, e))
        return end

    def report(self, i: int, elapsed: int) -> dict[str, float | int]:
        busy = int(self.busy_ps[i])
        return {"busy_ps": busy, "count": int(self.count[i]),
                "utilization": round(busy / elapsed, 9) if elapsed > 0 else 0.0}
