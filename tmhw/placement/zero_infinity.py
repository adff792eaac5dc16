"""ZeRO-Infinity (Rajbhandari et al., "ZeRO-Infinity: Breaking the GPU Memory Wall for
Extreme Scale Deep Learning", SC'21; DeepSpeed's ZeRO stage 3 with NVMe offload) as a
placement table.

**What the project built.** ZeRO-3 partitions parameters, gradients and optimizer state
and gathers each module's parameters just before the module runs; ZeRO-Infinity puts
the partitions on NVMe. Before a module's forward (and again before its backward) its
parameters are read from NVMe into GPU memory, ahead of use by a prefetch that keeps at
most ``stage3_prefetch_bucket_size`` parameter elements in flight; after the module they
are released unless they are needed again within ``stage3_max_reuse_distance`` elements
of other parameters, and never more than ``stage3_max_live_parameters`` stay resident;
parameters smaller than ``stage3_param_persistence_threshold`` are never partitioned
(they stay in GPU memory). Gradients leave the GPU as the backward produces them. The
optimizer step streams the fp32 master weights and the optimizer state from NVMe in
sub-groups, ``buffer_count`` of them in flight, updates them and writes them back.
Activations are checkpointed at layer boundaries and the checkpoints may be offloaded.
NVMe I/O goes through DeepSpeed's async I/O library in ``aio.block_size`` requests,
``aio.queue_depth`` of them outstanding. DeepSpeed's defaults
(``deepspeed/runtime/zero/config.py``, ``offload_config.py``, ``aio`` config): prefetch
bucket 5e7 elements, persistence threshold 1e5, max live parameters 1e9, max reuse
distance 1e9, offload_param buffer_count 5, offload_optimizer buffer_count 4, aio
block_size 1 MiB, queue_depth 8.

**Adapted to an NPU with HBM and flash**, on the gap model of ``tmhw.placement.gaps``:

- NVMe is the flash tier and GPU memory is HBM; the host's pinned bounce buffers are
  left out (the DMA engine moves flash to HBM directly), so ``buffer_count`` of the
  parameter side has nothing to bound; that of the optimizer side bounds how many
  optimizer ops ahead its state is read (``optimizer_buffer_count``).
- A weight (``WEIGHT``) of at least ``param_persistence_threshold`` elements leaves HBM
  after each use (a drop: flash holds it) and comes back by a prefetch, unless the
  parameter elements used between the two uses are at most ``max_reuse_distance`` and
  the weights kept so far stay within ``max_live_parameters`` elements. Its prefetch is
  released as DeepSpeed's prefetcher issues it: in the order of use, each parameter is
  fetched once the elements in flight before it are fewer than ``prefetch_bucket_size``.
- Weight gradients are written back as the backward produces them and read again by
  the optimizer op; master weights and optimizer state live on flash and are read
  ``optimizer_buffer_count - 1`` optimizer ops ahead of their update, and written back
  after it.
- Activations: ZeRO-Infinity checkpoints them at layer boundaries and recomputes the
  rest; the workloads here keep every activation the backward reads, so each is
  treated as a checkpoint: written back after its last forward use and read back one
  block (``Op.layer`` up to its first dot) ahead of its first backward use.
- HBM has a fixed capacity here, where DeepSpeed would run out of memory: if the plan
  does not fit, the reuse distance is halved until it does (what a user does after an
  out-of-memory error; the note ``reuse_distance`` is the value used), counting a
  write-back's pages until flash has them if that can fit, else freeing them at their
  op's end (the executor then waits for the write, as DeepSpeed waits for its swap-out
  before reusing a buffer). If even releasing every weight does not fit, the ops over
  capacity evict what they do not use (``GapPlan.fit``; the note ``repairs`` counts
  them). If an op's own operands do not fit, the run does not fit.

Where HBM holds the whole footprint nothing is offloaded (NVMe offload is configured
to train what does not fit), so at HBM ratio 1 it is ``hbm-only``.

**Idealised.** The parameter fetch is exact and free of the all-gather and host-copy
costs of the real system (one device, no bounce buffers); aio request sizes are the DMA
engine's chunks rather than ``aio.block_size`` (kept as fields with DeepSpeed's
defaults, for the record).

Pure: no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tmhw.placement.base import PlanContext, Policy
from tmhw.placement.gaps import GapPlan, finish
from tmhw.placement.simple import everything_resident, fits_whole
from tmhw.placement.ssdtrain import block_runs
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import ConfigError
from tmhw.workload.graph import Kind, Phase


@dataclass(frozen=True, slots=True, kw_only=True)
class ZeroInfinityParams:
    """``[policy.zero_infinity]``: DeepSpeed's ZeRO-3 and NVMe-offload settings, each with
    DeepSpeed's default (module docstring). Sizes are in parameter elements, as
    DeepSpeed counts them."""

    prefetch_bucket_size: int = 50_000_000
    param_persistence_threshold: int = 100_000
    max_live_parameters: int = 1_000_000_000
    max_reuse_distance: int = 1_000_000_000
    param_buffer_count: int = 5
    optimizer_buffer_count: int = 4
    aio_block_size: int = 1 << 20
    aio_queue_depth: int = 8

    def __post_init__(self) -> None:
        for name in ("prefetch_bucket_size", "param_persistence_threshold",
                     "max_live_parameters", "max_reuse_distance"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                raise ConfigError(name, v, "an integer >= 0 (parameter elements)")
        for name in ("param_buffer_count", "optimizer_buffer_count", "aio_block_size",
                     "aio_queue_depth"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(name, v, "an integer >= 1")


class ZeroInfinity(Policy):
    """Parameters, gradients and optimizer state on flash, fetched per module ahead of
    use; activation checkpoints offloaded."""

    name = "zero-infinity"
    Params = ZeroInfinityParams
    section = "zero_infinity"
    params: ZeroInfinityParams

    def plan(self, ctx: PlanContext) -> PlacementTable:
        if fits_whole(ctx):
            # NVMe offload is configured to train what does not fit; where HBM holds
            # the whole footprint a user turns it off (at ratio 1 it moved 800 MB an
            # iteration, quick preset, 2 layers)
            return everything_resident(self.name, ctx)
        for drain in (True, False):
            reuse = self.params.max_reuse_distance
            while True:
                gp = GapPlan(ctx)
                kept = self._decide(gp, reuse)
                occ = gp.occupancy(drain)
                if occ.max() <= gp.cap or reuse == 0:
                    break
                reuse //= 2
            if occ.max() <= gp.cap:
                break
        repairs = gp.fit(drain) if occ.max() > gp.cap else 0
        return finish(gp, self.name, {
            "reuse_distance": float(reuse), "kept_weight_gaps": float(kept),
            "repairs": float(repairs), "fits_with_writeback_drain": float(drain)})

    # -- the plan -------------------------------------------------------------------------
    def _decide(self, gp: GapPlan, reuse: int) -> int:
        """Every gap's decision at reuse distance ``reuse``; returns the weight gaps kept."""
        wl, n, p = gp.wl, gp.n, self.params
        elems = np.array([t.nbytes // max(1, t.dtype_bytes) for t in wl.tensors],
                         dtype=np.int64)
        # parameter elements first used at each op (unrolled): the reuse distance of a
        # gap is the sum over the ops strictly inside it
        weight = np.array([t.kind == Kind.WEIGHT for t in wl.tensors], dtype=bool)
        fetched_at = np.zeros(2 * n + 1, dtype=np.int64)
        for t in np.flatnonzero(weight).tolist():
            for i, _ in gp.uses[t]:
                fetched_at[i + 1] += elems[t]
                fetched_at[i + n + 1] += elems[t]
        before = np.cumsum(fetched_at)        # elements used at ops < i
        blocks = block_runs(gp)
        opt = np.array([op.index for op in wl.ops if op.phase == Phase.OPTIMIZER],
                       dtype=np.int64)
        kept = live = 0
        fetches: list[tuple[int, int, int, int]] = []    # (due, elems, gap, evict op)
        for gi, g in enumerate(gp.gaps):
            t = g.tensor
            kind = wl.tensors[t].kind
            if kind == Kind.WEIGHT:
                if elems[t] < p.param_persistence_threshold:
                    continue
                distance = int(before[g.b] - before[g.a + 1])
                if distance <= reuse and live + elems[t] <= p.max_live_parameters:
                    kept += 1
                    live += int(elems[t])
                    continue
                if g.b > g.a + 1:
                    fetches.append((g.b, int(elems[t]), gi, g.a))
            elif kind in (Kind.MASTER, Kind.OPT_STATE, Kind.WEIGHT_GRAD):
                self._optimizer_side(gp, gi, opt)
            elif kind == Kind.ACTIVATION:
                self._checkpoint(gp, gi, blocks)
        self._bucketed(gp, fetches)
        return kept

    def _bucketed(self, gp: GapPlan, fetches: list[tuple[int, int, int, int]]) -> None:
        """Release each weight prefetch as DeepSpeed's prefetcher issues it: walking the
        parameters in the order of use, the next one is fetched while the elements
        already in flight are fewer than the prefetch bucket (a parameter larger than
        the bucket is fetched once the ones before it have been used; with a bucket of
        0, each at its own op)."""
        if not fetches:
            return
        n, m = gp.n, len(fetches)
        # the order of use is cyclic: the first layers' fetches for the next iteration
        # are in flight while this one ends; walk two turns of it
        fetches.sort(key=lambda f: (f[0] % n, f[2]))
        due = np.array([f[0] % n for f in fetches] * 2, dtype=np.int64)
        due[m:] += n
        size = np.concatenate(([0], np.cumsum([f[1] for f in fetches] * 2)))
        bucket = self.params.prefetch_bucket_size
        for j, (b, _, gi, a) in enumerate(fetches):
            j2 = j + m
            if bucket == 0:
                r = b
            else:
                # the first fetch k within a turn before j whose elements through j - 1
                # are under the bucket (size[j2] - size[k] < bucket), released at the op
                # after fetch k - 1's use: fetches k..j-1 in flight
                k = max(int(np.searchsorted(size, size[j2] - bucket, side="right")), j + 1)
                r = b - int(due[j2] - due[k - 1] - 1)
            r = min(max(r, a + 2), b)
            gp.evict(gi, a, r)

    def _optimizer_side(self, gp: GapPlan, gi: int, opt: np.ndarray) -> None:
        """Gradients, master weights and optimizer state leave HBM after each use and
        come back ``optimizer_buffer_count - 1`` optimizer ops (``opt``) ahead of the
        next."""
        g = gp.gaps[gi]
        if g.b <= g.a + 1:
            return
        n = gp.n
        ahead = self.params.optimizer_buffer_count - 1
        b = g.b % n
        k = int(np.searchsorted(opt, b))
        if k < len(opt) and opt[k] == b:
            r = int(opt[max(0, k - ahead)]) + (g.b - b)
        else:
            r = g.b - 1
        r = min(max(r, g.a + 2), g.b)
        if r > g.a + 1:
            gp.evict(gi, g.a, r)

    @staticmethod
    def _checkpoint(gp: GapPlan, gi: int, blocks: tuple[np.ndarray, np.ndarray]) -> None:
        """An activation the backward reads: out after its last forward use, back one
        block (``blocks``: ``block_runs``) ahead of its first backward use."""
        g = gp.gaps[gi]
        wl = gp.wl
        if g.b >= gp.n or wl.ops[g.a].phase != Phase.FORWARD \
                or wl.ops[g.b].phase != Phase.BACKWARD:
            return
        rid, first = blocks
        r = int(first[max(0, int(rid[g.b]) - 1)])
        r = min(max(r, g.a + 2), g.b)
        if r > g.a + 1:
            gp.evict(gi, g.a, r)
