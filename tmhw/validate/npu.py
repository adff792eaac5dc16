"""The NPU's cycle formulas against SCALE-Sim 3.0.0, layer by layer.

Every row of ``data/scalesim/results.csv`` is one layer that scalesim 3.0.0 ran: its
topology CSV and form (``conv`` or ``gemm``, SCALE-Sim's ``-i``), the array and dataflow
(config ``data/scalesim/cfg/<rows>x<cols>_<df>.cfg``), and what SCALE-Sim reported:
COMPUTE_REPORT.csv's Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency % and
Compute Util %, DETAILED_ACCESS_REPORT.csv's SRAM IFMAP Reads, SRAM Filter Reads and SRAM
OFMAP Writes. The exact command and environment are in ``data/scalesim/README.md``.

A check of the registry covers one topology in one dataflow over every array it ran on:
the sum of the layers' cycles, and of their SRAM operand reads (``npu.dataflow``'s
``gemm_cycles`` and ``gemm_traffic`` with the ``scalesim`` convention). The test suite
holds every layer and every column equal on its own (tests/npu/test_npu_scalesim.py).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

from npu.dataflow import gemm_cycles, gemm_traffic
from npu.topology import TopologyLayer, read_topology
from tmhw.validate.check import Check

DATA = Path(__file__).parent / "data" / "scalesim"
REFERENCE = "SCALE-Sim 3.0.0"
TOOL = ("scalesim 3.0.0 (PyPI) with numpy 1.26.4 and pandas 2.2.3; command: "
        "scalesim(save_disk_space=True, config=CFG, topology=CSV, layout='layout.csv', "
        "input_type_gemm=FORM == 'gemm').run_scale(top_path=OUT) "
        "(tmhw/validate/data/scalesim/README.md); figures: COMPUTE_REPORT.csv Total Cycles, "
        "DETAILED_ACCESS_REPORT.csv SRAM IFMAP and Filter Reads")


@dataclass(frozen=True, slots=True)
class ScaleSimRun:
    """One layer as scalesim 3.0.0 reported it (the columns of results.csv)."""

    topology: str
    form: str
    rows: int
    cols: int
    dataflow: str
    layer: str
    total_cycles: int
    stall_cycles: int
    overall_util_pct: float
    mapping_efficiency_pct: float
    compute_util_pct: float
    sram_ifmap_reads: int
    sram_filter_reads: int
    sram_ofmap_writes: int


@cache
def runs() -> tuple[ScaleSimRun, ...]:
    """Every SCALE-Sim layer run, in the file's order."""
    out = []
    with open(DATA / "results.csv", newline="") as f:
        for r in csv.DictReader(f):
            out.append(ScaleSimRun(
                r["topology"], r["form"], int(r["rows"]), int(r["cols"]), r["dataflow"],
                r["layer"], int(r["total_cycles"]), int(r["stall_cycles"]),
                float(r["overall_util_pct"]), float(r["mapping_efficiency_pct"]),
                float(r["compute_util_pct"]), int(r["sram_ifmap_reads"]),
                int(r["sram_filter_reads"]), int(r["sram_ofmap_writes"])))
    return tuple(out)


@cache
def _layers(topology: str, form: str) -> dict[str, TopologyLayer]:
    return {lay.name: lay for lay in read_topology(DATA / topology, form)}


def layer(run: ScaleSimRun) -> TopologyLayer:
    """The layer of a run, read from its topology CSV with tmhw's reader."""
    return _layers(run.topology, run.form)[run.layer]


def _cycles(group: tuple[ScaleSimRun, ...]) -> float:
    total = 0
    for r in group:
        m, n, k = layer(r).mnk
        total += gemm_cycles(m, n, k, r.rows, r.cols, r.dataflow, "scalesim").cycles
    return float(total)


def _sram_reads(group: tuple[ScaleSimRun, ...]) -> float:
    total = 0
    for r in group:
        m, n, k = layer(r).mnk
        t = gemm_traffic(m, n, k, r.rows, r.cols, r.dataflow)
        total += t.sram_ifmap_reads + t.sram_filter_reads
    return float(total)


def checks() -> list[Check]:
    """Two checks per topology and dataflow: cycles and SRAM operand reads, summed."""
    groups: dict[tuple[str, str], list[ScaleSimRun]] = {}
    for r in runs():
        groups.setdefault((r.topology, r.dataflow), []).append(r)
    out = []
    for (topo, df), rs in groups.items():
        group = tuple(rs)
        arrays = ", ".join(dict.fromkeys(f"{r.rows}x{r.cols}" for r in group))
        where = f"{topo.removesuffix('.csv')} {df.upper()}, {len(group)} layer runs on {arrays}"
        name = f"npu/scalesim/{topo.removesuffix('.csv')}-{df}"
        cfgs = ", ".join(f"cfg/{a}_{df}.cfg" for a in arrays.split(", "))
        source = (f"topology {topo} ({group[0].form}), configs {cfgs} (64 KiB SRAMs, "
                  "InterfaceBandwidth CALC)")
        out.append(Check(
            name=f"{name}/cycles", component="npu", reference=REFERENCE,
            figure=f"{where}: Total Cycles, summed", unit="cycles",
            reference_value=float(sum(r.total_cycles for r in group)),
            measure=partial(_cycles, group), tool=TOOL, source=source, quick=True))
        out.append(Check(
            name=f"{name}/sram", component="npu", reference=REFERENCE,
            figure=f"{where}: SRAM IFMAP + Filter Reads, summed", unit="words",
            reference_value=float(sum(r.sram_ifmap_reads + r.sram_filter_reads
                                      for r in group)),
            measure=partial(_sram_reads, group), tool=TOOL, source=source, quick=True))
    return out
