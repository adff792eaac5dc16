"""``tmhw flash``: the flash device on its own.

``tmhw flash bench --preset 990pro --pattern randread --size 16KiB --qd 64 --count N
[--precondition 0.9] [--age 2] [--model detailed|fast] [--mqsim-xml FILE]
[--set flash.FIELD=VALUE ...] [--json]`` runs
``flash.bench.run_bench`` and prints IOPS, bandwidth, latency (mean, p50, p99), command
counts, GC count, write amplification and energy per byte.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from flash.bench import PATTERNS, run_bench
from flash.config import PRESETS, FlashConfig
from flash.mqsim import load_mqsim_xml
from flash.ssd import MODELS
from tmhw.sim import TmhwError, tomlio
from tmhw.sim.units import parse_size

JSON_KEYS = ("iops", "bandwidth_mbps", "mean_latency_us", "p50_latency_us",
             "p99_latency_us", "commands", "gc_count", "waf", "energy_pj_per_byte")


def register(sub: Any) -> None:
    """Add the ``flash`` command and its sub-commands to argparse sub-parsers."""
    p = sub.add_parser("flash", help="NAND flash SSD model: micro-benchmarks")
    fsub = p.add_subparsers(dest="flash_cmd", required=True)
    b = fsub.add_parser("bench", help="closed-loop benchmark at a fixed queue depth")
    b.add_argument("--preset", default="990pro", choices=sorted(PRESETS),
                   help="device preset (default 990pro)")
    b.add_argument("--mqsim-xml", default=None, metavar="FILE",
                   help="take the device from an MQSim ssdconfig.xml instead of a preset")
    b.add_argument("--pattern", default="randread", choices=PATTERNS)
    b.add_argument("--size", default="16KiB", help="request size, e.g. 16KiB, 2MiB")
    b.add_argument("--qd", type=int, default=64, help="requests outstanding at the device")
    b.add_argument("--count", type=int, default=10000, help="requests to run")
    b.add_argument("--precondition", type=float, default=0.0,
                   help="fraction of the logical space written before time 0")
    b.add_argument("--age", type=float, default=0.0,
                   help="random overwrites of the preconditioned pages before time 0, as a "
                        "multiple of them (reaches the random-write steady state)")
    b.add_argument("--model", default="fast", choices=MODELS)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="change a device field, e.g. flash.compat=mqsim or "
                        "flash.write_buffer_bytes=0 (repeatable)")
    b.add_argument("--json", action="store_true", help="print the figures as JSON")
    b.set_defaults(func=bench_cmd)


def with_sets(cfg: FlashConfig, items: list[str]) -> FlashConfig:
    """``cfg`` with ``flash.FIELD=VALUE`` (or ``FIELD=VALUE``) overrides applied."""
    if not items:
        return cfg
    over = []
    for item in items:
        keys, value = tomlio.parse_override(item)
        over.append((keys[1:] if keys[0] == "flash" and len(keys) > 1 else keys, value))
    return tomlio.from_dict(FlashConfig, tomlio.nest(over), "flash", base=cfg)


def bench_cmd(args: argparse.Namespace) -> int:
    try:
        size = parse_size(args.size)
    except ValueError as e:
        raise TmhwError(f"size: {e}") from None
    cfg: FlashConfig = (load_mqsim_xml(args.mqsim_xml) if args.mqsim_xml
                        else PRESETS[args.preset])
    cfg = with_sets(cfg, args.set)
    r = run_bench(cfg, pattern=args.pattern, size=size, qd=args.qd, count=args.count,
                  precondition=args.precondition, model=args.model, seed=args.seed,
                  age=args.age, progress=True)
    out = {k: r[k] for k in JSON_KEYS}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    c = out["commands"]
    print(f"flash bench: {cfg.name} {args.pattern} {args.size} qd={args.qd} "
          f"count={args.count} precondition={args.precondition} model={args.model}")
    print(f"  IOPS            {out['iops']:,.0f}")
    print(f"  bandwidth       {out['bandwidth_mbps']:,.1f} MB/s")
    print(f"  latency         mean {out['mean_latency_us']:.1f} us, p50 "
          f"{out['p50_latency_us']:.1f} us, p99 {out['p99_latency_us']:.1f} us")
    print(f"  commands        read {c['read']:,}, program {c['program']:,}, "
          f"erase {c['erase']:,}")
    print(f"  GC              {out['gc_count']:,} blocks reclaimed, write amplification "
          f"{out['waf']:.3f}")
    print(f"  energy          {out['energy_pj_per_byte']:.1f} pJ/byte")
    return 0
