"""Stall-free cycles, folds, utilisation and operand traffic of a GEMM on a systolic array.

Pure arithmetic, no SimPy. A GEMM ``C[M, N] = A[M, K] @ B[K, N]`` runs on an ``rows x cols``
systolic array in one of three dataflows. Following SCALE-Sim (Samajdar et al., ISPASS 2020,
and the code of scalesim 3.0.0), each dataflow maps two operand dimensions onto the array
(``Sr`` rows, ``Sc`` columns) and streams the third in time (``T``):

======== ============ ============ ============ ==========================================
dataflow Sr (rows)    Sc (cols)    T (time)     what stays in the PEs
======== ============ ============ ============ ==========================================
``os``   M (pixels)   N (filters)  K (window)   the output tile
``ws``   K (window)   N (filters)  M (pixels)   an R x C tile of B (the weights)
``is``   K (window)   M (pixels)   N (filters)  an R x C tile of A (the inputs)
======== ============ ============ ============ ==========================================

The array works in folds: ``folds = ceil(Sr / rows) * ceil(Sc / cols)``; a partial fold
still takes a whole fold's time. Cycles of the whole GEMM on one array:

* convention ``scalesim`` (what scalesim 3.0.0 reports as "Total Cycles" with no memory
  stall; its OS form is the code's, not the paper's, and the trailing -1 is the off-by-one
  of SCALE-Sim issue 125)::

      os: folds * (T + R + C - 2) - 1
      ws: folds * (2R + C + T - 2) - 1
      is: folds * (2R + C + T - 2) - 1

* convention ``paper`` (the published form; scale-sim-v3 issue 4 agrees the OS code is off)::

      folds * (2R + C + T - 2)          for all three dataflows

Convolutions lower to GEMM as SCALE-Sim does: M = output pixels (E_h * E_w), N = filters,
K = R_f * S_f * C (the convolution window); E = (H + 2 pad - R_f) // stride + 1 (SCALE-Sim
itself has no padding and computes ceil((H - R_f + stride) / stride), the same number).

Utilisation here is ``MACs / (cycles * rows * cols)`` (SCALE-Sim's "Overall Util %"), and
mapping efficiency the mean over folds of the fraction of PEs mapped (its "Mapping
Efficiency %"). ``compute_utilization`` reproduces SCALE-Sim's "Compute Util %": the mean over
folds of ``mapped_PEs * T / (rows * cols * fold_cycles)`` where its fold_cycles is
T + R + C - 2 (os) and 2R + 2C + T - 3 (ws, is).

Operand traffic (``gemm_traffic``) between HBM and a double-buffered scratchpad (half of each
buffer holds resident data, the other half fills, as SCALE-Sim's ``active_buf_frac = 0.5``):

* os: B's K x C column blocks stay on chip across the row folds, as many column folds at a
  time as fit half the filter buffer (B re-read per row fold if not even one fits); A is
  re-read once per such group unless all of A fits (or, if cheaper, A is read once in
  blocks of half its buffer and B re-read per block); the output accumulates in the PEs and
  is written once. No partial sums leave the array.
* ws: B is stationary and A streamed through; each column fold accumulates an M x C tile
  of partial sums over ceil(K / R) row folds.
* is: the same with the roles swapped: A stationary, B streamed, N x C partial-sum tiles.

In ws and is a schedule keeps a partial-sum tile of ``tt`` rows of the time dimension (M,
resp. N) by ``g`` column folds in half the output buffer; the stationary operand is then
loaded once per ``tt`` rows and the streamed one once per ``g`` column folds (once in all
when a ``tt``-row block of it fits half its buffer). The cheapest of a few such schedules is
taken, as a compiler would, including the uncut one (``tt`` = all rows, ``g`` = 1: SCALE-Sim's
fold order). When the chosen tile does not fit, partial sums spill: every row fold but the
last writes its partial tile to HBM (``acc_bytes`` per element) and every row fold but the
first reads it back. Cycles stay those of the formulas above whatever the schedule (the
extra weight loads of a cut, (blocks - 1) * (2R + C - 2) cycles per fold, are not charged:
an approximation that keeps compute time equal to the SCALE-Sim form).
This differs from SCALE-Sim, which writes partial sums to memory once per row fold whatever
the buffer size and never reads them back (so its ws ofmap writes are M * N * ceil(K / R)
words), and fetches operands in its own fold order without choosing a cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from tmhw.sim.errors import TmhwError

DATAFLOWS: tuple[str, ...] = ("os", "ws", "is")
CONVENTIONS: tuple[str, ...] = ("scalesim", "paper")


def _check_dims(m: int, n: int, k: int, rows: int, cols: int) -> None:
    for name, v in (("M", m), ("N", n), ("K", k), ("rows", rows), ("cols", cols)):
        if not isinstance(v, int) or v < 1:
            raise TmhwError(f"{name}: must be a positive integer, got {v!r}")


def _check_df(dataflow: str, convention: str = "scalesim") -> None:
    if dataflow not in DATAFLOWS:
        raise TmhwError(f"dataflow: one of {', '.join(DATAFLOWS)}, got {dataflow!r}")
    if convention not in CONVENTIONS:
        raise TmhwError(f"convention: one of {', '.join(CONVENTIONS)}, got {convention!r}")


def conv_output_size(ifmap: int, filt: int, stride: int = 1, pad: int = 0) -> int:
    """Output size along one axis: (ifmap + 2 pad - filt) // stride + 1."""
    if stride < 1 or pad < 0 or filt < 1 or ifmap < 1:
        raise TmhwError(f"conv: need ifmap, filter, stride >= 1 and pad >= 0, got "
                        f"ifmap={ifmap} filter={filt} stride={stride} pad={pad}")
    if ifmap + 2 * pad < filt:
        raise TmhwError(f"conv: filter {filt} larger than padded input {ifmap + 2 * pad}")
    return (ifmap + 2 * pad - filt) // stride + 1


