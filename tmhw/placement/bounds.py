"""Lower bounds on one steady-state training iteration out of tiered memory: the fewest
bytes any placement policy must move between HBM and flash at a given HBM capacity, and
the shortest time the iteration can then take.

Traffic: an LP over the gaps. The gap model (``tmhw.placement.gaps``) splits each
tensor's life into gaps between consecutive accesses (a persistent tensor also has the
gap that wraps into the next iteration). A policy that has a page out of HBM for part of
a gap pays as much as one that has it out for the whole gap, and frees less, so it is
enough to decide, per gap ``g``, how many pages ``x_g`` of its tensor leave HBM over it
(0..pages; pages of one tensor are interchangeable). HBM capacity is then one covering
constraint per op ``o``::

    base[o] - sum(x_g for gaps g with a_g < o < b_g, wrap gaps folded) <= capacity

where ``base`` is the pages live during each op when nothing is evicted
(``GapPlan._base``). Each variable covers an interval of ops (a circular one for a wrap
gap): the rows are those of an interval matrix, with an entry per gap per op it covers,
which grows with the square of the layers (15.7M entries on eight GPT-3 blocks). The LP
HiGHS gets instead has one more variable per op, its cover ``y_o`` (the sum above), tied
to the gaps by differences: from one op to the next the cover gains the gaps that start
there and loses those that ended (``_lp_rows``), an entry or two per gap and per op, and
the capacity constraint becomes the bound ``y_o >= base[o] - capacity``. The two LPs
have the same solutions in ``x``; HiGHS solves this one in well under a second on the
zoo's models (0.03 s on BERT-large, where the interval matrix took 0.6 s). The
mini-batch never moves (the system keeps it resident), and a gap with ``b - a == 1``
holds no op, so both stay at 0.

Costs, at page granularity (a policy cannot do better page by page):

- a fetch of ``x_g`` pages before the access at ``b``, unless that access overwrites the
  tensor without reading it (``pure_write``): dead data costs nothing, neither a fetch nor
  a write-back;
- write-backs by *write epoch*. An epoch of a tensor starts at an access that writes it
  and runs until the next access that writes it; flash holds a valid copy of a page once
  it has been written back in that epoch, so only the first eviction of a page in an
  epoch writes it. Whatever pages each gap evicts, the pages written back in an epoch are
  at least ``max x_g`` over its gaps (the union of the evicted sets is at least as large
  as the largest of them), and evicting each time the tensor's tail pages (nested sets)
  meets that exactly; the fetches and the capacity depend only on the counts. So the
  epoch costs ``w_e >= x_g`` for each of its gaps, with ``w_e`` minimised. A persistent
  tensor's accesses are cyclic in steady state: the epoch opened by its last write of the
  iteration runs on through the wrap gap to its first write of the next, and so
  includes the gaps before that first write. A persistent tensor that no op writes has no
  epoch: flash always holds it and its evictions cost only fetches.

Objective: ``page_size x (sum of fetched pages + sum_e w_e)``. An epoch with one
evictable gap needs no ``w_e`` (the gap costs a fetch and a write per page); one with
several gets ``w_e`` and rows ``x_g - w_e <= 0``. With integral ``x`` the solution is a
plan, and its cost is what that plan moves, page by page. The LP relaxation is solved
first (dual simplex, so its solution is a vertex); it is a valid lower bound in any case
(``TrafficBound.relaxed_bytes``) and, on most zoo models and capacities, already
integral, hence optimal among integral plans too. Wrap gaps make the interval rows
circular, which is not totally unimodular, so a fractional vertex is possible (a test
builds one, and BERT-base at 25% lands on one); then the problem is solved again on
the interval rows themselves, as an LP (BERT-base's lands on an integral vertex there)
and else as a MILP with integral ``x`` (each ``w_e`` is integral at the optimum
anyway). The MILP is slower than the LP, which is why it is not the first resort. If
it does not finish within ``node_limit`` branch-and-bound nodes (a budget of work, not
of wall time, so the result never depends on how busy the machine is), the relaxation
is rounded up (which keeps every capacity row satisfied) and ``integral`` is False.

An op whose own operands, the mini-batch and every tensor that cannot leave (accessed at
that op) exceed the capacity cannot be brought under it by any policy; its constraint is
relaxed to evicting everything evictable there, and it is counted in ``overfull_ops``.

Zero-cost evictions (over a gap ending in a pure write) are kept only as far as some
op's capacity needs them: after solving, every gap gives back the pages that no op it
covers needs, costly gaps first and free ones last; this never raises the cost, and
after rounding it takes back what the rounding added where it can.

Why it is a lower bound: it ignores time. Pages are assumed to arrive exactly when their
op starts and to leave the moment their previous access ends, so it needs no HBM for
prefetches in flight or write-backs draining, never stalls on bandwidth, and knows the
whole iteration in advance. It ignores the first iteration (weights start on flash) and
recomputation (no data is ever rebuilt instead of fetched). Any static or dynamic
policy that moves whole pages between the two tiers moves at least this much per
steady-state iteration.

Time: ``time_bound_ps`` is the largest of the NPU's time with every operand in HBM (the
``hbm-only`` time, from the NPU and HBM models), the link's time for the minimum traffic
(full duplex: each direction at its own bandwidth) and the flash device's time to serve
it as one ideally ordered batch with every write programmed (``flash.batch``, drained:
in a steady state each iteration's writes are programmed within an iteration on
average). ``phase_bound_ps`` adds when data can move: writes forced before an op and
reads forced after it cannot overlap, and are programmed before it but for the write
buffers' content (``System.bounds`` takes the larger; NAND reads and programs over the
whole iteration are ``tmhw.placement.nand_bound``'s).

Numpy and HiGHS only (``tmhw.placement.lp``); no simulation. HiGHS is imported when a
bound is solved, not with the module, so importing the policies (the config does, for
their parameters) stays light; scipy only where an LP's vertex is fractional and the
MILP runs (``milp``).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from tmhw.placement.lp import LpResult, Sparse, linprog, stack
from tmhw.sim.memo import memoised

if TYPE_CHECKING:
    from tmhw.placement.gaps import GapPlan

#: Picoseconds per second (``tmhw.sim.units.S``; not imported, to keep SimPy out).
_S = 10**12
#: A relaxed value within this of an integer counts as that integer.
_TOL = 1e-6
#: ``_milp``'s programs solved in this process, by their every number, the oldest
#: dropped first past ``_MILP_KEEP``: a planner that plans again at the same capacity
#: (TM-Training's plan rounds and its monitor's trials, the tuned trials of a point)
#: asks the same program, whose branch and bound may take seconds (Qwen2-7B, one
#: layer, seq 128, at 25% HBM: 1.6-1.8 s, three times in a run); HiGHS gives the same
#: program the same answer, so the one kept is the one it would give
_MILP_SOLVED: dict[bytes, tuple[int, np.ndarray | None]] = {}
_MILP_KEEP = 16
#: held while ``_MILP_SOLVED`` is read or changed (the bounds' thread solves beside
#: the planner: ``tmhw.lower_bounds``)
_MILP_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True, eq=False)
class TrafficBound:
    """The fewest inter-tier bytes of one steady-state iteration at a capacity, and an
    eviction plan (per gap of the ``GapPlan``) that moves exactly that many."""

    read_bytes: int            # flash -> HBM: fetches
    write_bytes: int           # HBM -> flash: write-backs
    total_bytes: int
    #: per gap (index into ``GapPlan.gaps``): pages out of HBM over the gap
    evicted_pages: np.ndarray
    #: per gap: pages its eviction writes back (the rest are dropped: dead or clean)
    written_pages: np.ndarray
    #: ops whose unevictable pages alone exceed the capacity (constraint relaxed)
    overfull_ops: int
    #: the plan is a proven optimal integral solution (else the rounded relaxation)
    integral: bool
    #: per gap: pages fetched back for the access that ends it (0 over a pure write)
    fetched_pages: np.ndarray
    #: the LP relaxation's optimum in bytes: a lower bound in every case
    relaxed_bytes: float
    capacity_pages: int
    solve_s: float


def write_epochs(gp: GapPlan, inputs: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """Per gap: the id of the write epoch it lies in (-1: the tensor has none, so flash
    always holds it) and its position in that epoch (0 for the gap right after the
    write that opens it); and the number of epochs. Gap ``j`` of a tensor follows its
    access ``j``; a persistent tensor's epochs are cyclic (see the module docstring).
    With ``inputs``, the mini-batch, which arrives in HBM as the iteration starts (flash
    has no copy), is one epoch opened then."""
    ng = len(gp.gaps)
    epoch = np.full(ng, -1, dtype=np.int64)
    pos = np.zeros(ng, dtype=np.int64)
    count = 0
    for t, gis in enumerate(gp.of_tensor):
        if not gis:
            continue
        if gp.is_input[t]:
            if inputs:
                epoch[gis] = count
                pos[gis] = np.arange(len(gis))
                count += 1
            continue
        uses = gp.uses[t]
        k = len(uses)
        ids: dict[int, int] = {}
        opened = -1
        last = max((j for j, (_, w) in enumerate(uses) if w), default=-1)
        if last < 0:
            continue                      # never written: flash always holds it
        for j, gi in enumerate(gis):
            if uses[j][1]:
                opened = j
            s = opened if opened >= 0 else (last if gp.persistent[t] else -1)
            if s < 0:
                continue                  # read before any write (Workload.check forbids)
            if s not in ids:
                ids[s] = count
                count += 1
            epoch[gi] = ids[s]
            pos[gi] = (j - s) % k
    return epoch, pos, count


def _covered_ops(ga: np.ndarray, gb: np.ndarray, n: int,
                 dtype: type[np.signedinteger] = np.int64) -> tuple[np.ndarray, np.ndarray]:
    """(op, column) pairs: column j covers ops ga[j]+1 .. gb[j]-1, folded onto one
    iteration; column by column, each column's ops in unrolled order."""
    lens = np.maximum(gb - ga - 1, 0)
    total = int(lens.sum())
    cols = np.repeat(np.arange(len(ga), dtype=dtype), lens)
    rows = np.arange(total, dtype=dtype)
    rows -= np.repeat((np.cumsum(lens) - lens - ga - 1).astype(dtype), lens)
    rows %= max(n, 1)
    return rows, cols


