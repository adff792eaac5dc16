"""The lower bound on inter-tier traffic (``tmhw.placement.bounds.traffic_bound``) and the
LP it solves; the time bound and the bounds a run reports are in test_bounds_time.py.

The traffic bound is checked against brute force on tiny hand-built iterations: every
integral choice of pages evicted per gap, each op's occupancy against the capacity, and
the cost of each choice from an independent page-state replay (per tensor, how many of
its tail pages flash holds a current copy of; a write makes that copy stale, an
eviction beyond it writes the difference back, a fetch brings back what left, and dead
data, overwritten at the next access, costs nothing). The bound must be the brute-force
minimum at every capacity, its plan must fit and cost what it reports, and real models
must give 0 bytes at the footprint and never more at a larger capacity."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tmhw.placement.base import PlanContext
from tmhw.placement.bounds import TrafficBound, traffic_bound, write_epochs
from tmhw.placement.gaps import GapPlan
from tmhw.workload.graph import Kind, Op, Phase, Tensor, Workload
from tmhw.workload.zoo import build

PS = 4096


# -- tiny workloads -----------------------------------------------------------------------
def workload(tensors: dict[str, tuple[Kind, int]], ops: list[str]) -> Workload:
    """Tensors by name (kind, pages) and ops as ``"reads > writes"`` of those names."""
    names = list(tensors)
    ts = [Tensor(i, n, k, p * PS) for i, (n, (k, p)) in enumerate(tensors.items())]
    out = []
    for i, spec in enumerate(ops):
        r, w = spec.split(">")
        out.append(Op(i, f"op{i}", Phase.FORWARD, f"l{i}",
                      reads=tuple(names.index(x) for x in r.split()),
                      writes=tuple(names.index(x) for x in w.split())))
    wl = Workload("tiny", 1, ts, out, page_size=PS)
    wl.check()
    return wl


def gap_plan(wl: Workload) -> GapPlan:
    n = len(wl.ops)
    end = np.arange(1, n + 1, dtype=np.int64) * 1_000_000
    return GapPlan(PlanContext(wl, wl.npages, end - 1_000_000, end, 7e9, 6.5e9))


#: A training step with every case the costs distinguish: the mini-batch ``x``; a weight
#: ``w`` read three times and rewritten without being read by the optimizer (op 6), so
#: its epoch wraps round into the next iteration and its last gap is dead; a master copy
#: ``m`` updated in place by the optimizer alone (its wrap gap covers every other op); an
#: activation ``s`` overwritten without being read (op 3) after a gap; an activation
#: ``a`` read twice in one epoch; a workspace ``d`` written and never read; a gradient.
STEP = workload(
    {"x": (Kind.INPUT, 1), "w": (Kind.WEIGHT, 2), "m": (Kind.MASTER, 2),
     "s": (Kind.ACTIVATION, 2), "a": (Kind.ACTIVATION, 1), "d": (Kind.WORKSPACE, 1),
     "g": (Kind.WEIGHT_GRAD, 2)},
    ["x w > s a", "s > d", "a w >", "> s", "s w > g", "a g > g", "g m > m w"])

#: A frozen weight ``f`` (persistent, never written: evictions cost fetches only) beside
#: an activation read in place (read-modify-write) after a long gap.
FROZEN = workload(
    {"f": (Kind.WEIGHT, 2), "h": (Kind.ACTIVATION, 2), "y": (Kind.ACTIVATION, 1)},
    ["f > h", "h > y", "y >", "f y > h", "h >"])


@st.composite
def tiny_workloads(draw: st.DrawFn) -> Workload:
    """3-6 ops, 2-4 tensors of 1-3 pages, each accessed at 1-4 ops by a read, a write or
    both; a non-persistent tensor is written first, the mini-batch only read."""
    n = draw(st.integers(3, 6))
    kinds = [Kind.INPUT, Kind.WEIGHT, Kind.OPT_STATE, Kind.ACTIVATION, Kind.ACTIVATION,
             Kind.WORKSPACE, Kind.WEIGHT_GRAD]
    tensors: dict[str, tuple[Kind, int]] = {}
    reads: list[list[str]] = [[] for _ in range(n)]
    writes: list[list[str]] = [[] for _ in range(n)]
    for i in range(draw(st.integers(2, 4))):
        name = f"t{i}"
        kind = draw(st.sampled_from(kinds))
        tensors[name] = (kind, draw(st.integers(1, 3)))
        at = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=4)))
        for j, o in enumerate(at):
            mode = draw(st.sampled_from(["r", "w", "rw"]))
            if kind == Kind.INPUT:
                mode = "r"
            elif j == 0 and not kind.persistent:
                mode = "w"          # Workload.check: written before it is read
            if "r" in mode:
                reads[o].append(name)
            if "w" in mode:
                writes[o].append(name)
    return workload(tensors, [" ".join(r) + " > " + " ".join(w)
                              for r, w in zip(reads, writes, strict=True)])


# -- brute force --------------------------------------------------------------------------
class Brute:
    """Every integral eviction choice of a workload, its occupancy and its cost, found
    without ``bounds``: the gaps are ``GapPlan``'s (so that per-gap answers compare),
    everything else is recomputed here."""

    def __init__(self, gp: GapPlan) -> None:
        wl, n = gp.wl, gp.n
        self.gp, self.n = gp, n
        self.uses = wl.uses()
        # pages live during each op with nothing evicted
        base = np.zeros(n, dtype=np.int64)
        for t, u in enumerate(self.uses):
            tt = wl.tensors[t]
            if not u:
                continue
            lo, hi = u[0][0], u[-1][0]
            if tt.kind.persistent:
                lo, hi = 0, n - 1
            elif tt.kind == Kind.INPUT:
                lo = 0
            base[lo:hi + 1] += tt.npages
        assert np.array_equal(base, gp._base)
        self.base = base
        # gap x op: the gap strictly contains the op (either iteration)
        cover = np.zeros((len(gp.gaps), n), dtype=np.int64)
        for gi, g in enumerate(gp.gaps):
            for o in range(n):
                cover[gi, o] = g.a < o < g.b or g.a < o + n < g.b
        self.cover = cover
        self.pages = np.array([wl.tensors[g.tensor].npages for g in gp.gaps])
        movable = [gi for gi, g in enumerate(gp.gaps)
                   if cover[gi].any() and wl.tensors[g.tensor].kind != Kind.INPUT]
        self.movable = movable
        self.floor = base - self.pages[movable] @ cover[movable]   # evict all that can go

    def size(self) -> int:
        return math.prod(int(self.pages[gi]) + 1 for gi in self.movable)

    def choices(self) -> np.ndarray:
        """Every choice, one row each: pages evicted per gap."""
        grid = itertools.product(*(range(int(self.pages[gi]) + 1) for gi in self.movable))
        x = np.zeros((self.size(), len(self.gp.gaps)), dtype=np.int64)
        if self.movable:
            x[:, self.movable] = np.array(list(grid), dtype=np.int64)
        return x

    def occupancy(self, x: np.ndarray) -> np.ndarray:
        return self.base - x @ self.cover

    def fits(self, x: np.ndarray, cap: int) -> np.ndarray:
        return np.all(self.occupancy(x) <= np.maximum(cap, self.floor), axis=-1)

    def cost_pages(self, x: np.ndarray) -> np.ndarray:
        """Pages fetched plus written back per choice (rows of x), in steady state:
        a persistent tensor's accesses replay twice and the second pass counts."""
        gp = self.gp
        total = np.zeros(len(x), dtype=np.int64)
        for t, u in enumerate(self.uses):
            gis = gp.of_tensor[t]
            if not gis:
                continue
            p = int(gp.pages[t])
            persistent = bool(gp.persistent[t])
            written = any(w for _, w in u)
            # tail pages of which flash holds the current data
            held = np.full(len(x), 0 if written else p, dtype=np.int64)
            for it in (0, 1) if persistent else (1,):
                for j, (_, w) in enumerate(u):
                    if w:
                        held[:] = 0
                    if j >= len(gis) or gp.gaps[gis[j]].pure_write:
                        continue  # no gap after the last use, or the data is dead
                    out = x[:, gis[j]]
                    cost = out + np.maximum(out - held, 0)
                    held = np.maximum(held, out)
                    if it == 1:
                        total += cost
        return total


