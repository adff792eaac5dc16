"""The detailed controller's command scheduler, compiled: the only implementation of its
rules (``dram/controller.py`` holds the model around it).

Each unit (pseudo-channel) is a controller with a read queue and a write queue (per bank,
in arrival order), an in-order front end that admits bursts while there is room, and a
scheduler that issues one command at a time at the earliest legal clock edge:

- FR-FCFS: among the commands that could issue next, the earliest wins; at equal times a
  column access to an open row (a row hit) beats an ACT or PRE, then the oldest request.
- Write drain: writes wait in their queue until it holds ``write_high`` entries, then
  drain down to ``write_low`` (or whenever no read is queued), so the bus turns around
  once per batch rather than per write.
- Page policy: ``open`` leaves rows open; ``closed`` issues RDA/WRA when no queued
  request hits the same row.
- Refresh: all-bank (PREA then REF every tREFI, staggered over units and ranks) or
  per-bank (every tREFI / banks, PRE then REFPB of a bank not yet refreshed this round,
  preferring one no queued request needs, then the one accessed most recently; other
  banks go on).

Timing comes from ``dram/timing.py``'s rules, turned once into a table (``effects``:
for each command kind, the scopes and kinds it delays and by how much) and kept forward
as next-allowed times per bank, bank group, rank and unit; tFAW is a ring of each rank's
last four ACTs. The scheduler steps from command to command (no per-cycle loop).

The state (``State``) is a tuple of arrays over all units, changed in place:

- ``ctrl``: one ``CTRL`` record per unit: its time, drain flag, queue occupancy,
  per-bank refresh schedule, counters and the head and tail of its pending FIFO.
- ``par``: one ``PAR`` record: the timing and geometry the scheduler reads, and the
  model's running figures (requests completed, the latest end, the log's fill).
- ``banks``: per unit and bank, the ``BANK`` fields: open row, last column access, the
  burst its latest ACT was for (its CAS is the row miss), refreshed this round.
- ``ranks``: per unit and rank, the ``RANK`` fields: next all-bank refresh, open banks,
  when the rank last opened a bank, and its tFAW ring's count and head.
- ``faw``: per unit and rank, the last four ACT times.
- ``next_bank``, ``next_group``, ``next_rank``, ``next_unit``: the earliest time of each
  command kind by the rules of each scope.
- ``counts``: per unit, commands issued by kind.
- ``qlen``, ``queue``: per unit, direction (0 read, 1 write) and bank, the queued bursts
  (``QUEUED`` fields) in admission order.
- ``pending``: per unit, the bursts not yet admitted (``PENDING`` fields), FIFO.
- ``requests``: per request id, its ``REQUEST`` fields; ``done``: ids in completion order.
- ``effects``, ``n_effects``: the timing table (``build_effects``).
- ``logging``: per unit, whether its commands are logged; ``log``: the commands logged
  since the caller last drained it (``LOGGED`` fields).

``enqueue`` splits transfers into bursts through the address map (a stream's
consecutive bursts; a random transfer's 64 B accesses, their lines given, dealt to the
units in turn from the address's) onto the units' pending FIFOs; ``run`` serves units
until a condition holds and returns why it stopped. The kernels run as plain Python
under ``NUMBA_DISABLE_JIT=1``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dram.config import DramConfig
from dram.mapping import MAP_FIELDS, RANDOM_ACCESS_BYTES, AddressMap, bank_of, row_of, unit_of
from dram.timing import Cmd, Rule
from tmhw.sim.jit import njit_noref

I64 = npt.NDArray[np.int64]
#: The scheduler's state: ``(ctrl, par, banks, ranks, faw, next_bank, next_group,
#: next_rank, next_unit, counts, qlen, queue, pending, requests, done, effects,
#: n_effects, logging, log)`` (module docstring).
State = tuple[Any, ...]

INF = 1 << 62
ACT, PRE, PREA, RD, WR, RDA, WRA, REF, REFPB = (
    int(Cmd.ACT), int(Cmd.PRE), int(Cmd.PREA), int(Cmd.RD), int(Cmd.WR), int(Cmd.RDA),
    int(Cmd.WRA), int(Cmd.REF), int(Cmd.REFPB))
NK = len(Cmd)
#: Scopes of a rule (``dram.timing.Scope``), the last one every rank of the unit but the
#: command's own.
SCOPES = 5
#: ``PAR.refresh``'s values
REFRESH_OFF, REFRESH_ALL_BANK, REFRESH_PER_BANK = 0, 1, 2
REFRESH_MODES = {"off": REFRESH_OFF, "all-bank": REFRESH_ALL_BANK,
                 "per-bank": REFRESH_PER_BANK}
#: A candidate's priority at equal times: refresh, then row hits by age, then the rest
#: by age (a burst's sequence number is below this).
_MISS = 1 << 56

#: ``run``'s results: the condition holds, the log is full (drain it and call again), a
#: unit has queued bursts but nothing to issue (a bug), the step budget is spent.
DONE, LOG_FULL, STUCK, STEPS = 0, 1, 2, 3
#: ``run``'s ``stop``: serve until idle; no condition (the step budget alone).
UNTIL_IDLE, NO_STOP = -1, -2
#: ``_step``'s results besides the request id of a column access it issued.
_NOTHING, _OTHER = -1, -2


def _fields(*names: str) -> np.dtype[np.void]:
    return np.dtype([(name, np.int64) for name in names])


def _records(*names: str) -> np.dtype[np.void]:
    """A record dtype, whose fields read as attributes too (the address map's decode
    reads them so), made once here so that every model's arrays share it (numba types
    an argument on its fast path by its dtype object)."""
    return np.dtype((np.record, [(name, np.int64) for name in names]))


#: A unit: its time, write-drain flag, queued reads and writes, next per-bank refresh
#: and the bank chosen for it (-1 none), banks refreshed this round, counters, first
#: command (-1 none), its pending FIFO's head and tail, and the bursts of the request
#: ``run`` waits for still to issue (scratch).
CTRL = _fields("t", "draining", "n_rq", "n_wq", "ref_due_pb", "ref_target", "pb_count",
               "row_hits", "bursts_read", "bursts_written", "active_total", "first_use",
               "head", "tail", "left")
#: Timing (ps) and geometry (the units a random access spans, and its bursts), the next
#: request id and burst sequence number, then the running figures: bytes, requests
#: completed, the latest completion, commands in the log and its capacity, and the unit
#: ``run`` stopped at; last, the address map's decode fields (``dram.mapping``).
PAR = _records("tck", "t_faw", "t_refi", "ranks", "banks", "nb", "read_queue",
              "write_queue", "write_high", "write_low", "refresh", "ref_period_pb", "closed",
              "t_cl", "t_cwl", "t_burst", "capacity", "burst_shift", "units", "rand_units",
              "rand_bursts", "next_req", "next_seq", "bytes_read", "bytes_written",
              "n_done", "last_end", "n_log", "log_cap", "stop_unit", *MAP_FIELDS)
#: Fields (columns) of ``banks``, ``ranks``, ``queue``, ``pending``, ``requests`` and
#: ``log``.
OPEN_ROW, LAST_CAS, ACT_SEQ, PB_DONE = range(4)
BANK_FIELDS = 4
REF_DUE, N_OPEN, ACTIVE_SINCE, FAW_N, FAW_HEAD = range(5)
RANK_FIELDS = 5
Q_ROW, Q_SEQ, Q_REQ, Q_ADMITTED = range(4)
QUEUED_FIELDS = 4
P_REQ, P_WRITE, P_BANK, P_ROW, P_ARRIVAL, P_SEQ = range(6)
PENDING_FIELDS = 6
R_LEFT, R_END, R_START, R_ARRIVAL = range(4)
REQUEST_FIELDS = 4
L_TIME, L_KIND, L_BANK, L_ROW = range(4)
LOGGED_FIELDS = 4


def build_effects(rule_list: list[Rule]) -> tuple[I64, I64]:
    """The timing rules as a table: for each kind of command, the (scope, kind, gap) it
    imposes (the largest gap of the rules that share scope and kind), and how many.
    tFAW (a window of four) is kept apart, in ``faw``."""
    gap = np.full((NK, SCOPES, NK), -1, dtype=np.int64)
    for r in rule_list:
        if r.window != 1:
            continue
        for prev in r.prev:
            for nxt in r.nxt:
                g = gap[int(prev), int(r.scope), int(nxt)]
                gap[int(prev), int(r.scope), int(nxt)] = max(int(g), r.gap)
    n = (gap >= 0).reshape(NK, -1).sum(axis=1)
    effects = np.zeros((NK, max(1, int(n.max())), 3), dtype=np.int64)
    for kind in range(NK):
        scopes, kinds = np.nonzero(gap[kind] >= 0)
        effects[kind, :scopes.size, 0] = scopes
        effects[kind, :scopes.size, 1] = kinds
        effects[kind, :scopes.size, 2] = gap[kind, scopes, kinds]
    return effects, n.astype(np.int64)


def build_par(cfg: DramConfig, amap: AddressMap) -> Any:
    """The ``PAR`` record of ``cfg`` and its address map (a one-record array)."""
    par = np.zeros(1, PAR).view(np.recarray)
    nb = cfg.ranks * cfg.banks
    values = {
        "tck": cfg.tck, "t_faw": cfg.t_faw, "t_refi": cfg.t_refi, "ranks": cfg.ranks,
        "banks": cfg.banks, "nb": nb, "read_queue": cfg.read_queue,
        "write_queue": cfg.write_queue, "write_high": cfg.write_high,
        "write_low": cfg.write_low, "refresh": REFRESH_MODES[cfg.refresh],
        "ref_period_pb": cfg.t_refi // nb, "closed": int(cfg.page_policy == "closed"),
        "t_cl": cfg.t_cl, "t_cwl": cfg.t_cwl, "t_burst": cfg.t_burst,
        "capacity": amap.capacity, "burst_shift": amap.burst_shift, "units": cfg.units,
        "rand_units": amap.random_access_units,
        "rand_bursts": max(1, RANDOM_ACCESS_BYTES // cfg.burst_bytes),
        **amap.map_fields}
    for name, value in values.items():
        par[0][name] = value
    return par


# -- the rules ----------------------------------------------------------------------------
@njit_noref
def earliest(st: State, u: int, kind: int, bank: int) -> int:
    """Earliest legal time of a command of ``kind`` to ``bank`` of unit ``u`` (or any
    bank of the rank for PREA and REF), by the timing rules; not aligned."""
    par = st[1][0]
    ranks, faw, next_bank, next_group, next_rank, next_unit = (
        st[3], st[4], st[5], st[6], st[7], st[8])
    r = bank // par["banks"]
    group = r * par["bank_groups"] + (bank // par["banks_per_group"]) % par["bank_groups"]
    e: int = next_bank[u, bank, kind]
    v = next_group[u, group, kind]
    if v > e:
        e = v
    v = next_rank[u, r, kind]
    if v > e:
        e = v
    v = next_unit[u, kind]
    if v > e:
        e = v
    if kind == ACT and ranks[u, r, FAW_N] == 4:
        v = faw[u, r, ranks[u, r, FAW_HEAD]] + par["t_faw"]
        if v > e:
            e = v
    return e


@njit_noref
def _apply(st: State, u: int, kind: int, bank: int, t: int) -> None:
    """Push forward the next-allowed times that a command of ``kind`` to ``bank`` at
    ``t`` constrains, and record an ACT in its rank's tFAW ring."""
    par = st[1][0]
    ranks, faw, next_bank, next_group, next_rank, next_unit = (
        st[3], st[4], st[5], st[6], st[7], st[8])
    effects, n_effects = st[15], st[16]
    r = bank // par["banks"]
    group = r * par["bank_groups"] + (bank // par["banks_per_group"]) % par["bank_groups"]
    for i in range(n_effects[kind]):
        scope = effects[kind, i, 0]
        nxt = effects[kind, i, 1]
        v = t + effects[kind, i, 2]
        if scope == 0:
            if next_bank[u, bank, nxt] < v:
                next_bank[u, bank, nxt] = v
        elif scope == 1:
            if next_group[u, group, nxt] < v:
                next_group[u, group, nxt] = v
        elif scope == 2:
            if next_rank[u, r, nxt] < v:
                next_rank[u, r, nxt] = v
        elif scope == 3:
            if next_unit[u, nxt] < v:
                next_unit[u, nxt] = v
        else:
            for x in range(par["ranks"]):
                if x != r and next_rank[u, x, nxt] < v:
                    next_rank[u, x, nxt] = v
    if kind == ACT:
        n = ranks[u, r, FAW_N]
        if n < 4:
            faw[u, r, (ranks[u, r, FAW_HEAD] + n) % 4] = t
            ranks[u, r, FAW_N] = n + 1
        else:
            head = ranks[u, r, FAW_HEAD]
            faw[u, r, head] = t
            ranks[u, r, FAW_HEAD] = (head + 1) % 4


@njit_noref
def _admit(st: State, u: int) -> None:
    """Move the pending bursts that have arrived by the unit's time into their queues,
    in order, while there is room."""
    ctrl, par = st[0][u], st[1][0]
    qlen, queue, pending = st[10], st[11], st[12]
    t = ctrl["t"]
    while ctrl["head"] < ctrl["tail"]:
        p = ctrl["head"]
        if pending[u, p, P_ARRIVAL] > t:
            return
        if pending[u, p, P_WRITE]:
            if ctrl["n_wq"] >= par["write_queue"]:
                return
            ctrl["n_wq"] += 1
            d = 1
        else:
            if ctrl["n_rq"] >= par["read_queue"]:
                return
            ctrl["n_rq"] += 1
            d = 0
        ctrl["head"] = p + 1
        bank = pending[u, p, P_BANK]
        i = qlen[u, d, bank]
        queue[u, d, bank, i, Q_ROW] = pending[u, p, P_ROW]
        queue[u, d, bank, i, Q_SEQ] = pending[u, p, P_SEQ]
        queue[u, d, bank, i, Q_REQ] = pending[u, p, P_REQ]
        queue[u, d, bank, i, Q_ADMITTED] = t
        qlen[u, d, bank] = i + 1


@njit_noref
def busy(st: State, u: int) -> bool:
    """Whether unit ``u`` has bursts pending or queued."""
    ctrl = st[0][u]
    return bool(ctrl["head"] < ctrl["tail"] or ctrl["n_rq"] > 0 or ctrl["n_wq"] > 0)


@njit_noref
def _pick_refresh_bank(st: State, u: int) -> int:
    """The bank to refresh next (JEDEC lets the controller choose the order within a
    round): one not yet refreshed this round, preferring a bank no queued request needs
    and, among those, the one accessed most recently, which traffic that has moved on
    will need last."""
    par = st[1][0]
    banks, qlen = st[2], st[10]
    best = -1
    best_wanted = 9
    best_age = -INF
    for b in range(par["nb"]):
        if banks[u, b, PB_DONE]:
            continue
        wanted = 1 if (qlen[u, 0, b] > 0 or qlen[u, 1, b] > 0) else 0
        age = -banks[u, b, LAST_CAS]
        if wanted < best_wanted or (wanted == best_wanted and age < best_age):
            best, best_wanted, best_age = b, wanted, age
    return best


@njit_noref
def _close(st: State, u: int, r: int, t: int) -> None:
    """A bank of rank ``r`` closes at ``t``: the rank's active time ends with its last."""
    ranks = st[3]
    ranks[u, r, N_OPEN] -= 1
    if ranks[u, r, N_OPEN] == 0:
        st[0][u]["active_total"] += t - ranks[u, r, ACTIVE_SINCE]


@njit_noref
def _queued_hit(st: State, u: int, bank: int, row: int) -> bool:
    """Whether a queued burst (read or write) wants ``row`` of ``bank``."""
    qlen, queue = st[10], st[11]
    for d in range(2):
        for i in range(qlen[u, d, bank]):
            if queue[u, d, bank, i, Q_ROW] == row:
                return True
    return False


@njit_noref
def _issue(st: State, u: int, kind: int, bank: int, d: int, slot: int, t: int) -> int:
    """Issue a command of ``kind`` to ``bank`` at ``t`` (for RD, WR and ACT, for the
    burst in ``slot`` of the bank's queue of direction ``d``); the request id of a
    column access, else ``_OTHER``."""
    ctrl, par = st[0][u], st[1][0]
    banks, ranks, counts, qlen, queue = st[2], st[3], st[9], st[10], st[11]
    requests, done = st[13], st[14]
    ctrl["t"] = t
    r = bank // par["banks"]
    row = -1
    out = _OTHER
    if ctrl["first_use"] < 0:
        ctrl["first_use"] = t
    if kind == RD or kind == WR:
        write = kind == WR
        row = queue[u, d, bank, slot, Q_ROW]
        seq = queue[u, d, bank, slot, Q_SEQ]
        req = queue[u, d, bank, slot, Q_REQ]
        admitted = queue[u, d, bank, slot, Q_ADMITTED]
        n = qlen[u, d, bank]
        for i in range(slot, n - 1):
            for f in range(QUEUED_FIELDS):
                queue[u, d, bank, i, f] = queue[u, d, bank, i + 1, f]
        qlen[u, d, bank] = n - 1
        if write:
            ctrl["n_wq"] -= 1
            ctrl["bursts_written"] += 1
        else:
            ctrl["n_rq"] -= 1
            ctrl["bursts_read"] += 1
        banks[u, bank, LAST_CAS] = t
        if banks[u, bank, ACT_SEQ] != seq:
            ctrl["row_hits"] += 1
        if par["closed"] and not _queued_hit(st, u, bank, row):
            kind = WRA if write else RDA
            _close(st, u, r, t)
            banks[u, bank, OPEN_ROW] = -1
        end = t + (par["t_cwl"] if write else par["t_cl"]) + par["t_burst"]
        if end > requests[req, R_END]:
            requests[req, R_END] = end
        if admitted < requests[req, R_START]:
            requests[req, R_START] = admitted
        requests[req, R_LEFT] -= 1
        if requests[req, R_LEFT] == 0:
            done[par["n_done"]] = req
            par["n_done"] += 1
            if requests[req, R_END] > par["last_end"]:
                par["last_end"] = requests[req, R_END]
        out = req
    elif kind == ACT:
        row = queue[u, d, bank, slot, Q_ROW]
        banks[u, bank, ACT_SEQ] = queue[u, d, bank, slot, Q_SEQ]
        banks[u, bank, OPEN_ROW] = row
        if ranks[u, r, N_OPEN] == 0:
            ranks[u, r, ACTIVE_SINCE] = t
        ranks[u, r, N_OPEN] += 1
    elif kind == PRE:
        banks[u, bank, OPEN_ROW] = -1
        _close(st, u, r, t)
    elif kind == PREA:
        for b in range(r * par["banks"], (r + 1) * par["banks"]):
            if banks[u, b, OPEN_ROW] >= 0:
                banks[u, b, OPEN_ROW] = -1
                _close(st, u, r, t)
    elif kind == REF:
        ranks[u, r, REF_DUE] += par["t_refi"]
    elif kind == REFPB:
        ctrl["ref_due_pb"] += par["ref_period_pb"]
        banks[u, bank, PB_DONE] = 1
        ctrl["pb_count"] += 1
        if ctrl["pb_count"] == par["nb"]:
            for b in range(par["nb"]):
                banks[u, b, PB_DONE] = 0
            ctrl["pb_count"] = 0
        ctrl["ref_target"] = -1
    counts[u, kind] += 1
    _apply(st, u, kind, bank, t)
    if st[17][u]:
        log = st[18]
        i = par["n_log"]
        log[i, L_TIME] = t
        log[i, L_KIND] = kind
        log[i, L_BANK] = bank
        log[i, L_ROW] = row
        par["n_log"] = i + 1
    return out


@njit_noref
def _step(st: State, u: int) -> int:
    """Issue unit ``u``'s next command, or advance its time to the next arrival or
    refresh: the request id of a column access issued, ``_OTHER`` for any other
    command or a wait, ``_NOTHING`` when there is nothing to do."""
    _admit(st, u)
    ctrl, par = st[0][u], st[1][0]
    banks, ranks, qlen, queue, pending = st[2], st[3], st[10], st[11], st[12]
    t = ctrl["t"]
    tck = par["tck"]
    best_e = INF
    best_kind = -1
    best_bank = -1
    best_slot = -1
    best_prio = INF
    blocked_rank = -1
    blocked_bank = -1
    next_ref = INF
    # Refresh comes first: it blocks its rank (all-bank) or its bank (per-bank).
    if par["refresh"] == REFRESH_ALL_BANK:
        for r in range(par["ranks"]):
            due = ranks[u, r, REF_DUE]
            if due <= t:
                bank0 = r * par["banks"]
                kind = PREA if ranks[u, r, N_OPEN] > 0 else REF
                e = earliest(st, u, kind, bank0)
                best_e = e if e > t else t
                best_kind, best_bank, best_prio = kind, bank0, -1
                blocked_rank = r
                break
            if due < next_ref:
                next_ref = due
    elif par["refresh"] == REFRESH_PER_BANK:
        if ctrl["ref_due_pb"] <= t:
            if ctrl["ref_target"] < 0:
                ctrl["ref_target"] = _pick_refresh_bank(st, u)
            rb = ctrl["ref_target"]
            kind = PRE if banks[u, rb, OPEN_ROW] >= 0 else REFPB
            e = earliest(st, u, kind, rb)
            best_e = e if e > t else t
            best_kind, best_bank, best_prio = kind, rb, -1
            blocked_bank = rb
        else:
            next_ref = ctrl["ref_due_pb"]
    d = 0
    if blocked_rank < 0 or par["ranks"] > 1:
        # Write drain with hysteresis; writes also go when no read waits.
        if ctrl["draining"]:
            if ctrl["n_wq"] <= par["write_low"]:
                ctrl["draining"] = 0
        elif ctrl["n_wq"] >= par["write_high"]:
            ctrl["draining"] = 1
        use_w = (ctrl["draining"] != 0 or ctrl["n_rq"] == 0) and ctrl["n_wq"] > 0
        d = 1 if use_w else 0
        cas = WR if use_w else RD
        n_banks = par["banks"]
        for bank in range(par["nb"]):
            n = qlen[u, d, bank]
            if n == 0 or bank == blocked_bank or bank // n_banks == blocked_rank:
                continue
            open_row = banks[u, bank, OPEN_ROW]
            slot = 0
            if open_row >= 0:
                slot = -1
                for i in range(n):
                    if queue[u, d, bank, i, Q_ROW] == open_row:
                        slot = i
                        break
                if slot >= 0:
                    kind, prio = cas, queue[u, d, bank, slot, Q_SEQ]
                else:
                    slot = 0
                    kind, prio = PRE, _MISS + queue[u, d, bank, 0, Q_SEQ]
            else:
                kind, prio = ACT, _MISS + queue[u, d, bank, 0, Q_SEQ]
            e = earliest(st, u, kind, bank)
            if e < t:
                e = t
            if e < best_e or (e == best_e and prio < best_prio):
                best_e, best_kind, best_bank, best_slot, best_prio = e, kind, bank, slot, prio
    if best_e < INF:
        best_e = -(-best_e // tck) * tck
    next_arr = INF
    if ctrl["head"] < ctrl["tail"]:
        p = ctrl["head"]
        if pending[u, p, P_WRITE]:
            room = ctrl["n_wq"] < par["write_queue"]
        else:
            room = ctrl["n_rq"] < par["read_queue"]
        if room:
            next_arr = pending[u, p, P_ARRIVAL]
    wake = next_arr if next_arr < next_ref else next_ref
    if best_kind < 0 and wake == INF:
        return _NOTHING
    if best_kind < 0 or wake < best_e:
        if best_kind < 0 and next_arr == INF and not busy(st, u):
            return _NOTHING
        woken = -(-wake // tck) * tck
        ctrl["t"] = woken if woken > t else t
        return _OTHER
    return _issue(st, u, best_kind, best_bank, d, best_slot, t=best_e)


# -- the front end ------------------------------------------------------------------------
@njit_noref
def _bursts(par: Any, stream: bool, address: int, nbytes: int) -> int:
    """The bursts of one transfer: a stream's consecutive ones, or each random access's."""
    if stream:
        shift = par["burst_shift"]
        n: int = ((address + nbytes - 1) >> shift) - (address >> shift) + 1
        return n if n > 0 else 0
    lines: int = -(-nbytes // RANDOM_ACCESS_BYTES)
    return lines * par["rand_bursts"] if lines > 0 else 0


@njit_noref
def _burst(par: Any, stream: bool, address: int, lines: Any, line0: int, j: int) -> int:
    """Burst ``j`` of a transfer at ``address``: a stream's ``j``-th after its first, or
    of a random transfer's accesses (its random lines from ``lines[line0]`` on), burst
    ``j % rand_bursts`` of access ``j // rand_bursts``, whose unit is moved to the
    address's unit plus ``rand_units`` per access, as a channel-hashing front end
    spreads them (and as the fast model assumes)."""
    shift = par["burst_shift"]
    if stream:
        b: int = (address >> shift) + j
        return b
    per = par["rand_bursts"]
    access = j // per
    b = (lines[line0 + access] * RANDOM_ACCESS_BYTES) >> shift
    home = unit_of(par, (address % par["capacity"]) >> shift)
    unit = (home + par["rand_units"] * access) % par["units"]
    pcs = par["pseudo_channels"]
    b &= ~((par["ch_mask"] << par["ch_shift"]) | (par["pc_mask"] << par["pc_shift"]))
    b |= ((unit // pcs) << par["ch_shift"]) | ((unit % pcs) << par["pc_shift"])
    burst: int = b + j % per
    return burst


@njit_noref
def enqueue(st: State, writes: Any, addresses: Any, nbytes: Any, streams: Any,
            arrivals: Any, lines: Any, need: Any) -> int:
    """Queue transfers (``streams``: consecutive bursts, else random 64 B accesses
    whose lines, in order, are ``lines``) arriving at ``arrivals`` on their units'
    pending FIFOs, with request ids and burst sequence numbers from ``PAR.next_req``
    and ``PAR.next_seq`` on (``requests`` has room for them); returns the bursts
    queued, or -1 with nothing queued when a unit's FIFO lacks room (``need``: the
    bursts each unit takes)."""
    ctrl, par = st[0], st[1][0]
    pending, requests = st[12], st[13]
    n = addresses.size
    for u in range(ctrl.size):
        need[u] = 0
    line0 = 0
    for i in range(n):
        stream = streams[i] != 0
        for j in range(_bursts(par, stream, addresses[i], nbytes[i])):
            need[unit_of(par, _burst(par, stream, addresses[i], lines, line0, j))] += 1
        if not stream and nbytes[i] > 0:
            line0 += -(-nbytes[i] // RANDOM_ACCESS_BYTES)
    short = False
    for u in range(ctrl.size):
        if ctrl[u]["tail"] + need[u] > pending.shape[1]:
            short = True
    if short:
        return -1
    req = par["next_req"]
    seq = par["next_seq"]
    line0 = 0
    for i in range(n):
        stream = streams[i] != 0
        count = _bursts(par, stream, addresses[i], nbytes[i])
        requests[req, R_LEFT] = count
        requests[req, R_END] = -1
        requests[req, R_START] = INF
        requests[req, R_ARRIVAL] = arrivals[i]
        for j in range(count):
            b = _burst(par, stream, addresses[i], lines, line0, j)
            u = unit_of(par, b)
            p = ctrl[u]["tail"]
            pending[u, p, P_REQ] = req
            pending[u, p, P_WRITE] = 1 if writes[i] else 0
            pending[u, p, P_BANK] = bank_of(par, b)
            pending[u, p, P_ROW] = row_of(par, b)
            pending[u, p, P_ARRIVAL] = arrivals[i]
            pending[u, p, P_SEQ] = seq
            ctrl[u]["tail"] = p + 1
            seq += 1
        if not stream and nbytes[i] > 0:
            line0 += -(-nbytes[i] // RANDOM_ACCESS_BYTES)
        if writes[i]:
            par["bytes_written"] += nbytes[i]
        else:
            par["bytes_read"] += nbytes[i]
        req += 1
    queued: int = seq - par["next_seq"]
    par["next_req"] = req
    par["next_seq"] = seq
    return queued


@njit_noref
def _left(st: State, u: int, req: int) -> int:
    """Bursts of request ``req`` that unit ``u`` has still to issue (pending or
    queued). The pending FIFO holds requests in id order."""
    ctrl = st[0][u]
    qlen, queue, pending = st[10], st[11], st[12]
    n = 0
    for p in range(ctrl["head"], ctrl["tail"]):
        q = pending[u, p, P_REQ]
        if q == req:
            n += 1
        elif q > req:
            break
    for d in range(2):
        for b in range(qlen.shape[2]):
            for i in range(qlen[u, d, b]):
                if queue[u, d, b, i, Q_REQ] == req:
                    n += 1
    return n


@njit_noref
def run(st: State, first: int, last: int, stop: int, max_steps: int) -> int:
    """Serve units ``first`` to ``last - 1`` in turn, each until ``stop``: ``UNTIL_IDLE``
    (no burst pending or queued), ``NO_STOP`` (only ``max_steps``) or a request id (its
    bursts on the unit issued). Returns ``DONE``, or why it stopped early (``LOG_FULL``:
    the log is full or holds a finished unit's commands; ``STUCK``; ``STEPS``);
    ``PAR.stop_unit`` says at which unit."""
    par = st[1][0]
    logging = st[17]
    for u in range(first, last):
        par["stop_unit"] = u
        if stop >= 0:
            left = _left(st, u, stop)
            st[0][u]["left"] = left
            if left == 0:
                continue
        steps = 0
        while True:
            if stop >= 0:
                if st[0][u]["left"] == 0:
                    break
            elif stop == UNTIL_IDLE and not busy(st, u):
                break
            if steps == max_steps:
                return STEPS
            if logging[u] and par["n_log"] == par["log_cap"]:
                return LOG_FULL
            got = _step(st, u)
            if got == _NOTHING:
                return STUCK
            if got == stop:
                st[0][u]["left"] -= 1
            steps += 1
        if par["n_log"]:
            return LOG_FULL  # the log holds one unit's commands at a time
    return DONE
