"""The zoo's models: structure of the iteration, parameter counts and MACs against the
papers, build time."""

from __future__ import annotations

import math

import pytest

from tmhw.workload.graph import Kind, Phase, Workload
from tmhw.workload.zoo import INFO, MODELS, build

#: Published parameter counts. CNNs: torchvision's model cards for the paper
#: architectures (ResNet-18 11,689,512; ResNet-50 25,557,032; VGG-16 138,357,544).
#: BERT: Devlin et al. 2019 (110M, 340M). GPT-2: the released checkpoints (124M, 355M,
#: 774M; Radford et al. 2019's Table 2 says 117M/345M/762M before a recount) and the
#: paper's 1542M for XL (the "1.5B" of the release notes is that figure rounded).
#: GPT-3 layer: 12 d^2 + 13 d (Brown et al. 2020, d = 12288). T5-base encoder: half of
#: T5-base's 220M (Raffel et al. 2020) less the decoder's cross-attention.
PUBLISHED_PARAMS = {
    "resnet18": 11.7e6, "resnet50": 25.6e6, "vgg16": 138e6,
    "bert-base": 110e6, "bert-large": 340e6,
    "gpt2-small": 124e6, "gpt2-medium": 355e6, "gpt2-large": 774e6, "gpt2-xl": 1542e6,
    "gpt3-block": 12 * 12288**2 + 13 * 12288, "t5-encoder": 110e6,
}

#: Forward multiply-accumulates per image: He et al. 2016 (Table 1: ResNet-18 1.8e9,
#: ResNet-50 3.8e9 "FLOPs", i.e. multiply-adds; Sec. 4.1: VGG-16 15.3e9).
PUBLISHED_MACS = {"resnet18": 1.8e9, "resnet50": 3.8e9, "vgg16": 15.3e9}


def test_every_model_passes_the_workload_invariants(model: Workload) -> None:
    model.check()
    assert [op.index for op in model.ops] == list(range(len(model.ops)))


def test_every_non_persistent_tensor_is_written_before_it_is_read(model: Workload) -> None:
    written: set[int] = set()
    for op in model.ops:
        for t in op.reads:
            kind = model.tensors[t].kind
            if not kind.persistent and kind != Kind.INPUT:
                assert t in written, f"{op.name} reads {model.tensors[t].name} unwritten"
        written.update(op.writes)


def test_every_tensor_is_used_and_every_write_is_consumed(model: Workload) -> None:
    for t, uses in zip(model.tensors, model.uses(), strict=True):
        assert uses, f"{t.name} is never accessed"
        if not t.kind.persistent:
            assert not uses[-1][1], f"{t.name} is written last and never read"


def test_phases_run_forward_then_backward_then_optimizer(model: Workload) -> None:
    order = {Phase.FORWARD: 0, Phase.BACKWARD: 1, Phase.OPTIMIZER: 2}
    ranks = [order[op.phase] for op in model.ops]
    assert ranks == sorted(ranks)


def test_backward_has_a_dgrad_and_a_wgrad_per_weighted_layer(model: Workload) -> None:
    """Every forward GEMM op with a weight has a weight-gradient GEMM, and an
    input-gradient GEMM unless its input is the mini-batch (nothing to propagate to)."""
    names = {op.name for op in model.ops}
    weighted = 0
    for op in model.ops:
        if op.phase != Phase.FORWARD or not op.gemms:
            continue
        kinds = [model.tensors[t].kind for t in op.reads]
        if Kind.WEIGHT not in kinds:
            continue  # attention's weight-free products: checked below
        weighted += 1
        assert f"{op.layer}.wgrad" in names
        if kinds[0] != Kind.INPUT:
            assert f"{op.layer}.dgrad" in names
    assert weighted > 0


def test_backward_gemms_each_do_the_forward_macs(model: Workload) -> None:
    """dx = dy W^T and dW = x^T dy each multiply-accumulate as often as y = x W, for
    linear layers, convolutions of any stride, and attention's products."""
    by_name = {op.name: op for op in model.ops}
    for op in model.ops:
        if op.phase != Phase.FORWARD or not op.gemms:
            continue
        bwd = [by_name[f"{op.layer}.{t}"] for t in ("dgrad", "wgrad", "da", "db")
               if f"{op.layer}.{t}" in by_name]
        assert bwd, op.name
        for b in bwd:
            assert b.macs == op.macs, (op.name, b.name)


