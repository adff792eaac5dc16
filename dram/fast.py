"""The fast, chunk-level DRAM timing model used in full-system runs.

A chunk costs a loop over its units and at most one row per bank per unit, never
O(bytes), and creates no event. Each unit (pseudo-channel) has a busy-until time of its
data bus, as the kernel's ``Timeline``; the chunk completes at the latest unit's end.
The per-unit state (bus times, idle and data times, last direction, first use, ranks
opened, write eviction share), the open-row table and the counters are int64 and
float64 arrays, and on a map with the row on top (every preset's) a whole chunk is one
compiled call on them (``_serve_k``; each kernel ``_name_k`` is the method ``_name``
compiled): a long stream chunk's head, tail, touched banks and bursts per unit come
from the decoded row period (``_block_flat``) and interleave period (``_unit_of``), a
short one (fewer than ``_SCALAR_BLOCKS`` row-blocks) is scanned block by block, a random
one dealt out over the units, and every unit's bus booked, in a few hundred machine
instructions. So any chunk runs the same seven lines of Python on 8 units as on 32,
whatever its phase, length and pattern. On other maps the chunk is decoded with numpy
(long) or field by field (short) and booked unit by unit in Python (``_scan_long_np``,
``_scan_short``, ``_book_units``, ``_book``, ``_book_random``): the path the compiled
one is tested against (tests/dram/test_dram_speed.py), and whose line counts
tests/dram/test_dram_budget.py bounds for the compiled one.

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
#: Stream chunks of fewer row-blocks than this are scanned block by block.
_SCALAR_BLOCKS = 64
#: Open-row table entry of a bank known to be open on a row not tracked.
_UNKNOWN_ROW = -2
#: Largest row period (in row-blocks) whose decoded layout is kept as a table.
_MAX_LAYOUT_BLOCKS = 1 << 18

# Rows of ``FastModel._st`` (int64, one column per unit): the state the compiled path
# books in place, then the scratch rows it works in (no array built per call).
(_BUSY, _IDLE, _DATA, _DIR, _FIRST, _RANKS, _REF, _REF_RAND, _COUNT, _HEAD, _STATE,
 _ROWS) = range(12)
# Slots of ``FastModel._sc``, the counters the compiled path adds to.
_ACTS, _START, _BURSTS_RD, _BURSTS_WR, _BYTES_RD, _BYTES_WR, _END = range(7)
# Slots of ``FastModel._k``, the constants of the compiled path.
(_K_NB, _K_BLK, _K_RP, _K_RS, _K_RM, _K_PER, _K_UBLK, _K_TAIL, _K_SPAN, _K_LOWEST,
 _K_CLOSED, _K_TS, _K_SMALL, _K_BPR, _K_BG1, _K_RTW, _K_RTW_MISS, _K_WTR, _K_WTR_MISS,
 _K_DIV, _K_REF_PERIOD, _K_REF_BLOCK, _K_REF_PERIOD_RAND, _K_CAP, _K_BURST_SHIFT,
 _K_DELAY, _K_RAND_RD, _K_RAND_WR, _K_RAND_BARE, _K_RAND_BURSTS, _K_RAND_UNITS,
 _K_RANKS, _K_PAIRS) = range(33)
_K_HEADS = _K_PAIRS + 3  # after the write batches' turnarounds by first-row state
_K_SIZE = _K_HEADS + 6  # the heads of reads, then of writes, by first-row state


@njit
def _stretch_k(start: int, work: int, period: int, block: int,
               off: int) -> tuple[int, int]:
    """``FastModel._stretch`` on windows [off + k period, + block), k >= 0."""
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
    q, rem = divmod(work, period - block)
    if rem == 0:
        return s0, off + x + q * period
    return s0, off + x + q * period + block + rem


@njit
def _book_k(st: npt.NDArray[np.int64], wev: npt.NDArray[np.float64],
            sc: npt.NDArray[np.int64], k: npt.NDArray[np.int64], unit: int, w: int,
            start: int, state: int, n: int, small: bool) -> int:
    """``FastModel._book`` of ``n`` stream bursts on unit ``unit`` from first-row state
    ``state`` (``w`` 1 for a write; ``small``: a buffered small write); returns the end."""
    head = k[_K_HEADS + 3 * w + state]
    work = n * k[_K_TS]
    last = st[_DIR, unit]
    b = st[_BUSY, unit]
    ready = b
    if small:
        if last == 0:
            work += k[_K_PAIRS + state] * work // k[_K_DIV]
    elif last != w and last >= 0:
        if w:
            ready = b + (k[_K_RTW_MISS] if state == 2 else k[_K_RTW])
        else:
            ready = b + k[_K_WTR] + round(wev[unit] * (k[_K_WTR_MISS] - k[_K_WTR]))
    t0 = start + head
    if ready > t0:
        t0 = ready
    if t0 - head < sc[_START]:
        sc[_START] = t0 - head
    s, e = _stretch_k(t0, work, k[_K_REF_PERIOD], k[_K_REF_BLOCK], st[_REF, unit])
    st[_IDLE, unit] += s - b
    st[_BUSY, unit] = e
    st[_DATA, unit] += work
    if not small:
        st[_DIR, unit] = w
        if w:
            nbk = k[_K_NB]
            a = -(-n // k[_K_BPR]) + k[_K_BG1]
            wev[unit] = (a if a < nbk else nbk) / nbk
    if st[_FIRST, unit] < 0:
        st[_FIRST, unit] = start
    return e


@njit
def _serve_k(st: npt.NDArray[np.int64], wev: npt.NDArray[np.float64],
             orows: npt.NDArray[np.int64], sc: npt.NDArray[np.int64],
             k: npt.NDArray[np.int64], flat: npt.NDArray[np.int64],
             unit_of: npt.NDArray[np.int64], write: bool, address: int, nbytes: int,
             stream: bool, earliest: int) -> int:
    """``FastModel.serve`` of a chunk of ``nbytes`` > 0 on a map with the row on top,
    decoded from ``flat``, the flat bank of each row-block of a row period, and
    ``unit_of``, the unit of each unit-block of an interleave period. A long stream
    chunk: the bursts per unit (``_split_stream``), each unit's first-row state from
    the open rows of its first row-block, the booking of each unit's bus
    (``_book_units``) and the rows it leaves open (every bank it touched open on an
    untracked row, the last row-block of each bank of its tail on its row:
    ``_scan_long_np``). A short one block by block (``_scan_short``), a random one
    unit by unit (``_book_random``). State and counters change in place (``st``,
    ``wev`` the write eviction shares, ``orows`` the open rows, ``sc``); returns the
    completion."""
    u = st.shape[1]
    nbk, blk, rs, rm = k[_K_NB], k[_K_BLK], k[_K_RS], k[_K_RM]
    closed = k[_K_CLOSED] != 0
    size = flat.size
    w = 1 if write else 0
    start = earliest + k[_K_DELAY]
    sc[_START] = 1 << 62
    end: int = start
    bs = k[_K_BURST_SHIFT]
    counts, states = st[_COUNT], st[_STATE]
    if not stream:
        n_acc = -(-nbytes // RANDOM_ACCESS_BYTES) * k[_K_RAND_UNITS]
        first = flat[(((address % k[_K_CAP]) >> bs) // blk) % size] // nbk
        e = _book_random_k(st, wev, sc, k, first, n_acc, w, start, 1 if closed else 2)
        if e > end:
            end = e
        sc[_ACTS] += n_acc
        bursts = n_acc * k[_K_RAND_BURSTS]
    else:
        b0 = (address % k[_K_CAP]) >> bs
        nb = ((address + nbytes - 1) >> bs) - (address >> bs) + 1
        small = write and nb < k[_K_SMALL]
        bursts = nb
        if (b0 + nb - 1) // blk - b0 // blk < _SCALAR_BLOCKS:
            # Block by block, each unit's state read at its first block.
            counts[:] = 0
            states[:] = -1
            acts = 0
            stop = b0 + nb
            j = b0 // blk
            while j * blk < stop:
                lo = j * blk if j * blk > b0 else b0
                hi = (j + 1) * blk if (j + 1) * blk < stop else stop
                f = flat[(lo // blk) % size]
                unit = f // nbk
                row = (lo >> rs) & rm
                o = orows[f]
                if states[unit] < 0:
                    states[unit] = 1 if (o == -1 or closed) else (0 if o == row else 2)
                counts[unit] += hi - lo
                if closed or o != row:
                    acts += 1
                    if not closed:
                        orows[f] = row
                j += 1
            sc[_ACTS] += acts
            for unit in range(u):
                if counts[unit]:
                    e = _book_k(st, wev, sc, k, unit, w, start, states[unit], counts[unit],
                                small)
                    if e > end:
                        end = e
        else:
            end = _long_k(st, wev, orows, sc, k, flat, unit_of, b0, nb, w, start, small,
                          closed)
    if write:
        sc[_BURSTS_WR] += bursts
        sc[_BYTES_WR] += nbytes
    else:
        sc[_BURSTS_RD] += bursts
        sc[_BYTES_RD] += nbytes
    if end > sc[_END]:
        sc[_END] = end
    return end


@njit
def _long_k(st: npt.NDArray[np.int64], wev: npt.NDArray[np.float64],
            orows: npt.NDArray[np.int64], sc: npt.NDArray[np.int64],
            k: npt.NDArray[np.int64], flat: npt.NDArray[np.int64],
            unit_of: npt.NDArray[np.int64], b0: int, nb: int, w: int, start: int,
            small: bool, closed: bool) -> int:
    """``_serve_k`` of a long stream chunk of ``nb`` bursts from burst ``b0``."""
    u = st.shape[1]
    counts, head_flat, states, head_row = st[_COUNT], st[_HEAD], st[_STATE], st[_ROWS]
    nbk, blk, rp, rs, rm = k[_K_NB], k[_K_BLK], k[_K_RP], k[_K_RS], k[_K_RM]
    period, ublk = k[_K_PER], k[_K_UBLK]
    size = flat.size
    # Bursts per unit: whole interleave periods evenly, the remainder block by block.
    full, rem = divmod(nb, period)
    counts[:] = full * (period // u)
    if u == 1:
        counts[0] += rem
    elif rem:
        p0 = b0 % period
        first_blk, last_blk = p0 // ublk, (p0 + rem - 1) // ublk
        if last_blk - first_blk + 1 > _MAX_BLOCKS:
            counts += rem // u
            counts[:rem % u] += 1
        else:
            n_ub = unit_of.size
            for j in range(first_blk, last_blk + 1):
                wgt = ublk
                if j == first_blk:
                    wgt -= p0 - first_blk * ublk
                if j == last_blk:
                    wgt -= (last_blk + 1) * ublk - (p0 + rem)
                counts[unit_of[j % n_ub]] += wgt
    # First-row state of each unit: its first row-block in the chunk's first interleave
    # period (with units lowest, a unit met twice takes its later block).
    states[:] = 1
    if not closed:
        lowest = k[_K_LOWEST] != 0
        head_flat[:] = -1
        base = b0 - b0 % rp
        for j in range(b0 // blk, (b0 + min(nb, period) - 1) // blk + 1):
            f = flat[j % size]
            unit = f // nbk
            if lowest or head_flat[unit] < 0:
                head_flat[unit] = f
                head_row[unit] = (j * blk - base) // rp
        r = b0 >> rs
        for unit in range(u):
            f = head_flat[unit]
            if f >= 0:
                o = orows[f]
                if o != -1:
                    states[unit] = 0 if o == ((r + head_row[unit]) & rm) else 2
    bpr = k[_K_BPR]
    end = start
    acts = 0
    for unit in range(u):
        n = counts[unit]
        if n:
            a = -(-n // bpr)
            acts += (a if a > 1 else 1) - (1 if states[unit] == 0 else 0)
            e = _book_k(st, wev, sc, k, unit, w, start, states[unit], n, small)
            if e > end:
                end = e
    sc[_ACTS] += acts
    # The rows left open: every bank the chunk touched on an untracked row, then the
    # last row-block of each bank in its tail on that block's row.
    if not closed:
        if nb >= k[_K_SPAN]:
            orows[:] = _UNKNOWN_ROW
        elif k[_K_LOWEST] != 0:
            # Units lowest: one sample per interleave period gives the banks, and every
            # unit the chunk reached touched each of them.
            for p in range(b0 - b0 % period, b0 + nb, period):
                bank = flat[(p // blk) % size] % nbk
                for unit in range(u):
                    if counts[unit]:
                        orows[unit * nbk + bank] = _UNKNOWN_ROW
        else:
            for j in range(b0 // blk, (b0 + nb - 1) // blk + 1):
                orows[flat[j % size]] = _UNKNOWN_ROW
        # Block by block from the tail's first, the row one more past each row period
        # (no division per block: the tail is a few hundred blocks of every chunk).
        bt = b0 + nb - min(nb, k[_K_TAIL])
        r = bt >> rs
        i = (bt // blk) % size
        for _ in range(bt // blk, (b0 + nb - 1) // blk + 1):
            orows[flat[i]] = r & rm
            i += 1
            if i == size:
                i = 0
                r += 1
    return end


@njit
def _book_random_k(st: npt.NDArray[np.int64], wev: npt.NDArray[np.float64],
                   sc: npt.NDArray[np.int64], k: npt.NDArray[np.int64], first: int,
                   n_acc: int, w: int, start: int, state: int) -> int:
    """``FastModel._book_random``: ``n_acc`` random accesses dealt out from unit
    ``first``, every one a row miss of state ``state``; returns the latest end."""
    u = st.shape[1]
    per, extra = divmod(n_acc, u)
    t_acc = k[_K_RAND_WR] if w else k[_K_RAND_RD]
    head = k[_K_HEADS + 3 * w + state]
    t_head = start + head
    if w:
        turn = k[_K_RTW_MISS] if state == 2 else k[_K_RTW]
    else:
        turn = k[_K_WTR] + round(1.0 * (k[_K_WTR_MISS] - k[_K_WTR]))
    ts, nbk, bpr, bg1 = k[_K_TS], k[_K_NB], k[_K_BPR], k[_K_BG1]
    period, block, ranks = k[_K_REF_PERIOD_RAND], k[_K_REF_BLOCK], k[_K_RANKS]
    end = 0
    for j in range(min(u, n_acc)):
        unit = (first + j) % u
        n = per + 1 if j < extra else per
        if st[_RANKS, unit] < n:
            st[_RANKS, unit] = n if n < ranks else ranks
        last = st[_DIR, unit]
        b = st[_BUSY, unit]
        ready = b + (turn if last >= 0 and last != w else 0)
        if ready > t_head:
            t0 = ready
            work = n * t_acc
        else:
            t0 = t_head
            work = (n - 1) * t_acc + k[_K_RAND_BARE]
        if t0 - head < sc[_START]:
            sc[_START] = t0 - head
        s, e = _stretch_k(t0, work, period, block, st[_REF_RAND, unit])
        st[_IDLE, unit] += s - b
        st[_BUSY, unit] = e
        st[_DATA, unit] += work
        st[_DIR, unit] = w
        if w:
            a = -(-(work // ts) // bpr) + bg1
            wev[unit] = (a if a < nbk else nbk) / nbk
        if st[_FIRST, unit] < 0:
            st[_FIRST, unit] = start
        if e > end:
            end = e
    return end


def compile_kernels() -> None:
    """Compile this module's kernels into numba's on-disk cache (``_serve_k`` compiles
    with every kernel it calls), by a few chunks on an HBM2 stack (``make`` runs this
    before the tests and the default study, through ``tmhw.system.compile_kernels``)."""
    from dram.config import PRESETS

    m = FastModel(PRESETS["hbm2"])
    for i in range(3):
        m.serve(i == 1, i << 20, 1 << 20, Pattern.STREAM, 10_000_000)


def distinct_banks(banks: float, queued: int) -> float:
    """Expected number of distinct banks among ``queued`` uniformly random accesses."""
    return banks * (1.0 - (1.0 - 1.0 / banks) ** queued)
class FastModel:
    """Chunk-level timing and counters for one ``DramConfig``. Times in ps."""

    def __init__(self, cfg: DramConfig) -> None:
        self.cfg = cfg
        self.amap = AddressMap(cfg)
        u = cfg.units
        # Per unit (a column each, rows ``_BUSY`` ... ``_REF_RAND``): the data bus's
        # busy-until time (a Timeline per unit); the idle spans before its bookings (waits,
        # refresh windows skipped at a start, turnarounds), so that the time it was
        # reserved (``busy_ps``) is its busy-until time less these; the time it carried
        # data; the direction it last moved data in (-1 none, 0 read, 1 write); its first
        # use; the ranks its random accesses opened rows in; its refresh phase for streams
        # and for random accesses. One int64 array, with the compiled path's scratch rows
        # below, so that ``_serve_k`` takes the state in one argument; the rows are views.
        self._st = np.zeros((_ROWS + 1, u), dtype=np.int64)
        self.busy_until = self._st[_BUSY]
        self._idle = self._st[_IDLE]
        self._data = self._st[_DATA]
        self.last_dir = self._st[_DIR]
        self.last_dir[:] = -1
        self.first_use = self._st[_FIRST]
        self.first_use[:] = -1
        #: Per unit, the ranks its random accesses have opened rows in (at most ranks).
        self.rand_ranks = self._st[_RANKS]
        # Open row of each bank (see ``open_rows``).
        self._open_rows = np.full(u * self.amap.banks_per_unit, -1, dtype=np.int64)
        # Counters, in one int64 array that ``_serve_k`` adds to (slots ``_ACTS`` ...).
        self._sc = np.zeros(_END + 1, dtype=np.int64)
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
        self.w_evict = np.zeros(u, dtype=np.float64)
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
        self._st[_REF_RAND] = self.ref_offsets_rand
        self._st[_REF] = self.ref_offsets
        # Bursts of one row-block (consecutive bursts sharing a row) and of one row per
        # bank per unit: enough of a chunk's tail to know which rows it leaves open.
        self._blk = max(1, c.interleave_bytes // c.burst_bytes)
        self._tail = u * n_bg * 2 * self._blk
        self.bursts_per_row = c.bursts_per_row
        self._span = u * nb * c.bursts_per_row  # bursts that touch every bank of every unit
        self._units_lowest = self.amap.unit_period_bursts == u * self._blk
        self._pairs = (self._pair(0), self._pair(0), self._pair(2))
        # A chunk is decoded from the decoded row period and booked in one compiled call
        # (``_serve_k``) when the row is the top address field (the unit and bank of a
        # burst then depend only on its phase in the row period); otherwise it is decoded
        # and booked in Python.
        am = self.amap
        n_blocks = am.row_period_bursts // self._blk
        self._compiled = am.row_on_top and n_blocks <= _MAX_LAYOUT_BLOCKS
        #: Flat bank (``unit * banks_per_unit + bank``) of each row-block of a row period.
        self._block_flat = np.zeros(0, dtype=np.int64)
        #: Unit of each unit-block of an interleave period.
        self._unit_of = np.zeros(0, dtype=np.int64)
        if self._compiled:
            bu, bb, _ = am.decode_bursts(np.arange(n_blocks, dtype=np.int64) * self._blk)
            self._block_flat = np.ascontiguousarray(bu * nb + bb, dtype=np.int64)
            ublk = am.unit_block_bursts
            self._unit_of = am.units_of_bursts(
                np.arange(am.unit_period_bursts // ublk, dtype=np.int64) * ublk)
        k = np.zeros(_K_SIZE, dtype=np.int64)
        k[_K_NB], k[_K_BLK], k[_K_RP] = nb, self._blk, am.row_period_bursts
        k[_K_RS], k[_K_RM] = am.row_shift, am.row_mask
        k[_K_PER], k[_K_UBLK] = am.unit_period_bursts, am.unit_block_bursts
        k[_K_TAIL], k[_K_SPAN], k[_K_LOWEST] = self._tail, self._span, self._units_lowest
        k[_K_CLOSED], k[_K_TS] = c.page_policy == "closed", self.t_stream
        k[_K_SMALL], k[_K_BPR], k[_K_BG1] = self._small_write, c.bursts_per_row, n_bg - 1
        k[_K_RTW], k[_K_RTW_MISS], k[_K_WTR] = self.rtw, self.rtw_miss, self.wtr
        k[_K_WTR_MISS], k[_K_DIV] = self.wtr_miss, max(1, self.drain_batch * self.t_stream)
        k[_K_REF_PERIOD], k[_K_REF_BLOCK] = self.t_ref_period, self.t_ref_block
        k[_K_REF_PERIOD_RAND], k[_K_RANKS] = self.t_ref_period_rand, c.ranks
        k[_K_CAP], k[_K_BURST_SHIFT], k[_K_DELAY] = am.capacity, am.burst_shift, c.controller_delay
        k[_K_RAND_RD], k[_K_RAND_WR] = self.t_rand_rd, self.t_rand_wr
        k[_K_RAND_BARE] = self.rand_bursts * c.t_burst
        k[_K_RAND_BURSTS], k[_K_RAND_UNITS] = self.rand_bursts, self.rand_units
        k[_K_PAIRS:_K_PAIRS + 3] = self._pairs
        k[_K_HEADS:_K_HEADS + 6] = self._heads[0] + self._heads[1]
        self._k = k

    # The counters live in ``_sc``, where the compiled path adds to them.
    @property
    def acts(self) -> int:
        """Row activations."""
        return int(self._sc[_ACTS])

    @acts.setter
    def acts(self, v: int) -> None:
        self._sc[_ACTS] = v

    @property
    def last_start(self) -> int:
        """When the latest ``serve`` began service on its first unit (for latency)."""
        return int(self._sc[_START])

    @last_start.setter
    def last_start(self, v: int) -> None:
        self._sc[_START] = v

    @property
    def bursts_read(self) -> int:
        return int(self._sc[_BURSTS_RD])

    @property
    def bursts_written(self) -> int:
        return int(self._sc[_BURSTS_WR])

    @property
    def bytes_read(self) -> int:
        return int(self._sc[_BYTES_RD])

    @property
    def bytes_written(self) -> int:
        return int(self._sc[_BYTES_WR])

    @property
    def last_end(self) -> int:
        """The latest completion served, ps."""
        return int(self._sc[_END])

    @property
    def busy_ps(self) -> list[int]:
        """Per unit, the time its bus was reserved (data, and the refresh windows inside
        its bookings), ps."""
        out: list[int] = (self.busy_until - self._idle).tolist()
        return out

    @property
    def data_ps(self) -> list[int]:
        """Per unit, the time its bus carried data, ps."""
        out: list[int] = self._data.tolist()
        return out

    @property
    def open_rows(self) -> npt.NDArray[np.int64]:
        """Open row of each bank, flat (``unit * banks_per_unit + bank``): -1 precharged,
        ``_UNKNOWN_ROW`` open on a row not tracked."""
        return self._open_rows
    # -- timing ------------------------------------------------------------------------
    def _stretch(self, unit: int, start: int, work: int,
                 random: bool = False) -> tuple[int, int]:
        """(start, end) of ``work`` ps of bus time beginning no earlier than ``start`` and
        skipping unit ``unit``'s refresh windows [off + k period, + block), k >= 0 (those
        random accesses meet when ``random``): ``_stretch_k``, the one rule."""
        if random:
            period, off = self.t_ref_period_rand, self.ref_offsets_rand[unit]
        else:
            period, off = self.t_ref_period, self.ref_offsets[unit]
        s, e = _stretch_k(start, work, period, self.t_ref_block, int(off))
        return int(s), int(e)

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
        off = self._st[_REF][units] - period
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

    def _book_units(self, counts: list[int], states: list[int], write: bool, start: int,
                    small_write: bool) -> tuple[int, int]:
        """``_book`` for the units of one long stream chunk: unit ``i`` moves
        ``counts[i]`` bursts (none: not booked) from first-row state ``states[i]``.
        Returns the latest end and the activations (one per ``bursts_per_row`` of a
        unit's bursts, less the first if it hits). One loop, ``_stretch`` inlined: the
        loop ``_long_k`` compiles, for maps without the row on top."""
        last_dir, w_evict = self.last_dir, self.w_evict
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
        for unit, n in enumerate(counts):
            if not n:
                continue
            st = states[unit]
            a = -(-n // bpr)
            acts += (a if a > 1 else 1) - (st == 0)
            head = heads[st]
            work = n * ts
            last = int(last_dir[unit])
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
                    ready = b + wtr + round(float(w_evict[unit]) * d_wtr)
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

    def _scan_long_np(self, b0: int, nb: int, closed: bool) -> tuple[list[int], list[int]]:
        """The bursts per unit (indexed by unit) and each unit's first-row state of a
        long stream chunk, the chunk decoded with numpy: every bank it touched is left
        open on an untracked row (a later access is a row miss), and the last rows of
        each unit and bank group, which a continuing stream meets first, are tracked
        exactly (``_long_k`` compiled, for maps whose row is not the top field)."""
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
        return counts.tolist(), st_all.tolist()

    def serve(self, write: bool, address: int, nbytes: int, pattern: Pattern,
              earliest: int) -> int:
        """Book a chunk; return its completion time (end of its last data), ps."""
        if nbytes <= 0:
            return earliest
        if self._compiled:
            end: int = _serve_k(self._st, self.w_evict, self._open_rows, self._sc, self._k,
                                self._block_flat, self._unit_of, write, address, nbytes,
                                pattern is Pattern.STREAM, earliest)
            return end
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
                counts, first_states = self._scan_long_np(b0, nb, closed)
                e, acts = self._book_units(counts, first_states, write, start, small)
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
        sc = self._sc
        if write:
            sc[_BURSTS_WR] += bursts
            sc[_BYTES_WR] += nbytes
        else:
            sc[_BURSTS_RD] += bursts
            sc[_BYTES_RD] += nbytes
        if end > sc[_END]:
            sc[_END] = end
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
                out.append(max(0, now - fu) * max(1, ranks, int(self.rand_ranks[i])))
            else:
                out.append(min(now, busy_ps[i]))
        return out
