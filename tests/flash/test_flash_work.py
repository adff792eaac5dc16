"""The least die time of an amount of NAND work (``flash.work.die_work_ps``): its
formula on the presets' figures, and that the device model never serves a batch
faster."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flash.batch import batch_time_ps
from flash.config import PRESETS
from flash.work import die_work_ps, program_bytes_per_s
from tmhw.sim.units import US, KiB, MiB


def test_programs_spread_over_every_plane_of_every_die_at_tprog() -> None:
    """Two PM1743-like devices: 2 x 64 dies x 4 planes x 16 KiB per 640 us is 13.1 GB/s,
    so 1.5 GB (91,766 pages) of programs take 91,766 x 640 us / 512 = 114.7 ms an
    iteration over iterations that repeat (one batch's busiest die, 717 pages in 180
    four-plane programs, would take 115.2 ms, but its last programs may run on into the
    next iteration while other dies take that one's)."""
    pm = dataclasses.replace(PRESETS["pm1743"], devices=2)
    assert program_bytes_per_s(pm) == pytest.approx(13.107e9, rel=1e-4)
    pages = 91_766
    assert die_work_ps(pm, 0, pages * 16 * KiB) == -(-pages * 640 * US // 512)


def test_reads_and_programs_add_up_on_a_die() -> None:
    """A die reads or programs: 512 pages read (tR / planes each, independent plane
    reads) and 512 programmed on one die of 4 planes is 128 x (45 + 640) us."""
    one = dataclasses.replace(PRESETS["pm1743"], channels=1, chips_per_channel=1,
                              dies_per_chip=1, blocks_per_plane=64, gc_threshold=0.05)
    b = 512 * 16 * KiB
    assert die_work_ps(one, b, b) == 128 * (45 + 640) * US
    assert die_work_ps(one, b, 0) == 128 * 45 * US
    assert die_work_ps(one, 0, 0) == 0
    # one page is a quarter of a four-plane program's time on the die, an iteration
    assert die_work_ps(one, 0, 1) == 640 * US // 4
    with pytest.raises(ValueError):
        die_work_ps(one, -1, 0)


def test_an_slc_cache_programs_at_its_own_tprog() -> None:
    """The 990 PRO-like device writes into its SLC cache at 150 us a program."""
    pro = PRESETS["990pro"]
    assert die_work_ps(pro, 0, 32 * 4 * 16 * KiB) == 150 * US


@settings(max_examples=6, deadline=None)
@given(preset=st.sampled_from(sorted(PRESETS)), read_mib=st.integers(0, 48),
       write_mib=st.integers(0, 48))
def test_the_device_model_serves_no_batch_faster(preset: str, read_mib: int,
                                                 write_mib: int) -> None:
    """The fast model's best order for a batch, every write programmed, takes at least
    the die time of its reads and programs."""
    cfg = PRESETS[preset]
    r, w = read_mib * MiB, write_mib * MiB
    if r + w == 0:
        return
    served = batch_time_ps(cfg, r, w, drain=True, precondition=0.01)
    assert served >= die_work_ps(cfg, r, w)


def test_in_a_steady_state_an_slc_cache_programs_at_tlc_speed() -> None:
    """Over repeating iterations every page the SLC cache takes is folded in idle time
    at the TLC rate, so a page costs at least min(tSLC + tPROG, tPROG) = 450 us per
    full program on the 990 PRO-like device; within a tolerance of 1% of the programs
    left unfolded, those cost tSLC."""
    pro = PRESETS["990pro"]
    stripe = pro.dies * pro.planes_per_die * pro.page_size
    assert die_work_ps(pro, 0, 100 * stripe, unfolded=0.0) == 100 * 450 * US
    assert die_work_ps(pro, 0, 100 * stripe, unfolded=0.01) == 99 * 450 * US + 150 * US
    # a device without an SLC cache is not affected
    pm = PRESETS["pm1743"]
    assert die_work_ps(pm, 0, 10**9, unfolded=0.0) == die_work_ps(pm, 0, 10**9)
