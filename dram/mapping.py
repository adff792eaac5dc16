"""Physical address mapping: a byte address to (unit, rank, bank group, bank, row, column).

The mapping string names the fields from the most to the least significant bit, as
DRAMsim3's ``address_mapping`` (``rorabgbachco``) and Ramulator's ``RoBaRaCoCh`` do.
Below the named fields sit the byte offset inside a burst and the low column bits that
keep ``interleave_bytes`` together in one row, so a 64 B access on a 32 B-burst device
stays in one pseudo-channel. The column field ``Co`` holds the remaining column bits.

The decode is written once, as compiled kernels over a map record (``MAP``: each
field's shift and mask in the burst index, and the sizes that flatten unit and bank):
``unit_of``, ``bank_of``, ``flat_bank_of`` and ``row_of``. The detailed controller
decodes its bursts with them (``AddressMap.decode_bursts``), and the fast model's
kernels call them on its timing record, which holds the ``MAP`` fields.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dram.config import DramConfig
from tmhw.sim.jit import njit

#: Bytes of one random access (a cache line, an NPU gather element): both models split
#: random traffic into accesses of this size, each in one row of one unit or, when the
#: interleave is smaller, over consecutive units.
RANDOM_ACCESS_BYTES = 64

#: The fields the decode reads: (shift, mask) of each named field in the burst index,
#: the low column bits under ``Co``, and the sizes that flatten a unit and a bank.
MAP_FIELDS = (
    "ch_shift", "ch_mask", "pc_shift", "pc_mask", "ra_shift", "ra_mask", "bg_shift",
    "bg_mask", "ba_shift", "ba_mask", "row_shift", "row_mask", "co_shift", "co_mask",
    "low_col_bits", "pseudo_channels", "bank_groups", "banks_per_group", "unit_banks")
MAP = np.dtype((np.record, [(name, np.int64) for name in MAP_FIELDS]))

I64 = npt.NDArray[np.int64]


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
        #: Units one random access spans (consecutive units from its address's).
        self.random_access_units = max(1, RANDOM_ACCESS_BYTES // cfg.interleave_bytes)
        #: The ``MAP`` record the decode kernels read (a one-record ``np.recarray``).
        self.record: Any = np.zeros(1, MAP).view(np.recarray)
        self.fill(self.record[0])

    def fill(self, rec: Any) -> None:
        """Write the ``MAP`` fields into ``rec`` (a record of any dtype holding them)."""
        for name, (shift, width) in self.fields.items():
            key = "row" if name == "Ro" else name.lower()
            setattr(rec, f"{key}_shift", shift)
            setattr(rec, f"{key}_mask", (1 << width) - 1)
        c = self.cfg
        rec.low_col_bits = self.low_col_bits
        rec.pseudo_channels, rec.bank_groups = c.pseudo_channels, c.bank_groups
        rec.banks_per_group, rec.unit_banks = c.banks_per_group, self.banks_per_unit

    def decode(self, address: int) -> tuple[int, int, int, int]:
        """(unit, bank in the unit, row, column-in-bursts) of the burst holding
        ``address``."""
        b = (address % self.capacity) >> self.burst_shift
        unit, bank, row, column = decode_burst(self.record, b)
        return int(unit), int(bank), int(row), int(column)

    def bank_group_below_column(self) -> bool:
        """Whether consecutive bursts of one unit rotate bank groups before columns, so a
        stream pays tCCD_S rather than tCCD_L between bursts."""
        return self.cfg.bank_groups > 1 and self.fields["Bg"][0] < self.fields["Co"][0]

    def decode_bursts(self, bursts: I64) -> tuple[I64, I64, I64]:
        """(unit, bank in the unit, row) of each burst index."""
        units, banks, rows = decode_many(self.record, bursts)
        return units, banks, rows


# Every field is masked, so a burst index past the capacity wraps without a modulo.
@njit
def unit_of(m: Any, b: int) -> int:
    """The unit (``channel * pseudo_channels + pseudo channel``) of burst index ``b``."""
    unit: int = ((b >> m.ch_shift) & m.ch_mask) * m.pseudo_channels + ((b >> m.pc_shift)
                                                                        & m.pc_mask)
    return unit


@njit
def bank_of(m: Any, b: int) -> int:
    """The bank in its unit (``(rank * bank_groups + group) * banks_per_group + bank``)
    of burst index ``b``."""
    bank: int = ((((b >> m.ra_shift) & m.ra_mask) * m.bank_groups
                  + ((b >> m.bg_shift) & m.bg_mask)) * m.banks_per_group
                 + ((b >> m.ba_shift) & m.ba_mask))
    return bank


@njit
def flat_bank_of(m: Any, b: int) -> int:
    """The bank of burst index ``b`` over all units (``unit * unit_banks + bank``)."""
    flat: int = unit_of(m, b) * m.unit_banks + bank_of(m, b)
    return flat


@njit
def row_of(m: Any, b: int) -> int:
    """The row of burst index ``b``."""
    row: int = (b >> m.row_shift) & m.row_mask
    return row


@njit
def decode_burst(rec: Any, b: int) -> tuple[int, int, int, int]:
    """(unit, bank in the unit, row, column in bursts) of burst index ``b`` (``rec``: a
    one-record ``MAP`` array)."""
    m = rec[0]
    low = m.low_col_bits
    column = (((b >> m.co_shift) & m.co_mask) << low) | (b & ((1 << low) - 1))
    return unit_of(m, b), bank_of(m, b), row_of(m, b), column


@njit
def decode_many(rec: Any, bursts: Any) -> tuple[Any, Any, Any]:
    """(unit, bank in the unit, row) arrays of the burst indices ``bursts``."""
    m = rec[0]
    n = bursts.size
    units = np.empty(n, np.int64)
    banks = np.empty(n, np.int64)
    rows = np.empty(n, np.int64)
    for i in range(n):
        b = bursts[i]
        units[i] = unit_of(m, b)
        banks[i] = bank_of(m, b)
        rows[i] = row_of(m, b)
    return units, banks, rows
