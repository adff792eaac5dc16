"""Micro-benchmarks of one DRAM configuration: streaming, random and mixed traffic.

``run_bench`` issues ``count`` requests of ``size`` bytes, all present at time 0 (a
saturating, closed-loop source), through either timing model and reports what
``tmhw dram bench`` prints: achieved bandwidth, latency (mean, p99), row-buffer hit rate,
refresh share and energy per bit.

Patterns:
- ``stream``: consecutive addresses from 0.
- ``random``: each request is ``size / 64`` random 64 B accesses (``Pattern.RANDOM``).
- ``mix``: two reads for every write, each stream sequential (reads from the bottom of
  the address space, writes from its middle): the operand traffic of an accelerator.

Latency is from when a request enters the controller (detailed: admission to the read
or write queue; fast: the start of its service) to the end of its last data.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import simpy

from dram.config import DramConfig
from dram.controller import DetailedModel
from dram.fast import FastModel
from dram.mapping import RANDOM_ACCESS_BYTES
from dram.target import DramTarget
from tmhw.sim.errors import TmhwError
from tmhw.sim.progress import progress as bar
from tmhw.sim.transfer import Pattern
from tmhw.sim.units import NS, S, fmt_bytes

PATTERNS = ("stream", "random", "mix")

#: A bench holds all its requests in memory at once (they all arrive at time 0), and the
#: detailed model every burst of them too: these bound what one run may ask for (under a
#: gigabyte of host memory each, and several seconds of the detailed model).
MAX_REQUESTS = 1 << 22
MAX_DETAILED_BURSTS = 1 << 22

Request = tuple[bool, int, int, Pattern]


def _check_shape(pattern: str, size: int, count: int) -> None:
    if pattern not in PATTERNS:
        raise TmhwError(f"pattern: one of {', '.join(PATTERNS)}, not {pattern!r}")
    if size <= 0:
        raise TmhwError(f"size: {size!r} is not allowed; a positive number of bytes")
    if count <= 0:
        raise TmhwError(f"count: {count!r} is not allowed; an integer >= 1")


def bursts_per_request(cfg: DramConfig, pattern: str, size: int) -> int:
    """The bursts the detailed model simulates for one request of ``size`` bytes."""
    if pattern == "random":
        return -(-size // RANDOM_ACCESS_BYTES) * max(1, RANDOM_ACCESS_BYTES // cfg.burst_bytes)
    return -(-size // cfg.burst_bytes)


def check_bench(cfg: DramConfig, pattern: str, size: int, count: int,
                model: str = "detailed") -> None:
    """Refuse, in one line naming the value and the limit, a bench that could not run:
    a request larger than the device, more than MAX_REQUESTS requests, or (detailed
    model) more than MAX_DETAILED_BURSTS bursts in all."""
    _check_shape(pattern, size, count)
    if size > cfg.capacity:
        raise TmhwError(f"size: {size} B is not allowed; a request must fit in the device "
                        f"({cfg.name} holds {cfg.capacity} B = {fmt_bytes(cfg.capacity)})")
    if count > MAX_REQUESTS:
        raise TmhwError(f"count: {count} is not allowed; at most {MAX_REQUESTS} requests "
                        "(the bench holds them all in memory)")
    if model == "detailed":
        bursts = count * bursts_per_request(cfg, pattern, size)
        if bursts > MAX_DETAILED_BURSTS:
            raise TmhwError(
                f"size: {count} requests of {size} B are {bursts} bursts of "
                f"{cfg.burst_bytes} B; the detailed model simulates each one and allows at "
                f"most {MAX_DETAILED_BURSTS} in all (use --model fast, or a smaller size "
                "or count)")


class Batch(NamedTuple):
    """A bench's requests as arrays, one entry per request: write or read, address,
    bytes, and stream (consecutive bursts) or random (64 B accesses)."""

    writes: npt.NDArray[np.bool_]
    addresses: npt.NDArray[np.int64]
    nbytes: npt.NDArray[np.int64]
    streams: npt.NDArray[np.bool_]


def batch(cfg: DramConfig, pattern: str, size: int, count: int,
          write: bool = False) -> Batch:
    """The requests of a benchmark, as arrays."""
    _check_shape(pattern, size, count)
    i = np.arange(count, dtype=np.int64)
    sizes = np.full(count, size, dtype=np.int64)
    if pattern in ("stream", "random"):
        return Batch(np.full(count, write), i * size, sizes,
                     np.full(count, pattern == "stream"))
    # two reads for every write: reads from the bottom, writes from the middle
    writes = i % 3 == 2
    nth = np.where(writes, i // 3, i - i // 3)   # the request's rank in its stream
    return Batch(writes, np.where(writes, cfg.capacity // 2, 0) + nth * size, sizes,
                 np.full(count, True))


def workload(cfg: DramConfig, pattern: str, size: int, count: int,
             write: bool = False) -> list[Request]:
    """The requests (is_write, address, nbytes, pattern) of a benchmark."""
    b = batch(cfg, pattern, size, count, write)
    return [(w, a, n, Pattern.STREAM if s else Pattern.RANDOM) for w, a, n, s in
            zip(b.writes.tolist(), b.addresses.tolist(), b.nbytes.tolist(),
                b.streams.tolist(), strict=True)]


def _as_batch(requests: list[Request] | Batch) -> Batch:
    if isinstance(requests, Batch):
        return requests
    return Batch(np.array([r[0] for r in requests], dtype=bool),
                 np.array([r[1] for r in requests], dtype=np.int64),
                 np.array([r[2] for r in requests], dtype=np.int64),
                 np.array([r[3] is Pattern.STREAM for r in requests], dtype=bool))


def run_requests(cfg: DramConfig, requests: list[Request] | Batch, model: str = "detailed",
                 log: bool = False, progress: bool = False
                 ) -> tuple[DramTarget, int, np.ndarray]:
    """Serve ``requests`` (all arriving at 0); return the finalized target, the makespan
    (ps) and the per-request latencies (ps). ``progress``: a bar of requests on a
    terminal's stderr (detailed: served unit by unit)."""
    env = simpy.Environment()
    target = DramTarget(env, "dram", None, cfg, model=model)
    impl = target.impl
    reqs = _as_batch(requests)
    n = len(reqs.addresses)
    with bar(n, "dram bench", "req", disable=not progress) as shown:
        if isinstance(impl, DetailedModel):
            if log:
                for c in impl.ctrls:
                    c.log = []
            impl.submit_many(reqs.writes, reqs.addresses, reqs.nbytes, reqs.streams,
                             np.full(n, cfg.controller_delay, dtype=np.int64))
            shown.set_description("dram bench: serve")
            for c in impl.ctrls:     # DetailedModel.run, one unit at a time
                c.run()
                shown.update(int(impl._par[0]["n_done"]) - shown.n)
            end = impl.last_end
            _, starts, ends = impl.request_times()
            lat = ends - starts
        else:
            assert isinstance(impl, FastModel)
            step = max(1, min(n // 100, 1 << 14))      # the bar moves every 1% (16 Ki at most)
            ends = np.empty(n, dtype=np.int64)
            starts = np.empty(n, dtype=np.int64)
            for i in range(0, n, step):
                part = slice(i, min(n, i + step))
                ends[part], starts[part] = impl.serve_many(
                    reqs.writes[part], reqs.addresses[part], reqs.nbytes[part],
                    reqs.streams[part], np.zeros(part.stop - i, dtype=np.int64))
                shown.update(part.stop - i)
            end = int(ends.max())
            lat = ends - starts
    target.finalize(end)
    return target, end, lat


def run_bench(cfg: DramConfig, pattern: str, size: int, count: int,
              model: str = "detailed", write: bool = False,
              progress: bool = False) -> dict[str, Any]:
    """The figures of ``tmhw dram bench`` for one configuration (``check_bench`` first:
    nothing is allocated for a bench that could not run). ``progress``: a bar on a
    terminal's stderr."""
    check_bench(cfg, pattern, size, count, model)
    reqs = batch(cfg, pattern, size, count, write)
    target, end, lat = run_requests(cfg, reqs, model, progress=progress)
    rep = target.report()
    moved = rep["bytes_read"] + rep["bytes_written"]
    return {
        "preset": cfg.name,
        "model": model,
        "pattern": pattern,
        "size": size,
        "count": count,
        "bandwidth_gb_per_s": moved / (end / S) / 1e9 if end else 0.0,
        "peak_bandwidth_gb_per_s": cfg.peak_bandwidth() / 1e9,
        "latency_mean_ns": float(lat.mean()) / NS if lat.size else 0.0,
        "latency_p99_ns": float(np.percentile(lat, 99)) / NS if lat.size else 0.0,
        "row_hit_rate": rep["row_hit_rate"],
        "refresh_share": rep["refresh_share"],
        "energy_pj_per_bit": rep["energy_pj_per_bit"],
        "time_ns": end / NS,
    }
