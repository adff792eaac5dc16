"""Units of the model, as SystemC's ``sc_time`` with a 1 ps resolution.

Every time in tmhw is an integer number of picoseconds, every size an integer number of
bytes, every energy a float in picojoules (pJ) and every power a float in milliwatts
(mW). Multiply by a constant here to enter a value, divide to read one out::

    t_r = 40 * US            # 40 microseconds, in ps
    page = 16 * KiB          # bytes
    seconds = t / S

1 mW over 1 ps is 1e-3 pJ: ``energy_pj = power_mw * time_ps * MW_PS_TO_PJ``.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

PS: int = 1
NS: int = 1_000
US: int = 1_000_000
MS: int = 1_000_000_000
S: int = 1_000_000_000_000

B: int = 1
KiB: int = 1 << 10
MiB: int = 1 << 20
GiB: int = 1 << 30
TiB: int = 1 << 40
KB: int = 1_000
MB: int = 1_000_000
GB: int = 1_000_000_000

pJ: float = 1.0
nJ: float = 1e3
uJ: float = 1e6
mJ: float = 1e9
J: float = 1e12

mW: float = 1.0
W: float = 1e3

#: 1 mW sustained for 1 ps is 1e-15 J = 1e-3 pJ.
MW_PS_TO_PJ: float = 1e-3


def energy_pj(power_mw: float, time_ps: int | float) -> float:
    """Energy in pJ of ``power_mw`` sustained for ``time_ps``."""
    return power_mw * time_ps * MW_PS_TO_PJ


def ps_from_ns(ns: float) -> int:
    """Nanoseconds (float) to integer picoseconds, rounded to nearest."""
    return int(round(ns * NS))


def cycles_to_ps(cycles: int | float, freq_mhz: float) -> int:
    """Clock cycles at ``freq_mhz`` to integer ps, rounded up (never optimistic)."""
    if isinstance(cycles, int) and float(freq_mhz).is_integer() and freq_mhz > 0:
        # Exact integer ceiling: in floats, cycles * 1e6 past 2**53 rounds, and an
        # exact whole number of ps would come out one ps long.
        return -(-cycles * 1_000_000 // int(freq_mhz))
    return int(math.ceil(cycles * 1e6 / freq_mhz - 1e-9))


def transfer_ps(nbytes: int, bandwidth_bytes_per_s: float) -> int:
    """Time in ps to move ``nbytes`` at ``bandwidth_bytes_per_s``, rounded up."""
    if nbytes <= 0:
        return 0
    if isinstance(nbytes, int) and float(bandwidth_bytes_per_s).is_integer() \
            and bandwidth_bytes_per_s > 0:
        # Exact integer ceiling (bandwidths are whole bytes/s in practice); floats lose
        # the last ps once nbytes * S passes 2**53.
        return -(-nbytes * S // int(bandwidth_bytes_per_s))
    return int(math.ceil(nbytes * S / bandwidth_bytes_per_s - 1e-9))


def gbps_to_bytes_per_s(gb_per_s: float) -> float:
    """Decimal GB/s (as vendors quote bandwidth) to bytes per second."""
    return gb_per_s * 1e9


def fmt_time(ps: int | float) -> str:
    """Human-readable time: picks ns, us, ms or s."""
    a = abs(ps)
    if a >= S:
        return f"{ps / S:.3f} s"
    if a >= MS:
        return f"{ps / MS:.3f} ms"
    if a >= US:
        return f"{ps / US:.3f} us"
    return f"{ps / NS:.3f} ns"


def fmt_bytes(n: int | float) -> str:
    """Human-readable binary size."""
    a = abs(n)
    for unit, div in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if a >= div:
            return f"{n / div:.2f} {unit}"
    return f"{int(n)} B"


def parse_size(text: str) -> int:
    """Parse '16KiB', '4 MiB', '2GB', '4096' into bytes; raise ValueError otherwise."""
    t = text.strip().replace(" ", "")
    units = {"TIB": TiB, "GIB": GiB, "MIB": MiB, "KIB": KiB, "TB": 10**12, "GB": GB,
             "MB": MB, "KB": KB, "K": KiB, "M": MiB, "G": GiB, "B": 1}
    up = t.upper()
    scale = 1
    for suffix in sorted(units, key=len, reverse=True):
        if up.endswith(suffix):
            up, scale = up[: -len(suffix)], units[suffix]
            break
    try:
        # Decimal, not float: "3.3MB" is 3,300,000 bytes, which a float misses by 5e-10.
        value = Decimal(up) * scale
    except InvalidOperation:
        raise ValueError(f"size {text!r}: a number of bytes with an optional unit "
                         "(B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)") from None
    if not value.is_finite() or value < 0 or value != value.to_integral_value():
        raise ValueError(f"size {text!r} is not a whole number of bytes")
    return int(value)
