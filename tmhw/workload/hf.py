"""Hugging Face model configs as training workloads: ``workload.model = "hf:NAME"`` (a
named config below) or ``"hf:path/to/config.json"``.

The model is built from its architecture fields alone (no weights, no network), with
the zoo's builder (``tmhw.workload.builder``: forward, input- and weight-gradients,
optimizer step; bf16 mixed precision with Adam unless ``workload.optimizer`` says
otherwise), one op per kernel a framework would launch:

- ``LlamaForCausalLM``, ``MistralForCausalLM``, ``Qwen2ForCausalLM`` and
  ``MixtralForCausalLM`` (the transformers implementations): token embedding; per layer
  RMSNorm (a gain of ``hidden_size``), q/k/v projections with grouped-query attention
  (``num_key_value_heads`` k and v heads of ``head_dim``, shared by ``num_attention_heads
  / num_key_value_heads`` query heads; biases on q, k and v for Qwen2, or everywhere
  with ``attention_bias``), rotary position embedding on q and k (element-wise, nothing
  saved: the rotation is linear), scores, softmax, context, o projection, residual;
  RMSNorm, SwiGLU MLP (gate and up projections of ``intermediate_size``, SiLU of the gate
  times the up, down projection; biases with ``mlp_bias``), residual; a final RMSNorm
  and the LM head (``tie_word_embeddings``: the embedding itself). Mixtral's MLP is
  ``num_local_experts`` SwiGLU experts behind a router (a ``hidden_size x experts``
  linear, softmax and top-``num_experts_per_tok`` choice): **load assumption**, every
  expert gets an equal share of the routed tokens, ``ceil(tokens x k / experts)``.
- ``GPT2LMHeadModel`` and ``BertModel`` (with its pooler), and the ``T5`` encoder
  (``T5EncoderModel``, or the encoder of ``T5ForConditionalGeneration``): as the zoo's
  GPT-2, BERT and T5 layers (``tmhw.workload.zoo``), sized from the config.

Parameters are counted exactly as the transformers models hold them (tests pin
GPT-2 124,439,808; BERT-large with pooler 335,141,888; Llama-2-7B 6,738,415,616;
Mistral-7B 7,241,732,096; Llama-3-8B 8,030,261,248). The sequence length is
``workload.seq``, or the config's context capped at ``DEFAULT_SEQ``; the batch
``workload.batch`` or 1; ``workload.layers`` keeps the first layers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmhw.sim.errors import ConfigError
from tmhw.workload.builder import WorkloadBuilder, check_arguments
from tmhw.workload.graph import Workload
from tmhw.workload.zoo import _Arch, _layer

PREFIX = "hf:"
#: The sequence length when ``workload.seq`` is left out: the config's context, at most
#: this (4096: Llama 2's context; longer ones are a choice the user states).
DEFAULT_SEQ = 4096

#: Named configs: the architecture fields of the model's ``config.json`` on the Hugging
#: Face hub (the repository in each comment), only those the model's shape depends on.
CONFIGS: dict[str, dict[str, Any]] = {
    # meta-llama/Llama-2-7b-hf
    "llama-2-7b": {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                   "intermediate_size": 11008, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 32,
                   "vocab_size": 32000, "max_position_embeddings": 4096,
                   "tie_word_embeddings": False},
    # meta-llama/Meta-Llama-3-8B
    "llama-3-8b": {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                   "intermediate_size": 14336, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 8,
                   "vocab_size": 128256, "max_position_embeddings": 8192,
                   "tie_word_embeddings": False},
    # meta-llama/Llama-3.2-1B
    "llama-3.2-1b": {"architectures": ["LlamaForCausalLM"], "hidden_size": 2048,
                     "intermediate_size": 8192, "num_hidden_layers": 16,
                     "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
                     "vocab_size": 128256, "max_position_embeddings": 131072,
                     "tie_word_embeddings": True},
    # meta-llama/Llama-3.2-3B
    "llama-3.2-3b": {"architectures": ["LlamaForCausalLM"], "hidden_size": 3072,
                     "intermediate_size": 8192, "num_hidden_layers": 28,
                     "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128,
                     "vocab_size": 128256, "max_position_embeddings": 131072,
                     "tie_word_embeddings": True},
    # mistralai/Mistral-7B-v0.1
    "mistral-7b": {"architectures": ["MistralForCausalLM"], "hidden_size": 4096,
                   "intermediate_size": 14336, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 8,
                   "vocab_size": 32000, "max_position_embeddings": 32768,
                   "tie_word_embeddings": False},
    # Qwen/Qwen2-7B
    "qwen2-7b": {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584,
                 "intermediate_size": 18944, "num_hidden_layers": 28,
                 "num_attention_heads": 28, "num_key_value_heads": 4,
                 "vocab_size": 152064, "max_position_embeddings": 131072,
                 "tie_word_embeddings": False},
    # mistralai/Mixtral-8x7B-v0.1
    "mixtral-8x7b": {"architectures": ["MixtralForCausalLM"], "hidden_size": 4096,
                     "intermediate_size": 14336, "num_hidden_layers": 32,
                     "num_attention_heads": 32, "num_key_value_heads": 8,
                     "vocab_size": 32000, "max_position_embeddings": 32768,
                     "num_local_experts": 8, "num_experts_per_tok": 2,
                     "tie_word_embeddings": False},
    # openai-community/gpt2, gpt2-medium
    "gpt2": {"architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_layer": 12,
             "n_head": 12, "n_positions": 1024, "vocab_size": 50257},
    "gpt2-medium": {"architectures": ["GPT2LMHeadModel"], "n_embd": 1024, "n_layer": 24,
                    "n_head": 16, "n_positions": 1024, "vocab_size": 50257},
    # google-bert/bert-base-uncased, bert-large-uncased
    "bert-base-uncased": {"architectures": ["BertModel"], "hidden_size": 768,
                          "intermediate_size": 3072, "num_hidden_layers": 12,
                          "num_attention_heads": 12, "vocab_size": 30522,
                          "max_position_embeddings": 512, "type_vocab_size": 2},
    "bert-large-uncased": {"architectures": ["BertModel"], "hidden_size": 1024,
                           "intermediate_size": 4096, "num_hidden_layers": 24,
                           "num_attention_heads": 16, "vocab_size": 30522,
                           "max_position_embeddings": 512, "type_vocab_size": 2},
    # google-t5/t5-base (its encoder)
    "t5-base": {"architectures": ["T5ForConditionalGeneration"], "d_model": 768,
                "d_ff": 3072, "d_kv": 64, "num_layers": 12, "num_heads": 12,
                "vocab_size": 32128, "relative_attention_num_buckets": 32,
                "n_positions": 512},
}

LLAMA_LIKE = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
              "MixtralForCausalLM")
KNOWN = (*LLAMA_LIKE, "GPT2LMHeadModel", "BertModel", "T5EncoderModel",
         "T5ForConditionalGeneration")

#: what ``tmhw workload list`` shows of the named configs
MODELS = tuple(f"{PREFIX}{n}" for n in CONFIGS)


def load(model: str) -> dict[str, Any]:
    """The config ``model`` names (``hf:NAME`` or ``hf:path``), or ``ConfigError``."""
    ref = model.removeprefix(PREFIX)
    if ref in CONFIGS:
        return dict(CONFIGS[ref])
    path = Path(ref)
    if not ref or not path.is_file():
        raise ConfigError("model", model, f"hf: and a named config "
                          f"({', '.join(CONFIGS)}) or a path to a config.json")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError("model", model, f"a readable config.json ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError("model", model, "a config.json holding one JSON object")
    return data


def _int(cfg: dict[str, Any], key: str, model: str, default: int | None = None) -> int:
    v = cfg.get(key, default)
    if v is None:
        raise ConfigError(f"model ({key})", model, f"a config with the field {key!r}")
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ConfigError(f"model ({key})", v, "a positive integer")
    return v


def _arch(cfg: dict[str, Any], model: str) -> str:
    archs = cfg.get("architectures")
    if not isinstance(archs, list) or not archs:
        raise ConfigError("model (architectures)", model,
                          f"a config naming its architecture, one of {', '.join(KNOWN)}")
    arch = str(archs[0])
    if arch not in KNOWN:
        raise ConfigError("model (architectures)", arch, f"one of {', '.join(KNOWN)}")
    return arch


@dataclass(frozen=True, slots=True)
class Shape:
    """A decoder's shape from a Llama-family config."""

    hidden: int
    ff: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    context: int
    tied: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    experts: int
    top_k: int


