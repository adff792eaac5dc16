"""``tmhw.placement.lp`` hands HiGHS the model scipy's ``linprog`` would: the same
column-wise matrix, bounds and options, so every LP ends on the same vertex (the plans
and bounds are the solver's vertices: another vertex of a degenerate LP is another
plan), without importing scipy.optimize or scipy.sparse."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw import config as C
from tmhw.placement import bounds as B
from tmhw.placement import lp as L
from tmhw.placement.gaps import GapPlan
from tmhw.system import System


def _scipy(m: L.Sparse) -> sp.csr_matrix:
    return sp.csr_matrix((m.data, m.indices, m.indptr), shape=m.shape)


def _same(a: L.Sparse, b: sp.csr_matrix) -> bool:
    return (a.shape == b.shape and np.array_equal(a.indptr, b.indptr)
            and np.array_equal(a.indices, b.indices) and np.array_equal(a.data, b.data))


entries = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6),
                             st.sampled_from([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0])),
                   max_size=40)


@settings(max_examples=200, deadline=None)
@given(entries, entries, st.lists(st.sampled_from([0.0, 1.0, -1.0, 2.5]), min_size=7,
                                  max_size=7))
def test_the_matrices_are_scipys(a: list[tuple[int, int, float]],
                                 b: list[tuple[int, int, float]], row: list[float]) -> None:
    """From triplets (duplicates summed, explicit zeros kept), stacked, widened and with
    a dense row appended, each matrix has scipy.sparse's compressed rows exactly."""
    def both(t: list[tuple[int, int, float]]) -> tuple[L.Sparse, sp.csr_matrix]:
        r = np.array([x[0] for x in t], dtype=np.int64)
        c = np.array([x[1] for x in t], dtype=np.int64)
        d = np.array([x[2] for x in t], dtype=np.float64)
        return L.Sparse.coo(d, r, c, (6, 7)), sp.csr_matrix((d, (r, c)), shape=(6, 7))

    (ma, sa), (mb, sb) = both(a), both(b)
    sa.sort_indices()
    assert _same(ma, sa)
    assert _same(L.stack(ma, mb), sp.vstack((sa, sb)).tocsr())
    wide = sp.hstack((sa, sp.csr_matrix((6, 3)))).tocsr()
    assert _same(ma.wider(3), wide)
    dense = np.array(row)
    assert np.array_equal(_scipy(ma.with_row(dense)).toarray(),
                          np.vstack((sa.toarray(), dense)))
    assert L.Sparse.empty(7).with_row(dense).nnz == np.count_nonzero(dense)


def _lp_calls(cfg_sets: list[str]) -> list[dict[str, object]]:
    """Every LP a system's plan and bounds solve, as given to ``lp.linprog``."""
    from tmhw import lower_bounds
    seen: list[dict[str, object]] = []
    real = L.linprog

    def spy(c: np.ndarray, **kw: object) -> L.LpResult:
        seen.append({"c": c, **kw})
        return real(c, **kw)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(B, "linprog", spy)
        import tmhw.placement.nand_bound as NB
        mp.setattr(NB, "linprog", spy)
        lower_bounds.MEMO.clear()
        s = System(C.with_overrides(C.QUICK, cfg_sets))
        s.bounds()
        # the preference LP by the interior point method too (``_interior_lp2``)
        gp = GapPlan(s.ctx)
        span = (gp.start2[gp.gb] - gp.end2[gp.ga]).astype(np.float64)
        B.traffic_bound(gp, s.capacity_pages, prefer=span, simplex_columns=0)
    return seen


def _highs_versions() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The HiGHS scipy carries and highspy's, (major, minor, patch) each."""
    import highspy._core as hs
    from scipy.optimize._highspy import _core as sc
    parts = ("MAJOR", "MINOR", "PATCH")
    return (tuple(getattr(sc, f"HIGHS_VERSION_{p}") for p in parts),
            tuple(getattr(hs, f"HIGHS_VERSION_{p}") for p in parts))