def _cover(ga: np.ndarray, gb: np.ndarray, n: int, w: np.ndarray) -> np.ndarray:
    """Per op, the sum of ``w[j]`` over the columns j that cover it (ops ga[j]+1 ..
    gb[j]-1): the interval matrix times ``w``, in integers, from one difference array
    over the unrolled ops, folded onto one iteration."""
    w = np.asarray(w, dtype=np.int64)
    keep = gb - ga >= 2
    span = int(gb[keep].max(initial=0)) + 1
    d = np.zeros(span + 1, dtype=np.int64)
    np.add.at(d, ga[keep] + 1, w[keep])
    np.add.at(d, gb[keep], -w[keep])
    c = np.cumsum(d[:span])
    m = max(n, 1)
    c = np.concatenate((c, np.zeros(-len(c) % m, dtype=np.int64)))
    out: np.ndarray = c.reshape(-1, m).sum(axis=0)[:n]
    return out


def _lp_matrix(ga: np.ndarray, gb: np.ndarray, n: int, active: np.ndarray,
               sv: np.ndarray, wcol: np.ndarray, ne: int) -> Sparse:
    """The LP's constraint rows, in CSR: minus the interval matrix's rows ``active``
    (an op's capacity), then one row ``x[sv[i]] - w[wcol[i]] <= 0`` per gap in a shared
    epoch. Built straight from the covered (op, column) pairs of the active ops, kept
    as 32-bit indices where they fit: nothing the size of the whole interval matrix
    besides the result (on eight GPT-3 blocks it has 15.7M entries)."""
    nv = len(ga)
    total = int(np.maximum(gb - ga - 1, 0).sum())
    small = max(2 * n, nv + ne, len(active) + len(sv), total + 2 * len(sv)) < 2**31
    it: type[np.signedinteger] = np.int32 if small else np.int64
    rows, cols = _covered_ops(ga, gb, n, it)
    row_of = np.full(max(n, 1), -1, dtype=it)
    row_of[active] = np.arange(len(active), dtype=it)
    rows = row_of[rows]
    keep = rows >= 0
    rows, cols = rows[keep], cols[keep]
    del keep
    k = np.arange(len(sv), dtype=it) + len(active)
    rows = np.concatenate((rows, k, k))
    cols = np.concatenate((cols, sv.astype(it), (nv + wcol).astype(it)))
    data = np.concatenate((np.full(len(rows) - 2 * len(sv), -1.0), np.ones(len(sv)),
                           -np.ones(len(sv))))
    return Sparse.coo(data, rows, cols, (len(active) + len(sv), nv + ne))


