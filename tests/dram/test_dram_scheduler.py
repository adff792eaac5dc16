"""The compiled command scheduler (``dram/scheduler.py``) and the batch paths around it:
a batch is served as the same transfers one after another, the timing table holds
every rule, a step issues one command, and a full command log loses nothing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import dram.controller as controller
import dram.scheduler as sched
from dram import PRESETS, DramConfig
from dram.controller import DetailedModel
from dram.fast import FastModel
from dram.timing import Cmd, Command, rules
from tmhw.sim.transfer import Pattern
from tmhw.sim.units import NS

CFGS = [replace(PRESETS["hbm2"], channels=2), PRESETS["ddr4-3200"],
        replace(PRESETS["hbm3"], channels=1, refresh="per-bank", page_policy="closed")]


def _transfers(cfg: DramConfig, n: int = 120) -> list[tuple[bool, int, int, Pattern, int]]:
    """Reads and writes, streams and random, 32 B to 8 KiB, some arriving together."""
    rng = np.random.default_rng(7)
    out = []
    t = 0
    for _ in range(n):
        t += int(rng.choice([0, 0, 20, 300])) * NS
        out.append((bool(rng.random() < 0.3), int(rng.integers(0, cfg.capacity // 64)) * 64,
                    int(rng.choice([32, 64, 200, 4096, 8192])),
                    Pattern.RANDOM if rng.random() < 0.3 else Pattern.STREAM, t))
    return out


def _figures(m: DetailedModel, now: int) -> list[object]:
    return [m.completed, m.acts, m.bursts_read, m.bursts_written, m.bytes_read,
            m.bytes_written, m.row_hits, m.last_end, m.refreshes(now), m.active_ps(now),
            m.data_ps, m.logs()]


@pytest.mark.parametrize("cfg", CFGS, ids=lambda c: f"{c.name}-{c.refresh}-{c.page_policy}")
def test_a_batch_is_served_as_one_submit_after_another(cfg: DramConfig) -> None:
    reqs = _transfers(cfg)
    one = DetailedModel(cfg, log=True)
    for r in reqs:
        one.submit(*r)
    many = DetailedModel(cfg, log=True)
    w, a, nb, p, t = zip(*reqs, strict=True)
    assert many.submit_many(w, a, nb, [x is Pattern.STREAM for x in p], t) == 0
    # the random transfers drew the same lines: the same bursts wait at each unit
    assert [[(b.req, b.bank, b.row, b.seq) for b in c.pending] for c in one.ctrls] == \
        [[(b.req, b.bank, b.row, b.seq) for b in c.pending] for c in many.ctrls]
    one.run()
    many.run()
    assert len(one.completed) == len(reqs)
    assert _figures(one, one.last_end) == _figures(many, many.last_end)


def test_serve_many_books_as_serve_one_after_another() -> None:
    cfg = PRESETS["hbm3"]
    reqs = _transfers(cfg, 400)
    one = FastModel(cfg)
    ends, starts = [], []
    for r in reqs:
        ends.append(one.serve(*r))
        starts.append(one.last_start)
    many = FastModel(cfg)
    w, a, nb, p, t = (np.array(x) for x in zip(*reqs, strict=True))
    got_ends, got_starts = many.serve_many(w, a, nb, p == Pattern.STREAM, t)
    assert got_ends.tolist() == ends and got_starts.tolist() == starts
    now = max(ends)
    assert [one.acts, one.bursts_read, one.bursts_written, one.busy_ps, one.data_ps,
            one.active_ps(now)] == [many.acts, many.bursts_read, many.bursts_written,
                                    many.busy_ps, many.data_ps, many.active_ps(now)]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_the_timing_table_holds_the_largest_gap_of_every_rule(name: str) -> None:
    rule_list = rules(PRESETS[name])
    effects, n_effects = sched.build_effects(rule_list)
    table = {(kind, int(s), int(nxt)): int(g) for kind in range(sched.NK)
             for s, nxt, g in effects[kind, :n_effects[kind]]}
    want: dict[tuple[int, int, int], int] = {}
    for r in rule_list:
        if r.window == 1:  # tFAW is the scheduler's ring of four ACTs
            for prev in r.prev:
                for nxt in r.nxt:
                    key = (int(prev), int(r.scope), int(nxt))
                    want[key] = max(want.get(key, 0), r.gap)
    assert table == want


def test_one_step_issues_one_command_at_its_earliest_legal_time() -> None:
    cfg = replace(PRESETS["hbm2"], channels=1, pseudo_channels=1)
    m = DetailedModel(cfg, log=True)
    m.submit(False, 0, 64, Pattern.STREAM, 0)
    c = m.ctrls[0]
    assert c.step() and c.log == [Command(0, Cmd.ACT, 0, 0, 0, 0)]
    assert c.step() and c.log[-1] == Command(cfg.t_rcd, Cmd.RD, 0, 0, 0, 0)
    assert not c.step()  # idle: nothing queued, nothing pending
    assert m.completed == [(0, 0, cfg.t_rcd + cfg.t_cl + cfg.t_burst)]


def test_a_full_command_log_is_drained_without_losing_a_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = replace(PRESETS["hbm2"], channels=2)
    reqs = _transfers(cfg, 60)
    want = DetailedModel(cfg, log=True)
    for r in reqs:
        want.serve(*r)
    monkeypatch.setattr(controller, "LOG_CAPACITY", 3)
    got = DetailedModel(cfg, log=True)
    for r in reqs:
        got.serve(*r)
    assert sum(len(x) for x in want.logs()) > 1000
    assert got.logs() == want.logs()
