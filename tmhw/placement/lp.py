"""Linear programs solved by HiGHS through its own Python package (``highspy``).

The bounds' and the planners' LPs (``placement.bounds``, ``placement.nand_bound``) go to
HiGHS as scipy's ``linprog`` would hand them over (its ``highs-ds`` and ``highs-ipm``
methods: the same model, column-wise, the same options), so they end on the same
vertex, without scipy.optimize: importing it took 0.18-0.23 s of every process that
solved an LP (it imports every optimizer scipy has), a tenth of a BERT-large run
(``tmhw bench --case e2e-bert``), against 0.01 s for highspy. HiGHS lets go of
Python's lock while it solves, so an LP on the bounds' thread (``tmhw.lower_bounds``)
runs beside the plan.

``highspy`` is pinned to the HiGHS that scipy 1.17 carries (1.12.0): another release
may end a degenerate LP on another optimal vertex, which is another plan.
``tests/placement/test_lp.py`` holds the two to the same solutions.

The matrices are ``Sparse``: compressed rows (``indptr``, ``indices``, ``data``) built
with numpy, stacked and turned column-wise here as scipy.sparse would (duplicates
summed, indices sorted, explicit zeros kept), so the bounds need no scipy.sparse
either (0.13 s more of an import). Pure: no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: HiGHS's options as scipy's ``linprog`` sets them for its ``highs`` methods (the
#: others at HiGHS's defaults): presolve on, the dual simplex strategy, nothing
#: printed
_OPTIONS = {"presolve": "on", "simplex_strategy": 1, "highs_debug_level": 0,
            "log_to_console": False, "output_flag": False}
#: HiGHS's indices (highspy's build) are 32-bit: a model of this many rows, columns or
#: nonzeros does not fit
HIGHS_INDEX_LIMIT = 2**31
#: ``linprog``'s methods and HiGHS's ``solver`` option
METHODS = {"highs-ds": "simplex", "highs-ipm": "ipm"}
#: HiGHS's dual simplex pricing by devex weights (``simplex_dual_edge_weight_strategy``;
#: its default chooses dual steepest edge on these LPs)
DEVEX = 1


@dataclass(frozen=True, slots=True)
class Sparse:
    """A sparse matrix in compressed rows: row ``i``'s entries are
    ``data[indptr[i]:indptr[i+1]]`` in columns ``indices[...]``, sorted, none twice."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def coo(cls, data: np.ndarray, rows: np.ndarray, cols: np.ndarray,
            shape: tuple[int, int]) -> Sparse:
        """The matrix of entries (``rows[k]``, ``cols[k]``) = ``data[k]``, those at one
        place summed (scipy's ``csr_matrix((data, (rows, cols)))``)."""
        nr, nc = shape
        rows, cols = np.asarray(rows), np.asarray(cols)
        data = np.asarray(data, dtype=np.float64)
        order = np.lexsort((cols, rows))
        r, c, d = rows[order], cols[order], data[order]
        if len(r):
            new = np.empty(len(r), dtype=bool)
            new[0] = True
            new[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
            at = np.flatnonzero(new)
            d = np.add.reduceat(d, at) if len(at) < len(r) else d
            r, c = r[at], c[at]
        indptr = np.zeros(nr + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=nr), out=indptr[1:])
        return cls(indptr, c, d, (nr, nc))

    @classmethod
    def empty(cls, columns: int) -> Sparse:
        """A matrix of no rows and ``columns`` columns."""
        return cls(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0),
                   (0, columns))

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def rows(self) -> np.ndarray:
        """Each entry's row."""
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))

    def with_row(self, row: np.ndarray) -> Sparse:
        """This matrix with the dense ``row`` appended (its nonzeros)."""
        nz = np.flatnonzero(row)
        return Sparse(np.concatenate((self.indptr, [self.nnz + len(nz)])),
                      np.concatenate((self.indices, nz)),
                      np.concatenate((self.data, row[nz])),
                      (self.shape[0] + 1, self.shape[1]))

    def wider(self, columns: int) -> Sparse:
        """This matrix with ``columns`` empty columns on its right."""
        return Sparse(self.indptr, self.indices, self.data,
                      (self.shape[0], self.shape[1] + columns))


