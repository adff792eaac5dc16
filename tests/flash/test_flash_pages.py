"""The batch path of one-page commands (``flash.pages``) books exactly what the
per-command path books: two devices built alike, one served a batch at a time
(``PageBatch.serve``) and one command at a time (``Ssd.read``, ``Ssd.write``), give every
command the same completion time and end in the same state, layer by layer, through
the edges where the batch hands a command to the per-command path: a write buffer
that fills, forced and background collections, an NVMe queue shorter than the batch,
pages repeated in a batch, reads of pages just written (in the buffer or not),
partial and multi-page commands."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from flash_devices import device_state, small
from hypothesis import given, settings
from hypothesis import strategies as st

from flash import FlashConfig
from flash.pages import PageBatch
from flash.ssd import Ssd
from tmhw.sim.units import US, KiB

PAGE = 16 * KiB
#: 2 channels x 2 dies x 2 planes x 32 blocks x 8 pages: a few hundred writes collect
CFG = small(blocks_per_plane=32, pages_per_block=8, over_provisioning=0.2,
            write_buffer_bytes=12 * PAGE, read_cache_bytes=16 * PAGE, nvme_queue_depth=6)
HOT = 96  # pages the batches touch: a batch repeats some, reads meet recent writes


def _pair(cfg: FlashConfig) -> tuple[Ssd, Ssd]:
    def make() -> Ssd:
        return Ssd(cfg, model="fast", precondition=0.6, seed=0, age=0.0, record=False)
    return make(), make()


def _serve(d: Ssd, read: bool, addrs: list[int], nbytes: int, now: int) -> list[int]:
    assert d.fast is not None
    return PageBatch(d, d.fast).serve(read, addrs, nbytes, now)


def _light(d: Ssd) -> tuple[Any, ...]:
    """What a batch changes beyond its completions, cheaply (after every batch): the
    L2P map's form (which segments are dense, the dict), the buffer's fill, the NVMe
    queue, the FTL's write pointers."""
    l2p = d.ftl.l2p
    return (l2p.dense_segs, l2p.sparse_per_seg.tolist(), sorted(l2p.sparse.items()),
            d.cache.used_pages, sorted(d.host._open), d.ftl.blocks.host_wp.tolist(),
            d.transfers, d.active_ps)


batches = st.lists(
    st.tuples(st.booleans(),                                     # read or write
              st.lists(st.integers(0, HOT - 1), min_size=1, max_size=20),
              st.sampled_from([PAGE, PAGE, PAGE, PAGE // 4, 2 * PAGE]),  # bytes each
              st.integers(0, 3000)),                             # us since the last
    min_size=1, max_size=14)


def _run(cfg: FlashConfig, plan: list[tuple[bool, list[int], int, int]],
         page: int = PAGE) -> None:
    batched, single = _pair(cfg)
    now = 0
    for read, pages, nbytes, gap in plan:
        now += gap * US
        addrs = [p * page for p in pages]
        got = _serve(batched, read, addrs, nbytes, now)
        f = single.read if read else single.write
        want = [f(a, nbytes, now) for a in addrs]
        assert got == want
        assert _light(batched) == _light(single)
    assert device_state(batched) == device_state(single)


@settings(max_examples=60, deadline=None)
@given(plan=batches)
def test_batch_books_what_commands_one_by_one_book(plan: list[tuple[bool, list[int],
                                                                    int, int]]) -> None:
    _run(CFG, plan)


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(["mqsim-default", "pm1743", "slc-ull"]), plan=batches)
def test_batch_books_the_same_on_other_devices(name: str, plan: list[tuple[
        bool, list[int], int, int]]) -> None:
    """Other page sizes, cells (SLC: one program time; MQSim's default: no controller
    DRAM) and planes per die: the commands' pages are of the device's own size."""
    cfg = small(name, blocks_per_plane=32, pages_per_block=8, over_provisioning=0.2,
                nvme_queue_depth=6)
    page = cfg.page_size
    _run(cfg, [(r, pages, nbytes * page // PAGE, gap) for r, pages, nbytes, gap in plan],
         page)


@settings(max_examples=25, deadline=None)
@given(plan=batches)
def test_batch_books_the_same_written_through(plan: list[tuple[bool, list[int],
                                                               int, int]]) -> None:
    """No write buffer: a write completes when programmed, the queue fills sooner."""
    _run(dataclasses.replace(CFG, write_buffer_bytes=0, read_cache_bytes=0), plan)


def test_sustained_writes_collect_and_wait_alike() -> None:
    """A long stream of batches over the whole logical space: blocks open, planes fall
    under the soft threshold and collect, the buffer and the NVMe queue make commands
    wait; the two paths still agree command by command, and the batch path serves most
    commands (a forced collection is rarer: the background one keeps planes above the
    hard threshold)."""
    cfg = dataclasses.replace(CFG, nvme_queue_depth=24, write_buffer_bytes=48 * PAGE)
    rng = np.random.default_rng(3)
    plan = [(bool(rng.random() < 0.3), rng.integers(0, cfg.logical_pages, 16).tolist(),
             PAGE, int(rng.integers(0, 5000))) for _ in range(120)]
    _run(cfg, plan)
    batched, _ = _pair(cfg)
    single: list[int] = []

    def counted(f: Any) -> Any:
        def g(*a: int) -> int:
            single.append(1)
            return int(f(*a))
        return g

    for name in ("read", "write"):  # count the commands left to the per-command path
        setattr(batched, name, counted(getattr(batched, name)))
    now = 0
    for read, pages, nbytes, gap in plan:
        now += gap * US
        _serve(batched, read, [p * PAGE for p in pages], nbytes, now)
    r = batched.report(10**12)
    assert r["gc_count"] > 0
    assert r["cache"]["write_buffer_waits"] > 0 and r["nvme_queue_waits"] > 0
    assert len(single) < 16 * len(plan) // 3


def test_a_segment_turns_dense_with_its_256th_dict_entry() -> None:
    """Distinct pages written in batches of 16 put their mappings in the L2P map's dict
    until its segment holds ``DENSE_AT`` (256) of them: the last write of the 16th
    batch brings the 256th and turns the segment dense, there and not a write later."""
    cfg = dataclasses.replace(CFG, write_buffer_bytes=64 * PAGE, nvme_queue_depth=64)
    plan = [(False, list(range(16 * i, 16 * i + 16)), PAGE, 20000) for i in range(17)]
    _run(cfg, plan)  # (it compares the map's form after every batch)
    batched, _ = _pair(cfg)
    now = 0
    for read, pages, nbytes, gap in plan[:16]:
        now += gap * US
        _serve(batched, read, [p * PAGE for p in pages], nbytes, now)
    assert batched.ftl.l2p.dense_segs == 1
