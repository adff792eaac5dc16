"""The whole system as one frozen dataclass tree, its presets, and TOML at the edge.

Sections (``tmhw config show NAME`` prints every field)::

    npu       npu.NpuConfig            cores, systolic arrays, vector unit, scratchpad
    hbm       dram.DramConfig          the fast tier's device (timing, organisation, IDD)
    flash     flash.FlashConfig        the slow tier: NAND geometry, timing, FTL, host link
    dma       DmaConfig                the engine that moves pages between the tiers
    link      LinkConfig               the NPU's port to the SSD (PCIe)
    cost      CostConfig               $/GB per tier and the NPU, for hardware cost
    workload  WorkloadConfig           model, batch, sequence length, page size, optimizer
    policy    PolicyConfig             placement policy, HBM capacity, each policy's table
    run       RunConfig                iterations, seed, timing models

Defaults of the system-level sections and their sources:

- ``dma.chunk_bytes`` and ``dma.writeback_chunk_bytes`` 0: derived from the flash tier's
  geometry and timing and the HBM capacity when the engine is built
  (``tmhw.dma.chunk_sizes``, where the rule and its measurements are); a power of two
  of at least a page (``workload.page_size``: the engine moves whole pages) sets it.
  A flash read burst on a die that is programming pays one program suspend
  (``flash.t_suspend_program``, 100 us on the shipped TLC presets, against a 45 us
  tR), so a fetch chunk carries enough pages per plane of every die of every device
  that the burst's reads outlast twice its suspend; a write-back chunk carries four
  pages per plane, so each die's programs are multi-plane (the earlier fixed 8 MiB:
  four pages per plane of the 32-die 990pro, one of a 128-die device; with 2 MiB on
  the 128-die device every program was single-plane and a write-back cost four times
  the die time, quick at 25% HBM). Fixed 2 MiB fetch chunks reached one plane of each
  die on one PM1743-like device and a quarter of them on two.
  ``dma.max_outstanding`` 16 chunks per direction (estimate, enough to cover 64 dies x
  4 planes of 16 KiB pages in flight). ``dma.pj_per_byte`` 1.0 pJ/B
  (estimate: a descriptor-driven copy engine's datapath and SRAM buffering, of the order
  of on-chip SRAM access energy, Horowitz ISSCC'14: ~1 pJ per byte for a 32 KB SRAM).
- ``link``: the NPU's PCIe port, 16 lanes. Its generation, payload size and overheads
  are not fields of their own: the system has one PCIe fabric, stated once as the SSDs'
  ``flash.pcie_gen``, ``flash.pcie_max_payload_bytes`` and ``flash.pcie_overheads``
  (``flash.pcie``: 128b/130b coding, TLP framing, DLLPs and ordered sets, each with its
  source), so the port carries ``link.lanes`` such lanes per direction
  (``SystemConfig.link_bytes_per_s``: 28.5 GB/s of payload for PCIe 4.0 x16 at 256-byte
  payloads) and a study of PCIe generations changes one field. ``pj_per_bit`` 5.0
  (estimate: published PCIe 4/5 SerDes PHYs report 4-7 pJ/bit); ``latency`` 1 us per
  transaction (estimate of a switch + root-complex round trip).
- ``cost``: ``hbm_usd_per_gb`` 15.0 (estimate: industry reports of 2024 HBM3 pricing at
  about 5x DDR5's ~$3/GB, TrendForce 2024); ``dram_usd_per_gb`` 3.0 (estimate, DDR5
  contract price 2024); ``nand_usd_per_gb`` 0.06 (estimate: TLC NAND contract price
  2024, ~$60/TB; the 990 PRO 2 TB retails near $0.08/GB); ``npu_usd`` 10000 (estimate: no
  public TPUv4 price; a fixed figure reported apart from the memory cost).
- ``workload``: BERT-large at its zoo defaults, seq 512, batch 32 (TM-Training's public
  tooling, see docs/PARAMETERS.md); 4 KiB pages (ibid.). ``batch``/``seq``/``layers``
  left out take the model's own (``tmhw workload list``).
- ``policy.hbm_ratio`` 0.125: the paper's 12.5% capacity configuration (HBM = 1/8 of the
  training footprint, the peak live bytes of one iteration).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from dram import PRESETS as DRAM_PRESETS
from dram import DramConfig
from flash import PRESETS as FLASH_PRESETS
from flash import FlashConfig
from flash.pcie import Pcie
from npu import NpuConfig
from tmhw.placement.base import policy_tables, table_policy
from tmhw.placement.registry import POLICIES
from tmhw.sim import tomlio
from tmhw.sim.errors import ConfigError
from tmhw.sim.units import NS, US


@dataclass(frozen=True, slots=True, kw_only=True)
class DmaConfig:
    """The DMA engine between the tiers (sources in the module docstring)."""

    chunk_bytes: int = 0                # bytes per fetch transaction (0: derived)
    writeback_chunk_bytes: int = 0      # bytes per write-back transaction (0: derived)
    max_outstanding: int = 16           # chunks in flight per direction
    setup_ps: int = 100 * NS            # descriptor fetch and decode per request (estimate)
    pj_per_byte: float = 1.0            # pJ per byte through the engine (estimate)
    idle_mw: float = 50.0               # static power of the engine (estimate)

    def __post_init__(self) -> None:
        for f in ("chunk_bytes", "writeback_chunk_bytes"):
            v = getattr(self, f)
            if v < 0 or v & (v - 1):
                raise ConfigError(f, v, "0 (derived from the flash geometry) or a power "
                                        "of two")
        if self.max_outstanding < 1:
            raise ConfigError("max_outstanding", self.max_outstanding, "an integer >= 1")
        _nonneg(self, "setup_ps", "pj_per_byte", "idle_mw")


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkConfig:
    """The NPU's port to the SSD: PCIe lanes of the SSDs' generation
    (``flash.pcie_gen``; sources in the module docstring)."""

    lanes: int = 16
    pj_per_bit: float = 5.0             # estimate
    latency_ps: int = 1 * US            # estimate

    def __post_init__(self) -> None:
        if self.lanes < 1:
            raise ConfigError("lanes", self.lanes, "an integer >= 1")
        _nonneg(self, "pj_per_bit", "latency_ps")

    def pcie(self, device: Pcie) -> Pcie:
        """The port as a PCIe link: ``lanes`` lanes of the SSDs' generation, payload size
        and overheads (``device``, an SSD's link: the system has one PCIe fabric)."""
        return dataclasses.replace(device, lanes=self.lanes)


@dataclass(frozen=True, slots=True, kw_only=True)
class CostConfig:
    """Hardware cost figures in US dollars (estimates, see the module docstring)."""

    hbm_usd_per_gb: float = 15.0
    dram_usd_per_gb: float = 3.0
    nand_usd_per_gb: float = 0.06
    npu_usd: float = 10000.0

    def __post_init__(self) -> None:
        _nonneg(self, "hbm_usd_per_gb", "dram_usd_per_gb", "nand_usd_per_gb", "npu_usd")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadConfig:
    """Which training iteration to run. ``batch``, ``seq`` and ``layers`` left out (None)
    are the model's own (``tmhw workload list``); when given, each is an integer >= 1,
    never 0. They belong to the model: a table or an override that names
    ``workload.model`` takes them from beside it, and those it leaves out are the new
    model's own, so that ``workload.model = "resnet50"`` over the quick preset does not
    inherit BERT's sequence length.

    Transforms, for every source (``tmhw.workload.builder.Transforms``): ``precision``
    "bf16" (mixed precision, fp32 master and moments; "fp16" the same bytes; "fp8" the
    same bytes with GEMMs reading fp8 operands at the NPU's fp8 rate; "fp32" no
    master copy, everything in fp32), ``recompute`` "none" ("layer": each layer's input
    kept and the rest recomputed before its backward; "selective": Korthikanti et al.'s
    attention scores, softmax and dropout only; "every-k": the input of every
    ``recompute_every``-th layer kept; "ops": the forward ops ``recompute_ops`` names,
    a per-tensor choice as the ``capuchin`` policy makes), ``micro_batches`` 1
    (gradient accumulation: the forward and backward run that many times on
    ``batch / micro_batches`` samples, one optimizer step an iteration; ``batch`` must
    be given and divisible).
    ``onnx_unknown`` "error": an ONNX op the NPU model does not map is refused;
    "memory": it runs as an element-wise op (``tmhw.workload.onnxgraph``)."""

    #: the shape keys that go with the model
    SHAPE: ClassVar[tuple[str, ...]] = ("batch", "seq", "layers")

    model: str = "bert-large"
    batch: int | None = None
    seq: int | None = None
    layers: int | None = None
    page_size: int = 4096
    optimizer: str = "adam"
    precision: str = "bf16"
    recompute: str = "none"
    recompute_every: int = 2
    recompute_ops: tuple[str, ...] = ()
    micro_batches: int = 1
    onnx_unknown: str = "error"

    def __post_init__(self) -> None:
        from tmhw.workload import sources
        from tmhw.workload.builder import OPTIMIZERS, PRECISIONS, RECOMPUTE

        for name in self.SHAPE:
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ConfigError(name, v, SHAPE_ALLOWED)
        # the model's source (``tmhw.workload.sources``: a zoo name, an existing file of
        # a kind a source reads) and its limits on the shape, checked here so that the
        # error names the config field before any work starts
        sources.check(self.model, self.batch, self.seq, self.layers)
        if self.page_size < 512 or self.page_size & (self.page_size - 1):
            raise ConfigError("page_size", self.page_size, "a power of two >= 512")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError("optimizer", self.optimizer,
                              f"one of {', '.join(map(repr, OPTIMIZERS))}")
        if self.precision not in PRECISIONS:
            raise ConfigError("precision", self.precision,
                              f"one of {', '.join(map(repr, PRECISIONS))}")
        if self.recompute not in RECOMPUTE:
            raise ConfigError("recompute", self.recompute,
                              f"one of {', '.join(map(repr, RECOMPUTE))}")
        if isinstance(self.recompute_every, bool) or not isinstance(
                self.recompute_every, int) or self.recompute_every < 1:
            raise ConfigError("recompute_every", self.recompute_every, "an integer >= 1")
        ops = self.recompute_ops
        if not isinstance(ops, (tuple, list)) or not all(isinstance(o, str) for o in ops):
            raise ConfigError("recompute_ops", ops, "a list of forward op names")
        object.__setattr__(self, "recompute_ops", tuple(ops))
        if (self.recompute == "ops") != bool(ops):
            raise ConfigError("recompute_ops", list(ops),
                              "a non-empty list with workload.recompute = \"ops\", "
                              "else empty")
        from tmhw.workload.onnxgraph import UNKNOWN
        if self.onnx_unknown not in UNKNOWN:
            raise ConfigError("onnx_unknown", self.onnx_unknown,
                              f"one of {', '.join(map(repr, UNKNOWN))}")
        m = self.micro_batches
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ConfigError("micro_batches", m, "an integer >= 1")
        if m > 1 and (self.batch is None or self.batch % m):
            raise ConfigError("micro_batches", m, "a divisor of workload.batch (given: "
                              f"{self.batch})")

    def to_toml(self) -> dict[str, Any]:
        """The fields as TOML keys; a shape key that is the model's own is left out (TOML
        has no null)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None}

    @classmethod
    def from_toml(cls, data: dict[str, Any], path: str,
                  base: WorkloadConfig | None) -> WorkloadConfig:
        """Fields from ``data`` over ``base``; when ``data`` names the model, the shape
        keys it leaves out are the model's own, not ``base``'s."""
        if base is not None and "model" in data:
            base = dataclasses.replace(base, batch=None, seq=None, layers=None)
        return tomlio.fields_from_dict(cls, data, path, base)


#: What a batch, sequence length or layer count may be (the CLI's --batch, --seq and
#: --layers say the same).
SHAPE_ALLOWED = "an integer >= 1 (leave it out for the model's own)"


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyConfig:
    """Placement policy, the HBM capacity it must respect, and each policy's parameters.

    ``hbm_ratio`` is HBM capacity / training footprint, in (0, 1]; ``hbm-only`` ignores
    it (HBM holds the whole footprint). The footprint (``workload.footprint_bytes`` in the
    report, ``Workload.peak_live_bytes``) is the most bytes live at once: weights, master
    copy and optimizer state throughout, every other tensor from its first access to its
    last, page-rounded. Data that is dead until it is next overwritten counts (a bf16
    weight between its last read in the backward and the optimizer's write of it; no
    tensor is live past its last access otherwise), so a policy that drops such data
    (TM-Training's dead drops) gains room that the ratio's base includes. The capacity in
    pages is ``floor(hbm_ratio x footprint pages)``, computed once per run
    (``System.capacity_pages``), the same for every policy.

    ``lookahead_ops`` 0: how far ahead (in ops) a planner (TM-Training, Sentinel, AutoTM)
    may release a prefetch; 0 = no limit.
    ``tune`` false: true runs the policy once per setting of the parameters its authors
    would tune on the machine (``Policy.tunables``: Sentinel's migration interval,
    FlatFlash's promotion threshold, AutoTM's node budget) and reports the fastest
    (``tmhw.tune``); the studies compare tuned rivals.

    Each policy's own parameters are a table of their own, ``[policy.<section>]``, a
    record of the frozen class the policy declares in its module beside it
    (``Policy.Params``, ``Policy.section``; e.g. ``[policy.tm_training]``, a
    ``tmhw.placement.tm_training.TMTrainingParams``). The tables are not fields: the
    registry (``tmhw.placement.registry.POLICIES``) says which exist, and a policy's
    module is imported only when a table of it is read, so a policy with parameters
    is one module and one registry line. A table may be spelt with the policy's dash
    (``policy.tm-training.split``); only the table of the policy that runs is used.
    ``cfg.policy.tm_training`` reads a table's record (its defaults when none is set).

    ``tables`` holds, per table, the record read into it, sorted by table, and only
    those that differ from their defaults, so that two configs that run alike compare
    equal; the TOML form lists every table (``to_toml``)."""

    #: keys that were ``[policy]``'s own before each policy's parameters moved to its table
    MOVED: ClassVar[dict[str, str]] = {
        **{k: f"tm_training.{k}" for k in ("split", "monitor", "prefetch",
                                           "writeback_schedule", "monitor_gain",
                                           "prefetch_reserve", "plan_rounds")},
        "sentinel_leads": "sentinel.leads",
        "ilp_node_limit": "autotm.ilp_node_limit",
        "demand_frees": "demand.frees",
        "flatflash_promote_after": "flatflash.promote_after",
        "flatflash_line_bytes": "flatflash.line_bytes",
        "flatflash_line_overhead_bytes": "flatflash.line_overhead_bytes",
    }
    #: the keys of ``[policy]`` that are not a policy's table
    OWN: ClassVar[tuple[str, ...]] = ("name", "hbm_ratio", "lookahead_ops", "tune")

    name: str = "tm-training"
    hbm_ratio: float = 0.125
    lookahead_ops: int = 0
    tune: bool = False
    tables: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.name not in POLICIES:
            raise ConfigError("name", self.name, f"one of {', '.join(POLICIES)}")
        if not (0.0 < self.hbm_ratio <= 1.0):
            raise ConfigError("hbm_ratio", self.hbm_ratio, "a fraction in (0, 1]")
        if self.lookahead_ops < 0:
            raise ConfigError("lookahead_ops", self.lookahead_ops, "an integer >= 0")
        if not isinstance(self.tune, bool):
            raise ConfigError("tune", self.tune, "true or false")
        kept: dict[str, Any] = {}
        for section, record in self.tables:
            owner = table_policy(section)
            if owner is None or owner.section != section:
                raise ConfigError(section, record,
                                  f"a policy's table: one of {', '.join(policy_tables())}")
            if not isinstance(record, owner.Params):
                raise ConfigError(section, record, f"a {owner.Params.__name__}")
            if record != owner.Params():
                kept[section] = record
        object.__setattr__(self, "tables", tuple(sorted(kept.items())))

    def params(self, section: str) -> Any:
        """The record of table ``section`` (a policy's ``section``: its defaults when the
        config sets none); None for "" (a policy without parameters)."""
        if not section:
            return None
        for key, record in self.tables:
            if key == section:
                return record
        owner = table_policy(section)
        if owner is None or owner.section != section:
            raise AttributeError(f"no policy reads a table {section!r}")
        return owner.Params()

    def __getattr__(self, key: str) -> Any:
        """``cfg.policy.<section>``: the record of that table (``params``)."""
        if key.startswith("_"):
            raise AttributeError(key)
        return self.params(key)

    def to_toml(self) -> dict[str, Any]:
        """Plain data: the own keys, then every policy's table in the registry's order
        (every policy's module imported)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in self.OWN}
        for section in policy_tables():
            out[section] = tomlio.to_dict(self.params(section))
        return out

    @classmethod
    def from_toml(cls, data: dict[str, Any], path: str,
                  base: PolicyConfig | None) -> PolicyConfig:
        """The ``[policy]`` table over ``base``: its own keys (a key that moved to a
        policy's table names its new place), and a sub-table per policy whose parameters
        it changes, read into that policy's ``Params``."""
        base = base if base is not None else cls()
        own: dict[str, Any] = {}
        tables = dict(base.tables)
        for key, value in data.items():
            plain = key.replace("-", "_")
            if plain in cls.OWN or plain in cls.MOVED:
                own[key] = value
                continue
            owner = table_policy(key)
            if owner is None:
                raise ConfigError(f"{path}.{key}" if path else key, value,
                                  f"unknown key; valid keys: {', '.join(sorted(cls.OWN))}, "
                                  f"or a policy's table ({', '.join(policy_tables())})")
            where = f"{path}.{owner.section}" if path else owner.section
            tables[owner.section] = tomlio.from_dict(owner.Params, value, where,
                                                     base.params(owner.section))
        return tomlio.fields_from_dict(cls, own, path, dataclasses.replace(
            base, tables=tuple(tables.items())))


#: The most iterations a run may ask for: a bound on the work of one run, checked before
#: anything is built (a steady iteration replays one table, so its figures settle
#: within a few; TM-Training's monitor needs up to about twelve warm-up iterations).
MAX_ITERATIONS = 10_000
#: The longest period ``warmup_iterations = "auto"`` looks for (``RunConfig``).
MAX_PERIOD = 4
#: The longest cycle ``warmup_iterations = "auto"`` looks for beyond ``MAX_PERIOD``: the
#: traffic of each iteration repeats the one a cycle before (and not one ``MAX_PERIOD``
#: or fewer before), and the cycle's mean time the cycle's before it, while single
#: iterations may differ by more than the tolerance (``RunConfig``). FlatFlash's
#: promotions cycle: on the quick preset's BERT-base, 6 layers at 1/8 HBM behind 32
#: channels, its traffic repeats exactly every 6 iterations at
#: ``policy.flatflash.promote_after`` 3 and 6 and every 12 at 4, the default (measured;
#: within the tolerance every 6). 12 leaves 24 iterations of ``run.max_iterations``
#: (48) to find one in.
MAX_CYCLE = 12
#: How far a drift's last two moves may differ and still be one drift that the run skips
#: ahead (``Executor._skip_drift``): each within this factor of the other. An SSD's SLC
#: cache that fills or drains moves by about as much each iteration; a fill that stands
#: at a level moves by noise (BERT-large at 1/8 HBM on four SSDs with per-layer
#: recomputation: +-214 pages an iteration about 25k, just over 0.5% of the pages
#: written), and two moves of the same sign there are no drift. An estimate: 2 keeps every
#: skip of the fills that move steadily and none of that noise's.
DRIFT_RATE_RATIO = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """How to run: iterations, seed, timing models, flash preconditioning.

    The report's headline figures are the steady state: the mean over the iterations
    after the warm-up. ``warmup_iterations = "auto"`` (the default) finds where it ends
    (below); a number forces it (1: only the first iteration, which starts every policy
    from the same cold placement, see ``tmhw.run.pager``). A policy may change its
    table between warm-up iterations only (TM-Training's timing monitor needs up to
    twelve; "auto" waits for it); the measured iterations replay one table. With no
    iteration after a forced warm-up, the headline is the mean over all iterations and
    the report says ``steady_state: false``. ``iterations`` 2: measured (with a forced
    warm-up, all iterations: 1 warm-up, 1 measured). A forced short warm-up measures
    what the drive does before it reaches its steady state: on the paper preset, GPT-2
    small s128 b4 at 12.5% HBM runs 311.7 ms an iteration while the 990 PRO's SLC cache
    has room and 571.1 ms once it is full, which "auto" finds.

    ``warmup_iterations = "auto"`` finds the steady state instead of assuming it: after
    each iteration the run looks for a period ``p`` (1 to ``MAX_PERIOD``) over which the
    last ``p`` iterations repeat the ``p`` before them, time and traffic each within
    ``steady_tolerance`` (the first, cold, iteration never counts), with the policy
    settled (``Policy.settled``: TM-Training's monitor has judged its last trial); or,
    failing that, a cycle ``p`` (``MAX_PERIOD`` + 1 to ``MAX_CYCLE``) over which each
    iteration's traffic repeats, and no shorter period's does, and the cycle's mean
    time repeats, while single iterations may not (FlatFlash's promotions cycle with
    periods of 6 and 12). The
    warm-up ends there, and the run measures ``iterations`` more, rounded up to whole
    periods (so ``iterations`` counts measured iterations, not all of them). A run that
    finds none by ``max_iterations`` in all measures its last ``iterations`` and
    says it did not converge (``measurement.converged``, a warning, every study table).
    ``max_iterations`` 48: beyond TM-Training's monitor on a drive whose SLC cache
    fills during the warm-up (the quick preset, 6 layers at 75% HBM: the cache's cliff,
    a trial undone because the drive drifted while it was judged, then five trials,
    converge after 32 iterations), with room for a period of 4 (an estimate) and a cycle
    of 12 from the 24th iteration on (measured whole, which may take the run past it).
    ``steady_tolerance`` 0.005: iterations that differ by less than 0.5% repeat (the
    figures a study compares differ by 1% and more).

    ``hbm_model`` and ``flash_model`` "fast": the chunk-level timing a full run books
    on, one booking per chunk of a transfer (pinned to the detailed models by the
    tests); "detailed": HBM burst by burst through its command scheduler, flash command
    by command, for validation and device studies. Detailed flash costs a run little
    (the quick preset under TM-Training: 2.6 s of wall against 2.1 s), detailed HBM a
    great deal, as every burst of the NPU's operands is booked: the quick preset's
    ``hbm-only`` run of two iterations (15.40 ms an iteration fast, 15.46 ms detailed)
    takes 125 s against 0.39 s."""

    iterations: int = 2
    warmup_iterations: int | Literal["auto"] = "auto"
    max_iterations: int = 48
    steady_tolerance: float = 0.005
    seed: int = 0
    hbm_model: str = "fast"
    flash_model: str = "fast"
    #: Fraction of the flash device's logical space filled before time 0, so the FTL
    #: starts in steady state.
    precondition: float = 0.0

    def __post_init__(self) -> None:
        if not 1 <= self.iterations <= MAX_ITERATIONS:
            raise ConfigError("iterations", self.iterations,
                              f"an integer in 1..{MAX_ITERATIONS} (the steady state "
                              "repeats: more iterations only cost time)")
        if self.warmup_iterations != "auto" and (
                isinstance(self.warmup_iterations, bool)
                or not isinstance(self.warmup_iterations, int) or self.warmup_iterations < 0):
            raise ConfigError("warmup_iterations", self.warmup_iterations,
                              'an integer >= 0, or "auto"')
        if not 2 <= self.max_iterations <= MAX_ITERATIONS:
            raise ConfigError("max_iterations", self.max_iterations,
                              f"an integer in 2..{MAX_ITERATIONS}")
        if self.warmup_iterations == "auto" and self.iterations >= self.max_iterations:
            raise ConfigError("iterations", self.iterations,
                              f"fewer than run.max_iterations ({self.max_iterations}) with "
                              'run.warmup_iterations = "auto" (it counts measured '
                              "iterations)")
        if not 0.0 < self.steady_tolerance <= 0.1:
            raise ConfigError("steady_tolerance", self.steady_tolerance,
                              "a fraction in (0, 0.1]")
        if self.seed < 0:
            raise ConfigError("seed", self.seed, "an integer >= 0")
        for f in ("hbm_model", "flash_model"):
            if getattr(self, f) not in ("fast", "detailed"):
                raise ConfigError(f, getattr(self, f), "one of 'fast', 'detailed'")
        if not (0.0 <= self.precondition < 1.0):
            raise ConfigError("precondition", self.precondition, "a fraction in [0, 1)")


def _nonneg(obj: Any, *names: str) -> None:
    # Written so that NaN and infinity fail too: either would poison every total.
    for n in names:
        v = getattr(obj, n)
        if not 0 <= v < math.inf:
            raise ConfigError(n, v, "a finite number >= 0")


#: The HBM one TPUv4-like core sees: a TPUv4 chip has 32 GiB of HBM2 at 1.2 TB/s shared by
#: its two TensorCores (Jouppi et al., ISCA 2023), i.e. four stacks; one core's share is
#: two HBM2 stacks, 16 channels x 128 bit at 2 Gbps = 512 GB/s (DRAMsim3 HBM2_8Gb_x128
#: timing per channel).
TPUV4_CORE_HBM = dataclasses.replace(DRAM_PRESETS["hbm2"], channels=16)


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemConfig:
    """The whole machine and the run."""

    npu: NpuConfig = field(default_factory=NpuConfig)
    hbm: DramConfig = field(default_factory=lambda: TPUV4_CORE_HBM)
    flash: FlashConfig = field(default_factory=lambda: FLASH_PRESETS["990pro"])
    dma: DmaConfig = field(default_factory=DmaConfig)
    link: LinkConfig = field(default_factory=LinkConfig)
    cost: CostConfig = field(default_factory=CostConfig)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def __post_init__(self) -> None:
        # The engine moves whole pages: a chunk under a page would be a page, not the
        # size asked for.
        page = self.workload.page_size
        for f in ("chunk_bytes", "writeback_chunk_bytes"):
            v = getattr(self.dma, f)
            if 0 < v < page:
                raise ConfigError(f"dma.{f}", v, "0 (derived from the flash geometry) or a "
                                  f"power of two of at least a page (workload.page_size "
                                  f"= {page})")

    @property
    def link_bytes_per_s(self) -> float:
        """The NPU's port, payload bytes per second per direction: ``link.lanes`` lanes
        of the SSDs' PCIe generation, the system's one statement of it, less framing at
        its payload size (``flash.pcie``; the read direction's, the slower)."""
        return self.link.pcie(self.flash.pcie).read_bytes_per_s


#: The paper's machine: a TPUv4-like core (four 128x128 bf16 WS arrays at 1050 MHz),
#: its share of TPUv4's HBM2 (two stacks, 512 GB/s), a Samsung-990-PRO-like SSD,
#: BERT-large seq 512 batch 32, 12.5% HBM.
PAPER = SystemConfig()

#: A small machine for quick studies and tests: BERT-base, seq 128, batch 8.
QUICK = dataclasses.replace(
    PAPER, workload=WorkloadConfig(model="bert-base", batch=8, seq=128))

PRESETS: dict[str, SystemConfig] = {
    "paper": PAPER,
    "quick": QUICK,
    "paper-hbm3": dataclasses.replace(PAPER, hbm=dataclasses.replace(DRAM_PRESETS["hbm3"],
                                                                      channels=32)),
    "paper-pm1743": dataclasses.replace(PAPER, flash=FLASH_PRESETS["pm1743"]),
    "paper-slc": dataclasses.replace(PAPER, flash=FLASH_PRESETS["slc-ull"]),
}

PRESET_DOCS: dict[str, str] = {
    "paper": "TPUv4-like NPU, HBM2, 990 PRO-like SSD, BERT-large s512 b32, 12.5% HBM",
    "quick": "as paper, with BERT-base s128 b8: seconds per run",
    "paper-hbm3": "paper with two stacks of HBM3-6400 as the fast tier",
    "paper-pm1743": "paper with a PM1743-like PCIe 5 SSD",
    "paper-slc": "paper with a low-latency SLC-class SSD",
}

#: Sections whose presets a TOML file may name with ``preset = "..."``.
SECTION_PRESETS: dict[str, dict[str, Any]] = {"hbm": DRAM_PRESETS, "flash": FLASH_PRESETS}


def preset(name: str) -> SystemConfig:
    if name not in PRESETS:
        raise ConfigError("preset", name, f"one of {', '.join(PRESETS)}")
    return PRESETS[name]


def _apply_section_presets(data: dict[str, Any], base: SystemConfig) -> SystemConfig:
    """``[flash] preset = "pm1743"`` starts that section from the named device preset."""
    for section, table in SECTION_PRESETS.items():
        sec = data.get(section)
        if isinstance(sec, dict) and "preset" in sec:
            name = sec.pop("preset")
            if name not in table:
                raise ConfigError(f"{section}.preset", name, f"one of {', '.join(table)}")
            base = dataclasses.replace(base, **{section: table[name]})
    return base


def from_dict(data: dict[str, Any], base: SystemConfig | None = None) -> SystemConfig:
    """A SystemConfig from nested plain data over ``base`` (default: the paper preset).
    A top-level ``preset = NAME`` picks the base."""
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    if "preset" in data:
        base = preset(str(data.pop("preset")))
    base = base if base is not None else PAPER
    base = _apply_section_presets(data, base)
    return tomlio.from_dict(SystemConfig, data, "", base)


def load(path: str | Path, base: SystemConfig | None = None) -> SystemConfig:
    return from_dict(tomlio.loads(tomlio.read_text(str(path)), str(path)), base)


def dumps(cfg: SystemConfig) -> str:
    return tomlio.dumps(cfg)


def with_overrides(cfg: SystemConfig, items: list[str]) -> SystemConfig:
    """Apply ``dotted.path=value`` overrides."""
    if not items:
        return cfg
    data = tomlio.nest([tomlio.parse_override(i) for i in items])
    if "preset" in data:
        # from_dict would start over from that preset and silently drop ``cfg`` (the
        # --preset and --config the overrides were meant to refine).
        raise ConfigError("preset", data["preset"],
                          "not an override; choose the system preset with --preset")
    return from_dict(data, cfg)
