"""Memory footprint of a training iteration, by what the bytes hold.

Model state under mixed precision (Micikevicius et al., ICLR 2018; ZeRO, Rajbhandari et
al., SC'20, Sec. 3.1): bf16 weights (2 B/param) and gradients (2), fp32 master weights
(4) and optimizer state (Adam's two moments 8, SGD's momentum 4): 16 B/param for Adam,
12 for SGD with momentum.

Activations kept for the backward are the forward outputs that some backward op reads
(what autograd saves). For a transformer layer with 16-bit activations, dropout and no
recomputation, Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models" (MLSys 2023, Sec. 4.1, Eq. 1) count 34 s b h + 5 a s^2 b bytes
(s sequence, b batch, h hidden, a heads); the zoo's layers keep exactly that (see
tests/workload/test_footprint.py). Where the op-level accounting goes beyond the
formula: it also counts the embeddings, the heads and the final norm outside the
layers; Q, K and V are one fused tensor (same bytes); and peak live bytes, unlike the
formula, include the transient tensors (pre-softmax scores, logits), the activation
gradients of the backward and the weight gradients awaiting the optimizer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tmhw.workload.graph import Kind, Phase, Workload


def korthikanti_layer_bytes(seq: int, batch: int, hidden: int, heads: int) -> int:
    """Activation bytes one transformer layer keeps for its backward: 34 s b h + 5 a s^2 b
    (Korthikanti et al. 2023, Eq. 1; 16-bit activations, dropout, no recomputation)."""
    return 34 * seq * batch * hidden + 5 * heads * seq * seq * batch


def saved_activation_ids(wl: Workload) -> set[int]:
    """Ids of the activation tensors that some backward op reads."""
    out: set[int] = set()
    for op in wl.ops:
        if op.phase == Phase.BACKWARD:
            out.update(t for t in op.reads if wl.tensors[t].kind == Kind.ACTIVATION)
    return out


@dataclass(frozen=True, slots=True)
class Footprint:
    """Bytes of one training iteration by kind (exact tensor sizes, not page-rounded,
    except ``peak_live`` and ``total``, which count whole pages as placement does)."""

    model: str
    batch: int
    seq: int
    optimizer: str
    params: int
    weights: int            # bf16 working copy
    master: int             # fp32 master weights
    optimizer_state: int    # fp32 moments / momentum
    weight_grads: int       # bf16 parameter gradients
    model_state: int        # the four above
    bytes_per_param: float  # model_state / params
    activations_saved: int  # activations the backward reads
    activations_all: int    # every activation tensor, transient ones included
    activation_grads: int   # every activation-gradient tensor
    input: int              # the mini-batch
    peak_live: int          # most bytes live at once (page-rounded)
    total: int              # every tensor of the iteration (page-rounded)
    forward_macs: int
    backward_macs: int
    ops: int
    tensors: int
    pages: int
    page_size: int

    def as_dict(self) -> dict[str, int | float | str]:
        return asdict(self)


def footprint(wl: Workload) -> Footprint:
    by = wl.bytes_by_kind()
    weights = by[Kind.WEIGHT.value]
    master = by[Kind.MASTER.value]
    state = by[Kind.OPT_STATE.value]
    grads = by[Kind.WEIGHT_GRAD.value]
    model_state = weights + master + state + grads
    saved = sum(wl.tensors[t].nbytes for t in saved_activation_ids(wl))
    fwd = sum(op.macs for op in wl.ops if op.phase == Phase.FORWARD)
    bwd = sum(op.macs for op in wl.ops if op.phase == Phase.BACKWARD)
    return Footprint(
        model=wl.name, batch=wl.batch, seq=wl.seq, optimizer=wl.meta.get("optimizer", ""),
        params=wl.params, weights=weights, master=master, optimizer_state=state,
        weight_grads=grads, model_state=model_state,
        bytes_per_param=model_state / wl.params if wl.params else 0.0,
        activations_saved=saved, activations_all=by[Kind.ACTIVATION.value],
        activation_grads=by[Kind.ACT_GRAD.value], input=by[Kind.INPUT.value],
        peak_live=wl.peak_live_bytes(), total=wl.footprint_bytes(), forward_macs=fwd,
        backward_macs=bwd, ops=len(wl.ops), tensors=len(wl.tensors), pages=wl.npages,
        page_size=wl.page_size)
