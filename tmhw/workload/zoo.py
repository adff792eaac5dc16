"""The model zoo: training iterations of published networks at a given batch size.

Shapes follow the original papers; each builder's docstring cites its source, and
``INFO`` holds each model's default batch and sequence length with the reason for it.

Conventions shared by every model (see builder.py for the backward and the optimizer):

- bf16 activations, weights and gradients; fp32 master weights and optimizer states.
- Batch norm is an element-wise op with 2 * C parameters (gain and bias); its running
  mean and variance are buffers, not parameters, and are not modelled as tensors.
- Vector-unit work per element (``ops_per_elem``) is an estimate from the op's arithmetic:
  layer norm 8, softmax 5, GELU 8, batch norm 5, ReLU 1, residual add 1, dropout 2
  (random draw and select), max pooling 1 per window element, tanh 4.
- Transformer layers carry dropout (p = 0.1 in BERT, GPT-2 and T5) with a one-byte mask,
  so a layer keeps exactly the 34 s b h + 5 a s^2 b bytes of activations that
  Korthikanti et al. (MLSys 2023, Sec. 4.1, Eq. 1) count for 16-bit activations.

Pure: no SimPy here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from tmhw.sim.errors import ConfigError
from tmhw.workload.builder import WorkloadBuilder, check_arguments
from tmhw.workload.graph import Workload

# -- transformers ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Arch:
    """One transformer layer's shape and its variant choices."""

    d_model: int
    heads: int
    d_ff: int
    d_kv: int = 0                 # per-head width; 0: d_model // heads
    norm: str = "pre"             # "pre" (GPT-2, T5) or "post" (BERT) layer norm
    norm_params: int = 2          # per channel: 2 (gain, bias) or 1 (T5's RMS norm gain)
    bias: bool = True             # biases on the linear layers
    act: str = "gelu"             # "gelu" | "relu"
    dropout: bool = True
    ffn_dropout: bool = False     # T5 also drops after the FFN's activation

    @property
    def kv(self) -> int:
        return self.d_kv or self.d_model // self.heads


def _layer(b: WorkloadBuilder, p: str, x: int, a: _Arch, batch: int, seq: int,
           pos_bias: int | None = None) -> int:
    """One encoder/decoder layer (Vaswani et al. 2017): fused QKV projection, scaled
    dot-product attention (scores, softmax, dropout, weighted values), output projection,
    dropout, residual; feed-forward d -> d_ff -> d, dropout, residual; a layer norm before
    (pre-LN) or after (post-LN) each residual branch. ``pos_bias`` is a tensor of
    attention-score biases added before the softmax (T5's relative positions)."""
    tokens = batch * seq
    td = tokens * a.d_model
    inner = a.heads * a.kv
    score_elems = batch * a.heads * seq * seq
    ln_p = a.norm_params * a.d_model

    def drop(name: str, t: int, elems: int) -> int:
        return b.dropout(name, t, elems) if a.dropout else t

    h = b.eltwise(f"{p}.ln1", (x,), td, 8.0, params=ln_p) if a.norm == "pre" else x
    qkv = b.linear(f"{p}.qkv", h, tokens, a.d_model, 3 * inner, bias=a.bias)
    scores = b.matmul(f"{p}.scores", qkv, qkv, seq, seq, a.kv, count=batch * a.heads)
    if pos_bias is not None:
        scores = b.eltwise(f"{p}.bias_add", (scores, pos_bias), score_elems, 1.0,
                           saves="none")
    probs = b.eltwise(f"{p}.softmax", (scores,), score_elems, 5.0, saves="output")
    probs = drop(f"{p}.attn_drop", probs, score_elems)
    ctx = b.matmul(f"{p}.context", probs, qkv, seq, a.kv, seq, count=batch * a.heads)
    o = b.linear(f"{p}.proj", ctx, tokens, inner, a.d_model, bias=a.bias)
    o = drop(f"{p}.proj_drop", o, td)
    x = b.eltwise(f"{p}.res1", (x, o), td, 1.0, saves="none")
    if a.norm == "post":
        x = b.eltwise(f"{p}.ln1", (x,), td, 8.0, params=ln_p)
        h = x
    else:
        h = b.eltwise(f"{p}.ln2", (x,), td, 8.0, params=ln_p)
    f1 = b.linear(f"{p}.ff1", h, tokens, a.d_model, a.d_ff, bias=a.bias)
    if a.act == "gelu":
        g = b.eltwise(f"{p}.gelu", (f1,), tokens * a.d_ff, 8.0, saves="input")
    else:
        g = b.eltwise(f"{p}.relu", (f1,), tokens * a.d_ff, 1.0, saves="output")
    if a.ffn_dropout:
        g = drop(f"{p}.ff_drop", g, tokens * a.d_ff)
    f2 = b.linear(f"{p}.ff2", g, tokens, a.d_ff, a.d_model, bias=a.bias)
    f2 = drop(f"{p}.ff2_drop", f2, td)
    x = b.eltwise(f"{p}.res2", (x, f2), td, 1.0, saves="none")
    if a.norm == "post":
        x = b.eltwise(f"{p}.ln2", (x,), td, 8.0, params=ln_p)
    return x


