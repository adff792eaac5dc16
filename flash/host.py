"""The host interface of one SSD: its NVMe queue and its full-duplex PCIe link (MQSim's
``Host_Interface_NVMe`` and the ``PCIe_Link``).

- **NVMe queue.** The device holds at most ``nvme_queue_depth`` commands; a further
  command waits in the host's submission queue until the oldest one completes
  (``fetch``).
- **Controller.** It processes at most ``controller_iops`` commands per second: a
  command is taken no sooner than ``1 / controller_iops`` after the one before
  (``fetch``; the batch kernels of ``flash.pages`` space theirs the same way).
- **PCIe link.** Each direction is its own lane (full duplex): reads leave on
  ``link_rd`` as their data comes off the channels (cut-through), writes come in on
  ``link_wr`` before they are buffered or programmed. A direction carries transfers in
  the order their data is ready, not the order their commands came in: a transfer is
  booked when its command is taken, into the lane's earliest idle gap from its data's
  ready time (``flash.engine.gaps``; the two directions are rows of one
  ``GapBank``), so a read that a busy die delays does not hold the link against a later
  read whose data is out first. (A busy-until FIFO here made 8 KiB random reads at
  queue depth 64 on mqsim-default wait 90 us on average for a link that was 51% busy.)

Pure bookkeeping: no SimPy events.
"""

from __future__ import annotations

import heapq
from collections import deque
from itertools import repeat

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from flash.engine.gaps import BankLane, GapBank
from flash.pcie import SKP_FRACTION
from tmhw.sim.jit import njit, njit_noref
from tmhw.sim.rowheap import row_pop, row_push
from tmhw.sim.units import S

I64 = npt.NDArray[np.int64]


class HostInterface:
    """NVMe queue and PCIe link of one device."""

    __slots__ = ("depth", "_open", "links", "link_rd", "link_wr", "rd_ps_per_byte",
                 "wr_ps_per_byte", "rd_cmd_ps", "wr_cmd_ps", "queue_waits", "ctl_ps",
                 "ctl_free")

    def __init__(self, cfg: FlashConfig, record: bool = False) -> None:
        self.depth = cfg.nvme_queue_depth
        self._open: list[int] = []  # completion times of the commands the device holds
        #: the two directions as rows of one bank (read 0, write 1), so a compiled
        #: booking reaches them as arrays (``flash.pages``)
        self.links = GapBank("link", 2, record)
        self.link_rd = BankLane(self.links, 0)
        self.link_wr = BankLane(self.links, 1)
        pcie = cfg.pcie
        #: a payload byte's time on each direction (framing included) and a command's
        #: NVMe packets on its data's direction (``flash.pcie``)
        self.rd_ps_per_byte = S / pcie.read_bytes_per_s
        self.wr_ps_per_byte = S / pcie.write_bytes_per_s
        line = S / (pcie.line_bytes_per_s * (1 - SKP_FRACTION))
        self.rd_cmd_ps = round(pcie.read_command_bytes * line)
        self.wr_cmd_ps = round(pcie.write_command_bytes * line)
        self.queue_waits = 0
        #: the controller's time per command (``controller_iops``; 0: unbounded) and
        #: when it can take the next one
        self.ctl_ps = round(S / cfg.controller_iops) if cfg.controller_iops else 0
        self.ctl_free = 0

    def fetch(self, earliest: int) -> int:
        """When the device takes a command submitted at ``earliest``: once it holds
        fewer than ``depth`` and its controller has finished the command before."""
        t = self._slot(earliest)
        if self.ctl_ps:
            if self.ctl_free > t:
                t = self.ctl_free
            self.ctl_free = t + self.ctl_ps
        return t

    def _slot(self, earliest: int) -> int:
        q = self._open
        if len(q) < self.depth:
            return earliest
        while q and q[0] <= earliest:
            heapq.heappop(q)
        if len(q) < self.depth:
            return earliest
        self.queue_waits += 1
        return heapq.heappop(q)

    def fetch_many(self, n: int, earliest: int) -> int:
        """``fetch`` of ``n`` commands submitted at ``earliest``, each completing after
        ``earliest`` (``done`` in between): how many of them, first to last, the device
        takes at ``earliest``. The commands complete at or before ``earliest`` leave
        the queue now if any of the ``n`` fetches would find it full and drop them
        (later completions are never dropped there, and under ``depth`` commands no
        fetch looks), so the queue ends as those fetches leave it."""
        q = self._open
        if len(q) + n - 1 >= self.depth:
            if q and max(q) <= earliest:  # all complete (one pass in C, not a pop each)
                q.clear()
            while q and q[0] <= earliest:
                heapq.heappop(q)
        return max(0, min(n, self.depth - len(q)))

    def done_many(self, ends: list[int]) -> None:
        """``done`` of each of ``ends`` in turn, the queue staying within ``depth``
        (after ``fetch_many``)."""
        # the pushes in C (a deque of no length drains the map); not a heapify of the
        # queue, which may hold up to ``depth`` commands
        deque(map(heapq.heappush, repeat(self._open, len(ends)), ends), maxlen=0)

    def queue_rows(self) -> tuple[I64, int]:
        """The NVMe queue as a compiled loop keeps it (``nvme_fetch``, ``nvme_done``): a
        heap of one column with room for what ``nvme_done`` may hold, and its count."""
        q = self._open
        rows = np.zeros((max(2 * self.depth, len(q)) + 1, 1), dtype=np.int64)
        rows[:len(q), 0] = q  # (a heap as it stands)
        return rows, len(q)

    def take_back(self, rows: I64, count: int, waits: int, ctl_free: int) -> None:
        """The NVMe queue (``count`` commands of ``rows``), its waits and the
        controller's next free time as a compiled loop left them."""
        self._open = rows[:count, 0].tolist()
        self.queue_waits = waits
        self.ctl_free = ctl_free

    def held(self, now: int) -> int:
        """Commands the device holds at ``now``, of those whose completion is known."""
        q = self._open
        while q and q[0] <= now:
            heapq.heappop(q)
        return len(q)

    def done(self, end: int) -> None:
        """The command fetched last completes at ``end``."""
        q = self._open
        heapq.heappush(q, end)
        if len(q) > 2 * self.depth:  # forget commands long complete
            q[:] = heapq.nlargest(self.depth, q)
            heapq.heapify(q)

    def read_ps(self, nbytes: int, command: bool = True) -> int:
        """A read's time on the link: its data and (``command``) its NVMe packets."""
        return int(nbytes * self.rd_ps_per_byte) + (self.rd_cmd_ps if command else 0)

    def write_ps(self, nbytes: int) -> int:
        """A write command's time on the link: its data and its NVMe packets."""
        return int(nbytes * self.wr_ps_per_byte) + self.wr_cmd_ps

    def to_host(self, start: int, nbytes: int, command: bool = True) -> int:
        """Read data crossing to the host from ``start`` on; the end of its transfer
        (``command`` False: memory reads through the BAR, no NVMe command)."""
        return self.link_rd.book(start, self.read_ps(nbytes, command))

    def from_host(self, earliest: int, nbytes: int) -> tuple[int, int]:
        """Write data crossing from the host; (start, end) of its transfer."""
        dur = self.write_ps(nbytes)
        end = self.link_wr.book(earliest, dur)
        return end - dur, end


