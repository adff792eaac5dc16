"""The detailed DRAM model: one command-level controller per unit (pseudo-channel).

Each ``UnitController`` has a read queue and a write queue (per bank, in arrival order),
an in-order front end that admits bursts while there is room, and a scheduler that issues
one command at a time at the earliest legal clock edge:

- FR-FCFS: among the commands that could issue next, the earliest wins; at equal times a
  column access to an open row (a row hit) beats an ACT or PRE, then the oldest request.
- Write drain: writes wait in their queue until it holds ``write_high`` entries, then
  drain down to ``write_low`` (or whenever no read is queued), so the bus turns around
  once per batch rather than per write.
- Page policy: ``open`` leaves rows open; ``closed`` issues RDA/WRA when no queued
  request hits the same row.
- Refresh: all-bank (PREA then REF every tREFI, staggered over units and ranks) or
  per-bank (every tREFI / banks, PRE then REFPB of a bank not yet refreshed this round,
  preferring one no queued request needs; other banks go on).

Timing comes from ``dram/timing.py``'s rules, kept forward as next-allowed times per
bank, bank group, rank and unit. The controller steps from command to command (no
per-cycle loop) and runs its own event loop, outside SimPy: ``DetailedModel.serve``
(what ``DramTarget(model="detailed").transport`` calls) enqueues a transfer's bursts and
runs the units it touches until those bursts complete; ``submit`` + ``run`` serve a
batch (the bench). A transfer that arrives before a unit's current time is served from
that time. Every command can be logged for ``dram/checker.py``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from dram.config import DramConfig
from dram.mapping import RANDOM_ACCESS_BYTES, AddressMap
from dram.timing import Cmd, Command, Rule, ref_phase, rules
from tmhw.sim.transfer import Pattern

_INF = 1 << 62
_ACT, _PRE, _PREA, _RD, _WR, _RDA, _WRA, _REF, _REFPB = (
    int(Cmd.ACT), int(Cmd.PRE), int(Cmd.PREA), int(Cmd.RD), int(Cmd.WR), int(Cmd.RDA),
    int(Cmd.WRA), int(Cmd.REF), int(Cmd.REFPB))
_NK = len(Cmd)


class Burst:
    """One column access of one request."""

    __slots__ = ("req", "write", "bank", "row", "arrival", "admitted", "seq")

    def __init__(self, req: int, write: bool, bank: int, row: int, arrival: int,
                 seq: int) -> None:
        self.req = req
        self.write = write
        self.bank = bank
        self.row = row
        self.arrival = arrival
        self.admitted = -1
        self.seq = seq


class UnitController:
    """Command scheduler of one unit. Times in ps."""

    def __init__(self, cfg: DramConfig, unit: int, rule_list: list[Rule],
                 on_done: Callable[[Burst, int], None], log: bool = False) -> None:
        c = cfg
        self.cfg = c
        self.unit = unit
        self.on_done = on_done
        nb = c.ranks * c.banks
        self.nb = nb
        self.rank_of = [b // c.banks for b in range(nb)]
        self.bg_of = [(b // c.banks_per_group) % c.bank_groups for b in range(nb)]
        self.bgi_of = [self.rank_of[b] * c.bank_groups + self.bg_of[b] for b in range(nb)]
        self.bank_next = [[0] * _NK for _ in range(nb)]
        self.bg_next = [[0] * _NK for _ in range(c.ranks * c.bank_groups)]
        self.rank_next = [[0] * _NK for _ in range(c.ranks)]
        self.unit_next = [0] * _NK
        self.faw: list[deque[int]] = [deque(maxlen=4) for _ in range(c.ranks)]
        self.effects: list[list[tuple[int, tuple[int, ...], int]]] = [[] for _ in range(_NK)]
        for r in rule_list:
            if r.window != 1:
                continue  # tFAW: kept in self.faw
            for k in r.prev:
                self.effects[int(k)].append((int(r.scope), tuple(int(x) for x in r.nxt), r.gap))
        self.open_row = [-1] * nb
        self.rq: dict[int, list[Burst]] = {}
        self.wq: dict[int, list[Burst]] = {}
        self.n_rq = 0
        self.n_wq = 0
        self.pending: deque[Burst] = deque()
        self.left: dict[int, int] = {}
        self.t = 0
        self.draining = False
        # Refresh schedule, staggered over units (and ranks) as in the fast model.
        self.mode = c.refresh
        self.ref_due = [ref_phase(c, unit, r) for r in range(c.ranks)]
        self.ref_period_pb = c.t_refi // nb
        self.ref_due_pb = ref_phase(c, unit)
        #: Banks refreshed in this tREFI round, and the bank chosen for the pending REFPB.
        self.pb_done: set[int] = set()
        self.ref_target = -1
        self.last_cas = [-1] * nb
        #: The burst each bank's latest ACT was issued for: its CAS is the row miss.
        self.act_seq = [-1] * nb
        self.row_hits = 0
        self.log: list[Command] | None = [] if log else None
        # Statistics.
        self.counts = [0] * _NK
        self.bursts_read = 0
        self.bursts_written = 0
        self.n_open = [0] * c.ranks
        self.active_since = [0] * c.ranks
        self.active_total = 0
        self.first_use: int | None = None

    # -- timing state ------------------------------------------------------------------
    def earliest(self, kind: int, bank: int) -> int:
        """Earliest legal time of a command of ``kind`` to ``bank`` (or any bank of the
        rank for PREA and REF), by the timing rules; not aligned, not below ``t``."""
        r = self.rank_of[bank]
        e = self.bank_next[bank][kind]
        v = self.bg_next[self.bgi_of[bank]][kind]
        if v > e:
            e = v
        v = self.rank_next[r][kind]
        if v > e:
            e = v
        v = self.unit_next[kind]
        if v > e:
            e = v
        if kind == _ACT:
            f = self.faw[r]
            if len(f) == 4 and f[0] + self.cfg.t_faw > e:
                e = f[0] + self.cfg.t_faw
        return e

    def _apply(self, kind: int, bank: int, t: int) -> None:
        r = self.rank_of[bank]
        for scope, nxts, gap in self.effects[kind]:
            v = t + gap
            if scope == 0:
                arrs = [self.bank_next[bank]]
            elif scope == 1:
                arrs = [self.bg_next[self.bgi_of[bank]]]
            elif scope == 2:
                arrs = [self.rank_next[r]]
            elif scope == 3:
                arrs = [self.unit_next]
            else:
                arrs = [self.rank_next[x] for x in range(self.cfg.ranks) if x != r]
            for arr in arrs:
                for k in nxts:
                    if arr[k] < v:
                        arr[k] = v
        if kind == _ACT:
            self.faw[r].append(t)

    # -- queues ------------------------------------------------------------------------
    def enqueue(self, b: Burst) -> None:
        self.pending.append(b)
        self.left[b.req] = self.left.get(b.req, 0) + 1

    def _admit(self) -> None:
        c = self.cfg
        p = self.pending
        while p:
            b = p[0]
            if b.arrival > self.t:
                return
            if b.write:
                if self.n_wq >= c.write_queue:
                    return
                self.n_wq += 1
                q = self.wq
            else:
                if self.n_rq >= c.read_queue:
                    return
                self.n_rq += 1
                q = self.rq
            p.popleft()
            b.admitted = self.t
            lst = q.get(b.bank)
            if lst is None:
                q[b.bank] = [b]
            else:
                lst.append(b)

    def busy(self) -> bool:
        return bool(self.pending) or self.n_rq > 0 or self.n_wq > 0

    # -- scheduling ----------------------------------------------------------------------
    def step(self) -> bool:
        """Issue the next command, or advance time to the next arrival or refresh.
        Returns False when there is nothing to do."""
        self._admit()
        c = self.cfg
        t = self.t
        tck = c.tck
        best_e = _INF
        best_kind = -1
        best_bank = -1
        best_burst: Burst | None = None
        best_prio: tuple[int, int] = (9, 0)
        blocked_rank = -1
        blocked_bank = -1
        next_ref = _INF
        # Refresh comes first: it blocks its rank (all-bank) or its bank (per-bank).
        if self.mode == "all-bank":
            for r in range(c.ranks):
                due = self.ref_due[r]
                if due <= t:
                    bank0 = r * c.banks
                    kind = _PREA if self.n_open[r] > 0 else _REF
                    best_e = max(t, self.earliest(kind, bank0))
                    best_kind, best_bank, best_prio = kind, bank0, (-1, 0)
                    blocked_rank = r
                    break
                next_ref = min(next_ref, due)
        elif self.mode == "per-bank":
            if self.ref_due_pb <= t:
                if self.ref_target < 0:
                    self.ref_target = self._pick_refresh_bank()
                rb = self.ref_target
                kind = _PRE if self.open_row[rb] >= 0 else _REFPB
                best_e = max(t, self.earliest(kind, rb))
                best_kind, best_bank, best_prio = kind, rb, (-1, 0)
                blocked_bank = rb
            else:
                next_ref = self.ref_due_pb
        if blocked_rank < 0 or c.ranks > 1:
            # Write drain with hysteresis; writes also go when no read waits.
            if self.draining:
                if self.n_wq <= c.write_low:
                    self.draining = False
            elif self.n_wq >= c.write_high:
                self.draining = True
            use_w = (self.draining or self.n_rq == 0) and self.n_wq > 0
            q = self.wq if use_w else self.rq
            cas = _WR if use_w else _RD
            for bank, lst in q.items():
                if bank == blocked_bank or self.rank_of[bank] == blocked_rank:
                    continue
                orow = self.open_row[bank]
                if orow >= 0:
                    hit = None
                    for b in lst:
                        if b.row == orow:
                            hit = b
                            break
                    if hit is not None:
                        kind, prio, burst = cas, (0, hit.seq), hit
                    else:
                        kind, prio, burst = _PRE, (1, lst[0].seq), lst[0]
                else:
                    kind, prio, burst = _ACT, (1, lst[0].seq), lst[0]
                e = self.earliest(kind, bank)
                if e < t:
                    e = t
                if e < best_e or (e == best_e and prio < best_prio):
                    best_e, best_kind, best_bank, best_burst, best_prio = e, kind, bank, burst, prio
        best_e = -(-best_e // tck) * tck if best_e < _INF else _INF
        next_arr = _INF
        if self.pending:
            h = self.pending[0]
            room = (self.n_wq < c.write_queue) if h.write else (self.n_rq < c.read_queue)
            if room:
                next_arr = h.arrival
        wake = min(next_arr, next_ref)
        if best_kind < 0 and wake == _INF:
            return False
        if best_kind < 0 or wake < best_e:
            if best_kind < 0 and next_arr == _INF and not self.busy():
                return False
            self.t = max(t, -(-wake // tck) * tck)
            return True
        self._issue(best_kind, best_bank, best_burst, best_e)
        return True

    def _issue(self, kind: int, bank: int, burst: Burst | None, t: int) -> None:
        c = self.cfg
        self.t = t
        r = self.rank_of[bank]
        row = -1
        if self.first_use is None:
            self.first_use = t
        if kind == _RD or kind == _WR:
            assert burst is not None
            write = kind == _WR
            q = self.wq if write else self.rq
            lst = q[bank]
            lst.remove(burst)
            if not lst:
                del q[bank]
            if write:
                self.n_wq -= 1
                self.bursts_written += 1
            else:
                self.n_rq -= 1
                self.bursts_read += 1
            row = burst.row
            self.last_cas[bank] = t
            if self.act_seq[bank] != burst.seq:
                self.row_hits += 1
            if c.page_policy == "closed" and not self._queued_hit(bank, row):
                kind = _WRA if write else _RDA
                self._close(r, t)
                self.open_row[bank] = -1
            done = t + (c.t_cwl if write else c.t_cl) + c.t_burst
            self.left[burst.req] -= 1
            if self.left[burst.req] == 0:
                del self.left[burst.req]
            self.on_done(burst, done)
        elif kind == _ACT:
            assert burst is not None
            row = burst.row
            self.act_seq[bank] = burst.seq
            self.open_row[bank] = row
            if self.n_open[r] == 0:
                self.active_since[r] = t
            self.n_open[r] += 1
        elif kind == _PRE:
            self.open_row[bank] = -1
            self._close(r, t)
        elif kind == _PREA:
            for b in range(r * c.banks, (r + 1) * c.banks):
                if self.open_row[b] >= 0:
                    self.open_row[b] = -1
                    self._close(r, t)
        elif kind == _REF:
            self.ref_due[r] += c.t_refi
        elif kind == _REFPB:
            self.ref_due_pb += self.ref_period_pb
            self.pb_done.add(bank)
            if len(self.pb_done) == self.nb:
                self.pb_done.clear()
            self.ref_target = -1
        self.counts[kind] += 1
        self._apply(kind, bank, t)
        if self.log is not None:
            self.log.append(Command(t, Cmd(kind), r, self.bg_of[bank], bank, row))

    def _pick_refresh_bank(self) -> int:
        """The bank to refresh next (JEDEC lets the controller choose the order within a
        round): one not yet refreshed this round, preferring a bank no queued request
        needs and, among those, the one accessed most recently, which traffic that has
        moved on will need last."""
        best, best_key = -1, (9, -_INF)
        for b in range(self.nb):
            if b in self.pb_done:
                continue
            key = (1 if (b in self.rq or b in self.wq) else 0, -self.last_cas[b])
            if key < best_key:
                best, best_key = b, key
        return best

    def _close(self, rank: int, t: int) -> None:
        self.n_open[rank] -= 1
        if self.n_open[rank] == 0:
            self.active_total += t - self.active_since[rank]

    def _queued_hit(self, bank: int, row: int) -> bool:
        for q in (self.rq, self.wq):
            for b in q.get(bank, ()):
                if b.row == row:
                    return True
        return False

    def run_until_done(self, req: int) -> None:
        while req in self.left:
            if not self.step():
                raise RuntimeError(f"unit {self.unit}: request {req} stuck")

    def run(self) -> None:
        while self.busy():
            if not self.step():
                raise RuntimeError(f"unit {self.unit}: queued bursts but nothing to issue")

    # -- figures -----------------------------------------------------------------------
    def active_ps(self, now: int) -> int:
        """Time (summed over ranks) with at least one bank open, up to ``now``."""
        a = self.active_total
        for r in range(self.cfg.ranks):
            if self.n_open[r] > 0 and now > self.active_since[r]:
                a += now - self.active_since[r]
        return a

    def refreshes(self, now: int) -> int:
        """Refresh commands issued, plus those due while idle up to ``now``."""
        c = self.cfg
        if self.mode == "all-bank":
            extra = sum(max(0, (now - d) // c.t_refi + 1) for d in self.ref_due if d <= now)
            return self.counts[_REF] + extra
        if self.mode == "per-bank":
            d = self.ref_due_pb
            extra = (now - d) // self.ref_period_pb + 1 if d <= now else 0
            return self.counts[_REFPB] + extra
        return 0


class DetailedModel:
    """All units of one ``DramConfig`` and the requests in flight. Times in ps."""

    def __init__(self, cfg: DramConfig, log: bool = False, seed: int = 1) -> None:
        self.cfg = cfg
        self.amap = AddressMap(cfg)
        self.rules = rules(cfg)
        self.ctrls = [UnitController(cfg, u, self.rules, self._done, log)
                      for u in range(cfg.units)]
        self.req_left: dict[int, int] = {}
        self.req_end: dict[int, int] = {}
        self.req_start: dict[int, int] = {}
        self.req_arrival: dict[int, int] = {}
        self.completed: list[tuple[int, int, int]] = []
        self._next_req = 0
        self._seq = 0
        self.rng = np.random.default_rng(seed)
        self.bytes_read = 0
        self.bytes_written = 0
        self.last_end = 0

    def _done(self, b: Burst, t: int) -> None:
        r = b.req
        if t > self.req_end.get(r, -1):
            self.req_end[r] = t
        s = self.req_start.get(r)
        if s is None or b.admitted < s:
            self.req_start[r] = b.admitted
        self.req_left[r] -= 1
        if self.req_left[r] == 0:
            del self.req_left[r]
            self.completed.append((r, self.req_start[r], self.req_end[r]))
            if self.req_end[r] > self.last_end:
                self.last_end = self.req_end[r]

    def _bursts(self, address: int, nbytes: int,
                pattern: Pattern) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        am = self.amap
        if pattern is Pattern.STREAM:
            b0 = address >> am.burst_shift
            b1 = (address + nbytes - 1) >> am.burst_shift
            idx = np.arange(b0, b1 + 1, dtype=np.int64)
        else:
            # Random bank, row and column; units in turn from the address's unit, as a
            # channel-hashing front end spreads them (and as the fast model assumes).
            c = self.cfg
            n = -(-nbytes // RANDOM_ACCESS_BYTES)
            lines = self.rng.integers(0, am.capacity // RANDOM_ACCESS_BYTES, size=n)
            idx = (lines * RANDOM_ACCESS_BYTES) >> am.burst_shift
            first = am.decode(address)[0]
            step = am.random_access_units
            unit = (first + step * np.arange(n, dtype=np.int64)) % c.units
            (sc, wc), (sp, wp) = am.fields["Ch"], am.fields["Pc"]
            idx &= ~((((1 << wc) - 1) << sc) | (((1 << wp) - 1) << sp))
            idx |= ((unit // c.pseudo_channels) << sc) | ((unit % c.pseudo_channels) << sp)
            per = max(1, RANDOM_ACCESS_BYTES // c.burst_bytes)
            idx = (idx[:, None] + np.arange(per)).reshape(-1)
        return am.decode_bursts(idx)

    def submit(self, write: bool, address: int, nbytes: int, pattern: Pattern,
               arrival: int) -> int:
        """Queue a transfer arriving at ``arrival``; returns its request id."""
        rid = self._next_req
        self._next_req += 1
        units, banks, rows = self._bursts(address, nbytes, pattern)
        self.req_left[rid] = len(units)
        self.req_arrival[rid] = arrival
        ctrls = self.ctrls
        seq = self._seq
        for u, b, r in zip(units.tolist(), banks.tolist(), rows.tolist(), strict=True):
            ctrls[u].enqueue(Burst(rid, write, b, r, arrival, seq))
            seq += 1
        self._seq = seq
        if write:
            self.bytes_written += nbytes
        else:
            self.bytes_read += nbytes
        return rid

    def run(self) -> None:
        """Serve everything submitted."""
        for c in self.ctrls:
            c.run()

    def serve(self, write: bool, address: int, nbytes: int, pattern: Pattern,
              earliest: int) -> int:
        """Serve one transfer now; return its completion time (end of its last data)."""
        if nbytes <= 0:
            return earliest
        rid = self.submit(write, address, nbytes, pattern, earliest + self.cfg.controller_delay)
        for c in self.ctrls:
            if rid in c.left:
                c.run_until_done(rid)
        return self.req_end[rid]

    # -- figures -----------------------------------------------------------------------
    @property
    def bursts_read(self) -> int:
        return sum(c.bursts_read for c in self.ctrls)

    @property
    def bursts_written(self) -> int:
        return sum(c.bursts_written for c in self.ctrls)

    @property
    def acts(self) -> int:
        return sum(c.counts[_ACT] for c in self.ctrls)

    @property
    def row_hits(self) -> int:
        """Column accesses that found their row open (not opened for them)."""
        return sum(c.row_hits for c in self.ctrls)

    @property
    def data_ps(self) -> list[int]:
        return [(c.bursts_read + c.bursts_written) * self.cfg.t_burst for c in self.ctrls]

    def refreshes(self, now: int) -> int:
        return sum(c.refreshes(now) for c in self.ctrls)

    def active_ps(self, now: int) -> list[int]:
        return [c.active_ps(now) for c in self.ctrls]

    def logs(self) -> list[list[Command]]:
        return [c.log or [] for c in self.ctrls]


