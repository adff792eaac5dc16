"""The runtime hooks a policy answers while its table runs: which tensor leaves HBM
first when the pager must make room the table did not plan, and what happens to an
operand an op only reads and finds missing (fetched, or read in place by FlatFlash,
which counts accesses and promotes hot pages). Each hook is checked on its own, with
the run stood in for by the read-only views it is given."""

from __future__ import annotations

import bisect

import numpy as np
import pytest

from tmhw.placement.base import Policy, make_policy
from tmhw.placement.flatflash import FlatFlashParams
from tmhw.placement.registry import POLICIES

#: the reactive pagers that do not know the future evict least recently used first
LRU = {"demand", "flatflash"}


class Uses:
    """When each tensor was last used (a clock) and the ops that use it."""

    def __init__(self, last_use: list[int], use_ops: list[list[int]], nops: int) -> None:
        self.last_use = np.array(last_use, dtype=np.int64)
        self.use_ops = use_ops
        self.nops = nops

    def next_uses(self, tensors: np.ndarray, after: int) -> np.ndarray:
        out = []
        for t in tensors.tolist():
            uses = self.use_ops[t]
            k = bisect.bisect_right(uses, after)
            out.append(uses[k] if k < len(uses) else self.nops + (uses[0] if uses else 0))
        return np.array(out, dtype=np.int64)


# tensor 0: used long ago, next at op 9; 1: used last, next at op 4 (soonest);
# 2: used second, next only in the next iteration (op 1 + 10); 3: used recently, next op 7
USES = Uses([1, 9, 3, 7], [[0, 9], [2, 4], [1], [5, 7]], nops=10)
HELD = np.array([0, 1, 2, 3])


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_each_policy_evicts_least_recently_used_or_furthest_next_use_first(
        name: str) -> None:
    order = make_policy(name).eviction_order(HELD, 3, USES).tolist()
    if name in LRU:
        assert order == [0, 2, 3, 1]        # by last use: 1, 3, 7, 9
    else:
        assert order == [2, 0, 3, 1]        # by next use after op 3: 11, 9, 5, 4


def test_a_use_already_past_counts_in_the_next_iteration_and_ties_leave_in_id_order(
        ) -> None:
    """After op 3, tensor 2 (used at op 2 only) is next used at the next iteration's
    op 2, 8 + 2 = 10: it leaves first; tensors 0 and 1, both next used at op 6, then
    leave in id order."""
    uses = Uses([0, 0, 0], [[6], [6], [2]], nops=8)
    order = make_policy("demand-belady").eviction_order(np.array([0, 1, 2]), 3, uses)
    assert order.tolist() == [2, 0, 1]


def test_only_flatflash_reads_a_missing_operand_in_place() -> None:
    assert {n for n in POLICIES if make_policy(n).reads_in_place(0)} == {"flatflash"}


def test_a_policy_that_fetches_refuses_to_read_in_place() -> None:
    with pytest.raises(NotImplementedError, match="demand reads no operand in place"):
        make_policy("demand").read_in_place([0], 0, Port(4, {0: (0, 4)}))


class Port:
    """The pages HBM holds, the in-place reads made, the promotions asked for."""

    def __init__(self, npages: int, ranges: dict[int, tuple[int, int]]) -> None:
        self.in_hbm = np.zeros(npages, dtype=bool)
        self.access_counts = np.zeros(npages, dtype=np.int32)
        self.ranges = ranges
        self.reads: list[tuple[int, int, int]] = []
        self.promoted: list[tuple[int, int, int, int]] = []
        self.pending: set[int] = set()
        self.t = 1000

    def pages_of(self, tensor: int) -> tuple[int, int]:
        return self.ranges[tensor]

    def missing_runs(self, p0: int, p1: int) -> list[tuple[int, int]]:
        miss = np.flatnonzero(~self.in_hbm[p0:p1]) + p0
        out: list[tuple[int, int]] = []
        for p in miss.tolist():
            if out and out[-1][1] == p:
                out[-1] = (out[-1][0], p + 1)
            else:
                out.append((p, p + 1))
        return out

    def read_in_place(self, tensor: int, p0: int, p1: int, line_bytes: int,
                      line_overhead_bytes: int) -> int:
        self.reads.append((tensor, p0, p1))
        self.t += 100 * (p1 - p0)
        return self.t

    def promotion_pending(self, tensor: int) -> bool:
        return tensor in self.pending

    def promote(self, tensor: int, p0: int, p1: int, op_index: int) -> None:
        self.promoted.append((tensor, p0, p1, op_index))


def flatflash(promote_after: int) -> Policy:
    return make_policy("flatflash", FlatFlashParams(promote_after=promote_after))


def test_flatflash_reads_each_missing_run_once_and_returns_the_last_arrival() -> None:
    port = Port(8, {0: (0, 8)})
    port.in_hbm[3:5] = True
    end = flatflash(4).read_in_place([0], 2, port)
    assert port.reads == [(0, 0, 3), (0, 5, 8)]
    assert end == 1000 + 300 + 300
    assert port.access_counts.tolist() == [1, 1, 1, 0, 0, 1, 1, 1]
    assert port.promoted == []


def test_flatflash_promotes_the_span_of_pages_that_reached_the_threshold() -> None:
    """At the threshold the hot pages HBM misses are promoted as one fetch over their
    span, due at the op, and their counts start again."""
    ff = flatflash(2)
    port = Port(8, {0: (0, 8)})
    port.access_counts[6:8] = -5            # pages 6, 7 stay cold
    ff.read_in_place([0], 1, port)
    assert port.promoted == []
    ff.read_in_place([0], 5, port)
    assert port.promoted == [(0, 0, 6, 5)]
    assert port.access_counts.tolist() == [0, 0, 0, 0, 0, 0, -3, -3]


def test_flatflash_does_not_promote_a_tensor_whose_promotion_is_still_being_booked(
        ) -> None:
    ff = flatflash(1)
    port = Port(8, {0: (0, 4), 1: (4, 8)})
    port.pending.add(0)
    ff.read_in_place([0, 1], 3, port)
    assert port.reads == [(0, 0, 4), (1, 4, 8)]
    assert port.promoted == [(1, 4, 8, 3)]
    assert port.access_counts.tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
