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

A kernel that creates no array and is called once per element from another kernel
(a die lane's booking, a channel's gap search) is declared with ``njit_noref``: it
is compiled without numba's reference counting (``_nrt=False``). A kernel that calls
another one cannot have the counting of its array arguments optimised away, and each
count is an atomic operation: a die lane's read, which calls the queue walk it takes
when work is queued, cost 49 ns with them and 7 ns without, on an empty lane. The
arrays such a kernel is given are its caller's for the whole call, so nothing it
touches can be freed under it.

Compiled code is cached on disk, so a process compiles a kernel once per source change,
not once per run. numba checks a cached kernel only against its own file, so a kernel
whose callee in another file changed would load with the callee's old code compiled
into it (a die lane's queue read with the old layout of its slots: a program booked
forever). The cache is therefore one folder per version of every file of the project
that defines a kernel (``tmhw/__pycache__/numba/tmhw-<hash>``, or under
``NUMBA_CACHE_DIR`` when that is set); a change to any of them starts an empty one.

``NUMBA_DISABLE_JIT=1`` runs every kernel as the Python it is written in (for a
debugger, or to check a kernel against its source).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

#: every kernel defined so far, in definition order
_KERNELS: list[_Kernel] = []
#: the project's packages, whose files that define kernels name the cache folder
PACKAGES = ("tmhw", "flash", "dram", "npu")
#: the cache folder, once chosen (``cache_dir``)
_CACHE = ""


class _Kernel:
    """A kernel before numba is loaded: its first call loads every kernel."""

    def __init__(self, fn: Callable[..., Any], refcounted: bool = True) -> None:
        self.fn = fn
        self.refcounted = refcounted
        self.dispatcher: Any = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__

    def __call__(self, *args: Any) -> Any:
        if self.dispatcher is None:
            _load()
        return self.dispatcher(*args)


def cache_dir(base: str = "", root: Path | None = None) -> Path:
    """The cache folder of this version of the kernels' source (module docstring), for
    the project's packages under ``root`` (default: this one's): under ``base`` or, by
    default, ``tmhw/__pycache__/numba``, where the other versions' folders are removed."""
    root = root or Path(__file__).resolve().parents[2]
    h = hashlib.sha1()
    for pkg in PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            text = f.read_bytes()
            if b"njit" in text:
                h.update(f.relative_to(root).as_posix().encode())
                h.update(text)
    name = f"tmhw-{h.hexdigest()[:16]}"
    if base:
        return Path(base) / name
    own = root / "tmhw" / "__pycache__" / "numba"
    if own.is_dir():
        for old in own.glob("tmhw-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)
    return own / name


def _load() -> None:
    """Compile-on-call dispatchers for every kernel, bound in place of the kernels in
    every loaded module's globals (their own and those that imported them), so that
    compiled callers see compiled callees."""
    import numba
    from numba.core import config

    global _CACHE
    if not _CACHE:
        _CACHE = str(cache_dir(getattr(config, "CACHE_DIR", "")))
        setattr(config, "CACHE_DIR", _CACHE)  # noqa: B010 (numba's config has no stubs)
    for k in _KERNELS:
        if k.dispatcher is None:
            # ``_nrt`` is numba's switch for its runtime's reference counting
            opts: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": k.refcounted}
            k.dispatcher = numba.njit(**opts)(k.fn)
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


def njit_noref(fn: F) -> F:
    """``njit`` for a kernel that creates no array and keeps none: it reads and writes
    the arrays it is given (and views of them) for the length of the call. It is
    compiled without numba's reference counting (module docstring); an allocation in
    it fails to compile."""
    k = _Kernel(fn, refcounted=False)
    _KERNELS.append(k)
    return cast(F, k)
