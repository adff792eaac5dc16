"""PCI Express as a host link carries it: line coding, packet framing and the NVMe
commands around the data. Pure arithmetic, used by the SSD's host interface
(``flash.host``) and the NPU's port (``tmhw.config.SystemConfig.link_bytes_per_s``).

A lane of generation ``g`` signals at ``GT_PER_S[g]`` and codes 8 bits in 10 (Gen 1-2)
or 128 in 130 (Gen 3-5; PCIe Base Specification 3.0 section 4.2.2; Gen 6's FLIT mode,
242 data bytes in 256, section 4.2.3 of Base Specification 6.0). Of what is left:

- **Ordered sets.** Gen 3+ sends a SKP ordered set of 16 symbols per lane at least every
  375 blocks of 16 symbols (Base Specification 4.0 section 4.2.7.3), 0.27% of the
  symbols; Gen 1-2 sends a 4-symbol SKP every 1180-1538 symbol times, the same order.
  ``SKP_FRACTION`` takes 16/(375 x 16 + 16).
- **TLP framing.** Data crosses in transaction-layer packets of at most the
  maximum payload size (``max_payload_bytes``, 128-4096; 256 is what most root
  complexes negotiate). Each adds its framing (Gen 3+: a 4-byte STP token carrying
  the sequence number; Gen 1-2: STP and END symbols and a 2-byte sequence number, also 4
  bytes), its header and a 4-byte LCRC (sections 2.2, 3.6.2 and 4.2.2.3). A read's
  data leaves the device as Memory Writes with a 16-byte header (4 DW: 64-bit host
  addresses), ``READ_TLP_BYTES`` = 24; a write's data reaches the device as Completions
  with a 12-byte header (3 DW), ``WRITE_TLP_BYTES`` = 20.
- **DLLPs.** Acks and flow-control updates are 8-byte data-link packets (6 bytes and
  2 of framing). They travel against the TLPs they acknowledge and are coalesced; the
  specification's Ack latency limit at a 256-byte payload on a x4 link is about three
  TLPs' time (Base Specification 4.0, table 3-7; R. Neugebauer et al., "Understanding
  PCIe performance for end host networking", SIGCOMM 2018, use one Ack and one update per
  limit). ``DLLP_BYTES_PER_TLP`` = 2 counts one of each per 8 TLPs against the data's
  own direction (an estimate: training moves data both ways at once, so each direction
  carries about the other's acknowledgements).
- **NVMe.** Each command costs its own packets (NVMe 1.4 base specification, sections
  4.2-4.6 and 7.2): the device fetches the 64-byte submission entry (a read request up,
  a completion with data down), posts a 16-byte completion entry and a 4-byte MSI-X
  message (Memory Writes up), and the host rings two 4-byte doorbells (Memory Writes
  down). They are counted on the direction of the command's data: a read's
  ``NVME_READ_BYTES`` = 24 + 40 + 28 = 92 bytes up, a write's ``NVME_WRITE_BYTES`` =
  84 + 2 x 28 = 140 bytes down (the other direction's share, a few tens of bytes per
  command, is left out).

So PCIe 4.0 x4 at a 256-byte payload moves a sequential read's data at
8 GB/s x 128/130 x (1 - 0.27%) x 256/(256 + 24 + 2) = 7.13 GB/s, against the 7.0-7.45 GB/s
that Gen 4 x4 drives specify (Kingston KC3000 7.0, WD SN850X 7.3, Samsung 990 PRO 7.45:
their data sheets). The MQSim-comparison preset keeps MQSim's ideal link (``overheads``
off: ``PCIe_Link`` moves data at ``PCIe_Lane_Bandwidth`` x lanes, nothing else).
"""

from __future__ import annotations

from dataclasses import dataclass

#: signalling rate per lane, GT/s, by generation (PCI-SIG base specifications)
GT_PER_S: dict[int, float] = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}

#: payload sizes a device may negotiate (Device Control register, MPS field)
PAYLOAD_SIZES = (128, 256, 512, 1024, 2048, 4096)

SKP_FRACTION = 16 / (375 * 16 + 16)
READ_TLP_BYTES = 24
WRITE_TLP_BYTES = 20
DLLP_BYTES_PER_TLP = 2
NVME_READ_BYTES = 92
NVME_WRITE_BYTES = 140


def coding(gen: int) -> float:
    """Data bits per line bit of generation ``gen``."""
    if gen <= 2:
        return 8 / 10
    if gen <= 5:
        return 128 / 130
    return 242 / 256


def lane_gbps(gen: int) -> float:
    """A lane's data rate after line coding, GB/s (Gen 4: 16 x 128/130 / 8 = 1.969)."""
    return GT_PER_S[gen] * coding(gen) / 8


@dataclass(frozen=True, slots=True)
class Pcie:
    """One direction-pair of a link: ``lanes`` lanes of ``gbps`` GB/s of coded data each;
    with ``overheads``, the framing, DLLPs, ordered sets and NVMe commands above at
    ``max_payload_bytes`` per TLP."""

    lanes: int
    gbps: float
    max_payload_bytes: int = 256
    overheads: bool = True

    @property
    def line_bytes_per_s(self) -> float:
        """Bytes per second per direction that the coded lanes carry."""
        return self.lanes * self.gbps * 1e9

    def _efficiency(self, tlp_bytes: int) -> float:
        if not self.overheads:
            return 1.0
        mps = self.max_payload_bytes
        return (1 - SKP_FRACTION) * mps / (mps + tlp_bytes + DLLP_BYTES_PER_TLP)

    @property
    def read_bytes_per_s(self) -> float:
        """Payload bytes per second of a long read (device to host)."""
        return self.line_bytes_per_s * self._efficiency(READ_TLP_BYTES)

    @property
    def write_bytes_per_s(self) -> float:
        """Payload bytes per second of a long write (host to device)."""
        return self.line_bytes_per_s * self._efficiency(WRITE_TLP_BYTES)

    def read_throughput(self, nbytes: int) -> float:
        """Payload bytes per second of back-to-back reads of ``nbytes`` each, their NVMe
        packets included."""
        line = self.line_bytes_per_s * ((1 - SKP_FRACTION) if self.overheads else 1.0)
        return nbytes / (nbytes / self.read_bytes_per_s + self.read_command_bytes / line)

    def write_throughput(self, nbytes: int) -> float:
        """Payload bytes per second of back-to-back writes of ``nbytes`` each."""
        line = self.line_bytes_per_s * ((1 - SKP_FRACTION) if self.overheads else 1.0)
        return nbytes / (nbytes / self.write_bytes_per_s + self.write_command_bytes / line)

    @property
    def read_command_bytes(self) -> int:
        """Line bytes of one read command's NVMe packets, on the read direction."""
        return NVME_READ_BYTES if self.overheads else 0

    @property
    def write_command_bytes(self) -> int:
        """Line bytes of one write command's NVMe packets, on the write direction."""
        return NVME_WRITE_BYTES if self.overheads else 0
