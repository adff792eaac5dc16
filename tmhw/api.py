"""The library: what a notebook or a script calls instead of the command line.

::

    import tmhw
    cfg = tmhw.load_config("quick", ["policy.hbm_ratio=0.25"])
    rep = tmhw.simulate(cfg)
    print(rep.iteration_time_s, rep.inter_tier_bytes, rep.samples_per_joule)
    rows = tmhw.sweep({"preset": "quick", "grid": {"policy.name": ["tm-training", "demand"]}})

``load_config`` takes a preset name (``tmhw config list``) or a TOML file, then
``dotted.path=value`` overrides, and validates everything before it returns.
``simulate`` runs the steady state the config asks for and returns a ``Report``: typed
figures, the whole report as ``to_dict()``, and ``save(folder)``. ``sweep`` runs a grid
(a spec dict as in ``tmhw sweep``, or a spec file) in local processes or on a Dask
cluster and returns one flat row per point.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmhw.config import PRESETS, SystemConfig, load, with_overrides
from tmhw.sim.errors import TmhwError
from tmhw.sim.units import S


def load_config(preset_or_path: str | Path = "paper",
                overrides: Sequence[str] = ()) -> SystemConfig:
    """A validated config: the preset of that name, or the TOML file at that path, with
    ``overrides`` (``"policy.hbm_ratio=0.25"``, ...) applied on top."""
    name = str(preset_or_path)
    if name in PRESETS:
        cfg = PRESETS[name]
    elif Path(name).is_file():
        cfg = load(name)
    else:
        raise TmhwError(f"load_config: {name!r} is neither a preset "
                        f"({', '.join(sorted(PRESETS))}) nor a config file")
    return with_overrides(cfg, list(overrides))


@dataclass(frozen=True)
class Report:
    """One run's report (``tmhw run``'s ``report.json``), with its headline figures typed.
    All headline figures are the steady state (the iterations after the warm-up)."""

    data: dict[str, Any]

    @property
    def iteration_time_s(self) -> float:
        return float(self.data["iteration_time_ps"]) / S

    @property
    def stall_s(self) -> float:
        """Time per iteration the NPU waited for operands from flash."""
        return float(self.data["stall_ps"]) / S

    @property
    def samples_per_s(self) -> float:
        return float(self.data["samples_per_s"])

    @property
    def inter_tier_bytes(self) -> int:
        """Bytes moved between HBM and flash per iteration, both directions."""
        return int(self.data["traffic_bytes"]["inter_tier"])

    @property
    def energy_j(self) -> float:
        """Energy per iteration, every component."""
        return float(self.data["energy_pj"]["total"]) * 1e-12

    @property
    def samples_per_joule(self) -> float:
        return float(self.data["samples_per_joule"])

    @property
    def bounds(self) -> dict[str, Any]:
        """The traffic and time lower bounds and this run's ratio to each."""
        return dict(self.data.get("bounds", {}))

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def save(self, folder: str | Path) -> Path:
        """Write ``report.json`` into ``folder`` (created if needed); return its path."""
        out = Path(folder)
        try:
            out.mkdir(parents=True, exist_ok=True)
            path = out / "report.json"
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(self.data, indent=1, default=float) + "\n")
            tmp.replace(path)
        except OSError as e:
            raise TmhwError(f"{folder}: cannot write the report: {e.strerror}") from None
        return path


def simulate(config: SystemConfig | str = "paper", overrides: Sequence[str] = ()) -> Report:
    """Run ``config`` (a ``SystemConfig``, or anything ``load_config`` takes) and return
    its ``Report``."""
    from tmhw.system import System

    cfg = config if isinstance(config, SystemConfig) else load_config(config, overrides)
    if isinstance(config, SystemConfig) and overrides:
        cfg = with_overrides(cfg, list(overrides))
    return Report(System(cfg).run())


def sweep(spec: dict[str, Any] | str | Path, *, workers: int | None = 1,
          cluster: str | None = None, out: str | Path | None = None) -> list[dict[str, Any]]:
    """Run every point of ``spec`` (a dict with ``preset``, ``base``, ``grid``,
    ``points`` as a ``tmhw sweep`` spec file has, or the path of such a file) and return
    one flat row per point: its parameters, its status and its headline figures.
    ``workers`` local processes (1: this process), or a Dask ``cluster`` address;
    ``out`` keeps each point's report there and resumes from it."""
    from tmhw.sweeps import expand_spec, load_spec, run_points, summary_rows

    points = load_spec(spec) if isinstance(spec, str | Path) else expand_spec(spec)
    results = run_points(points, workers=workers, cluster=cluster, out=out, progress=False)
    return summary_rows(results)
