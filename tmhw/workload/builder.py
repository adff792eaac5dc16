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
(M = output pixels x batch, N = filters, K = R*S*C); its input gradient is the
transposed convolution (M = input pixels x batch, N = C, K = R*S*N) and its weight
gradient M = R*S*C, N = filters, K = output pixels x batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tmhw.workload.graph import Gemm, Kind, Op, Phase, Tensor, Workload

#: Vector-unit operations per element of each optimizer's update (reads, fused
#: multiply-adds, the square root and divide of Adam); an estimate from the update
#: equations (Kingma & Ba 2015, Alg. 1: about 10 flops per parameter for Adam).
OPTIMIZER_OPS_PER_ELEM = {"adam": 10.0, "sgd": 3.0}
#: Bytes of optimizer state per parameter (fp32 moments): Adam m and v, SGD momentum.
OPTIMIZER_STATE_BYTES = {"adam": 8, "sgd": 4}


@dataclass(slots=True)
class _Fwd:
    op: int
    kind: str                     # "linear" | "matmul" | "eltwise"
    inputs: tuple[int, ...]
    output: int
    weight: int | None = None
    bwd_gemms: tuple[tuple[Gemm, ...], tuple[Gemm, ...]] = ((), ())
    vector_elems: int = 0
    vector_ops: float = 1.0
    saves_input: bool = True


