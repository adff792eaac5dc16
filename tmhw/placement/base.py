"""What every placement policy is given and what it returns.

A policy sees the workload, the HBM capacity in pages, a profile of the iteration (each
op's start and end in a stall-free run, from the NPU model), and the sustained bandwidth
of each direction between the tiers; it returns a ``PlacementTable``. Between
iterations it may ``adjust`` the table from what the executor measured (TM-Training's
timing monitor). Pure: no SimPy.

While the table runs, a policy also answers the questions a plan cannot: which tensor
leaves HBM when the pager must make room the table did not plan (``eviction_order``),
and what happens to an operand an op only reads and finds missing from HBM
(``reads_in_place``: fetch it, the default, or read it in place over the link with
``read_in_place``). The hooks see the run only through the read-only views they are
given (``TensorUses``, ``InPlacePort``), never the executor.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from tmhw.placement.registry import POLICIES
from tmhw.placement.table import Action, Move, PlacementTable
from tmhw.sim.errors import DoesNotFit, TmhwError
from tmhw.workload.graph import Kind, Workload


@dataclass(slots=True)
class PlanContext:
    """What a policy plans from: the workload, HBM capacity in pages, the profiled op
    times (ps, one iteration), the sustained flash rates each direction (bytes/s, as the
    device model serves large transfers, capped by the link) and how far ahead (in ops)
    a planner may release a prefetch (``policy.lookahead_ops``, 0: no limit). A policy's
    own parameters are its ``params``, not the context's."""

    workload: Workload
    capacity_pages: int
    op_start_ps: np.ndarray
    op_end_ps: np.ndarray
    fetch_bytes_per_s: float
    writeback_bytes_per_s: float
    lookahead_ops: int = 0
    seed: int = 0
    #: per op: run streamed through a window of HBM (``streamable``), or None
    streamed: np.ndarray | None = None
    #: what the SSDs' controller DRAM holds at once (every device's write buffer and
    #: read cache), in the workload's pages: a page read back while it is still there
    #: costs the link but no NAND read
    device_dram_pages: int = 0

    @property
    def page_size(self) -> int:
        return self.workload.page_size


@dataclass(slots=True)
class Feedback:
    """What the executor measured in one iteration, per op."""

    iteration: int
    stall_ps: np.ndarray          # time op i waited for memory before it could start
    lateness_ps: np.ndarray       # latest prefetch completion minus op start (<0: early)
    op_start_ps: np.ndarray
    op_end_ps: np.ndarray
    peak_occupancy_pages: int
    extra: dict[str, float] = field(default_factory=dict)
    #: HBM pages held (in flight included) around each op, as measured
    occupancy_pages: np.ndarray | None = None
    #: tensors whose write-back was booked only when a fetch already waited for its
    #: space (the write-back was too lazy)
    late_writebacks: frozenset[int] = frozenset()
    #: false while the flash tier's state still drifts from iteration to iteration (an
    #: SSD's SLC cache filling): what a monitor measures now will not hold
    device_steady: bool = True


class TensorUses(Protocol):
    """When the run has used each tensor and will use it next: what an eviction rule
    may read (the pager provides it)."""

    @property
    def last_use(self) -> np.ndarray:
        """Per tensor, the count of ops started at its latest use (read-only)."""
        ...

    def next_uses(self, tensors: np.ndarray, after: int) -> np.ndarray:
        """For each of ``tensors``, the first op after ``after`` that uses it, counted
        on into the next iteration (past the last op: ``nops`` + its first use)."""
        ...


