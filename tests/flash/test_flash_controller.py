"""The host link as PCIe carries it, and the controller limits real drives have: a
command rate, independent plane reads, an SLC write cache, and small writes packed
into pages (``flash.pcie``, ``flash.host``, ``flash.engine.dies.plane_read``,
``flash.slc``, ``flash.ssd``)."""

from __future__ import annotations

import dataclasses

import pytest
import simpy

from flash import PRESETS, FlashTarget
from flash.bench import run_bench
from flash.pcie import SKP_FRACTION, Pcie, lane_gbps
from tmhw.sim import Op, Transfer
from tmhw.sim.units import US, KiB, MiB, S

BASE = PRESETS["990pro"]


# -- PCIe ------------------------------------------------------------------------------
def test_gen4_x4_moves_a_long_read_where_real_gen4_drives_top_out() -> None:
    """16 GT/s x 4 lanes, 128b/130b, SKP ordered sets, 24 bytes of framing and 2 of
    DLLPs per 256-byte TLP: 7.13 GB/s, within the 7.0-7.45 GB/s that PCIe 4.0 x4 drives
    specify (Kingston KC3000 7.0, WD SN850X 7.3, Samsung 990 PRO 7.45)."""
    link = Pcie(4, lane_gbps(4), 256)
    formula = 4 * 16e9 * 128 / 130 / 8 * (1 - SKP_FRACTION) * 256 / (256 + 24 + 2)
    assert link.read_bytes_per_s == pytest.approx(formula)
    assert 7.0e9 <= link.read_bytes_per_s <= 7.5e9
    # a write's data arrives as completions, 4 bytes less header per TLP
    assert link.write_bytes_per_s == pytest.approx(formula * 282 / 278)


def test_the_model_reads_sequentially_at_the_links_rate() -> None:
    r = run_bench(BASE, pattern="seqread", size=128 * KiB, qd=64, count=4000,
                  precondition=1.0)
    assert r["steady_bandwidth_mbps"] * 1e6 == pytest.approx(
        BASE.pcie.read_throughput(128 * KiB), rel=0.01)


@pytest.mark.parametrize("gen,coding", [(1, 0.8), (2, 0.8), (3, 128 / 130), (5, 128 / 130)])
def test_line_coding_by_generation(gen: int, coding: float) -> None:
    gts = {1: 2.5, 2: 5.0, 3: 8.0, 5: 32.0}[gen]
    assert lane_gbps(gen) == pytest.approx(gts * coding / 8)


def test_a_larger_payload_frames_less_and_no_overheads_is_the_lane_rate() -> None:
    a, b = Pcie(4, 2.0, 256), Pcie(4, 2.0, 512)
    assert b.read_bytes_per_s > a.read_bytes_per_s
    ideal = Pcie(4, 2.0, 256, overheads=False)
    assert ideal.read_bytes_per_s == ideal.write_bytes_per_s == 8e9
    assert ideal.read_throughput(4096) == pytest.approx(8e9)  # no NVMe packets either


def test_each_command_costs_its_nvme_packets_on_the_link() -> None:
    """4 KiB reads: 92 bytes of submission fetch, completion entry and interrupt per
    command, so back-to-back commands move less payload than one long read."""
    link = BASE.pcie
    t4k = 4096 / link.read_throughput(4096)
    assert t4k == pytest.approx(4096 / link.read_bytes_per_s
                                + 92 / (link.line_bytes_per_s * (1 - SKP_FRACTION)))


# -- the controller's command rate -----------------------------------------------------
def test_random_reads_are_bounded_by_the_controllers_command_rate() -> None:
    fast = dataclasses.replace(BASE, controller_iops=0)
    capped = dataclasses.replace(BASE, controller_iops=1_000_000)
    kw = dict(pattern="randread", size=4 * KiB, qd=512, count=30000, precondition=1.0)
    assert run_bench(fast, **kw)["steady_iops"] > 1.2e6  # type: ignore[arg-type]
    assert run_bench(capped, **kw)["steady_iops"] == pytest.approx(  # type: ignore[arg-type]
        1e6, rel=0.01)


