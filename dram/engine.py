"""The fast DRAM model's booking rules, compiled: the only implementation of each.

A chunk is booked by one call, ``serve(state, ...)``, on the model's ``State``: a record
per unit (``UNIT``), the open row of every bank, the running totals (``TOTALS``) and the
timing and geometry record (``GEOMETRY``, built once by ``build_geometry``). The kernels run
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
  (``read_queue / bursts per access``), ``n (1 - (1 - 1/n)^Q)`` (``build_geometry``).
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
from tmhw.sim.jit import njit_noref

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


def build_geometry(cfg: DramConfig, amap: AddressMap) -> Any:
    """The ``GEOMETRY`` record of ``cfg`` (a one-record ``np.recarray``)."""
    geometry_rec = np.zeros(1, GEOMETRY).view(np.recarray)
    geometry = geometry_rec[0]
    for name, value in amap.map_fields.items():
        setattr(geometry, name, value)
    geometry.capacity, geometry.burst_shift = amap.capacity, amap.burst_shift
    banks_per_unit = amap.banks_per_unit
    units = cfg.units
    n_bg = cfg.bank_groups if amap.bank_group_below_column() else 1
    geometry.bank_groups_rotated = n_bg
    geometry.block = block = max(1, cfg.interleave_bytes // cfg.burst_bytes)
    geometry.bursts_per_row = cfg.bursts_per_row
    geometry.unit_period, geometry.unit_block = amap.unit_period_bursts, amap.unit_block_bursts
    # Enough of a chunk's tail to hold a row of every bank group of every unit, twice.
    geometry.tail = units * n_bg * 2 * block
    geometry.span = units * banks_per_unit * cfg.bursts_per_row
    geometry.units_lowest = amap.unit_period_bursts == units * block
    geometry.closed = cfg.page_policy == "closed"
    geometry.ranks = cfg.ranks
    geometry.delay = cfg.controller_delay
    geometry.t_stream = max(cfg.t_burst, cfg.t_ccd_s if n_bg > 1 else cfg.t_ccd_l,
                            -(-cfg.t_ccd_l // n_bg))
    geometry.t_cl, geometry.t_cwl, geometry.t_rcd = cfg.t_cl, cfg.t_cwl, cfg.t_rcd
    geometry.t_rcd_wr, geometry.t_rp = cfg.t_rcd_wr, cfg.t_rp
    # Bus turnarounds between data, without and with a row to open first.
    geometry.rtw = cfg.t_rtw
    geometry.rtw_miss = max(cfg.t_rtw, cfg.t_rtp + cfg.t_rp + cfg.t_rcd_wr + cfg.t_cwl
                            - cfg.t_cl - cfg.t_burst)
    geometry.wtr = wtr = cfg.t_wtr_s + cfg.t_cl
    geometry.wtr_miss = max(wtr, cfg.tck + cfg.t_rp + cfg.t_rcd + cfg.t_cl - cfg.t_cwl
                            - cfg.t_burst)
    geometry.drain_batch = cfg.write_high - cfg.write_low
    # stream writes shorter than this are buffered
    geometry.small_write = geometry.drain_batch * units
    _random_times(geometry, cfg, banks_per_unit)
    geometry.rand_units = amap.random_access_units
    # Refresh windows: unit i is blocked over [off_i + k period, + block), k >= 0; none
    # for per-bank refresh, which the controller gives banks the traffic has left.
    if cfg.refresh == "all-bank":
        geometry.ref_period = cfg.t_refi
        # Bus idle from the last data before a refresh to the first after it: the last
        # RD, tRTP to PREA, tRP to REF, tRFC, ACT, tRCD to the next RD.
        geometry.ref_block = cfg.t_rtp + cfg.t_rp + cfg.t_rfc + cfg.t_rcd - cfg.t_burst
    # Random accesses stall through every rank's refresh: the in-order front end fills
    # the queue with the refreshing rank's accesses within a few dozen accesses, and
    # drains them at one rank's pace afterwards. So with several ranks their windows come
    # every tREFI / ranks, as the ranks take turns (``ref_phase``). A stream stays in one
    # rank for a whole row period, so it meets one rank's refresh in ``ranks``.
    geometry.ref_period_rand = geometry.ref_period // cfg.ranks
    return geometry_rec


def _random_times(geometry: Any, cfg: DramConfig, banks_per_unit: int) -> None:
    """A random access's bursts, bare data time and service times (module docstring)."""
    rand_bursts = max(1, min(RANDOM_ACCESS_BYTES, cfg.interleave_bytes) // cfg.burst_bytes)
    geometry.rand_bursts = rand_bursts
    geometry.rand_bare = rand_bursts * cfg.t_burst
    ranks = cfg.ranks
    t_act = max(cfg.t_rrd_s, cfg.t_faw / 4) / ranks
    data = rand_bursts * max(cfg.t_burst, cfg.t_ccd_s) + (1 - 1 / ranks) * cfg.t_rtrs
    pre = 0 if cfg.page_policy == "closed" else 1
    cmds = max(1 + pre, rand_bursts) if cfg.dual_command_bus else 1 + pre + rand_bursts
    t_act = max(t_act, float(cmds * cfg.tck))
    wr_cycle = max(cfg.t_rc, cfg.t_rcd_wr + cfg.t_cwl + rand_bursts * cfg.t_burst + cfg.t_wr
                   + cfg.t_rp)
    # Per-bank refresh: on average t_rfc_pb / (t_refi / banks) banks are refreshing.
    banks_free = (banks_per_unit - cfg.t_rfc_pb * banks_per_unit / cfg.t_refi
                  if cfg.refresh == "per-bank" else float(banks_per_unit))
    reads_queued = max(1, cfg.read_queue // rand_bursts)
    writes_queued = max(1, cfg.write_queue // rand_bursts)
    geometry.rand_rd = round(max(t_act, data,
                                 cfg.t_rc / distinct_banks(banks_free, reads_queued)))
    geometry.rand_wr = round(max(t_act, data,
                                 wr_cycle / distinct_banks(banks_free, writes_queued)))


def new_state(cfg: DramConfig, amap: AddressMap) -> State:
    """An idle model's state: every bus free, every bank precharged."""
    geometry_rec = build_geometry(cfg, amap)
    geometry = geometry_rec[0]
    units = np.zeros(cfg.units, UNIT).view(np.recarray)
    units.direction = -1
    units.first_use = -1
    if geometry.ref_period:
        units.ref_offset = [ref_phase(cfg, i) % geometry.ref_period for i in range(cfg.units)]
        units.ref_offset_rand = units.ref_offset % geometry.ref_period_rand
    open_rows = np.full(cfg.units * amap.banks_per_unit, -1, dtype=np.int64)
    totals = np.zeros(1, TOTALS).view(np.recarray)
    return State(units, open_rows, totals, geometry_rec)


# -- the rules ----------------------------------------------------------------------------
@njit_noref
def stretch(start: int, work: int, period: int, block: int, offset: int) -> tuple[int, int]:
    """(start, end) of ``work`` ps of bus time beginning no earlier than ``start`` and
    skipping the refresh windows [offset + k period, + block), k >= 0 (``period`` 0: none)."""
    if period == 0 or work == 0:
        return start, start + work
    offset -= period  # the window at k = 0 as "the first" below
    since = start - offset
    if since < period:  # before the first window
        begin = start
        avail = period - since
        if work <= avail:
            return begin, begin + work
        work -= avail
        since = period
    else:
        phase = since % period
        if phase < block:
            since += block - phase
        begin = since + offset
        avail = period - since % period
        if work <= avail:
            return begin, begin + work
        work -= avail
        since += avail
    periods, rem = divmod(work, period - block)
    if rem == 0:
        return begin, offset + since + periods * period
    return begin, offset + since + periods * period + block + rem


@njit_noref
def head(geometry: Any, direction: int, state: int) -> int:
    """Unloaded latency to the first data of a read (``direction`` 0) or write (1) from
    first-row state ``state``: 0 row hit, 1 bank precharged, 2 another row open."""
    latency: int
    if state == 0:
        latency = geometry.t_cwl if direction else geometry.t_cl
    else:
        latency = (geometry.t_rcd_wr + geometry.t_cwl if direction
                   else geometry.t_rcd + geometry.t_cl)
        if state == 2:
            latency += geometry.t_rp
    return latency


@njit_noref
def banks_touched(geometry: Any, bursts: int) -> int:
    """Banks a run of ``bursts`` consecutive bursts of one unit opens rows in."""
    banks: int = -(-bursts // geometry.bursts_per_row) + geometry.bank_groups_rotated - 1
    return banks if banks < geometry.unit_banks else int(geometry.unit_banks)


@njit_noref
def batch_turnarounds(geometry: Any, state: int) -> int:
    """Turnarounds of one buffered write batch: read to write, and back (the batch's
    writes took the banks ``banks_touched`` gives, whose reads reopen their rows)."""
    evict = banks_touched(geometry, geometry.drain_batch) / geometry.unit_banks
    turns: int = ((geometry.rtw_miss if state == 2 else geometry.rtw) + geometry.wtr
                  + round(evict * (geometry.wtr_miss - geometry.wtr)))
    return turns


@njit_noref
def book(unit: Any, totals: Any, geometry: Any, direction: int, start: int, state: int,
         n_bursts: int, small: bool) -> int:
    """Book ``n_bursts`` stream bursts on ``unit``'s bus from first-row state ``state``
    (``direction`` 1 for a write; ``small``: a buffered small write); returns the end."""
    latency = head(geometry, direction, state)
    work = n_bursts * geometry.t_stream
    last = unit.direction
    busy = unit.busy
    ready = busy
    if small:
        if last == 0:
            # One pair of turnarounds per drain batch, spread over its writes.
            batch_work = geometry.drain_batch * geometry.t_stream
            work += (batch_turnarounds(geometry, state) * work
                     // (batch_work if batch_work > 1 else 1))
    elif last != direction and last >= 0:
        if direction:
            ready = busy + (geometry.rtw_miss if state == 2 else geometry.rtw)
        else:
            # Back to reading, the controller first finishes the reads the write batch
            # interrupted; their row is gone only if the writes took its bank.
            ready = busy + geometry.wtr + round(unit.write_evict
                                                * (geometry.wtr_miss - geometry.wtr))
    first_data = start + latency
    if ready > first_data:
        first_data = ready
    if first_data - latency < totals.start:
        totals.start = first_data - latency
    begin, end = stretch(first_data, work, geometry.ref_period, geometry.ref_block,
                         unit.ref_offset)
    unit.idle += begin - busy
    unit.busy = end
    unit.carried += work
    if not small:
        unit.direction = direction
        if direction:
            unit.write_evict = banks_touched(geometry, n_bursts) / geometry.unit_banks
    if unit.first_use < 0:
        unit.first_use = start
    return end


@njit_noref
def book_random(units: Any, totals: Any, geometry: Any, first: int, n_acc: int,
                direction: int, start: int, state: int) -> int:
    """Book ``n_acc`` random accesses dealt out from unit ``first`` (``n_acc // units``
    each, one more for the first ``n_acc % units``), every one a row miss of state
    ``state``; returns the latest end."""
    n_units = units.size
    per, extra = divmod(n_acc, n_units)
    t_acc = geometry.rand_wr if direction else geometry.rand_rd
    latency = head(geometry, direction, state)
    t_head = start + latency
    if direction:
        turn = geometry.rtw_miss if state == 2 else geometry.rtw
    else:
        # a random read opens a row
        turn = geometry.wtr + round(1.0 * (geometry.wtr_miss - geometry.wtr))
    end = 0
    for j in range(min(n_units, n_acc)):
        unit = units[(first + j) % n_units]
        accesses = per + 1 if j < extra else per
        if unit.rand_ranks < accesses:
            unit.rand_ranks = accesses if accesses < geometry.ranks else geometry.ranks
        last = unit.direction
        busy = unit.busy
        ready = busy + (turn if last >= 0 and last != direction else 0)
        if ready > t_head:
            first_data = ready
            work = accesses * t_acc
        else:  # an idle unit's first access costs its bare data time
            first_data = t_head
            work = (accesses - 1) * t_acc + geometry.rand_bare
        if first_data - latency < totals.start:
            totals.start = first_data - latency
        begin, unit_end = stretch(first_data, work, geometry.ref_period_rand,
                                  geometry.ref_block, unit.ref_offset_rand)
        unit.idle += begin - busy
        unit.busy = unit_end
        unit.carried += work
        unit.direction = direction
        if direction:
            unit.write_evict = (banks_touched(geometry, work // geometry.t_stream)
                                / geometry.unit_banks)
        if unit.first_use < 0:
            unit.first_use = start
        if unit_end > end:
            end = unit_end
    return end


@njit_noref
def short_stream(units: Any, open_rows: Any, totals: Any, geometry: Any, first_burst: int,
                 n_bursts: int, direction: int, start: int) -> int:
    """Book a stream chunk of ``n_bursts`` bursts from burst ``first_burst`` row-block by
    row-block, each unit's first-row state read at its first block; returns the latest
    end."""
    closed = geometry.closed != 0
    block = geometry.block
    for i in range(units.size):
        units[i].bursts = 0
        units[i].head_state = -1
    acts = 0
    stop = first_burst + n_bursts
    block_no = first_burst // block
    while block_no * block < stop:
        lo = block_no * block if block_no * block > first_burst else first_burst
        hi = (block_no + 1) * block if (block_no + 1) * block < stop else stop
        flat_bank = flat_bank_of(geometry, lo)
        unit = units[flat_bank // geometry.unit_banks]
        row = row_of(geometry, lo)
        open_row = open_rows[flat_bank]
        if unit.head_state < 0:
            unit.head_state = 1 if (open_row == -1 or closed) else (0 if open_row == row else 2)
        unit.bursts += hi - lo
        if closed or open_row != row:
            acts += 1
            if not closed:
                open_rows[flat_bank] = row
        block_no += 1
    totals.acts += acts
    small = direction == 1 and n_bursts < geometry.small_write
    end = start
    for i in range(units.size):
        unit = units[i]
        if unit.bursts:
            unit_end = book(unit, totals, geometry, direction, start, unit.head_state,
                            unit.bursts, small)
            if unit_end > end:
                end = unit_end
    return end


@njit_noref
def _split(units: Any, geometry: Any, first_burst: int, n_bursts: int) -> None:
    """Each unit's bursts of the ``n_bursts`` consecutive bursts from ``first_burst``:
    whole interleave periods evenly, the remainder block by block (``UNIT.bursts``)."""
    n_units = units.size
    period, unit_block = geometry.unit_period, geometry.unit_block
    full, rem = divmod(n_bursts, period)
    for i in range(n_units):
        units[i].bursts = full * (period // n_units)
    if n_units == 1:
        units[0].bursts += rem
    elif rem:
        phase = first_burst % period
        first_blk, last_blk = phase // unit_block, (phase + rem - 1) // unit_block
        if last_blk - first_blk + 1 > MAX_BLOCKS:
            for i in range(n_units):
                units[i].bursts += rem // n_units + (1 if i < rem % n_units else 0)
        else:
            for j in range(first_blk, last_blk + 1):
                weight = unit_block
                if j == first_blk:
                    weight -= phase - first_blk * unit_block
                if j == last_blk:
                    weight -= (last_blk + 1) * unit_block - (phase + rem)
                units[unit_of(geometry, j * unit_block)].bursts += weight


@njit_noref
def _head_states(units: Any, open_rows: Any, geometry: Any, first_burst: int,
                 n_bursts: int) -> None:
    """Each unit's first-row state (``UNIT.head_state``): that of its first row-block in
    the chunk's first interleave period (with units lowest, a unit met twice takes its
    later block)."""
    for i in range(units.size):
        units[i].head_state = 1
        units[i].head_bank = -1
    if geometry.closed:
        return
    lowest = geometry.units_lowest != 0
    block = geometry.block
    span = n_bursts if n_bursts < geometry.unit_period else geometry.unit_period
    for j in range(first_burst // block, (first_burst + span - 1) // block + 1):
        flat_bank = flat_bank_of(geometry, j * block)
        unit = units[flat_bank // geometry.unit_banks]
        if lowest or unit.head_bank < 0:
            unit.head_bank = flat_bank
            unit.head_row = row_of(geometry, j * block)
    for i in range(units.size):
        unit = units[i]
        if unit.head_bank >= 0:
            open_row = open_rows[unit.head_bank]
            if open_row != -1:
                unit.head_state = 0 if open_row == unit.head_row else 2


@njit_noref
def _leave_rows(units: Any, open_rows: Any, geometry: Any, first_burst: int,
                n_bursts: int) -> None:
    """The rows a long stream chunk leaves open: every bank it touched on an untracked
    row, then the last row-block of each bank in its tail on that block's row."""
    unit_banks, block = geometry.unit_banks, geometry.block
    stop = first_burst + n_bursts
    if n_bursts >= geometry.span:
        for i in range(units.size):
            if units[i].bursts:
                open_rows[i * unit_banks:(i + 1) * unit_banks] = UNKNOWN_ROW
    elif geometry.units_lowest:
        # One sample per interleave period gives the banks, and every unit the chunk
        # reached touched each of them.
        period = geometry.unit_period
        for period_start in range(first_burst - first_burst % period, stop, period):
            bank = bank_of(geometry, period_start)
            for i in range(units.size):
                if units[i].bursts:
                    open_rows[i * unit_banks + bank] = UNKNOWN_ROW
    else:
        for j in range(first_burst // block, (stop - 1) // block + 1):
            open_rows[flat_bank_of(geometry, j * block)] = UNKNOWN_ROW
    tail = n_bursts if n_bursts < geometry.tail else geometry.tail
    for j in range((stop - tail) // block, (stop - 1) // block + 1):
        open_rows[flat_bank_of(geometry, j * block)] = row_of(geometry, j * block)


@njit_noref
def long_stream(units: Any, open_rows: Any, totals: Any, geometry: Any, first_burst: int,
                n_bursts: int, direction: int, start: int) -> int:
    """Book a stream chunk of ``n_bursts`` bursts from burst ``first_burst`` from the
    address map's periods: the bursts per unit, each unit's first-row state, one booking of each
    unit's bus (an activation per ``bursts_per_row`` of its bursts, less the first if it
    hits) and the rows it leaves open; returns the latest end."""
    _split(units, geometry, first_burst, n_bursts)
    _head_states(units, open_rows, geometry, first_burst, n_bursts)
    small = direction == 1 and n_bursts < geometry.small_write
    bursts_per_row = geometry.bursts_per_row
    end = start
    acts = 0
    for i in range(units.size):
        unit = units[i]
        unit_bursts = unit.bursts
        if unit_bursts:
            rows = -(-unit_bursts // bursts_per_row)
            acts += (rows if rows > 1 else 1) - (1 if unit.head_state == 0 else 0)
            unit_end = book(unit, totals, geometry, direction, start, unit.head_state,
                            unit_bursts, small)
            if unit_end > end:
                end = unit_end
    totals.acts += acts
    if not geometry.closed:
        _leave_rows(units, open_rows, geometry, first_burst, n_bursts)
    return end


@njit_noref
def serve(state: tuple[Any, Any, Any, Any], write: bool, address: int, nbytes: int,
          stream: bool, earliest: int) -> int:
    """Book a chunk of ``nbytes`` > 0 at ``address`` (``stream``: consecutive bursts,
    else random 64 B accesses) arriving at ``earliest``; returns its completion. The
    state (``State`` as a tuple) changes in place."""
    units, open_rows, totals_a, geometry_rec = state
    geometry = geometry_rec[0]
    totals = totals_a[0]
    direction = 1 if write else 0
    start = earliest + geometry.delay
    totals.start = _NOT_STARTED
    first_burst = (address % geometry.capacity) >> geometry.burst_shift
    end = start
    if not stream:
        n_acc = -(-nbytes // RANDOM_ACCESS_BYTES) * geometry.rand_units
        random_end = book_random(units, totals, geometry, unit_of(geometry, first_burst), n_acc,
                                 direction, start, 1 if geometry.closed else 2)
        if random_end > end:
            end = random_end
        totals.acts += n_acc
        bursts = n_acc * geometry.rand_bursts
    else:
        burst_shift = geometry.burst_shift
        n_bursts = ((address + nbytes - 1) >> burst_shift) - (address >> burst_shift) + 1
        block = geometry.block
        if (first_burst + n_bursts - 1) // block - first_burst // block < SCALAR_BLOCKS:
            end = short_stream(units, open_rows, totals, geometry, first_burst, n_bursts,
                               direction, start)
        else:
            end = long_stream(units, open_rows, totals, geometry, first_burst, n_bursts,
                              direction, start)
        bursts = n_bursts
    if write:
        totals.bursts_written += bursts
        totals.bytes_written += nbytes
    else:
        totals.bursts_read += bursts
        totals.bytes_read += nbytes
    if end > totals.end:
        totals.end = end
    return int(end)  # a Python int when run as Python (a no-op compiled)


@njit_noref
def serve_many(state: tuple[Any, Any, Any, Any], writes: Any, addresses: Any, nbytes: Any,
               streams: Any, earliest: Any, ends: Any, starts: Any) -> None:
    """``serve`` each chunk in turn (``nbytes`` <= 0: none, it completes at its
    ``earliest``), its completion into ``ends`` and when its service began
    (``TOTALS.start``, unchanged by an empty chunk) into ``starts``."""
    totals = state[2][0]
    for i in range(addresses.size):
        if nbytes[i] > 0:
            ends[i] = serve(state, writes[i] != 0, addresses[i], nbytes[i], streams[i] != 0,
                            earliest[i])
        else:
            ends[i] = earliest[i]
        starts[i] = totals.start


@njit_noref
def serve_op(state: tuple[Any, Any, Any, Any], r_chunks: Any, w_chunks: Any, c_chunks: Any,
             r_addr: int, w_addr: int, start: int) -> int:
    """An NPU op's chunked reads, compute and writes (``npu.core.NPU.book``, whose
    loop this is, chunk for chunk), every chunk a stream booked by ``serve``: chunk
    ``i + 1`` is read once chunk ``i - 1`` has computed (its buffer free), chunk ``i``
    computes once it is read and chunk ``i - 1`` has computed, and its output is written
    as it ends. Returns the op's end: its last write's or its last compute's."""
    n = r_chunks.size
    fetched = start
    if r_chunks[0]:
        fetched = serve(state, False, r_addr, r_chunks[0], True, start)
        r_addr += r_chunks[0]
    done_prev = start
    end = start
    for i in range(n):
        begin = fetched if fetched > done_prev else done_prev
        done = begin + c_chunks[i]
        if i + 1 < n:
            if r_chunks[i + 1]:
                fetched = serve(state, False, r_addr, r_chunks[i + 1], True, done_prev)
                r_addr += r_chunks[i + 1]
            else:
                fetched = done_prev
        if w_chunks[i]:
            wend = serve(state, True, w_addr, w_chunks[i], True, done)
            w_addr += w_chunks[i]
            if wend > end:
                end = wend
        done_prev = done
    return end if end > done_prev else done_prev


@njit_noref
def serve_ops(state: tuple[Any, Any, Any, Any], r_chunks: Any, w_chunks: Any, c_chunks: Any,
              first: Any, r_addrs: Any, w_addrs: Any, now: int, out: Any) -> int:
    """``serve_op`` of each of several ops in turn, every op starting as the one before
    ends, from ``now``: op ``j``'s chunks are ``[first[j], first[j + 1])`` of the chunk
    arrays, its reads from ``r_addrs[j]`` and its writes from ``w_addrs[j]``; its time
    into ``out[j]``. Returns the last op's end."""
    for j in range(first.size - 1):
        lo, hi = first[j], first[j + 1]
        end = serve_op(state, r_chunks[lo:hi], w_chunks[lo:hi], c_chunks[lo:hi],
                       r_addrs[j], w_addrs[j], now)
        out[j] = end - now
        now = end
    return now
