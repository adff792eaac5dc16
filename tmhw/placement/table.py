"""The placement table: for each op of an iteration, which page runs move between the
tiers, in which direction, released at which op, and needed by which op.

A static policy (TM-Training, FlashNeuron, Sentinel, AutoTM) builds one table from the
workload and a profile of op times; the executor replays it every iteration. A reactive
policy (demand paging, FlatFlash) builds a table with no actions and lets the executor's
faults do the work. Pure data: no SimPy.

Semantics the executor guarantees (tests check them):

- ``initial[p]``: page ``p`` is in HBM when an iteration starts; flash holds every other
  page that has live data. The table leaves the same set resident at the end.
- ``PREFETCH`` (flash -> HBM) is released to the DMA engine when op ``issue_op`` starts
  and must be resident before op ``deadline_op`` starts (an op of the next iteration
  when ``deadline_op < issue_op``).
- ``WRITEBACK`` (HBM -> flash, then free) and ``DROP`` (free; the data is dead or flash
  has it) are released when op ``issue_op`` ends. A write-back's ``deadline_op`` is the
  op from which its space is needed (-1: the next op); the DMA engine orders it by
  that deadline among the prefetches. Pages flash already holds are freed at once.
  A ``WRITEBACK`` with ``keep`` is a clean: the dirty pages are written back and stay
  resident (flash then holds a copy, so the eviction that follows frees them at once).
- Pages an op writes are allocated in HBM at the op's start; pages an op reads that are
  not resident fault (counted, fetched at top priority).
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np


class Action(StrEnum):
    PREFETCH = "prefetch"
    WRITEBACK = "writeback"
    DROP = "drop"


@dataclass(slots=True)
class Move:
    """One row of the table: ``action`` on pages [p0, p1) of ``tensor``."""

    action: Action
    tensor: int
    p0: int
    p1: int
    issue_op: int
    deadline_op: int = -1
    issue_ps: int = -1       # planned release time, for display
    deadline_ps: int = -1    # planned deadline (start of deadline_op), for display
    #: DROP only: the next access overwrites the data without reading it, so it is dead
    #: now (no write-back, flash copies trimmed)
    dead: bool = False
    #: PREFETCH only: the op may start before the tail arrives and consume the tensor
    #: in order as it streams in (data splitting)
    stream: bool = False
    #: WRITEBACK only: write the dirty pages back but keep them in HBM (a clean, done
    #: while the flash's write direction has time, so a later eviction costs nothing)
    keep: bool = False

    @property
    def npages(self) -> int:
        return self.p1 - self.p0


@dataclass(slots=True)
class PlacementTable:
    """The moves of one iteration, indexed by the op that releases them."""

    policy: str
    nops: int
    initial: np.ndarray                      # bool per page: resident at iteration start
    moves: list[Move] = field(default_factory=list)
    #: per tensor id: fraction of its pages kept resident (data splitting)
    split: dict[int, float] = field(default_factory=dict)
    #: a reactive policy's table plans no moves but frees: faults do the fetching, and
    #: the policy's eviction rule (``Policy.eviction_order``) is not an emergency
    reactive: bool = False
    fault_chunk_pages: int = 0               # 0: fetch a fault's pages as one request
    notes: dict[str, float] = field(default_factory=dict)
    _at_start: list[list[Move]] | None = None
    _at_end: list[list[Move]] | None = None
    _due: list[list[Move]] | None = None

    def digest(self) -> str:
        """A key of everything the executor reads from the table (the initial placement,
        the moves, the split fractions, the reactive mode), not the notes or the planned
        times shown for display: two tables with the same digest run the same."""
        h = hashlib.sha256()
        h.update(np.packbits(self.initial).tobytes())
        h.update(repr((self.nops, self.reactive, self.fault_chunk_pages,
                       sorted(self.split.items()),
                       [(m.action.value, m.tensor, m.p0, m.p1, m.issue_op, m.deadline_op,
                         m.dead, m.stream, m.keep) for m in self.moves])).encode())
        return h.hexdigest()

    def index(self) -> None:
        """Group moves by the op that releases them (call after editing ``moves``)."""
        self._at_start = [[] for _ in range(self.nops)]
        self._at_end = [[] for _ in range(self.nops)]
        self._due = [[] for _ in range(self.nops)]
        for m in self.moves:
            if not (0 <= m.issue_op < self.nops):
                raise ValueError(f"move {m} released at op {m.issue_op} of {self.nops}")
            if m.action == Action.PREFETCH:
                if not (0 <= m.deadline_op < self.nops):
                    raise ValueError(f"prefetch {m} due at op {m.deadline_op} of {self.nops}")
                self._at_start[m.issue_op].append(m)
                self._due[m.deadline_op].append(m)
            else:
                self._at_end[m.issue_op].append(m)
        n = self.nops
        for lst in self._at_start:
            lst.sort(key=lambda m: (m.deadline_op + (n if m.deadline_op < m.issue_op else 0),
                                    m.p0))

    def due_at(self, op: int) -> list[Move]:
        """Prefetches whose deadline is ``op``."""
        if self._due is None:
            self.index()
        assert self._due is not None
        return self._due[op]

    def released_at_start(self, op: int) -> list[Move]:
        if self._at_start is None:
            self.index()
        assert self._at_start is not None
        return self._at_start[op]

    def released_at_end(self, op: int) -> list[Move]:
        if self._at_end is None:
            self.index()
        assert self._at_end is not None
        return self._at_end[op]

    # -- size and display ----------------------------------------------------------------
    @property
    def rows(self) -> int:
        return len(self.moves)

    def size_bytes(self) -> int:
        """Storage of the table as a controller would hold it: per row an action byte,
        tensor id, page range and two op indices (4 bytes each), plus the initial
        residency bitmap."""
        return self.rows * (1 + 4 * 5) + (len(self.initial) + 7) // 8

    def bytes_by_action(self, page_size: int) -> dict[str, int]:
        out = {a.value: 0 for a in Action}
        for m in self.moves:
            out[m.action.value] += m.npages * page_size
        return out

    def to_csv(self, names: list[str], page_size: int) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["op", "tensor", "page_start", "page_end", "bytes", "action", "tier",
                    "issue_op", "deadline_op", "issue_ps", "deadline_ps"])
        for m in sorted(self.moves, key=lambda m: (m.issue_op, m.action.value, m.p0)):
            tier = "hbm" if m.action == Action.PREFETCH else "flash"
            w.writerow([m.issue_op, names[m.tensor], m.p0, m.p1, m.npages * page_size,
                        m.action.value, tier if m.action != Action.DROP else "-",
                        m.issue_op, m.deadline_op, m.issue_ps, m.deadline_ps])
        return buf.getvalue()
