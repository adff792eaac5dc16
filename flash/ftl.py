"""A page-level flash translation layer: the FTL's functional state, without time.

What it models (after MQSim's ``Address_Mapping_Unit_Page_Level``, ``GC_and_WL_Unit_Page_Level``
and ``Flash_Block_Manager``):

- Logical-to-physical (L2P) and physical-to-logical (P2L) maps. A physical page is valid
  exactly when ``L2P[P2L[ppn]] == ppn``, so no separate validity bitmap is kept.
- Static plane allocation: logical page ``lpn`` lives in the plane at stripe position
  ``lpn % planes``, where stripe positions enumerate planes in ``allocation_order``
  (``CWDP``: channel fastest, then way, die, plane), so consecutive writes stripe over
  channels, dies and planes. Within a plane, pages are written at the write pointer of
  an active block; host writes and GC writes use separate active blocks.
- Per-block valid counts, erase counts, state (free, active, full, bad) and the write
  sequence of its last program (its age, for cost-benefit victim choice).
- Garbage collection per plane: greedy (fewest valid pages) or cost-benefit victims; the
  timing model asks for it under the soft threshold, and a host write that would take
  the plane under the hard threshold collects synchronously first.
- Dynamic wear levelling (open the least-worn free block) and static wear levelling
  (when a plane's erase-count spread exceeds ``static_wl_threshold``, relocate the
  coldest full block); bad-block retirement at ``pe_limit``; trim.
- Preconditioning: the first ``occupancy x logical pages`` written sequentially, then
  optionally aged by random overwrites (``age``) to the random-write steady state.

Memory grows with the pages a run touches, not with the device: the preconditioned
state is a closed form (page ``j`` of a plane holds its ``j``-th logical page) until a
part of it is modified. Scattered logical pages then go into a dict (about 100 bytes
each); a 4096-page L2P segment that gets dense becomes a numpy array (4 bytes a page);
P2L rows exist only for blocks written during the run (4 bytes a page). Dense per-block
arrays cost 21 bytes a block (2M blocks, 44 MB, for the 990pro preset).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from tmhw.sim import TmhwError

FREE, ACTIVE, FULL, BAD = 0, 1, 2, 3
SEG_BITS = 12
SEG = 1 << SEG_BITS
I64 = npt.NDArray[np.int64]


def _ascending(lpns: I64) -> bool:
    """Whether ``lpns`` are consecutive in order (a run), not a permutation of one."""
    return lpns.size < 2 or bool((np.diff(lpns) == 1).all())


@dataclass(slots=True)
class GcJob:
    """One reclaimed (or wear-levelled) block: what the timing model must charge.

    ``src``/``dst`` are the physical pages read and programmed to move the valid data,
    in order; the victim block is then erased (and retired when worn out)."""

    plane: int
    victim: int
    src: I64
    dst: I64
    retired: bool
    reason: str  # "gc" (background), "forced" (hard threshold) or "wl" (static WL)

    @property
    def moved(self) -> int:
        return int(self.src.size)


def stripe_planes(cfg: FlashConfig) -> I64:
    """Canonical plane id at each stripe position, for ``cfg.allocation_order``.

    Canonical ids nest channel > chip > die > plane:
    ``((ch * chips + chip) * dies + die) * planes + plane``."""
    radix = {"C": cfg.channels, "W": cfg.chips_per_channel, "D": cfg.dies_per_chip,
             "P": cfg.planes_per_die}
    digits: dict[str, I64] = {}
    s = np.arange(cfg.planes, dtype=np.int64)
    for letter in cfg.allocation_order:
        digits[letter] = s % radix[letter]
        s = s // radix[letter]
    return (((digits["C"] * cfg.chips_per_channel + digits["W"]) * cfg.dies_per_chip
             + digits["D"]) * cfg.planes_per_die + digits["P"])


class SparseL2P:
    """Logical-to-physical map: a closed form for the preconditioned range, a dict of
    overrides where writes are sparse, and dense 4096-entry numpy segments where they
    are not (a segment is materialised once it holds 1/16 of its pages in the dict,
    the point where the array becomes the smaller of the two)."""

    DENSE_AT = SEG // 16

    def __init__(self, ftl: FTL) -> None:
        self.ftl = ftl
        self.segs: list[npt.NDArray[np.signedinteger] | None] = (
            [None] * ((ftl.n_lpn + SEG - 1) // SEG))
        self.sparse: dict[int, int] = {}
        self.sparse_per_seg = np.zeros(len(self.segs), dtype=np.int32)

    def any_written(self) -> bool:
        return bool(self.sparse) or any(s is not None for s in self.segs)

    def get1(self, lpn: int) -> int:
        seg = self.segs[lpn >> SEG_BITS]
        if seg is not None:
            return int(seg[lpn & (SEG - 1)])
        v = self.sparse.get(lpn)
        return self.ftl._implicit_l2p1(lpn) if v is None else v

    def get(self, lpns: I64) -> I64:
        n = int(lpns.size)
        if n and int(lpns[-1]) - int(lpns[0]) == n - 1 and _ascending(lpns):
            return self._get_run(int(lpns[0]), n)
        out = self.ftl._implicit_l2p(lpns)
        segi = lpns >> SEG_BITS
        for si in np.unique(segi).tolist():
            seg = self.segs[si]
            if seg is not None:
                m = segi == si
                out[m] = seg[lpns[m] & (SEG - 1)]
            elif self.sparse_per_seg[si]:
                sp = self.sparse
                for i in np.flatnonzero(segi == si).tolist():
                    v = sp.get(int(lpns[i]))
                    if v is not None:
                        out[i] = v
        return out

    def _get_run(self, lo: int, n: int) -> I64:
        """``get`` of the contiguous run [lo, lo + n), by segment slices."""
        out = np.empty(n, dtype=np.int64)
        hi = lo + n
        a = lo
        while a < hi:
            si = a >> SEG_BITS
            b = min(hi, (si + 1) << SEG_BITS)
            seg = self.segs[si]
            if seg is not None:
                out[a - lo:b - lo] = seg[a - (si << SEG_BITS):b - (si << SEG_BITS)]
            else:
                out[a - lo:b - lo] = self.ftl._implicit_l2p(np.arange(a, b, dtype=np.int64))
                if self.sparse_per_seg[si]:
                    sp = self.sparse
                    for lpn in range(a, b):
                        v = sp.get(lpn)
                        if v is not None:
                            out[lpn - lo] = v
            a = b
        return out

    def set1(self, lpn: int, ppn: int) -> None:
        si = lpn >> SEG_BITS
        seg = self.segs[si]
        if seg is not None:
            seg[lpn & (SEG - 1)] = ppn
            return
        if lpn not in self.sparse:
            self.sparse_per_seg[si] += 1
            if self.sparse_per_seg[si] >= self.DENSE_AT:
                self._densify(si)[lpn & (SEG - 1)] = ppn
                return
        self.sparse[lpn] = ppn

    def set(self, lpns: I64, ppns: I64 | int) -> None:
        vals = np.broadcast_to(np.asarray(ppns, dtype=np.int64), lpns.shape)
        n = int(lpns.size)
        lo = int(lpns[0])
        # A run only if consecutive: lpns ordered by plane can span n pages end to end
        # without being in order.
        if n > self.DENSE_AT // 4 and int(lpns[-1]) - lo == n - 1 and _ascending(lpns):
            a = lo
            while a < lo + n:  # a contiguous run: segment slices
                si = a >> SEG_BITS
                b = min(lo + n, (si + 1) << SEG_BITS)
                self._densify(si)[a - (si << SEG_BITS):b - (si << SEG_BITS)] = vals[a - lo:b - lo]
                a = b
            return
        segi = lpns >> SEG_BITS
        s0 = int(segi[0])
        if s0 == int(segi[-1]) and (segi.size < 3 or bool((segi == s0).all())):
            self._set_seg(s0, lpns, vals)
            return
        for si in np.unique(segi).tolist():
            m = segi == si
            self._set_seg(si, lpns[m], vals[m])

    def _set_seg(self, si: int, lpns: I64, vals: I64) -> None:
        seg = self.segs[si]
        if seg is None and lpns.size < self.DENSE_AT // 4:
            for lpn, v in zip(lpns.tolist(), vals.tolist(), strict=True):
                self.set1(lpn, v)
            return
        self._densify(si)[lpns & (SEG - 1)] = vals

    def _densify(self, si: int) -> npt.NDArray[np.signedinteger]:
        seg = self.segs[si]
        if seg is None:
            ftl = self.ftl
            lo = si * SEG
            ids = np.arange(lo, min(lo + SEG, ftl.n_lpn), dtype=np.int64)
            seg = np.full(SEG, -1, dtype=ftl.ppn_dtype)
            seg[: ids.size] = ftl._implicit_l2p(ids)
            if self.sparse_per_seg[si]:
                for lpn in range(lo, lo + ids.size):
                    v = self.sparse.pop(lpn, None)
                    if v is not None:
                        seg[lpn - lo] = v
                self.sparse_per_seg[si] = 0
            self.segs[si] = seg
        return seg

    def nbytes(self) -> int:
        """numpy segments plus about 100 bytes per dict entry (key, value, slot)."""
        return sum(s.nbytes for s in self.segs if s is not None) + 100 * len(self.sparse)


class FTL:
    """Functional FTL state for one device. Pure: no time, no SimPy."""

    def __init__(self, cfg: FlashConfig) -> None:
        self.cfg = cfg
        self.U = cfg.planes
        self.ppb = cfg.pages_per_block
        self.bpp = cfg.blocks_per_plane
        self.n_lpn = cfg.logical_pages
        self.n_ppn = cfg.physical_pages
        self.ppn_dtype = np.int32 if self.n_ppn < 2**31 else np.int64
        self.lpn_dtype = np.int32 if self.n_lpn < 2**31 else np.int64
        self.stripe_plane = stripe_planes(cfg)
        self._stripe_plane_list: list[int] = self.stripe_plane.tolist()
        self.plane_stripe = np.empty(self.U, dtype=np.int64)
        self.plane_stripe[self.stripe_plane] = np.arange(self.U)
        nb = cfg.blocks
        self.valid = np.zeros(nb, dtype=np.int32)
        self.erases = np.zeros(nb, dtype=np.int32)
        self.state = np.zeros(nb, dtype=np.int8)
        self.stamp = np.zeros(nb, dtype=np.int64)
        # P2L rows live in a pool that grows with the blocks written during the run.
        self._row_of = np.full(nb, -1, dtype=np.int32)
        self._pool = np.empty((256, self.ppb), dtype=self.lpn_dtype)
        self._pool_used = 0
        self._free_rows: list[int] = []
        self.n_pre = 0  # logical pages [0, n_pre) hold preconditioned data (closed form)
        U = self.U
        self.host_blk = np.full(U, -1, dtype=np.int64)
        self.host_wp = np.zeros(U, dtype=np.int64)
        self.gc_blk = [-1] * U
        self.gc_wp = [0] * U
        self.fresh_next = [0] * U  # blocks [fresh_next, bpp) of a plane were never used
        self.free_heap: list[list[tuple[int, int]]] = [[] for _ in range(U)]
        self.free_count = [self.bpp] * U
        self._fifo = 0
        self.seq = 0
        self.soft_blocks = cfg.gc_soft_blocks
        self.hard_blocks = cfg.gc_hard_blocks
        #: Planes under the soft threshold (so a timing model need not scan them all).
        self.low_planes: set[int] = set()
        # counters
        self.host_pages = 0
        self.gc_pages = 0
        self.wl_pages = 0
        self.gc_count = 0
        self.forced_gc_count = 0
        self.wl_count = 0
        self.erase_count = 0
        self.bad_blocks = 0
        self.trimmed_pages = 0
        self.l2p = SparseL2P(self)

    # -- addressing --------------------------------------------------------------------
    def plane_of_lpn(self, lpn: int) -> int:
        return self._stripe_plane_list[lpn % self.U]

    def planes_of_lpns(self, lpns: I64) -> I64:
        return self.stripe_plane[lpns % self.U]

    def page_in_block(self, ppn: I64) -> I64:
        return ppn % self.ppb

    @property
    def waf(self) -> float:
        """Pages programmed per page the host wrote (1.0 before any write)."""
        if self.host_pages == 0:
            return 1.0
        return (self.host_pages + self.gc_pages + self.wl_pages) / self.host_pages

    # -- the preconditioned closed form ------------------------------------------------
    def _implicit_l2p(self, lpns: I64) -> I64:
        j = lpns // self.U
        plane = self.stripe_plane[lpns % self.U]
        ppn = (plane * self.bpp + j // self.ppb) * self.ppb + j % self.ppb
        return np.where(lpns < self.n_pre, ppn, -1)

    def _implicit_l2p1(self, lpn: int) -> int:
        if lpn >= self.n_pre:
            return -1
        j = lpn // self.U
        plane = self._stripe_plane_list[lpn % self.U]
        return (plane * self.bpp + j // self.ppb) * self.ppb + j % self.ppb

    def _implicit_p2l(self, block: int) -> I64:
        plane, b = divmod(block, self.bpp)
        j = b * self.ppb + np.arange(self.ppb, dtype=np.int64)
        lpn = j * self.U + int(self.plane_stripe[plane])
        return np.where(lpn < self.n_pre, lpn, -1)

    # -- L2P ---------------------------------------------------------------------------
    def lookup1(self, lpn: int) -> int:
        """Physical page of ``lpn`` or -1 when unmapped."""
        return self.l2p.get1(lpn)

    def lookup(self, lpns: I64) -> I64:
        """Physical pages of ``lpns`` (-1 where unmapped)."""
        return self.l2p.get(np.asarray(lpns, dtype=np.int64))

    def _l2p_set(self, lpns: I64, ppns: I64 | int) -> None:
        self.l2p.set(lpns, ppns)

    # -- P2L ---------------------------------------------------------------------------
    def p2l(self, block: int) -> I64:
        """Logical page written at each page of ``block`` (-1: erased), read-only."""
        r = int(self._row_of[block])
        if r >= 0:
            row: I64 = self._pool[r].astype(np.int64)
            return row
        if self._is_implicit(block):
            return self._implicit_p2l(block)
        return np.full(self.ppb, -1, dtype=np.int64)

    def _is_implicit(self, block: int) -> bool:
        """Still holds (part of) the preconditioned closed form: never erased, in use."""
        return self.n_pre > 0 and self.erases[block] == 0 and self.state[block] in (ACTIVE,
                                                                                    FULL)

    def _p2l_mut(self, block: int) -> npt.NDArray[np.signedinteger]:
        """The writable P2L row of ``block`` (a view: use it before the pool grows)."""
        r = self._row(block)  # first: it may grow (replace) the pool
        row: npt.NDArray[np.signedinteger] = self._pool[r]
        return row

    def _row(self, block: int) -> int:
        r: int = self._row_of.item(block)
        if r < 0:
            if self._free_rows:
                r = self._free_rows.pop()
            else:
                if self._pool_used == self._pool.shape[0]:
                    grown = np.empty((2 * self._pool_used, self.ppb), dtype=self.lpn_dtype)
                    grown[: self._pool_used] = self._pool
                    self._pool = grown
                r = self._pool_used
                self._pool_used += 1
            if self._is_implicit(block):
                self._pool[r] = self._implicit_p2l(block)
            else:
                self._pool[r] = -1
            self._row_of[block] = r
        return r

    def valid_pages(self, block: int) -> tuple[I64, I64]:
        """(ppns, lpns) of the valid pages of ``block``."""
        lp = self.p2l(block)
        ppns = block * self.ppb + np.arange(self.ppb, dtype=np.int64)
        written = lp >= 0
        ok = np.zeros(self.ppb, dtype=bool)
        if written.any():
            ok[written] = self.lookup(lp[written]) == ppns[written]
        return ppns[ok], lp[ok]

    # -- preconditioning ---------------------------------------------------------------
    def precondition(self, occupancy: float) -> None:
        """Fill the first ``occupancy`` of the logical space as if written sequentially
        (each plane's pages in order), on a fresh FTL. O(blocks), no per-page state."""
        if not 0.0 <= occupancy <= 1.0:
            raise TmhwError(f"precondition: occupancy {occupancy} must be in [0, 1]")
        if self.host_pages or self.n_pre or self.l2p.any_written():
            raise TmhwError("precondition: only a fresh FTL can be preconditioned")
        n = int(occupancy * self.n_lpn)
        if n == 0:
            return
        self.n_pre = n
        s = self.plane_stripe  # stripe position of each canonical plane
        count = np.maximum(0, (n - s + self.U - 1) // self.U)  # pages per plane
        full = count // self.ppb
        part = count % self.ppb
        local = np.arange(self.bpp, dtype=np.int64)[None, :]
        st = self.state.reshape(self.U, self.bpp)
        va = self.valid.reshape(self.U, self.bpp)
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
        self.fresh_next = used.tolist()
        self.free_count = (self.bpp - used).tolist()
        self.low_planes = {p for p, f in enumerate(self.free_count) if f < self.soft_blocks}

    def age(self, overwrites: float, seed: int = 0, batch: int = 512) -> None:
        """Overwrite ``overwrites`` x the preconditioned pages at random, page by page,
        with garbage collection, and no time: a random-write run then starts from the
        steady state (valid pages spread over blocks as GC leaves them) instead of from
        full blocks. Run counters start again from zero; wear stays."""
        if overwrites < 0:
            raise TmhwError(f"age: overwrites {overwrites} must be >= 0")
        span = self.n_pre
        total = int(overwrites * span)
        if total == 0:
            return
        rng = np.random.default_rng(seed)
        done = 0
        while done < total:
            k = min(batch, total - done)
            self.write(np.unique(rng.integers(0, span, k)))
            for p in sorted(self.low_planes):
                while self.free_count[p] < self.soft_blocks and self.collect(p):
                    pass
            done += k
        self.host_pages = self.gc_pages = self.wl_pages = 0
        self.gc_count = self.forced_gc_count = self.wl_count = self.erase_count = 0

    # -- allocation --------------------------------------------------------------------
    def _take_free(self, plane: int) -> int:
        heap = self.free_heap[plane]
        if self.fresh_next[plane] < self.bpp:
            # never-used blocks have no wear: the least worn there is
            blk = plane * self.bpp + self.fresh_next[plane]
            self.fresh_next[plane] += 1
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

    def _put_free(self, plane: int, blk: int) -> None:
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

    def _program(self, plane: int, lpns: I64, gc: bool, jobs: list[GcJob]) -> I64:
        """Program ``lpns`` (already unmapped) into ``plane``; return their ppns."""
        n = int(lpns.size)
        out = np.empty(n, dtype=np.int64)
        ppb = self.ppb
        i = 0
        while i < n:
            if gc:
                blk, wp = self.gc_blk[plane], self.gc_wp[plane]
            else:
                blk, wp = int(self.host_blk[plane]), int(self.host_wp[plane])
            if blk < 0:
                if not gc:
                    while self.free_count[plane] <= self.hard_blocks:
                        got = self.collect(plane, reason="forced")
                        if not got:
                            raise TmhwError(f"flash: plane {plane} is full and nothing is "
                                            f"reclaimable")
                        jobs.extend(got)
                blk, wp = self._take_free(plane), 0
            k = min(ppb - wp, n - i)
            row = self._p2l_mut(blk)
            if (row[wp:wp + k] != -1).any():
                raise AssertionError(f"FTL: program to a non-erased page in block {blk}")
            row[wp:wp + k] = lpns[i:i + k]
            out[i:i + k] = np.arange(blk * ppb + wp, blk * ppb + wp + k, dtype=np.int64)
            self.valid[blk] += k
            self.seq += k
            self.stamp[blk] = self.seq
            wp += k
            i += k
            if wp == ppb:
                self.state[blk] = FULL
                blk, wp = -1, 0
            if gc:
                self.gc_blk[plane], self.gc_wp[plane] = blk, wp
            else:
                self.host_blk[plane], self.host_wp[plane] = blk, wp
        self._l2p_set(lpns, out)
        return out

    def _program_planes(self, planes: I64, lpns: I64, jobs: list[GcJob]) -> I64:
        """Host-program ``lpns`` (already unmapped), grouped by plane (sorted, or each
        plane once). Planes whose active block has room go in one vectorised step; the
        rest page run by page run."""
        n = int(lpns.size)
        ppb = self.ppb
        out = np.empty(n, dtype=np.int64)
        edge = np.empty(n, dtype=bool)
        edge[0] = True
        np.not_equal(planes[1:], planes[:-1], out=edge[1:])
        first = np.flatnonzero(edge)
        uniq = planes[first]
        counts = np.diff(np.append(first, n))
        hb = self.host_blk[uniq]
        hw = self.host_wp[uniq]
        fits = (hb >= 0) & (hw + counts <= ppb)
        if fits.any():
            fb, fw, fc = hb[fits], hw[fits], counts[fits]
            for b in fb[self._row_of[fb] < 0].tolist():
                self._row(b)
            if uniq.size == n:  # one page per plane
                sel, blk_p, wp_p = fits, fb, fw
            else:
                sel = np.repeat(fits, counts)
                rank = np.arange(n, dtype=np.int64) - np.repeat(first, counts)
                blk_p = np.repeat(fb, fc)
                wp_p = np.repeat(fw, fc) + rank[sel]
            rows = self._row_of[blk_p]
            if (self._pool[rows, wp_p] != -1).any():
                raise AssertionError("FTL: program to a non-erased page")
            self._pool[rows, wp_p] = lpns[sel]
            ppns = blk_p * ppb + wp_p
            out[sel] = ppns
            self.valid[fb] += fc.astype(np.int32)
            self.seq += int(fc.sum())
            self.stamp[fb] = self.seq
            new_wp = fw + fc
            full = new_wp == ppb
            self.state[fb[full]] = FULL
            self.host_wp[uniq[fits]] = np.where(full, 0, new_wp)
            self.host_blk[uniq[fits]] = np.where(full, -1, fb)
            self._l2p_set(lpns[sel], ppns)
        for g in np.flatnonzero(~fits).tolist():
            a = int(first[g])
            b = a + int(counts[g])
            out[a:b] = self._program(int(uniq[g]), lpns[a:b], False, jobs)
        return out

    def _unmap(self, lpns: I64) -> int:
        """Invalidate the current mapping of ``lpns``; return how many were mapped."""
        old = self.lookup(lpns)
        m = old >= 0
        k = int(m.sum())
        if k:
            blocks = old[m] // self.ppb
            # (np.subtract.at is an order of magnitude slower than unique + counts)
            ub, cnt = np.unique(blocks, return_counts=True)
            self.valid[ub] -= cnt.astype(np.int32)
            self._l2p_set(lpns[m], -1)
        return k

    # -- host operations ---------------------------------------------------------------
    def write(self, lpns: I64) -> tuple[I64, list[GcJob]]:
        """Write distinct logical pages; returns their new ppns and the GC jobs that had
        to run synchronously (hard threshold) to make room."""
        lpns = np.asarray(lpns, dtype=np.int64)
        self._check_range(lpns)
        jobs: list[GcJob] = []
        out = np.empty(lpns.size, dtype=np.int64)
        if lpns.size == 0:
            return out, jobs
        self._unmap(lpns)
        planes = self.planes_of_lpns(lpns)
        n = int(lpns.size)
        if n == 1:
            out[:] = self._program(int(planes[0]), lpns, False, jobs)
        elif n <= self.U and int(lpns[-1]) - int(lpns[0]) == n - 1:
            # a contiguous run no longer than a stripe touches each plane once
            out[:] = self._program_planes(planes, lpns, jobs)
        else:
            order = np.argsort(planes, kind="stable")
            out[order] = self._program_planes(planes[order], lpns[order], jobs)
        self.host_pages += int(lpns.size)
        return out, jobs

    def write1(self, lpn: int) -> tuple[int, list[GcJob]]:
        """``write`` of one logical page, in scalar arithmetic (the common case of a
        random small write; numpy's per-call overhead would dominate it)."""
        if not 0 <= lpn < self.n_lpn:
            raise TmhwError(f"flash: logical page {lpn} out of range [0, {self.n_lpn})")
        jobs: list[GcJob] = []
        ppb = self.ppb
        old = self.l2p.get1(lpn)
        if old >= 0:
            self.valid[old // ppb] -= 1
        plane = self._stripe_plane_list[lpn % self.U]
        blk, wp = self.host_blk.item(plane), self.host_wp.item(plane)
        if blk < 0:
            if old >= 0:
                self.l2p.set1(lpn, -1)  # the old copy is dead: GC must not move it
            while self.free_count[plane] <= self.hard_blocks:
                got = self.collect(plane, reason="forced")
                if not got:
                    raise TmhwError(f"flash: plane {plane} is full and nothing is "
                                    f"reclaimable")
                jobs.extend(got)
            blk, wp = self._take_free(plane), 0
        r = self._row(blk)
        pool = self._pool
        if pool.item(r, wp) != -1:
            raise AssertionError(f"FTL: program to a non-erased page in block {blk}")
        pool[r, wp] = lpn
        ppn = blk * ppb + wp
        self.valid[blk] += 1
        self.seq += 1
        self.stamp[blk] = self.seq
        wp += 1
        if wp == ppb:
            self.state[blk] = FULL
            blk, wp = -1, 0
        self.host_blk[plane], self.host_wp[plane] = blk, wp
        self.l2p.set1(lpn, ppn)
        self.host_pages += 1
        return ppn, jobs

    def trim(self, lpns: I64) -> int:
        """Unmap logical pages; returns how many were mapped."""
        lpns = np.asarray(lpns, dtype=np.int64)
        self._check_range(lpns)
        if lpns.size == 0:
            return 0
        k = self._unmap(lpns)
        self.trimmed_pages += k
        return k

    def _check_range(self, lpns: I64) -> None:
        if lpns.size and (int(lpns.min()) < 0 or int(lpns.max()) >= self.n_lpn):
            raise TmhwError(f"flash: logical page out of range [0, {self.n_lpn})")

    # -- garbage collection and wear levelling -----------------------------------------
    def gc_level(self, plane: int) -> int:
        """0: enough free blocks; 1: under the soft threshold; 2: under the hard one."""
        f = self.free_count[plane]
        return 2 if f <= self.hard_blocks else (1 if f < self.soft_blocks else 0)

    def select_victim(self, plane: int) -> int:
        """Victim block in ``plane`` by the configured policy; -1 if none would free
        anything (every full block entirely valid)."""
        lo = plane * self.bpp
        st = self.state[lo:lo + self.bpp]
        va = self.valid[lo:lo + self.bpp]
        full = st == FULL
        if self.cfg.gc_policy == "greedy":
            cand = np.where(full, va, self.ppb)
            i = int(np.argmin(cand))
            return lo + i if cand[i] < self.ppb else -1
        u = va / self.ppb
        age = (self.seq - self.stamp[lo:lo + self.bpp] + 1).astype(np.float64)
        with np.errstate(divide="ignore"):
            score = np.where(full & (va < self.ppb), (1 - u) / (2 * u) * age, -1.0)
        i = int(np.argmax(score))
        return lo + i if score[i] >= 0 else -1

    def collect(self, plane: int, reason: str = "gc") -> list[GcJob]:
        """Reclaim one victim block of ``plane`` (plus a static wear-levelling move when
        the erase-count spread calls for one). Empty if nothing is reclaimable."""
        victim = self.select_victim(plane)
        if victim < 0:
            return []
        jobs = [self._relocate(plane, victim, reason)]
        if reason == "forced":
            self.forced_gc_count += 1
        self.gc_count += 1
        if self.cfg.static_wear_leveling:
            cold = self._static_wl_victim(plane)
            if cold >= 0:
                jobs.append(self._relocate(plane, cold, "wl"))
                self.wl_count += 1
        return jobs

    def _static_wl_victim(self, plane: int) -> int:
        lo = plane * self.bpp
        st = self.state[lo:lo + self.bpp]
        full = st == FULL
        if not full.any():
            return -1
        er = self.erases[lo:lo + self.bpp]
        cand = np.where(full, er, np.iinfo(np.int32).max)
        i = int(np.argmin(cand))
        if int(er[st != BAD].max()) - int(cand[i]) > self.cfg.static_wl_threshold:
            # A cold block only helps if the plane can absorb its pages.
            if self.free_count[plane] > 1:
                return lo + i
        return -1

    def _relocate(self, plane: int, victim: int, reason: str) -> GcJob:
        src, lpns = self.valid_pages(victim)
        jobs: list[GcJob] = []
        dst = np.empty(0, dtype=np.int64)
        if src.size:
            self.valid[victim] -= int(src.size)
            self._l2p_set(lpns, -1)
            dst = self._program(plane, lpns, True, jobs)
        if self.valid[victim] != 0:
            raise AssertionError(f"FTL: victim {victim} still has {self.valid[victim]} "
                                 f"valid pages")
        if reason == "wl":
            self.wl_pages += int(src.size)
        else:
            self.gc_pages += int(src.size)
        retired = self._erase(plane, victim)
        return GcJob(plane, victim, src, dst, retired, reason)

    def _erase(self, plane: int, blk: int) -> bool:
        r = int(self._row_of[blk])
        if r >= 0:
            self._free_rows.append(r)
            self._row_of[blk] = -1
        self.erases[blk] += 1
        self.erase_count += 1
        if self.erases[blk] >= self.cfg.pe_limit:
            self.state[blk] = BAD
            self.bad_blocks += 1
            return True
        self._put_free(plane, blk)
        return False

    # -- introspection -----------------------------------------------------------------
    def mapped_pages(self) -> int:
        return int(self.valid.sum())

    def state_bytes(self) -> int:
        """Bytes of numpy state held (per-block arrays, touched L2P segments, P2L rows)."""
        n = self.valid.nbytes + self.erases.nbytes + self.state.nbytes + self.stamp.nbytes
        n += self.l2p.nbytes()
        n += self._pool.nbytes + self._row_of.nbytes
        return n

    def check(self) -> None:
        """Full consistency check (materialises everything: small devices only)."""
        l2p = self.lookup(np.arange(self.n_lpn, dtype=np.int64))
        mapped = l2p[l2p >= 0]
        if np.unique(mapped).size != mapped.size:
            raise AssertionError("FTL: two logical pages map to one physical page")
        blocks = mapped // self.ppb
        counts = np.bincount(blocks, minlength=self.cfg.blocks)
        if not np.array_equal(counts, self.valid):
            raise AssertionError("FTL: valid counts disagree with the L2P map")
        if (self.state[blocks] == FREE).any() or (self.state[blocks] == BAD).any():
            raise AssertionError("FTL: a logical page maps into a free or bad block")
        lp_of = np.concatenate([self.p2l(b)[None, :] for b in range(self.cfg.blocks)])
        flat = lp_of.reshape(-1)
        if not np.array_equal(flat[mapped], np.nonzero(l2p >= 0)[0]):
            raise AssertionError("FTL: P2L disagrees with L2P")
        for p in range(self.U):
            lo = p * self.bpp
            st = self.state[lo:lo + self.bpp]
            n_free = int((st == FREE).sum())
            if n_free != self.free_count[p]:
                raise AssertionError(f"FTL: plane {p} free count {self.free_count[p]} "
                                     f"!= {n_free}")
