"""Configuration of the NPU: cores of systolic arrays, a vector unit and a scratchpad.

Fields and sources of the default (``TPUV4_CORE``, one TPUv4-like TensorCore):

=========================== =========== ======================================================
field                       default     source
=========================== =========== ======================================================
cores                       1           one TensorCore, as the TM-Training tooling models it
                                        (``TPUV4_CHIP`` has the chip's 2; Jouppi et al.,
                                        ISCA 2023, "TPU v4")
arrays_per_core             4           4 MXUs per TensorCore (Jouppi et al. 2023)
array_rows, array_cols      128, 128    MXU of 128 x 128 (Jouppi et al. 2023)
freq_mhz                    1050        TPUv4 clock; 2 cores x 4 x 128^2 x 2 flop x 1.05 GHz
                                        = 275 TFLOP/s bf16 per chip (Jouppi et al. 2023)
dataflow                    ``ws``      the MXU is weight stationary; the TM-Training tooling
                                        runs SCALE-Sim in WS
convention                  scalesim    cycles as scalesim 3.0.0 computes them (see dataflow)
dtype_bytes                 2           bf16 operands
acc_bytes                   4           fp32 accumulation of partial sums
vector_elems_per_cycle      1024        per core: 128 lanes x 8 sublanes of 32-bit ALUs in
                                        the TPUv2/v3 vector unit (Norrie et al., IEEE Micro
                                        41(2), 2021); equal for TPUv4 is an estimate
ifmap/filter/ofmap_spad_    8/4/4 MiB   estimate: 16 MiB per core after the TPUv2/v3 vector
bytes                                   memory (Norrie et al. 2021), split by us
max_transfers_per_op        64          model knob, not hardware: at most this many HBM
                                        reads (and writes) per op; coarser chunks than the
                                        scratchpad half only when an op exceeds it
mac_pj                      0.3         estimate: bf16 multiply + fp32 add, 1.1 + 0.9 pJ at
                                        45 nm (Horowitz, ISSCC 2014) scaled to 7 nm (~0.15x)
spad_byte_pj                0.5         estimate: ~2.5 pJ/B for a 32-128 KB SRAM bank at 45 nm
                                        (Horowitz 2014: 10 pJ per 64 bit from 8 KB, rising
                                        with size) scaled to 7 nm
vector_op_pj                0.4         estimate: fp32 add/multiply 0.9/3.7 pJ at 45 nm
                                        (Horowitz 2014) averaged and scaled to 7 nm
static_mw_per_core          20000       estimate: leakage and clock of one TensorCore (a
                                        TPUv4 chip is rated at 192 W, Jouppi et al. 2023)
fp8_speedup                 2           MACs per cycle at fp8 over bf16: NVIDIA H100 SXM data
                                        sheet, 1,979 dense fp8 against 989 dense bf16 TFLOP/s
                                        (TPUv4 has no fp8: an NPU that has it, as H100 does)
fp8_mac_pj                  0.15        estimate: an 8-bit multiply costs about a fifth of a
                                        16-bit floating-point one at 45 nm (0.2 against 1.1
                                        pJ, Horowitz 2014), the fp32 add unchanged: half of
                                        ``mac_pj``
fp32_passes                 3           bf16 passes per fp32 MAC on the MXU: XLA's fp32
                                        matmul at ``Precision.HIGH`` ("bf16_3x", JAX
                                        ``jax.lax.Precision`` docs); each pass costs
                                        ``mac_pj``
=========================== =========== ======================================================

Operands are ``dtype_bytes`` wide unless the task names its precision
(``ComputeTask.precision``, from ``workload.precision``): fp8 GEMMs read one byte an
operand and run at ``fp8_speedup``, fp32 ops four bytes and ``fp32_passes`` passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from npu.dataflow import CONVENTIONS, DATAFLOWS
from tmhw.sim.errors import ConfigError
from tmhw.sim.units import MiB


@dataclass(frozen=True, slots=True, kw_only=True)
class NpuConfig:
    """An NPU of ``cores`` identical cores; each has ``arrays_per_core`` systolic arrays, a
    vector unit and a double-buffered scratchpad. Sizes in bytes, energies in pJ, powers
    in mW."""

    cores: int = 1
    arrays_per_core: int = 4
    array_rows: int = 128  # PEs per column of one array
    array_cols: int = 128  # PEs per row of one array
    freq_mhz: float = 1050.0
    dataflow: str = "ws"  # os | ws | is
    convention: str = "scalesim"  # scalesim | paper
    dtype_bytes: int = 2  # bytes per operand element
    acc_bytes: int = 4  # bytes per partial-sum element
    vector_elems_per_cycle: int = 1024  # element operations per cycle per core
    ifmap_spad_bytes: int = 8 * MiB  # per core
    filter_spad_bytes: int = 4 * MiB  # per core
    ofmap_spad_bytes: int = 4 * MiB  # per core
    max_transfers_per_op: int = 64
    mac_pj: float = 0.3  # pJ per MAC
    spad_byte_pj: float = 0.5  # pJ per scratchpad byte read or written
    vector_op_pj: float = 0.4  # pJ per vector element operation
    static_mw_per_core: float = 20000.0  # mW per core, for the whole run
    fp8_speedup: int = 2  # MACs per cycle at fp8 over bf16
    fp8_mac_pj: float = 0.15  # pJ per fp8 MAC
    fp32_passes: int = 3  # bf16 passes of the arrays per fp32 MAC

    def __post_init__(self) -> None:
        for name in ("cores", "arrays_per_core", "array_rows", "array_cols", "dtype_bytes",
                     "acc_bytes", "vector_elems_per_cycle", "ifmap_spad_bytes",
                     "filter_spad_bytes", "ofmap_spad_bytes", "max_transfers_per_op",
                     "fp8_speedup", "fp32_passes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(name, v, "a positive integer")
        if not 0 < self.freq_mhz < math.inf:
            raise ConfigError("freq_mhz", self.freq_mhz, "a finite positive frequency in MHz")
        if self.dataflow not in DATAFLOWS:
            raise ConfigError("dataflow", self.dataflow, f"one of {', '.join(DATAFLOWS)}")
        if self.convention not in CONVENTIONS:
            raise ConfigError("convention", self.convention,
                              f"one of {', '.join(CONVENTIONS)}")
        for name in ("mac_pj", "spad_byte_pj", "vector_op_pj", "static_mw_per_core",
                     "fp8_mac_pj"):
            v = getattr(self, name)
            if not 0 <= v < math.inf:
                raise ConfigError(name, v, "a finite non-negative number")

    @property
    def peak_macs_per_s(self) -> float:
        """MACs per second with every PE busy."""
        return (self.cores * self.arrays_per_core * self.array_rows * self.array_cols
                * self.freq_mhz * 1e6)


#: One TPUv4-like TensorCore: four 128 x 128 bf16 weight-stationary arrays at 1050 MHz.
TPUV4_CORE = NpuConfig()
#: A TPUv4-like chip: two such cores (275 TFLOP/s bf16).
TPUV4_CHIP = replace(TPUV4_CORE, cores=2)