def llama_shape(cfg: dict[str, Any], model: str) -> Shape:
    """The shape of a Llama-family config, checked (``ConfigError`` naming the field)."""
    arch = _arch(cfg, model)
    h = _int(cfg, "hidden_size", model)
    heads = _int(cfg, "num_attention_heads", model)
    kv = _int(cfg, "num_key_value_heads", model, heads)
    hd = cfg.get("head_dim") or 0
    if not hd:
        if h % heads:
            raise ConfigError("model (num_attention_heads)", heads,
                              f"a divisor of hidden_size {h}")
        hd = h // heads
    if heads % kv:
        raise ConfigError("model (num_key_value_heads)", kv,
                          f"a divisor of num_attention_heads {heads}")
    bias = bool(cfg.get("attention_bias", False))
    moe = arch == "MixtralForCausalLM"
    experts = _int(cfg, "num_local_experts", model) if moe else 0
    top_k = _int(cfg, "num_experts_per_tok", model) if moe else 0
    if moe and top_k > experts:
        raise ConfigError("model (num_experts_per_tok)", top_k,
                          f"at most num_local_experts {experts}")
    return Shape(h, _int(cfg, "intermediate_size", model),
                 _int(cfg, "num_hidden_layers", model), heads, kv, int(hd),
                 _int(cfg, "vocab_size", model),
                 _int(cfg, "max_position_embeddings", model, DEFAULT_SEQ),
                 bool(cfg.get("tie_word_embeddings", False)),
                 bias or arch == "Qwen2ForCausalLM", bias,
                 bool(cfg.get("mlp_bias", False)), experts, top_k)


