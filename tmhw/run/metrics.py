"""What a run measured: whole-run totals, one record per iteration, the report's figures.

The loop and the pager count into one ``Totals`` as they go; each iteration's record
holds the differences over that iteration, built by keyword. The report's headline
figures are the steady state: per-iteration means over the iterations after
``run.warmup_iterations`` (all of them if none is left). Inter-tier bytes are counted by
the DMA engine per iteration that released them (``settle_traffic``), so a request
booked during the next iteration still counts as its releaser's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tmhw.dma import FETCH, INPLACE, WRITEBACK
from tmhw.sim.stats import Level
from tmhw.sim.units import S


@dataclass(slots=True)
class Totals:
    """Whole-run counts, added to by the loop and the pager as things happen."""

    faults: int = 0
    late_prefetches: int = 0      # operands fetched at once though a prefetch was queued
    cancelled_prefetches: int = 0
    streamed_bytes: int = 0       # split tails that arrived while their op ran
    emergency_evictions: int = 0  # evictions a static table did not plan
    trims: int = 0
    npu_hbm_read: int = 0         # bytes the NPU read from HBM
    npu_hbm_write: int = 0
    #: evictions' write-backs of dead data (a tensor outside its live range)
    dead_writeback_bytes: int = 0
    inplace_reads: int = 0        # flash requests the NPU read in place
    promotions: int = 0           # in-place policies' background fetches


@dataclass(slots=True, kw_only=True)
class IterationRecord:
    index: int
    start_ps: int
    end_ps: int
    stall_ps: int
    compute_ps: int
    faults: int
    emergency_evictions: int
    npu_hbm_stall_ps: int = 0     # inside ops: the arrays waiting on HBM operand traffic
    streamed_bytes: int = 0
    monitor_changes: int = 0      # what the policy changed for the next iteration
    npu_hbm_read: int = 0
    npu_hbm_write: int = 0
    #: evictions' write-backs of dead data (a tensor outside its live range in the
    #: iteration): nonzero only when the table does not free dead tensors
    dead_writeback_bytes: int = 0
    fetch_bytes: int = 0          # moved by the requests this iteration released
    writeback_bytes: int = 0
    inplace_bytes: int = 0        # flash pages the NPU read in place (never in HBM)

    @property
    def time_ps(self) -> int:
        return self.end_ps - self.start_ps


class Metrics:
    """Totals, iteration records and the figures of one run."""

    def __init__(self, warmup_iterations: int, batch: int) -> None:
        """``batch``: samples per iteration."""
        self.warmup_iterations = warmup_iterations
        self.batch = batch
        self.totals = Totals()
        self._base = Totals()
        self.records: list[IterationRecord] = []
        #: energy per component at the end of the warm-up (pJ), for steady-state figures
        #: with ``run.warmup_iterations = "auto"``: the warm-up found, whether the
        #: iterations repeated (None: the warm-up was given) and their period
        self.converged: bool | None = None
        self.period = 0
        #: iterations of the flash tier's drift skipped rather than simulated
        #: (``Executor._skip_drift``)
        self.skipped_iterations = 0
        self.warm_energy: dict[str, float] | None = None
        self.warm_end_ps = 0
        #: energy per component at the end of the last iteration's last op (pJ), where
        #: the measured window ends; what follows is the drain
        self.window_energy: dict[str, float] | None = None
        self.window_end_ps = 0
        #: the last iteration's prefetches for an iteration that does not run (counted)
        self.carried_fetch_bytes = 0

    def begin_iteration(self) -> None:
        """Differences from here on are the next record's."""
        self._base = dataclasses.replace(self.totals)

    def end_iteration(self, *, index: int, start_ps: int, end_ps: int, stall_ps: int,
                      compute_ps: int, npu_hbm_stall_ps: int, monitor_changes: int) -> None:
        """Record iteration ``index`` (its traffic follows in ``settle_traffic``)."""
        t, b = self.totals, self._base
        self.records.append(IterationRecord(
            index=index, start_ps=start_ps, end_ps=end_ps, stall_ps=stall_ps,
            compute_ps=compute_ps, faults=t.faults - b.faults,
            emergency_evictions=t.emergency_evictions - b.emergency_evictions,
            npu_hbm_stall_ps=npu_hbm_stall_ps,
            streamed_bytes=t.streamed_bytes - b.streamed_bytes,
            monitor_changes=monitor_changes,
            npu_hbm_read=t.npu_hbm_read - b.npu_hbm_read,
            npu_hbm_write=t.npu_hbm_write - b.npu_hbm_write,
            dead_writeback_bytes=t.dead_writeback_bytes - b.dead_writeback_bytes))

    def end_warmup(self, now: int, energy: dict[str, float]) -> None:
        """The warm-up ended at ``now`` with ``energy`` spent per component (pJ)."""
        self.warm_energy = energy
        self.warm_end_ps = now

    def found_warmup(self, warmup: int, period: int) -> None:
        """``run.warmup_iterations = "auto"`` ended the warm-up after ``warmup``
        iterations, the iterations repeating with ``period`` (0: they did not by
        ``run.max_iterations``)."""
        self.warmup_iterations = warmup
        self.converged = period > 0
        self.period = period

    def end_window(self, now: int, energy: dict[str, float]) -> None:
        """The measured iterations ended at ``now`` (the last op's end) with ``energy``
        spent per component (pJ); the rest of the run is the drain."""
        self.window_energy = energy
        self.window_end_ps = now

    def settle_traffic(self, bytes_by_origin: dict[tuple[str, int], int],
                       carried: int) -> None:
        """Each record's inter-tier bytes, by the iteration that released them; the
        last iteration's also the ``carried`` bytes of its prefetches for an
        iteration that does not run."""
        for rec in self.records:
            rec.fetch_bytes = bytes_by_origin.get((FETCH, rec.index), 0)
            rec.writeback_bytes = bytes_by_origin.get((WRITEBACK, rec.index), 0)
            rec.inplace_bytes = bytes_by_origin.get((INPLACE, rec.index), 0)
        if self.records:
            self.records[-1].fetch_bytes += carried
        self.carried_fetch_bytes = carried

    def figures(self, end: int, occupancy: Level) -> dict[str, Any]:
        """The run's figures for the report: the steady state (module docstring), every
        iteration, and whole-run totals. ``end``: the simulated time at the end;
        ``occupancy``: HBM bytes held over time."""
        records, tot = self.records, self.totals
        warm = self.warmup_iterations
        steady = records[warm:] if len(records) > warm else records
        t_steady = sum(r.time_ps for r in steady)
        samples = self.batch * len(steady)

        def mean(name: str) -> int:
            return int(sum(getattr(r, name) for r in steady)) // max(1, len(steady))

        fetch, wb = mean("fetch_bytes"), mean("writeback_bytes")
        dead_wb, inplace = mean("dead_writeback_bytes"), mean("inplace_bytes")
        out: dict[str, Any] = {
            "iterations": len(records),
            "warmup_iterations": len(records) - len(steady),
            "steady_state": len(records) > warm,
            "converged": self.converged,
            "period": self.period,
            "skipped_iterations": self.skipped_iterations,
            "samples": samples,
            "sim_time_ps": t_steady,
            "iteration_time_ps": t_steady // max(1, len(steady)),
            "samples_per_s": samples / (t_steady / S) if t_steady else 0.0,
            # Time the NPU waited for operands to reach HBM from flash (the memory-tier
            # stall); time inside ops lost to HBM bandwidth is npu_hbm_stall_ps, part
            # of compute_ps.
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
            "run_total": {
                "sim_time_ps": end, "faults": tot.faults,
                "late_prefetches": tot.late_prefetches,
                "cancelled_prefetches": tot.cancelled_prefetches,
                "streamed_bytes": tot.streamed_bytes,
                "emergency_evictions": tot.emergency_evictions,
                "carried_fetch_bytes": self.carried_fetch_bytes,
                "npu_hbm_read_bytes": tot.npu_hbm_read,
                "npu_hbm_write_bytes": tot.npu_hbm_write,
                "dead_writeback_bytes": tot.dead_writeback_bytes,
            },
            "hbm_peak_occupancy_bytes": int(occupancy.peak),
            "hbm_mean_occupancy_bytes": occupancy.mean(end),
        }
        if len(records) > warm and self.warm_energy:
            out["energy_since_ps"] = self.warm_end_ps
            out["energy_warmup_pj"] = self.warm_energy
        if self.window_energy is not None:
            out["window_end_ps"] = self.window_end_ps
            out["energy_window_pj"] = self.window_energy
        return out

    def report(self) -> dict[str, Any]:
        """The executor's own section of the component report (whole run)."""
        tot = self.totals
        return {"faults": tot.faults, "late_prefetches": tot.late_prefetches,
                "cancelled_prefetches": tot.cancelled_prefetches,
                "streamed_bytes": tot.streamed_bytes,
                "emergency_evictions": tot.emergency_evictions, "trims": tot.trims,
                "inplace_reads": tot.inplace_reads, "promotions": tot.promotions}
