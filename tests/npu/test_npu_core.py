"""The NPU component: compute time from the formulas, stalls when HBM is slow, few events."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Generator
from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from npu import NPU, ComputeResult, ComputeTask, Gemm, NpuConfig, plan_task
from npu.dataflow import multi_array_cycles
from tmhw.sim import Component, ConfigError, ElaborationError, Transfer
from tmhw.sim.units import MW_PS_TO_PJ, S, cycles_to_ps


class FakeHBM(Component):
    """A MemoryTarget with one FIFO channel of ``bandwidth`` bytes/s (None: infinite)."""

    def __init__(self, env: simpy.Environment, bandwidth: float | None) -> None:
        super().__init__(env, "hbm")
        self.bandwidth = bandwidth
        self.busy_until = 0
        self.calls: list[tuple[Transfer, int, int]] = []

    def transport(self, t: Transfer, earliest: int) -> int:
        if self.bandwidth is None:
            end = earliest
        else:
            start = max(earliest, self.busy_until)
            end = start + math.ceil(t.nbytes * S / self.bandwidth)
            self.busy_until = end
        self.calls.append((t, earliest, end))
        return end

    def peak_bandwidth(self) -> float:
        return math.inf if self.bandwidth is None else self.bandwidth


TASKS = (
    ComputeTask("conv", (Gemm(56 * 56 * 32, 64, 576),), vector_elems=56 * 56 * 32 * 64),
    ComputeTask("fc", (Gemm(4096, 4096, 1024),)),
    ComputeTask("attn", (Gemm(512, 512, 64, count=16), Gemm(512, 64, 512, count=16)),
                vector_elems=16 * 512 * 512, vector_ops_per_elem=5.0),
    ComputeTask("adam", vector_elems=10_000_000, vector_ops_per_elem=12.0, dtype_bytes=4),
    ComputeTask("odd", (Gemm(37, 91, 53, count=3),)),
)


def run_tasks(cfg: NpuConfig, bandwidth: float | None,
              tasks: tuple[ComputeTask, ...] = TASKS) -> tuple[NPU, FakeHBM, list[ComputeResult],
                                                                int]:
    env = simpy.Environment()
    hbm = FakeHBM(env, bandwidth)
    npu = NPU(env, "npu", None, cfg, hbm)
    npu.elaborate()
    results: list[ComputeResult] = []

    def walk() -> Generator[simpy.Event, Any, None]:
        for t in tasks:
            results.append((yield from npu.execute(t)))

    env.process(walk())
    steps = 0
    while env.peek() < math.inf:
        env.step()
        steps += 1
    npu.finalize(int(env.now))
    return npu, hbm, results, steps


def formula_ps(task: ComputeTask, cfg: NpuConfig) -> int:
    """The stall-free time written out from the dataflow formulas, single core."""
    matrix = sum(multi_array_cycles(g.m, g.n, g.k, cfg.array_rows, cfg.array_cols,
                                    cfg.arrays_per_core * 1, cfg.dataflow, cfg.convention)
                 if g.count == 1 else
                 -(-g.count * _folds(g, cfg) // cfg.arrays_per_core) * _per_fold(g, cfg) - 1
                 for g in task.gemms)
    vector = math.ceil(task.vector_elems * task.vector_ops_per_elem
                       / cfg.vector_elems_per_cycle)
    return cycles_to_ps(max(matrix, vector), cfg.freq_mhz)


def _folds(g: Gemm, cfg: NpuConfig) -> int:
    assert cfg.dataflow == "ws"
    return -(-g.k // cfg.array_rows) * -(-g.n // cfg.array_cols)


def _per_fold(g: Gemm, cfg: NpuConfig) -> int:
    return 2 * cfg.array_rows + cfg.array_cols + g.m - 2


def test_with_unlimited_hbm_each_op_takes_exactly_its_formula_time() -> None:
    cfg = NpuConfig()
    npu, _, results, _ = run_tasks(cfg, None)
    for task, r in zip(TASKS, results, strict=True):
        assert r.compute_ps == formula_ps(task, cfg) == npu.compute_ps(task)
        assert r.end - r.start == r.compute_ps and r.stall_ps == 0
    assert results[-1].end == sum(formula_ps(t, cfg) for t in TASKS)


def test_a_tenth_of_tpuv4_hbm_bandwidth_stalls_the_arrays() -> None:
    cfg = NpuConfig()
    _, _, fast, _ = run_tasks(cfg, 1.2e12)
    _, hbm, slow, _ = run_tasks(cfg, 1.2e11)
    total_bytes = sum(r.hbm_read_bytes + r.hbm_write_bytes for r in slow)
    assert sum(r.stall_ps for r in slow) > 5 * sum(r.stall_ps for r in fast)
    # the single HBM channel bounds the run from below
    assert slow[-1].end >= total_bytes * S / 1.2e11
    for r in slow:
        assert r.end - r.start == r.compute_ps + r.stall_ps and r.stall_ps >= 0


def test_next_chunk_is_fetched_while_the_current_one_computes() -> None:
    """Double buffering: with HBM exactly as fast as the op's traffic needs, the op takes
    about one chunk's transfers longer than its compute, not compute plus transfers."""
    cfg = dataclasses.replace(NpuConfig(), ifmap_spad_bytes=1 << 20, filter_spad_bytes=1 << 20)
    task = ComputeTask("fc", (Gemm(8192, 4096, 4096),))
    npu, _, _, _ = run_tasks(cfg, None, (task,))
    plan = npu.plan(task)
    bw = (plan.hbm_read_bytes + plan.hbm_write_bytes) * S / plan.compute_ps
    _, hbm, (r,), _ = run_tasks(cfg, bw, (task,))
    reads = [c for c in hbm.calls if c[0].op.value == "read"]
    assert len(reads) == cfg.max_transfers_per_op
    chunk_ps = plan.compute_ps / len(reads)
    assert 0 < r.stall_ps < 3 * chunk_ps
    # fetching and computing in turn would take twice as long
    assert r.end - r.start < 1.05 * plan.compute_ps


