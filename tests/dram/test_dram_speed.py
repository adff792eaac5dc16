"""The fast model's compiled path (``_serve_k``: a chunk's layout from the decoded row
period, its units booked and its open rows written in one call) computes what the
Python path computes (long chunks decoded with numpy, ``_scan_long_np``, and booked
unit by unit, ``_book_units``; short ones scanned block by block, ``_scan_short`` and
``_book``; random ones, ``_book_random``), chunk by chunk and in every counter. These
tests count decodes and compare results, not times."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dram import PRESETS, DramConfig
from dram.fast import FastModel
from tmhw.sim.transfer import Pattern
from tmhw.sim.units import KiB, MiB

Chunk = tuple[bool, int, int, Pattern, int]


def _state(m: FastModel) -> tuple[Any, ...]:
    return (m.busy_until.tolist(), m.busy_ps, m.data_ps, m.last_dir.tolist(),
            m.first_use.tolist(), m.w_evict.tolist(), m.open_rows.tolist(), m.rand_ranks.tolist(),
            m.acts, m.bursts_read, m.bursts_written, m.bytes_read, m.bytes_written,
            m.last_end)


def _decoding(cfg: DramConfig) -> FastModel:
    """A model that decodes and books every chunk in Python (the path of maps without
    the row on top)."""
    m = FastModel(cfg)
    m._compiled = False
    return m


def _serve_both(cfg: DramConfig, chunks: list[Chunk]) -> tuple[FastModel, FastModel]:
    a, b = FastModel(cfg), _decoding(cfg)
    assert a._compiled
    for w, addr, n, p, t in chunks:
        assert a.serve(w, addr, n, p, t) == b.serve(w, addr, n, p, t)
        assert a.last_start == b.last_start
    return a, b


configs = st.builds(
    lambda name, page, mapping, refresh: replace(
        PRESETS[name], page_policy=page, address_mapping=mapping, refresh=refresh),
    st.sampled_from(["hbm2", "hbm3", "ddr4-3200", "lpddr5-6400"]),
    st.sampled_from(["open", "open", "closed"]),
    # The presets' map, bank groups above columns, and units above the bank fields.
    st.sampled_from(["RoRaBaCoBgPcCh", "RoRaBaBgCoPcCh", "RoChPcRaBaCoBg"]),
    st.sampled_from(["all-bank", "off"]),
)
chunks = st.lists(
    st.tuples(
        st.booleans(),
        # Address / 64 B (+ offset), or -1: where the previous chunk ended, as a stream
        # split into chunks continues (its head meets the rows the last tail left open).
        st.sampled_from([-1, -1]) | st.integers(0, 1 << 20),
        st.sampled_from([0, 1, 33]),
        # Long chunks, and short ones (fewer than _SCALAR_BLOCKS row-blocks).
        st.sampled_from([1 * MiB, 6 * MiB + 4097, 256 * KiB, 96 * KiB, 43691, 16 * KiB, 64,
                         200, 4 * KiB]),
        st.sampled_from([Pattern.STREAM] * 7 + [Pattern.RANDOM]),
        st.sampled_from([0, 0, 1_000, 2_000_000]),             # gap before the chunk, ps
    ),
    min_size=4, max_size=24,
)


def _chunks(raw: list[tuple[bool, int, int, int, Pattern, int]]) -> list[Chunk]:
    out, t, nxt = [], 0, 0
    for w, a, off, n, p, gap in raw:
        t += gap
        addr = nxt + off if a < 0 else a * 64 + off
        out.append((w, addr, n, p, t))
        nxt = addr + n
    return out


@settings(max_examples=60, deadline=None)
@given(cfg=configs, raw=chunks)
def test_the_compiled_chunk_gives_the_timing_of_the_decoding_model(
        cfg: DramConfig, raw: list[tuple[bool, int, int, int, Pattern, int]]) -> None:
    seq = _chunks(raw)
    # Twice over, so that the second pass meets the rows the first one left open.
    a, b = _serve_both(cfg, seq + [(w, addr, n, p, t + seq[-1][4]) for w, addr, n, p, t in seq])
    assert _state(a) == _state(b)


def _pinned_sequence() -> Iterator[Chunk]:
    # DMA-sized and NPU-sized chunks, aligned and not, reads and writes, a few random.
    t = 0
    for i in range(48):
        size = (1 * MiB, 6 * MiB + 12345, 96 * KiB, 43691, 5 * KiB)[i % 5]
        addr = (i * 7 * MiB + (i % 4) * 4160) % (1 << 30)
        pat = Pattern.RANDOM if i % 11 == 10 else Pattern.STREAM
        yield i % 3 == 0, addr, size, pat, t
        t += (i % 4) * 900_000


@pytest.mark.parametrize("name, end_sum, end_max, acts, busy", [
    # From the vectorised (numpy) booking this loop replaced, on the same sequence.
    ("hbm2", 10283520716, 404470280, 183076, 3228593744),
    ("hbm3", 2775702887, 111324120, 183564, 3529152325),
])
def test_booking_a_chunk_mix_gives_the_vectorised_model_s_figures(
        name: str, end_sum: int, end_max: int, acts: int, busy: int) -> None:
    m = FastModel(PRESETS[name])
    ends = [m.serve(*c) for c in _pinned_sequence()]
    assert (sum(ends), max(ends), m.acts, sum(m.busy_ps)) == (end_sum, end_max, acts, busy)


@pytest.mark.parametrize("name", ["hbm2", "hbm3"])
def test_a_long_stream_chunk_decodes_nothing(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    m = FastModel(PRESETS[name])
    decodes = []

    def count(*args: Any) -> Any:
        decodes.append(args)
        raise AssertionError("decoded")

    m.serve(False, 3 * MiB + 4096, 1 * MiB + 4160, Pattern.STREAM, 0)
    monkeypatch.setattr(m.amap, "decode_bursts", count)
    monkeypatch.setattr(m.amap, "units_of_bursts", count)
    monkeypatch.setattr(m.amap, "decode_burst", count)
    # The same phase in the row period and length on other rows, other phases and
    # lengths, both directions: the row period was decoded when the model was built.
    period = m.amap.row_period_bursts * m.cfg.burst_bytes
    for k in range(1, 6):
        m.serve(k % 2 == 0, 3 * MiB + 4096 + k * period * 5, 1 * MiB + 4160, Pattern.STREAM,
                k * 1000)
        m.serve(k % 2 == 1, k * 7 * MiB + k * 4160, k * 97 * KiB + 32, Pattern.STREAM,
                k * 1000)
    assert decodes == []


# A stream of long chunks over every unit: the units queued behind their buses (gap 0 or
# 1 ns), idle (gaps of a few refresh intervals), or some of each (a gap about one chunk's
# time), from the start (before the units' first refresh windows) or later, with DMA-sized
# chunks (4 KiB pages, buffered when written) in between.
stream_chunks = st.lists(
    st.tuples(
        st.booleans(),
        st.sampled_from([-1, -1, -1]) | st.integers(0, 1 << 14),   # -1: continue; / 4 KiB
        st.sampled_from([0, 0, 4160]),
        st.sampled_from([2 * MiB, 8 * MiB, 64 * KiB, 4 * KiB, 4 * KiB]),
        st.sampled_from([0, 0, 1_000, 60_000, 500_000, 9_000_000]),  # gap, ps
        st.booleans(),  # read the counters after this chunk
    ),
    min_size=3, max_size=30,
)


@settings(max_examples=40, deadline=None)
@given(cfg=st.sampled_from([PRESETS["hbm3"], replace(PRESETS["hbm2"], channels=16),
                            replace(PRESETS["hbm2"], refresh="off")]),
       t0=st.sampled_from([0, 50_000_000]), raw=stream_chunks)
def test_the_compiled_booking_gives_the_unit_by_unit_booking(
        cfg: DramConfig, t0: int, raw: list[tuple[bool, int, int, int, int, bool]]) -> None:
    """The compiled booking of a chunk (``_serve_k``) gives what booking each unit in
    Python gives (``_book_units``, ``_book``), chunk by chunk: completion, first start,
    activations, and every unit's bus times, counters and open rows, read at any point
    of the stream."""
    a, b = FastModel(cfg), _decoding(cfg)
    t, nxt = t0, 0
    for w, blk, off, n, gap, look in raw:
        t += gap
        addr = nxt + off if blk < 0 else blk * 4096 + off
        nxt = addr + n
        assert a.serve(w, addr, n, Pattern.STREAM, t) == b.serve(w, addr, n, Pattern.STREAM, t)
        assert (a.last_start, a.acts) == (b.last_start, b.acts)
        if look:
            assert _state(a) == _state(b)
    assert _state(a) == _state(b)
    assert a.active_ps(t) == b.active_ps(t)
