"""The flash package's layers import downward only: no cycle, and no layer reaches up to
the one that owns it (host side first: target, ssd, then cache and host, the timing
models, the FTL and the scheduler, phy, lanes)."""

from __future__ import annotations

import ast
from pathlib import Path

import flash

ROOT = Path(flash.__file__).parent

#: a module may import only modules of a lower rank
RANK = {"target": 9, "batch": 10, "bench": 10, "cli": 11, "mqsim": 1,
        "ssd": 8, "cache": 6, "host": 6, "fast": 4, "detailed": 4, "ftl": 3,
        "scheduler": 3, "phy": 2, "lanes": 1, "config": 0}


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
