"""The flash bench's compiled closed loops (``flash.pages.ReadLoop``, ``WriteLoop``)
book exactly what the loop of ``transport`` calls books (``flash.bench._closed_loop``):
the same figures and every request's latency, and the device in the same state, through
an NVMe queue shorter than the loop's depth, a controller's command rate, rows that
grow, pages never written, and for writes the blocks they open, the collections they
force and the background collections that follow; and they decline what they would
book otherwise."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from flash_devices import device_state, small
from hypothesis import given, settings
from hypothesis import strategies as st

from flash import PRESETS, FlashConfig
from flash.bench import run_bench
from flash.target import FlashTarget
from tmhw.sim import Op, Pattern, Transfer
from tmhw.sim.env import Environment

#: 2 channels x 2 dies x 2 planes x 32 blocks x 8 pages (as ``test_flash_pages``)
_SHRUNK: dict[str, Any] = dict(blocks_per_plane=32, pages_per_block=8,
                               over_provisioning=0.2)


def _bench(cfg: FlashConfig, compiled: bool, monkeypatch: pytest.MonkeyPatch,
           model: str = "fast", **kw: Any) -> tuple[dict[str, Any], FlashTarget]:
    target = FlashTarget(Environment(), "flash", None, cfg, model=model,
                         precondition=0.5, seed=1, age=0.0)
    with monkeypatch.context() as m:
        if not compiled:
            m.setattr(FlashTarget, "closed_loop", lambda *a: None)
        else:  # (the loop must take these requests, or the test compares nothing)
            m.setattr(FlashTarget, "closed_loop", _taken)
        out = run_bench(cfg, model=model, target=target, **kw)
    return out, target


def _same_bookings(cfg: FlashConfig, **kw: Any) -> tuple[FlashTarget, FlashTarget]:
    """``run_bench`` of ``kw`` on ``cfg`` through the compiled loop and through
    ``transport``: the same figures, transfers and device state; both targets."""
    mp = pytest.MonkeyPatch()
    got, a = _bench(cfg, True, mp, **kw)
    want, b = _bench(cfg, False, mp, **kw)
    assert got == want
    assert a.transfers == b.transfers
    assert device_state(a.devices[0]) == device_state(b.devices[0])
    return a, b


def _taken(self: FlashTarget, reads: Any, addresses: Any, nbytes: int, qd: int) -> Any:
    loop = _CLOSED_LOOP(self, reads, addresses, nbytes, qd)
    assert loop is not None
    return loop


_CLOSED_LOOP = FlashTarget.closed_loop


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(["990pro", "mqsim-default", "pm1743"]),
       model=st.sampled_from(["fast", "detailed"]),
       pattern=st.sampled_from(["randread", "seqread"]),
       qd=st.integers(1, 70), count=st.integers(1, 600),
       depth=st.sampled_from([1, 3, 8, 1024]),
       iops=st.sampled_from([0, 300_000, 2_500_000]), apart=st.booleans(),
       part=st.sampled_from([1, 1, 2, 4, 16]), cache=st.sampled_from([0, 8, 64 << 20]),
       pages=st.sampled_from([1, 1, 1, 2, 3, 8]))
def test_compiled_loop_books_what_transport_books(name: str, model: str, pattern: str,
                                                  qd: int, count: int, depth: int,
                                                  iops: int, apart: bool, part: int,
                                                  cache: int, pages: int) -> None:
    """Whole-page reads, reads of a ``part`` of a page (fio's 4 KiB reads of 16 KiB
    pages) and of several ``pages`` (the fast model's chunk read, the detailed one's
    commands), on either timing model (the detailed model's one-page read is the fast
    one's), with and without independent plane reads; with no read cache, or one of
    ``cache`` bytes (8: one page, rounded up) that keeps the pages read in part, hit
    by later reads of them and trimmed."""
    cfg = dataclasses.replace(small(name, nvme_queue_depth=depth, read_cache_bytes=cache,
                                    **_SHRUNK),
                              controller_iops=iops, independent_plane_reads=apart)
    mp = pytest.MonkeyPatch()
    size = cfg.page_size * pages if pages > 1 else cfg.page_size // part
    kw = dict(pattern=pattern, size=size, qd=qd, count=count, seed=2)
    got, a = _bench(cfg, True, mp, model=model, **kw)
    want, b = _bench(cfg, False, mp, model=model, **kw)
    assert got == want
    assert a.transfers == b.transfers
    assert device_state(a.devices[0]) == device_state(b.devices[0])


def test_deep_queue_waits_and_forgets_as_transport_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of requests through a 2-command NVMe queue at depth 16: commands wait
    for it, and it forgets completions past twice its depth."""
    cfg = dataclasses.replace(small(nvme_queue_depth=2, **_SHRUNK), controller_iops=1_000_000)
    kw = dict(pattern="randread", size=cfg.page_size, qd=16, count=3000, seed=5)
    got, a = _bench(cfg, True, monkeypatch, **kw)
    want, b = _bench(cfg, False, monkeypatch, **kw)
    assert a.devices[0].host.queue_waits > 1000
    assert got == want
    assert device_state(a.devices[0]) == device_state(b.devices[0])


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(["990pro", "mqsim-default", "pm1743"]),
       model=st.sampled_from(["fast", "detailed", "detailed-mqsim"]),
       pattern=st.sampled_from(["seqwrite", "randwrite"]),
       pages=st.sampled_from([1, 2, 3, 4, 8, 72]),
       qd=st.integers(1, 40), count=st.integers(1, 500),
       depth=st.sampled_from([1, 3, 1024]),
       iops=st.sampled_from([0, 2_500_000]), part=st.sampled_from([1, 1, 4]),
       buffer=st.sampled_from([0, 0, 80, 1 << 30]), slc=st.sampled_from([0, 0, 48, 4096]))
