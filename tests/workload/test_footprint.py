"""Footprints against published figures: bytes of model state per parameter under mixed
precision, and Korthikanti et al.'s activation count per transformer layer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.workload.footprint import footprint, korthikanti_layer_bytes
from tmhw.workload.graph import Workload
from tmhw.workload.zoo import build, transformer_stack


@pytest.mark.parametrize("optimizer,per_param", [("adam", 16), ("adamw", 16),
                                                  ("sgd-momentum", 12), ("sgd", 8)])
def test_mixed_precision_model_state_is_16_bytes_per_param_for_adam_12_for_sgd(
        optimizer: str, per_param: int) -> None:
    """bf16 weight 2 + bf16 gradient 2 + fp32 master 4 + fp32 state (Adam's and AdamW's
    m, v: 8; momentum: 4; plain SGD: none): ZeRO (Rajbhandari et al. 2020, Sec. 3.1)."""
    for name in ("resnet50", "bert-base", "gpt2-small", "t5-encoder"):
        f = footprint(build(name, batch=1, optimizer=optimizer,
                            seq=None if name == "resnet50" else 16))
        assert f.model_state == per_param * f.params
        assert (f.weights, f.weight_grads, f.master) == (2 * f.params, 2 * f.params,
                                                          4 * f.params)


def test_footprint_fields_add_up(model: Workload) -> None:
    f = footprint(model)
    assert f.model_state == f.weights + f.master + f.optimizer_state + f.weight_grads
    assert f.activations_saved <= f.activations_all
    assert f.weights + f.master + f.optimizer_state <= f.peak_live <= f.total
    assert f.total == f.pages * f.page_size


def _saved_per_layer(name: str, seq: int, batch: int) -> int:
    one = footprint(build(name, batch=batch, seq=seq, layers=1))
    two = footprint(build(name, batch=batch, seq=seq, layers=2))
    return two.activations_saved - one.activations_saved


@pytest.mark.parametrize("name,h,a", [("bert-large", 1024, 16), ("gpt2-small", 768, 12),
                                      ("gpt2-xl", 1600, 25), ("gpt3-block", 12288, 96)])
def test_a_transformer_layer_keeps_34sbh_plus_5as2b_bytes_for_backward(
        name: str, h: int, a: int) -> None:
    """Korthikanti et al. 2023, Eq. 1 (16-bit activations, dropout, no recomputation):
    LN inputs 4sbh, QKV input 2sbh, Q K V 6sbh, softmax output 2as^2b, its dropout mask
    as^2b and output 2as^2b, projection input 2sbh, FFN input 2sbh, GELU input and
    output 16sbh, two dropout masks 2sbh."""
    s, b = 256, 2
    assert _saved_per_layer(name, s, b) == korthikanti_layer_bytes(s, b, h, a)


def test_t5_layer_keeps_38sbh_plus_5as2b_bytes() -> None:
    """T5's FFN is ReLU with dropout after it (Raffel et al. 2020): ReLU keeps its 8sbh
    output in place of GELU's input, and the extra dropout keeps a 4sbh mask and its
    8sbh output, so 34 - 8 + 4 + 8 = 38 sbh where Korthikanti's GPT layer has 34."""
    s, b, h, a = 128, 2, 768, 12
    assert _saved_per_layer("t5-encoder", s, b) == 38 * s * b * h + 5 * a * s * s * b


@settings(max_examples=25, deadline=None)
@given(layers=st.integers(1, 3), heads=st.integers(1, 8), dh=st.integers(1, 16),
       batch=st.integers(1, 4), seq=st.integers(1, 64), dropout=st.booleans())
def test_kept_activations_follow_korthikanti_for_any_shape(
        layers: int, heads: int, dh: int, batch: int, seq: int, dropout: bool) -> None:
    """Without dropout the masks (2sbh + as^2b) and the dropped probabilities (2as^2b)
    go: 32sbh + 2as^2b. The stack's input arrives as an input tensor (2sbh less in the
    first layer) and the last layer's output is read only by the loss."""
    h = heads * dh
    wl = transformer_stack("t", layers=layers, d_model=h, heads=heads, d_ff=4 * h,
                           batch=batch, seq=seq, dropout=dropout)
    sbh, as2b = seq * batch * h, heads * seq * seq * batch
    per_layer = 34 * sbh + 5 * as2b if dropout else 32 * sbh + 2 * as2b
    assert footprint(wl).activations_saved == layers * per_layer - 2 * sbh


def test_peak_live_grows_with_batch_and_exceeds_saved_activations_plus_state() -> None:
    peaks = []
    for batch in (1, 2, 4):
        f = footprint(build("bert-base", batch=batch, seq=128))
        assert f.peak_live >= f.activations_saved + f.weights + f.master + f.optimizer_state
        peaks.append(f.peak_live)
    assert peaks == sorted(peaks) and peaks[0] < peaks[-1]


@pytest.mark.parametrize("batch", [1, 8])
def test_gpt3_block_footprint_is_tens_of_gigabytes_at_batch_1_to_8(batch: int) -> None:
    """The documented choice of one layer by default (zoo.gpt3_block)."""
    f = footprint(build("gpt3-block", batch=batch))
    assert 10e9 < f.peak_live < 100e9


def test_adafactor_keeps_row_and_column_sums_of_each_matrix() -> None:
    """Adafactor without first moment (Shazeer & Stern 2018, Sec. 3 and Alg. 4; Hugging
    Face's default ``beta1=None``) keeps r + c fp32 values per r x c matrix and the full
    second moment of a vector; GPT-2 small's counted from its published shapes (d 768,
    vocabulary 50,257, context 1,024, 12 layers, LM head tied)."""
    wl = build("gpt2-small", batch=1, seq=16, optimizer="adafactor")
    f = footprint(wl)
    d, v, ctx, L = 768, 50257, 1024, 12
    mats = [(d, 3 * d), (d, d), (d, 4 * d), (4 * d, d)]           # one layer's linears
    biases = 3 * d + d + 4 * d + d
    norms = 2 * 2 * d
    layer = 4 * sum(r + c for r, c in mats) + 4 * (biases + norms)
    emb = 4 * (v + d) + 4 * (ctx + d)                              # wte, wpe (tables)
    final_ln = 4 * 2 * d
    assert f.optimizer_state == L * layer + emb + final_ln
    assert f.optimizer_state < 0.01 * 8 * f.params           # Adam's m and v: 8 B each
