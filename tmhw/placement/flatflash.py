"""FlatFlash (Abulila et al., "FlatFlash: Exploiting the Byte-Accessibility of SSDs within
a Unified Memory-Storage Hierarchy", ASPLOS'19) as a reactive policy.

What the paper built. FlatFlash maps the SSD into the host's physical address space
through a PCIe BAR, so the CPU reaches a page that lives on the SSD in place with
ordinary loads and stores at cache-line granularity (MMIO) instead of paging it into
DRAM. The SSD controller's DRAM serves those lines as a page cache (the SSD-Cache): a
miss brings the whole NAND page into it first. Per page, the SSD-Cache counts
accesses; a page whose count crosses a promotion threshold is promoted to host DRAM by
DMA in the background, and accesses made while it moves are redirected to the SSD
(the promotion look-aside buffer in the host bridge), so promotion is off the critical
path. The threshold adapts at run time, so that pages with little reuse stay on the
SSD and do not displace DRAM pages. When DRAM is full the OS evicts least recently
used pages to the SSD, writing back dirty ones. The paper also gives byte-granular
persistence and the consistency machinery that needs.

How it is built here, on an NPU with HBM and flash. HBM plays the host DRAM, the NPU
the CPU, and the flash tier the SSD with its controller DRAM (``flash.cache``). The
table holds no moves but the drops of dead tensors (the framework frees them); the run
starts from the executor's common initial placement. Before an op runs, an operand it
only reads whose pages are missing from HBM is read in place (``read_in_place``): each
run of its missing pages is one flash request (``DmaEngine.inplace_read``), whose NAND
pages stay in the SSD's read cache, and whose data crosses the SSD's link and the NPU's port in
``policy.flatflash.line_bytes`` lines, each with ``policy.flatflash.line_overhead_bytes``
of PCIe framing; the op streams it into its scratchpad without taking HBM space and
cannot end before the last line is in. Each in-place read counts one access on its
pages; at ``policy.flatflash.promote_after`` accesses the pages are promoted by a
background DMA fetch into HBM (room is made by LRU eviction, as the OS allocates a
frame); an op that needs them before that fetch is booked reads them in place again.
Outputs are allocated in HBM, and an operand an op also writes (the optimizer's
update of weights and moments) is faulted in as demand paging does, the whole missing
range as one request: the NPU writes results into HBM. Eviction is least recently used
first (``LruEviction.eviction_order``), with write-back of dirty pages.

What is idealised or left out:

- Faults are served per op: the in-place accesses an op makes to one operand are one
  batched request booked when the op starts, with compute overlapping the stream
  (the op ends at the later of its compute and the last line), not one PCIe round
  trip per line. An access counts once per op, although a GEMM that re-reads an
  operand from its source would read it in place again; the NPU is taken to stream
  each operand once through its scratchpad.
- The threshold is fixed (``policy.flatflash.promote_after``, default 4), not
  adapted: the default is the best of the thresholds tried. On the quick preset at
  12.5% HBM (``tmhw run --preset quick --policy flatflash --hbm-ratio 0.125 --set
  run.iterations=4 --set run.warmup_iterations=2 --set
  policy.flatflash.promote_after=K``), ms per steady iteration: K=1 486.1, 2 464.5,
  3 451.9, 4 442.9, 8 448.6; never promoting (K=1000) is faster still, 429.3.
  Training reads most pages a few times per iteration before it overwrites or evicts
  them, so a promotion rarely earns back its second crossing of the link; promotion
  is half of the design, so the default keeps one.
- The NPU model still draws an in-place operand's tile traffic from HBM (its time
  and energy inside the op); on the quick preset that traffic is a few ms of an
  iteration of hundreds.
- A page being promoted is waited for once its fetch is booked, not read in place
  (the look-aside buffer would redirect the access; the fetch is already under way).
- In-place writes (stores to SSD pages through the BAR) are not modelled: a written
  operand is faulted in. Persistence and the consistency machinery do not bear on
  training throughput and are left out. The SSD-Cache is the flash model's LRU read
  cache (``flash.read_cache_bytes``), not the paper's RRIP-managed one.

Pure: no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tmhw.placement.base import InPlacePort, PlanContext, drop_moves, input_mask
from tmhw.placement.simple import LruEviction
from tmhw.placement.table import PlacementTable
from tmhw.sim.errors import ConfigError


@dataclass(frozen=True, slots=True, kw_only=True)
class FlatFlashParams:
    """``[policy.flatflash]``: how in-place reads are made and when a page is promoted."""

    #: In-place accesses to a flash page (ops that read it from the SSD) after which it
    #: is promoted to HBM. Estimate standing in for the paper's adaptive threshold: the
    #: best fixed one of 1, 2, 3, 4, 8 on the quick preset at 12.5% HBM (module
    #: docstring; never promoting is faster still there).
    promote_after: int = 4
    #: Bytes the NPU reads per in-place access: one CPU cache line, as FlatFlash's MMIO
    #: loads (Abulila et al., ASPLOS'19: 64 B lines).
    line_bytes: int = 64
    #: PCIe framing of each line's read completion: a 3-DW TLP header (12 B), LCRC (4 B)
    #: and the Gen3+ STP framing token with the sequence number (4 B), from the PCI
    #: Express Base Specification 3.0 (sections 2.2 and 4.2.2); ACK and flow-control
    #: DLLPs are left out. 64 B lines so use 76% of the link.
    line_overhead_bytes: int = 20

    def __post_init__(self) -> None:
        if self.promote_after < 1:
            raise ConfigError("promote_after", self.promote_after, "an integer >= 1")
        if self.line_bytes < 1:
            raise ConfigError("line_bytes", self.line_bytes, "an integer >= 1")
        if self.line_overhead_bytes < 0:
            raise ConfigError("line_overhead_bytes", self.line_overhead_bytes,
                              "an integer >= 0")


class FlatFlash(LruEviction):
    """In-place reads of cold operands, promotion after a count, LRU eviction."""

    name = "flatflash"
    reactive = True
    #: a reactive pager: an op larger than HBM runs tile by tile (the executor's streaming)
    streams = True
    Params = FlatFlashParams
    section = "flatflash"
    params: FlatFlashParams
    #: ``policy.tune`` tries thresholds 1 to 16 accesses: the paper adapts its threshold
    #: to the workload; the best fixed one per cell stands in for that adaptation
    tunables = {"promote_after": (1, 2, 4, 8, 16)}

    def plan(self, ctx: PlanContext) -> PlacementTable:
        wl = ctx.workload
        t = PlacementTable(self.name, len(wl.ops), input_mask(wl), drop_moves(wl),
                           reactive=True)
        t.index()
        return t

    def reads_in_place(self, tensor: int) -> bool:
        return True

    def read_in_place(self, tensors: list[int], op_index: int, port: InPlacePort) -> int:
        """Read each run of the missing pages of ``tensors`` in place (one flash request
        per run), count the access on its pages, and promote each tensor's pages that
        reached ``policy.flatflash.promote_after`` accesses and HBM does not hold: one
        background fetch per tensor and op over the hot pages' span (pages HBM already
        holds inside it are skipped by the fetch), unless one is still being booked."""
        pol = self.params
        counts = port.access_counts
        end = 0
        for t in tensors:
            for a, b in port.missing_runs(*port.pages_of(t)):
                end = max(end, port.read_in_place(t, a, b, pol.line_bytes,
                                                  pol.line_overhead_bytes))
                counts[a:b] += 1
        in_hbm = port.in_hbm
        for t in tensors:
            if port.promotion_pending(t):
                continue
            p0, p1 = port.pages_of(t)
            hot = np.flatnonzero((counts[p0:p1] >= pol.promote_after)
                                 & ~in_hbm[p0:p1])
            if len(hot) == 0:
                continue
            a, b = p0 + int(hot[0]), p0 + int(hot[-1]) + 1
            counts[a:b] = 0
            port.promote(t, a, b, op_index)
        return end
