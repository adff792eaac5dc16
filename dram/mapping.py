"""Physical address mapping: a byte address to (unit, rank, bank group, bank, row, column).

The mapping string names the fields from the most to the least significant bit, as
DRAMsim3's ``address_mapping`` (``rorabgbachco``) and Ramulator's ``RoBaRaCoCh`` do.
Below the named fields sit the byte offset inside a burst and the low column bits that
keep ``interleave_bytes`` together in one row, so a 64 B access on a 32 B-burst device
stays in one pseudo-channel. The column field ``Co`` holds the remaining column bits.
"""

from __future__ import annotations

import numpy as np

from dram.config import DramConfig

#: Bytes of one random access (a cache line, an NPU gather element): both models split
#: random traffic into accesses of this size, each in one row of one unit or, when the
#: interleave is smaller, over consecutive units.
RANDOM_ACCESS_BYTES = 64


def _log2(n: int) -> int:
    return n.bit_length() - 1


class AddressMap:
    """Decodes byte addresses for one ``DramConfig``. Addresses wrap at the capacity."""

    def __init__(self, cfg: DramConfig) -> None:
        self.cfg = cfg
        self.burst_shift = _log2(cfg.burst_bytes)
        low_col = _log2(cfg.interleave_bytes // cfg.burst_bytes)
        self.low_col_bits = low_col
        widths = {
            "Ro": _log2(cfg.rows), "Ra": _log2(cfg.ranks), "Bg": _log2(cfg.bank_groups),
            "Ba": _log2(cfg.banks_per_group), "Co": _log2(cfg.bursts_per_row) - low_col,
            "Pc": _log2(cfg.pseudo_channels), "Ch": _log2(cfg.channels),
        }
        # (shift, width) of each field in the burst index (address >> burst_shift).
        self.fields: dict[str, tuple[int, int]] = {}
        shift = low_col
        m = cfg.address_mapping
        for name in reversed([m[i:i + 2] for i in range(0, len(m), 2)]):
            self.fields[name] = (shift, widths[name])
            shift += widths[name]
        self.total_bits = shift
        self.capacity = cfg.capacity
        self.banks_per_unit = cfg.ranks * cfg.banks
        unit_fields = (self.fields["Ch"], self.fields["Pc"])
        #: Bursts after which the unit sequence of a contiguous range repeats.
        self.unit_period_bursts = 1 << max(s + w for s, w in unit_fields)
        #: Consecutive bursts that always share a unit (below the lowest unit bit).
        self.unit_block_bursts = (1 << min(s for s, w in unit_fields if w > 0)
                                  if cfg.units > 1 else 1 << self.total_bits)
        s, w = self.fields["Ro"]
        self.row_shift = s
        self.row_mask = (1 << w) - 1
        #: Units one random access spans (consecutive units from its address's).
        self.random_access_units = max(1, RANDOM_ACCESS_BYTES // cfg.interleave_bytes)

    def _field(self, burst: int, name: str) -> int:
        s, w = self.fields[name]
        return (burst >> s) & ((1 << w) - 1)

    def decode(self, address: int) -> tuple[int, int, int, int]:
        """(unit, flat bank, row, column-in-bursts) of the burst holding ``address``."""
        b = (address % self.capacity) >> self.burst_shift
        f = self._field
        unit = f(b, "Ch") * self.cfg.pseudo_channels + f(b, "Pc")
        bank = ((f(b, "Ra") * self.cfg.bank_groups + f(b, "Bg")) * self.cfg.banks_per_group
                + f(b, "Ba"))
        column = (f(b, "Co") << self.low_col_bits) | (b & ((1 << self.low_col_bits) - 1))
        return unit, bank, f(b, "Ro"), column

    def bank_group_below_column(self) -> bool:
        """Whether consecutive bursts of one unit rotate bank groups before columns, so a
        stream pays tCCD_S rather than tCCD_L between bursts."""
        return self.cfg.bank_groups > 1 and self.fields["Bg"][0] < self.fields["Co"][0]

    def decode_bursts(self, bursts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit, flat bank, row) of each burst index (vectorised)."""
        b = bursts % (1 << self.total_bits)

        def f(name: str) -> np.ndarray:
            s, w = self.fields[name]
            return np.asarray((b >> s) & ((1 << w) - 1), dtype=np.int64)

        c = self.cfg
        unit = f("Ch") * c.pseudo_channels + f("Pc")
        bank = (f("Ra") * c.bank_groups + f("Bg")) * c.banks_per_group + f("Ba")
        return unit, bank, f("Ro")
