"""Every call site that reaches a kernel past its dispatcher (``tmhw.sim.jit.Direct``)
gives it the argument types of its first call, every time: the compiled entry it is
bound to would take other types as those (an array of another dtype or layout read as
the first one's). Checked on short runs that take every site between them: the fast and
the detailed flash models, the fast HBM model, write-backs, fetches, streamed tails,
in-place reads and reads of the write buffer and the read cache, on one and on two
SSDs, and garbage collection on an aged device."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from flash.bench import run_bench
from flash.config import PRESETS
from tmhw import config as C
from tmhw.sim import jit
from tmhw.system import System

#: runs that take every site between them
RUNS = [
    ["policy.name=tm-training", "policy.hbm_ratio=0.25"],
    ["policy.name=flatflash", "policy.hbm_ratio=0.25", "flash.devices=2"],
    ["policy.name=sentinel", "policy.hbm_ratio=0.5", "run.flash_model=detailed"],
]


def _key(a: Any) -> Any:
    """What numba's type of ``a`` is made of, cheaper to get than the type: an array's
    dtype, dimensions, layout flags, whether it is writeable and aligned; a tuple's
    elements' keys; a Python int's range (int64 or not); another scalar's class. Equal
    keys give equal types; anything else has a key equal to nothing (``object()``), so
    its type is compared."""
    if isinstance(a, np.ndarray):
        f = a.flags
        return (a.dtype, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if isinstance(a, tuple):
        return tuple(_key(x) for x in a)
    if type(a) is int:
        return (int, -2**63 <= a < 2**63)
    if type(a) in (float, bool) or isinstance(a, np.generic):
        return (type(a),)
    return object()


def _checking(handle: jit.Direct, bad: list[str]) -> Callable[..., Any]:
    """A first call for ``handle`` that keeps its types and checks every later call's
    against them (and calls the dispatcher, so a mismatch is reported, not misread); a
    call whose arguments' keys are the first call's (``_key``) has its types."""
    def first(*args: Any) -> Any:
        k = handle.kernel
        d: Any = k.compiled() if isinstance(k, jit._Kernel) else k
        types = tuple(d.typeof_pyval(a) for a in args)
        keys = _key(args)

        def check(*a: Any) -> Any:
            if _key(a) != keys:
                got = tuple(d.typeof_pyval(x) for x in a)
                if got != types:
                    bad.append(f"{d.py_func.__qualname__}: {got} after {types}")
            return d(*a)

        handle.call = check
        return d(*args)
    return first


def test_every_direct_site_keeps_the_types_of_its_first_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    bad: list[str] = []
    checked: set[int] = set()

    def check(h: jit.Direct) -> jit.Direct:
        if id(h) not in checked:
            checked.add(id(h))
            monkeypatch.setattr(h, "call", _checking(h, bad))
        return h

    for h in jit.DIRECTS:
        check(h)
    # the handles a component takes by its types (``jit.Directs``), as it takes them
    get = jit.Directs.get
    monkeypatch.setattr(jit.Directs, "get", lambda self, key: check(get(self, key)))
    for items in RUNS:
        System(C.with_overrides(C.QUICK, [*items, "run.warmup_iterations=1",
                                          "run.iterations=1"])).run()
    # garbage collection: random writes on an aged device (its victims, their valid
    # pages, their relocation), on a small PM1743
    run_bench(replace(PRESETS["pm1743"], blocks_per_plane=48, channels=2),
              pattern="randwrite", size=4096, qd=32, count=4000, precondition=1.0, age=0.5)
    assert not bad, bad[:3]
    # every site was taken, so every site was checked (a site with a handle per type,
    # by one of them: the process may hold others, made by other runs)
    taken = {h.kernel.__name__ for h in jit.DIRECTS if h.call.__name__ == "check"}
    assert sorted({h.kernel.__name__ for h in jit.DIRECTS} - taken) == []


def test_one_process_runs_devices_whose_maps_take_either_dtype() -> None:
    """An FTL's maps hold 32-bit pages below 2**31 of them and 64-bit pages beyond, so
    a site that takes them keeps a handle per dtype (``jit.Directs``): a study's worker
    that runs a device of 2**31 pages after a smaller one (or before) gets the same
    figures as alone, where one handle bound to the first device's types refused the
    other's maps (``TypeError: can't unbox array``)."""
    base = PRESETS["990pro"]
    big = replace(base, pages_per_block=2048, blocks_per_plane=8192)
    assert base.physical_pages < 2**31 <= big.physical_pages

    def figures(cfg: Any) -> list[float]:
        return [run_bench(cfg, pattern=p, size=s, qd=8, count=300, precondition=0.001)[
            "steady_iops"] for p, s in (("seqwrite", 131072), ("randread", 16384))]

    alone = figures(big)
    figures(base)
    assert figures(big) == alone
