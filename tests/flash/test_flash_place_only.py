"""``FTL.place_only``: a device whose writes are only placed gives every write the ppns
the whole FTL gives it, with the same write pointers, fresh blocks and free counts,
for as long as the whole FTL collects nothing; the write after which the whole FTL has
a plane under the soft GC threshold is the one it refuses. ``flash.batch`` times its
schedules on such devices, to the picosecond of devices that map every write."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from flash_devices import small
from hypothesis import given, settings
from hypothesis import strategies as st

import flash.batch as batch
from flash import PRESETS
from flash.ftl import FTL, PlacementOnlyError
from tmhw.sim.units import MiB

#: small devices of each page geometry (2 x 1 x 2 x 2 planes of 64 blocks of 64 pages)
DEVICES = ("990pro", "pm1743", "mqsim-default")


def _pair(name: str, pre: float) -> tuple[FTL, FTL]:
    # (MQSim's 7% spare is too few blocks of so small a plane for its GC thresholds)
    cfg = small(name, **({"over_provisioning": 0.15} if name == "mqsim-default" else {}))
    whole, placing = FTL(cfg), FTL(cfg)
    whole.precondition(pre)
    placing.precondition(pre)
    placing.place_only()
    return whole, placing


def _write(ftl: FTL, lo: int, n: int) -> tuple[np.ndarray, list[object]]:
    if n == 1:
        ppn, jobs = ftl.write1(lo)
        return np.array([ppn]), list(jobs)
    ppns, jobs = ftl.write_range(lo, lo + n)
    return ppns, list(jobs)


def _same_blocks(a: FTL, b: FTL) -> None:
    assert np.array_equal(a.free_count, b.free_count)
    assert np.array_equal(a.fresh_next, b.fresh_next)
    assert np.array_equal(a.blocks.host_blk, b.blocks.host_blk)
    assert np.array_equal(a.blocks.host_wp, b.blocks.host_wp)
    assert a.seq == b.seq and a.host_pages == b.host_pages


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(DEVICES), pre=st.sampled_from([0.0, 0.3, 0.8, 0.95]),
       writes=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(1, 3000)),
                       min_size=1, max_size=40))
def test_placed_writes_go_where_the_whole_ftl_puts_them_until_it_would_collect(
        name: str, pre: float, writes: list[tuple[float, int]]) -> None:
    whole, placing = _pair(name, pre)
    for where, n in writes:
        n = min(n, whole.n_lpn)
        lo = int(where * (whole.n_lpn - n))
        one = n == 1
        try:
            got = (np.array([placing.write1(lo)[0]]) if one
                   else placing.write_range(lo, lo + n)[0])
        except PlacementOnlyError:
            _write(whole, lo, n)
            # refused exactly where the whole FTL has a plane to collect
            assert whole.low_planes
            return
        want, jobs = _write(whole, lo, n)
        assert not jobs and not whole.low_planes
        assert np.array_equal(got, want)
        _same_blocks(whole, placing)


def test_rewriting_the_whole_space_ends_in_a_refusal_where_gc_would_start() -> None:
    whole, placing = _pair("990pro", 0.5)
    lo, n, k = 0, 1000, 0
    while True:
        try:
            got = placing.write_range(lo, lo + n)[0]
        except PlacementOnlyError as e:
            whole.write_range(lo, lo + n)
            assert whole.low_planes and "soft GC threshold" in str(e)
            break
        assert np.array_equal(got, whole.write_range(lo, lo + n)[0])
        assert not whole.low_planes
        lo = (lo + n) % (whole.n_lpn - n)
        k += 1
    # refused once the pages placed fill the planes down to the soft threshold: past
    # the logical space, into the over-provisioned blocks
    placed = whole.n_pre + k * n
    assert whole.n_lpn < placed <= whole.U * (whole.bpp - whole.soft_blocks) * whole.ppb
    assert placed + n > whole.U * (whole.bpp - whole.soft_blocks) * whole.ppb


def test_a_placing_device_refuses_what_it_cannot_place_and_a_used_one() -> None:
    _, placing = _pair("990pro", 0.5)
    with pytest.raises(PlacementOnlyError):
        placing.write(np.array([5, 3]))
    with pytest.raises(PlacementOnlyError):
        placing.write_many(np.array([5, 3]), [5, 3])
    with pytest.raises(PlacementOnlyError):
        placing.trim(np.array([1]))
    aged = FTL(small("990pro"))
    aged.precondition(0.9)
    aged.age(2.0)  # collected: erased blocks in the free pools
    with pytest.raises(PlacementOnlyError, match="reused blocks"):
        aged.place_only()


@pytest.mark.parametrize("name,read_mib,write_mib", [("990pro", 96, 700),
                                                     ("mqsim-default", 0, 300),
                                                     ("pm1743", 200, 64)])
def test_a_batch_on_placing_devices_takes_the_time_of_devices_that_map(
        name: str, read_mib: int, write_mib: int, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = dataclasses.replace(PRESETS[name], devices=2 if name == "pm1743" else 1)
    r, w = read_mib * MiB, write_mib * MiB
    placed = batch.batch_times_ps(cfg, r, w, drain=True)
    monkeypatch.setattr(FTL, "place_only", lambda self: None)
    assert batch.batch_times_ps(cfg, r, w, drain=True) == placed
