"""A bounded, thread-safe memo: what a process computed once and may be asked again.

Used where the same costly, deterministic result is asked for again within a process
(the bounds' parts, ``tmhw.lower_bounds``; a MILP a planner asks again,
``tmhw.placement.bounds``). The table is the caller's plain dict, so a test may clear
or replace it; the oldest entry is dropped first once ``size`` are kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


def memoised(table: dict[Any, Any], lock: threading.Lock, size: int, key: Hashable,
             fn: Callable[[], T]) -> T:
    """``table[key]`` if kept, else ``fn()`` kept there. ``fn`` runs outside ``lock``
    (another thread may compute the same key meanwhile; the results are equal)."""
    with lock:
        if key in table:
            known: T = table[key]
            return known
    got = fn()
    with lock:
        while len(table) >= size:
            table.pop(next(iter(table)))
        table[key] = got
    return got
