"""ONNX forward graphs as training workloads (``--model path/to/model.onnx``).

The file is read with the ``onnx`` package (``pip install 'tmhw[onnx]'``); its shapes
come from ONNX's own shape inference (``onnx.shape_inference.infer_shapes``, strict)
after the graph's symbolic input dimensions are fixed: the first symbolic dimension met
in the graph inputs is the batch (``--batch``, else 1), the second the sequence
(``--seq``, which must then be given). Initializers are weights. The graph is the
forward pass; the backward (input and weight gradients) and the optimizer step derive
from it as for the zoo (``WorkloadBuilder.finish``), the loss reading the graph's
outputs. How each node maps:

- ``Conv`` (2-D, NCHW, an initializer weight, optional bias): a convolution, lowered to
  GEMM as SCALE-Sim does (``WorkloadBuilder.conv``);
- ``Gemm`` and ``MatMul`` with an initializer as the second operand: a linear layer
  over all rows of the first (``Gemm``'s ``C`` is its bias); ``MatMul`` of two
  activations: a batched product (attention scores and context), the leading
  dimensions its count;
- ``Gather`` from an initializer table by computed or input indices: an embedding;
- element-wise and memory-bound ops run on the vector unit with the zoo's costs per
  element (``ELTWISE``: what each op's backward keeps follows the zoo, after
  Korthikanti et al.: softmax, ReLU, sigmoid and tanh their output, GELU and the norms
  their input, adds nothing); an ``Add``, ``Mul``, ``Sub`` or ``Div`` with an
  initializer operand is a bias or scale whose elements are parameters, as are a
  norm's scale and bias;
- ``Dropout``: inverted dropout with its one-byte mask;
- pooling and reductions: vector work over their input, output the smaller tensor;
- ``Reshape``, ``Flatten``, ``Squeeze``, ``Unsqueeze`` and ``Identity`` are views (the
  output is the input's pages); ``Transpose``, ``Concat``, ``Split``, ``Slice`` and
  their kind are copies (vector work over the output, nothing kept);
- a node whose inputs are all constants (``Shape``, ``Constant``, shape arithmetic) is
  folded: its outputs are constants, not tensors.

Any other op is one clear error naming its type and node, unless
``workload.onnx_unknown = "memory"`` (``--onnx-unknown memory``): then it is an
element-wise op over the larger of its inputs and output that keeps its input.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tmhw.sim.errors import ConfigError
from tmhw.workload.builder import WorkloadBuilder, check_arguments, current_transforms
from tmhw.workload.graph import Workload

#: element-wise ops: (vector ops per element, what the backward keeps), with the zoo's
#: figures (``tmhw.workload.zoo``: layer norm 8, softmax 5, GELU 8, tanh 4, batch norm 5,
#: ReLU and adds 1); the rest 1 op per element, an estimate
ELTWISE: dict[str, tuple[float, str]] = {
    "Relu": (1.0, "output"), "LeakyRelu": (1.0, "output"), "Sigmoid": (4.0, "output"),
    "Tanh": (4.0, "output"), "Softmax": (5.0, "output"), "LogSoftmax": (5.0, "output"),
    "Gelu": (8.0, "input"), "Erf": (4.0, "input"), "Exp": (1.0, "output"),
    "Log": (1.0, "input"), "Sqrt": (1.0, "output"), "Pow": (1.0, "input"),
    "Reciprocal": (1.0, "output"), "Neg": (1.0, "none"), "Abs": (1.0, "input"),
    "Elu": (1.0, "input"), "Selu": (1.0, "input"), "Softplus": (2.0, "input"),
    "HardSigmoid": (1.0, "input"), "HardSwish": (2.0, "input"), "Clip": (1.0, "input"),
    "Cast": (1.0, "none"), "Add": (1.0, "none"), "Sub": (1.0, "none"),
    "Mul": (1.0, "input"), "Div": (1.0, "input"), "Where": (1.0, "input"),
    "LayerNormalization": (8.0, "input"), "BatchNormalization": (5.0, "input"),
    "InstanceNormalization": (8.0, "input"), "GroupNormalization": (8.0, "input"),
    "SimplifiedLayerNormalization": (6.0, "input"),
}
#: norms whose scale and bias (their second and third inputs) are parameters
NORMS = ("LayerNormalization", "BatchNormalization", "InstanceNormalization",
         "GroupNormalization", "SimplifiedLayerNormalization")
#: reductions and pooling: vector work over the input, the output smaller
REDUCE: dict[str, str] = {
    "MaxPool": "input", "AveragePool": "none", "GlobalAveragePool": "none",
    "GlobalMaxPool": "input", "ReduceMean": "none", "ReduceSum": "none",
    "ReduceMax": "input", "ReduceMin": "input", "ReduceL2": "input",
}
#: views: the output is the input's pages
VIEWS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
#: copies: vector work over the output, nothing kept for the backward
COPIES = ("Transpose", "Concat", "Split", "Slice", "Pad", "Expand", "Tile", "Gather",
          "Resize", "Upsample", "DepthToSpace", "SpaceToDepth")
#: what ``workload.onnx_unknown`` may be
UNKNOWN = ("error", "memory")
#: bytes of an ONNX element type (TensorProto enum); float types take the precision's
_INT_BYTES = {6: 4, 7: 8, 9: 1, 2: 1, 3: 1, 4: 2, 5: 2, 12: 4, 13: 8}


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ConfigError("model", "an .onnx file",
                          "reading ONNX needs the onnx package: pip install "
                          "'tmhw[onnx]'") from None
    return onnx


def _load(path: str) -> Any:
    """The model at ``path``; one ``ConfigError`` for an empty or unreadable file."""
    onnx = _onnx()
    p = Path(path)
    if p.stat().st_size == 0:
        raise ConfigError("model", path, "an ONNX model file (this one is empty)")
    try:
        model = onnx.load(str(p))
        onnx.checker.check_model(model)
    except Exception as e:  # protobuf decode errors, checker errors: any is "corrupt"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError("model", path, f"a valid ONNX model ({first[:160]})") from None
    if not model.graph.node:
        raise ConfigError("model", path, "an ONNX graph with at least one node")
    return model


def _symbols(model: Any) -> list[str]:
    """The symbolic dimensions of the graph's inputs, in order of first appearance."""
    inits = {i.name for i in model.graph.initializer}
    out: list[str] = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param not in out:
                out.append(d.dim_param)
            elif not d.HasField("dim_value") and not d.HasField("dim_param"):
                out.append(f"?{vi.name}")
    return out


