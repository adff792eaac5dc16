"""FlashNeuron's offloading scheduler (FAST'21) and the "does not fit" outcome.

Phase 1 selects activations in forward order until every op fits: the offloaded set is
a prefix of the candidates, and the shortest prefix that fits. Where even every
candidate offloaded does not fit, planning raises ``DoesNotFit``; its message names the
ratio from which FlashNeuron fits, and at exactly that capacity it does. On the command
line that is one line and exit status 3; in a sweep, status ``does-not-fit``."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tmhw import sweeps as SW
from tmhw.placement.base import PlanContext, op_working_set_pages
from tmhw.placement.flashneuron import FlashNeuron
from tmhw.placement.gaps import GapPlan
from tmhw.placement.table import Action
from tmhw.sim.errors import DoesNotFit
from tmhw.sim.units import S
from tmhw.workload.builder import WorkloadBuilder
from tmhw.workload.graph import Workload

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def deep_nets(draw: st.DrawFn) -> Workload:
    """Linear and element-wise layers whose activations dominate the footprint (wide
    tokens, narrow weights), so that offloading decides whether the iteration fits."""
    tokens = draw(st.sampled_from([256, 512]))
    b = WorkloadBuilder("deep", batch=1, optimizer=draw(st.sampled_from(["adam", "sgd"])))
    d = 32
    x = b.input("x", tokens * d)
    for i in range(draw(st.integers(3, 8))):
        if draw(st.booleans()):
            x = b.linear(f"l{i}", x, tokens, d, d)
        else:
            x = b.eltwise(f"e{i}", (x,), tokens * d, 1.0,
                          saves=draw(st.sampled_from(["input", "output"])))
    return b.finish(x)


def context(wl: Workload, cap: int, op_ps: int = 10_000_000) -> PlanContext:
    """Every op ``op_ps`` long (10 us: a write-back of these nets' activations drains
    within an op; 0.1 us: it does not)."""
    n = len(wl.ops)
    end = np.arange(1, n + 1, dtype=np.int64) * op_ps
    return PlanContext(wl, cap, end - op_ps, end, 7e9, 6.5e9)


def offloaded(tab: Any) -> set[int]:
    return {m.tensor for m in tab.moves if m.action == Action.WRITEBACK}


@SETTINGS
@given(wl=deep_nets(), frac=st.floats(0.0, 1.0), op_ps=st.sampled_from([10_000_000, 100_000]))
def test_phase_one_offloads_the_shortest_forward_prefix_that_fits(
        wl: Workload, frac: float, op_ps: int) -> None:
    ws = int(op_working_set_pages(wl).max())
    foot = -(-wl.peak_live_bytes() // wl.page_size)
    cap = ws + int(frac * max(0, foot - ws))
    ctx = context(wl, cap, op_ps)
    cands = [c[0] for c in FlashNeuron.candidates(GapPlan(ctx))]
    try:
        tab = FlashNeuron().plan(ctx)
    except DoesNotFit:
        return
    chosen = offloaded(tab)
    k = len(chosen)
    assert chosen == set(cands[:k])
    assert tab.notes["offloaded"] == k
    drain = bool(tab.notes["fits_with_writeback_drain"])
    if k:
        # one fewer does not fit, with write-backs counted until flash has them if the
        # plan could fit so, else with pages free at their op's end
        gp = GapPlan(ctx)
        occ = gp.occupancy(drain)
        for t, gi, e, r in FlashNeuron.candidates(gp)[:k - 1]:
            gp.retarget(occ, t, drain, [(gi, e, r)])
        assert occ.max() > cap
    if not drain:
        gp = GapPlan(ctx)
        occ = gp.occupancy(True)
        for t, gi, e, r in FlashNeuron.candidates(gp):
            gp.retarget(occ, t, True, [(gi, e, r)])
        assert occ.max() > cap


def test_does_not_fit_names_the_ratio_from_which_it_fits() -> None:
    """A net whose weights and optimizer state alone exceed HBM: the message gives the
    need at the binding op; a capacity of exactly that need plans, one page less does
    not."""
    b = WorkloadBuilder("wide", batch=1)
    x = b.input("x", 16 * 64)
    for i in range(4):
        x = b.linear(f"l{i}", x, 16, 64 if i == 0 else 512, 512)
    wl = b.finish(x)
    ws = int(op_working_set_pages(wl).max())
    with pytest.raises(DoesNotFit) as info:
        FlashNeuron().plan(context(wl, ws))
    msg = str(info.value)
    assert "\n" not in msg
    gp = GapPlan(context(wl, ws))
    occ = gp.occupancy(drain=False)
    for t, gi, e, r in FlashNeuron.candidates(gp):
        gp.retarget(occ, t, False, [(gi, e, r)])
    need = int(occ.max())
    foot = -(-wl.peak_live_bytes() // wl.page_size)
    m = re.search(r"needs ([\d.]+) MiB .* fits from policy\.hbm_ratio = ([\d.]+)$", msg)
    assert m is not None, msg
    assert m.group(1) == f"{need * wl.page_size / 2**20:.1f}"
    assert float(m.group(2)) == math.ceil(1000 * need / foot) / 1000 <= 1
    FlashNeuron().plan(context(wl, need))
    with pytest.raises(DoesNotFit):
        FlashNeuron().plan(context(wl, need - 1))


def test_offload_estimate_is_one_write_stream_from_each_last_forward_use() -> None:
    """Three 1 MiB activations, each last used in the forward pass at the end of op
    0, 1 and 2 (10 us apart), written at 6.5 GB/s (161.3 us each): the stream is
    busy from 10 us on for 3 x 161.3 us, and ends that long after the forward pass
    (its last op ends at 40 us for the loss) minus the 30 us head start."""
    b = WorkloadBuilder("three", batch=1)
    x = b.input("x", 2**19)
    for i in range(3):
        x = b.eltwise(f"e{i}", (x,), 2**19, 1.0, saves="output")
    wl = b.finish(x)
    gp = GapPlan(context(wl, wl.npages))
    cands = FlashNeuron.candidates(gp)
    w = -(-2**20 * S // int(6.5e9))
    assert all(gp.writeback_ps(t) == w for t, *_ in cands)
    total, overrun = FlashNeuron.offload_estimate(gp, cands)
    assert total == len(cands) * w
    first = min(int(gp.end2[e]) for _, _, e, _ in cands)
    fwd_end = max(int(gp.end2[op.index]) for op in wl.ops if op.phase.value == "forward")
    assert overrun == max(0, first + total - fwd_end)


def test_the_command_line_says_does_not_fit_in_one_line_with_status_3(
        tmhw: Callable[..., Any], tmp_path: Any) -> None:
    """Also for a policy-independent refusal: an op whose operands exceed HBM."""
    out = tmp_path / "out"
    res = tmhw("run", "--preset", "quick", "--policy", "demand", "--hbm-ratio", "0.0000001",
               "--quiet", "--out", str(out))
    assert res.rc == 3
    assert len(res.err_lines) == 1
    assert res.err_lines[0].startswith("tmhw: does not fit: policy.hbm_ratio: op ")
    assert not out.exists()


def test_a_sweep_point_that_does_not_fit_has_its_own_status() -> None:
    res = SW.run_point(SW.make_point("quick", {"policy.name": "flashneuron",
                                                "policy.hbm_ratio": 0.125}))
    assert res["status"] == "does-not-fit" and res["report"] is None
    assert "flashneuron fits from policy.hbm_ratio = 0.881" in res["error"]