class InPlacePort(Protocol):
    """What a policy's in-place reads may see and do (the pager provides it): the
    pages HBM holds, reads over the link that bypass HBM, and background fetches."""

    @property
    def in_hbm(self) -> np.ndarray:
        """Per page, whether HBM holds it (read-only)."""
        ...

    @property
    def access_counts(self) -> np.ndarray:
        """Per page, the in-place accesses counted since its data was last written or
        promoted (the pager zeroes a dead tensor's); the policy counts and resets them."""
        ...

    def pages_of(self, tensor: int) -> tuple[int, int]:
        """The page range [p0, p1) of ``tensor``."""
        ...

    def missing_runs(self, p0: int, p1: int) -> list[tuple[int, int]]:
        """The runs [a, b) of the pages of [p0, p1) HBM does not hold, in order."""
        ...

    def read_in_place(self, tensor: int, p0: int, p1: int, line_bytes: int,
                      line_overhead_bytes: int) -> int:
        """Read pages [p0, p1) of ``tensor`` from flash straight to the NPU, now, in
        lines of ``line_bytes`` with ``line_overhead_bytes`` of framing each: one flash
        request. Returns when the last line has arrived."""
        ...

    def promotion_pending(self, tensor: int) -> bool:
        """A promotion of ``tensor`` is released and not yet completely booked."""
        ...

    def promote(self, tensor: int, p0: int, p1: int, op_index: int) -> None:
        """Fetch pages [p0, p1) of ``tensor`` into HBM in the background, due at op
        ``op_index`` (room is made by the policy's eviction rule)."""
        ...


class NoParams:
    """The parameters of a policy that has none."""


