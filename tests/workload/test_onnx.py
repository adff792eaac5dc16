"""ONNX forward graphs as a workload source (``tmhw.workload.onnxgraph``): a graph made
here with ``onnx.helper`` gives the same ops, FLOPs and footprint as the same network
written with the builder the zoo uses, and bad files are one clear error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tmhw
from tmhw.sim.errors import ConfigError
from tmhw.workload import sources
from tmhw.workload.builder import Transforms, WorkloadBuilder
from tmhw.workload.graph import Workload

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

B, S, D, F = 2, 16, 32, 64


def _init(name: str, *shape: int) -> object:
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def _save(tmp: Path, name: str, nodes: list, inputs: list, outputs: list,
          inits: list) -> str:
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp / f"{name}.onnx"
    onnx.save(model, str(path))
    return str(path)


def block_onnx(tmp: Path) -> str:
    """A transformer-like block: layer norm, Q/K/V projections, K transposed, scores,
    softmax, context, output projection, residual add, a ReLU MLP, residual add."""
    mm = lambda a, w, o: helper.make_node("MatMul", [a, w], [o], name=o)  # noqa: E731
    nodes = [
        helper.make_node("LayerNormalization", ["x", "ln1.g", "ln1.b"], ["ln1"],
                         name="ln1", axis=-1),
        mm("ln1", "wq", "q"), mm("ln1", "wk", "k"), mm("ln1", "wv", "v"),
        helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1]),
        mm("q", "kt", "scores"),
        helper.make_node("Softmax", ["scores"], ["softmax"], name="softmax", axis=-1),
        mm("softmax", "v", "ctx"), mm("ctx", "wo", "proj"),
        helper.make_node("Add", ["x", "proj"], ["res1"], name="res1"),
        mm("res1", "w1", "ff1"),
        helper.make_node("Relu", ["ff1"], ["relu"], name="relu"),
        mm("relu", "w2", "ff2"),
        helper.make_node("Add", ["res1", "ff2"], ["res2"], name="res2"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", D])
    y = helper.make_tensor_value_info("res2", TensorProto.FLOAT, ["batch", "seq", D])
    inits = [_init("ln1.g", D), _init("ln1.b", D), _init("wq", D, D), _init("wk", D, D),
             _init("wv", D, D), _init("wo", D, D), _init("w1", D, F), _init("w2", F, D)]
    return _save(tmp, "block", nodes, [x], [y], inits)


def block_builder() -> Workload:
    """The same block written with the builder, as a zoo model is."""
    b = WorkloadBuilder("block", B, seq=S)
    t = B * S
    x = b.input("x", t * D)
    h = b.eltwise("ln1", (x,), t * D, 8.0, params=2 * D, out_elems=t * D, saves="input")
    q, k, v = (b.linear(n, h, t, D, D, bias=False) for n in ("q", "k", "v"))
    kt = b.eltwise("kt", (k,), t * D, 1.0, out_elems=t * D, saves="none")
    scores = b.matmul("scores", q, kt, S, S, D, count=B)
    probs = b.eltwise("softmax", (scores,), B * S * S, 5.0, out_elems=B * S * S,
                      saves="output")
    ctx = b.matmul("ctx", probs, v, S, D, S, count=B)
    o = b.linear("proj", ctx, t, D, D, bias=False)
    r = b.eltwise("res1", (x, o), t * D, 1.0, out_elems=t * D, saves="none")
    f1 = b.linear("ff1", r, t, D, F, bias=False)
    g = b.eltwise("relu", (f1,), t * F, 1.0, out_elems=t * F, saves="output")
    f2 = b.linear("ff2", g, t, F, D, bias=False)
    y = b.eltwise("res2", (r, f2), t * D, 1.0, out_elems=t * D, saves="none")
    return b.finish(y)


def conv_onnx(tmp: Path) -> str:
    """A small CNN: conv 3x3 (pad 1), batch norm, ReLU, 2x2 max pool, global average
    pool, flatten, a fully connected layer with bias (Gemm)."""
    nodes = [
        helper.make_node("Conv", ["img", "conv1.w"], ["conv1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv1", "bn.g", "bn.b", "bn.m", "bn.v"],
                         ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["pool"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flat"),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["fc"], name="fc", transB=1),
    ]
    x = helper.make_tensor_value_info("img", TensorProto.FLOAT, ["batch", 3, 32, 32])
    y = helper.make_tensor_value_info("fc", TensorProto.FLOAT, ["batch", 10])
    inits = [_init("conv1.w", 16, 3, 3, 3), _init("bn.g", 16), _init("bn.b", 16),
             _init("bn.m", 16), _init("bn.v", 16), _init("fc.w", 10, 16), _init("fc.b", 10)]
    return _save(tmp, "cnn", nodes, [x], [y], inits)


def conv_builder() -> Workload:
    b = WorkloadBuilder("cnn", B)
    x = b.input("img", B * 3 * 32 * 32)
    y, _, _ = b.conv("conv1", x, 32, 32, 3, 3, 3, 16, 1, 1)
    e = B * 32 * 32 * 16
    y = b.eltwise("bn", (y,), e, 5.0, params=32, out_elems=e, saves="input")
    y = b.eltwise("relu", (y,), e, 1.0, out_elems=e, saves="output")
    y = b.eltwise("pool", (y,), e, 1.0, out_elems=e // 4, saves="input")
    y = b.eltwise("gap", (y,), e // 4, 1.0, out_elems=B * 16, saves="none")
    y = b.linear("fc", y, B, 16, 10, bias=True)
    return b.finish(y)


def summary(wl: Workload) -> tuple:
    ops = [(o.name, o.phase, o.gemms, o.vector_elems, o.vector_ops_per_elem,
            len(o.reads), len(o.writes)) for o in wl.ops]
    tensors = [(t.name, t.kind, t.nbytes) for t in wl.tensors]
    return ops, tensors, wl.params, wl.npages, wl.total_macs(), wl.footprint_bytes()


@pytest.mark.parametrize("make, mirror", [(block_onnx, block_builder),
                                          (conv_onnx, conv_builder)])
def test_an_onnx_graph_is_the_network_written_with_the_builder(
        tmp_path: Path, make, mirror) -> None:
    path = make(tmp_path)
    seq = S if make is block_onnx else None
    got = sources.build(path, batch=B, seq=seq)
    assert summary(got) == summary(mirror())


def test_the_block_counts_its_parameters_and_flops(tmp_path: Path) -> None:
    """Parameters are the initializers' elements; forward MACs of each GEMM m n k."""
    wl = sources.build(block_onnx(tmp_path), batch=B, seq=S)
    assert wl.params == 2 * D + 4 * D * D + 2 * D * F
    fwd = 4 * B * S * D * D + 2 * B * S * S * D + 2 * B * S * D * F
    assert sum(g.m * g.n * g.k * g.count for o in wl.ops if o.name.endswith(".fwd")
               for g in o.gemms) == fwd


