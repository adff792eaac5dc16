"""The address map read as its string says (DRAMsim3's ``address_mapping``): fields from
the most to the least significant bit, above the burst offset and the column bits that
keep ``interleave_bytes`` in one row. The detailed controller and the fast model's
kernels decode with the same functions (``dram.mapping``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dram import PRESETS
from dram.mapping import AddressMap

MAPPINGS = ["RoRaBaCoBgPcCh", "RoRaBaBgCoPcCh", "BgRoRaBaCoPcCh", "ChPcRoRaBaCoBg",
            "RoChPcRaBaCoBg"]


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(["hbm2", "hbm3", "ddr4-3200", "lpddr5-6400"]),
       mapping=st.sampled_from(MAPPINGS), address=st.integers(0, 1 << 40))
def test_the_lowest_bit_of_a_field_steps_that_field_alone(name: str, mapping: str,
                                                         address: int) -> None:
    cfg = replace(PRESETS[name], address_mapping=mapping)
    am = AddressMap(cfg)
    # One step of each field: unit = channel * pseudo_channels + pseudo channel, bank =
    # (rank * bank_groups + group) * banks_per_group + bank, column in bursts.
    steps = {"Ch": (cfg.pseudo_channels, 0, 0, 0), "Pc": (1, 0, 0, 0),
             "Ra": (0, cfg.banks, 0, 0), "Bg": (0, cfg.banks_per_group, 0, 0),
             "Ba": (0, 1, 0, 0), "Ro": (0, 0, 1, 0), "Co": (0, 0, 0, 1 << am.low_col_bits)}
    for field, (shift, width) in am.fields.items():
        if width == 0:
            continue
        bit = 1 << (shift + am.burst_shift)
        base = (address % cfg.capacity) & ~bit
        lo, hi = am.decode(base), am.decode(base | bit)
        assert tuple(h - low for h, low in zip(hi, lo, strict=True)) == steps[field], field


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(["hbm2", "hbm3", "ddr4-3200", "lpddr5-6400"]),
       mapping=st.sampled_from(MAPPINGS), address=st.integers(0, 1 << 40))
def test_an_interleave_block_stays_in_one_row_of_one_bank(name: str, mapping: str,
                                                         address: int) -> None:
    cfg = replace(PRESETS[name], address_mapping=mapping)
    am = AddressMap(cfg)
    first = address - address % cfg.interleave_bytes
    bursts = range(first, first + cfg.interleave_bytes, cfg.burst_bytes)
    decoded = [am.decode(a) for a in bursts]
    assert {d[:3] for d in decoded} == {decoded[0][:3]}
    assert [d[3] - decoded[0][3] for d in decoded] == list(range(len(decoded)))


def test_addresses_wrap_at_the_capacity() -> None:
    cfg = PRESETS["hbm3"]
    am = AddressMap(cfg)
    assert am.decode(cfg.capacity + 4160) == am.decode(4160)


def test_the_vector_decode_is_the_decode_of_each_burst() -> None:
    """The controller decodes a transfer's bursts at once: each as ``decode`` does."""
    am = AddressMap(PRESETS["hbm2"])
    bursts = np.array([0, 1, 7, 12345, 1 << 20, (1 << 27) + 99], dtype=np.int64)
    units, banks, rows = am.decode_bursts(bursts)
    expected = [am.decode(int(b) << am.burst_shift)[:3] for b in bursts]
    assert list(zip(units.tolist(), banks.tolist(), rows.tolist(), strict=True)) == expected
