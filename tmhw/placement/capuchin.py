"""Capuchin (Peng et al., "Capuchin: Tensor-based GPU Memory Management for Deep
Learning", ASPLOS'20) as a placement policy: per tensor, swap it out or recompute it,
chosen by Capuchin's cost rule from a measured iteration.

**What the paper built.** Capuchin manages GPU memory per tensor at run time in
TensorFlow. Its first iteration runs in passive mode (tensors are swapped out on demand
when memory runs short) and records every tensor access with its time; from that trace
it plans the later iterations. The candidates are the tensors accessed in the forward
pass and again in the backward pass. For each, the *free time* is the time between the
end of its swap-out after its last forward access and the start of the swap-in its
backward access needs; the swap-in is triggered by an earlier access ("in-trigger") so
that it completes just in time. Its policy: swap first, in order of free time, taking
the tensors whose swaps are hidden (free time > 0) until the memory to save is saved;
then, for the rest, compute each one's recomputation cost (the time to re-run the ops
that produce it from tensors still in memory) and its memory saving per second of
recomputation (MSPS), and take them in order of MSPS, each by swap or by recomputation,
whichever adds less time (the swap adds the part of its transfer the free time cannot
hide). Weights stay in GPU memory.

**Adapted to an NPU with HBM and flash**, on the gap model of ``tmhw.placement.gaps``:

- The measured iteration is the NPU model's stall-free profile of the configured
  iteration and the sustained flash rates each way (``PlanContext``); a candidate is a
  ``saved_activations`` tensor. Its swap leaves HBM at the end of its last forward use
  (a write-back) and its prefetch is released at the in-trigger: the latest op that
  starts at least a fetch's time before its first backward use.
- "The memory to save" is per op: a choice is taken only while some op it frees is
  still over the capacity, and selection stops when none is.
- Recomputation re-runs the tensor's producing forward op just before the backward
  needs it (``workload.recompute`` "ops": the system rebuilds the iteration with the
  chosen ops recomputed, and the recompute ops are real NPU ops of the backward). An op
  is recomputable when everything it reads is in HBM then: weights, the mini-batch, a
  saved activation that is kept (not swapped), or the output of the op right before it
  in its block that is recomputed too (a run of consecutive recomputed ops re-runs
  together, Capuchin's recomputation from the nearest tensor in memory). Its cost is
  the op's profiled time; its saving its outputs' pages from its last forward use to
  the backward.
- The swaps are then planned again on the rebuilt iteration by the same rule (free
  time first, then the least added time per page), which is what runs.

Where HBM holds the whole footprint nothing moves and nothing is recomputed, so at HBM
ratio 1 it is ``hbm-only``. Weights, gradients and optimizer state stay in HBM; where
every activation swapped or recomputed does not fit, the run does not fit
(``DoesNotFit``). ``policy.capuchin.recompute`` false: swaps only (Capuchin's
swap-only configuration).

**Idealised.** The profile is exact and taken once (Capuchin re-measures when the
iteration changes); transfers are estimated at the sustained flash rates with no
queueing against other traffic; the passive first iteration is not simulated.

Pure: no SimPy.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from tmhw.placement.base import PlanContext, Policy
from tmhw.placement.gaps import GapPlan, activations_do_not_fit, finish, saved_activations
from tmhw.placement.simple import everything_resident, fits_whole
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import ConfigError
from tmhw.workload.graph import Kind, Phase


@dataclass(frozen=True, slots=True, kw_only=True)
class CapuchinParams:
    """``[policy.capuchin]``. ``recompute`` true: swap or recompute per tensor, by
    Capuchin's cost rule (module docstring); false: swap only."""

    recompute: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.recompute, bool):
            raise ConfigError("recompute", self.recompute, "true or false")


@dataclass(slots=True)
class _Candidate:
    tensor: int
    gap: int
    last_fwd: int           # its last forward use: it leaves after this op
    first_bwd: int          # its first backward use
    trigger: int            # the op whose start releases its swap-in, alone on the link
    free_ps: int            # Capuchin's free time (negative: the swap shows as stall)
    producer: int           # the forward op that wrote it