def test_compiled_write_loop_books_what_transport_books(
        name: str, model: str, pattern: str, pages: int, qd: int, count: int, depth: int,
        iops: int, part: int, buffer: int, slc: int) -> None:
    """Writes on a device a few hundred of them fill: blocks open,
    collections are forced and follow in the background (``Ssd.write`` serves those
    requests), and segments of the map turn dense. One page (``FTL.write1``'s), runs
    of at most a stripe (8 planes) and runs longer than ``DENSE_AT // 4`` (64) pages,
    on blocks of 16 pages so that they are less than a block per plane (the lengths the
    FTL's run kernel takes). On the fast model (one chunk a request, one page's program
    for a page), and on the detailed one command by command,
    multi-plane, with dies' queues of programs, and under MQSim's rules (chip lock,
    programs from the data's last time on the link). A ``part`` of a page (fio's 4 KiB
    writes of 16 KiB pages). Through no buffer, or a write buffer of ``buffer`` pages
    (80: writes wait for room in it; under ONFI rules small writes share its pages)
    larger than the writes; with an SLC cache of ``slc`` pages (48: it fills, folds in
    the idle time between requests at QD1 and fills again) or none."""
    shrunk = dict(_SHRUNK, pages_per_block=16) if pages > 8 else _SHRUNK
    base = small(name, **shrunk)
    wb = min(buffer, 1 << 30) * (base.page_size if buffer < 1 << 30 else 1)
    if wb and wb < pages * base.page_size:
        wb = 0  # (a write larger than the buffer goes through it unbuffered: declined)
    cfg = dataclasses.replace(
        small(name, nvme_queue_depth=depth, write_buffer_bytes=wb, read_cache_bytes=0,
              compat="mqsim" if model == "detailed-mqsim" else "onfi",
              **shrunk), controller_iops=iops, slc_cache_bytes=slc * base.page_size,
        t_prog_slc=PRESETS["990pro"].t_prog_slc if slc else 0)
    size = pages * cfg.page_size if part == 1 else cfg.page_size // part
    _same_bookings(cfg, pattern=pattern, size=size, qd=qd, count=count, seed=4,
                   model=model.split("-")[0])


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["990pro", "mqsim-default", "pm1743"]),
       model=st.sampled_from(["fast", "detailed", "detailed-mqsim"]),
       qd=st.integers(1, 40), count=st.integers(2, 500),
       depth=st.sampled_from([1, 3, 1024]),
       iops=st.sampled_from([0, 2_500_000]), apart=st.booleans(),
       part=st.sampled_from([1, 1, 2, 4]), dram=st.sampled_from([0, 0, 1, 2]),
       pages=st.sampled_from([1, 1, 1, 2, 3, 8]))
