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
in between, and kernels call kernels in compiled code. The hottest call sites, whose
arguments keep their types, go further: a ``Direct`` handle calls the compiled version
itself, without the dispatcher's typing of every argument on every call (``Directs``: a
handle per key, where a component's dtypes depend on its size).

A kernel that creates no array and is called once per element from another kernel
(a die lane's booking, a channel's gap search) is declared with ``njit_noref``: it
is compiled without numba's reference counting (``_nrt=False``). A kernel that calls
another one cannot have the counting of its array arguments optimised away, and each
count is an atomic operation, several times the cost of a die lane's whole read on an
empty lane (docs/PERFORMANCE.md). The
arrays such a kernel is given are its caller's for the whole call, so nothing it
touches can be freed under it. A helper that must stay counted (it makes an array, or
calls a kernel that does) and that a loop calls with its whole state, tuples of
arrays, is declared with ``njit_inline`` instead: numba inlines it where a kernel calls
it, so the call and the counting of every array at it go (the flash bench's convoy
loop spent 44% of its time counting them).

Compiled code is cached on disk, so a process compiles a kernel once per source change,
not once per run. numba checks a cached kernel only against its own file, so a kernel
whose callee in another file changed would load with the callee's old code compiled
into it (a die lane's queue read with the old layout of its slots: a program booked
forever). The cache is therefore one folder per version of every file of the project
that defines a kernel, ``tmhw-<hash>``, in the user's cache directory
(``$XDG_CACHE_HOME/tmhw/numba``, by default ``~/.cache/tmhw/numba``), or under
``NUMBA_CACHE_DIR`` when that is set; a change to any of them starts an empty one.
Nothing is written into the package's own folders, which an installed package may not
be allowed to write to.

