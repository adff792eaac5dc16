"""Energy: a meter turns counts x per-action energy, busy time x active power and run
time x idle power into pJ. Energy is never negative, and a component tree's total is
the sum of its meters."""

from __future__ import annotations

import math

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.sim.component import Component
from tmhw.sim.energy import EnergyMeter, EnergyTable
from tmhw.sim.units import MW_PS_TO_PJ, energy_pj

ACTIONS = ("read", "write", "erase")

tables = st.builds(
    EnergyTable,
    action_pj=st.fixed_dictionaries({a: st.floats(0, 1e6) for a in ACTIONS}),
    active_mw=st.floats(0, 1e5), idle_mw=st.floats(0, 1e5))
activity = st.tuples(
    st.fixed_dictionaries({a: st.integers(0, 10**9) for a in ACTIONS}),
    st.integers(0, 10**12),                                   # busy ps
    st.lists(st.tuples(st.sampled_from(["bg", "refresh"]), st.floats(0, 1e12)),
             max_size=4))                                     # add_pj


def _meter(table: EnergyTable, act: tuple[dict[str, int], int, list[tuple[str, float]]]
           ) -> EnergyMeter:
    counts, busy, extra = act
    m = EnergyMeter(table)
    for a, n in counts.items():
        m.add(a, n)
    m.add_busy(busy)
    for cat, pj in extra:
        m.add_pj(cat, pj)
    return m


@settings(max_examples=150, deadline=None)
@given(tables, activity, st.integers(0, 10**13))
def test_energy_is_counts_times_table_plus_power_times_time(table: EnergyTable, act,
                                                             now: int) -> None:
    counts, busy, extra = act
    m = _meter(table, act)
    m.finalize(now)
    expected = (sum(counts[a] * table.action_pj[a] for a in ACTIONS)
                + table.active_mw * busy * MW_PS_TO_PJ + table.idle_mw * now * MW_PS_TO_PJ
                + math.fsum(pj for _, pj in extra))
    assert m.total_pj >= 0.0
    assert m.total_pj == pytest.approx(expected, rel=1e-9, abs=1e-9)
    by = m.by_action
    assert all(v >= 0 for v in by.values())
    assert sum(by.values()) == pytest.approx(m.total_pj, rel=1e-12, abs=1e-12)
    for a in ACTIONS:
        assert by[a] == counts[a] * table.action_pj[a]
    assert by.get("static", 0.0) == pytest.approx(energy_pj(table.idle_mw, now))
    assert by.get("active", 0.0) == pytest.approx(energy_pj(table.active_mw, busy))
    rep = m.report()
    assert rep["total"] == m.total_pj
    assert all(v > 0 for k, v in rep.items() if k != "total")


class _Block(Component):
    """A leaf that owns a meter."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component,
                 table: EnergyTable) -> None:
        super().__init__(env, name, parent)
        self.energy = EnergyMeter(table)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(tables, activity), min_size=1, max_size=6),
       st.integers(1, 4), st.integers(0, 10**12))
def test_energy_is_additive_over_a_component_tree(blocks, fan: int, now: int) -> None:
    env = simpy.Environment()
    root = Component(env, "system")
    groups = [Component(env, f"g{i}", root) for i in range(fan)]
    leaves = []
    for i, (table, act) in enumerate(blocks):
        leaf = _Block(env, f"b{i}", groups[i % fan], table)
        counts, busy, extra = act
        for a, n in counts.items():
            leaf.energy.add(a, n)            # type: ignore[union-attr]
        leaf.energy.add_busy(busy)           # type: ignore[union-attr]
        for cat, pj in extra:
            leaf.energy.add_pj(cat, pj)      # type: ignore[union-attr]
        leaves.append(leaf)
    root.finalize(now)
    parts = [leaf.energy.total_pj for leaf in leaves]  # type: ignore[union-attr]
    assert all(p >= 0 for p in parts)
    assert root.total_energy_pj() == pytest.approx(math.fsum(parts), rel=1e-12)
    assert math.fsum(g.total_energy_pj() for g in groups) == \
        pytest.approx(root.total_energy_pj(), rel=1e-12)
    # Each meter is reported where its component sits in the tree.
    rep = root.report()
    for i, leaf in enumerate(leaves):
        assert rep[f"g{i % fan}"][f"b{i}"]["energy_pj"]["total"] == leaf.energy.total_pj  # type: ignore[union-attr]


def test_meter_refuses_unknown_actions_and_negative_amounts() -> None:
    m = EnergyMeter(EnergyTable({"read": 2.0}))
    with pytest.raises(KeyError, match="read"):
        m.add("program")
    with pytest.raises(ValueError):
        m.add("read", -1)
    with pytest.raises(ValueError):
        m.add_busy(-5)
    with pytest.raises(ValueError):
        m.add_pj("bg", -1.0)
    with pytest.raises(ValueError):
        m.add_pj("bg", float("nan"))
    m.finalize(0)
    assert m.total_pj == 0.0


@pytest.mark.parametrize("kw", [
    {"action_pj": {"read": -1.0}}, {"action_pj": {"read": float("nan")}},
    {"active_mw": -1.0}, {"idle_mw": -0.5}, {"idle_mw": float("nan")},
])
def test_table_refuses_negative_or_nan_energies(kw: dict) -> None:
    with pytest.raises(ValueError):
        EnergyTable(**kw)


def test_finalize_twice_gives_the_same_total() -> None:
    m = EnergyMeter(EnergyTable({"read": 3.0}, active_mw=2.0, idle_mw=1.0))
    m.add("read", 10)
    m.add_busy(1000)
    m.finalize(5000)
    first = m.total_pj
    m.finalize(5000)
    assert m.total_pj == first == 30.0 + 2.0 + 5.0
