"""The ``npu`` command: ``tmhw npu cycles --topology FILE.csv --array 128x128 --dataflow ws``.

Prints per-layer stall-free cycles, utilisation and mapping efficiency of a SCALE-Sim
topology CSV (conv or GEMM form, read as SCALE-Sim reads it) on one systolic array.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from npu.dataflow import CONVENTIONS, DATAFLOWS, gemm_cycles
from npu.topology import FORMS, read_topology
from tmhw.sim.errors import TmhwError


def parse_array(text: str) -> tuple[int, int]:
    """``128x128`` -> (rows, cols)."""
    parts = text.lower().split("x")
    try:
        rows, cols = (int(p) for p in parts)
    except ValueError:
        raise TmhwError(f"array: ROWSxCOLS such as 128x128, got {text!r}") from None
    if rows < 1 or cols < 1:
        raise TmhwError(f"array: rows and cols must be >= 1, got {text!r}")
    return rows, cols


def layer_rows(topology: str, array: str, dataflow: str, convention: str,
               form: str = "auto") -> list[dict[str, Any]]:
    """One dict per layer: name, gemm shape, cycles, folds, utilisation, mapping efficiency
    and SCALE-Sim's compute utilisation."""
    rows, cols = parse_array(array)
    out: list[dict[str, Any]] = []
    for layer in read_topology(topology, form):
        m, n, k = layer.mnk
        g = gemm_cycles(m, n, k, rows, cols, dataflow, convention)
        out.append({"name": layer.name, "m": m, "n": n, "k": k, "macs": g.macs,
                    "folds": g.folds, "cycles": g.cycles, "utilization": g.utilization,
                    "mapping_efficiency": g.mapping_efficiency,
                    "compute_utilization": g.compute_utilization})
    return out


def _cycles(args: argparse.Namespace) -> int:
    rows = layer_rows(args.topology, args.array, args.dataflow, args.convention, args.form)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'layer':<24} {'M':>9} {'N':>7} {'K':>7} {'folds':>8} {'cycles':>12} "
          f"{'util':>7} {'map_eff':>7}")
    for r in rows:
        print(f"{r['name']:<24} {r['m']:>9} {r['n']:>7} {r['k']:>7} {r['folds']:>8} "
              f"{r['cycles']:>12} {r['utilization']:>7.4f} {r['mapping_efficiency']:>7.4f}")
    print(f"{'total':<24} {'':>9} {'':>7} {'':>7} {sum(r['folds'] for r in rows):>8} "
          f"{sum(r['cycles'] for r in rows):>12}")
    return 0


def register(sub: Any) -> None:
    """Add the ``npu`` command and its sub-commands to an argparse sub-parsers object."""
    npu = sub.add_parser("npu", help="NPU systolic-array cycle formulas")
    npu_sub = npu.add_subparsers(dest="npu_command", required=True)
    cyc = npu_sub.add_parser(
        "cycles", help="per-layer stall-free cycles of a SCALE-Sim topology CSV")
    cyc.add_argument("--topology", required=True, metavar="FILE.csv",
                     help="SCALE-Sim topology CSV (conv or GEMM form)")
    cyc.add_argument("--array", default="128x128", metavar="ROWSxCOLS",
                     help="systolic array size (default 128x128)")
    cyc.add_argument("--dataflow", default="ws", choices=DATAFLOWS)
    cyc.add_argument("--convention", default="scalesim", choices=CONVENTIONS,
                     help="scalesim: as scalesim 3.0.0 computes; paper: 2R + C + T - 2")
    cyc.add_argument("--form", default="auto", choices=FORMS,
                     help="CSV form (auto: GEMM if the header's second column is M)")
    cyc.add_argument("--json", action="store_true", help="print a JSON list")
    cyc.set_defaults(func=_cycles)
