"""The fast, chunk-level DRAM timing model used in full-system runs.

A chunk costs a loop over its units and at most one row per bank per unit, never
O(bytes), and creates no event. Each unit (pseudo-channel) has a busy-until time of its
data bus, as the kernel's ``Timeline``; the chunk completes at the latest unit's end. The
per-unit state is kept in Python lists (the bus times in int64 arrays, for the compiled
loop below): a chunk touches a few to a few dozen units, where numpy's per-call overhead
(microseconds) costs more than the arithmetic. Which unit and
bank each block of a long chunk's head, tail and body falls in, and how its bursts and
work split over the units, depend only on its phase in the row period and its length,
so that layout is worked out once, one record per (phase, length), and reused; when the
units agree on their state (nearly always in a stream) the head, turnaround and
activations are worked out once too, and the loop only books each unit's bus. A unit's
reserved time is not added up per booking but kept as its busy-until time less its idle
time, and units all queued behind their buses (a stream's usual state) add their common
turnaround to one sum for all; their data time is owed per split and added in when
read, and the loop over the units is compiled (``_book_all``, on the units' bus times as
int64 arrays): such a chunk runs the same lines of Python on 8 units as on 32. A chunk
that covers every bank leaves its tail's open rows pending rather than written into the
table, and the next long chunk finds its first-row states from a cache keyed by the two
layouts and their row distance;
rows a chunk opens in the same banks of every unit are written one slice per bank. A
random chunk books its units in one loop with its constants hoisted.
tests/dram/test_dram_budget.py bounds the lines of Python a chunk runs per unit.

- STREAM: the bursts are split over units by the address map (whole interleave periods
  arithmetically, the remainder block by block). A unit moves its bursts one per
  ``max(t_burst, t_ccd_s, t_ccd_l / bank groups rotated)``: with enough requests queued
  the controller hides row switches behind other banks' bursts, as the detailed model
  does.
- RANDOM (and STRIDED): 64 B accesses, each a row miss. A unit serves one access per
  ``max(max(tRRD_S, tFAW / 4) / ranks, commands x tCK, data bursts + (1 - 1/ranks)
  tRTRS, bank cycle / busy banks)``: tRRD_S and tFAW bind each rank, so ranks take turns
  activating; the command bus carries ACT, the column accesses and PRE (HBM's separate
  row and column buses each their own); the data bus is shared by the ranks, and a burst
  from another rank than the last waits tRTRS more; the bank cycle is tRC for reads and
  tRCD_WR + CWL + data + tWR + tRP for writes; the busy banks are the expected distinct
  banks of all ranks among the accesses a full controller queue holds
  (``read_queue / bursts per access``), ``n (1 - (1 - 1/n)^Q)``.
- An idle unit first pays the unloaded latency: [tRP if another row is open] + tRCD +
  CL (tRCD_WR + CWL for writes), from a per-unit, per-bank open-row table kept like the
  controller's. A busy unit pays the bus turnaround when the direction changes:
  t_rtw (read to write) or tWTR_S + CL (write to read), longer when the first row of the
  new direction must first be opened (tRTP / a command slot + tRP + tRCD ...). Writes
  shorter than a write-drain batch (``write_high - write_low`` bursts) to a unit that is
  reading are buffered as the controller does and pay one pair of turnarounds per batch.
- Refresh: the unit's bus idles for tRTP + tRP + tRFC + tRCD - t_burst every tREFI
  (all-bank: last RD, PREA, REF, ACT, first RD), from the same per-unit staggered phase
  as the detailed controller; work is stretched over those windows in closed form.
  With several ranks, which refresh in turn every tREFI / ranks, random accesses stall
  through every rank's window (the queue fills with the refreshing rank's accesses),
  while a stream, which stays in one rank for a row period, meets one window per tREFI
  on average.
  Per-bank refresh costs streams nothing (the controller refreshes banks the traffic
  has left) and random accesses the banks that are refreshing on average.

Agreement with the detailed controller (tests/dram/test_dram_fast_vs_detailed.py): within
5% of the time to serve streams, random 64 B accesses, 2:1 read/write mixes of chunks and
generated chunk mixes. The weak spots, all optimistic: 2:1 mixes of single 64 B
requests and runs of a microsecond or two that switch direction often (up to 5-7%),
because the controller's write buffering and row reopening at each switch are averaged
here; random traffic under per-bank refresh (9-14%); streams on HBM2 with two ranks (5-7%),
where the stream locks to the ranks' refresh turns and meets nearly every one. One is
pessimistic: random writes on HBM3 with two ranks (12%), where the controller keeps more
distinct banks busy than a random draw from its write queue would.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

from dram.config import DramConfig
from dram.mapping import AddressMap
from dram.timing import ref_phase
from tmhw.sim.jit import njit
from tmhw.sim.transfer import Pattern

#: Bytes of one random access (a cache line / NPU gather element).
RANDOM_ACCESS_BYTES = 64
#: Above this many address blocks a partial interleave period is split evenly.
_MAX_BLOCKS = 1 << 16
#: Chunks of fewer row-blocks than this are scanned in Python rather than numpy.
_SCALAR_BLOCKS = 64
#: Open-row table entry of a bank known to be open on a row not tracked.
_UNKNOWN_ROW = -2
#: Bound on each cache of decoded chunk layouts (entries of a few hundred ints each).
_CACHE_ENTRIES = 4096
#: Splits of uniform bookings whose data time is owed before it is added in.
_OWED = 1024
#: Largest row period (in row-blocks) whose decoded layout is kept as a table.
_MAX_LAYOUT_BLOCKS = 1 << 18

_K = TypeVar("_K")
#: A chunk tail's open rows: [(row distance, flat banks, False) or (row distance, banks
#: of a unit that every unit has, True)] and {flat bank: row distance}.
Tail = tuple[list[tuple[int, list[int], bool]], dict[int, int]]
_V = TypeVar("_V")
#: Key of a cached layout: (phase in a period, length), bursts.
Key = tuple[int, int]
#: Per unit its bus work (ps), the rows all units open, per unit the share of its banks
#: its writes leave a row open in, and the works as an array (for ``_book_all``).
Split = tuple[list[int], int, list[float], npt.NDArray[np.int64]]
#: First-row state of each unit at any row distance but those listed, and by distance.
States = tuple[list[int], dict[int, list[int]]]


@njit
def _book_all(busy: npt.NDArray[np.int64], idle: npt.NDArray[np.int64],
              offs: npt.NDArray[np.int64], works: npt.NDArray[np.int64], gap: int,
              t_head: int, period: int, block: int, first_q: npt.NDArray[np.int64]) -> int:
    """``FastModel._book_uniform``'s booking of every unit's bus, every unit's first
    refresh window being past (``_stretch`` in closed form): a unit starts at its bus
    time plus ``gap``, or at ``t_head``; a start inside a window [off + k period, +
    block) moves to its end, and the work skips ceil((work - room) / gives) windows
    beyond the room ``period - pos`` left in the first period (none if it fits: the room
    is at most ``gives`` and the work > 0). When every unit's bus time plus ``gap`` is
    at least ``t_head`` (queued: each starts at its own), a unit's idle time is the
    window only (the caller counts the gap once for all). Into ``first_q``: the first
    unit's start (before the windows) and whether queued; returns the latest end."""
    gives = period - block
    first = busy.min() + gap
    queued = first >= t_head
    first_q[0] = first if queued else t_head
    first_q[1] = queued
    end = 0
    for unit in range(busy.size):
        b = busy[unit]
        s = b + gap
        if not queued and s < t_head:
            s = t_head
        pos = (s - offs[unit]) % period
        if pos < block:  # inside a window: start at its end
            s += block - pos
            pos = block
        idle[unit] += s - b - (gap if queued else 0)
        work = works[unit]
        e = s + work - (period - pos - work) // gives * block
        busy[unit] = e
        if e > end:
            end = e
    return end


