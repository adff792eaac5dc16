"""Shared fixtures: every zoo model built once at a small batch (tests that need the
default batch build their own)."""

from __future__ import annotations

import pytest

from tmhw.workload.graph import Workload
from tmhw.workload.zoo import MODELS, build

_CACHE: dict[str, Workload] = {}


@pytest.fixture(params=list(MODELS))
def model(request: pytest.FixtureRequest) -> Workload:
    name = request.param
    if name not in _CACHE:
        _CACHE[name] = build(name, batch=2)
    return _CACHE[name]
