"""The one gap model every static policy plans on (TM-Training, FlashNeuron, Sentinel,
AutoTM), and the checks of a table built on it.

The gap model. A tensor's accesses in one iteration are ops ``u_0 < ... < u_{k-1}``;
between two consecutive accesses lies a gap, and a persistent tensor (weights, master
copy, optimizer state) also has the gap that wraps from its last access to its first in
the next iteration. A static plan decides per gap: the tensor stays in HBM, or it leaves
at the end of op ``evict_op`` (a write-back if HBM holds the only copy of live data, a
drop if flash already has it) and comes back by a prefetch released at the start of op
``release`` and due at the next access (none when that access overwrites the tensor
without reading it). Ops are numbered over two iterations ("unrolled") so that the wrap
gap reads like any other: ``b >= nops`` means op ``b - nops`` of the next iteration. A
persistent tensor is resident at iteration start (``initial``) unless its wrap gap evicts
it with a prefetch released in the next iteration; then it starts on flash. Non-persistent
tensors are allocated when first written and dropped after their last access; the
mini-batch is resident from the iteration's start.

Write-back or drop. The executor releases a write-back to the DMA queue; a write-back
still queued when its tensor is used (or prefetched) again is void, and a later drop of
the same pages asserts that they are clean. Dropping every clean copy (``GapPlan.
exact_dirty``) therefore needs each write-back to be served before the drop that relies
on it, and plans do not guarantee that: on the quick preset at 12.5% HBM, Sentinel's plan
with ``exact_dirty`` drops live dirty pages of ``l0.ln2.out``, although the queue ranks
requests by iteration before op. So the plans here write back every eviction of data
any op writes; this costs one extra write of a weight per eviction, never correctness.

``table_profile`` replays any table at op granularity, independently of the gap model,
and checks it: operands resident at each static op, no live dirty page dropped, no page
lost, the resident set at the end equal to ``initial`` (cyclic). It returns the pages held
during each op, in-flight prefetches counted from their release, and optionally
write-backs counted until flash has absorbed them at the write bandwidth.

Pure: no SimPy.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from tmhw.placement.base import PlanContext, drop_moves, input_mask
from tmhw.placement.table import Action, Move, PlacementTable
from tmhw.sim.errors import DoesNotFit
from tmhw.sim.pagebits import PageBits
from tmhw.sim.units import MiB, S
from tmhw.workload.graph import Kind, Phase, Workload


# -- the gap model ------------------------------------------------------------------------
@dataclass(slots=True)
class Gap:
    """The stretch between two consecutive accesses of one tensor (unrolled op indices)."""

    tensor: int
    a: int                  # op of the access before the gap
    b: int                  # op of the access after it (>= nops: the next iteration)
    pure_write: bool        # the access at b writes the tensor without reading it
    evict_op: int = -1      # -1: stays in HBM; else it leaves at this op's end
    release: int = -1       # its prefetch is released at this op's start (<= b)

    @property
    def evicted(self) -> bool:
        return self.evict_op >= 0



class GapPlan:
    """Every gap of a workload, a decision per gap, and what follows: occupancy per op
    (pages), the dirty state at each eviction, and the placement table."""

    #: Drop clean copies (flash took them earlier this iteration) instead of writing
    #: them back again; safe only if the executor runs a write-back before any later
    #: release of the same pages (see the module docstring).
    exact_dirty: bool = False

    def __init__(self, ctx: PlanContext, windowed: bool = False) -> None:
        """``windowed``: an op run streamed (``ctx.streamed``) holds none of its own
        operands, only a window (the bounds' view: any execution needs at least that);
        off, a planner's view, it holds them all, so the plan makes room for them
        ahead and the executor's tiles do not evict at the last moment (TM-Training on
        GPT-2 small with per-layer recomputation at 25% HBM: 147.3 ms planned so,
        175.9 ms planned windowed)."""
        wl = ctx.workload
        self.ctx = ctx
        self.wl = wl
        self.n = n = len(wl.ops)
        self.ps = wl.page_size
        self.cap = ctx.capacity_pages
        self.uses = wl.uses()
        self.pages = np.array([t.npages for t in wl.tensors], dtype=np.int64)
        self.persistent = np.array([t.kind.persistent for t in wl.tensors], dtype=bool)
        self.is_input = np.array([t.kind == Kind.INPUT for t in wl.tensors], dtype=bool)
        start = np.asarray(ctx.op_start_ps, dtype=np.int64)
        end = np.asarray(ctx.op_end_ps, dtype=np.int64)
        self.iter_ps = int(end[-1]) if n else 0
        #: op start/end over two iterations of the stall-free profile (unrolled index)
        self.start2 = np.concatenate((start, start + self.iter_ps))
        self.end2 = np.concatenate((end, end + self.iter_ps))
        self.gaps: list[Gap] = []
        self.of_tensor: list[list[int]] = [[] for _ in wl.tensors]
        for t, u in enumerate(self.uses):
            if not u or self.pages[t] == 0:
                continue
            ops = [i for i, _ in u]
            nxt = ops[1:] + ([ops[0] + n] if self.persistent[t] else [])
            for a, b in zip(ops, nxt, strict=False):
                op_b = wl.ops[b % n]
                pw = t in op_b.writes and t not in op_b.reads
                self.of_tensor[t].append(len(self.gaps))
                self.gaps.append(Gap(t, a, b, pw))
        self.ga = np.array([g.a for g in self.gaps], dtype=np.int64)
        self.gb = np.array([g.b for g in self.gaps], dtype=np.int64)
        self._base = self._base_occupancy()
        if windowed and ctx.streamed is not None and np.any(ctx.streamed):
            for i in np.flatnonzero(ctx.streamed):
                own = sum(int(self.pages[t]) for t in set(wl.ops[i].tensors))
                self._base[i] = max(0, int(self._base[i]) - own)
        self._occ: dict[bool, np.ndarray] = {}

    # -- decisions ------------------------------------------------------------------------
    def keep(self, gi: int) -> None:
        g = self.gaps[gi]
        g.evict_op, g.release = -1, -1

    def evict(self, gi: int, evict_op: int, release: int) -> None:
        g = self.gaps[gi]
        if g.pure_write:
            release = g.b
        if not (g.a <= evict_op < g.b and evict_op < self.n and evict_op < release <= g.b):
            raise ValueError(f"gap {g}: evict at {evict_op}, release at {release}")
        g.evict_op, g.release = evict_op, release

    def in_initial(self, t: int) -> bool:
        """Resident when the iteration starts: the mini-batch, and a persistent tensor
        whose wrap gap keeps it (or brings it back before the iteration ends)."""
        if self.is_input[t]:
            return True
        if not self.persistent[t] or not self.of_tensor[t]:
            return False
        g = self.gaps[self.of_tensor[t][-1]]
        return not g.evicted or g.release < self.n

    # -- dirty state and windows -------------------------------------------------------------
    def evictions(self, t: int) -> list[tuple[int, bool]]:
        """(gap index, dirty) for each evicted gap of tensor t, in access order. Dirty:
        the eviction must be a write-back. With ``exact_dirty`` that is when HBM may hold
        the only copy of live data (written since flash last took a copy, or resident
        at iteration start: the first iteration's weights have no flash copy). Without
        it (the default), only a persistent tensor that no op writes and that starts the
        iteration on flash is dropped; everything else is written back, because the
        executor may still hold an earlier write-back of the same pages in its queue
        when the drop comes (see the module docstring)."""
        written = any(w for _, w in self.uses[t])
        if not self.exact_dirty:
            pristine = bool(self.persistent[t]) and not written and not self.in_initial(t)
            return [(gi, not pristine) for gi in self.of_tensor[t] if self.gaps[gi].evicted]
        dirty = bool(self.in_initial(t))
        out = []
        gis = self.of_tensor[t]
        for j, (_, w) in enumerate(self.uses[t]):
            if w:
                dirty = True
            if j < len(gis) and self.gaps[gis[j]].evicted:
                out.append((gis[j], dirty))
                dirty = False
        return out

    def writeback_ps(self, t: int) -> int:
        nbytes = int(self.pages[t]) * self.ps
        return -(-nbytes * S // max(1, int(self.ctx.writeback_bytes_per_s)))

    def fetch_ps(self, t: int) -> int:
        nbytes = int(self.pages[t]) * self.ps
        return -(-nbytes * S // max(1, int(self.ctx.fetch_bytes_per_s)))

    def window_start(self, g: Gap, dirty: bool, drain: bool) -> int:
        """First unrolled op during which the evicted tensor no longer occupies HBM: the
        op after ``evict_op``, or with ``drain`` for a write-back, the first op that
        starts after flash has taken it at the write bandwidth."""
        lo = g.evict_op + 1
        if drain and dirty:
            t_free = int(self.end2[g.evict_op]) + self.writeback_ps(g.tensor)
            lo = max(lo, int(np.searchsorted(self.start2, t_free, side="left")))
        return lo

    def windows(self, t: int, drain: bool) -> list[tuple[int, int]]:
        """Unrolled op ranges [lo, hi] during which tensor t is out of HBM."""
        out = []
        for gi, dirty in self.evictions(t):
            g = self.gaps[gi]
            lo, hi = self.window_start(g, dirty, drain), g.release - 1
            if lo <= hi:
                out.append((lo, hi))
        return out

    # -- occupancy -----------------------------------------------------------------------
    def _base_occupancy(self) -> np.ndarray:
        """Pages held during each op if no gap evicted anything."""
        n = self.n
        diff = np.zeros(n + 1, dtype=np.int64)
        for t, u in enumerate(self.uses):
            if not u or self.pages[t] == 0:
                continue
            p = int(self.pages[t])
            if self.persistent[t]:
                lo, hi = 0, n - 1
            else:
                lo = 0 if self.is_input[t] else u[0][0]
                hi = u[-1][0]
            diff[lo] += p
            diff[hi + 1] -= p
        return np.cumsum(diff[:n])

    def _apply(self, occ: np.ndarray, ranges: list[tuple[int, int]], delta: int) -> None:
        n = self.n
        for lo, hi in ranges:
            # an unrolled range lies within [0, 2n); fold it onto one iteration
            if hi < n:
                occ[lo:hi + 1] += delta
            elif lo >= n:
                occ[lo - n:hi - n + 1] += delta
            else:
                occ[lo:] += delta
                occ[:hi - n + 1] += delta

    def occupancy(self, drain: bool) -> np.ndarray:
        """Pages held during each op under the current decisions (a copy)."""
        occ = self._base.copy()
        for t in range(len(self.uses)):
            if self.of_tensor[t]:
                self._apply(occ, self.windows(t, drain), -int(self.pages[t]))
        return occ

    def retarget(self, occ: np.ndarray, t: int, drain: bool,
                 change: list[tuple[int, int, int]]) -> None:
        """Apply decision changes (gap, evict_op or -1, release) of tensor t, updating
        ``occ`` in place."""
        p = int(self.pages[t])
        self._apply(occ, self.windows(t, drain), p)
        for gi, e, r in change:
            if e < 0:
                self.keep(gi)
            else:
                self.evict(gi, e, r)
        self._apply(occ, self.windows(t, drain), -p)

    def fit(self, drain: bool) -> int:
        """Evict (or delay prefetches) until no op holds more than the capacity: at each
        op over capacity, the tensors held there but not used there leave right after
        their previous access and come back at the op after, furthest next access first
        (Belady). Returns the gaps changed; raises DoesNotFit if the op's own operands do
        not fit."""
        n, cap = self.n, self.cap
        occ = self.occupancy(drain)
        changed = 0
        used_at = [set(op.tensors) for op in self.wl.ops]
        for o in range(n):
            if occ[o] <= cap:
                continue
            cands = []
            for oo in (o, o + n):
                sel = np.flatnonzero((self.ga < oo) & (oo < self.gb))
                for gi in sel.tolist():
                    g = self.gaps[gi]
                    if g.tensor in used_at[o]:
                        continue
                    if g.evicted and g.evict_op < oo < g.release:
                        continue  # already out (or draining) at o
                    cands.append((g.b - oo, gi, oo))
            cands.sort(reverse=True)
            for _, gi, oo in cands:
                if occ[o] <= cap:
                    break
                g = self.gaps[gi]
                r = max(g.release if g.evicted else 0, oo + 1)
                self.retarget(occ, g.tensor, drain, [(gi, g.a, r)])
                changed += 1
            if occ[o] > cap:
                raise DoesNotFit(
                    f"policy.hbm_ratio: op {self.wl.ops[o].name} needs more than the "
                    f"{self.cap * self.ps / MiB:.1f} MiB of HBM for its own tensors; raise "
                    f"the HBM ratio or lower the batch")
        return changed

    # -- the table -----------------------------------------------------------------------
    def table(self, name: str) -> PlacementTable:
        wl, n = self.wl, self.n
        initial = input_mask(wl)
        for t in range(len(self.uses)):
            if self.persistent[t] and self.of_tensor[t] and self.in_initial(t):
                tt = wl.tensors[t]
                initial[tt.page_start:tt.page_end] = True
        moves = drop_moves(wl)
        s2 = self.start2
        for t in range(len(self.uses)):
            tt = wl.tensors[t]
            for gi, dirty in self.evictions(t):
                g = self.gaps[gi]
                act = Action.WRITEBACK if dirty else Action.DROP
                moves.append(Move(act, t, tt.page_start, tt.page_end, g.evict_op,
                                  issue_ps=int(self.end2[g.evict_op])))
                if g.pure_write:
                    continue
                if g.release >= n:
                    issue, due = g.release - n, g.b - n
                else:
                    # released this iteration for an access in the next: due by the
                    # iteration's last op (a table's deadline cannot precede its release)
                    issue, due = g.release, min(g.b, n - 1)
                moves.append(Move(Action.PREFETCH, t, tt.page_start, tt.page_end, issue,
                                  due, int(s2[issue]), int(s2[due])))
        tab = PlacementTable(name, n, initial, moves)
        tab.index()
        return tab

    # -- layers --------------------------------------------------------------------------
    def layer_runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Layers as runs of consecutive ops of one ``Op.layer``, over two iterations:
        (run index per unrolled op, first op of each run, last op of each run)."""
        n = self.n
        rid = np.zeros(2 * n, dtype=np.int64)
        k = 0
        for i in range(1, 2 * n):
            if self.wl.ops[i % n].layer != self.wl.ops[(i - 1) % n].layer or i == n:
                k += 1
            rid[i] = k
        first = np.full(k + 1, 2 * n, dtype=np.int64)
        last = np.zeros(k + 1, dtype=np.int64)
        np.minimum.at(first, rid, np.arange(2 * n))
        np.maximum.at(last, rid, np.arange(2 * n))
        return rid, first, last


def saved_activations(gp: GapPlan) -> list[tuple[int, int, int, int, int]]:
    """The activations the forward pass saves for the backward pass, in order of
    production: (first forward use, tensor, its gap from the last forward use to the
    first backward use, that last forward use, that first backward use). What the
    activation offloaders (FlashNeuron, SSDTrain) may move."""
    wl = gp.wl
    out: list[tuple[int, int, int, int, int]] = []
    for t, tt in enumerate(wl.tensors):
        if tt.kind != Kind.ACTIVATION or not gp.of_tensor[t]:
            continue
        fwd = [i for i, _ in gp.uses[t] if wl.ops[i].phase == Phase.FORWARD]
        bwd = [i for i, _ in gp.uses[t] if wl.ops[i].phase == Phase.BACKWARD]
        if not fwd or not bwd:
            continue
        e = fwd[-1]
        gi = next(g for g in gp.of_tensor[t] if gp.gaps[g].a == e)
        out.append((fwd[0], t, gi, e, bwd[0]))
    out.sort()
    return out


def activations_do_not_fit(name: str, gp: GapPlan, occ: np.ndarray) -> DoesNotFit:
    """The error of an activation offloader (``name``) that keeps weights, gradients
    and optimizer state in HBM and finds the occupancy ``occ`` over the capacity with
    every activation it can offload offloaded: the op, its need, and the least ratio."""
    wl = gp.wl
    i = int(occ.argmax())
    need = int(occ.max())
    foot = -(-wl.peak_live_bytes() // gp.ps)
    ratio = math.ceil(1000 * need / max(1, foot)) / 1000
    # the ratio is of the configured iteration's footprint, which a recomputed one
    # (``workload.recompute``) does not have: its least ratio is not known here
    fits_from = f"; {name} fits from policy.hbm_ratio = {ratio:g}" \
        if wl.meta.get("recompute", "none") == "none" else ""
    return DoesNotFit(
        f"policy.hbm_ratio: {name} keeps weights, gradients and optimizer state in "
        f"HBM; with every activation it can offload offloaded, op {wl.ops[i].name} "
        f"needs {need * gp.ps / MiB:.1f} MiB but HBM holds {gp.cap * gp.ps / MiB:.1f} "
        f"MiB{fits_from}")


# -- checking a table ---------------------------------------------------------------------
class TableError(AssertionError):
    """A placement table the executor could not replay faithfully."""


def table_profile(wl: Workload, table: PlacementTable, op_start_ps: np.ndarray | None = None,
                  op_end_ps: np.ndarray | None = None,
                  writeback_bytes_per_s: float | None = None) -> np.ndarray:
    """Replay ``table`` op by op as the executor does, without timing, and return the
    pages held in HBM during each op: resident pages, outputs allocated at the op's
    start, and prefetches from their release (as the capacity must allow for). With
    ``writeback_bytes_per_s`` (and the op times), a write-back's pages count until flash
    has taken them, one after another at that rate; without, they free at the op's end.

    Raises TableError if a static table leaves an operand out of HBM at its op, drops
    live data flash does not hold, prefetches data nobody holds, loses a live page, or
    ends the iteration with a resident set other than ``initial`` (less the mini-batch,
    which the host brings back)."""
    n, ps = len(wl.ops), wl.page_size
    # a flag a bit, not a byte, per page: at 1024 GPT-2 medium layers three bool arrays
    # of the 661M pages held 2 GB at once, above what the run itself holds
    held = PageBits.of(table.initial)
    count = held.count()
    # where the iteration must end: as it began, but for the mini-batch, which the
    # host brings back
    began = held.copy()
    flash = PageBits(wl.npages)
    live = PageBits(wl.npages)
    for t in wl.tensors:
        if t.kind == Kind.INPUT:
            began[t.page_start:t.page_end] = False
        if t.kind.persistent or t.kind == Kind.INPUT:
            live[t.page_start:t.page_end] = True
        if t.kind.persistent and not held.run_all(t.page_start, t.page_end):
            flash[t.page_start:t.page_end] = True
    last = wl.live_ranges()[:, 1]
    draining: list[tuple[int, int]] = []
    drain_pages = 0
    wb_free = 0
    timed = writeback_bytes_per_s is not None and op_start_ps is not None \
        and op_end_ps is not None
    occ = np.zeros(n, dtype=np.int64)

    def hold(p0: int, p1: int) -> None:
        nonlocal count
        count += (p1 - p0) - held.count(p0, p1)
        held[p0:p1] = True

    def free(p0: int, p1: int) -> None:
        nonlocal count
        count -= held.count(p0, p1)
        held[p0:p1] = False

    for op in wl.ops:
        i = op.index
        for m in table.released_at_start(i):
            # every page live, and in flash or held: no page clear in both
            if not live.run_all(m.p0, m.p1) or \
                    flash.first(m.p0, m.p1, held, held, (True, True, True)) >= 0:
                raise TableError(f"{table.policy}: op {i} prefetches pages of "
                                 f"{wl.tensors[m.tensor].name} that hold no data")
            hold(m.p0, m.p1)
        for tid in op.writes:
            if tid not in op.reads:
                t = wl.tensors[tid]
                hold(t.page_start, t.page_end)
        if not table.reactive:
            for tid in op.reads:
                t = wl.tensors[tid]
                if not held.run_all(t.page_start, t.page_end):
                    raise TableError(f"{table.policy}: op {i} ({op.name}) reads "
                                     f"{t.name}, which the table leaves out of HBM")
        if timed:
            assert op_start_ps is not None
            while draining and draining[0][0] <= int(op_start_ps[i]):
                drain_pages -= heapq.heappop(draining)[1]
        occ[i] = count + drain_pages
        for tid in op.writes:
            t = wl.tensors[tid]
            live[t.page_start:t.page_end] = True
            flash[t.page_start:t.page_end] = False
        for m in table.released_at_end(i):
            p0, p1 = m.p0, m.p1
            if m.action == Action.WRITEBACK and m.keep:
                flash.or_and(p0, p1, held, live)
            elif m.action == Action.WRITEBACK:
                moved = held.count(p0, p1)
                flash.or_and(p0, p1, held, held)
                free(p0, p1)
                if timed and moved:
                    assert op_end_ps is not None and writeback_bytes_per_s is not None
                    wb_free = max(wb_free, int(op_end_ps[i])) + \
                        -(-moved * ps * S // max(1, int(writeback_bytes_per_s)))
                    heapq.heappush(draining, (wb_free, moved))
                    drain_pages += moved
            elif m.action == Action.DROP:
                t = wl.tensors[m.tensor]
                if m.dead or (not t.kind.persistent and last[m.tensor] <= i):
                    live[p0:p1] = False
                    flash[p0:p1] = False
                elif held.first(p0, p1, live, flash, (False, False, True)) >= 0:
                    raise TableError(f"{table.policy}: op {i} drops live dirty pages of "
                                     f"{t.name}")
                free(p0, p1)
    if not table.reactive:
        # A page can only be lost by dropping live dirty data, which raised above; this
        # catches anything else at the end rather than scanning every page after every
        # op; then against the placement it began in: both word by word, no temporary
        # the size of the page array.
        p = live.first(0, wl.npages, held, flash, (False, True, True))
        if p >= 0:
            raise TableError(f"{table.policy}: page {p} ends the iteration in neither "
                             "tier")
        p = held.first_diff(began)
        if p >= 0:
            tid = int(wl.page_tensor()[p])
            raise TableError(f"{table.policy}: the iteration ends with "
                             f"{wl.tensors[tid].name} "
                             f"{'resident' if held[p] else 'on flash'}, not as it began")
    return occ


def predict_starts(wl: Workload, table: PlacementTable, ctx: PlanContext) -> np.ndarray:
    """When each op starts in one iteration under a fluid model: flash serves
    prefetches and write-backs one at a time at their bandwidths, in release order; an
    op starts when its prefetches have arrived. An estimate for planning (the timeline
    the plan itself implies), not the executor."""
    n = len(wl.ops)
    dur = np.asarray(ctx.op_end_ps, dtype=np.int64) - np.asarray(ctx.op_start_ps,
                                                                   dtype=np.int64)
    fbw = max(1, int(ctx.fetch_bytes_per_s))
    wbw = max(1, int(ctx.writeback_bytes_per_s))
    ps = wl.page_size
    arrive = np.zeros(n, dtype=np.int64)
    starts = np.zeros(n, dtype=np.int64)
    t = server = 0
    for i in range(n):
        for m in table.released_at_start(i):
            server = max(server, t) + (-(-m.npages * ps * S // fbw))
            if m.deadline_op >= i:
                arrive[m.deadline_op] = max(arrive[m.deadline_op], server)
        begin = max(t, int(arrive[i]))
        starts[i] = begin
        t = begin + int(dur[i])
        for m in table.released_at_end(i):
            # a clean's bytes are counted at the eviction that follows it
            if m.action == Action.WRITEBACK and not m.keep:
                server = max(server, t) + (-(-m.npages * ps * S // wbw))
    return starts


def estimate_stall_ps(wl: Workload, table: PlacementTable, ctx: PlanContext) -> int:
    """Stall of one iteration under the fluid model of ``predict_starts``."""
    starts = predict_starts(wl, table, ctx)
    if not len(starts):
        return 0
    dur = np.asarray(ctx.op_end_ps, dtype=np.int64) - np.asarray(ctx.op_start_ps,
                                                                   dtype=np.int64)
    return int(starts[-1] + dur[-1] - dur.sum())


def finish(gp: GapPlan, name: str, notes: dict[str, float]) -> PlacementTable:
    """The table of a gap plan, replayed by ``table_profile`` as a check: a static
    baseline's table must be valid and within capacity at every op."""
    tab = gp.table(name)
    occ = table_profile(gp.wl, tab)
    if len(occ) and occ.max() > gp.cap:
        i = int(occ.argmax())
        raise TableError(f"{name}: the table holds {int(occ[i])} pages at op {i}, over the "
                         f"capacity of {gp.cap}")
    tab.notes.update(notes)
    tab.notes.update({
        "planned_peak_pages": float(occ.max()) if len(occ) else 0.0,
        "est_stall_ps": float(estimate_stall_ps(gp.wl, tab, gp.ctx))})
    return tab
