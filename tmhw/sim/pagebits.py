"""One flag per page, packed 64 to a word: ``PageBits``, the page-flag array of the
run's residency (``tmhw.residency``) and of a table's replay (``tmhw.placement.gaps``
``table_profile``), where a model's footprint has hundreds of millions of pages (GPT-2
medium at 1024 layers, s1024 b8: 661M, 661 MB a bool array and 83 MB packed). Runs set,
cleared, counted and tested whole are compiled word by word; reads of a run come back
as a bool array."""

from __future__ import annotations

from typing import Any

import numpy as np

from tmhw.sim.jit import Direct, njit_noref

#: pages a block of ``PageBits.of``'s packing
_BLOCK = 1 << 23
#: the values ``PageBits`` sets a run to at once, without asking numpy their shape
_SCALAR = (bool, int, np.bool_)
#: a word's flags read as they are, or inverted (``PageBits.first``)
_NONE, _ONES = np.uint64(0), np.uint64(0xFFFFFFFFFFFFFFFF)


class PageBits:
    """One flag per page, packed 64 to a word (an eighth of a bool array's bytes), read
    and written as a bool array is: a slice, an index or an array of indices gives a
    bool array (or a bool), and sets from a bool or a bool array; ``any``, ``all`` and
    ``np.asarray`` see every page. Runs set or cleared whole, and a run's ``any``,
    ``run_all`` and ``count``, are compiled word by word (``_bits_fill``, ``_bits_any``,
    ``_bits_count``), as are a run set where two others are (``or_and``) and the first
    page where three agree (``first``); a run set from a bool array, page by page
    (``_bits_set_run``)."""

    __slots__ = ("n", "words")

    def __init__(self, n: int) -> None:
        self.n = n
        self.words = np.zeros(-(-n // 64), dtype=np.uint64)

    @classmethod
    def of(cls, flags: np.ndarray) -> PageBits:
        """The flags of a bool array, packed a block at a time (no temporary the size of
        the array)."""
        bits = cls(len(flags))
        raw = bits.words.view(np.uint8)
        for a in range(0, bits.n, _BLOCK):
            b = min(bits.n, a + _BLOCK)
            packed = np.packbits(flags[a:b], bitorder="little")
            raw[a >> 3:(a >> 3) + len(packed)] = packed
        return bits

    def __len__(self) -> int:
        return self.n

    @property
    def nbytes(self) -> int:
        return int(self.words.nbytes)

    def _unpack(self, a: int, b: int) -> np.ndarray:
        """The flags of [a, b) as a bool array (a new one)."""
        if b <= a:
            return np.zeros(0, dtype=bool)
        raw = self.words.view(np.uint8)[a >> 3:(b + 7) >> 3]
        bits = np.unpackbits(raw, bitorder="little")
        off = a & 7
        return bits[off:off + (b - a)].astype(bool)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            a, b, step = key.indices(self.n)
            if step == 1:
                return self._unpack(a, b)
            return self._unpack(0, self.n)[key]
        if isinstance(key, int | np.integer):
            k = int(key) + (self.n if int(key) < 0 else 0)
            if not 0 <= k < self.n:
                raise IndexError(f"page {key} out of range [0, {self.n})")
            return bool(int(self.words[k >> 6]) >> (k & 63) & 1)
        idx = np.asarray(key)
        if idx.dtype == np.bool_:
            return self._unpack(0, self.n)[idx]
        idx = np.where(idx < 0, idx + self.n, idx).astype(np.int64)
        return ((self.words[idx >> 6] >> (idx & 63).astype(np.uint64)) & np.uint64(1)
                ).astype(bool)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, slice):
            a, b, step = key.indices(self.n)
            if step == 1 and (value.__class__ in _SCALAR or np.ndim(value) == 0):
                if b > a:
                    _D_BITS_FILL.call(self.words, a, b, bool(value))
                return
            if step == 1:
                vals = np.ascontiguousarray(np.broadcast_to(
                    np.asarray(value, dtype=bool), (max(0, b - a),)))
                _bits_set_run(self.words, a, vals)
                return
            pages = np.arange(a, b, step, dtype=np.int64)
        elif isinstance(key, int | np.integer):
            pages = np.array([int(key) + (self.n if int(key) < 0 else 0)], dtype=np.int64)
        else:
            idx = np.asarray(key)
            pages = (np.flatnonzero(idx) if idx.dtype == np.bool_
                     else np.where(idx < 0, idx + self.n, idx).astype(np.int64).ravel())
        vals = np.broadcast_to(np.asarray(value, dtype=bool), pages.shape)
        _bits_put(self.words, pages, np.ascontiguousarray(vals))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self._unpack(0, self.n)
        return out if dtype is None else out.astype(dtype)

    def any(self) -> bool:
        return bool(_D_BITS_ANY.call(self.words, 0, self.n))

    def all(self) -> bool:
        return not bool(_D_BITS_ANY_CLEAR.call(self.words, 0, self.n))

    def run_any(self, a: int, b: int) -> bool:
        """Whether any page of [a, b) is set."""
        return b > a and bool(_D_BITS_ANY.call(self.words, a, b))

    def run_all(self, a: int, b: int) -> bool:
        """Whether every page of [a, b) is set (an empty run: True)."""
        return b <= a or not bool(_D_BITS_ANY_CLEAR.call(self.words, a, b))

    def count(self, a: int = 0, b: int | None = None) -> int:
        """How many pages of [a, b) are set (``b`` None: to the end)."""
        b = self.n if b is None else b
        return int(_D_BITS_COUNT.call(self.words, a, b)) if b > a else 0

    def copy(self) -> PageBits:
        """The same flags, in words of its own."""
        out = PageBits.__new__(PageBits)
        out.n, out.words = self.n, self.words.copy()
        return out

    def first_diff(self, other: PageBits) -> int:
        """The first page whose flag differs in ``other`` (as long); -1: none."""
        diff = np.flatnonzero(self.words != other.words)
        if not diff.size:
            return -1
        w = int(diff[0])
        v = int(self.words[w] ^ other.words[w])
        return (w << 6) + (v & -v).bit_length() - 1

    def or_and(self, a: int, b: int, y: PageBits, z: PageBits) -> None:
        """Pages [a, b) set where ``y`` and ``z`` both are (``self[a:b] |= y[a:b] &
        z[a:b]``; ``z`` may be ``y``), word by word."""
        if b > a:
            _bits_or_and(self.words, y.words, z.words, a, b)

    def first(self, a: int, b: int, y: PageBits, z: PageBits,
              clear: tuple[bool, bool, bool] = (False, False, False)) -> int:
        """The first page of [a, b) whose flags here, in ``y`` and in ``z`` are all set,
        each read as clear where ``clear`` says (``clear[0]`` for this one); -1: none.
        Word by word: ``(held & live & ~flash)[a:b].any()`` is ``held.first(a, b, live,
        flash, (False, False, True)) >= 0`` without a bool array."""
        if b <= a:
            return -1
        nx, ny, nz = (_ONES if c else _NONE for c in clear)
        return int(_bits_first(self.words, y.words, z.words, nx, ny, nz, a, b))


@njit_noref
def _word_mask(a: int, b: int, w: int) -> np.uint64:
    """The bits of word ``w`` that pages [a, b) cover."""
    lo = a - (w << 6) if w == a >> 6 else 0
    hi = b - (w << 6) if w == (b - 1) >> 6 else 64
    if hi - lo == 64:
        return np.uint64(0xFFFFFFFFFFFFFFFF)
    return ((np.uint64(1) << np.uint64(hi - lo)) - np.uint64(1)) << np.uint64(lo)


@njit_noref
def _bits_fill(words: np.ndarray, a: int, b: int, value: bool) -> None:
    """Pages [a, b) (b > a) set (or cleared), whole words at once."""
    for w in range(a >> 6, ((b - 1) >> 6) + 1):
        if value:
            words[w] |= _word_mask(a, b, w)
        else:
            words[w] &= ~_word_mask(a, b, w)


@njit_noref
def _bits_any(words: np.ndarray, a: int, b: int) -> bool:
    """Whether any page of [a, b) (b > a) is set."""
    for w in range(a >> 6, ((b - 1) >> 6) + 1):
        if words[w] & _word_mask(a, b, w):
            return True
    return False


@njit_noref
def _bits_count(words: np.ndarray, a: int, b: int) -> int:
    """How many pages of [a, b) (b > a) are set."""
    n = 0
    for w in range(a >> 6, ((b - 1) >> 6) + 1):
        n += _popcount(words[w] & _word_mask(a, b, w))
    return n


@njit_noref
def _bits_set_run(words: np.ndarray, a: int, values: np.ndarray) -> None:
    """Pages [a, a + len(values)) set to ``values``, page by page."""
    for j in range(values.size):
        _set_bit(words, a + j, values[j])


@njit_noref
def _bits_any_clear(words: np.ndarray, a: int, b: int) -> bool:
    """Whether any page of [a, b) (b > a) is clear."""
    for w in range(a >> 6, ((b - 1) >> 6) + 1):
        mask = _word_mask(a, b, w)
        if (words[w] & mask) != mask:
            return True
    return False


@njit_noref
def _bits_or_and(words: np.ndarray, y: np.ndarray, z: np.ndarray, a: int, b: int) -> None:
    """Pages [a, b) (b > a) set where ``y`` and ``z`` both are, whole words at once."""
    for w in range(a >> 6, ((b - 1) >> 6) + 1):
        words[w] |= y[w] & z[w] & _word_mask(a, b, w)


@njit_noref
def _bits_first(x: np.ndarray, y: np.ndarray, z: np.ndarray, nx: np.uint64, ny: np.uint64,
                nz: np.uint64, a: int, b: int) -> int:
    """The first page of [a, b) (b > a) set in ``x ^ nx``, ``y ^ ny`` and ``z ^ nz``
    (each ``n`` all ones to read its flags inverted); -1: none."""
    for w in range(a >> 6, ((b - 1) >> 6) + 1):
        v = (x[w] ^ nx) & (y[w] ^ ny) & (z[w] ^ nz) & _word_mask(a, b, w)
        if v:
            return (w << 6) + _popcount((v & (~v + np.uint64(1))) - np.uint64(1))
    return -1


@njit_noref
def _bits_put(words: np.ndarray, pages: np.ndarray, values: np.ndarray) -> None:
    """Page ``pages[j]`` set to ``values[j]``, in turn."""
    for j in range(pages.size):
        _set_bit(words, pages[j], values[j])


@njit_noref
def _bit(words: np.ndarray, page: int) -> bool:
    """Page ``page``'s flag."""
    return bool((words[page >> 6] >> np.uint64(page & 63)) & np.uint64(1))


@njit_noref
def _set_bit(words: np.ndarray, p: int, value: bool) -> None:
    """Page ``p`` set to ``value``."""
    bit = np.uint64(1) << np.uint64(p & 63)
    if value:
        words[p >> 6] |= bit
    else:
        words[p >> 6] &= ~bit


@njit_noref
def _popcount(x: np.uint64) -> int:
    """The set bits of a word."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2))
                                              & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


#: the kernels past their dispatcher (``tmhw.sim.jit.Direct``)
_D_BITS_FILL = Direct(_bits_fill)
_D_BITS_ANY = Direct(_bits_any)
_D_BITS_ANY_CLEAR = Direct(_bits_any_clear)
_D_BITS_COUNT = Direct(_bits_count)


def compile_kernels() -> None:
    """Compile this module's kernels into numba's on-disk cache (``make`` runs this
    before the tests and the default study, through ``tmhw.system.compile_kernels``), by
    every method that calls one, with the argument types the residency and TM-Training's
    table check give them."""
    x, y = PageBits(130), PageBits(130)
    x[3:70] = True                          # a run filled
    x[5:9] = np.ones(4, dtype=bool)         # a run set page by page
    x[np.array([1, 2])] = True              # pages by index
    x.any(), x.all(), x.run_any(0, 100), x.run_all(0, 100), x.count(0, 100)
    y.or_and(0, 130, x, x)
    x.first(0, 130, y, y, (False, False, True))
