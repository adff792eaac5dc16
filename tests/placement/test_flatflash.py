"""FlatFlash (``tmhw.placement.flatflash``): cold operands read in place through the
SSD's BAR, promotion to HBM after ``policy.flatflash.promote_after`` accesses, one flash
request per op and operand, and no traffic at all when HBM holds the footprint.

The hand-built iteration: two weights W1 and W2 of 1 MiB each; op 0 reads W1, ops
1..6 each read W2 and the previous op's output. HBM holds 320 pages of 4 KiB: the
mini-batch and W1 at the start, not W2, so W2 is cold."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tmhw.config import PAPER, with_overrides
from tmhw.dma import FETCH, INPLACE
from tmhw.placement.base import make_policy
from tmhw.sim.units import S, transfer_ps
from tmhw.system import System
from tmhw.workload.graph import Gemm, Kind, Op, Phase, Tensor, Workload

PAGE = 4096
W_BYTES = 1 << 20
ACT = 16 * PAGE
N_W2_OPS = 6
CAP_PAGES = 320


def workload() -> Workload:
    ts = [Tensor(0, "x", Kind.INPUT, ACT), Tensor(1, "w1", Kind.WEIGHT, W_BYTES),
          Tensor(2, "w2", Kind.WEIGHT, W_BYTES)]
    ts += [Tensor(3 + i, f"y{i}", Kind.ACTIVATION, ACT) for i in range(N_W2_OPS + 1)]
    g = (Gemm(64, 64, 64),)
    ops = [Op(0, "op0", Phase.FORWARD, "l0", g, reads=(0, 1), writes=(3,))]
    ops += [Op(i, f"op{i}", Phase.FORWARD, f"l{i}", g, reads=(2 + i, 2), writes=(3 + i,))
            for i in range(1, N_W2_OPS + 1)]
    return Workload("w2-chain", 1, ts, ops, page_size=PAGE)


def system(promote_after: int, iterations: int = 1) -> System:
    wl = workload()
    foot = -(-wl.peak_live_bytes() // PAGE)
    # the ratio that gives CAP_PAGES (the floor of ratio x footprint)
    ratio = (CAP_PAGES + 0.5) / foot
    cfg = with_overrides(PAPER, ["policy.name=flatflash", f"policy.hbm_ratio={ratio}",
                                 f"run.iterations={iterations}", "run.warmup_iterations=0",
                                 f"policy.flatflash.promote_after={promote_after}"])
    sysm = System(cfg, workload=wl)
    assert sysm.capacity_pages == CAP_PAGES
    return sysm


def test_the_table_reads_in_place_and_holds_only_the_frameworks_drops() -> None:
    sysm = system(4)
    tab = sysm.table
    assert tab.reactive and tab.fault_chunk_pages == 0 and sysm.policy.reads_in_place(2)
    assert tab.moves and all(m.action.value == "drop" for m in tab.moves)
    assert make_policy("flatflash").name == "flatflash"


def test_an_in_place_read_costs_its_bytes_on_the_link_and_each_nand_page_once() -> None:
    """Reading a cold run of N bytes in place: N bytes leave the SSD as
    N + ceil(N / 64) x 20 bytes on its link (a completion per 64 B line) and on the
    NPU's port, and ceil(N / 16 KiB) NAND pages are read; the SSD's DRAM keeps them,
    so reading the run again costs no NAND read."""
    sysm = system(4)
    cfg, dma, dev = sysm.cfg, sysm.dma, sysm.flash.devices[0]
    w2 = sysm.workload.tensors[2]
    n = w2.npages * PAGE
    wire = n + -(-n // 64) * 20
    nand = -(-n // cfg.flash.page_size)
    end = dma.inplace_read(w2.page_start, w2.page_end, 0, 64, 20, "w2")
    assert dev.c.host_pages_read == nand == 64
    assert dev.bytes_read == n
    ssd_link = int(wire * (S / cfg.flash.host_read_bytes_per_s))
    assert dev.host.link_rd.busy_ps == ssd_link
    assert dma.link_in.busy_ps == transfer_ps(wire, cfg.link_bytes_per_s)
    # the NPU's port is faster than the SSD's x4 link: the SSD's link sets the end
    assert end >= ssd_link + cfg.link.latency_ps
    assert dma.bytes[INPLACE].value == n and dma.bytes[FETCH].value == 0
    # nothing landed in HBM
    assert not sysm.res.in_hbm[w2.page_start:w2.page_end].any()
    dma.inplace_read(w2.page_start, w2.page_end, end, 64, 20, "w2")
    assert dev.c.host_pages_read == nand
    assert dev.cache.cache_read_hits == nand
    assert dev.host.link_rd.busy_ps == 2 * ssd_link
    assert dev.mmio_reads == 2


def test_ops_read_a_cold_weight_in_place_until_the_threshold_then_it_is_promoted() -> None:
    """W2 is read in place by ops 1, 2, 3: one flash request each (not one per page);
    at the third access it is promoted in the background, one fetch of 1 MiB served
    from the SSD's DRAM (no NAND read), and ops 4..6 find it in HBM."""
    sysm = system(3)
    rep = sysm.run()
    ex, dev = sysm.executor, sysm.flash.devices[0]
    assert ex.totals.inplace_reads == 3 == dev.mmio_reads
    assert ex.totals.promotions == 1
    assert rep["steady"]["traffic_bytes"]["flash_to_npu"] == 3 * W_BYTES
    assert rep["steady"]["traffic_bytes"]["flash_to_hbm"] == W_BYTES
    assert rep["steady"]["traffic_bytes"]["inter_tier"] == 4 * W_BYTES + \
        rep["steady"]["traffic_bytes"]["hbm_to_flash"]
    assert dev.c.host_pages_read == W_BYTES // sysm.cfg.flash.page_size
    assert rep["steady"]["faults"] == 0
    w2 = sysm.workload.tensors[2]
    assert sysm.res.in_hbm[w2.page_start:w2.page_end].all()


