"""Workload transforms (``[workload]`` precision, recompute, recompute_every): each
changes what it should and nothing else, for every source (they are the builder's)."""

from __future__ import annotations

from typing import Any

import pytest

import tmhw
from tmhw.sim.errors import ConfigError
from tmhw.workload import sources
from tmhw.workload.builder import Transforms
from tmhw.workload.footprint import footprint, korthikanti_layer_bytes
from tmhw.workload.graph import Kind, Phase, Workload

SEQ, BATCH, LAYERS = 512, 4, 4


def gpt2(**t: Any) -> Workload:
    return sources.build("gpt2-small", batch=BATCH, seq=SEQ, layers=LAYERS,
                         transforms=Transforms(**t))


def live_activations_at_loss(wl: Workload) -> dict[str, int]:
    """Activation bytes live when the loss runs (what the backward still needs), per
    layer (``l<i>`` of the tensor's layer name)."""
    loss = next(op.index for op in wl.ops if op.name.startswith("loss"))
    r = wl.live_ranges()
    out: dict[str, int] = {}
    for t in wl.tensors:
        if t.kind == Kind.ACTIVATION and r[t.id, 0] <= loss < r[t.id, 1]:
            head = t.layer.split(".", 1)[0]
            out[head] = out.get(head, 0) + t.nbytes
    return out


def test_fp32_doubles_every_16_bit_activation_and_keeps_the_optimizer_state() -> None:
    """bf16 (mixed precision: Micikevicius et al. 2018) against fp32: activations and
    weights take half the bytes, the Adam moments (fp32 in both) the same, and only
    mixed precision keeps an fp32 master copy; 16 B a parameter either way."""
    bf, fp = gpt2(precision="bf16"), gpt2(precision="fp32")
    for a, b in zip(bf.tensors, fp.tensors, strict=False):
        if a.kind == Kind.ACTIVATION and a.dtype_bytes == 2:
            assert b.nbytes == 2 * a.nbytes, a.name
    fb, ff = footprint(bf), footprint(fp)
    assert ff.optimizer_state == fb.optimizer_state
    assert fb.master == 4 * fb.params and ff.master == 0
    assert ff.weights == 2 * fb.weights
    assert fb.bytes_per_param == ff.bytes_per_param == 16.0
    # the ops and their work are the same
    assert [op.name for op in bf.ops if op.phase != Phase.OPTIMIZER] == \
        [op.name for op in fp.ops if op.phase != Phase.OPTIMIZER]


def test_without_recomputation_a_gpt_layer_keeps_korthikantis_bytes() -> None:
    """Korthikanti et al. (MLSys 2023, Sec. 4.1, Eq. 1): s b h (34 + 5 a s / h) bytes a
    layer with 16-bit activations and dropout; each layer's live activations at the loss
    within 2% (h 768, 12 heads)."""
    per = live_activations_at_loss(gpt2())
    want = korthikanti_layer_bytes(SEQ, BATCH, 768, 12)
    for i in range(LAYERS - 1):     # the last layer's output is the final norm's input
        assert per[f"l{i}"] == pytest.approx(want, rel=0.02)


def test_selective_recomputation_keeps_34_s_b_h_a_layer() -> None:
    """Korthikanti et al., Sec. 5 (Table 2, selective): recomputing the attention's
    scores, softmax and dropout leaves 34 s b h bytes a layer."""
    per = live_activations_at_loss(gpt2(recompute="selective"))
    for i in range(LAYERS - 1):
        assert per[f"l{i}"] == pytest.approx(34 * SEQ * BATCH * 768, rel=0.02)


def test_layer_recomputation_keeps_each_layers_input_and_recomputes_its_forward() -> None:
    """Full recomputation (Korthikanti et al., Table 2: 2 s b h a layer, its input):
    only each layer's output, the next layer's input, stays live; the backward runs the
    layers' forward once more, so it does the forward's MACs of the layers again."""
    base, re = gpt2(), gpt2(recompute="layer")
    per = live_activations_at_loss(re)
    for i in range(LAYERS - 1):
        assert per[f"l{i}"] == pytest.approx(2 * SEQ * BATCH * 768, rel=0.05)
    fb, fr = footprint(base), footprint(re)
    layer_macs = sum(op.macs for op in base.ops if op.phase == Phase.FORWARD
                     and op.layer[:1] == "l" and op.layer.split(".")[0][1:].isdigit())
    assert fr.forward_macs == fb.forward_macs
    assert fr.backward_macs - fb.backward_macs == layer_macs
    assert fr.peak_live < fb.peak_live
    recomputed = [op for op in re.ops if op.name.endswith(".recompute")]
    assert recomputed and all(op.phase == Phase.BACKWARD for op in recomputed)


