"""``tmhw flash``: the flash device on its own.

``tmhw flash bench --preset 990pro --pattern randread --size 16KiB --qd 64 --count N
[--precondition 0.9] [--age 2] [--model detailed|fast] [--mqsim-xml FILE]
[--config FILE] [--set flash.FIELD=VALUE ...] [--json]`` runs ``flash.bench.run_bench``
and prints IOPS, bandwidth, latency (mean, p50, p99), command counts, GC count, write
amplification and energy per byte. The device is the preset (or the MQSim file), then
the ``[flash]`` table of ``--config`` (any field of ``FlashConfig``; ``preset = NAME``
there starts from another preset), then each ``--set``.
``tmhw flash presets`` lists the device presets.
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
from tmhw.sim.units import US, parse_size

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
    tomlio.add_section_options(b, "flash", "flash.compat=mqsim or flash.write_buffer_bytes=0")
    b.add_argument("--json", action="store_true", help="print the figures as JSON")
    b.set_defaults(func=bench_cmd)
    ls = fsub.add_parser("presets", help="list the device presets")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=presets_cmd)


def presets_cmd(args: argparse.Namespace) -> int:
    rows: dict[str, dict[str, Any]] = {
        name: {"cell_type": c.cell_type, "capacity_bytes": c.total_capacity,
               "channels": c.channels, "dies": c.dies, "page_size": c.page_size,
               "channel_rate_mtps": c.channel_rate_mtps, "t_r_us": c.t_r / US,
               "t_prog_us": c.t_prog / US}
        for name, c in PRESETS.items()}
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for name, r in rows.items():
            print(f"{name:14s} {r['cell_type']:4s} {r['capacity_bytes'] / 2**30:8.0f} GiB  "
                  f"{r['channels']:2d} ch x {r['dies'] // r['channels']:2d} dies  "
                  f"{r['page_size'] // 1024:3d} KiB pages  {r['channel_rate_mtps']:5d} MT/s  "
                  f"tR {r['t_r_us']:.0f} us  tPROG {r['t_prog_us']:.0f} us")
    return 0


def bench_cmd(args: argparse.Namespace) -> int:
    if args.seed < 0:
        raise TmhwError(f"--seed: {args.seed} is not allowed; an integer >= 0")
    try:
        size = parse_size(args.size)
    except ValueError as e:
        raise TmhwError(f"size: {e}") from None
    cfg: FlashConfig = (load_mqsim_xml(args.mqsim_xml) if args.mqsim_xml
                        else PRESETS[args.preset])
    cfg = tomlio.section_config(FlashConfig, cfg, "flash", args.config, args.set, PRESETS)
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
