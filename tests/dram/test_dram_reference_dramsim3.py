"""The DDR4 preset against DRAMsim3's configuration.

The detailed model's comparisons with DRAMsim3 (one HBM2 channel streaming and at random,
DDR4-3200 random reads with one and two ranks, and HBM2's energy) are checks of
``tmhw.validate.dram`` and ``tmhw.validate.energy``, run by tests/test_validate.py; the
DRAMsim3 figures, configs, traces and commands are in tmhw/validate/data/dramsim3.toml.
"""

from __future__ import annotations

from dram import PRESETS


def test_ddr4_preset_has_the_two_ranks_dramsim3_derives() -> None:
    # DRAMsim3's configs/DDR4_8Gb_x8_3200.ini: eight x8 devices of 65536 rows x 1 KiB x 16
    # banks: 8192 MB a rank; the file's channel_size of 16384 MB makes two.
    cfg = PRESETS["ddr4-3200"]
    assert cfg.ranks * cfg.devices_per_rank * cfg.banks * cfg.rows * 1024 == 16384 * 2**20
    assert cfg.ranks == 2
