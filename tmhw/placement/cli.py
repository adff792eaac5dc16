"""``tmhw placement show``: build a policy's placement table for a workload and print
its rows (op, tensor, page range, action, tier, issue time, deadline) and its size.
``tmhw bound``: the traffic and time lower bounds of a workload at an HBM capacity
(``tmhw.placement.bounds``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    from tmhw.cli import add_config_args, path_arg

    p = sub.add_parser("placement", help="placement tables")
    psub = p.add_subparsers(dest="placement_cmd", metavar="SUBCOMMAND",
                            parser_class=type(p))
    psub.required = True
    s = psub.add_parser("show", help="print a policy's placement table")
    add_config_args(s)
    s.add_argument("--csv", type=path_arg, metavar="FILE", help="write all rows as CSV")
    s.add_argument("--rows", type=int, default=40, help="rows to print (default 40)")
    s.set_defaults(func=cmd_show)
    b = sub.add_parser("bound", help="traffic and time lower bounds at an HBM ratio")
    add_config_args(b)
    b.add_argument("--json", action="store_true", help="print the bounds as JSON")
    b.set_defaults(func=cmd_bound)


def cmd_bound(args: argparse.Namespace) -> int:
    """Print the fewest inter-tier bytes of a steady-state iteration at the capacity, and
    the shortest iteration: compute, the link and the flash device's own batch time."""
    import json

    from tmhw.cli import config_from_args
    from tmhw.sim.units import fmt_bytes, fmt_time
    from tmhw.system import System

    cfg = config_from_args(args)
    system = System(cfg)
    b = system.bounds()
    if args.json:
        sys.stdout.write(json.dumps(b, indent=1) + "\n")
        return 0
    wl = system.workload
    rows = [
        ("workload", f"{wl.name} batch {wl.batch}" + (f" seq {wl.seq}" if wl.seq else "")),
        ("HBM", f"{fmt_bytes(system.capacity_pages * wl.page_size)} "
                f"({cfg.policy.hbm_ratio:g} of {fmt_bytes(system.footprint_bytes)})"),
        ("traffic bound", f"{fmt_bytes(b['traffic_bytes'])} per iteration "
                          f"({fmt_bytes(b['read_bytes'])} in, "
                          f"{fmt_bytes(b['write_bytes'])} out)"),
        ("time bound", fmt_time(b["iteration_time_ps"])),
        ("  compute (stall-free)", fmt_time(b["npu_ops_ps"])),
        ("  NPU with all in HBM", fmt_time(b["npu_ps"])),
        ("  link", fmt_time(b["link_ps"])),
        ("  flash (programs, links)", fmt_time(b["flash_ps"])),
        ("  NAND dies (reads, programs)", f"{fmt_time(b['die_ps'])} "
                                          f"({fmt_bytes(b['nand_read_bytes'])} read, "
                                          f"{fmt_bytes(b['program_bytes'])} programmed)"),
        ("  phases (out, then in)", fmt_time(b["phase_ps"])),
    ]
    width = max(len(k) for k, _ in rows)
    sys.stdout.write("\n".join(f"{k:<{width}}  {v}" for k, v in rows) + "\n")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from tmhw.cli import check_out_file, config_from_args
    from tmhw.sim.errors import TmhwError
    from tmhw.sim.units import fmt_bytes, fmt_time
    from tmhw.system import System

    if args.rows < 0:
        raise TmhwError(f"--rows: {args.rows} is not allowed; an integer >= 0")
    cfg = config_from_args(args)
    if args.csv:
        check_out_file(args.csv, "--csv")
    system = System(cfg)
    table, wl = system.table, system.workload
    names = [t.name for t in wl.tensors]
    text = table.to_csv(names, wl.page_size)
    if args.csv:
        try:
            Path(args.csv).write_text(text)
        except OSError as e:
            raise TmhwError(f"--csv: cannot write {args.csv}: {e.strerror}") from None
    lines = text.splitlines()
    header, rows = lines[0].split(","), [r.split(",") for r in lines[1:]]
    shown = rows[: args.rows]
    widths = [max(len(h), *(len(r[i]) for r in shown)) if shown else len(h)
              for i, h in enumerate(header)]
    out = sys.stdout
    out.write("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)) + "\n")
    for r in shown:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "\n")
    if len(rows) > len(shown):
        out.write(f"... {len(rows) - len(shown)} more rows\n")
    by = table.bytes_by_action(wl.page_size)
    out.write(f"policy {table.policy}: {table.rows} rows, {fmt_bytes(table.size_bytes())} "
              f"as stored; HBM {fmt_bytes(system.capacity_pages * wl.page_size)} of "
              f"{fmt_bytes(system.footprint_bytes)} footprint; prefetch "
              f"{fmt_bytes(by['prefetch'])}, write-back up to {fmt_bytes(by['writeback'])}, "
              f"drop {fmt_bytes(by['drop'])}; profiled iteration "
              f"{fmt_time(int(system.profile_end[-1]))}\n")
    return 0