A kernel's cache files are named by where its file is in the project
(``flash/engine/gaps.py``'s in ``<version>/flash.engine``), not by the file's absolute
path as numba names them, and each is checked against its file's contents, not its
modification time (``_locator``): one version's kernels are the same compiled code
wherever the project is, so a checkout, a worktree of the same commit and an installed
wheel of it share one folder, and the second to run compiles nothing.

Several checkouts of different versions (worktrees, an installed copy beside a
development one) share the user's cache directory, each in its own version folder.
numba loads nothing from a missing file and recreates a missing folder when it saves a
kernel, but a folder removed while a process writes into it fails that write. So a
folder is removed only when no process is likely to use it: when it is neither one of
the ``KEEP_VERSIONS`` most recently used nor used within the last ``IN_USE_S`` seconds
(each process marks its own folder used when it loads the kernels). The first rule
spares the checkouts used lately a new compile; the second keeps the folder of every
process started within the hour, however many versions were made since; together they
bound the folder's size while sources change all day. Under ``NUMBA_CACHE_DIR`` nothing
is removed: that folder is the user's to manage.

``NUMBA_DISABLE_JIT=1`` runs every kernel as the Python it is written in (for a
debugger, or to check a kernel against its source).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar, cast

from tmhw.sim.errors import TmhwError

F = TypeVar("F", bound=Callable[..., Any])

#: every kernel defined so far, in definition order
_KERNELS: list[_Kernel] = []
#: every call site's handle past a dispatcher (``Direct``), in the order made
DIRECTS: list[Direct] = []
#: the project's packages, whose files that define kernels name the cache folder
PACKAGES = ("tmhw", "flash", "dram", "npu")
#: the folder that holds ``PACKAGES`` (a checkout's root, or an installation's
#: site-packages)
ROOT = Path(__file__).resolve().parents[2]
#: the cache folder, once chosen (``cache_dir``)
_CACHE = ""
#: seconds ``_load`` took (numba's import and the dispatchers), and the timer of the
#: kernels' loads and compiles it installs (``load_seconds``)
_LOAD_S = 0.0
_LOADS: Any = None
#: held while ``_load`` runs (a bound's passes may call their first kernel on a thread
#: of their own: ``tmhw.lower_bounds``)
_LOADING = threading.Lock()
#: version folders always kept in the user's cache directory: the most recently used
KEEP_VERSIONS = 8
#: a version folder used within this many seconds is kept whatever its rank (in use)
IN_USE_S = 3600.0


class _Kernel:
    """A kernel before numba is loaded: its first call loads every kernel."""

    def __init__(self, fn: Callable[..., Any], refcounted: bool = True,
                 inline: bool = False) -> None:
        self.fn = fn
        self.refcounted = refcounted
        self.inline = inline
        self.dispatcher: Any = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__

    def __call__(self, *args: Any) -> Any:
        d = self.dispatcher
        return (d if d is not None else self.compiled())(*args)

    def compiled(self) -> Any:
        """The kernel's dispatcher, every kernel's made first if they are not yet."""
        if self.dispatcher is None:
            with _LOADING:  # one thread loads; another that called meanwhile waits
                if self.dispatcher is None:
                    _load()
        return self.dispatcher


def user_cache() -> Path:
    """The kernels' folder in the user's cache directory: ``$XDG_CACHE_HOME/tmhw/numba``
    (an absolute path, per the XDG base directory specification) or
    ``~/.cache/tmhw/numba``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "tmhw" / "numba"


def version(root: Path | None = None) -> str:
    """The name of this version of the kernels' source: a hash of every file of the
    project's packages under ``root`` (default: this one's) that defines a kernel."""
    root = root or ROOT
    h = hashlib.sha1()
    for pkg in PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            text = f.read_bytes()
            if b"njit" in text:
                h.update(f.relative_to(root).as_posix().encode())
                h.update(text)
    return f"tmhw-{h.hexdigest()[:16]}"


def cache_dir(base: str = "", root: Path | None = None, user: Path | None = None) -> Path:
    """The cache folder of this version of the kernels' source (module docstring): under
    ``base`` (numba's ``NUMBA_CACHE_DIR``) when given, else under ``user`` (default
    ``user_cache()``), where it is created and marked used, and the stale versions'
    folders are removed (``prune``)."""
    name = version(root)
    if base:
        return Path(base) / name
    own = user or user_cache()
    folder = own / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)   # marks it used: its modification time is its last use
    except OSError as e:
        raise TmhwError(f"kernel cache: cannot write {folder}: {e.strerror}; set "
                        "NUMBA_CACHE_DIR to a folder you can write to") from None
    prune(own, keep=name)
    return folder


def prune(own: Path, keep: str, now: float | None = None) -> list[Path]:
    """Remove the version folders (``tmhw-*``) of ``own`` that are neither ``keep``, nor
    among the ``KEEP_VERSIONS`` most recently used, nor used within ``IN_USE_S`` seconds
    of ``now`` (module docstring); the folders removed."""
    now = time.time() if now is None else now
    used: list[tuple[float, Path]] = []
    for d in own.glob("tmhw-*"):
        try:
            used.append((d.stat().st_mtime, d))
        except OSError:   # removed meanwhile by another process
            continue
    used.sort(reverse=True)
    gone = [d for rank, (t, d) in enumerate(used)
            if d.name != keep and rank >= KEEP_VERSIONS and now - t > IN_USE_S]
    for d in gone:
        shutil.rmtree(d, ignore_errors=True)
    return gone


def load() -> None:
    """Load numba and make the kernels' dispatchers now, on this thread, as the first
    call of a kernel would. A caller about to call kernels first from another thread
    calls this before starting it: while numba imports, ``_skip_blas_probe`` hides
    scipy's BLAS from every thread, and an import of scipy on another thread meanwhile
    fails."""
    with _LOADING:
        if any(k.dispatcher is None for k in _KERNELS):
            _load()


def folder() -> Path:
    """The cache folder this process loads its kernels from and compiles them into
    (``cache_dir``), numba loaded if it is not yet."""
    load()
    return Path(_CACHE)


def load_seconds() -> float:
    """Seconds this process has spent on its kernels so far: numba's import and the
    dispatchers' making (at the first call of any kernel), and each kernel's load from
    the cache or compile (at its first call; numba's compiler lock, timed by
    ``numba.core.event``). 0 before the first call. What a run loads is what it calls,
    so a benchmark subtracts this from a run's wall time and reports it apart."""
    loads = _LOADS
    return _LOAD_S + (loads.duration if loads is not None and loads.done else 0.0)


