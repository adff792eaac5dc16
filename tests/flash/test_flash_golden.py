"""The flash tier's results are pinned: every completion time and the device report of a
fixed mixed workload (``golden_flash``) equal what the model produced before its hot
paths were vectorised. A change of timing or FTL behaviour shows up here first; an
intended one regenerates the file (``python tests/flash/golden_flash.py --write``) and
says why in its commit."""

from __future__ import annotations

import json

import golden_flash as g
import pytest

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
