"""The packages' import graph: no circles, and the layers of docs/ARCHITECTURE.md.

The graph is read from the source with ``ast``, so it holds every dependency a module
states, not only those one run happens to execute: every ``import`` statement, at the
top or inside a function, and those under ``if TYPE_CHECKING:`` (a type names a
dependency as much as a call does). Importing ``a.b.c`` also runs the ``__init__`` of
``a`` and ``a.b``, so those are edges too, except the importer's own enclosing packages
(already being imported). The one statement left out is a package's lazy re-export, an
import inside its module-level ``__getattr__`` (PEP 562): it runs on an attribute's
first use, never on import, and points from the package to what it re-exports.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tmhw", "npu", "dram", "flash")


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = f
    return mods


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _lazy_nodes(tree: ast.Module, path: Path) -> set[int]:
    if path.name != "__init__.py":
        return set()
    return {id(n) for top in tree.body
            if isinstance(top, ast.FunctionDef) and top.name == "__getattr__"
            for n in ast.walk(top)}


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text())
    skip = _lazy_nodes(tree, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: set[str] = set()
    for n in ast.walk(tree):
        if id(n) in skip:
            continue
        if isinstance(n, ast.Import):
            named.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            if n.level:
                base = package.split(".")[:len(package.split(".")) - (n.level - 1)]
                mod = ".".join(base + ([n.module] if n.module else []))
            else:
                mod = n.module or ""
            named.add(mod)
            named.update(f"{mod}.{a.name}" for a in n.names)
    own = set(_parents(name))
    out: set[str] = set()
    for m in named:
        while m and m not in mods:          # ``from a.b import function`` -> a.b
            m = m.rpartition(".")[0]
        if not m or m == name:
            continue
        out.add(m)
        out.update(p for p in _parents(m) if p in mods and p not in own and p != name)
    return out


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(name, path, mods) for name, path in mods.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def _cycle_path(graph: dict[str, set[str]], comp: list[str]) -> str:
    """One cycle through the component's first module, for the failure message."""
    members = set(comp)
    start = comp[0]
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [start]
                    u = v
                    while u != start:
                        path.append(u)
                        u = prev[u]
                    return " -> ".join([start, *reversed(path[1:]), start])
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return " -> ".join(comp)


def test_the_graph_sees_a_known_import() -> None:
    g = import_graph()
    assert "tmhw.sim.units" in g["tmhw.system"] or "tmhw.sim" in g["tmhw.system"]
    assert "tmhw.sim" in g["flash.target"]


def test_no_module_imports_itself_back() -> None:
    g = import_graph()
    found = [_cycle_path(g, c) for c in _circles(g)]
    assert not found, "import circles:\n" + "\n".join(found)


def test_device_packages_import_the_kernel_and_themselves_only() -> None:
    """npu, dram and flash import ``tmhw.sim`` and themselves, never each other or the
    system level (docs/ARCHITECTURE.md, "Layers")."""
    g = import_graph()
    bad = []
    for name, deps in g.items():
        top = name.split(".")[0]
        if top not in ("npu", "dram", "flash"):
            continue
        for d in deps:
            if d.split(".")[0] == top or d == "tmhw" or d.startswith("tmhw.sim"):
                continue
            bad.append(f"{name} -> {d}")
    assert not bad, "\n".join(sorted(bad))


def test_the_kernel_imports_nothing_else_of_the_project() -> None:
    g = import_graph()
    bad = [f"{n} -> {d}" for n, deps in g.items() if n.startswith("tmhw.sim")
           for d in deps if not (d == "tmhw" or d.startswith("tmhw.sim"))]
    assert not bad, "\n".join(sorted(bad))
