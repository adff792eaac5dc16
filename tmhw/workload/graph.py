"""A training iteration as data: tensors laid out as page runs, and ops that read and
write them.

Every tensor occupies a contiguous run of pages in one virtual address space (the page
size is a parameter, 4 KiB by default after TM-Training's tooling), so a page's whole
future within an iteration follows from the op list: which ops read it, which write it,
when it is first produced and last consumed. Placement policies work on these runs;
per-page state elsewhere is numpy arrays indexed by page number.

Pure: no SimPy here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np


class Kind(str, Enum):  # noqa: UP042  (StrEnum would change str(kind))
    """What a tensor holds; decides its lifetime and whether it persists across
    iterations."""

    INPUT = "input"              # the mini-batch, written by the host each iteration
    WEIGHT = "weight"            # low-precision (bf16) working copy of the parameters
    MASTER = "master"            # fp32 master weights (mixed precision)
    OPT_STATE = "optimizer_state"  # momentum / Adam moments
    WEIGHT_GRAD = "weight_grad"
    ACTIVATION = "activation"    # forward outputs, kept for the backward pass
    ACT_GRAD = "activation_grad"  # gradients flowing backward
    WORKSPACE = "workspace"      # scratch of one op

    @property
    def persistent(self) -> bool:
        """Lives across iterations (its bytes must survive the iteration boundary)."""
        return self in (Kind.WEIGHT, Kind.MASTER, Kind.OPT_STATE)


class Phase(str, Enum):  # noqa: UP042
    FORWARD = "forward"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"


@dataclass(frozen=True, slots=True)
class Gemm:
    """``count`` independent GEMMs of an (m x k) by (k x n) product: m*n*k MACs each."""

    m: int
    n: int
    k: int
    count: int = 1

    @property
    def macs(self) -> int:
        return self.m * self.n * self.k * self.count


@dataclass(slots=True)
class Tensor:
    """A tensor of ``nbytes`` bytes; ``page_start``/``npages`` are set by the layout."""

    id: int
    name: str
    kind: Kind
    nbytes: int
    layer: str = ""
    dtype_bytes: int = 2
    page_start: int = 0
    npages: int = 0

    @property
    def page_end(self) -> int:
        return self.page_start + self.npages


@dataclass(slots=True)
class Op:
    """One op of the iteration: GEMMs on the systolic arrays and/or element-wise work on
    the vector unit, reading and writing whole tensors."""

    index: int
    name: str
    phase: Phase
    layer: str
    gemms: tuple[Gemm, ...] = ()
    vector_elems: int = 0
    vector_ops_per_elem: float = 1.0
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    #: ``tensors``, once asked for (an op's reads and writes do not change once built)
    _tensors: tuple[int, ...] | None = field(default=None, init=False, repr=False,
                                             compare=False)

    @property
    def macs(self) -> int:
        return sum(g.macs for g in self.gemms)

    @property
    def tensors(self) -> tuple[int, ...]:
        """The tensors the op reads or writes, each once, reads first."""
        t = self._tensors
        if t is None:
            t = self._tensors = tuple(dict.fromkeys(self.reads + self.writes))
        return t


@dataclass(slots=True)
class Workload:
    """One training iteration: tensors and ops in execution order."""

    name: str
    batch: int
    tensors: list[Tensor]
    ops: list[Op]
    seq: int = 0
    page_size: int = 4096
    params: int = 0
    meta: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.layout(self.page_size)

    def layout(self, page_size: int) -> None:
        """Assign each tensor a contiguous page run, in tensor order."""
        if page_size <= 0 or page_size & (page_size - 1):
            raise ValueError(f"page_size {page_size} is not a power of two")
        self.page_size = page_size
        p = 0
        for t in self.tensors:
            t.page_start = p
            t.npages = -(-t.nbytes // page_size)
            p += t.npages

    @property
    def npages(self) -> int:
        return self.tensors[-1].page_end if self.tensors else 0

    def footprint_bytes(self) -> int:
        """Bytes of every tensor, page-rounded: what one iteration touches."""
        return self.npages * self.page_size

    def bytes_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {k.value: 0 for k in Kind}
        for t in self.tensors:
            out[t.kind.value] += t.nbytes
        return out

    def uses(self) -> list[list[tuple[int, bool]]]:
        """Per tensor: the (op index, is_write) accesses in op order."""
        out: list[list[tuple[int, bool]]] = [[] for _ in self.tensors]
        for op in self.ops:
            for tid in op.reads:
                out[tid].append((op.index, False))
            for tid in op.writes:
                if not out[tid] or out[tid][-1] != (op.index, False):
                    out[tid].append((op.index, True))
                else:
                    out[tid][-1] = (op.index, True)
        return out

    def live_ranges(self) -> np.ndarray:
        """Per tensor (first_op, last_op) of its accesses; -1 where never used."""
        r = np.full((len(self.tensors), 2), -1, dtype=np.int64)
        for op in self.ops:
            for tid in op.reads + op.writes:
                if r[tid, 0] < 0:
                    r[tid, 0] = op.index
                r[tid, 1] = op.index
        return r

    def live_bytes(self) -> np.ndarray:
        """Bytes live during each op: a persistent tensor (weights, master copy, optimizer
        state) or the input is live throughout; any other tensor from its first to its
        last access. Page-rounded."""
        n = len(self.ops)
        delta = np.zeros(n + 1, dtype=np.int64)
        r = self.live_ranges()
        for t in self.tensors:
            first, last = int(r[t.id, 0]), int(r[t.id, 1])
            if first < 0:
                continue
            if t.kind.persistent or t.kind == Kind.INPUT:
                first, last = 0, n - 1
            delta[first] += t.npages * self.page_size
            delta[last + 1] -= t.npages * self.page_size
        return np.cumsum(delta[:n])

    def peak_live_bytes(self) -> int:
        """The training footprint: the most bytes live at once over the iteration. This
        is the HBM an HBM-only system needs, and the base of ``hbm_ratio``."""
        lb = self.live_bytes()
        return int(lb.max()) if len(lb) else 0

    def page_starts(self) -> np.ndarray:
        """Each tensor's first page, in tensor order, then the page count (tensors hold
        consecutive page ranges in id order)."""
        counts = np.array([t.npages for t in self.tensors], dtype=np.int64)
        return np.concatenate(([0], np.cumsum(counts)))

    def page_tensor(self) -> np.ndarray:
        """Per page, the id of the tensor it belongs to."""
        counts = np.array([t.npages for t in self.tensors], dtype=np.int64)
        return np.repeat(np.arange(len(self.tensors), dtype=np.int32), counts)

    def total_macs(self) -> int:
        return sum(op.macs for op in self.ops)

    def check(self) -> None:
        """Invariants: op indices are positions; every tensor id exists; every
        non-persistent, non-input tensor is written before it is read."""
        written: set[int] = set()
        for i, op in enumerate(self.ops):
            if op.index != i:
                raise ValueError(f"op {op.name} has index {op.index}, position {i}")
            for tid in op.reads:
                t = self.tensors[tid]
                if not (t.kind.persistent or t.kind == Kind.INPUT) and tid not in written:
                    raise ValueError(f"op {op.name} reads {t.name} before any op writes it")
            written.update(op.writes)
