"""The fast, chunk-level DRAM timing model used in full-system runs.

A chunk costs O(units) arithmetic, never O(bytes), and creates no event. Each unit
(pseudo-channel) is a busy-until ``Timeline`` of its data bus. For a chunk:

- STREAM: the bursts are split over units by the address map (whole interleave periods
  arithmetically, the remainder block by block with numpy). A unit moves its bursts at
  the stream burst interval ``max(t_burst, t_ccd_s, t_ccd_l / bank groups rotated)``;
  row switches are hidden behind the bursts of other banks unless the activation rate
  (tRRD, tFAW) is the tighter bound.
- RANDOM (and STRIDED): 64 B accesses, each a row miss. A unit serves one every
  ``max(bursts x t_burst, tRRD_S, tFAW / 4, bank cycle / busy banks)``, where the bank
  cycle is tRC for reads (tRCD_WR + CWL + bursts + tWR + tRP for writes) and the busy
  banks are the distinct banks among a full read queue of random requests,
  ``n (1 - (1 - 1/n)^Q)``.
- An idle unit first pays the unloaded latency: [tRP if another row is open] + tRCD +
  CL (CWL for writes). A unit that switches between reading and writing pays the bus
  turnaround: t_rtw (read to write) or tWTR_S + CL (write to read) between data.
- Refresh: the unit is unavailable for tRP + tRFC every tREFI (all-bank) from a per-unit
  staggered phase, as in the detailed controller; work is stretched over those windows
  in closed form.
"""

from __future__ import annotations

import math

import numpy as np

from dram.config import DramConfig
from dram.mapping import AddressMap
from tmhw.sim.timeline import Timeline
from tmhw.sim.transfer import Pattern

#: Bytes of one random access (a cache line / NPU gather element).
RANDOM_ACCESS_BYTES = 64
#: Above this many address blocks a partial interleave period is split evenly.
_MAX_BLOCKS = 1 << 16


