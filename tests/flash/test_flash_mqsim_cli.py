"""The MQSim XML loader and the ``flash bench`` command."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from flash import PRESETS, load_mqsim_xml
from flash.cli import JSON_KEYS, register
from tmhw.sim import TmhwError
from tmhw.sim.units import US
from tmhw.validate.check import DATA as VALIDATE_DATA

DATA = VALIDATE_DATA / "mqsim"


def test_mqsim_default_xml_loads_as_the_mqsim_default_preset() -> None:
    cfg = load_mqsim_xml(DATA / "ssdconfig_mqsim_default.xml")
    # the file's MSB latencies differ (85 us read, 950 us program): per page type
    assert cfg.t_r_page == (75 * US, 85 * US)
    assert cfg.t_prog_page == (750 * US, 950 * US)
    assert cfg.t_r == 80 * US and cfg.t_prog == 850 * US
    same = dataclasses.replace(cfg, name="mqsim-default", t_r=75 * US, t_prog=750 * US,
                               t_r_page=(), t_prog_page=())
    assert same == PRESETS["mqsim-default"]


def test_a_file_that_is_not_mqsim_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.xml"
    bad.write_text("<a><b>1</b></a>")
    with pytest.raises(TmhwError, match="no MQSim"):
        load_mqsim_xml(bad)
    bad.write_text("<a>")
    with pytest.raises(TmhwError, match="not a readable"):
        load_mqsim_xml(bad)


def _run(argv: str, capsys: pytest.CaptureFixture[str]) -> str:
    p = argparse.ArgumentParser(prog="tmhw")
    register(p.add_subparsers())
    args = p.parse_args(argv.split())
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_bench_json_has_exactly_the_issue_keys(capsys: pytest.CaptureFixture[str]) -> None:
    out = json.loads(_run("flash bench --preset 990pro --pattern randread --size 16KiB "
                          "--qd 64 --count 500 --json", capsys))
    assert tuple(out) == JSON_KEYS
    assert out["commands"] == {"read": 500, "program": 0, "erase": 0}
    assert out["waf"] == 1.0 and out["gc_count"] == 0
    assert out["p50_latency_us"] <= out["p99_latency_us"]
    assert out["iops"] * 16 * 1024 / 1e6 == pytest.approx(out["bandwidth_mbps"])
    assert out["energy_pj_per_byte"] > 0


def test_bench_text_and_mqsim_xml(capsys: pytest.CaptureFixture[str]) -> None:
    text = _run(f"flash bench --mqsim-xml {DATA / 'ssdconfig_mqsim_default.xml'} "
                "--pattern mix --count 300 --model detailed", capsys)
    assert "ssdconfig_mqsim_default mix" in text and "IOPS" in text


def test_bench_rejects_a_bad_size(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TmhwError, match="size"):
        _run("flash bench --size 16QiB", capsys)
