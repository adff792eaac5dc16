"""TM-Training: a static page-placement table built from the repeating training
iteration, proactive prefetch, and data splitting tuned by a timing monitor
(ACM Transactions on Storage 21(4), 2025, doi:10.1145/3721484; the public tooling
comsys-lab/TM-Training tags each chunk with "needed at cycle / evictable at cycle").

Training runs the same ops in the same order every iteration, so every tensor's future
is known from one profiled iteration (``ctx.op_start_ps``/``op_end_ps``). The planner:

1. **Gaps.** For each tensor, the intervals between consecutive uses (and, for weights,
   master copies and optimizer state, the wrap-around gap from the last use of one
   iteration to the first use of the next) are the candidates for living on flash.
   A gap shorter than the flash round trip it would cost (write-back of dirty bytes +
   fetch) cannot pay off and stays in HBM.
2. **Static placement.** The iteration is replayed with its future known: whenever an
   op's operands do not fit in HBM (less a reserve for prefetches in flight), the pages
   whose next use is furthest away per byte they cost to move leave first (Belady's MIN
   weighted by cost: a dirty page costs a write-back and a fetch, a clean one a fetch),
   and only as many as needed, so a tensor may keep its head resident over a gap. The
   replay runs three iterations; the steady-state middle one gives the plan, including
   the wrap-around gaps (what is resident when an iteration starts).
3. **Prefetch timing.** Each evicted gap's prefetch is released at the last op that
   starts before ``deadline - bytes / fetch bandwidth`` (the deadline is the start of the
   op that needs it), never before its pages have left; the DMA engine queues released
   prefetches by deadline, and the lateness their contention causes is what the timing
   monitor measures. A fetch that cannot be hidden in its gap at all is released with
   the op that needs it, keeping the capacity free until then.
4. **Data splitting.** A gap whose prefetch cannot fit between the eviction and the
   deadline is split at a page boundary: the head fraction stays in HBM, the tail
   streams from flash. The op consumes the tensor in order, so the streamed tail is
   needed only ``split x op time`` after the op starts; the executor starts the op as
   soon as the head is resident and the tail will arrive in time.
5. **Timing monitor.** After each iteration the executor reports, per op, how late its
   prefetches were and how long the NPU stalled. For each late op the monitor moves the
   release of its prefetches earlier where the planned occupancy has room, and otherwise
   raises the split ratio (keeps more pages resident) where capacity allows; the table
   for the next iteration is rebuilt. Over iterations the stall settles.

Evictions are ``WRITEBACK`` moves: the executor writes back the pages that are dirty
(live data flash does not have) and frees clean ones at once; dead tensors are dropped
after their last use. Pure: no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tmhw.placement.base import (
    Feedback,
    PlanContext,
    Policy,
    drop_moves,
    input_mask,
    persistent_mask,
)
from tmhw.placement.table import Action, Move, PlacementTable
from tmhw.workload.graph import Kind, Workload

#: Fraction of HBM the plan leaves for prefetches in flight (model knob).
PREFETCH_RESERVE = 0.10
#: A split that would keep more than this fraction resident is not worth evicting.
MAX_SPLIT = 0.95


@dataclass(slots=True)
class Gap:
    """Tensor ``tensor`` is idle between the end of op ``a`` and the start of op ``b``
    (``b`` >= nops: op ``b - nops`` of the next iteration)."""

    tensor: int
    a: int
    b: int
    pages: int
    dirty: bool               # the use at ``a`` (or one before it) wrote the tensor
    evicted: bool = False
    split: float = 0.0        # fraction of the pages kept resident over the gap
    release: int = -1         # unrolled op index where the prefetch is released
    free_op: int = -1         # unrolled op index from which the evicted pages are free
    lead_ps: int = 0          # extra lead the monitor added to the prefetch
    wraps: bool = False       # from one iteration into the next (``b`` >= nops)

    def evicted_pages(self) -> int:
        return self.pages - self.kept_pages()

    def kept_pages(self) -> int:
        return int(round(self.split * self.pages))


class Planner:
    """The planner's state; the monitor edits it between iterations."""

    def __init__(self, ctx: PlanContext) -> None:
        self.ctx = ctx
        wl = ctx.workload
        self.wl = wl
        self.n = len(wl.ops)
        self.cap = ctx.capacity_pages
        self.ps = wl.page_size
        start = np.asarray(ctx.op_start_ps, dtype=np.int64)
        end = np.asarray(ctx.op_end_ps, dtype=np.int64)
        self.t_iter = int(end[-1]) if self.n else 0
        # Unrolled over two iterations so wrap-around gaps index naturally.
        self.start2 = np.concatenate([start, start + self.t_iter])
        self.end2 = np.concatenate([end, end + self.t_iter])
        self.dur = end - start
        self.fetch_bw = ctx.fetch_bytes_per_s
        self.wb_bw = ctx.writeback_bytes_per_s
        self.base = self._baseline(wl)
        self.gaps = self._gaps(wl)

    # -- model -------------------------------------------------------------------------
    def _baseline(self, wl: Workload) -> np.ndarray:
        """Pages held during each op if nothing moved (hbm-only with frees)."""
        occ = np.zeros(self.n + 1, dtype=np.int64)
        r = wl.live_ranges()
        for t in wl.tensors:
            f, last = int(r[t.id, 0]), int(r[t.id, 1])
            if f < 0:
                continue
            if t.kind.persistent or t.kind == Kind.INPUT:
                f, last = 0, self.n - 1
            occ[f] += t.npages
            occ[last + 1] -= t.npages
        return np.cumsum(occ[: self.n])

    def _gaps(self, wl: Workload) -> list[Gap]:
        gaps: list[Gap] = []
        for t, uses in zip(wl.tensors, wl.uses(), strict=False):
            if t.npages == 0 or t.kind == Kind.INPUT or len(uses) == 0:
                continue
            ops = [u for u, _ in uses]
            writes = [w for _, w in uses]
            pairs = list(zip(range(len(ops) - 1), range(1, len(ops)), strict=False))
            for i, j in pairs:
                gaps.append(Gap(t.id, ops[i], ops[j], t.npages,
                                any(writes[: i + 1]) or t.kind.persistent and any(writes)))
            if t.kind.persistent:
                gaps.append(Gap(t.id, ops[-1], ops[0] + self.n, t.npages, any(writes),
                                wraps=True))
        return [g for g in gaps if g.b - g.a > 1]

    def _op_at(self, t_ps: float) -> int:
        """The last unrolled op that starts at or before ``t_ps`` (>= 0)."""
        return max(0, int(np.searchsorted(self.start2, t_ps, side="right")) - 1)

    def _deadline_ps(self, g: Gap) -> float:
        b = g.b
        t = float(self.start2[b])
        if g.split > 0:
            # The streamed tail is consumed after the head: it is needed that much later.
            t += g.split * float(self.dur[b % self.n])
        return t

    def _wb_ps(self, g: Gap) -> float:
        return g.evicted_pages() * self.ps / self.wb_bw * 1e12 if g.dirty else 0.0

    def _fetch_ps(self, g: Gap) -> float:
        return g.evicted_pages() * self.ps / self.fetch_bw * 1e12

    def _set_free(self, g: Gap) -> None:
        g.free_op = min(self._op_at(float(self.end2[g.a]) + self._wb_ps(g)) + 1, g.b)

    def schedule(self) -> None:
        """Release point of every evicted gap (see ``schedule_one``)."""
        for g in self.gaps:
            if g.evicted:
                self._set_free(g)
                self.schedule_one(g)

    def occupancy(self, in_flight: bool = True) -> np.ndarray:
        """Pages held during each op under the current plan; with ``in_flight`` False,
        only the pages resident between uses (prefetches not counted)."""
        delta = np.zeros(2 * self.n + 1, dtype=np.int64)
        for g in self.gaps:
            if not g.evicted:
                continue
            # not held over unrolled ops [lo, hi)
            lo, hi = g.free_op, (g.release if in_flight else g.b)
            if hi <= lo:
                continue
            k = g.evicted_pages()
            delta[lo] -= k
            delta[hi] += k
        d = np.cumsum(delta[: 2 * self.n])
        return self.base + d[: self.n] + d[self.n:]

    def hidden(self, g: Gap) -> bool:
        """Whether the gap's evicted pages can leave and come back before the deadline."""
        self._set_free(g)
        begin = self._deadline_ps(g) - self._fetch_ps(g)
        return begin >= float(self.start2[min(g.free_op, 2 * self.n - 1)])

    def plan(self) -> None:
        """Choose what leaves HBM in each gap (``_select``), schedule the prefetches,
        then split the evicted gaps whose prefetch cannot be hidden, as far as the
        capacity left over allows."""
        for g in self.gaps:
            g.split, g.evicted, g.lead_ps = 0.0, False, 0
        # Resident data is planned against the capacity less a reserve for prefetches in
        # flight; the DMA engine enforces the whole capacity at every instant (it books
        # a prefetch only into free space), so contention shows as stall, not overflow.
        cap = int(self.cap * (1.0 - PREFETCH_RESERVE))
        for gi, pages in self._select(cap).items():
            g = self.gaps[gi]
            g.evicted = True
            g.split = 1.0 - min(pages, g.pages) / g.pages
        self.schedule()
        if self.ctx.policy.split:
            self._split(self.occupancy())

    def _select(self, cap: int) -> dict[int, int]:
        """Pages to evict in each gap, from a replay of the op sequence with the future
        known (Belady's MIN, weighted by cost): whenever an op's operands do not fit,
        the pages whose next use is furthest away per byte they cost to move (a dirty
        page costs a write-back and a fetch, a clean one a fetch) leave first, and only
        as many as are needed, so a tensor may keep its head resident over a gap.
        Three iterations are replayed so that the middle one is in steady state; its
        decisions are the plan. Returns {gap index: pages evicted}."""
        wl, n = self.wl, self.n
        nt = len(wl.tensors)
        npages = np.array([t.npages for t in wl.tensors], dtype=np.int64)
        persistent = np.array([t.kind.persistent for t in wl.tensors], dtype=bool)
        pinned = np.array([t.kind == Kind.INPUT for t in wl.tensors], dtype=bool)
        uses = [np.array([u for u, _ in us], dtype=np.int64) for us in wl.uses()]
        index = {(g.tensor, g.a, g.b): i for i, g in enumerate(self.gaps)}
        inf = np.int64(1) << 60
        resident = np.where(pinned, npages, 0)
        dirty = np.zeros(nt, dtype=bool)
        next_use = np.full(nt, inf, dtype=np.int64)
        prev_use = np.full(nt, -1, dtype=np.int64)
        for t in range(nt):
            if len(uses[t]):
                next_use[t] = uses[t][0]
        evicted: dict[tuple[int, int], int] = {}
        for it in range(3):
            for i, op in enumerate(wl.ops):
                u = it * n + i
                ts = list(op.tensors)
                need = int((npages[ts] - resident[ts]).sum())
                free = cap - int(resident.sum())
                if need > free:
                    short = need - free
                    mask = resident > 0
                    mask[ts] = False
                    mask &= ~pinned
                    cand = np.flatnonzero(mask)
                    cost = np.where(dirty[cand], 2.0, 1.0)
                    score = (next_use[cand] - u).astype(float) / cost
                    for t in cand[np.argsort(-score, kind="stable")]:
                        take = int(min(resident[t], short))
                        resident[t] -= take
                        short -= take
                        if resident[t] == 0:
                            dirty[t] = False
                        if it == 1 and prev_use[t] >= 0 and next_use[t] < inf:
                            key = (int(t), int(prev_use[t]))
                            evicted[key] = evicted.get(key, 0) + take
                        if short <= 0:
                            break
                resident[ts] = npages[ts]
                dirty[list(op.writes)] = True
                base = it * n
                for t in ts:
                    prev_use[t] = u
                    k = int(np.searchsorted(uses[t], i, side="right"))
                    if k < len(uses[t]):
                        next_use[t] = base + uses[t][k]
                    elif persistent[t]:
                        next_use[t] = base + n + uses[t][0]
                    else:
                        # Dead until the next iteration writes it afresh.
                        resident[t] = 0
                        dirty[t] = False
                        next_use[t] = base + n + uses[t][0]
                        prev_use[t] = -1
        out: dict[int, int] = {}
        for (t, a_u), pages in evicted.items():
            shift = (a_u // n) * n
            a = a_u - shift
            k = int(np.searchsorted(uses[t], a, side="right"))
            b = int(uses[t][k]) if k < len(uses[t]) else n + int(uses[t][0])
            gi = index.get((t, a, b))
            if gi is not None:
                out[gi] = max(out.get(gi, 0), pages)
        return out

    def _split(self, occ: np.ndarray) -> np.ndarray:
        """Keep the head of an evicted gap resident when its fetch cannot be hidden, so
        that the tail alone arrives in time; only where capacity has room."""
        for g in self.gaps:
            if not g.evicted or self.hidden(g):
                continue
            lo, hi = g.free_op, g.release
            if hi <= lo:
                continue
            room = int(self.cap - (occ + 0)[self._window_mask(lo, hi) > 0].max(initial=0))
            if room <= 0:
                continue
            # Smallest head that hides the tail: the fetch of (1 - s) of the pages must
            # fit between the free point and deadline + s x op time.
            avail = float(self.start2[g.b]) - float(self.start2[min(lo, 2 * self.n - 1)])
            per_page = self.ps / self.fetch_bw * 1e12
            dur_b = float(self.dur[g.b % self.n])
            # (1 - s) * P * per_page <= avail + s * dur_b
            need = (g.pages * per_page - avail) / (g.pages * per_page + dur_b)
            s_needed = float(min(max(need, 0.0), MAX_SPLIT))
            keep = min(int(np.ceil(s_needed * g.pages)), g.kept_pages() + room)
            if keep <= g.kept_pages():
                continue
            g.split = keep / g.pages
            self._set_free(g)
            self.schedule_one(g)
            occ = self.occupancy()
        return occ

    def schedule_one(self, g: Gap) -> None:
        """Release point of one gap: as late as its fetch at the full flash -> HBM rate
        still meets the deadline (plus any lead the monitor added), never before its
        pages are free. Prefetches that contend for the bandwidth queue in the DMA in
        deadline order; the lateness that contention causes is what the timing monitor
        measures and corrects."""
        begin = self._deadline_ps(g) - self._fetch_ps(g) - g.lead_ps
        lo = max(g.free_op, self.n) if g.wraps else g.free_op
        rel = self._op_at(begin)
        if rel < lo and g.lead_ps == 0:
            # The fetch cannot be hidden in this gap: hiding it would need the pages
            # back before they have left. Release it with the op that needs it (the
            # capacity stays free until then); the monitor moves it earlier where the
            # measured stall and the capacity allow.
            rel = g.b
        g.release = min(max(rel, lo), g.b)

    def _window_mask(self, lo: int, hi: int) -> np.ndarray:
        m = np.zeros(2 * self.n, dtype=np.int64)
        m[lo:hi] = 1
        return m[: self.n] + m[self.n:]

    def _covers(self, over: np.ndarray, lo: int, hi: int) -> bool:
        return bool((self._window_mask(lo, hi) > 0)[over].any())

    # -- the table ---------------------------------------------------------------------
    def table(self) -> PlacementTable:
        wl, n = self.wl, self.n
        initial = persistent_mask(wl) | input_mask(wl)
        moves: list[Move] = []
        for g in self.gaps:
            if not g.evicted:
                continue
            t = wl.tensors[g.tensor]
            p0 = t.page_start + g.kept_pages()
            p1 = t.page_end
            if p1 <= p0:
                continue
            a, b, rel = g.a, g.b % n, g.release
            dl_ps = int(self._deadline_ps(g)) % max(1, self.t_iter)
            moves.append(Move(Action.WRITEBACK, g.tensor, p0, p1, a, -1,
                              int(self.end2[a]), -1))
            if g.wraps:
                initial[p0:p1] = False
                rel -= n
            rel = min(max(rel, 0), b)
            moves.append(Move(Action.PREFETCH, g.tensor, p0, p1, rel, b,
                              int(self.start2[rel]), dl_ps))
        moves.extend(drop_moves(wl))
        table = PlacementTable("tm-training", n, initial, moves)
        table.split = {}
        for g in self.gaps:
            if g.evicted and g.split > 0:
                table.split[g.tensor] = max(table.split.get(g.tensor, 0.0), g.split)
        occ = self.occupancy()
        table.notes = {
            "evicted_gaps": float(sum(g.evicted for g in self.gaps)),
            "split_gaps": float(sum(g.evicted and g.split > 0 for g in self.gaps)),
            "planned_peak_pages": float(occ.max(initial=0)),
            "planned_resident_peak_pages": float(self.occupancy(False).max(initial=0)),
            "capacity_pages": float(self.cap),
        }
        table.index()
        return table

    # -- timing monitor --------------------------------------------------------------
    def monitor(self, fb: Feedback) -> int:
        """Move releases earlier or raise splits for the ops that stalled. Returns the
        number of gaps changed."""
        changed = 0
        # Room is judged on the occupancy the executor measured around each op, which
        # sees write-backs and prefetches as they really overlapped.
        measured = fb.occupancy_pages
        occ = (np.asarray(measured, dtype=np.int64).copy()
               if measured is not None and len(measured) == self.n else self.occupancy())
        late_ops = np.flatnonzero(fb.stall_ps > 0)
        by_deadline: dict[int, list[Gap]] = {}
        for g in self.gaps:
            if g.evicted:
                by_deadline.setdefault(g.b % self.n, []).append(g)
        gain = self.ctx.policy.monitor_gain
        for op in late_ops:
            late = float(max(fb.stall_ps[op], fb.lateness_ps[op])) * gain
            for g in sorted(by_deadline.get(int(op), []), key=lambda g: -g.evicted_pages()):
                if late <= 0:
                    break
                old_rel = g.release
                old_lead = g.lead_ps
                g.lead_ps += int(late)
                self.schedule_one(g)
                lo, hi = g.release, old_rel
                k = g.evicted_pages()
                if hi > lo and (occ + self._window_mask(lo, hi) * k).max() <= self.cap:
                    occ = occ + self._window_mask(lo, hi) * k
                    changed += 1
                    late = 0
                    continue
                g.lead_ps = old_lead
                g.release = old_rel
                if not self.ctx.policy.split:
                    continue
                # Keep more of the tensor resident: the bytes that could not arrive.
                extra = int(np.ceil(late * self.fetch_bw / 1e12 / self.ps))
                keep = min(g.pages, g.kept_pages() + extra)
                add = keep - g.kept_pages()
                if add <= 0:
                    continue
                lo2, hi2 = g.free_op, g.release
                if hi2 > lo2 and (occ + self._window_mask(lo2, hi2) * add).max() > self.cap:
                    continue
                if hi2 > lo2:
                    occ = occ + self._window_mask(lo2, hi2) * add
                g.split = keep / g.pages
                changed += 1
                late -= add * self.ps / self.fetch_bw * 1e12
        self.schedule()
        return changed


class TMTraining(Policy):
    name = "tm-training"

    def __init__(self) -> None:
        self.planner: Planner | None = None
        self.monitor_changes: list[int] = []

    def plan(self, ctx: PlanContext) -> PlacementTable:
        self.planner = Planner(ctx)
        self.planner.plan()
        return self.planner.table()

    def adjust(self, table: PlacementTable, ctx: PlanContext,
               fb: Feedback) -> PlacementTable:
        if not ctx.policy.monitor or self.planner is None:
            return table
        changed = self.planner.monitor(fb)
        self.monitor_changes.append(changed)
        if not changed:
            return table
        return self.planner.table()