def _lp_rows(ga: np.ndarray, gb: np.ndarray, n: int, sv: np.ndarray, wcol: np.ndarray,
             ne: int) -> tuple[Sparse, Sparse | None]:
    """The LP's constraint rows over the variables x (gaps), w (epochs) and y (ops):
    ``(A_eq, A_ub)`` with ``A_eq @ v == 0`` and ``A_ub @ v <= 0``, in O(gaps + ops)
    entries. ``y[i]`` is op i's cover, the pages out of HBM over it (its capacity row
    becomes the bound ``y[i] >= rhs[i]``). Column j covers the unrolled ops ga[j]+1 ..
    gb[j]-1 folded onto one iteration, so from op i-1 to op i the cover gains the gaps
    that start at i and loses those that ended at i-1 (cyclically), and op 0's cover is
    written out (a gap may cover it more than once when it spans iterations):
    ``y[0] = sum_j cnt_j x[j]`` and ``y[i] - y[i-1] = sum(x starting at i) - sum(x
    ending before i)``. The interval matrix itself has an entry per gap per op it
    covers: 15.7M on eight GPT-3 blocks, where these rows have 23k. The epoch rows are
    ``x[sv[k]] - w[wcol[k]] <= 0`` (None: no epoch has two gaps)."""
    nv = len(ga)
    m = max(n, 1)
    first = (ga + 1) % m
    lens = np.maximum(gb - ga - 1, 0)
    after = (first + lens) % m            # the op just past the gap's last
    moves = lens % m != 0                  # whole iterations cover every op alike
    on0 = (ga + lens) // m - ga // m       # unrolled ops ga+1 .. gb-1 that fall on op 0
    y = nv + ne
    cols = np.arange(nv, dtype=np.int64)
    c0 = np.flatnonzero(on0)
    i = np.arange(1, n, dtype=np.int64)
    up = np.flatnonzero(moves & (first > 0))
    down = np.flatnonzero(moves & (after > 0))
    rows = np.concatenate((np.zeros(1 + c0.size, dtype=np.int64), i, i, first[up],
                           after[down]))
    idx = np.concatenate(([y], cols[c0], y + i, y + i - 1, cols[up], cols[down]))
    val = np.concatenate(([1.0], -on0[c0].astype(np.float64), np.ones(n - 1),
                          -np.ones(n - 1), -np.ones(up.size), np.ones(down.size)))
    a_eq = Sparse.coo(val, rows, idx, (n, y + n))
    if not len(sv):
        return a_eq, None
    k = np.arange(len(sv), dtype=np.int64)
    a_ub = Sparse.coo(np.concatenate((np.ones(len(sv)), -np.ones(len(sv)))),
                      np.concatenate((k, k)), np.concatenate((sv, nv + wcol)),
                      (len(sv), y + n))
    return a_eq, a_ub


