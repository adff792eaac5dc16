"""The FTL's compiled kernel (``tmhw.sim.jit``): a host write of a run whose L2P
segments are all dense, the steady state of a training run, which rewrites the same
tensors' pages iteration after iteration.

``write_dense_run`` is ``FTL._write_run`` where every L2P segment the run touches is a
dense row (so no dict entry and no closed form is involved) and every plane's active
block has a P2L row: the same steps, page by page, on the layers' own arrays.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.ftl.blocks import FULL
from tmhw.sim.jit import njit

I64 = npt.NDArray[np.int64]
#: ``write_dense_run``'s answers
DONE, DECLINED, NOT_ERASED = 0, 1, 2


@njit
def write_dense_run(lo: int, n: int, U: int, ppb: int, seg_bits: int, sp2: I64,
                    seg_row: I64, l2p: npt.NDArray[np.signedinteger],
                    row1_of: npt.NDArray[np.int32], p2l: npt.NDArray[np.signedinteger],
                    valid: npt.NDArray[np.int32], stamp: I64,
                    state: npt.NDArray[np.int8], host_blk: I64, host_wp: I64, seq: int,
                    out: I64) -> int:
    """``FTL._write_run`` of the run [lo, lo + n) (n >= 2) into ``out`` (its ppns),
    when every segment it touches has a dense row (``seg_row`` >= 0) and every plane's
    active block has room and a P2L row; ``DECLINED`` (nothing changed) otherwise,
    ``NOT_ERASED`` (nothing changed) if a target page is not erased. The ``r``-th page
    of a plane goes ``r`` pages past its write pointer; every active block written
    gets the stamp ``seq + n``; a block filled is closed."""
    mask = (1 << seg_bits) - 1
    for si in range(lo >> seg_bits, ((lo + n - 1) >> seg_bits) + 1):
        if seg_row[si] < 0:
            return DECLINED
    s0 = lo % U
    w = min(n, U)
    for x in range(w):
        plane = sp2[s0 + x]
        hb = host_blk[plane]
        if hb < 0 or row1_of[hb] == 0:
            return DECLINED
        c = (n - x + U - 1) // U  # the plane's pages in the run
        if host_wp[plane] + c > ppb:
            return DECLINED
    for i in range(n):
        plane = sp2[s0 + i % U]
        hb = host_blk[plane]
        if p2l[row1_of[hb] - 1, host_wp[plane] + i // U] != -1:
            return NOT_ERASED
    for i in range(n):
        lpn = lo + i
        r = seg_row[lpn >> seg_bits]
        old = l2p[r, lpn & mask]
        if old >= 0:
            valid[old // ppb] -= 1
        plane = sp2[s0 + i % U]
        hb = host_blk[plane]
        wp = host_wp[plane] + i // U
        p2l[row1_of[hb] - 1, wp] = lpn
        ppn = hb * ppb + wp
        l2p[r, lpn & mask] = ppn
        out[i] = ppn
    for x in range(w):
        plane = sp2[s0 + x]
        hb = host_blk[plane]
        c = (n - x + U - 1) // U
        valid[hb] += c
        stamp[hb] = seq + n
        wp = host_wp[plane] + c
        if wp == ppb:
            state[hb] = FULL
            host_blk[plane] = -1
            host_wp[plane] = 0
        else:
            host_wp[plane] = wp
    return DONE
