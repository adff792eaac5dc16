"""Block management: the state of every block and the pool of free ones (after MQSim's
``Flash_Block_Manager``).

- Per-block valid counts, erase counts, state (free, active, full, bad) and the write
  sequence of its last program (its age, for cost-benefit victim choice). Dense: 21
  bytes a block (2M blocks, 44 MB, for the 990pro preset).
- Active blocks and their write pointers: within a plane, pages are written at the
  write pointer of an active block; host writes and GC writes use separate ones.
- Free blocks per plane: never-used blocks first (in order), then a heap of erased
  ones, least worn first with dynamic wear levelling (otherwise oldest first). Planes
  under the soft GC threshold are tracked in ``low_planes``.
- Erase, and bad-block retirement at ``pe_limit``.
"""

from __future__ import annotations

import heapq

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from tmhw.sim import TmhwError

FREE, ACTIVE, FULL, BAD = 0, 1, 2, 3


class BlockManager:
    """Block states and free pools of one device. The per-block arrays and per-plane
    lists are never rebound (only updated in place), so other layers may hold them."""

    def __init__(self, cfg: FlashConfig) -> None:
        self.cfg = cfg
        self.U = U = cfg.planes
        self.ppb = cfg.pages_per_block
        self.bpp = cfg.blocks_per_plane
        nb = cfg.blocks
        self.valid = np.zeros(nb, dtype=np.int32)
        self.erases = np.zeros(nb, dtype=np.int32)
        self.state = np.zeros(nb, dtype=np.int8)
        self.stamp = np.zeros(nb, dtype=np.int64)
        self.seq = 0  # pages programmed so far: ``stamp`` is its value at a block's last
        # Active blocks (-1: none) and write pointers, for host and for GC writes.
        self.host_blk = np.full(U, -1, dtype=np.int64)
        self.host_wp = np.zeros(U, dtype=np.int64)
        self.gc_blk = np.full(U, -1, dtype=np.int64)
        self.gc_wp = np.zeros(U, dtype=np.int64)
        #: per plane: blocks [fresh_next, bpp) were never used, and how many are free
        #: (arrays, so that ``kernels.write_run`` opens a never-used block itself)
        self.fresh_next = np.zeros(U, dtype=np.int64)
        self.free_heap: list[list[tuple[int, int]]] = [[] for _ in range(U)]
        self.free_count = np.full(U, self.bpp, dtype=np.int64)
        self._fifo = 0
        self.soft_blocks = cfg.gc_soft_blocks
        self.hard_blocks = cfg.gc_hard_blocks
        #: Planes under the soft threshold (so a timing model need not scan them all).
        self.low_planes: set[int] = set()
        self.erase_count = 0
        self.bad_blocks = 0

    def take_free(self, plane: int) -> int:
        """Open a free block of ``plane`` (it becomes active)."""
        heap = self.free_heap[plane]
        fresh = self.fresh_next.item(plane)
        if fresh < self.bpp:
            # never-used blocks have no wear: the least worn there is (as
            # ``kernels.open_fresh`` opens one)
            blk = plane * self.bpp + fresh
            self.fresh_next[plane] = fresh + 1
        elif heap:
            _, blk = heapq.heappop(heap)
        else:
            raise TmhwError(f"flash: plane {plane} has no free block left (device worn out "
                            f"or logical space over-full)")
        self.free_count[plane] -= 1
        if self.free_count[plane] < self.soft_blocks:
            self.low_planes.add(plane)
        self.state[blk] = ACTIVE
        return blk

    def put_free(self, plane: int, blk: int) -> None:
        """Return an erased block to the free pool of ``plane``."""
        self.state[blk] = FREE
        if self.cfg.dynamic_wear_leveling:
            key = int(self.erases[blk])
        else:
            self._fifo += 1
            key = self._fifo
        heapq.heappush(self.free_heap[plane], (key, blk))
        self.free_count[plane] += 1
        if self.free_count[plane] >= self.soft_blocks:
            self.low_planes.discard(plane)

    def erase(self, plane: int, blk: int) -> bool:
        """Erase ``blk`` (no valid data left): back to the free pool, or retired as bad
        when worn out (returns True then)."""
        self.erases[blk] += 1
        self.erase_count += 1
        if self.erases[blk] >= self.cfg.pe_limit:
            self.state[blk] = BAD
            self.bad_blocks += 1
            return True
        self.put_free(plane, blk)
        return False

    def fill(self, count: npt.NDArray[np.int64]) -> None:
        """Lay out ``count[p]`` sequentially written pages in each plane ``p`` of a fresh
        device: full blocks from the first on, then an active one with the rest."""
        full = count // self.ppb
        part = count % self.ppb
        # the blocks every plane fills whole, then the few columns where planes differ:
        # the arrays' memory past the filled blocks is not touched
        lo = int(full.min())
        hi = min(int(full.max()) + 1, self.bpp)
        self.state.reshape(self.U, self.bpp)[:, :lo] = FULL
        self.valid.reshape(self.U, self.bpp)[:, :lo] = self.ppb
        local = np.arange(lo, hi, dtype=np.int64)[None, :]
        st = self.state.reshape(self.U, self.bpp)[:, lo:hi]
        va = self.valid.reshape(self.U, self.bpp)[:, lo:hi]
        is_full = local < full[:, None]
        st[is_full] = FULL
        va[is_full] = self.ppb
        is_part = (local == full[:, None]) & (part[:, None] > 0)
        st[is_part] = ACTIVE
        va[is_part] = np.broadcast_to(part[:, None], va.shape)[is_part]
        for p in np.nonzero(part)[0].tolist():
            self.host_blk[p] = p * self.bpp + int(full[p])
            self.host_wp[p] = int(part[p])
        used = full + (part > 0)
        self.fresh_next[:] = used.tolist()
        self.free_count[:] = (self.bpp - used).tolist()
        self.low_planes.clear()
        self.low_planes.update(p for p, f in enumerate(self.free_count) if f < self.soft_blocks)

    def nbytes(self) -> int:
        """Bytes of the per-block arrays."""
        return self.valid.nbytes + self.erases.nbytes + self.state.nbytes + self.stamp.nbytes

    def check(self) -> None:
        """The free counts agree with the block states."""
        for p in range(self.U):
            lo = p * self.bpp
            n_free = int((self.state[lo:lo + self.bpp] == FREE).sum())
            if n_free != self.free_count[p]:
                raise AssertionError(f"FTL: plane {p} free count {self.free_count[p]} "
                                     f"!= {n_free}")
