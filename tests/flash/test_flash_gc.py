"""Garbage collection under sustained writes: write amplification, lost bandwidth, and
its absence for sequential overwrites."""

from __future__ import annotations

import pytest
from flash_devices import small

from flash.bench import run_bench
from tmhw.sim.units import KiB

WRITES = 20_000  # 16 KiB pages: 0.7 x the small device's 29,184 logical pages


@pytest.mark.parametrize("model", ["fast", "detailed"])
def test_random_writes_on_a_90pct_full_drive_collect_garbage_and_amplify(model: str) -> None:
    cfg = small()
    fresh = run_bench(cfg, pattern="randwrite", size=16 * KiB, qd=32, count=WRITES,
                      model=model)
    full = run_bench(cfg, pattern="randwrite", size=16 * KiB, qd=32, count=WRITES,
                     precondition=0.9, model=model)
    assert fresh["gc_count"] == 0 and fresh["waf"] == 1.0
    assert full["gc_count"] > 100
    assert full["waf"] > 2.0
    assert full["bandwidth_mbps"] < 0.5 * fresh["bandwidth_mbps"]
    rep = full["report"]
    # every relocated page was read and programmed again, every victim erased
    assert rep["gc_pages_read"] == rep["gc_pages_moved"] + rep["wl_pages_moved"]
    assert rep["erases"] >= rep["gc_count"]
    assert full["commands"]["erase"] == rep["erases"]


@pytest.mark.parametrize("model", ["fast", "detailed"])
def test_sequential_overwrites_have_write_amplification_close_to_one(model: str) -> None:
    r = run_bench(small(), pattern="seqwrite", size=16 * KiB, qd=32, count=WRITES,
                  precondition=0.9, model=model)
    assert r["gc_count"] > 0  # blocks are reclaimed, but they hold no valid data
    assert r["waf"] < 1.01


def test_cost_benefit_victims_also_reclaim_space() -> None:
    cfg = small(gc_policy="cost-benefit")
    r = run_bench(cfg, pattern="randwrite", size=16 * KiB, qd=32, count=WRITES,
                  precondition=0.9)
    assert r["gc_count"] > 100 and r["waf"] > 1.5


def test_writes_wait_for_gc_under_the_hard_threshold() -> None:
    # No soft threshold to speak of: every reclaim is forced by a host write.
    cfg = small(gc_threshold=0.02, gc_hard_threshold=0.02, over_provisioning=0.08)
    r = run_bench(cfg, pattern="randwrite", size=16 * KiB, qd=32, count=WRITES,
                  precondition=0.9, model="detailed")
    assert r["report"]["forced_gc_count"] > 0
    assert r["waf"] > 1.5


def _window_wafs(age: float) -> list[float]:
    """Write amplification of four successive windows of 5000 uniform random overwrites
    of the preconditioned range, with background GC after every write."""
    import numpy as np

    from flash.ftl import FTL

    ftl = FTL(small())
    ftl.precondition(0.9)
    ftl.age(age, seed=1)
    rng = np.random.default_rng(7)
    out = []
    for _ in range(4):
        h0, g0 = ftl.host_pages, ftl.gc_pages + ftl.wl_pages
        for lpn in rng.integers(0, ftl.n_pre, 5000).tolist():
            ftl.write1(lpn)
            for p in sorted(ftl.low_planes):
                while ftl.free_count[p] < ftl.soft_blocks and ftl.collect(p):
                    pass
        out.append(1 + (ftl.gc_pages + ftl.wl_pages - g0) / (ftl.host_pages - h0))
    return out


def test_aging_starts_random_writes_in_steady_state() -> None:
    fresh, aged = _window_wafs(0.0), _window_wafs(2.0)
    # from sequentially filled blocks the first window amplifies far less than later ones
    assert fresh[0] < 0.6 * fresh[-1]
    # aged, every window sits at the same write amplification
    assert max(aged) / min(aged) < 1.05
    assert aged[0] > 3.0