def test_compiled_mix_books_what_transport_books(name: str, model: str, qd: int,
                                                 count: int, depth: int, iops: int,
                                                 apart: bool, part: int, dram: int,
                                                 pages: int) -> None:
    """fio's 70/30 mix of one-page requests through no buffer on either timing model
    (``WriteLoop`` with its reads) and under MQSim's rules (``ConvoyLoop`` with its
    writes, against the events): reads of pages the loop wrote a moment before, of
    pages never written and behind programs on their die, while blocks open,
    collections are forced and segments of the map turn dense; of whole pages, a
    ``part`` of one or several ``pages`` (not under MQSim's rules: its loop takes
    requests within a page); with no DRAM, or (``dram``, not under MQSim's rules, whose reads of
    DRAM's pages are events) a write buffer and a read cache of 16 pages (1: reads hit
    the buffer, parts of pages the cache) or of 4,096."""
    mb = 16 if dram == 1 else 4096
    if model == "detailed-mqsim":
        dram, pages = 0, 1
    cfg = dataclasses.replace(
        small(name, nvme_queue_depth=depth, compat="mqsim" if model == "detailed-mqsim"
              else "onfi", **_SHRUNK), controller_iops=iops, independent_plane_reads=apart)
    cfg = dataclasses.replace(cfg, write_buffer_bytes=mb * cfg.page_size if dram else 0,
                              read_cache_bytes=mb * cfg.page_size if dram else 0)
    size = cfg.page_size * pages if pages > 1 else cfg.page_size // part
    _same_bookings(cfg, pattern="mix", size=size, qd=qd, count=count, seed=4,
                   model=model.split("-")[0])


@pytest.mark.parametrize("model", ["fast", "detailed", "detailed-mqsim"])
def test_compiled_mix_of_parts_of_pages_books_what_transport_books(model: str) -> None:
    """fio's 4 KiB mix on MQSim's device (8 KiB pages; its channels at 333 MT/s, so a
    part of a page leaves the die in part of a page's time under either rules)."""
    cfg = small("mqsim-default", write_buffer_bytes=0, read_cache_bytes=0,
                compat="mqsim" if model == "detailed-mqsim" else "onfi", **_SHRUNK)
    _same_bookings(cfg, pattern="mix", size=cfg.page_size // 2, qd=8, count=400, seed=4,
                   model=model.split("-")[0])


@pytest.mark.parametrize("model", ["fast", "detailed"])
def test_compiled_mix_through_dram_books_what_transport_books(model: str) -> None:
    """fio's 4 KiB mix on a drive with a write buffer, a read cache and an SLC cache
    (the 990 PRO's shape): reads of pages the buffer holds or the cache kept from an
    earlier read of part of them, writes that share a page, wait for the buffer and
    drop the cache's stale copies (a cache of most of the device's pages, so that a
    stale copy would be read again), over a few thousand requests."""
    cfg = dataclasses.replace(small("990pro", write_buffer_bytes=2 * 16384,
                                    read_cache_bytes=1024 * 16384, **_SHRUNK),
                              slc_cache_bytes=48 * 16384,
                              t_prog_slc=PRESETS["990pro"].t_prog_slc)
    a, _ = _same_bookings(cfg, pattern="mix", size=4096, qd=4, count=3000, seed=4,
                          model=model)
    cache = a.devices[0].cache
    assert cache.cache_read_hits > 0 and cache.buffer_read_hits > 0
    assert cache.write_waits > 0 and a.devices[0].packed_writes > 0


@pytest.mark.parametrize("model", ["fast", "detailed", "detailed-mqsim"])
def test_compiled_mix_reads_while_collections_follow_each_write(model: str) -> None:
    """A mix long enough to bring planes under the soft collection threshold: while
    they are, every request is served per command, the reads by ``Ssd.read``."""
    cfg = dataclasses.replace(
        small("990pro", write_buffer_bytes=0, read_cache_bytes=0,
              compat="mqsim" if model == "detailed-mqsim" else "onfi", **_SHRUNK),
        controller_iops=0)
    a, _ = _same_bookings(cfg, pattern="mix", size=cfg.page_size, qd=8, count=5000,
                          seed=4, model=model.split("-")[0])
    assert a.devices[0].report(1)["gc_count"] > 0


