"""What the executor measures per iteration, and the report's figures built from it.

An ``IterationRecord`` per iteration, built by keyword at the iteration's end; the
steady state is the mean over the iterations after ``run.warmup_iterations`` (all of
them when none is left), and whole-run totals come apart under ``run_total``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tmhw.sim.units import S


@dataclass(slots=True, kw_only=True)
class IterationRecord:
    index: int
    start_ps: int
    end_ps: int
    stall_ps: int
    compute_ps: int
    faults: int
    emergency_evictions: int
    fetch_bytes: int = 0          # moved by the requests this iteration released
    writeback_bytes: int = 0
    npu_hbm_stall_ps: int = 0     # inside ops: the arrays waiting on HBM operand traffic
    streamed_bytes: int = 0       # split tails that arrived while their op ran
    monitor_changes: int = 0      # what the policy changed for the next iteration
    npu_hbm_read: int = 0         # bytes the NPU read from HBM
    npu_hbm_write: int = 0
    #: evictions' write-backs of dead data (a tensor outside its live range in the
    #: iteration): nonzero only when the table does not free dead tensors
    dead_writeback_bytes: int = 0
    inplace_bytes: int = 0        # flash pages the NPU read in place (never in HBM)

    @property
    def time_ps(self) -> int:
        return self.end_ps - self.start_ps


def figures(records: list[IterationRecord], warmup: int, batch: int, end_ps: int,
            totals: dict[str, int], occupancy: tuple[int, float]) -> dict[str, Any]:
    """The run's figures for the report: the steady state (per-iteration means over the
    iterations after ``warmup``; all of them if none is left), every iteration, the
    whole run's ``totals``, and HBM's (peak, mean) ``occupancy`` in bytes."""
    steady = records[warmup:] if len(records) > warmup else records
    t_steady = sum(r.time_ps for r in steady)
    samples = batch * len(steady)

    def mean(name: str) -> int:
        return int(sum(getattr(r, name) for r in steady)) // max(1, len(steady))

    fetch, wb = mean("fetch_bytes"), mean("writeback_bytes")
    dead_wb, inplace = mean("dead_writeback_bytes"), mean("inplace_bytes")
    return {
        "iterations": len(records),
        "warmup_iterations": len(records) - len(steady),
        "steady_state": len(records) > warmup,
        "samples": samples,
        "sim_time_ps": t_steady,
        "iteration_time_ps": t_steady // max(1, len(steady)),
        "samples_per_s": samples / (t_steady / S) if t_steady else 0.0,
        # Time the NPU waited for operands to reach HBM from flash (the memory-tier
        # stall); time inside ops lost to HBM bandwidth is npu_hbm_stall_ps, part of
        # compute_ps.
        "stall_ps": mean("stall_ps"),
        "compute_ps": mean("compute_ps"),
        "npu_hbm_stall_ps": mean("npu_hbm_stall_ps"),
        "emergency_evictions": mean("emergency_evictions"),
        "per_iteration": [
            {"index": r.index, "warmup": r.index < len(records) - len(steady),
             "time_ps": r.time_ps, "stall_ps": r.stall_ps,
             "compute_ps": r.compute_ps, "npu_hbm_stall_ps": r.npu_hbm_stall_ps,
             "faults": r.faults, "streamed_bytes": r.streamed_bytes,
             "flash_to_hbm_bytes": r.fetch_bytes,
             "hbm_to_flash_bytes": r.writeback_bytes,
             "flash_to_npu_bytes": r.inplace_bytes,
             "emergency_evictions": r.emergency_evictions,
             "monitor_changes": r.monitor_changes}
            for r in records],
        "traffic_bytes": {
            # flash_to_npu: read in place through the SSD's BAR (FlatFlash)
            "flash_to_hbm": fetch, "hbm_to_flash": wb, "flash_to_npu": inplace,
            "inter_tier": fetch + wb + inplace,
            "npu_hbm_read": mean("npu_hbm_read"), "npu_hbm_write": mean("npu_hbm_write"),
            # of hbm_to_flash: dead data written back by evictions (no frees seen)
            "hbm_to_flash_dead": dead_wb,
        },
        "faults": mean("faults"),
        "streamed_bytes": mean("streamed_bytes"),
        "run_total": {"sim_time_ps": end_ps, **totals},
        "hbm_peak_occupancy_bytes": occupancy[0],
        "hbm_mean_occupancy_bytes": occupancy[1],
    }
