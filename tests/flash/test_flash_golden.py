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
