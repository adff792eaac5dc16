"""Build a training iteration from a forward description.

A model is written as its forward pass (``linear``, ``conv``, ``matmul``, ``eltwise``);
``finish()`` derives the backward pass in reverse order, with an input-gradient and a
weight-gradient GEMM per weighted layer and the element-wise backward of the rest, then
the optimizer step per parameter tensor. Mixed precision follows Micikevicius et al.,
"Mixed Precision Training" (ICLR 2018) and ZeRO (Rajbhandari et al., SC'20, Sec. 3.1):
bf16 weights and gradients, fp32 master weights and optimizer states, so Adam costs
2 + 2 + 4 + 4 + 4 = 16 bytes per parameter and SGD with momentum 2 + 2 + 4 + 4 = 12.

GEMM shapes: a linear layer y = x W with x of (T x in) and W of (in x out) is forward
M=T, N=out, K=in; input gradient dx = dy W^T is M=T, N=in, K=out; weight gradient
dW = x^T dy is M=in, N=out, K=T. A convolution lowers to GEMM as SCALE-Sim does
(M = output pixels x batch, N = filters, K = R*S*C); its weight gradient is
M = R*S*C, N = filters, K = output pixels x batch. Its input gradient is the transposed
convolution (M = input pixels x batch, N = C, K = R*S*N) when that does exactly the
forward's MACs (stride 1, output as large as the input); otherwise (strided or
unpadded) the transposed convolution would multiply inserted zeros, so it takes the
lowered form that im2col frameworks use, dcols = dy W^T (M = output pixels x batch,
N = R*S*C, K = filters), followed by a col2im scatter-add that is not counted as vector
work. Either way each GEMM of the backward does the forward's MAC count. A grouped
convolution (``groups`` > 1; depthwise when groups = C) is ``groups`` independent GEMMs
of the per-group shape.

Which forward tensors a backward op reads (so which activations stay live until the
backward) follows the usual autograd choices, as counted by Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models" (MLSys 2023, Sec. 4.1):
a GEMM keeps its input, GELU and layer norm keep their input, softmax and ReLU their
output, dropout a one-byte mask, and residual adds, slices and average pooling nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from tmhw.sim.errors import ConfigError
from tmhw.workload.graph import Gemm, Kind, Op, Phase, Tensor, Workload

#: ``workload.optimizer``: vector-unit operations per element of each optimizer's
#: update, estimates from the update equations: SGD w -= lr g (2); with momentum
#: (PyTorch's ``SGD(momentum=...)``) the buffer's multiply-add too (3); Adam (Kingma &
#: Ba 2015, Alg. 1: two moment updates, bias corrections, square root, divide: about
#: 10); AdamW (Loshchilov & Hutter, ICLR 2019) the decoupled decay's multiply-add on
#: top (12); Adafactor (Shazeer & Stern, ICML 2018, Alg. 4: the factored second
#: moment's row and column sums, the reconstruction, update clipping: about 12).
OPTIMIZER_OPS_PER_ELEM = {"sgd": 2.0, "sgd-momentum": 3.0, "adam": 10.0, "adamw": 12.0,
                          "adafactor": 12.0}
#: Bytes of optimizer state per parameter (fp32): none for SGD, the momentum buffer,
#: Adam's and AdamW's m and v. Adafactor (without first moment, its paper's and
#: Hugging Face's default, ``beta1=None``) keeps fp32 row and column sums of the
#: squared gradient for each matrix (rows + columns values, not rows x columns) and the
#: whole second moment of a vector: ``optimizer_state_bytes``.
OPTIMIZER_STATE_BYTES = {"sgd": 0, "sgd-momentum": 4, "adam": 8, "adamw": 8,
                         "adafactor": 4}
OPTIMIZERS = tuple(OPTIMIZER_OPS_PER_ELEM)


def optimizer_state_bytes(optimizer: str, params: int,
                          shape: tuple[int, int] | None) -> int:
    """Optimizer state of one weight tensor of ``params`` parameters; ``shape`` the
    (rows, columns) of its matrix part where it has one (the rest, a bias, is a
    vector)."""
    if optimizer == "adafactor" and shape is not None:
        rows, cols = shape
        return 4 * (rows + cols + params - rows * cols)
    return OPTIMIZER_STATE_BYTES[optimizer] * params
#: Bytes of fp32 master copy + optimizer state updated by one optimizer op (model knob:
#: bounds the working set of the update of a large parameter tensor). Each shard's op
#: still reads the whole bf16 gradient and writes the whole bf16 weight tensor.
OPTIMIZER_SHARD_BYTES = 64 * 2**20


def check_arguments(batch: object, page_size: object, optimizer: object) -> None:
    """The arguments every workload source's builder takes, checked the same way for
    each: ``ConfigError`` naming the field, the value and what is allowed."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError("batch", batch, "a positive integer")
    if (isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1
            or page_size & (page_size - 1)):
        raise ConfigError("page_size", page_size, "a positive power of two")
    if optimizer not in OPTIMIZER_OPS_PER_ELEM:
        raise ConfigError("optimizer", optimizer, f"one of {', '.join(OPTIMIZERS)}")


