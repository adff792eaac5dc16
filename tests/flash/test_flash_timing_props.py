"""Timing properties of both models: no die or channel ever does two things at once,
nothing completes before it starts, and a transaction costs a bounded number of events."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
import simpy
from flash_devices import plain, small
from hypothesis import given, settings
from hypothesis import strategies as st

from flash import PRESETS, FlashTarget
from flash.bench import run_bench
from tmhw.sim import Op, Transfer
from tmhw.sim.units import KiB, MiB

CFG = small(blocks_per_plane=32, pages_per_block=8, over_provisioning=0.2)

requests = st.lists(
    st.tuples(st.sampled_from([Op.READ, Op.WRITE, Op.WRITE, Op.TRIM]),
              st.integers(0, CFG.capacity - 1),
              st.integers(1, 24 * CFG.page_size),
              st.integers(0, 3_000_000_000)),
    min_size=1, max_size=60)


def _no_overlap(spans: list[list[tuple[int, int]]], what: str) -> None:
    for i, lane in enumerate(spans):
        s = sorted(lane)
        for (a0, a1), (b0, b1) in zip(s, s[1:], strict=False):
            assert a1 <= b0, f"{what}{i}: [{a0}, {a1}) overlaps [{b0}, {b1})"


@pytest.mark.parametrize("model", ["fast", "detailed"])
@settings(max_examples=40, deadline=None)
@given(reqs=requests, precondition=st.sampled_from([0.0, 0.98]))
def test_operations_never_overlap_on_a_die_or_a_channel(model: str, reqs: list[Any],
                                                        precondition: float) -> None:
    t = FlashTarget(simpy.Environment(), "flash", None, CFG, model=model,
                    precondition=precondition, record=True)
    for op, addr, n, earliest in reqs:
        n = min(n, CFG.capacity - addr)
        end = t.transport(Transfer(op, addr, n), earliest)
        assert end >= earliest
        if op is not Op.TRIM:
            assert end > earliest
    assert t.dies.spans is not None and t.channels.spans is not None
    _no_overlap(t.dies.spans, "die")
    _no_overlap(t.channels.spans, "channel")
    t.ftl.check()


class CountingEnv(simpy.Environment):
    """Counts every event scheduled."""

    def __init__(self) -> None:
        super().__init__()
        self.scheduled = 0

    def schedule(self, event: Any, priority: Any = 1, delay: Any = 0) -> None:
        self.scheduled += 1
        super().schedule(event, priority, delay)


@pytest.mark.parametrize("model", ["fast", "detailed"])
@pytest.mark.parametrize("pattern,size", [("randread", 16 * KiB), ("seqwrite", 2 * MiB),
                                          ("randwrite", 16 * KiB)])
def test_a_transaction_costs_one_event(model: str, pattern: str, size: int) -> None:
    env = CountingEnv()
    count, qd = 2000, 16
    run_bench(small(), pattern=pattern, size=size, qd=qd, count=count,
              precondition=0.9, model=model, env=env)
    # one timeout per request, plus each worker's start and end
    assert env.scheduled <= count + 3 * qd


def test_the_dma_engine_can_yield_once_for_many_chunks() -> None:
    env = simpy.Environment()
    t = FlashTarget(env, "flash", None, PRESETS["990pro"])

    def dma() -> Generator[simpy.Event, Any, None]:
        ends = [t.transport(Transfer(Op.READ, i * 2 * MiB, 2 * MiB), env.now)
                for i in range(16)]
        yield env.timeout(max(ends) - env.now)

    env.process(dma())
    env.run()
    # 32 MiB at the host link's rate for 2 MiB reads (7.13 GB/s), plus the first page's
    # latency
    rate = PRESETS["990pro"].pcie.read_throughput(2 * MiB)
    assert env.now == pytest.approx(32 * MiB / rate * 1e12, rel=0.02)


def test_each_transaction_is_one_trace_span() -> None:
    from tmhw.sim import Tracer

    tr = Tracer()
    t = FlashTarget(simpy.Environment(), "flash", None, PRESETS["990pro"], tracer=tr)
    end = t.transport(Transfer(Op.READ, 0, 2 * MiB), 0)
    t.transport(Transfer(Op.WRITE, 0, 16 * KiB), end)
    assert [(lane, s, name) for lane, s, _e, name, _a in tr.spans] == [
        ("flash", 0, "read"), ("flash", end, "write")]


@pytest.mark.parametrize("depth", [1, 8])
def test_a_full_die_queue_holds_back_the_next_program(depth: int) -> None:

    cfg = plain("990pro", die_queue_depth=depth, write_buffer_bytes=0)
    t = FlashTarget(simpy.Environment(), "flash", None, cfg, model="detailed")
    # eight programs of plane 0 of die 0 (logical pages k x planes), all issued at time 0
    ends = [t.transport(Transfer(Op.WRITE, k * cfg.planes * cfg.page_size, cfg.page_size), 0)
            for k in range(8)]
    t_prog = cfg.t_prog
    steps = [b - a for a, b in zip(ends, ends[1:], strict=False)]
    if depth == 8:  # all queued at once: tPROGs back to back after the first
        assert steps == [t_prog] * 7
    else:  # each command (and its data-in) waits for the previous program to end
        each = cfg.program_command_ps(1) + cfg.data_ps(cfg.page_size) + t_prog
        assert steps == [each] * 7


def test_energy_is_counted_once_however_often_the_target_is_finalized() -> None:
    cfg = PRESETS["990pro"]
    t = FlashTarget(simpy.Environment(), "flash", None, cfg)
    end = t.transport(Transfer(Op.READ, 0, 4 * cfg.page_size), 0)
    t.finalize(end)
    first = t.report()["energy_pj"]
    t.finalize(end)
    assert t.report()["energy_pj"] == first
    # four pages striped over four dies: four read commands, each one tR of V x I
    assert first["nand_read"] == pytest.approx(4 * cfg.read_page_pj())
    assert first["channel_byte"] == pytest.approx(4 * cfg.page_size * 32.0)
    assert first["active"] == pytest.approx(end * cfg.energy.controller_mw * 1e-3)


@pytest.mark.parametrize("model,compat", [("fast", ""), ("detailed", ""),
                                          ("detailed", "mqsim")])
@settings(max_examples=12, deadline=None)
@given(pattern=st.sampled_from(["seqwrite", "randwrite", "randread", "mix"]),
       qd=st.integers(1, 24), count=st.integers(1, 300),
       size=st.sampled_from([4 * KiB, 16 * KiB, 256 * KiB]))
def test_the_bench_loop_without_events_runs_as_its_workers_would(
        model: str, compat: str, pattern: str, qd: int, count: int, size: int) -> None:
    """``run_bench`` on its own environment issues requests without events where the
    device books them at once; it gives what ``qd`` worker processes give, request for
    request (ties in issue order, as their timeouts fire)."""
    cfg = CFG if not compat else small(blocks_per_plane=32, pages_per_block=8,
                                       over_provisioning=0.2, compat=compat)
    kw: dict[str, Any] = dict(pattern=pattern, size=size, qd=qd, count=count,
                              precondition=0.9, model=model)
    env = CountingEnv()
    by_events = run_bench(cfg, env=env, **kw)
    assert env.scheduled >= count
    loop = run_bench(cfg, **kw)
    assert repr(loop) == repr(by_events)
