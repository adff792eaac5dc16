"""Page layout: every tensor a contiguous run of whole pages, no overlap, bytes kept."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tmhw.workload.graph import Workload
from tmhw.workload.zoo import build

_WL = build("gpt2-small", batch=1, seq=64, layers=2)


@settings(max_examples=20, deadline=None)
@given(log2=st.integers(6, 21))
def test_page_runs_tile_the_address_space_and_hold_every_byte(log2: int) -> None:
    page = 1 << log2
    _WL.layout(page)
    pos = 0
    for t in _WL.tensors:
        assert t.page_start == pos
        assert t.npages == -(-t.nbytes // page)
        assert (t.npages - 1) * page < t.nbytes <= t.npages * page or t.nbytes == 0
        pos = t.page_end
    assert _WL.npages == pos
    pt = _WL.page_tensor()
    assert len(pt) == _WL.npages
    assert np.array_equal(np.bincount(pt, minlength=len(_WL.tensors)),
                          [t.npages for t in _WL.tensors])
    assert sum(t.nbytes for t in _WL.tensors) <= _WL.footprint_bytes()
    # rounding waste is under one page per tensor
    assert _WL.footprint_bytes() - sum(t.nbytes for t in _WL.tensors) < page * len(_WL.tensors)


def test_total_bytes_do_not_depend_on_the_page_size(model: Workload) -> None:
    before = sum(t.nbytes for t in model.tensors)
    by_kind = model.bytes_by_kind()
    model.layout(1 << 16)
    assert sum(t.nbytes for t in model.tensors) == before
    assert model.bytes_by_kind() == by_kind
    model.layout(4096)


def test_build_lays_out_at_the_requested_page_size() -> None:
    wl = build("resnet18", batch=1, page_size=1 << 20)
    assert wl.page_size == 1 << 20
    assert wl.npages == sum(-(-t.nbytes // (1 << 20)) for t in wl.tensors)
