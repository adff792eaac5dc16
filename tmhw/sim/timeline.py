"""Busy-until reservations: the loosely timed FIFO server of TLM-2.0 without an event.

A ``Timeline`` models one hardware resource that serves one thing at a time (a flash
channel, a die, a DRAM bank, the systolic array). ``reserve(earliest, duration)`` books
the resource for ``duration`` ps starting at ``max(earliest, busy_until)`` and returns the
end time; the caller yields one timeout to the end of its whole fan-out, never one per
reservation (docs/ARCHITECTURE.md, "The event economy").
"""

from __future__ import annotations


class Timeline:
    """A FIFO busy-until resource. Times in ps."""

    __slots__ = ("name", "busy_until", "busy_ps", "count", "first_start", "_spans")

    def __init__(self, name: str = "", record: bool = False) -> None:
        self.name = name
        self.busy_until: int = 0
        self.busy_ps: int = 0
        self.count: int = 0
        self.first_start: int | None = None
        #: (start, end, label) of every reservation when recording is on (for plots).
        self._spans: list[tuple[int, int, str]] | None = [] if record else None

    def reserve(self, earliest: int, duration: int, label: str = "") -> int:
        """Book ``duration`` ps no earlier than ``earliest`` and after the previous booking.

        Returns the end time of this reservation.
        """
        if duration < 0:
            raise ValueError(f"{self.name}: negative duration {duration}")
        start = earliest if earliest > self.busy_until else self.busy_until
        end = start + duration
        self.busy_until = end
        self.busy_ps += duration
        self.count += 1
        if self.first_start is None:
            self.first_start = start
        if self._spans is not None:
            self._spans.append((start, end, label))
        return end

    def start_time(self, earliest: int) -> int:
        """When a reservation asked for at ``earliest`` would start."""
        return earliest if earliest > self.busy_until else self.busy_until

    def utilization(self, elapsed: int) -> float:
        """Fraction of ``elapsed`` ps this resource was busy (0 when nothing elapsed)."""
        return self.busy_ps / elapsed if elapsed > 0 else 0.0

    @property
    def spans(self) -> list[tuple[int, int, str]]:
        return self._spans if self._spans is not None else []

    def report(self, elapsed: int) -> dict[str, float | int]:
        return {"busy_ps": self.busy_ps, "count": self.count,
                "utilization": round(self.utilization(elapsed), 9)}
