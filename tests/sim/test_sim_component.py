"""Component: hierarchical paths, the SystemC lifecycle in order (elaborate before start,
children finalized before their parent), reports nested like the tree, and wiring errors
that name the path."""

from __future__ import annotations

from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.sim import NULL_TRACER, ElaborationError, Tracer
from tmhw.sim.component import Component
from tmhw.sim.energy import EnergyMeter, EnergyTable
from tmhw.sim.env import Environment


class Probe(Component):
    """Logs every lifecycle hook as (hook, path)."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 log: list[tuple[str, str]], **kw: Any) -> None:
        super().__init__(env, name, parent, **kw)
        self.log = log

    def _elaborate(self) -> None:
        self.log.append(("elaborate", self.path))

    def _start(self) -> None:
        self.log.append(("start", self.path))
        self.env.process(self._tick())

    def _tick(self):  # type: ignore[no-untyped-def]
        yield self.env.timeout(5)
        self.log.append(("tick", self.path))

    def _finalize(self, now: int) -> None:
        self.log.append(("finalize", self.path))

    def _report(self) -> dict[str, Any]:
        return {"name": self.name}


def _tree(log: list[tuple[str, str]]) -> tuple[Probe, Probe, Probe, Probe]:
    env = Environment()
    root = Probe(env, "system", None, log)
    flash = Probe(env, "flash", root, log)
    ch3 = Probe(env, "ch3", flash, log)
    die1 = Probe(env, "die1", ch3, log)
    return root, flash, ch3, die1


def test_paths_follow_the_hierarchy() -> None:
    root, flash, ch3, die1 = _tree([])
    assert die1.path == "system.flash.ch3.die1"
    assert ch3.path == "system.flash.ch3" and root.path == "system"
    assert [c.path for c in root.walk()] == ["system", "system.flash", "system.flash.ch3",
                                            "system.flash.ch3.die1"]
    assert root.children == {"flash": flash}


def test_lifecycle_runs_in_systemc_order() -> None:
    log: list[tuple[str, str]] = []
    root, *_ = _tree(log)
    root.elaborate()
    root.start()
    root.env.run()
    root.finalize(int(root.env.now))
    paths = ["system", "system.flash", "system.flash.ch3", "system.flash.ch3.die1"]
    assert log == ([("elaborate", p) for p in paths] + [("start", p) for p in paths]
                   + [("tick", p) for p in paths]
                   + [("finalize", p) for p in reversed(paths)])   # children first
    assert all(c.finalized_at == 5 for c in root.walk())
    assert root.now == 5


def test_report_nests_children_under_their_names() -> None:
    root, flash, ch3, die1 = _tree([])
    die1.energy = EnergyMeter(EnergyTable({"read": 2.0}))
    die1.energy.add("read", 3)
    root.finalize(0)
    assert root.report() == {
        "name": "system",
        "flash": {"name": "flash",
                  "ch3": {"name": "ch3",
                          "die1": {"name": "die1", "energy_pj": {"read": 6.0, "total": 6.0}}}}}


def test_duplicate_child_is_an_elaboration_error_naming_the_parent() -> None:
    env = Environment()
    root = Component(env, "system")
    flash = Component(env, "flash", root)
    Component(env, "ch0", flash)
    with pytest.raises(ElaborationError, match=r"system\.flash: duplicate child 'ch0'"):
        Component(env, "ch0", flash)
    assert list(flash.children) == ["ch0"]


@pytest.mark.parametrize("name", ["", "ch.0"])
def test_names_must_be_non_empty_and_dot_free(name: str) -> None:
    with pytest.raises(ElaborationError):
        Component(Environment(), name)


def test_elaboration_failure_names_the_component_path() -> None:
    class Unbound(Component):
        def _elaborate(self) -> None:
            raise self.fail("port 'hbm' is not bound")

    env = Environment()
    root = Component(env, "system")
    Unbound(env, "npu", root)
    with pytest.raises(ElaborationError, match=r"^system\.npu: port 'hbm' is not bound$"):
        root.elaborate()


def test_children_inherit_the_tracer_unless_given_one() -> None:
    env = Environment()
    assert Component(env, "alone").tracer is NULL_TRACER
    tr, other = Tracer(), Tracer()
    root = Component(env, "system", tracer=tr)
    a = Component(env, "a", root)
    b = Component(env, "b", a, tracer=other)
    assert a.tracer is tr and b.tracer is other


def test_environment_counts_processed_events() -> None:
    env = Environment()

    def proc():  # type: ignore[no-untyped-def]
        for _ in range(3):
            yield env.timeout(1)

    env.process(proc())
    env.run()
    # The process's initialisation, three timeouts, and the process's own end event.
    assert env.events == 5


def _trace_run(env: simpy.Environment, delays: list[list[int]], stops: list[int]
               ) -> list[tuple[str, int, int]]:
    """Processes waiting ``delays`` each (one fails at its end when its last delay is
    odd, caught by a watcher), the run cut at each of ``stops`` then to the end: what
    ran, when, in order."""
    seen: list[tuple[str, int, int]] = []

    def proc(i: int, ds: list[int]):  # type: ignore[no-untyped-def]
        for d in ds:
            yield env.timeout(d)
            seen.append(("step", i, int(env.now)))
        if ds and ds[-1] % 2:
            raise ValueError(i)
        return i

    def watch(p: simpy.Process, i: int):  # type: ignore[no-untyped-def]
        try:
            v = yield p
            seen.append(("done", v, int(env.now)))
        except ValueError:
            seen.append(("failed", i, int(env.now)))

    for i, ds in enumerate(delays):
        env.process(watch(env.process(proc(i, ds)), i))
    for t in sorted(set(stops)):
        if t > env.now:
            env.run(until=t)
            seen.append(("stop", t, int(env.now)))
    end = env.event()
    env.process(watch(env.process(proc(-1, [max(stops) + 1])), -1))
    env.timeout(max(stops) + 1).callbacks.append(lambda _: end.succeed(7))
    seen.append(("until-event", int(env.run(until=end)), int(env.now)))
    env.run()
    seen.append(("end", 0, int(env.now)))
    return seen


@given(delays=st.lists(st.lists(st.integers(0, 5), max_size=5), max_size=6),
       stops=st.lists(st.integers(1, 20), min_size=1, max_size=4))
@settings(max_examples=60, deadline=None)
def test_the_counting_environment_runs_as_simpy_does(delays: list[list[int]],
                                                     stops: list[int]) -> None:
    """``Environment.run`` (SimPy's loop written out) against ``simpy.Environment.run``:
    the same events in the same order at the same times, through runs cut at times and
    at an event, failed processes and a run to the end; and it counts every event."""
    ours, stepped = Environment(), _SteppedEnvironment()
    assert _trace_run(ours, delays, stops) == _trace_run(stepped, delays, stops)
    assert ours.events == stepped.events > 0


class _SteppedEnvironment(Environment):
    """The counting environment run by SimPy's own loop (a ``step`` call per event)."""

    run = simpy.Environment.run


@pytest.mark.parametrize("env_type", [Environment, _SteppedEnvironment])
def test_a_failure_nobody_waits_for_ends_the_run_with_its_error(
        env_type: type[Environment]) -> None:
    env = env_type()

    def fail():  # type: ignore[no-untyped-def]
        yield env.timeout(3)
        raise ValueError("lost")

    env.process(fail())
    env.timeout(10)
    with pytest.raises(ValueError, match="lost"):
        env.run()
    assert env.now == 3 and env.events == 3   # its start, its timeout, its end
