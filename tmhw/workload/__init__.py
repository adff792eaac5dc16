"""DNN training workloads: tensors as page runs, ops, the model zoo, importers."""

from tmhw.workload.builder import WorkloadBuilder
from tmhw.workload.graph import Gemm, Kind, Op, Phase, Tensor, Workload

__all__ = ["Gemm", "Kind", "Op", "Phase", "Tensor", "Workload", "WorkloadBuilder"]
