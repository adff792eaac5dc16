"""Garbage collection and wear levelling (after MQSim's ``GC_and_WL_Unit_Page_Level``).

- Garbage collection per plane: greedy (fewest valid pages) or cost-benefit victims
  among full blocks; the valid pages move to the plane's GC active block and the victim
  is erased. The timing model asks for it under the soft threshold, and a host write
  that would take the plane under the hard threshold collects synchronously first.
- Collection by die (``collect_die``, under ONFI rules with multi-plane commands): when
  a plane falls under the soft threshold, every plane of its die at or under the
  threshold gives a victim too, so that the die relocates them together as multi-plane
  reads and programs and erases them in one multi-plane erase (a controller cleans a
  die's planes as one unit, as it writes them). Each die cleans its own blocks; the
  others go on serving writes.
- Static wear levelling: when a plane's erase-count spread exceeds
  ``static_wl_threshold``, the coldest full block is relocated too, so its block can
  take hot data. (Dynamic wear levelling is the block manager's choice of free block.)

Each reclaimed block is reported as a ``GcJob``: what the timing model must charge.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from flash.ftl.blocks import BAD, FULL, BlockManager
from flash.ftl.mapping import I64, AddressMap
from tmhw.sim import TmhwError
from tmhw.sim.jit import Direct, njit_noref


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


class GarbageCollector:
    """Victim choice and relocation for one device.

    Collaborators: the ``BlockManager`` (block states, erase), the ``AddressMap`` (which
    pages of a victim are valid, their remapping) and ``program``, which programs
    unmapped logical pages into a plane's GC active block and returns their ppns."""

    def __init__(self, cfg: FlashConfig, blocks: BlockManager, amap: AddressMap,
                 program: Callable[[int, I64], I64]) -> None:
        self.cfg = cfg
        self.blocks = blocks
        self.amap = amap
        self.program = program
        self.ppb = cfg.pages_per_block
        self.bpp = cfg.blocks_per_plane
        #: planes collected together (``collect_die``): a die's, where its planes take
        #: multi-plane commands under ONFI rules; 1 (each plane alone) otherwise, as
        #: MQSim's GC unit does
        self.group = (cfg.planes_per_die if cfg.compat == "onfi" and cfg.multiplane
                      else 1)
        self.gc_pages = 0
        self.wl_pages = 0
        self.gc_count = 0
        self.forced_gc_count = 0
        self.wl_count = 0

    def reset_counters(self) -> None:
        self.gc_pages = self.wl_pages = 0
        self.gc_count = self.forced_gc_count = self.wl_count = 0

    def gc_level(self, plane: int) -> int:
        """0: enough free blocks; 1: under the soft threshold; 2: under the hard one."""
        b = self.blocks
        f = b.free_count[plane]
        return 2 if f <= b.hard_blocks else (1 if f < b.soft_blocks else 0)

    def select_victim(self, plane: int) -> int:
        """Victim block in ``plane`` by the configured policy; -1 if none would free
        anything (every full block entirely valid)."""
        b = self.blocks
        return int(_GC_VICTIM.call(b.state, b.valid, b.stamp, plane * self.bpp, self.bpp,
                                   self.ppb, b.seq, self.cfg.gc_policy == "greedy"))

    def collect(self, plane: int, reason: str = "gc") -> list[GcJob]:
        """Reclaim one victim block of ``plane`` (plus a static wear-levelling move when
        the erase-count spread calls for one). Empty if nothing is reclaimable."""
        victim = self.select_victim(plane)
        if victim < 0:
            return []
        jobs = [self.relocate(plane, victim, reason)]
        if reason == "forced":
            self.forced_gc_count += 1
        self.gc_count += 1
        if self.cfg.static_wear_leveling:
            cold = self.static_wl_victim(plane)
            if cold >= 0:
                jobs.append(self.relocate(plane, cold, "wl"))
                self.wl_count += 1
        return jobs

    def collect_die(self, plane: int) -> list[GcJob]:
        """``collect`` of ``plane`` (under the soft threshold), then of each other plane
        of its die at or under the soft threshold (module docstring); empty if ``plane``
        has nothing reclaimable."""
        jobs = self.collect(plane)
        if not jobs or self.group == 1:
            return jobs
        fc = self.blocks.free_count
        soft = self.blocks.soft_blocks
        lo = plane - plane % self.group
        for q in range(lo, lo + self.group):
            if q != plane and fc[q] <= soft:
                jobs += self.collect(q)
        return jobs

    def make_room(self, plane: int, jobs: list[GcJob]) -> None:
        """Forced GC before a host write opens a block of ``plane``: collect while the
        plane is at the hard threshold, appending the jobs to ``jobs``."""
        b = self.blocks
        while b.free_count[plane] <= b.hard_blocks:
            got = self.collect(plane, reason="forced")
            if not got:
                raise TmhwError(f"flash: plane {plane} is full and nothing is reclaimable")
            jobs.extend(got)

    def static_wl_victim(self, plane: int) -> int:
        """The coldest full block of ``plane`` when the erase-count spread exceeds the
        threshold (and the plane can absorb its pages); else -1."""
        b = self.blocks
        return int(_WL_VICTIM.call(b.state, b.erases, plane * self.bpp, self.bpp,
                                   self.cfg.static_wl_threshold, b.free_count[plane]))

    def relocate(self, plane: int, victim: int, reason: str) -> GcJob:
        """Move the valid pages of ``victim`` to the GC active block, then erase it."""
        src, lpns = self.amap.valid_pages(victim)
        valid = self.blocks.valid
        dst = np.empty(0, dtype=np.int64)
        if src.size:
            valid[victim] -= int(src.size)
            self.amap.l2p.set(lpns, -1)
            dst = self.program(plane, lpns)
        if valid[victim] != 0:
            raise AssertionError(f"FTL: victim {victim} still has {valid[victim]} "
                                 f"valid pages")
        if reason == "wl":
            self.wl_pages += int(src.size)
        else:
            self.gc_pages += int(src.size)
        self.amap.release_row(victim)
        retired = self.blocks.erase(plane, victim)
        return GcJob(plane, victim, src, dst, retired, reason)