def check_plan(b: TrafficBound, brute: Brute, cap: int) -> None:
    """The bound's plan fits at every op and costs exactly what the bound reports."""
    x = b.evicted_pages[None, :]
    assert brute.fits(x, cap)[0]
    assert int(brute.cost_pages(x)[0]) * PS == b.total_bytes
    assert b.total_bytes == b.read_bytes + b.write_bytes
    assert int(b.written_pages.sum()) * PS == b.write_bytes
    assert int(b.fetched_pages.sum()) * PS == b.read_bytes
    assert (b.written_pages <= b.evicted_pages).all()
    assert (b.evicted_pages <= brute.pages).all() and (b.evicted_pages >= 0).all()


def assert_bound_is_brute_force_minimum(wl: Workload) -> None:
    gp = gap_plan(wl)
    brute = Brute(gp)
    x = brute.choices()
    cost = brute.cost_pages(x)
    peak = int(brute.base.max())
    prev = None
    for cap in range(0, peak + 2):
        best = int(cost[brute.fits(x, cap)].min()) * PS
        b = traffic_bound(gp, cap)
        assert b.integral
        assert b.total_bytes == best, f"capacity {cap}"
        assert b.relaxed_bytes <= b.total_bytes + 1e-6
        assert b.overfull_ops == int((brute.floor > cap).sum())
        check_plan(b, brute, cap)
        if prev is not None:
            assert b.total_bytes <= prev
        prev = b.total_bytes
    assert prev == 0


