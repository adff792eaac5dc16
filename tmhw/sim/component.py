"""``Component``: the ``sc_module`` of tmhw.

A component has a name, a parent and children, so each has a hierarchical path such as
``system.flash.ch3.die1``. The lifecycle follows SystemC/desmod:

    build (constructor) -> elaborate() -> start() -> env.run() -> finalize(now) -> report()

``elaborate`` checks wiring and configuration before time 0 and raises
``ElaborationError`` naming the path; ``start`` launches standing processes; ``finalize``
closes energy and level statistics at the end time; ``report`` returns a dict shaped like
the config, children nested under their names.
"""

from __future__ import annotations

from typing import Any

import simpy

from tmhw.sim.energy import EnergyMeter
from tmhw.sim.errors import ElaborationError
from tmhw.sim.trace import NULL_TRACER, Tracer


class Component:
    """Base of every hardware block. Subclasses override the lifecycle hooks they need
    (``_elaborate``, ``_start``, ``_finalize``, ``_report``); the base walks children."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None = None,
                 tracer: Tracer | None = None) -> None:
        if not name or "." in name:
            raise ElaborationError(f"component name {name!r} must be non-empty and dot-free")
        self.env = env
        self.name = name
        self.parent = parent
        self.children: dict[str, Component] = {}
        self.energy: EnergyMeter | None = None
        if parent is not None:
            if name in parent.children:
                raise ElaborationError(f"{parent.path}: duplicate child {name!r}")
            parent.children[name] = self
            self.tracer: Tracer = tracer or parent.tracer
        else:
            self.tracer = tracer or NULL_TRACER
        self.finalized_at: int | None = None

    @property
    def path(self) -> str:
        return f"{self.parent.path}.{self.name}" if self.parent is not None else self.name

    @property
    def now(self) -> int:
        return int(self.env.now)

    def walk(self) -> list[Component]:
        """This component and every descendant, depth first, in insertion order."""
        out: list[Component] = [self]
        for c in self.children.values():
            out.extend(c.walk())
        return out

    # -- lifecycle ---------------------------------------------------------------------
    def elaborate(self) -> None:
        self._elaborate()
        for c in self.children.values():
            c.elaborate()

    def start(self) -> None:
        self._start()
        for c in self.children.values():
            c.start()

    def finalize(self, now: int) -> None:
        for c in self.children.values():
            c.finalize(now)
        # The hook first: it may add energies it computes itself (add_pj) before the
        # meter converts everything to pJ.
        self._finalize(now)
        if self.energy is not None:
            self.energy.finalize(now)
        self.finalized_at = now

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self._report())
        if self.energy is not None:
            out["energy_pj"] = self.energy.report()
        for name, c in self.children.items():
            out[name] = c.report()
        return out

    def total_energy_pj(self) -> float:
        """Energy of this component and all its descendants (after finalize)."""
        return sum(c.energy.total_pj for c in self.walk() if c.energy is not None)

    # -- hooks for subclasses ----------------------------------------------------------
    def _elaborate(self) -> None:
        """Check ports and config; raise ElaborationError naming ``self.path``."""

    def _start(self) -> None:
        """Start standing SimPy processes."""

    def _finalize(self, now: int) -> None:
        """Close statistics at end time ``now``."""

    def _report(self) -> dict[str, Any]:
        return {}

    def fail(self, message: str) -> ElaborationError:
        return ElaborationError(f"{self.path}: {message}")