def test_backward_macs_are_twice_the_forward_macs_but_the_first_layers_dgrad(
        model: Workload) -> None:
    fwd = sum(op.macs for op in model.ops if op.phase == Phase.FORWARD)
    bwd = sum(op.macs for op in model.ops if op.phase == Phase.BACKWARD)
    skipped = sum(op.macs for op in model.ops if op.phase == Phase.FORWARD and op.gemms
                  and model.tensors[op.reads[0]].kind == Kind.INPUT)
    assert bwd == 2 * fwd - skipped


def test_optimizer_updates_every_parameter_once(model: Workload) -> None:
    """Every weight is written by the optimizer; its fp32 master copy and state (whole,
    or in shards) are each updated by exactly one op, and the update's element count is
    the parameter count."""
    opt = [op for op in model.ops if op.phase == Phase.OPTIMIZER]
    weights = {t.id for t in model.tensors if t.kind == Kind.WEIGHT}
    assert {w for op in opt for w in op.writes if w in weights} == weights
    for kind in (Kind.MASTER, Kind.OPT_STATE):
        ids = sorted(t.id for t in model.tensors if t.kind == kind)
        assert sorted(w for op in opt for w in op.writes
                      if model.tensors[w].kind == kind) == ids
    assert sum(op.vector_elems for op in opt) == model.params


@pytest.mark.parametrize("name", list(MODELS))
def test_parameter_count_matches_the_published_figure(name: str) -> None:
    wl = build(name, batch=1, seq=8 if INFO[name].default_seq else None)
    assert wl.params == pytest.approx(PUBLISHED_PARAMS[name], rel=0.03)
    assert wl.params == sum(t.nbytes for t in wl.tensors if t.kind == Kind.WEIGHT) // 2


def test_exact_parameter_counts_of_the_reference_implementations() -> None:
    """torchvision and Hugging Face count these exactly (BertForPreTraining with both
    heads; GPT2LMHeadModel with the tied head)."""
    exact = {"resnet18": 11_689_512, "resnet50": 25_557_032, "vgg16": 138_357_544,
             "bert-base": 110_106_428, "bert-large": 336_226_108,
             "gpt2-small": 124_439_808, "gpt2-medium": 354_823_168,
             "gpt2-large": 774_030_080, "gpt2-xl": 1_557_611_200}
    for name, n in exact.items():
        assert build(name, batch=1).params == n, name


@pytest.mark.parametrize("name", list(PUBLISHED_MACS))
def test_forward_macs_per_image_match_the_paper(name: str) -> None:
    wl = build(name, batch=1)
    fwd = sum(op.macs for op in wl.ops if op.phase == Phase.FORWARD)
    assert fwd == pytest.approx(PUBLISHED_MACS[name], rel=0.03)


def test_transformer_layer_macs_are_24_s_h2_plus_4_s2_h_per_sample() -> None:
    """Per layer and sample: QKV 3 s h^2, projection s h^2, FFN 8 s h^2 (d_ff = 4h),
    scores and context 2 s^2 h (Narayanan et al., SC'21, Sec. 5.1, in MACs)."""
    s, h = 128, 768
    one = build("gpt2-small", batch=1, seq=s, layers=1)
    two = build("gpt2-small", batch=1, seq=s, layers=2)
    fwd = [sum(o.macs for o in w.ops if o.phase == Phase.FORWARD) for w in (one, two)]
    assert fwd[1] - fwd[0] == 12 * s * h * h + 2 * s * s * h


def test_gemm_work_scales_with_batch() -> None:
    a, b = build("resnet18", batch=1), build("resnet18", batch=3)
    assert b.total_macs() == 3 * a.total_macs()


def test_bert_masked_lm_head_reads_ceil_15_percent_of_positions() -> None:
    wl = build("bert-base", batch=2, seq=128, layers=1)
    dec = next(op for op in wl.ops if op.name == "mlm.decoder.fwd")
    assert dec.gemms[0].m == 2 * math.ceil(0.15 * 128) and dec.gemms[0].n == 30522


def test_gpt2_lm_head_is_tied_to_the_token_embedding() -> None:
    wl = build("gpt2-small", batch=1, seq=16, layers=1)
    head = next(op for op in wl.ops if op.name == "lm_head.fwd")
    wte = next(t for t in wl.tensors if t.name == "emb.wte.w")
    assert wte.id in head.reads
    # the head's weight gradient accumulates into the embedding's: written twice,
    # the second write reads the first
    writers = [op for op in wl.ops if op.phase == Phase.BACKWARD
               and any(wl.tensors[t].name == "emb.wte.wgrad" for t in op.writes)]
    assert [op.name for op in writers] == ["lm_head.wgrad", "emb.wgrad"]
    dw = next(t for t in wl.tensors if t.name == "emb.wte.wgrad").id
    assert dw in writers[1].reads and dw not in writers[0].reads