def test_highspy_is_the_highs_scipy_carries() -> None:
    """The pin holds: scipy's HiGHS and highspy's are one release (the comparison
    below is of one solver through two doors)."""
    ours, theirs = _highs_versions()
    assert ours == theirs == (1, 12, 0)


@pytest.mark.parametrize("sets", [["policy.hbm_ratio=0.25"], ["policy.hbm_ratio=0.9"],
                                  ['policy.name="tm-training"', "policy.hbm_ratio=0.5"]])
def test_every_lp_ends_where_scipys_linprog_ends(sets: list[str]) -> None:
    """Each LP of a plan and its bounds, solved by scipy's ``linprog`` on the same
    matrices: the same status, the same objective and the same ``x``, bit for bit, by
    the dual simplex and by the interior point method. The NAND bounds' LPs, priced by
    devex weights (``devex``: only their optimum's value is read), end on the same
    value, at an ``x`` whose cost is that value."""
    calls = _lp_calls(sets)
    methods = {str(k["method"]) for k in calls}
    assert methods == {"highs-ds", "highs-ipm"}
    for k in calls:
        ours = L.linprog(k["c"], **{n: v for n, v in k.items() if n != "c"})  # type: ignore
        a_ub, a_eq = k["a_ub"], k["a_eq"]
        ref = scipy.optimize.linprog(
            k["c"], A_ub=None if a_ub is None else _scipy(a_ub), b_ub=k["b_ub"],
            A_eq=None if a_eq is None else _scipy(a_eq), b_eq=k["b_eq"],
            bounds=k["bounds"], method=k["method"])
        assert ours.status == ref.status == 0
        assert ours.fun == ref.fun
        if k.get("devex"):
            assert float(np.dot(k["c"], ours.x)) == pytest.approx(ours.fun, rel=1e-12)
        else:
            assert np.array_equal(ours.x, ref.x)
    assert any(k.get("devex") for k in calls)  # (the NAND bounds' LPs were among them)


def test_an_infeasible_lp_says_so() -> None:
    """x >= 1 and x <= 0 at once: no optimum, a status other than 0 and HiGHS's word."""
    one = L.Sparse.coo(np.ones(1), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
                       (1, 1))
    res = L.linprog(np.ones(1), a_ub=one, b_ub=np.zeros(1), a_eq=None, b_eq=None,
                    bounds=np.array([[1.0, np.inf]]))
    assert res.status != 0 and "nfeasible" in res.message and res.x.size == 0


def test_a_plan_and_its_bounds_import_neither_scipy_optimize_nor_sparse(
        fresh_python: Callable[..., str]) -> None:
    """What the change is for: a fresh process that plans TM-Training, computes its
    bounds and runs imports neither (0.18-0.23 s and 0.13 s of imports before)."""
    code = ("import sys\n"
            "from tmhw import config as C\n"
            "from tmhw.system import System\n"
            "s = System(C.with_overrides(C.QUICK, ['policy.name=\"tm-training\"', "
            "'run.warmup_iterations=1']))\n"
            "s.run()\n"
            "print('scipy.optimize' in sys.modules, 'scipy.sparse' in sys.modules)")
    out = fresh_python(code)
    assert out.split()[-2:] == ["False", "False"]


def test_a_model_past_highs_indices_is_refused_not_wrapped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """HiGHS's indices are 32-bit: a model with more nonzeros is refused with its sizes
    (a cast would wrap them into another model)."""
    monkeypatch.setattr(L, "HIGHS_INDEX_LIMIT", 3)
    a = L.Sparse.coo(np.ones(3), np.zeros(3, dtype=np.int64), np.arange(3), (1, 3))
    with pytest.raises(ValueError, match="3 nonzeros: HiGHS's indices hold fewer than 3"):
        L.linprog(np.ones(3), a_ub=a, b_ub=np.ones(1), a_eq=None, b_eq=None,
                  bounds=np.zeros((3, 2)))