def _decoder_layer(b: WorkloadBuilder, p: str, x: int, s: Shape, batch: int,
                   seq: int) -> int:
    tokens = batch * seq
    h, td = s.hidden, tokens * s.hidden
    nq, nkv = s.heads * s.head_dim, s.kv_heads * s.head_dim
    n1 = b.eltwise(f"{p}.input_norm", (x,), td, 4.0, params=h)
    q = b.linear(f"{p}.q_proj", n1, tokens, h, nq, bias=s.qkv_bias)
    k = b.linear(f"{p}.k_proj", n1, tokens, h, nkv, bias=s.qkv_bias)
    v = b.linear(f"{p}.v_proj", n1, tokens, h, nkv, bias=s.qkv_bias)
    # rotary embedding: a rotation by position (cos, sin), linear in q and k
    q = b.eltwise(f"{p}.rope_q", (q,), tokens * nq, 3.0, saves="none")
    k = b.eltwise(f"{p}.rope_k", (k,), tokens * nkv, 3.0, saves="none")
    # grouped-query attention: each k, v head serves heads / kv_heads query heads
    scores = b.matmul(f"{p}.scores", q, k, seq, seq, s.head_dim, count=batch * s.heads)
    probs = b.eltwise(f"{p}.softmax", (scores,), batch * s.heads * seq * seq, 5.0,
                      saves="output")
    ctx = b.matmul(f"{p}.context", probs, v, seq, s.head_dim, seq, count=batch * s.heads)
    o = b.linear(f"{p}.o_proj", ctx, tokens, nq, h, bias=s.o_bias)
    x = b.eltwise(f"{p}.res1", (x, o), td, 1.0, saves="none")
    n2 = b.eltwise(f"{p}.post_norm", (x,), td, 4.0, params=h)
    if s.experts:
        logits = b.linear(f"{p}.router", n2, tokens, h, s.experts, bias=False)
        route = b.eltwise(f"{p}.route", (logits,), tokens * s.experts, 5.0, saves="output")
        share = math.ceil(tokens * s.top_k / s.experts)   # even load (module docstring)
        outs = tuple(_swiglu(b, f"{p}.e{e}", n2, share, s) for e in range(s.experts))
        # each token's k expert outputs, weighted by its routing probabilities
        out = b.eltwise(f"{p}.combine", (*outs, route), tokens * h * s.top_k, 2.0,
                        saves="input", out_elems=td)
    else:
        out = _swiglu(b, f"{p}.mlp", n2, tokens, s)
    return b.eltwise(f"{p}.res2", (x, out), td, 1.0, saves="none")


