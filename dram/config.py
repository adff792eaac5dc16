"""DRAM/HBM device and controller configuration, with the JEDEC presets the project uses.

One ``DramConfig`` describes one memory tier: the device organisation, its timing in
integer ps, its IDD currents (or a pJ/bit figure where no open IDD set exists) and the
controller in front of it. The independent scheduling unit is a *pseudo-channel* (a
channel when ``pseudo_channels == 1``): it owns its banks, its data bus of
``bus_width_bits / pseudo_channels`` bits and its refresh; the model calls it a *unit*.

Field -> datasheet symbol (times in ps, currents in mA, ``tck`` is one clock cycle):

====================== ================================================================
``channels``           independent channels (HBM: per stack; DDR5: sub-channels)
``pseudo_channels``    pseudo-channels per channel (HBM2 PC mode, HBM3: 2)
``ranks``              ranks per unit (HBM: stack IDs sharing the unit's bus)
``bank_groups``        bank groups per rank (BG)
``banks_per_group``    banks per bank group (BA)
``rows``               rows per bank (RA)
``columns``            column addresses per row, each ``unit_width`` bits wide (CA)
``bus_width_bits``     data pins per channel (DQ); a unit has ``bus_width_bits /
                       pseudo_channels``
``burst_length``       beats per column access (BL)
``data_rate``          beats per ``tck`` on a DQ pin (2 for DDR; 4 for HBM3's
                       ``tck`` = 0.625 ns at 6.4 Gb/s; 8 for LPDDR5's CK:WCK 1:4)
``devices_per_rank``   DRAM dies driven together (DDR4 x8 on 64 bits: 8), scales IDDs
``dual_command_bus``   separate row and column command buses (HBM); else one
``tck``                clock period (tCK)
``t_cl`` / ``t_cwl``   read / write latency, CAS to first data (CL/RL, CWL/WL)
``t_rcd``, ``t_rcd_wr`` ACT to RD / ACT to WR (tRCD, tRCDRD, tRCDWR)
``t_rp``               PRE to ACT, same bank (tRP, tRPpb)
``t_ras``              ACT to PRE, same bank (tRAS)
``t_rc``               ACT to ACT, same bank (tRC)
``t_ccd_s/l``          CAS to CAS, different / same bank group (tCCD_S, tCCD_L)
``t_rrd_s/l``          ACT to ACT, different / same bank group (tRRD_S, tRRD_L)
``t_faw``              window holding at most four ACTs per rank (tFAW)
``t_wr``               end of write data to PRE (write recovery, tWR)
``t_wtr_s/l``          end of write data to RD, different / same bank group (tWTR_S/L)
``t_rtp``              RD to PRE (tRTP)
``t_rtw``              extra read-to-write bus turnaround beyond CL + BL - CWL (tBTR,
                       the preamble gap; 2 tCK in Ramulator's HBM models)
``t_rtrs``             data-bus gap when the rank changes (tRTRS)
``t_refi``             average all-bank refresh interval (tREFI)
``t_rfc``              all-bank refresh cycle (tRFC, tRFCab)
``t_rfc_pb``           per-bank refresh cycle (tRFCpb: one bank per command, as HBM3's
                       REFpb and LPDDR5's REFpb); 0: not modelled for the standard
``t_rrefd``            per-bank REF to REF or ACT of another bank (tRREFD)
``vdd``                core supply (VDD, V)
``idd0``..``idd5ab``   IDD0, IDD2N, IDD3N, IDD4R, IDD4W, IDD5AB per device (mA)
``pj_per_bit``         when > 0, the whole device energy per bit moved, replacing the IDD
                       model (for standards without an open IDD set)
``io_pj_per_bit``      interface energy per bit moved that IDD4R/IDD4W exclude (the
                       datasheet measures them with unloaded outputs); added on top
``controller_delay``   controller front-end latency added to every request
``address_mapping``    address fields from most to least significant: ``Ro`` row,
                       ``Ra`` rank, ``Bg`` bank group, ``Ba`` bank, ``Co`` column
                       (burst index), ``Pc`` pseudo-channel, ``Ch`` channel
``interleave_bytes``   contiguous bytes kept in one row of one unit: the low column
                       bits sit below every field of the mapping
``page_policy``        ``open`` (rows stay open) or ``closed`` (auto-precharge when no
                       queued request hits the row)
``refresh``            ``all-bank``, ``per-bank`` (needs ``t_rfc_pb``) or ``off``
``read_queue`` / ``write_queue``: controller queue entries per unit
``write_high`` / ``write_low``: write-drain watermarks (entries)
====================== ================================================================

Presets (sources; "estimate" marks a value without a public figure):

- ``hbm2``: DRAMsim3 ``configs/HBM2_8Gb_x128.ini`` (umd-memsys/DRAMsim3): 8 channels x 128
  bit, BL4, 4 x 4 banks, 32768 rows, 64 columns, tCK 1 ns (2 Gb/s), CL 14, CWL 4,
  tRCDRD/WR 14, tRP 14, tRAS 34, tRC = tRAS + tRP = 48, tRFC 260, tREFI 3900, tRRD_S/L 4/6,
  tWTR_S/L 6/8, tFAW 30, tWR 16, tCCD_S/L 1/2, tRTP 4/6 (the long value used);
  VDD 1.2 V, IDD0 65, IDD2N 40, IDD3N 55, IDD4R 390, IDD4W 500, IDD5AB 250 mA. One rank
  per channel (4 GiB stack; DRAMsim3's ``channel_size = 1024`` would make two). t_rtw 2
  tCK as Ramulator's HBM models. tRFCsb 160 ns (Ramulator 2 HBM3 ``nRFCSB`` at 1 ns;
  estimate for HBM2's REFSB). ``io_pj_per_bit`` 1.9: see ``HBM2_IO_PJ_PER_BIT``
  (estimate).
- ``hbm2e``: estimate: HBM2's timings in ns re-rounded at tCK 0.625 ns (3.2 Gb/s, the
  Samsung Flashbolt / JESD235C speed), 32 banks of 65536 rows (16 Gb dies, 16 GiB
  8-high stack), tRFC 350 ns (16 Gb, estimate), tCCD_S/L 2/4; no per-bank refresh (no
  public tRFCsb for 32 banks). Energy 3.9 pJ/bit
  all-inclusive (HBM2's figure from O'Connor et al., MICRO'17; estimate for HBM2E).
- ``hbm3``: HBM3-6400 after Ramulator 2.1 (its HBM3 timing preset): 16 channels x 2
  pseudo-channels x 32 bit, BL8 (nBL 2 at tCK 0.625 ns), 4 x 4 banks; nCL 20,
  nRCDRD 31, nRCDWR 15, nRP 26, nRAS 45, nRC 72, nFAW 24, nRRDS/L 4/5, nCCDS/L 2/4,
  nREFI 6240 (3.9 us). From Ramulator 2.1 ``python/ramulator/dram/hbm3.py``
  (HBM3_6400Mbps): nWR 24, nRTP 6, nCWL 8, nWTRS/L 8/12, nBTR 2; tRFC 350 ns and
  tRFCpb 200 ns (its density table for a 4 Gb pseudo-channel), tRREFD 8 ns. Rows
  32768 x 1 KiB pages per pseudo-channel (16 GiB stack; estimate). 64 B interleave (a
  64 B access stays in one pseudo-channel). Energy 4.0 pJ/bit all-inclusive: estimate,
  the middle of the 3-5 pJ/bit range docs/PARAMETERS.md gives for HBM3.
- ``ddr4-3200``: DRAMsim3 ``configs/DDR4_8Gb_x8_3200.ini``: one 64-bit channel of x8
  devices (8 per rank), 4 x 4 banks, 65536 rows, 1024 columns, BL8; CL 22, CWL 16,
  tRCD 22, tRP 22, tRAS 52, tRC 74, tRFC 560, tREFI 12480, tRRD_S/L 4/8, tWTR_S/L 4/12,
  tFAW 34, tWR 24, tRTP 12, tCCD_S/L 4/8, tRTRS 1 (cycles); tCK 0.625 ns (DRAMsim3
  writes 0.63); VDD 1.2 V, IDD0 57, IDD2N 37, IDD3N 52, IDD4R 168, IDD4W 150, IDD5AB 250.
  Two ranks (16 GiB), as DRAMsim3 derives them (``Config::CalculateSize``): a rank of
  eight x8 devices of 65536 rows x 1 KiB pages x 16 banks holds 8192 MB, and the file's
  ``channel_size = 16384`` makes two; its ``RANK_LEVEL_STAGGERED`` refresh lets the ranks
  take turns every tREFI / 2, as here. The address mapping is the project's default
  (``RoRaBaCoBgPcCh``: bank groups below the column, so a stream rotates them), not the
  file's ``rochrababgco``; random traffic does not depend on it.
- ``ddr5-4800``: JESD79-5 speed bin DDR5-4800B with 16 Gb x8 devices: two 32-bit
  sub-channels of 4 devices, 8 x 4 banks, 65536 rows, 1 KiB device pages, BL16; tCK
  416 ps (416.7 rounded down); CL 40, CWL 38, tRCD 40, tRP 40, tRAS 32 ns (77), tRC 117,
  tCCD_S 8, tCCD_L 12 (5 ns), tRRD_S 8, tRRD_L 12, tFAW 32, tWR 30 ns (72),
  tWTR_S/L 2.5/10 ns (6/24), tRTP 7.5 ns (18), tRFC1 295 ns (709), tREFI 3.9 us
  (9360). DDR5's same-bank refresh (REFsb: one bank index in every bank group at once,
  tRFCsb 130 ns) is not modelled, so ``t_rfc_pb`` is 0 (all-bank refresh only).
  Energy 6.0 pJ/bit all-inclusive: estimate (no open IDD set).
- ``lpddr5-6400``: JESD209-5 LPDDR5-6400, bank-group mode, 4 x16 channels, 4 x 4 banks,
  65536 rows x 2 KiB, BL16 (two CK at 8 beats per 1.25 ns CK); from Ramulator 2
  ``src/dram/impl/LPDDR5.cpp`` (LPDDR5_6400): nCL 20, nRCD 15, nRPpb 15, nRAS 34,
  nWR 28, nCWL 11, nRRD 4, nWTRS/L 5/10, nFAW 16; tRC = tRAS + tRPpb = 49 tCK; tCCD_S 2,
  tCCD_L 4 (BL16 in BG mode), tRTP 7.5 ns (6), tREFI 3.906 us (3125), tRFCab 280 ns
  (224), tRFCpb 140 ns (112) for 16 Gb. Energy 5.0 pJ/bit all-inclusive: estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from tmhw.sim.errors import ConfigError
from tmhw.sim.units import S

#: Standards the controller knows; they differ only through the fields above.
STANDARDS = ("hbm2", "hbm2e", "hbm3", "ddr4", "ddr5", "lpddr5")
MAPPING_FIELDS = ("Ro", "Ra", "Bg", "Ba", "Co", "Pc", "Ch")
PAGE_POLICIES = ("open", "closed")
REFRESH_MODES = ("all-bank", "per-bank", "off")

#: Interface energy of HBM2 per bit moved, on top of the IDD model: estimate. IDD4R and
#: IDD4W are measured with unloaded outputs, so the TSV/PHY data movement is outside them
#: (DRAMPower adds I/O and termination power separately for the same reason). The IDD
#: terms of the ``hbm2`` preset give 2.0 pJ/bit for streaming reads (``tmhw dram bench
#: --preset hbm2 --pattern stream``; DRAMsim3 gives 1.96 for the same run, see
#: tmhw/validate/data/dramsim3.toml); O'Connor et al. (MICRO'17) give about
#: 3.9 pJ/bit for the HBM2 device; this is the difference.
HBM2_IO_PJ_PER_BIT = 1.9


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DramConfig:
    """One DRAM/HBM tier: organisation, timing (ps), power, controller. Defaults are the
    ``hbm2`` preset."""

    name: str = "hbm2"
    standard: str = "hbm2"
    # -- organisation ------------------------------------------------------------------
    channels: int = 8
    pseudo_channels: int = 1
    ranks: int = 1
    bank_groups: int = 4
    banks_per_group: int = 4
    rows: int = 32768
    columns: int = 64
    bus_width_bits: int = 128
    burst_length: int = 4
    data_rate: int = 2
    devices_per_rank: int = 1
    dual_command_bus: bool = True
    # -- timing, ps ----------------------------------------------------------------------
    tck: int = 1000
    t_cl: int = 14_000
    t_cwl: int = 4_000
    t_rcd: int = 14_000
    t_rcd_wr: int = 14_000
    t_rp: int = 14_000
    t_ras: int = 34_000
    t_rc: int = 48_000
    t_ccd_s: int = 1_000
    t_ccd_l: int = 2_000
    t_rrd_s: int = 4_000
    t_rrd_l: int = 6_000
    t_faw: int = 30_000
    t_wr: int = 16_000
    t_wtr_s: int = 6_000
    t_wtr_l: int = 8_000
    t_rtp: int = 6_000
    t_rtw: int = 2_000
    t_rtrs: int = 1_000
    t_refi: int = 3_900_000
    t_rfc: int = 260_000
    t_rfc_pb: int = 160_000
    t_rrefd: int = 8_000
    # -- power -------------------------------------------------------------------------
    vdd: float = 1.2
    idd0: float = 65.0
    idd2n: float = 40.0
    idd3n: float = 55.0
    idd4r: float = 390.0
    idd4w: float = 500.0
    idd5ab: float = 250.0
    pj_per_bit: float = 0.0
    io_pj_per_bit: float = HBM2_IO_PJ_PER_BIT
    # -- controller ----------------------------------------------------------------------
    controller_delay: int = 0
    address_mapping: str = "RoRaBaCoBgPcCh"
    interleave_bytes: int = 64
    page_policy: str = "open"
    refresh: str = "all-bank"
    read_queue: int = 32
    write_queue: int = 32
    write_high: int = 24
    write_low: int = 8

    def __post_init__(self) -> None:
        if self.standard not in STANDARDS:
            raise ConfigError("standard", self.standard, f"one of {', '.join(STANDARDS)}")
        for f in ("channels", "pseudo_channels", "ranks", "bank_groups", "banks_per_group",
                  "rows", "columns", "burst_length"):
            v = getattr(self, f)
            if not isinstance(v, int) or not _is_pow2(v):
                raise ConfigError(f, v, "a positive power of two")
        for f in ("bus_width_bits", "data_rate", "devices_per_rank", "tck", "read_queue",
                  "write_queue"):
            v = getattr(self, f)
            if not isinstance(v, int) or v <= 0:
                raise ConfigError(f, v, "a positive integer")
        if self.bus_width_bits % (8 * self.pseudo_channels):
            raise ConfigError("bus_width_bits", self.bus_width_bits,
                              f"a multiple of 8 x pseudo_channels ({8 * self.pseudo_channels})")
        if self.columns < self.burst_length:
            raise ConfigError("columns", self.columns,
                              f"at least burst_length ({self.burst_length})")
        if (self.burst_length * self.tck) % self.data_rate:
            raise ConfigError("tck", self.tck,
                              "burst_length x tck must be divisible by data_rate")
        for f in ("t_cl", "t_cwl", "t_rcd", "t_rcd_wr", "t_rp", "t_ras", "t_rc", "t_ccd_s",
                  "t_ccd_l", "t_rrd_s", "t_rrd_l", "t_faw", "t_wr", "t_wtr_s", "t_wtr_l",
                  "t_rtp", "t_rtw", "t_rtrs", "t_refi", "t_rfc", "t_rfc_pb", "t_rrefd",
                  "controller_delay"):
            v = getattr(self, f)
            if not isinstance(v, int) or v < 0:
                raise ConfigError(f, v, "a non-negative integer number of ps")
        for f in ("t_cl", "t_rcd", "t_rp", "t_ras", "t_refi", "t_rfc"):
            if getattr(self, f) <= 0:
                raise ConfigError(f, getattr(self, f), "a positive number of ps")
        if self.t_rc < self.t_ras + self.t_rp:
            raise ConfigError("t_rc", self.t_rc,
                              f"at least t_ras + t_rp ({self.t_ras + self.t_rp} ps)")
        if self.t_ccd_l < self.t_ccd_s:
            raise ConfigError("t_ccd_l", self.t_ccd_l, f"at least t_ccd_s ({self.t_ccd_s})")
        if self.t_rrd_l < self.t_rrd_s:
            raise ConfigError("t_rrd_l", self.t_rrd_l, f"at least t_rrd_s ({self.t_rrd_s})")
        if self.t_rfc >= self.t_refi:
            raise ConfigError("t_rfc", self.t_rfc, f"less than t_refi ({self.t_refi} ps)")
        ref_slot = self.t_rtp + self.t_rp + self.t_rfc + self.t_rcd
        if self.refresh == "all-bank" and self.ranks * ref_slot >= self.t_refi:
            raise ConfigError(
                "ranks", self.ranks,
                f"at most {max(1, (self.t_refi - 1) // ref_slot)} with all-bank refresh: a "
                f"unit's ranks refresh in turn, each for tRTP + tRP + tRFC + tRCD "
                f"({ref_slot} ps), within t_refi ({self.t_refi} ps)")
        if self.refresh not in REFRESH_MODES:
            raise ConfigError("refresh", self.refresh, f"one of {', '.join(REFRESH_MODES)}")
        if self.refresh == "per-bank":
            if self.t_rfc_pb <= 0:
                raise ConfigError("refresh", self.refresh,
                                  "per-bank refresh needs t_rfc_pb > 0 (the standard's tRFCpb)")
            if self.t_rfc_pb * self.banks >= self.t_refi:
                raise ConfigError("t_rfc_pb", self.t_rfc_pb,
                                  f"less than t_refi / banks ({self.t_refi // self.banks} ps)")
        if self.page_policy not in PAGE_POLICIES:
            raise ConfigError("page_policy", self.page_policy,
                              f"one of {', '.join(PAGE_POLICIES)}")
        for f in ("vdd", "idd0", "idd2n", "idd3n", "idd4r", "idd4w", "idd5ab",
                  "pj_per_bit", "io_pj_per_bit"):
            v = getattr(self, f)
            if not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                raise ConfigError(f, v, "a finite non-negative number")
        if self.pj_per_bit == 0:
            if self.vdd <= 0:
                raise ConfigError("vdd", self.vdd, "positive (or set pj_per_bit)")
            if not (self.idd4r >= self.idd3n and self.idd4w >= self.idd3n
                    and self.idd5ab >= self.idd3n and self.idd3n >= self.idd2n):
                raise ConfigError("idd3n", self.idd3n,
                                  "IDD2N <= IDD3N <= IDD4R, IDD4W, IDD5AB (or set pj_per_bit)")
            act = self.idd0 * self.t_rc - (self.idd3n * self.t_ras + self.idd2n * self.t_rp)
            if act < 0:
                raise ConfigError("idd0", self.idd0,
                                  "IDD0 x tRC >= IDD3N x tRAS + IDD2N x tRP (or set pj_per_bit)")
        m = self.address_mapping
        parts = [m[i:i + 2] for i in range(0, len(m), 2)]
        if len(m) % 2 or sorted(parts) != sorted(MAPPING_FIELDS):
            raise ConfigError("address_mapping", m,
                              "each of Ro, Ra, Bg, Ba, Co, Pc, Ch exactly once, most "
                              "significant first (e.g. RoRaBaCoBgPcCh)")
        ib = self.interleave_bytes
        if not _is_pow2(ib) or ib < self.burst_bytes or ib > self.row_bytes:
            raise ConfigError("interleave_bytes", ib,
                              f"a power of two from burst size ({self.burst_bytes} B) to the "
                              f"row size ({self.row_bytes} B)")
        if not 0 <= self.write_low < self.write_high <= self.write_queue:
            raise ConfigError("write_high", self.write_high,
                              f"0 <= write_low < write_high <= write_queue "
                              f"({self.write_low}, {self.write_queue})")

    # -- derived -----------------------------------------------------------------------
    @property
    def units(self) -> int:
        """Independent scheduling units: channels x pseudo-channels."""
        return self.channels * self.pseudo_channels

    @property
    def unit_width_bits(self) -> int:
        return self.bus_width_bits // self.pseudo_channels

    @property
    def burst_bytes(self) -> int:
        """Bytes one column access (RD/WR) moves on a unit."""
        return self.unit_width_bits // 8 * self.burst_length

    @property
    def t_burst(self) -> int:
        """Data-bus time of one burst, ps (BL / data_rate clock cycles)."""
        return self.burst_length * self.tck // self.data_rate

    @property
    def banks(self) -> int:
        """Banks per rank."""
        return self.bank_groups * self.banks_per_group

    @property
    def row_bytes(self) -> int:
        """Bytes of one row (page) of one unit."""
        return self.columns * self.unit_width_bits // 8

    @property
    def bursts_per_row(self) -> int:
        return self.columns // self.burst_length

    @property
    def capacity(self) -> int:
        """Bytes of the whole tier."""
        return self.units * self.ranks * self.banks * self.rows * self.row_bytes

    def peak_bandwidth(self) -> float:
        """Theoretical peak, bytes/s: every unit's bus busy with bursts."""
        return self.units * self.burst_bytes * S / self.t_burst