class Capuchin(Policy):
    """Per tensor, swap or recompute, by Capuchin's cost rule."""

    name = "capuchin"
    Params = CapuchinParams
    section = "capuchin"
    params: CapuchinParams
    @property
    def chooses_recompute(self) -> bool:
        return self.params.recompute

    def choose_recompute(self, ctx: PlanContext) -> tuple[str, ...]:
        if fits_whole(ctx):
            return ()
        # the first that fits: with recomputation, else swaps alone (a recomputation's
        # inputs are held from its run on, which can raise the backward's peak), else
        # the recomputation (the plan then says what does not fit)
        tries = [(drain, rc) for rc in (True, False) for drain in (True, False)]
        chosen: set[int] = set()
        for drain, rc in tries:
            gp = GapPlan(ctx)
            occ = gp.occupancy(drain)
            got = self._select(gp, occ, drain, recompute=rc)[1]
            if occ.max() <= gp.cap:
                chosen = got
                break
            if rc and not chosen:
                chosen = got
        ops = ctx.workload.ops
        return tuple(ops[i].name for i in sorted(chosen))

    def plan(self, ctx: PlanContext) -> PlacementTable:
        if fits_whole(ctx):
            return everything_resident(self.name, ctx)
        for drain in (True, False):
            gp = GapPlan(ctx)
            occ = gp.occupancy(drain)
            swapped = self._select(gp, occ, drain, recompute=False)[0]
            if occ.max() <= gp.cap:
                break
        else:
            raise activations_do_not_fit(self.name, gp, occ)
        wl = gp.wl
        recomputed = sum(1 for op in wl.ops if op.name.endswith(".recompute"))
        return finish(gp, self.name, {
            "swapped_tensors": float(len(swapped)),
            "swapped_bytes": float(sum(int(gp.pages[t]) for t in swapped) * gp.ps),
            "recomputed_ops": float(recomputed),
            "fits_with_writeback_drain": float(drain)})

    # -- Capuchin's rule ------------------------------------------------------------------
    @staticmethod
    def candidates(gp: GapPlan) -> list[_Candidate]:
        """Every saved activation with its free time and in-trigger (module docstring)."""
        n = gp.n
        start = gp.start2[:n]
        out = []
        for produced, t, gi, e, c in saved_activations(gp):
            fetch = gp.fetch_ps(t)
            free = int(gp.start2[c]) - int(gp.end2[e]) - gp.writeback_ps(t) - fetch
            r = int(np.searchsorted(start, int(start[c]) - fetch, side="right")) - 1
            out.append(_Candidate(t, gi, e, c, min(max(r, e + 1), c), free, produced))
        return out

    def _select(self, gp: GapPlan, occ: np.ndarray, drain: bool,
                recompute: bool) -> tuple[dict[int, _Candidate], set[int]]:
        """Apply Capuchin's choices to ``occ`` until no op is over the capacity (or the
        candidates run out): the tensors swapped, and the ops recomputed."""
        cap = gp.cap
        cands = self.candidates(gp)
        link = _Link(gp)
        swapped: dict[int, _Candidate] = {}
        recomputed: set[int] = set()

        def frees_over(lo: int, hi: int) -> bool:
            return hi > lo and bool(np.any(occ[lo:hi] > cap))

        def swap(c: _Candidate) -> None:
            trigger = link.book(c, commit=True)[0]
            gp.retarget(occ, c.tensor, drain, [(c.gap, c.last_fwd, trigger)])
            swapped[c.tensor] = c

        # 1. swaps the link can hide in their free time, most free time first
        for c in sorted(cands, key=lambda c: (-c.free_ps, c.tensor)):
            if occ.max() <= cap or c.free_ps < 0:
                break
            trigger, over = link.book(c)
            if over == 0 and frees_over(c.last_fwd + 1, trigger):
                swap(c)
        if occ.max() <= cap:
            return swapped, recomputed
        # 2. the rest, fewest added picoseconds per page first (Capuchin's MSPS), each by
        # the cheaper of swap (what its free time on the link cannot hide) and
        # recomputation
        op_ps = gp.end2[:gp.n] - gp.start2[:gp.n]
        by_tensor = {c.tensor: c for c in cands}

        def cost(c: _Candidate) -> tuple[int, list[int]]:
            """The ps the cheaper way adds, and the ops to recompute (none: swap)."""
            over = link.book(c)[1]
            if recompute and c.producer not in recomputed:
                chain = self._chain(gp, c.producer, by_tensor, swapped, recomputed)
                if chain is not None:
                    rc = int(sum(int(op_ps[i]) for i in chain))
                    if rc < over:
                        return rc, chain
            return over, []

        # lazily re-costed: each choice takes link time and changes what is recomputable
        heap = [(cost(c)[0] / max(1, int(gp.pages[c.tensor])), c.tensor)
                for c in cands if c.tensor not in swapped]
        heapq.heapify(heap)
        done: set[int] = set(swapped)
        freed: set[int] = set()                 # saved tensors recomputation frees
        while heap and occ.max() > cap:
            key, t = heapq.heappop(heap)
            if t in done:
                continue
            best = by_tensor[t]
            added, chain = cost(best)
            now = added / max(1, int(gp.pages[t]))
            if now > key:
                heapq.heappush(heap, (now, t))
                continue
            done.add(t)
            if chain:
                if not frees_over(best.last_fwd + 1, best.first_bwd):
                    continue
                recomputed.update(chain)
                for w in sorted({w for i in chain for w in gp.wl.ops[i].writes}):
                    saved = by_tensor.get(w)
                    if saved is not None and w not in swapped and w not in freed:
                        occ[saved.last_fwd + 1:saved.first_bwd] -= int(gp.pages[w])
                        freed.add(w)
                    done.add(w)
            elif frees_over(best.last_fwd + 1, link.book(best)[0]):
                swap(best)
        # 3. what is still over: at each such op, the activations held there leave
        # after their last forward use and come back after it, furthest backward use
        # first (Capuchin's passive mode swaps so, on demand)
        for o in np.flatnonzero(occ > cap).tolist():
            held = [c for c in cands if c.last_fwd < o < c.first_bwd
                    and c.producer not in recomputed]
            for c in sorted(held, key=lambda c: (-c.first_bwd, c.tensor)):
                if occ[o] <= cap:
                    break
                g = gp.gaps[c.gap]
                if g.evicted and g.evict_op < o < g.release:
                    continue                    # already out at o
                release = max(o + 1, g.release if g.evicted else c.trigger)
                gp.retarget(occ, c.tensor, drain, [(c.gap, c.last_fwd, release)])
                swapped[c.tensor] = c
        return swapped, recomputed

    @staticmethod
    def _chain(gp: GapPlan, op: int, by_tensor: dict[int, _Candidate],
               swapped: dict[int, _Candidate], recomputed: set[int],
               depth: int = 8) -> list[int] | None:
        """The forward ops to re-run, in order, to recompute what ``op`` writes from what
        HBM holds before the backward (module docstring): ``op``, after the ops right
        before it in its block that produce an input no longer held (at most ``depth``);
        None where an input is neither held nor so produced, or where a recomputed op
        other than the next in its block reads what the chain writes."""
        wl = gp.wl
        o = wl.ops[op]
        if o.phase != Phase.FORWARD or o.layer == "loss" or op in recomputed:
            return None
        block = o.layer.split(".", 1)[0]

        def previous_in_block(t: int) -> bool:
            p = op - 1
            return p >= 0 and t in wl.ops[p].writes and wl.ops[p].phase == Phase.FORWARD \
                and wl.ops[p].layer.split(".", 1)[0] == block

        chain = [op]
        for t in o.reads:
            tt = wl.tensors[t]
            if tt.kind.persistent or tt.kind == Kind.INPUT:
                continue
            held = t in by_tensor and t not in swapped and \
                by_tensor[t].producer not in recomputed
            if held:
                continue
            if not previous_in_block(t):
                return None
            if op - 1 in recomputed:
                continue                 # re-run right before, as one group
            if depth <= 1 or (head := Capuchin._chain(gp, op - 1, by_tensor, swapped,
                                                       recomputed, depth - 1)) is None:
                return None
            chain = head + chain
            break
        ours = set(chain)
        readers = {i for j in chain for t in wl.ops[j].writes for i, _ in gp.uses[t]}
        after = max(chain) + 1
        nxt_ok = after < gp.n and wl.ops[after].layer.split(".", 1)[0] == block
        if all(i in ours or i not in recomputed or (i == after and nxt_ok)
               for i in readers):
            return chain
        return None


