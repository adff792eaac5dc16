"""Physical address mapping: a byte address to (unit, rank, bank group, bank, row, column).

The mapping string names the fields from the most to the least significant bit, as
DRAMsim3's ``address_mapping`` (``rorabgbachco``) and Ramulator's ``RoBaRaCoCh`` do.
Below the named fields sit the byte offset inside a burst and the low column bits that
keep ``interleave_bytes`` together in one row, so a 64 B access on a 32 B-burst device
stays in one pseudo-channel. The column field ``Co`` holds the remaining column bits.

The decode is written once, over the map's fields (``MAP_FIELDS``: each field's shift
and mask in the burst index, and the sizes that flatten unit and bank): the fast
model's kernels call it compiled (``unit_of``, ``bank_of``, ``flat_bank_of``,
``row_of``) on their timing record, which holds those fields; ``AddressMap.decode`` and
``decode_bursts`` (the detailed model's, which splits a batch of transfers into bursts
at once) run the same functions as Python, over numpy arrays of burst indices.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt

from dram.config import DramConfig
from tmhw.sim.jit import njit

#: Bytes of one random access (a cache line, an NPU gather element): both models split
#: random traffic into accesses of this size, each in one row of one unit or, when the
#: interleave is smaller, over consecutive units.
RANDOM_ACCESS_BYTES = 64

#: The fields the decode reads (``AddressMap.map_fields``): (shift, mask) of each named
#: field in the burst index, the low column bits under ``Co``, and the sizes that
#: flatten a unit and a bank.
MAP_FIELDS = (
    "ch_shift", "ch_mask", "pc_shift", "pc_mask", "ra_shift", "ra_mask", "bg_shift",
    "bg_mask", "ba_shift", "ba_mask", "row_shift", "row_mask", "co_shift", "co_mask",
    "low_col_bits", "pseudo_channels", "bank_groups", "banks_per_group", "unit_banks")

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
        mapping = cfg.address_mapping
        for name in reversed([mapping[i:i + 2] for i in range(0, len(mapping), 2)]):
            self.fields[name] = (shift, widths[name])
            shift += widths[name]
        self.total_bits = shift
        self.capacity = cfg.capacity
        self.banks_per_unit = cfg.ranks * cfg.banks
        unit_fields = (self.fields["Ch"], self.fields["Pc"])
        #: Bursts after which the unit sequence of a contiguous range repeats.
        self.unit_period_bursts = 1 << max(shift + width for shift, width in unit_fields)
        #: Consecutive bursts that always share a unit (below the lowest unit bit).
        self.unit_block_bursts = (1 << min(shift for shift, width in unit_fields if width > 0)
                                  if cfg.units > 1 else 1 << self.total_bits)
        #: Units one random access spans (consecutive units from its address's).
        self.random_access_units = max(1, RANDOM_ACCESS_BYTES // cfg.interleave_bytes)
        #: The decode's fields (``MAP_FIELDS``), as plain integers.
        self.map_fields = self._map_fields()
        self._map = SimpleNamespace(**self.map_fields)

    def _map_fields(self) -> dict[str, int]:
        out = {}
        for name, (shift, width) in self.fields.items():
            key = "row" if name == "Ro" else name.lower()
            out[f"{key}_shift"], out[f"{key}_mask"] = shift, (1 << width) - 1
        cfg = self.cfg
        out.update(low_col_bits=self.low_col_bits, pseudo_channels=cfg.pseudo_channels,
                   bank_groups=cfg.bank_groups, banks_per_group=cfg.banks_per_group,
                   unit_banks=self.banks_per_unit)
        return {name: out[name] for name in MAP_FIELDS}

    def decode(self, address: int) -> tuple[int, int, int, int]:
        """(unit, bank in the unit, row, column-in-bursts) of the burst holding
        ``address``."""
        burst = (address % self.capacity) >> self.burst_shift
        map_fields = self._map
        low = self.low_col_bits
        column = ((((burst >> map_fields.co_shift) & map_fields.co_mask) << low)
                  | (burst & ((1 << low) - 1)))
        return (int(_unit(map_fields, burst)), int(_bank(map_fields, burst)),
                int(_row(map_fields, burst)), int(column))

    def bank_group_below_column(self) -> bool:
        """Whether consecutive bursts of one unit rotate bank groups before columns, so a
        stream pays tCCD_S rather than tCCD_L between bursts."""
        return self.cfg.bank_groups > 1 and self.fields["Bg"][0] < self.fields["Co"][0]

    def decode_bursts(self, bursts: I64) -> tuple[I64, I64, I64]:
        """(unit, bank in the unit, row) of each burst index."""
        map_fields = self._map
        return _unit(map_fields, bursts), _bank(map_fields, bursts), _row(map_fields, bursts)


# The decode, written once over the map's fields ``map_fields`` and a burst index ``burst``:
# with operators only, so that it runs compiled inside the fast model's kernels (``unit_of``
# ...) and over numpy arrays of indices in the detailed model.
# Every field is masked, so an index past the capacity wraps without a modulo.
def _unit(map_fields: Any, burst: Any) -> Any:
    """The unit (``channel * pseudo_channels + pseudo channel``) of burst index ``burst``."""
    return (((burst >> map_fields.ch_shift) & map_fields.ch_mask) * map_fields.pseudo_channels
            + ((burst >> map_fields.pc_shift) & map_fields.pc_mask))


def _bank(map_fields: Any, burst: Any) -> Any:
    """The bank in its unit (``(rank * bank_groups + group) * banks_per_group + bank``)
    of burst index ``burst``."""
    return ((((burst >> map_fields.ra_shift) & map_fields.ra_mask) * map_fields.bank_groups
             + ((burst >> map_fields.bg_shift) & map_fields.bg_mask)) * map_fields.banks_per_group
            + ((burst >> map_fields.ba_shift) & map_fields.ba_mask))


def _row(map_fields: Any, burst: Any) -> Any:
    """The row of burst index ``burst``."""
    return (burst >> map_fields.row_shift) & map_fields.row_mask


unit_of = njit(_unit)
bank_of = njit(_bank)
row_of = njit(_row)


@njit
def flat_bank_of(map_fields: Any, burst: int) -> int:
    """The bank of burst index ``burst`` over all units (``unit * unit_banks + bank``)."""
    flat: int = unit_of(map_fields, burst) * map_fields.unit_banks + bank_of(map_fields, burst)
    return flat
