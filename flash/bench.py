"""A closed-loop micro-benchmark of one SSD (``tmhw flash bench``), like fio with a
fixed queue depth: ``qd`` requests are outstanding at the device at all times.

``steady_iops`` and ``steady_bandwidth_mbps`` are the rate of the second half of the
requests to complete (after the write buffer has filled and the queue has ramped up),
the figure a datasheet's numbers compare with. ``sustained_iops`` and
``sustained_bandwidth_mbps`` are the requests over the time until the device is idle
again, every program and collection they caused done: the rate a device settles at
when it is written for hours (a datasheet's sustained random writes), which a run
shorter than that would overstate by the work its write buffer and the collections
booked ahead still hold when the last write is acknowledged.

Patterns: ``seqread``/``seqwrite`` walk the logical space in request-size steps from
offset 0, each request taking the next offset; ``randread``/``randwrite`` pick
request-aligned offsets uniformly over the logical capacity; ``mix`` is random with
70% reads and 30% writes (fio's common ``rwmixread=70``). Each request costs one SimPy
timeout (the target books its work without events), except reads under
``flash.compat = "mqsim"``, which MQSim's arbitration serves by events
(``FlashTarget.request``, ``flash.convoy``). On the bench's own device the loop needs
no events: requests are booked by ``transport`` in the order the workers would issue
them. On one device the whole loop is compiled (``FlashTarget.closed_loop``), the same
bookings at a few microseconds a request, where every request reads or writes within
one page or whole pages (through the write buffer and the SLC cache, if any), or (a
mix) does either within one page (either timing model; ``flash.pages``), and under
``compat = "mqsim"`` for reads, and mixes on a drive with no DRAM, whose events are
compiled with the loop (``flash.convoy_loop``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import simpy

from flash.config import FlashConfig
from flash.target import FlashTarget
from tmhw.sim import Op, Pattern, TmhwError, Transfer
from tmhw.sim.env import Environment
from tmhw.sim.progress import progress as bar
from tmhw.sim.units import US, S

PATTERNS = ("seqread", "randread", "seqwrite", "randwrite", "mix")
MIX_READ_FRACTION = 0.7


def run_bench(cfg: FlashConfig, *, pattern: str, size: int, qd: int, count: int,
              precondition: float = 0.0, model: str = "fast", seed: int = 0,
              age: float = 0.0,
              env: simpy.Environment | None = None,
              target: FlashTarget | None = None,
              progress: bool = False) -> dict[str, Any]:
    """Run ``count`` requests of ``size`` bytes at queue depth ``qd``; return figures
    (the keys of ``tmhw flash bench --json``) plus the target's report under ``report``.
    ``progress``: a bar of requests issued on a terminal's stderr (``tmhw.sim.progress``)."""
    if pattern not in PATTERNS:
        raise TmhwError(f"pattern: {pattern!r} is not one of {PATTERNS}")
    if size < 1 or size > cfg.capacity:
        raise TmhwError(f"size: {size} must be in [1, {cfg.capacity}] bytes")
    if qd < 1:
        raise TmhwError(f"qd: {qd} must be >= 1")
    if count < 1:
        raise TmhwError(f"count: {count} must be >= 1")
    own_env = env is None
    # (a target given alone brings its environment: its events run there)
    env = env or (target.env if target is not None else Environment())
    dev = target or FlashTarget(env, "flash", None, cfg, model=model,
                                precondition=precondition, seed=seed, age=age)
    rng = np.random.default_rng(seed)
    slots = cfg.capacity // size
    if pattern.startswith("seq"):
        offsets = (np.arange(count, dtype=np.int64) % slots) * size
    else:
        offsets = rng.integers(0, slots, size=count, dtype=np.int64) * size
    if pattern == "mix":
        is_read = rng.random(count) < MIX_READ_FRACTION
    else:
        is_read = np.full(count, pattern.endswith("read"))
    kind = Pattern.STREAM if pattern.startswith("seq") else Pattern.RANDOM
    ops = [Op.READ if r else Op.WRITE for r in is_read.tolist()]
    addr = offsets.tolist()
    lat = np.zeros(count, dtype=np.int64)
    done = np.zeros(count, dtype=np.int64)
    nxt = [0]
    shown = bar(count, f"flash bench {pattern}", "req", disable=not progress)
    step = max(1, min(count // 100, 1 << 14))   # the bar moves every 1% (16 Ki at most)

    if own_env:
        # The loop issues each request when a slot's last one completes, in the order
        # the workers' timeouts (or events) would fire (completion time, then issue
        # order): compiled where the device's path allows (``FlashTarget.closed_loop``)
        loop = dev.closed_loop(is_read, offsets, size, qd)
        if loop is not None:  # a bar's step at a time
            with shown:
                for k in range(step, count + step, step):
                    loop.run(min(k, count), lat, done)
                    shown.update(min(k, count) - (k - step))
            return _figures(dev, count, size, loop.finish(), lat, done)
    if own_env and not (dev.reads_by_events and Op.READ in ops):
        # Every request is booked by ``transport`` alone: no event loop needed.
        with shown:
            elapsed = _closed_loop(dev, ops, addr, size, kind, qd, lat, done,
                                   lambda i: shown.update(step) if i % step == 0 else None)
        return _figures(dev, count, size, elapsed, lat, done)

    def worker() -> Generator[simpy.Event, Any, None]:
        while nxt[0] < count:
            i = nxt[0]
            nxt[0] += 1
            if nxt[0] % step == 0:
                shown.update(step)
            start = int(env.now)
            end = yield dev.request(Transfer(ops[i], addr[i], size, kind))
            lat[i] = end - start
            done[i] = end

    for _ in range(min(qd, count)):
        env.process(worker())
    with shown:
        env.run()
    return _figures(dev, count, size, int(env.now), lat, done)


def _closed_loop(dev: FlashTarget, ops: list[Op], addr: list[int], size: int,
                 kind: Pattern, qd: int, lat: np.ndarray, done: np.ndarray,
                 issued: Callable[[int], None]) -> int:
    """``qd`` workers' closed loop on ``dev`` without events: request ``i`` goes out when
    the earliest outstanding one completes (ties in issue order, as their timeouts were
    scheduled), and ``dev.transport`` books it at once. Returns when the last
    completes."""
    count = len(ops)
    heap: list[tuple[int, int]] = []
    transport = dev.transport
    now = 0
    for i in range(count):
        if i >= qd:
            now, _ = heapq.heappop(heap)
        issued(i + 1)
        end = transport(Transfer(ops[i], addr[i], size, kind), now)
        lat[i] = end - now
        done[i] = end
        heapq.heappush(heap, (end, i))
    return max(now, max(e for e, _ in heap)) if heap else now


def _figures(dev: FlashTarget, count: int, size: int, elapsed: int,
             lat: np.ndarray, done: np.ndarray) -> dict[str, Any]:
    """The bench's figures after its last request completed at ``elapsed``."""
    dev.finalize(elapsed)
    rep = dev.report()
    moved = count * size
    secs = elapsed / S if elapsed else float("inf")
    cmds = rep["commands"]
    # the second half's rate: the requests completed after the median completion, over
    # the time they took (the write buffer's and the queue's ramp left out, as fio's
    # ramp_time does)
    ends = np.sort(done)
    half = count // 2
    span = int(ends[-1] - ends[half - 1]) if half else 0
    steady = (count - half) / (span / S) if span > 0 else count / secs
    drained = max([elapsed] + [d.idle_from() for d in dev.devices])
    sustained = count / (drained / S) if drained else float("inf")
    return {
        "steady_iops": steady,
        "steady_bandwidth_mbps": steady * size / 1e6,
        "sustained_iops": sustained,
        "sustained_bandwidth_mbps": sustained * size / 1e6,
        "iops": count / secs,
        "bandwidth_mbps": moved / secs / 1e6,
        "mean_latency_us": float(lat.mean()) / US,
        "p50_latency_us": float(np.percentile(lat, 50)) / US,
        "p99_latency_us": float(np.percentile(lat, 99)) / US,
        "commands": {"read": cmds["read"], "program": cmds["program"],
                     "erase": cmds["erase"]},
        "gc_count": rep["gc_count"],
        "waf": rep["waf"],
        "energy_pj_per_byte": dev.total_energy_pj() / moved,
        "report": rep,
        "elapsed_ps": elapsed,
    }