def conv_to_gemm(ifmap_h: int, ifmap_w: int, filt_h: int, filt_w: int, channels: int,
                 num_filters: int, stride_h: int = 1, stride_w: int | None = None,
                 pad_h: int = 0, pad_w: int | None = None) -> tuple[int, int, int]:
    """Lower a convolution to GEMM as SCALE-Sim does: (M, N, K) = (output pixels, filters,
    filt_h * filt_w * channels). ``stride_w``/``pad_w`` default to the height values."""
    sw = stride_h if stride_w is None else stride_w
    pw = pad_h if pad_w is None else pad_w
    if channels < 1 or num_filters < 1:
        raise TmhwError(f"conv: channels and filters must be >= 1, got {channels}, "
                        f"{num_filters}")
    e_h = conv_output_size(ifmap_h, filt_h, stride_h, pad_h)
    e_w = conv_output_size(ifmap_w, filt_w, sw, pw)
    return e_h * e_w, num_filters, filt_h * filt_w * channels


def spatio_temporal(m: int, n: int, k: int, dataflow: str) -> tuple[int, int, int]:
    """(Sr, Sc, T): the dimensions mapped to array rows, array columns, and time."""
    _check_df(dataflow)
    if dataflow == "os":
        return m, n, k
    if dataflow == "ws":
        return k, n, m
    return k, m, n


