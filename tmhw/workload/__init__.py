"""DNN training workloads: tensors as page runs, ops, the model zoo, importers."""

from tmhw.workload.builder import WorkloadBuilder
from tmhw.workload.footprint import Footprint, footprint
from tmhw.workload.graph import Gemm, Kind, Op, Phase, Tensor, Workload
from tmhw.workload.scalesim import from_scalesim_csv
from tmhw.workload.zoo import INFO, MODELS, build

__all__ = ["Footprint", "Gemm", "INFO", "Kind", "MODELS", "Op", "Phase", "Tensor", "Workload",
           "WorkloadBuilder", "build", "footprint", "from_scalesim_csv"]
