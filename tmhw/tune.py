"""Rivals at their best: ``policy.tune`` runs a policy once per setting of its tunables.

A rival's authors tune it on the machine they run: Sentinel picks its migration interval
by test-and-trial over training steps, FlatFlash adapts its promotion threshold, AutoTM's
solver is given the budget its plans need. A comparison at their defaults measures the
defaults. A policy declares what its authors tune and over which values
(``Policy.tunables``, each range documented beside its field); with ``policy.tune =
true`` the cell is planned and simulated once per combination of those values and the
report is the fastest trial's: the shortest steady iteration, then the most samples per
joule, then the first in the declared order. Every trial's figures are kept under the
report's ``policy.tuning``, and the report's config names the chosen values, so running
that config reproduces the chosen trial exactly (trials are simulated runs: the choice is
deterministic, never a wall-clock race).

Where a policy's tunables change only its plan (``Policy.tunes_plan_only``: AutoTM's node
budget, Sentinel's interval), a trial whose placement table is an earlier trial's
(``PlacementTable.digest``) runs the same, so its figures are that trial's, not simulated
again: AutoTM's solver proves its plan optimal well within the smallest budget on most
cells, and the larger budgets plan the same table; a policy that knows its plan is final
(``Policy.plan_is_final``: AutoTM's solver proved it optimal) is not even planned again.

A trial that does not fit its HBM is recorded as such and skipped; if none fits, the run
does not fit. A policy with nothing to tune (the demand pagers and FlashNeuron have no
free parameter) runs once. TM-Training's timing monitor tunes it within a run; what a
mid-run change cannot judge (the plan's preferences, ``TMTraining.tunables``) is tuned
here.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

from tmhw.config import SystemConfig, with_overrides
from tmhw.placement.base import policy_class
from tmhw.sim import tomlio
from tmhw.sim.errors import DoesNotFit

Report = dict[str, Any]


def trials(cfg: SystemConfig) -> list[tuple[dict[str, Any], SystemConfig]]:
    """The configs ``policy.tune`` runs for ``cfg``, each with its parameter values; empty
    when ``cfg`` does not ask for tuning or its policy has nothing to tune."""
    cls = policy_class(cfg.policy.name)
    if not cfg.policy.tune or not cls.tunables:
        return []
    keys = list(cls.tunables)
    out = []
    for values in itertools.product(*(cls.tunables[k] for k in keys)):
        setting = dict(zip(keys, values, strict=True))
        items = [f"policy.{cls.section}.{k}={tomlio.value_text(v)}"
                 for k, v in _plain(setting).items()]
        out.append((setting, with_overrides(cfg, items)))
    return out


def tuned(cfg: SystemConfig,
          run: Callable[[SystemConfig], Report]) -> tuple[SystemConfig, Report]:
    """The config and report of ``cfg``'s best trial (module docstring); ``cfg`` and
    ``run(cfg)`` when it has none. ``run`` simulates one config and returns its report.
    The report's ``policy.tuning`` lists every trial."""
    tries = trials(cfg)
    if not tries:
        return cfg, run(cfg)
    rows: list[dict[str, Any]] = []
    best: tuple[tuple[float, float, int], SystemConfig, Report, dict[str, Any]] | None = None
    refusals = []
    for i, (setting, c) in enumerate(tries):
        try:
            rep = run(c)
        except DoesNotFit as e:
            rows.append({**_plain(setting), "status": "does-not-fit"})
            refusals.append(str(e))
            continue
        st = rep["steady"]
        t, spj = int(st["iteration_time_ps"]), float(st["samples_per_joule"])
        rows.append({**_plain(setting), "status": "ok", "iteration_time_ps": t,
                     "samples_per_joule": spj})
        key = (float(t), -spj, i)
        if best is None or key < best[0]:
            best = (key, c, rep, setting)
    if best is None:
        raise DoesNotFit(f"{cfg.policy.name}: no tuned setting fits ({refusals[0]})")
    _, chosen_cfg, rep, setting = best
    rep["policy"]["tuning"] = {"chosen": _plain(setting), "trials": rows}
    return chosen_cfg, rep


def _plain(setting: dict[str, Any]) -> dict[str, Any]:
    """``setting`` as JSON values (tuples as lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in setting.items()}


def simulate(cfg: SystemConfig) -> tuple[SystemConfig, Report, int]:
    """``tuned`` of ``cfg`` on the system model: the config run, its report, and the
    simulation events of every trial."""
    from tmhw.system import System

    events = 0
    plan_only = policy_class(cfg.policy.name).tunes_plan_only
    #: a trial's table digest -> its report, where the tunables change only the plan
    ran: dict[str, Report] = {}
    #: the digest of a plan no further trial changes (``Policy.plan_is_final``)
    final = ""

    def run(c: SystemConfig) -> Report:
        nonlocal events, final
        if final:
            return copy.deepcopy(ran[final])
        system = System(c)
        key = system.table.digest() if plan_only else ""
        if key in ran:
            # the same table runs the same: the figures of the trial that planned it
            return copy.deepcopy(ran[key])
        rep = system.run()
        events += system.env.events
        if plan_only:
            ran[key] = copy.deepcopy(rep)
            if system.policy.plan_is_final(system.table):
                final = key
        return rep

    chosen, rep = tuned(cfg, run)
    return chosen, rep, events