def transformer_stack(name: str, *, layers: int, d_model: int, heads: int, d_ff: int,
                      batch: int, seq: int, vocab: int = 0, page_size: int = 4096,
                      optimizer: str = "adam", dropout: bool = False) -> Workload:
    """Pre-LN transformer encoder/decoder blocks (Vaswani et al. 2017) over ``seq``
    tokens: QKV projection, scaled dot-product attention (scores, softmax, weighted
    values), output projection, residual + layer norm, two-layer GELU feed-forward.
    ``vocab`` > 0 adds the output projection onto the vocabulary; ``dropout`` adds the
    attention, projection and feed-forward dropouts. The input is the hidden state of
    the previous stage (an input tensor: no gradient flows out of the stack)."""
    b = WorkloadBuilder(name, batch, seq, optimizer=optimizer)
    arch = _Arch(d_model, heads, d_ff, dropout=dropout)
    x = b.input("tokens", batch * seq * d_model)
    for i in range(layers):
        x = _layer(b, f"l{i}", x, arch, batch, seq)
    if vocab:
        x = b.linear("lm_head", x, batch * seq, d_model, vocab, bias=False)
    return b.finish(x, page_size)


def _bert(name: str, layers: int, d: int, heads: int, batch: int, seq: int,
          page_size: int, optimizer: str) -> Workload:
    """BERT pre-training (Devlin et al., NAACL 2019, Sec. 3 and App. A): word (WordPiece
    30522), position (512) and segment (2) embeddings, layer norm, dropout; post-LN GELU
    encoder layers with d_ff = 4 d; the masked-LM head (dense d x d, GELU, layer norm,
    decoder tied to the word embeddings plus a vocabulary bias) over the masked
    positions, ceil(0.15 * seq) per sequence (77 at seq 512; the reference scripts use a
    max_predictions_per_seq of 20 at 128 and 80 at 512); the next-sentence head (pooler
    dense d x d and tanh on the [CLS] token, then d x 2). Parameters: 110.1M (base) and
    336.2M (large), as Hugging Face's BertForPreTraining; the paper rounds to 110M/340M."""
    b = WorkloadBuilder(name, batch, seq, optimizer=optimizer)
    tokens = batch * seq
    vocab = 30522
    arch = _Arch(d, heads, 4 * d, norm="post")
    ids = b.input("input_ids", tokens, dtype_bytes=4)
    seg = b.input("token_type_ids", tokens, dtype_bytes=4)
    x, tables = b.embedding("emb", (ids, seg), tokens, d,
                            {"word": vocab, "position": 512, "segment": 2})
    x = b.eltwise("emb.ln", (x,), tokens * d, 8.0, params=2 * d)
    x = b.dropout("emb.drop", x, tokens * d)
    for i in range(layers):
        x = _layer(b, f"l{i}", x, arch, batch, seq)
    masked = batch * math.ceil(0.15 * seq)
    m = b.eltwise("mlm.gather", (x,), masked * d, 1.0, saves="none")
    m = b.linear("mlm.dense", m, masked, d, d)
    m = b.eltwise("mlm.gelu", (m,), masked * d, 8.0, saves="input")
    m = b.eltwise("mlm.ln", (m,), masked * d, 8.0, params=2 * d)
    mlm = b.linear("mlm.decoder", m, masked, d, vocab, tied=tables["word"])
    cls = b.eltwise("nsp.cls", (x,), batch * d, 1.0, saves="none")
    pooled = b.linear("pooler", cls, batch, d, d)
    pooled = b.eltwise("pooler.tanh", (pooled,), batch * d, 4.0, saves="output")
    nsp = b.linear("nsp", pooled, batch, d, 2)
    return b.finish((mlm, nsp), page_size)


