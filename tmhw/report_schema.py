"""The layout of ``report.json``, field by field: one table (``FIELDS``) that the JSON
Schema (``tmhw/data/report.schema.json``), the reference page (``docs/REPORT.md``) and
the labels of the text summary and the sweep's ``summary.csv`` are all made from.

Every field has a scope, said by its section: ``steady`` (per measured iteration, the
mean of the iterations after the warm-up), ``per_iteration`` (each iteration, warm-up
included), ``warmup`` (the warm-up as a whole), ``run_total`` (the whole run, from time
0 to the end of the simulation, the component tree ``run_total.system`` included),
``drain`` (after the last op, the engine finishing the last write-backs),
``bounds`` (per iteration, a lower bound over every policy), or ``run`` (a property of
the run, not a measure). Units are in the names: ``_ps`` picoseconds, ``_bytes``,
``_pj`` picojoules, ``_mw`` milliwatts, ``_usd`` US dollars, ``_per_s`` per second of
simulated time, ``_gb_per_s`` 10^9 bytes per second.

``python -m tmhw.report_schema`` rewrites the schema file and the reference page from
this table; a test checks both are current and that every report the test suite writes
validates against the schema.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("data") / "report.schema.json"
DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "REPORT.md"

#: JSON types of the table's ``kind`` column
_TYPES = {"int": "integer", "num": "number", "str": "string", "bool": "boolean",
          "obj": "object", "list": "array"}


@dataclass(frozen=True, slots=True)
class Field:
    """One field: its dotted path (``[]`` for the items of a list), JSON kind, unit,
    scope, a short label (for tables) and what it means."""

    path: str
    kind: str
    unit: str
    scope: str
    label: str
    about: str
    optional: bool = False
    #: an object whose keys are not listed (a component tree, a config, a policy's notes)
    open: bool = False
    #: may be null (said in ``about``)
    nullable: bool = False


S, P, W, T, B, R = "steady", "per_iteration", "warmup", "run_total", "bounds", "run"

FIELDS: tuple[Field, ...] = (
    Field("schema_version", "int", "", R, "schema version",
          "The version of this layout; raised when a key is renamed or moves, or its "
          "meaning changes."),
    Field("version", "str", "", R, "tmhw version", "The tmhw package that wrote the report."),
    # -- workload -----------------------------------------------------------------------
    Field("workload", "obj", "", R, "workload", "The training iteration that ran."),
    Field("workload.model", "str", "", R, "model", "The model as `workload.model` named it."),
    Field("workload.batch", "int", "samples", R, "batch", "Samples per iteration."),
    Field("workload.seq", "int", "tokens", R, "sequence", "Sequence length (0: not a "
          "sequence model)."),
    Field("workload.params", "int", "parameters", R, "parameters",
          "Trainable parameters."),
    Field("workload.ops", "int", "ops", R, "ops",
          "Ops of one training iteration (forward, backward, optimizer)."),
    Field("workload.tensors", "int", "tensors", R, "tensors", "Tensors of the iteration."),
    Field("workload.pages", "int", "pages", R, "pages",
          "Pages of `workload.page_size` the tensors occupy."),
    Field("workload.page_size", "int", "bytes", R, "page size", "The placement unit."),
    Field("workload.footprint_bytes", "int", "bytes", R, "footprint",
          "The most bytes live at once (what HBM must hold for no traffic); "
          "`policy.hbm_ratio` is relative to it."),
    Field("workload.tensor_bytes", "int", "bytes", R, "tensor bytes",
          "Every tensor's pages together (what the flash tier holds)."),
    Field("workload.recompute", "str", "", R, "recompute",
          "The recomputation the iteration ran (`workload.recompute`, every-k as "
          "`every-<k>`; under the `recompute` policy, the one it chose)."),
    Field("workload.macs", "int", "MACs", R, "MACs",
          "Multiply-accumulates of one iteration."),
    # -- policy -------------------------------------------------------------------------
    Field("policy", "obj", "", R, "policy", "The placement policy and its plan."),
    Field("policy.name", "str", "", R, "policy", "The policy (`tmhw policy list`)."),
    Field("policy.hbm_ratio", "num", "", R, "HBM ratio",
          "HBM capacity over `workload.footprint_bytes`."),
    Field("policy.hbm_capacity_bytes", "int", "bytes", R, "HBM capacity",
          "HBM the policy may use."),
    Field("policy.flash_tier_bytes", "int", "bytes", R, "flash tier",
          "Bytes the flash tier holds for the iteration (0: nothing tiered)."),
    Field("policy.table_rows", "int", "rows", R, "table rows",
          "Rows of the first placement table."),
    Field("policy.table_bytes", "int", "bytes", R, "table size",
          "The first placement table's size as the DMA engine would store it."),
    Field("policy.table_bytes_by_action", "obj", "bytes", R, "table bytes by action",
          "Bytes the first table moves per action (prefetch, writeback, drop, ...), one "
          "iteration.", open=True),
    Field("policy.notes", "obj", "", R, "policy notes",
          "The policy's own figures about its plan (each policy's docstring).", open=True),
    Field("policy.tuning", "obj", "", R, "tuning",
          "With `policy.tune`: every trial setting and its iteration time; the report is "
          "the fastest trial's.", optional=True, open=True),
    # -- measurement --------------------------------------------------------------------
    Field("measurement", "obj", "", R, "measurement", "Which iterations were measured."),
    Field("measurement.iterations", "int", "iterations", R, "iterations",
          "Iterations simulated, warm-up included."),
    Field("measurement.warmup_iterations", "int", "iterations", R, "warm-up",
          "Iterations before the measured ones."),
    Field("measurement.measured_iterations", "int", "iterations", R, "measured",
          "Iterations the `steady` figures are the mean of."),
    Field("measurement.steady_state", "bool", "", R, "steady state",
          "Whether any iteration followed the warm-up (false: `steady` is the warm-up's "
          "mean)."),
    Field("measurement.samples_per_iteration", "int", "samples", R, "samples",
          "Samples one iteration trains."),
    Field("measurement.converged", "bool", "", R, "converged",
          'With `run.warmup_iterations = "auto"`: whether the iterations repeated within '
          "`run.steady_tolerance` by `run.max_iterations` (false: the measured ones are "
          "the last, and the report warns); null where the warm-up was given.",
          nullable=True),
    Field("measurement.period", "int", "iterations", R, "period",
          "With \"auto\": the period over which the iterations repeat, or over which "
          "their traffic and mean time do (a cycle longer than `MAX_PERIOD`: "
          "`tmhw.config.MAX_CYCLE`); the measured ones are whole periods; 0 where none "
          "was found or the warm-up was given."),
    Field("measurement.skipped_iterations", "int", "iterations", R, "skipped",
          "With \"auto\": iterations by which the SSDs' SLC caches were moved without "
          "simulating them, where a cache filled (or drained) at a steady rate (their "
          "NAND work is in no figure); 0 otherwise."),
    Field("measurement.window_end_ps", "int", "ps", R, "window end",
          "Where the measured window ends: the last iteration's last op (the `steady` "
          "figures, energy included, are the window from `warmup.end_ps`, or 0, to "
          "here)."),
    # -- steady -------------------------------------------------------------------------
    Field("steady", "obj", "", S, "steady state",
          "Per measured iteration, the mean of the iterations after the warm-up."),
    Field("steady.iteration_time_ps", "int", "ps", S, "iteration time",
          "Simulated time of one iteration, first op's start to last op's end."),
    Field("steady.npu_busy_ps", "int", "ps", S, "compute",
          "Time the NPU ran ops, HBM-bound time inside ops included."),
    Field("steady.npu_hbm_stall_ps", "int", "ps", S, "of which HBM-bound",
          "Of `npu_busy_ps`, time ops waited for HBM bandwidth."),
    Field("steady.flash_stall_ps", "int", "ps", S, "memory stall",
          "Time ops waited for operands to reach HBM from flash before they could start."),
    Field("steady.faults", "int", "faults", S, "faults",
          "Ops that found an operand absent and fetched it on demand."),
    Field("steady.streamed_bytes", "int", "bytes", S, "streamed",
          "Bytes an op consumed while they were still arriving (data splitting)."),
    Field("steady.emergency_evictions", "int", "evictions", S, "emergency evictions",
          "Evictions the executor made because the plan did not fit HBM as it ran."),
    Field("steady.traffic_bytes", "obj", "bytes", S, "traffic", "Bytes moved per iteration."),
    Field("steady.traffic_bytes.flash_to_hbm", "int", "bytes", S, "flash -> HBM",
          "Fetched from flash into HBM, counted in the iteration that released them."),
    Field("steady.traffic_bytes.hbm_to_flash", "int", "bytes", S, "HBM -> flash",
          "Written back from HBM to flash (cleans included)."),
    Field("steady.traffic_bytes.flash_to_npu", "int", "bytes", S, "flash -> NPU in place",
          "Read by the NPU in place through the SSD's BAR (FlatFlash)."),
    Field("steady.traffic_bytes.inter_tier", "int", "bytes", S, "inter-tier",
          "All three above."),
    Field("steady.traffic_bytes.npu_hbm_read", "int", "bytes", S, "NPU <- HBM",
          "Bytes the NPU read from HBM."),
    Field("steady.traffic_bytes.npu_hbm_write", "int", "bytes", S, "NPU -> HBM",
          "Bytes the NPU wrote to HBM."),
    Field("steady.traffic_bytes.hbm_to_flash_dead", "int", "bytes", S, "dead write-backs",
          "Of `hbm_to_flash`, dead data written back by evictions that saw no free."),
    Field("steady.energy_pj", "obj", "pJ", S, "energy",
          "Energy per iteration by top-level component (hbm, flash, npu, dma, ...) and "
          "`total`: what each spent over the measured iterations, divided by their "
          "number.", open=True),
    Field("steady.samples_per_s", "num", "samples/s", S, "throughput",
          "Samples trained per second of simulated time."),
    Field("steady.avg_power_mw", "num", "mW", S, "average power",
          "Energy over the measured time."),
    Field("steady.samples_per_joule", "num", "samples/J", S, "throughput per watt",
          "Samples per joule (samples per second per watt)."),
    Field("steady.samples_per_s_per_usd", "num", "samples/s/USD", S, "throughput per dollar",
          "`samples_per_s` over `cost.system_usd`."),
    # -- per iteration ------------------------------------------------------------------
    Field("per_iteration", "list", "", P, "iterations", "One record per iteration."),
    Field("per_iteration[].index", "int", "", P, "iteration", "0 is the first."),
    Field("per_iteration[].warmup", "bool", "", P, "warm-up", "Part of the warm-up."),
    Field("per_iteration[].time_ps", "int", "ps", P, "time", "This iteration's time."),
    Field("per_iteration[].flash_stall_ps", "int", "ps", P, "memory stall",
          "As `steady.flash_stall_ps`, this iteration."),
    Field("per_iteration[].npu_busy_ps", "int", "ps", P, "compute",
          "As `steady.npu_busy_ps`, this iteration."),
    Field("per_iteration[].npu_hbm_stall_ps", "int", "ps", P, "HBM-bound",
          "As `steady.npu_hbm_stall_ps`, this iteration."),
    Field("per_iteration[].faults", "int", "faults", P, "faults", "This iteration's faults."),
    Field("per_iteration[].streamed_bytes", "int", "bytes", P, "streamed",
          "This iteration's streamed bytes."),
    Field("per_iteration[].flash_to_hbm_bytes", "int", "bytes", P, "flash -> HBM",
          "Fetches this iteration released."),
    Field("per_iteration[].hbm_to_flash_bytes", "int", "bytes", P, "HBM -> flash",
          "Write-backs this iteration released."),
    Field("per_iteration[].flash_to_npu_bytes", "int", "bytes", P, "flash -> NPU",
          "In-place reads this iteration made."),
    Field("per_iteration[].emergency_evictions", "int", "evictions", P,
          "emergency evictions", "This iteration's emergency evictions."),
    Field("per_iteration[].monitor_changes", "int", "changes", P, "monitor changes",
          "What the policy's feedback changed after this iteration (TM-Training's timing "
          "monitor)."),
    # -- warm-up ------------------------------------------------------------------------
    Field("warmup", "obj", "", W, "warm-up",
          "The warm-up as a whole (present when iterations followed it).", optional=True),
    Field("warmup.end_ps", "int", "ps", W, "warm-up end",
          "Simulated time at which the warm-up ended."),
    Field("warmup.energy_pj", "obj", "pJ", W, "warm-up energy",
          "Energy per top-level component spent by the end of the warm-up.", open=True),
    # -- drain --------------------------------------------------------------------------
    Field("drain", "obj", "", "drain", "drain",
          "After the last op: the DMA engine finishing the last iteration's write-backs "
          "(not in any `steady` figure)."),
    Field("drain.time_ps", "int", "ps", "drain", "drain time",
          "From the last op's end to the end of the simulation."),
    Field("drain.energy_pj", "obj", "pJ", "drain", "drain energy",
          "Energy per top-level component and `total` spent in the drain.", open=True),
    # -- run total ----------------------------------------------------------------------
    Field("run_total", "obj", "", T, "whole run", "The whole run, warm-up included."),
    Field("run_total.sim_time_ps", "int", "ps", T, "simulated time",
          "From time 0 to the end of the simulation (the drain of the last write-backs "
          "included)."),
    Field("run_total.faults", "int", "faults", T, "faults", "Faults of the run."),
    Field("run_total.late_prefetches", "int", "prefetches", T, "late prefetches",
          "Prefetches not complete when their op was due."),
    Field("run_total.cancelled_prefetches", "int", "prefetches", T, "cancelled prefetches",
          "Prefetches cancelled before they were booked."),
    Field("run_total.streamed_bytes", "int", "bytes", T, "streamed", "Streamed bytes."),
    Field("run_total.emergency_evictions", "int", "evictions", T, "emergency evictions",
          "Emergency evictions."),
    Field("run_total.carried_fetch_bytes", "int", "bytes", T, "carried fetches",
          "Fetches the last iteration released for an iteration that did not run."),
    Field("run_total.npu_hbm_read_bytes", "int", "bytes", T, "NPU <- HBM",
          "Bytes the NPU read from HBM."),
    Field("run_total.npu_hbm_write_bytes", "int", "bytes", T, "NPU -> HBM",
          "Bytes the NPU wrote to HBM."),
    Field("run_total.dead_writeback_bytes", "int", "bytes", T, "dead write-backs",
          "Dead data written back."),
    Field("run_total.hbm_peak_occupancy_bytes", "int", "bytes", T, "HBM peak occupancy",
          "The most HBM held at once, in-flight fetches included."),
    Field("run_total.hbm_mean_occupancy_bytes", "num", "bytes", T, "HBM mean occupancy",
          "HBM held, averaged over the simulated time."),
    Field("run_total.system", "obj", "", T, "components",
          "Every component's counters, nested as the machine is (`hbm`, `flash`, `npu`, "
          "`dma`, `executor`, and their parts), over the whole run. Conventions: "
          "`busy_ps` time a resource was busy, `utilization` busy time over the run's "
          "time, `count` operations, `energy_pj` a component's own meter (`total` and "
          "its parts), `*_bytes` bytes.", open=True),
    # -- bounds -------------------------------------------------------------------------
    Field("bounds", "obj", "", B, "lower bounds",
          "Per iteration, what no policy can beat at this HBM capacity "
          "(`tmhw.lower_bounds`)."),
    Field("bounds.traffic_bytes", "int", "bytes", B, "traffic bound",
          "The fewest inter-tier bytes."),
    Field("bounds.read_bytes", "int", "bytes", B, "read bound",
          "Flash -> HBM bytes of the fewest-bytes plan."),
    Field("bounds.write_bytes", "int", "bytes", B, "write bound",
          "HBM -> flash bytes of the fewest-bytes plan."),
    Field("bounds.nand_read_bytes", "int", "bytes", B, "NAND read bound",
          "The fewest bytes read from the NAND arrays (the SSDs' DRAM may serve the rest)."),
    Field("bounds.program_bytes", "int", "bytes", B, "program bound",
          "The fewest bytes programmed into NAND."),
    Field("bounds.iteration_time_ps", "int", "ps", B, "time bound",
          "The least iteration time: the largest of the terms below."),
    Field("bounds.npu_ops_ps", "int", "ps", B, "ops' time",
          "The ops' profiled times, summed."),
    Field("bounds.npu_ps", "int", "ps", B, "NPU alone",
          "The ops on the NPU with every operand in a warm HBM."),
    Field("bounds.link_ps", "int", "ps", B, "link", "The bound's bytes over the link."),
    Field("bounds.flash_ps", "int", "ps", B, "flash",
          "The flash tier's time for the bound's writes, or its reads over the SSDs' "
          "ports."),
    Field("bounds.die_ps", "int", "ps", B, "dies",
          "The NAND dies' least time for the NAND read and program bounds."),
    Field("bounds.phase_ps", "int", "ps", B, "phases",
          "Phase by phase, compute and the transfers each phase cannot avoid."),
    Field("bounds.traffic_ratio", "num", "", B, "traffic / bound",
          "`steady.traffic_bytes.inter_tier` over `traffic_bytes` (>= 1); null where the "
          "bound is 0 and the traffic is not.", nullable=True),
    Field("bounds.time_ratio", "num", "", B, "time / bound",
          "`steady.iteration_time_ps` over `iteration_time_ps` (>= 1); null where the "
          "bound is 0 and the time is not.", nullable=True),
    # -- cost, endurance ----------------------------------------------------------------
    Field("cost", "obj", "USD", R, "cost", "Hardware cost (`[cost]`)."),
    Field("cost.hbm_usd", "num", "USD", R, "HBM cost", "HBM capacity at `hbm_usd_per_gb`."),
    Field("cost.flash_usd", "num", "USD", R, "flash cost",
          "The flash tier's bytes at `nand_usd_per_gb`."),
    Field("cost.memory_usd", "num", "USD", R, "memory cost", "HBM and flash tier."),
    Field("cost.npu_usd", "num", "USD", R, "NPU cost", "The NPU (`cost.npu_usd`)."),
    Field("cost.system_usd", "num", "USD", R, "system cost", "Memory and NPU."),
    Field("endurance", "obj", "", T, "endurance",
          "Flash wear, from the whole run's programs."),
    Field("endurance.erases", "int", "erases", T, "erases", "Block erases of the run."),
    Field("endurance.pages_programmed", "int", "pages", T, "pages programmed",
          "Flash pages programmed in the run (GC included)."),
    Field("endurance.blocks", "int", "blocks", R, "blocks", "Physical blocks per device."),
    Field("endurance.waf", "num", "", T, "write amplification",
          "Pages programmed over pages the host wrote."),
    Field("endurance.pe_cycles_per_iteration", "num", "P/E cycles", T, "P/E per iteration",
          "Program/erase cycles each block wears per iteration, run average."),
    Field("endurance.lifetime_days", "num", "days", T, "lifetime",
          "Days of continuous training until the P/E limit (-1: no wear)."),
    Field("warnings", "list", "", R, "warnings", "What the reader should know, in words."),
    Field("config", "obj", "", R, "config",
          "The whole config that produced the run (`tmhw config show`), every section.",
          open=True),
    Field("host", "obj", "", R, "host",
          "Wall-clock figures of the machine that ran it (the only part that differs "
          "between two runs of the same config and seed).", optional=True, open=True),
    Field("host.wall_s", "num", "s", R, "wall time",
          "Wall-clock seconds the run took on the machine that ran it.", optional=True),
    Field("host.events", "int", "events", R, "events",
          "Simulation events the run processed.", optional=True),
)

BY_PATH = {f.path: f for f in FIELDS}

#: A sweep's ``summary.csv`` figure columns: name -> (path into the report, scale)
#: (``tmhw.sweeps.summary_rows``; listed in ``docs/REPORT.md``).
FIGURES: dict[str, tuple[tuple[str, ...], float]] = {
    "iteration_time_ms": (("steady", "iteration_time_ps"), 1e-9),
    "compute_ms": (("steady", "npu_busy_ps"), 1e-9),
    "stall_ms": (("steady", "flash_stall_ps"), 1e-9),
    "samples_per_s": (("steady", "samples_per_s"), 1.0),
    "inter_tier_bytes": (("steady", "traffic_bytes", "inter_tier"), 1.0),
    "flash_to_hbm_bytes": (("steady", "traffic_bytes", "flash_to_hbm"), 1.0),
    "hbm_to_flash_bytes": (("steady", "traffic_bytes", "hbm_to_flash"), 1.0),
    "flash_to_npu_bytes": (("steady", "traffic_bytes", "flash_to_npu"), 1.0),
    "faults": (("steady", "faults"), 1.0),
    "energy_j": (("steady", "energy_pj", "total"), 1e-12),
    "energy_npu_j": (("steady", "energy_pj", "npu"), 1e-12),
    "energy_hbm_j": (("steady", "energy_pj", "hbm"), 1e-12),
    "energy_flash_j": (("steady", "energy_pj", "flash"), 1e-12),
    "energy_dma_j": (("steady", "energy_pj", "dma"), 1e-12),
    "avg_power_w": (("steady", "avg_power_mw"), 1e-3),
    "samples_per_joule": (("steady", "samples_per_joule"), 1.0),
    "time_bound_ratio": (("bounds", "time_ratio"), 1.0),
    "traffic_bound_ratio": (("bounds", "traffic_ratio"), 1.0),
    "footprint_bytes": (("workload", "footprint_bytes"), 1.0),
    "hbm_capacity_bytes": (("policy", "hbm_capacity_bytes"), 1.0),
    "hbm_peak_bytes": (("run_total", "hbm_peak_occupancy_bytes"), 1.0),
    "memory_usd": (("cost", "memory_usd"), 1.0),
    "system_usd": (("cost", "system_usd"), 1.0),
    "samples_per_s_per_usd": (("steady", "samples_per_s_per_usd"), 1.0),
    "flash_written_bytes": (("run_total", "system", "flash", "bytes_written"), 1.0),
    "waf": (("run_total", "system", "flash", "waf"), 1.0),
    "erases": (("endurance", "erases"), 1.0),
    "pe_cycles_per_iteration": (("endurance", "pe_cycles_per_iteration"), 1.0),
    "lifetime_days": (("endurance", "lifetime_days"), 1.0),
    "events": (("host", "events"), 1.0),
    "wall_s": (("host", "wall_s"), 1.0),
}



def label(path: str) -> str:
    """The table label of the field at dotted ``path``."""
    return BY_PATH[path].label


def _node(f: Field) -> dict[str, Any]:
    node: dict[str, Any] = {"type": [_TYPES[f.kind], "null"] if f.nullable else _TYPES[f.kind],
                            "description": f.about}
    if f.unit:
        node["unit"] = f.unit
    node["scope"] = f.scope
    node["title"] = f.label
    if f.kind == "obj":
        node["properties"] = {}
        node["additionalProperties"] = f.open
    return node


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``report.json``, from ``FIELDS``."""
    root: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:tmhw:report.schema.json",
        "title": "tmhw report.json",
        "description": (__doc__ or "").strip().split("\n\n")[1].replace("\n", " "),
        "type": "object", "properties": {}, "additionalProperties": False,
        "required": []}
    nodes: dict[str, dict[str, Any]] = {"": root}
    for f in FIELDS:
        parent_path, _, name = f.path.rpartition(".")
        parent = nodes[parent_path]
        node = _node(f)
        parent["properties"][name] = node
        if not f.optional:
            parent.setdefault("required", []).append(name)
        nodes[f.path] = node
        if f.kind == "list" and any(g.path.startswith(f.path + "[].") for g in FIELDS):
            # a list of records: its items' fields follow as ``path[].name``
            nodes[f.path + "[]"] = node["items"] = {
                "type": "object", "properties": {}, "additionalProperties": False,
                "required": []}
    return root


