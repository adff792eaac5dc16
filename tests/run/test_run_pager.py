"""The pager is the only writer of the residency: no other module of ``tmhw`` assigns
to a page flag or calls a residency method that changes a page's state or its HBM
space (the DMA engine books pages landing and written back through the pager's
``PageBook`` methods). And the pager's book keeps the residency's invariants."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import tmhw
from tmhw.residency import Residency
from tmhw.run.pager import PageBook

ROOT = Path(tmhw.__file__).parent
#: the residency itself and its one writer
OWNERS = {ROOT / "residency.py", ROOT / "run" / "pager.py"}
FLAGS = {"in_hbm", "in_flash", "live"}
MUTATORS = {"hold", "release", "release_when_ready", "release_clean", "set_ready",
            "claim_freeing", "cleaning", "settle"}
PAGE = 4096


def _is_residency(node: ast.expr) -> bool:
    """``res`` or ``<anything>.res``: how the code names a residency."""
    return (isinstance(node, ast.Name) and node.id == "res") or \
        (isinstance(node, ast.Attribute) and node.attr == "res")


def residency_writes(path: Path) -> list[str]:
    """Each place in ``path`` that writes a page flag or calls a residency mutator."""
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) \
                    and t.value.attr in FLAGS:
                out.append(f"{path.name}:{node.lineno}: writes {t.value.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in MUTATORS and _is_residency(node.func.value):
            out.append(f"{path.name}:{node.lineno}: calls residency.{node.func.attr}")
    return out


def test_only_the_pager_writes_the_residency() -> None:
    found = [w for p in sorted(ROOT.rglob("*.py")) if p not in OWNERS
             for w in residency_writes(p)]
    assert found == []


def test_the_check_finds_a_flag_write_and_a_mutator_call(tmp_path: Path) -> None:
    """The scan above is not vacuous: it sees both kinds of write."""
    f = tmp_path / "bad.py"
    f.write_text("def f(self, a, b):\n    self.res.live[a:b] = True\n"
                 "    res.hold(slice(a, b), 0, 0)\n    self.pages.set_ready(a, b, 0)\n")
    assert residency_writes(f) == ["bad.py:2: writes live", "bad.py:3: calls residency.hold"]


def test_a_page_written_back_with_keep_stays_held_and_its_space_until_the_write_ends(
        ) -> None:
    """A clean: flash holds the pages from then on, HBM still does, and releasing them
    before the write ends frees their space only when it ends."""
    res = Residency(8, 8, PAGE)
    book = PageBook(res)
    book.allocate(0, 8, 0)
    book.written(0, 8)
    book.written_back(0, 8, done=100, now=10, keep=True)
    assert res.in_hbm.all() and res.in_flash.all()
    book.release_clean(0, 8, 20)
    assert not res.in_hbm.any()
    assert res.free_pages(99) == 0 and res.free_pages(100) == 8
    res.check()


def test_a_write_back_frees_its_space_when_the_ssd_acknowledges_it() -> None:
    res = Residency(8, 8, PAGE)
    book = PageBook(res)
    book.allocate(0, 8, 0)
    book.written(0, 8)
    book.written_back(0, 4, done=50, now=10, keep=False)
    assert np.array_equal(res.in_hbm, [False] * 4 + [True] * 4)
    assert res.free_pages(49) == 0 and res.free_pages(50) == 4
    res.check()


def test_dead_data_leaves_flash_and_a_write_makes_flash_stale() -> None:
    """``died`` reports whether flash held a copy (the pager then trims it); an op's
    write makes any flash copy stale."""
    res = Residency(8, 8, PAGE)
    book = PageBook(res)
    book.mark_live(0, 8)
    book.on_flash(0, 4)
    assert book.died(0, 4) is True
    assert book.died(4, 8) is False
    assert not res.live.any() and not res.in_flash.any()
    book.on_flash(0, 8)
    book.allocate(0, 8, 0)
    book.written(2, 6)
    assert np.array_equal(res.in_flash, [True, True, False, False, False, False, True, True])
    res.check()


def test_the_executor_refuses_an_op_whose_operands_hbm_does_not_hold_whole() -> None:
    """The invariant an op is checked against as it starts: every page of its operands
    held (the check counts the pages HBM misses)."""
    from tmhw import config as C
    from tmhw.system import System
    system = System(C.with_overrides(C.QUICK, [
        'workload.model="resnet18"', "workload.batch=1", "workload.page_size=1048576",
        'policy.name="hbm-only"']))
    ex, res = system.executor, system.executor.res
    op = next(o for o in system.workload.ops if o.tensors)
    pages = [ex.ranges[t] for t in op.tensors]
    held = sum(res.hold(slice(p0, p1), 0, 0) for p0, p1 in pages if p1 > p0)
    assert held and not any(res.count_missing(p0, p1) for p0, p1 in pages)
    ex._check_operands(op, {})
    p0, p1 = max(pages, key=lambda r: r[1] - r[0])
    res.release(slice(p1 - 1, p1), 0)
    with pytest.raises(AssertionError, match="starts without all of"):
        ex._check_operands(op, {})


def test_next_uses_are_each_tensors_first_use_after_an_op_or_in_the_next_iteration(
        ) -> None:
    """``Pager.next_uses`` (one sorted index of every tensor's uses) against the rule
    itself, per tensor: its first use after op ``after``, or past the last op the
    iteration's length plus its first use (an unused tensor's: 0)."""
    import bisect

    from tmhw import config as C
    from tmhw.system import System

    pager = System(C.with_overrides(C.QUICK, [])).pager
    nops = len(pager.workload.ops)
    tensors = np.arange(len(pager.use_ops), dtype=np.int64)
    for after in (-1, 0, 1, nops // 3, nops // 2, nops - 2, nops - 1):
        want = []
        for uses in pager.use_ops:
            k = bisect.bisect_right(uses, after)
            want.append(uses[k] if k < len(uses) else nops + (uses[0] if uses else 0))
        assert pager.next_uses(tensors, after).tolist() == want
        assert pager.next_uses(tensors[::-3], after).tolist() == want[::-3]
