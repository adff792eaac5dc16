"""Small devices for the flash tests: real presets shrunk in capacity (blocks,
pages per block, dies) so that filling them and driving them into GC takes little time.
Timing fields stay the preset's."""

from __future__ import annotations

import dataclasses

from flash import PRESETS, FlashConfig


def plain(name: str = "990pro", **kw: object) -> FlashConfig:
    """``name`` with its dies' own timing only: no SLC cache, no independent plane
    reads, no controller command rate (tests of die, channel and FTL rules; those
    features have their own tests)."""
    return dataclasses.replace(PRESETS[name], slc_cache_bytes=0, t_prog_slc=0,
                               independent_plane_reads=False, controller_iops=0,
                               **kw)  # type: ignore[arg-type]


def small(name: str = "990pro", **kw: object) -> FlashConfig:
    """``plain(name)`` with 2 channels x 1 chip x 2 dies x 2 planes x 64 blocks x 64
    pages."""
    base = dict(channels=2, chips_per_channel=1, dies_per_chip=2, planes_per_die=2,
                blocks_per_plane=64, pages_per_block=64)
    base.update(kw)
    return plain(name, **base)
