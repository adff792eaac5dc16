"""Compiled kernels (``tmhw.sim.jit``): numba is loaded at the first kernel call, not at
import; that call rebinds each module global bound to a kernel to its compiled
dispatcher, so a kernel that calls another runs compiled, and later calls from Python
reach the dispatcher with no wrapper between."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from tmhw.sim.jit import _Kernel, njit


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
