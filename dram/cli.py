"""``tmhw dram ...``: the DRAM package's commands.

``tmhw dram bench --preset hbm3 --pattern stream|random|mix --size 64 --count N
[--model detailed|fast] [--write] [--config FILE] [--set dram.FIELD=VALUE ...] [--json]``
runs ``dram.bench.run_bench`` and prints bandwidth, latency, row-buffer hit rate, refresh
share and energy per bit. ``--size`` takes a unit as the flash bench does (``4KiB`` is
4096 bytes, ``4KB`` 4000). The device is the preset, then the ``[dram]`` table of
``--config`` (any field of ``DramConfig``; ``preset = NAME`` there starts from another
preset), then each ``--set``, then ``--channels``.
``tmhw dram presets`` lists the presets with their peak bandwidth and capacity.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

from dram.bench import PATTERNS, run_bench
from dram.config import PRESETS, DramConfig, preset
from dram.target import MODELS
from tmhw.sim import tomlio
from tmhw.sim.errors import TmhwError
from tmhw.sim.units import parse_size

#: The figures ``bench --json`` prints, in order.
BENCH_KEYS = ("bandwidth_gb_per_s", "latency_mean_ns", "latency_p99_ns", "row_hit_rate",
              "refresh_share", "energy_pj_per_bit")


def parse_request_size(text: str) -> int:
    """``--size``: bytes with an optional unit, as the flash bench takes them (``64``,
    ``4KiB`` = 4096, ``4KB`` = 4000, ``1MiB``)."""
    try:
        size = parse_size(text)
    except ValueError:
        raise TmhwError(f"size: {text!r} is not allowed; a whole number of bytes with an "
                        "optional unit (B, KiB, MiB, GiB, KB, MB, GB), e.g. 64 or 4KiB"
                        ) from None
    if size <= 0:
        raise TmhwError(f"size: {text!r} is not allowed; a positive number of bytes")
    return size


def _bench(args: argparse.Namespace) -> int:
    cfg = tomlio.section_config(DramConfig, preset(args.preset), "dram", args.config,
                                args.set, PRESETS)
    if args.channels is not None:
        if args.channels <= 0 or args.channels & (args.channels - 1):
            raise TmhwError(f"channels: {args.channels} is not allowed; a positive power "
                            "of two")
        cfg = replace(cfg, channels=args.channels)
    size = parse_request_size(args.size)
    res = run_bench(cfg, args.pattern, size, args.count, args.model, args.write,
                    progress=True)
    out: dict[str, Any] = {k: res[k] for k in BENCH_KEYS}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{cfg.name} {args.model} {args.pattern} {args.count} x {size} B "
              f"{'writes' if args.write else 'reads' if args.pattern != 'mix' else '2:1'}")
        print(f"  bandwidth      {res['bandwidth_gb_per_s']:.2f} GB/s "
              f"({res['bandwidth_gb_per_s'] / res['peak_bandwidth_gb_per_s']:.1%} of "
              f"{res['peak_bandwidth_gb_per_s']:.1f} peak)")
        print(f"  latency        mean {res['latency_mean_ns']:.1f} ns, "
              f"p99 {res['latency_p99_ns']:.1f} ns")
        print(f"  row hit rate   {res['row_hit_rate']:.3f}")
        print(f"  refresh share  {res['refresh_share']:.4f}")
        print(f"  energy         {res['energy_pj_per_bit']:.3f} pJ/bit")
    return 0


def _presets(args: argparse.Namespace) -> int:
    rows: dict[str, dict[str, Any]] = {
        name: {"standard": c.standard, "peak_bandwidth_gb_per_s": c.peak_bandwidth() / 1e9,
               "capacity_bytes": c.capacity, "units": c.units, "burst_bytes": c.burst_bytes}
        for name, c in PRESETS.items()}
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for name, r in rows.items():
            print(f"{name:12s} {r['standard']:7s} {r['peak_bandwidth_gb_per_s']:8.1f} GB/s "
                  f"{r['capacity_bytes'] / 2**30:6.1f} GiB  {r['units']} units")
    return 0


def register(sub: Any) -> None:
    """Add ``dram`` and its sub-commands to an argparse sub-parsers object."""
    p = sub.add_parser("dram", help="DRAM/HBM micro-benchmarks and presets")
    dsub = p.add_subparsers(dest="dram_command", required=True)
    b = dsub.add_parser("bench", help="stream, random or mixed traffic through one preset")
    b.add_argument("--preset", default="hbm3", choices=sorted(PRESETS))
    b.add_argument("--pattern", default="stream", choices=PATTERNS)
    b.add_argument("--size", default="64", help="bytes per request, with an optional unit: "
                   "64, 4KiB (4096), 4KB (4000), 1MiB")
    b.add_argument("--count", type=int, default=10000, help="requests")
    b.add_argument("--model", default="detailed", choices=MODELS)
    b.add_argument("--write", action="store_true", help="writes instead of reads "
                   "(stream, random)")
    b.add_argument("--channels", type=int, default=None,
                   help="override the preset's channel count (a power of two)")
    tomlio.add_section_options(b, "dram", "dram.ranks=1 or dram.refresh=off")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_bench)
    ls = dsub.add_parser("presets", help="list the presets")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_presets)