# -- independent plane reads -----------------------------------------------------------
@pytest.mark.parametrize("model", ["fast", "detailed"])
def test_one_page_reads_of_a_dies_planes_overlap(model: str) -> None:
    """Four one-page reads on the four planes of one die: with independent plane reads
    each is ready ``tR`` after it starts and the die takes the next a quarter of ``tR``
    later; without, the die reads them one after another."""
    ends = {}
    for indep in (False, True):
        cfg = dataclasses.replace(BASE, independent_plane_reads=indep, controller_iops=0,
                                  write_buffer_bytes=0, read_cache_bytes=0)
        t = FlashTarget(simpy.Environment(), "flash", None, cfg, model=model,
                        precondition=1.0)
        die_pages = cfg.channels * cfg.chips_per_channel * cfg.dies_per_chip
        # CWDP striping: pages ``k * dies`` (k < planes) are the planes of die 0
        ends[indep] = max(t.transport(Transfer(Op.READ, k * die_pages * cfg.page_size,
                                               cfg.page_size), 0) for k in range(4))
    assert ends[False] > 4 * BASE.t_r
    assert ends[True] < BASE.t_r + BASE.t_r  # all four within about one tR


# -- the SLC write cache ---------------------------------------------------------------
SLC = dataclasses.replace(BASE, slc_cache_bytes=256 * MiB, write_buffer_bytes=32 * MiB,
                          t_prog=1000 * US, t_prog_slc=100 * US)


def _write(t: FlashTarget, at: int, nbytes: int, chunk: int = 2 * MiB) -> int:
    ends = [t.transport(Transfer(Op.WRITE, at + a, chunk), 0) for a in range(0, nbytes, chunk)]
    return max(ends)


def test_writes_program_fast_until_the_slc_cache_fills_then_at_tlc_speed() -> None:
    t = FlashTarget(simpy.Environment(), "flash", None, SLC)
    dev = t.devices[0]
    _write(t, 0, 256 * MiB)
    assert dev.slc.slc_pages == 256 * MiB // SLC.page_size
    assert dev.slc.direct_pages == 0
    _write(t, 256 * MiB, 64 * MiB)
    assert dev.slc.direct_pages == 64 * MiB // SLC.page_size


def test_idle_time_folds_the_cache_at_the_tlc_program_rate() -> None:
    t = FlashTarget(simpy.Environment(), "flash", None, SLC)
    dev = t.devices[0]
    end = _write(t, 0, 256 * MiB)
    fold = 128 * MiB / SLC.tlc_program_bytes_per_s * S  # ps to fold half of it
    t.transport(Transfer(Op.WRITE, 512 * MiB, SLC.page_size), int(end + fold))
    assert dev.slc.folded_pages == pytest.approx(128 * MiB // SLC.page_size, rel=0.01)
    assert dev.slc.slc_pages == 256 * MiB // SLC.page_size + 1


def test_a_burst_in_the_slc_cache_is_faster_and_cheaper_than_in_tlc() -> None:
    times, energy = {}, {}
    for cache in (0, 256 * MiB):
        cfg = dataclasses.replace(SLC, slc_cache_bytes=cache)
        r = run_bench(cfg, pattern="seqwrite", size=2 * MiB, qd=16, count=96)
        times[cache], energy[cache] = r["elapsed_ps"], r["energy_pj_per_byte"]
    assert times[256 * MiB] < 0.5 * times[0]
    assert energy[256 * MiB] < energy[0]


# -- small writes packed into pages ----------------------------------------------------
def test_four_4k_writes_share_one_16k_program_with_a_write_buffer() -> None:
    for buffer, programs in ((192 * MiB, 1000), (0, 4000)):
        cfg = dataclasses.replace(BASE, write_buffer_bytes=buffer, slc_cache_bytes=0)
        r = run_bench(cfg, pattern="randwrite", size=4 * KiB, qd=32, count=4000,
                      precondition=0.5)
        assert r["report"]["pages_programmed"] == programs
        assert r["report"]["packed_writes"] == 4000 - programs
