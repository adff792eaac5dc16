"""Importing the kernel stops numpy advising huge pages (``tmhw.sim.pages``), unless the
user's environment says otherwise."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

_ASK = ("import tmhw.sim, importlib; "
        "m = importlib.import_module('numpy._core.multiarray'); "
        "print(m._set_madvise_hugepage(True))")


@pytest.mark.parametrize(("env", "advised"), [(None, "False"), ("1", "True"), ("0", "False")])
def test_huge_page_advice_is_off_unless_the_environment_asks(
        env: str | None, advised: str, fresh_python: Callable[..., str]) -> None:
    e = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if env is not None:
        e["NUMPY_MADVISE_HUGEPAGE"] = env
    out = fresh_python(_ASK, env=e)
    assert out.strip() == advised
