"""The fast chunk-level model against the detailed per-page one: within 5% on
sequential and random reads and writes (and the mix), on the presets' timing."""

from __future__ import annotations

import pytest
from flash_devices import small

from flash import PRESETS
from flash.bench import run_bench
from tmhw.sim.units import KiB, MiB

CASES = [
    ("seqread", 2 * MiB, 8, 150),
    ("randread", 16 * KiB, 64, 6000),
    ("seqwrite", 2 * MiB, 8, 150),
    ("randwrite", 16 * KiB, 64, 6000),
    ("mix", 16 * KiB, 64, 4000),
]


@pytest.mark.parametrize("pattern,size,qd,count", CASES)
@pytest.mark.parametrize("name", ["990pro", "mqsim-default", "slc-ull"])
def test_fast_model_is_within_5pct_of_detailed(name: str, pattern: str, size: int, qd: int,
                                               count: int) -> None:
    cfg = PRESETS[name]
    fast = run_bench(cfg, pattern=pattern, size=size, qd=qd, count=count, model="fast")
    det = run_bench(cfg, pattern=pattern, size=size, qd=qd, count=count, model="detailed")
    assert fast["bandwidth_mbps"] == pytest.approx(det["bandwidth_mbps"], rel=0.05)
    assert fast["mean_latency_us"] == pytest.approx(det["mean_latency_us"], rel=0.05)


def test_fast_model_is_within_5pct_of_detailed_in_steady_state_gc() -> None:
    cfg = small()
    kw = dict(pattern="randwrite", size=16 * KiB, qd=32, count=20_000, precondition=0.9)
    fast = run_bench(cfg, model="fast", **kw)  # type: ignore[arg-type]
    det = run_bench(cfg, model="detailed", **kw)  # type: ignore[arg-type]
    assert fast["waf"] == det["waf"]
    assert fast["bandwidth_mbps"] == pytest.approx(det["bandwidth_mbps"], rel=0.05)
