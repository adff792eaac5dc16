"""The flash package's layers import downward only: no cycle, and no layer reaches up to
the one that owns it (host side first: target, the event-driven reads of a device
(convoy), their compiled closed loop (convoy_loop) and the batches of one-page commands
(pages), ssd, its compiled reads and writes of a run (runs), then cache and host, the
timing models, the FTL and the scheduler, phy, the booking kernels (engine), the
sparse tables (intmap) and the read cache's order (runlru)). No module reads or writes
another object's private names."""

from __future__ import annotations

import ast
from pathlib import Path

import flash

ROOT = Path(flash.__file__).parent

#: a module may import only modules of a lower rank
RANK: dict[str, float] = {
    "target": 10, "batch": 11, "work": 1, "bench": 11, "cli": 12, "mqsim": 1, "convoy": 9,
    # (a mix's reads look pages up and its writes are refused as the batch path's)
    "convoy_loop": 9.5,
    "pcie": -1, "datasheets": 12, "slc": 6, "pages": 9,
    "ssd": 8, "runs": 7, "cache": 6, "host": 6, "fast": 4, "detailed": 4, "ftl": 3,
    "scheduler": 3, "phy": 2, "engine": 1, "intmap": 1, "runlru": 1, "config": 0}


def _imports() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        name = rel.parts[0] if rel.parts[0] != "__init__" else "__init__"
        deps = out.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("flash."):
                deps.add(node.module.split(".")[1])
        deps.discard(name)
    return out


def test_every_flash_module_imports_only_lower_layers() -> None:
    graph = _imports()
    assert set(graph) - {"__init__"} <= set(RANK), "a new module needs a rank"
    for mod, deps in graph.items():
        if mod == "__init__":
            continue
        for d in deps:
            assert RANK[d] < RANK[mod], f"flash.{mod} imports flash.{d}"


def test_the_flash_import_graph_has_no_cycle() -> None:
    graph = _imports()
    state: dict[str, int] = {}

    def visit(m: str) -> None:
        assert state.get(m) != 1, f"import cycle through flash.{m}"
        if state.get(m) == 2:
            return
        state[m] = 1
        for d in graph.get(m, ()):
            visit(d)
        state[m] = 2

    for m in graph:
        visit(m)


def test_the_host_link_carries_data_in_the_order_it_is_ready() -> None:
    """A read booked first for data that comes off the channels late does not hold the
    link against a read booked later whose data is ready sooner (PCIe is packet switched:
    a ready TLP goes). 8 KiB at the link's rate takes ``dur``."""
    from flash.config import PRESETS
    from flash.host import HostInterface
    host = HostInterface(PRESETS["mqsim-default"])
    dur = host.read_ps(8192)
    late = host.to_host(100 * dur, 8192)
    early = host.to_host(0, 8192)
    assert (early, late) == (dur, 101 * dur)
    # a transfer that does not fit the gap before the late one goes after it
    assert host.to_host(100 * dur - dur // 2, 8192) == 102 * dur


def test_a_command_under_the_convoy_waits_out_data_that_waits_for_its_channel() -> None:
    """Under MQSim's rules the PHY drains waiting data-outs before it takes a command: a
    command asked for inside a window where read data waits starts at the window's end,
    and one asked for outside it starts at once."""
    from dataclasses import replace

    from flash.config import PRESETS
    from flash.target import FlashTarget
    cfg = replace(PRESETS["mqsim-default"], compat="mqsim")
    model = FlashTarget(None, "f", None, cfg).devices[0].model
    model.data_waits(0, 1000, 5000)
    model.data_waits(0, 4000, 9000)   # overlapping windows join
    assert model.command_slot(0, 2000, 300) == 9000
    assert model.command_slot(0, 500, 300) == 500
    assert model.command_slot(0, 800, 300) == 9000   # would run into the window
    assert model.command_slot(1, 2000, 300) == 2000  # another channel


def test_no_module_reaches_into_another_objects_private_names() -> None:
    """A layer uses the methods of the layer below, never its underscored state (the
    batch path once wrote the device's active-time bookkeeping directly): every
    ``x._name`` in the package is on ``self``, ``cls`` or a module."""
    for path in ROOT.rglob("*.py"):
        tree = ast.parse(path.read_text())
        modules = {a.asname or a.name for n in ast.walk(tree)
                   if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                owner = node.value
                assert isinstance(owner, ast.Name) and (
                    owner.id in ("self", "cls") or owner.id in modules), \
                    f"{path.relative_to(ROOT)}:{node.lineno} reaches into .{node.attr}"
