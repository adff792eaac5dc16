"""Lower bounds on iteration time (``tmhw.placement.bounds.time_bound_ps``: the largest of
the NPU alone, the full-duplex link, the flash device and the phase bound), the ratios a
report gives against them, and the bounds a system computes: ``tmhw bound`` prints a
run's, and they depend neither on the policy nor on what the process computed before.
The traffic bound itself is checked in test_bounds.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tmhw.config import PAPER, QUICK, with_overrides
from tmhw.placement.bounds import ratios, time_bound_ps, traffic_bound
from tmhw.placement.gaps import GapPlan
from tmhw.placement.lp import LpResult
from tmhw.placement.registry import POLICIES
from tmhw.sim.units import S
from tmhw.system import System


def test_time_bound_is_the_largest_of_compute_link_and_flash() -> None:
    gb = 10**9
    # link: 2 GB at 1 GB/s = 2 s
    assert time_bound_ps(1 * S, 2 * gb, 0, 1e9, 0) == 2 * S
    assert time_bound_ps(3 * S, 2 * gb, 0, 1e9, 0) == 3 * S
    assert time_bound_ps(1 * S, 2 * gb, 0, 1e9, 5 * S) == 5 * S
    assert time_bound_ps(0, 0, 0, 1e9, 0) == 0


def test_link_is_full_duplex_so_only_the_busier_direction_counts() -> None:
    gb = 10**9
    assert time_bound_ps(0, 3 * gb, 3 * gb, 1e9, 0) == 3 * S
    assert time_bound_ps(0, 1 * gb, 4 * gb, 1e9, 0) == 4 * S


def test_link_time_rounds_up_to_a_whole_ps() -> None:
    # 1 byte at 3 bytes/s is 333,333,333,333.33 ps
    assert time_bound_ps(0, 1, 0, 3.0, 0) == S // 3 + 1
    with pytest.raises(ValueError):
        time_bound_ps(0, 1, 0, 0.0, 0)
    with pytest.raises(ValueError):
        time_bound_ps(-1, 0, 0, 1e9, 0)


def test_ratios_divide_by_the_bound_and_stay_json_safe_when_it_is_zero() -> None:
    assert ratios(300, 50, 100, 25) == {"traffic_ratio": 3.0, "time_ratio": 2.0}
    assert ratios(0, 10, 0, 10) == {"traffic_ratio": 1.0, "time_ratio": 1.0}
    r = ratios(5, 0, 0, 0)
    assert r == {"traffic_ratio": None, "time_ratio": 1.0}
    assert json.loads(json.dumps(r)) == r


def test_bound_command_prints_the_report_bounds_of_the_same_config(
        tmhw: Callable[..., Any]) -> None:
    """``tmhw bound`` gives the figures a run's report carries under ``bounds``: on the
    quick preset at 12.5%, 3428.6 MiB per iteration (the LP's minimum), and the largest
    of the NPU's time alone, the link's, the flash device's batch time for it and the
    phase bound."""
    from tmhw import config as C
    from tmhw.system import System

    res = tmhw("bound", "--preset", "quick", "--hbm-ratio", "0.125", "--json")
    assert res.rc == 0, res.err
    b = json.loads(res.out)
    sysm = System(C.with_overrides(C.QUICK, ["policy.hbm_ratio=0.125"]))
    assert b == sysm.bounds()
    assert b["traffic_bytes"] == 3595108352          # 3428.6 MiB
    assert b["iteration_time_ps"] == max(b["npu_ps"], b["link_ps"], b["flash_ps"],
                                         b["die_ps"], b["phase_ps"])
    assert b["npu_ps"] >= b["npu_ops_ps"]
    bad = tmhw("bound", "--preset", "quick", "--hbm-ratio", "2")
    assert bad.rc == 2 and len(bad.err.strip().splitlines()) == 1
    assert "policy.hbm_ratio" in bad.err


def test_a_preference_picks_among_the_cheapest_plans_without_moving_more() -> None:
    """``prefer`` breaks ties among the fewest-bytes plans only: the traffic is the same
    with any preference, and the preferred (long) gaps carry more of the evicted pages."""
    from tmhw import config as C
    from tmhw.system import System

    s = System(C.with_overrides(C.QUICK, ["policy.hbm_ratio=0.25",
                                          'policy.name="demand"']))
    gp = GapPlan(s.ctx)
    plain = traffic_bound(gp, s.capacity_pages)
    span = (gp.start2[gp.gb] - gp.end2[gp.ga]).astype(np.float64)
    long = traffic_bound(gp, s.capacity_pages, prefer=span)
    short = traffic_bound(gp, s.capacity_pages, prefer=-span)
    assert plain.total_bytes == long.total_bytes == short.total_bytes
    assert float(span @ long.evicted_pages) > float(span @ short.evicted_pages)


@pytest.mark.parametrize("ratio", ["0.25", "0.9"])
def test_the_interior_point_route_ends_on_an_equally_preferred_cheapest_plan(
        ratio: str) -> None:
    """The preference LP solved by the interior point method (``simplex_columns`` 0, as
    the planner does above the limit) moves the fewest bytes and is as preferred as the
    dual simplex's plan: at 1/4 HBM the same plan, at 0.9 another vertex of the same
    optimal face (the reason small LPs stay on the simplex)."""
    from tmhw import config as C
    from tmhw.system import System

    s = System(C.with_overrides(C.QUICK, [f"policy.hbm_ratio={ratio}",
                                          'policy.name="demand"']))
    gp = GapPlan(s.ctx)
    span = (gp.start2[gp.gb] - gp.end2[gp.ga]).astype(np.float64)
    simplex = traffic_bound(gp, s.capacity_pages, prefer=span)
    interior = traffic_bound(gp, s.capacity_pages, prefer=span, simplex_columns=0)
    assert interior.total_bytes == simplex.total_bytes == \
        traffic_bound(gp, s.capacity_pages).total_bytes
    assert float(span @ interior.evicted_pages) == pytest.approx(
        float(span @ simplex.evicted_pages), rel=1e-12)
    same = bool(np.array_equal(interior.evicted_pages, simplex.evicted_pages))
    assert same == (ratio == "0.25")


def test_where_the_interior_point_fails_the_simplex_solves_the_preference_lp(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An interior point solve that ends without a solution is not the end of the
    preference: the dual simplex solves it (at 0.9 HBM on the quick preset the two
    routes' plans differ, so the plan shows which ran)."""
    import tmhw.placement.bounds as B
    from tmhw import config as C
    from tmhw.system import System

    s = System(C.with_overrides(C.QUICK, ["policy.hbm_ratio=0.9", 'policy.name="demand"']))
    gp = GapPlan(s.ctx)
    span = (gp.start2[gp.gb] - gp.end2[gp.ga]).astype(np.float64)
    simplex = traffic_bound(gp, s.capacity_pages, prefer=span)
    monkeypatch.setattr(B, "_interior_lp2", lambda *a: LpResult(
        4, "numerical difficulties", np.zeros(0), float("nan")))
    fallen = traffic_bound(gp, s.capacity_pages, prefer=span, simplex_columns=0)
    assert np.array_equal(fallen.evicted_pages, simplex.evicted_pages)


def test_bounds_do_not_depend_on_the_policy_or_on_which_ran_first() -> None:
    """The same machine, workload and capacity give the same bounds under every policy,
    computed afresh or from the process's cache."""
    from tmhw import config as C
    from tmhw import lower_bounds
    from tmhw.system import System

    def fresh(policy: str) -> dict[str, Any]:
        lower_bounds.MEMO.clear()
        return System(C.with_overrides(C.QUICK, ["policy.hbm_ratio=0.25",
                                                 f'policy.name="{policy}"'])).bounds()

    tm, demand = fresh("tm-training"), fresh("demand")
    assert tm == demand
    cached = System(C.with_overrides(C.QUICK, ["policy.hbm_ratio=0.25",
                                               'policy.name="sentinel"'])).bounds()
    assert cached == demand


def test_a_policy_that_evicts_the_mini_batch_still_moves_no_less_than_the_bound() -> None:
    """AutoTM evicts ResNet-50's input mini-batch at 12.5% HBM (written back, as flash has
    no copy, and fetched again) and so moves 3001 MB per steady-state iteration. A bound
    that kept the mini-batch resident said 3041 MB; with the mini-batch movable it is
    2981 MB, and no run moves less."""
    cfg = with_overrides(PAPER, ['workload.model="resnet50"', "workload.batch=32",
                                 "policy.hbm_ratio=0.125", 'policy.name="autotm"',
                                 "run.iterations=3"])
    system = System(cfg)
    gp = GapPlan(system.ctx)
    kept = traffic_bound(gp, system.capacity_pages)
    movable = traffic_bound(gp, system.capacity_pages, movable_input=True)
    assert movable.total_bytes <= kept.total_bytes
    rep = system.run()
    moved = rep["steady"]["traffic_bytes"]["inter_tier"]
    assert rep["bounds"]["traffic_bytes"] == movable.total_bytes <= moved < kept.total_bytes


def test_bounds_do_not_depend_on_what_the_process_computed_before() -> None:
    """A sweep's worker computes bounds for one point after another, each part memoised
    by what it depends on. The NPU-alone times are the hbm-only machine's (task addresses
    wrapped at the footprint, not at this capacity, which would move per-op times and so
    the phase bound): bounds after another capacity's equal fresh ones."""
    from tmhw import config as C
    from tmhw import lower_bounds
    from tmhw.system import System

    def bounds(ratio: float) -> dict[str, Any]:
        return System(C.with_overrides(C.PAPER, [
            'workload.model="resnet18"', "workload.batch=2",
            'policy.name="demand"', f"policy.hbm_ratio={ratio}"])).bounds()

    lower_bounds.MEMO.clear()
    fresh = bounds(0.25)
    lower_bounds.MEMO.clear()
    bounds(0.5)
    assert bounds(0.25) == fresh


def test_the_traffic_bound_is_solved_once_across_flash_and_link() -> None:
    """The traffic LP counts pages over the ops' order: a sweep's points that differ in
    SSDs and link lanes only share one solve, and their bounds equal fresh ones."""
    from tmhw import config as C
    from tmhw import lower_bounds
    from tmhw.placement import bounds as bmod
    from tmhw.system import System

    def bounds(devices: int) -> dict[str, Any]:
        return System(C.with_overrides(C.QUICK, [
            "policy.hbm_ratio=0.25", f"flash.devices={devices}",
            f"link.lanes={max(16, 4 * devices)}"])).bounds()

    lower_bounds.MEMO.clear()
    fresh = bounds(1)
    solves = []
    real = bmod.traffic_bound

    def spy(*a: Any, **k: Any) -> Any:
        solves.append(1)
        return real(*a, **k)

    lower_bounds.MEMO.clear()
    try:
        bmod.traffic_bound = spy  # type: ignore[assignment]
        four = bounds(4)
        again = bounds(1)
    finally:
        bmod.traffic_bound = real  # type: ignore[assignment]
    assert len(solves) == 1
    assert again == fresh
    assert four["traffic_bytes"] == fresh["traffic_bytes"]


def test_the_npu_alone_bound_is_the_hbm_only_machines_shortest_warm_iteration() -> None:
    """The NPU's own time bound is every op on the hbm-only machine once its HBM is warm:
    the shortest of its iterations after the first (which starts from idle rows, banks
    and refresh, and differs by a few ppm; where refresh falls shifts from one iteration
    to the next). The same addresses, so the same per-op times whatever the tiered
    capacity."""
    from tmhw import config as C
    from tmhw.lower_bounds import WARM_PASSES
    from tmhw.system import System

    base = ['workload.model="resnet18"', "workload.batch=2",
            f"run.iterations={WARM_PASSES + 1}", "run.warmup_iterations=1"]
    hbm = System(C.with_overrides(C.PAPER, [*base, 'policy.name="hbm-only"'])).run()
    first, *warm = (it["time_ps"] for it in hbm["per_iteration"])
    assert first not in warm
    for ratio in (0.25, 0.5):
        tiered = System(C.with_overrides(C.PAPER, [*base, 'policy.name="demand"',
                                                   f"policy.hbm_ratio={ratio}"])).bounds()
        assert tiered["npu_ps"] == min(warm)


@pytest.mark.parametrize("at_once", [True, False])
def test_the_npu_alone_passes_give_the_same_times_on_a_thread_of_their_own(
        at_once: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's NPU-alone passes run beside it on a thread of their own
    (``lower_bounds.start_bounds``) where the HBM books a pass in one compiled call
    (``NPU.books_ops_at_once``: the fast model), on a machine of their own: the same
    per-op times as on the caller's thread while the caller books ops on another
    machine meanwhile. Where it books op by op in Python (the detailed model), the
    passes stay on the caller's thread."""
    import threading

    from tmhw import config as C
    from tmhw import lower_bounds

    system = System(C.with_overrides(C.PAPER, ['workload.model="resnet18"',
                                               "workload.batch=2"]))
    inp = system.bounds_input()
    threads: list[str] = []
    passes = lower_bounds.NPU.back_to_back

    def spy(self: Any, tasks: Any, n: int) -> Any:
        threads.append(threading.current_thread().name)
        return passes(self, tasks, n)

    monkeypatch.setattr(lower_bounds.NPU, "back_to_back", spy)
    here = lower_bounds.npu_alone_ps(inp)
    if not at_once:
        monkeypatch.setattr(lower_bounds.NPU, "books_ops_at_once", lambda self: False)
    wait = lower_bounds.npu_alone_later(inp, background=True)
    # the caller meanwhile books the same ops on the run's own NPU
    for task in inp.tasks_at(inp.capacity_pages):
        system.npu.book(task, 0)
    beside = wait()
    assert np.array_equal(here, beside)
    assert threads[0] == threading.current_thread().name
    assert (threads[1] == "tmhw-npu-alone") == at_once


@pytest.mark.parametrize("model", ["fast", "detailed"])
def test_an_npu_books_its_ops_at_once_on_the_fast_hbm_only(model: str) -> None:
    """Only the fast HBM books an op's chunks in one compiled call (``serve_ops``); the
    detailed one, transfer by transfer."""
    from dram import PRESETS, DramTarget
    from npu import NPU
    from tmhw import config as C
    from tmhw.sim.component import Component
    from tmhw.sim.env import Environment

    env = Environment()
    root = Component(env, "m")
    hbm = DramTarget(env, "hbm", root, PRESETS["hbm2"], model=model)
    assert NPU(env, "npu", root, C.PAPER.npu, hbm).books_ops_at_once() == (model == "fast")


def test_numba_loads_on_the_callers_thread_before_the_passes_start_on_theirs(
        fresh_python: Callable[..., str]) -> None:
    """numba's import hides scipy's BLAS from every thread while it runs
    (``tmhw.sim.jit._skip_blas_probe``); a run's first kernel call on the passes' thread
    once met the run's own import of scipy for its LPs (a sweep's point failed with
    "import of scipy.linalg.cython_blas halted"). So, in a fresh process, every kernel's
    dispatcher is made before each of the bounds' threads starts (the solved parts'
    beside the plan, ``solve_ahead``, their NAND LPs', and the NPU-alone passes), and
    scipy imports beside them."""

    code = ("import threading\n"
            "from tmhw import config as C, lower_bounds\n"
            "from tmhw.sim import jit\n"
            "from tmhw.system import System\n"
            "seen = []\n"
            "start = threading.Thread.start\n"
            "def spy(t):\n"
            "    seen.append((t.name, all(k.dispatcher is not None for k in jit._KERNELS)))\n"
            "    start(t)\n"
            "threading.Thread.start = spy\n"
            "loaded = any(k.dispatcher is not None for k in jit._KERNELS)\n"
            "s = System(C.with_overrides(C.QUICK, []))\n"
            "wait = lower_bounds.npu_alone_later(s.bounds_input(), background=True)\n"
            "import scipy.optimize\n"
            "print(loaded, sorted(seen), wait().size == len(s.workload.ops))")
    out = fresh_python(code)
    assert out.strip() == ("False [('tmhw-bounds', True), ('tmhw-bounds-nand', True), "
                           "('tmhw-npu-alone', True)] True")


def test_the_solved_parts_asked_for_while_solving_ahead_are_waited_for_not_solved_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``solved_parts`` called while ``solve_ahead``'s thread still solves waits for it:
    the traffic LP is solved once, on that thread (it once left ``_SOLVING`` as it
    started, so that a plan that finished first solved every part again beside it)."""
    import threading
    import time

    import tmhw.placement.bounds as B
    from tmhw import config as C
    from tmhw import lower_bounds

    s = System(C.with_overrides(C.QUICK, ["policy.hbm_ratio=0.25"]))
    inp = s.bounds_input()
    lower_bounds.solved_parts(inp)  # the system's own thread, ended
    lower_bounds.MEMO.clear()
    gate, calls = threading.Event(), []
    real = B.traffic_bound

    def held(*args: Any, **kw: Any) -> Any:
        calls.append(threading.current_thread().name)
        gate.wait()
        return real(*args, **kw)

    monkeypatch.setattr(B, "traffic_bound", held)
    lower_bounds.solve_ahead(inp)
    while not calls:  # the thread is inside the LP
        time.sleep(0.001)
    got: list[Any] = []
    asker = threading.Thread(target=lambda: got.append(lower_bounds.solved_parts(inp)),
                             name="asker")
    asker.start()
    gate.set()
    asker.join()
    assert calls == ["tmhw-bounds"]
    assert got[0][1:] == lower_bounds.solved_parts(inp)[1:]
    lower_bounds.MEMO.clear()


def test_the_nand_lps_are_solved_once_beside_the_traffic_lp(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ahead of the plan, the two NAND LPs are solved on a thread of their own, once
    each, beside the traffic LP and the batch (HiGHS lets Python's lock go: GPT-2
    medium at 1024 layers had its bounds 6.4 s sooner), and the parts are those solved
    afresh on one thread."""
    import threading

    import tmhw.placement.nand_bound as NB
    from tmhw import config as C
    from tmhw import lower_bounds

    s = System(C.with_overrides(C.QUICK, ["policy.hbm_ratio=0.25"]))
    inp = s.bounds_input()
    alone = lower_bounds.solved_parts(inp)  # the system's own thread, ended
    lower_bounds.MEMO.clear()
    calls: list[tuple[str, str]] = []
    real = NB.least_pages

    def spy(gp: Any, cap: int, kind: str) -> float:
        calls.append((threading.current_thread().name, kind))
        return real(gp, cap, kind)

    monkeypatch.setattr(NB, "least_pages", spy)
    lower_bounds.solve_ahead(inp)
    got = lower_bounds.solved_parts(inp)
    assert sorted(calls) == [("tmhw-bounds-nand", "nand_reads"),
                             ("tmhw-bounds-nand", "programs")]
    assert got[1:] == alone[1:]
    lower_bounds.MEMO.clear()


def test_a_run_simulates_while_its_nand_lps_are_solved(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The NAND LPs are needed only for the report: the run simulates beside them
    (``lower_bounds.nand_later``; GPT-2 medium at 1024 layers had waited 11 s of HiGHS
    for them before its first event), and they are solved once each, on their own
    thread, to the bounds solved on one thread. The LPs here wait until
    the simulation has begun: were the run to wait for them, they would give up and
    the test fail."""
    import threading

    import tmhw.placement.nand_bound as NB
    from tmhw import lower_bounds
    from tmhw.sim.env import Environment

    cfg = with_overrides(QUICK, ["policy.hbm_ratio=0.25", "run.iterations=2"])
    monkeypatch.setattr(lower_bounds, "MEMO", {})
    waited = System(cfg).bounds()  # every part on this thread, nothing simulated
    monkeypatch.setattr(lower_bounds, "MEMO", {})
    began, calls = threading.Event(), []
    real_lp, real_run = NB.least_pages, Environment.run

    def held(gp: Any, cap: int, kind: str) -> float:
        calls.append((threading.current_thread().name, kind))
        if not began.wait(60):
            raise AssertionError("the run waited for the NAND LPs")
        return real_lp(gp, cap, kind)

    def run(self: Environment, *args: Any, **kw: Any) -> Any:
        began.set()
        return real_run(self, *args, **kw)

    monkeypatch.setattr(NB, "least_pages", held)
    monkeypatch.setattr(Environment, "run", run)
    got = System(cfg).run()["bounds"]
    assert {k: got[k] for k in waited} == waited
    assert sorted(calls) == [("tmhw-bounds-nand", "nand_reads"),
                             ("tmhw-bounds-nand", "programs")]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_at_hbm_ratio_one_every_policy_sits_on_the_time_bound(policy: str) -> None:
    """With HBM holding the whole footprint nothing moves between the tiers, every
    policy runs the hbm-only machine's iterations, and the bound is the NPU alone from
    a warm HBM, its shortest warm pass: time_ratio is 1 to within where refresh falls
    in the measured iterations, 31 ppb here (a bound from a cold start gave 0.999996,
    under 1; the shortest of three warm passes gave exactly 1.0 on this cell but sat
    0.02% over an iteration another cell ran, ``lower_bounds.npu_alone_ps``)."""
    rep = System(with_overrides(QUICK, [f'policy.name="{policy}"', "policy.hbm_ratio=1",
                                        "workload.layers=2", "run.iterations=3",
                                        "run.warmup_iterations=1"])).run()
    assert rep["steady"]["traffic_bytes"]["inter_tier"] == 0
    assert 1.0 <= rep["bounds"]["time_ratio"] <= 1.0 + 1e-7