def test_events_per_op_are_bounded_and_hbm_calls_by_the_transfer_cap() -> None:
    cfg = NpuConfig()
    _, hbm, results, steps = run_tasks(cfg, 1.2e11)
    assert steps <= len(TASKS) + 2  # one timeout per op, plus process start and end
    assert len(hbm.calls) <= 2 * cfg.max_transfers_per_op * len(TASKS)


def test_two_cores_are_never_slower_and_keep_the_mac_count() -> None:
    one, _, r1, _ = run_tasks(NpuConfig(), None)
    two, _, r2, _ = run_tasks(NpuConfig(cores=2), None)
    for a, b in zip(r1, r2, strict=True):
        assert b.compute_ps <= a.compute_ps and b.macs == a.macs
    assert two.report()["macs"] == one.report()["macs"] == sum(t.macs for t in TASKS)
    assert r2[1].compute_ps < 0.6 * r1[1].compute_ps  # a big GEMM splits well


def test_more_arrays_per_core_never_slower() -> None:
    prev = None
    for arrays in (1, 2, 3, 4, 8):
        _, _, rs, _ = run_tasks(NpuConfig(arrays_per_core=arrays), None)
        t = sum(r.compute_ps for r in rs)
        assert prev is None or t <= prev
        prev = t


def test_energy_counts_macs_vector_ops_and_static_power() -> None:
    cfg = NpuConfig(cores=2)
    npu, _, results, _ = run_tasks(cfg, 1.2e12)
    assert npu.energy is not None
    by = npu.energy.by_action
    end = results[-1].end
    assert by["mac"] == pytest.approx(sum(t.macs for t in TASKS) * cfg.mac_pj)
    assert by["vector_op"] == pytest.approx(
        sum(t.vector_elems * t.vector_ops_per_elem for t in TASKS) * cfg.vector_op_pj)
    assert by["static"] == pytest.approx(2 * cfg.static_mw_per_core * end * MW_PS_TO_PJ)
    assert by["spad_byte"] > 0
    rep = npu.report()
    assert rep["stall_ps"] == sum(r.stall_ps for r in results)
    assert 0 < rep["utilization"] <= 1


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match="array_rows"):
        NpuConfig(array_rows=0)
    with pytest.raises(ConfigError, match="dataflow"):
        NpuConfig(dataflow="rs")
    with pytest.raises(ConfigError, match="static_mw_per_core"):
        NpuConfig(static_mw_per_core=-1.0)


def test_an_hbm_port_that_is_not_a_memory_target_fails_elaboration() -> None:
    env = simpy.Environment()
    npu = NPU(env, "npu", None, NpuConfig(), object())  # type: ignore[arg-type]
    with pytest.raises(ElaborationError, match="npu"):
        npu.elaborate()


def test_tpuv4_core_peak_is_half_of_275_tflops() -> None:
    assert 2 * NpuConfig().peak_macs_per_s * 2 == pytest.approx(275.2e12, rel=1e-3)


@settings(max_examples=80, deadline=None)
@given(m=st.integers(1, 5000), n=st.integers(1, 5000), k=st.integers(1, 5000),
       count=st.integers(1, 12), cores=st.integers(1, 4), arrays=st.integers(1, 4),
       df=st.sampled_from(["os", "ws", "is"]))
def test_tiling_over_cores_and_arrays_keeps_macs_and_more_hardware_is_never_slower(
        m: int, n: int, k: int, count: int, cores: int, arrays: int, df: str) -> None:
    task = ComputeTask("g", (Gemm(m, n, k, count),))
    base = NpuConfig(cores=cores, arrays_per_core=arrays, array_rows=32, array_cols=32,
                     dataflow=df)
    plan = plan_task(task, base)
    assert plan.macs == m * n * k * count
    for bigger in (dataclasses.replace(base, cores=cores + 1),
                   dataclasses.replace(base, arrays_per_core=arrays + 1)):
        bp = plan_task(task, bigger)
        assert bp.macs == plan.macs and bp.matrix_cycles <= plan.matrix_cycles