def compile_kernels() -> None:
    """Compile this module's kernel into numba's on-disk cache, by a stream of chunks
    over every unit of an HBM2 stack after its first refresh windows (``make`` runs this
    before the tests and the default study, through ``tmhw.system.compile_kernels``)."""
    from dram.config import PRESETS

    m = FastModel(PRESETS["hbm2"])
    for i in range(3):
        m.serve(False, i << 20, 1 << 20, Pattern.STREAM, 10_000_000)


def distinct_banks(banks: float, queued: int) -> float:
    """Expected number of distinct banks among ``queued`` uniformly random accesses."""
    return banks * (1.0 - (1.0 - 1.0 / banks) ** queued)


class _Long:
    """What a long stream chunk at one phase in the row period and of one length needs,
    worked out once (``FastModel._long_layout``) so that such a chunk costs one lookup,
    its first rows' states and a loop over its units: the units it reaches, per unit
    (indexed by unit) its bursts less ``add``, ``add``, the split of its work
    (``_split_work``; None unless it reaches every unit, or when the layout is not
    cached), its head layout (``_head_layout``) and that layout's key, its tail's key,
    layout and length, the banks it opens a row in (``_touch_layout``; None if every
    bank) and whether those are banks of a unit that every unit has (``strided``), and
    by the key of a pending tail the states it meets (``_states_after``)."""

    __slots__ = ("units", "counts", "add", "split", "head", "hkey", "tkey", "tail",
                 "n_tail", "touched", "strided", "after")

    def __init__(self, units: list[int], counts: list[int], add: int, split: Split | None,
                 head: list[tuple[int, int, int]], hkey: Key, tkey: Key, tail: Tail,
                 n_tail: int, touched: tuple[list[int], bool] | None) -> None:
        self.units, self.counts, self.add, self.split = units, counts, add, split
        self.head, self.hkey, self.tkey, self.tail = head, hkey, tkey, tail
        self.n_tail = n_tail
        self.touched: list[int] | None = None if touched is None else touched[0]
        self.strided = touched is not None and touched[1]
        self.after: dict[Key, States] = {}

    @classmethod
    def decoded(cls, units: list[int], counts: list[int]) -> _Long:
        """A chunk decoded on its own (``_scan_long_np``): its units and bursts only, its
        open rows already written into the table."""
        return cls(units, counts, 0, None, [], (0, 0), (0, 0), ([], {}), 0, ([], False))


