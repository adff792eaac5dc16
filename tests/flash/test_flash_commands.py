"""The detailed model's compiled command forming and die queues
(``flash.engine.commands``) against the rules they state, written out plainly here."""

from __future__ import annotations

from collections import deque

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flash.engine.commands import form_commands, queue_done, queue_issue


def reference_ops(ppns: list[int], pages_per_plane: int, planes: int,
                  multi: bool) -> list[tuple[int, list[int]]]:
    """The rule: a die's pages fill its commands first fit, one page per plane each (with
    multi-plane forming; else a command a page); the commands are taken round-robin
    over the dies in the order each die first appears."""
    per_die: dict[int, list[list[int]]] = {}
    for i, ppn in enumerate(ppns):
        plane = ppn // pages_per_plane
        ops = per_die.setdefault(plane // planes, [])
        bit = 1 << (plane % planes)
        for op in ops:
            if multi and not op[0] & bit:
                op[0] |= bit
                op.append(i)
                break
        else:
            ops.append([bit, i])
    out: list[tuple[int, list[int]]] = []
    for round_no in range(max((len(v) for v in per_die.values()), default=0)):
        out += [(die, ops[round_no][1:]) for die, ops in per_die.items()
                if round_no < len(ops)]
    return out


@settings(max_examples=150, deadline=None)
@given(ppns=st.lists(st.integers(0, 8 * 4 * 16 - 1), min_size=1, max_size=40),
       planes=st.sampled_from([1, 2, 4]), multi=st.booleans())
def test_commands_are_formed_as_the_rule_says(ppns: list[int], planes: int,
                                              multi: bool) -> None:
    dies, first, order = form_commands(np.array(ppns, dtype=np.int64), 16, planes, multi)
    got = [(int(d), order[first[k]:first[k + 1]].tolist()) for k, d in enumerate(dies)]
    assert got == reference_ops(ppns, 16, planes, multi)


@settings(max_examples=100, deadline=None)
@given(depth=st.integers(1, 5),
       steps=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 10_000)), max_size=40))
def test_a_die_queue_takes_a_command_when_the_one_depth_ahead_has_finished(
        depth: int, steps: list[tuple[int, int]]) -> None:
    """A die holds ``depth`` programs and erases: the next is issued at the later of its
    time and the end of the one ``depth`` places ahead (a deque of that length)."""
    queues = np.zeros((3, 2 + depth), dtype=np.int64)
    ref = [deque[int](maxlen=depth) for _ in range(3)]
    for die, t in steps:
        q = ref[die]
        want = q[0] if len(q) == depth and q[0] > t else t
        assert queue_issue(queues, die, t) == want
        queue_done(queues, die, want + 100)
        q.append(want + 100)