def _ns(tck: int, ns: float) -> int:
    """A time given in ns, rounded up to whole cycles of ``tck`` (JEDEC rounding), in ps."""
    return -(-round(ns * 1000) // tck) * tck


HBM2 = DramConfig()

_E = 625  # HBM2E tCK, ps
HBM2E = replace(
    HBM2, name="hbm2e", standard="hbm2e", bank_groups=4, banks_per_group=8, rows=65536,
    tck=_E, t_cl=_ns(_E, 14), t_cwl=_ns(_E, 4), t_rcd=_ns(_E, 14), t_rcd_wr=_ns(_E, 14),
    t_rp=_ns(_E, 14), t_ras=_ns(_E, 34), t_rc=_ns(_E, 34) + _ns(_E, 14),
    t_ccd_s=2 * _E, t_ccd_l=4 * _E, t_rrd_s=_ns(_E, 4), t_rrd_l=_ns(_E, 6),
    t_faw=_ns(_E, 30), t_wr=_ns(_E, 16), t_wtr_s=_ns(_E, 6), t_wtr_l=_ns(_E, 8),
    t_rtp=_ns(_E, 6), t_rtw=2 * _E, t_rtrs=_E, t_refi=_ns(_E, 3900), t_rfc=_ns(_E, 350),
    t_rfc_pb=0, t_rrefd=0,
    pj_per_bit=3.9, io_pj_per_bit=0.0,
)

_H = 625  # HBM3-6400 tCK, ps
HBM3 = DramConfig(
    name="hbm3", standard="hbm3", channels=16, pseudo_channels=2, ranks=1, bank_groups=4,
    banks_per_group=4, rows=32768, columns=256, bus_width_bits=64, burst_length=8,
    data_rate=4, devices_per_rank=1, dual_command_bus=True, tck=_H,
    t_cl=20 * _H, t_cwl=8 * _H, t_rcd=31 * _H, t_rcd_wr=15 * _H, t_rp=26 * _H,
    t_ras=45 * _H, t_rc=72 * _H, t_ccd_s=2 * _H, t_ccd_l=4 * _H, t_rrd_s=4 * _H,
    t_rrd_l=5 * _H, t_faw=24 * _H, t_wr=24 * _H, t_wtr_s=8 * _H, t_wtr_l=12 * _H,
    t_rtp=6 * _H, t_rtw=2 * _H, t_rtrs=_H, t_refi=6240 * _H, t_rfc=_ns(_H, 350),
    t_rfc_pb=_ns(_H, 200), t_rrefd=_ns(_H, 8),
    pj_per_bit=4.0, io_pj_per_bit=0.0, interleave_bytes=64,
)

_D4 = 625  # DDR4-3200 tCK, ps
DDR4_3200 = DramConfig(
    name="ddr4-3200", standard="ddr4", channels=1, pseudo_channels=1, ranks=2,
    bank_groups=4, banks_per_group=4, rows=65536, columns=1024, bus_width_bits=64,
    burst_length=8, data_rate=2, devices_per_rank=8, dual_command_bus=False, tck=_D4,
    t_cl=22 * _D4, t_cwl=16 * _D4, t_rcd=22 * _D4, t_rcd_wr=22 * _D4, t_rp=22 * _D4,
    t_ras=52 * _D4, t_rc=74 * _D4, t_ccd_s=4 * _D4, t_ccd_l=8 * _D4, t_rrd_s=4 * _D4,
    t_rrd_l=8 * _D4, t_faw=34 * _D4, t_wr=24 * _D4, t_wtr_s=4 * _D4, t_wtr_l=12 * _D4,
    t_rtp=12 * _D4, t_rtw=2 * _D4, t_rtrs=_D4, t_refi=12480 * _D4, t_rfc=560 * _D4,
    t_rfc_pb=0, t_rrefd=0,
    vdd=1.2, idd0=57.0, idd2n=37.0, idd3n=52.0, idd4r=168.0, idd4w=150.0, idd5ab=250.0,
    pj_per_bit=0.0, io_pj_per_bit=0.0, interleave_bytes=64,
)

_D5 = 416  # DDR5-4800 tCK, ps (416.7 rounded down)
DDR5_4800 = DramConfig(
    name="ddr5-4800", standard="ddr5", channels=2, pseudo_channels=1, ranks=1,
    bank_groups=8, banks_per_group=4, rows=65536, columns=1024, bus_width_bits=32,
    burst_length=16, data_rate=2, devices_per_rank=4, dual_command_bus=False, tck=_D5,
    t_cl=40 * _D5, t_cwl=38 * _D5, t_rcd=40 * _D5, t_rcd_wr=40 * _D5, t_rp=40 * _D5,
    t_ras=77 * _D5, t_rc=117 * _D5, t_ccd_s=8 * _D5, t_ccd_l=12 * _D5, t_rrd_s=8 * _D5,
    t_rrd_l=12 * _D5, t_faw=32 * _D5, t_wr=72 * _D5, t_wtr_s=6 * _D5, t_wtr_l=24 * _D5,
    t_rtp=18 * _D5, t_rtw=2 * _D5, t_rtrs=_D5, t_refi=9360 * _D5, t_rfc=709 * _D5,
    t_rfc_pb=0, t_rrefd=0,
    pj_per_bit=6.0, io_pj_per_bit=0.0, interleave_bytes=64,
)

_L5 = 1250  # LPDDR5-6400 CK period, ps
LPDDR5_6400 = DramConfig(
    name="lpddr5-6400", standard="lpddr5", channels=4, pseudo_channels=1, ranks=1,
    bank_groups=4, banks_per_group=4, rows=65536, columns=1024, bus_width_bits=16,
    burst_length=16, data_rate=8, devices_per_rank=1, dual_command_bus=False, tck=_L5,
    t_cl=20 * _L5, t_cwl=11 * _L5, t_rcd=15 * _L5, t_rcd_wr=15 * _L5, t_rp=15 * _L5,
    t_ras=34 * _L5, t_rc=49 * _L5, t_ccd_s=2 * _L5, t_ccd_l=4 * _L5, t_rrd_s=4 * _L5,
    t_rrd_l=4 * _L5, t_faw=16 * _L5, t_wr=28 * _L5, t_wtr_s=5 * _L5, t_wtr_l=10 * _L5,
    t_rtp=6 * _L5, t_rtw=2 * _L5, t_rtrs=_L5, t_refi=3125 * _L5, t_rfc=224 * _L5,
    t_rfc_pb=112 * _L5, t_rrefd=6 * _L5,
    pj_per_bit=5.0, io_pj_per_bit=0.0, interleave_bytes=32,
)

PRESETS: dict[str, DramConfig] = {
    "hbm2": HBM2,
    "hbm2e": HBM2E,
    "hbm3": HBM3,
    "ddr4-3200": DDR4_3200,
    "ddr5-4800": DDR5_4800,
    "lpddr5-6400": LPDDR5_6400,
}


def preset(name: str) -> DramConfig:
    """The preset called ``name``; a ConfigError lists the valid names otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError("preset", name, f"one of {', '.join(PRESETS)}") from None