class Policy:
    """Base of every policy. Subclasses implement ``plan``.

    A policy's parameters are a frozen config class of its own (``Params``), read from
    the config's ``[policy.<section>]`` table (``section``, empty: none) and given to
    the constructor; the defaults when none is given. The config knows the tables only
    through the registry (``table_policy``), so a policy and its parameters are one
    module and one line of ``POLICIES``; policies may share a table (``demand`` and
    ``demand-belady`` read ``[policy.demand]``). The executor asks the policy, not
    the config, which of the runtime's mechanisms it uses (``prefetches``, ``splits``,
    ``schedules_writebacks``), and the policy answers the runtime's questions through
    its hooks (``eviction_order``, ``reads_in_place``, ``read_in_place``)."""

    #: the class of this policy's parameters
    Params: ClassVar[type] = NoParams
    #: the ``[policy.<section>]`` table they are read from ("": no parameters)
    section: ClassVar[str] = ""

    name: ClassVar[str] = ""
    reactive: ClassVar[bool] = False
    #: runs element-wise ops larger than HBM streamed (data splitting within an op): the
    #: executor's mechanism, which any policy whose table does not plan those ops' operands
    #: can use (TM-Training's planner and the reactive pagers); a static plan that holds
    #: every operand of every op whole (the prior systems' gap plans, recomputation) does
    #: not fit where an op's operands exceed HBM, and says so
    streams: ClassVar[bool] = False
    #: HBM holds the whole footprint regardless of the requested ratio.
    whole_footprint: ClassVar[bool] = False
    #: Where ``recompute_candidates`` names any, the recomputed iteration must fit HBM
    #: whole (the ``recompute`` rival), else the policy offloads what does not.
    recompute_fits_hbm: ClassVar[bool] = False
    #: The values ``policy.tune`` tries for each of ``Params``' fields that the policy's
    #: authors tune on the machine (``tmhw.tune``); empty: nothing to tune. Each range
    #: is documented with its field.
    tunables: ClassVar[dict[str, tuple[Any, ...]]] = {}
    #: The tunables change only the plan (``plan``'s table), not how the run behaves, so a
    #: trial whose table is another's runs the same and is not simulated again.
    tunes_plan_only: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if (cls.Params is NoParams) != (cls.section == ""):
            raise TypeError(f"{cls.__name__}: a policy with parameters (Params) reads them "
                            "from a table (section), and one without has neither")
        fields = getattr(cls.Params, "__dataclass_fields__", {})
        for key, values in cls.tunables.items():
            if key not in fields or not values:
                raise TypeError(f"{cls.__name__}: tunable {key!r} must be a field of "
                                f"{cls.Params.__name__} with at least one value")

    def __init__(self, params: Any = None) -> None:
        if params is None:
            params = self.Params()
        if not isinstance(params, self.Params):
            raise TypeError(f"{self.name}: parameters must be {self.Params.__name__}, "
                            f"not {type(params).__name__}")
        self.params: Any = params

    @property
    def prefetches(self) -> bool:
        """Whether the table's prefetches are released ahead of their op (off: every
        operand on flash is fetched when its op needs it)."""
        return True

    @property
    def splits(self) -> bool:
        """Whether an evicted tensor may keep a resident head, and an op start before
        all of a streamed operand has arrived (data splitting)."""
        return True

    @property
    def schedules_writebacks(self) -> bool:
        """Whether a write-back is due when the plan needs its space (off: at once)."""
        return True

    def plan(self, ctx: PlanContext) -> PlacementTable:
        raise NotImplementedError

    def recompute_candidates(self, layers: int) -> list[tuple[str, int]]:
        """The ``(workload.recompute, workload.recompute_every)`` the system builds in
        turn for a model of ``layers`` transformer layers, at the capacity the ratio
        gives the model as configured, running the first that fits
        (``recompute_fits_hbm``; ``tmhw.placement.recompute``); none: the configured
        iteration."""
        return []

    @property
    def chooses_recompute(self) -> bool:
        """Whether the policy picks the ops to recompute from a profile
        (``choose_recompute``): none by default."""
        return False

    def choose_recompute(self, ctx: PlanContext) -> tuple[str, ...]:
        """The forward ops to recompute, chosen per tensor from ``ctx``, a profile of the
        configured iteration (its op times, capacity and flash rates); the system then
        runs the iteration with those ops recomputed (``workload.recompute`` "ops") and
        plans it with ``plan``. Called only for a policy whose ``chooses_recompute`` is
        set; empty: the configured iteration."""
        return ()

    @property
    def settled(self) -> bool:
        """Whether ``adjust`` will change the table no more (a steady state found by
        ``run.warmup_iterations = "auto"`` waits for it): always, unless a policy tunes
        itself in the run."""
        return True

    def plan_is_final(self, table: PlacementTable) -> bool:
        """Whether no value of the tunables would plan another table than ``table``
        (``tmhw.tune`` then runs no further trial): none by default."""
        return False

    def adjust(self, table: PlacementTable, ctx: PlanContext,
               fb: Feedback) -> PlacementTable:
        """Return the table for the next iteration (default: unchanged)."""
        return table

    # -- runtime hooks: what the executor asks while the table runs ----------------------
    def eviction_order(self, held: np.ndarray, op_index: int,
                       uses: TensorUses) -> np.ndarray:
        """The tensors ``held`` (ids with pages in HBM, the operands of op ``op_index``
        left out) in the order they leave when the pager must make room the table did
        not plan. Default: the tensor used furthest in the future first (Belady's rule:
        a plan knows the future, and this keeps what it needs soonest)."""
        out: np.ndarray = held[np.argsort(-uses.next_uses(held, op_index), kind="stable")]
        return out

    def reads_in_place(self, tensor: int) -> bool:
        """Whether ``tensor``, an operand an op only reads and finds (partly) missing
        from HBM, is read in place from flash as the op starts (``read_in_place``)
        rather than fetched into HBM first, a fault (the default)."""
        return False

    def read_in_place(self, tensors: list[int], op_index: int, port: InPlacePort) -> int:
        """Read the missing pages of ``tensors`` (those ``reads_in_place`` chose) for
        op ``op_index``, which starts now. Returns when the last line has arrived."""
        raise NotImplementedError(f"{self.name} reads no operand in place")


def persistent_mask(wl: Workload) -> np.ndarray:
    """Per page: belongs to a tensor that lives across iterations."""
    m = np.zeros(wl.npages, dtype=bool)
    for t in wl.tensors:
        if t.kind.persistent:
            m[t.page_start:t.page_end] = True
    return m


def input_mask(wl: Workload) -> np.ndarray:
    m = np.zeros(wl.npages, dtype=bool)
    for t in wl.tensors:
        if t.kind == Kind.INPUT:
            m[t.page_start:t.page_end] = True
    return m


