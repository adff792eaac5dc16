"""The NAND terms of the time bound (``tmhw.placement.nand_bound``, ``flash.work``,
``tmhw.lower_bounds``): the least NAND reads and programs against the traffic bound's
plan, and that no policy of the registry beats the bounds on small random workloads and
devices."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flash.config import PRESETS as FLASH_PRESETS
from tmhw.config import QUICK, with_overrides
from tmhw.placement.bounds import traffic_bound
from tmhw.placement.gaps import GapPlan
from tmhw.placement.nand_bound import least_pages
from tmhw.placement.registry import POLICIES
from tmhw.sim.errors import DoesNotFit
from tmhw.system import System

TINY = ['workload.model="bert-base"', "workload.layers=1", "workload.seq=64",
        "workload.batch=2"]


def test_least_reads_and_programs_are_no_more_than_the_traffic_bounds_plan() -> None:
    """The traffic bound's plan is one plan among all: it reads no fewer pages than the
    least NAND reads (with no SSD DRAM) and writes no fewer than the least programs.
    More SSD DRAM never asks for more NAND reads, and enough of it none."""
    s = System(with_overrides(QUICK, [*TINY, "policy.hbm_ratio=0.3"]))
    gp = GapPlan(s.ctx)
    cap = s.capacity_pages
    tb = traffic_bound(gp, cap, movable_input=True)
    ps = s.workload.page_size
    reads = [least_pages(gp, cap + m, "nand_reads") for m in (0, 64, 4096, 10**7)]
    progs = least_pages(gp, cap, "programs")
    assert 0 < reads[0] * ps <= tb.read_bytes + 1e-6
    assert 0 < progs * ps <= tb.write_bytes + 1e-6
    assert reads == sorted(reads, reverse=True) and reads[-1] == 0.0
    with pytest.raises(ValueError):
        least_pages(gp, cap, "erases")


def test_the_pm1743_bound_has_the_die_term() -> None:
    """On a die-bound device the programs set the bound: ``die_ps`` is at least the
    program time of the least programs over every plane, and the bound is the
    largest term."""
    from flash.work import program_bytes_per_s
    cfg = dataclasses.replace(QUICK, flash=FLASH_PRESETS["pm1743"])
    b = System(with_overrides(cfg, [*TINY, "policy.hbm_ratio=0.3"])).bounds()
    assert b["die_ps"] >= b["program_bytes"] * 10**12 / program_bytes_per_s(cfg.flash)
    assert b["iteration_time_ps"] == max(b[k] for k in ("npu_ps", "link_ps", "flash_ps",
                                                        "die_ps", "phase_ps"))
    assert b["iteration_time_ps"] == b["die_ps"]


@settings(max_examples=3, deadline=None)
@given(preset=st.sampled_from(sorted(FLASH_PRESETS)), devices=st.integers(1, 2),
       ratio=st.sampled_from([0.3, 0.5, 0.8]), seq=st.sampled_from([32, 64]),
       batch=st.integers(1, 3),
       buffer_mib=st.sampled_from([0, 1, 16, 192]))
def test_no_policy_beats_the_bounds(preset: str, devices: int, ratio: float, seq: int,
                                    batch: int, buffer_mib: int) -> None:
    """Every policy of the registry, on a small random workload and device, moves no
    fewer bytes than the traffic bound and takes no less time than the time bound per
    steady-state iteration. Policies that cannot fit the capacity are skipped."""
    cfg = dataclasses.replace(QUICK, flash=dataclasses.replace(
        FLASH_PRESETS[preset], devices=devices, write_buffer_bytes=buffer_mib << 20))
    ran = 0
    for policy in POLICIES:
        try:
            system = System(with_overrides(cfg, [
                'workload.model="bert-base"', "workload.layers=1", f"workload.seq={seq}",
                f"workload.batch={batch}", f"policy.hbm_ratio={ratio}",
                f'policy.name="{policy}"', "run.iterations=4",
                "run.warmup_iterations=2"]))
            rep = system.run()
        except DoesNotFit:
            continue
        ran += 1
        b = rep["bounds"]
        assert rep["steady"]["iteration_time_ps"] >= b["iteration_time_ps"], (policy, b)
        assert rep["steady"]["traffic_bytes"]["inter_tier"] >= b["traffic_bytes"], (policy, b)
    assert ran >= 6   # all but those that keep weights and optimizer state resident