def _swiglu(b: WorkloadBuilder, p: str, x: int, tokens: int, s: Shape) -> int:
    gate = b.linear(f"{p}.gate_proj", x, tokens, s.hidden, s.ff, bias=s.mlp_bias)
    up = b.linear(f"{p}.up_proj", x, tokens, s.hidden, s.ff, bias=s.mlp_bias)
    act = b.eltwise(f"{p}.silu_mul", (gate, up), tokens * s.ff, 4.0, saves="input")
    return b.linear(f"{p}.down_proj", act, tokens, s.ff, s.hidden, bias=s.mlp_bias)


def _llama(name: str, s: Shape, batch: int, seq: int, layers: int, page_size: int,
           optimizer: str) -> Workload:
    b = WorkloadBuilder(name, batch, seq, optimizer=optimizer)
    tokens = batch * seq
    ids = b.input("input_ids", tokens, dtype_bytes=4)
    x, tables = b.embedding("embed", (ids,), tokens, s.hidden, {"tokens": s.vocab})
    for i in range(layers):
        x = _decoder_layer(b, f"l{i}", x, s, batch, seq)
    x = b.eltwise("norm", (x,), tokens * s.hidden, 4.0, params=s.hidden)
    logits = b.linear("lm_head", x, tokens, s.hidden, s.vocab, bias=False,
                      tied=tables["tokens"] if s.tied else None)
    return b.finish(logits, page_size)


def _gpt2(name: str, cfg: dict[str, Any], model: str, batch: int, seq: int,
          layers: int, page_size: int, optimizer: str) -> Workload:
    d, heads = _int(cfg, "n_embd", model), _int(cfg, "n_head", model)
    if d % heads:
        raise ConfigError("model (n_head)", heads, f"a divisor of n_embd {d}")
    vocab, ctx = _int(cfg, "vocab_size", model), _int(cfg, "n_positions", model)
    b = WorkloadBuilder(name, batch, seq, optimizer=optimizer)
    tokens = batch * seq
    arch = _Arch(d, heads, _int(cfg, "n_inner", model, 4 * d))
    ids = b.input("input_ids", tokens, dtype_bytes=4)
    x, tables = b.embedding("emb", (ids,), tokens, d, {"wte": vocab, "wpe": ctx})
    x = b.dropout("emb.drop", x, tokens * d)
    for i in range(layers):
        x = _layer(b, f"l{i}", x, arch, batch, seq)
    x = b.eltwise("ln_f", (x,), tokens * d, 8.0, params=2 * d)
    logits = b.linear("lm_head", x, tokens, d, vocab, bias=False, tied=tables["wte"])
    return b.finish(logits, page_size)


def _bert(name: str, cfg: dict[str, Any], model: str, batch: int, seq: int, layers: int,
          page_size: int, optimizer: str) -> Workload:
    d, heads = _int(cfg, "hidden_size", model), _int(cfg, "num_attention_heads", model)
    if d % heads:
        raise ConfigError("model (num_attention_heads)", heads,
                          f"a divisor of hidden_size {d}")
    b = WorkloadBuilder(name, batch, seq, optimizer=optimizer)
    tokens = batch * seq
    arch = _Arch(d, heads, _int(cfg, "intermediate_size", model), norm="post")
    ids = b.input("input_ids", tokens, dtype_bytes=4)
    seg = b.input("token_type_ids", tokens, dtype_bytes=4)
    x, _ = b.embedding("emb", (ids, seg), tokens, d, {
        "word": _int(cfg, "vocab_size", model),
        "position": _int(cfg, "max_position_embeddings", model),
        "segment": _int(cfg, "type_vocab_size", model, 2)})
    x = b.eltwise("emb.ln", (x,), tokens * d, 8.0, params=2 * d)
    x = b.dropout("emb.drop", x, tokens * d)
    for i in range(layers):
        x = _layer(b, f"l{i}", x, arch, batch, seq)
    cls = b.eltwise("pooler.cls", (x,), batch * d, 1.0, saves="none")
    pooled = b.linear("pooler", cls, batch, d, d)
    pooled = b.eltwise("pooler.tanh", (pooled,), batch * d, 4.0, saves="output")
    return b.finish((x, pooled), page_size)


