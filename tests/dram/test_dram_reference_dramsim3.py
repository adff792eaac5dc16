"""The detailed model against DRAMsim3 on one HBM2 channel.

Reference runs: DRAMsim3 (github umd-memsys/DRAMsim3, commit 2981759, built with
``cmake -DCMAKE_BUILD_TYPE=Release .. && make dramsim3main``), config
``configs/HBM2_8Gb_x128.ini`` with ``channels = 1`` (DRAMsim3's trace front end takes one
request per clock, 64 GB/s, which cannot saturate eight 32 GB/s channels). Traces, one
64 B read per line, all at cycle 0 (``0x<addr> READ 0``):

- stream: addresses ``i * 64`` for i < 40000;
- random: ``random.Random(1)``, ``randrange(0, 2**30 // 64) * 64``, 20000 lines.

Command: ``dramsim3main hbm2_1ch.ini -c 50000 -t <trace> -o <dir>``; figures from
``dramsim3.json`` (channel 0). DRAMsim3 served 23125 stream reads and 6180 random reads
in the 50,000 cycles (50 us); the model serves the same counts. DRAMsim3's energy has no
interface term, so ``io_pj_per_bit`` is 0 here. A single read to a precharged bank
(``0x0 READ 0``) took 30.5 cycles: tRCD + CL + BL/2 = 30 plus half a cycle of its
front end.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from dram import PRESETS
from dram.bench import run_bench

DRAMSIM3 = {
    #            GB/s      reads  total energy pJ
    "stream": (29.58976, 23125, 23202576.0),
    "random": (7.90784, 6180, 14067384.0),
}


@pytest.mark.parametrize("pattern", ["stream", "random"])
def test_hbm2_channel_matches_dramsim3(pattern: str) -> None:
    gbps, reads, energy = DRAMSIM3[pattern]
    cfg = replace(PRESETS["hbm2"], channels=1, io_pj_per_bit=0.0)
    res = run_bench(cfg, pattern, 64, reads, "detailed")
    assert res["bandwidth_gbps"] == pytest.approx(gbps, rel=0.03)
    assert res["energy_pj_per_bit"] == pytest.approx(energy / (reads * 512), rel=0.05)