def traffic_bound(gp: GapPlan, capacity_pages: int, *, node_limit: int = 20000,
                  prefer: np.ndarray | None = None,
                  movable_input: bool = False,
                  simplex_columns: int | None = None) -> TrafficBound:
    """The fewest bytes any policy moves between the tiers in one steady-state
    iteration of ``gp``'s workload with ``capacity_pages`` pages of HBM, and a per-gap
    plan that moves exactly that (module docstring). ``node_limit`` bounds the MILP,
    which runs only when the LP relaxation is fractional. ``prefer`` (per gap) picks,
    among the plans that move the fewest bytes, one that maximises the sum of
    ``prefer x pages evicted`` (a second LP with the traffic held at its minimum); a
    planner passes each gap's duration, so that data leaves over the longest gaps,
    where its fetch has the most time to hide. Used only where its rounded solution
    moves no more than the first. ``movable_input``: the mini-batch may leave HBM too
    (written back, as flash has no copy, and fetched again), as the executor lets any
    policy do; planners that keep it resident leave this off, and a lower bound over
    every policy turns it on. ``simplex_columns``: the second LP is solved by the dual
    simplex up to this many columns and by the interior point method (with a crossover
    to a vertex) above (``TMTrainingParams.simplex_columns``), and by the simplex where
    that fails; None: always the simplex."""
    t0 = time.perf_counter()
    n, ps, ng = gp.n, gp.ps, len(gp.gaps)
    ga, gb = gp.ga, gp.gb
    tens = np.array([g.tensor for g in gp.gaps], dtype=np.int64)
    pure = np.array([g.pure_write for g in gp.gaps], dtype=bool)
    pages = gp.pages[tens]
    # a gap between adjacent ops holds no op; the mini-batch stays unless movable
    var = np.flatnonzero((gb - ga >= 2) & (movable_input | ~gp.is_input[tens]))
    nv = len(var)
    vp = pages[var]

    # capacity rows: pages each op must shed, capped at what it can shed
    gav, gbv = ga[var], gb[var]
    most = _cover(gav, gbv, n, vp)
    need = np.asarray(gp._base, dtype=np.int64) - int(capacity_pages)
    overfull = need > most
    rhs = np.minimum(need, most)
    active = np.flatnonzero(rhs > 0)

    # costs: a fetch per page unless the gap ends in a pure write; write epochs
    epoch, pos, _ = write_epochs(gp, inputs=movable_input)
    ve = epoch[var]
    costly = ~pure[var]
    in_ep = costly & (ve >= 0)
    members = np.bincount(ve[in_ep], minlength=1)
    shared = np.zeros(nv, dtype=bool)
    shared[in_ep] = members[ve[in_ep]] >= 2
    cost = costly.astype(np.float64)
    cost[in_ep & ~shared] += 1.0          # alone in its epoch: fetch + write-back
    eps = np.unique(ve[shared])           # epochs that need a w variable
    ne = len(eps)
    wcol = np.searchsorted(eps, ve[shared])
    epoch_pages = np.zeros(ne, dtype=np.int64)
    epoch_pages[wcol] = vp[shared]

    x = np.zeros(nv, dtype=np.int64)
    integral, relaxed = True, 0.0
    if len(active):
        sv = np.flatnonzero(shared)
        a_eq, a_ub = _lp_rows(gav, gbv, n, sv, wcol, ne)
        zeros_eq = np.zeros(n)
        zeros_ub = None if a_ub is None else np.zeros(a_ub.shape[0])
        c = np.concatenate((cost, np.ones(ne), np.zeros(n)))
        ylo = np.zeros(n)
        ylo[active] = rhs[active]
        lb = np.concatenate((np.zeros(nv + ne), ylo))
        ub = np.concatenate((vp, epoch_pages, np.full(n, np.inf)))
        box = np.column_stack((lb, ub))
        lp = linprog(c, a_ub=a_ub, b_ub=zeros_ub, a_eq=a_eq, b_eq=zeros_eq, bounds=box,
                     method="highs-ds")
        if lp.status != 0:
            raise RuntimeError(f"traffic bound LP: {lp.message}")
        relaxed = float(lp.fun) * ps
        tries = [np.asarray(lp.x[:nv])]
        if _fractional(tries[0]):
            # A fractional vertex: the interval rows themselves (capacity rows of the
            # active ops, then the epoch rows) first as an LP, whose dual simplex may
            # land on an integral vertex (BERT-base at 25% does), then as the MILP. On
            # the cover-variable rows HiGHS's branch and bound is far slower (a GPT-3
            # block at seq 16: minutes against seconds) and its presolve prints a
            # diagnostic line to stdout. BERT-large, ResNet-50 and the GPT-3 block at
            # 1/16 to 1/2 never get here, so their matrix stays small.
            a_mip = _lp_matrix(gav, gbv, n, active, sv, wcol, ne)
            b_mip = np.concatenate((-rhs[active].astype(np.float64), np.zeros(len(sv))))
            again = linprog(c[:nv + ne], a_ub=a_mip, b_ub=b_mip, a_eq=None, b_eq=None,
                            bounds=box[:nv + ne], method="highs-ds")
            found: np.ndarray | None = again.x
            status = again.status
            if status != 0 or _fractional(again.x[:nv]):
                status, found = _milp(c[:nv + ne], nv, a_mip, b_mip, lb[:nv + ne],
                                      ub[:nv + ne], node_limit)
            del a_mip
            if status == 0 and found is not None:
                tries = [np.asarray(found[:nv])]
            else:
                # no proof in time: the better of the rounded relaxation and the MILP's
                # best plan so far
                integral = False
                if found is not None:
                    tries.append(np.asarray(found[:nv]))
        if prefer is not None and integral:
            # Lexicographic: hold the traffic at its optimum, maximise the preference.
            c2 = np.concatenate((-np.asarray(prefer, dtype=np.float64)[var], np.zeros(ne + n)))
            scale = float(np.abs(c2).max()) or 1.0
            held = float(cost @ tries[0]) if ne == 0 else float(lp.fun)
            limit = held + 0.5      # half a page of slack: only plans of the same cost
            lp2 = None
            if simplex_columns is not None and len(c2) > simplex_columns:
                lp2 = _interior_lp2(c2 / scale, c, limit, a_ub, a_eq, box)
            if lp2 is None or lp2.status != 0:  # (the simplex, also where that failed)
                a2 = (Sparse.empty(len(c)) if a_ub is None else a_ub).with_row(c)
                b2 = np.zeros(a2.shape[0])
                b2[-1] = limit
                lp2 = linprog(c2 / scale, a_ub=a2, b_ub=b2, a_eq=a_eq, b_eq=zeros_eq,
                              bounds=box, method="highs-ds")
            if lp2.status == 0:
                tries.insert(0, np.asarray(lp2.x[:nv]))
        best = None
        for sol in tries:
            # rounding up keeps every capacity row satisfied
            xs = np.clip(np.ceil(sol - _TOL), 0, vp).astype(np.int64)
            xs = _shrink(xs, gav, gbv, n, rhs, cost)
            ev = np.zeros(ng, dtype=np.int64)
            ev[var] = xs
            moved = int(np.where(pure, 0, ev).sum() + _written(ev, epoch, pos, pure).sum())
            if best is None or moved < best[0]:
                best = (moved, xs)
        assert best is not None
        x = best[1]
        short = np.flatnonzero(_cover(gav, gbv, n, x) < rhs)
        if len(short):
            raise RuntimeError(f"traffic bound: op {int(short[0])} over capacity after "
                               "rounding")

    evicted = np.zeros(ng, dtype=np.int64)
    evicted[var] = x
    fetched = np.where(pure, 0, evicted)
    written = _written(evicted, epoch, pos, pure)
    read_b = int(fetched.sum()) * ps
    write_b = int(written.sum()) * ps
    return TrafficBound(read_b, write_b, read_b + write_b, evicted, written,
                        int(np.count_nonzero(overfull)), integral, fetched, relaxed,
                        int(capacity_pages), time.perf_counter() - t0)


