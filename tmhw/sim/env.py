"""The simulation environment: SimPy's, counting the events it processes (for the
event-economy budgets and ``tmhw bench``), and a call scheduled without an event object
of its own (``call_after``)."""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop
from typing import Any

import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import NORMAL, EventPriority


class Environment(simpy.Environment):
    """``simpy.Environment`` that counts processed events in ``events``."""

    def __init__(self, initial_time: int = 0) -> None:
        super().__init__(initial_time)
        self.events = 0

    def step(self) -> None:
        """SimPy's ``step`` (the same statements, so the same cost and order), counting
        the event: a step on an empty queue processes nothing (it raises EmptySchedule
        to end ``run()``) and is not counted."""
        try:
            self._now, _, _, event = heappop(self._queue)
        except IndexError:
            raise EmptySchedule from None
        self.events += 1
        callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]
        try:
            for callback in callbacks:
                callback(event)
        except StopSimulation:
            # as SimPy does: the rest of the callbacks run when the run resumes
            event.callbacks = callbacks[callbacks.index(callback) + 1:]
            self.schedule(event, EventPriority(-1))
            raise
        if not event._ok and not hasattr(event, "_defused"):
            # a failed event nobody defused crashes the run, with a copy of its error
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc


class _Call:
    """A bare scheduled callback: what SimPy's ``step`` reads of an event that
    succeeded, and nothing else."""

    __slots__ = ("callbacks", "_ok", "_value")

    def __init__(self, fn: Callable[[Any], None]) -> None:
        self.callbacks: list[Callable[[Any], None]] | None = [fn]
        self._ok = True
        self._value = None


def call_after(env: simpy.Environment, delay: int, fn: Callable[[Any], None]) -> None:
    """Call ``fn`` ``delay`` from now, in the order a ``Timeout`` of the same delay
    would fire (the same priority, the next event id), without building one: the
    event-driven device models schedule several such calls per request."""
    env.schedule(_Call(fn), NORMAL, delay)  # type: ignore[arg-type]
