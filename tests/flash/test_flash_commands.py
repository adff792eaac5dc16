"""The detailed model's compiled command forming, die queues and reads
(``flash.engine.commands``) against the rules they state, written out plainly here."""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flash.config import PRESETS
from flash.detailed import DetailedModel
from flash.engine.commands import form_commands, queue_done, queue_issue
from flash.phy import OnfiPhy
from flash.scheduler import CommandFormer, Counters


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


def reference_read(m: DetailedModel, ppns: list[int], nb: list[int],
                   earliest: int) -> tuple[int, int]:
    """A detailed read as ``flash.detailed`` states it, booked a step at a time through
    the lanes' own calls: per command (formed as ``reference_ops`` says) the command
    cycles, then tR on its die lane (the longest page type; a one-page command overlaps
    the die's other one-page reads where planes read independently), then each page's
    data-out in the channel's earliest idle interval from tR's end, the command cycles
    with the first; the die's cache register holds the data until its first data-out
    starts. Under MQSim's rules the command waits for idle channel time outside the
    windows in which read data waits for the channel, each page's data waits from tR's
    end to its data-out, and the chip is held until its last data-out ends. (start of
    the first data-out, end of the last)."""
    phy, former = m.phy, m.former
    end, first = earliest, -1
    for die, idx in reference_ops(ppns, former.ppp, former.P, former.multi):
        n_planes = len(idx)
        ch, lane = die // former.dpc, former.lane_of(die)
        m.c.read_cmds += 1
        cmd = phy.rcmd[n_planes]
        t_r = max(m.t_r_of[(ppns[i] % m.ppb) % m.bits] for i in idx)
        issue = earliest
        if m.convoy:
            issue = m.command_slot(ch, max(issue, m.dies.read_free(lane)), cmd)
        die_end = m.dies.read1(lane, issue + cmd, t_r,
                               share=m.plane_reads if n_planes == 1 else 1)
        data_end, op_first = die_end, -1
        for j, i in enumerate(idx):
            setup = phy.rsetup[1] if j == 0 else phy.rsetup[2] - phy.rsetup[1]
            lead = cmd if j == 0 else 0
            data_out = setup + phy.data_ps(nb[i]) + lead
            data_end = m.channels.reserve1(ch, data_end - lead, data_out)
            start = data_end - data_out + lead
            if m.convoy:
                m.data_waits(ch, die_end, start)
            op_first = start if op_first < 0 else op_first
            first = start if first < 0 or start < first else first
        if n_planes > 1 or m.plane_reads == 1:
            m.dies.hold1(lane, data_end if m.convoy else op_first)
        end = max(end, data_end)
    return first, end


def _lanes_state(m: DetailedModel) -> list[Any]:
    """What a booking leaves on the model's lanes: the die lanes' records, queued ops and
    recorded spans, each channel's intervals, numbers and recorded bookings, and under
    MQSim's rules the wait windows (not the rows' spare slots, which a grown row has
    more of)."""
    lanes, ops, par, rec = m.dies.state
    out = [lanes.tolist(), ops.tolist(), par.tolist(), rec[:par[0]["nrec"]].tolist()]
    for bank in (m.channels, m.waiting):
        if bank is not None:
            intervals, meta = bank.arrays()
            fill, count = meta[0].tolist(), meta[2].tolist()
            out += [meta.tolist(), [[intervals[r, ch, :fill[ch] if r < 2 else count[ch]].tolist()
                                     for r in range(intervals.shape[0])]
                                    for ch in range(meta.shape[1])]]
    return out


@settings(max_examples=60, deadline=None)
@given(preset=st.sampled_from(["mqsim-default", "990pro"]), multi=st.booleans(),
       independent=st.booleans(), record=st.booleans(), narrow=st.booleans(),
       compat=st.sampled_from(["onfi", "mqsim"]),
       steps=st.lists(st.tuples(
           st.booleans(),
           st.lists(st.tuples(st.integers(0, 63), st.integers(0, 40)), min_size=1,
                    max_size=24),
           st.integers(0, 3_000_000_000),
           st.lists(st.integers(1, 1 << 14), min_size=24, max_size=24)),
           min_size=1, max_size=90))
def test_a_detailed_read_books_what_its_commands_book_step_by_step(
        preset: str, multi: bool, independent: bool, record: bool, narrow: bool,
        compat: str, steps: list[tuple[bool, list[tuple[int, int]], int, list[int]]]
) -> None:
    """``DetailedModel.read``, one compiled call (``read_cmds``), against the read booked a
    step at a time (``reference_read``), between programs that leave the dies work to
    suspend or queue behind: the same times, commands, lanes and channels, recorded or
    not, with channel rows that grow on the way (64 slots to start with; ``narrow``: every
    page on the first channel's dies, whose row then fills with a read's commands
    under way)."""
    cfg = replace(PRESETS[preset], multiplane=multi, independent_plane_reads=independent,
                  compat=compat)
    models = []
    for _ in range(2):
        phy = OnfiPhy(cfg)
        models.append(DetailedModel(cfg, phy, CommandFormer(cfg), Counters(), record))
    got, ref = models
    planes = got.former.dpc * got.former.P if narrow else got.former.planes
    for is_read, pages, t, nbytes in steps:
        ppns = [(p * planes // 64) * got.former.ppp + off for p, off in pages]
        if is_read:
            nb = [min(b, cfg.page_size) for b in nbytes[:len(ppns)]]
            assert got.read(np.array(ppns, dtype=np.int64), np.array(nb, dtype=np.int64),
                            t) == reference_read(ref, ppns, nb, t)
        else:
            for m in models:
                m.program(np.array(sorted(set(ppns)), dtype=np.int64), t, t + 1_000_000)
    assert got.c == ref.c
    assert _lanes_state(got) == _lanes_state(ref)


@pytest.mark.parametrize("compat", ["onfi", "mqsim"])
def test_a_detailed_read_grows_a_full_channel_row_before_a_command_not_within_it(
        compat: str) -> None:
    """Multi-plane reads far apart on one channel, each of its data-outs an idle gap
    apart from the last read's: the channel's row (64 slots) fills with a command's
    data-outs under way (under MQSim's rules the wait windows' row too), and the
    compiled read grows it before that command, booking what the step-by-step read
    books."""
    cfg = replace(PRESETS["990pro"], compat=compat)
    got, ref = (DetailedModel(cfg, OnfiPhy(cfg), CommandFormer(cfg), Counters())
                for _ in range(2))
    ppp, planes = got.former.ppp, got.former.P
    for k in range(300):
        # one page on each plane of die 0, at staggered offsets; reads 1 ms apart, the
        # later first, so that none joins the interval of another
        ppns = [p * ppp + k for p in range(planes)]
        t = (300 - k) * 1_000_000_000
        assert got.read(np.array(ppns, dtype=np.int64),
                        np.full(planes, cfg.page_size, dtype=np.int64), t) == \
            reference_read(ref, ppns, [cfg.page_size] * planes, t)
    assert got.channels.arrays()[0].shape[2] > 64
    if got.waiting is not None:
        assert got.waiting.arrays()[0].shape[2] > 64
    assert _lanes_state(got) == _lanes_state(ref)
