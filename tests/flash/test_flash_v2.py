"""The SSD as built: write buffer, read cache, suspend, multi-plane forming, RAID-0
devices, each against its formula."""

from __future__ import annotations

import dataclasses
import random

import pytest
import simpy
from flash_devices import plain

from flash import PRESETS, FlashConfig, FlashTarget
from flash.bench import run_bench
from flash.host import HostInterface
from tmhw.sim import Op, Transfer
from tmhw.sim.units import US, KiB, MiB, S


def _dev(cfg: FlashConfig, **kw: object) -> FlashTarget:
    return FlashTarget(simpy.Environment(), "flash", None, cfg, **kw)  # type: ignore[arg-type]


def test_a_burst_smaller_than_the_write_buffer_completes_at_link_speed() -> None:
    cfg = PRESETS["990pro"]
    burst = 64 * MiB
    assert burst < cfg.write_buffer_bytes
    t = _dev(cfg)
    chunk = 2 * MiB
    ends = [t.transport(Transfer(Op.WRITE, a, chunk), 0) for a in range(0, burst, chunk)]
    # the link carries each chunk back to back; nothing waits for a program
    assert ends[-1] == (burst // chunk) * HostInterface(cfg).write_ps(chunk)
    assert t.report()["cache"]["write_buffer_waits"] == 0


def test_sustained_writes_settle_at_the_nand_program_rate() -> None:
    """PM1743-like: 6.55 GB/s of programs behind a 14.5 GB/s link. Once the buffer is
    full, each write is acknowledged as programs free its space: completions advance at
    dies x planes x page / tPROG."""
    cfg = PRESETS["pm1743"]
    nand = cfg.die_program_bytes_per_s
    assert nand < cfg.host_write_bytes_per_s
    t = _dev(cfg)
    chunk = cfg.planes * cfg.page_size  # one page per plane: full multi-plane programs
    n = (2 * 1024 * MiB) // chunk
    ends = [t.transport(Transfer(Op.WRITE, k * chunk, chunk), 0) for k in range(n)]
    half = n // 2
    rate = (n - half) * chunk * S / (ends[-1] - ends[half - 1])
    assert rate == pytest.approx(nand, rel=0.02)
    assert t.report()["cache"]["write_buffer_waits"] > 0


def test_4k_reads_walking_one_nand_page_cost_one_nand_read() -> None:
    cfg = plain("990pro")  # (no controller command rate: the hits cost link time only)
    assert cfg.page_size == 16 * KiB
    t = _dev(cfg, precondition=0.01)
    first = t.transport(Transfer(Op.READ, 0, 4 * KiB), 0)
    ends = [t.transport(Transfer(Op.READ, off, 4 * KiB), first)
            for off in range(4 * KiB, cfg.page_size, 4 * KiB)]
    rep = t.report()
    assert rep["pages_read"] == 1
    assert rep["cache"]["cache_read_hits"] == 3
    # the hits cost only their link time
    link = HostInterface(cfg).read_ps(4 * KiB)
    assert ends == [first + k * link for k in (1, 2, 3)]


def test_a_read_of_a_buffered_page_costs_no_nand_read() -> None:
    cfg = PRESETS["990pro"]
    t = _dev(cfg)
    w = t.transport(Transfer(Op.WRITE, 0, cfg.page_size), 0)
    t.transport(Transfer(Op.READ, 0, cfg.page_size), w)
    rep = t.report()
    assert rep["pages_read"] == 0 and rep["cache"]["buffer_read_hits"] == 1


def test_a_write_drops_the_stale_cached_copy() -> None:
    cfg = dataclasses.replace(PRESETS["990pro"], write_buffer_bytes=0)
    t = _dev(cfg, precondition=0.01)
    t.transport(Transfer(Op.READ, 0, 4 * KiB), 0)
    end = t.transport(Transfer(Op.WRITE, 0, cfg.page_size), 0)
    t.transport(Transfer(Op.READ, 4 * KiB, 4 * KiB), end)
    rep = t.report()
    assert rep["cache"]["cache_read_hits"] == 0 and rep["pages_read"] == 2


@pytest.mark.parametrize("model", ["fast", "detailed"])
def test_a_read_during_a_program_completes_within_tr_suspend_and_transfer(
        model: str) -> None:
    cfg = plain("990pro", write_buffer_bytes=0)  # (TLC programs: no SLC cache)
    t = _dev(cfg, model=model, precondition=0.01)
    # logical pages 0 and planes x 1 sit on plane 0 of die 0
    w_end = t.transport(Transfer(Op.WRITE, cfg.planes * cfg.page_size, cfg.page_size), 0)
    at = w_end - cfg.t_prog + 50 * US  # 50 us into the program
    r_end = t.transport(Transfer(Op.READ, 0, cfg.page_size), at)
    assert r_end - at <= (cfg.read_command_ps(1) + cfg.t_r + cfg.t_suspend_program
                          + cfg.read_transfer_ps(cfg.page_size))
    assert r_end < w_end
    assert t.report()["suspends"]["program"] == 1
    # without suspend the read waits for the program
    off = dataclasses.replace(cfg, program_suspend=False)
    t2 = _dev(off, model=model, precondition=0.01)
    t2.transport(Transfer(Op.WRITE, cfg.planes * cfg.page_size, cfg.page_size), 0)
    assert t2.transport(Transfer(Op.READ, 0, cfg.page_size), at) > w_end


def test_reads_go_ahead_of_programs_waiting_for_their_die() -> None:
    cfg = plain("990pro", write_buffer_bytes=0)
    t = _dev(cfg, precondition=0.01)
    # two programs queued on plane 0 of die 0, then a read there when the first starts
    ends = [t.transport(Transfer(Op.WRITE, k * cfg.planes * cfg.page_size, cfg.page_size), 0)
            for k in (1, 2)]
    first_start = ends[0] - cfg.t_prog
    r = t.transport(Transfer(Op.READ, 0, cfg.page_size), first_start + cfg.t_prog // 2)
    assert r < ends[0]


def test_sequential_writes_reach_the_link_with_multi_plane_programs() -> None:
    """990 PRO 2 TB: min(link 7.2 GB/s, SLC-mode programs 32 x 4 x 16 KiB / 150 us =
    14 GB/s). A 2 MiB chunk puts one page on every plane of every die: every program
    command is multi-plane."""
    cfg = PRESETS["990pro"]
    bound = min(cfg.pcie.write_throughput(2 * MiB), cfg.die_program_bytes_per_s)
    r = run_bench(cfg, pattern="seqwrite", size=2 * MiB, qd=64, count=400)
    assert float(r["bandwidth_mbps"]) * 1e6 >= 0.9 * bound
    rep = r["report"]
    assert rep["commands"]["program"] * cfg.planes_per_die == rep["pages_programmed"]


@pytest.mark.parametrize("pattern", ["seqread", "seqwrite"])
def test_two_devices_double_sequential_bandwidth(pattern: str) -> None:
    one = PRESETS["990pro"]
    two = dataclasses.replace(one, devices=2)
    bw = [float(run_bench(c, pattern=pattern, size=2 * MiB, qd=64, count=200)
                ["bandwidth_mbps"]) for c in (one, two)]
    assert bw[1] == pytest.approx(2 * bw[0], rel=0.05)


def test_raid0_splits_a_transfer_into_one_range_per_device() -> None:
    cfg = dataclasses.replace(PRESETS["990pro"], devices=3, stripe_bytes=512 * KiB)
    t = _dev(cfg)
    parts = t._split(300 * KiB, 2 * MiB)
    assert sum(n for _, _, n in parts) == 2 * MiB
    # stripes 0..4 of 512 KiB: device 0 holds stripes 0 and 3, device 1 holds 1 and 4
    d0 = [(a, n) for d, a, n in parts if d is t.devices[0]]
    assert d0 == [(300 * KiB, 212 * KiB + 512 * KiB)]
    assert t.devices[1] in [d for d, _, _ in parts]


def test_a_remembered_split_is_the_split_computed_afresh(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``_split`` remembers ranges (a training iteration moves the same chunks again):
    what it returns from its memo, and after the memo has filled and started again, is
    the split a target that has seen nothing computes."""
    import flash.target as target_mod

    monkeypatch.setattr(target_mod, "_SPLITS", 8)
    cfg = dataclasses.replace(PRESETS["990pro"], devices=3, stripe_bytes=512 * KiB)
    t, fresh = _dev(cfg), _dev(cfg)
    rng = random.Random(3)
    starts = [rng.randrange(0, 64 * MiB) for _ in range(6)]
    # each start twice, with two lengths
    ranges = [(a, rng.randrange(1, 4 * MiB)) for a in starts for _ in range(2)]
    for address, nbytes in ranges * 3:  # the second and third rounds hit the memo
        # (or, past eight ranges, compute again after a restart)
        fresh._splits.clear()
        want = [(d.device, a, n) for d, a, n in fresh._split(address, nbytes)]
        assert [(d.device, a, n) for d, a, n in t._split(address, nbytes)] == want
        assert sum(n for _, _, n in want) == nbytes
        assert len(t._splits) <= 8


@pytest.mark.parametrize("moved", [(500, 0, 0), (0, 500, 0), (300, 0, 200)])
def test_an_arrays_report_sums_a_figure_only_some_devices_give(
        moved: tuple[int, int, int]) -> None:
    """A device's SLC cache reports ``slc_advanced_pages`` only where a run moved its
    fill without simulating it (``SlcCache.advance``: the steady-state search's skip of
    the cache's drift), which on an array may be some of its devices: the array gives
    their sum, whichever devices they are. (The regime map's BERT-large at 1/4 HBM on
    16 SSDs, with selective recomputation, stopped with a KeyError where the first
    device had moved its fill and another had not.)"""
    cfg = dataclasses.replace(PRESETS["990pro"], devices=3)
    t = _dev(cfg)
    for d, pages in zip(t.devices, moved, strict=True):
        if pages:
            d.slc.advance(pages)
    rep = t.report()
    assert rep["slc"]["slc_advanced_pages"] == sum(moved)
    assert [r["slc"].get("slc_advanced_pages", 0) for r in
            (rep[f"dev{k}"] for k in range(3))] == list(moved)
    # the figures every device gives are summed as before
    assert rep["slc"]["slc_cache_pages"] == 3 * t.devices[0].slc.cap


def test_two_devices_halve_a_flash_bound_iterations_stall() -> None:
    from tmhw import config as C
    from tmhw.system import System

    # chunks that put a page on every plane of both devices (2 x 32 dies x 4 planes x
    # 16 KiB): with the default 2 MiB each device's share of a chunk reaches half its
    # planes, and the stall falls to 0.61 of one device's, not 0.5
    base = ["policy.hbm_ratio=0.125", 'policy.name="tm-training"', "run.iterations=2",
            "run.warmup_iterations=1", "dma.chunk_bytes=4194304"]
    stalls = []
    for n in (1, 2):
        rep = System(C.with_overrides(C.QUICK, [*base, f"flash.devices={n}"])).run()
        stalls.append(rep["steady"]["flash_stall_ps"])
    assert stalls[0] > 0
    assert stalls[1] / stalls[0] == pytest.approx(0.5, rel=0.1)


def test_a_queued_program_absorbs_another_planes_page_only_at_its_offset_when_written_through(
        ) -> None:
    """A multi-plane program addresses one page offset in each plane. Written through,
    the FTL's per-plane write pointers decide the offsets, so a page joins a waiting
    program only at the same offset; behind the write buffer the FTL places pages when
    they flush, so any page of another plane can join."""
    from flash.engine.dies import DieLanes

    lanes = DieLanes("die", 1, planes_per_die=4)
    lanes.prog1(0, 0, 400, planes=0b0001, page=0)        # running
    lanes.prog1(0, 0, 400, planes=0b0001, page=1)        # waiting, plane 0, offset 1
    end = lanes.prog1(0, 10, 400, planes=0b0010, page=7)  # plane 1, offset 7: its own
    assert end == 1200 and lanes.merged == 0
    assert lanes.prog1(0, 10, 400, planes=0b0100, page=1) == 800  # joins at offset 1
    assert lanes.merged == 1
    buffered = DieLanes("die", 1, planes_per_die=4)
    buffered.prog1(0, 0, 400, planes=0b0001)
    buffered.prog1(0, 0, 400, planes=0b0001)
    assert buffered.prog1(0, 10, 400, planes=0b0010) == 800 and buffered.merged == 1