@dataclass
class WorkloadBuilder:
    """Records a forward pass and derives backward + optimizer ops.

    ``dtype_bytes`` is the activation/weight precision (2 for bf16).
    """

    name: str
    batch: int
    seq: int = 0
    dtype_bytes: int = 2
    optimizer: str = "adam"
    tensors: list[Tensor] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    _fwd: list[_Fwd] = field(default_factory=list)
    _weights: list[int] = field(default_factory=list)
    params: int = 0

    def __post_init__(self) -> None:
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

    def input(self, name: str, elems: int) -> int:
        return self.tensor(name, Kind.INPUT, elems * self.dtype_bytes, "input")

    def _op(self, name: str, phase: Phase, layer: str, gemms: tuple[Gemm, ...] = (),
            vector_elems: int = 0, vector_ops: float = 1.0, reads: tuple[int, ...] = (),
            writes: tuple[int, ...] = ()) -> int:
        idx = len(self.ops)
        self.ops.append(Op(idx, name, phase, layer, gemms, vector_elems, vector_ops,
                           tuple(dict.fromkeys(reads)), tuple(dict.fromkeys(writes))))
        return idx

    def _weight(self, layer: str, params: int) -> int:
        self.params += params
        w = self.tensor(f"{layer}.w", Kind.WEIGHT, params * self.dtype_bytes, layer)
        self._weights.append(w)
        return w

    # -- forward layers ----------------------------------------------------------------
    def linear(self, layer: str, x: int, tokens: int, d_in: int, d_out: int,
               bias: bool = True) -> int:
        """y = x W (+ b) over ``tokens`` rows. Returns the output tensor."""
        w = self._weight(layer, d_in * d_out + (d_out if bias else 0))
        y = self.tensor(f"{layer}.out", Kind.ACTIVATION, tokens * d_out * self.dtype_bytes,
                        layer)
        op = self._op(f"{layer}.fwd", Phase.FORWARD, layer, (Gemm(tokens, d_out, d_in),),
                      reads=(x, w), writes=(y,))
        self._fwd.append(_Fwd(op, "linear", (x,), y, w,
                              ((Gemm(tokens, d_in, d_out),), (Gemm(d_in, d_out, tokens),))))
        return y

    def conv(self, layer: str, x: int, h: int, w_: int, c: int, r: int, s: int, n: int,
             stride: int = 1, pad: int = 0) -> tuple[int, int, int]:
        """2-D convolution of a (batch, h, w_, c) input with n filters of r x s x c.

        Returns (output tensor, output height, output width)."""
        ho = (h + 2 * pad - r) // stride + 1
        wo = (w_ + 2 * pad - s) // stride + 1
        if ho <= 0 or wo <= 0:
            raise ValueError(f"{layer}: filter {r}x{s} larger than padded input {h}x{w_}")
        wt = self._weight(layer, r * s * c * n)
        out_px = self.batch * ho * wo
        y = self.tensor(f"{layer}.out", Kind.ACTIVATION, out_px * n * self.dtype_bytes,
                        layer)
        op = self._op(f"{layer}.fwd", Phase.FORWARD, layer, (Gemm(out_px, n, r * s * c),),
                      reads=(x, wt), writes=(y,))
        in_px = self.batch * h * w_
        self._fwd.append(_Fwd(op, "linear", (x,), y, wt,
                              ((Gemm(in_px, c, r * s * n),), (Gemm(r * s * c, n, out_px),))))
        return y, ho, wo

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
                ops_per_elem: float = 1.0, params: int = 0, saves_input: bool = True) -> int:
        """Element-wise op on the vector unit (activation, softmax, norm, residual add,
        pooling). ``params`` > 0 gives it a small weight (layer-norm gain and bias)."""
        reads = tuple(inputs)
        wt = None
        if params:
            wt = self._weight(layer, params)
            reads = reads + (wt,)
        y = self.tensor(f"{layer}.out", Kind.ACTIVATION, elems * self.dtype_bytes, layer)
        op = self._op(f"{layer}.fwd", Phase.FORWARD, layer, (), elems, ops_per_elem,
                      reads=reads, writes=(y,))
        self._fwd.append(_Fwd(op, "eltwise", tuple(inputs), y, wt, ((), ()), elems,
                              ops_per_elem, saves_input))
        return y

    # -- backward and optimizer --------------------------------------------------------
    def finish(self, loss_input: int, page_size: int = 4096) -> Workload:
        """Derive backward (reverse order) and optimizer ops; return the Workload."""
        grads: dict[int, int] = {}
        accumulated: set[int] = set()

        def grad_of(t: int) -> int:
            if t not in grads:
                src = self.tensors[t]
                grads[t] = self.tensor(f"{src.name}.grad", Kind.ACT_GRAD, src.nbytes,
                                       src.layer)
            return grads[t]

        # loss: a vector op reads the last activation and writes its gradient
        g_last = grad_of(loss_input)
        elems = self.tensors[loss_input].nbytes // self.dtype_bytes
        self._op("loss", Phase.FORWARD, "loss", (), elems, 4.0, reads=(loss_input,),
                 writes=(g_last,))
        accumulated.add(g_last)

        wgrads: dict[int, int] = {}
        for f in reversed(self._fwd):
            dy = grad_of(f.output)
            if dy not in accumulated:
                continue  # output never reached the loss (dead branch)
            diffable = [x for x in f.inputs if self.tensors[x].kind != Kind.INPUT]
            layer = self.tensors[f.output].layer
            if f.kind == "eltwise":
                reads = (dy,) + (tuple(f.inputs) if f.saves_input else (f.output,))
                if f.weight is not None:
                    reads += (f.weight,)
                dxs = tuple(grad_of(x) for x in diffable)
                writes = dxs
                if f.weight is not None:
                    dw = self._wgrad(f.weight, wgrads)
                    writes += (dw,)
                if writes:
                    self._op(f"{layer}.bwd", Phase.BACKWARD, layer, (), f.vector_elems,
                             f.vector_ops, reads=reads + tuple(d for d in dxs
                                                               if d in accumulated),
                             writes=writes)
                accumulated.update(dxs)
                continue
            dgrad, wgrad = f.bwd_gemms
            if f.kind == "linear":
                x = f.inputs[0]
                assert f.weight is not None
                if self.tensors[x].kind != Kind.INPUT:
                    dx = grad_of(x)
                    acc = (dx,) if dx in accumulated else ()
                    self._op(f"{layer}.dgrad", Phase.BACKWARD, layer, dgrad,
                             reads=(dy, f.weight) + acc, writes=(dx,))
                    accumulated.add(dx)
                dw = self._wgrad(f.weight, wgrads)
                self._op(f"{layer}.wgrad", Phase.BACKWARD, layer, wgrad,
                         reads=(dy, x), writes=(dw,))
            else:  # matmul: gradients of both operands
                a, b = f.inputs
                for operand, gem, other in ((a, dgrad, b), (b, wgrad, a)):
                    if self.tensors[operand].kind == Kind.INPUT:
                        continue
                    dx = grad_of(operand)
                    acc = (dx,) if dx in accumulated else ()
                    tag = "da" if operand == a else "db"
                    self._op(f"{layer}.{tag}", Phase.BACKWARD, layer, gem,
                             reads=(dy, other) + acc, writes=(dx,))
                    accumulated.add(dx)

        ops_pe = OPTIMIZER_OPS_PER_ELEM[self.optimizer]
        state_b = OPTIMIZER_STATE_BYTES[self.optimizer]
        for w in self._weights:
            wt = self.tensors[w]
            n = wt.nbytes // self.dtype_bytes
            master = self.tensor(f"{wt.layer}.master", Kind.MASTER, n * 4, wt.layer, 4)
            state = self.tensor(f"{wt.layer}.{self.optimizer}", Kind.OPT_STATE, n * state_b,
                                wt.layer, 4)
            dw = wgrads.get(w)
            if dw is None:
                continue
            self._op(f"{wt.layer}.{self.optimizer}", Phase.OPTIMIZER, wt.layer, (), n, ops_pe,
                     reads=(dw, master, state), writes=(w, master, state))
        wl = Workload(self.name, self.batch, self.tensors, self.ops, self.seq, page_size,
                      self.params)
        wl.check()
        return wl

    def _wgrad(self, w: int, wgrads: dict[int, int]) -> int:
        if w not in wgrads:
            wt = self.tensors[w]
            wgrads[w] = self.tensor(f"{wt.layer}.wgrad", Kind.WEIGHT_GRAD, wt.nbytes, wt.layer)
        return wgrads[w]
