"""The simulation environment: SimPy's, counting the events it processes (for the
event-economy budgets and ``tmhw bench``), and a call scheduled without an event object
of its own (``call_after``)."""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop
from typing import Any

import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import NORMAL, URGENT, Event, EventPriority


class Environment(simpy.Environment):
    """``simpy.Environment`` that counts processed events in ``events``."""

    def __init__(self, initial_time: int = 0) -> None:
        super().__init__(initial_time)
        self.events = 0

    def step(self) -> None:
        """SimPy's ``step``, counting the event: a step on an empty queue processes
        nothing (it raises EmptySchedule to end ``run()``) and is not counted."""
        self._process(1)

    def run(self, until: int | float | simpy.Event | None = None) -> Any:
        """SimPy's ``run``, its events processed by one loop (``_process``) rather than
        a ``step`` call each: the same events in the same order and the same errors;
        100,000 event-driven reads (``flash.convoy``, five events each) 2.87 -> 2.82 s
        (median of six alternated runs)."""
        if until is not None:
            if not isinstance(until, Event):
                at = until if isinstance(until, int) else float(until)
                if at <= self.now:
                    raise ValueError(f"until ({at}) must be greater than the current "
                                     "simulation time")
                until = Event(self)
                until._ok = True
                until._value = None
                self.schedule(until, URGENT, at - self.now)
            elif until.callbacks is None:
                return until.value
            until.callbacks.append(StopSimulation.callback)
        try:
            self._process(-1)
        except StopSimulation as stop:
            return stop.args[0]
        except EmptySchedule:
            if until is not None:
                assert not until.triggered
                raise RuntimeError(f'No scheduled events left but "until" event was not '
                                   f"triggered: {until}") from None
        return None

    def _process(self, limit: int) -> None:
        """Process ``limit`` events (-1: until the queue is empty, which raises
        EmptySchedule), each as SimPy's ``step`` does, counting them in ``events``
        whatever ends the loop."""
        queue = self._queue
        count = 0
        try:
            while count != limit:
                try:
                    self._now, _, _, event = heappop(queue)
                except IndexError:
                    raise EmptySchedule from None
                count += 1
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
                    # a failed event nobody defused crashes the run, with a copy of its
                    # error
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    raise exc
        finally:
            self.events += count


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
