"""Loaded runs against MQSim on the mqsim-default device: stock MQSim against
``flash.compat = "mqsim"``, and MQSim under ONFI rules against the default mode.

The MQSim figures, their device and workload files, the three changes made to MQSim for
the ONFI comparison, and the exact commands are in ``data/MQSIM_REFERENCE.md``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from flash.bench import run_bench
from flash.config import PRESETS

KIB = 1024
# name: (pattern, size, qd, requests, stock MQSim us, MQSim under ONFI rules us)
RUNS = {
    "rr_qd1": ("randread", 8 * KIB, 1, 2000, 102, 102),
    "rw_qd1": ("randwrite", 8 * KIB, 1, 2000, 777, 777),
    "sr_qd1": ("seqread", 256 * KIB, 1, 2000, 253, 193),
    "sw_qd1": ("seqwrite", 256 * KIB, 1, 1000, 929, 929),
    "rr_qd64": ("randread", 8 * KIB, 64, 40000, 392, 228),
    "rw_qd64": ("randwrite", 8 * KIB, 64, 20000, 1974, 1306),
    "sr_qd64": ("seqread", 256 * KIB, 64, 8000, 8689, 6388),
    "sw_qd64": ("seqwrite", 256 * KIB, 64, 4000, 25427, 12726),
}
TOLERANCE = 0.10


def _mean_us(name: str, compat: str) -> float:
    pattern, size, qd, count, _, _ = RUNS[name]
    cfg = replace(PRESETS["mqsim-default"], compat=compat)
    return float(run_bench(cfg, pattern=pattern, size=size, qd=qd, count=count)
                 ["mean_latency_us"])


@pytest.mark.parametrize("name", list(RUNS))
def test_mqsim_mode_is_within_ten_percent_of_stock_mqsim(name: str) -> None:
    ref = RUNS[name][4]
    assert abs(_mean_us(name, "mqsim") / ref - 1) <= TOLERANCE


# rr_qd64 is a known deviation (+12.6%): tmhw books a read's data-out when the read is
# issued, and gaps shorter than one data-out are lost (data/MQSIM_REFERENCE.md). The mark
# is strict, so the test fails once the model closes the gap.
ONFI_RUNS = [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="issue-time "
             "channel booking loses gaps: 79% channel use against MQSim's 86%"))
             if n == "rr_qd64" else n for n in RUNS]


@pytest.mark.parametrize("name", ONFI_RUNS)
def test_default_mode_is_within_ten_percent_of_mqsim_under_onfi_rules(name: str) -> None:
    ref = RUNS[name][5]
    assert abs(_mean_us(name, "onfi") / ref - 1) <= TOLERANCE
