"""The least time the NAND dies of a flash tier need for a given amount of array work:
``nand_read_bytes`` read from the array and ``program_bytes`` programmed into it. A
lower bound on the device model (``flash.engine.dies``), whatever the order, the
striping or the host link; used by the iteration-time bounds (``tmhw.lower_bounds``).

With ``D = devices x dies`` dies of ``P`` planes and pages of ``page`` bytes, the
work is ``r = ceil(nand_read_bytes / page)`` page reads and ``w = ceil(program_bytes /
page)`` page programs (a read or program moves whole pages). On a die:

- a read holds the die for at least ``tR / P`` per page: a multi-plane read takes tR
  for up to ``P`` pages, and with independent plane reads a one-page read holds it for
  ``tR / P`` (``flash.engine.dies.plane_read``); tR is the fastest page type's;
- a program takes ``tPROG`` for up to ``P`` pages, one per plane (a multi-plane
  program); tPROG is the fastest page type's, or the SLC-mode ``t_prog_slc`` when the
  device has an SLC cache;
- a die reads or programs, not both: a read that finds a program running either waits
  for it or suspends it at the cost of the suspend latency on top, so the two add up at
  the least.

So over iterations that repeat, the dies are busy at least::

    (r x tR / P + w x tPROG / P) / D             the work spread evenly

an iteration (rounded up to a ps). Whole commands per die (``ceil(w / D)`` programs on
the busiest) bound one batch, not a steady state: a program may run on into the next
iteration while another die takes that iteration's, so an iteration that programs
fewer pages than the dies' planes can be shorter than one tPROG (TM-Training on a
one-layer GPT-2 of width 64, seq 64, batch 1 at 87.5% HBM on the quick preset writes 68
KiB an iteration and runs in 96 us, against the 150 us of one SLC program). Garbage
collection, erases, channel and link time only add to it.

**A steady state with an SLC cache.** Over iterations that repeat, the cache holds as
much at the end of one as at its start, so every page programmed in SLC mode is also
folded into TLC, which ``flash.slc`` does only while the device is idle, at its TLC
rate: ``tPROG_mean / P`` of idle time per page on one of its dies' worth. So a page
costs at least ``min(tSLC + tPROG_mean, tPROG_fastest) / P`` of a die's time or the
device's idle time, the fastest TLC page type's program where the cache is full.
``die_work_ps(..., unfolded=f)`` charges that to all but a fraction ``f`` of the
programs (what a cache may gain per iteration within the steady state's tolerance),
and those at tSLC; the spread term adds them up the same way. Pure: no SimPy.
"""

from __future__ import annotations

from flash.config import FlashConfig
from tmhw.sim.units import S


def fastest_t_r(cfg: FlashConfig) -> int:
    """The shortest page read of any page type, ps."""
    return min(cfg.t_r_page) if cfg.t_r_page else cfg.t_r


def fastest_t_prog(cfg: FlashConfig) -> int:
    """The shortest page program: SLC mode's with an SLC cache, else the fastest page
    type's, ps."""
    if cfg.slc_cache_bytes and cfg.t_prog_slc:
        return cfg.t_prog_slc
    return min(cfg.t_prog_page) if cfg.t_prog_page else cfg.t_prog


def program_bytes_per_s(cfg: FlashConfig) -> float:
    """Every die of every device programming all its planes back to back at the
    fastest tPROG: ``devices x dies x planes x page / tPROG``."""
    return cfg.devices * cfg.dies * cfg.planes_per_die * cfg.page_size * S \
        / fastest_t_prog(cfg)


def slowest_t_prog(cfg: FlashConfig) -> int:
    """The longest page program of any page type (or the SLC mode), ps."""
    return max(*cfg.t_prog_page, cfg.t_prog, cfg.t_prog_slc if cfg.slc_cache_bytes else 0)


def fastest_tlc_t_prog(cfg: FlashConfig) -> int:
    """The shortest page program in the cell's own mode (no SLC cache), ps."""
    return min(cfg.t_prog_page) if cfg.t_prog_page else cfg.t_prog


def die_work_ps(cfg: FlashConfig, nand_read_bytes: int, program_bytes: int,
                unfolded: float | None = None) -> int:
    """The least time in ps the flash tier ``cfg`` needs to read ``nand_read_bytes``
    from its arrays and program ``program_bytes`` (module docstring's formula);
    ``unfolded``: in a steady state, the largest fraction of the programs an SLC cache
    may keep without folding (None: not a steady state, every program may be SLC)."""
    if nand_read_bytes < 0 or program_bytes < 0:
        raise ValueError(f"die_work_ps: byte counts must be >= 0 (read "
                         f"{nand_read_bytes}, program {program_bytes})")
    dies = cfg.devices * cfg.dies
    planes, page = cfg.planes_per_die, cfg.page_size
    t_r, t_prog = fastest_t_r(cfg), fastest_t_prog(cfg)
    r = _ceil(nand_read_bytes, page)
    w = _ceil(program_bytes, page)
    spread = _ceil(r * t_r + w * t_prog, planes * dies)
    if unfolded is not None and cfg.slc_cache_bytes and cfg.t_prog_slc:
        t_steady = min(cfg.t_prog_slc + round(cfg.t_prog_mean), fastest_tlc_t_prog(cfg))
        u = min(w, _ceil(round(unfolded * 1e9) * w, 10**9))
        spread = _ceil(r * t_r + u * t_prog + (w - u) * t_steady, planes * dies)
    return spread


def _ceil(a: int, b: int) -> int:
    return -(-a // b)
