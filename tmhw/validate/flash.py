"""The flash model against MQSim on the mqsim-default device, in both modes: stock MQSim
against ``flash.compat = "mqsim"`` (the chip lock, the data-out convoy and
store-and-forward to the host, as MQSim does them), and MQSim changed to ONFI rules
against the default ``flash.compat = "onfi"``.

Each run of ``data/mqsim.toml`` is one MQSim synthetic flow at a fixed queue depth; tmhw
runs the same requests with ``flash.bench.run_bench`` (the library call of ``tmhw flash
bench --preset mqsim-default --pattern P --size S --qd Q --count N [--set
flash.compat=mqsim]``, fast model) and compares the mean latency, within 10%.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from flash.bench import run_bench
from flash.config import PRESETS
from tmhw.validate.check import Check, reference_data, run_text, tool_text

TOLERANCE = 0.10
#: mode: (tmhw's flash.compat, the reference's name, its column in mqsim.toml)
MODES = {"stock": ("mqsim", "MQSim 7ec40e3", "stock_us"),
         "onfi": ("onfi", "MQSim 7ec40e3, ONFI rules", "onfi_us")}


def runs() -> dict[str, dict[str, Any]]:
    """The MQSim runs of ``data/mqsim.toml`` by name."""
    return dict(reference_data("mqsim")["runs"])


def bench_args(name: str) -> dict[str, Any]:
    """``run_bench``'s pattern, size, qd and count for an MQSim run."""
    r = runs()[name]
    kind = "seq" if r["address_distribution"] == "STREAMING" else "rand"
    op = "read" if r["read_percentage"] == 100 else "write"
    return {"pattern": kind + op, "size": int(r["sectors"]) * 512,
            "qd": int(r["queue_depth"]), "count": int(r["requests"])}


def mean_latency_us(name: str, compat: str) -> float:
    """tmhw's mean latency of an MQSim run on the mqsim-default preset."""
    cfg = replace(PRESETS["mqsim-default"], compat=compat)
    return float(run_bench(cfg, **bench_args(name))["mean_latency_us"])


def tool() -> str:
    t = reference_data("mqsim")["tool"]
    return (f"{tool_text(t)}; device: {t['config']}; command: {t['command']}; figure: mean "
            "device response time")


def source(name: str, mode: str) -> str:
    t = reference_data("mqsim")["tool"]
    r = runs()[name]
    flow = (f"IO_Flow_Parameter_Set_Synthetic Read_Percentage {r['read_percentage']}, "
            f"Address_Distribution {r['address_distribution']}, Average_Request_Size "
            f"{r['sectors']} sectors, Queue_Depth {r['queue_depth']}, "
            f"{r['requests']} requests (mqsim/README.md)")
    changes = {} if mode == "stock" else {"config": "MQSim changed: " + t["onfi_changes"]}
    return run_text(changes | {"workload": flow})


def checks() -> list[Check]:
    """Every MQSim run in both modes."""
    out = []
    for mode, (compat, reference, column) in MODES.items():
        for name, r in runs().items():
            a = bench_args(name)
            out.append(Check(
                name=f"flash/mqsim-{mode}/{name}", component="flash", reference=reference,
                figure=f"compat={compat}, {a['pattern']} {a['size'] // 1024} KiB QD{a['qd']}, "
                       f"{a['count']} requests: mean latency",
                unit="us", reference_value=float(r[column]),
                measure=partial(mean_latency_us, name, compat), tolerance=TOLERANCE,
                tool=tool(), source=source(name, mode), quick=True))
    return out