def bert_base(batch: int = 32, seq: int = 512, page_size: int = 4096,
              optimizer: str = "adam", layers: int = 12) -> Workload:
    """BERT-base (Devlin et al. 2019): 12 layers, d_model 768, 12 heads, d_ff 3072."""
    return _bert("bert-base", layers, 768, 12, batch, seq, page_size, optimizer)


def bert_large(batch: int = 32, seq: int = 512, page_size: int = 4096,
               optimizer: str = "adam", layers: int = 24) -> Workload:
    """BERT-large (Devlin et al. 2019): 24 layers, d_model 1024, 16 heads, d_ff 4096."""
    return _bert("bert-large", layers, 1024, 16, batch, seq, page_size, optimizer)


#: GPT-2 sizes (Radford et al. 2019, Table 2: layers and d_model; heads = d_model / 64
#: as in the released hparams). The paper's 117M/345M/762M/1542M predate a recount;
#: the released checkpoints hold 124M/355M/774M/1558M parameters.
GPT2_SIZES = {"small": (12, 768), "medium": (24, 1024), "large": (36, 1280),
              "xl": (48, 1600)}


def _gpt2(size: str, batch: int, seq: int, page_size: int, optimizer: str,
          layers: int | None) -> Workload:
    """GPT-2 (Radford et al. 2019, Sec. 2.3, and the released model code): token
    (50257) and position (1024) embeddings, embedding dropout, pre-LN GELU decoder
    layers with d_ff = 4 d, a final layer norm, and the LM head tied to the token
    embedding (no bias), with the loss over every position."""
    n_layer, d = GPT2_SIZES[size]
    n_layer = n_layer if layers is None else layers
    b = WorkloadBuilder(f"gpt2-{size}", batch, seq, optimizer=optimizer)
    tokens = batch * seq
    vocab = 50257
    arch = _Arch(d, d // 64, 4 * d)
    ids = b.input("input_ids", tokens, dtype_bytes=4)
    x, tables = b.embedding("emb", (ids,), tokens, d, {"wte": vocab, "wpe": 1024})
    x = b.dropout("emb.drop", x, tokens * d)
    for i in range(n_layer):
        x = _layer(b, f"l{i}", x, arch, batch, seq)
    x = b.eltwise("ln_f", (x,), tokens * d, 8.0, params=2 * d)
    logits = b.linear("lm_head", x, tokens, d, vocab, bias=False, tied=tables["wte"])
    return b.finish(logits, page_size)


def gpt2_small(batch: int = 8, seq: int = 1024, page_size: int = 4096,
               optimizer: str = "adam", layers: int | None = None) -> Workload:
    """GPT-2 small: 12 layers, d_model 768, 12 heads; 124M parameters."""
    return _gpt2("small", batch, seq, page_size, optimizer, layers)


def gpt2_medium(batch: int = 8, seq: int = 1024, page_size: int = 4096,
                optimizer: str = "adam", layers: int | None = None) -> Workload:
    """GPT-2 medium: 24 layers, d_model 1024, 16 heads; 355M parameters."""
    return _gpt2("medium", batch, seq, page_size, optimizer, layers)


def gpt2_large(batch: int = 8, seq: int = 1024, page_size: int = 4096,
               optimizer: str = "adam", layers: int | None = None) -> Workload:
    """GPT-2 large: 36 layers, d_model 1280, 20 heads; 774M parameters."""
    return _gpt2("large", batch, seq, page_size, optimizer, layers)


def gpt2_xl(batch: int = 8, seq: int = 1024, page_size: int = 4096,
            optimizer: str = "adam", layers: int | None = None) -> Workload:
    """GPT-2 XL: 48 layers, d_model 1600, 25 heads; 1558M parameters."""
    return _gpt2("xl", batch, seq, page_size, optimizer, layers)


def gpt3_block(batch: int = 4, seq: int = 2048, page_size: int = 4096,
               optimizer: str = "adam", layers: int = 1) -> Workload:
    """Layers of GPT-3 175B (Brown et al. 2020, Table 2.1: d_model 12288, 96 heads of
    128, d_ff = 4 d = 49152, context 2048), pre-LN with GELU and dropout as GPT-2, with
    no embeddings or head: the hidden state arrives as an input, as at one pipeline
    stage. One layer holds 1.81G parameters, so 29.0 GB of model state under mixed-
    precision Adam, and keeps 34 s b h + 5 a s^2 b = 2.87 GB of activations per sample;
    the default of one layer keeps the peak live bytes between 31.4 GB (batch 1) and
    54.3 GB (batch 8), 41.2 GB at the default batch 4: tens of GB, beyond a 32 GiB HBM
    (TPUv4) as a tiered-memory study needs. Two layers take 60.4 to 103.0 GB."""
    a = _Arch(12288, 96, 49152)
    b = WorkloadBuilder("gpt3-block", batch, seq, optimizer=optimizer)
    x = b.input("hidden", batch * seq * a.d_model)
    for i in range(layers):
        x = _layer(b, f"l{i}", x, a, batch, seq)
    return b.finish(x, page_size)


def t5_encoder(batch: int = 32, seq: int = 512, page_size: int = 4096,
               optimizer: str = "adam", layers: int = 12) -> Workload:
    """The encoder of T5-base (Raffel et al., JMLR 2020, Sec. 2.1 and 3.1.1): shared
    token embedding (vocabulary 32128 in the released checkpoints), dropout, 12 pre-LN
    layers with d_model 768, 12 heads of 64, ReLU feed-forward d_ff 3072, no biases,
    RMS layer norms with a gain only, a relative-position attention bias (32 buckets x
    heads, computed once and added in every layer), dropout 0.1 everywhere including
    after the ReLU, and a final layer norm. 109.6M parameters. Pre-training uses 512-token
    inputs; the loss here reads the encoder output (there is no decoder)."""
    a = _Arch(768, 12, 3072, d_kv=64, norm_params=1, bias=False, act="relu",
              ffn_dropout=True)
    b = WorkloadBuilder("t5-encoder", batch, seq, optimizer=optimizer)
    tokens = batch * seq
    ids = b.input("input_ids", tokens, dtype_bytes=4)
    x, _ = b.embedding("emb", (ids,), tokens, a.d_model, {"shared": 32128})
    x = b.dropout("emb.drop", x, tokens * a.d_model)
    pos_bias = b.eltwise("rel_bias", (), batch * a.heads * seq * seq, 1.0,
                         params=32 * a.heads, saves="none")
    for i in range(layers):
        x = _layer(b, f"l{i}", x, a, batch, seq, pos_bias)
    x = b.eltwise("ln_f", (x,), tokens * a.d_model, 8.0, params=a.d_model)
    x = b.dropout("final_drop", x, tokens * a.d_model)
    return b.finish(x, page_size)


# -- convolutional networks ------------------------------------------------------------


def _conv_bn(b: WorkloadBuilder, name: str, x: int, h: int, w: int, c: int, k: int, n: int,
             stride: int = 1, relu: bool = True) -> tuple[int, int, int]:
    """k x k convolution with 'same' padding (k // 2), batch norm, optional ReLU."""
    y, ho, wo = b.conv(name, x, h, w, c, k, k, n, stride, k // 2)
    elems = b.batch * ho * wo * n
    y = b.eltwise(f"{name}.bn", (y,), elems, 5.0, params=2 * n)
    if relu:
        y = b.eltwise(f"{name}.relu", (y,), elems, 1.0, saves="output")
    return y, ho, wo


def _stem(b: WorkloadBuilder) -> tuple[int, int, int]:
    """ResNet's conv1 (7x7/2, 64, pad 3) + BN + ReLU and 3x3/2 max pooling (pad 1):
    224 -> 112 -> 56."""
    img = b.input("image", b.batch * 224 * 224 * 3)
    x, h, w = _conv_bn(b, "conv1", img, 224, 224, 3, 7, 64, 2)
    ho, wo = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    out = b.batch * ho * wo * 64
    x = b.eltwise("pool1", (x,), out * 9, 1.0, out_elems=out, saves="input")
    return x, ho, wo


def _head(b: WorkloadBuilder, x: int, h: int, w: int, c: int, classes: int = 1000) -> int:
    """Global average pooling and the fully connected classifier."""
    x = b.eltwise("avgpool", (x,), b.batch * h * w * c, 1.0, out_elems=b.batch * c,
                  saves="none")
    return b.linear("fc", x, b.batch, c, classes)


def _resnet(name: str, blocks: tuple[int, ...], bottleneck: bool, batch: int,
            page_size: int, optimizer: str) -> Workload:
    """ResNet (He et al., CVPR 2016, Table 1 and Sec. 3.3/4.1): the stem, four stages of
    basic (3x3, 3x3) or bottleneck (1x1, 3x3, 1x1 x4) blocks at widths 64..512, each
    conv followed by batch norm; downsampling by stride 2 in the first block of stages
    2-4, on its first convolution (the paper and its Caffe models, and SCALE-Sim's
    ResNet-50 topology; torchvision's 'v1.5' moves it to the 3x3), with a 1x1
    projection shortcut (option B) where the shape changes; global average pooling and a
    1000-way fully connected layer."""
    b = WorkloadBuilder(name, batch, optimizer=optimizer)
    x, h, w = _stem(b)
    c = 64
    for si, (nblocks, width) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True)):
        out_c = width * 4 if bottleneck else width
        for bi in range(nblocks):
            p = f"s{si + 1}.b{bi}"
            stride = 2 if bi == 0 and si > 0 else 1
            if bottleneck:
                y, ho, wo = _conv_bn(b, f"{p}.conv1", x, h, w, c, 1, width, stride)
                y, ho, wo = _conv_bn(b, f"{p}.conv2", y, ho, wo, width, 3, width)
                y, ho, wo = _conv_bn(b, f"{p}.conv3", y, ho, wo, width, 1, out_c,
                                     relu=False)
            else:
                y, ho, wo = _conv_bn(b, f"{p}.conv1", x, h, w, c, 3, width, stride)
                y, ho, wo = _conv_bn(b, f"{p}.conv2", y, ho, wo, width, 3, width,
                                     relu=False)
            if stride != 1 or c != out_c:
                x, _, _ = _conv_bn(b, f"{p}.down", x, h, w, c, 1, out_c, stride,
                                   relu=False)
            elems = batch * ho * wo * out_c
            y = b.eltwise(f"{p}.add", (x, y), elems, 1.0, saves="none")
            x = b.eltwise(f"{p}.relu", (y,), elems, 1.0, saves="output")
            h, w, c = ho, wo, out_c
    return b.finish(_head(b, x, h, w, c), page_size)


