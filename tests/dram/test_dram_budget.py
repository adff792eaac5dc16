"""Work budget of the fast model per HBM transfer, in lines of Python executed (counts,
not times): a chunk is one compiled call (``_serve_k``), so it runs the same few lines
of Python however many units, banks and rows it covers, and whatever its pattern.

The budget is ``CHUNK_LINES`` = 7 lines of ``dram/fast.py`` per chunk (``serve`` up to
and including the compiled call), on HBM3's 32 units, 16 units and HBM2's 8 alike,
queued behind the buses or not, long, short or random. Before the whole chunk was
compiled a long one ran 84 lines over units all queued behind their buses and 308, 200
and 147 otherwise (the layout looked up in Python caches by phase and length, the units
booked together when they agreed on their state); before that 556, 330 and 218, and the
model before its booking was first reworked (writing the open rows of every chunk's
tail into the table, one ``divmod`` and a dozen list updates per unit) ran 1129, 622
and 369. A short chunk of 512 B on HBM2 ran 482 lines, a random one of 4 KiB 319.
Counted with CPython 3.11's line events."""

from __future__ import annotations

import sys
from dataclasses import replace
from types import FrameType
from typing import Any

import pytest

from dram import PRESETS, DramConfig
from dram import fast as fast_mod
from dram.fast import FastModel
from tmhw.sim.transfer import Pattern
from tmhw.sim.units import MiB

#: Lines of ``dram/fast.py`` a chunk runs: ``serve`` up to and including the compiled call.
CHUNK_LINES = 7


def _lines(m: FastModel, chunks: list[tuple[bool, int, int, Pattern, int]]) -> int:
    """Lines of ``dram/fast.py`` run while ``m`` serves ``chunks``."""
    lines = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        lines += event == "line"
        return local

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == fast_mod.__file__ else None

    old = sys.gettrace()
    sys.settrace(call)
    try:
        for c in chunks:
            m.serve(*c)
    finally:
        sys.settrace(old)
    return lines


def _lines_per_chunk(cfg: DramConfig, size: int = MiB, first: int = 0,
                     apart: int = 200_000) -> float:
    """Lines run per chunk of a stream of ``size`` chunks (four reads, four writes, ...
    issued from ``first`` ps, ``apart`` ps apart), after eight chunks have set every
    unit's direction and open rows."""
    m = FastModel(cfg)
    seq = [((i // 4) % 2 == 1, i * size, size, Pattern.STREAM, first + i * apart)
           for i in range(40)]
    for c in seq[:8]:
        m.serve(*c)
    return _lines(m, seq[8:]) / len(seq[8:])


@pytest.mark.parametrize("cfg", [PRESETS["hbm2"], replace(PRESETS["hbm2"], channels=16),
                                 PRESETS["hbm3"]], ids=["8 units", "16 units", "32 units"])
def test_a_long_stream_chunk_costs_the_same_few_lines_on_any_number_of_units(
        cfg: DramConfig) -> None:
    assert _lines_per_chunk(cfg) <= CHUNK_LINES


def test_the_budget_does_not_grow_with_the_chunk() -> None:
    """A 64 MiB chunk costs the lines a 4 MiB one does (both cross a refresh window on
    every unit; the 64 MiB one spans many rows of every bank)."""
    costs = []
    for size in (4 * MiB, 64 * MiB):
        m = FastModel(PRESETS["hbm3"])
        for i in range(4):
            m.serve(False, i * size, size, Pattern.STREAM, 10_000_000)
        costs.append(_lines(m, [(False, 4 * size, size, Pattern.STREAM, 10_000_000)]))
    assert costs[0] == costs[1] <= CHUNK_LINES


def _queued_stream_lines(cfg: DramConfig) -> float:
    """Lines run per chunk of a stream of 4 MiB chunks issued together, so that every
    unit is queued behind its bus."""
    return _lines_per_chunk(cfg, 4 * MiB, 10_000_000, 1)


@pytest.mark.parametrize("cfg", [PRESETS["hbm2"], replace(PRESETS["hbm2"], channels=16),
                                 PRESETS["hbm3"]], ids=["8 units", "16 units", "32 units"])
def test_a_queued_stream_chunk_costs_a_constant_number_of_lines(cfg: DramConfig) -> None:
    """Units queued behind their buses (a stream's usual state) cost what idle ones do:
    the chunk is one compiled call. Compiling only the loop over the units
    (``_book_all``) left 84 lines; the Python loop of five lines per unit ran 125, 165 and
    245 on 8, 16 and 32 units; the booking that added each unit's turnaround, data time
    and reserved time to its lists ran 188, 284 and 476 (12 lines per unit)."""
    assert _queued_stream_lines(cfg) <= CHUNK_LINES


def test_a_queued_stream_chunk_costs_no_line_per_added_unit() -> None:
    """Doubling the units (16 -> 32 pseudo-channels of the same HBM2) adds no line of
    Python: the loop over the units is compiled."""
    hbm2 = PRESETS["hbm2"]
    lines = [_queued_stream_lines(replace(hbm2, channels=ch)) for ch in (16, 32)]
    assert lines[1] == lines[0]


@pytest.mark.parametrize("pattern, size", [(Pattern.STREAM, 64), (Pattern.STREAM, 512),
                                           (Pattern.STREAM, 4096), (Pattern.RANDOM, 4096),
                                           (Pattern.STRIDED, 64 * 1024)])
def test_a_short_or_random_chunk_costs_what_a_long_one_does(pattern: Pattern,
                                                            size: int) -> None:
    """Short stream chunks (scanned block by block) and random ones (dealt out over the
    units) are compiled too: the lines of a long chunk, on HBM2 and HBM3 alike."""
    for cfg in (PRESETS["hbm2"], PRESETS["hbm3"]):
        m = FastModel(cfg)
        m.serve(False, 0, MiB, Pattern.STREAM, 0)
        assert _lines(m, [(True, 40960, size, pattern, 1000),
                          (False, 81920, size, pattern, 1000)]) / 2 <= CHUNK_LINES