def _load() -> None:
    """Compile-on-call dispatchers for every kernel, bound in place of the kernels in
    every loaded module's globals (their own and those that imported them), so that
    compiled callers see compiled callees."""
    global _LOAD_S, _LOADS
    t0 = time.perf_counter()
    import numba
    from numba.core import config, event

    if _LOADS is None:
        _LOADS = event.TimingListener()  # type: ignore[no-untyped-call]
        event.register("numba:compiler_lock", _LOADS)  # type: ignore[no-untyped-call]

    _skip_blas_probe()
    _register_numba_types()
    _locator()
    global _CACHE
    if not _CACHE:
        _CACHE = str(cache_dir(getattr(config, "CACHE_DIR", "")))
        setattr(config, "CACHE_DIR", _CACHE)  # noqa: B010 (numba's config has no stubs)
    for k in _KERNELS:
        if k.dispatcher is None:
            # ``_nrt`` is numba's switch for its runtime's reference counting
            opts: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": k.refcounted}
            if k.inline:
                opts["inline"] = "always"
            k.dispatcher = numba.njit(**opts)(k.fn)
    ours = {id(k): k for k in _KERNELS}
    for mod in list(sys.modules.values()):
        d = getattr(mod, "__dict__", None)
        if not d:
            continue
        for name, v in list(d.items()):
            if id(v) in ours and v is ours[id(v)]:
                d[name] = ours[id(v)].dispatcher
    _LOAD_S += time.perf_counter() - t0


def _register_numba_types() -> None:
    """Make numba's CPU target load what it registers lazily, now, under ``_LOADING``.
    numba's first load of a kernel from the cache, or compile, refreshes its target
    context, which imports its typed containers, jitclass and the rest; their imports
    register types with ``numba.typeof``'s ``functools.singledispatch`` registry. A
    call of a kernel on another thread that meanwhile typed an argument of a class
    that registry had not seen yet iterated it while it grew: "RuntimeError: dictionary
    changed size during iteration (functools.py)" (a study's worker, whose bounds'
    passes call the HBM kernels on a thread beside the run's first flash kernels:
    1 point of ``paper_headline`` in one run of it). Once the context is refreshed
    here, a kernel's later loads add nothing to the registry."""
    from numba.core.registry import cpu_target

    cpu_target.target_context.refresh()


def _locator() -> None:
    """numba's first choice of where a kernel of the project's files is cached (module
    docstring): under the cache folder, in ``flash.engine`` for ``flash/engine/*.py``
    (numba's own choice is the folder's absolute path, hashed), and valid while the
    file's contents are those it was compiled from, whatever its modification time
    (which an installation does not keep, and which older numba versions compared).
    Files outside the project are cached as numba caches them."""
    from numba.core import caching, config

    # (numba's names are public in recent versions, underscored in older ones)
    mod: Any = caching
    classes = (getattr(mod, "CacheImpl", None) or mod._CacheImpl)._locator_classes
    if any(getattr(c, "PROJECT", False) for c in classes):
        return
    base: Any = getattr(mod, "UserProvidedCacheLocator", None) or mod._UserProvidedCacheLocator
    settings: Any = config

    class ProjectLocator(base):  # type: ignore[misc]
        PROJECT = True

        def __init__(self, py_func: Any, py_file: str) -> None:
            super().__init__(py_func, py_file)
            where = Path(py_file).resolve().parent.relative_to(ROOT)
            self._cache_path = os.path.join(settings.CACHE_DIR, ".".join(where.parts))

        def get_source_stamp(self) -> str:
            st = os.stat(self._py_file)
            return _contents_hash(self._py_file, st.st_mtime_ns, st.st_size)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            try:
                where = Path(py_file).resolve().relative_to(ROOT)
            except ValueError:
                return None
            if where.parts[0] not in PACKAGES:
                return None
            return super().from_function(py_func, py_file)

    classes.insert(0, ProjectLocator)


_HASHED: dict[tuple[str, int, int], str] = {}


