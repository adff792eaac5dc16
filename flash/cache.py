"""The data cache manager: the controller DRAM between the host link and the NAND
(MQSim's ``Data_Cache_Manager_Flash_Advanced``).

- **Write buffer** (``FlashConfig.write_buffer_bytes``). A write is acknowledged once
  its data is in the buffer; the buffer flushes eagerly, every page handed to the
  transaction scheduler as soon as it arrives, and a page's space is free again when its
  program ends. A write that finds the buffer full waits for the earliest programs
  (``admit``), so a burst smaller than the buffer completes at link speed and a
  sustained stream settles at the NAND program rate. A transaction larger than the whole
  buffer is written through (acknowledged when programmed).
- **Read cache** (``FlashConfig.read_cache_bytes``). A NAND page the host read only part
  of stays in DRAM whole, least recently used first out (the rest of the page is what
  a small read's neighbour wants; a page delivered whole is not kept). A read of a page
  still in the write buffer or in the read cache costs no NAND read (``split_read``).
  A write drops the page's cached copy, so a read always returns the latest version.

Pages here are logical NAND pages (``page_size`` bytes) of one device. DRAM time is not
booked: its bandwidth exceeds the host link's on every preset, so a hit costs link time
only. Pure: no SimPy.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from itertools import compress, repeat


class DataCache:
    """Controller DRAM of one device: write buffer and read cache, in NAND pages."""

    def __init__(self, write_pages: int, read_pages: int) -> None:
        self.write_pages = write_pages
        self.read_pages = read_pages
        # buffered writes in arrival order: (last program end, their pages)
        self._fifo: deque[tuple[int, range]] = deque()
        self._used = 0
        #: logical page -> end of the program of its newest buffered copy
        self._buffered: dict[int, int] = {}
        self._lru: OrderedDict[int, None] = OrderedDict()
        self.write_hits = 0       # pages acknowledged from the buffer
        self.write_waits = 0      # writes that waited for buffer space
        self.buffer_read_hits = 0  # pages read from the write buffer
        self.cache_read_hits = 0   # pages read from the read cache

    @property
    def used_pages(self) -> int:
        return self._used

    def admit(self, pages: int, earliest: int) -> int:
        """Earliest time >= ``earliest`` at which ``pages`` fit in the write buffer;
        -1 when the transaction is larger than the buffer (written through)."""
        if pages > self.write_pages:
            return -1
        fifo = self._fifo
        t = earliest
        while fifo and fifo[0][0] <= t:
            self._release()
        while self._used + pages > self.write_pages:
            end = self._release()
            if end > t:
                t = end
        if t > earliest:
            self.write_waits += 1
        return t

    def _release(self) -> int:
        """Free the oldest buffered write's space; return when its programs ended."""
        end, lpns = self._fifo.popleft()
        self._used -= len(lpns)
        b = self._buffered
        # the pages whose newest copy is this one go (a loop in C: a write is 512 pages)
        gone = compress(lpns, map(end.__ge__, map(b.get, lpns, repeat(end + 1))))
        deque(map(b.__delitem__, list(gone)), maxlen=0)
        return end

    def buffered(self, lpns: range, ends: list[int] | int) -> None:
        """Pages ``lpns`` are in the buffer until their programs end (``ends``: one
        time per page, or one for all); their read-cache copies are stale."""
        n = len(lpns)
        last = ends if isinstance(ends, int) else max(ends)
        self._fifo.append((last, lpns))
        self._used += n
        self.write_hits += n
        b = self._buffered
        if isinstance(ends, int):
            b.update(dict.fromkeys(lpns, ends))
        else:
            b.update(zip(lpns, ends, strict=True))
        self.invalidate(lpns)

    def invalidate(self, lpns: range) -> None:
        """Drop the read-cache copies of ``lpns`` (they were rewritten or trimmed)."""
        lru = self._lru
        if lru:
            # membership tests in C, over the smaller of the two
            dead = [k for k in lru if k in lpns] if len(lru) < len(lpns) else lru.keys() & lpns
            for lpn in dead:
                del lru[lpn]

    def split_read(self, lpns: range, now: int) -> list[bool]:
        """Per page of ``lpns`` (consecutive): True if DRAM holds it (write buffer or
        read cache). Only the pages either holds are visited, in order."""
        b, lru = self._buffered, self._lru
        out = [False] * len(lpns)
        if not b and not lru:
            return out
        lo = lpns.start
        for lpn in sorted(b.keys() & lpns | lru.keys() & lpns):
            end = b.get(lpn)
            if end is not None:
                if end > now:
                    self.buffer_read_hits += 1
                    out[lpn - lo] = True
                    continue
                del b[lpn]  # programmed: the buffer copy is gone
            if lpn in lru:
                lru.move_to_end(lpn)
                self.cache_read_hits += 1
                out[lpn - lo] = True
        return out

    def filled(self, lpns: range | list[int]) -> None:
        """Pages read from NAND for the host now stay in the read cache."""
        cap = self.read_pages
        if cap == 0:
            return
        lru = self._lru
        for lpn in lpns:
            lru[lpn] = None
            lru.move_to_end(lpn)
        while len(lru) > cap:
            lru.popitem(last=False)

    def holds(self, lpn: int, now: int) -> str:
        """Where DRAM holds ``lpn`` at ``now``: "buffer", "cache" or "" (not at all)."""
        end = self._buffered.get(lpn)
        if end is not None and end > now:
            return "buffer"
        return "cache" if lpn in self._lru else ""
