"""How fast the NPU timing model is: the cycles of every GEMM of one ResNet-50 training
iteration (for ``tmhw bench``).

ResNet-50 (He et al., CVPR 2016, Table 1; downsampling on the first 1 x 1 of stages 3-5 as
in the paper) at 224 x 224: 53 convolutions and the 1000-way FC layer, 3.86 GMAC per image
forward. Each layer gives three GEMMs in training: forward (M = B * output pixels,
N = filters, K = R * S * C), input gradient (M = B * input pixels, N = C, K = R * S * F) and
weight gradient (M = R * S * C, N = F, K = B * output pixels).
"""

from __future__ import annotations

import time
from typing import Any

from npu.config import NpuConfig
from npu.core import ComputeTask, Gemm, plan_task
from npu.dataflow import CONVENTIONS, DATAFLOWS, conv_to_gemm, gemm_cycles


def resnet50_convs() -> list[tuple[str, int, int, int, int, int]]:
    """(name, input size, filter size, channels, filters, stride) of every layer, padded so
    the output sizes are ResNet-50's (112, 56, 28, 14, 7)."""
    out = [("conv1", 224, 7, 3, 64, 2)]
    cin, size = 64, 56
    for stage, (blocks, width, cout) in enumerate(
            ((3, 64, 256), (4, 128, 512), (6, 256, 1024), (3, 512, 2048)), start=2):
        for b in range(1, blocks + 1):
            stride = 2 if b == 1 and stage > 2 else 1
            out.append((f"conv{stage}_{b}a", size, 1, cin, width, stride))
            out.append((f"conv{stage}_{b}b", size // stride, 3, width, width, 1))
            out.append((f"conv{stage}_{b}c", size // stride, 1, width, cout, 1))
            if b == 1:
                out.append((f"conv{stage}_{b}s", size, 1, cin, cout, stride))
            cin, size = cout, size // stride
    out.append(("fc", 1, 1, 2048, 1000, 1))
    return out


def resnet50_training_gemms(batch: int = 32) -> list[tuple[str, int, int, int]]:
    """(name, M, N, K) of the forward, input-gradient and weight-gradient GEMMs."""
    gemms: list[tuple[str, int, int, int]] = []
    for name, size, r, c, f, s in resnet50_convs():
        pad = (r - 1) // 2
        px, _, k = conv_to_gemm(size, size, r, r, c, f, stride_h=s, pad_h=pad)
        gemms.append((f"{name}.fwd", batch * px, f, k))
        gemms.append((f"{name}.dgrad", batch * size * size, c, r * r * f))
        gemms.append((f"{name}.wgrad", k, f, batch * px))
    return gemms


def bench_resnet50(batch: int = 32, repeat: int = 5) -> dict[str, Any]:
    """Wall-clock seconds (best of ``repeat``) to compute the cycles of every training GEMM
    of ResNet-50 on a 128 x 128 array in each dataflow and convention, and to plan every op
    on a TPUv4-like core (tiling over arrays, traffic)."""
    gemms = resnet50_training_gemms(batch)
    best_formula = best_plan = float("inf")
    total = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        total = 0
        for df in DATAFLOWS:
            for conv in CONVENTIONS:
                for _, m, n, k in gemms:
                    total += gemm_cycles(m, n, k, 128, 128, df, conv).cycles
        best_formula = min(best_formula, time.perf_counter() - t0)
        cfg = NpuConfig()
        t0 = time.perf_counter()
        for name, m, n, k in gemms:
            plan_task(ComputeTask(name, (Gemm(m, n, k),)), cfg)
        best_plan = min(best_plan, time.perf_counter() - t0)
    return {"gemms": len(gemms), "formula_evaluations": len(gemms) * 6,
            "formula_s": best_formula, "plan_s": best_plan, "cycles_sum": total}
