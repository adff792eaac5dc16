"""FlatFlash (Abulila et al., "FlatFlash: Exploiting the Byte-Accessibility of SSDs within
a Unified Memory-Storage Hierarchy", ASPLOS'19) as a reactive policy.

FlatFlash puts DRAM and the SSD in one address space and pages on demand between them:
nothing is planned ahead; a page an access finds missing is promoted from the SSD, and
when DRAM is full the least recently used pages are evicted, dirty ones written back.
Here that is the executor's fault path with a table that holds no moves but the drops of
dead tensors: the run starts from the executor's common initial placement, every operand
page an op finds missing is a
fault served page by page (``fault_chunk_pages = 1``: each fault becomes page-sized flash
requests, which is what sets FlatFlash apart from the coarser ``demand`` policy), and the
executor evicts least recently used tensors, page ranges at a time, writing back dirty
pages.

What FlatFlash does that we do not, and why:

- Byte-addressable access to cold pages: FlatFlash maps the SSD into the host's physical
  address space over PCIe MMIO, so a cache line of a cold page is read in place without
  moving the page. The NPU here streams every operand from HBM through its scratchpad;
  there is no path from the systolic arrays to the SSD, and an op reads every byte of
  its operands, so in-place cache-line reads would move the whole tensor anyway, at
  PCIe transaction granularity and without the page's reuse.
- Promotion by access counting: FlatFlash promotes a page to DRAM only once its access
  count passes a threshold and serves colder pages in place. Since an op touches every
  line of each operand page many times (each tile of a GEMM re-reads its operands),
  every page an op uses would pass any threshold during that op, so promotion on first
  access is what the counter policy becomes here.
- FlatFlash's persistence and the SSD-cache consistency machinery do not bear on
  training throughput and are left out.

Pure: no SimPy.
"""

from __future__ import annotations

from tmhw.placement.base import PlanContext, Policy, drop_moves, input_mask
from tmhw.placement.table import PlacementTable


class FlatFlash(Policy):
    """Demand paging at page granularity with LRU eviction (the executor's fault path)."""

    name = "flatflash"
    reactive = True

    def plan(self, ctx: PlanContext) -> PlacementTable:
        wl = ctx.workload
        t = PlacementTable(self.name, len(wl.ops), input_mask(wl), drop_moves(wl),
                           reactive=True, fault_chunk_pages=1)
        t.index()
        return t
