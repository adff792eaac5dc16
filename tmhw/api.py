"""The library: what a notebook or a script calls instead of the command line.

::

    import tmhw
    cfg = tmhw.load_config("quick", ["policy.hbm_ratio=0.25"])
    rep = tmhw.simulate(cfg)
    print(rep.iteration_time_s, rep.inter_tier_bytes, rep.samples_per_joule)
    rows = tmhw.sweep({"preset": "quick", "grid": {"policy.name": ["tm-training", "demand"]}})

``load_config`` takes a preset name (``tmhw presets``) or a TOML file, then overrides
(a list of ``dotted.path=value`` strings or a dict of dotted paths to values, never one
bare string), and validates everything before it returns. ``simulate`` runs the steady
state the config asks for and returns a ``Report``: typed figures, the whole report as
``to_dict()``, and ``save(folder)``. ``sweep`` runs a grid (a spec dict as in ``tmhw
sweep``, a list of points, or a spec file) in local processes or on a Dask cluster and
returns one flat row per point. Bad input raises ``TmhwError`` with one line naming the
call, the value and what is allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmhw.config import PRESETS, SystemConfig, load, with_overrides
from tmhw.sim.errors import TmhwError
from tmhw.sim.units import S

Overrides = Sequence[str] | Mapping[str, Any]


def override_items(overrides: Overrides, where: str) -> list[str]:
    """``overrides`` as ``dotted.path=value`` items: a sequence of such strings, or a
    mapping of dotted paths to values (``{"policy.hbm_ratio": 0.25}``). A bare string is
    refused: iterated, it would be one override per character."""
    if isinstance(overrides, str | bytes):
        raise TmhwError(f"{where}: overrides = {overrides!r} is a single string; give a list "
                        f"of 'dotted.path=value' strings ([{overrides!r}]) or a dict of "
                        "dotted paths to values")
    if isinstance(overrides, Mapping):
        return _mapping_items(overrides, "", where)
    if not isinstance(overrides, Iterable):
        raise TmhwError(f"{where}: overrides = {overrides!r} is neither a list of "
                        "'dotted.path=value' strings nor a dict of dotted paths to values")
    from tmhw.sim import tomlio
    from tmhw.sim.errors import ConfigError

    out = list(overrides)
    for item in out:
        if not isinstance(item, str):
            raise TmhwError(f"{where}: override {item!r} is not a 'dotted.path=value' string")
        try:
            tomlio.parse_override(item)
        except ConfigError:
            raise TmhwError(f"{where}: override {item!r} is not allowed; "
                            "'dotted.path=value'") from None
    return out


def _mapping_items(overrides: Mapping[Any, Any], prefix: str, where: str) -> list[str]:
    """A mapping's overrides as items; a nested mapping is a table (``{"flash":
    {"channels": 16}}`` is ``flash.channels=16``)."""
    items = []
    for k, v in overrides.items():
        if not isinstance(k, str):
            raise TmhwError(f"{where}: override key {k!r} is not a dotted path string")
        if isinstance(v, Mapping):
            items += _mapping_items(v, f"{prefix}{k}.", where)
        else:
            items.append(f"{prefix}{k}={_toml_value(prefix + k, v, where)}")
    return items


def _toml_value(key: str, value: Any, where: str) -> str:
    """``value`` spelt as a TOML value, the form ``dotted.path=value`` items take."""
    from tmhw.sim import tomlio

    try:
        return tomlio.value_text(value)
    except TypeError:
        raise TmhwError(f"{where}: override {key} = {value!r}: a number, a boolean, a "
                        "string or a list of those") from None


def load_config(preset_or_path: str | Path = "paper",
                overrides: Overrides = ()) -> SystemConfig:
    """A validated config: the preset of that name, or the TOML file at that path, with
    ``overrides`` applied on top: a list of ``"dotted.path=value"`` strings
    (``["policy.hbm_ratio=0.25"]``) or a dict (``{"policy.hbm_ratio": 0.25}``)."""
    items = override_items(overrides, "load_config")
    name = str(preset_or_path)
    if name in PRESETS:
        cfg = PRESETS[name]
    elif Path(name).is_file():
        cfg = load(name)
    else:
        raise TmhwError(f"load_config: {name!r} is neither a preset "
                        f"({', '.join(sorted(PRESETS))}) nor a config file")
    return with_overrides(cfg, items)


@dataclass(frozen=True)
class Report:
    """One run's report (``tmhw run``'s ``report.json``), with its headline figures typed.
    All headline figures are the steady state (the iterations after the warm-up)."""

    data: dict[str, Any]

    @property
    def iteration_time_s(self) -> float:
        return float(self.data["steady"]["iteration_time_ps"]) / S

    @property
    def stall_s(self) -> float:
        """Time per iteration the NPU waited for operands from flash."""
        return float(self.data["steady"]["flash_stall_ps"]) / S

    @property
    def samples_per_s(self) -> float:
        return float(self.data["steady"]["samples_per_s"])

    @property
    def inter_tier_bytes(self) -> int:
        """Bytes moved between HBM and flash per iteration, both directions."""
        return int(self.data["steady"]["traffic_bytes"]["inter_tier"])

    @property
    def energy_j(self) -> float:
        """Energy per iteration, every component."""
        return float(self.data["steady"]["energy_pj"]["total"]) * 1e-12

    @property
    def samples_per_joule(self) -> float:
        return float(self.data["steady"]["samples_per_joule"])

    @property
    def bounds(self) -> dict[str, Any]:
        """The traffic and time lower bounds and this run's ratio to each."""
        return dict(self.data.get("bounds", {}))

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def save(self, folder: str | Path) -> Path:
        """Write ``report.json`` into ``folder`` (created if needed); return its path.
        An empty path is refused, as the command line refuses one (it would be the
        current folder)."""
        from tmhw.report import write_json
        if not str(folder):
            raise TmhwError("Report.save: folder = '': an empty path; give a folder")
        path = Path(folder) / "report.json"
        write_json(self.data, path)
        return path