def _t5(name: str, cfg: dict[str, Any], model: str, batch: int, seq: int, layers: int,
        page_size: int, optimizer: str) -> Workload:
    d, heads = _int(cfg, "d_model", model), _int(cfg, "num_heads", model)
    d_kv = _int(cfg, "d_kv", model, d // heads)
    if str(cfg.get("feed_forward_proj", "relu")).startswith("gated"):
        raise ConfigError("model (feed_forward_proj)", cfg.get("feed_forward_proj"),
                          "'relu' (T5 v1.0); gated feed-forwards are not built")
    b = WorkloadBuilder(name, batch, seq, optimizer=optimizer)
    tokens = batch * seq
    arch = _Arch(d, heads, _int(cfg, "d_ff", model), d_kv=d_kv, norm_params=1,
                 bias=False, act="relu", ffn_dropout=True)
    ids = b.input("input_ids", tokens, dtype_bytes=4)
    # as the zoo's T5 encoder (``zoo.t5_encoder``), sized from the config
    x, _ = b.embedding("emb", (ids,), tokens, d, {"shared": _int(cfg, "vocab_size", model)})
    x = b.dropout("emb.drop", x, tokens * d)
    buckets = _int(cfg, "relative_attention_num_buckets", model, 32)
    pos_bias = b.eltwise("rel_bias", (), batch * heads * seq * seq, 1.0,
                         params=buckets * heads, saves="none")
    for i in range(layers):
        x = _layer(b, f"l{i}", x, arch, batch, seq, pos_bias)
    x = b.eltwise("ln_f", (x,), tokens * d, 8.0, params=d)
    x = b.dropout("final_drop", x, tokens * d)
    return b.finish(x, page_size)


def context(cfg: dict[str, Any], arch: str) -> int:
    """The config's context in tokens (0: it states none)."""
    keys = {"GPT2LMHeadModel": "n_positions", "T5EncoderModel": "n_positions",
            "T5ForConditionalGeneration": "n_positions"}
    v = cfg.get(keys.get(arch, "max_position_embeddings"))
    return v if isinstance(v, int) and v > 0 else 0


def depth(cfg: dict[str, Any], arch: str, model: str) -> int:
    """The config's number of layers (of the encoder, for T5)."""
    key = {"GPT2LMHeadModel": "n_layer", "T5EncoderModel": "num_layers",
           "T5ForConditionalGeneration": "num_layers"}.get(arch, "num_hidden_layers")
    return _int(cfg, key, model)


def check(model: str, batch: int | None, seq: int | None, layers: int | None) -> None:
    """The config exists and reads, names a known architecture, and its shape holds
    (``ConfigError`` naming the field otherwise); ``seq`` within its context, ``layers``
    at most its depth."""
    cfg = load(model)
    arch = _arch(cfg, model)
    if arch in LLAMA_LIKE:
        llama_shape(cfg, model)
    most = depth(cfg, arch, model)
    for field, v in (("batch", batch), ("seq", seq), ("layers", layers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ConfigError(field, v, "a positive integer, or left out for the model's own")
    ctx = context(cfg, arch)
    if seq is not None and ctx and seq > ctx:
        raise ConfigError("seq", seq, f"1..{ctx} for {model} (its context)")
    if layers is not None and layers > most:
        raise ConfigError("layers", layers, f"1..{most} for {model} (its depth)")


def build(model: str, *, batch: int | None = None, seq: int | None = None,
          layers: int | None = None, page_size: int = 4096,
          optimizer: str = "adam") -> Workload:
    """The training iteration of the config ``model`` names (module docstring)."""
    check(model, batch, seq, layers)
    cfg = load(model)
    arch = _arch(cfg, model)
    batch = 1 if batch is None else batch
    check_arguments(batch, page_size, optimizer)
    ctx = context(cfg, arch) or DEFAULT_SEQ
    seq = min(ctx, DEFAULT_SEQ) if seq is None else seq
    n_layers = depth(cfg, arch, model) if layers is None else layers
    ref = model.removeprefix(PREFIX)
    # a named config by its name, a file by its folder (hub checkouts: org/model/)
    name = ref if ref in CONFIGS else (Path(ref).parent.name or Path(ref).stem)
    if arch in LLAMA_LIKE:
        return _llama(name, llama_shape(cfg, model), batch, seq, n_layers, page_size,
                      optimizer)
    if arch == "GPT2LMHeadModel":
        return _gpt2(name, cfg, model, batch, seq, n_layers, page_size, optimizer)
    if arch == "BertModel":
        return _bert(name, cfg, model, batch, seq, n_layers, page_size, optimizer)
    return _t5(name, cfg, model, batch, seq, n_layers, page_size, optimizer)
