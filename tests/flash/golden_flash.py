"""Pinned outputs of the flash tier: the completion time of every request of a fixed
mixed workload, and the device report, on the 990pro and mqsim-default presets (full
size and shrunk into GC), both timing models, both ``compat`` modes.

``tests/flash/data/golden_flash.json`` holds, per case, a SHA-256 of the completion
times and of the report, and the report's main counters in clear. It was written by the
model before the flash hot paths were vectorised (which must not change any result), and
written again when the PCIe link's directions became gap-filling lanes (a model change,
``flash.host``):

    python tests/flash/golden_flash.py --write

A case's workload: batches of up to 64 requests issued at one time (as the DMA engine
and the host benches issue them), each a read, a write, a byte-addressed (MMIO) read or
a trim, of 16 KiB, 4 KiB or 2 MiB, at random or sequential addresses, some of them
repeating recent addresses (buffer and read-cache hits); the next batch starts at a
time between the batch's issue and its last completion.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from flash_devices import small

from flash import PRESETS, FlashConfig, FlashTarget
from tmhw.sim import Op, Pattern, Transfer
from tmhw.sim.env import Environment

DATA = Path(__file__).parent / "data" / "golden_flash.json"
KiB = 1024
MiB = 1024 * KiB

#: (name, config, precondition, requests)
CASES: list[tuple[str, FlashConfig, float, int]] = []
for _preset in ("990pro", "mqsim-default"):
    for _compat in ("onfi", "mqsim"):
        _full = dataclasses.replace(PRESETS[_preset], compat=_compat)
        CASES.append((f"{_preset}-{_compat}", _full, 0.9, 1500))
        _small = small(_preset, compat=_compat, over_provisioning=0.15)
        CASES.append((f"{_preset}-{_compat}-small", _small, 0.85, 1500))
CASES.append(("990pro-onfi-2dev",
              dataclasses.replace(PRESETS["990pro"], devices=2, stripe_bytes=256 * KiB),
              0.9, 800))

#: report counters shown in clear in the golden file
COUNTERS = ("transfers", "host_pages_read", "unmapped_reads", "gc_pages_read",
            "host_pages_written", "pages_programmed", "gc_pages_moved", "erases",
            "gc_count", "forced_gc_count", "commands", "suspends", "merged_program_pages",
            "cache", "nvme_queue_waits", "channel_bytes")


def workload(cfg: FlashConfig, n: int, seed: int) -> list[list[tuple[Op, int, int, int]]]:
    """Batches of (op, address, bytes, wire bytes)."""
    rng = np.random.default_rng(seed)
    cap = cfg.total_capacity
    page = cfg.page_size
    batches: list[list[tuple[Op, int, int, int]]] = []
    seq = 0
    recent: list[int] = [0]
    made = 0
    while made < n:
        k = int(rng.choice([1, 2, 8, 64]))
        batch = []
        for _ in range(k):
            r = float(rng.random())
            size = int(rng.choice([16 * KiB, 4 * KiB, 2 * MiB, 16 * KiB]))
            kind = int(rng.integers(0, 10))
            if kind < 3:  # sequential
                addr = seq
                seq = (seq + size) % (cap - 2 * MiB)
            elif kind < 5:  # a recent address again
                addr = recent[int(rng.integers(0, len(recent)))]
            else:  # random, page aligned or not
                addr = int(rng.integers(0, (cap - 2 * MiB) // page)) * page
                if kind == 9:
                    addr += int(rng.integers(0, page // 512)) * 512
            recent = (recent + [addr])[-32:]
            if r < 0.5:
                batch.append((Op.READ, addr, size, 0))
            elif r < 0.93:
                batch.append((Op.WRITE, addr, size, 0))
            elif r < 0.98:
                batch.append((Op.READ, addr, min(size, 64 * KiB), min(size, 64 * KiB) * 5 // 4))
            else:
                batch.append((Op.TRIM, addr, size, 0))
            made += 1
        batches.append(batch)
    return batches


def run_case(cfg: FlashConfig, model: str, precondition: float, n: int,
             batched: bool = False) -> tuple[list[int], dict[str, Any]]:
    """Completion times of the case's requests and the device report. ``batched``
    issues each batch of equal ops through ``FlashTarget.transport_many`` instead."""
    dev = FlashTarget(Environment(), "flash", None, cfg, model=model,
                      precondition=precondition, seed=3)
    ends: list[int] = []
    now = 0
    rng = np.random.default_rng(7)
    for batch in workload(cfg, n, seed=11):
        last = now
        if batched:
            i = 0
            while i < len(batch):  # runs of one op, page-sized, no MMIO
                op, a, nb, w = batch[i]
                j = i
                while (j < len(batch) and batch[j][0] is op and batch[j][2] == nb
                       and batch[j][3] == 0 and op is not Op.TRIM):
                    j += 1
                if j > i:
                    es = dev.transport_many(op, [b[1] for b in batch[i:j]], nb,
                                            Pattern.RANDOM, now)
                    ends.extend(es)
                    i = j
                    continue
                ends.append(dev.transport(Transfer(op, a, nb, Pattern.RANDOM, wire_bytes=w),
                                          now))
                i += 1
            last = max([now, *ends[-len(batch):]])
        else:
            for op, a, nb, w in batch:
                e = dev.transport(Transfer(op, a, nb, Pattern.RANDOM, wire_bytes=w), now)
                ends.append(e)
                last = max(last, e)
        now = now + int((last - now) * float(rng.random()))
    dev.finalize(max(now, dev.idle_from()))
    return ends, dev.report()


def requests(name: str, model: str, n: int) -> int:
    """Fewer requests where the detailed model is slow (deep die queues under GC)."""
    return n // 5 if model == "detailed" and name.endswith("-small") else n


def digest(ends: list[int], rep: dict[str, Any]) -> dict[str, Any]:
    return {
        "requests": len(ends),
        "ends_sha256": hashlib.sha256(json.dumps(ends).encode()).hexdigest(),
        "last_end": max(ends),
        "report_sha256": hashlib.sha256(json.dumps(rep, sort_keys=True).encode()).hexdigest(),
        "counters": {k: rep[k] for k in COUNTERS if k in rep},
    }


def compute() -> dict[str, Any]:
    out = {}
    for name, cfg, pre, n in CASES:
        for model in ("fast", "detailed"):
            out[f"{name}-{model}"] = digest(*run_case(cfg, model, pre, requests(name, model, n)))
    return out


if __name__ == "__main__":
    if "--write" in sys.argv:
        DATA.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n")
    else:
        print(json.dumps(compute(), indent=1, sort_keys=True))