def test_every_k_keeps_one_input_in_k_layers() -> None:
    k2 = live_activations_at_loss(gpt2(recompute="every-k", recompute_every=2))
    # layers 0-1 and 2-3 are groups: only their last layer's output stays
    assert k2.get("l0", 0) == 0 and k2["l1"] == pytest.approx(2 * SEQ * BATCH * 768,
                                                               rel=0.05)


def test_with_room_for_everything_recomputation_only_adds_compute_time() -> None:
    """At HBM ratio 1 nothing moves either way; recomputing costs time."""
    def run(r: str) -> dict[str, Any]:
        return tmhw.simulate("quick", ["workload.layers=2", "policy.hbm_ratio=1",
                                       f"workload.recompute={r}",
                                       "run.iterations=2"]).to_dict()["steady"]
    none, layer = run("none"), run("layer")
    assert none["traffic_bytes"]["inter_tier"] == layer["traffic_bytes"]["inter_tier"] == 0
    assert layer["iteration_time_ps"] > none["iteration_time_ps"]


@pytest.mark.parametrize("field, value", [("precision", "int4"), ("recompute", "all"),
                                          ("optimizer", "lamb"),
                                          ("recompute_every", 0)])
def test_an_unknown_transform_names_its_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^workload.{field}"):
        tmhw.load_config("quick", [f"workload.{field}={value!r}".replace("'", '"')])


def test_micro_batches_keep_the_model_state_and_divide_the_activations() -> None:
    """Gradient accumulation over 4 micro-batches: parameters and optimizer state as
    they were, every activation a quarter, the same MACs in all (four passes of a
    quarter), the weight gradients accumulated, one optimizer step."""
    one = sources.build("gpt2-small", batch=8, seq=256, layers=2)
    four = sources.build("gpt2-small", batch=8, seq=256, layers=2,
                         transforms=Transforms(micro_batches=4))
    f1, f4 = footprint(one), footprint(four)
    assert four.batch == one.batch == 8 and f4.params == f1.params
    assert f4.optimizer_state == f1.optimizer_state and f4.master == f1.master
    assert f4.activations_all * 4 == f1.activations_all
    assert f4.forward_macs + f4.backward_macs == f1.forward_macs + f1.backward_macs
    opt = [op for op in four.ops if op.phase == Phase.OPTIMIZER]
    assert len(opt) == len([op for op in one.ops if op.phase == Phase.OPTIMIZER])
    # a later pass's weight-gradient op reads what the earlier passes accumulated
    later = [op for op in four.ops if op.name.endswith("wgrad@3")]
    assert later and all(set(op.writes) <= set(op.reads) for op in later)
    with pytest.raises(ConfigError, match="^workload.micro_batches"):
        tmhw.load_config("quick", ["workload.micro_batches=3"])      # batch 8


def _quick_run(*sets: str) -> dict:
    import tmhw
    return tmhw.simulate("quick", ["workload.layers=2", "policy.name=hbm-only",
                                   "run.iterations=2", *sets]).to_dict()


def test_precision_sets_the_npus_mac_rate_and_energy_and_nothing_stored() -> None:
    """fp8 GEMMs at twice bf16's MACs per cycle (H100: 1,979 against 989 dense TFLOP/s)
    and half its energy per MAC, the footprint bf16's; fp32 MACs in three bf16 passes
    (XLA's bf16_3x) and four-byte operands. Every MAC is counted once whatever the
    precision."""
    runs = {p: _quick_run(f"workload.precision={p}") for p in ("fp8", "bf16", "fp32")}
    npu = {p: r["run_total"]["system"]["npu"] for p, r in runs.items()}
    assert npu["fp8"]["macs"] == npu["bf16"]["macs"] == npu["fp32"]["macs"]
    assert runs["fp8"]["workload"]["pages"] == runs["bf16"]["workload"]["pages"]
    busy = {p: r["steady"]["npu_busy_ps"] for p, r in runs.items()}
    assert busy["fp8"] < busy["bf16"] < busy["fp32"]
    e = {p: r["run_total"]["system"]["npu"]["energy_pj"] for p, r in runs.items()}
    mac_pj = {p: e[p].get("mac", 0) + e[p].get("mac_fp8", 0) for p in e}
    assert mac_pj["bf16"] > 0
    assert mac_pj["fp8"] == pytest.approx(0.5 * mac_pj["bf16"], rel=1e-9)
    assert mac_pj["fp32"] == pytest.approx(3 * mac_pj["bf16"], rel=1e-9)
    for p in runs:
        assert npu[p]["utilization"] <= 1.0
