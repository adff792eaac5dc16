"""NPU cores: systolic-array dataflows (pure cycle formulas), a vector unit and a
double-buffered scratchpad fed from HBM."""

from npu.config import TPUV4_CHIP, TPUV4_CORE, NpuConfig
from npu.core import NPU, ComputePlan, ComputeResult, ComputeTask, Gemm, plan_task
from npu.dataflow import (
    CONVENTIONS,
    DATAFLOWS,
    GemmCycles,
    Traffic,
    compute_cycles,
    compute_utilization,
    conv_output_size,
    conv_to_gemm,
    cycles_per_fold,
    fold_counts,
    gemm_cycles,
    gemm_traffic,
    mapping_efficiency,
    multi_array_cycles,
    spatio_temporal,
    split_even,
    split_gemm,
    utilization,
)
from npu.topology import TopologyLayer, read_topology

__all__ = [
    "CONVENTIONS", "DATAFLOWS", "NPU", "TPUV4_CHIP", "TPUV4_CORE", "ComputePlan",
    "ComputeResult", "ComputeTask", "Gemm", "GemmCycles", "NpuConfig", "TopologyLayer", "Traffic",
    "compute_cycles", "compute_utilization", "conv_output_size", "conv_to_gemm",
    "cycles_per_fold", "fold_counts", "gemm_cycles", "gemm_traffic", "mapping_efficiency",
    "multi_array_cycles", "plan_task", "read_topology", "spatio_temporal", "split_even",
    "split_gemm", "utilization",
]