def _no_layers(path: str, layers: int | None) -> None:
    if layers is not None:
        raise ConfigError("layers", layers, f"leave it out: {Path(path).name} is an ONNX "
                          "graph, whose layers are fixed")


def check(path: str, batch: int | None, seq: int | None, layers: int | None) -> None:
    """Readable ONNX, no depth to set, ``--seq`` given where the graph has a second
    symbolic dimension; a fixed batch or sequence cannot be changed."""
    _no_layers(path, layers)
    _check_shape(path, _symbols(_load(path)), batch, seq)


def _check_shape(path: str, syms: list[str], batch: int | None, seq: int | None) -> None:
    """``check``'s rules on the graph's symbolic input dimensions ``syms``."""
    if len(syms) > 2:
        raise ConfigError("model", path, "an ONNX graph with at most two symbolic input "
                          f"dimensions (batch, sequence); it has {', '.join(syms)}")
    if batch is not None and not syms:
        raise ConfigError("batch", batch, f"leave it out: {Path(path).name} has a fixed "
                          "batch (no symbolic input dimension)")
    if seq is not None and len(syms) < 2:
        raise ConfigError("seq", seq, f"leave it out: {Path(path).name} has no symbolic "
                          "sequence dimension")
    if seq is None and len(syms) == 2:
        raise ConfigError("seq", seq, f"the sequence length of {Path(path).name}'s "
                          f"symbolic dimension {syms[1]!r}: give it (--seq)")


