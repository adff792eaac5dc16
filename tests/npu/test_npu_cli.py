"""``tmhw npu cycles``: per-layer cycles of a SCALE-Sim topology, text or JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from npu.cli import register
from tmhw.sim import TmhwError

REF = Path(__file__).parent / "reference"


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="tmhw")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_json_lists_each_layer_with_scalesim_cycles(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["npu", "cycles", "--topology", str(REF / "params_conv.csv"), "--array",
                "32x32", "--dataflow", "ws", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["conv7", "conv14"]
    assert [r["cycles"] for r in rows] == [77111, 4283]  # scalesim 3.0.0, docs/PARAMETERS.md
    for r in rows:
        assert {"name", "cycles", "utilization", "mapping_efficiency"} <= set(r)
        assert 0 < r["utilization"] <= 1 and 0 < r["mapping_efficiency"] <= 1


def test_gemm_csv_is_detected_and_paper_convention_adds_the_missing_cycle(
        capsys: pytest.CaptureFixture[str]) -> None:
    topo = str(REF / "params_gemm.csv")
    run(["npu", "cycles", "--topology", topo, "--array", "32x32", "--dataflow", "is",
         "--json"])
    tool = [r["cycles"] for r in json.loads(capsys.readouterr().out)]
    run(["npu", "cycles", "--topology", topo, "--array", "32x32", "--dataflow", "is",
         "--convention", "paper", "--json"])
    paper = [r["cycles"] for r in json.loads(capsys.readouterr().out)]
    assert tool == [14207, 631]
    assert paper == [14208, 632]


def test_text_table_has_a_row_per_layer_and_a_total(capsys: pytest.CaptureFixture[str]) -> None:
    run(["npu", "cycles", "--topology", str(REF / "params_gemm.csv"), "--array", "32x32",
         "--dataflow", "os"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[0] == "gemm256" and "10175" in lines[1].split()
    assert lines[-1].split()[0] == "total" and lines[-1].split()[-1] == str(10175 + 503)


def test_bad_array_is_a_one_line_error() -> None:
    with pytest.raises(TmhwError, match="array"):
        run(["npu", "cycles", "--topology", str(REF / "params_gemm.csv"), "--array", "32"])