# -- the traffic bound --------------------------------------------------------------------
def test_step_has_each_case_the_costs_distinguish() -> None:
    gp = gap_plan(STEP)
    names = [t.name for t in STEP.tensors]
    gaps = {(names[g.tensor], g.a, g.b): g for g in gp.gaps}
    assert gaps[("w", 4, 6)].pure_write                 # the optimizer overwrites w
    assert gaps[("s", 1, 3)].pure_write                 # s overwritten after a gap
    assert ("m", 6, 13) in gaps                         # m's wrap covers every other op
    assert not any(names[g.tensor] == "d" for g in gp.gaps)   # dead once written
    epoch, pos, _ = write_epochs(gp)
    # w's epoch opens at the optimizer and wraps round to its forward and backward reads
    wrap, fwd, bwd = gaps[("w", 6, 7)], gaps[("w", 0, 2)], gaps[("w", 2, 4)]
    gi = {id(g): i for i, g in enumerate(gp.gaps)}
    assert epoch[gi[id(wrap)]] == epoch[gi[id(fwd)]] == epoch[gi[id(bwd)]] >= 0
    assert [pos[gi[id(g)]] for g in (wrap, fwd, bwd)] == [0, 1, 2]


@pytest.mark.parametrize("wl", [STEP, FROZEN], ids=["step", "frozen"])
def test_bound_is_the_brute_force_minimum_at_every_capacity(wl: Workload) -> None:
    assert_bound_is_brute_force_minimum(wl)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(wl=tiny_workloads())
def test_bound_is_the_brute_force_minimum_on_random_tiny_iterations(wl: Workload) -> None:
    brute = Brute(gap_plan(wl))
    assume(len(brute.movable) >= 2 and brute.size() <= 20_000)
    assert_bound_is_brute_force_minimum(wl)


def test_frozen_weight_evictions_cost_only_their_fetch() -> None:
    gp = gap_plan(FROZEN)
    # op 2 holds f (2 pages), h (2) and y (1); at 2 pages f and h both leave for nothing
    # written back but h's epoch: f costs 2 fetches, h 2 fetches + 2 writes
    b = traffic_bound(gp, 1)
    f = [i for i, g in enumerate(gp.gaps) if g.tensor == 0]
    assert b.written_pages[f].sum() == 0
    assert b.evicted_pages[f].sum() > 0


