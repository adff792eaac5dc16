"""Energy accounting: a table of per-action energies and a meter that counts actions.

On the hot path a component only counts (``meter.add("read", n)``) and accumulates busy
time; at ``finalize`` the meter turns counts, busy time and idle time into pJ::

    E = sum_a count[a] * table.action_pj[a]
        + busy_ps * table.active_mw * 1e-3 + idle_ps * table.idle_mw * 1e-3
        + extra_pj (energies already computed in pJ by the component)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tmhw.sim.units import MW_PS_TO_PJ


@dataclass(frozen=True, slots=True)
class EnergyTable:
    """Per-action energies in pJ, and the power in mW when busy and when idle.

    ``active_mw`` is the power *above* idle while busy; the idle power applies to the
    whole run (so busy time costs idle + active)."""

    action_pj: dict[str, float] = field(default_factory=dict)
    active_mw: float = 0.0
    idle_mw: float = 0.0

    def __post_init__(self) -> None:
        # ``not v >= 0`` so that NaN, which would poison every total, is refused too.
        for k, v in self.action_pj.items():
            if not v >= 0:
                raise ValueError(f"energy of action {k!r} must be >= 0, got {v}")
        if not (self.active_mw >= 0 and self.idle_mw >= 0):
            raise ValueError(f"power must be >= 0, got active {self.active_mw} mW, "
                             f"idle {self.idle_mw} mW")


class EnergyMeter:
    """Counts actions and busy time for one component; converts to pJ at finalize."""

    __slots__ = ("table", "counts", "busy_ps", "extra_pj", "_by_action", "_total",
                 "_static", "_active", "finalized")

    def __init__(self, table: EnergyTable) -> None:
        self.table = table
        self.counts: dict[str, float] = {k: 0 for k in table.action_pj}
        self.busy_ps: int = 0
        self.extra_pj: dict[str, float] = {}
        self._by_action: dict[str, float] = {}
        self._total = 0.0
        self._static = 0.0
        self._active = 0.0
        self.finalized = False

    def add(self, action: str, n: float = 1) -> None:
        """Count ``n`` occurrences of ``action`` (must be in the table)."""
        if action not in self.counts:
            raise KeyError(f"unknown energy action {action!r}; known: {sorted(self.counts)}")
        if not n >= 0:
            raise ValueError(f"negative count {n} of {action!r}")
        self.counts[action] += n

    def add_busy(self, ps: int) -> None:
        if ps < 0:
            raise ValueError(f"negative busy time {ps} ps")
        self.busy_ps += ps

    def add_pj(self, category: str, pj: float) -> None:
        """Energy the component computed itself (e.g. IDD background), under a name."""
        if not pj >= 0:
            raise ValueError(f"negative energy {pj} for {category!r}")
        self.extra_pj[category] = self.extra_pj.get(category, 0.0) + pj

    def finalize(self, now: int) -> None:
        by = {a: self.counts[a] * e for a, e in self.table.action_pj.items()}
        for k, v in self.extra_pj.items():
            by[k] = by.get(k, 0.0) + v
        self._static = self.table.idle_mw * now * MW_PS_TO_PJ
        self._active = self.table.active_mw * min(self.busy_ps, 10**30) * MW_PS_TO_PJ
        if self._static:
            by["static"] = by.get("static", 0.0) + self._static
        if self._active:
            by["active"] = by.get("active", 0.0) + self._active
        self._by_action = by
        self._total = sum(by.values())
        self.finalized = True

    @property
    def total_pj(self) -> float:
        return self._total

    @property
    def by_action(self) -> dict[str, float]:
        return dict(self._by_action)

    def report(self) -> dict[str, float]:
        out = {k: v for k, v in sorted(self._by_action.items()) if v}
        out["total"] = self._total
        return out