class FastModel:
    """Chunk-level timing and counters for one ``DramConfig``. Times in ps."""

    def __init__(self, cfg: DramConfig) -> None:
        self.cfg = cfg
        self.amap = AddressMap(cfg)
        u = cfg.units
        self.buses = [Timeline(f"unit{i}") for i in range(u)]
        self.last_write = [False] * u
        self.open_rows = np.full((u, self.amap.banks_per_unit), -1, dtype=np.int64)
        self.first_use: list[int | None] = [None] * u
        self.data_ps = np.zeros(u, dtype=np.int64)
        self.bursts_read = 0
        self.bursts_written = 0
        self.acts = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.last_end = 0
        c = cfg
        n_bg = c.bank_groups if self.amap.bank_group_below_column() else 1
        self.t_stream = max(c.t_burst, c.t_ccd_s if n_bg > 1 else c.t_ccd_l,
                            -(-c.t_ccd_l // n_bg))
        self.t_act = max(c.t_rrd_s, -(-c.t_faw // 4))
        self.rand_bursts = max(1, min(RANDOM_ACCESS_BYTES, c.interleave_bytes) // c.burst_bytes)
        self.rand_units = max(1, RANDOM_ACCESS_BYTES // c.interleave_bytes)
        n = self.amap.banks_per_unit
        busy_banks = n * (1.0 - (1.0 - 1.0 / n) ** c.read_queue)
        data = self.rand_bursts * max(c.t_burst, c.t_ccd_s)
        wr_cycle = max(c.t_rc, c.t_rcd_wr + c.t_cwl + self.rand_bursts * c.t_burst + c.t_wr
                       + c.t_rp)
        self.t_rand_rd = max(data, self.t_act, math.ceil(c.t_rc / busy_banks))
        self.t_rand_wr = max(data, self.t_act, math.ceil(wr_cycle / busy_banks))
        # Refresh windows: unit i is blocked over [off_i + k t_refi, + t_ref_block), k >= 1.
        if c.refresh == "off":
            self.t_ref_period, self.t_ref_block = 0, 0
        elif c.refresh == "per-bank":
            self.t_ref_period = c.t_refi // self.amap.banks_per_unit
            self.t_ref_block = max(c.t_rrefd, c.tck)
        else:
            self.t_ref_period = c.t_refi
            self.t_ref_block = c.t_rp + c.t_rfc
        self.ref_offsets = [(i * c.t_refi) // u for i in range(u)]

    # -- timing ------------------------------------------------------------------------
    def _stretch(self, unit: int, start: int, work: int) -> tuple[int, int]:
        """(start, end) of ``work`` ps of bus time beginning no earlier than ``start`` and
        skipping unit ``unit``'s refresh windows."""
        period, block = self.t_ref_period, self.t_ref_block
        if period == 0 or work == 0:
            return start, start + work
        off = self.ref_offsets[unit]
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

    def _head(self, write: bool, hit: bool, conflict: bool) -> int:
        c = self.cfg
        if hit:
            return c.t_cwl if write else c.t_cl
        h = (c.t_rcd_wr + c.t_cwl) if write else (c.t_rcd + c.t_cl)
        return h + (c.t_rp if conflict else 0)

    def _turnaround(self, unit: int, write: bool) -> int:
        c = self.cfg
        if self.last_write[unit] == write:
            return 0
        return c.t_rtw if write else c.t_wtr_s + c.t_cl

    def _book(self, unit: int, write: bool, start: int, head: int, work: int) -> int:
        bus = self.buses[unit]
        t0 = max(start + head, bus.busy_until + self._turnaround(unit, write))
        s, e = self._stretch(unit, t0, work)
        bus.reserve(s, e - s)
        self.data_ps[unit] += work
        self.last_write[unit] = write
        if self.first_use[unit] is None:
            self.first_use[unit] = start
        return e

    def _split_stream(self, address: int, nbytes: int) -> np.ndarray:
        """Bursts per unit of the contiguous range [address, address + nbytes)."""
        am = self.amap
        u = self.cfg.units
        b0 = (address % am.capacity) >> am.burst_shift
        nb = ((address + nbytes - 1) >> am.burst_shift) - (address >> am.burst_shift) + 1
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

    def serve(self, write: bool, address: int, nbytes: int, pattern: Pattern,
              earliest: int) -> int:
        """Book a chunk; return its completion time (end of its last data), ps."""
        if nbytes <= 0:
            return earliest
        c = self.cfg
        start = earliest + c.controller_delay
        _, bank, row, _ = self.amap.decode(address)
        end = start
        if pattern is Pattern.STREAM:
            counts = self._split_stream(address, nbytes)
            units = np.nonzero(counts)[0]
            for unit in units.tolist():
                b = int(counts[unit])
                open_row = int(self.open_rows[unit, bank])
                hit = open_row == row and c.page_policy == "open"
                acts = max(1, -(-b // c.bursts_per_row)) - (1 if hit else 0)
                work = max(b * self.t_stream, acts * self.t_act)
                head = self._head(write, hit, open_row >= 0 and not hit)
                end = max(end, self._book(unit, write, start, head, work))
                self.acts += acts
            if c.page_policy == "open":
                _, lbank, lrow, _ = self.amap.decode(address + nbytes - 1)
                self.open_rows[units, bank] = row
                self.open_rows[units, lbank] = lrow
            bursts = int(counts.sum())
        else:
            n_acc = -(-nbytes // RANDOM_ACCESS_BYTES) * self.rand_units
            u = c.units
            first, _, _, _ = self.amap.decode(address)
            per, extra = divmod(n_acc, u)
            t_acc = self.t_rand_wr if write else self.t_rand_rd
            head = self._head(write, False, c.page_policy == "open")
            for k in range(min(u, n_acc)):
                unit = (first + k) % u
                n = per + (1 if k < extra else 0)
                work = (n - 1) * t_acc + self.rand_bursts * c.t_burst
                end = max(end, self._book(unit, write, start, head, work))
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
    def refreshes(self, now: int) -> int:
        """Refresh commands (REFab, or REFpb in per-bank mode) run by ``now``, all units."""
        if self.t_ref_period == 0:
            return 0
        return sum(max(0, (now - off) // self.t_ref_period) for off in self.ref_offsets)

    def active_ps(self, now: int) -> list[int]:
        """Per unit, time with a bank open (open page: from first use; closed: busy)."""
        out = []
        for i, bus in enumerate(self.buses):
            fu = self.first_use[i]
            if fu is None:
                out.append(0)
            elif self.cfg.page_policy == "open":
                out.append(max(0, now - fu))
            else:
                out.append(min(now, bus.busy_ps))
        return out
