"""One-page commands in batches: a host queue's batch of whole-page reads, or of
whole-page writes, issued at one time to one device (``FlashTarget.transport_many``),
served layer by layer in a few calls per batch, where ``Ssd.serve_many`` (``Ssd.read``
or ``Ssd.write`` of each in turn) makes some thirty per command.

Each layer does what the per-command path does, for the commands in order:

- NVMe queue: ``HostInterface.fetch_many`` takes the commands that would not wait;
- controller DRAM: a read of a page the write buffer or the read cache (maybe) holds
  is left to the per-command path (``DataCache.first_held``), and so are reads while a
  multi-page write's run is buffered; writes are taken while the buffer has room for
  them without waiting (``DataCache.release_until``) and none of their pages is in the
  read cache, and buffered in a compiled call (``DataCache.buffered_pages``);
- FTL: a read's page is looked up in the timing kernel (``flash.ftl.kernels.l2p_of``,
  and the L2P's dict of sparse pages, an ``IntMap``); writes are placed and mapped by
  ``FTL.write_many`` (one kernel call, and another after each block it opens) while no
  page needs a collection;
- timing: one compiled call (``_read_pages``, ``_write_pages``) books each command's
  NAND read or program (``flash.engine.chunks.read_page``, ``program_page``), its transfer on
  the host link (``flash.host``'s rows of a ``GapBank``), its completion and the
  controller's active time, and prunes the channels and the link after every 256th
  command, as ``Ssd._finish`` does.

The command a layer does not take goes through the per-command path, from the state
the batch left, and the batch path resumes after it (for the rest of the batch, if it
takes none of them). Only the fast model under the ONFI rules with nothing recorded
(``FastModel.compiled``) and cut-through transfers (not ``compat = "mqsim"``) take this
path, and writes only while no plane is under the soft collection threshold (each
would be followed by a background collection); the per-command path is the reference
it is tested against (``tests/flash/test_flash_pages.py``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.engine.chunks import program_page, read_page
from flash.engine.dies import CAP, TAIL, DieState
from flash.engine.gaps import FILL, _gap_prune, gap_book
from flash.fast import FastModel
from flash.ftl.kernels import l2p_of
from flash.ftl.mapping import SEG_BITS
from flash.intmap import im_get
from flash.ssd import Ssd
from tmhw.sim.jit import njit

I64 = npt.NDArray[np.int64]
#: ``_State``: the device's transfers so far, its active time and the end of the last
#: transaction that extends it (``Ssd._finish``), program commands and pages joined to
#: waiting programs in the batch, reads of pages never written, and why and at which
#: page (in the lanes' numbering) a kernel stopped early
TRANSFERS, ACTIVE, ACTIVE_UNTIL, CMDS, JOINED, UNMAPPED, STOP, PPN = range(8)
#: ``STOP``: a channel's row, a die lane's row or a link direction's row is full
CH_FULL, LANE_FULL, LINK_FULL = 1, 2, 3
#: bookings between prunes of the channels and the link (``Ssd._finish``)
PRUNE_EVERY = 256


class PageBatch:
    """The batch path of one device on the fast model (module docstring): its
    constant arrays, made once."""

    def __init__(self, ssd: Ssd, fast: FastModel) -> None:
        self.ssd = ssd
        self.fast = fast
        phy, f = fast.phy, fast.former
        #: ``_read_pages``' and ``_write_pages``' geometry and cell timing
        self.rgeo = np.array([f.ppp, f.P, f.dpc, fast.ppb, fast.bits, phy.rcmd[1],
                              phy.rsetup[1] + phy.page_data, fast.ch0, fast.ch1],
                             dtype=np.int64)
        self.wgeo = np.array([f.ppp, f.P, f.dpc, fast.ppb, fast.bits,
                              phy.pcmd[1] + phy.page_data, f.multi, fast.same_offset,
                              fast.ch0, fast.ch1], dtype=np.int64)
        self.t_r = np.array(fast.t_r_of, dtype=np.int64)
        self.t_prog = np.array(fast.t_prog_of, dtype=np.int64)
        #: whole-page transfers on this path: the fast model's compiled rules, data
        #: cut through, nothing recorded
        self.on = (fast.compiled and not ssd.store_forward
                   and ssd.host.links.spans is None)

    def serve(self, read: bool, addresses: list[int], nbytes: int,
              earliest: int) -> list[int]:
        """``Ssd.read`` (or ``Ssd.write``) of ``nbytes`` at each of ``addresses`` in
        turn, from ``earliest``: their completion times, booked here as far as the
        layers take the commands and per command where they do not."""
        ssd = self.ssd
        f = ssd.read if read else ssd.write
        if not self.on:
            return [f(a, nbytes, earliest) for a in addresses]
        ends = self._batch(read, addresses, nbytes, earliest)
        while len(ends) < len(addresses):
            # the command the batch stopped at, per command; then the batch again
            ends.append(f(addresses[len(ends)], nbytes, earliest))
            more = self._batch(read, addresses[len(ends):], nbytes, earliest)
            if not more:
                return ends + [f(a, nbytes, earliest) for a in addresses[len(ends):]]
            ends += more
        return ends

    def _batch(self, read: bool, addresses: list[int], nbytes: int,
               earliest: int) -> list[int]:
        """The completion times of the first commands of the batch that the layers
        take (module docstring); none when they take none."""
        ssd = self.ssd
        page = ssd.page
        host = ssd.host
        cache = ssd.cache
        dur = int(nbytes * host.ps_per_byte)
        # (a read's DRAM lookup here knows one-page writes only; a write would be
        # followed by a background collection)
        if nbytes != page or dur <= 0 or (cache.runs if read else ssd.ftl.low_planes):
            return []
        lpns, off = np.divmod(np.array(addresses, dtype=np.int64), page)
        if off.any():
            return []
        n = host.fetch_many(len(addresses), earliest)
        if not n:
            return []
        keys: list[int] = lpns[:n].tolist()
        if read:
            n = cache.first_held(keys, earliest)
        else:
            if cache.write_pages:
                cache.release_until(earliest)
                n = min(n, cache.write_pages - cache.used_pages)
            n = min(n, cache.first_cached(keys))
        if n <= 0:
            return []
        if read:
            return self._read(lpns[:n], keys[:n], nbytes, dur, earliest)
        return self._write(lpns[:n], keys[:n], nbytes, dur, earliest)

    def _read(self, lpns: I64, keys: list[int], nbytes: int, dur: int,
              t0: int) -> list[int]:
        ssd, fast = self.ssd, self.fast
        c = ssd.c
        ftl = ssd.ftl
        n = int(lpns.size)
        l2p = ftl.l2p
        sp = l2p.sparse
        seg_row, pool = l2p.arrays()
        lgeo = np.array([ftl.n_pre, ftl.U, SEG_BITS, fast.ppn0], dtype=np.int64)
        plane_base = ftl.mapping.plane_base
        st = np.array([*ssd.activity(), 0, 0, 0, 0, 0], dtype=np.int64)
        ends = np.empty(n, dtype=np.int64)
        links = ssd.host.links
        k = 0
        while True:
            iv, meta = fast.channels.arrays()
            liv, lmeta = links.arrays()
            k = int(_read_pages(lpns, sp.table, sp.meta, lgeo, plane_base, seg_row, pool, t0, dur,
                                self.rgeo, self.t_r, fast.dies.state, iv, meta,
                                liv, lmeta, st, ends, k))
            if k == n:
                break
            self._grow(int(st[STOP]), int(st[PPN]))
        out: list[int] = ends.tolist()
        c.unmapped_reads += int(st[UNMAPPED])
        c.read_cmds += n
        c.host_pages_read += n
        c.channel_bytes += n * ssd.page
        ssd.bytes_read += n * nbytes
        ssd.finished_many((int(st[TRANSFERS]), int(st[ACTIVE]), int(st[ACTIVE_UNTIL])), out)
        return out

    def _write(self, lpns: I64, keys: list[int], nbytes: int, dur: int,
               t0: int) -> list[int]:
        ssd, fast = self.ssd, self.fast
        ppns, n = ssd.ftl.write_many(lpns, keys)
        if not n:
            return []
        if fast.ppn0:
            ppns += fast.ppn0
        buffered = ssd.cache.write_pages > 0
        st = np.array([*ssd.activity(), 0, 0, 0, 0, 0], dtype=np.int64)
        ends = np.empty(n, dtype=np.int64)
        p_ends = np.empty(n, dtype=np.int64)
        links = ssd.host.links
        k = 0
        while True:
            iv, meta = fast.channels.arrays()
            liv, lmeta = links.arrays()
            k = int(_write_pages(ppns, t0, dur, buffered, self.wgeo, self.t_prog,
                                 fast.dies.state, iv, meta, liv, lmeta, st, ends, p_ends, k))
            if k == n:
                break
            self._grow(int(st[STOP]), int(ppns[k]))
        c = ssd.c
        c.pages_programmed += n
        c.channel_bytes += n * ssd.page
        c.program_cmds += int(st[CMDS])
        ssd.bytes_written += n * nbytes
        if buffered:
            ssd.cache.buffered_pages(lpns[:n], p_ends)
        # written through: no read-cache copy to drop (``DataCache.first_cached``)
        out: list[int] = ends.tolist()
        ssd.finished_many((int(st[TRANSFERS]), int(st[ACTIVE]), int(st[ACTIVE_UNTIL])), out)
        return out

    def _grow(self, why: int, ppn: int) -> None:
        """More room where a kernel stopped (``STOP``), for the page ``ppn`` it stopped
        at (in the lanes' numbering)."""
        fast = self.fast
        if why == CH_FULL:
            fast.channels.grow()
        elif why == LANE_FULL:
            fast.dies.make_room(np.array([fast.former.die_of(ppn)], dtype=np.int64))
        else:
            self.ssd.host.links.grow()


@njit
def _finish(st: I64, t0: int, end: int, iv: I64, meta: I64, liv: I64, lmeta: I64,
            ch0: int, ch1: int) -> None:
    """``Ssd._finish`` of a transaction taken at ``t0`` and complete at ``end`` (its
    NVMe completion is the caller's)."""
    st[TRANSFERS] += 1
    if st[TRANSFERS] % PRUNE_EVERY == 0:
        # bookings that ended before now can no longer be reached
        _gap_prune(iv, meta, t0, ch0, ch1)
        _gap_prune(liv, lmeta, t0, 0, 1)
        _gap_prune(liv, lmeta, t0, 1, 2)
    if end > st[ACTIVE_UNTIL]:  # the union of the transactions' lifetimes
        st[ACTIVE] += end - max(t0, st[ACTIVE_UNTIL])
        st[ACTIVE_UNTIL] = end


@njit
def _read_pages(lpns: I64, sp: I64, sp_meta: I64, lgeo: I64, plane_base: I64, seg_row: I64,
                l2p: npt.NDArray[np.signedinteger], t0: int, dur: int, geo: I64,
                t_r_of: I64, dst: DieState, iv: I64, meta: I64, liv: I64, lmeta: I64,
                st: I64, ends: I64, k: int) -> int:
    """Whole-page reads of ``lpns`` from ``k`` on, each taken at ``t0``: the page's
    physical page (``flash.ftl.kernels.l2p_of``, its entry in the L2P's dict ``sp``,
    ``sp_meta``: an ``IntMap``; a page never written is read where
    sequential preconditioning put it, counted in ``st``), ``FastModel.read1``
    (``read_page``), the data's ``dur`` ps on the link's read direction from its
    data-out start, and ``_finish``; each completion into ``ends``. ``lgeo``:
    preconditioned pages, planes in the stripe, log2 of an L2P segment's pages, the
    device's first ppn in the lanes' numbering; ``geo``: pages per plane, planes per
    die, dies per channel, pages per block, bits per cell, a read command's and a
    page's data-out time (with setup), the device's channels. Where it stopped:
    ``lpns.size``, or a page whose channel or link row is full (why and its ppn in
    ``st``; nothing of it booked)."""
    n_pre, U, seg_bits, ppn0 = lgeo[0], lgeo[1], lgeo[2], lgeo[3]
    ppp, P, dpc, ppb, bits, cmd, x, ch0, ch1 = (geo[0], geo[1], geo[2], geo[3], geo[4],
                                                geo[5], geo[6], geo[7], geo[8])
    for j in range(k, lpns.size):
        lpn = lpns[j]
        held = -2 if seg_row[lpn >> seg_bits] >= 0 else im_get(sp, sp_meta, lpn, -2)
        ppn = l2p_of(lpn, held, n_pre, U, plane_base, seg_bits, seg_row, l2p)
        if ppn < 0:  # never written
            ppn = plane_base[lpn % U] + lpn // U
            unmapped = 1
        else:
            unmapped = 0
        ppn += ppn0
        die = ppn // ppp // P  # its lane: no chip lock on this path
        ch = die // dpc
        if meta[FILL, ch] == iv.shape[2]:
            st[STOP] = CH_FULL
            st[PPN] = ppn
            return j
        if lmeta[FILL, 0] == liv.shape[2]:
            st[STOP] = LINK_FULL
            st[PPN] = ppn
            return j
        st[UNMAPPED] += unmapped
        c_end = read_page(dst, iv, meta, die, ch, t0, cmd, t_r_of[(ppn % ppb) % bits], x)
        end = gap_book(liv, lmeta, 0, c_end - x, dur)
        if c_end > end:
            end = c_end
        ends[j] = end
        _finish(st, t0, end, iv, meta, liv, lmeta, ch0, ch1)
    return lpns.size


@njit
def _write_pages(ppns: I64, t0: int, dur: int, buffered: bool, geo: I64, t_prog_of: I64,
                 dst: DieState, iv: I64, meta: I64, liv: I64, lmeta: I64, st: I64,
                 ends: I64, p_ends: I64, k: int) -> int:
    """Whole-page writes to ``ppns`` (placed by the FTL, in the lanes' numbering) from
    ``k`` on, each taken and admitted at ``t0``: the data's ``dur`` ps on the link's
    write direction, ``FastModel.program1`` (``program_page``; commands and joins
    counted in ``st``), the completion (the data in the buffer, or ``buffered`` False:
    the program's end) into ``ends`` and the program's end into ``p_ends``, and
    ``_finish``. ``geo``: pages per plane, planes per die, dies per channel, pages per
    block, bits per cell, a one-plane program's command and data-in time, multi-plane,
    same-offset programs, the device's channels. Where it stopped: ``ppns.size``, or
    a page whose channel, die lane or link row is full (why in ``st[STOP]``; nothing
    of it booked)."""
    ppp, P, dpc, ppb, bits, busy, multi, same, ch0, ch1 = (
        geo[0], geo[1], geo[2], geo[3], geo[4], geo[5], geo[6], geo[7], geo[8], geo[9])
    for j in range(k, ppns.size):
        ppn = ppns[j]
        plane = ppn // ppp
        die = plane // P
        ch = die // dpc
        if meta[FILL, ch] == iv.shape[2]:
            st[STOP] = CH_FULL
            return j
        if dst[0][TAIL, die] == (die + 1) * dst[2][0, CAP]:
            st[STOP] = LANE_FULL
            return j
        if lmeta[FILL, 1] == liv.shape[2]:
            st[STOP] = LINK_FULL
            return j
        l_end = gap_book(liv, lmeta, 1, t0, dur)
        mask = (1 << (plane % P)) if multi else 0
        r = program_page(dst, iv, meta, die, ch,
                          max(l_end - dur, l_end - busy), busy,
                          t_prog_of[(ppn % ppb) % bits], mask, ppn % ppb if same else -1)
        if r & 1:
            st[JOINED] += 1
        else:
            st[CMDS] += 1
        p_ends[j] = r >> 1
        end = l_end if buffered else r >> 1
        ends[j] = end
        _finish(st, t0, end, iv, meta, liv, lmeta, ch0, ch1)
    return ppns.size