#: Three frozen one-page weights, each read at two of ops 0, 2, 4, and one-op workspaces
#: at ops 1, 3, 5 that each need one page freed at a capacity of 3. The long gaps form an
#: odd cycle of circular intervals: the relaxation evicts half of each (1.5 pages); a
#: plan needs two whole pages.
TRIANGLE = workload({"A": (Kind.WEIGHT, 1), "B": (Kind.WEIGHT, 1), "C": (Kind.WEIGHT, 1),
                     "e": (Kind.WORKSPACE, 1), "f": (Kind.WORKSPACE, 1),
                     "g": (Kind.WORKSPACE, 1)},
                    ["A B >", "> e", "B C >", "> f", "A C >", "> g"])


def test_a_fractional_relaxation_is_resolved_to_an_integral_optimum() -> None:
    gp = gap_plan(TRIANGLE)
    b = traffic_bound(gp, 3)
    assert b.relaxed_bytes == pytest.approx(1.5 * PS)
    assert b.integral and b.total_bytes == 2 * PS == b.read_bytes
    check_plan(b, Brute(gp), 3)


def test_without_time_to_prove_optimality_the_rounded_relaxation_is_still_a_plan() -> None:
    gp = gap_plan(TRIANGLE)
    b = traffic_bound(gp, 3, node_limit=0)
    assert not b.integral
    assert b.relaxed_bytes == pytest.approx(1.5 * PS)
    assert b.total_bytes >= 2 * PS
    check_plan(b, Brute(gp), 3)


def test_a_program_solved_before_in_the_process_is_not_solved_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A planner that plans again at the same capacity asks the same MILP: it is
    solved once and gives the same plan; another node budget is another program."""
    import scipy.optimize

    import tmhw.placement.bounds as B
    monkeypatch.setattr(B, "_MILP_SOLVED", {})
    solves: list[int] = []
    milp = scipy.optimize.milp

    def counted(*args: Any, **kw: Any) -> Any:
        solves.append(kw["options"]["node_limit"])
        return milp(*args, **kw)

    monkeypatch.setattr(scipy.optimize, "milp", counted)
    gp = gap_plan(TRIANGLE)
    first, again = traffic_bound(gp, 3), traffic_bound(gp, 3)
    assert solves == [20000]
    assert first.integral and again.integral and first.total_bytes == again.total_bytes
    assert np.array_equal(first.evicted_pages, again.evicted_pages)
    assert not traffic_bound(gp, 3, node_limit=0).integral
    assert solves == [20000, 0]


def test_capacity_under_unevictable_pages_is_relaxed_and_counted_not_an_error() -> None:
    gp = gap_plan(STEP)
    brute = Brute(gp)
    b = traffic_bound(gp, 0)
    assert b.overfull_ops == len(STEP.ops)
    assert np.array_equal(brute.occupancy(b.evicted_pages[None, :])[0], brute.floor)


@pytest.fixture(scope="module")
def bert_gaps() -> GapPlan:
    """The quick preset's workload: BERT-base, seq 128, batch 8, Adam, 4 KiB pages."""
    return gap_plan(build("bert-base", batch=8, seq=128, page_size=PS))


