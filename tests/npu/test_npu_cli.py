"""``tmhw npu cycles``: per-layer cycles of a SCALE-Sim topology, text or JSON."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from npu.cli import register
from tmhw.sim import TmhwError
from tmhw.validate.npu import DATA as SCALESIM_DATA

REF = SCALESIM_DATA


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


HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, " \
         "Num Filter, Strides,\n"


@pytest.mark.parametrize("text,words", [
    (HEADER + "fc, 64, 128, 32,\n", ("t.csv:2", "a conv row is", "got 4 field(s)")),
    ("", ("t.csv", "no layer rows")),
    (HEADER, ("t.csv", "no layer rows")),
    (HEADER + "c, -4, 8, 3, 3, 1, 1, 0,\n", ("t.csv:2", "IFMAP Height -4")),
])
@pytest.mark.parametrize("cmd", [["npu", "cycles", "--topology"], ["workload", "show"]])
def test_npu_cycles_and_workload_show_refuse_the_same_files(
        tmp_path: Path, tmhw: Callable[..., Any], cmd: list[str], text: str,
        words: tuple[str, ...]) -> None:
    """One reader: a 4-field row under a conv header, an empty file and a header alone are
    one line and exit 2 in both commands."""
    p = tmp_path / "t.csv"
    p.write_text(text)
    r = tmhw(*cmd, str(p))
    assert r.rc == 2 and r.out == ""
    (line,) = r.err.strip().splitlines()
    assert all(w in line for w in words), line
