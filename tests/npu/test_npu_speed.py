"""The ResNet-50 training GEMMs the speed figures time: how fast their cycles are
computed is a figure of ``tmhw bench --case npu-resnet50`` (``npu.bench.bench_resnet50``),
not an assertion here."""

from __future__ import annotations

from npu.bench import resnet50_training_gemms


def test_resnet50_has_162_training_gemms_and_3_86_gmac_forward_per_image() -> None:
    gemms = resnet50_training_gemms(batch=1)
    assert len(gemms) == 54 * 3
    fwd = sum(m * n * k for name, m, n, k in gemms if name.endswith(".fwd"))
    assert fwd == 3_857_973_248  # He et al. 2016 quote ~3.8 GFLOPs (multiply-adds)
    # the three GEMMs of a layer have the same MAC count when the stride is 1
    by_layer: dict[str, list[int]] = {}
    for name, m, n, k in gemms:
        by_layer.setdefault(name.split(".")[0], []).append(m * n * k)
    assert len(set(by_layer["conv2_2b"])) == 1