@njit_noref
def ctl_take(rec: np.void, t: int) -> int:
    """``HostInterface.fetch``'s controller compiled: when a command the NVMe queue
    hands over at ``t`` is taken, the controller's next free time (``ctl``) and time per
    command (``ctl_ps``, 0: none) in the record ``rec``."""
    if rec["ctl_ps"]:
        if rec["ctl"] > t:
            t = rec["ctl"]
        rec["ctl"] = t + rec["ctl_ps"]
    return t


@njit_noref
def nvme_fetch(queue: I64, lp: np.void, t: int) -> int:
    """``HostInterface._slot`` compiled: when the device takes a command submitted at
    ``t``, its NVMe queue (the ``nq`` commands of the record ``lp`` in ``queue``, a
    heap of one column) holding fewer than ``depth``; a command that waits counts in
    ``waits``. (The compiled loops of ``flash.pages`` and ``flash.convoy_loop`` carry
    the queue so.)"""
    depth = lp["depth"]
    if lp["nq"] < depth:
        return t
    while lp["nq"] and queue[0, 0] <= t:
        lp["nq"] = row_pop(queue, lp["nq"])
    if lp["nq"] < depth:
        return t
    lp["waits"] += 1
    t = queue[0, 0]
    lp["nq"] = row_pop(queue, lp["nq"])
    return t


@njit
def nvme_done(queue: I64, lp: np.void, end: int) -> None:
    """``HostInterface.done`` compiled (``nvme_fetch``'s queue): the command completes
    at ``end``; past twice the depth, the queue keeps the ``depth`` latest (sorted, a
    heap as it stands)."""
    queue[lp["nq"], 0] = end
    lp["nq"] = row_push(queue, lp["nq"])
    depth = lp["depth"]
    if lp["nq"] > 2 * depth:
        keep = np.sort(queue[:lp["nq"], 0])[lp["nq"] - depth:]
        queue[:depth, 0] = keep
        lp["nq"] = depth