def _fixed(model: Any, values: dict[str, int]) -> Any:
    """A copy with the graph inputs' symbolic dimensions set, and every shape inferred."""
    onnx = _onnx()
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {i.name for i in m.graph.initializer}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        for d in vi.type.tensor_type.shape.dim:
            key = d.dim_param if d.HasField("dim_param") else f"?{vi.name}"
            if not d.HasField("dim_value"):
                d.Clear()
                d.dim_value = values[key]
    try:
        return onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    except Exception as e:
        raise ConfigError("model", "an .onnx file", "a graph ONNX's shape inference "
                          f"completes ({str(e).strip().splitlines()[0][:160]})") from None


def from_onnx(path: str | Path, batch: int | None = None, seq: int | None = None, *,
              page_size: int = 4096, optimizer: str = "adam") -> Workload:
    """A training iteration of the ONNX forward graph at ``path`` (module docstring)."""
    path = str(path)
    model = _load(path)
    syms = _symbols(model)
    _check_shape(path, syms, batch, seq)
    values = dict(zip(syms, (batch or 1, seq or 0), strict=False))
    bsz = batch or 1
    check_arguments(bsz, page_size, optimizer)
    onnx = _onnx()
    from onnx import numpy_helper

    g = _fixed(model, values).graph
    shapes: dict[str, tuple[int, ...]] = {}
    etype: dict[str, int] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        if tt.HasField("shape"):
            shapes[vi.name] = tuple(int(d.dim_value) for d in tt.shape.dim)
        etype[vi.name] = tt.elem_type
    consts: dict[str, tuple[int, ...]] = {
        i.name: tuple(numpy_helper.to_array(i).shape) for i in g.initializer}
    unknown = current_transforms().onnx_unknown
    name = Path(path).stem
    b = WorkloadBuilder(name, bsz, seq=seq or 0, optimizer=optimizer)
    act: dict[str, int] = {}                 # ONNX value -> builder tensor
    for vi in g.input:
        if vi.name in consts:
            continue
        db = _INT_BYTES.get(vi.type.tensor_type.elem_type)
        act[vi.name] = b.input(vi.name, math.prod(shapes[vi.name]), db)
    used: dict[str, int] = {}

    def shape(v: str, node: Any) -> tuple[int, ...]:
        if v in consts:
            return consts[v]
        s = shapes.get(v)
        if s is None or any(d <= 0 for d in s):
            raise ConfigError("model", path, f"shapes ONNX can infer: node {node.name!r} "
                              f"({node.op_type}) has {v!r} of unknown shape")
        return s

    for i, node in enumerate(g.node):
        op = node.op_type
        ins = [v for v in node.input if v]
        outs = [v for v in node.output if v]
        if all(v in consts for v in ins):
            for v in outs:                   # constant folding: shapes, constants
                consts[v] = shapes.get(v, ())
            continue
        for v in ins:
            if v not in consts and v not in act:
                raise ConfigError("model", path, f"a graph whose node {node.name!r} "
                                  f"({op}) reads only values made before it: {v!r} is not")
        base = node.name or f"{op.lower()}{i}"
        base = "".join(c if c.isalnum() or c in "._-" else "_" for c in base)
        used[base] = used.get(base, 0) + 1
        layer = base if used[base] == 1 else f"{base}#{used[base]}"
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        xs = tuple(act[v] for v in ins if v in act)
        w_in = [v for v in ins if v in consts]
        out_shape = shape(outs[0], node)
        out_elems = math.prod(out_shape)
        if op == "Conv" and len(out_shape) == 4 and ins[1] in consts:
            xb, c, h, w_ = shape(ins[0], node)
            n, _, r, s = consts[ins[1]]
            strides = attrs.get("strides", [1, 1])
            pads = attrs.get("pads", [0, 0, 0, 0])
            y, _, _ = b.conv(layer, act[ins[0]], h, w_, c, r, s, n, int(strides[0]),
                             int(pads[0]), bias=len(ins) > 2,
                             groups=int(attrs.get("group", 1)),
                             ofmap=(out_shape[2], out_shape[3]))
        elif op in ("Gemm", "MatMul") and len(ins) >= 2 and ins[1] in consts \
                and ins[0] in act and len(consts[ins[1]]) == 2 and not attrs.get("transA"):
            k, n = consts[ins[1]][::-1] if attrs.get("transB") else consts[ins[1]]
            rows = math.prod(shape(ins[0], node)) // k
            y = b.linear(layer, act[ins[0]], rows, k, n, bias=len(ins) > 2)
        elif op == "MatMul" and len(xs) == 2 and not w_in:
            sa, sb = shape(ins[0], node), shape(ins[1], node)
            m, k, n = sa[-2], sa[-1], sb[-1]
            y = b.matmul(layer, xs[0], xs[1], m, n, k, count=math.prod(out_shape[:-2]))
        elif op == "Gather" and ins[0] in consts and ins[1] in act:
            rows, d = consts[ins[0]][0], math.prod(consts[ins[0]][1:])
            y, _ = b.embedding(layer, (act[ins[1]],), out_elems // d, d, {"table": rows})
        elif op == "Dropout":
            y = b.dropout(layer, xs[0], out_elems)
        elif op in VIEWS:
            act[outs[0]] = xs[0]
            continue
        elif op in ELTWISE:
            ops_pe, saves = ELTWISE[op]
            params = 0
            if op in NORMS:
                params = sum(math.prod(consts[v]) for v in ins[1:3] if v in consts)
            elif w_in:
                params = sum(math.prod(consts[v]) for v in w_in if math.prod(consts[v]) > 1)
            elems = max([out_elems] + [math.prod(shape(v, node)) for v in ins if v in act])
            y = b.eltwise(layer, xs, elems, ops_pe, params=params, out_elems=out_elems,
                          saves=saves)
        elif op in REDUCE:
            elems = max(math.prod(shape(v, node)) for v in ins if v in act)
            y = b.eltwise(layer, xs, elems, 1.0, out_elems=out_elems, saves=REDUCE[op])
        elif op in COPIES:
            for j, v in enumerate(outs):
                e = math.prod(shape(v, node))
                act[v] = b.eltwise(layer if j == 0 else f"{layer}:{j}", xs, e, 1.0,
                                   out_elems=e, saves="none")
            continue
        elif unknown == "memory":
            elems = max([out_elems] + [math.prod(shape(v, node)) for v in ins if v in act])
            y = b.eltwise(layer, xs, elems, 1.0, out_elems=out_elems, saves="input")
        else:
            raise ConfigError("model", path, f"ops the NPU model maps: node {node.name!r} "
                              f"is a {op} (--onnx-unknown memory, workload.onnx_unknown = "
                              "\"memory\", runs it as an element-wise op)")
        act[outs[0]] = y
    losses = tuple(dict.fromkeys(act[o.name] for o in g.output if o.name in act))
    if not losses:
        raise ConfigError("model", path, "a graph whose outputs a node computes")
    return b.finish(losses if len(losses) > 1 else losses[0], page_size)


def build(path: str, *, batch: int | None, seq: int | None, layers: int | None,
          page_size: int, optimizer: str) -> Workload:
    """``from_onnx`` under the sources' signature (``tmhw.workload.sources``, which has
    made ``check``: no ``layers``)."""
    _no_layers(path, layers)
    return from_onnx(path, batch, seq, page_size=page_size, optimizer=optimizer)
