"""``tmhw dram bench`` prints exactly the issue's JSON keys."""

from __future__ import annotations

import argparse
import json

import pytest

from dram.cli import BENCH_KEYS, register


def _run(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="tmhw")
    register(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    return int(args.func(args))


@pytest.mark.parametrize("pattern", ["stream", "random", "mix"])
@pytest.mark.parametrize("model", ["detailed", "fast"])
def test_bench_json_has_the_issue_keys(pattern: str, model: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["dram", "bench", "--preset", "hbm3", "--pattern", pattern, "--size", "64",
                 "--count", "300", "--model", model, "--channels", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == list(BENCH_KEYS) == [
        "bandwidth_gb_per_s", "latency_mean_ns", "latency_p99_ns", "row_hit_rate",
        "refresh_share", "energy_pj_per_bit"]
    assert out["bandwidth_gb_per_s"] > 0


def test_bench_text_and_presets(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["dram", "bench", "--preset", "ddr4-3200", "--count", "100"]) == 0
    assert "GB/s" in capsys.readouterr().out
    assert _run(["dram", "presets", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) >= {"hbm2", "hbm3", "lpddr5-6400"}


def test_unknown_preset_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as e:
        _run(["dram", "bench", "--preset", "hbm9"])
    assert e.value.code == 2
