"""Replays a unit's command log against ``dram/timing.py`` and the bank state machine.

A command is legal when it sits on a clock edge, after the previous command, no earlier
than every timing rule allows (``TimingIndex.earliest``), and the bank state permits it:
ACT to a precharged bank, RD/WR to the open row, PRE to an open bank, REF with every
bank of the rank precharged, REFPB to a precharged bank. ``refresh_debt`` checks the
other direction: that refreshes keep up with tREFI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dram.config import DramConfig
from dram.timing import Cmd, Command, TimingIndex


@dataclass(frozen=True, slots=True)
class Violation:
    index: int
    command: Command
    reason: str


def check_log(cfg: DramConfig, log: Sequence[Command]) -> list[Violation]:
    """Every violation in one unit's command log (empty when all commands are legal)."""
    idx = TimingIndex(cfg)
    nb = cfg.ranks * cfg.banks
    open_row = [-1] * nb
    out: list[Violation] = []
    last = -1
    for i, cmd in enumerate(log):
        t = cmd.time
        if t % cfg.tck:
            out.append(Violation(i, cmd, "not on a clock edge"))
        if t < last:
            out.append(Violation(i, cmd, "issued before the previous command"))
        e, why = idx.earliest(cmd)
        if t < e:
            out.append(Violation(i, cmd, f"{why}: earliest {e} ps"))
        k, b = cmd.kind, cmd.bank
        rank_banks = range(cmd.rank * cfg.banks, (cmd.rank + 1) * cfg.banks)
        if k is Cmd.ACT:
            if open_row[b] >= 0:
                out.append(Violation(i, cmd, f"ACT to open bank (row {open_row[b]})"))
            open_row[b] = cmd.row
        elif k in (Cmd.RD, Cmd.WR, Cmd.RDA, Cmd.WRA):
            if open_row[b] != cmd.row:
                out.append(Violation(i, cmd, f"column access to row {cmd.row}, open "
                                             f"{open_row[b]}"))
            if k in (Cmd.RDA, Cmd.WRA):
                open_row[b] = -1
        elif k is Cmd.PRE:
            if open_row[b] < 0:
                out.append(Violation(i, cmd, "PRE to a precharged bank"))
            open_row[b] = -1
        elif k is Cmd.PREA:
            for x in rank_banks:
                open_row[x] = -1
        elif k is Cmd.REF:
            if any(open_row[x] >= 0 for x in rank_banks):
                out.append(Violation(i, cmd, "REF with a bank open"))
        elif k is Cmd.REFPB:
            if open_row[b] >= 0:
                out.append(Violation(i, cmd, "REFPB to an open bank"))
        idx.record(cmd)
        last = t
    return out


def refresh_debt(cfg: DramConfig, log: Sequence[Command], end: int) -> int:
    """Refreshes owed at ``end`` beyond the 8 JEDEC lets a controller postpone
    (0 when refresh keeps up). Per-bank refreshes count 1/banks each."""
    if cfg.refresh == "off":
        return 0
    nb = cfg.ranks * cfg.banks
    done = sum(1 for c in log if c.kind is Cmd.REF) / cfg.ranks
    done += sum(1 for c in log if c.kind is Cmd.REFPB) / nb
    owed = end // cfg.t_refi
    return max(0, int(owed - done) - 8)
