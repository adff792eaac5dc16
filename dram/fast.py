"""The fast, chunk-level DRAM timing model used in full-system runs.

A chunk costs a loop over its units and at most one row per bank per unit, never
O(bytes), and creates no event. Each unit (pseudo-channel) has a busy-until time of its
data bus, as the kernel's ``Timeline``; the chunk completes at the latest unit's end.
``FastModel`` holds the state (``dram/engine.py``'s ``State``: a record per unit, the
open-row table, the totals and the timing record) and books each chunk by one call of
the engine's ``serve``, where every booking rule lives, so a chunk runs the same few
lines of Python on 8 units as on 32, whatever its phase, length and pattern.

Agreement with the detailed controller (tests/dram/test_dram_fast_vs_detailed.py): within
5% of the time to serve streams, random 64 B accesses, 2:1 read/write mixes of chunks and
generated chunk mixes. The weak spots, all optimistic: 2:1 mixes of single 64 B
requests and runs of a microsecond or two that switch direction often (up to 5-7%),
because the controller's write buffering and row reopening at each switch are averaged
here; random traffic under per-bank refresh (9-14%); streams on HBM2 with two ranks (5-7%),
where the stream locks to the ranks' refresh turns and meets nearly every one. One is
pessimistic: random writes on HBM3 with two ranks (12%), where the controller keeps more
distinct banks busy than a random draw from its write queue would.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

import dram.engine as engine
from dram.config import DramConfig
from dram.mapping import AddressMap
from dram.timing import ref_phase
from tmhw.sim.jit import Direct
from tmhw.sim.transfer import Pattern


def compile_kernels() -> None:
    """Compile the engine's kernels into numba's on-disk cache (``serve`` and
    ``serve_many`` compile with every kernel they call), by a few chunks on an HBM2
    stack (``make`` runs this before the tests and the default study, through
    ``tmhw.system.compile_kernels``)."""
    from dram.config import PRESETS

    m = FastModel(PRESETS["hbm2"])
    for i in range(3):
        m.serve(i == 1, i << 20, 1 << 20, Pattern.STREAM, 10_000_000)
    m.serve_op(np.array([64, 0], dtype=np.int64), np.array([0, 64], dtype=np.int64),
               np.array([10, 10], dtype=np.int64), 0, 64, 20_000_000)
    m.serve_ops(np.array([64, 0, 64], dtype=np.int64), np.array([0, 64, 64], dtype=np.int64),
                np.array([10, 10, 10], dtype=np.int64), np.array([0, 2, 3], dtype=np.int64),
                np.array([0, 128], dtype=np.int64), np.array([64, 192], dtype=np.int64),
                30_000_000, np.zeros(2, dtype=np.int64))
    m.serve_many(np.array([False, True]), np.array([0, 64], dtype=np.int64),
                 np.array([64, 64], dtype=np.int64), np.array([True, False]),
                 np.zeros(2, dtype=np.int64))


#: the engine's chunk and op kernels past their dispatcher (``tmhw.sim.jit.Direct``)
_SERVE = Direct(engine.serve)
_SERVE_OP = Direct(engine.serve_op)


class FastModel:
    """Chunk-level timing and counters for one ``DramConfig``. Times in ps."""

    def __init__(self, cfg: DramConfig) -> None:
        self.cfg = cfg
        self.amap = AddressMap(cfg)
        self.state = engine.new_state(cfg, self.amap)
        # The kernel's argument: a plain tuple, which numba types on its fast path.
        self._args = tuple(self.state)
        self._units = self.state.units
        self._totals = self.state.totals
        self._geo = self.state.geo[0]

    def serve(self, write: bool, address: int, nbytes: int, pattern: Pattern,
              earliest: int) -> int:
        """Book a chunk; return its completion time (end of its last data), ps."""
        if nbytes <= 0:
            return earliest
        end: int = _SERVE.call(self._args, write, address, nbytes,
                               pattern is Pattern.STREAM, earliest)
        return end

    def serve_op(self, r_chunks: npt.NDArray[np.int64], w_chunks: npt.NDArray[np.int64],
                 c_chunks: npt.NDArray[np.int64], r_addr: int, w_addr: int,
                 start: int) -> int:
        """An NPU op's chunked stream reads, compute and writes in one compiled call,
        as its ``serve`` calls one after another would book them
        (``engine.serve_op``); the op's end, ps."""
        end: int = _SERVE_OP.call(self._args, r_chunks, w_chunks, c_chunks, r_addr,
                                  w_addr, start)
        return end

    def serve_ops(self, r_chunks: npt.NDArray[np.int64], w_chunks: npt.NDArray[np.int64],
                  c_chunks: npt.NDArray[np.int64], first: npt.NDArray[np.int64],
                  r_addrs: npt.NDArray[np.int64], w_addrs: npt.NDArray[np.int64], now: int,
                  out: npt.NDArray[np.int64]) -> int:
        """``serve_op`` of several ops back to back from ``now``, in one compiled call
        (``engine.serve_ops``): op ``j``'s chunks ``[first[j], first[j + 1])``, its time
        into ``out[j]``; the last op's end, ps."""
        end: int = engine.serve_ops(self._args, r_chunks, w_chunks, c_chunks, first,
                                    r_addrs, w_addrs, now, out)
        return end

    def serve_many(self, writes: npt.NDArray[np.bool_], addresses: npt.NDArray[np.int64],
                   nbytes: npt.NDArray[np.int64], streams: npt.NDArray[np.bool_],
                   earliest: npt.NDArray[np.int64]
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Book chunks in order, as ``serve`` one after another would, in one compiled
        call; returns each one's completion and ``last_start`` after it, ps."""
        n = len(addresses)
        ends = np.empty(n, dtype=np.int64)
        starts = np.empty(n, dtype=np.int64)
        engine.serve_many(self._args, np.asarray(writes, dtype=np.bool_),
                          np.asarray(addresses, dtype=np.int64),
                          np.asarray(nbytes, dtype=np.int64),
                          np.asarray(streams, dtype=np.bool_),
                          np.asarray(earliest, dtype=np.int64), ends, starts)
        return ends, starts

    # -- figures -----------------------------------------------------------------------
    def _total(self, name: str) -> int:
        return int(self._totals[name][0])

    @property
    def acts(self) -> int:
        """Row activations."""
        return self._total("acts")

    @property
    def last_start(self) -> int:
        """When the latest ``serve`` began service on its first unit (for latency)."""
        return self._total("start")

    @property
    def bursts_read(self) -> int:
        return self._total("bursts_read")

    @property
    def bursts_written(self) -> int:
        return self._total("bursts_written")

    @property
    def bytes_read(self) -> int:
        return self._total("bytes_read")

    @property
    def bytes_written(self) -> int:
        return self._total("bytes_written")

    @property
    def last_end(self) -> int:
        """The latest completion served, ps."""
        return self._total("end")

    @property
    def t_ref_block(self) -> int:
        """Bus time one all-bank refresh takes from a stream, ps (0: none)."""
        return int(self._geo.ref_block)

    @property
    def busy_ps(self) -> list[int]:
        """Per unit, the time its bus was reserved (data, and the refresh windows inside
        its bookings), ps."""
        u = self._units
        out: list[int] = (u.busy - u.idle).tolist()
        return out

    @property
    def data_ps(self) -> list[int]:
        """Per unit, the time its bus carried data, ps."""
        out: list[int] = self._units.carried.tolist()
        return out

    @property
    def open_rows(self) -> npt.NDArray[np.int64]:
        """Open row of each bank, flat (``unit * banks_per_unit + bank``): -1 precharged,
        ``engine.UNKNOWN_ROW`` open on a row not tracked."""
        rows: npt.NDArray[np.int64] = self.state.open_rows
        return rows

    @property
    def row_hits(self) -> int:
        """Bursts that found their row open: all but one per activation."""
        return max(0, self.bursts_read + self.bursts_written - self.acts)

    def refreshes(self, now: int) -> int:
        """Refresh commands (REFab, or REFpb in per-bank mode) run by ``now``, all units."""
        c = self.cfg
        if c.refresh == "off":
            return 0
        if c.refresh == "all-bank":
            period = c.t_refi
            phases = [ref_phase(c, i, r) for i in range(c.units) for r in range(c.ranks)]
        else:
            period = c.t_refi // self.amap.banks_per_unit
            phases = [ref_phase(c, i) for i in range(c.units)]
        return sum((now - off) // period + 1 for off in phases if now > off)

    def active_ps(self, now: int) -> list[int]:
        """Per unit, time with a bank open, summed over its ranks (open page: from the
        unit's first use, in each rank that holds an open row; closed: busy)."""
        out = []
        c = self.cfg
        nbk = c.banks
        nb = self.amap.banks_per_unit
        units: Any = self._units
        busy_ps = self.busy_ps
        for i in range(c.units):
            fu = int(units.first_use[i])
            if fu < 0:
                out.append(0)
            elif c.page_policy == "open":
                rows = self.open_rows[i * nb:(i + 1) * nb]
                ranks = sum(1 for r in range(c.ranks)
                            if any(x != -1 for x in rows[r * nbk:(r + 1) * nbk]))
                out.append(max(0, now - fu) * max(1, ranks, int(units.rand_ranks[i])))
            else:
                out.append(min(now, busy_ps[i]))
        return out
