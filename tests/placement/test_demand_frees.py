"""What the demand pager learns of tensor deaths (``policy.demand.frees``).

With "runtime" the framework frees each temporary after its last use, so no eviction
ever writes dead data back; with "none" the pager sees faults and evictions only, so dead
dirty pages are written back when evicted, and the HBM it needs never to evict is every
page of the iteration rather than the peak of live ones. Where HBM holds every page,
both settings are hbm-only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tmhw.config import PAPER, QUICK, PolicyConfig, SystemConfig, with_overrides
from tmhw.placement.base import PlanContext, make_policy
from tmhw.placement.simple import DemandParams
from tmhw.placement.table import Action
from tmhw.sim.errors import ConfigError
from tmhw.system import System
from tmhw.workload.graph import Kind, Op, Phase, Tensor, Workload

PS = 4096
STEADY = ["run.iterations=4", "run.warmup_iterations=2"]


def workload(tensors: dict[str, tuple[Kind, int]], ops: list[str]) -> Workload:
    """Tensors by name (kind, pages) and ops as ``"reads > writes"``; each op is 2^20
    vector elements of work, so the iteration takes time."""
    names = list(tensors)
    ts = [Tensor(i, n, k, p * PS) for i, (n, (k, p)) in enumerate(tensors.items())]
    ops_ = []
    for i, spec in enumerate(ops):
        r, w = spec.split(">")
        ops_.append(Op(i, f"op{i}", Phase.FORWARD, f"l{i}", vector_elems=2**20,
                       reads=tuple(names.index(x) for x in r.split()),
                       writes=tuple(names.index(x) for x in w.split())))
    wl = Workload("tiny", 1, ts, ops_, page_size=PS)
    wl.check()
    return wl


TENSORS = {"x": (Kind.INPUT, 64), "w": (Kind.WEIGHT, 64), "m": (Kind.MASTER, 128),
           "a": (Kind.ACTIVATION, 256), "b": (Kind.ACTIVATION, 256),
           "g": (Kind.WEIGHT_GRAD, 64)}
#: every tensor is live at op 2: the footprint is every page of the iteration
OVERLAP = workload(TENSORS, ["x w > a", "a > b", "a b w > g", "g m > m w"])
#: ``a`` dies at op 1, before ``g`` is born: the footprint is 64 pages short of them all
DISJOINT = workload(TENSORS, ["x w > a", "a > b", "b w > g", "g m > m w"])


def run(cfg: SystemConfig, *sets: str, wl: Workload | None = None) -> dict[str, Any]:
    rep: dict[str, Any] = System(with_overrides(cfg, [*STEADY, *sets]), workload=wl).run()
    return rep


def test_demand_frees_takes_runtime_or_none_and_names_the_field() -> None:
    assert PolicyConfig().demand.frees == "runtime"
    with pytest.raises(ConfigError, match=r"^policy.demand.frees = 'oracle': one of "
                                          r"'runtime', 'none'$"):
        with_overrides(QUICK, ["policy.demand.frees=oracle"])


@pytest.mark.parametrize("name", ["demand", "demand-belady"])
def test_without_runtime_frees_the_table_frees_nothing(name: str) -> None:
    """"runtime" frees every temporary after its last use (a DROP row each); "none"
    leaves the table empty: the executor learns nothing of deaths."""
    wl = DISJOINT
    temporaries = {t.id for t in wl.tensors if not t.kind.persistent}

    def drops(frees: str) -> set[int]:
        ctx = PlanContext(wl, wl.npages, np.zeros(4), np.ones(4), 7e9, 6.5e9)
        tab = make_policy(name, DemandParams(frees=frees)).plan(ctx)
        assert tab.reactive
        return {m.tensor for m in tab.moves if m.action == Action.DROP}

    assert drops("runtime") == temporaries
    assert drops("none") == set()


@pytest.mark.parametrize("name", ["demand", "demand-belady"])
@pytest.mark.parametrize("frees", ["runtime", "none"])
def test_with_every_page_in_hbm_both_settings_are_hbm_only(name: str, frees: str) -> None:
    """On ``OVERLAP`` the footprint (the base of hbm_ratio) is every page, so at
    hbm_ratio 1 nothing is ever evicted: same iteration time as hbm-only and no byte
    between the tiers in any iteration, the first included (the common start places
    the whole persistent state, which fits)."""
    assert -(-OVERLAP.peak_live_bytes() // PS) == OVERLAP.npages
    ref = run(PAPER, "policy.name=hbm-only", wl=OVERLAP)
    rep = run(PAPER, f"policy.name={name}", "policy.hbm_ratio=1",
              f"policy.demand.frees={frees}", wl=OVERLAP)
    assert rep["steady"]["iteration_time_ps"] == ref["steady"]["iteration_time_ps"] > 0
    for it in rep["per_iteration"]:
        assert (it["flash_to_hbm_bytes"], it["hbm_to_flash_bytes"]) == (0, 0)


def test_without_frees_the_pager_needs_every_page_not_the_footprint() -> None:
    """On ``DISJOINT`` HBM at hbm_ratio 1 holds the footprint, 64 pages less than every
    tensor: with the runtime's frees demand is hbm-only; without, dead pages fill HBM
    and evictions write them back."""
    assert DISJOINT.npages - -(-DISJOINT.peak_live_bytes() // PS) == 64
    ref = run(PAPER, "policy.name=hbm-only", wl=DISJOINT)
    rt = run(PAPER, "policy.name=demand", "policy.hbm_ratio=1", wl=DISJOINT)
    assert rt["steady"]["iteration_time_ps"] == ref["steady"]["iteration_time_ps"]
    assert rt["steady"]["traffic_bytes"]["inter_tier"] == 0
    none = run(PAPER, "policy.name=demand", "policy.hbm_ratio=1",
               "policy.demand.frees=none", wl=DISJOINT)
    assert none["steady"]["traffic_bytes"]["hbm_to_flash_dead"] > 0
    assert none["steady"]["iteration_time_ps"] > ref["steady"]["iteration_time_ps"]


def test_none_writes_back_the_dead_data_runtime_frees() -> None:
    """BERT-base (the quick preset) cut to two layers at a quarter of its footprint,
    steady state: with the runtime's frees no eviction writes dead data; without them,
    evictions write back dead data, and the pager writes back at least the dead dirty
    bytes the runtime's frees discard (measured at each free), and is slower.
    Reference: runtime 102.4 ms, 586 MiB written back per iteration, of which 0 dead,
    frees discarding 205 MiB of dead dirty data; none 131.7 ms, 836 MiB written back,
    183 MiB of it dead."""
    sets = ["policy.name=demand", "policy.hbm_ratio=0.25", "workload.layers=2"]
    sysm = System(with_overrides(QUICK, [*STEADY, *sets]))
    pager = sysm.pager
    dropped = [0]
    drop = pager.drop

    def counted(m: Any, now: int) -> None:
        res = pager.res
        if pager.iteration >= 2:               # steady state; every row frees a dead tensor
            dirty = res.in_hbm[m.p0:m.p1] & res.live[m.p0:m.p1] & ~res.in_flash[m.p0:m.p1]
            dropped[0] += int(dirty.sum()) * PS
        drop(m, now)

    pager.drop = counted                      # type: ignore[method-assign]
    rt = sysm.run()
    none = run(QUICK, *sets, "policy.demand.frees=none")
    assert rt["steady"]["traffic_bytes"]["hbm_to_flash_dead"] == 0
    assert none["steady"]["traffic_bytes"]["hbm_to_flash_dead"] > 0
    per_iteration = dropped[0] // 2
    assert per_iteration > 0
    assert none["steady"]["traffic_bytes"]["hbm_to_flash"] >= per_iteration
    assert (none["steady"]["traffic_bytes"]["hbm_to_flash"]
            > rt["steady"]["traffic_bytes"]["hbm_to_flash"])
    assert none["steady"]["iteration_time_ps"] > rt["steady"]["iteration_time_ps"]
