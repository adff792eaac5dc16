"""Workload sources (``tmhw.workload.sources``): a ``workload.model`` value is a zoo
model's name or a file a source reads; config validation, ``tmhw run``, ``tmhw workload
show``, ``tmhw.load_config`` and ``System`` all go through the one registry, so a new
source is one module and one row."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from npu.topology import read_rows
from tmhw import load_config
from tmhw.cli import build_parser, config_from_args, run_folder
from tmhw.sim.errors import ConfigError
from tmhw.system import System
from tmhw.workload import sources
from tmhw.workload.builder import WorkloadBuilder
from tmhw.workload.graph import Phase, Workload

ROOT = Path(__file__).resolve().parents[2]
#: a topology the package ships: gemm256 (M 256, N 128, K 256), gemm64 (64, 64, 64)
TOPOLOGY = ROOT / "tmhw" / "validate" / "data" / "scalesim" / "params_gemm.csv"


def test_tmhw_run_trains_a_scalesim_topology(tmhw: Callable[..., object],
                                             tmp_path: Path) -> None:
    """``tmhw run --model topo.csv``: the topology's GEMM layers are the forward pass at
    ``--batch`` samples (M rows per sample), and the backward and optimizer step derive
    as for the zoo: per layer one weight-gradient GEMM of the forward's MACs, and an
    input gradient for every layer but the first (the input needs none)."""
    rows = read_rows(TOPOLOGY)
    assert [(t.ifmap_h, t.num_filters, t.filt_w) for t in rows] == [(256, 128, 256),
                                                                     (64, 64, 64)]
    batch = 2
    r = tmhw("run", "--preset", "quick", "--model", str(TOPOLOGY), "--batch", str(batch),
             "--hbm-ratio", "0.5", "--iterations", "1", "--quiet", "--out", str(tmp_path))
    assert r.rc == 0, r.err  # type: ignore[attr-defined]
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["config"]["workload"]["model"] == str(TOPOLOGY)
    w = rep["workload"]
    assert (w["model"], w["batch"]) == ("params_gemm", batch)
    assert w["params"] == 256 * 128 + 64 * 64      # K x N per layer, no bias
    fwd = batch * (256 * 128 * 256 + 64 * 64 * 64)
    assert w["macs"] == fwd + fwd + batch * 64 * 64 * 64
    # forward: 2 layers, the adapter from gemm256's 256 x 128 output to gemm64's 64 x 64
    # input, the loss; backward: gemm64's input and weight gradients, the adapter's,
    # gemm256's weight gradient; one optimizer update per weight
    assert w["ops"] == 4 + 4 + 2
    assert rep["measurement"]["measured_iterations"] == 1
    assert rep["steady"]["iteration_time_ps"] > 0
    assert rep["steady"]["traffic_bytes"]["inter_tier"] > 0


def test_a_topologys_run_folder_is_one_component_named_after_the_file() -> None:
    p = build_parser()
    cfg = config_from_args(p.parse_args(["run", "--preset", "quick", "--model",
                                         str(TOPOLOGY)]))
    folder = run_folder(cfg)
    assert folder.parent == Path("out") and folder.name.startswith("run-params_gemm-")
    assert sources.label("bert-base") == "bert-base"


def test_the_topology_is_built_by_the_shared_builder() -> None:
    """Every weight of the topology is trained: a weight gradient and an optimizer op."""
    w = sources.build(str(TOPOLOGY), batch=3, optimizer="sgd")
    by_phase = {ph: [op.name for op in w.ops if op.phase == ph] for ph in Phase}
    assert w.name == "params_gemm" and w.batch == 3 and w.params == 36864
    assert {n.split(".")[0] for n in by_phase[Phase.OPTIMIZER]} == {"gemm256", "gemm64"}
    assert [op.gemms[0].m for op in w.ops if op.phase == Phase.FORWARD and op.gemms] == [
        3 * 256, 3 * 64]


@pytest.mark.parametrize("model,allowed", [
    ("no-such-model", "a zoo model's name"),
    ("/no/such/topology.csv", "no such file"),
    (str(ROOT / "tests"), "a path to a SCALE-Sim topology"),
    ("", "a zoo model's name"),
])
def test_a_value_no_source_takes_is_one_line_naming_the_field(model: str,
                                                             allowed: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_config("quick", {"workload.model": model})
    msg = str(e.value)
    assert e.value.path == "workload.model" and repr(model) in msg and allowed in msg
    assert "bert-large" in msg and "*.csv" in msg and "\n" not in msg


def test_a_directory_named_like_a_topology_is_no_file(tmp_path: Path) -> None:
    (tmp_path / "net.csv").mkdir()
    with pytest.raises(ConfigError, match="no such file"):
        load_config("quick", {"workload.model": str(tmp_path / "net.csv")})


def test_a_missing_topology_stops_tmhw_run_before_anything_is_written(
        tmhw: Callable[..., object], tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = tmhw("run", "--preset", "quick", "--model", str(tmp_path / "gone.csv"),
             "--out", str(out))
    assert r.rc == 2 and not out.exists()  # type: ignore[attr-defined]
    assert r.err.count("\n") == 1 and "workload.model" in r.err  # type: ignore[attr-defined]


@pytest.mark.parametrize("flag", ["--seq", "--layers"])
def test_a_topology_has_no_sequence_or_depth_to_set(flag: str, tmhw: Callable[..., object],
                                                    tmp_path: Path) -> None:
    r = tmhw("run", "--preset", "quick", "--model", str(TOPOLOGY), flag, "64",
             "--out", str(tmp_path / "out"))
    assert r.rc == 2  # type: ignore[attr-defined]
    assert r.err.startswith(f"tmhw: error: {flag}: 64 is not allowed; leave it out: "  # type: ignore[attr-defined]
                            "params_gemm.csv is a SCALE-Sim topology")
    with pytest.raises(ConfigError, match="layers are fixed"):
        load_config("quick", {"workload.model": str(TOPOLOGY),
                                   f"workload.{flag[2:]}": 64})


# -- a toy source, as a new source's module would define it ----------------------------
#: the names the toy source knows: a stack of square linear layers of that width
MLP_NAMES = ("mlp-256", "mlp-1024")


def check_mlp(model: str, batch: int | None, seq: int | None, layers: int | None) -> None:
    if seq is not None:
        raise ConfigError("seq", seq, f"leave it out: {model} has no sequence")


def build_mlp(model: str, *, batch: int | None, seq: int | None, layers: int | None,
              page_size: int, optimizer: str) -> Workload:
    width, n = int(model.split("-")[1]), batch or 4
    b = WorkloadBuilder(model, n, optimizer=optimizer)
    x = b.input("x", n * width)
    for i in range(layers or 2):
        x = b.linear(f"fc{i}", x, n, width, width)
    return b.finish(x, page_size)


#: its one row in the registry
TOY = sources.Source("mlp", "a stack of linear layers (mlp-256, mlp-1024)",
                     f"{__name__}:build_mlp", f"{__name__}:check_mlp",
                     names=f"{__name__}:MLP_NAMES")


def test_a_new_source_is_one_module_and_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered by one row, the toy source is taken by ``load_config`` (its limits
    named by field) and runs in ``System``; the report is the toy network's: per layer
    width^2 weights and a bias, and the forward, weight-gradient and (past the first
    layer) input-gradient MACs of batch x width^2 each."""
    monkeypatch.setattr(sources, "SOURCES", (*sources.SOURCES, TOY))
    cfg = load_config("quick", {"workload.model": "mlp-1024", "workload.batch": 8,
                                     "workload.layers": 3, "policy.hbm_ratio": 0.5,
                                     "run.iterations": 1})
    rep = System(cfg).run()
    w, width = rep["workload"], 1024
    assert (w["model"], w["batch"]) == ("mlp-1024", 8)
    assert w["params"] == 3 * (width * width + width)
    assert w["macs"] == 8 * width * width * (3 + 3 + 2)
    assert rep["steady"]["iteration_time_ps"] > 0
    with pytest.raises(ConfigError, match="workload.seq = 16: leave it out: mlp-256"):
        load_config("quick", {"workload.model": "mlp-256", "workload.seq": 16})
    with pytest.raises(ConfigError, match="a stack of linear layers"):
        load_config("quick", {"workload.model": "mlp-512"})


def test_sources_are_tried_in_order_by_name_prefix_and_suffix(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A source recognises values by the names it lists, a prefix, or a file suffix (any
    case); a path must exist, for every file source alike."""
    pre = sources.Source("pre", "toy:<width>", f"{__name__}:build_mlp", prefixes=("toy:",))
    suf = sources.Source("suf", "a *.mlp file", f"{__name__}:build_mlp", suffixes=(".mlp",))
    monkeypatch.setattr(sources, "SOURCES", (*sources.SOURCES, TOY, pre, suf))
    assert [sources.find(m).name for m in ("resnet18", "mlp-256", "toy:mlp-64", "A.MLP",
                                           "x.csv")] == ["zoo", "mlp", "pre", "suf",
                                                         "scalesim"]
    with pytest.raises(ConfigError, match="'A.MLP': no such file"):
        sources.check("A.MLP")
    (tmp_path / "mlp-32.mlp").write_text("")
    sources.check(str(tmp_path / "mlp-32.mlp"))
    assert sources.label(str(tmp_path / "mlp-32.mlp")) == "mlp-32"
    assert sources.label("toy:a/b") == "toy:a_b"
