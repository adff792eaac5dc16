"""Presets and validation: the organisation derives the datasheet capacity and peak, and a
bad value names its field."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from dram import PRESETS, DramConfig
from dram.config import HBM2, HBM3, preset
from tmhw.sim.errors import ConfigError
from tmhw.sim.units import GiB


@pytest.mark.parametrize("name, gbps, capacity", [
    ("hbm2", 256.0, 4 * GiB),        # 8 x 128 bit x 2 Gb/s
    ("hbm2e", 409.6, 16 * GiB),      # 8 x 128 bit x 3.2 Gb/s
    ("hbm3", 819.2, 16 * GiB),       # 16 x 64 bit x 6.4 Gb/s
    ("ddr4-3200", 25.6, 16 * GiB),   # 64 bit x 3.2 Gb/s, 2 ranks of 8 x 8 Gb
    ("lpddr5-6400", 51.2, 8 * GiB),  # 4 x 16 bit x 6.4 Gb/s
])
def test_peak_bandwidth_and_capacity_follow_the_organisation(name: str, gbps: float,
                                                             capacity: int) -> None:
    cfg = PRESETS[name]
    assert cfg.peak_bandwidth() / 1e9 == pytest.approx(gbps)
    assert cfg.capacity == capacity


def test_ddr5_peak_uses_the_rounded_clock() -> None:
    cfg = PRESETS["ddr5-4800"]
    # tCK 416 ps (416.7 rounded down): 2 x 32 bit x 2 beats per 416 ps.
    assert cfg.peak_bandwidth() == pytest.approx(2 * 4 * 16 / (16 * 416e-12 / 2))


def test_preset_names_are_lowercase_and_complete() -> None:
    assert set(PRESETS) == {"hbm2", "hbm2e", "hbm3", "ddr4-3200", "ddr5-4800", "lpddr5-6400"}
    for name, cfg in PRESETS.items():
        assert cfg.name == name


def test_hbm2_matches_dramsim3_hbm2_8gb_x128_in_cycles() -> None:
    c = HBM2
    assert c.tck == 1000
    cyc = {f: getattr(c, f) // c.tck for f in ("t_cl", "t_rcd", "t_rp", "t_ras", "t_rfc",
                                               "t_refi", "t_faw", "t_rrd_s", "t_rrd_l",
                                               "t_ccd_s", "t_ccd_l")}
    assert cyc == {"t_cl": 14, "t_rcd": 14, "t_rp": 14, "t_ras": 34, "t_rfc": 260,
                   "t_refi": 3900, "t_faw": 30, "t_rrd_s": 4, "t_rrd_l": 6, "t_ccd_s": 1,
                   "t_ccd_l": 2}
    assert (c.idd0, c.idd2n, c.idd3n, c.idd4r, c.idd4w, c.idd5ab) == (65, 40, 55, 390, 500,
                                                                      250)


def test_hbm3_unloaded_row_miss_latency_is_48_1_ns() -> None:
    # docs/PARAMETERS.md: (nRP + nRCD + nCL) x tCK = (26 + 31 + 20) x 0.625 ns.
    assert HBM3.t_rp + HBM3.t_rcd + HBM3.t_cl == 48_125


@pytest.mark.parametrize("field, value", [
    ("channels", 3), ("banks_per_group", 0), ("t_rc", 10_000), ("t_rfc", 4_000_000),
    ("refresh", "sometimes"), ("page_policy", "ajar"), ("address_mapping", "RoBaCoCh"),
    ("interleave_bytes", 48), ("write_high", 40), ("standard", "gddr7"), ("tck", 0),
    ("idd3n", 600.0),
])
def test_a_bad_value_raises_config_error_naming_its_field(field: str, value: object) -> None:
    kwargs: dict[str, Any] = {field: value}
    with pytest.raises(ConfigError) as e:
        replace(HBM2, **kwargs)
    assert e.value.path == field


def test_per_bank_refresh_needs_the_standards_trfcpb() -> None:
    with pytest.raises(ConfigError) as e:
        replace(PRESETS["ddr4-3200"], refresh="per-bank")
    assert e.value.path == "refresh"


def test_unknown_preset_lists_the_valid_names() -> None:
    with pytest.raises(ConfigError, match="hbm3"):
        preset("hbm4")


def test_default_config_is_the_hbm2_preset() -> None:
    assert DramConfig() == PRESETS["hbm2"]
