"""A page-level flash translation layer: the FTL's functional state, without time.

The ``FTL`` (after MQSim's ``FTL`` with its page-level units) is composed of one object
per MQSim layer, each in its own module and each holding its collaborators explicitly:

- ``blocks.BlockManager`` (``Flash_Block_Manager``): block states, valid and erase
  counts, free pools with dynamic wear levelling, active blocks and write pointers,
  erase and bad-block retirement;
- ``mapping.AddressMap`` (``Address_Mapping_Unit_Page_Level``): plane striping, the L2P
  and P2L maps and the closed form of the preconditioned state (reads the block states);
- ``program.Programmer`` (the unit's page allocation for user and GC writes): programs
  pages at the write pointers and records them in the maps;
- ``gc.GarbageCollector`` (``GC_and_WL_Unit_Page_Level``): greedy or cost-benefit
  garbage collection and static wear levelling, each reclaimed block a ``GcJob``.

The ``FTL`` itself is the host side: writes (collecting synchronously first when a plane
is at the hard GC threshold), reads (lookups), trims, and preconditioning: the first
``occupancy x logical pages`` written sequentially, then optionally aged by random
overwrites (``age``) to the random-write steady state. Memory grows with the pages a
run touches, not with the device (see ``mapping``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from flash.ftl.blocks import ACTIVE, BAD, FREE, FULL, BlockManager
from flash.ftl.gc import GarbageCollector, GcJob
from flash.ftl.kernels import (
    DONE,
    GEOMETRY,
    NEEDS_BLOCKS,
    NEEDS_ROWS,
    NOT_ERASED,
    PLACED,
    Blocks,
    Fresh,
    L2p,
    drop_old,
    place_run,
    write_open,
    write_run,
)
from flash.ftl.mapping import I64, SEG, SEG_BITS, AddressMap, SparseL2P, _ascending, stripe_planes
from flash.ftl.program import Programmer
from tmhw.sim import TmhwError
from tmhw.sim.jit import Directs

__all__ = ["ACTIVE", "BAD", "FREE", "FTL", "FULL", "I64", "SEG", "SEG_BITS", "AddressMap",
           "BlockManager", "GarbageCollector", "GcJob", "PlacementOnlyError", "Programmer",
           "SparseL2P", "stripe_planes"]


#: what places a run in the place of ``kernels.write_run`` (``FTL.write_run_by``): its
#: arguments, then the answer
RunCall = Callable[..., int]

#: ``kernels.write_run`` past its dispatcher (``tmhw.sim.jit.Directs``, by the maps' dtypes)
_WRITE_RUN = Directs(write_run)


class PlacementOnlyError(TmhwError):
    """A write that ``FTL.place_only`` cannot place as the whole FTL would."""


class FTL:
    """Functional FTL state for one device. Pure: no time, no SimPy.

    Its layers are ``blocks``, ``mapping``, ``gc`` and ``programmer``; the GC moves
    pages through the programmer, which calls back into the GC for forced collection.
    The layers' arrays and per-plane lists (``valid``, ``erases``, ``state``, ``stamp``,
    ``free_count``, ``fresh_next``, ``low_planes``, ``l2p``) are also attributes here:
    the same objects, which the layers never rebind. Their counters are read-only
    properties."""

    def __init__(self, cfg: FlashConfig) -> None:
        self.cfg = cfg
        self.blocks = b = BlockManager(cfg)
        self.mapping = m = AddressMap(cfg, b)
        self.gc = g = GarbageCollector(cfg, b, m, self._program_gc)
        self.programmer = Programmer(b, m, g.make_room)
        self.U = m.U
        self.ppb = m.ppb
        self.bpp = m.bpp
        self.n_lpn = m.n_lpn
        self.n_ppn = m.n_ppn
        self.ppn_dtype = m.ppn_dtype
        self.lpn_dtype = m.lpn_dtype
        self._run_direct = _WRITE_RUN.get(m.dtypes)
        self.stripe_plane = m.stripe_plane
        self._stripe_plane_list = m.stripe_plane_list
        self.plane_stripe = m.plane_stripe
        self.l2p = m.l2p
        self.valid = b.valid
        self.erases = b.erases
        self.state = b.state
        self.stamp = b.stamp
        self.free_count = b.free_count
        self.fresh_next = b.fresh_next
        #: Planes under the soft threshold (so a timing model need not scan them all).
        self.low_planes = b.low_planes
        self.soft_blocks = b.soft_blocks
        self.hard_blocks = b.hard_blocks
        self.host_pages = 0
        self.trimmed_pages = 0
        # ``_write_run``'s blocks opened per plane (-1: none), and planes or blocks the
        # kernel asks for
        self._opened = np.full(self.U, -1, dtype=np.int64)
        #: the geometry record the kernels take (``kernels.GEOMETRY``)
        self.geo: npt.NDArray[np.void] = np.array(
            [(self.n_lpn, m.n_pre, self.U, self.ppb, SEG_BITS, self.l2p.DENSE_AT, self.bpp,
              b.soft_blocks, b.hard_blocks)],
            dtype=GEOMETRY)
        self._need = np.zeros(self.U + 1, dtype=np.int64)
        #: the stripe's planes twice over and each plane's stripe position (``write_run``)
        self._stripes = (m.stripe_plane2, m.plane_stripe)
        #: ``write1``'s page, and its ``write_open``'s ppn, dict page and counts
        self._one = np.zeros(1, dtype=np.int64)
        self._one_out = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
                         np.zeros(2, dtype=np.int64))
        #: ``place_only``: each plane's next ppn and its blocks opened (None: writes
        #: are mapped)
        self._placing: tuple[I64, I64] | None = None

    # -- the layers' scalars -----------------------------------------------------------
    @property
    def n_pre(self) -> int:
        """Logical pages [0, n_pre) hold preconditioned data."""
        return self.mapping.n_pre

    @property
    def seq(self) -> int:
        return self.blocks.seq

    @property
    def erase_count(self) -> int:
        return self.blocks.erase_count

    @property
    def bad_blocks(self) -> int:
        return self.blocks.bad_blocks

    @property
    def gc_pages(self) -> int:
        return self.gc.gc_pages

    @property
    def wl_pages(self) -> int:
        return self.gc.wl_pages

    @property
    def gc_count(self) -> int:
        return self.gc.gc_count

    @property
    def forced_gc_count(self) -> int:
        return self.gc.forced_gc_count

    @property
    def wl_count(self) -> int:
        return self.gc.wl_count

    @property
    def waf(self) -> float:
        """Pages programmed per page the host wrote (1.0 before any write)."""
        if self.host_pages == 0:
            return 1.0
        return (self.host_pages + self.gc.gc_pages + self.gc.wl_pages) / self.host_pages

    # -- addressing and reads ----------------------------------------------------------
    def plane_of_lpn(self, lpn: int) -> int:
        return self._stripe_plane_list[lpn % self.U]

    def planes_of_lpns(self, lpns: I64) -> I64:
        return self.stripe_plane[lpns % self.U]

    def page_in_block(self, ppn: I64) -> I64:
        return ppn % self.ppb

    def static_ppn(self, lpns: I64) -> I64:
        """Where unwritten logical pages would sit: their preconditioned location."""
        return self.mapping.static_ppn(lpns)

    def static_ppn1(self, lpn: int) -> int:
        """``static_ppn`` of one logical page."""
        return self.mapping.static_ppn1(lpn)

    def lookup1(self, lpn: int) -> int:
        """Physical page of ``lpn`` or -1 when unmapped."""
        return self.l2p.get1(lpn)

    def lookup(self, lpns: I64) -> I64:
        """Physical pages of ``lpns`` (-1 where unmapped)."""
        return self.l2p.get(np.asarray(lpns, dtype=np.int64))

    def read_run(self, lo: int, out: I64) -> int:
        """Where a read of the logical pages [lo, lo + out.size) finds them: each one's
        physical page, or where an unmapped one sits in the preconditioned layout
        (``static_ppn``), into ``out`` (compiled, ``SparseL2P.read_run``); how many were
        unmapped."""
        if lo < 0 or lo + out.size > self.n_lpn:
            raise TmhwError(f"flash: logical page out of range [0, {self.n_lpn})")
        return self.l2p.read_run(lo, out)

    def p2l(self, block: int) -> I64:
        """Logical page written at each page of ``block`` (-1: erased), read-only."""
        return self.mapping.p2l(block)

    def valid_pages(self, block: int) -> tuple[I64, I64]:
        """(ppns, lpns) of the valid pages of ``block``."""
        return self.mapping.valid_pages(block)

    # -- garbage collection ------------------------------------------------------------
    def gc_level(self, plane: int) -> int:
        """0: enough free blocks; 1: under the soft threshold; 2: under the hard one."""
        return self.gc.gc_level(plane)

    def select_victim(self, plane: int) -> int:
        """Victim block in ``plane`` by the configured policy (-1: none)."""
        return self.gc.select_victim(plane)

    def collect(self, plane: int, reason: str = "gc") -> list[GcJob]:
        """Reclaim one victim block of ``plane`` (plus a static wear-levelling move when
        the erase-count spread calls for one). Empty if nothing is reclaimable."""
        return self.gc.collect(plane, reason)

    def collect_die(self, plane: int) -> list[GcJob]:
        """``collect`` of ``plane`` and of the planes of its die at or under the soft
        threshold, relocated together (``GarbageCollector.collect_die``)."""
        return self.gc.collect_die(plane)

    def _program_gc(self, plane: int, lpns: I64) -> I64:
        return self.programmer.program_gc(plane, lpns)

    # (the block manager's allocation, under the names tests used on the one-class FTL)
    def _take_free(self, plane: int) -> int:
        return self.blocks.take_free(plane)

    def _put_free(self, plane: int, blk: int) -> None:
        self.blocks.put_free(plane, blk)

    # -- preconditioning ---------------------------------------------------------------
    def precondition(self, occupancy: float) -> None:
        """Fill the first ``occupancy`` of the logical space as if written sequentially
        (each plane's pages in order), on a fresh FTL. O(blocks), no per-page state."""
        if not 0.0 <= occupancy <= 1.0:
            raise TmhwError(f"precondition: occupancy {occupancy} must be in [0, 1]")
        if self.host_pages or self.mapping.n_pre or self.l2p.any_written():
            raise TmhwError("precondition: only a fresh FTL can be preconditioned")
        n = int(occupancy * self.n_lpn)
        if n == 0:
            return
        self.blocks.fill(self.mapping.precondition(n))
        self.geo[0]["n_pre"] = self.mapping.n_pre

    def age(self, overwrites: float, seed: int = 0, batch: int = 512) -> None:
        """Overwrite ``overwrites`` x the preconditioned pages at random, page by page,
        with garbage collection, and no time: a random-write run then starts from the
        steady state (valid pages spread over blocks as GC leaves them) instead of from
        full blocks. Run counters start again from zero; wear stays."""
        if overwrites < 0:
            raise TmhwError(f"age: overwrites {overwrites} must be >= 0")
        span = self.mapping.n_pre
        total = int(overwrites * span)
        if total == 0:
            return
        rng = np.random.default_rng(seed)
        done = 0
        while done < total:
            k = min(batch, total - done)
            self.write(np.unique(rng.integers(0, span, k)))
            for p in sorted(self.low_planes):
                while self.free_count[p] < self.soft_blocks and self.gc.collect_die(p):
                    pass
            done += k
        self.host_pages = 0
        self.gc.reset_counters()
        self.blocks.erase_count = 0

    # -- placement only ----------------------------------------------------------------
    def place_only(self) -> None:
        """From here on, a write (``write_range``, ``write1``) only places its pages: the
        ppns it returns are those the whole FTL would give, but the maps, the blocks'
        valid counts, stamps and states are left as they are. For a device whose writes
        are timed and then thrown away (``flash.batch``: hundreds of GB of sequential
        writes, whose maps would cost most of its time and memory).

        It holds while no block is collected: no plane has an erased block to reuse,
        and none falls under the soft GC threshold. Then each plane opens its blocks
        in order (``BlockManager.take_free``'s never-used ones), so its pages go to
        consecutive ppns from its active block's write pointer (``precondition`` fills
        each plane's blocks in order), whatever they overwrite: invalidating an old copy
        changes a valid count, not where a page goes. A device's over-provisioning
        keeps it so for any writes of up to its logical capacity. A write that would
        collect raises ``PlacementOnlyError`` (the device's state is then undefined),
        so no answer differs from the whole FTL's; a write of pages in any order or a
        trim raises too."""
        b = self.blocks
        ppb, bpp = self.ppb, self.bpp
        nxt = np.empty(self.U, dtype=np.int64)
        for p in range(self.U):
            if b.free_heap[p] or b.free_count[p] != bpp - b.fresh_next[p]:
                raise PlacementOnlyError(f"plane {p} has reused blocks")
            blk = int(b.host_blk[p])
            if blk >= 0 and blk != p * bpp + b.fresh_next[p] - 1:
                raise PlacementOnlyError(f"plane {p}'s active block is not its newest")
            nxt[p] = (blk * ppb + int(b.host_wp[p]) if blk >= 0
                      else (p * bpp + b.fresh_next[p]) * ppb)
        # (the blocks opened per plane, then room for the planes a write opens some in)
        self._placing = (nxt, np.concatenate([b.fresh_next, np.zeros(self.U, np.int64)]))

    def _place(self, lo: int, hi: int) -> I64:
        """``place_only``'s placement of the run [lo, hi): each plane's pages of the run
        in order at its next ppns (page ``i`` of the run is the ``i // U``-th of its
        stripe position's); the planes' write pointers, fresh blocks and free counts
        advance as the whole FTL's would."""
        if lo < 0 or hi > self.n_lpn:
            raise TmhwError(f"flash: logical page out of range [0, {self.n_lpn})")
        placing = self._placing
        assert placing is not None
        n = hi - lo
        out = np.empty(n, dtype=np.int64)
        b = self.blocks
        grew = place_run(lo, self.stripe_plane, self.ppb, self.bpp, placing,
                         (b.host_blk, b.host_wp), out)
        if grew:
            used = placing[1]
            for p in used[self.U:self.U + grew].tolist():
                blocks = int(used[p])
                b.free_count[p] -= blocks - b.fresh_next[p]
                b.fresh_next[p] = blocks
                if b.free_count[p] < b.soft_blocks:
                    raise PlacementOnlyError(f"plane {p} falls under the soft GC threshold")
        b.seq += n
        self.host_pages += n
        return out

    # -- host operations ---------------------------------------------------------------
    def write(self, lpns: I64) -> tuple[I64, list[GcJob]]:
        """Write distinct logical pages; returns their new ppns and the GC jobs that had
        to run synchronously (hard threshold) to make room."""
        if self._placing is not None:
            raise PlacementOnlyError("write of pages in any order")
        lpns = np.asarray(lpns, dtype=np.int64)
        n = int(lpns.size)
        if ((n > SparseL2P.DENSE_AT // 4 or 1 < n <= self.U)
                and int(lpns[-1]) - int(lpns[0]) == n - 1 and _ascending(lpns)):
            run = self._write_run(int(lpns[0]), n)
            if run is not None:
                return run, []
        return self._write_pages(lpns)

    def write_range(self, lo: int, hi: int) -> tuple[I64, list[GcJob]]:
        """``write`` of the logical pages [lo, hi): a run by construction, so none of
        ``write``'s checks that its pages are one."""
        if self._placing is not None:
            return self._place(lo, hi), []
        n = hi - lo
        if n >= self.U * self.ppb:
            # at least a block per plane: one vectorised program, where no plane must
            # collect (``Programmer.program_long``)
            if lo < 0 or hi > self.n_lpn:
                raise TmhwError(f"flash: logical page out of range [0, {self.n_lpn})")
            long = self.programmer.program_long(lo, hi, lambda: self._unmap_run(lo, n))
            if long is not None:
                self.host_pages += n
                return long, []
        if n > SparseL2P.DENSE_AT // 4 or 1 < n <= self.U:
            run = self._write_run(lo, n)
            if run is not None:
                return run, []
        return self._write_pages(np.arange(lo, hi, dtype=np.int64))

    def _write_pages(self, lpns: I64) -> tuple[I64, list[GcJob]]:
        """``write`` page by page into their planes, opening blocks (and collecting)
        where they must."""
        n = int(lpns.size)
        self._check_range(lpns)
        jobs: list[GcJob] = []
        out = np.empty(lpns.size, dtype=np.int64)
        if lpns.size == 0:
            return out, jobs
        self._unmap(lpns)
        planes = self.stripe_plane[lpns % self.U]
        if n == 1:
            out[:] = self.programmer.program(int(planes[0]), lpns, False, jobs)
        elif n <= self.U and int(lpns[-1]) - int(lpns[0]) == n - 1:
            # a contiguous run no longer than a stripe touches each plane once
            out[:] = self.programmer.program_planes(planes, lpns, jobs)
        else:
            order = np.argsort(planes, kind="stable")
            out[order] = self.programmer.program_planes(planes[order], lpns[order], jobs)
        self.host_pages += int(lpns.size)
        return out, jobs

    def write_run_by(self, lo: int, n: int, call: RunCall) -> I64 | None:
        """``_write_run`` with ``call`` in the place of ``kernels.write_run``: a kernel
        that takes its arguments first, places the run as it does, and books more after
        it (``flash.runs``). The pages placed, or None (nothing placed)."""
        return self._write_run(lo, n, call)

    def _write_run(self, lo: int, n: int, call: RunCall | None = None) -> I64 | None:
        """``write`` of the run of ``n`` pages from ``lo`` (more than
        ``DENSE_AT // 4`` pages or at most a stripe of two or more) where no plane must
        collect, compiled (``kernels.write_run``): the blocks it must open are opened
        first, in the order the general path opens them. None (nothing done) otherwise.

        The L2P map of a run touching a segment that is not dense is set here as
        ``write`` sets it (``SparseL2P.set``; ``write`` first marks its old copies -1 so
        that forced GC cannot move them, and with no GC the second setting of the same
        pages leaves the state one setting gives: the same pages enter the segment's
        dict, so it turns dense at the same count, with the same values; a run of at
        most ``DENSE_AT // 4`` pages, ``set_by_segment`` or ``set``, is taken by each
        segment it touches as ``set`` takes a segment's pages)."""
        if lo < 0 or lo + n > self.n_lpn:
            raise TmhwError(f"flash: logical page out of range [0, {self.n_lpn})")
        b = self.blocks
        m = self.mapping
        out = np.empty(n, dtype=np.int64)
        opened, need = self._opened, self._need
        io = (opened, need, out)
        got = self._run_kernel(lo, n, io, call)
        if got == NEEDS_ROWS:
            for blk in need[1:1 + int(need[0])].tolist():
                m.row(blk)
            got = self._run_kernel(lo, n, io, call)
        if got == NEEDS_BLOCKS:
            planes = need[1:1 + int(need[0])].tolist()
            if any(b.free_count[p] <= b.hard_blocks for p in planes):
                return None  # a plane must collect first: the general path
            for p in planes:
                blk = b.take_free(p)
                m.row(blk)
                opened[p] = blk
            got = self._run_kernel(lo, n, io, call)
            opened[planes] = -1
        if got == NOT_ERASED:
            raise AssertionError("FTL: program to a non-erased page")
        if got == PLACED:
            self.map_placed(lo, out)
        elif got != DONE:
            return None
        self.count_run(n)
        return out

    def runs_first(self, n: int) -> bool:
        """Whether ``write_range`` of ``n`` pages tries ``kernels.write_run`` first (and
        the general path only where it declines): not placement only, less than a
        block per plane, and more than ``DENSE_AT // 4`` pages or at most a stripe of
        two or more."""
        return (self._placing is None and n < self.U * self.ppb
                and (n > SparseL2P.DENSE_AT // 4 or 1 < n <= self.U))

    def run_state(self) -> tuple[npt.NDArray[np.void], tuple[I64, I64], L2p, Blocks, Fresh,
                                 I64, I64]:
        """``kernels.write_run``'s arguments but the run, the write sequence and the
        ppns' row, for a kernel that calls it (``flash.pages``): the geometry, the
        stripe, the L2P, the blocks and the free ones (rebound as they grow: taken
        again after any other write), the blocks opened per plane (none between calls)
        and the needs' row."""
        return (self.geo, self._stripes, self._l2p_state(), self._block_state(),
                self._fresh_state(), self._opened, self._need)

    def map_placed(self, lo: int, out: I64) -> None:
        """The L2P map of a run ``kernels.write_run`` placed at ``out`` from ``lo`` and
        left to the caller (``PLACED``: a segment of it is not dense), set as ``write``
        sets it (``_write_run``)."""
        l2p = self.l2p
        n = int(out.size)
        if n > self.U:
            old = l2p.get_run(lo, n)
            if bool((old >= 0).any()):
                l2p.set(lo + np.flatnonzero(old >= 0), -1)
            l2p.set_by_segment(lo, out)
        elif n > SparseL2P.DENSE_AT // 4:
            l2p.set_run(lo, out)  # what ``set`` does with a run this long
        else:  # what ``set`` does with a run this short: each segment decides by
            l2p.set_by_segment(lo, out)  # its own count, the run's part too short

    def count_run(self, n: int) -> None:
        """A run of ``n`` pages written by ``kernels.write_run``: the write sequence and
        the host's pages advance."""
        self.blocks.seq += n
        self.host_pages += n

    def _run_kernel(self, lo: int, n: int, io: tuple[I64, I64, I64],
                    call: RunCall | None = None) -> int:
        """``kernels.write_run`` (or ``call``, ``write_run_by``) of the run of ``n``
        pages from ``lo`` on the maps and blocks as they are now (the P2L rows are
        rebound as they grow)."""
        b, m = self.blocks, self.mapping
        # (``_fresh_state``, inline: one Python call fewer a run)
        got: int = (call or self._run_direct.call)(
            lo, n, self.geo, self._stripes, self._l2p_state(), self._block_state(),
            (b.fresh_next, b.free_count, m.rows, m.free_rows), b.seq, io)
        return got

    def _l2p_state(self) -> L2p:
        """The L2P as the kernels take it (``kernels.L2p``; rebound as it grows)."""
        l2p = self.l2p
        seg_row, rows = l2p.arrays()
        return l2p.sparse.table, l2p.sparse.meta, self.mapping.plane_base, seg_row, rows

    def _fresh_state(self) -> Fresh:
        """The free blocks and P2L rows as ``kernels.open_fresh`` takes them (the rows
        given back rebound as they grow)."""
        b, m = self.blocks, self.mapping
        return b.fresh_next, b.free_count, m.rows, m.free_rows

    def _block_state(self) -> Blocks:
        """The blocks as the kernels take them (``kernels.Blocks``; the P2L rows
        rebound as they grow)."""
        b, m = self.blocks, self.mapping
        return b.host_blk, b.host_wp, m.row1_of, m.pool, self.valid, self.stamp, self.state

    def write1(self, lpn: int) -> tuple[int, list[GcJob]]:
        """``write`` of one logical page (``kernels.write_open``), collecting first
        where its plane must open a block at the hard threshold."""
        if not 0 <= lpn < self.n_lpn:
            raise TmhwError(f"flash: logical page {lpn} out of range [0, {self.n_lpn})")
        if self._placing is not None:
            return self._place(lpn, lpn + 1).item(0), []
        jobs: list[GcJob] = []
        one = self._one
        one[0] = lpn
        ppns, _ = self._write_open(one, [lpn], jobs)
        return ppns.item(0), jobs

    def write_many(self, lpns: I64, keys: list[int]) -> tuple[I64, int]:
        """``write1`` of each of ``lpns`` (``keys``: the same as a list) in turn (a
        page may repeat), for as long as no page needs a collection: where a plane must
        open a block, it opens it here if that needs no forced collection and leaves
        the plane above the soft threshold. The ppns of the first ``m`` pages, and
        ``m`` (the next page needs ``write1``: a collection, a page out of range, or a
        target page not erased, which ``write1`` raises)."""
        if self._placing is not None:
            raise PlacementOnlyError("write of pages one by one, in any order")
        return self._write_open(lpns, keys, None)

    def _write_open(self, lpns: I64, keys: list[int],
                    jobs: list[GcJob] | None) -> tuple[I64, int]:
        """``kernels.write_open`` of ``lpns`` in turn; where it stops, the block the
        page's plane must open is opened (and the P2L row made): with ``jobs``, after
        a forced collection if the plane is at the hard threshold (the page's old copy
        invalidated first: GC must not move it), and a page out of range or a target
        page not erased raise; without, these end the writes (and a plane that would
        fall under the soft threshold). The ppns written, and how many."""
        n = int(lpns.size)
        if jobs is not None:  # (``write1``: three arrays made once)
            out, sparse, res = self._one_out
            res[:] = 0
        else:
            out = np.empty(n, dtype=np.int64)
            sparse = np.empty(n, dtype=np.int64)
            res = np.zeros(2, dtype=np.int64)
        b = self.blocks
        m = self.mapping
        seq = np.zeros(1, dtype=np.int64)
        l2 = self.l2p
        sp = l2.sparse
        sp.reserve(n)
        base = m.plane_base
        outs = (out, l2.sparse_per_seg, sparse, res)
        k = 0
        while True:  # (a collection and the P2L rows rebind what the kernel takes)
            seq[0] = b.seq
            k = int(write_open(lpns, self.geo, self.stripe_plane,
                               (sp.table, sp.meta, base, l2.seg_row, l2.pool),
                               (b.host_blk, b.host_wp, m.row1_of, m.pool, self.valid,
                                self.stamp, self.state), seq, outs, k))
            b.seq = seq.item(0)
            if k == n or (jobs is None and not 0 <= keys[k] < self.n_lpn):
                break
            plane = self._stripe_plane_list[keys[k] % self.U]
            blk = b.host_blk.item(plane)
            if blk < 0:
                if jobs is None:
                    free = b.free_count[plane]
                    if free <= b.hard_blocks or free - 1 < b.soft_blocks:
                        break  # a collection now, or soon in the background
                else:
                    old = l2.get1(keys[k])
                    if old >= 0:  # the old copy is dead: GC must not move it
                        self.valid[old // self.ppb] -= 1
                        l2.set1(keys[k], -1)
                    self.gc.make_room(plane, jobs)
                    sp.reserve(n - k)
                blk = b.take_free(plane)
                b.host_blk[plane], b.host_wp[plane] = blk, 0
            elif m.row1_of.item(blk):  # the page at the write pointer is not erased
                if jobs is None:
                    break
                raise AssertionError(f"FTL: program to a non-erased page in block {blk}")
            m.row(blk)  # its P2L row (the pool may grow)
        self.host_pages += k
        if res[1]:  # a sparse segment's dict reached ``DENSE_AT`` entries
            l2.densify_reached(sparse[:int(res[0])])
        return out[:k], k

    def trim(self, lpns: I64) -> int:
        """Unmap logical pages; returns how many were mapped."""
        if self._placing is not None:
            raise PlacementOnlyError("trim")
        lpns = np.asarray(lpns, dtype=np.int64)
        self._check_range(lpns)
        if lpns.size == 0:
            return 0
        k = self._unmap(lpns)
        self.trimmed_pages += k
        return k

    def trim_range(self, lo: int, hi: int) -> int:
        """``trim`` of the logical pages [lo, hi), by their bounds (``_unmap_run``: the
        run's old copies read per L2P segment, not page by page)."""
        if self._placing is not None:
            raise PlacementOnlyError("trim")
        if hi <= lo:
            return 0
        if lo < 0 or hi > self.n_lpn:
            raise TmhwError(f"flash: logical page out of range [0, {self.n_lpn})")
        k = self._unmap_run(lo, hi - lo)
        self.trimmed_pages += k
        return k

    def _check_range(self, lpns: I64) -> None:
        if lpns.size and (int(lpns.min()) < 0 or int(lpns.max()) >= self.n_lpn):
            raise TmhwError(f"flash: logical page out of range [0, {self.n_lpn})")

    def _unmap(self, lpns: I64) -> int:
        """Invalidate the current mapping of ``lpns``; return how many were mapped."""
        old = self.l2p.get(lpns)
        k = drop_old(self.valid, old, self.ppb)
        if k:
            self.l2p.set(lpns[old >= 0], -1)
        return k

    #: ``_unmap_run`` reads a long run's old copies in pieces of this many logical pages
    #: (whole L2P segments): its temporaries stay a few MB whatever the run's length
    UNMAP_PIECE = 32 * SEG

    def _unmap_run(self, lo: int, n: int) -> int:
        """``_unmap`` of the run [lo, lo + n), a piece at a time (no temporary the
        size of the run: a drained batch bound is 15.8M pages on the GPT-3 blocks)."""
        k = 0
        piece = self.UNMAP_PIECE
        for a in range(lo, lo + n, piece):
            k += drop_old(self.valid, self.l2p.get_run(a, min(piece, lo + n - a)), self.ppb)
        if k == n and n > SparseL2P.DENSE_AT // 4:  # ``set`` of a run: all dense
            self.l2p.unmap_run(lo, n)
        elif k:
            self.l2p.set(np.flatnonzero(self.l2p.get_run(lo, n) >= 0) + lo, -1)
        return k


    # -- introspection -----------------------------------------------------------------
    def mapped_pages(self) -> int:
        return int(self.valid.sum())

    def state_bytes(self) -> int:
        """Bytes of numpy state held (per-block arrays, touched L2P segments, P2L rows)."""
        return self.blocks.nbytes() + self.mapping.nbytes()

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
        self.blocks.check()