def test_below_the_threshold_a_weight_is_never_promoted() -> None:
    sysm = system(N_W2_OPS + 1)
    rep = sysm.run()
    assert sysm.executor.totals.inplace_reads == N_W2_OPS
    assert sysm.executor.totals.promotions == 0
    assert rep["steady"]["traffic_bytes"]["flash_to_hbm"] == 0
    assert rep["steady"]["traffic_bytes"]["flash_to_npu"] == N_W2_OPS * W_BYTES
    # one NAND read per page of W2 for all six ops: the SSD's DRAM kept them
    assert sysm.flash.devices[0].c.host_pages_read == W_BYTES // sysm.cfg.flash.page_size


def test_an_op_waits_for_its_in_place_stream() -> None:
    """An op reading a cold weight cannot end before its last line arrives: the
    stall is at least the SSD link's time for the wire bytes less the op's compute."""
    sysm = system(N_W2_OPS + 1)
    sysm.run()
    ex = sysm.executor
    wire = W_BYTES + W_BYTES // 64 * 20
    link_ps = wire * 1e12 / sysm.cfg.flash.host_read_bytes_per_s
    for i in range(1, N_W2_OPS + 1):
        assert ex.op_stall[i] + ex.op_ps[i] >= link_ps


def test_at_the_whole_footprint_flatflash_is_hbm_only(
        tmhw: Callable[..., Any], tmp_path: Path) -> None:
    """``tmhw run --preset quick --policy flatflash --hbm-ratio 1``: 15.400 ms per
    iteration and no byte between the tiers, as hbm-only."""
    out = {}
    for name, extra in (("flatflash", ["--hbm-ratio", "1"]), ("hbm-only", [])):
        res = tmhw("run", "--preset", "quick", "--policy", name, *extra, "--quiet",
                   "--out", str(tmp_path / name))
        assert res.rc == 0, res.err
        out[name] = json.loads((tmp_path / name / "report.json").read_text())
    ff, hbm = out["flatflash"], out["hbm-only"]
    assert ff["steady"]["iteration_time_ps"] == hbm["steady"]["iteration_time_ps"]
    assert round(ff["steady"]["iteration_time_ps"] / 1e9, 3) == 15.400
    assert (ff["steady"]["traffic_bytes"]["inter_tier"] == 0
            == hbm["steady"]["traffic_bytes"]["inter_tier"])
    assert ff["run_total"]["system"]["executor"]["inplace_reads"] == 0



def test_an_op_waits_for_the_part_of_a_cold_operand_a_promotion_booked_while_it_waited(
        ) -> None:
    """A promotion booked while an op waits for its operands puts more of a cold tensor in
    HBM, still in flight; the op starts once those pages are there too (the executor
    checks every held page has arrived). A GPT-3 block on a quarter of its footprint hit
    this in its first iteration: Adam's step waited for its weight (a fault) while its
    weight gradient's promotion was booked (at seq 16, as at seq 64 and 2048, it stopped
    with an AssertionError before)."""
    cfg = with_overrides(PAPER, ['workload.model="gpt3-block"', "workload.seq=16",
                                 "workload.batch=1", "workload.layers=1",
                                 'policy.name="flatflash"', "policy.hbm_ratio=0.25",
                                 "run.iterations=1", "run.warmup_iterations=1"])
    s = System(cfg)
    rep = s.run()
    assert s.executor.totals.promotions > 0 and s.executor.totals.inplace_reads > 0
    assert rep["steady"]["iteration_time_ps"] > 0
