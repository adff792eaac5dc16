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

from flash.config import FlashConfig
from tmhw.sim.units import S


class SlcCache:
    """The SLC write cache of one device, in NAND pages."""

    __slots__ = ("cap", "used", "since", "fold_per_ps", "page", "slc_pages",
                 "direct_pages", "folded_pages", "advanced_pages")

    def __init__(self, cfg: FlashConfig) -> None:
        self.page = cfg.page_size
        self.cap = cfg.slc_cache_bytes // cfg.page_size
        #: pages in the cache (a float: folding moves fractions of pages per ps)
        self.used = 0.0
        #: the time up to which folding has been accounted
        self.since = 0
        #: pages folded per ps of idle time: the TLC program rate
        self.fold_per_ps = cfg.tlc_program_bytes_per_s / cfg.page_size / S
        self.slc_pages = 0
        self.direct_pages = 0
        self.folded_pages = 0
        #: net pages the run moved the cache by without simulating (``advance``)
        self.advanced_pages = 0.0

    def __bool__(self) -> bool:
        return self.cap > 0

    def take(self, pages: int, now: int, busy_until: int) -> bool:
        """Whether a host write of ``pages`` taken at ``now`` programs in SLC mode; the
        device was busy until ``busy_until`` (idle from then to ``now``: folding)."""
        idle_from = busy_until if busy_until > self.since else self.since
        if now > idle_from and self.used > 0:
            folded = min(self.used, (now - idle_from) * self.fold_per_ps)
            self.used -= folded
            self.folded_pages += round(folded)
        if now > self.since:
            self.since = now
        if self.used + pages <= self.cap:
            self.used += pages
            self.slc_pages += pages
            return True
        self.direct_pages += pages
        return False

    @property
    def written_pages(self) -> int:
        """Host pages written so far, in SLC mode or straight to TLC."""
        return self.slc_pages + self.direct_pages

    def advance(self, pages: float) -> None:
        """Move the cache's fill by ``pages`` (negative: drained) without simulating the
        writes and folds that would do it, kept within [0, capacity]."""
        new = min(float(self.cap), max(0.0, self.used + pages))
        self.advanced_pages += new - self.used
        self.used = new

    def report(self) -> dict[str, int]:
        return {"slc_cache_pages": self.cap, "slc_cached_pages": round(self.used),
                "slc_pages": self.slc_pages, "slc_direct_pages": self.direct_pages,
                "slc_folded_pages": self.folded_pages,
                **({"slc_advanced_pages": round(self.advanced_pages)}
                   if self.advanced_pages else {})}
