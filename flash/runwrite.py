"""A host write of a run of pages on one device's fast model, in one compiled call.

``Ssd.write`` of a run the FTL places by its run kernel (``FTL.runs_first``: two pages
or more, under a block per plane) makes some twenty Python calls around five kernels:
the write buffer's admission, the data on the host link, the SLC cache's choice, the
FTL's placement, the dies' programs, then the buffering and the read cache's copies
dropped. A DMA write-back of a chunk is such a write, so a study's run spends about a
third of its wall time there, a third of it in that Python. ``write_run_fused`` does
the same steps on the same arrays in one call (``RunWriter.book``): the placement
first, since it declines with nothing changed (a plane that must collect, a block to
open that only Python opens), and no timing step reads what it changes; then the
others in ``Ssd.write``'s order. What only Python does stays there, before or after the
call: the NVMe queue and the controller (``HostInterface.fetch``), the FTL's map of a
run whose segments are not dense and its blocks to open (``FTL.write_run_by``), the
counters, a background collection and ``Ssd._finish``.

Where the call cannot finish a step for lack of room in its arrays (the link's row, the
write buffer's, a die lane's or a channel's, the read cache's), it declines before
anything is done, or hands the rest of the write to the Python steps it replaces
(``model.program`` then ``Ssd.write_done``; ``DataCache.invalidate``), which grow the
arrays and book it the same. So every write books what ``Ssd.write`` books, which the
tests hold it to (``tests/flash/test_flash_runwrite.py``).

Taken only where nothing is recorded (the dies' and the link's spans go through the
Python path, which reserves their records).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.cache import COUNT, Buffer, DataCache, admit_write, buffer_run
from flash.engine.chunks import Lanes, program_chunk
from flash.engine.gaps import Meta, gap_book, gap_room
from flash.fast import FastModel
from flash.ftl import FTL
from flash.ftl.kernels import DECLINED, DONE, PLACED, Blocks, Fresh, L2p, write_run
from flash.host import HostInterface
from flash.intmap import im_has_room
from flash.runlru import SIZE as LRU_SIZE
from flash.runlru import LruArrays, lru_remove
from flash.slc import SlcCache, slc_take
from tmhw.sim.jit import Directs, njit

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: ``write_run_fused``'s results (``res``): the write buffer's admission (-1: written
#: through), the end of the data's time on the link and the first time its programs
#: may take data, whether in SLC mode, the program commands, the end of the last
#: program, when the write completes, what is left to the caller (``STAGE``) and why
#: the programs were not booked (a ``flash.engine.chunks`` answer)
ADM, L_END, FIRST_IN, SLC, CMDS, P_END, END, STAGE, WHY = range(9)
#: ``STAGE``: nothing left; the programs and all after them (no room in a die lane's or
#: a channel's row); the read cache's copies (no spare row to cut a run in two)
ALL_DONE, PROGRAM_LEFT, INVALIDATE_LEFT = range(3)


@njit
def write_run_fused(lo: int, n: int, geo: npt.NDArray[np.void], stripes: tuple[I64, I64],
                    l2p: L2p, blocks: Blocks, fresh: Fresh, seq: int,
                    io: tuple[I64, I64, I64], t0: int, busy_until: int, dur: int,
                    wcap: int, store_forward: int, wbuf: Buffer, lanes: Lanes,
                    dev: tuple[npt.NDArray[np.void], npt.NDArray[np.void],
                               npt.NDArray[np.void]],
                    ppn0: int, device: int, link: tuple[I64, Meta],
                    slc: tuple[I64, F64, int], lru: LruArrays, ppns: I64, times: I64,
                    pres: I64, res: I64) -> int:
    """``Ssd.write`` of the run [lo, lo + n) taken at ``t0`` (module docstring): the
    answer of ``kernels.write_run`` (its first nine arguments; the run placed into
    ``io``'s ``out``), and where it is ``DONE`` or ``PLACED`` the rest booked as
    ``Ssd.write`` books it: the write buffer of ``wcap`` pages (``wbuf``; 0: none, or
    a write larger than it) admits it, its data crosses the link's write direction for
    ``dur`` from then, the SLC cache (``slc``: its state and pages; 0: none) chooses the
    mode with the device busy until ``busy_until``, its pages (in the lanes' numbering
    from ``ppn0``, into ``ppns``) are programmed as one chunk on ``lanes`` (``dev``: the
    geometry, in SLC mode, and the command times) from the data's first time on the link
    (its last under ``store_forward``), and it is buffered until its programs end or
    completes with them; the read cache (``lru``) drops its copies. Into ``res``: the
    fields above; ``device`` is the device's column of ``pres`` (``program_chunk``'s
    results), ``times`` two slots for its times. ``DECLINED`` (nothing done) where the
    link's or the write buffer's rows have no room."""
    liv, lmeta = link
    if not gap_room(liv, lmeta, 1):
        return DECLINED
    buffered = wcap > 0 and n <= wcap
    if buffered and (wbuf[1][COUNT] + 1 > wbuf[0].shape[0]
                     or not im_has_room(wbuf[2], wbuf[3], n)):
        return DECLINED  # (``DataCache._room`` grows them)
    got = write_run(lo, n, geo, stripes, l2p, blocks, fresh, seq, io)
    if got != DONE and got != PLACED:
        return got
    out = io[2]
    adm = -1
    t = t0
    if buffered:  # (``DataCache.admit``: its data crosses once it fits)
        adm = admit_write(wbuf, n, wcap, t0)
        if adm > t:
            t = adm
    l_end = gap_book(liv, lmeta, 1, t, dur)
    first_in = l_end if store_forward else l_end - dur
    s = 0
    if slc[2] > 0 and slc_take(slc[0], slc[1], slc[2], n, t0, busy_until):
        s = 1
    res[ADM], res[L_END], res[FIRST_IN], res[SLC] = adm, l_end, first_in, s
    for i in range(n):
        ppns[i] = out[i] + ppn0
    times[0], times[1] = first_in, l_end
    why = program_chunk(lanes, dev[1] if s else dev[0], dev[2], ppns, times[:1],
                        times[1:], pres)
    if why:
        res[STAGE], res[WHY] = PROGRAM_LEFT, why
        return got
    p_end = pres[2, device]
    res[CMDS], res[P_END] = pres[0, device], p_end
    end = p_end
    if buffered:  # (``DataCache.buffered``: acknowledged from the buffer)
        buffer_run(wbuf, lo, lo + n, p_end)
        end = l_end
    res[END], res[STAGE] = end, ALL_DONE
    if lru[2][LRU_SIZE] and lru_remove(lru[0], lru[1], lru[2], lru[3], lo, lo + n) < 0:
        res[STAGE] = INVALIDATE_LEFT
    return got


#: one entry per FTL map dtypes (``tmhw.sim.jit.Directs``)
_FUSED = Directs(write_run_fused)


class RunWriter:
    """The compiled half of ``Ssd.write`` of a run on a device's fast model (module
    docstring): the device keeps the NVMe queue, the counters and what follows."""

    def __init__(self, ftl: FTL, cache: DataCache, host: HostInterface, slc: SlcCache,
                 model: FastModel, store_forward: bool) -> None:
        """The device's parts (``Ssd``), and whether its data is stored before it is
        programmed (``Ssd.store_forward``)."""
        self.ftl, self.cache, self.host, self.slc = ftl, cache, host, slc
        self.model = model
        self.store_forward = int(store_forward)
        self._kernel = _FUSED.get(ftl.mapping.dtypes)
        self._ppns = np.zeros(64, dtype=np.int64)
        self._times = np.zeros(2, dtype=np.int64)
        self._pres = np.zeros((3, model.former.devices), dtype=np.int64)
        self._res = np.zeros(9, dtype=np.int64)
        self._dev = (model.geo, model.geo_slc, model.cmds)

    def takes(self, n: int) -> bool:
        """Whether a write of ``n`` pages goes this way: a run the FTL's run kernel
        places first, nothing recorded."""
        return (n > 1 and self.ftl.runs_first(n) and not self.model.dies.record
                and not self.host.links.record)

    def book(self, lo: int, n: int, nbytes: int, t0: int,
             busy_until: int) -> tuple[I64, list[int]] | None:
        """``write_run_fused`` of the ``n`` pages from ``lo`` (``nbytes`` on the link)
        taken at ``t0``, the device busy until ``busy_until``: the run's pages (in the
        device's numbering) and ``res``; None where it declined (nothing done)."""
        model, cache, host, slc = self.model, self.cache, self.host, self.slc
        if self._ppns.size < n:
            self._ppns = np.zeros(2 * n, dtype=np.int64)
        wbuf, lru = cache.read_state()
        extra = (t0, busy_until, host.write_ps(nbytes), cache.write_pages,
                 self.store_forward, wbuf, model.lanes(), self._dev, model.ppn0,
                 model.device, host.links.arrays(), (slc.ints, slc.floats, slc.cap), lru,
                 self._ppns[:n], self._times, self._pres, self._res)
        kernel = self._kernel
        out = self.ftl.write_run_by(lo, n, lambda *a: int(kernel.call(*a, *extra)))
        if out is None:
            return None
        return out, self._res.tolist()