@pytest.mark.parametrize("compiled", [True, False])
def test_a_read_waiting_for_the_nvme_queue_starts_when_a_write_frees_it(
        compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under MQSim's rules reads wait for a place in the NVMe queue (``EventReads``'s
    backlog); a write that completes frees one too. Through a queue of one command at
    depth 2, every request of a mix completes: as many pages read and programmed as
    requests, every request with its completion."""
    cfg = small("990pro", nvme_queue_depth=1, write_buffer_bytes=0, read_cache_bytes=0,
                compat="mqsim", **_SHRUNK)
    out, t = _bench(cfg, compiled, monkeypatch, model="detailed", pattern="mix",
                    size=cfg.page_size, qd=2, count=170, seed=4)
    c = t.devices[0].c
    assert c.host_pages_read + c.pages_programmed == 170
    assert t.devices[0].transfers == 170
    assert t.devices[0].host.queue_waits > 0


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["990pro", "mqsim-default", "pm1743"]),
       model=st.sampled_from(["detailed", "fast"]),
       pattern=st.sampled_from(["randread", "seqread"]),
       size=st.sampled_from([(1, 1), (1, 2), (3, 1), (5, 4)]),
       qd=st.integers(1, 70), count=st.integers(1, 400),
       depth=st.sampled_from([1, 3, 1024]),
       iops=st.sampled_from([0, 300_000]))
def test_compiled_convoy_loop_books_what_the_events_book(
        name: str, model: str, pattern: str, size: tuple[int, int], qd: int, count: int,
        depth: int, iops: int) -> None:
    """Under MQSim's rules (reads served by events, ``flash.convoy``): requests of
    whole pages, of parts of pages (no read cache to keep them) and of several pages
    and a part, through a backlog where the NVMe queue is shorter than the loop, with
    multi-plane commands and the data-out convoy, on either timing model."""
    cfg = dataclasses.replace(
        small(name, nvme_queue_depth=depth, read_cache_bytes=0, compat="mqsim",
              **_SHRUNK), controller_iops=iops)
    mp = pytest.MonkeyPatch()
    kw = dict(pattern=pattern, size=size[0] * cfg.page_size // size[1], qd=qd,
              count=count, seed=6)
    got, a = _bench(cfg, True, mp, model=model, **kw)
    want, b = _bench(cfg, False, mp, model=model, **kw)
    assert got == want
    assert a.transfers == b.transfers
    assert device_state(a.devices[0]) == device_state(b.devices[0])
    assert a._events is not None and b._events is not None
    arb_a, arb_b = a._events[0].arbiter, b._events[0].arbiter
    assert arb_a.turn == arb_b.turn      # the channels' round robin goes on alike
    assert not any(arb_a.busy) and not any(arb_a.queued) and not a._events[0].holding


def test_loop_declines_what_it_would_book_otherwise() -> None:
    cfg = small(**_SHRUNK)
    page = cfg.page_size
    t = FlashTarget(Environment(), "flash", None, cfg, model="fast", precondition=0.5,
                    seed=1, age=0.0)
    whole = np.arange(4, dtype=np.int64) * page
    reads, writes = np.ones(4, dtype=np.bool_), np.zeros(4, dtype=np.bool_)
    mix = np.array([True, False, True, True])
    assert t.closed_loop(reads, whole, page, 4) is not None
    assert t.closed_loop(reads, whole + 512, page, 4) is None    # not page-aligned
    assert t.closed_loop(reads, whole, page // 2, 4) is not None  # a part, by the cache
    assert t.closed_loop(reads, whole + page // 2, page, 4) is None  # across two pages
    assert t.closed_loop(reads, whole, 2 * page, 4) is not None  # two pages
    assert t.closed_loop(reads, whole + page // 2, 2 * page, 4) is None  # parts of three
    assert t.closed_loop(writes, whole, 2 * page, 4) is not None  # through a write buffer
    assert t.closed_loop(mix, whole, page, 4) is not None        # reads through DRAM
    tiny = FlashTarget(Environment(), "flash", None,
                       small(write_buffer_bytes=page, **_SHRUNK), model="fast",
                       precondition=0.5, seed=1, age=0.0)
    assert tiny.closed_loop(writes, whole, 2 * page, 4) is None  # larger than the buffer
    slc = FlashTarget(Environment(), "flash", None,
                      dataclasses.replace(small(**_SHRUNK), slc_cache_bytes=64 * page,
                                          t_prog_slc=PRESETS["990pro"].t_prog_slc),
                      model="fast", precondition=0.5, seed=1, age=0.0)
    assert slc.closed_loop(writes, whole, page, 4) is not None   # an SLC cache
    t.transport(Transfer(Op.WRITE, 0, page, Pattern.RANDOM), 0)
    assert t.closed_loop(reads, whole, page, 4) is None          # the buffer holds a page
    striped = FlashTarget(Environment(), "flash", None,
                          small(devices=2, stripe_bytes=page, **_SHRUNK), model="fast",
                          precondition=0.5, seed=1, age=0.0)
    assert striped.closed_loop(reads, whole, page, 4) is None    # several devices
    through = FlashTarget(Environment(), "flash", None,
                          small(write_buffer_bytes=0, read_cache_bytes=0, **_SHRUNK),
                          model="fast", precondition=0.5, seed=1, age=0.0)
    assert through.closed_loop(writes, whole, 2 * page, 4) is not None
    assert through.closed_loop(writes, whole, page, 4) is not None  # one page: write1's
    assert through.closed_loop(mix, whole, page, 4) is not None     # a mix of one page
    assert through.closed_loop(mix, whole, 2 * page, 4) is not None  # of two pages
    assert through.closed_loop(mix, whole + page // 2, page, 4) is None  # across two
    assert through.closed_loop(writes, whole, page // 4, 4) is not None  # a part of a page
    assert through.closed_loop(writes, whole + page // 2, page, 4) is None  # across two
    assert through.closed_loop(reads, whole + page // 2, page // 4, 4) is not None
    assert through.closed_loop(mix, whole, page // 4, 4) is not None  # a part of a page
    cached = FlashTarget(Environment(), "flash", None,
                         small(write_buffer_bytes=0, **_SHRUNK), model="fast",
                         precondition=0.5, seed=1, age=0.0)
    assert cached.closed_loop(mix, whole, page // 4, 4) is not None  # through its cache
    assert t.closed_loop(mix, whole, page, 4) is None               # a write buffer
    for compat in ("onfi", "mqsim"):  # the detailed model's programs, under either rules
        detailed = FlashTarget(Environment(), "flash", None,
                               small(write_buffer_bytes=0, read_cache_bytes=0,
                                     compat=compat, **_SHRUNK),
                               model="detailed", precondition=0.5, seed=1, age=0.0)
        assert detailed.closed_loop(writes, whole, 2 * page, 4) is not None
        assert detailed.closed_loop(mix, whole, page, 4) is not None
    recorded = FlashTarget(Environment(), "flash", None,
                           small(write_buffer_bytes=0, read_cache_bytes=0, **_SHRUNK),
                           model="detailed", precondition=0.5, seed=1, age=0.0, record=True)
    assert recorded.closed_loop(writes, whole, 2 * page, 4) is None  # spans recorded


@pytest.mark.parametrize("model", ["fast", "detailed", "detailed-mqsim"])
@pytest.mark.parametrize("pattern,qd", [("seqwrite", 16), ("randwrite", 1)])
def test_compiled_one_page_writes_book_what_transport_books(model: str, pattern: str,
                                                           qd: int) -> None:
    """One-page writes (``FTL.write1``'s placement, the fast model's one-page program)
    until blocks open, collections run and, written in order, segments of the map's
    dict turn dense (the loop hands those to Python and goes on: the same segments
    dense, the same pages left in the dict)."""
    cfg = dataclasses.replace(
        small("990pro", nvme_queue_depth=1024, write_buffer_bytes=0, read_cache_bytes=0,
              compat="mqsim" if model == "detailed-mqsim" else "onfi", **_SHRUNK),
        controller_iops=0)
    a, b = _same_bookings(cfg, pattern=pattern, size=cfg.page_size, qd=qd, count=500,
                          seed=4, model=model.split("-")[0])
    la, lb = a.devices[0].ftl.l2p, b.devices[0].ftl.l2p
    assert la.arrays()[0].tolist() == lb.arrays()[0].tolist()
    assert la.sparse.meta.tolist() == lb.sparse.meta.tolist()
