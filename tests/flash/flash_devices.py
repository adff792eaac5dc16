"""Small devices for the flash tests: real presets shrunk in capacity (blocks,
pages per block, dies) so that filling them and driving them into GC takes little time.
Timing fields stay the preset's."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from flash import PRESETS, FlashConfig
from flash.ssd import Ssd


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


def device_state(d: Ssd) -> dict[str, Any]:
    """Everything a later command or the report can see of ``d``, as plain values (two
    devices that booked the same work compare equal)."""
    ftl, cache, host, m = d.ftl, d.cache, d.host, d.model
    iv, meta = m.channels.arrays()
    liv, lmeta = host.links.arrays()
    lanes = m.dies.state
    rows, queued = host.queue_rows()
    return {
        "report": d.report(10**12),
        "l2p": ftl.lookup(np.arange(ftl.n_lpn, dtype=np.int64)).tolist(),
        "ftl": [a.tolist() for a in (ftl.valid, ftl.stamp, ftl.state,
                                     ftl.blocks.host_blk, ftl.blocks.host_wp)]
        + [list(ftl.free_count), sorted(ftl.low_planes), ftl.seq, ftl.host_pages,
           ftl.mapping.p2l(0).tolist()],
        "cache": (cache.writes(), cache.used_pages, cache.buffered_map(),
                  cache.cached_pages(),
                  cache.write_hits, cache.write_waits, cache.buffer_read_hits,
                  cache.cache_read_hits),
        # (the controller's next free time means nothing without a command rate)
        "queue": (sorted(rows[:queued, 0].tolist()), host.queue_waits,
                  host.ctl_free if host.ctl_ps else 0),
        "links": [liv[:, i, :lmeta[0, i]].tolist() for i in range(2)] + [lmeta.tolist()],
        "channels": [iv[:, i, :meta[0, i]].tolist() for i in range(meta.shape[1])]
        + [meta.tolist()],
        "dies": [a.tolist() if isinstance(a, np.ndarray) else a for a in lanes],
        "merged": m.dies.merged,
        "ssd": (*d.activity(), d.bytes_read, d.bytes_written,
                dataclasses.astuple(d.c) if dataclasses.is_dataclass(d.c) else vars(d.c)),
    }