def _fractional(x: np.ndarray) -> bool:
    """Whether any of ``x`` is further than ``_TOL`` from an integer."""
    return bool((np.abs(x - np.round(x)) > _TOL).any())


def _milp(c: np.ndarray, nv: int, a: Sparse, b: np.ndarray, lb: np.ndarray,
          ub: np.ndarray, node_limit: int) -> tuple[int, np.ndarray | None]:
    """``traffic_bound``'s MILP (its first ``nv`` columns integral) by scipy's ``milp``
    within ``node_limit`` branch-and-bound nodes: its status (0: proved optimal) and
    its best solution so far (None: none); a program solved before in this process is
    not solved again (``_MILP_SOLVED``). scipy is imported here only: BERT-large,
    ResNet-50 and the GPT-3 block at 1/16 to 1/2 never get here."""
    key = hashlib.sha256(repr((nv, a.shape, int(node_limit))).encode())
    for arr in (c, a.data, a.indices, a.indptr, b, lb, ub):
        key.update(np.ascontiguousarray(arr).tobytes())

    def solve() -> tuple[int, np.ndarray | None]:
        import scipy.sparse as sp
        from scipy.optimize import Bounds, LinearConstraint, milp
        mat = sp.csr_matrix((a.data, a.indices, a.indptr), shape=a.shape)
        res = milp(c, integrality=np.concatenate((np.ones(nv), np.zeros(len(c) - nv))),
                   bounds=Bounds(lb, ub), constraints=LinearConstraint(mat, -np.inf, b),
                   options={"node_limit": int(node_limit), "mip_rel_gap": 0.0})
        return int(res.status), (None if res.x is None else np.array(res.x))

    status, x = memoised(_MILP_SOLVED, _MILP_LOCK, _MILP_KEEP, key.digest(), solve)
    return status, (None if x is None else x.copy())