def fold_counts(m: int, n: int, k: int, rows: int, cols: int,
                dataflow: str) -> tuple[int, int]:
    """(row_folds, col_folds) = (ceil(Sr / rows), ceil(Sc / cols))."""
    _check_dims(m, n, k, rows, cols)
    sr, sc, _ = spatio_temporal(m, n, k, dataflow)
    return -(-sr // rows), -(-sc // cols)


def cycles_per_fold(rows: int, cols: int, t: int, dataflow: str,
                    convention: str = "scalesim") -> int:
    """Cycles of one fold streaming ``t`` in time (see the module docstring)."""
    _check_df(dataflow, convention)
    if convention == "scalesim" and dataflow == "os":
        return t + rows + cols - 2
    return 2 * rows + cols + t - 2


def compute_cycles(m: int, n: int, k: int, rows: int, cols: int, dataflow: str,
                   convention: str = "scalesim") -> int:
    """Stall-free cycles of GEMM (M, N, K) on one rows x cols array."""
    rf, cf = fold_counts(m, n, k, rows, cols, dataflow)
    _, _, t = spatio_temporal(m, n, k, dataflow)
    total = rf * cf * cycles_per_fold(rows, cols, t, dataflow, convention)
    return total - 1 if convention == "scalesim" else total


def multi_array_cycles(m: int, n: int, k: int, rows: int, cols: int, arrays: int,
                       dataflow: str, convention: str = "scalesim", copies: int = 1) -> int:
    """Stall-free cycles when the folds of ``copies`` independent GEMMs (M, N, K) are dealt
    out to ``arrays`` identical arrays that run in parallel: ceil(copies * folds / arrays)
    folds each. One array and one copy give ``compute_cycles``."""
    for name, v in (("arrays", arrays), ("copies", copies)):
        if not isinstance(v, int) or v < 1:
            raise TmhwError(f"{name}: must be a positive integer, got {v!r}")
    rf, cf = fold_counts(m, n, k, rows, cols, dataflow)
    _, _, t = spatio_temporal(m, n, k, dataflow)
    total = -(-rf * cf * copies // arrays) * cycles_per_fold(rows, cols, t, dataflow,
                                                             convention)
    return total - 1 if convention == "scalesim" else total


def mapping_efficiency(m: int, n: int, k: int, rows: int, cols: int, dataflow: str) -> float:
    """Mean over folds of the fraction of PEs holding a mapped element, in (0, 1]."""
    rf, cf = fold_counts(m, n, k, rows, cols, dataflow)
    sr, sc, _ = spatio_temporal(m, n, k, dataflow)
    return (sr / (rf * rows)) * (sc / (cf * cols))


def utilization(m: int, n: int, k: int, rows: int, cols: int, dataflow: str,
                convention: str = "scalesim") -> float:
    """MACs / (cycles * rows * cols): the fraction of PE-cycles doing useful work."""
    cyc = compute_cycles(m, n, k, rows, cols, dataflow, convention)
    return (m * n * k) / (max(cyc, 1) * rows * cols)


def compute_utilization(m: int, n: int, k: int, rows: int, cols: int, dataflow: str,
                        convention: str = "scalesim") -> float:
    """SCALE-Sim's "Compute Util": mean over folds of mapped PEs * T / (PEs * fold cycles),
    with SCALE-Sim's own fold-cycle count in the ``scalesim`` convention."""
    _check_df(dataflow, convention)
    _, _, t = spatio_temporal(m, n, k, dataflow)
    if convention == "scalesim":
        fold = t + rows + cols - 2 if dataflow == "os" else 2 * rows + 2 * cols + t - 3
    else:
        fold = cycles_per_fold(rows, cols, t, dataflow, convention)
    return mapping_efficiency(m, n, k, rows, cols, dataflow) * t / fold


@dataclass(frozen=True, slots=True)
class GemmCycles:
    """Every figure of one GEMM on one array."""

    m: int
    n: int
    k: int
    rows: int
    cols: int
    dataflow: str
    convention: str
    row_folds: int
    col_folds: int
    cycles: int
    utilization: float
    mapping_efficiency: float
    compute_utilization: float

    @property
    def folds(self) -> int:
        return self.row_folds * self.col_folds

    @property
    def macs(self) -> int:
        return self.m * self.n * self.k


def gemm_cycles(m: int, n: int, k: int, rows: int, cols: int, dataflow: str,
                convention: str = "scalesim") -> GemmCycles:
    """All figures of GEMM (M, N, K) on one rows x cols array."""
    _check_df(dataflow, convention)
    rf, cf = fold_counts(m, n, k, rows, cols, dataflow)
    sr, sc, t = spatio_temporal(m, n, k, dataflow)
    folds = rf * cf
    if convention == "scalesim":
        per_fold = t + rows + cols - 2 if dataflow == "os" else 2 * rows + cols + t - 2
        cyc = folds * per_fold - 1
        util_fold = per_fold if dataflow == "os" else 2 * rows + 2 * cols + t - 3
    else:
        per_fold = util_fold = 2 * rows + cols + t - 2
        cyc = folds * per_fold
    map_eff = (sr / (rf * rows)) * (sc / (cf * cols))
    return GemmCycles(
        m=m, n=n, k=k, rows=rows, cols=cols, dataflow=dataflow, convention=convention,
        row_folds=rf, col_folds=cf, cycles=cyc,
        utilization=(m * n * k) / (max(cyc, 1) * rows * cols),
        mapping_efficiency=map_eff, compute_utilization=map_eff * t / util_fold)


def split_even(total: int, parts: int) -> tuple[int, ...]:
    """``total`` split into ``min(parts, total)`` near-equal positive integers."""
    p = max(1, min(parts, total))
    q, r = divmod(total, p)
    return (q + 1,) * r + (q,) * (p - r)


def split_gemm(m: int, n: int, k: int, parts: int, rows: int, cols: int, dataflow: str,
               convention: str = "scalesim", arrays: int = 1,
               copies: int = 1) -> tuple[tuple[int, int, int], ...]:
    """Split GEMM (M, N, K) into at most ``parts`` independent sub-GEMMs for separate cores,
    each core having ``arrays`` arrays and running ``copies`` copies of its part.

    Only M or N is split (never the reduction dimension K, which would need a cross-core
    sum), into p near-equal parts for every p from 1 to ``parts``; the split whose slowest
    part finishes first wins (fewer parts on a tie). Every split into fewer parts stays a
    candidate, so more parts never make the GEMM slower. The MAC count is preserved."""
    _check_dims(m, n, k, rows, cols)
    if not isinstance(parts, int) or parts < 1:
        raise TmhwError(f"parts: must be a positive integer, got {parts!r}")
    best: tuple[tuple[int, int], tuple[tuple[int, int, int], ...]] | None = None
    for p in range(1, parts + 1):
        splits = [tuple((mi, n, k) for mi in split_even(m, p))]
        if p > 1:
            splits.append(tuple((m, ni, k) for ni in split_even(n, p)))
        for c in splits:
            key = (max(multi_array_cycles(a, b, d, rows, cols, arrays, dataflow, convention,
                                          copies) for a, b, d in c), len(c))
            if best is None or key < best[0]:
                best = (key, c)
    assert best is not None
    return best[1]


@dataclass(frozen=True, slots=True)
class Traffic:
    """Bytes between HBM and the scratchpad for one GEMM, and array-side scratchpad
    accesses in elements (SCALE-Sim's "SRAM ... Reads/Writes")."""

    ifmap_read: int
    filter_read: int
    ofmap_write: int
    psum_read: int
    psum_write: int
    folds: int
    sram_ifmap_reads: int
    sram_filter_reads: int
    sram_ofmap_writes: int

    @property
    def read_bytes(self) -> int:
        return self.ifmap_read + self.filter_read + self.psum_read

    @property
    def write_bytes(self) -> int:
        return self.ofmap_write + self.psum_write

    def per_fold(self) -> tuple[float, float]:
        """Mean HBM bytes (read, written) per fold: the operand traffic of one tile."""
        return self.read_bytes / self.folds, self.write_bytes / self.folds


def _reuse(streamed: int, other: int, x_bytes: int, y_bytes: int,
           x_buf: int) -> tuple[int, int]:
    """The cheaper of two loop orders: operand X re-streamed per pass (``streamed`` bytes,
    the other operand read ``other`` bytes), or X read once in blocks of half its buffer
    with the other operand Y re-read once per block."""
    blocks = -(-x_bytes // max(1, x_buf // 2))
    if x_bytes + y_bytes * blocks < streamed + other:
        return x_bytes, y_bytes * blocks
    return streamed, other


def _stationary_traffic(t_dim: int, k: int, s_dim: int, rf: int, cf: int, cols: int,
                        db: int, acc: int, stream_buf: int,
                        acc_buf: int) -> tuple[int, int, int]:
    """(streamed bytes, stationary bytes, partial-sum bytes each way) for WS/IS.

    The streamed operand is t_dim x k, the stationary one k x s_dim (``cf`` column folds of
    ``cols``), accumulated over ``rf`` row folds. A schedule keeps a partial-sum tile of
    ``tt`` rows by ``g`` column folds in the output buffer: the stationary operand is loaded
    once per block of ``tt`` rows, the streamed one once per group of ``g`` column folds
    (once in all if a ``tt``-row block of it fits half its buffer). For each ``g`` (powers
    of two and ``cf``) the candidates are no cut (``tt = t_dim``, spilling partial sums if
    the tile does not fit), the largest ``tt`` whose tile fits, and that ``tt`` shrunk until
    the streamed block fits; the one moving fewest bytes wins."""
    stream_half, acc_half = stream_buf // 2, acc_buf // 2
    a_bytes, b_bytes = t_dim * k * db, k * s_dim * db
    groups = {cf}
    g = 1
    while g < cf:
        groups.add(g)
        g *= 2
    best: tuple[int, int, int, int] | None = None
    for g in sorted(groups):
        width = min(g * cols, s_dim)
        tt_acc = min(t_dim, max(1, acc_half // (width * acc)))
        tt_stream = min(tt_acc, max(1, stream_half // (k * db)))
        for tt in sorted({t_dim, tt_acc, tt_stream}, reverse=True):
            stream = a_bytes * (1 if tt * k * db <= stream_half else -(-cf // g))
            stat = b_bytes * -(-t_dim // tt)
            psum = t_dim * s_dim * acc * (rf - 1) if tt * width * acc > acc_half else 0
            total = stream + stat + 2 * psum
            if best is None or total < best[0]:
                best = (total, stream, stat, psum)
    assert best is not None
    return best[1], best[2], best[3]


def gemm_traffic(m: int, n: int, k: int, rows: int, cols: int, dataflow: str, *,
                 dtype_bytes: int = 2, acc_bytes: int = 4, ifmap_buf: int = 1 << 62,
                 filter_buf: int = 1 << 62, ofmap_buf: int = 1 << 62) -> Traffic:
    """Operand traffic of GEMM (M, N, K) through a double-buffered scratchpad of
    ``ifmap_buf`` / ``filter_buf`` / ``ofmap_buf`` bytes (see the module docstring)."""
    rf, cf = fold_counts(m, n, k, rows, cols, dataflow)
    if dtype_bytes < 1 or acc_bytes < 1:
        raise TmhwError("dtype_bytes and acc_bytes must be >= 1")
    a_bytes, b_bytes, c_bytes = m * k * dtype_bytes, k * n * dtype_bytes, m * n * dtype_bytes
    psum = 0
    if dataflow == "os":
        # folds: col fold outer, row fold inner (SCALE-Sim's order)
        # B blocks of g column folds stay on chip across the row folds; A is re-read once
        # per such group (re-read B per row fold if not even one block fits)
        g = min(cf, (filter_buf // 2) // (k * cols * dtype_bytes))
        filt = b_bytes if g >= 1 else b_bytes * rf
        ifm = a_bytes if a_bytes <= ifmap_buf // 2 else a_bytes * -(-cf // max(g, 1))
        ifm, filt = _reuse(ifm, filt, a_bytes, b_bytes, ifmap_buf)
        sram = (m * k * cf, k * n * rf, m * n)
    elif dataflow == "ws":
        ifm, filt, psum = _stationary_traffic(m, k, n, rf, cf, cols, dtype_bytes, acc_bytes,
                                              ifmap_buf, ofmap_buf)
        sram = (m * k * cf, k * n, m * n * rf)
    else:
        filt, ifm, psum = _stationary_traffic(n, k, m, rf, cf, cols, dtype_bytes, acc_bytes,
                                              filter_buf, ofmap_buf)
        sram = (m * k, k * n * cf, m * n * rf)
    psum_r = psum_w = psum
    return Traffic(ifmap_read=ifm, filter_read=filt, ofmap_write=c_bytes, psum_read=psum_r,
                   psum_write=psum_w, folds=rf * cf, sram_ifmap_reads=sram[0],
                   sram_filter_reads=sram[1], sram_ofmap_writes=sram[2])
