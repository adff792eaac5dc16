"""The golden set of whole-system results: what a refactoring must leave bit-identical.

Every policy on the ``quick`` preset at two HBM ratios, on one SSD, on two striped SSDs
(``flash.devices=2``) and with MQSim's chip lock and convoy (``flash.compat="mqsim"``),
two iterations with a forced warm-up of one (``WARMUP``: the engine's figures, not the
steady state a default run finds, which takes up to twelve iterations a cell):
each cell's whole report (the config and the ``host`` wall-clock section left out) as
flat ``path -> value`` leaves, or the one-line reason the policy does not fit. Beside
them, the simulated time of ``tmhw bench``'s cases at test size (``--small``), which
take the flash and HBM models' fast and detailed paths outside a full system.

``python tests/golden/golden_results.py --write`` regenerates ``data/golden_results.json.gz``
after a deliberate change of the model (say why in the commit); ``--check`` compares and
prints the first figure that moved in each cell.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "golden_results.json.gz"

RATIOS = ("0.25", "0.9")
WARMUP = ("run.warmup_iterations=1",)
VARIANTS: dict[str, tuple[str, ...]] = {
    "1dev": (),
    "2dev": ("flash.devices=2",),
    "mqsim": ("flash.compat=mqsim",),
}
#: bench cases whose simulated time is pinned (at ``--small`` size)
BENCH_CASES = ("flash-fast", "flash-detailed", "hbm-fast", "hbm-detailed", "e2e-bert",
               "e2e-gpt")


def policies() -> list[str]:
    from tmhw.placement.registry import POLICIES
    return sorted(POLICIES)


def cells() -> list[tuple[str, list[str]]]:
    """(cell name, overrides) of every cell of the quick grid."""
    out = []
    for variant, sets in VARIANTS.items():
        for ratio in RATIOS:
            for pol in policies():
                out.append((f"{pol}@{ratio}/{variant}",
                            [f"policy.name={pol}", f"policy.hbm_ratio={ratio}", *WARMUP,
                             *sets]))
    return out


def flat(x: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """A report's leaves as (dotted path, value), lists indexed ``[i]``."""
    if isinstance(x, dict):
        for k in x:
            yield from flat(x[k], f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from flat(v, f"{prefix}[{i}]")
    else:
        yield prefix, x


def run_cell(sets: list[str]) -> dict[str, Any]:
    """One cell's report as flat leaves (no config, no host section), or
    ``{"does_not_fit": message}``."""
    import tmhw
    from tmhw.sim.errors import DoesNotFit
    try:
        rep = tmhw.simulate(tmhw.load_config("quick", sets)).to_dict()
    except DoesNotFit as e:
        return {"does_not_fit": str(e)}
    rep = {k: v for k, v in rep.items() if k not in ("config", "host")}
    # a JSON round trip, so that the comparison sees what the file holds
    leaves: dict[str, Any] = json.loads(json.dumps(dict(flat(rep))))
    return leaves


def bench_sim_times() -> dict[str, int | None]:
    from tmhw.bench import run_case
    return {c: run_case(c, small=True)["sim_time_ps"] for c in BENCH_CASES}


def first_moved(want: dict[str, Any], got: dict[str, Any]) -> str | None:
    """The first leaf, in the report's order, that differs: ``path: want -> got``."""
    for k, v in want.items():
        if k not in got:
            return f"{k}: {v!r} -> missing"
        if got[k] != v:
            return f"{k}: {v!r} -> {got[k]!r}"
    for k in got:
        if k not in want:
            return f"{k}: missing -> {got[k]!r}"
    return None


def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress(DATA.read_bytes()))
    return data


def write() -> None:
    data = {"cells": {name: run_cell(sets) for name, sets in cells()},
            "bench_small_sim_time_ps": bench_sim_times()}
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_bytes(gzip.compress(json.dumps(data, sort_keys=False).encode(), mtime=0))
    print(f"wrote {DATA} ({len(data['cells'])} cells)")


def check() -> int:
    want = load()
    bad = 0
    for name, sets in cells():
        moved = first_moved(want["cells"][name], run_cell(sets))
        if moved:
            bad += 1
            print(f"{name}: {moved}")
    got = bench_sim_times()
    for c, v in want["bench_small_sim_time_ps"].items():
        if got.get(c) != v:
            bad += 1
            print(f"bench {c}: sim_time_ps {v} -> {got.get(c)}")
    print("identical" if not bad else f"{bad} moved")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    if "--write" in sys.argv:
        write()
    else:
        sys.exit(check())
