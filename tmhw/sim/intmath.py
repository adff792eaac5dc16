"""Integer division in compiled kernels, as a shift where the divisor is a power of two.

A 64-bit integer division costs some 40 cycles, a shift one. The flash kernels divide
every page number by the pages per plane, every plane by the planes per die and every
die by the dies per channel and per device: about 770 divisions for a 2 MiB read and
2000 for an 8 MiB program. Every preset's geometry is in powers of two, so a kernel
works out each divisor's shift once per call (``log2_exact``) and divides by ``div``,
which shifts when it can and divides otherwise (docs/PERFORMANCE.md has what it saves).
"""

from __future__ import annotations

from tmhw.sim.jit import njit_noref


@njit_noref
def log2_exact(d: int) -> int:
    """log2 of ``d`` (> 0) when it is a power of two, else -1."""
    s = 0
    while (1 << s) < d:
        s += 1
    return s if (1 << s) == d else -1


@njit_noref
def div(a: int, d: int, s: int) -> int:
    """``a // d`` of ``a`` >= 0 and ``d`` > 0, ``s`` being ``log2_exact(d)``."""
    return a >> s if s >= 0 else a // d