def resnet18(batch: int = 32, page_size: int = 4096, optimizer: str = "adam") -> Workload:
    """ResNet-18: basic blocks [2, 2, 2, 2]; 11.7M parameters, 1.8 GMACs per image."""
    return _resnet("resnet18", (2, 2, 2, 2), False, batch, page_size, optimizer)


def resnet50(batch: int = 32, page_size: int = 4096, optimizer: str = "adam") -> Workload:
    """ResNet-50: bottleneck blocks [3, 4, 6, 3]; 25.6M parameters, 3.8 GMACs per image
    (He et al. count multiply-adds as 'FLOPs')."""
    return _resnet("resnet50", (3, 4, 6, 3), True, batch, page_size, optimizer)


def vgg16(batch: int = 32, page_size: int = 4096, optimizer: str = "adam") -> Workload:
    """VGG-16, configuration D of Simonyan & Zisserman (ICLR 2015, Table 1 and Sec. 3.1):
    13 3x3 convolutions (stride 1, pad 1, with biases) each followed by ReLU, 2x2/2 max
    pooling after each of the five stages, fully connected 25088 -> 4096 -> 4096 -> 1000
    with ReLU and dropout (0.5) after the first two. No batch norm. 138.4M parameters,
    15.5 GMACs per image."""
    b = WorkloadBuilder("vgg16", batch, optimizer=optimizer)
    x = b.input("image", batch * 224 * 224 * 3)
    h = w = 224
    c = 3
    for si, (n_conv, width) in enumerate(((2, 64), (2, 128), (3, 256), (3, 512), (3, 512))):
        for ci in range(n_conv):
            p = f"conv{si + 1}_{ci + 1}"
            x, h, w = b.conv(p, x, h, w, c, 3, 3, width, 1, 1, bias=True)
            x = b.eltwise(f"{p}.relu", (x,), batch * h * w * width, 1.0, saves="output")
            c = width
        h, w = h // 2, w // 2
        out = batch * h * w * c
        x = b.eltwise(f"pool{si + 1}", (x,), out * 4, 1.0, out_elems=out, saves="input")
    d_in = h * w * c
    for i, d_out in ((6, 4096), (7, 4096)):
        x = b.linear(f"fc{i}", x, batch, d_in, d_out)
        x = b.eltwise(f"fc{i}.relu", (x,), batch * d_out, 1.0, saves="output")
        x = b.dropout(f"fc{i}.drop", x, batch * d_out)
        d_in = d_out
    x = b.linear("fc8", x, batch, d_in, 1000)
    return b.finish(x, page_size)