#: What an element-wise op's backward reads besides the output gradient and its weight.
SAVES = ("input", "output", "none")

#: ``workload.precision``: bytes per weight, gradient and activation element, and
#: whether an fp32 master copy is kept. "bf16" is mixed precision (Micikevicius et al.,
#: ICLR 2018; ZeRO, Sec. 3.1: bf16 weights and gradients, fp32 master and moments,
#: 16 B a parameter with Adam); "fp16" the same bytes; "fp32" keeps weights, gradients
#: and activations in fp32 with no master copy (4 + 4 + 8 = 16 B a parameter with Adam).
#: "fp8" is the FP8 training recipe (Micikevicius et al., "FP8 Formats for Deep
#: Learning", 2022; NVIDIA Transformer Engine): GEMM inputs cast to fp8 as the GEMM
#: reads them (one byte an operand, at the NPU's fp8 rate: ``npu.config``), everything
#: stored as with bf16.
PRECISIONS = {"fp8": (2, True), "bf16": (2, True), "fp16": (2, True), "fp32": (4, False)}
#: ``workload.recompute``: "none"; "layer" (each layer's input kept, the rest of the
#: layer recomputed before its backward: Chen et al. 2016, as Megatron's full
#: recomputation); "selective" (Korthikanti et al., MLSys 2023, Sec. 5: only the
#: attention's scores, softmax and its dropout recomputed); "every-k" (the input of
#: every ``recompute_every``-th layer kept, the k layers between recomputed together);
#: "ops" (the forward ops ``recompute_ops`` names recomputed, each run of consecutive
#: ones within a block together: a per-tensor choice, as the ``capuchin`` policy makes).
RECOMPUTE = ("none", "layer", "selective", "every-k", "ops")
#: the ops selective recomputation re-runs, by the suffix of their name (zoo and hf
#: transformer layers)
SELECTIVE = (".scores", ".softmax", ".attn_drop")


@dataclass(frozen=True, slots=True)
class Transforms:
    """The workload transforms (``[workload]``: ``precision``, ``recompute``,
    ``recompute_every``) every source's builder applies."""

    precision: str = "bf16"
    recompute: str = "none"
    recompute_every: int = 2
    #: gradient accumulation: the forward and backward run this many times on
    #: ``batch / micro_batches`` samples each (the source builds one micro-batch), the
    #: optimizer once
    micro_batches: int = 1
    #: how a graph source maps an op it does not know: "error", or "memory" (an
    #: element-wise op; ``tmhw.workload.onnxgraph``)
    onnx_unknown: str = "error"
    #: with ``recompute`` "ops": the names of the forward ops to recompute
    recompute_ops: tuple[str, ...] = ()


#: the transforms of the build under way (None: the defaults)
_TRANSFORMS: ContextVar[Transforms | None] = ContextVar("transforms", default=None)