def test_real_model_bound_is_zero_at_the_footprint_and_never_grows_with_capacity(
        bert_gaps: GapPlan) -> None:
    foot = -(-bert_gaps.wl.peak_live_bytes() // PS)
    got = [traffic_bound(bert_gaps, math.floor(r * foot)) for r in (0.125, 0.5, 1.0)]
    assert got[2].total_bytes == 0 and not got[2].evicted_pages.any()
    assert got[0].total_bytes > got[1].total_bytes > 0
    for b in got:
        assert b.integral and b.overfull_ops == 0
        assert b.solve_s < 2.0


def test_real_model_plan_fits_every_op_and_costs_what_it_reports(
        bert_gaps: GapPlan) -> None:
    gp = bert_gaps
    cap = math.floor(0.125 * -(-gp.wl.peak_live_bytes() // PS))
    b = traffic_bound(gp, cap)
    occ = gp._base.copy()
    n = gp.n
    for gi, g in enumerate(gp.gaps):
        k = int(b.evicted_pages[gi])
        if k:
            ops = np.arange(g.a + 1, g.b) % n
            occ[ops] -= k
    assert occ.max() <= cap
    # each page evicted over a gap that ends in a read comes back; writes stay within
    # what left, and in one write epoch add up to the largest eviction
    pure = np.array([g.pure_write for g in gp.gaps])
    assert np.array_equal(b.fetched_pages, np.where(pure, 0, b.evicted_pages))
    epoch, _, _ = write_epochs(gp)
    for e in np.unique(epoch[epoch >= 0]):
        sel = (epoch == e) & ~pure
        assert b.written_pages[sel].sum() == b.evicted_pages[sel].max(initial=0)
    assert b.total_bytes == pytest.approx(b.relaxed_bytes)


# -- the LP's memory ----------------------------------------------------------------------
def _reference_lp(gp: GapPlan, cap: int, movable_input: bool = False) -> tuple[
        Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The LP's constraint matrix as the bound first built it (an incidence matrix of
    every op, sliced to the active rows and stacked with the epoch rows through
    ``scipy.sparse``), with the interval columns, the rows' right-hand sides and costs."""
    import scipy.sparse as sp

    from tmhw.placement import bounds as B

    n, ga, gb = gp.n, gp.ga, gp.gb
    tens = np.array([g.tensor for g in gp.gaps], dtype=np.int64)
    pure = np.array([g.pure_write for g in gp.gaps], dtype=bool)
    var = np.flatnonzero((gb - ga >= 2) & (movable_input | ~gp.is_input[tens]))
    nv, vp = len(var), gp.pages[tens][var]
    lens = np.maximum(gb[var] - ga[var] - 1, 0)
    cols = np.repeat(np.arange(nv), lens)
    offs = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    rows = (np.repeat(ga[var] + 1, lens) + offs) % n
    most = np.bincount(rows, weights=vp[cols], minlength=n).astype(np.int64)[:n]
    rhs = np.minimum(np.asarray(gp._base, dtype=np.int64) - cap, most)
    active = np.flatnonzero(rhs > 0)
    epoch, _, _ = write_epochs(gp, inputs=movable_input)
    ve, costly = epoch[var], ~pure[var]
    in_ep = costly & (ve >= 0)
    members = np.bincount(ve[in_ep], minlength=1)
    shared = np.zeros(nv, dtype=bool)
    shared[in_ep] = members[ve[in_ep]] >= 2
    cost = costly.astype(np.float64)
    cost[in_ep & ~shared] += 1.0
    eps = np.unique(ve[shared])
    ne, wcol, sv = len(eps), np.searchsorted(eps, ve[shared]), np.flatnonzero(shared)
    inc = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, nv))
    link = sp.csr_matrix(
        (np.concatenate((np.ones(len(sv)), -np.ones(len(sv)))),
         (np.concatenate((np.arange(len(sv)), np.arange(len(sv)))),
          np.concatenate((sv, nv + wcol)))), shape=(len(sv), nv + ne))
    a_ub = sp.vstack((sp.hstack((-inc[active], sp.csr_matrix((len(active), ne)))),
                      link)).tocsr()
    assert np.array_equal(B._cover(ga[var], gb[var], n, vp), most)
    return a_ub, inc, rhs, cost, var


@pytest.mark.parametrize("which", ["step", "frozen", "bert"])
def test_the_lp_is_the_interval_lp_with_a_cover_per_op_in_linear_size(
        which: str, bert_gaps: GapPlan, monkeypatch: pytest.MonkeyPatch) -> None:
    """The LP HiGHS gets is the interval LP (an incidence matrix of every op over the
    gaps covering it, as the bound first built it) with one cover variable per op: for
    any gap evictions ``x``, the difference rows hold exactly with ``y = incidence @
    x``; each active op's capacity row is the bound ``y >= rhs``; the epoch rows are
    the same; its optimum is the interval LP's; and it has at most an entry or two per
    gap and per op (the interval matrix has one per gap per op it covers: on BERT-base
    at 12.5%, many times more). Rounding then gives back pages as the incidence
    matrix's columns did."""
    import scipy.optimize
    import scipy.sparse as sp

    from tmhw.placement import bounds as B

    gp = {"step": gap_plan(STEP), "frozen": gap_plan(FROZEN), "bert": bert_gaps}[which]
    seen: list[dict[str, Any]] = []
    real = scipy.optimize.linprog
    solve = B.linprog

    def scipy_csr(m: Any) -> Any:
        return None if m is None else sp.csr_matrix((m.data, m.indices, m.indptr),
                                                    shape=m.shape)

    def spy(c: Any, **kw: Any) -> Any:
        seen.append({"c": c, **kw, "A_eq": scipy_csr(kw["a_eq"]),
                     "A_ub": scipy_csr(kw["a_ub"])})
        return solve(c, **kw)

    monkeypatch.setattr(B, "linprog", spy)
    rng = np.random.default_rng(0)
    caps = (2, 4) if which != "bert" else (
        math.floor(0.125 * -(-gp.wl.peak_live_bytes() // PS)),)
    for cap in caps:
        for movable in (False, True):
            ref, inc, rhs, cost, var = _reference_lp(gp, cap, movable)
            seen.clear()
            B.traffic_bound(gp, cap, movable_input=movable)
            if ref.shape[0] == 0:
                assert seen == []
                continue
            call = seen[0]
            a_eq, a_ub, box = call["A_eq"], call["A_ub"], call["bounds"]
            n, nv = gp.n, len(var)
            ne = ref.shape[1] - nv
            assert a_eq.shape == (n, nv + ne + n)
            for _ in range(5):
                x = rng.integers(0, 4, nv)
                w = rng.integers(0, 4, ne)
                y = inc @ x
                assert not (a_eq @ np.concatenate((x, w, y))).any()
            active = np.flatnonzero(rhs > 0)
            assert np.array_equal(box[nv + ne:, 0][active], rhs[active])
            assert not box[nv + ne:, 0][rhs <= 0].any()
            k = len(active)
            if ref.shape[0] > k:
                assert np.array_equal(a_ub[:, :nv + ne].toarray(), ref[k:].toarray())
                assert not a_ub[:, nv + ne:].count_nonzero()
            else:
                assert a_ub is None
            assert a_eq.nnz + (0 if a_ub is None else a_ub.nnz) <= 3 * (nv + ne + n) + 2
            if which == "bert":
                assert inc.nnz > 10 * a_eq.nnz
            c_ref = np.concatenate((cost, np.ones(ne)))
            b_ref = np.concatenate((-rhs[active].astype(np.float64),
                                    np.zeros(ref.shape[0] - k)))
            opt = real(c_ref, A_ub=ref, b_ub=b_ref, bounds=box[:nv + ne], method="highs-ds")
            assert opt.status == 0
            mine = real(call["c"], A_eq=a_eq, b_eq=call["b_eq"], A_ub=a_ub, b_ub=call["b_ub"],
                        bounds=box, method="highs-ds")
            assert mine.fun == pytest.approx(opt.fun, abs=1e-6)
            # rounding's give-back over interval slices is the incidence columns' one
            x = np.asarray(gp.pages[[g.tensor for g in gp.gaps]])[var]
            csc = inc.tocsc()
            slack = np.asarray(inc @ x, dtype=np.int64) - rhs
            want = x.copy()
            for j in np.lexsort((np.arange(len(x)), -cost)).tolist():
                ops = csc.indices[csc.indptr[j]:csc.indptr[j + 1]]
                d = min(int(want[j]), int(slack[ops].min())) if len(ops) else int(want[j])
                if d > 0:
                    want[j] -= d
                    slack[ops] -= d
            got = B._shrink(x, gp.ga[var], gp.gb[var], gp.n, rhs, cost)
            assert np.array_equal(got, want)