def op_working_set_pages(wl: Workload) -> np.ndarray:
    """Pages each op needs resident at once: every tensor it reads or writes, and the
    mini-batch, which stays in HBM the whole iteration (the host's landing zone; no
    plan moves it)."""
    inputs = [t.id for t in wl.tensors if t.kind == Kind.INPUT]
    out = np.zeros(len(wl.ops), dtype=np.int64)
    for op in wl.ops:
        out[op.index] = sum(wl.tensors[t].npages for t in set(op.tensors) | set(inputs))
    return out


def streamable(wl: Workload, capacity_pages: int) -> np.ndarray:
    """Per op: its operands exceed HBM and it is element-wise (no GEMM), so it can run
    only streamed, tile by tile through a window of HBM, each tile needing the same slice
    of every operand (data splitting at the scale of one op)."""
    ws = op_working_set_pages(wl)
    return np.array([not op.gemms and ws[op.index] > capacity_pages for op in wl.ops],
                    dtype=bool)


def check_fits(wl: Workload, capacity_pages: int, policy: str,
               streamed: np.ndarray | None = None) -> None:
    """Every op's operands must fit in HBM at once, or no policy can run it; an op in
    ``streamed`` needs only a window of them at a time."""
    ws = op_working_set_pages(wl)
    if streamed is not None and len(ws):
        ws = np.where(streamed, 0, ws)
    if len(ws) and ws.max() > capacity_pages:
        i = int(ws.argmax())
        need = int(ws[i]) * wl.page_size
        have = capacity_pages * wl.page_size
        how = (" or allow data splitting (policy.tm_training.split)"
               if policy == "tm-training" else "")
        raise DoesNotFit(f"policy.hbm_ratio: op {wl.ops[i].name} needs {need / 2**20:.1f} MiB "
                        f"resident at once but HBM holds {have / 2**20:.1f} MiB under "
                        f"{policy}; raise the HBM ratio or lower the batch{how}")


def drop_moves(wl: Workload, first_last: np.ndarray | None = None) -> list[Move]:
    """DROP each non-persistent tensor after its last access (the framework frees it)."""
    r = wl.live_ranges() if first_last is None else first_last
    out = []
    for t in wl.tensors:
        if t.kind.persistent or r[t.id, 1] < 0:
            continue
        out.append(Move(Action.DROP, t.id, t.page_start, t.page_end, int(r[t.id, 1])))
    return out


def policy_class(name: str) -> type[Policy]:
    """The class registered as ``name`` (``POLICIES``), its module imported now."""
    if name not in POLICIES:
        raise TmhwError(f"policy.name: {name!r} is not one of {', '.join(POLICIES)}")
    mod, _, cls = POLICIES[name].partition(":")
    try:
        m = importlib.import_module(mod)
    except ModuleNotFoundError as e:
        if e.name == mod:
            raise TmhwError(f"policy.name: {name!r} is not available in this build") from None
        raise
    c: type[Policy] = getattr(m, cls)
    return c


def table_policy(key: str) -> type[Policy] | None:
    """A registered policy whose parameters are the table ``[policy.<key>]`` (a dash in
    ``key`` read as an underscore), or None if no policy reads that table. The policy
    named like the table is asked first, so a table of one policy imports that policy's
    module alone; the others are imported only for a table named otherwise."""
    section = key.replace("-", "_")
    if not section:
        return None
    named = [n for n in POLICIES if n.replace("-", "_") == section]
    for name in [*named, *(n for n in POLICIES if n not in named)]:
        cls = policy_class(name)
        if cls.section == section:
            return cls
    return None


def policy_tables() -> list[str]:
    """Every ``[policy.<section>]`` table a registered policy reads, in the registry's
    order (every policy's module imported)."""
    out: list[str] = []
    for name in POLICIES:
        section = policy_class(name).section
        if section and section not in out:
            out.append(section)
    return out


def make_policy(name: str, params: Any = None) -> Policy:
    """A new policy of the registered name ``name`` with ``params`` (its ``Params``;
    None: the defaults)."""
    return policy_class(name)(params)
