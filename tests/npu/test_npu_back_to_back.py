"""``NPU.back_to_back``: passes of ops run back to back on an HBM nothing else uses, in
one compiled call of the fast HBM model, take to the picosecond the times ``NPU.book``
gives op by op (the bounds' NPU-alone passes, ``tmhw.lower_bounds.npu_alone_ps``); the
detailed model books op by op instead."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_npu_core import TASKS

from dram.target import DramTarget
from npu import NPU, NpuConfig
from tmhw.sim import Component
from tmhw.sim.env import Environment

#: the ops at addresses of their own, some sharing rows and banks (and one op twice)
PLACED = tuple(dataclasses.replace(t, hbm_address=a) for t, a in
               zip((*TASKS, TASKS[1]), (0, 3 << 20, 7 << 26, 5 << 12, 64, 3 << 20),
                   strict=True))


def _npu(model: str) -> NPU:
    root = Component(Environment(), "alone")
    hbm = DramTarget(root.env, "hbm", root, model=model)
    npu = NPU(root.env, "npu", root, NpuConfig(), hbm)
    root.elaborate()
    root.start()
    return npu


@pytest.mark.parametrize("passes", [1, 4])
def test_back_to_back_passes_take_the_times_of_the_ops_booked_one_by_one(passes: int) -> None:
    fused = _npu("fast").back_to_back(PLACED, passes)
    assert fused is not None and fused.shape == (passes, len(PLACED))
    npu = _npu("fast")
    now = 0
    for k in range(passes):
        for i, t in enumerate(PLACED):
            end = npu.book(t, now).end
            assert fused[k, i] == end - now, (k, t.name)
            now = end
    # the HBM's refresh falls elsewhere in each pass: the passes differ
    assert passes == 1 or not np.array_equal(fused[0], fused[-1])


def test_the_detailed_model_books_op_by_op() -> None:
    assert _npu("detailed").back_to_back(PLACED, 2) is None
