"""``tmhw validate``: every reference comparison expected to hold does (the quick set and
the few slower rows), the registry covers every component with provenance,
docs/VALIDATION.md lists every check, and the command's exit status says whether every
row holds.

Each check is one test here (the SCALE-Sim layers one by one are in
tests/npu/test_npu_scalesim.py); the rows marked ``ci = False``, known not to hold yet,
are in ``tmhw validate``'s full run and docs/VALIDATION.md only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult

from flash.datasheets import FIGURES
from tmhw.validate import registry
from tmhw.validate.check import DATA, Check, Result

ROOT = Path(__file__).resolve().parent.parent
QUICK = registry.checks(quick=True)
ALL = registry.checks()
CI = [c for c in ALL if c.ci]


@pytest.mark.parametrize("check", CI, ids=[c.name for c in CI])
def test_check_holds(check: Check) -> None:
    result = check.run()
    assert result.holds, result.line()


def test_every_component_has_quick_checks_with_provenance() -> None:
    assert {c.component for c in QUICK} == set(registry.COMPONENTS)
    assert len({c.name for c in ALL}) == len(ALL)
    for c in ALL:
        assert c.reference and c.figure and c.unit and c.source, c.name
        assert c.reference_value > 0 and (c.tolerance > 0 or c.bounds or
                                          c.reference_value == int(c.reference_value)), c.name
    # rows known not to hold today stay out of the quick set
    assert all(c.ci for c in QUICK) and {c.name for c in QUICK} <= {c.name for c in CI}


def test_every_preset_datasheet_figure_names_its_conditions_and_tolerance() -> None:
    """Four figures a preset (sequential read and write, random read and write), within
    10%, random writes within 15%, power within 25%."""
    by_preset: dict[str, set[str]] = {}
    for f in FIGURES:
        by_preset.setdefault(f.preset, set()).add(f.figure)
        assert f.source and f.qd > 0 and f.count > 0
        assert f.tolerance == (0.25 if f.quantity != "rate" else
                               0.15 if f.figure == "randwrite" else 0.10)
    assert by_preset == {p: {"seqread", "seqwrite", "randread", "randwrite"}
                         for p in ("990pro", "pm1743")}


def test_validation_md_lists_every_check() -> None:
    """docs/VALIDATION.md is ``tmhw validate --markdown``: every check's figure is in it."""
    doc = (ROOT / "docs" / "VALIDATION.md").read_text()
    missing = [c.name for c in ALL if f"| {c.figure.replace('|', chr(92) + '|')} |" not in doc]
    assert not missing


def test_reference_data_ships_with_the_package() -> None:
    names = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file()}
    assert {"dramsim3.toml", "mqsim.toml", "energy.toml",
            "scalesim/results.csv", "scalesim/README.md",
            "mqsim/ssdconfig_mqsim_default.xml"} <= names


def test_json_of_one_component(tmhw: Callable[..., CliResult]) -> None:
    r = tmhw("validate", "--component", "npu", "--json")
    assert r.rc == 0, r.err
    data = json.loads(r.out)
    assert data["holds"] is True
    assert {c["component"] for c in data["checks"]} == {"npu"}
    assert all(c["error"] == 0 for c in data["checks"])


def test_a_row_that_does_not_hold_exits_1_with_one_line_each(
        tmhw: Callable[..., CliResult], monkeypatch: pytest.MonkeyPatch) -> None:
    good, bad = (Check(name=f"test/{n}", component="energy", reference="R", figure=n,
                       unit="x", reference_value=2.0, measure=lambda v=v: v,
                       tolerance=0.1, tool="t", source="s")
                 for n, v in (("good", 2.1), ("bad", 3.0)))
    monkeypatch.setattr(registry, "checks", lambda component=None, quick=False: [good, bad])
    r = tmhw("validate")
    assert r.rc == 1
    assert r.err_lines == ["tmhw validate: does not hold: test/bad: bad: tmhw 3 x, R 2 x "
                           "(+50.0%, allowed ±10%)"]
    assert "energy vs its sources" in r.out and "2 checks, 1 row does not hold" in r.out


@pytest.mark.parametrize("argv", [("--component", "gpu"), ("--quick", "--json", "--markdown"),
                                  ("--quick", "extra")])
def test_bad_input_is_one_line_and_exit_2(tmhw: Callable[..., CliResult],
                                          argv: tuple[str, ...]) -> None:
    r = tmhw("validate", *argv)
    assert r.rc == 2
    assert len(r.err_lines) == 1 and r.out == ""


def test_result_of_a_range_holds_inside_it() -> None:
    c = Check(name="t", component="energy", reference="R", figure="f", unit="pJ/bit",
              reference_value=3.9, measure=lambda: 4.9, bounds=(3.0, 5.0), tool="t",
              source="s")
    r = c.run()
    assert isinstance(r, Result) and r.holds and c.tolerance_text() == "3-5 pJ/bit"
    assert not c.holds_for(5.1) and not c.holds_for(2.9)
