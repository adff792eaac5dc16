"""The fast model's booking rules (``dram/engine.py``): reference figures of a chunk mix,
the same figures when the kernels run as plain Python, and the refresh stretch against
the windows it skips."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dram import PRESETS, engine
from dram.fast import FastModel
from tmhw.sim.transfer import Pattern
from tmhw.sim.units import KiB, MiB

Chunk = tuple[bool, int, int, Pattern, int]


def _chunk_mix() -> Iterator[Chunk]:
    # DMA-sized and NPU-sized chunks, aligned and not, reads and writes, a few random.
    t = 0
    for i in range(48):
        size = (1 * MiB, 6 * MiB + 12345, 96 * KiB, 43691, 5 * KiB)[i % 5]
        addr = (i * 7 * MiB + (i % 4) * 4160) % (1 << 30)
        pat = Pattern.RANDOM if i % 11 == 10 else Pattern.STREAM
        yield i % 3 == 0, addr, size, pat, t
        t += (i % 4) * 900_000


def _figures(name: str) -> tuple[int, int, int, int]:
    m = FastModel(PRESETS[name])
    ends = [m.serve(*c) for c in _chunk_mix()]
    return sum(ends), max(ends), m.acts, sum(m.busy_ps)


#: (sum of completions, latest completion, activations, reserved bus time) of the mix,
#: as the vectorised (numpy) model first booked it.
MIX = {"hbm2": (10283520716, 404470280, 183076, 3228593744),
       "hbm3": (2775702887, 111324120, 183564, 3529152325)}


@pytest.mark.parametrize("name", sorted(MIX))
def test_a_chunk_mix_books_the_reference_figures(name: str) -> None:
    assert _figures(name) == MIX[name]


def test_the_kernels_run_as_python_give_the_same_figures(fresh_python: Callable[..., str]) -> None:
    """``NUMBA_DISABLE_JIT=1`` runs the engine as the Python it is written in."""
    root = Path(__file__).resolve().parents[2]
    code = ("from tests.dram.test_dram_fast import _figures; "
            "print(*_figures('hbm2'))")
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1",
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    out = fresh_python(code, env=env, cwd=root)
    assert tuple(int(x) for x in out.split()) == MIX["hbm2"]


def _walk(start: int, work: int, period: int, block: int, off: int) -> tuple[int, int]:
    """Where ``work`` ps of bus time starts and ends when every window
    [off + k period, + block), k >= 0, stops it: window by window."""
    k = 0
    t = start
    began = -1
    while True:
        w0 = off + k * period
        if t < w0:  # free until this window
            if began < 0:
                began = t
            if work <= w0 - t:
                return began, t + work
            work -= w0 - t
            t = w0
        t = max(t, w0 + block)
        k += 1


@settings(max_examples=300, deadline=None)
@given(start=st.integers(0, 5_000), work=st.integers(1, 3_000),
       period=st.integers(20, 400), data=st.data())
def test_work_is_stretched_over_the_refresh_windows_it_meets(
        start: int, work: int, period: int, data: st.DataObject) -> None:
    block = data.draw(st.integers(1, period - 1))
    off = data.draw(st.integers(0, period - 1))
    assert engine.stretch(start, work, period, block, off) == _walk(start, work, period,
                                                                    block, off)


def test_no_refresh_windows_leave_work_unstretched() -> None:
    assert engine.stretch(1234, 500, 0, 0, 0) == (1234, 1734)
