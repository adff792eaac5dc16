"""``DramTarget``: the HBM/DRAM tier as a kernel ``MemoryTarget`` component.

``transport(t, earliest)`` books the chosen timing model and returns the completion time
in ps without creating a SimPy event. ``model="fast"`` is the chunk-level model
(``dram/fast.py``, its rules in ``dram/engine.py``) for full-system runs;
``model="detailed"`` runs the command-level controllers (``dram/controller.py``) inside
the call. Energy follows ``dram/power.py``: the meter counts ACT, RD, WR and REF;
background power is added at ``finalize``.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import simpy

from dram.config import HBM2, DramConfig
from dram.fast import FastModel
from dram.power import energies
from tmhw.sim.component import Component
from tmhw.sim.energy import EnergyMeter
from tmhw.sim.errors import ConfigError
from tmhw.sim.trace import Tracer
from tmhw.sim.transfer import Op, Transfer
from tmhw.sim.units import MW_PS_TO_PJ, S

MODELS = ("fast", "detailed")


class TimingModel(Protocol):
    """What ``DramTarget`` needs of a timing model."""

    @property
    def bursts_read(self) -> int: ...

    @property
    def bursts_written(self) -> int: ...

    @property
    def acts(self) -> int: ...

    @property
    def row_hits(self) -> int: ...

    @property
    def bytes_read(self) -> int: ...

    @property
    def bytes_written(self) -> int: ...

    def serve(self, write: bool, address: int, nbytes: int, pattern: Any,
              earliest: int) -> int: ...

    def refreshes(self, now: int) -> int: ...

    def active_ps(self, now: int) -> list[int]: ...


class DramTarget(Component):
    """An HBM/DRAM tier. ``cfg`` is a ``DramConfig`` (e.g. ``PRESETS["hbm3"]``)."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None = None,
                 cfg: DramConfig = HBM2, *, model: str = "fast",
                 tracer: Tracer | None = None) -> None:
        super().__init__(env, name, parent, tracer)
        if model not in MODELS:
            raise ConfigError("model", model, f"one of {', '.join(MODELS)}")
        self.cfg = cfg
        self.model = model
        self.energies = energies(cfg)
        self.energy = EnergyMeter(self.energies.table())
        self.impl: TimingModel
        if model == "fast":
            self.impl = FastModel(cfg)
        else:
            from dram.controller import DetailedModel
            self.impl = DetailedModel(cfg)
        self._lane = self.path

    # -- MemoryTarget --------------------------------------------------------------------
    def transport(self, t: Transfer, earliest: int) -> int:
        """Serve ``t`` no earlier than ``earliest`` ps; return its completion time in ps."""
        if t.op is Op.TRIM or t.nbytes == 0:
            return earliest
        end = self.impl.serve(t.op is Op.WRITE, t.address, t.nbytes, t.pattern, earliest)
        if self.tracer.enabled:
            self.tracer.span(self._lane, earliest, end, t.op.value, None)
        return end

    def serve_op(self, r_chunks: npt.NDArray[np.int64], w_chunks: npt.NDArray[np.int64],
                 c_chunks: npt.NDArray[np.int64], r_addr: int, w_addr: int,
                 start: int) -> int | None:
        """An NPU op's chunked reads, compute and writes (``npu.core.NPU.book``) in
        one compiled call (``dram.engine.serve_op``), as that many ``transport`` calls
        would book them; None where the calls must be made one by one: the detailed
        model, or a trace that draws each transfer."""
        impl = self._fused()
        if impl is None:
            return None
        return impl.serve_op(r_chunks, w_chunks, c_chunks, r_addr, w_addr, start)

    def serve_ops(self, r_chunks: npt.NDArray[np.int64], w_chunks: npt.NDArray[np.int64],
                  c_chunks: npt.NDArray[np.int64], first: npt.NDArray[np.int64],
                  r_addrs: npt.NDArray[np.int64], w_addrs: npt.NDArray[np.int64], now: int,
                  out: npt.NDArray[np.int64]) -> int | None:
        """``serve_op`` of several ops, each starting as the one before ends, from
        ``now``, in one compiled call (``dram.engine.serve_ops``): op ``j``'s chunks
        ``[first[j], first[j + 1])`` of the chunk arrays, its time into ``out[j]``; the
        last op's end, or None (nothing booked) where ``serve_op`` would be."""
        impl = self._fused()
        if impl is None:
            return None
        return impl.serve_ops(r_chunks, w_chunks, c_chunks, first, r_addrs, w_addrs, now, out)

    def books_ops_at_once(self) -> bool:
        """Whether ``serve_op`` and ``serve_ops`` book in one compiled call (``_fused``)."""
        return self._fused() is not None

    def _fused(self) -> FastModel | None:
        """The model that books an op's chunks in one call (``serve_op``, ``serve_ops``):
        the fast one, where no trace draws each transfer; else None."""
        if not isinstance(self.impl, FastModel) or self.tracer.enabled:
            return None
        return self.impl

    def peak_bandwidth(self) -> float:
        """Theoretical peak of all units, bytes/s."""
        return self.cfg.peak_bandwidth()

    # -- lifecycle -----------------------------------------------------------------------
    def _finalize(self, now: int) -> None:
        m, e, impl = self.energy, self.energies, self.impl
        assert m is not None
        # Assigned, not added, so that finalizing twice does not count twice.
        m.counts["act"] = impl.acts
        m.counts["rd"] = impl.bursts_read
        m.counts["wr"] = impl.bursts_written
        refs = impl.refreshes(now)
        if self.cfg.refresh == "per-bank":
            m.counts["ref_pb"] = refs
        else:
            m.counts["ref"] = refs
        active = impl.active_ps(now)
        ranks = self.cfg.ranks
        bg = 0.0
        for a in active:
            bg += (e.active_standby_mw * a + e.precharged_standby_mw * (now - a)
                   + e.precharged_standby_mw * now * (ranks - 1)) * MW_PS_TO_PJ
        # Component.finalize runs this hook first, then converts the meter's counts and
        # extra energies to pJ.
        m.extra_pj["background"] = bg

    def _report(self) -> dict[str, Any]:
        impl, cfg = self.impl, self.cfg
        now = self.finalized_at if self.finalized_at is not None else self.now
        bursts = impl.bursts_read + impl.bursts_written
        moved = impl.bytes_read + impl.bytes_written
        refs = impl.refreshes(now)
        t_ref = cfg.t_rfc_pb if cfg.refresh == "per-bank" else cfg.t_rfc
        total_pj = self.energy.total_pj if self.energy is not None else 0.0
        elapsed = max(now, 1)
        busy = list(getattr(impl, "data_ps", []))
        return {
            "model": self.model,
            "preset": cfg.name,
            "peak_bandwidth_gb_per_s": cfg.peak_bandwidth() / 1e9,
            "bytes_read": impl.bytes_read,
            "bytes_written": impl.bytes_written,
            "bursts_read": impl.bursts_read,
            "bursts_written": impl.bursts_written,
            "activates": impl.acts,
            "row_hits": impl.row_hits,
            "row_hit_rate": impl.row_hits / bursts if bursts else 0.0,
            "refreshes": refs,
            # Share of each rank's (per-bank: each bank's) time spent refreshing.
            "refresh_share": refs * t_ref / (elapsed * cfg.units * cfg.ranks)
            / (cfg.banks if cfg.refresh == "per-bank" else 1),
            "busy_ps": int(max(busy)) if busy else 0,
            "utilization": float(sum(busy)) / (elapsed * cfg.units) if busy else 0.0,
            "bandwidth_gb_per_s": moved / (elapsed / S) / 1e9 if now else 0.0,
            "energy_pj_per_bit": total_pj / (moved * 8) if moved else 0.0,
        }
