"""DramTarget as the kernel's MemoryTarget: no events of its own, O(1) work for a large
chunk, one event per transaction for the initiator, a report shaped like the config."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace

import pytest
import simpy

from dram import PRESETS, DramTarget
from tmhw.sim.env import Environment
from tmhw.sim.transfer import MemoryTarget, Op, Pattern, Transfer
from tmhw.sim.units import GiB, KiB, MiB, S


@pytest.mark.parametrize("model", ["fast", "detailed"])
def test_dram_target_is_a_memory_target(model: str) -> None:
    hbm = DramTarget(simpy.Environment(), "hbm", None, PRESETS["hbm3"], model=model)
    assert isinstance(hbm, MemoryTarget)
    assert hbm.peak_bandwidth() == pytest.approx(819.2e9)


def test_transport_schedules_no_event() -> None:
    env = simpy.Environment()
    hbm = DramTarget(env, "hbm", None, PRESETS["hbm3"])
    for i in range(50):
        hbm.transport(Transfer(Op.READ, i * MiB, MiB), 0)
    assert not env._queue  # the kernel's contract: completion time, no event


@pytest.mark.parametrize("model, chunk", [("fast", 2 * MiB), ("detailed", 64 * KiB)])
def test_events_per_transaction_are_bounded(model: str, chunk: int) -> None:
    env = Environment()
    cfg = replace(PRESETS["hbm2"], channels=2) if model == "detailed" else PRESETS["hbm3"]
    hbm = DramTarget(env, "hbm", None, cfg, model=model)
    n = 40

    def initiator() -> Generator[simpy.Event, None, None]:
        for i in range(n):
            end = hbm.transport(Transfer(Op.READ if i % 3 else Op.WRITE, i * chunk, chunk),
                                int(env.now))
            yield env.timeout(end - env.now)

    env.process(initiator())
    env.run()
    # One timeout per transaction, plus the process's start and end.
    assert env.events <= n + 3


def test_an_8_gib_chunk_streams_at_peak_less_refresh_in_the_fast_model() -> None:
    """(Its cost in wall time is ``tmhw bench --case hbm-8gib``'s figure.)"""
    cfg = PRESETS["hbm3"]
    hbm = DramTarget(simpy.Environment(), "hbm", None, cfg)
    end = hbm.transport(Transfer(Op.READ, 0, 8 * GiB), 0)
    # 8 GiB at the streaming rate: peak less the refresh windows.
    fm = hbm.impl
    assert hasattr(fm, "t_ref_block")
    ideal = 8 * GiB / cfg.peak_bandwidth() * S
    assert ideal < end < ideal / (1 - fm.t_ref_block / cfg.t_refi) * 1.001


def test_trim_and_empty_transfers_cost_nothing() -> None:
    hbm = DramTarget(simpy.Environment(), "hbm", None, PRESETS["hbm3"])
    assert hbm.transport(Transfer(Op.TRIM, 0, MiB), 123) == 123
    assert hbm.transport(Transfer(Op.READ, 0, 0), 456) == 456


@pytest.mark.parametrize("model", ["fast", "detailed"])
def test_report_counts_bytes_hits_and_energy(model: str) -> None:
    cfg = replace(PRESETS["hbm2"], channels=2)
    env = simpy.Environment()
    hbm = DramTarget(env, "hbm", None, cfg, model=model)
    end = 0
    for i in range(8):
        end = max(end, hbm.transport(Transfer(Op.READ, i * 64 * KiB, 64 * KiB), end))
    end = max(end, hbm.transport(Transfer(Op.WRITE, 1 * MiB, 32 * KiB), end))
    end = max(end, hbm.transport(Transfer(Op.READ, 0, 64 * 64, Pattern.RANDOM), end))
    hbm.finalize(end)
    rep = hbm.report()
    assert rep["bytes_read"] == 8 * 64 * KiB + 64 * 64
    assert rep["bytes_written"] == 32 * KiB
    assert 0.8 < rep["row_hit_rate"] < 1.0
    assert rep["energy_pj"]["total"] > 0
    assert rep["energy_pj_per_bit"] == pytest.approx(
        rep["energy_pj"]["total"] / (8 * (rep["bytes_read"] + rep["bytes_written"])))
    # Finalizing again does not count twice.
    hbm.finalize(end)
    assert hbm.report()["energy_pj"]["total"] == pytest.approx(rep["energy_pj"]["total"])
