"""A policy owns its parameters: a frozen record declared in its module, read from the
config's ``[policy.<section>]`` table, found through the registry alone.

The toy policy below is what the README's "Add a policy" asks for and nothing more: one
module (this one) holding the policy and its parameters, and one line in
``tmhw.placement.registry.POLICIES``. No config field names it, yet the config reads,
validates, dumps and reloads its table, and a system run gives the policy its record.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import tmhw
from tmhw import config as C
from tmhw.placement import registry
from tmhw.placement.base import PlanContext, Policy, input_mask, policy_tables
from tmhw.placement.simple import DemandParams, LruEviction
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import ConfigError
from tmhw.system import System
from tmhw.workload.graph import Kind, Op, Phase, Tensor, Workload

PAGE = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class ToyParams:
    """``[policy.toy_pager]``. ``fault_chunk_pages`` 0: a fault's missing pages are
    fetched as one flash request; k > 0: in requests of k pages."""

    fault_chunk_pages: int = 0

    def __post_init__(self) -> None:
        if self.fault_chunk_pages < 0:
            raise ConfigError("fault_chunk_pages", self.fault_chunk_pages,
                              "an integer >= 0")


class ToyPager(LruEviction):
    """Demand paging that frees nothing early and fetches faults in chunks."""

    name = "toy-pager"
    reactive = True
    Params = ToyParams
    section = "toy_pager"
    params: ToyParams

    def plan(self, ctx: PlanContext) -> PlacementTable:
        wl = ctx.workload
        t = PlacementTable(self.name, len(wl.ops), input_mask(wl), [], reactive=True,
                           fault_chunk_pages=self.params.fault_chunk_pages)
        t.index()
        return t


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry line: ``"toy-pager": "<this module>:ToyPager"``."""
    monkeypatch.setitem(registry.POLICIES, "toy-pager", f"{__name__}:ToyPager")


def tiny() -> Workload:
    """A mini-batch and a weight (64 pages each), two activations (256 pages each) and a
    weight gradient (64 pages); each op is 2^20 vector elements of work."""
    ts = [Tensor(0, "x", Kind.INPUT, 64 * PAGE), Tensor(1, "w", Kind.WEIGHT, 64 * PAGE),
          Tensor(2, "a", Kind.ACTIVATION, 256 * PAGE),
          Tensor(3, "b", Kind.ACTIVATION, 256 * PAGE),
          Tensor(4, "g", Kind.WEIGHT_GRAD, 64 * PAGE)]
    spec = [((0, 1), (2,)), ((2,), (3,)), ((3, 1), (4,)), ((4,), (1,))]
    ops = [Op(i, f"op{i}", Phase.FORWARD, f"l{i}", vector_elems=2**20, reads=r, writes=w)
           for i, (r, w) in enumerate(spec)]
    wl = Workload("tiny", 1, ts, ops, page_size=PAGE)
    wl.check()
    return wl


def run_toy(*sets: str) -> tuple[System, dict[str, Any]]:
    cfg = tmhw.load_config("quick", ["policy.name=toy-pager", "policy.hbm_ratio=0.9",
                                     "run.iterations=3", *sets])
    sysm = System(cfg, workload=tiny())
    rep: dict[str, Any] = sysm.run()
    return sysm, rep


def test_a_registered_policy_reads_its_own_table_and_runs(toy: None) -> None:
    """The record reaches the policy and its plan; chunked faults move the same bytes
    as whole ones, in more flash requests."""
    whole_sys, whole = run_toy()
    chunked_sys, chunked = run_toy("policy.toy-pager.fault_chunk_pages=16")
    assert whole_sys.policy.params == ToyParams()
    assert chunked_sys.policy.params == ToyParams(fault_chunk_pages=16)
    assert chunked_sys.table.fault_chunk_pages == 16
    assert whole["policy"]["name"] == chunked["policy"]["name"] == "toy-pager"
    assert chunked["run_total"]["faults"] == whole["run_total"]["faults"] > 0
    assert chunked["steady"]["traffic_bytes"] == whole["steady"]["traffic_bytes"]
    assert (chunked["run_total"]["system"]["flash"]["transfers"]
            > whole["run_total"]["system"]["flash"]["transfers"])


