"""DRAM timing constraints as data, and the earliest legal issue time of a command.

Pure: no SimPy, no controller state. A ``Rule`` says that a command of kind ``nxt``
may issue no earlier than ``gap`` ps after the ``window``-th latest command of kind
``prev`` in the same ``scope`` (bank, bank group, rank, unit, or another rank of the
unit). ``rules(cfg)`` lists every constraint of the JEDEC standards modelled here (after
JESD235 HBM2, JESD238 HBM3, JESD79-4 DDR4, JESD79-5 DDR5, JESD209-5 LPDDR5, as Ramulator 2
and DRAMsim3 encode them):

==================== ================================================================
ACT -> ACT           tRC same bank, tRRD_L same bank group, tRRD_S same rank,
                     at most 4 in tFAW per rank
ACT -> RD / WR       tRCD / tRCD_WR
ACT -> PRE           tRAS (same bank; PREA: any bank of the rank)
PRE -> ACT           tRP
RD -> RD, WR -> WR   max(tCCD_L, t_burst) same bank group, max(tCCD_S, t_burst) same
                     rank, t_burst + tRTRS another rank
RD -> WR             CL + t_burst + t_rtw - CWL (data bus turnaround)
WR -> RD             CWL + t_burst + tWTR_L / tWTR_S (same bank group / rank);
                     CWL + t_burst + tRTRS - CL another rank
RD -> PRE            tRTP;  WR -> PRE: CWL + t_burst + tWR
RDA / WRA -> ACT     tRTP + tRP / CWL + t_burst + tWR + tRP (auto-precharge)
REF (all-bank)       after PRE/PREA tRP, ACT tRC, RDA tRTP + tRP, WRA CWL + t_burst +
                     tWR + tRP; blocks ACT and REF of its rank for tRFC
REFPB (per-bank)     blocks its bank for tRFCpb, other banks' ACT and REFPB for tRREFD;
                     needs tRRD_S after an ACT of the rank, tRC after one of its bank
command bus          one command per tCK per bus (separate row and column buses when
                     ``dual_command_bus``)
==================== ================================================================

``earliest_issue(history, cmd, ...)`` folds a command history into a ``TimingIndex``
and asks it; the detailed controller and the checker (``dram/checker.py``) both use
these rules, the controller forward (next-allowed times) and the checker backward (last
occurrences), so that a bookkeeping slip in either shows up as a violation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from dram.config import DramConfig


class Cmd(IntEnum):
    ACT = 0
    PRE = 1
    PREA = 2
    RD = 3
    WR = 4
    RDA = 5
    WRA = 6
    REF = 7
    REFPB = 8


ROW_CMDS = frozenset({Cmd.ACT, Cmd.PRE, Cmd.PREA, Cmd.REF, Cmd.REFPB})
COL_CMDS = frozenset({Cmd.RD, Cmd.WR, Cmd.RDA, Cmd.WRA})
READS = frozenset({Cmd.RD, Cmd.RDA})
WRITES = frozenset({Cmd.WR, Cmd.WRA})


class Scope(IntEnum):
    BANK = 0
    BANK_GROUP = 1
    RANK = 2
    UNIT = 3
    OTHER_RANK = 4


@dataclass(frozen=True, slots=True)
class Command:
    """One command on one unit. ``bank`` is the flat bank index within the unit
    (rank-major); for REF and PREA it is any bank of the rank."""

    time: int
    kind: Cmd
    rank: int = 0
    bank_group: int = 0
    bank: int = 0
    row: int = -1


@dataclass(frozen=True, slots=True)
class Rule:
    prev: frozenset[Cmd]
    nxt: frozenset[Cmd]
    scope: Scope
    gap: int
    window: int = 1
    name: str = ""


def rules(cfg: DramConfig) -> list[Rule]:
    """Every timing constraint of ``cfg`` as a ``Rule`` (gaps in ps)."""
    c = cfg
    tb = c.t_burst
    wr_to_pre = c.t_cwl + tb + c.t_wr
    fs = frozenset
    R: list[Rule] = []

    def add(prev: Iterable[Cmd], nxt: Iterable[Cmd], scope: Scope, gap: int,
            name: str, window: int = 1) -> None:
        if gap > 0:
            R.append(Rule(fs(prev), fs(nxt), scope, gap, window, name))

    A, P, PA, RF, RFP = Cmd.ACT, Cmd.PRE, Cmd.PREA, Cmd.REF, Cmd.REFPB
    # Row activation.
    add([A], [A], Scope.BANK, c.t_rc, "tRC")
    add([A], [A], Scope.BANK_GROUP, c.t_rrd_l, "tRRD_L")
    add([A], [A], Scope.RANK, c.t_rrd_s, "tRRD_S")
    add([A], [A], Scope.RANK, c.t_faw, "tFAW", window=4)
    add([A], [Cmd.RD, Cmd.RDA], Scope.BANK, c.t_rcd, "tRCD")
    add([A], [Cmd.WR, Cmd.WRA], Scope.BANK, c.t_rcd_wr, "tRCD_WR")
    add([A], [P], Scope.BANK, c.t_ras, "tRAS")
    add([A], [PA], Scope.RANK, c.t_ras, "tRAS(PREA)")
    add([P], [A], Scope.BANK, c.t_rp, "tRP")
    add([PA], [A], Scope.RANK, c.t_rp, "tRP(PREA)")
    # Column accesses.
    add(READS, READS, Scope.BANK_GROUP, max(c.t_ccd_l, tb), "tCCD_L(RD)")
    add(READS, READS, Scope.RANK, max(c.t_ccd_s, tb), "tCCD_S(RD)")
    add(WRITES, WRITES, Scope.BANK_GROUP, max(c.t_ccd_l, tb), "tCCD_L(WR)")
    add(WRITES, WRITES, Scope.RANK, max(c.t_ccd_s, tb), "tCCD_S(WR)")
    add(READS, READS, Scope.OTHER_RANK, tb + c.t_rtrs, "tRTRS(RD)")
    add(WRITES, WRITES, Scope.OTHER_RANK, tb + c.t_rtrs, "tRTRS(WR)")
    add(READS, WRITES, Scope.UNIT, c.t_cl + tb + c.t_rtw - c.t_cwl, "RD->WR")
    add(WRITES, READS, Scope.BANK_GROUP, c.t_cwl + tb + c.t_wtr_l, "tWTR_L")
    add(WRITES, READS, Scope.RANK, c.t_cwl + tb + c.t_wtr_s, "tWTR_S")
    add(WRITES, READS, Scope.OTHER_RANK, c.t_cwl + tb + c.t_rtrs - c.t_cl, "WR->RD rank")
    add(READS, READS, Scope.UNIT, tb, "data bus(RD)")
    add(WRITES, WRITES, Scope.UNIT, tb, "data bus(WR)")
    # Precharge after access, and auto-precharge.
    add([Cmd.RD], [P], Scope.BANK, c.t_rtp, "tRTP")
    add([Cmd.WR], [P], Scope.BANK, wr_to_pre, "tWR")
    add([Cmd.RD, Cmd.RDA], [PA], Scope.RANK, c.t_rtp, "tRTP(PREA)")
    add([Cmd.WR, Cmd.WRA], [PA], Scope.RANK, wr_to_pre, "tWR(PREA)")
    add([Cmd.RDA], [A], Scope.BANK, c.t_rtp + c.t_rp, "tRTP+tRP")
    add([Cmd.WRA], [A], Scope.BANK, wr_to_pre + c.t_rp, "tWR+tRP")
    # All-bank refresh.
    add([A], [RF], Scope.RANK, c.t_rc, "tRC(REF)")
    add([P, PA], [RF], Scope.RANK, c.t_rp, "tRP(REF)")
    add([Cmd.RDA], [RF], Scope.RANK, c.t_rtp + c.t_rp, "tRTP+tRP(REF)")
    add([Cmd.WRA], [RF], Scope.RANK, wr_to_pre + c.t_rp, "tWR+tRP(REF)")
    add([RF], [A, RF, RFP, PA, P], Scope.RANK, c.t_rfc, "tRFC")
    # Per-bank refresh.
    if c.t_rfc_pb > 0:
        add([RFP], [A, RFP], Scope.BANK, c.t_rfc_pb, "tRFCpb")
        add([RFP], [A, RFP], Scope.RANK, max(c.t_rrefd, c.tck), "tRREFD")
        add([RFP], [RF], Scope.RANK, c.t_rfc_pb, "tRFCpb(REF)")
        add([A], [RFP], Scope.RANK, c.t_rrd_s, "tRRD_S(REFPB)")
        add([A], [RFP], Scope.BANK, c.t_rc, "tRC(REFPB)")
        add([P, PA], [RFP], Scope.BANK, c.t_rp, "tRP(REFPB)")
        add([PA], [RFP], Scope.RANK, c.t_rp, "tRP(PREA,REFPB)")
        add([Cmd.RDA], [RFP], Scope.BANK, c.t_rtp + c.t_rp, "tRTP+tRP(REFPB)")
        add([Cmd.WRA], [RFP], Scope.BANK, wr_to_pre + c.t_rp, "tWR+tRP(REFPB)")
    # Command buses.
    if c.dual_command_bus:
        add(ROW_CMDS, ROW_CMDS, Scope.UNIT, c.tck, "row command bus")
        add(COL_CMDS, COL_CMDS, Scope.UNIT, c.tck, "column command bus")
    else:
        add(ROW_CMDS | COL_CMDS, ROW_CMDS | COL_CMDS, Scope.UNIT, c.tck, "command bus")
    return R


def ref_phase(cfg: DramConfig, unit: int, rank: int = 0) -> int:
    """When unit ``unit`` (rank ``rank``) first refreshes, ps. Units and ranks are
    staggered evenly over one interval (all-bank: tREFI; per-bank: tREFI / banks), at the
    middle of their slot, so that a run of any length sees tRFC/tREFI on average. A unit's
    ranks take turns every tREFI / ranks (DRAMsim3's ``RANK_LEVEL_STAGGERED``), the units
    sitting between them: rank ``r`` of unit ``u`` has slot ``r x units + u``."""
    if cfg.refresh == "per-bank":
        period = cfg.t_refi // (cfg.ranks * cfg.banks)
        return ((2 * unit + 1) * period) // (2 * cfg.units)
    slot = rank * cfg.units + unit
    return ((2 * slot + 1) * cfg.t_refi) // (2 * cfg.units * cfg.ranks)


def align(t: int, tck: int) -> int:
    """``t`` rounded up to a clock edge."""
    return -(-t // tck) * tck


class TimingIndex:
    """Last occurrences of each rule's ``prev`` commands per scope instance, so that the
    earliest legal time of a command is O(rules). Feed it commands in issue order."""

    def __init__(self, cfg: DramConfig, rule_list: list[Rule] | None = None) -> None:
        self.cfg = cfg
        self.rules = rule_list if rule_list is not None else rules(cfg)
        self.by_prev: dict[Cmd, list[int]] = {k: [] for k in Cmd}
        self.by_next: dict[Cmd, list[int]] = {k: [] for k in Cmd}
        for i, r in enumerate(self.rules):
            for k in r.prev:
                self.by_prev[k].append(i)
            for k in r.nxt:
                self.by_next[k].append(i)
        # (rule, scope key) -> the last ``window`` times.
        self.last: dict[tuple[int, tuple[int, ...]], deque[int]] = {}

    @staticmethod
    def key(scope: Scope, cmd: Command) -> tuple[int, ...]:
        if scope is Scope.BANK:
            return (cmd.rank, cmd.bank)
        if scope is Scope.BANK_GROUP:
            return (cmd.rank, cmd.bank_group)
        if scope is Scope.RANK or scope is Scope.OTHER_RANK:
            return (cmd.rank,)
        return ()

    def record(self, cmd: Command) -> None:
        for i in self.by_prev[cmd.kind]:
            r = self.rules[i]
            k = (i, self.key(r.scope, cmd))
            d = self.last.get(k)
            if d is None:
                d = self.last[k] = deque(maxlen=r.window)
            d.append(cmd.time)

    def earliest(self, cmd: Command) -> tuple[int, str]:
        """Earliest legal time of ``cmd`` (its ``time`` is ignored) and the binding rule."""
        best, why = 0, ""
        for i in self.by_next[cmd.kind]:
            r = self.rules[i]
            keys: list[tuple[int, tuple[int, ...]]]
            if r.scope is Scope.OTHER_RANK:
                keys = [(i, (rk,)) for rk in range(self.cfg.ranks) if rk != cmd.rank]
            else:
                keys = [(i, self.key(r.scope, cmd))]
            for k in keys:
                d = self.last.get(k)
                if d is not None and len(d) == r.window:
                    t = d[0] + r.gap
                    if t > best:
                        best, why = t, r.name
        return align(best, self.cfg.tck), why


def earliest_issue(history: Iterable[Command], cmd: Command, cfg: DramConfig) -> int:
    """The earliest time ``cmd`` may issue after the commands of ``history`` (in issue
    order) on one unit, by the timing rules alone (bank state is not checked)."""
    idx = TimingIndex(cfg)
    for h in history:
        idx.record(h)
    return idx.earliest(cmd)[0]
