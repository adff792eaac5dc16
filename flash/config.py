"""NAND flash device configuration: geometry, cell timing, ONFI channel, FTL policy,
host link and energy, with the device presets the project studies.

Field -> datasheet / MQSim symbol (times in integer ps, sizes in bytes):

======================== =============================================================
``channels``             flash channels (MQSim ``Flash_Channel_Count``)
``chips_per_channel``    packages/ways per channel (``Chip_No_Per_Channel``)
``dies_per_chip``        dies (LUNs) per package (``Die_No_Per_Chip``)
``planes_per_die``       planes per die (``Plane_No_Per_Die``)
``blocks_per_plane``     erase blocks per plane (``Block_No_Per_Plane``)
``pages_per_block``      pages per block (``Page_No_Per_Block``)
``page_size``            page data bytes, spare area excluded (``Page_Capacity``)
``cell_type``            SLC/MLC/TLC/QLC: bits per cell and page types (LSB, CSB, MSB, TSB)
``t_r``                  nominal page read, array to page register (tR)
``t_prog``               nominal page program (tPROG)
``t_bers``               block erase (tBERS, ``Block_Erase_Latency``)
``t_r_page``             tR per page type (``Page_Read_Latency_LSB/CSB/MSB``); () = t_r
``t_prog_page``          tPROG per page type (``Page_Program_Latency_*``); () = t_prog
``channel_rate_mtps``    channel transfer rate, MT/s (``Channel_Transfer_Rate``)
``channel_width_bits``   channel data width (``Flash_Channel_Width`` x 8)
``onfi.*``               ONFI NV-DDR2 command/address protocol times (tCS, tWC, tWB, tRR,
                         tADL, tCALS, tWPST, tWPSTH, tDBSY, tRPRE, tDQSRE, tRHW, tCCS)
``pe_limit``             program/erase endurance (``Block_PE_Cycles_Limit``)
``over_provisioning``    fraction of physical pages hidden from the host
                         (``Overprovisioning_Ratio``)
``gc_threshold``         free-block fraction of a plane under which GC runs in the
                         background (``GC_Exec_Threshold``)
``gc_hard_threshold``    free-block fraction under which host writes wait for GC
                         (``GC_Hard_Threshold``)
``gc_policy``            victim choice: ``greedy`` (fewest valid pages) or
                         ``cost-benefit`` ((1-u)/2u x age, Rosenblum & Ousterhout)
``gc_copyback``          GC moves pages inside the die (no channel transfer)
                         (``Use_Copyback_for_GC``)
``allocation_order``     plane-allocation striping order, fastest-changing first:
                         a permutation of C (channel), W (way/chip), D (die), P (plane)
                         (``Plane_Allocation_Scheme``)
``dynamic_wear_leveling`` allocate from the least-worn free block
``static_wear_leveling`` / ``static_wl_threshold``: migrate cold data when a plane's
                         erase-count spread exceeds the threshold
``multiplane``           combine same-die operations on different planes into one
                         multi-plane command
``die_queue_depth``      bounded command queue per die in the detailed model
``pcie_gen`` / ``pcie_lanes``: host link, per device: PCIe generation (1-6) and lanes
                         (``PCIe_Lane_Count``); ``flash.pcie`` has the coding, framing,
                         DLLP and NVMe overheads and their sources
``pcie_lane_gbps``       a lane's coded data rate, GB/s; 0 (default): the generation's
                         (MQSim's ``PCIe_Lane_Bandwidth`` where set)
``pcie_max_payload_bytes`` the TLP maximum payload size (128-4096; 256, what most root
                         complexes negotiate)
``pcie_overheads``       framing, DLLPs, ordered sets and NVMe packets on the link;
                         false: data at the lane rate alone (MQSim's ``PCIe_Link``)
``controller_iops``      commands the controller takes per second (0: unbounded)
``independent_plane_reads`` a die overlaps one-page reads of its planes
                         (``flash.engine.dies.plane_read``; not under ``compat = "mqsim"``)
``slc_cache_bytes`` / ``t_prog_slc``: SLC write cache and its program time (``flash.slc``;
                         0: none)
``nvme_queue_depth``     commands a device holds at once; more wait in the host's
                         submission queue (``IO_Queue_Depth``)
``write_buffer_bytes``   controller DRAM holding written data until its program ends; a
                         write completes to the host once its data is in it (0: writes
                         complete when programmed)
``read_cache_bytes``     controller DRAM keeping whole NAND pages read (LRU); 0: none
``program_suspend`` / ``erase_suspend``: a read that finds its die programming
                         (erasing) suspends it (MQSim ``Program_Suspension_Enabled``,
                         ``Erase_Suspension_Enabled``)
``t_suspend_program`` / ``t_suspend_erase``: suspend latency before the read's own
                         command (``Suspend_Program_Time``, ``Suspend_Erase_Time``)
``suspend_min_remaining`` a program or erase is suspended only if at least this much of it
                         remains (``Preferred_suspend_write_time_for_read``)
``devices`` / ``stripe_bytes``: the flash tier is ``devices`` identical SSDs striped
                         RAID-0 in ``stripe_bytes`` units, each with its own link,
                         controller and FTL
``compat``               ``onfi``: dies of a package work independently, channels are
                         free during tR, physical cycle times; ``mqsim``: stock MQSim's
                         chip lock, data-out convoy and whole-ns cycle (``flash.phy``,
                         ``flash.scheduler``, ``flash.convoy``)
``energy.*``             NAND V x I x busy time (Vcc, Icc per operation), channel I/O
                         energy per byte, controller active and device idle power
======================== =============================================================

ONFI command overheads follow MQSim's ``ONFI_Channel_NVDDR2`` (CMU-SAFARI/MQSim,
``src/ssd/ONFI_Channel_NVDDR2.cpp``): a one-plane read command takes
tCS + 6 tWC + tWB + tRR = 290 ns with MQSim's defaults; each further plane adds
6 tWC + tDBSY. Data moves at ``channel_rate_mtps`` transfers per microsecond of
``channel_width_bits`` each, the physical time; MQSim truncates 1000/rate to whole ns
and so transfers in zero time above 1000 MT/s, which this model copies only under
``compat = "mqsim"`` (``flash.phy``). A read's data-out adds MQSim's setup tRPRE +
tDQSRE.

Presets (sources; "estimate" where no public figure exists):

- ``990pro``: Samsung 990 PRO 2 TB. Datasheet (Samsung, 2022; ``flash.datasheets``):
  7,450 MB/s sequential read, 6,900 MB/s sequential write (in its SLC cache), 1.4 M
  random-read and 1.55 M random-write IOPS (4 KiB, QD32 x 16 threads); PCIe 4.0 x4.
  Capacity point 2 TB: 32 dies of 512 Gb 176-layer TLC (2 TiB raw; 9% over-provisioned
  gives 2.0 TB), 8 channels (the Pascal controller's) x 2 chips x 2 dies x 4 planes,
  4096 blocks x 256 pages x 16 KiB; 2400 MT/s x 8 bit after comsys-lab/Concordia
  ``ssdconfig_990pro.xml``. tR 45 us and tPROG 450 us are Samsung's published figures
  for its V-NAND of that era (6th generation announcement, 2019: "below 450 us write
  and 45 us read"); tBERS 4 ms, PE limit 3000, 4 planes and the hard GC threshold 0.5%
  are estimates. SLC cache 216 GB (estimate: Intelligent TurboWrite 2.0's region at
  2 TB as reviews measure it, 200-230 GB) with tPROG 150 us in SLC mode (estimate: a
  third of TLC's, one bit per cell instead of three). ``controller_iops`` 1.5 M is an
  estimate between the datasheet's random-read and random-write IOPS (its dies, with
  independent plane reads, could read 128 planes / 45 us = 2.8 M); independent plane
  reads are an estimate (176-layer TLC parts of every vendor have them).
- ``mqsim-default``: MQSim's default ``ssdconfig.xml`` as given in docs/PARAMETERS.md: MLC,
  8 ch x 4 chips x 2 dies x 2 planes x 2048 blocks x 256 pages x 8 KiB; tR 75 us,
  tPROG 750 us, tBERS 3.8 ms; PE 10,000; 333 MT/s x 8 bit; OP 7%; GC 5% / hard 0.5%;
  PCIe 4 lanes x 1 GB/s, with no protocol overheads (MQSim's link).
- ``pm1743``: Samsung PM1743 3.84 TB, PCIe 5.0 x4. Datasheet (product brief, 2022;
  ``flash.datasheets``): 13 GB/s sequential read, 6.6 GB/s sequential write, 2.5 M
  random-read and 250 K random-write IOPS. Geometry and cell timing are estimates
  chosen to reproduce those figures at that capacity point: TLC, 16 ch x 2 chips x
  2 dies x 4 planes x 4096 blocks x 256 pages x 16 KiB (4 TiB raw, 12.7% over-provisioned
  gives 3.84 TB); tR 45 us, tPROG 640 us (64 dies x 4 planes x 16 KiB / 640 us =
  6.55 GB/s), tBERS 3.5 ms; 1600 MT/s channels; ``controller_iops`` 2.5 M (estimate:
  the random-read figure, which its dies exceed with independent plane reads); no SLC
  cache (an enterprise drive writes TLC directly). Its sequential read is the link's,
  14.3 GB/s (+10% on the datasheet's). Background GC keeps 1% of a plane's blocks free
  (estimate: an enterprise drive collects continuously, every die its own blocks, and
  keeps a few free blocks per plane; MQSim's 5% would hold 5 of the 12.7 spare points
  idle), so greedy GC's write amplification under sustained random writes is that of
  its 12.7% spare, 4.4 (Xiang & Kurkoski's formula, ``flash.ftl.gc``), and the 250 K
  IOPS follow from 64 dies' multi-plane programs and relocations at that amplification.
  Controller power 17.6 W (derived): the device draws 13,000 MB/s / 608 MB/s per W =
  21.4 W during sequential reads (Samsung's stated efficiency, ``flash.datasheets``),
  of which the model's NAND reads, channels and idle take 3.7 W; the rest is the
  PCIe 5.0 controller, its DRAM and the board (an enterprise drive's tens of watts,
  where the client drives' controller is an estimated 2 W).
- ``slc-ull``: low-latency SLC class (Samsung Z-NAND / Kioxia XL-Flash). tR 3 us and
  tPROG 100 us from Cheong et al., "A flash memory controller for 15 us ultra-low-latency
  SSD using high-speed 3D NAND flash with 3 us read time", ISSCC 2018 (Z-NAND); 4 KiB
  pages and 1 ms erase, 8 ch x 4 chips x 2 dies x 4 planes x 2048 blocks x 256 pages,
  800 MT/s and PE 100,000 are estimates; PCIe 3.0 x4 is the Z-SSD SZ985's host link. No
  datasheet figures are held against it (the model is a class of device, not the
  SZ985's capacity point).

Controller DRAM, suspend and arrays (all presets unless noted). The 990 PRO ships LPDDR4
(1 GB per TB, Samsung's data sheet), nearly all of it the mapping table; the share for
data is not published. ``write_buffer_bytes`` 192 MiB and ``read_cache_bytes`` 64 MiB are
estimates that split MQSim's default ``Data_Cache_Capacity`` of 256 MiB; DRAM bandwidth
(LPDDR4, above 10 GB/s) exceeds every preset's host link, so a cache hit costs link time
only. Suspend: MQSim's defaults ``Suspend_Program_Time`` 100 us, ``Suspend_Erase_Time``
700 us and ``Preferred_suspend_write_time_for_read`` 100 us (vendors do not publish
suspend latencies; these are the reference simulator's). ``nvme_queue_depth`` 1024 is
MQSim's ``IO_Queue_Depth``. ``stripe_bytes`` 512 KiB is Linux md's default RAID-0 chunk
(mdadm(8)). The ``mqsim-default`` preset has no data cache, as MQSim's flows run with
``Device_Level_Data_Caching_Mode`` TURNED_OFF in the reference runs.

Energy (all presets unless noted): NAND active 3.3 V x 25 mA = 82.5 mW per busy die
(SimpleSSD/SSDsim, docs/PARAMETERS.md), so a 40 us read costs 3.3 uJ; channel I/O 4 pJ/bit
(32 pJ/byte) is an estimate for a 1.2 V NV-DDR interface; controller active power
2 W is an estimate; idle 55 mW is Samsung's 990 PRO figure.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from flash.pcie import GT_PER_S, PAYLOAD_SIZES, Pcie, lane_gbps
from tmhw.sim import ConfigError
from tmhw.sim.units import MS, NS, US, KiB, MiB, S, energy_pj

CELL_BITS: dict[str, int] = {"SLC": 1, "MLC": 2, "TLC": 3, "QLC": 4}
GC_POLICIES = ("greedy", "cost-benefit")
COMPAT = ("onfi", "mqsim")


@dataclass(frozen=True, slots=True, kw_only=True)
class OnfiTiming:
    """ONFI NV-DDR2 command/address timing in ps; defaults are MQSim's
    (``ONFI_Channel_NVDDR2.h``)."""

    t_cs: int = 20 * NS      # CE setup (tCS)
    t_wc: int = 25 * NS      # command/address write cycle (tWC)
    t_wb: int = 100 * NS     # WE high to busy (tWB)
    t_rr: int = 20 * NS      # ready to RE low (tRR)
    t_adl: int = 70 * NS     # address to data loading (tADL)
    t_cals: int = 15 * NS    # CLE/ALE setup (tCALS)
    t_wpst: int = 6 * NS     # DQS write postamble (tWPST)
    t_wpsth: int = 15 * NS   # DQS write postamble hold (tWPSTH)
    t_dbsy: int = 500 * NS   # dummy busy between multi-plane commands (tDBSY)
    t_rpre: int = 15 * NS    # read preamble (tRPRE)
    t_dqsre: int = 15 * NS   # DQS access from RE (tDQSRE)
    t_rhw: int = 100 * NS    # RE high to WE low (tRHW)
    t_ccs: int = 300 * NS    # change column setup (tCCS)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or v < 0:
                raise ConfigError(f.name, v, "a non-negative integer number of ps")


@dataclass(frozen=True, slots=True, kw_only=True)
class FlashEnergy:
    """NAND energy as V x I x busy time, channel I/O per byte, controller and idle power."""

    vcc_v: float = 3.3              # NAND core supply (Vcc)
    icc_read_ma: float = 25.0       # array current while reading (Icc1)
    icc_prog_ma: float = 25.0       # while programming (Icc2)
    icc_erase_ma: float = 25.0      # while erasing (Icc3)
    channel_pj_per_byte: float = 32.0  # ONFI I/O, estimate (4 pJ/bit)
    controller_mw: float = 2000.0   # controller + DRAM while the device works, estimate
    idle_mw: float = 55.0           # whole device idle (990 PRO datasheet)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int | float) or v < 0 or not math.isfinite(v):
                raise ConfigError(f.name, v, "a finite non-negative number")


#: Largest device the FTL will model: 8x the 990 PRO-like preset's 2,097,152 blocks.
MAX_BLOCKS = 1 << 24


@dataclass(frozen=True, slots=True, kw_only=True)
class FlashConfig:
    """One SSD: NAND geometry and timing, channels, FTL policy and host link."""

    name: str = "990pro"
    # geometry
    channels: int = 8
    chips_per_channel: int = 2
    dies_per_chip: int = 2
    planes_per_die: int = 4
    blocks_per_plane: int = 4096
    pages_per_block: int = 256
    page_size: int = 16 * KiB
    # cell timing
    cell_type: str = "TLC"
    t_r: int = 45 * US
    t_prog: int = 450 * US
    t_bers: int = 4 * MS
    t_r_page: tuple[int, ...] = ()
    t_prog_page: tuple[int, ...] = ()
    # channel
    channel_rate_mtps: int = 2400
    channel_width_bits: int = 8
    onfi: OnfiTiming = field(default_factory=OnfiTiming)
    # endurance and FTL
    pe_limit: int = 3000
    over_provisioning: float = 0.10
    gc_threshold: float = 0.05
    gc_hard_threshold: float = 0.005
    gc_policy: str = "greedy"
    gc_copyback: bool = False
    allocation_order: str = "CWDP"
    dynamic_wear_leveling: bool = True
    static_wear_leveling: bool = True
    static_wl_threshold: int = 100
    multiplane: bool = True
    die_queue_depth: int = 8
    # host link
    pcie_gen: int = 4
    pcie_lanes: int = 4
    pcie_lane_gbps: float = 0.0
    pcie_max_payload_bytes: int = 256
    pcie_overheads: bool = True
    nvme_queue_depth: int = 1024
    # controller limits
    controller_iops: int = 1_500_000
    independent_plane_reads: bool = True
    slc_cache_bytes: int = 216 * 10**9
    t_prog_slc: int = 150 * US
    # controller DRAM
    write_buffer_bytes: int = 192 * MiB
    read_cache_bytes: int = 64 * MiB
    # suspend
    program_suspend: bool = True
    erase_suspend: bool = True
    t_suspend_program: int = 100 * US
    t_suspend_erase: int = 700 * US
    suspend_min_remaining: int = 100 * US
    # array and compatibility
    devices: int = 1
    stripe_bytes: int = 512 * KiB
    compat: str = "onfi"
    energy: FlashEnergy = field(default_factory=FlashEnergy)

    def __post_init__(self) -> None:
        for f in ("channels", "chips_per_channel", "dies_per_chip", "planes_per_die",
                  "blocks_per_plane", "pages_per_block", "page_size", "channel_rate_mtps",
                  "channel_width_bits", "pe_limit", "pcie_lanes", "die_queue_depth",
                  "nvme_queue_depth", "devices", "stripe_bytes"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f, v, "a positive integer")
        if self.page_size < 512 or self.page_size & (self.page_size - 1):
            raise ConfigError("page_size", self.page_size, "a power of two >= 512 bytes")
        total_blocks = (self.channels * self.chips_per_channel * self.dies_per_chip
                        * self.planes_per_die * self.blocks_per_plane)
        if total_blocks > MAX_BLOCKS:
            raise ConfigError("channels", self.channels,
                              f"a geometry of at most {MAX_BLOCKS:,} blocks (this one has "
                              f"{total_blocks:,}; the FTL keeps state per block)")
        if self.channel_width_bits % 8:
            raise ConfigError("channel_width_bits", self.channel_width_bits,
                              "a multiple of 8")
        if self.cell_type not in CELL_BITS:
            raise ConfigError("cell_type", self.cell_type, f"one of {sorted(CELL_BITS)}")
        for f in ("t_r", "t_prog", "t_bers"):
            v = getattr(self, f)
            if not isinstance(v, int) or v <= 0:
                raise ConfigError(f, v, "a positive integer number of ps")
        bits = CELL_BITS[self.cell_type]
        for f in ("t_r_page", "t_prog_page"):
            v = getattr(self, f)
            if len(v) not in (0, bits) or any(not isinstance(x, int) or x <= 0 for x in v):
                raise ConfigError(f, v, f"() or {bits} positive ps values, one per page type "
                                  f"of {self.cell_type}")
        if not 0.0 <= self.over_provisioning < 0.9:
            raise ConfigError("over_provisioning", self.over_provisioning, "in [0, 0.9)")
        if not 0.0 < self.gc_hard_threshold <= self.gc_threshold < 0.5:
            raise ConfigError("gc_threshold", (self.gc_threshold, self.gc_hard_threshold),
                              "0 < gc_hard_threshold <= gc_threshold < 0.5")
        if self.gc_policy not in GC_POLICIES:
            raise ConfigError("gc_policy", self.gc_policy, f"one of {GC_POLICIES}")
        if sorted(self.allocation_order) != sorted("CWDP"):
            raise ConfigError("allocation_order", self.allocation_order,
                              "a permutation of the letters C, W, D, P (e.g. CWDP)")
        if self.static_wl_threshold < 1:
            raise ConfigError("static_wl_threshold", self.static_wl_threshold, ">= 1")
        if self.pcie_gen not in GT_PER_S:
            raise ConfigError("pcie_gen", self.pcie_gen, f"one of {sorted(GT_PER_S)}")
        if not 0 <= self.pcie_lane_gbps < math.inf:
            raise ConfigError("pcie_lane_gbps", self.pcie_lane_gbps,
                              "a finite number >= 0 (0: the generation's coded lane rate)")
        if self.pcie_max_payload_bytes not in PAYLOAD_SIZES:
            raise ConfigError("pcie_max_payload_bytes", self.pcie_max_payload_bytes,
                              f"one of {PAYLOAD_SIZES}")
        if self.slc_cache_bytes and not 0 < self.t_prog_slc <= self.t_prog:
            raise ConfigError("t_prog_slc", self.t_prog_slc,
                              f"in (0, t_prog = {self.t_prog}] ps with an SLC cache")
        for f in ("write_buffer_bytes", "read_cache_bytes", "t_suspend_program",
                  "controller_iops", "slc_cache_bytes", "t_prog_slc",
                  "t_suspend_erase", "suspend_min_remaining"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ConfigError(f, v, "a non-negative integer")
        if self.compat not in COMPAT:
            raise ConfigError("compat", self.compat, f"one of {COMPAT}")
        if self.stripe_bytes % self.page_size:
            raise ConfigError("stripe_bytes", self.stripe_bytes,
                              f"a multiple of page_size ({self.page_size} bytes)")
        spare = self.blocks_per_plane - self.logical_blocks_per_plane
        if spare < self.gc_soft_blocks + 3:
            raise ConfigError("over_provisioning", self.over_provisioning,
                              f"must leave at least the GC threshold's "
                              f"{self.gc_soft_blocks} blocks (gc_threshold "
                              f"{self.gc_threshold} of blocks_per_plane "
                              f"{self.blocks_per_plane}, at least 2) + 3 = "
                              f"{self.gc_soft_blocks + 3} spare blocks per plane (has "
                              f"{spare}): more over-provisioning or a lower gc_threshold")

    # -- derived geometry --------------------------------------------------------------
    @property
    def bits_per_cell(self) -> int:
        return CELL_BITS[self.cell_type]

    @property
    def dies(self) -> int:
        return self.channels * self.chips_per_channel * self.dies_per_chip

    @property
    def dies_per_channel(self) -> int:
        return self.chips_per_channel * self.dies_per_chip

    @property
    def planes(self) -> int:
        return self.dies * self.planes_per_die

    @property
    def blocks(self) -> int:
        return self.planes * self.blocks_per_plane

    @property
    def physical_pages(self) -> int:
        return self.blocks * self.pages_per_block

    @property
    def logical_blocks_per_plane(self) -> int:
        """Blocks' worth of logical pages each plane holds (the rest is spare)."""
        return int(self.blocks_per_plane * (1.0 - self.over_provisioning))

    @property
    def logical_pages(self) -> int:
        """Pages visible to the host."""
        return self.planes * self.logical_blocks_per_plane * self.pages_per_block

    @property
    def capacity(self) -> int:
        """Logical capacity of one device in bytes."""
        return self.logical_pages * self.page_size

    @property
    def total_capacity(self) -> int:
        """Logical capacity of the flash tier: ``devices`` x one device's."""
        return self.devices * self.capacity

    @property
    def gc_soft_blocks(self) -> int:
        """Free blocks per plane under which background GC runs."""
        return max(2, math.ceil(self.gc_threshold * self.blocks_per_plane))

    @property
    def gc_hard_blocks(self) -> int:
        """Free blocks per plane under which host writes wait for GC."""
        return max(1, math.ceil(self.gc_hard_threshold * self.blocks_per_plane))

    # -- timing ------------------------------------------------------------------------
    def t_r_of(self, page_type: int) -> int:
        return self.t_r_page[page_type] if self.t_r_page else self.t_r

    def t_prog_of(self, page_type: int) -> int:
        return self.t_prog_page[page_type] if self.t_prog_page else self.t_prog

    @property
    def t_r_mean(self) -> float:
        return sum(self.t_r_page) / len(self.t_r_page) if self.t_r_page else float(self.t_r)

    @property
    def t_prog_mean(self) -> float:
        return (sum(self.t_prog_page) / len(self.t_prog_page) if self.t_prog_page
                else float(self.t_prog))

    @property
    def channel_bytes_per_s(self) -> float:
        return self.channel_rate_mtps * 1e6 * self.channel_width_bits / 8

    def data_ps(self, nbytes: int) -> int:
        """Physical time to move ``nbytes`` over one channel (ceil to ps)."""
        if nbytes <= 0:
            return 0
        # transfers x (1e6 / rate) ps each, exact in integers
        num = nbytes * 8 * 1_000_000
        den = self.channel_width_bits * self.channel_rate_mtps
        return -(-num // den)

    def read_command_ps(self, planes: int = 1) -> int:
        """Read command and address cycles for ``planes`` planes (MQSim ReadCommandTime)."""
        o = self.onfi
        return o.t_cs + planes * 6 * o.t_wc + (planes - 1) * o.t_dbsy + o.t_wb + o.t_rr

    def read_setup_ps(self, planes: int = 1) -> int:
        """Data-out setup: preamble per plane plus a change-column per extra plane."""
        o = self.onfi
        return planes * (o.t_rpre + o.t_dqsre) + (planes - 1) * (o.t_rhw + 6 * o.t_wc
                                                               + o.t_ccs)

    def program_command_ps(self, planes: int = 1) -> int:
        """Program command, address and data-load setup (MQSim ProgramCommandTime)."""
        o = self.onfi
        last = o.t_wc * 6 + o.t_adl + o.t_wpst + o.t_wpsth + o.t_wb
        each = o.t_wc * 5 + o.t_adl + o.t_wpst + o.t_cals + o.t_wb + o.t_dbsy
        return o.t_cs + (planes - 1) * each + last

    def erase_command_ps(self, planes: int = 1) -> int:
        o = self.onfi
        return o.t_cs + o.t_wc * 4 + o.t_wb + (planes - 1) * (o.t_dbsy + o.t_wc * 4 + o.t_wb)

    def read_transfer_ps(self, nbytes: int, planes: int = 1) -> int:
        """Data-out of ``nbytes`` (from ``planes`` planes) including setup."""
        return self.read_setup_ps(planes) + self.data_ps(nbytes)

    def unloaded_read_ps(self) -> int:
        """One page read on an idle device: command + tR + page transfer."""
        return self.read_command_ps(1) + self.t_r_of(0) + self.read_transfer_ps(self.page_size)

    def unloaded_program_ps(self) -> int:
        """One page program on an idle device: command + transfer + tPROG."""
        return self.program_command_ps(1) + self.data_ps(self.page_size) + self.t_prog_of(0)

    # -- bandwidth bounds --------------------------------------------------------------
    @property
    def pcie(self) -> Pcie:
        """The host link (``flash.pcie``): lanes at ``pcie_lane_gbps`` or, when that is
        0, the generation's coded lane rate."""
        return Pcie(self.pcie_lanes, self.pcie_lane_gbps or lane_gbps(self.pcie_gen),
                    self.pcie_max_payload_bytes, self.pcie_overheads)

    @property
    def host_read_bytes_per_s(self) -> float:
        """Payload bytes per second of a long read over the host link."""
        return self.pcie.read_bytes_per_s

    @property
    def host_write_bytes_per_s(self) -> float:
        """Payload bytes per second of a long write over the host link."""
        return self.pcie.write_bytes_per_s

    @property
    def die_read_bytes_per_s(self) -> float:
        """All dies reading all planes back to back: dies x planes x page / tR."""
        return self.dies * self.planes_per_die * self.page_size * S / self.t_r_mean

    @property
    def die_program_bytes_per_s(self) -> float:
        """All dies programming all planes back to back, the fastest they can (in SLC
        mode while a device has an SLC cache): dies x planes x page / tPROG."""
        fastest = self.t_prog_slc if self.slc_cache_bytes else self.t_prog_mean
        return self.dies * self.planes_per_die * self.page_size * S / fastest

    @property
    def tlc_program_bytes_per_s(self) -> float:
        """``die_program_bytes_per_s`` at the cell's own tPROG (the SLC cache's folding
        rate, and a device's rate once its SLC cache is full)."""
        return self.dies * self.planes_per_die * self.page_size * S / self.t_prog_mean

    @property
    def channels_bytes_per_s(self) -> float:
        return self.channels * self.channel_bytes_per_s

    def read_bandwidth_bound(self) -> float:
        """devices x min(dies x planes x page / tR, channels x rate x width, host link),
        bytes/s."""
        return self.devices * min(self.die_read_bytes_per_s, self.channels_bytes_per_s,
                                  self.host_read_bytes_per_s)

    def write_bandwidth_bound(self) -> float:
        """devices x min(dies x planes x page / tPROG, channels, host link), bytes/s."""
        return self.devices * min(self.die_program_bytes_per_s, self.channels_bytes_per_s,
                                  self.host_write_bytes_per_s)

    # -- energy ------------------------------------------------------------------------
    def read_page_pj(self) -> float:
        e = self.energy
        return energy_pj(e.vcc_v * e.icc_read_ma, self.t_r_mean)

    def program_page_pj(self, slc: bool = False) -> float:
        """One page program's NAND energy (``slc``: in SLC mode, ``t_prog_slc``)."""
        e = self.energy
        return energy_pj(e.vcc_v * e.icc_prog_ma,
                         self.t_prog_slc if slc and self.t_prog_slc else self.t_prog_mean)

    def erase_block_pj(self) -> float:
        e = self.energy
        return energy_pj(e.vcc_v * e.icc_erase_ma, self.t_bers)


BASE_990PRO = FlashConfig()

MQSIM_DEFAULT = FlashConfig(
    name="mqsim-default",
    channels=8, chips_per_channel=4, dies_per_chip=2, planes_per_die=2,
    blocks_per_plane=2048, pages_per_block=256, page_size=8 * KiB,
    cell_type="MLC", t_r=75 * US, t_prog=750 * US, t_bers=3800 * US,
    channel_rate_mtps=333, channel_width_bits=8,
    pe_limit=10_000, over_provisioning=0.07, gc_threshold=0.05, gc_hard_threshold=0.005,
    pcie_lanes=4, pcie_lane_gbps=1.0, pcie_overheads=False, write_buffer_bytes=0,
    read_cache_bytes=0, controller_iops=0, independent_plane_reads=False, slc_cache_bytes=0,
    t_prog_slc=0,
)

PM1743 = dataclasses.replace(
    BASE_990PRO, name="pm1743",
    channels=16, chips_per_channel=2, dies_per_chip=2, planes_per_die=4,
    t_r=45 * US, t_prog=640 * US, t_bers=3500 * US,
    channel_rate_mtps=1600, pcie_gen=5, pcie_lanes=4, over_provisioning=0.127,
    controller_iops=2_500_000, independent_plane_reads=True, slc_cache_bytes=0,
    t_prog_slc=0, gc_threshold=0.01, energy=FlashEnergy(controller_mw=17_600.0),
)

SLC_ULL = dataclasses.replace(
    BASE_990PRO, name="slc-ull",
    channels=8, chips_per_channel=4, dies_per_chip=2, planes_per_die=4,
    blocks_per_plane=2048, pages_per_block=256, page_size=4 * KiB,
    cell_type="SLC", t_r=3 * US, t_prog=100 * US, t_bers=1 * MS,
    channel_rate_mtps=800, pe_limit=100_000, pcie_gen=3, pcie_lanes=4,
    over_provisioning=0.10, controller_iops=0, independent_plane_reads=False,
    slc_cache_bytes=0, t_prog_slc=0,
)

PRESETS: dict[str, FlashConfig] = {
    "990pro": BASE_990PRO,
    "mqsim-default": MQSIM_DEFAULT,
    "pm1743": PM1743,
    "slc-ull": SLC_ULL,
}