def validate(rep: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first field of ``rep`` that does not follow the
    schema (``tmhw.report.write_json`` calls it before any report is written)."""
    err = next(_validator().iter_errors(rep), None)
    if err is not None:
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise ValueError(f"report.json does not follow its schema at {where}: {err.message}")


@cache
def _validator() -> Any:
    import jsonschema
    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


def markdown() -> str:
    """``docs/REPORT.md``: every field, its unit, scope and meaning."""
    lines = [
        "# report.json",
        "",
        "<!-- generated by `python -m tmhw.report_schema` from tmhw/report_schema.py; "
        "do not edit -->",
        "",
        "Every figure `tmhw run` (and every point of a sweep or study) writes, with its "
        "unit and its scope. " + " ".join(
            (__doc__ or "").strip().split("\n\n")[1].split()),
        "",
        "The JSON Schema is `tmhw/data/report.schema.json` (draft 2020-12; each field "
        "carries `description`, `unit`, `scope` and `title`).",
        "",
        "| field | type | unit | scope | meaning |",
        "|---|---|---|---|---|",
    ]
    for f in FIELDS:
        extra = " Optional." if f.optional else ""
        kind = _TYPES[f.kind] + (" or null" if f.nullable else "")
        lines.append(f"| `{f.path}` | {kind} | {f.unit} | {f.scope} | "
                     f"{f.about}{extra} |")
    lines += ["", "## summary.csv", "",
              "A sweep's or a study's `summary.csv` has one row per point: its id, its "
              "parameters, `status` (`ok`, `does-not-fit`, `failed`), `error`, "
              "`steady_state` (`measurement.steady_state`), `converged` "
              "(`measurement.converged`, empty where the warm-up was given), then these "
              "figures, each a "
              "report field times a scale (`tmhw.report_schema.FIGURES`):", "",
              "| column | report field | scale | meaning |", "|---|---|---|---|"]
    rows = []
    for name, (path, scale) in FIGURES.items():
        dotted = ".".join(path)
        known = BY_PATH.get(dotted)
        about = known.label if known is not None else "a counter of the component tree"
        rows.append(f"| `{name}` | `{dotted}` | {scale:g} | {about} |")
    return "\n".join(lines + rows) + "\n"


def write() -> None:
    """Rewrite the schema file and the reference page from ``FIELDS``."""
    SCHEMA_PATH.parent.mkdir(exist_ok=True)
    SCHEMA_PATH.write_text(json.dumps(schema(), indent=1) + "\n")
    DOC_PATH.write_text(markdown())


if __name__ == "__main__":
    write()
    sys.stdout.write(f"wrote {SCHEMA_PATH} and {DOC_PATH}\n")
