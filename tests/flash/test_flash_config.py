"""Configuration: presets, validation and the ONFI arithmetic against MQSim's."""

from __future__ import annotations

import dataclasses

import pytest

from flash import PRESETS, FlashConfig
from flash.config import OnfiTiming
from tmhw.sim import ConfigError
from tmhw.sim.units import NS, US, KiB


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_is_valid_and_named_after_its_key(name: str) -> None:
    cfg = PRESETS[name]
    assert cfg.name == name
    assert cfg.logical_pages < cfg.physical_pages


def test_the_990pro_preset_is_the_2tb_drive() -> None:
    """32 dies of 512 Gb (2 TiB raw) on the Pascal controller's 8 channels, 2 TB to the
    host; V-NAND's published tR and tPROG; the Concordia config's channel rate."""
    c = PRESETS["990pro"]
    assert (c.channels, c.chips_per_channel, c.dies_per_chip, c.planes_per_die) == (8, 2, 2, 4)
    assert c.dies * c.planes_per_die * c.blocks_per_plane * c.pages_per_block \
        * c.page_size == 2 * 1024**4
    assert 1.97e12 <= c.capacity <= 2.01e12
    assert (c.blocks_per_plane, c.pages_per_block, c.page_size) == (4096, 256, 16 * KiB)
    assert (c.t_r, c.t_prog, c.t_bers) == (45 * US, 450 * US, 4000 * US)
    assert (c.channel_rate_mtps, c.pcie_lanes, c.pcie_gen) == (2400, 4, 4)


def test_mqsim_read_command_is_290_ns() -> None:
    # MQSim ONFI_Channel_NVDDR2: tCS + 6 tWC + tWB + tRR = 20 + 150 + 100 + 20 ns
    assert PRESETS["mqsim-default"].read_command_ps(1) == 290 * NS


def test_mqsim_program_and_erase_command_times() -> None:
    cfg = PRESETS["mqsim-default"]
    # tCS + 6 tWC + tADL + tWPST + tWPSTH + tWB = 20 + 150 + 70 + 6 + 15 + 100 ns
    assert cfg.program_command_ps(1) == 361 * NS
    # tCS + 4 tWC + tWB
    assert cfg.erase_command_ps(1) == 220 * NS
    # a second plane adds 6 tWC + tDBSY to a read command
    assert cfg.read_command_ps(2) - cfg.read_command_ps(1) == (150 + 500) * NS


def test_8kib_page_at_333_mtps_takes_24_6_us() -> None:
    t = PRESETS["mqsim-default"].data_ps(8 * KiB)
    assert t == pytest.approx(8192 / 333e6 * 1e12, abs=1)
    assert 24.5 * US < t < 24.7 * US


def test_16kib_page_at_2400_mtps_takes_the_physical_6_8_us_not_zero() -> None:
    # MQSim truncates 1000/2400 ns to 0; the physical time is 16384 / 2.4e9 s.
    t = PRESETS["990pro"].data_ps(16 * KiB)
    assert t == pytest.approx(16384 / 2.4e9 * 1e12, abs=1)


def test_a_16_bit_channel_halves_the_transfer() -> None:
    c8 = PRESETS["990pro"]
    c16 = dataclasses.replace(c8, channel_width_bits=16)
    assert c16.data_ps(16 * KiB) * 2 == pytest.approx(c8.data_ps(16 * KiB), abs=1)


def test_page_read_energy_is_v_times_i_times_tr() -> None:
    # 3.3 V x 25 mA x 45 us = 3.71 uJ (docs/PARAMETERS.md)
    assert PRESETS["990pro"].read_page_pj() == pytest.approx(3.3 * 25 * 45 * 1e3)
    assert PRESETS["990pro"].erase_block_pj() == pytest.approx(3.3 * 25 * 4000 * 1e3)


@pytest.mark.parametrize("field,value", [
    ("channels", 0), ("page_size", -1), ("cell_type", "PLC"), ("t_r", 0),
    ("over_provisioning", 0.95), ("gc_policy", "lru"), ("allocation_order", "CWDD"),
    ("t_r_page", (1, 2)), ("gc_hard_threshold", 0.2), ("channel_width_bits", 12),
])
def test_bad_values_name_their_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError) as e:
        dataclasses.replace(PRESETS["990pro"], **{field: value})  # type: ignore[arg-type]
    assert e.value.path.split(".")[0] in (field, "gc_threshold")


def test_too_little_over_provisioning_for_gc_is_rejected() -> None:
    with pytest.raises(ConfigError, match="spare blocks"):
        dataclasses.replace(PRESETS["990pro"], over_provisioning=0.01)


def test_negative_onfi_time_is_rejected() -> None:
    with pytest.raises(ConfigError, match="t_wc"):
        OnfiTiming(t_wc=-1)


def test_per_page_type_latencies_apply_by_page_index() -> None:
    cfg = dataclasses.replace(PRESETS["990pro"], t_r_page=(30 * US, 40 * US, 50 * US))
    assert [cfg.t_r_of(i) for i in range(3)] == [30 * US, 40 * US, 50 * US]
    assert cfg.t_r_mean == 40 * US
    assert isinstance(cfg, FlashConfig)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_round_trip_through_toml(name: str) -> None:
    import tomllib

    from tmhw.sim import tomlio

    cfg = PRESETS[name]
    assert tomlio.from_dict(FlashConfig, tomllib.loads(tomlio.dumps(cfg))) == cfg
