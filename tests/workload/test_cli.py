"""``tmhw workload``: the sub-commands as the top-level CLI will call them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tmhw.sim.errors import TmhwError
from tmhw.workload.cli import register


def _run(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="tmhw")
    register(ap.add_subparsers(dest="cmd", required=True))
    args = ap.parse_args(argv)
    status: int = args.func(args)
    return status


def test_show_json_reports_the_footprint(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["workload", "show", "bert-base", "--batch", "2", "--seq", "128",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["model"], out["batch"], out["seq"]) == ("bert-base", 2, 128)
    assert out["bytes_per_param"] == 16.0 and out["params"] == 110_106_428
    for key in ("weights", "master", "optimizer_state", "weight_grads",
                "activations_saved", "peak_live"):
        assert out[key] > 0


def test_show_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["workload", "show", "resnet18", "--batch", "4", "--optimizer",
                 "sgd-momentum"]) == 0
    out = capsys.readouterr().out
    assert "resnet18: batch 4, sgd-momentum, 11.69M parameters" in out
    assert "(12.0 B/param)" in out
    # plain SGD keeps no state: weight, gradient and master copy, 2 + 2 + 4 B
    assert _run(["workload", "show", "resnet18", "--batch", "4", "--optimizer", "sgd"]) == 0
    assert "(8.0 B/param)" in capsys.readouterr().out


def test_show_imports_a_scalesim_topology(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "mlp.csv"
    p.write_text("Layer,M,N,K,\nfc1,64,128,32,\nfc2,64,16,128,\n")
    assert _run(["workload", "show", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"] == 32 * 128 + 128 * 16


def test_list_names_every_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["workload", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["model"] for r in rows} >= {"resnet50", "bert-large", "gpt2-xl", "t5-encoder"}


def test_bad_model_raises_the_one_line_error_the_cli_prints() -> None:
    with pytest.raises(TmhwError, match="^model = 'bert-huge': a zoo model's name .*: "
                       "bert-base, .*; or a path to a SCALE-Sim topology"):
        _run(["workload", "show", "bert-huge"])