class _Link:
    """The flash tier's time, op by op, as Capuchin books swaps on its measured
    timeline: a swap-out runs from its tensor's last forward use on, a swap-in backwards
    from its backward use, each at the sustained rate of its direction, in the time the
    ops take that other swaps leave. Both directions share it: a flash device's dies
    program and read in the same time."""

    def __init__(self, gp: GapPlan) -> None:
        self.gp = gp
        self.dur = (gp.end2[:gp.n] - gp.start2[:gp.n]).astype(np.float64)
        #: ps of transfer time still free during each op
        self.free = self.dur.copy()

    def book(self, c: _Candidate, commit: bool = False) -> tuple[int, int]:
        """(the op whose start releases the swap-in, the ps the swap adds to the
        iteration: 0 when both transfers fit between the uses with the swap-out done
        before the swap-in starts)."""
        gp = self.gp
        out_ps, in_ps = float(gp.writeback_ps(c.tensor)), float(gp.fetch_ps(c.tensor))
        lo, hi = c.last_fwd + 1, c.first_bwd
        out = np.cumsum(self.free[lo:hi])
        into = np.cumsum(self.free[lo:hi][::-1])
        k_out = int(np.searchsorted(out, out_ps))            # ops until the write is done
        k_in = int(np.searchsorted(into, in_ps))             # ops the read needs before hi
        # where no time is left for the read, it is released as it would be alone, and
        # waited for
        trigger = max(lo, hi - 1 - k_in) if k_in < hi - lo else c.trigger
        total = float(out[-1]) if len(out) else 0.0
        over = int(max(0.0, out_ps + in_ps - total))
        if over == 0 and lo + k_out >= trigger:
            # each fits, but the read must start before the write is done
            over = int(self.dur[trigger:lo + k_out + 1].sum())
        if commit:
            self._take(lo, hi, out_ps, forward=True)
            self._take(trigger, hi, in_ps, forward=False)
        return trigger, over

    def _take(self, lo: int, hi: int, ps: float, forward: bool) -> None:
        idx = range(lo, hi) if forward else range(hi - 1, lo - 1, -1)
        for i in idx:
            if ps <= 0:
                break
            used = min(float(self.free[i]), ps)
            self.free[i] -= used
            ps -= used