def simulate(config: SystemConfig | str | Path = "paper",
             overrides: Overrides = ()) -> Report:
    """Run ``config`` (a ``SystemConfig``, or anything ``load_config`` takes) with
    ``overrides`` (as ``load_config`` takes them) and return its ``Report``."""
    from tmhw.system import System
    from tmhw.tune import tuned

    items = override_items(overrides, "simulate")
    cfg = config if isinstance(config, SystemConfig) else load_config(config, items)
    if isinstance(config, SystemConfig) and items:
        cfg = with_overrides(cfg, items)
    return Report(tuned(cfg, lambda c: System(c).run())[1])


def sweep(spec: dict[str, Any] | Sequence[dict[str, Any]] | str | Path, *,
          workers: int | None = 1,
          cluster: str | None = None, out: str | Path | None = None) -> list[dict[str, Any]]:
    """Run every point of ``spec`` (a dict with ``preset``, ``base``, ``grid``,
    ``points`` as a ``tmhw sweep`` spec file has, a list of points as its ``points``,
    or the path of such a file) and return
    one flat row per point: its parameters, its status and its headline figures.
    ``workers`` local processes (1: this process), or a Dask ``cluster`` address;
    ``out`` keeps each point's report there and resumes from it."""
    from tmhw.sweeps import expand_spec, load_spec, run_points, summary_rows

    if isinstance(spec, list | tuple):
        # a list of points is the spec's [[points]]: natural to pass, one meaning
        spec = {"points": list(spec)}
    if not isinstance(spec, str | Path | dict):
        raise TmhwError(f"sweep: spec is a {type(spec).__name__}; give a dict with preset, "
                        "base, grid and/or points (as a tmhw sweep spec file has), a list "
                        "of points (dicts of dotted overrides), or the path of a spec file")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise TmhwError(f"sweep: workers = {workers!r} is not allowed; an integer >= 1 "
                        "(None: one per CPU)")
    points = load_spec(spec) if isinstance(spec, str | Path) else expand_spec(spec)
    results = run_points(points, workers=workers, cluster=cluster, out=out, progress=False)
    return summary_rows(results)