# -- registry --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What ``build`` and the CLI need to know of a zoo model: its defaults and limits.
    ``seq``/``layers`` are None where the model has no such parameter."""

    default_batch: int
    default_seq: int | None = None
    max_seq: int | None = None
    default_layers: int | None = None
    note: str = ""


#: Default batch and sequence length per model. CNNs: 32 images of 224 x 224 (a common
#: per-accelerator batch). BERT: seq 512, batch 32, TM-Training's BERT-large setting.
#: GPT-2: its 1024-token context at batch 8 per device (the paper trains at 512 over many
#: devices). GPT-3 block: one layer at batch 4 (see ``gpt3_block``). T5: 512-token inputs
#: at batch 32 (the paper trains 128 x 512 tokens per batch over a pod).
INFO: dict[str, ModelInfo] = {
    "resnet18": ModelInfo(32, note="He et al. 2016"),
    "resnet50": ModelInfo(32, note="He et al. 2016"),
    "vgg16": ModelInfo(32, note="Simonyan & Zisserman 2015, config D"),
    "bert-base": ModelInfo(32, 512, 512, 12, "Devlin et al. 2019"),
    "bert-large": ModelInfo(32, 512, 512, 24, "Devlin et al. 2019; TM-Training's setup"),
    "gpt2-small": ModelInfo(8, 1024, 1024, 12, "Radford et al. 2019"),
    "gpt2-medium": ModelInfo(8, 1024, 1024, 24, "Radford et al. 2019"),
    "gpt2-large": ModelInfo(8, 1024, 1024, 36, "Radford et al. 2019"),
    "gpt2-xl": ModelInfo(8, 1024, 1024, 48, "Radford et al. 2019"),
    "gpt3-block": ModelInfo(4, 2048, 2048, 1, "Brown et al. 2020, GPT-3 175B layers"),
    "t5-encoder": ModelInfo(32, 512, None, 12, "Raffel et al. 2020, T5-base encoder"),
}

MODELS: dict[str, Callable[..., Workload]] = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "vgg16": vgg16,
    "bert-base": bert_base,
    "bert-large": bert_large,
    "gpt2-small": gpt2_small,
    "gpt2-medium": gpt2_medium,
    "gpt2-large": gpt2_large,
    "gpt2-xl": gpt2_xl,
    "gpt3-block": gpt3_block,
    "t5-encoder": t5_encoder,
}


def build(name: str, *, batch: int | None = None, seq: int | None = None,
          layers: int | None = None, page_size: int = 4096,
          optimizer: str = "adam") -> Workload:
    """Build zoo model ``name``; ``batch``/``seq``/``layers`` left as None take the model's
    defaults (``INFO``). Bad input raises ``ConfigError``, one line naming the field, the
    value and what is allowed."""
    check(name, batch, seq, layers)
    info = INFO[name]
    batch = info.default_batch if batch is None else batch
    check_arguments(batch, page_size, optimizer)
    kw: dict[str, object] = {"batch": batch, "page_size": page_size, "optimizer": optimizer}
    if info.default_seq is not None:
        kw["seq"] = info.default_seq if seq is None else seq
    if info.default_layers is not None:
        kw["layers"] = info.default_layers if layers is None else layers
    return MODELS[name](**kw)


def check(name: str, batch: int | None, seq: int | None, layers: int | None) -> None:
    """Zoo model ``name`` and its limits on the shape: ``batch``, ``seq`` and ``layers``
    positive where given, a sequence length only for a model that has one and within its
    position table, a depth only for a model built of repeated layers."""
    if name not in MODELS:
        raise ConfigError("model", name, f"one of {', '.join(MODELS)}")
    info = INFO[name]
    for field, v in (("batch", batch), ("seq", seq), ("layers", layers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ConfigError(field, v, "a positive integer, or left out for the model's own")
    if info.default_seq is None and seq is not None:
        raise ConfigError("seq", seq, f"leave it out: {name} has no sequence length")
    if info.max_seq is not None and seq is not None and seq > info.max_seq:
        raise ConfigError("seq", seq, f"1..{info.max_seq} for {name} (its position "
                          "table), or left out for its own")
    if info.default_layers is None and layers is not None:
        raise ConfigError("layers", layers, f"leave it out: {name} has a fixed depth")
