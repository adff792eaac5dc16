"""Compiled kernels (``tmhw.sim.jit``): numba is loaded at the first kernel call, not at
import; that call rebinds each module global bound to a kernel to its compiled
dispatcher, so a kernel that calls another runs compiled, and later calls from Python
reach the dispatcher with no wrapper between. A kernel without reference counts cannot
allocate; ``load_seconds`` times what a process loads; the cache folder is one per
version of the kernels' files, in the user's cache directory, never in the package, and
a version's folder another checkout may be using is not removed."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tmhw.sim import jit
from tmhw.sim.errors import TmhwError
from tmhw.sim.jit import _Kernel, cache_dir, njit, njit_noref


@njit
def _cumsum_into(a: np.ndarray, out: np.ndarray) -> int:
    s = 0
    for i in range(a.size):
        s += a[i]
        out[i] = s
    return s


@njit
def _twice_the_sum(a: np.ndarray) -> int:
    out = np.empty(a.size, dtype=np.int64)
    return 2 * _cumsum_into(a, out)


def test_importing_the_system_does_not_import_numba(fresh_python: Callable[..., str]) -> None:
    code = "import sys, tmhw.system, flash; print('numba' in sys.modules)"
    out = fresh_python(code)
    assert out.strip() == "False"


def test_loading_the_flash_kernels_does_not_import_scipy_and_leaves_it_importable(
        fresh_python: Callable[..., str]) -> None:
    # numba's array functions look for scipy's BLAS at import; the kernels' load
    # imports them without that look (0.08 s of a process that never loads scipy),
    # and scipy.linalg imports as usual afterwards
    code = ("import sys; from flash.target import compile_kernels; compile_kernels(); "
            "print('scipy.linalg' in sys.modules, 'numba.np.arraymath' in sys.modules); "
            "import scipy.linalg.cython_blas; print('scipy.linalg' in sys.modules)")
    out = fresh_python(code)
    assert out.split() == ["False", "True", "True"]


def test_load_seconds_counts_the_first_call_of_each_kernel_and_nothing_else(
        fresh_python: Callable[..., str]) -> None:
    # a fresh process: nothing before the first kernel call; numba's import and the
    # first kernel's load at it; a second kernel's load at its own first call; a
    # kernel's later calls, and Python around them, never
    code = ("import time\n"
            "from tmhw.sim import jit\n"
            "from tmhw.residency import Residency\n"
            "import numpy as np\n"
            "r = Residency(64, 64, 4096)\n"
            "a = jit.load_seconds()\n"
            "r.count_missing(0, 64)\n"
            "b = jit.load_seconds()\n"
            "r.count_missing(0, 64)\n"
            "time.sleep(0.05)\n"
            "c = jit.load_seconds()\n"
            "r.dirty_count(0, 64)\n"
            "d = jit.load_seconds()\n"
            "print(a == 0.0, b > 0.0, c == b, d > c)")
    out = fresh_python(code)
    assert out.split() == ["True"] * 4


def test_a_kernel_calling_a_kernel_runs_compiled_and_is_rebound() -> None:
    a = np.arange(1, 6, dtype=np.int64)
    out = np.zeros(5, dtype=np.int64)
    assert _twice_the_sum(a) == 30
    assert _cumsum_into(a, out) == 15 and out.tolist() == [1, 3, 6, 10, 15]
    # after the first call, this module's globals are numba dispatchers
    for fn in (_twice_the_sum, _cumsum_into):
        assert not isinstance(globals()[fn.__name__], _Kernel)
        assert hasattr(globals()[fn.__name__], "signatures")


@njit_noref
def _add_into(a: np.ndarray, out: np.ndarray, k: int) -> None:
    out[k] += a[k]


@njit
def _add_all(a: np.ndarray) -> int:
    out = np.zeros(a.size, dtype=np.int64)
    for k in range(a.size):
        _add_into(a, out, k)
    return int(out.sum())


@njit_noref
def _allocates(a: np.ndarray) -> int:
    return int(np.empty(a.size, dtype=np.int64).size)


def test_a_kernel_without_reference_counts_works_on_its_callers_arrays() -> None:
    a = np.arange(1, 6, dtype=np.int64)
    assert _add_all(a) == 15
    out = np.zeros(5, dtype=np.int64)
    _add_into(a, out, 2)
    assert out.tolist() == [0, 0, 3, 0, 0]


def test_a_kernel_without_reference_counts_cannot_allocate() -> None:
    import numba

    with pytest.raises(numba.core.errors.NumbaError):
        _allocates(np.arange(3, dtype=np.int64))


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_cache_folder_changes_with_any_file_that_defines_a_kernel(tmp_path: Path) -> None:
    # numba checks a cached kernel against its own file only: a callee changed in
    # another file must empty the cache, or the caller keeps the callee's old code
    _tree(tmp_path, {"flash/lanes.py": "@njit\ndef f(): pass\n",
                     "flash/fast.py": "@njit\ndef g(): f()\n",
                     "tmhw/report.py": "x = 1\n"})
    first = cache_dir("/cache", tmp_path)
    assert first.parent == Path("/cache") and first == cache_dir("/cache", tmp_path)
    (tmp_path / "tmhw/report.py").write_text("x = 2\n")  # no kernel: the same folder
    assert cache_dir("/cache", tmp_path) == first
    (tmp_path / "flash/lanes.py").write_text("@njit\ndef f(): return 1\n")
    assert cache_dir("/cache", tmp_path) != first


def test_the_default_cache_is_the_users_and_never_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path / "src", {"dram/fast.py": "@njit\ndef f(): pass\n"})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    got = cache_dir("", tmp_path / "src")
    assert got.parent == tmp_path / "xdg" / "tmhw" / "numba" and got.is_dir()
    # XDG_CACHE_HOME unset, or relative (which the specification says to ignore)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for xdg in (None, "rel/cache"):
        if xdg is None:
            monkeypatch.delenv("XDG_CACHE_HOME")
        else:
            monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert jit.user_cache() == tmp_path / "home" / ".cache" / "tmhw" / "numba"
    assert not any(p.name in ("__pycache__", "numba") for p in (tmp_path / "src").rglob("*"))
    # NUMBA_CACHE_DIR: its own folder, as given
    assert cache_dir("/nc", tmp_path / "src") == Path("/nc") / got.name


def test_a_cache_that_cannot_be_written_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(TmhwError, match=r"kernel cache: cannot write .*NUMBA_CACHE_DIR"):
        cache_dir("", tmp_path, user=tmp_path / "file" / "numba")


def _aged(folder: Path, seconds: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    t = time.time() - seconds
    os.utime(folder, (t, t))
    return folder


def test_other_versions_are_removed_only_when_no_checkout_is_likely_to_use_them(
        tmp_path: Path) -> None:
    """Other checkouts share the folder: a version used within the hour stays, however
    many there are, and so do the most recently used ones; the rest go, and the
    current version is marked used (its folder's time is its last use)."""
    own = tmp_path / "numba"
    k, hour = jit.KEEP_VERSIONS, jit.IN_USE_S
    recent = [_aged(own / f"tmhw-recent{i}", 60.0 * i) for i in range(k + 3)]
    old = [_aged(own / f"tmhw-old{i}", hour + 3600.0 * (i + 1)) for i in range(3)]
    other = _aged(own / "not-a-version", 10 * hour)
    _tree(tmp_path / "src", {"flash/x.py": "@njit\ndef f(): pass\n"})
    mine = _aged(own / jit.version(tmp_path / "src"), 10 * hour)
    (mine / "k.nbi").write_text("")
    assert cache_dir("", tmp_path / "src", user=own) == mine
    assert all(d.is_dir() for d in recent) and not any(d.exists() for d in old)
    assert other.is_dir() and (mine / "k.nbi").is_file()
    assert time.time() - mine.stat().st_mtime < hour
    # without versions made lately, the most recently used ones stay, however old
    for i, d in enumerate(recent):
        _aged(d, hour + 60.0 * (i + 1))
    gone = jit.prune(own, keep=mine.name)
    assert sorted(gone) == sorted(recent[k - 1:])   # mine is the most recent of all
    assert all(d.is_dir() for d in recent[:k - 1]) and mine.is_dir()


def test_a_direct_handle_binds_the_entry_of_its_first_calls_types() -> None:
    """``Direct``: the first call goes through the dispatcher, later calls straight to
    the compiled version of the first call's argument types; the results are the
    dispatcher's."""
    handle = jit.Direct(_cumsum_into)
    a = np.arange(1, 6, dtype=np.int64)
    out = np.zeros(5, dtype=np.int64)
    assert handle.call(a, out) == 15 and out.tolist() == [1, 3, 6, 10, 15]
    d = _cumsum_into if not isinstance(_cumsum_into, _Kernel) else _cumsum_into.dispatcher
    types = (d.typeof_pyval(a), d.typeof_pyval(out))
    assert handle.call is d.overloads[types].entry_point
    b = np.array([7, -2, 4], dtype=np.int64)
    assert handle.call(b, out) == 9 and out[:3].tolist() == [7, 5, 9]
    jit.DIRECTS.remove(handle)


def test_a_direct_handle_under_disabled_jit_calls_the_python_function(
        fresh_python: Callable[..., str]) -> None:
    code = ("import numpy as np\n"
            "from tmhw.sim import jit\n"
            "from tmhw.sim.pagebits import PageBits\n"
            "b = PageBits(200)\n"
            "b[3:150] = True\n"
            "h = next(h for h in jit.DIRECTS if h.kernel.__name__ == '_bits_count')\n"
            "print(b.count(0, 200), h.call is h.kernel.dispatcher)")
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    assert fresh_python(code, env=env).split() == ["147", "True"]


def test_a_kernels_first_load_registers_no_type_with_numba_after_the_kernels_are_made(
        fresh_python: Callable[..., str]) -> None:
    # numba's first load of a kernel refreshes its target context, whose imports
    # register types with ``numba.typeof``'s singledispatch registry; a kernel called
    # on another thread meanwhile iterated that registry as it grew ("dictionary
    # changed size during iteration", one point of paper_headline). The kernels'
    # making (under the load's lock) refreshes it first, so the first loads add nothing.
    code = ("from tmhw.sim import jit\n"
            "from tmhw.residency import Residency\n"
            "jit.load()\n"
            "from numba.core.typing.typeof import typeof_impl\n"
            "before = set(typeof_impl.registry)\n"
            "Residency(64, 64, 4096).count_missing(0, 64)\n"
            "print(len(before) > 0, set(typeof_impl.registry) == before)")
    out = fresh_python(code)
    assert out.split() == ["True", "True"]
