"""Golden figures of the HBM/DRAM timing models: every completion time of a few thousand
mixed transfers, bit for bit.

The transfers come from a fixed integer hash (splitmix64, no library random stream), so
the sequence cannot drift with a numpy or Python release: streams that continue where
the last chunk ended and jumps elsewhere, reads and writes, 64 B to 8 MiB, unaligned
starts, addresses past the capacity (they wrap), random and strided 64 B traffic, groups
issued at the same time (as the NPU issues an op's chunks), back-to-back transfers, short
gaps and gaps of several refresh intervals. Each case serves them on one preset (hbm3,
hbm2, ddr4-3200, and variants that take the model's other paths: closed page, per-bank
refresh, refresh off, a map whose row is not the top field) and pins each completion
time, each ``last_start``, and the model's counters at the end.

The data (``data/dram_golden.npz``) was written by this file's ``_write`` from the models
as they were before the fast model's booking was made cheaper; any change to a model's
timing shows here. To regenerate after a deliberate change of the model:
``python tests/dram/test_dram_golden.py`` (and say why in the commit).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dram import PRESETS, DramConfig
from dram.controller import DetailedModel
from dram.fast import FastModel
from tmhw.sim.transfer import Pattern
from tmhw.sim.units import KiB, MiB

DATA = Path(__file__).parent / "data" / "dram_golden.npz"
_M64 = (1 << 64) - 1

#: (case name, preset, overrides, model, transfers, largest transfer).
CASES: list[tuple[str, str, dict[str, str], str, int, int]] = [
    ("hbm3", "hbm3", {}, "fast", 1500, 8 * MiB),
    ("hbm2", "hbm2", {}, "fast", 1500, 8 * MiB),
    ("ddr4-3200", "ddr4-3200", {}, "fast", 1200, 4 * MiB),
    ("hbm3-closed", "hbm3", {"page_policy": "closed"}, "fast", 500, 4 * MiB),
    ("hbm3-per-bank", "hbm3", {"refresh": "per-bank"}, "fast", 500, 4 * MiB),
    ("hbm2-refresh-off", "hbm2", {"refresh": "off"}, "fast", 400, 4 * MiB),
    ("hbm2-row-inside", "hbm2", {"address_mapping": "BgRoRaBaCoPcCh"}, "fast", 300,
     2 * MiB),
    ("hbm3-detailed", "hbm3", {}, "detailed", 160, 64 * KiB),
    ("hbm2-detailed", "hbm2", {}, "detailed", 120, 64 * KiB),
]


def _mix(x: int) -> int:
    """splitmix64's finaliser: a well-spread 64-bit hash of ``x``."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _transfers(cfg: DramConfig, n: int, largest: int, seed: int
               ) -> Iterator[tuple[bool, int, int, Pattern, int]]:
    """``n`` transfers (write, address, bytes, pattern, earliest ps); the earliest time of
    each depends on the ends the model returned, sent back through the generator."""
    t = 0
    last_end = 0
    nxt = 0
    k = seed << 32
    sizes = [64, 256, 4 * KiB, 43691, 96 * KiB, 256 * KiB, 1 * MiB, 6 * MiB + 4097, largest]
    for _ in range(n):
        k += 1
        h = _mix(k)
        write = h % 3 == 0
        h //= 3
        size = sizes[h % len(sizes)]
        size = min(size, largest)
        h //= len(sizes)
        if h % 4 == 0:
            size = 64 + (h >> 2) % size  # an odd size up to the chosen one
        h //= 4
        kind = h % 10
        h //= 10
        a = _mix(k ^ 0x5555)  # the address
        if kind < 5:  # the stream continues
            addr = nxt + (a % 3) * 32 * (a % 2)
        elif kind < 8:  # a jump, sometimes past the capacity (wraps)
            addr = (a % (cfg.capacity * 5 // 4)) & ~63
            if kind == 7:
                addr += (a >> 40) % 4096
        else:
            addr = (a % cfg.capacity) & ~63
        pattern = Pattern.STREAM
        if kind == 9:
            pattern = (Pattern.RANDOM, Pattern.STRIDED)[h % 2]
            size = min(size, 64 * KiB)
        w = _mix(k ^ 0xAAAA)  # the time
        when = w % 8
        w >>= 3
        if when < 3:
            pass  # issued with the last one (an op's chunks)
        elif when < 5:
            t = max(t, last_end)  # after the last one completed
        elif when < 7:
            t += w % 2_000_000  # a short gap
        else:
            t += cfg.t_refi * (1 + w % 5) + (w >> 8) % cfg.t_refi  # long idle
        end = yield write, addr, size, pattern, t
        last_end = end
        nxt = addr + size


def _run(name: str, preset: str, over: dict[str, str], model: str, n: int,
         largest: int) -> dict[str, np.ndarray]:
    cfg = replace(PRESETS[preset], **over)  # type: ignore[arg-type]
    m: FastModel | DetailedModel = FastModel(cfg) if model == "fast" else DetailedModel(cfg)
    ends: list[int] = []
    starts: list[int] = []
    gen = _transfers(cfg, n, largest, CASES.index((name, preset, over, model, n, largest)))
    req = next(gen)
    while True:
        end = m.serve(*req)
        ends.append(end)
        if isinstance(m, FastModel):
            starts.append(m.last_start)
        try:
            req = gen.send(end)
        except StopIteration:
            break
    now = max(ends)
    final = [m.acts, m.bursts_read, m.bursts_written, m.bytes_read, m.bytes_written,
             m.row_hits, m.refreshes(now), m.last_end, *m.active_ps(now), *m.data_ps]
    if isinstance(m, FastModel):
        final += m.busy_ps
    return {f"{name}/ends": np.array(ends, dtype=np.int64),
            f"{name}/starts": np.array(starts, dtype=np.int64),
            f"{name}/final": np.array(final, dtype=np.int64)}


def _write() -> None:
    out: dict[str, np.ndarray] = {}
    for case in CASES:
        out.update(_run(*case))
    DATA.parent.mkdir(exist_ok=True)
    np.savez_compressed(DATA, **out)


@pytest.fixture(scope="module")
def golden() -> dict[str, np.ndarray]:
    with np.load(DATA) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_completion_times_and_counters_match_the_pinned_figures(
        case: tuple[str, str, dict[str, str], str, int, int],
        golden: dict[str, np.ndarray]) -> None:
    got = _run(*case)
    for key, value in got.items():
        want = golden[key]
        assert value.shape == want.shape, key
        bad = np.nonzero(value != want)[0]
        assert bad.size == 0, (f"{key}: {bad.size} differ, first at {bad[0]}: "
                               f"{value[bad[0]]} != {want[bad[0]]}")


if __name__ == "__main__":
    _write()
