"""Workload sources (``tmhw.workload.sources``): a ``workload.model`` value is a zoo
model's name or a file of a source's kind; config validation, ``tmhw run``, ``tmhw
workload show`` and ``System`` all go through the one registry, so a new source is one
module and one line."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

import tmhw
from tmhw.sim.errors import ConfigError
from tmhw.system import System
from tmhw.workload import sources
from tmhw.workload.builder import WorkloadBuilder
from tmhw.workload.graph import Workload

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = ROOT / "tmhw" / "validate" / "data" / "scalesim" / "params_gemm.csv"


def test_tmhw_run_takes_a_scalesim_topology(tmhw: Callable[..., object],
                                            tmp_path: Path) -> None:
    """A topology is a training iteration: its GEMM layers forward, the backward and the
    optimizer step derived as for the zoo; batch multiplies each layer's rows."""
    r = tmhw("run", "--preset", "quick", "--model", str(TOPOLOGY), "--batch", "2",
             "--hbm-ratio", "0.5", "--iterations", "2", "--out", str(tmp_path))
    assert r.rc == 0, r.err  # type: ignore[attr-defined]
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["config"]["workload"]["model"] == str(TOPOLOGY)
    w = sources.build(str(TOPOLOGY), batch=2)
    assert w.name == "params_gemm" and any(op.phase.name == "OPTIMIZER" for op in w.ops)
    assert rep["traffic_bytes"]["inter_tier"] > 0


@pytest.mark.parametrize("model,field", [
    ("no-such-model", "model"), ("/no/such/topology.csv", "model")])
def test_a_value_no_source_takes_is_one_line(model: str, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        tmhw.load_config("quick", [f'workload.model="{model}"'])
    assert e.value.path.endswith(field) and "\n" not in str(e.value)


def test_a_topology_has_no_sequence_or_depth_to_set() -> None:
    with pytest.raises(ConfigError, match="layers are fixed"):
        tmhw.load_config("quick", [f'workload.model="{TOPOLOGY}"', "workload.seq=64"])


def _toy_module() -> types.ModuleType:
    """A source of two-layer MLPs named ``mlp-<width>``, as one module would define it."""
    mod = types.ModuleType("toy_mlp_source")

    def check(model: str, batch: int | None, seq: int | None, layers: int | None) -> None:
        if seq is not None:
            raise ConfigError("seq", seq, "leave it out: an MLP has no sequence")

    def build_training(model: str, *, batch: int | None, seq: int | None,
                       layers: int | None, page_size: int, optimizer: str) -> Workload:
        width, n = int(model.split("-")[1]), batch or 4
        b = WorkloadBuilder(model, n, optimizer=optimizer)
        x = b.input("x", n * width)
        for i in range(layers or 2):
            x = b.linear(f"fc{i}", x, n, width, width)
        return b.finish(x, page_size)

    mod.NAMES = ("mlp-256", "mlp-1024")  # type: ignore[attr-defined]
    mod.check = check  # type: ignore[attr-defined]
    mod.build_training = build_training  # type: ignore[attr-defined]
    return mod


def test_a_new_source_is_one_module_and_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "toy_mlp_source", _toy_module())
    monkeypatch.setattr(sources, "SOURCES", (*sources.SOURCES, sources.Source(
        "mlp", "toy_mlp_source", "a two-layer MLP (mlp-256, mlp-1024)", names="NAMES")))
    cfg = tmhw.load_config("quick", ['workload.model="mlp-1024"', "workload.batch=8",
                                     "policy.hbm_ratio=0.5", "run.iterations=2"])
    rep = System(cfg).run()
    assert rep["workload"]["model"] == "mlp-1024"
    assert rep["sim_time_ps"] > 0
    with pytest.raises(ConfigError, match="no sequence"):
        tmhw.load_config("quick", ['workload.model="mlp-256"', "workload.seq=16"])


def test_a_topologys_run_folder_is_one_level_under_out() -> None:
    """The default run folder names a topology by its file's stem, not its path (which
    made a nested folder per path component)."""
    from tmhw.cli import run_folder

    cfg = tmhw.load_config("quick", [f'workload.model="{TOPOLOGY}"'])
    folder = run_folder(cfg)
    assert folder.parent == Path("out") and folder.name.startswith("run-params_gemm-")