def _contents_hash(path: str, mtime_ns: int, size: int) -> str:
    """A hash of the file ``path``'s contents, read once per modification time and
    size."""
    key = (path, mtime_ns, size)
    h = _HASHED.get(key)
    if h is None:
        h = _HASHED[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return h


#: numba's module whose import looks for scipy's BLAS, and the module it imports to look
BLAS_PROBE = ("numba.np.arraymath", "scipy.linalg.cython_blas")


def _skip_blas_probe() -> None:
    """Import numba's array functions (which numba's first kernel load imports) without
    their look for a BLAS: at import ``numba.np.arraymath`` imports
    ``scipy.linalg.cython_blas`` to learn whether ``np.dot`` and ``np.linalg`` can be
    compiled, and scipy.linalg's import is about 0.08 s of a process that would
    otherwise never load scipy (``tmhw flash bench``: a sixth of a short run's
    start-up). No kernel here calls BLAS; one that did would fail to compile, naming
    scipy. The module is blocked for that one import only (a ``None`` in
    ``sys.modules``), so scipy.linalg imports as usual afterwards; where scipy's BLAS is
    loaded already, numba finds it as it would."""
    numba_mod, blas = BLAS_PROBE
    if numba_mod in sys.modules or blas in sys.modules:
        return
    sys.modules[blas] = None  # type: ignore[assignment]  # its import raises ImportError
    try:
        __import__(numba_mod)
    finally:
        del sys.modules[blas]


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


def njit_inline(fn: F) -> F:
    """``njit`` for a kernel's helper that takes the kernel's state, inlined where a
    kernel calls it (numba's ``inline="always"``): a compiled call passes each array of
    its tuples by value, and a helper of a dozen arrays in tuples pushed some 200 words
    a call (the flash bench's convoy loop spent 44% of its time on it, ``perf``). Called
    from Python it is a kernel like any other."""
    k = _Kernel(fn, inline=True)
    _KERNELS.append(k)
    return cast(F, k)


class Direct:
    """One call site's way into a kernel's compiled code, past numba's dispatcher.

    A dispatcher call types every argument (a tuple of arrays element by element) and
    looks the types up among the kernel's compiled versions before it unboxes them:
    0.3 us for a kernel of one array and two ints, 1.0-1.3 us for a dozen arrays or the
    nested tuples a component's state is, of which the compiled entry itself takes
    0.15-0.75 us (docs/PERFORMANCE.md). A hot call site whose arguments always have the
    same types (the component's own state arrays, made once with their dtypes, and
    ints) keeps a ``Direct``: ``handle.call(*args)``. Its first call goes through the
    dispatcher (which loads or compiles the kernel) and then binds ``call`` to the entry
    point of the version compiled for that call's argument types, when one matches them
    exactly; the same compiled code, so the same results (under ``NUMBA_DISABLE_JIT=1``,
    the Python function). A site whose argument types
    can change from call to call (an array of another dtype or layout, a float for an
    int) must call the kernel itself: the entry point would take the new arguments as
    the old types."""

    __slots__ = ("kernel", "call")

    def __init__(self, kernel: Callable[..., Any]) -> None:
        self.kernel = kernel
        self.call: Callable[..., Any] = self._first
        DIRECTS.append(self)

    def _first(self, *args: Any) -> Any:
        k = self.kernel
        d: Any = k.compiled() if isinstance(k, _Kernel) else k
        out = d(*args)
        if not hasattr(d, "overloads"):
            # ``NUMBA_DISABLE_JIT=1``: the kernel is the Python function itself
            self.call = d
            return out
        types = tuple(d.typeof_pyval(a) for a in args)
        cres = d.overloads.get(types)
        self.call = cres.entry_point if cres is not None else d
        return out


class Directs:
    """A kernel's ``Direct`` handles, one per key that names the argument types of the
    calls it takes: where a component's arrays take a dtype that depends on its size (an
    FTL's maps hold 32-bit pages up to 2**31 of them, 64-bit beyond), one handle bound
    to the first call's types would be handed the other dtype by another component in
    the same process (a study's worker runs point after point), which the compiled entry
    refuses (``TypeError: can't unbox array``). A component takes its handle once, by
    its dtypes: ``self._run = _RUN.get(key)``."""

    __slots__ = ("kernel", "_handles")

    def __init__(self, kernel: Callable[..., Any]) -> None:
        self.kernel = kernel
        self._handles: dict[Hashable, Direct] = {}

    def get(self, key: Hashable) -> Direct:
        """The handle for calls of the types ``key`` names (made at its first use)."""
        h = self._handles.get(key)
        if h is None:
            h = self._handles[key] = Direct(self.kernel)
        return h
