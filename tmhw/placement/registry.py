"""Policy names to classes."""

from __future__ import annotations

from tmhw.placement.base import Policy
from tmhw.placement.simple import Demand, HbmOnly
from tmhw.sim.errors import TmhwError

POLICIES: dict[str, type[Policy]] = {
    HbmOnly.name: HbmOnly,
    Demand.name: Demand,
}


def make_policy(name: str) -> Policy:
    if name not in POLICIES:
        raise TmhwError(f"policy.name: {name!r} is not one of {', '.join(POLICIES)}")
    return POLICIES[name]()