def test_an_onnx_model_runs_as_a_system(tmp_path: Path) -> None:
    path = block_onnx(tmp_path)
    rep = tmhw.simulate("quick", [f"workload.model={path}", "workload.batch=2",
                                  "workload.seq=16", "policy.hbm_ratio=0.5",
                                  "policy.name=tm-training"]).to_dict()
    assert rep["workload"]["params"] == 2 * D + 4 * D * D + 2 * D * F
    assert rep["steady"]["iteration_time_ps"] > 0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tmhw", *args], capture_output=True,
                          text=True, timeout=120)


def test_unmapped_op_is_refused_unless_run_as_memory(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="r"),
             helper.make_node("Hardmax", ["r"], ["h"], name="hm")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("h", TensorProto.FLOAT, ["batch", 8])
    path = _save(tmp_path, "odd", nodes, [x], [y], [])
    with pytest.raises(ConfigError, match="node 'hm' is a Hardmax"):
        sources.build(path, batch=4)
    wl = sources.build(path, batch=4, transforms=Transforms(onnx_unknown="memory"))
    assert any(o.name == "hm.fwd" and o.vector_elems == 32 for o in wl.ops)
    out = _cli("workload", "show", path)
    assert out.returncode == 2 and "Hardmax" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert _cli("workload", "show", path, "--onnx-unknown", "memory").returncode == 0


@pytest.mark.parametrize("content, says", [(b"", "empty"),
                                           (b"\x08\x07 not protobuf at all \xff\xfe",
                                            "a valid ONNX model")])
def test_an_empty_or_corrupt_file_is_one_line(tmp_path: Path, content: bytes,
                                              says: str) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(content)
    with pytest.raises(ConfigError, match=says):
        sources.build(str(bad))
    out_dir = tmp_path / "out"
    out = _cli("run", "--preset", "quick", "--model", str(bad), "--out", str(out_dir))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr and not out_dir.exists()


def test_a_missing_file_and_a_missing_sequence_name_their_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="^workload.model.*no such file"):
        tmhw.load_config("quick", [f"workload.model={tmp_path / 'none.onnx'}"])
    path = block_onnx(tmp_path)
    with pytest.raises(ConfigError, match="^workload.seq.*'seq'"):
        tmhw.load_config("quick", [f"workload.model={path}"])
    with pytest.raises(ConfigError, match="^workload.onnx_unknown"):
        tmhw.load_config("quick", [f"workload.model={path}", "workload.seq=16",
                                   'workload.onnx_unknown="maybe"'])
