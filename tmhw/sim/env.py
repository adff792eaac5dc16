"""The simulation environment: SimPy's, counting the events it processes (for the
event-economy budgets and ``tmhw bench``)."""

from __future__ import annotations

import simpy


class Environment(simpy.Environment):
    """``simpy.Environment`` that counts processed events in ``events``."""

    def __init__(self, initial_time: int = 0) -> None:
        super().__init__(initial_time)
        self.events = 0

    def step(self) -> None:
        # A step on an empty queue processes nothing (it raises EmptySchedule to end
        # ``run()``): do not count it.
        if self._queue:
            self.events += 1
        super().step()
