"""The fast DRAM model's booking rules, compiled: the only implementation of each.

A chunk is booked by one call, ``serve(state, ...)``, on the model's ``State``: a record
per unit (``UNIT``), the open row of every bank, the running totals (``TOTALS``) and the
timing and geometry record (``GEOMETRY``, built once by ``geometry``). The kernels run
as plain Python under ``NUMBA_DISABLE_JIT=1``.

- STREAM: the bursts are split over units by the address map (whole interleave periods
  arithmetically, the remainder block by block). A unit moves its bursts one per
  ``max(t_burst, t_ccd_s, t_ccd_l / bank groups rotated)``: with enough requests queued
  the controller hides row switches behind other banks' bursts, as the detailed model
  does. A chunk of fewer than ``SCALAR_BLOCKS`` row-blocks is scanned block by block
  (``short_stream``); a longer one takes its head, tail, touched banks and bursts per
  unit from the address map's periods (``long_stream``).
- RANDOM (and STRIDED): 64 B accesses, each a row miss. A unit serves one access per
  ``max(max(tRRD_S, tFAW / 4) / ranks, commands x tCK, data bursts + (1 - 1/ranks)
  tRTRS, bank cycle / busy banks)``: tRRD_S and tFAW bind each rank, so ranks take turns
  activating; the command bus carries ACT, the column accesses and PRE (HBM's separate
  row and column buses each their own); the data bus is shared by the ranks, and a burst
  from another rank than the last waits tRTRS more; the bank cycle is tRC for reads and
  tRCD_WR + CWL + data + tWR + tRP for writes; the busy banks are the expected distinct
  banks of all ranks among the accesses a full controller queue holds
  (``read_queue / bursts per access``), ``n (1 - (1 - 1/n)^Q)`` (``geometry``).
- An idle unit first pays the unloaded latency (``head``): [tRP if another row is open]
  + tRCD + CL (tRCD_WR + CWL for writes), from a per-unit, per-bank open-row table kept
  like the controller's. A busy unit pays the bus turnaround when the direction changes:
  t_rtw (read to write) or tWTR_S + CL (write to read), longer when the first row of the
  new direction must first be opened (tRTP / a command slot + tRP + tRCD ...). Writes
  shorter than a write-drain batch (``write_high - write_low`` bursts) to a unit that is
  reading are buffered as the controller does and pay one pair of turnarounds per batch
  (``batch_turnarounds``).
- Refresh: the unit's bus idles for tRTP + tRP + tRFC + tRCD - t_burst every tREFI
  (all-bank: last RD, PREA, REF, ACT, first RD), from the same per-unit staggered phase
  as the detailed controller; work is stretched over those windows in closed form
  (``stretch``). With several ranks, which refresh in turn every tREFI / ranks, random
  accesses stall through every rank's window (the queue fills with the refreshing rank's
  accesses), while a stream, which stays in one rank for a row period, meets one window
  per tREFI on average. Per-bank refresh costs streams nothing (the controller refreshes
  banks the traffic has left) and random accesses the banks that are refreshing on
  average.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from dram.config import DramConfig
from dram.mapping import (
    MAP_FIELDS,
    RANDOM_ACCESS_BYTES,
    AddressMap,
    bank_of,
    flat_bank_of,
    row_of,
    unit_of,
)
from dram.timing import ref_phase
from tmhw.sim.jit import njit

#: Above this many address blocks a partial interleave period is split evenly.
MAX_BLOCKS = 1 << 16
#: Stream chunks of fewer row-blocks than this are scanned block by block.
SCALAR_BLOCKS = 64
#: Open-row table entry of a bank known to be open on a row not tracked.
UNKNOWN_ROW = -2
#: ``TOTALS.start``'s value before a chunk has begun service on any unit.
_NOT_STARTED = 1 << 62

_I8 = np.int64
# The state's dtypes are record dtypes made once here, so that the arrays of every model
# share them: numba types an argument on its fast path by its dtype object, and a
# recarray view of a plain structured array makes a new one per model.
#: One unit (pseudo-channel): its data bus's state, then scratch of the chunk in hand.
UNIT = np.dtype((np.record, [
    ("busy", _I8),             # busy-until time of the data bus, ps
    ("idle", _I8),             # idle spans before its bookings (waits, refresh windows
                               # skipped at a start, turnarounds): reserved = busy - idle
    ("carried", _I8),          # time it carried data, ps
    ("direction", _I8),        # the direction it last moved data in: -1 none, 0 read, 1 write
    ("first_use", _I8),        # its first use, ps (-1 never)
    ("rand_ranks", _I8),       # ranks its random accesses opened rows in (at most ranks)
    ("ref_offset", _I8),       # phase of the refresh windows a stream meets, ps
    ("ref_offset_rand", _I8),  # phase of those random accesses meet, ps
    ("write_evict", np.float64),  # share of its banks the last write chunk opened rows in
    ("bursts", _I8),           # scratch: the chunk's bursts on this unit
    ("head_bank", _I8),        # scratch: flat bank of its first row-block (-1 none)
    ("head_row", _I8),         # scratch: row of that block
    ("head_state", _I8),       # scratch: first-row state (0 hit, 1 precharged, 2 miss)
]))
#: The model's running totals.
TOTALS = np.dtype((np.record, [(name, _I8) for name in (
    "acts", "start", "bursts_read", "bursts_written", "bytes_read", "bytes_written",
    "end")]))
#: Timing (ps) and address geometry, fixed for a model; the address map's decode
#: (``dram.mapping``) reads its ``MAP_FIELDS``.
GEOMETRY = np.dtype((np.record, [(name, _I8) for name in (
    # the capacity, and the bursts of: a row-block, a unit's row, an interleave period
    # and its unit-blocks, the tail whose rows are tracked, a run that touches every
    # bank of every unit
    "capacity", "burst_shift", "block", "bursts_per_row", "unit_period", "unit_block",
    "tail", "span", "units_lowest", "closed", "bank_groups_rotated", "ranks",
    # stream and random service times
    "delay", "t_stream", "t_cl", "t_cwl", "t_rcd", "t_rcd_wr", "t_rp", "rtw", "rtw_miss",
    "wtr", "wtr_miss", "drain_batch", "small_write", "rand_rd", "rand_wr", "rand_bare",
    "rand_bursts", "rand_units",
    # refresh windows
    "ref_period", "ref_block", "ref_period_rand") + MAP_FIELDS]))


class State(NamedTuple):
    """What ``serve`` books: record arrays (``np.recarray``) and the open-row table.
    Passed to the kernels as a plain tuple (numba types a named tuple by a slow path on
    every call), which ``serve`` unpacks in this order."""

    units: Any          # UNIT records, one per unit
    open_rows: Any      # open row per flat bank (unit * unit_banks + bank): -1 precharged
    totals: Any         # TOTALS, one record
    geo: Any            # GEOMETRY, one record


def distinct_banks(banks: float, queued: int) -> float:
    """Expected number of distinct banks among ``queued`` uniformly random accesses."""
    return banks * (1.0 - (1.0 - 1.0 / banks) ** queued)


def geometry(cfg: DramConfig, amap: AddressMap) -> Any:
    """The ``GEOMETRY`` record of ``cfg`` (a one-record ``np.recarray``)."""
    c = cfg
    geo = np.zeros(1, GEOMETRY).view(np.recarray)
    g = geo[0]
    for name, value in amap.map_fields.items():
        setattr(g, name, value)
    g.capacity, g.burst_shift = amap.capacity, amap.burst_shift
    nb = amap.banks_per_unit
    u = c.units
    n_bg = c.bank_groups if amap.bank_group_below_column() else 1
    g.bank_groups_rotated = n_bg
    g.block = blk = max(1, c.interleave_bytes // c.burst_bytes)
    g.bursts_per_row = c.bursts_per_row
    g.unit_period, g.unit_block = amap.unit_period_bursts, amap.unit_block_bursts
    # Enough of a chunk's tail to hold a row of every bank group of every unit, twice.
    g.tail = u * n_bg * 2 * blk
    g.span = u * nb * c.bursts_per_row
    g.units_lowest = amap.unit_period_bursts == u * blk
    g.closed = c.page_policy == "closed"
    g.ranks = c.ranks
    g.delay = c.controller_delay
    g.t_stream = max(c.t_burst, c.t_ccd_s if n_bg > 1 else c.t_ccd_l,
                     -(-c.t_ccd_l // n_bg))
    g.t_cl, g.t_cwl, g.t_rcd, g.t_rcd_wr, g.t_rp = c.t_cl, c.t_cwl, c.t_rcd, c.t_rcd_wr, c.t_rp
    # Bus turnarounds between data, without and with a row to open first.
    g.rtw = c.t_rtw
    g.rtw_miss = max(c.t_rtw, c.t_rtp + c.t_rp + c.t_rcd_wr + c.t_cwl - c.t_cl - c.t_burst)
    g.wtr = wtr = c.t_wtr_s + c.t_cl
    g.wtr_miss = max(wtr, c.tck + c.t_rp + c.t_rcd + c.t_cl - c.t_cwl - c.t_burst)
    g.drain_batch = c.write_high - c.write_low
    g.small_write = g.drain_batch * u  # stream writes shorter than this are buffered
    _random_times(g, c, nb)
    g.rand_units = amap.random_access_units
    # Refresh windows: unit i is blocked over [off_i + k period, + block), k >= 0; none
    # for per-bank refresh, which the controller gives banks the traffic has left.
    if c.refresh == "all-bank":
        g.ref_period = c.t_refi
        # Bus idle from the last data before a refresh to the first after it: the last
        # RD, tRTP to PREA, tRP to REF, tRFC, ACT, tRCD to the next RD.
        g.ref_block = c.t_rtp + c.t_rp + c.t_rfc + c.t_rcd - c.t_burst
    # Random accesses stall through every rank's refresh: the in-order front end fills
    # the queue with the refreshing rank's accesses within a few dozen accesses, and
    # drains them at one rank's pace afterwards. So with several ranks their windows come
    # every tREFI / ranks, as the ranks take turns (``ref_phase``). A stream stays in one
    # rank for a whole row period, so it meets one rank's refresh in ``ranks``.
    g.ref_period_rand = g.ref_period // c.ranks
    return geo


def _random_times(g: Any, c: DramConfig, nb: int) -> None:
    """A random access's bursts, bare data time and service times (module docstring)."""
    rand_bursts = max(1, min(RANDOM_ACCESS_BYTES, c.interleave_bytes) // c.burst_bytes)
    g.rand_bursts = rand_bursts
    g.rand_bare = rand_bursts * c.t_burst
    ranks = c.ranks
    t_act = max(c.t_rrd_s, c.t_faw / 4) / ranks
    data = rand_bursts * max(c.t_burst, c.t_ccd_s) + (1 - 1 / ranks) * c.t_rtrs
    pre = 0 if c.page_policy == "closed" else 1
    cmds = max(1 + pre, rand_bursts) if c.dual_command_bus else 1 + pre + rand_bursts
    t_act = max(t_act, float(cmds * c.tck))
    wr_cycle = max(c.t_rc, c.t_rcd_wr + c.t_cwl + rand_bursts * c.t_burst + c.t_wr + c.t_rp)
    # Per-bank refresh: on average t_rfc_pb / (t_refi / banks) banks are refreshing.
    nb_eff = nb - c.t_rfc_pb * nb / c.t_refi if c.refresh == "per-bank" else float(nb)
    qr = max(1, c.read_queue // rand_bursts)
    qw = max(1, c.write_queue // rand_bursts)
    g.rand_rd = round(max(t_act, data, c.t_rc / distinct_banks(nb_eff, qr)))
    g.rand_wr = round(max(t_act, data, wr_cycle / distinct_banks(nb_eff, qw)))


def new_state(cfg: DramConfig, amap: AddressMap) -> State:
    """An idle model's state: every bus free, every bank precharged."""
    geo = geometry(cfg, amap)
    g = geo[0]
    units = np.zeros(cfg.units, UNIT).view(np.recarray)
    units.direction = -1
    units.first_use = -1
    if g.ref_period:
        units.ref_offset = [ref_phase(cfg, i) % g.ref_period for i in range(cfg.units)]
        units.ref_offset_rand = units.ref_offset % g.ref_period_rand
    open_rows = np.full(cfg.units * amap.banks_per_unit, -1, dtype=np.int64)
    totals = np.zeros(1, TOTALS).view(np.recarray)
    return State(units, open_rows, totals, geo)


# -- the rules ----------------------------------------------------------------------------
@njit
def stretch(start: int, work: int, period: int, block: int, off: int) -> tuple[int, int]:
    """(start, end) of ``work`` ps of bus time beginning no earlier than ``start`` and
    skipping the refresh windows [off + k period, + block), k >= 0 (``period`` 0: none)."""
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
def head(g: Any, w: int, state: int) -> int:
    """Unloaded latency to the first data of a read (``w`` 0) or write (1) from
    first-row state ``state``: 0 row hit, 1 bank precharged, 2 another row open."""
    h: int
    if state == 0:
        h = g.t_cwl if w else g.t_cl
    else:
        h = g.t_rcd_wr + g.t_cwl if w else g.t_rcd + g.t_cl
        if state == 2:
            h += g.t_rp
    return h


@njit
def banks_touched(g: Any, bursts: int) -> int:
    """Banks a run of ``bursts`` consecutive bursts of one unit opens rows in."""
    a: int = -(-bursts // g.bursts_per_row) + g.bank_groups_rotated - 1
    return a if a < g.unit_banks else int(g.unit_banks)


@njit
def batch_turnarounds(g: Any, state: int) -> int:
    """Turnarounds of one buffered write batch: read to write, and back (the batch's
    writes took the banks ``banks_touched`` gives, whose reads reopen their rows)."""
    evict = banks_touched(g, g.drain_batch) / g.unit_banks
    turns: int = ((g.rtw_miss if state == 2 else g.rtw) + g.wtr
                  + round(evict * (g.wtr_miss - g.wtr)))
    return turns


@njit
def book(unit: Any, totals: Any, g: Any, w: int, start: int, state: int, n: int,
         small: bool) -> int:
    """Book ``n`` stream bursts on ``unit``'s bus from first-row state ``state`` (``w`` 1
    for a write; ``small``: a buffered small write); returns the end."""
    h = head(g, w, state)
    work = n * g.t_stream
    last = unit.direction
    b = unit.busy
    ready = b
    if small:
        if last == 0:
            # One pair of turnarounds per drain batch, spread over its writes.
            div = g.drain_batch * g.t_stream
            work += batch_turnarounds(g, state) * work // (div if div > 1 else 1)
    elif last != w and last >= 0:
        if w:
            ready = b + (g.rtw_miss if state == 2 else g.rtw)
        else:
            # Back to reading, the controller first finishes the reads the write batch
            # interrupted; their row is gone only if the writes took its bank.
            ready = b + g.wtr + round(unit.write_evict * (g.wtr_miss - g.wtr))
    t0 = start + h
    if ready > t0:
        t0 = ready
    if t0 - h < totals.start:
        totals.start = t0 - h
    s, e = stretch(t0, work, g.ref_period, g.ref_block, unit.ref_offset)
    unit.idle += s - b
    unit.busy = e
    unit.carried += work
    if not small:
        unit.direction = w
        if w:
            unit.write_evict = banks_touched(g, n) / g.unit_banks
    if unit.first_use < 0:
        unit.first_use = start
    return e


@njit
def book_random(units: Any, totals: Any, g: Any, first: int, n_acc: int, w: int,
                start: int, state: int) -> int:
    """Book ``n_acc`` random accesses dealt out from unit ``first`` (``n_acc // units``
    each, one more for the first ``n_acc % units``), every one a row miss of state
    ``state``; returns the latest end."""
    u = units.size
    per, extra = divmod(n_acc, u)
    t_acc = g.rand_wr if w else g.rand_rd
    h = head(g, w, state)
    t_head = start + h
    if w:
        turn = g.rtw_miss if state == 2 else g.rtw
    else:
        turn = g.wtr + round(1.0 * (g.wtr_miss - g.wtr))  # a random read opens a row
    end = 0
    for j in range(min(u, n_acc)):
        unit = units[(first + j) % u]
        n = per + 1 if j < extra else per
        if unit.rand_ranks < n:
            unit.rand_ranks = n if n < g.ranks else g.ranks
        last = unit.direction
        b = unit.busy
        ready = b + (turn if last >= 0 and last != w else 0)
        if ready > t_head:
            t0 = ready
            work = n * t_acc
        else:  # an idle unit's first access costs its bare data time
            t0 = t_head
            work = (n - 1) * t_acc + g.rand_bare
        if t0 - h < totals.start:
            totals.start = t0 - h
        s, e = stretch(t0, work, g.ref_period_rand, g.ref_block, unit.ref_offset_rand)
        unit.idle += s - b
        unit.busy = e
        unit.carried += work
        unit.direction = w
        if w:
            unit.write_evict = banks_touched(g, work // g.t_stream) / g.unit_banks
        if unit.first_use < 0:
            unit.first_use = start
        if e > end:
            end = e
    return end


@njit
def short_stream(units: Any, open_rows: Any, totals: Any, g: Any, b0: int, nb: int,
                 w: int, start: int) -> int:
    """Book a stream chunk of ``nb`` bursts from burst ``b0`` row-block by row-block,
    each unit's first-row state read at its first block; returns the latest end."""
    closed = g.closed != 0
    blk = g.block
    for i in range(units.size):
        units[i].bursts = 0
        units[i].head_state = -1
    acts = 0
    stop = b0 + nb
    j = b0 // blk
    while j * blk < stop:
        lo = j * blk if j * blk > b0 else b0
        hi = (j + 1) * blk if (j + 1) * blk < stop else stop
        f = flat_bank_of(g, lo)
        unit = units[f // g.unit_banks]
        row = row_of(g, lo)
        o = open_rows[f]
        if unit.head_state < 0:
            unit.head_state = 1 if (o == -1 or closed) else (0 if o == row else 2)
        unit.bursts += hi - lo
        if closed or o != row:
            acts += 1
            if not closed:
                open_rows[f] = row
        j += 1
    totals.acts += acts
    small = w == 1 and nb < g.small_write
    end = start
    for i in range(units.size):
        unit = units[i]
        if unit.bursts:
            e = book(unit, totals, g, w, start, unit.head_state, unit.bursts, small)
            if e > end:
                end = e
    return end


@njit
def _split(units: Any, g: Any, b0: int, nb: int) -> None:
    """Each unit's bursts of the ``nb`` consecutive bursts from ``b0``: whole interleave
    periods evenly, the remainder block by block (``UNIT.bursts``)."""
    u = units.size
    period, ublk = g.unit_period, g.unit_block
    full, rem = divmod(nb, period)
    for i in range(u):
        units[i].bursts = full * (period // u)
    if u == 1:
        units[0].bursts += rem
    elif rem:
        p0 = b0 % period
        first_blk, last_blk = p0 // ublk, (p0 + rem - 1) // ublk
        if last_blk - first_blk + 1 > MAX_BLOCKS:
            for i in range(u):
                units[i].bursts += rem // u + (1 if i < rem % u else 0)
        else:
            for j in range(first_blk, last_blk + 1):
                wgt = ublk
                if j == first_blk:
                    wgt -= p0 - first_blk * ublk
                if j == last_blk:
                    wgt -= (last_blk + 1) * ublk - (p0 + rem)
                units[unit_of(g, j * ublk)].bursts += wgt


@njit
def _head_states(units: Any, open_rows: Any, g: Any, b0: int, nb: int) -> None:
    """Each unit's first-row state (``UNIT.head_state``): that of its first row-block in
    the chunk's first interleave period (with units lowest, a unit met twice takes its
    later block)."""
    for i in range(units.size):
        units[i].head_state = 1
        units[i].head_bank = -1
    if g.closed:
        return
    lowest = g.units_lowest != 0
    blk = g.block
    span = nb if nb < g.unit_period else g.unit_period
    for j in range(b0 // blk, (b0 + span - 1) // blk + 1):
        f = flat_bank_of(g, j * blk)
        unit = units[f // g.unit_banks]
        if lowest or unit.head_bank < 0:
            unit.head_bank = f
            unit.head_row = row_of(g, j * blk)
    for i in range(units.size):
        unit = units[i]
        if unit.head_bank >= 0:
            o = open_rows[unit.head_bank]
            if o != -1:
                unit.head_state = 0 if o == unit.head_row else 2


@njit
def _leave_rows(units: Any, open_rows: Any, g: Any, b0: int, nb: int) -> None:
    """The rows a long stream chunk leaves open: every bank it touched on an untracked
    row, then the last row-block of each bank in its tail on that block's row."""
    nbk, blk = g.unit_banks, g.block
    if nb >= g.span:
        for i in range(units.size):
            if units[i].bursts:
                open_rows[i * nbk:(i + 1) * nbk] = UNKNOWN_ROW
    elif g.units_lowest:
        # One sample per interleave period gives the banks, and every unit the chunk
        # reached touched each of them.
        period = g.unit_period
        for p in range(b0 - b0 % period, b0 + nb, period):
            bank = bank_of(g, p)
            for i in range(units.size):
                if units[i].bursts:
                    open_rows[i * nbk + bank] = UNKNOWN_ROW
    else:
        for j in range(b0 // blk, (b0 + nb - 1) // blk + 1):
            open_rows[flat_bank_of(g, j * blk)] = UNKNOWN_ROW
    tail = nb if nb < g.tail else g.tail
    for j in range((b0 + nb - tail) // blk, (b0 + nb - 1) // blk + 1):
        open_rows[flat_bank_of(g, j * blk)] = row_of(g, j * blk)


@njit
def long_stream(units: Any, open_rows: Any, totals: Any, g: Any, b0: int, nb: int,
                w: int, start: int) -> int:
    """Book a stream chunk of ``nb`` bursts from burst ``b0`` from the address map's
    periods: the bursts per unit, each unit's first-row state, one booking of each
    unit's bus (an activation per ``bursts_per_row`` of its bursts, less the first if it
    hits) and the rows it leaves open; returns the latest end."""
    _split(units, g, b0, nb)
    _head_states(units, open_rows, g, b0, nb)
    small = w == 1 and nb < g.small_write
    bpr = g.bursts_per_row
    end = start
    acts = 0
    for i in range(units.size):
        unit = units[i]
        n = unit.bursts
        if n:
            a = -(-n // bpr)
            acts += (a if a > 1 else 1) - (1 if unit.head_state == 0 else 0)
            e = book(unit, totals, g, w, start, unit.head_state, n, small)
            if e > end:
                end = e
    totals.acts += acts
    if not g.closed:
        _leave_rows(units, open_rows, g, b0, nb)
    return end


@njit
def serve(state: tuple[Any, Any, Any, Any], write: bool, address: int, nbytes: int,
          stream: bool, earliest: int) -> int:
    """Book a chunk of ``nbytes`` > 0 at ``address`` (``stream``: consecutive bursts,
    else random 64 B accesses) arriving at ``earliest``; returns its completion. The
    state (``State`` as a tuple) changes in place."""
    units, open_rows, totals_a, geo = state
    g = geo[0]
    totals = totals_a[0]
    w = 1 if write else 0
    start = earliest + g.delay
    totals.start = _NOT_STARTED
    b0 = (address % g.capacity) >> g.burst_shift
    end = start
    if not stream:
        n_acc = -(-nbytes // RANDOM_ACCESS_BYTES) * g.rand_units
        e = book_random(units, totals, g, unit_of(g, b0), n_acc, w, start,
                        1 if g.closed else 2)
        if e > end:
            end = e
        totals.acts += n_acc
        bursts = n_acc * g.rand_bursts
    else:
        bs = g.burst_shift
        nb = ((address + nbytes - 1) >> bs) - (address >> bs) + 1
        blk = g.block
        if (b0 + nb - 1) // blk - b0 // blk < SCALAR_BLOCKS:
            end = short_stream(units, open_rows, totals, g, b0, nb, w, start)
        else:
            end = long_stream(units, open_rows, totals, g, b0, nb, w, start)
        bursts = nb
    if write:
        totals.bursts_written += bursts
        totals.bytes_written += nbytes
    else:
        totals.bursts_read += bursts
        totals.bytes_read += nbytes
    if end > totals.end:
        totals.end = end
    return int(end)  # a Python int when run as Python (a no-op compiled)
