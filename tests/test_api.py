"""The library as the README shows it: its example runs, and each call validates."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import tmhw
from tmhw.sim.errors import ConfigError, TmhwError

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_example_runs() -> None:
    code = re.search(r"## The library\n\n```python\n(.*?)```", README.read_text(), re.S)
    assert code is not None
    scope: dict[str, object] = {}
    exec(compile(code.group(1), "README.md", "exec"), scope)  # noqa: S102
    rep = scope["rep"]
    assert isinstance(rep, tmhw.Report)
    assert rep.iteration_time_s > 0 and rep.inter_tier_bytes > 0
    rows = scope["rows"]
    assert isinstance(rows, list)
    assert [r["policy.name"] for r in rows] == ["tm-training", "demand"]
    assert all(r["status"] == "ok" for r in rows)


def test_a_report_gives_its_figures_and_saves_what_the_command_line_writes(
        tmp_path: Path) -> None:
    rep = tmhw.simulate("quick", ["policy.hbm_ratio=0.5"])
    d = rep.to_dict()
    assert rep.iteration_time_s == d["iteration_time_ps"] / 1e12
    assert rep.energy_j == pytest.approx(d["energy_pj"]["total"] * 1e-12)
    assert rep.bounds["traffic_bytes"] <= rep.inter_tier_bytes
    path = rep.save(tmp_path / "run")
    assert json.loads(path.read_text())["iteration_time_ps"] == d["iteration_time_ps"]


def test_load_config_takes_a_preset_a_file_and_overrides(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text('preset = "quick"\n[policy]\nhbm_ratio = 0.5\n')
    assert tmhw.load_config(f).policy.hbm_ratio == 0.5
    assert tmhw.load_config("quick", ["policy.hbm_ratio=0.75"]).policy.hbm_ratio == 0.75
    with pytest.raises(TmhwError, match="neither a preset"):
        tmhw.load_config("no-such-preset")
    with pytest.raises(ConfigError):
        tmhw.load_config("quick", ["policy.hbm_ratio=2"])
