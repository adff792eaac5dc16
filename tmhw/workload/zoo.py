"""The model zoo: training iterations of published networks at a given batch size.

Shapes follow the original papers (each builder's docstring cites it).
"""

from __future__ import annotations

from collections.abc import Callable

from tmhw.workload.builder import WorkloadBuilder
from tmhw.workload.graph import Workload


def transformer_stack(name: str, *, layers: int, d_model: int, heads: int, d_ff: int,
                      batch: int, seq: int, vocab: int = 0, page_size: int = 4096,
                      optimizer: str = "adam") -> Workload:
    """Pre-LN transformer encoder/decoder blocks (Vaswani et al. 2017) over ``seq``
    tokens: QKV projection, scaled dot-product attention (scores, softmax, weighted
    values), output projection, residual + layer norm, two-layer GELU feed-forward.
    ``vocab`` > 0 adds the output projection onto the vocabulary."""
    b = WorkloadBuilder(name, batch, seq, optimizer=optimizer)
    tokens = batch * seq
    dh = d_model // heads
    x = b.input("tokens", tokens * d_model)
    for i in range(layers):
        p = f"l{i}"
        h = b.eltwise(f"{p}.ln1", (x,), tokens * d_model, 8.0, params=2 * d_model)
        qkv = b.linear(f"{p}.qkv", h, tokens, d_model, 3 * d_model)
        scores = b.matmul(f"{p}.scores", qkv, qkv, seq, seq, dh, count=batch * heads)
        probs = b.eltwise(f"{p}.softmax", (scores,), batch * heads * seq * seq, 5.0,
                          saves_input=False)
        ctx = b.matmul(f"{p}.context", probs, qkv, seq, dh, seq, count=batch * heads)
        o = b.linear(f"{p}.proj", ctx, tokens, d_model, d_model)
        x = b.eltwise(f"{p}.res1", (x, o), tokens * d_model, 1.0, saves_input=False)
        h = b.eltwise(f"{p}.ln2", (x,), tokens * d_model, 8.0, params=2 * d_model)
        f1 = b.linear(f"{p}.ff1", h, tokens, d_model, d_ff)
        g = b.eltwise(f"{p}.gelu", (f1,), tokens * d_ff, 8.0)
        f2 = b.linear(f"{p}.ff2", g, tokens, d_ff, d_model)
        x = b.eltwise(f"{p}.res2", (x, f2), tokens * d_model, 1.0, saves_input=False)
    if vocab:
        x = b.linear("lm_head", x, tokens, d_model, vocab, bias=False)
    return b.finish(x, page_size)


def bert_large(batch: int = 32, seq: int = 512, page_size: int = 4096) -> Workload:
    """BERT-large (Devlin et al. 2019): 24 layers, d_model 1024, 16 heads, d_ff 4096."""
    return transformer_stack("bert-large", layers=24, d_model=1024, heads=16, d_ff=4096,
                             batch=batch, seq=seq, page_size=page_size)


MODELS: dict[str, Callable[..., Workload]] = {
    "bert-large": bert_large,
}
