"""The command former's grouping of a transaction's pages by die (``die_groups``), against
the pages counted one by one: per die, its pages, the bytes wanted of them, its commands
(at most one page per plane each, with multi-plane), the planes per command and the
plane bit mask; dies ascending. On one device and on sixteen numbered one after the
other, with and without multi-plane."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flash import PRESETS
from flash.scheduler import CommandFormer


def _by_hand(former: CommandFormer, ppns: list[int], nb: list[int]
             ) -> dict[int, tuple[int, int, int, int, int]]:
    """Per die: (bytes, pages, commands, planes per command, plane mask)."""
    P = former.P
    planes: dict[int, dict[int, int]] = {}
    size: dict[int, int] = {}
    for ppn, b in zip(ppns, nb, strict=True):
        plane = ppn // former.ppp
        per = planes.setdefault(plane // P, {})
        per[plane % P] = per.get(plane % P, 0) + 1
        size[plane // P] = size.get(plane // P, 0) + b
    out = {}
    for die, per in planes.items():
        pages = sum(per.values())
        cmds = max(per.values()) if former.multi else pages
        mask = sum(1 << p for p in per) if former.multi else 0
        out[die] = (size[die], pages, cmds, min(P, -(-pages // cmds)), mask)
    return out


@settings(max_examples=60, deadline=None)
@given(devices=st.sampled_from([1, 16]), multi=st.booleans(),
       picks=st.lists(st.tuples(st.integers(0, 2**40), st.integers(1, 16384)), min_size=1,
                      max_size=300),
       few_dies=st.booleans())
def test_die_groups_are_the_pages_counted_by_die(devices: int, multi: bool,
                                                 picks: list[tuple[int, int]],
                                                 few_dies: bool) -> None:
    cfg = replace(PRESETS["990pro"], multiplane=multi)
    former = CommandFormer(cfg, devices)
    span = former.ppp * former.P * (3 if few_dies else former.dies)  # crowd a few dies
    ppns = [p % span for p, _ in picks]
    nb = [b for _, b in picks]
    want = _by_hand(former, ppns, nb)
    udies, w_d, pages_d, ops_d, kp, mask = former.die_groups(np.array(ppns, dtype=np.int64),
                                                             np.array(nb, dtype=np.int64))
    assert udies.tolist() == sorted(want)
    got = dict(zip(udies.tolist(), zip(w_d.tolist(), pages_d.tolist(), ops_d.tolist(),
                                       kp.tolist(), mask.tolist(), strict=True), strict=True))
    assert got == want
    # without weights, a die's sum is its pages
    _, w_none, pages_none, *_ = former.die_groups(np.array(ppns, dtype=np.int64))
    assert np.array_equal(w_none, pages_none) and np.array_equal(pages_none, pages_d)


def test_no_pages_touch_no_die() -> None:
    former = CommandFormer(PRESETS["990pro"])
    assert all(a.size == 0 for a in former.die_groups(np.zeros(0, dtype=np.int64)))
