"""Where a training iteration comes from: the sources a ``workload.model`` value can
name, listed once, in the order they are tried.

A source is a row of ``SOURCES``: its name, how it recognises a value, and its functions
as ``"module:function"`` strings, imported on first use (so that a source's own
dependencies, a file format's parser, load only when a value names it):

- ``build(model, *, batch, seq, layers, page_size, optimizer) -> Workload``: the whole
  training iteration (forward, input- and weight-gradients, optimizer step; build it
  with ``tmhw.workload.builder``), ``batch``, ``seq`` and ``layers`` None meaning the
  source's own;
- ``check(model, batch, seq, layers)`` (optional): the source's limits on the shape,
  raising ``ConfigError`` naming the field; called when a config is made, before any
  work.

A value is recognised by name (``names``: a ``"module:ATTR"`` collection of the names the
source knows, e.g. the zoo's models), by a prefix (``prefixes``, e.g. a future
``"hf:"``), or as a path by its file's suffix (``suffixes``); for a path, the file must
exist, which is checked here for every such source. Config validation, ``tmhw run
--model``, ``tmhw workload show``, ``tmhw.load_config`` and ``System`` all go through
``check`` and ``build``, so adding a source is one module under ``tmhw/workload/`` and one
row here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tmhw.sim.errors import ConfigError
from tmhw.workload.builder import Transforms
from tmhw.workload.builder import transforms as applied
from tmhw.workload.graph import Workload


def _resolve(ref: str) -> Any:
    """The object a ``"module:name"`` string names, importing its module."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True, slots=True)
class Source:
    """One workload source (see the module docstring)."""

    name: str
    what: str                   # how a value names it, for messages and help
    build: str                  # "module:function" building the training Workload
    check: str = ""             # "module:function" checking the shape, or none
    names: str = ""             # "module:ATTR", the names it knows
    prefixes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()  # lower case; the value is a path to such a file

    def matches(self, model: str) -> bool:
        """Whether ``model`` is this source's: a name it knows, a value with one of its
        prefixes, or a path with one of its suffixes (in any case)."""
        if self.prefixes and model.startswith(self.prefixes):
            return True
        if self.suffixes and model.lower().endswith(self.suffixes):
            return True
        return bool(self.names) and model in cast(Collection[str], _resolve(self.names))


#: the sources, tried in order; the first that recognises a value builds it
SOURCES: tuple[Source, ...] = (
    Source("zoo", "a zoo model's name (tmhw workload list)", "tmhw.workload.zoo:build",
           "tmhw.workload.zoo:check", names="tmhw.workload.zoo:MODELS"),
    Source("hf", "hf: and a Hugging Face config: a named one (tmhw workload list) or a "
           "path to a config.json", "tmhw.workload.hf:build", "tmhw.workload.hf:check",
           prefixes=("hf:",)),
    Source("onnx", "a path to an ONNX forward graph (*.onnx)",
           "tmhw.workload.onnxgraph:build", "tmhw.workload.onnxgraph:check",
           suffixes=(".onnx",)),
    Source("scalesim", "a path to a SCALE-Sim topology (*.csv)",
           "tmhw.workload.scalesim:build_training", "tmhw.workload.scalesim:check",
           suffixes=(".csv",)),
)


def allowed() -> str:
    """What a ``workload.model`` value may be, in one line: each source's ``what``, the
    names of those that list them."""
    parts = []
    for s in SOURCES:
        known = f": {', '.join(sorted(_resolve(s.names)))}" if s.names else ""
        parts.append(s.what + known)
    return "; or ".join(parts)


def find(model: str) -> Source:
    """The source of ``model``; ``ConfigError`` naming what is allowed when none has it."""
    if isinstance(model, str) and model:
        for s in SOURCES:
            if s.matches(model):
                return s
    raise ConfigError("model", model, allowed())


def check(model: str, batch: int | None = None, seq: int | None = None,
          layers: int | None = None) -> None:
    """That ``model`` names a source's workload (for a path, an existing file) and the
    shape is within the source's limits; ``ConfigError`` naming the field otherwise."""
    s = find(model)
    if s.suffixes and model.lower().endswith(s.suffixes) and not Path(model).is_file():
        raise ConfigError("model", model, f"no such file; {allowed()}")
    if s.check:
        _resolve(s.check)(model, batch, seq, layers)


def build(model: str, *, batch: int | None = None, seq: int | None = None,
          layers: int | None = None, page_size: int = 4096,
          optimizer: str = "adam", transforms: Transforms | None = None) -> Workload:
    """The training iteration ``model`` names, built by its source (after ``check``),
    with the workload ``transforms`` (precision, recomputation) applied by the builder
    every source uses."""
    check(model, batch, seq, layers)
    t = transforms or Transforms()
    if t.micro_batches > 1:
        if batch is None or batch % t.micro_batches:
            raise ConfigError("micro_batches", t.micro_batches,
                              f"a divisor of workload.batch (given: {batch})")
        batch //= t.micro_batches          # the source builds one micro-batch
    fn = cast(Callable[..., Workload], _resolve(find(model).build))
    with applied(t):
        return fn(model, batch=batch, seq=seq, layers=layers, page_size=page_size,
                  optimizer=optimizer)


def label(model: str) -> str:
    """A short name for ``model`` in folder names and titles, one path component: a
    file's stem, else the value itself (a zoo name) with any ``/`` as ``_``."""
    s = find(model)
    if s.suffixes and model.lower().endswith(s.suffixes):
        return Path(model).stem
    return model.replace("/", "_")