def test_a_registered_policys_table_round_trips_and_is_validated(toy: None,
                                                                 tmp_path: Path) -> None:
    cfg = C.with_overrides(C.QUICK, ["policy.toy_pager.fault_chunk_pages=8"])
    assert cfg.policy.toy_pager == ToyParams(fault_chunk_pages=8)
    assert "toy_pager" in policy_tables()
    text = C.dumps(cfg)
    assert "[policy.toy_pager]\nfault_chunk_pages = 8\n" in text
    assert C.from_dict(tomllib.loads(text)) == cfg
    path = tmp_path / "toy.toml"
    path.write_text('[policy]\nname = "toy-pager"\n[policy.toy-pager]\n'
                    "fault_chunk_pages = 8\n")
    assert tmhw.load_config(path).policy.params("toy_pager") == ToyParams(fault_chunk_pages=8)
    with pytest.raises(ConfigError, match=r"^policy\.toy_pager\.fault_chunk_pages = -1: "
                                          r"an integer >= 0$"):
        C.with_overrides(C.QUICK, ["policy.toy_pager.fault_chunk_pages=-1"])
    with pytest.raises(ConfigError, match=r"^policy\.toy_pager\.chunk = 1: unknown key; "
                                          r"valid keys: fault_chunk_pages$"):
        C.with_overrides(C.QUICK, ["policy.toy_pager.chunk=1"])


def test_an_unregistered_policys_table_is_an_unknown_key_listing_the_tables() -> None:
    with pytest.raises(ConfigError, match=r"^policy\.toy_pager = \{.*\}: unknown key; "
                                          r"valid keys: hbm_ratio, lookahead_ops, name, tune, or "
                                          r"a policy's table \(demand, tm_training, "
                                          r"flatflash, sentinel, autotm, ssdtrain, "
                                          r"zero_infinity, recompute, capuchin\)$"):
        C.with_overrides(C.QUICK, ["policy.toy_pager.fault_chunk_pages=8"])
    with pytest.raises(ConfigError, match=r"^policy\.hbm-only = .*: unknown key"):
        C.with_overrides(C.QUICK, ["policy.hbm-only.x=1"])
    with pytest.raises(ConfigError, match=r"^policy\.autotm = 3: must be a table$"):
        C.with_overrides(C.QUICK, ["policy.autotm=3"])


def test_policies_may_share_a_table() -> None:
    """``demand-belady`` is demand paging with another eviction rule: it reads
    ``[policy.demand]``, and has no table of its own."""
    cfg = C.with_overrides(C.QUICK, ["policy.name=demand-belady", "policy.demand.frees=none"])
    assert System(cfg).policy.params == DemandParams(frees="none")
    with pytest.raises(ConfigError, match=r"^policy\.demand-belady = .*: unknown key"):
        C.with_overrides(C.QUICK, ["policy.demand-belady.frees=none"])


def test_a_table_set_to_its_defaults_is_the_default_config() -> None:
    """Configs that run alike compare equal (and so hash to the same run folder and
    sweep point), however their tables were written."""
    same = C.with_overrides(C.QUICK, ["policy.tm-training.split=true",
                                      "policy.demand.frees=runtime"])
    assert same == C.QUICK and same.policy.tables == () and hash(same) == hash(C.QUICK)
    other = C.with_overrides(C.QUICK, ["policy.sentinel.leads=[2]"])
    assert other != C.QUICK and [k for k, _ in other.policy.tables] == ["sentinel"]


def test_a_record_of_the_wrong_class_or_table_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^sentinel = DemandParams.*: a SentinelParams$"):
        C.PolicyConfig(tables=(("sentinel", DemandParams()),))
    with pytest.raises(ConfigError, match=r"^tm-training = .*: a policy's table: one of "):
        C.PolicyConfig(tables=(("tm-training", DemandParams()),))


def test_a_policy_with_parameters_names_their_table() -> None:
    with pytest.raises(TypeError, match="reads them from a table"):
        type("Half", (Policy,), {"Params": ToyParams})


def test_the_config_imports_no_policy_until_a_table_names_one(
        fresh_python: Callable[..., str]) -> None:
    """``import tmhw.config`` and the presets import no policy module (TM-Training's
    and AutoTM's solvers come with theirs); a table of one policy imports that
    policy's module alone."""
    code = ("import sys; import tmhw.config as C; "
            "seen = lambda: sorted(m for m in sys.modules if m.startswith(("
            "'tmhw.placement.tm_training', 'tmhw.placement.autotm', "
            "'tmhw.placement.sentinel', 'tmhw.placement.flatflash', "
            "'tmhw.placement.simple'))); print(seen()); "
            "C.with_overrides(C.PAPER, ['policy.sentinel.leads=[2]']); print(seen())")
    out = fresh_python(code, cwd=Path(__file__).parents[2]).splitlines()
    assert out == ["[]", "['tmhw.placement.sentinel']"]


def test_tm_trainings_switches_under_another_policy_say_so(
        tmhw: Callable[..., Any]) -> None:
    r = tmhw("run", "--preset", "quick", "--policy", "demand", "--no-prefetch")
    assert r.rc == 2
    assert r.err_lines == ["tmhw: error: --no-prefetch: switches off a mechanism of "
                           "TM-Training (policy.tm_training.prefetch), which demand does "
                           "not have; drop it or use --policy tm-training"]
