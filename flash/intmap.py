"""A map of non-negative integers to integers in one numpy array, which compiled
kernels (``tmhw.sim.jit``) read and update in place: the controller's sparse tables
(the L2P's overrides, the write buffer's one-page writes) where a batch of commands
updates them in its compiled call instead of one dict operation per page.

Open addressing with linear probing (Knuth, TAOCP vol. 3, 6.4: algorithm L to insert,
algorithm R to delete, ``im_remove``): row ``i`` of ``table`` is a (key + 1, value)
pair, or ``EMPTY`` in the key column (zero, so a new table is the operating system's
zeroed pages: the L2P's grows to tens of MB, which ``np.full`` would write through).
A deletion moves the later keys of its probe run back into the hole, so no deleted-key
marks accumulate and a table of stable size (the write buffer's) is never rebuilt.
The table stays at most half full, so a probe ends after a couple of rows; it doubles
(rehashed) as it fills. The Python methods here and the kernels probe alike (``_find``
writes ``im_slot``'s hash inline), so either may change the map between the other's
calls; a deletion is always the kernel's. Iteration order is the table's, not
insertion order: no user of these maps reads an order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from tmhw.sim.jit import njit, njit_noref

I64 = npt.NDArray[np.int64]
#: the key column's mark of a free row (keys are stored plus one)
EMPTY = 0
#: ``meta``: live keys, the table's rows - 1
LIVE, MASK = range(2)
#: Fibonacci hashing's multiplier (2**32 / golden ratio): keys are masked to 31 bits
#: first so the product fits in int64, in Python and in a kernel alike
_MUL = 0x9E3779B1


class IntMap:
    """Non-negative int keys to int values (module docstring): ``get``, ``pop``,
    item assignment and deletion, ``in``, ``len`` as a dict's; ``table`` and ``meta``
    are what the kernels take (``reserve`` room for their inserts first)."""

    def __init__(self, rows: int = 16) -> None:
        self.table = np.zeros((rows, 2), dtype=np.int64)
        self.meta = np.array([0, rows - 1], dtype=np.int64)

    def __len__(self) -> int:
        return self.meta.item(LIVE)

    def __bool__(self) -> bool:
        return self.meta.item(LIVE) > 0

    def _find(self, key: int) -> int:
        """The row holding ``key``, or the free row that ends its probe run (-1 - row)."""
        t = self.table
        mask = t.shape[0] - 1
        # (``im_slot`` inline: this is the per-command path's one probe, and a
        # kernel's dispatch would cost more than the hash)
        i = ((((key & 0x7FFFFFFF) * _MUL) >> 16) ^ (key >> 31)) & mask
        key += 1
        k = t.item(i, 0)
        while k != key:
            if k == EMPTY:
                return -1 - i
            i = (i + 1) & mask
            k = t.item(i, 0)
        return i

    def __contains__(self, key: int) -> bool:
        return self._find(key) >= 0

    def get(self, key: int, default: int | None = None) -> int | None:
        i = self._find(key)
        return default if i < 0 else self.table.item(i, 1)

    def pop(self, key: int, default: int | None = None) -> int | None:
        i = self._find(key)
        if i < 0:
            return default
        v: int = self.table.item(i, 1)
        im_remove(self.table, self.meta, i)
        return v

    def __delitem__(self, key: int) -> None:
        if self.pop(key) is None:
            raise KeyError(key)

    def __setitem__(self, key: int, value: int) -> None:
        self.put(key, value)

    def put(self, key: int, value: int) -> bool:
        """``self[key] = value`` in one probe (two when the table must grow first);
        whether ``key`` is new."""
        t = self.table
        i = self._find(key)
        if i >= 0:
            t[i, 1] = value
            return False
        live = self.meta.item(LIVE)
        if 2 * (live + 1) > t.shape[0]:
            self.reserve(1)
            t = self.table
            i = self._find(key)
        i = -1 - i
        t[i, 0] = key + 1
        t[i, 1] = value
        self.meta[LIVE] = live + 1
        return True

    def pop_if(self, key: int, gone: Callable[[int], bool]) -> None:
        """Delete ``key`` if it is there and ``gone`` of its value holds, in one probe."""
        i = self._find(key)
        if i >= 0 and gone(self.table.item(i, 1)):
            im_remove(self.table, self.meta, i)

    def update(self, keys: I64, values: npt.NDArray[np.signedinteger]) -> None:
        """``self[k] = v`` for each pair in turn."""
        ks = np.ascontiguousarray(keys, dtype=np.int64)
        vs = np.ascontiguousarray(values, dtype=np.int64)
        self.reserve(ks.size)
        im_put_many(self.table, self.meta, ks, vs)

    def items(self) -> list[tuple[int, int]]:
        t = self.table
        live = t[t[:, 0] != EMPTY]
        return list(zip((live[:, 0] - 1).tolist(), live[:, 1].tolist(), strict=True))

    def as_dict(self) -> dict[int, int]:
        return dict(self.items())

    def reserve(self, n: int) -> None:
        """Room for ``n`` new keys with the table at most half full (doubled and
        rehashed as often as that takes)."""
        if _has_room(self.table, self.meta, n):
            return
        rows = self.table.shape[0]
        live = self.meta.item(LIVE)
        while rows < 2 * (live + n):
            rows *= 2
        old = self.table
        keep = old[old[:, 0] != EMPTY]
        self.table = np.zeros((rows, 2), dtype=np.int64)
        self.meta[:] = (0, rows - 1)
        im_put_many(self.table, self.meta, keep[:, 0] - 1,
                    np.ascontiguousarray(keep[:, 1]))


def _has_room(table: I64, meta: I64, n: int) -> bool:
    """Whether ``n`` new keys leave the table at most half full (``IntMap.reserve``
    grows it otherwise); written once, for Python and for kernels (``im_has_room``)."""
    return bool(2 * (meta[LIVE] + n) <= table.shape[0])


im_has_room = njit_noref(_has_room)


@njit_noref
def im_slot(key: int, mask: int) -> int:
    """The first row ``key`` probes (Fibonacci hashing)."""
    return ((((key & 0x7FFFFFFF) * _MUL) >> 16) ^ (key >> 31)) & mask


@njit_noref
def im_find(table: I64, mask: int, key: int) -> int:
    """``IntMap._find`` compiled: the row holding ``key``, or -1 - the free row that
    ends its probe run."""
    i = im_slot(key, mask)
    key += 1
    while True:
        k = table[i, 0]
        if k == key:
            return i
        if k == EMPTY:
            return -1 - i
        i = (i + 1) & mask


@njit_noref
def im_get(table: I64, meta: I64, key: int, default: int) -> int:
    """The value of ``key``, or ``default``."""
    i = im_find(table, meta[MASK], key)
    return default if i < 0 else int(table[i, 1])


@njit_noref
def im_pop(table: I64, meta: I64, key: int, default: int) -> int:
    """Delete ``key`` (``im_remove``); its value, or ``default`` if it was not there."""
    i = im_find(table, meta[MASK], key)
    if i < 0:
        return default
    v = int(table[i, 1])
    im_remove(table, meta, i)
    return v


@njit_noref
def im_remove(table: I64, meta: I64, i: int) -> None:
    """Free row ``i``, the later keys of its probe run moved back (algorithm R)."""
    mask = meta[MASK]
    meta[LIVE] -= 1
    while True:
        table[i, 0] = EMPTY
        j = i
        while True:
            j = (j + 1) & mask
            k = table[j, 0]
            if k == EMPTY:
                return
            # a key whose first row is cyclically in (i, j] stays; another moves to i
            r = im_slot(k - 1, mask)
            if not ((i < r <= j) if i <= j else (i < r or r <= j)):
                break
        table[i, 0] = k
        table[i, 1] = table[j, 1]
        i = j


@njit_noref
def im_put(table: I64, meta: I64, key: int, value: int) -> int:
    """``key`` maps to ``value`` (room reserved); 1 if ``key`` is new, else 0."""
    i = im_find(table, meta[MASK], key)
    if i >= 0:
        table[i, 1] = value
        return 0
    i = -1 - i
    table[i, 0] = key + 1
    table[i, 1] = value
    meta[LIVE] += 1
    return 1


@njit
def im_put_many(table: I64, meta: I64, keys: I64, values: I64) -> None:
    """``im_put`` of each pair in turn."""
    for j in range(keys.size):
        im_put(table, meta, keys[j], values[j])


@njit
def im_get_many(table: I64, meta: I64, keys: I64, default: int, out: I64) -> None:
    """``out[j]``: the value of ``keys[j]``, or ``default``."""
    for j in range(keys.size):
        out[j] = im_get(table, meta, keys[j], default)


@njit
def im_pop_range(table: I64, meta: I64, lo: int, hi: int, default: int, out: I64) -> None:
    """Delete the keys [lo, hi); ``out[k - lo]``: key k's value, or ``default``."""
    for k in range(lo, hi):
        out[k - lo] = im_pop(table, meta, k, default)
