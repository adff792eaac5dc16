"""A binary min-heap of rows in a 2-D int64 array, compiled: rows ordered by their first
column, then (with two columns or more) by their second, as Python's ``heapq`` orders
tuples. The caller keeps the count of rows in use; the array has room for one more
than it holds before a push. The only implementation of these steps: the write
buffer's programs (``flash.cache``) and the flash bench's closed loop and NVMe queue
(``flash.pages``) use them."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tmhw.sim.jit import njit_noref

I64 = npt.NDArray[np.int64]


@njit_noref
def row_before(heap: I64, i: int, j: int) -> bool:
    """Row ``i`` comes before row ``j``: its first column is less, or equal with its
    second less."""
    if heap[i, 0] != heap[j, 0]:
        return bool(heap[i, 0] < heap[j, 0])
    return heap.shape[1] > 1 and bool(heap[i, 1] < heap[j, 1])


@njit_noref
def _swap(heap: I64, i: int, j: int) -> None:
    for c in range(heap.shape[1]):
        v = heap[i, c]
        heap[i, c] = heap[j, c]
        heap[j, c] = v


@njit_noref
def row_push(heap: I64, n: int) -> int:
    """Row ``n``, already written, joins the ``n`` rows of the heap; the new count."""
    i = n
    while i and row_before(heap, i, (i - 1) >> 1):  # up to its place
        _swap(heap, i, (i - 1) >> 1)
        i = (i - 1) >> 1
    return n + 1


@njit_noref
def row_pop(heap: I64, n: int) -> int:
    """The first of the ``n`` rows leaves (read it before); the new count. The last row
    goes to the top, then down to its place."""
    n -= 1
    for c in range(heap.shape[1]):
        heap[0, c] = heap[n, c]
    i = 0
    while True:
        k = 2 * i + 1
        if k >= n:
            break
        if k + 1 < n and row_before(heap, k + 1, k):
            k += 1
        if not row_before(heap, k, i):
            break
        _swap(heap, i, k)
        i = k
    return n
