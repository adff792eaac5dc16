"""State machine over the controller DRAM and suspend: an acknowledged write is never
lost, a read is served from the newest copy of each page, and suspended dies never do
two things at once."""

from __future__ import annotations

import simpy
from flash_devices import small
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from flash import FlashTarget
from tmhw.sim import Op, Transfer
from tmhw.sim.units import US, KiB

# a tiny write buffer (8 pages) that fills, and a read cache (64 pages) that keeps
# pages long enough to be rewritten
CFG = small(blocks_per_plane=32, pages_per_block=8, over_provisioning=0.2,
            write_buffer_bytes=8 * 16 * KiB, read_cache_bytes=64 * 16 * KiB)
PAGES = CFG.logical_pages
HOT = 24  # pages the machine touches: small, so they are read and rewritten often


class CacheMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.t = FlashTarget(simpy.Environment(), "flash", None, CFG, record=True,
                             precondition=0.5)
        self.dev = self.t.devices[0]
        self.now = 0
        self.version: dict[int, int] = {}   # page -> writes so far
        self.acked: dict[int, int] = {}     # page -> version acknowledged
        self.cached: dict[int, int] = {}    # page -> version when read from NAND

    @rule(page=st.integers(0, HOT - 1), n=st.integers(1, 6),
          gap=st.integers(0, 2000))
    def write(self, page: int, n: int, gap: int) -> None:
        n = min(n, PAGES - page)
        self.now += gap * US
        end = self.t.transport(Transfer(Op.WRITE, page * CFG.page_size, n * CFG.page_size),
                               self.now)
        assert end >= self.now
        for p in range(page, page + n):
            self.version[p] = self.version.get(p, 0) + 1
            self.acked[p] = self.version[p]
            # the cached copy is stale: it must be gone
            assert self.dev.cache.holds(p, self.now) != "cache"

    @rule(page=st.integers(0, HOT - 1), n=st.integers(1, 6),
          off=st.sampled_from([0, 4 * KiB, 12 * KiB]), gap=st.integers(0, 2000))
    def read(self, page: int, n: int, off: int, gap: int) -> None:
        n = min(n, PAGES - page)
        self.now += gap * US
        for p in range(page, page + n):
            where = self.dev.cache.holds(p, self.now)
            if where == "cache":  # a read-cache hit serves the newest version
                assert self.cached[p] == self.version.get(p, 0)
        # reads that start inside a page leave it in the read cache
        end = self.t.transport(Transfer(Op.READ, page * CFG.page_size + off,
                                        n * CFG.page_size - off), self.now)
        assert end > self.now
        for p in range(page, page + n):
            if self.dev.cache.holds(p, self.now) == "cache":
                self.cached.setdefault(p, self.version.get(p, 0))
                self.cached[p] = self.version.get(p, 0)

    @invariant()
    def acknowledged_writes_are_mapped(self) -> None:
        ftl = self.t.ftl
        for p in self.acked:
            assert ftl.lookup1(p) >= 0, p

    @invariant()
    def dies_and_channels_never_overlap(self) -> None:
        for spans in (self.t.dies.spans, self.t.channels.spans):
            assert spans is not None
            for lane in spans:
                s = sorted(x for x in lane if x[1] > x[0])
                for (a0, e0), (a1, _) in zip(s, s[1:], strict=False):
                    assert a1 >= e0, (a0, e0, a1)


TestCacheMachine = CacheMachine.TestCase
TestCacheMachine.settings = settings(max_examples=40, stateful_step_count=30,
                                     deadline=None)
