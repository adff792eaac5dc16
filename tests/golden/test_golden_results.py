"""Whole-system results are pinned: every cell of the golden quick grid, and the
simulated time of the bench cases at test size, equal what the model gave when the file
was written (``golden_results.py``). A failure names the first figure that moved."""

from __future__ import annotations

from typing import Any

import golden_results as g
import pytest

GOLDEN: dict[str, Any] = g.load()
CELLS = g.cells()


def test_the_golden_file_covers_every_policy_and_variant() -> None:
    assert set(GOLDEN["cells"]) == {name for name, _ in CELLS}
    assert len(CELLS) == len(g.policies()) * len(g.RATIOS) * len(g.VARIANTS)


@pytest.mark.parametrize("cell", CELLS, ids=[c[0] for c in CELLS])
def test_report_is_unchanged(cell: tuple[str, list[str]]) -> None:
    name, sets = cell
    moved = g.first_moved(GOLDEN["cells"][name], g.run_cell(sets))
    assert moved is None, f"{name}: first figure that moved: {moved}"


@pytest.mark.parametrize("case", g.BENCH_CASES)
def test_bench_case_simulated_time_is_unchanged(case: str) -> None:
    from tmhw.bench import run_case
    got = run_case(case, small=True)["sim_time_ps"]
    assert got == GOLDEN["bench_small_sim_time_ps"][case], f"bench {case}: sim_time_ps moved"