def current_transforms() -> Transforms:
    """The transforms a ``WorkloadBuilder`` made now applies (``transforms``)."""
    return _TRANSFORMS.get() or Transforms()


@contextlib.contextmanager
def transforms(t: Transforms) -> Iterator[None]:
    """Every ``WorkloadBuilder`` made inside applies ``t`` (``tmhw.workload.sources``
    builds each source's workload in one)."""
    token = _TRANSFORMS.set(t)
    try:
        yield
    finally:
        _TRANSFORMS.reset(token)


@dataclass(slots=True)
class _Fwd:
    op: int
    kind: str                     # "linear" | "matmul" | "eltwise" | "embedding"
    inputs: tuple[int, ...]
    output: int
    weight: int | None = None
    bwd_gemms: tuple[tuple[Gemm, ...], tuple[Gemm, ...]] = ((), ())
    vector_elems: int = 0
    vector_ops: float = 1.0
    saves_input: bool = True
    saved: tuple[int, ...] = ()    # forward tensors the backward reads (eltwise)
    extra_weights: tuple[int, ...] = ()  # further weights (a tied layer's bias; tables)


@dataclass
class WorkloadBuilder:
    """Records a forward pass and derives backward + optimizer ops.

    ``dtype_bytes`` is the activation/weight precision (2 for bf16).
    """

    name: str
    batch: int
    seq: int = 0
    dtype_bytes: int = 0          # 0: the precision's (``Transforms``)
    optimizer: str = "adam"
    tensors: list[Tensor] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    _fwd: list[_Fwd] = field(default_factory=list)
    _weights: list[int] = field(default_factory=list)
    #: the (rows, columns) of each weight tensor's matrix part, where it has one
    _shapes: dict[int, tuple[int, int]] = field(default_factory=dict)
    params: int = 0
    transforms: Transforms = field(default_factory=current_transforms)

    def __post_init__(self) -> None:
        if not self.dtype_bytes:
            self.dtype_bytes = PRECISIONS[self.transforms.precision][0]
        if self.optimizer not in OPTIMIZER_OPS_PER_ELEM:
            raise ValueError(f"optimizer {self.optimizer!r}: one of "
                             f"{sorted(OPTIMIZER_OPS_PER_ELEM)}")
        if self.batch <= 0:
            raise ValueError(f"batch {self.batch}: must be a positive integer")

    # -- tensors -----------------------------------------------------------------------
    def tensor(self, name: str, kind: Kind, nbytes: int, layer: str = "",
               dtype_bytes: int | None = None) -> int:
        tid = len(self.tensors)
        self.tensors.append(Tensor(tid, name, kind, int(nbytes), layer,
                                   dtype_bytes or self.dtype_bytes))
        return tid

    def input(self, name: str, elems: int, dtype_bytes: int | None = None) -> int:
        """A tensor the host writes each iteration (``dtype_bytes`` 4 for int32 ids)."""
        db = dtype_bytes or self.dtype_bytes
        return self.tensor(name, Kind.INPUT, elems * db, "input", db)

    def _op(self, name: str, phase: Phase, layer: str, gemms: tuple[Gemm, ...] = (),
            vector_elems: int = 0, vector_ops: float = 1.0, reads: tuple[int, ...] = (),
            writes: tuple[int, ...] = ()) -> int:
        idx = len(self.ops)
        self.ops.append(Op(idx, name, phase, layer, gemms, vector_elems, vector_ops,
                           tuple(dict.fromkeys(reads)), tuple(dict.fromkeys(writes))))
        return idx

    def _weight(self, layer: str, params: int,
                matrix: tuple[int, int] | None = None) -> int:
        """A weight tensor of ``params`` parameters, ``matrix`` (rows, columns) of them
        a matrix (the rest a bias): what a factored optimizer state needs."""
        self.params += params
        w = self.tensor(f"{layer}.w", Kind.WEIGHT, params * self.dtype_bytes, layer)
        self._weights.append(w)
        if matrix is not None:
            self._shapes[w] = matrix
        return w

    # -- forward layers ----------------------------------------------------------------
    def linear(self, layer: str, x: int, tokens: int, d_in: int, d_out: int,
               bias: bool = True, tied: int | None = None) -> int:
        """y = x W (+ b) over ``tokens`` rows. Returns the output tensor.

        ``tied`` is an existing weight tensor of d_in * d_out elements that this layer
        shares (an LM head tied to the token embedding, Press & Wolf 2017): no new
        parameters but the bias, which then is a weight tensor of its own, and the
        weight gradient accumulates into the shared one."""
        extra: tuple[int, ...] = ()
        if tied is None:
            w = self._weight(layer, d_in * d_out + (d_out if bias else 0), (d_in, d_out))
        else:
            w = tied
            if self.tensors[w].nbytes != d_in * d_out * self.dtype_bytes:
                raise ValueError(f"{layer}: tied weight {self.tensors[w].name} is not "
                                 f"{d_in} x {d_out}")
            if bias:
                extra = (self._weight(f"{layer}.bias", d_out),)
        y = self.tensor(f"{layer}.out", Kind.ACTIVATION, tokens * d_out * self.dtype_bytes,
                        layer)
        op = self._op(f"{layer}.fwd", Phase.FORWARD, layer, (Gemm(tokens, d_out, d_in),),
                      reads=(x, w) + extra, writes=(y,))
        self._fwd.append(_Fwd(op, "linear", (x,), y, w,
                              ((Gemm(tokens, d_in, d_out),), (Gemm(d_in, d_out, tokens),)),
                              extra_weights=extra))
        return y

    def conv(self, layer: str, x: int, h: int, w_: int, c: int, r: int, s: int, n: int,
             stride: int = 1, pad: int = 0, bias: bool = False,
             groups: int = 1, ofmap: tuple[int, int] | None = None) -> tuple[int, int, int]:
        """2-D convolution of a (batch, h, w_, c) input with n filters of r x s x c/groups
        (plus n biases with ``bias``), ``stride`` along both axes. The output is
        (h + 2 pad - r) // stride + 1 by (w_ + 2 pad - s) // stride + 1 unless ``ofmap``
        gives it (a SCALE-Sim topology counts a partial window, ``npu.topology``).

        Returns (output tensor, output height, output width)."""
        ho, wo = ofmap if ofmap is not None else \
            ((h + 2 * pad - r) // stride + 1, (w_ + 2 * pad - s) // stride + 1)
        if ho <= 0 or wo <= 0:
            raise ValueError(f"{layer}: filter {r}x{s} larger than padded input {h}x{w_}")
        if groups < 1 or c % groups or n % groups:
            raise ValueError(f"{layer}: {groups} groups do not divide {c} channels and "
                             f"{n} filters")
        cg, ng = c // groups, n // groups
        wt = self._weight(layer, r * s * cg * n + (n if bias else 0), (r * s * cg, n))
        out_px = self.batch * ho * wo
        y = self.tensor(f"{layer}.out", Kind.ACTIVATION, out_px * n * self.dtype_bytes,
                        layer)
        op = self._op(f"{layer}.fwd", Phase.FORWARD, layer,
                      (Gemm(out_px, ng, r * s * cg, groups),), reads=(x, wt), writes=(y,))
        in_px = self.batch * h * w_
        if stride == 1 and ho == h and wo == w_:
            dgrad = Gemm(in_px, cg, r * s * ng, groups)
        else:
            dgrad = Gemm(out_px, r * s * cg, ng, groups)
        self._fwd.append(_Fwd(op, "linear", (x,), y, wt,
                              ((dgrad,), (Gemm(r * s * cg, ng, out_px, groups),))))
        return y, ho, wo

    def embedding(self, layer: str, ids: tuple[int, ...], tokens: int, d: int,
                  tables: dict[str, int]) -> tuple[int, dict[str, int]]:
        """Sum of lookups into embedding tables (``tables``: name -> rows) for ``tokens``
        rows of width ``d``, as BERT's word + position + segment embeddings. ``ids`` are
        the index inputs. The op reads each whole table, since which rows a batch touches
        is not known to a page-level model. Its backward scatter-adds the output gradient
        into dense table gradients (PyTorch's default for nn.Embedding).

        Returns (output tensor, table name -> weight tensor)."""
        ws = {name: self._weight(f"{layer}.{name}", rows * d, (rows, d))
              for name, rows in tables.items()}
        y = self.tensor(f"{layer}.out", Kind.ACTIVATION, tokens * d * self.dtype_bytes, layer)
        elems = tokens * d * len(tables)
        op = self._op(f"{layer}.fwd", Phase.FORWARD, layer, (), elems, 1.0,
                      reads=tuple(ids) + tuple(ws.values()), writes=(y,))
        self._fwd.append(_Fwd(op, "embedding", tuple(ids), y, None, ((), ()), elems, 1.0,
                              saved=tuple(ids), extra_weights=tuple(ws.values())))
        return y, ws

    def dropout(self, layer: str, x: int, elems: int) -> int:
        """Inverted dropout (Srivastava et al. 2014): writes the output and a one-byte
        keep mask that its backward reads."""
        y = self.tensor(f"{layer}.out", Kind.ACTIVATION, elems * self.dtype_bytes, layer)
        mask = self.tensor(f"{layer}.mask", Kind.ACTIVATION, elems, layer, 1)
        op = self._op(f"{layer}.fwd", Phase.FORWARD, layer, (), elems, 2.0,
                      reads=(x,), writes=(y, mask))
        self._fwd.append(_Fwd(op, "eltwise", (x,), y, None, ((), ()), elems, 1.0,
                              saved=(mask,)))
        return y

    def matmul(self, layer: str, a: int, b: int, m: int, n: int, k: int,
               count: int = 1) -> int:
        """Weight-free batched product (attention scores, attention-weighted values)."""
        y = self.tensor(f"{layer}.out", Kind.ACTIVATION, m * n * count * self.dtype_bytes,
                        layer)
        op = self._op(f"{layer}.fwd", Phase.FORWARD, layer, (Gemm(m, n, k, count),),
                      reads=(a, b), writes=(y,))
        # dA = dY B^T (m x k, reduce over n); dB = A^T dY (k x n, reduce over m)
        self._fwd.append(_Fwd(op, "matmul", (a, b), y, None,
                              ((Gemm(m, k, n, count),), (Gemm(k, n, m, count),))))
        return y

    def eltwise(self, layer: str, inputs: tuple[int, ...], elems: int,
                ops_per_elem: float = 1.0, params: int = 0, saves_input: bool = True,
                out_elems: int | None = None, saves: str = "") -> int:
        """Element-wise op on the vector unit (activation, softmax, norm, residual add,
        pooling). ``params`` > 0 gives it a small weight (layer-norm gain and bias).

        ``elems`` is the vector work; the output has ``out_elems`` elements (default
        ``elems``: a pooling or a slice writes fewer). What the backward reads besides the
        output gradient: ``saves`` "input", "output" or "none"; left empty, "input" if
        ``saves_input`` else "output"."""
        if saves and saves not in SAVES:
            raise ValueError(f"{layer}: saves {saves!r}: one of {SAVES}")
        reads = tuple(inputs)
        wt = None
        if params:
            wt = self._weight(layer, params)
            reads = reads + (wt,)
        n_out = elems if out_elems is None else out_elems
        y = self.tensor(f"{layer}.out", Kind.ACTIVATION, n_out * self.dtype_bytes, layer)
        op = self._op(f"{layer}.fwd", Phase.FORWARD, layer, (), elems, ops_per_elem,
                      reads=reads, writes=(y,))
        mode = saves or ("input" if saves_input else "output")
        saved = {"input": tuple(inputs), "output": (y,), "none": ()}[mode]
        self._fwd.append(_Fwd(op, "eltwise", tuple(inputs), y, wt, ((), ()), elems,
                              ops_per_elem, mode == "input", saved))
        return y

    # -- backward and optimizer --------------------------------------------------------
    def finish(self, loss_input: int | tuple[int, ...], page_size: int = 4096) -> Workload:
        """Derive backward (reverse order) and optimizer ops; return the Workload.

        ``loss_input`` is the tensor (or tensors, for several heads such as BERT's masked
        LM and next-sentence prediction) the loss reads; each loss is a vector op that
        writes the gradient of its input."""
        grads: dict[int, int] = {}
        accumulated: set[int] = set()
        wgrads: dict[int, int] = {}
        wgrad_written: set[int] = set()

        def grad_of(t: int) -> int:
            if t not in grads:
                src = self.tensors[t]
                grads[t] = self.tensor(f"{src.name}.grad", Kind.ACT_GRAD, src.nbytes,
                                       src.layer, src.dtype_bytes)
            return grads[t]

        def wgrad_of(w: int, reads: list[int]) -> int:
            """The weight gradient to write; a second write accumulates (reads it)."""
            dw = self._wgrad(w, wgrads)
            if dw in wgrad_written:
                reads.append(dw)
            wgrad_written.add(dw)
            return dw

        losses = (loss_input,) if isinstance(loss_input, int) else tuple(loss_input)
        for i, li in enumerate(losses):
            # loss: a vector op reads the last activation and writes its gradient
            g_last = grad_of(li)
            elems = self.tensors[li].nbytes // self.dtype_bytes
            self._op("loss" if len(losses) == 1 else f"loss{i}", Phase.FORWARD, "loss", (),
                     elems, 4.0, reads=(li,), writes=(g_last,))
            accumulated.add(g_last)

        for f in reversed(self._fwd):
            dy = grad_of(f.output)
            if dy not in accumulated:
                continue  # output never reached the loss (dead branch)
            diffable = [x for x in f.inputs if self.tensors[x].kind != Kind.INPUT]
            layer = self.tensors[f.output].layer
            if f.kind == "embedding":
                acc: list[int] = []
                dws = tuple(wgrad_of(w, acc) for w in f.extra_weights)
                self._op(f"{layer}.wgrad", Phase.BACKWARD, layer, (), f.vector_elems,
                         f.vector_ops, reads=(dy,) + f.saved + tuple(acc), writes=dws)
                continue
            if f.kind == "eltwise":
                reads = (dy,) + f.saved
                if f.weight is not None:
                    reads += (f.weight,)
                dxs = tuple(grad_of(x) for x in dict.fromkeys(diffable))
                writes = dxs
                acc = [d for d in dxs if d in accumulated]
                if f.weight is not None:
                    writes += (wgrad_of(f.weight, acc),)
                if writes:
                    self._op(f"{layer}.bwd", Phase.BACKWARD, layer, (), f.vector_elems,
                             f.vector_ops, reads=reads + tuple(acc), writes=writes)
                accumulated.update(dxs)
                continue
            dgrad, wgrad = f.bwd_gemms
            if f.kind == "linear":
                x = f.inputs[0]
                assert f.weight is not None
                if self.tensors[x].kind != Kind.INPUT:
                    dx = grad_of(x)
                    acc_dx = (dx,) if dx in accumulated else ()
                    self._op(f"{layer}.dgrad", Phase.BACKWARD, layer, dgrad,
                             reads=(dy, f.weight) + acc_dx, writes=(dx,))
                    accumulated.add(dx)
                acc = []
                dws = tuple(wgrad_of(w, acc) for w in (f.weight,) + f.extra_weights)
                self._op(f"{layer}.wgrad", Phase.BACKWARD, layer, wgrad,
                         reads=(dy, x) + tuple(acc), writes=dws)
            else:  # matmul: gradients of both operands
                a, b = f.inputs
                for operand, gem, other in ((a, dgrad, b), (b, wgrad, a)):
                    if self.tensors[operand].kind == Kind.INPUT:
                        continue
                    dx = grad_of(operand)
                    acc_dx = (dx,) if dx in accumulated else ()
                    tag = "da" if operand == a else "db"
                    self._op(f"{layer}.{tag}", Phase.BACKWARD, layer, gem,
                             reads=(dy, other) + acc_dx, writes=(dx,))
                    accumulated.add(dx)

        self._recompute()
        self._accumulate()
        ops_pe = OPTIMIZER_OPS_PER_ELEM[self.optimizer]
        for w in self._weights:
            wt = self.tensors[w]
            n = wt.nbytes // self.dtype_bytes
            state = optimizer_state_bytes(self.optimizer, n, self._shapes.get(w))
            # The update is element-wise, so a large parameter's fp32 master copy and
            # optimizer state are kept in shards with one update op each (as ZeRO-style
            # implementations chunk it): an op's working set stays bounded by the shard,
            # not the layer.
            mixed = PRECISIONS[self.transforms.precision][1]
            master_b = 4 if mixed else 0
            shards = max(1, -(-(n * master_b + state) // OPTIMIZER_SHARD_BYTES))
            dw = wgrads.get(w)
            for k in range(shards):
                lo, hi = n * k // shards, n * (k + 1) // shards
                tag = f".{k}" if shards > 1 else ""
                kept: tuple[int, ...] = ()
                if mixed:
                    kept = (self.tensor(f"{wt.layer}.master{tag}", Kind.MASTER,
                                        (hi - lo) * 4, wt.layer, 4),)
                part = state * (k + 1) // shards - state * k // shards
                if part:
                    kept += (self.tensor(f"{wt.layer}.{self.optimizer}{tag}",
                                         Kind.OPT_STATE, part, wt.layer, 4),)
                if dw is None:
                    continue
                self._op(f"{wt.layer}.{self.optimizer}{tag}", Phase.OPTIMIZER, wt.layer, (),
                         hi - lo, ops_pe, reads=(dw, *kept), writes=(w, *kept))
        micro = self.transforms.micro_batches
        wl = Workload(self.name, self.batch * micro, self.tensors, self.ops, self.seq,
                      page_size,
                      self.params, {"optimizer": self.optimizer,
                                    "precision": self.transforms.precision,
                                    "recompute": self._recompute_label(),
                                    "micro_batches": str(micro),
                                    "recompute_ops": ",".join(
                                        self.transforms.recompute_ops)})
        wl.check()
        return wl

    def _recompute_label(self) -> str:
        """``workload.recompute`` as the report names it: every-k with its k."""
        t = self.transforms
        if t.recompute == "ops":
            return f"ops-{len(t.recompute_ops)}"
        return f"every-{t.recompute_every}" if t.recompute == "every-k" else t.recompute

    def _group(self, op: Op) -> str | None:
        """The recomputation group of forward op ``op`` (``Transforms.recompute``), or
        None where it is not recomputed: a layer is the first part of the op's layer
        name (``l3`` of ``l3.ff1``); every-k joins k transformer layers (``l<i>``)."""
        mode = self.transforms.recompute
        head = op.layer.split(".", 1)[0]
        if op.layer == "loss":
            return None
        if mode == "selective":
            return head if op.layer.endswith(SELECTIVE) else None
        if mode == "every-k" and head[:1] == "l" and head[1:].isdigit():
            return f"l{int(head[1:]) // self.transforms.recompute_every}"
        return head

    def _op_groups(self) -> dict[str, list[Op]]:
        """``recompute`` "ops": the named forward ops (``recompute_ops``) in runs of
        consecutive forward ops of one block (``l3`` of ``l3.ff1``), each run recomputed
        together so that it reads its own recomputed outputs. An unknown or non-forward
        name is refused."""
        names = set(self.transforms.recompute_ops)
        fwd = [op for op in self.ops if op.phase == Phase.FORWARD]
        known = {op.name for op in fwd if op.layer != "loss"}
        if unknown := sorted(names - known):
            example = ", ".join(sorted(known)[:3])
            raise ConfigError("workload.recompute_ops", unknown[0],
                              f"names of forward ops of {self.name} (e.g. {example}; "
                              "tmhw workload show --json lists them in op_list)")
        groups: dict[str, list[Op]] = {}
        run, prev = 0, ""
        for op in fwd:
            head = op.layer.split(".", 1)[0]
            if op.name not in names:
                prev = ""
                continue
            if head != prev:
                run, prev = run + 1, head
            groups.setdefault(f"{head}#{run}", []).append(op)
        return groups

    def _recompute(self) -> None:
        """Recomputation (``Transforms.recompute``): per group, the forward ops run again
        just before the first backward op that reads what they wrote, into copies of
        their outputs, and the backward reads the copies; the originals die in the
        forward pass, except what a later group's forward (or recomputation) reads, its
        input. The recomputed ops are real ops of the backward, timed and counted."""
        if self.transforms.recompute == "none":
            return
        if self.transforms.recompute == "ops":
            groups = self._op_groups()
        else:
            groups = {}
            for op in self.ops:
                if op.phase == Phase.FORWARD and (g := self._group(op)) is not None:
                    groups.setdefault(g, []).append(op)
        copy: dict[int, int] = {}
        before: dict[int, list[Op]] = {}       # backward op index -> recompute ops
        for ops in groups.values():
            made = {t for op in ops for t in op.writes}
            first = next((b.index for b in self.ops if b.phase == Phase.BACKWARD
                          and made.intersection(b.reads)), None)
            if first is None:
                continue                        # nothing of the group is saved
            own = {t: self.tensor(f"{self.tensors[t].name}.re", Kind.ACTIVATION,
                                  self.tensors[t].nbytes, self.tensors[t].layer,
                                  self.tensors[t].dtype_bytes) for t in made}
            copy.update(own)
            before[first] = [Op(0, op.name.removesuffix(".fwd") + ".recompute",
                                Phase.BACKWARD, op.layer, op.gemms, op.vector_elems,
                                op.vector_ops_per_elem,
                                tuple(own.get(t, t) for t in op.reads),
                                tuple(own[t] for t in op.writes)) for op in ops]
        out: list[Op] = []
        for op in self.ops:
            out.extend(before.get(op.index, ()))
            if op.phase == Phase.BACKWARD:
                op = Op(0, op.name, op.phase, op.layer, op.gemms, op.vector_elems,
                        op.vector_ops_per_elem, tuple(copy.get(t, t) for t in op.reads),
                        op.writes)
            out.append(op)
        for i, op in enumerate(out):
            op.index = i
        self.ops = out

    def _accumulate(self) -> None:
        """Gradient accumulation (``Transforms.micro_batches`` = m > 1): the forward and
        backward ops, built for one micro-batch, run m times over the same tensors (a
        micro-batch's activations are dead when the next one starts), each later pass
        adding into the weight gradients (its weight-gradient ops read them too); the
        host delivers all m micro-batches' inputs at the iteration's start."""
        m = self.transforms.micro_batches
        if m == 1:
            return
        for t in self.tensors:
            if t.kind == Kind.INPUT:
                t.nbytes *= m
        block = list(self.ops)
        for k in range(1, m):
            for op in block:
                acc = tuple(t for t in op.writes
                            if self.tensors[t].kind == Kind.WEIGHT_GRAD)
                self.ops.append(Op(len(self.ops), f"{op.name}@{k}", op.phase, op.layer,
                                   op.gemms, op.vector_elems, op.vector_ops_per_elem,
                                   tuple(dict.fromkeys(op.reads + acc)), op.writes))

    def _wgrad(self, w: int, wgrads: dict[int, int]) -> int:
        if w not in wgrads:
            wt = self.tensors[w]
            wgrads[w] = self.tensor(f"{wt.layer}.wgrad", Kind.WEIGHT_GRAD, wt.nbytes, wt.layer)
        return wgrads[w]
