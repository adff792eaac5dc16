"""The least NAND array work of one steady-state iteration: the fewest pages any policy
must read from the NAND arrays (not from the SSD's DRAM) and the fewest it must
program, at a given HBM capacity. They feed the time bound's die term
(``tmhw.lower_bounds``, ``flash.work.die_work_ps``).

Both are LPs over the gaps of ``tmhw.placement.gaps``, with the rows of the traffic
bound (``tmhw.placement.bounds``: per gap ``x_g`` pages out over it, one cover row per
op), each with one kind of cost only:

- **NAND reads**, at capacity ``C + M``, ``M`` the pages the SSDs' DRAM holds at most
  (write buffer and read cache of every device). At the start of any op, of the data
  live across it at most ``C`` pages are in HBM and at most ``M`` in the SSDs' DRAM;
  the rest is on NAND alone, and a page on NAND alone comes back only by a NAND read
  (the write buffer takes pages from HBM only, the read cache only from NAND reads).
  So if ``x_g`` counts, per gap, the most pages of it on NAND alone at any op it
  covers, the covers satisfy ``cover >= base - C - M`` and every such page not next
  overwritten whole (``pure_write``) costs a NAND read: the LP minimises the fetches
  under those rows. A write-back re-read while still in the write buffer costs no NAND
  read, and this bound lets every policy have as many of those as the buffer can hold
  at once, however it turns over.
- **Programs**, at capacity ``C``: every write-back is programmed (the write buffer
  flushes each page it takes), and the fewest written pages are the traffic bound's
  write epochs (``w_e >= x_g`` per epoch) with fetches free.

Each is the LP relaxation's optimum (a lower bound over integral plans too), in pages;
a policy moves at least these however it trades reads against writes, as each holds
over every plan, not only over the traffic bound's cheapest one. Numpy and HiGHS only
(``tmhw.placement.lp``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tmhw.placement.bounds import _cover, _lp_rows, write_epochs
from tmhw.placement.lp import linprog

if TYPE_CHECKING:
    from tmhw.placement.gaps import GapPlan

KINDS = ("nand_reads", "programs")


def least_pages(gp: GapPlan, capacity_pages: int, kind: str) -> float:
    """The LP optimum, in pages per steady-state iteration, of ``kind`` (``nand_reads``:
    fetches, with ``capacity_pages`` counting the SSDs' DRAM too; ``programs``: write
    epochs) over every plan that fits ``capacity_pages`` at every op, the mini-batch
    movable (module docstring)."""
    if kind not in KINDS:
        raise ValueError(f"least_pages: kind {kind!r}; one of {KINDS}")
    n, ng = gp.n, len(gp.gaps)
    if n == 0 or ng == 0:
        return 0.0
    ga, gb = gp.ga, gp.gb
    tens = np.array([g.tensor for g in gp.gaps], dtype=np.int64)
    pure = np.array([g.pure_write for g in gp.gaps], dtype=bool)
    var = np.flatnonzero(gb - ga >= 2)
    gav, gbv = ga[var], gb[var]
    vp = gp.pages[tens][var]
    most = _cover(gav, gbv, n, vp)
    need = np.asarray(gp._base, dtype=np.int64) - int(capacity_pages)
    rhs = np.minimum(need, most)
    active = np.flatnonzero(rhs > 0)
    if not len(active):
        return 0.0
    costly = ~pure[var]
    nv = len(var)
    if kind == "nand_reads":
        cost = costly.astype(np.float64)
        sv = np.zeros(0, dtype=np.int64)
        wcol = np.zeros(0, dtype=np.int64)
        epoch_pages = np.zeros(0, dtype=np.int64)
    else:
        epoch, _, _ = write_epochs(gp, inputs=True)
        ve = epoch[var]
        in_ep = costly & (ve >= 0)
        members = np.bincount(ve[in_ep], minlength=1)
        shared = np.zeros(nv, dtype=bool)
        shared[in_ep] = members[ve[in_ep]] >= 2
        cost = (in_ep & ~shared).astype(np.float64)   # alone in its epoch: its write
        eps = np.unique(ve[shared])
        wcol = np.searchsorted(eps, ve[shared])
        sv = np.flatnonzero(shared)
        epoch_pages = np.zeros(len(eps), dtype=np.int64)
        epoch_pages[wcol] = vp[shared]
    ne = len(epoch_pages)
    a_eq, a_ub = _lp_rows(gav, gbv, n, sv, wcol, ne)
    ylo = np.zeros(n)
    ylo[active] = rhs[active]
    lb = np.concatenate((np.zeros(nv + ne), ylo))
    ub = np.concatenate((vp, epoch_pages, np.full(n, np.inf)))
    lp = linprog(np.concatenate((cost, np.ones(ne), np.zeros(n))), a_ub=a_ub,
                 b_ub=None if a_ub is None else np.zeros(a_ub.shape[0]), a_eq=a_eq,
                 b_eq=np.zeros(n), bounds=np.column_stack((lb, ub)), method="highs-ds",
                 devex=True)  # (its value alone is read: any optimal vertex will do)
    if lp.status != 0:
        raise RuntimeError(f"NAND work bound LP ({kind}): {lp.message}")
    return max(0.0, float(lp.fun))
