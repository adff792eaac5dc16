"""``report.json``'s layout: one table (``tmhw.report_schema.FIELDS``) makes the JSON
Schema, ``docs/REPORT.md`` and the summary's labels; every report any command or the
library writes is checked against the schema before it is written
(``tmhw.report.write_json``), so every report this suite writes is validated."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import tmhw
from tmhw import report_schema as RS
from tmhw.report import SCHEMA_VERSION, summary_table, write_json


@pytest.fixture(scope="module")
def quick() -> dict[str, Any]:
    return tmhw.simulate("quick", ["workload.layers=2", "run.iterations=2"]).to_dict()


def test_the_schema_file_and_the_reference_page_are_current() -> None:
    """Both are generated from ``FIELDS`` (``python -m tmhw.report_schema``)."""
    assert json.loads(RS.SCHEMA_PATH.read_text()) == RS.schema()
    assert RS.DOC_PATH.read_text() == RS.markdown()


def test_every_field_has_a_description_a_scope_and_a_label_and_units_are_in_names() -> None:
    scopes = {"steady", "per_iteration", "warmup", "run_total", "bounds", "run", "drain"}
    for f in RS.FIELDS:
        assert f.about and f.label and f.scope in scopes, f.path
        leaf = f.path.rsplit(".", 1)[-1]
        # a unit in the name agrees with the unit column
        for suffix, unit in (("_ps", "ps"), ("_bytes", "bytes"), ("_usd", "USD"),
                             ("_mw", "mW")):
            if leaf.endswith(suffix) and "_per_" not in leaf:
                assert f.unit == unit, f.path
        assert not leaf.endswith("_gbps"), f.path
    # the section says the scope: a figure under steady is steady, etc.
    for f in RS.FIELDS:
        head = f.path.split(".")[0].removesuffix("[]")
        if head in ("steady", "per_iteration", "warmup", "run_total", "bounds", "drain"):
            assert f.scope == head, f.path


def test_the_top_level_holds_sections_not_figures() -> None:
    """No figure sits at the top level, where its scope would be implicit."""
    top = [f for f in RS.FIELDS if "." not in f.path]
    figures = [f.path for f in top if f.kind not in ("obj", "list")]
    assert figures == ["schema_version", "version"]


def test_a_run_report_follows_the_schema_exactly(quick: dict[str, Any]) -> None:
    RS.validate(quick)
    assert quick["schema_version"] == SCHEMA_VERSION
    # every listed field is there (additionalProperties: false catches the converse)
    def has(node: Any, parts: list[str]) -> bool:
        if not parts:
            return True
        name, rest = parts[0], parts[1:]
        if name.endswith("[]"):
            items = node.get(name[:-2], [])
            return bool(items) and all(has(it, rest) for it in items)
        return name in node and has(node[name], rest)
    for f in RS.FIELDS:
        if not f.optional:
            assert has(quick, f.path.split(".")), f.path


def test_a_report_that_breaks_the_schema_is_refused_and_nothing_is_written(
        quick: dict[str, Any], tmp_path: Path) -> None:
    bad = copy.deepcopy(quick)
    bad["steady"]["stall_ps"] = bad["steady"].pop("flash_stall_ps")
    with pytest.raises(ValueError, match="steady"):
        write_json(bad, tmp_path / "report.json")
    assert not list(tmp_path.iterdir())
    wrong_type = copy.deepcopy(quick)
    wrong_type["steady"]["iteration_time_ps"] = "fast"
    with pytest.raises(ValueError, match="steady.iteration_time_ps"):
        write_json(wrong_type, tmp_path / "report.json")
    write_json(quick, tmp_path / "report.json")
    assert json.loads((tmp_path / "report.json").read_text())["steady"] == quick["steady"]


def test_steady_figures_are_per_iteration_and_agree_with_the_records(
        quick: dict[str, Any]) -> None:
    st, m = quick["steady"], quick["measurement"]
    measured = [it for it in quick["per_iteration"] if not it["warmup"]]
    assert len(measured) == m["measured_iterations"] >= 1
    assert st["iteration_time_ps"] == sum(it["time_ps"] for it in measured) // len(measured)
    assert st["flash_stall_ps"] == sum(it["flash_stall_ps"] for it in measured) // len(measured)
    # energy per iteration: power x time of one iteration
    assert st["energy_pj"]["total"] == pytest.approx(
        st["avg_power_mw"] * 1e-3 * st["iteration_time_ps"], rel=1e-9)
    assert st["samples_per_joule"] == pytest.approx(
        m["samples_per_iteration"] / (st["energy_pj"]["total"] * 1e-12), rel=1e-9)
    # the whole run is at least its iterations
    assert quick["run_total"]["sim_time_ps"] >= sum(it["time_ps"]
                                                    for it in quick["per_iteration"])


def test_the_summary_takes_its_labels_from_the_schema(quick: dict[str, Any]) -> None:
    text = summary_table(quick)
    for path in ("steady.iteration_time_ps", "steady.flash_stall_ps", "steady.npu_busy_ps",
                 "steady.samples_per_joule", "bounds.iteration_time_ps"):
        assert RS.label(path) in text, path


def test_every_summary_csv_column_reads_a_field_the_schema_has() -> None:
    """A column of ``summary.csv`` reads a listed field, or a counter inside an object
    the schema leaves open (the component tree, ``host``)."""
    for name, (path, _) in RS.FIGURES.items():
        dotted = ".".join(path)
        opened = [f.path for f in RS.FIELDS if f.open and dotted.startswith(f.path + ".")]
        assert dotted in RS.BY_PATH or opened, (name, dotted)
        if dotted in RS.BY_PATH:
            assert RS.BY_PATH[dotted].kind in ("int", "num"), (name, dotted)
