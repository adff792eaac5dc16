"""Call budgets of the flash hot path (counts, not times): a 2 MiB chunk, 128 pages on
128 dies of the 990pro preset, costs a handful of die-lane calls and a bounded number of
Python calls, whatever its pages meet on their dies: its dies are booked by the compiled
kernels (``flash.engine``), not one Python call per die or page."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import sys
from collections import Counter
from collections.abc import Iterator
from types import FrameType
from typing import Any

import numpy as np

from flash import PRESETS, FlashTarget
from flash.target import compile_kernels
from tmhw.sim import Op, Pattern, Transfer
from tmhw.sim.env import Environment

MiB = 1 << 20
CHUNK = 2 * MiB


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """No garbage collection while calls are counted: a collection runs the finalizers
    of whatever it frees (numba's compiler leaves objects with ``__del__`` behind), and
    their calls are not the code's. (Disabled, the collector frees nothing until it is
    enabled again; a collection first would take a tenth of a second a count, with
    numba's objects in the heap, and change no count.)"""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


#: the 128-die device these budgets were measured on (chunks of 128 pages or more
#: put at most one page on each plane)
DIES128 = dataclasses.replace(PRESETS["990pro"], dies_per_chip=8)


def _profiled(fn: Any, prof: Any) -> None:
    """Run ``fn()`` with ``prof`` as the profile function, the collector off."""
    with _no_gc():
        sys.setprofile(prof)
        try:
            fn()
        finally:
            sys.setprofile(None)


def _count_calls(fn: Any) -> Counter[str]:
    """Python function calls made while ``fn()`` runs, by qualified name."""
    calls: Counter[str] = Counter()

    def prof(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            calls[frame.f_code.co_qualname] += 1

    _profiled(fn, prof)
    return calls


def _warm() -> None:
    """Load the compiled kernels (a process's first call of each loads it from numba's
    cache, a few thousand Python calls of numba's own), on devices of their own: every
    kernel ``make`` compiles, so that a test run alone counts what it would in the
    suite."""

    compile_kernels()


def _device() -> FlashTarget:
    _warm()
    dev = FlashTarget(Environment(), "flash", None, PRESETS["990pro"], model="fast",
                      precondition=0.5, seed=0)
    # programs queued on every die: the reads below meet them (read priority, suspend)
    for k in range(4):
        dev.transport(Transfer(Op.WRITE, k * 8 * MiB, 8 * MiB), 0)
    return dev


def test_chunk_costs_a_few_die_lane_calls() -> None:
    dev = _device()
    chunks = 8
    reads = _count_calls(lambda: [dev.transport(Transfer(Op.READ, (64 + 2 * k) * MiB, CHUNK),
                                                1000) for k in range(chunks)])
    writes = _count_calls(lambda: [dev.transport(Transfer(Op.WRITE, (512 + 2 * k) * MiB,
                                                          CHUNK), 1000)
                                   for k in range(chunks)])
    assert dev.devices[0].model.dies.suspends["program"] > 0  # the reads did meet programs
    for calls in (reads, writes):
        lane_calls = sum(v for k, v in calls.items() if k.startswith("DieLanes."))
        # the booking call, the lanes' newest queued ops, the lanes with queued work
        # (reads) or the queue slots (programs), the cache-register hold or a page's
        # search for a program to join, and for the newest ops and the read that meets
        # queued work one reading of queued times each (``_now``: whatever the depth)
        assert lane_calls <= 6 * chunks, calls
        # per chunk: the target, device, cache, FTL and model layers, numpy helpers, and
        # one booking per channel; none per page or per die
        assert sum(calls.values()) <= 200 * chunks, calls.most_common(10)


def _count_py_and_c(fn: Any) -> tuple[int, int]:
    """(Python calls, C calls: numpy and builtins) made while ``fn()`` runs."""
    n = [0, 0]

    def prof(_frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            n[0] += 1
        elif event == "c_call":
            n[1] += 1

    _profiled(fn, prof)
    return n[0], n[1]


def test_ftl_write_of_a_chunk_is_one_vectorised_step() -> None:
    """The FTL's host write of one write-back chunk (990pro: 512 planes, 16 KiB pages)
    whose planes all have room in their active blocks: a fixed number of calls, none per
    page, per plane or per L2P segment. An 8 MiB chunk not page-aligned spans 513 pages
    (one plane twice); 2 MiB is 128 pages. Before the run path, the general path (grouping
    by plane, unmap by unique, L2P set by mask) made 89 Python and 90 C calls for 513
    pages and 76 and 84 for 512 or 128; the run path makes 40 and 52, and 25 and 36."""
    import numpy as np

    from flash.ftl import FTL

    ftl = FTL(DIES128)
    ftl.precondition(0.01)
    budget = {513: (45, 60), 512: (30, 40), 128: (30, 40)}
    for k, n in enumerate([513, 512, 128] * 2):
        lo = 600 + 4096 * 5 * k  # chunks straddle L2P segments; some overwrite the
        lpns = np.arange(lo, lo + n, dtype=np.int64)  # preconditioned range
        ftl.write(lpns)  # the first write of a block makes its P2L row
        again = lpns + 1
        mapped = ftl.mapped_pages()
        out: list[Any] = []
        py, c = _count_py_and_c(lambda: out.append(ftl.write(again)))  # noqa: B023
        assert py <= budget[n][0] and c <= budget[n][1], (n, py, c)
        ppns, jobs = out[0]
        assert not jobs and np.array_equal(ftl.lookup(again), ppns)
        # lo + n is new (mapped already if preconditioned), the rest are overwritten
        assert ftl.mapped_pages() == mapped + int(lo + n >= ftl.n_pre)


def test_ftl_write_of_a_chunk_by_its_bounds() -> None:
    """A device writes a chunk's pages by their bounds (``write_range``): the run is not
    checked to be one. 513, 512 and 128 pages as in the test above, and 32 (a 512 KiB
    stripe unit of a RAID-0 array, few enough to go into a sparse L2P segment's dict).
    Counting the call that keeps the result: by ``write`` 32 pages made 28 Python and 76
    C calls, 32 of them dict look-ups of the old copies, one per page (now a C loop: 28
    and 45); by bounds 36 and 47 (513 pages), 21 and 31 (512, 128), 24 and 39 (32),
    and 23 and 34 with the dict an ``IntMap`` its entries go into in one kernel call."""
    import numpy as np

    from flash.ftl import FTL

    _warm()
    ftl = FTL(DIES128)
    ftl.precondition(0.01)
    budget = {513: (36, 47), 512: (21, 31), 128: (21, 31), 32: (23, 34)}
    for k, n in enumerate([513, 512, 128, 32] * 2):
        lo = 600 + 4096 * 5 * k
        ftl.write(np.arange(lo, lo + n, dtype=np.int64))
        mapped = ftl.mapped_pages()
        out: list[Any] = []
        py, c = _count_py_and_c(lambda: out.append(ftl.write_range(lo + 1, lo + 1 + n)))  # noqa: B023
        assert py <= budget[n][0] and c <= budget[n][1], (k, n, py, c)
        ppns, jobs = out[0]
        assert not jobs and np.array_equal(ftl.lookup(np.arange(lo + 1, lo + 1 + n)), ppns)
        assert ftl.mapped_pages() == mapped + int(lo + n >= ftl.n_pre)
    assert ftl.l2p.sparse  # the 32-page runs went into a sparse segment's dict


def _striped(devices: int) -> FlashTarget:
    """990pro devices striped RAID-0 in 512 KiB units (a 2 MiB chunk touches four, 32
    pages on each), with programs queued on the dies the chunks below meet."""
    _warm()
    cfg = dataclasses.replace(PRESETS["990pro"], devices=devices, stripe_bytes=512 * 1024)
    dev = FlashTarget(Environment(), "flash", None, cfg, model="fast", precondition=0.001,
                      seed=0)
    for k in range(4):
        dev.transport(Transfer(Op.WRITE, k * 8 * MiB, 8 * MiB), 0)
    return dev


def _chunk_calls(dev: FlashTarget, chunks: int, base: int = 512 * MiB
                 ) -> tuple[Counter[str], Counter[str]]:
    """Python calls of ``chunks`` 2 MiB writes into a fresh range from ``base`` (sparse
    L2P segments, active blocks with room) and of ``chunks`` 2 MiB reads from NAND."""
    writes = _count_calls(lambda: [dev.transport(Transfer(Op.WRITE, base + 2 * k * MiB,
                                                          CHUNK), 1000)
                                   for k in range(chunks)])
    reads = _count_calls(lambda: [dev.transport(Transfer(Op.READ, 2 * base + 2 * k * MiB,
                                                         CHUNK), 1000)
                                  for k in range(chunks)])
    return writes, reads


#: the timing model's classes: die lanes, channels, command forming, chunk timing
_TIMING = ("FastModel.", "CommandFormer.", "DieLanes.", "GapBank.", "TimingBase.")


def test_chunk_on_striped_devices_costs_its_touched_devices_only() -> None:
    """A 2 MiB chunk on 16 devices striped in 512 KiB units touches four of them: its
    Python calls are those four devices' work, the same as on four devices, and none per
    page. Before the FTL wrote a device's 32 pages as a run and took them into a sparse
    L2P segment at once, a 2 MiB write chunk here made 840 Python calls at 16 devices
    (256 of them ``SparseL2P.set1``, two per page) and 829 at 4.

    Booked device by device, with a call per channel booking, a write chunk made 436
    Python calls at 16 devices and a read chunk 420, 144 of them timing calls. With the
    devices' lanes one array and the chunk's timing on its four devices one call, 243
    and 171, then 98 for a read once that call was compiled. Now each touched device's
    part is one compiled call of its own (``flash.runs``: its command, DRAM, FTL,
    NAND timing and link at once), which the tier's headline points on 2 and 4 SSDs
    replay 10-25% faster (docs/PERFORMANCE.md): a read chunk makes 88 Python calls, a
    write chunk 132 at 16 devices (each device's 32 pages go into a sparse L2P segment
    in Python, ``FTL.map_placed``)."""
    chunks = 8
    counts = {}
    for n in (16, 4):
        dev = _striped(n)
        _chunk_calls(dev, chunks, 256 * MiB)  # each device's buffers grown to take them
        counts[n] = _chunk_calls(dev, chunks)
    (w16, r16), (w4, r4) = counts[16], counts[4]
    for calls in (w16, r16, w4, r4):
        # no per-page work: the FTL writes each device's 32 pages as one run
        assert calls["SparseL2P.set1"] == 0 and calls["Programmer.program_planes"] == 0
        # each touched device's part: one compiled call, handed back to the steps in
        # Python only where a row of its state must grow first (the write buffer's map
        # of a device taking eight chunks here)
        assert calls["RunWriter.book"] + calls["RunReader.book"] == 4 * chunks, \
            calls.most_common(8)
        back = calls["Ssd.write_map"] + calls["Ssd.read_map"]
        assert back <= chunks, calls.most_common(8)
        # the timing's calls: the lanes' arrays handed to each compiled call
        timing = sum(v for k, v in calls.items() if k.startswith(_TIMING))
        assert timing <= 5 * 4 * chunks, sorted((k, v) for k, v in calls.items()
                                                if k.startswith(_TIMING))
        # no host-link booking in Python but a handed-back part's: each device's link
        # is booked in its compiled call
        assert calls["BankLane.book"] + calls["BankLane.fit"] <= back, calls.most_common(12)
    # not more than the four touched devices need, whatever the number of devices
    assert sum(w16.values()) <= sum(w4.values()) + 2 * chunks
    assert sum(r16.values()) <= sum(r4.values()) + 2 * chunks
    # per touched device: the device, cache, FTL and host link layers
    assert sum(w16.values()) <= (4 * 37 + 5) * chunks, w16.most_common(10)
    assert sum(r16.values()) <= (4 * 22 + 5) * chunks, r16.most_common(10)


def test_page_batch_costs_calls_per_batch_not_per_command() -> None:
    """A batch of whole-page random reads or writes (``FlashTarget.transport_many``,
    the ``flash.pages`` path) costs the same few dozen Python calls whether it holds 16
    commands or 64; a write batch six more for each block its FTL opens or P2L row it
    makes (``FTL.write_many`` restarts its kernel after each). Command by command
    (``Ssd.read``, ``Ssd.write``), 64 such reads cost about 1,740 calls and 64 writes
    2,000 to 2,400. With the L2P's dict and the write buffer's map looked up in Python
    a batch cost up to 36 calls and 48; with them ``IntMap``s the kernels update, 28
    and 35."""
    _warm()
    # the 990pro's dies and planes with an eighth of its blocks: a call count does not
    # depend on capacity, and preconditioning 90% of 2 TB takes seconds
    cfg = dataclasses.replace(PRESETS["990pro"], blocks_per_plane=512)
    dev = FlashTarget(Environment(), "flash", None, cfg, model="fast", precondition=0.9,
                      seed=0)
    rng = np.random.default_rng(1)
    page = cfg.page_size
    # the batch kernels loaded (the last read's: its pages are in the write buffer)
    for op in (Op.READ, Op.WRITE, Op.READ):
        dev.transport_many(op, [0, page], page, Pattern.RANDOM, 0)
    t = 10**9
    for k in range(36):
        n = 64 if k % 2 else 16
        for op in (Op.READ, Op.WRITE):
            a = (rng.integers(0, cfg.capacity // page, n) * page).tolist()
            if k < 12:  # the first third unmeasured: rows grow to the pattern's size once
                dev.transport_many(op, a, page, Pattern.RANDOM, t)
                continue
            calls = _count_calls(lambda op=op, a=a, t=t: dev.transport_many(
                op, a, page, Pattern.RANDOM, t))
            if op is Op.READ:
                assert sum(calls.values()) <= 28, calls.most_common(12)
            else:
                restarts = calls["write_open"] - 1
                assert sum(calls.values()) - 6 * restarts <= 35, calls.most_common(12)
                assert calls["Ssd.write"] == 0  # no command left to the per-command path
        t += 10**9  # the batch is complete: no NVMe queue or buffer wait
