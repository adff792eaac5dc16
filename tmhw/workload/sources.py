"""Where a training iteration comes from: the sources a ``workload.model`` value can
name, in the order they are tried.

Each source is one module of ``tmhw.workload`` named here (the module is imported only
when a value is its), which defines:

- ``check(model, batch, seq, layers)``: the source's limits on the shape, raising
  ``ConfigError`` naming the field (called when a config is made, before any work);
- ``build_training(model, *, batch, seq, layers, page_size, optimizer) -> Workload``:
  the whole training iteration (forward, backward, optimizer step), with ``batch``,
  ``seq`` and ``layers`` None meaning the source's own.

A source recognises its values by name (``names``: the attribute of its module listing
them, e.g. the zoo's models) or by a file suffix (``suffixes``). Adding a source is one
module and one line of ``SOURCES``: config validation, ``tmhw run --model``, ``tmhw
workload show``, ``tmhw.load_config`` and ``System`` all go through ``find``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tmhw.sim.errors import ConfigError
from tmhw.workload.graph import Workload


@dataclass(frozen=True, slots=True)
class Source:
    """One workload source (module docstring)."""

    name: str
    module: str                 # its module, imported when a value is its
    what: str                   # how a value names it, for messages
    names: str = ""             # its module's attribute listing the names it knows
    suffixes: tuple[str, ...] = ()

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)

    def matches(self, model: str) -> bool:
        if self.suffixes:
            return model.lower().endswith(self.suffixes)
        return model in getattr(self.load(), self.names)


#: the sources, tried in order; the first that recognises a value builds it
SOURCES: tuple[Source, ...] = (
    Source("zoo", "tmhw.workload.zoo", "a model of the zoo (tmhw workload list)",
           names="MODELS"),
    Source("scalesim", "tmhw.workload.scalesim", "a path to a SCALE-Sim topology (*.csv)",
           suffixes=(".csv",)),
)


def find(model: str) -> Source:
    """The source of ``model``; ``ConfigError`` naming what is allowed when none has it."""
    for s in SOURCES:
        if s.matches(model):
            return s
    zoo = sorted(getattr(SOURCES[0].load(), SOURCES[0].names))
    raise ConfigError("model", model, f"{SOURCES[0].what}: one of {', '.join(zoo)}; or "
                      + "; or ".join(s.what for s in SOURCES[1:]))


def check(model: str, batch: int | None, seq: int | None, layers: int | None) -> None:
    """``model``'s source, and its limits on the shape (``ConfigError``)."""
    find(model).load().check(model, batch, seq, layers)


def build(model: str, *, batch: int | None = None, seq: int | None = None,
          layers: int | None = None, page_size: int = 4096,
          optimizer: str = "adam") -> Workload:
    """The training iteration ``model`` names, from its source."""
    out: Any = find(model).load().build_training(model, batch=batch, seq=seq, layers=layers,
                                                 page_size=page_size, optimizer=optimizer)
    assert isinstance(out, Workload)
    return out
