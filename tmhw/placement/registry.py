"""Policy names to classes, imported on first use so that a policy's dependencies (the
ILP solver of ``autotm``) load only when it runs.

``POLICIES`` is the one list of policy names: the config's validation, the command line
and the docs take the names from it. It imports no policy (the policies' base module
imports the config, which validates names against this table).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tmhw.sim.errors import TmhwError

if TYPE_CHECKING:
    from tmhw.placement.base import Policy

#: name -> "module:Class"
POLICIES: dict[str, str] = {
    "hbm-only": "tmhw.placement.simple:HbmOnly",
    "demand": "tmhw.placement.simple:Demand",
    "demand-belady": "tmhw.placement.simple:DemandBelady",
    "tm-training": "tmhw.placement.tm_training:TMTraining",
    "flatflash": "tmhw.placement.flatflash:FlatFlash",
    "flashneuron": "tmhw.placement.flashneuron:FlashNeuron",
    "sentinel": "tmhw.placement.sentinel:Sentinel",
    "autotm": "tmhw.placement.autotm:AutoTM",
}


def policy_class(name: str) -> type[Policy]:
    if name not in POLICIES:
        raise TmhwError(f"policy.name: {name!r} is not one of {', '.join(POLICIES)}")
    mod, _, cls = POLICIES[name].partition(":")
    try:
        m = importlib.import_module(mod)
    except ModuleNotFoundError as e:
        if e.name == mod:
            raise TmhwError(f"policy.name: {name!r} is not available in this build") from None
        raise
    c: type[Policy] = getattr(m, cls)
    return c


def make_policy(name: str) -> Policy:
    return policy_class(name)()