#: nonzeros of the cost row per partial sum of ``_interior_lp2``'s chain
_CHAIN_NONZEROS = 4096


def _interior_lp2(c2: np.ndarray, c: np.ndarray, limit: float, a_ub: Sparse | None,
                  a_eq: Sparse, box: np.ndarray) -> LpResult:
    """``traffic_bound``'s second LP (minimise ``c2``, with ``c x <= limit`` beside the
    first LP's rows) by the interior point method and a crossover to a vertex. The
    dense cost row is a chain of partial sums instead (``s_k = s_(k-1)`` plus the cost
    of the ``k``-th block of ``_CHAIN_NONZEROS`` columns, ``s_last <= limit``): the same
    LP in the original columns, whose factors stay sparse (gpt2-medium at 1024 layers:
    270 MB and 9.7 s against 917 MB and 10.8 s with the row). The result's ``x`` starts
    with the original columns."""
    nz = np.flatnonzero(c)
    k = max(1, -(-len(nz) // _CHAIN_NONZEROS))
    nc = len(c)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for j, block in enumerate(np.array_split(nz, k)):
        # -(the block's cost) + s_j - s_(j-1) = 0 (no s_(j-1) for the first)
        sums = np.array([nc + j, nc + j - 1][:1 + (j > 0)])
        rows += [np.full(len(block) + len(sums), j)]
        cols += [block, sums]
        vals += [-c[block], np.array([1.0, -1.0])[:len(sums)]]
    chain = Sparse.coo(np.concatenate(vals), np.concatenate(rows), np.concatenate(cols),
                       (k, nc + k))
    a_eq2 = stack(a_eq.wider(k), chain)
    a_ub2 = None if a_ub is None else a_ub.wider(k)
    sums = np.column_stack((np.full(k, -np.inf), np.full(k, np.inf)))
    sums[-1, 1] = limit
    return linprog(np.concatenate((c2, np.zeros(k))), a_ub=a_ub2,
                   b_ub=None if a_ub2 is None else np.zeros(a_ub2.shape[0]),
                   a_eq=a_eq2, b_eq=np.zeros(a_eq2.shape[0]),
                   bounds=np.vstack((box, sums)), method="highs-ipm")


def _shrink(x: np.ndarray, ga: np.ndarray, gb: np.ndarray, n: int, rhs: np.ndarray,
            cost: np.ndarray) -> np.ndarray:
    """Give back pages no covered op needs: costliest gaps first, free ones last, so
    rounding never costs more than it must and zero-cost gaps evict only what some op's
    capacity needs. Column j covers ops ga[j]+1 .. gb[j]-1 folded onto one iteration:
    one slice of the ops, or two where it wraps."""
    x = x.copy()
    slack = _cover(ga, gb, n, x) - rhs
    lens = np.maximum(gb - ga - 1, 0).tolist()
    first = ((ga + 1) % max(n, 1)).tolist()
    for j in np.lexsort((np.arange(len(x)), -cost)).tolist():
        if x[j] == 0:
            continue
        ln, s = lens[j], first[j]
        if ln == 0:
            d = int(x[j])
        elif ln >= n:
            d = min(int(x[j]), int(slack.min()))
        elif s + ln <= n:
            d = min(int(x[j]), int(slack[s:s + ln].min()))
        else:
            d = min(int(x[j]), int(slack[s:].min()), int(slack[:s + ln - n].min()))
        if d > 0:
            x[j] -= d
            if ln >= n:
                slack -= d
            elif s + ln <= n:
                slack[s:s + ln] -= d
            else:
                slack[s:] -= d
                slack[:s + ln - n] -= d
    return x


def _written(evicted: np.ndarray, epoch: np.ndarray, pos: np.ndarray,
             pure: np.ndarray) -> np.ndarray:
    """Per gap, pages its eviction writes back: in each write epoch, in order from the
    write that opens it, the pages evicted beyond every earlier eviction of the epoch
    (the tail pages leave, so evictions nest). Nothing over a pure write (dead data)
    and nothing for a tensor without epochs (flash holds it)."""
    out = np.zeros(len(evicted), dtype=np.int64)
    sel = np.flatnonzero((epoch >= 0) & ~pure & (evicted > 0))
    done: dict[int, int] = {}
    for gi in sel[np.lexsort((pos[sel], epoch[sel]))].tolist():
        e, before = int(epoch[gi]), done.get(int(epoch[gi]), 0)
        out[gi] = max(0, int(evicted[gi]) - before)
        done[e] = max(before, int(evicted[gi]))
    return out


# -- time ---------------------------------------------------------------------------------
def time_bound_ps(compute_ps: int, read_bytes: int, write_bytes: int,
                  link_bytes_per_s: float, flash_ps: int) -> int:
    """The shortest iteration that computes for ``compute_ps`` and moves ``read_bytes``
    from flash and ``write_bytes`` to it: the largest of the compute time, the link's
    time (full duplex: the busier direction at ``link_bytes_per_s`` per direction,
    rounded up to a ps) and ``flash_ps``, the device's own time to serve the bytes as one
    ideally ordered batch (``flash.batch.batch_time_ps``)."""
    if min(compute_ps, read_bytes, write_bytes, flash_ps) < 0:
        raise ValueError("time_bound_ps: times and byte counts must be >= 0")
    if not 0 < link_bytes_per_s < math.inf:
        raise ValueError(f"time_bound_ps: link bandwidth {link_bytes_per_s} must be a "
                         "finite number > 0")
    busiest = max(read_bytes, write_bytes)
    link_ps = math.ceil(Fraction(busiest * _S) / Fraction(link_bytes_per_s))
    return max(int(compute_ps), link_ps, int(flash_ps))


def _ratio(value: float, bound: float) -> float | None:
    """value / bound; 1.0 when both are 0, None (JSON null: unbounded) when only the
    bound is."""
    if bound > 0:
        return float(value) / float(bound)
    return 1.0 if value == 0 else None


def ratios(traffic_bytes: int, time_ps: int, bound_traffic: int,
           bound_time: int) -> dict[str, float | None]:
    """How far a run is from the bounds: ``traffic_ratio`` = traffic / bound and
    ``time_ratio`` = time / bound (>= 1 for any run of the modelled machine). A bound of
    0 gives 1.0 if the value is 0 too, else None (JSON-safe for "infinitely far")."""
    if min(traffic_bytes, time_ps, bound_traffic, bound_time) < 0:
        raise ValueError("ratios: values and bounds must be >= 0")
    return {"traffic_ratio": _ratio(traffic_bytes, bound_traffic),
            "time_ratio": _ratio(time_ps, bound_time)}


def phase_bound_ps(gp: GapPlan, capacity_pages: int, op_ps: np.ndarray,
                   out_bytes_per_s: float, in_bytes_per_s: float,
                   streamed: np.ndarray | None = None, *,
                   programs: tuple[float, int] | None = None) -> int:
    """A time bound that respects when data can move: the largest, over the start of
    each op ``k``, of ``max(ops before k, writes forced before k) + max(ops from k on,
    reads forced after k)`` (``op_ps``: each op's shortest time; link rates in bytes/s).

    At the instant op ``k`` starts, its operands are in HBM and at most
    ``capacity_pages`` are, so of the data live across ``k`` (gaps ``a < k < b`` not
    ending in a pure write) at least ``E = live + operands - capacity`` pages are not.
    Whichever they are: those written earlier this iteration left through a write-back
    that crossed the link before ``k`` (at least ``E`` minus the live pages not written
    this iteration), and those read again this iteration come back after ``k`` (at least
    ``E`` minus the live pages next used in the next iteration). A forward pass that
    must push its activations out before the backward can start, and a backward that
    must bring them back, cannot overlap the two link directions; ``time_bound_ps``'s
    largest-term bound assumes they can. Streamed ops (``streamed``) do not hold their
    operands and count none. ``programs`` = (bytes/s, buffer bytes): the flash tier's
    fastest program rate and its write buffers' size; the write-backs before ``k`` are
    then also programmed before it, all but what the buffers hold at that instant (a
    page leaves the buffer when its program ends), so the time before ``k`` is at least
    ``(writes - buffer) / program rate`` too."""
    n = gp.n
    if n == 0 or not gp.gaps:
        return int(op_ps.sum())
    ps = gp.ps
    t_of = np.array([g.tensor for g in gp.gaps], dtype=np.int64)
    pure = np.array([g.pure_write for g in gp.gaps], dtype=bool)
    first_w = np.full(len(gp.pages), n + 1, dtype=np.int64)
    for t, u in enumerate(gp.uses):
        ws = [i for i, w in u if w]
        if ws:
            first_w[t] = ws[0]
    ga, gb = gp.ga, gp.gb
    wrap = gb >= n
    # this iteration's gaps, and the previous iteration's wrap gaps reaching into it
    a = np.concatenate((ga, ga[wrap] - n))
    b = np.concatenate((gb, gb[wrap] - n))
    pg = gp.pages[np.concatenate((t_of, t_of[wrap]))]
    dirty = np.concatenate((first_w[t_of] <= ga, np.zeros(int(wrap.sum()), dtype=bool)))
    live = ~np.concatenate((pure, pure[wrap]))
    lo = np.maximum(a + 1, 0)
    hi = np.minimum(b - 1, n - 1)
    ok = live & (lo <= hi)

    def spread(mask: np.ndarray) -> np.ndarray:
        d = np.zeros(n + 1, dtype=np.int64)
        np.add.at(d, lo[mask], pg[mask])
        np.add.at(d, hi[mask] + 1, -pg[mask])
        return np.cumsum(d[:n])

    total = spread(ok)
    not_w = spread(ok & ~dirty)
    not_r = spread(ok & (b >= n))
    operands = np.array([sum(int(gp.pages[t]) for t in set(op.reads) | set(op.writes))
                         for op in gp.wl.ops], dtype=np.int64)
    if streamed is not None:
        operands[np.asarray(streamed, dtype=bool)] = 0
    E = np.maximum(0, total + operands - capacity_pages)
    out_b = np.maximum(0, E - not_w) * ps
    in_b = np.maximum(0, E - not_r) * ps
    pre = np.cumsum(op_ps) - op_ps
    suf = int(op_ps.sum()) - pre
    w_ps = np.ceil(out_b * (_S / out_bytes_per_s)).astype(np.int64)
    if programs is not None:
        rate, buffered = programs
        prog = np.maximum(0, out_b - int(buffered))
        w_ps = np.maximum(w_ps, np.ceil(prog * (_S / rate)).astype(np.int64))
    r_ps = np.ceil(in_b * (_S / in_bytes_per_s)).astype(np.int64)
    return int((np.maximum(pre, w_ps) + np.maximum(suf, r_ps)).max())
