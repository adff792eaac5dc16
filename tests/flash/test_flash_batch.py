"""The flash device's best-case time for a batch of reads and writes
(``flash.batch``): never faster than the device's bandwidth floor, as fast as the link
where the link is the limit (both directions at once), no slower than the plainest
order on a fresh device, and each schedule timed on the shared device exactly as on a
fresh one."""

from __future__ import annotations

import dataclasses

import pytest

from flash import PRESETS, FlashConfig, FlashTarget
from flash.batch import GOOD_ENOUGH, batch_time_ps, batch_times_ps, floor_ps, schedules
from tmhw.sim import Component, Op, TmhwError, Transfer
from tmhw.sim.env import Environment
from tmhw.sim.units import MiB, S

#: fast presets: 16 KiB pages (990 PRO-like, PM1743-like) and 8 KiB (MQSim default)
DEVICES = ("990pro", "pm1743", "mqsim-default")


def fresh(cfg: FlashConfig, read_bytes: int) -> FlashTarget:
    """A new device with the reads' range (and nothing else needed) mapped."""
    root = Component(Environment(), "t")
    pages = -(-read_bytes // cfg.page_size)
    dev = FlashTarget(root.env, "flash", root, cfg,
                      precondition=min(1.0, (pages + 0.5) / cfg.logical_pages))
    root.elaborate()
    root.start()
    return dev


@pytest.mark.parametrize("name", DEVICES)
@pytest.mark.parametrize("read_mib,write_mib", [(512, 512), (512, 96), (96, 512)])
def test_batch_takes_at_least_each_directions_bytes_over_its_bandwidth_bound(
        name: str, read_mib: int, write_mib: int) -> None:
    cfg = PRESETS[name]
    r, w = read_mib * MiB, write_mib * MiB
    times = batch_times_ps(cfg, r, w)
    t = min(times.values())
    assert t == batch_time_ps(cfg, r, w)
    assert t >= r * S / cfg.read_bandwidth_bound()
    # writes: the link carries them all; the NAND all but the write buffer's last part
    nand_w = max(0, w - cfg.devices * cfg.write_buffer_bytes)
    assert t >= w * S / (cfg.devices * cfg.host_write_bytes_per_s)
    assert t >= nand_w * S / cfg.write_bandwidth_bound()
    # reads and writes share the channels, and a die reads or programs, not both
    floor = floor_ps(cfg, r, w)
    assert floor >= (r + nand_w) * S / cfg.channels_bytes_per_s
    assert all(v >= floor for v in times.values())


@pytest.mark.parametrize("channels", [8, 32])
def test_link_bound_device_moves_both_directions_at_once_at_the_link_rate(
        channels: int) -> None:
    cfg = dataclasses.replace(PRESETS["990pro"], channels=channels)
    r = w = 512 * MiB
    link = r * S / cfg.host_read_bytes_per_s  # (the slower direction)
    assert link > r * S / min(cfg.die_read_bytes_per_s, cfg.channels_bytes_per_s)
    t = batch_time_ps(cfg, r, w)
    assert link <= t <= 1.01 * link            # full duplex: not (r + w) / link


@pytest.mark.parametrize("name", DEVICES)
def test_batch_is_no_slower_than_reads_then_writes_on_a_fresh_device(name: str) -> None:
    cfg = PRESETS[name]
    r, w = 256 * MiB, 192 * MiB
    dev = fresh(cfg, r)
    plain = max(dev.transport(Transfer(Op.READ, 0, r), 0),
                dev.transport(Transfer(Op.WRITE, r, w), 0))
    assert batch_time_ps(cfg, r, w) <= plain


@pytest.mark.parametrize("name,mib", [("990pro", 64), ("990pro", 1536), ("pm1743", 512)])
def test_search_stops_at_the_first_schedule_near_the_floor(name: str, mib: int) -> None:
    """Schedules are tried in order until one is within 0.5% of the floor; the 990
    PRO-like device's one transfer each way gets there on a 64 MiB batch, its 16 MiB
    rounds on a large one, and the PM1743-like device (die-bound writes) never with
    one transfer each way."""
    cfg = PRESETS[name]
    n = mib * MiB
    times = batch_times_ps(cfg, n, n)
    good = floor_ps(cfg, n, n) * (1 + GOOD_ENOUGH)
    tried = list(times)
    assert tried == list(schedules(n, n))[:len(tried)]
    assert all(times[k] > good for k in tried[:-1])
    assert times[tried[-1]] <= good or len(tried) == len(schedules(n, n))
    assert (tried == ["whole"]) == (name == "990pro" and mib == 64)


#: The PM1743-like device writing through (no write buffer): programs bound its writes.
PM1743_WT = dataclasses.replace(PRESETS["pm1743"], write_buffer_bytes=0)


def test_die_bound_writes_are_faster_in_rounds_than_as_one_transfer() -> None:
    """PM1743-like, written through: programs bound the writes (6.55 GB/s of dies); in
    16 MiB rounds each die starts programming as soon as its first data is in."""
    times = batch_times_ps(PM1743_WT, 256 * MiB, 256 * MiB)
    assert min(times.values()) < 0.9 * times["whole"]
    assert min(times.values()) == batch_time_ps(PM1743_WT, 256 * MiB, 256 * MiB)


@pytest.mark.parametrize("name", ["pm1743", "mqsim-default"])
def test_each_schedule_times_on_the_shared_device_as_on_a_fresh_one(name: str) -> None:
    cfg = dataclasses.replace(PRESETS[name], write_buffer_bytes=0)
    r, w = 96 * MiB, 256 * MiB
    shared = batch_times_ps(cfg, r, w)
    assert len(shared) > 2
    stripe = cfg.planes * cfg.page_size
    for label, steps in schedules(r, w).items():
        if label not in shared:
            continue
        dev = fresh(cfg, r)
        woff = -(-r // stripe) * stripe
        end = max(dev.transport(Transfer(op, a + (woff if op is Op.WRITE else 0), n), 0)
                  for op, a, n in steps)
        assert shared[label] == end, label
        assert dev.unmapped_reads == 0


@pytest.mark.parametrize("read_mib,write_mib", [(100, 37), (37, 100), (64, 0), (0, 64)])
def test_every_schedule_moves_exactly_the_batch_reads_first_in_each_round(
        read_mib: int, write_mib: int) -> None:
    r, w = read_mib * MiB + 5, write_mib * MiB
    for label, steps in schedules(r, w).items():
        for op, total in ((Op.READ, r), (Op.WRITE, w)):
            mine = [(a, n) for o, a, n in steps if o is op]
            assert sum(n for _, n in mine) == total, label
            assert all(a == sum(n for _, n in mine[:i]) for i, (a, _) in enumerate(mine))
        if r and w:
            assert steps[0][0] is Op.READ


def test_empty_batch_takes_no_time_and_an_oversized_one_is_refused() -> None:
    cfg = PRESETS["990pro"]
    assert batch_time_ps(cfg, 0, 0) == 0
    with pytest.raises(TmhwError, match="logical capacity"):
        batch_time_ps(cfg, cfg.capacity + 1, 0)
    with pytest.raises(TmhwError, match=">= 0"):
        batch_time_ps(cfg, -1, 0)
