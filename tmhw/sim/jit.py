"""Compiled kernels: numba's ``njit``, loaded when first called, with a type that mypy
keeps.

A component's hot loop that numpy cannot express without a call per element (a gap
search over a channel's bookings, a die's queue walked lane by lane) is written as a
plain Python function over int64 arrays and compiled by numba (``njit``). The kernel
is the same rule its docstring states and its scalar twin books; the arrays are the
component's own state, changed in place, so a kernel call books what the Python loop
it replaces would, and costs one call where that loop made one per element.

numba is imported, and each module global bound to a kernel rebound to its compiled
dispatcher, at the first call of any kernel: a process that never books flash (the
command line's ``--help``, a workload or placement query, a planner) does not pay
numba's import (about 0.35 s and 90 MB), and a run's planning peak of memory does not
carry it. After that first call, callers reach the dispatcher itself, with no wrapper
in between, and kernels call kernels in compiled code.

Compiled code is cached beside the source (``__pycache__``), so a process compiles a
kernel once per source change, not once per run. ``NUMBA_DISABLE_JIT=1`` runs every
kernel as the Python it is written in (for a debugger, or to check a kernel against
its source).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

#: every kernel defined so far, in definition order
_KERNELS: list[_Kernel] = []


class _Kernel:
    """A kernel before numba is loaded: its first call loads every kernel."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.dispatcher: Any = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__

    def __call__(self, *args: Any) -> Any:
        if self.dispatcher is None:
            _load()
        return self.dispatcher(*args)


def _load() -> None:
    """Compile-on-call dispatchers for every kernel, bound in place of the kernels in
    every loaded module's globals (their own and those that imported them), so that
    compiled callers see compiled callees."""
    import numba

    for k in _KERNELS:
        if k.dispatcher is None:
            k.dispatcher = numba.njit(cache=True, nogil=True)(k.fn)
    ours = {id(k): k for k in _KERNELS}
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if not d:
            continue
        for name, v in list(d.items()):
            if id(v) in ours and v is ours[id(v)]:
                d[name] = ours[id(v)].dispatcher


def njit(fn: F) -> F:
    """``fn`` compiled in nopython mode on first call, cached on disk; its signature as
    written."""
    k = _Kernel(fn)
    _KERNELS.append(k)
    return cast(F, k)