class FastModel:
    """Chunk-level timing and counters for one ``DramConfig``. Times in ps."""

    def __init__(self, cfg: DramConfig) -> None:
        self.cfg = cfg
        self.amap = AddressMap(cfg)
        u = cfg.units
        # Per unit: the data bus's busy-until time (a Timeline per unit), the direction it
        # last moved data in (-1 none, 0 read, 1 write) and its first use. Plain lists: a
        # chunk touches a few to a few dozen units, where a Python loop costs less than
        # numpy's per-call overhead; but the bus times are int64 arrays, which the
        # compiled booking of a chunk over every unit (``_book_all``) updates in place.
        self.busy_until = np.zeros(u, dtype=np.int64)
        self.last_dir = [-1] * u
        self.first_use = [-1] * u
        # The time each bus was reserved (``busy_ps``) is its busy-until time less the
        # time before it that it was not: per unit the idle spans before each booking
        # (waits, refresh windows skipped at a start, turnarounds), less the turnarounds
        # every unit paid at once (``_gaps``: a chunk over every unit queued behind all of
        # them adds its turnaround to this one sum, not to each unit's).
        self._idle = np.zeros(u, dtype=np.int64)
        self._gaps = 0
        # The time each bus carried data (``data_ps``): per unit, plus the works of the
        # uniform bookings not yet added in, {id(works): (works, times booked)} (a stream
        # books the same few splits over and over).
        self._data = [0] * u
        self._owed: dict[int, tuple[list[int], int]] = {}
        #: Per unit, the ranks its random accesses have opened rows in (at most ranks).
        self.rand_ranks = [0] * u
        # Open row of each bank (see ``open_rows``), less what ``_pending`` holds.
        self._open_rows = [-1] * (u * self.amap.banks_per_unit)
        #: The rows a long chunk over every bank left open, not yet written into
        #: ``_open_rows``: (tail layout key, tail layout, row of the tail's first burst).
        #: Such a chunk leaves every bank open on an untracked row but those of its tail,
        #: so the next long chunk of a stream finds its first rows' states from the two
        #: layouts and the row distance alone (``_c_states``), and the table is only
        #: written when something else reads it.
        self._pending: tuple[Key, Tail, int] | None = None
        self.bursts_read = 0
        self.bursts_written = 0
        self.acts = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.last_end = 0
        #: When the latest ``serve`` began service on its first unit (for latency).
        self.last_start = 0
        c = cfg
        n_bg = c.bank_groups if self.amap.bank_group_below_column() else 1
        self.n_bg_rot = n_bg
        self.t_stream = max(c.t_burst, c.t_ccd_s if n_bg > 1 else c.t_ccd_l,
                            -(-c.t_ccd_l // n_bg))
        # Random accesses.
        self.rand_bursts = max(1, min(RANDOM_ACCESS_BYTES, c.interleave_bytes) // c.burst_bytes)
        self.rand_units = max(1, RANDOM_ACCESS_BYTES // c.interleave_bytes)
        nb = self.amap.banks_per_unit
        ranks = c.ranks
        # tRRD_S and tFAW bind each rank: the controller alternates ACTs over the ranks.
        t_act = max(c.t_rrd_s, c.t_faw / 4) / ranks
        # The data bus is the unit's: a burst from another rank than the last waits tRTRS
        # more, which a random access pays with probability 1 - 1/ranks.
        data = (self.rand_bursts * max(c.t_burst, c.t_ccd_s)
                + (1 - 1 / ranks) * c.t_rtrs)
        # Commands of one access (ACT, its column accesses, and PRE unless they
        # auto-precharge), one per tCK per command bus.
        pre = 0 if c.page_policy == "closed" else 1
        cmds = (max(1 + pre, self.rand_bursts) if c.dual_command_bus
                else 1 + pre + self.rand_bursts)
        t_act = max(t_act, float(cmds * c.tck))
        wr_cycle = max(c.t_rc, c.t_rcd_wr + c.t_cwl + self.rand_bursts * c.t_burst + c.t_wr
                       + c.t_rp)
        if c.refresh == "per-bank":
            # On average t_rfc_pb / (t_refi / banks) banks are refreshing.
            nb_eff = nb - c.t_rfc_pb * nb / c.t_refi
        else:
            nb_eff = float(nb)
        qr = max(1, c.read_queue // self.rand_bursts)
        qw = max(1, c.write_queue // self.rand_bursts)
        self.t_rand_rd = round(max(t_act, data, c.t_rc / distinct_banks(nb_eff, qr)))
        self.t_rand_wr = round(max(t_act, data, wr_cycle / distinct_banks(nb_eff, qw)))
        # Bus turnarounds between data, without and with a row to open first.
        self.rtw = c.t_rtw
        self.rtw_miss = max(c.t_rtw, c.t_rtp + c.t_rp + c.t_rcd_wr + c.t_cwl - c.t_cl
                            - c.t_burst)
        self.wtr = c.t_wtr_s + c.t_cl
        self.wtr_miss = max(self.wtr, c.tck + c.t_rp + c.t_rcd + c.t_cl - c.t_cwl - c.t_burst)
        self.drain_batch = c.write_high - c.write_low
        #: Stream writes shorter than a drain batch per unit are buffered (``small_write``).
        self._small_write = self.drain_batch * u
        self._heads = [[self._head(w, st) for st in range(3)] for w in (False, True)]
        self.nb = nb
        #: Per unit, the share of its banks the last write chunk opened rows in.
        self.w_evict = [0.0] * u
        # Refresh windows: unit i is blocked over [off_i + k period, + block), k >= 0.
        if c.refresh == "off":
            self.t_ref_period, self.t_ref_block = 0, 0
        elif c.refresh == "per-bank":
            # The controller refreshes a bank the traffic has left: the bus goes on.
            self.t_ref_period, self.t_ref_block = 0, 0
        else:
            self.t_ref_period = c.t_refi
            # Bus idle from the last data before a refresh to the first after it: the
            # last RD, tRTP to PREA, tRP to REF, tRFC, ACT, tRCD to the next RD.
            self.t_ref_block = c.t_rtp + c.t_rp + c.t_rfc + c.t_rcd - c.t_burst
        self.ref_offsets = [ref_phase(c, i) % self.t_ref_period if self.t_ref_period else 0
                            for i in range(u)]
        # Random accesses stall through every rank's refresh: the in-order front end fills
        # the queue with the refreshing rank's accesses within a few dozen accesses, and
        # drains them at one rank's pace afterwards (the detailed controller loses about
        # the whole window per rank refresh). So with several ranks their windows come
        # every tREFI / ranks, as the ranks take turns (``ref_phase``). A stream stays in
        # one rank for a whole row period, so it meets one rank's refresh in ``ranks`` on
        # average: one window per tREFI, as with one rank.
        self.t_ref_period_rand = self.t_ref_period // ranks
        self.ref_offsets_rand = [o % self.t_ref_period_rand if self.t_ref_period_rand else 0
                                 for o in self.ref_offsets]
        self._ref_off = np.array(self.ref_offsets, dtype=np.int64)
        #: ``_book_all``'s first start and whether the units were queued
        self._first_q = np.zeros(2, dtype=np.int64)
        #: The latest unit's first refresh window (from then on every unit's windows
        #: repeat every period).
        self._ref_last = max(self.ref_offsets)
        # Bursts of one row-block (consecutive bursts sharing a row) and of one row per
        # bank per unit: enough of a chunk's tail to know which rows it leaves open.
        self._blk = max(1, c.interleave_bytes // c.burst_bytes)
        self._tail = u * n_bg * 2 * self._blk
        self.bursts_per_row = c.bursts_per_row
        self._span = u * nb * c.bursts_per_row  # bursts that touch every bank of every unit
        self._units_lowest = self.amap.unit_period_bursts == u * self._blk
        self._pairs = (self._pair(0), self._pair(0), self._pair(2))
        self._all_unknown = [_UNKNOWN_ROW] * (u * nb)
        self._unknown_units = [_UNKNOWN_ROW] * u
        self._all_units = list(range(u))
        #: Whether some unit has not been used yet (its ``first_use`` is still -1).
        self._unused_units = True
        #: Book chunks whose units agree on their state through ``_book_uniform``.
        self._uniform_path = True
        # Long stream chunks reuse the decoded layout of their head, tail and touched banks,
        # keyed by phase in the row period (valid when the row is the top address field);
        # otherwise they decode with numpy each time.
        am = self.amap
        n_blocks = am.row_period_bursts // self._blk
        self._layout_cached = am.row_on_top and n_blocks <= _MAX_LAYOUT_BLOCKS
        #: Flat bank (``unit * banks_per_unit + bank``) of each row-block of a row period.
        self._block_flat: list[int] = []
        if self._layout_cached:
            bu, bb, _ = am.decode_bursts(np.arange(n_blocks, dtype=np.int64) * self._blk)
            self._block_flat = (bu * nb + bb).tolist()
        self._c_counts: dict[tuple[int, int], list[int]] = {}
        self._c_head: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        self._c_tail: dict[Key, Tail] = {}
        self._c_split: dict[tuple[Key, int], Split] = {}
        self._c_states: dict[tuple[Key, Key], States] = {}
        #: The whole layout of a long chunk, by (phase in the row period, length).
        self._c_long: dict[Key, _Long] = {}
        self._all_closed = [1] * u

    @property
    def busy_ps(self) -> list[int]:
        """Per unit, the time its bus was reserved (data, and the refresh windows inside
        its bookings), ps."""
        out: list[int] = (self.busy_until - self._idle - self._gaps).tolist()
        return out

    @property
    def data_ps(self) -> list[int]:
        """Per unit, the time its bus carried data, ps."""
        self._pay_owed()
        return self._data

    def _pay_owed(self) -> None:
        """Add the works of the uniform bookings owed (``_owed``) into ``_data``."""
        data = self._data
        for works, n in self._owed.values():
            for unit, w in enumerate(works):
                data[unit] += n * w
        self._owed.clear()

    @property
    def open_rows(self) -> list[int]:
        """Open row of each bank, flat (``unit * banks_per_unit + bank``): -1 precharged,
        ``_UNKNOWN_ROW`` open on a row not tracked."""
        if self._pending is not None:
            self._settle()
        return self._open_rows

    def _settle(self) -> None:
        """Write the rows the last long chunk left open (``_pending``) into the table."""
        assert self._pending is not None
        _, tail, r = self._pending
        self._pending = None
        self._open_rows[:] = self._all_unknown
        self._write_tail(tail, r)

    def _write_tail(self, tail: Tail, r: int) -> None:
        """Write the rows a chunk's tail (``_tail_layout``) whose first burst is in row
        ``r`` leaves open into the table: banks every unit has one slice each."""
        orows = self._open_rows
        rm, u, nbk = self.amap.row_mask, len(self.busy_until), self.nb
        for d, banks, strided in tail[0]:
            row = (r + d) & rm
            if strided:
                rows = [row] * u
                for b in banks:
                    orows[b::nbk] = rows
            else:
                for f in banks:
                    orows[f] = row

    # -- timing ------------------------------------------------------------------------
    def _stretch(self, unit: int, start: int, work: int,
                 random: bool = False) -> tuple[int, int]:
        """(start, end) of ``work`` ps of bus time beginning no earlier than ``start`` and
        skipping unit ``unit``'s refresh windows [off + k period, + block), k >= 0 (those
        random accesses meet when ``random``)."""
        block = self.t_ref_block
        if random:
            period, off = self.t_ref_period_rand, self.ref_offsets_rand[unit]
        else:
            period, off = self.t_ref_period, self.ref_offsets[unit]
        if period == 0 or work == 0:
            return start, start + work
        off -= period  # the window at k = 0 as "the first" below
        x = start - off
        if x < period:  # before the first window
            s0 = start
            avail = period - x
            if work <= avail:
                return s0, s0 + work
            work -= avail
            x = period
        else:
            pos = x % period
            if pos < block:
                x += block - pos
            s0 = x + off
            avail = period - x % period
            if work <= avail:
                return s0, s0 + work
            work -= avail
            x += avail
        # x is where a window opens; each later period gives period - block of work.
        k, rem = divmod(work, period - block)
        if rem == 0:
            return s0, off + x + k * period
        return s0, off + x + k * period + block + rem

    def _head(self, write: bool, state: int) -> int:
        """Unloaded latency to the first data: ``state`` 0 row hit, 1 bank precharged,
        2 another row open."""
        c = self.cfg
        if state == 0:
            return c.t_cwl if write else c.t_cl
        h = (c.t_rcd_wr + c.t_cwl) if write else (c.t_rcd + c.t_cl)
        return h + (c.t_rp if state == 2 else 0)

    def _banks_touched(self, bursts: int) -> int:
        """Banks a run of ``bursts`` consecutive bursts of one unit opens rows in."""
        return min(self.nb, -(-bursts // self.bursts_per_row) + self.n_bg_rot - 1)

    def _book(self, unit: int, write: bool, start: int, state: int, work: int,
              work_idle: int | None = None, small_write: bool = False,
              random: bool = False) -> int:
        """Reserve ``work`` ps of unit ``unit``'s bus (``work_idle`` when the unit is idle,
        so that the first access of an unloaded unit costs its bare burst time)."""
        head = self._head(write, state)
        gap = 0
        last = int(self.last_dir[unit])
        if small_write and last == 0:
            # Buffered: one pair of turnarounds per drain batch, spread over its writes.
            work += self._pair(state) * work // max(1, self.drain_batch * self.t_stream)
        elif last >= 0 and last != write:
            if write:
                gap = self.rtw_miss if state == 2 else self.rtw
            else:
                # Back to reading, the controller first finishes the reads the write batch
                # interrupted; their row is gone only if the writes took its bank. A
                # random read opens a new row anyway.
                evict = 1.0 if random else float(self.w_evict[unit])
                gap = self.wtr + round(evict * (self.wtr_miss - self.wtr))
        ready = int(self.busy_until[unit]) + gap
        t0 = start + head
        if ready > t0:
            t0 = ready
        elif work_idle is not None:
            work = work_idle
        if t0 - head < self.last_start:
            self.last_start = t0 - head
        s, e = self._stretch(unit, t0, work, random)
        self._idle[unit] += s - self.busy_until[unit]
        self.busy_until[unit] = e
        self._data[unit] += work
        if not small_write:
            self.last_dir[unit] = int(write)
            if write:
                self.w_evict[unit] = self._banks_touched(work // self.t_stream) / self.nb
        if self.first_use[unit] < 0:
            self.first_use[unit] = start
        return e

    def _book_random(self, first: int, n_acc: int, write: bool, start: int,
                     st: int) -> int:
        """``_book`` for the units of a random chunk of ``n_acc`` accesses, dealt out
        from unit ``first`` (``n_acc // units`` each, one more for the first
        ``n_acc % units``), every one a row miss of state ``st``; returns the latest end.
        One loop, with what the units share worked out once before it."""
        c = self.cfg
        u = c.units
        per, extra = divmod(n_acc, u)
        t_acc = self.t_rand_wr if write else self.t_rand_rd
        w = int(write)
        head = self._head(write, st)
        t_head = start + head
        if write:
            turn = self.rtw_miss if st == 2 else self.rtw
        else:
            turn = self.wtr + round(1.0 * (self.wtr_miss - self.wtr))
        stretch = self._stretch
        busy, idle, data_ps = self.busy_until, self._idle, self._data
        last_dir, w_evict, first_use = self.last_dir, self.w_evict, self.first_use
        rk = self.rand_ranks
        ranks, ts, nb = c.ranks, self.t_stream, self.nb
        bare = self.rand_bursts * c.t_burst
        # (work when queued behind the bus, work when the unit is idle, write eviction
        # share of each) for units of ``per`` and of ``per + 1`` accesses.
        kinds = []
        for n in (per, per + 1):
            busy_work, idle_work = n * t_acc, (n - 1) * t_acc + bare
            kinds.append((n, busy_work, idle_work, self._banks_touched(busy_work // ts) / nb,
                          self._banks_touched(idle_work // ts) / nb))
        end = 0
        first_start = self.last_start
        for k in range(min(u, n_acc)):
            unit = (first + k) % u
            n, work, idle_work, ev_busy, ev_idle = kinds[k < extra]
            if rk[unit] < n:
                rk[unit] = n if n < ranks else ranks
            last = last_dir[unit]
            ready = int(busy[unit]) + (turn if last >= 0 and last != w else 0)
            if ready > t_head:
                t0 = ready
                evict = ev_busy
            else:
                t0 = t_head
                work = idle_work
                evict = ev_idle
            if t0 - head < first_start:
                first_start = t0 - head
            s, e = stretch(unit, t0, work, True)
            idle[unit] += s - busy[unit]
            busy[unit] = e
            data_ps[unit] += work
            last_dir[unit] = w
            if write:
                w_evict[unit] = evict
            if first_use[unit] < 0:
                first_use[unit] = start
            if e > end:
                end = e
        self.last_start = first_start
        return end

    def _pair(self, state: int) -> int:
        """Turnarounds of one buffered write batch: read to write, and back."""
        evict = self._banks_touched(self.drain_batch) / self.nb
        return ((self.rtw_miss if state == 2 else self.rtw) + self.wtr
                + round(evict * (self.wtr_miss - self.wtr)))

    def _stretch_many(self, units: np.ndarray, start: np.ndarray,
                      work: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``_stretch`` for many units at once (same arithmetic, numpy)."""
        period, block = self.t_ref_period, self.t_ref_block
        if period == 0:
            return start, start + work
        off = self._ref_off[units] - period
        x = start - off
        early = x < period
        pos = x % period
        xb = np.where(early, x, x + np.where(pos < block, block - pos, 0))
        s0 = xb + off
        avail = np.where(early, period - x, period - xb % period)
        rest = work - avail
        xw = xb + avail
        k, rem = np.divmod(np.maximum(rest, 0), period - block)
        late = np.where(rem == 0, off + xw + k * period, off + xw + k * period + block + rem)
        end = np.where(rest <= 0, s0 + work, late)
        return np.where(work == 0, start, s0), np.where(work == 0, start, end)

    def _book_units(self, chunk: _Long, states: list[int], write: bool, start: int,
                    small_write: bool) -> tuple[int, int]:
        """``_book`` for the units of one long stream chunk: unit ``i`` of
        ``chunk.units`` moves ``chunk.counts[i] + chunk.add`` bursts from first-row state
        ``states[i]``. Returns the latest end and the activations (one per
        ``bursts_per_row`` of a unit's bursts, less the first if it hits). One loop,
        ``_stretch`` inlined: this is the hot path."""
        last_dir, w_evict = self.last_dir, self.w_evict
        units, counts, add = chunk.units, chunk.counts, chunk.add
        if (self._uniform_path and not small_write and len(units) == len(last_dir)
                and states.count(states[0]) == len(states)
                and last_dir.count(last_dir[0]) == len(last_dir)
                and w_evict.count(w_evict[0]) == len(w_evict)):
            split = chunk.split
            if split is None:
                split = self._split_work(counts, add)
            return self._book_uniform(split, states[0], write, start)
        ts = self.t_stream
        heads = self._heads[write]
        w = int(write)
        busy, idle, data_ps = self.busy_until, self._idle, self._data
        first_use = self.first_use
        period, block, ref_off = self.t_ref_period, self.t_ref_block, self.ref_offsets
        gives = period - block  # work one refresh period carries
        pairs, div = self._pairs, max(1, self.drain_batch * ts)
        rtw, rtw_miss = self.rtw, self.rtw_miss
        wtr, d_wtr = self.wtr, self.wtr_miss - self.wtr
        nb, bpr, bg1 = self.nb, self.bursts_per_row, self.n_bg_rot - 1
        first = self.last_start
        end = 0
        acts = 0
        for unit in units:
            n = counts[unit] + add
            st = states[unit]
            a = -(-n // bpr)
            acts += (a if a > 1 else 1) - (st == 0)
            head = heads[st]
            work = n * ts
            last = last_dir[unit]
            t0 = start + head
            b = int(busy[unit])
            if small_write:
                ready = b
                if last == 0:
                    work += pairs[st] * work // div
            elif last != w and last >= 0:
                if write:
                    ready = b + (rtw_miss if st == 2 else rtw)
                else:
                    ready = b + wtr + round(w_evict[unit] * d_wtr)
            else:
                ready = b
            if ready > t0:
                t0 = ready
            if t0 - head < first:
                first = t0 - head
            # ``_stretch`` (the refresh windows this unit's work skips); work > 0.
            if period == 0:
                s = t0
                e = t0 + work
            else:
                off = ref_off[unit] - period
                x = t0 - off
                if x < period:
                    s = t0
                    avail = period - x
                else:
                    pos = x % period
                    if pos < block:
                        x += block - pos
                    s = x + off
                    avail = period - x % period
                if work <= avail:
                    e = s + work
                else:
                    k, r = divmod(work - avail, gives)
                    e = off + x + avail + k * period + (block + r if r else 0)
            idle[unit] += s - b
            busy[unit] = e
            data_ps[unit] += work
            if not small_write:
                last_dir[unit] = w
                if write:
                    a += bg1
                    w_evict[unit] = (a if a < nb else nb) / nb
            if first_use[unit] < 0:
                first_use[unit] = start
            if e > end:
                end = e
        self.last_start = first
        return end, acts

    def _book_uniform(self, split: Split, st: int, write: bool,
                      start: int) -> tuple[int, int]:
        """``_book_units`` for a chunk over every unit when the units agree on all but
        their bus times and bursts (first-row state, last direction, write eviction share:
        the common case of a stream of long chunks): the head, the turnaround and the
        activations are worked out once (each unit's work, rows and eviction share once
        per split, ``split``), and the loop only books each unit's bus."""
        busy, idle = self.busy_until, self._idle
        period, block = self.t_ref_period, self.t_ref_block
        n_units = len(busy)
        w = int(write)
        head = self._heads[write][st]
        last = self.last_dir[0]
        gap = 0
        if last != w and last >= 0:
            if write:
                gap = self.rtw_miss if st == 2 else self.rtw
            else:
                gap = self.wtr + round(self.w_evict[0] * (self.wtr_miss - self.wtr))
        t_head = start + head
        works, rows, evict, works_a = split
        # Rows each unit opens (every unit has bursts, so at least one), less one per
        # unit if the first row is open.
        acts = rows - (n_units if st == 0 else 0)
        if period and t_head >= self._ref_last:
            first_q = self._first_q
            end = _book_all(busy, idle, self._ref_off, works_a, gap, t_head, period, block,
                            first_q)
            first = int(first_q[0])
            if first_q[1]:
                self._gaps += gap  # every unit's idle time at once (``_gaps``)
        else:
            # Each unit starts at max(busy + gap, t_head), so the first to start at this.
            first = max(int(busy.min()) + gap, t_head)
            stretch = self._stretch
            for unit in range(n_units):
                b = int(busy[unit])
                t0 = b + gap
                s, e = stretch(unit, t0 if t0 > t_head else t_head, works[unit])
                idle[unit] += s - b
                busy[unit] = e
            end = int(busy.max())
        self._owe(works)
        if first - head < self.last_start:
            self.last_start = first - head
        self.last_dir[:] = [w] * n_units
        if write:
            self.w_evict[:] = evict
        if self._unused_units:
            fu = self.first_use
            for unit in range(n_units):
                if fu[unit] < 0:
                    fu[unit] = start
            self._unused_units = False
        return end, acts

    def _owe(self, works: list[int]) -> None:
        """Count one more booking of ``works`` (each unit's data time) into ``data_ps``."""
        owed = self._owed
        key = id(works)  # the entry holds ``works``: its id is not reused while owed
        n = owed.get(key)
        if n is None:
            if len(owed) >= _OWED:
                self._pay_owed()
            owed[key] = (works, 1)
        else:
            owed[key] = (works, n[1] + 1)

    def _split_work(self, counts: list[int], add: int) -> Split:
        """For a chunk moving ``counts[i] + add`` bursts on unit ``i`` (every unit): each
        unit's bus work in ps, the rows the units open in all, and the share of its banks
        each unit's writes leave a row open in (``_banks_touched``)."""
        ts, bpr, nb, bg1 = self.t_stream, self.bursts_per_row, self.nb, self.n_bg_rot - 1
        rows = [-(-(c + add) // bpr) for c in counts]
        works = [(c + add) * ts for c in counts]
        return (works, sum(rows), [(a + bg1 if a + bg1 < nb else nb) / nb for a in rows],
                np.array(works, dtype=np.int64))

    def _split_stream(self, b0: int, nb: int) -> np.ndarray:
        """Bursts per unit of the ``nb`` consecutive bursts from burst index ``b0``."""
        am = self.amap
        u = self.cfg.units
        if u == 1:
            return np.array([nb], dtype=np.int64)
        period = am.unit_period_bursts
        counts = np.zeros(u, dtype=np.int64)
        full, rem = divmod(nb, period)
        if full:
            counts += full * (period // u)
        if rem:
            blk = am.unit_block_bursts
            first_blk, last_blk = b0 // blk, (b0 + rem - 1) // blk
            nblk = last_blk - first_blk + 1
            if nblk > _MAX_BLOCKS:
                counts += rem // u
                counts[: rem % u] += 1
            else:
                ids = np.arange(first_blk, last_blk + 1, dtype=np.int64)
                w = np.full(nblk, blk, dtype=np.int64)
                w[0] -= b0 - first_blk * blk
                w[-1] -= (last_blk + 1) * blk - (b0 + rem)
                units = am.units_of_bursts(ids * blk)
                counts += np.bincount(units, weights=w, minlength=u).astype(np.int64)
        return counts

    def _row_blocks(self, b0: int, nb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit, bank, row) of each row-block in bursts [b0, b0 + nb), in address order."""
        blk = self._blk
        first = b0 // blk
        last = (b0 + nb - 1) // blk
        return self.amap.decode_bursts(np.arange(first, last + 1, dtype=np.int64) * blk)

    def _state(self, unit: int, bank: int, row: int, closed: bool) -> int:
        o = self.open_rows[unit * self.nb + bank]
        return 1 if (o == -1 or closed) else (0 if o == row else 2)

    def _scan_short(self, b0: int, nb: int, closed: bool
                    ) -> tuple[list[tuple[int, int, int]], dict[int, int]]:
        """(unit, bursts, activations) per unit and the first-row state per unit of a
        short chunk, block by block in Python, updating the open rows as it goes."""
        blk = self._blk
        dec = self.amap.decode_burst
        per: dict[int, list[int]] = {}
        states: dict[int, int] = {}
        orows = self.open_rows
        nbk = self.nb
        end = b0 + nb
        k = b0 // blk
        while k * blk < end:
            lo = max(b0, k * blk)
            hi = min(end, (k + 1) * blk)
            unit, bank, row = dec(lo)
            if unit not in states:
                states[unit] = self._state(unit, bank, row, closed)
            acc = per.get(unit)
            if acc is None:
                acc = per[unit] = [0, 0]
            acc[0] += hi - lo
            if closed or orows[unit * nbk + bank] != row:
                acc[1] += 1
                if not closed:
                    orows[unit * nbk + bank] = row
            k += 1
        return [(u, a[0], a[1]) for u, a in per.items()], states

    @staticmethod
    def _remember(cache: dict[_K, _V], key: _K, value: _V) -> _V:
        if len(cache) >= _CACHE_ENTRIES:
            cache.clear()  # a bound on memory; entries are pure functions of their key
        cache[key] = value
        return value

    def _scan_long(self, b0: int, nb: int, closed: bool) -> tuple[_Long, list[int]]:
        """As ``_scan_short`` for long chunks: the chunk's layout (``_Long``) and per unit
        (indexed by unit) its first-row state. The first row of each unit is looked up,
        every bank the chunk touched holds one of its rows (open, row not tracked: a
        later access is a row miss), and the last rows of each unit and bank group, which
        a continuing stream meets first, are tracked exactly.

        The decoded layout (which unit and bank each block of the head, the tail and the
        body falls in, and how the bursts split over the units) depends only on the
        chunk's phase in the row period and its length, so it is worked out once per
        (phase, length) and reused: a chunk then costs a lookup and a loop over the
        banks whose rows it changes (none when it covers every bank, ``_pending``)."""
        if not self._layout_cached:
            return self._scan_long_np(b0, nb, closed)
        am = self.amap
        key = (b0 % am.row_period_bursts, nb)
        chunk = self._c_long.get(key)
        if chunk is None:
            chunk = self._remember(self._c_long, key, self._long_layout(b0, nb))
        if closed:
            return chunk, self._all_closed
        rs, rm = am.row_shift, am.row_mask
        r = b0 >> rs
        pend = self._pending
        if pend is not None:
            # Every bank holds an untracked row but those of the last chunk's tail: the
            # states depend on the two layouts and the distance between their rows.
            by_distance = chunk.after.get(pend[0])
            if by_distance is None:
                by_distance = self._remember(chunk.after, pend[0],
                                             self._after(chunk, pend[0], pend[1]))
            states = by_distance[1].get((r - pend[2]) & rm, by_distance[0])
        else:
            states = [1] * len(self.busy_until)
            orows = self._open_rows
            rows = (r & rm, (r + 1) & rm)
            for unit, flat, d in chunk.head:
                o = orows[flat]
                if o != -1:
                    states[unit] = 0 if o == rows[d] else 2
        r = (b0 + nb - chunk.n_tail) >> rs
        touched = chunk.touched
        if touched is None:
            # Every bank is left open on an untracked row but those of the tail.
            self._pending = (chunk.tkey, chunk.tail, r)
            return chunk, states
        if pend is not None:
            self._settle()
        orows = self._open_rows
        if chunk.strided:  # the same banks of every unit: one slice per bank
            unknown, nbk = self._unknown_units, self.nb
            for b in touched:
                orows[b::nbk] = unknown
        else:
            for f in touched:
                orows[f] = _UNKNOWN_ROW
        self._write_tail(chunk.tail, r)
        return chunk, states

    def _long_layout(self, b0: int, nb: int) -> _Long:
        """The layout of the ``nb`` bursts from ``b0`` (``_Long``), from the caches of
        its parts (keyed more loosely, so that chunks of other lengths share them)."""
        am = self.amap
        u = self.cfg.units
        period = am.unit_period_bursts
        rp = am.row_period_bursts
        full, rem = divmod(nb, period)
        ckey = (b0 % period, rem)
        counts = self._c_counts.get(ckey)
        if counts is None:
            counts = self._remember(self._c_counts, ckey,
                                    [int(x) for x in self._split_stream(b0 % period, rem)])
        add = full * (period // u)
        # Bursts of unit i: counts[i] + add.
        units = self._all_units if add else [i for i in range(u) if counts[i]]
        split = None
        if len(units) == u:
            split = self._c_split.get((ckey, add))
            if split is None:
                split = self._remember(self._c_split, (ckey, add),
                                       self._split_work(counts, add))
        hkey = (b0 % rp, min(nb, period))
        head = self._c_head.get(hkey)
        if head is None:
            head = self._remember(self._c_head, hkey, self._head_layout(b0, hkey[1]))
        n_tail = min(nb, self._tail)
        bt = b0 + nb - n_tail
        tkey = (bt % rp, n_tail)
        tail = self._c_tail.get(tkey)
        if tail is None:
            tail = self._remember(self._c_tail, tkey, self._tail_layout(bt, n_tail))
        # With the row on top the span is the row period, a multiple of the unit
        # period: a chunk over the span reaches every bank of every unit.
        touched = self._touch_layout(b0, nb, units) if nb < self._span else None
        return _Long(units, counts, add, split, head, hkey, tkey, tail, n_tail, touched)

    def _after(self, chunk: _Long, tkey: Key, tail: Tail) -> States:
        """``_states_after`` for ``chunk``'s head and the pending ``tail`` (of key
        ``tkey``), shared by chunks of other lengths with the same head."""
        pkey = (chunk.hkey, tkey)
        by_distance = self._c_states.get(pkey)
        if by_distance is None:
            by_distance = self._remember(self._c_states, pkey,
                                         self._states_after(chunk.head, tail))
        return by_distance

    def _states_after(self, head: list[tuple[int, int, int]],
                      tail: Tail) -> tuple[list[int], dict[int, list[int]]]:
        """First-row state of each unit for a chunk with head layout ``head`` when the
        table is a pending ``tail`` (see ``_pending``), by the distance in rows (masked)
        from the tail's first row to the chunk's: (the states at any other distance,
        {distance: states}). A head bank the tail left open hits at one distance only."""
        rm = self.amap.row_mask
        dist = tail[1]
        other = [1] * self.cfg.units
        hits: dict[int, list[int]] = {}
        for unit, flat, d in head:
            other[unit] = 2  # open on an untracked row, or on another row of the tail's
            if flat in dist:
                hits.setdefault((dist[flat] - d) & rm, []).append(unit)
        by_distance = {}
        for delta, units in hits.items():
            states = other[:]
            for unit in units:
                states[unit] = 0
            by_distance[delta] = states
        return other, by_distance

    def _blocks(self, b0: int, n: int) -> tuple[range, list[int]]:
        """The row-blocks (indices) of the ``n`` bursts from ``b0`` and the flat bank of
        each (from the decoded row period: the row is the top field)."""
        blocks = range(b0 // self._blk, (b0 + n - 1) // self._blk + 1)
        table = self._block_flat
        start = blocks.start % len(table)
        flats = table[start:start + len(blocks)]
        while len(flats) < len(blocks):  # wrapped past the end of the row period
            flats += table[:len(blocks) - len(flats)]
        return blocks, flats

    def _head_layout(self, b0: int, n: int) -> list[tuple[int, int, int]]:
        """(unit, flat bank, row of its row-block less the row of ``b0``: 0 or 1) whose
        open row gives each unit's first-row state, for the ``n`` bursts from ``b0``."""
        blocks, flats = self._blocks(b0, n)
        rp = self.amap.row_period_bursts
        pick: dict[int, tuple[int, int, int]] = {}
        for j, f in zip(blocks, flats, strict=True):
            unit = f // self.nb
            # Each unit's first block, except with units lowest, where a unit appearing
            # twice (an unaligned start) takes its later block, as a vector assignment
            # over the blocks does.
            if self._units_lowest or unit not in pick:
                pick[unit] = (unit, f, (b0 % rp + j * self._blk - b0) // rp)
        return list(pick.values())

    def _touch_layout(self, b0: int, nb: int, nz: list[int]) -> tuple[list[int], bool]:
        """The banks of the units ``nz`` in which the ``nb`` bursts from ``b0`` open a row
        (fewer than a span, so not every bank): flat banks and False, or, when the chunk
        opens rows in the same banks of every unit, those banks of a unit and True."""
        if self._units_lowest:
            # Units are the lowest fields: one sample per interleave period gives the
            # banks, and every unit the chunk reached touched each of them.
            per = self.amap.unit_period_bursts
            table, size = self._block_flat, len(self._block_flat)
            banks = sorted({table[(s // self._blk) % size] % self.nb
                            for s in range(b0 - b0 % per, b0 + nb, per)})
            if len(nz) == self.cfg.units:
                return banks, True
            return [i * self.nb + b for i in nz for b in banks], False
        return sorted(set(self._blocks(b0, nb)[1])), False

    def _tail_layout(self, bt: int, n: int) -> Tail:
        """The banks the ``n`` bursts from ``bt`` leave a row open in, grouped by that
        row's distance in rows from the row of ``bt`` ([(distance, flat banks)]), and the
        distance by bank."""
        blocks, flats = self._blocks(bt, n)
        last = dict(zip(flats, blocks, strict=True))  # the last block of each bank wins
        rp = self.amap.row_period_bursts
        first_row = bt - bt % rp
        blk = self._blk
        dist = {f: (j * blk - first_row) // rp for f, j in last.items()}
        groups: dict[int, list[int]] = {}
        for f, d in dist.items():
            groups.setdefault(d, []).append(f)
        out = []
        for d, fl in sorted(groups.items()):
            banks = sorted({f % self.nb for f in fl})
            # Distinct flat banks, as many as units x banks: those banks of every unit.
            if len(fl) == self.cfg.units * len(banks):
                out.append((d, banks, True))
            else:
                out.append((d, fl, False))
        return out, dist

    def _scan_long_np(self, b0: int, nb: int, closed: bool) -> tuple[_Long, list[int]]:
        """``_scan_long`` decoding the chunk with numpy each time (for address maps whose
        row is not the top field)."""
        am = self.amap
        u = self.cfg.units
        open_rows = np.array(self.open_rows, dtype=np.int64).reshape(u, self.nb)
        counts = self._split_stream(b0, nb)
        hu, hb, hr = self._row_blocks(b0, min(nb, am.unit_period_bursts))
        if not self._units_lowest:
            _, first_idx = np.unique(hu, return_index=True)
            hu, hb, hr = hu[first_idx], hb[first_idx], hr[first_idx]
        # (With units lowest, each unit appears once in any interleave period.)
        st_all = np.ones(self.cfg.units, dtype=np.int64)
        if not closed:
            o = open_rows[hu, hb]
            st_all[hu] = np.where(o == -1, 1, np.where(o == hr, 0, 2))
        nz = np.nonzero(counts)[0]
        if not closed:
            if nb >= self._span:
                open_rows[nz] = _UNKNOWN_ROW
            elif self._units_lowest:
                per = am.unit_period_bursts
                _, ab, _ = am.decode_bursts(
                    np.arange(b0 - b0 % per, b0 + nb, per, dtype=np.int64))
                open_rows[np.ix_(nz, np.unique(ab))] = _UNKNOWN_ROW
            else:
                au, ab, _ = self._row_blocks(b0, nb)
                open_rows[au, ab] = _UNKNOWN_ROW
            n_tail = min(nb, self._tail)
            tu, tb, tr = self._row_blocks(b0 + nb - n_tail, n_tail)
            flat = tu * am.banks_per_unit + tb
            _, last_idx = np.unique(flat[::-1], return_index=True)
            sel = len(flat) - 1 - last_idx
            open_rows[tu[sel], tb[sel]] = tr[sel]
            self.open_rows[:] = open_rows.ravel().tolist()
        return _Long.decoded(nz.tolist(), counts.tolist()), st_all.tolist()

    def serve(self, write: bool, address: int, nbytes: int, pattern: Pattern,
              earliest: int) -> int:
        """Book a chunk; return its completion time (end of its last data), ps."""
        if nbytes <= 0:
            return earliest
        c = self.cfg
        am = self.amap
        start = earliest + c.controller_delay
        self.last_start = 1 << 62
        end = start
        closed = c.page_policy == "closed"
        if pattern is Pattern.STREAM:
            b0 = (address % am.capacity) >> am.burst_shift
            nb = ((address + nbytes - 1) >> am.burst_shift) - (address >> am.burst_shift) + 1
            blk = self._blk
            small = write and nb < self._small_write
            if (b0 + nb - 1) // blk - b0 // blk < _SCALAR_BLOCKS:
                units_b, states = self._scan_short(b0, nb, closed)
                for unit, b, acts in units_b:
                    self.acts += acts
                    end = max(end, self._book(unit, write, start, states.get(unit, 1),
                                              b * self.t_stream, small_write=small))
            else:
                chunk, first_states = self._scan_long(b0, nb, closed)
                e, acts = self._book_units(chunk, first_states, write, start, small)
                self.acts += acts
                if e > end:
                    end = e
            bursts = nb
        else:
            n_acc = -(-nbytes // RANDOM_ACCESS_BYTES) * self.rand_units
            first, _, _, _ = am.decode(address)
            e = self._book_random(first, n_acc, write, start, 1 if closed else 2)
            if e > end:
                end = e
            self.acts += n_acc
            bursts = n_acc * self.rand_bursts
        if write:
            self.bursts_written += bursts
            self.bytes_written += nbytes
        else:
            self.bursts_read += bursts
            self.bytes_read += nbytes
        self.last_end = max(self.last_end, end)
        return end

    # -- figures -----------------------------------------------------------------------
    @property
    def row_hits(self) -> int:
        """Bursts that found their row open: all but one per activation."""
        return max(0, self.bursts_read + self.bursts_written - self.acts)

    def refreshes(self, now: int) -> int:
        """Refresh commands (REFab, or REFpb in per-bank mode) run by ``now``, all units."""
        c = self.cfg
        if c.refresh == "off":
            return 0
        if c.refresh == "all-bank":
            period = c.t_refi
            phases = [ref_phase(c, i, r) for i in range(c.units) for r in range(c.ranks)]
        else:
            period = c.t_refi // self.nb
            phases = [ref_phase(c, i) for i in range(c.units)]
        return sum((now - off) // period + 1 for off in phases if now > off)

    def active_ps(self, now: int) -> list[int]:
        """Per unit, time with a bank open, summed over its ranks (open page: from the
        unit's first use, in each rank that holds an open row; closed: busy)."""
        out = []
        nbk = self.cfg.banks
        busy_ps = self.busy_ps
        for i in range(self.cfg.units):
            fu = int(self.first_use[i])
            if fu < 0:
                out.append(0)
            elif self.cfg.page_policy == "open":
                rows = self.open_rows[i * self.nb:(i + 1) * self.nb]
                ranks = sum(1 for r in range(self.cfg.ranks)
                            if any(x != -1 for x in rows[r * nbk:(r + 1) * nbk]))
                out.append(max(0, now - fu) * max(1, ranks, self.rand_ranks[i]))
            else:
                out.append(min(now, busy_ps[i]))
        return out
