"""A read, and a run's write, in one compiled call (``flash.runs``) book exactly what
``Ssd``'s Python steps book: two devices built alike, one with the compiled calls and
one without (``Ssd._run_writer`` and ``_run_reader`` None), served the same reads and
writes, in place or not, give every command the same completion time and end in the
same state, through the edges where the call declines or hands the rest back: reads of
pages DRAM holds, of one page and of none from NAND, a write buffer that fills and one
a write is larger than, an SLC cache that fills and folds, the read cache's copies cut
in two, collections forced and in the background, runs of two pages to past a stripe,
not on a page's bounds, and MQSim's rules (data stored before it is programmed)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from flash_devices import device_state, small
from hypothesis import given, settings
from hypothesis import strategies as st

from flash import FlashConfig
from flash.runs import (
    ALL_DONE,
    PROGRAM_LEFT,
    R_STAGE,
    READ1_LEFT,
    STAGE,
    RunReader,
    RunWriter,
)
from flash.ssd import Ssd
from tmhw.sim.units import US, KiB

PAGE = 16 * KiB
#: 2 channels x 2 dies x 2 planes x 24 blocks x 32 pages (a stripe of 8 pages): a few
#: hundred pages written collect
CFG = small(blocks_per_plane=24, pages_per_block=32, over_provisioning=0.2,
            write_buffer_bytes=24 * PAGE, read_cache_bytes=16 * PAGE, nvme_queue_depth=6)
CASES = {
    "buffer and read cache": CFG,
    "written through": dataclasses.replace(CFG, write_buffer_bytes=0, read_cache_bytes=0),
    "SLC cache": dataclasses.replace(CFG, slc_cache_bytes=40 * PAGE,
                                     t_prog_slc=CFG.t_prog // 4),
    "mqsim rules": dataclasses.replace(CFG, compat="mqsim"),
}
HOT = 400  # pages the commands touch: writes overwrite, reads meet recent writes, and
#           the map's first segment turns dense (``SparseL2P.DENSE_AT``) in longer plans

#: what a command is; an in-place read's lines carry this much framing in all
KINDS = ("write", "read", "in place")
FRAMING = 640

commands = st.lists(
    st.tuples(st.sampled_from(KINDS),               # write, read, or read in place
              st.integers(0, HOT - 1),             # first page
              st.one_of(st.integers(1, 9),         # pages: up to a stripe and past it,
                        st.integers(60, 70)),      # or past DENSE_AT // 4
              st.sampled_from([0, 0, 0, 512]),     # bytes into the first page
              st.integers(0, 400)),                # us since the last
    min_size=1, max_size=40)


def _pair(cfg: FlashConfig) -> tuple[Ssd, Ssd]:
    def make() -> Ssd:
        return Ssd(cfg, model="fast", precondition=0.6, seed=0, age=0.0, record=False)
    compiled, python = make(), make()
    python._run_writer = python._run_reader = None
    return compiled, python


def _serve(d: Ssd, kind: str, address: int, nbytes: int, now: int) -> int:
    if kind == "write":
        return d.write(address, nbytes, now)
    return d.read(address, nbytes, now, nbytes + FRAMING if kind == "in place" else 0)


def _run(cfg: FlashConfig, plan: list[tuple[str, int, int, int, int]]) -> None:
    compiled, python = _pair(cfg)
    now = 0
    for kind, first, pages, skew, gap in plan:
        now += gap * US
        address, nbytes = first * PAGE + skew, pages * PAGE - skew
        assert (_serve(compiled, kind, address, nbytes, now)
                == _serve(python, kind, address, nbytes, now))
    assert device_state(compiled) == device_state(python)


@pytest.mark.parametrize("case", list(CASES))
@settings(max_examples=25, deadline=None)
@given(plan=commands)
def test_compiled_reads_and_writes_book_what_python_steps_book(
        case: str, plan: list[tuple[str, int, int, int, int]]) -> None:
    _run(CASES[case], plan)


def test_writes_take_the_compiled_call_and_its_declines(monkeypatch: Any) -> None:
    """The compiled call books the runs to their end (not only declines them to the
    Python steps), and the edges it hands back are reached: a run it declines (the
    FTL's: a block to open, a segment not dense), and programs whose die lane's or
    channel's row was full (``PROGRAM_LEFT``)."""
    stages: list[int] = []
    book = RunWriter.book

    def counted(self: RunWriter, *a: Any) -> Any:
        got = book(self, *a)
        stages.append(-1 if got is None else got[1][STAGE])
        return got

    monkeypatch.setattr(RunWriter, "book", counted)
    plan = [("write", (37 * k) % HOT, 2 + k % 7 if k % 3 else 66, 0, 30) for k in range(300)]
    _run(CFG, plan)
    assert stages.count(ALL_DONE) > 250
    assert stages.count(-1) and stages.count(PROGRAM_LEFT)


def test_a_write_of_one_page_or_of_a_block_per_plane_goes_the_python_way() -> None:
    """One page (``FTL.write1``) and a block per plane or more (``program_long``) are not
    runs the run kernel places first: ``RunWriter.takes`` leaves them to ``Ssd.write``."""
    compiled, _ = _pair(CFG)
    writer = compiled._run_writer
    assert writer is not None
    ftl = compiled.ftl
    assert not writer.takes(1)
    assert writer.takes(2)
    assert not writer.takes(ftl.U * ftl.ppb)


def test_reads_take_the_compiled_call_to_its_end_and_hand_one_page_back(
        monkeypatch: Any) -> None:
    """Reads of several pages from NAND, and of none (all in the write buffer), end in
    the compiled call; a read of several pages of which one is read from NAND hands it
    to ``FastModel.read1``, and a read of one page is ``Ssd.read``'s in Python."""
    stages: list[int] = []
    book = RunReader.book

    def counted(self: RunReader, *a: Any) -> Any:
        got = book(self, *a)
        stages.append(got[4][R_STAGE])
        return got

    monkeypatch.setattr(RunReader, "book", counted)
    plan = [("write", 0, 8, 0, 0), ("read", 0, 8, 0, 0), ("read", 200, 8, 0, 0),
            ("read", 210, 1, 0, 0), ("write", 300, 2, 0, 0), ("read", 300, 3, 0, 0),
            ("in place", 220, 3, 0, 10)]
    _run(CFG, plan)
    assert stages == [ALL_DONE, ALL_DONE, READ1_LEFT, ALL_DONE]
