"""Call budgets of the flash hot path (counts, not times): a 2 MiB chunk, 128 pages on
128 dies of the 990pro preset, costs a handful of die-lane calls, a bounded number of
Python calls and a bounded number of lines of die-lane code run, whatever its pages
meet on their dies. The per-page code this replaced made one ``DieLanes`` call per die
and one more per booking for a chunk's programs, and for its reads of dies with
programs queued: 258 die-lane calls and 349 Python calls per read chunk of this test,
320 and 469 per write chunk. The per-die loops that replaced it ran 4566 lines of
``DieLanes`` code per read chunk and 2759 per write chunk; booked in numpy, a read chunk
runs 93 and a write chunk 543 (of which 513 search the queued programs a page may
join)."""

from __future__ import annotations

import sys
from collections import Counter
from types import FrameType
from typing import Any

from flash import PRESETS, FlashTarget
from tmhw.sim import Op, Transfer
from tmhw.sim.env import Environment

MiB = 1 << 20
CHUNK = 2 * MiB


def _count_calls(fn: Any) -> Counter[str]:
    """Python function calls made while ``fn()`` runs, by qualified name."""
    calls: Counter[str] = Counter()

    def prof(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            calls[frame.f_code.co_qualname] += 1

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def _count_lines(fn: Any, module: str) -> Counter[str]:
    """Lines of ``module``'s code run while ``fn()`` runs, by function."""
    lines: Counter[str] = Counter()

    def trace(frame: FrameType, event: str, _arg: object) -> Any:
        if event == "call":
            return trace if frame.f_code.co_filename.endswith(module) else None
        if event == "line":
            lines[frame.f_code.co_qualname] += 1
        return trace

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return lines


def _device() -> FlashTarget:
    dev = FlashTarget(Environment(), "flash", None, PRESETS["990pro"], model="fast",
                      precondition=0.5, seed=0)
    # programs queued on every die: the reads below meet them (read priority, suspend)
    for k in range(4):
        dev.transport(Transfer(Op.WRITE, k * 8 * MiB, 8 * MiB), 0)
    return dev


def test_chunk_costs_a_few_die_lane_calls() -> None:
    dev = _device()
    chunks = 8
    reads = _count_calls(lambda: [dev.transport(Transfer(Op.READ, (64 + 2 * k) * MiB, CHUNK),
                                                1000) for k in range(chunks)])
    writes = _count_calls(lambda: [dev.transport(Transfer(Op.WRITE, (512 + 2 * k) * MiB,
                                                          CHUNK), 1000)
                                   for k in range(chunks)])
    assert dev.devices[0].model.dies.suspends["program"] > 0  # the reads did meet programs
    for calls in (reads, writes):
        lane_calls = sum(v for k, v in calls.items() if k.startswith("DieLanes."))
        # the booking call, the lanes' newest queued ops, the lanes with queued work
        # (reads) or the queue slots (programs), the cache-register hold or a page's
        # search for a program to join
        assert lane_calls <= 4 * chunks, calls
        # per chunk: the target, device, cache, FTL and model layers, numpy helpers, and
        # one booking per channel; none per page or per die
        assert sum(calls.values()) <= 200 * chunks, calls.most_common(10)


def test_chunk_books_its_dies_in_numpy_not_die_by_die() -> None:
    """Lines of die-lane code a chunk runs: no loop over its 128 dies, except the search
    of each die's queued programs a page may join (a write that finds programs still
    waiting on every die, as here)."""
    dev = _device()
    chunks = 8
    reads = _count_lines(lambda: [dev.transport(Transfer(Op.READ, (64 + 2 * k) * MiB, CHUNK),
                                                1000) for k in range(chunks)], "flash/lanes.py")
    writes = _count_lines(lambda: [dev.transport(Transfer(Op.WRITE, (512 + 2 * k) * MiB,
                                                          CHUNK), 1000)
                                   for k in range(chunks)], "flash/lanes.py")
    assert dev.devices[0].model.dies.suspends["program"] > 0
    lane_lines = [sum(v for k, v in c.items() if k.startswith("DieLanes."))
                  for c in (reads, writes)]
    assert lane_lines[0] <= 120 * chunks, reads.most_common(5)
    assert lane_lines[1] - writes["DieLanes._merge"] <= 60 * chunks, writes.most_common(5)
    assert lane_lines[1] <= 600 * chunks, writes.most_common(5)