def stack(*blocks: Sparse) -> Sparse:
    """The blocks one under the other (as many columns each)."""
    nc = blocks[0].shape[1]
    assert all(b.shape[1] == nc for b in blocks)
    ptrs, off = [np.zeros(1, dtype=np.int64)], 0
    for b in blocks:
        ptrs.append(b.indptr[1:] + off)
        off += b.nnz
    return Sparse(np.concatenate(ptrs), np.concatenate([b.indices for b in blocks]),
                  np.concatenate([b.data for b in blocks]),
                  (sum(b.shape[0] for b in blocks), nc))


@dataclass(frozen=True, slots=True)
class LpResult:
    """What ``linprog`` found: ``status`` 0 with ``x`` and ``fun`` where HiGHS proved
    an optimum; else 2, HiGHS's status in ``message``, ``x`` empty."""

    status: int
    message: str
    x: np.ndarray
    fun: float


def linprog(c: np.ndarray, *, a_ub: Sparse | None, b_ub: np.ndarray | None,
            a_eq: Sparse | None, b_eq: np.ndarray | None, bounds: np.ndarray,
            method: str = "highs-ds", devex: bool = False) -> LpResult:
    """Minimise ``c @ x`` subject to ``a_ub @ x <= b_ub``, ``a_eq @ x == b_eq`` and
    ``bounds[:, 0] <= x <= bounds[:, 1]``, by the dual simplex (``highs-ds``) or the
    interior point method with a crossover to a vertex (``highs-ipm``), as scipy's
    ``linprog`` does with those methods (module docstring). ``devex``: the dual simplex
    prices by devex weights instead, which is not scipy's and may end on another
    optimal vertex, so only for a caller that reads the optimum's value alone (the NAND
    bounds' LP of GPT-2 medium at 1024 layers: 5.8 s instead of 10.1 s, at 256 layers
    0.37 s instead of 0.55 s, the same optimum)."""
    import highspy

    c = np.asarray(c, dtype=np.float64)
    n = len(c)
    parts = [m for m in (a_ub, a_eq) if m is not None]
    a = stack(*parts) if parts else Sparse.empty(n)
    m_ub = 0 if a_ub is None else a_ub.shape[0]
    bu = np.zeros(0) if b_ub is None else np.asarray(b_ub, dtype=np.float64)
    be = np.zeros(0) if b_eq is None else np.asarray(b_eq, dtype=np.float64)
    assert len(bu) == m_ub and len(be) == (0 if a_eq is None else a_eq.shape[0])
    if max(a.nnz, a.shape[0], n) >= HIGHS_INDEX_LIMIT:
        raise ValueError(f"LP of {a.shape[0]} rows, {n} columns and {a.nnz} nonzeros: "
                         f"HiGHS's indices hold fewer than {HIGHS_INDEX_LIMIT}")
    # column-wise, rows sorted within each column (scipy's ``csc_array`` of the stack)
    rows = a.rows()
    order = np.lexsort((rows, a.indices))
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a.indices, minlength=n), out=start[1:])
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = a.shape[0]
    lp.col_cost_ = c
    lp.col_lower_ = np.ascontiguousarray(bounds[:, 0], dtype=np.float64)
    lp.col_upper_ = np.ascontiguousarray(bounds[:, 1], dtype=np.float64)
    lp.row_lower_ = np.concatenate((np.full(m_ub, -np.inf), be))
    lp.row_upper_ = np.concatenate((bu, be))
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = a.shape[0]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start
    lp.a_matrix_.index_ = rows[order]
    lp.a_matrix_.value_ = a.data[order]
    h = highspy.Highs()
    for key, val in (*_OPTIONS.items(), ("solver", METHODS[method])):
        h.setOptionValue(key, val)
    if devex:
        h.setOptionValue("simplex_dual_edge_weight_strategy", DEVEX)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        return LpResult(2, f"HiGHS: {h.modelStatusToString(status)}", np.zeros(0),
                        float("nan"))
    return LpResult(0, "optimal", np.array(h.getSolution().col_value),
                    float(h.getInfo().objective_function_value))