def die_rows(jobs: list[GcJob]) -> tuple[list[tuple[list[int], list[int]]], list[int]]:
    """The victims of one die's planes (``collect_die``) as multi-plane commands: per
    plane that moves pages, in plane order, the (source, destination) pages it moves;
    and per erase command, the planes it erases (a plane with two victims, one
    collected and one wear-levelled, takes two). Step ``i`` of the relocation reads
    the ``i``-th page of each plane that has one in one multi-plane read, and programs
    them in one multi-plane program."""
    src: dict[int, list[int]] = {}
    dst: dict[int, list[int]] = {}
    victims: dict[int, int] = {}
    for job in jobs:
        src.setdefault(job.plane, []).extend(job.src.tolist())
        dst.setdefault(job.plane, []).extend(job.dst.tolist())
        victims[job.plane] = victims.get(job.plane, 0) + 1
    rows = [(src[p], dst[p]) for p in sorted(src) if src[p]]
    most = max(victims.values(), default=0)
    erases = [sum(1 for n in victims.values() if n > j) for j in range(most)]
    return rows, erases


def step_planes(rows: list[tuple[list[int], list[int]]]) -> list[int]:
    """Per relocation step of ``die_rows``' rows, how many planes it reads and programs."""
    most = max((len(s) for s, _ in rows), default=0)
    return [sum(1 for s, _ in rows if len(s) > i) for i in range(most)]


def greedy_write_amplification(alpha: float) -> float:
    """Steady-state write amplification of greedy garbage collection under uniform
    random page writes, with ``alpha`` = physical pages in the written pool / logical
    pages (> 1): alpha / (alpha + W0(-alpha e^-alpha)), W0 the principal branch of
    Lambert's W (L. Xiang and B. M. Kurkoski, "An improved analytic expression for
    write amplification in NAND flash", ICNC 2012, arXiv:1110.4245: 2.36 at an
    over-provisioning factor of 0.3, alpha = 1.3, against 2.35 simulated; the same
    expression as Desnoyers' for LRU cleaning, "Analytic modeling of SSD write
    performance", SYSTOR 2012). As alpha -> 1 it grows as 1 / (2 (1 - 1 / alpha)),
    Agarwal and Marrow's (1 + rho) / (2 rho) with rho = alpha - 1."""
    if not alpha > 1.0:
        raise ValueError(f"alpha: {alpha} must exceed 1 (more physical than logical pages)")
    x = -alpha * math.exp(-alpha)
    lo, hi = -1.0, 0.0  # w e^w is increasing on [-1, 0], from -1/e to 0
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid * math.exp(mid) < x:
            lo = mid
        else:
            hi = mid
    return alpha / (alpha + (lo + hi) / 2)


@njit_noref
def gc_victim(state: npt.NDArray[np.int8], valid: npt.NDArray[np.int32], stamp: I64,
              lo: int, bpp: int, ppb: int, seq: int, greedy: bool) -> int:
    """``GarbageCollector.select_victim`` compiled: among the full blocks of the plane's
    ``bpp`` from ``lo``, greedy the first with the fewest valid pages (none when every
    one is all valid), else cost-benefit the first with the highest ``(1 - u) / 2u x
    age`` (u: valid fraction, age: write sequences since its stamp + 1) of those not all
    valid, an empty block first (u = 0: infinite); -1 if none."""
    best = -1
    if greedy:
        low = ppb
        for i in range(bpp):
            if state[lo + i] == FULL and valid[lo + i] < low:
                low = valid[lo + i]
                best = i
        return lo + best if best >= 0 else -1
    top = -1.0
    for i in range(bpp):
        va = valid[lo + i]
        if state[lo + i] != FULL or va >= ppb:
            continue
        u = va / ppb
        age = float(seq - stamp[lo + i] + 1)
        # (numpy's (1 - u) / (2u) x age, with 1 / 0 = inf; age >= 1)
        score = math.inf if u == 0.0 else (1.0 - u) / (2.0 * u) * age
        if score > top:
            top = score
            best = i
    return lo + best if best >= 0 else -1


@njit_noref
def wl_victim(state: npt.NDArray[np.int8], erases: npt.NDArray[np.int32], lo: int,
              bpp: int, threshold: int, free: int) -> int:
    """``GarbageCollector.static_wl_victim`` compiled: the first full block of the plane's
    ``bpp`` from ``lo`` with the fewest erases, when the plane's erase-count spread
    (over its blocks not retired) exceeds ``threshold`` and it has ``free`` > 1 free
    blocks to absorb its pages; else -1."""
    cold = -1
    most = -1
    for i in range(bpp):
        st = state[lo + i]
        if st != BAD and erases[lo + i] > most:
            most = erases[lo + i]
        if st == FULL and (cold < 0 or erases[lo + i] < erases[lo + cold]):
            cold = i
    if cold < 0 or most - erases[lo + cold] <= threshold or free <= 1:
        return -1
    return lo + cold


#: the victim searches past their dispatcher (``tmhw.sim.jit.Direct``): one call per
#: block a collection moves
_GC_VICTIM = Direct(gc_victim)
_WL_VICTIM = Direct(wl_victim)
