"""Compiled kernels: numba's ``njit`` with a type that mypy keeps.

A component's hot loop that numpy cannot express without a call per element (a gap
search over a channel's bookings, a die's queue walked lane by lane) is written as a
plain Python function over int64 arrays and compiled by numba (``njit``). The kernel
is the same rule its docstring states and its scalar twin books; the arrays are the
component's own state, changed in place, so a kernel call books what the Python loop
it replaces would, and costs one call where that loop made one per element.

Compiled code is cached beside the source (``__pycache__``), so a process compiles a
kernel once per source change, not once per run. ``NUMBA_DISABLE_JIT=1`` runs every
kernel as the Python it is written in (for a debugger, or to check a kernel against
its source).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])


def njit(fn: F) -> F:
    """``fn`` compiled in nopython mode, cached on disk; its signature as written."""
    return cast(F, numba.njit(cache=True, nogil=True)(fn))
