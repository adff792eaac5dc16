"""The flash tier's results are pinned: every completion time and the device report of a
fixed mixed workload (``golden_flash``) equal what the model produced before its hot
paths were vectorised. A change of timing or FTL behaviour shows up here first; an
intended one regenerates the file (``python tests/flash/golden_flash.py --write``) and
says why in its commit."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import golden_flash as g
import pytest
from flash_devices import small

from flash import FlashConfig, FlashTarget
from tmhw.sim import Pattern, Transfer
from tmhw.sim.env import Environment

GOLDEN = json.loads(g.DATA.read_text())


@pytest.mark.parametrize("model", ["fast", "detailed"])
@pytest.mark.parametrize("case", g.CASES, ids=[c[0] for c in g.CASES])
def test_results_match_golden(case: tuple[str, object, float, int], model: str) -> None:
    name, cfg, pre, n = case
    ends, rep = g.run_case(cfg, model, pre, g.requests(name, model, n))  # type: ignore[arg-type]
    got = g.digest(ends, rep)
    want = GOLDEN[f"{name}-{model}"]
    assert got["counters"] == want["counters"]
    assert got["last_end"] == want["last_end"]
    assert got["ends_sha256"] == want["ends_sha256"]
    assert got["report_sha256"] == want["report_sha256"]


@pytest.mark.parametrize("model", ["fast", "detailed"])
@pytest.mark.parametrize("case", [c for c in g.CASES if c[0] in
                                  ("990pro-onfi", "990pro-mqsim-small", "mqsim-default-onfi",
                                   "990pro-onfi-2dev")],
                         ids=lambda c: str(c[0]))
def test_batched_transport_books_as_one_by_one(case: tuple[str, object, float, int],
                                               model: str) -> None:
    """``FlashTarget.transport_many`` of a batch gives every request the completion
    time, and the device the report, that the same requests issued one by one at the
    same time give."""
    name, cfg, pre, n = case
    n = g.requests(name, model, n) // 2
    one = g.run_case(cfg, model, pre, n)  # type: ignore[arg-type]
    many = g.run_case(cfg, model, pre, n, batched=True)  # type: ignore[arg-type]
    assert many[0] == one[0]
    assert many[1] == one[1]


def _striped_run(cfg: FlashConfig, compiled: bool, n: int) -> tuple[list[int], object, int]:
    """The golden workload on ``cfg``'s striped devices: completion times, report, and
    how many device reads and writes were one compiled call (``flash.runs``; none
    where not ``compiled``: each device's steps in Python)."""
    dev = FlashTarget(Environment(), "flash", None, cfg, model="fast", precondition=0.9,
                      seed=3, age=1.0)
    calls = [0]
    for d in dev.devices:
        if not compiled:
            d._run_writer = d._run_reader = None
            continue
        for part in (d._run_writer, d._run_reader):
            assert part is not None
            book = part.book

            def counted(*a: object, book: Any = book) -> object:
                calls[0] += 1
                return book(*a)

            part.book = counted  # type: ignore[method-assign]
    ends: list[int] = []
    now = 0
    for batch in g.workload(cfg, n, seed=5):
        last = now
        for op, a, nb, w in batch:
            e = dev.transport(Transfer(op, a, nb, Pattern.RANDOM, wire_bytes=w), now)
            ends.append(e)
            last = max(last, e)
        now = (now + last) // 2
    dev.finalize(max(now, dev.idle_from()))
    return ends, dev.report(), calls[0]


@pytest.mark.parametrize("cfg", [
    dataclasses.replace(small("990pro", over_provisioning=0.15), devices=3,
                        stripe_bytes=64 * g.KiB),
    dataclasses.replace(small("mqsim-default", compat="mqsim", over_provisioning=0.15),
                        devices=3, stripe_bytes=32 * g.KiB),
    dataclasses.replace(small("990pro", write_buffer_bytes=0), devices=4,
                        stripe_bytes=16 * g.KiB),
], ids=["990pro-small-3dev", "mqsim-chiplock-3dev", "990pro-writethrough-4dev"])
def test_striped_devices_book_compiled_as_in_python(cfg: FlashConfig) -> None:
    """Each device a transfer touches serves its part on its own lanes of the tier's one
    array (device k's lane i is k x L + i): its reads and its writes of runs are one
    compiled call each, and every completion time and the report (each device's
    counters, suspends, merged pages, lane use) are those of its steps in Python, under
    GC, chip locks, the data-out convoy, the write buffer and without it."""
    got = _striped_run(cfg, True, 700)
    each = _striped_run(cfg, False, 700)
    assert got[2] > 0 and each[2] == 0
    assert got[0] == each[0]
    assert got[1] == each[1]
    rep = got[1]
    assert isinstance(rep, dict) and rep["gc_count"] > 0  # the devices did collect
