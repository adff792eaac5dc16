"""The SLC write cache of a consumer TLC drive (Samsung's TurboWrite, and the "pSLC
cache" of most client SSDs): part of the NAND programmed one bit per cell, so a host
write programs at ``t_prog_slc`` while the cache has room; once it is full, writes go
straight to TLC at ``t_prog``. The controller folds the cached data into TLC while the
device is idle, at the TLC program rate (dies x planes x page / tPROG), so a pause
restores the fast rate (the behaviour drive reviews measure: full speed until the
cache is full, TLC speed after it, full speed again after idle time).

``slc_cache_bytes`` = 0 (the default) is a drive without one. What is simplified:

- the cache is a byte budget beside the FTL: its blocks are not set apart from the
  user's, so a drive with a full cache still has its whole TLC capacity, and the
  FTL maps cached and folded data alike;
- folding happens only in idle time (from the end of the device's last transaction
  to its next write), costs no die or channel time (a host command would suspend it)
  and is counted in energy as one page read and one TLC program per page folded;
- a read of cached data costs the TLC tR.

A training run writes the same bytes every iteration, so a cache that fills fills at a
steady rate, and a 216 GB cache takes many iterations to fill (seven of BERT-large at
12.5% HBM, hundreds of a small CNN). ``advance`` lets the run skip that drift: it moves
the cache as that many iterations' writes and folds would have (``tmhw.run.loop``: the
steady state with ``run.warmup_iterations = "auto"``); the skipped iterations' NAND
work is not counted anywhere.

Pure bookkeeping, one per device (``flash.ssd.Ssd``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from tmhw.sim.jit import Direct, njit_noref
from tmhw.sim.units import S

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
#: ``SlcCache.ints``: the time up to which folding has been accounted, the host pages
#: written in SLC mode and straight to TLC, the pages folded; ``floats``: the pages in
#: the cache (a fraction: folding moves fractions of pages per ps), the pages folded per
#: ps of idle time
SINCE, SLC_PAGES, DIRECT_PAGES, FOLDED_PAGES = range(4)
USED, FOLD_PER_PS = range(2)


@njit_noref
def slc_take(ints: I64, floats: F64, cap: int, pages: int, now: int,
             busy_until: int) -> bool:
    """``SlcCache.take`` on its state (``ints``, ``floats``; ``cap``: its pages), for
    Python and for a kernel that writes (``flash.pages``' write loop)."""
    since = ints[SINCE]
    idle_from = busy_until if busy_until > since else since
    if now > idle_from and floats[USED] > 0:
        folded = min(floats[USED], (now - idle_from) * floats[FOLD_PER_PS])
        floats[USED] -= folded
        ints[FOLDED_PAGES] += round(folded)
    if now > since:
        ints[SINCE] = now
    if floats[USED] + pages <= cap:
        floats[USED] += pages
        ints[SLC_PAGES] += pages
        return True
    ints[DIRECT_PAGES] += pages
    return False


_TAKE = Direct(slc_take)


class SlcCache:
    """The SLC write cache of one device, in NAND pages; its changing state in two
    arrays (``ints``, ``floats``) that a kernel may change as ``take`` does."""

    __slots__ = ("cap", "page", "ints", "floats", "advanced_pages")

    def __init__(self, cfg: FlashConfig) -> None:
        self.page = cfg.page_size
        self.cap = cfg.slc_cache_bytes // cfg.page_size
        self.ints = np.zeros(4, dtype=np.int64)
        #: the pages in the cache, and the TLC program rate in pages per ps
        self.floats = np.array([0.0, cfg.tlc_program_bytes_per_s / cfg.page_size / S])
        #: net pages the run moved the cache by without simulating (``advance``)
        self.advanced_pages = 0.0

    def __bool__(self) -> bool:
        return self.cap > 0

    @property
    def used(self) -> float:
        """Pages in the cache."""
        return float(self.floats[USED])

    @property
    def slc_pages(self) -> int:
        """Host pages written in SLC mode."""
        return int(self.ints[SLC_PAGES])

    @property
    def direct_pages(self) -> int:
        """Host pages written straight to TLC past a full cache."""
        return int(self.ints[DIRECT_PAGES])

    @property
    def folded_pages(self) -> int:
        """Pages folded into TLC in idle time."""
        return int(self.ints[FOLDED_PAGES])

    def take(self, pages: int, now: int, busy_until: int) -> bool:
        """Whether a host write of ``pages`` taken at ``now`` programs in SLC mode; the
        device was busy until ``busy_until`` (idle from then to ``now``: folding).
        Compiled (``slc_take``)."""
        return bool(_TAKE.call(self.ints, self.floats, self.cap, pages, now, busy_until))

    @property
    def written_pages(self) -> int:
        """Host pages written so far, in SLC mode or straight to TLC."""
        return self.slc_pages + self.direct_pages

    def advance(self, pages: float) -> None:
        """Move the cache's fill by ``pages`` (negative: drained) without simulating the
        writes and folds that would do it, kept within [0, capacity]."""
        new = min(float(self.cap), max(0.0, self.used + pages))
        self.advanced_pages += new - self.used
        self.floats[USED] = new

    def report(self) -> dict[str, int]:
        return {"slc_cache_pages": self.cap, "slc_cached_pages": round(self.used),
                "slc_pages": self.slc_pages, "slc_direct_pages": self.direct_pages,
                "slc_folded_pages": self.folded_pages,
                **({"slc_advanced_pages": round(self.advanced_pages)}
                   if self.advanced_pages else {})}
