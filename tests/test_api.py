"""The library as the README shows it: its example runs, and each call validates."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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
    assert rep.iteration_time_s == d["steady"]["iteration_time_ps"] / 1e12
    assert rep.energy_j == pytest.approx(d["steady"]["energy_pj"]["total"] * 1e-12)
    assert rep.bounds["traffic_bytes"] <= rep.inter_tier_bytes
    path = rep.save(tmp_path / "run")
    saved = json.loads(path.read_text())
    assert saved["steady"]["iteration_time_ps"] == d["steady"]["iteration_time_ps"]
    with pytest.raises(TmhwError, match=r"^Report.save: folder = '': an empty path"):
        rep.save("")


def test_load_config_takes_a_preset_a_file_and_overrides(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text('preset = "quick"\n[policy]\nhbm_ratio = 0.5\n')
    assert tmhw.load_config(f).policy.hbm_ratio == 0.5
    assert tmhw.load_config("quick", ["policy.hbm_ratio=0.75"]).policy.hbm_ratio == 0.75
    with pytest.raises(TmhwError, match="neither a preset"):
        tmhw.load_config("no-such-preset")
    with pytest.raises(ConfigError):
        tmhw.load_config("quick", ["policy.hbm_ratio=2"])


def test_overrides_are_a_list_or_a_dict_and_mean_the_same() -> None:
    as_list = tmhw.load_config("quick", ["policy.hbm_ratio=0.25", 'policy.name="demand"',
                                         "flash.channels=16"])
    as_dict = tmhw.load_config("quick", {"policy.hbm_ratio": 0.25, "policy.name": "demand",
                                         "flash": {"channels": 16}})
    assert as_list == as_dict
    assert as_dict.policy.hbm_ratio == 0.25 and as_dict.flash.channels == 16


@pytest.mark.parametrize("call", [
    lambda: tmhw.load_config("quick", "policy.hbm_ratio=0.25"),
    lambda: tmhw.simulate("quick", "run.iterations=1"),
    lambda: tmhw.simulate(tmhw.load_config("quick"), "run.iterations=1"),
])
def test_a_bare_string_of_overrides_is_refused_in_library_words(call: Any) -> None:
    """Iterated, a string would be one override per character: refused, and the message
    is the library's (no command-line flag in it)."""
    with pytest.raises(TmhwError) as e:
        call()
    msg = str(e.value)
    assert "single string" in msg and "dotted.path=value" in msg and "--" not in msg, msg


@pytest.mark.parametrize("overrides", [5, 0.25, None])
def test_overrides_that_are_neither_a_list_nor_a_dict_are_refused_by_name(
        overrides: Any) -> None:
    with pytest.raises(TmhwError) as e:
        tmhw.load_config("quick", overrides)
    msg = str(e.value)
    assert msg.startswith(f"load_config: overrides = {overrides!r}") and "dict" in msg, msg


def test_a_malformed_override_names_the_call_not_a_flag() -> None:
    with pytest.raises(TmhwError) as e:
        tmhw.load_config("quick", ["policy.hbm_ratio"])
    assert str(e.value).startswith("load_config: override 'policy.hbm_ratio'") \
        and "--set" not in str(e.value)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True])
def test_sweep_refuses_workers_the_command_line_refuses(workers: Any) -> None:
    with pytest.raises(TmhwError, match=r"sweep: workers = .* an integer >= 1"):
        tmhw.sweep({"preset": "quick", "grid": {"policy.name": ["demand"]}},
                   workers=workers)


def test_sweep_takes_a_list_of_points_as_its_points() -> None:
    tiny = {"workload.model": "resnet18", "workload.batch": 1, "run.iterations": 1,
            "policy.name": "hbm-only"}
    rows = tmhw.sweep([{**tiny, "run.seed": 0}, {**tiny, "run.seed": 1}], workers=1)
    assert [r["run.seed"] for r in rows] == [0, 1]
    assert all(r["status"] == "ok" for r in rows)
    with pytest.raises(TmhwError, match="sweep: spec is a int"):
        tmhw.sweep(3)  # type: ignore[arg-type]
