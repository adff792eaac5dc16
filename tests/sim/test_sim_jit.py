"""Compiled kernels (``tmhw.sim.jit``): numba is loaded at the first kernel call, not at
import; that call rebinds each module global bound to a kernel to its compiled
dispatcher, so a kernel that calls another runs compiled, and later calls from Python
reach the dispatcher with no wrapper between. A kernel without reference counts cannot
allocate; the cache folder is one per version of the kernels' files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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


def test_importing_the_system_does_not_import_numba() -> None:
    code = "import sys, tmhw.system, flash; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


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


def test_the_default_cache_keeps_only_the_current_version(tmp_path: Path) -> None:
    _tree(tmp_path, {"dram/fast.py": "@njit\ndef f(): pass\n"})
    old = cache_dir("", tmp_path)
    old.mkdir(parents=True)
    (old / "k.nbi").write_text("")
    (tmp_path / "dram/fast.py").write_text("@njit\ndef f(): return 2\n")
    new = cache_dir("", tmp_path)
    assert new.parent == tmp_path / "tmhw" / "__pycache__" / "numba"
    assert new != old and not old.exists()
