"""Statistics: counters, tallies of samples, and time-weighted levels.

Plain arithmetic on the hot path; summaries are computed when a report asks.
"""

from __future__ import annotations

import math

import numpy as np


class Counter:
    """A monotone count (commands issued, bytes moved)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: int = 0

    def add(self, n: int = 1) -> None:
        self.value += n

    def report(self) -> int:
        return self.value


class Tally:
    """Samples of one quantity (latencies): count, min, max, mean and percentiles.

    Samples are kept (as a growable list) so percentiles are exact.
    """

    __slots__ = ("_samples",)

    def __init__(self) -> None:
        self._samples: list[float] = []

    def add(self, x: float) -> None:
        self._samples.append(x)

    def extend(self, xs: list[float] | np.ndarray) -> None:
        self._samples.extend(float(x) for x in xs)

    @property
    def count(self) -> int:
        return len(self._samples)

    @property
    def mean(self) -> float:
        return math.fsum(self._samples) / len(self._samples) if self._samples else 0.0

    @property
    def min(self) -> float:
        return min(self._samples) if self._samples else 0.0

    @property
    def max(self) -> float:
        return max(self._samples) if self._samples else 0.0

    def percentile(self, q: float) -> float:
        """The q-th percentile (0..100), linear interpolation as numpy does."""
        if not self._samples:
            return 0.0
        return float(np.percentile(np.asarray(self._samples, dtype=float), q))

    def report(self) -> dict[str, float | int]:
        return {"count": self.count, "min": self.min, "max": self.max, "mean": self.mean,
                "p50": self.percentile(50), "p99": self.percentile(99)}


class Level:
    """A time-weighted level (queue depth, bytes resident): mean over time, peak.

    ``set(now, value)`` records that the level became ``value`` at ``now``.
    """

    __slots__ = ("value", "peak", "_last_t", "_area", "_t0")

    def __init__(self, t0: int = 0, value: float = 0) -> None:
        self.value: float = value
        self.peak: float = value
        self._last_t = t0
        self._t0 = t0
        self._area: float = 0.0

    def set(self, now: int, value: float) -> None:
        if now < self._last_t:
            raise ValueError(f"Level.set at {now} before last update {self._last_t}")
        self._area += self.value * (now - self._last_t)
        self._last_t = now
        self.value = value
        if value > self.peak:
            self.peak = value

    def add(self, now: int, delta: float) -> None:
        self.set(now, self.value + delta)

    def mean(self, now: int) -> float:
        span = now - self._t0
        if span <= 0:
            return float(self.value)
        return (self._area + self.value * (now - self._last_t)) / span

    def report(self, now: int) -> dict[str, float]:
        return {"mean": self.mean(now), "peak": float(self.peak), "final": float(self.value)}
