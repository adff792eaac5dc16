"""The flash tier as a memory target: ``devices`` SSDs striped RAID-0.

``FlashTarget`` serves ``Transfer``s of logical byte ranges (``Op.READ``, ``Op.WRITE``,
``Op.TRIM``). With ``flash.devices = N`` the tier's logical space is striped over N
identical SSDs in ``flash.stripe_bytes`` units (stripe ``j`` on device ``j % N``), each
with its own host link, controller DRAM, FTL and flash (``flash.ssd.Ssd``); a transfer
becomes one contiguous range on each device it touches, served in parallel, and
completes when the last of them does. The devices share no state, so each touched
device serves its range on its own, in turn; on the fast model a device's read of
several pages and its write of a run are each one compiled call (``flash.runs``).
``transport`` returns that time and creates no SimPy event; ``request`` is
the same as an event, except that a read under ``compat = "mqsim"`` is arbitrated by
events (``flash.convoy``), its completion decided as its channels free;
``transport_many`` serves a batch of equal-sized transfers issued at one time (a host
queue's) as the same calls would, one by one. With a tracer on, each transfer is one
span on the target's lane.

Two timing models behind one protocol (``flash.ssd.TimingModel``; docs/ARCHITECTURE.md, "The event
economy"): ``fast`` (``flash.fast``) books each transaction with one reservation per
touched die and channel, ``detailed`` (``flash.detailed``) books every command. A read
of data never written costs a read where sequential preconditioning would have put it
(data present before time 0), counted as ``unmapped_reads``. A read with ``wire_bytes``
is byte-addressed (MMIO through the BAR, ``flash.ssd``): each device's share of the
wire overhead is proportional to its share of the data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import simpy

from flash.config import FlashConfig
from flash.convoy import EventReads
from flash.convoy_loop import ConvoyLoop
from flash.engine.dies import DieLanes
from flash.engine.gaps import BankLane, GapBank
from flash.ftl import FTL
from flash.ftl.kernels import drop_old, place
from flash.intmap import IntMap, im_get_many, im_pop_range
from flash.pages import ClosedLoop, PageBatch
from flash.scheduler import TimingBase
from flash.ssd import MODELS, Ssd
from tmhw.sim import Component, EnergyMeter, EnergyTable, Op, Pattern, TmhwError, Transfer
from tmhw.sim.trace import Tracer

__all__ = ["MODELS", "FlashTarget", "compile_kernels"]

I64 = npt.NDArray[np.int64]

#: Report entries that are not summed over devices.
_NOT_SUMMED = ("waf", "max_erase_count", "link_rd", "link_wr", "ftl_state_bytes")
#: the ranges ``FlashTarget._split`` remembers (a training iteration's chunks: 787 to
#: 5,120 ranges in the headline's trials on two and four SSDs; the memo starts again
#: when full, so a run of more distinct ranges holds at most this many, some 25 MB on
#: 16 devices)
_SPLITS = 1 << 14


def _wire(t: Transfer, nbytes: int) -> int:
    """A device's share of ``t``'s wire bytes for ``nbytes`` of its data (an MMIO read's
    overhead is per cache line; 0: not byte-addressed)."""
    return -(-nbytes * t.wire_bytes // t.nbytes) if t.wire_bytes else 0


class FlashTarget(Component):
    """The flash tier. ``model`` is ``fast`` or ``detailed``; ``precondition`` fills
    that fraction of each device's logical space before time 0, and ``age`` then
    overwrites ``age`` x those pages at random (with GC, without time, drawing from
    ``seed``) so random writes start in steady state. The timing models are
    deterministic. ``record`` keeps every die and channel booking (for tests and
    timeline plots)."""

    def __init__(self, env: simpy.Environment, name: str, parent: Component | None,
                 cfg: FlashConfig, *, model: str = "fast", precondition: float = 0.0,
                 seed: int = 0, age: float = 0.0, tracer: Tracer | None = None,
                 record: bool = False) -> None:
        super().__init__(env, name, parent, tracer)
        if model not in MODELS:
            raise TmhwError(f"flash.model: {model!r} is not one of {MODELS}")
        if not 0.0 <= precondition <= 1.0:
            raise TmhwError(f"flash.precondition: {precondition} must be in [0, 1]")
        self.cfg = cfg
        self.model = model
        self.seed = seed
        n = cfg.devices
        first = Ssd(cfg, model=model, precondition=precondition, seed=seed, age=age,
                    record=record, devices=n)
        self.devices = [first] + [
            Ssd(cfg, model=model, precondition=precondition, seed=seed + k, age=age,
                record=record, device=k, devices=n, shared=first) for k in range(1, n)]
        self._capacity = cfg.total_capacity
        self._one = first if n == 1 else None
        #: a single device's batch path of whole-page commands (``transport_many``)
        self._pages = (PageBatch(first, first.fast)
                       if n == 1 and first.fast is not None else None)
        #: and the path of the bench's closed loop of reads on either timing model
        #: (``closed_loop``; the detailed model's one-page read is the fast one's)
        self._reads = self._pages or (PageBatch(first, first.model)
                                      if n == 1 and isinstance(first.model, TimingBase)
                                      else None)
        #: ``_split``'s ranges
        self._splits: dict[tuple[int, int], tuple[tuple[Ssd, int, int], ...]] = {}
        #: under MQSim's rules, each device's reads served by events (``request``)
        self._events = ([EventReads(env, d) for d in self.devices] if cfg.compat == "mqsim"
                        else None)
        self.energy = EnergyMeter(EnergyTable(
            action_pj={"nand_read": cfg.read_page_pj(), "nand_program": cfg.program_page_pj(),
                       "nand_program_slc": cfg.program_page_pj(slc=True),
                       "block_erase": cfg.erase_block_pj(),
                       "channel_byte": cfg.energy.channel_pj_per_byte},
            active_mw=cfg.energy.controller_mw, idle_mw=cfg.energy.idle_mw * n))
        self.transfers = 0
        #: (pages programmed, program commands, SLC pages, SLC commands) at the last
        #: ``finalize``
        self._split_at = (0, 0, 0, 0)

    # -- the first device's parts (tests, plots; on several devices of the fast model,
    # the dies and channels are every device's, device by device) ----------------------
    @property
    def ftl(self) -> FTL:
        return self.devices[0].ftl

    @property
    def dies(self) -> DieLanes:
        return self.devices[0].model.dies

    @property
    def channels(self) -> GapBank:
        return self.devices[0].model.channels

    @property
    def link_rd(self) -> BankLane:
        return self.devices[0].host.link_rd

    @property
    def link_wr(self) -> BankLane:
        return self.devices[0].host.link_wr

    @property
    def bytes_read(self) -> int:
        return sum(d.bytes_read for d in self.devices)

    @property
    def bytes_written(self) -> int:
        return sum(d.bytes_written for d in self.devices)

    @property
    def unmapped_reads(self) -> int:
        return sum(d.c.unmapped_reads for d in self.devices)

    def idle_from(self) -> int:
        """When every device's dies, channels and link directions are free again."""
        return max(d.idle_from() for d in self.devices)

    # -- the MemoryTarget protocol -----------------------------------------------------
    def peak_bandwidth(self) -> float:
        """Sequential read bound: devices x min(dies x planes x page / tR, channels,
        host link)."""
        return self.cfg.read_bandwidth_bound()

    def transport(self, t: Transfer, earliest: int) -> int:
        """Serve ``t`` no earlier than ``earliest``; return its completion time (ps)."""
        if t.nbytes == 0:
            return earliest
        end_byte = t.address + t.nbytes
        if end_byte > self._capacity:
            raise TmhwError(f"{self.path}: bytes [{t.address}, {end_byte}) beyond the "
                            f"logical capacity {self._capacity}")
        self.transfers += 1
        if self._one is not None:  # one device: no striping
            op = t.op
            if op is Op.READ:
                end = self._one.read(t.address, t.nbytes, earliest, t.wire_bytes)
            elif op is Op.WRITE:
                end = self._one.write(t.address, t.nbytes, earliest)
            else:
                self._one.trim(t.address, t.nbytes)
                return earliest
            if self.tracer.enabled:
                self.tracer.span(self.path, earliest, end, op.value, {"bytes": t.nbytes})
            return end
        end = earliest
        for dev, address, nbytes in self._split(t.address, t.nbytes):
            if t.op is Op.READ:
                e = dev.read(address, nbytes, earliest, _wire(t, nbytes))
            elif t.op is Op.WRITE:
                e = dev.write(address, nbytes, earliest)
            else:
                dev.trim(address, nbytes)
                e = earliest
            if e > end:
                end = e
        if t.op is not Op.TRIM and self.tracer.enabled:
            self.tracer.span(self.path, earliest, end, t.op.value, {"bytes": t.nbytes})
        return end

    @property
    def reads_by_events(self) -> bool:
        """Whether ``request`` serves a read by events (``compat = "mqsim"``) rather than
        booking it at once through ``transport``."""
        return self._events is not None

    def request(self, t: Transfer) -> simpy.Event:
        """Serve ``t`` from now, as an event that succeeds at its completion with that
        time. A read under ``compat = "mqsim"`` is served by events on each device it
        touches (``flash.convoy``): what a channel does next is decided when it frees,
        so the data-out of a later read may push its command back, as in MQSim. Anything
        else is ``transport(t, now)`` with a timeout."""
        env = self.env
        now = int(env.now)
        evs = self._events
        if (evs is None or t.op is not Op.READ or t.nbytes == 0 or t.address < 0
                or t.address + t.nbytes > self._capacity):
            end = self.transport(t, now)
            done = env.timeout(end - now, end)
            if evs is not None and t.nbytes > 0:
                # reads waiting for its place in a device's NVMe queue start then
                for dev, _, _ in self._split(t.address, t.nbytes):
                    done.callbacks.append(evs[dev.device].wake)
            return done
        self.transfers += 1
        parts = self._split(t.address, t.nbytes)
        if len(parts) == 1:
            out = evs[parts[0][0].device].read(parts[0][1], t.nbytes, t.wire_bytes)
        else:  # done when the last device is (they complete in time order)
            out = env.event()
            left = [len(parts)]

            def one(e: simpy.Event) -> None:
                left[0] -= 1
                if not left[0]:
                    out.succeed(e.value)

            for dev, address, nbytes in parts:
                evs[dev.device].read(address, nbytes, _wire(t, nbytes)).callbacks.append(one)
        if self.tracer.enabled:
            out.callbacks.append(lambda e: self.tracer.span(
                self.path, now, e.value, t.op.value, {"bytes": t.nbytes}))
        return out

    def closed_loop(self, reads: npt.NDArray[np.bool_], addresses: I64, nbytes: int,
                    qd: int) -> ClosedLoop | ConvoyLoop | None:
        """The flash bench's closed loop (``flash.bench``) of requests of ``nbytes`` at
        each of ``addresses``, each a read where ``reads`` holds and a write where it
        does not, ``qd`` outstanding, compiled (``flash.pages.ReadLoop``,
        ``WriteLoop``, a mix as a ``WriteLoop`` with its reads, on
        either timing model; under ``compat = "mqsim"``, reads or a mix from time 0 by
        ``flash.convoy_loop``): what ``transport`` of each (``request`` under MQSim's
        rules), issued as the loop issues it, would book. None where that path does not
        take them (several devices, a trace, or ``PageBatch.read_loop``'s,
        ``write_loop``'s, ``mix_loop``'s and ``ConvoyLoop.make``'s cases)."""
        if (self._one is None or self.tracer.enabled or not addresses.size
                or nbytes <= 0 or int(addresses.min()) < 0
                or int(addresses.max()) + nbytes > self._capacity):
            return None
        loop: ClosedLoop | ConvoyLoop | None = None
        read = bool(reads.all())
        if reads.any() and not read:  # a mix
            if self._events is not None:
                evs = self._events[0]
                if self.env.now == 0 and evs.idle():
                    loop = ConvoyLoop.make(evs.ssd, evs.arbiter.m, evs.arbiter.turn,
                                           addresses, nbytes, qd, reads, self._reads)
            elif self._reads is not None:
                loop = self._reads.mix_loop(reads, addresses, nbytes, qd)
        elif not read:
            if self._reads is not None:
                loop = self._reads.write_loop(addresses, nbytes, qd)
        elif self._events is not None:  # reads by events: the events compiled
            evs = self._events[0]
            if self.env.now == 0 and evs.idle():
                loop = ConvoyLoop.make(evs.ssd, evs.arbiter.m, evs.arbiter.turn, addresses,
                                       nbytes, qd)
        elif self._reads is not None:
            loop = self._reads.read_loop(addresses, nbytes, qd)
        if loop is not None:
            self.transfers += int(addresses.size)
        return loop

    def transport_many(self, op: Op, addresses: list[int], nbytes: int, pattern: Pattern,
                       earliest: int) -> list[int]:
        """``transport(Transfer(op, a, nbytes, pattern), earliest)`` for each of
        ``addresses`` in turn (a host queue's batch issued at one time); their
        completion times, booked exactly as by those calls."""
        if (self._one is None or op is Op.TRIM or self.tracer.enabled or not addresses
                or nbytes == 0 or min(addresses) < 0
                or max(addresses) + nbytes > self._capacity):
            return [self.transport(Transfer(op, a, nbytes, pattern), earliest)
                    for a in addresses]
        self.transfers += len(addresses)
        if self._pages is not None:
            return self._pages.serve(op is Op.READ, addresses, nbytes, earliest)
        return self._one.serve_many(op is Op.READ, addresses, nbytes, earliest)

    def _split(self, address: int, nbytes: int) -> tuple[tuple[Ssd, int, int], ...]:
        """RAID-0: the contiguous device-local range of each device the bytes touch, in
        the order of their first stripes (the devices share no state, so the order they
        are served in changes nothing). Only the touched devices are visited: a 2 MiB
        chunk on 16 devices of 512 KiB stripes is four steps, not sixteen. Remembered
        per range (a training iteration moves the same chunks every time), up to
        ``_SPLITS`` ranges."""
        got = self._splits.get((address, nbytes))
        if got is not None:
            return got
        devs = self.devices
        n = len(devs)
        if n == 1:
            return ((devs[0], address, nbytes),)
        S = self.cfg.stripe_bytes
        end = address + nbytes
        s0, s1 = address // S, (end - 1) // S
        out = []
        for j in range(s0, min(s1 + 1, s0 + n)):  # device j % n's first stripe
            jl = s1 - (s1 - j) % n  # its last
            lo = (j // n) * S + max(address, j * S) - j * S
            hi = (jl // n) * S + min(end, (jl + 1) * S) - jl * S
            out.append((devs[j % n], lo, hi - lo))
        if len(self._splits) >= _SPLITS:
            self._splits.clear()
        got = self._splits[(address, nbytes)] = tuple(out)
        return got

    # -- state that drifts across iterations ---------------------------------------------
    def drift(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each device's SLC cache (``flash.slc``): pages it holds, its capacity, and
        host pages written so far (empty arrays: no device has one)."""
        devs = [d for d in self.devices if d.slc]
        return (np.array([d.slc.used for d in devs], dtype=np.float64),
                np.array([d.slc.cap for d in devs], dtype=np.float64),
                np.array([d.slc.written_pages for d in devs], dtype=np.float64))

    def regime(self) -> np.ndarray:
        """Each device's host pages written straight to TLC past a full SLC cache."""
        return np.array([d.slc.direct_pages for d in self.devices if d.slc],
                        dtype=np.float64)

    def advance_drift(self, pages: np.ndarray) -> None:
        """Move each device's SLC cache (in ``drift``'s order) by ``pages``, as writes
        and folds that are not simulated would (``SlcCache.advance``)."""
        for d, n in zip([d for d in self.devices if d.slc], pages, strict=True):
            d.slc.advance(float(n))

    # -- lifecycle ---------------------------------------------------------------------
    def _start(self) -> None:
        for d in self.devices:
            d.model.start()

    def finalize(self, now: int) -> None:
        # Actions are counted on the hot path as plain integers and handed to the meter
        # before it converts counts to energy (only what is new since the last call, so
        # finalizing twice, or at intermediate times, never double counts).
        e = self.energy
        assert e is not None
        cs = [d.c for d in self.devices]
        # A die draws its current once per operation, whatever planes it serves: a
        # multi-plane read or program costs one tR or tPROG of V x I, so NAND energy counts
        # commands, not pages. SLC-mode programs cost their shorter tPROG (in the share of
        # program commands their pages are); folding a page costs one read and one TLC
        # program of a multi-plane command (``flash.slc``).
        planes = self.cfg.planes_per_die
        pages = sum(c.pages_programmed for c in cs)
        progs = sum(c.program_cmds for c in cs)
        # the program commands booked since the last call are split between SLC and
        # TLC mode by the pages taken in each mode since then, so the counts only grow
        slc = sum(d.slc.slc_pages for d in self.devices)
        p0, c0, s0, slc_cmds = self._split_at
        if pages > p0:
            new = progs - c0
            slc_cmds += min(new, max(0, round(new * (slc - s0) / (pages - p0))))
        self._split_at = (pages, progs, slc, slc_cmds)
        fold_cmds = -(-sum(d.slc.folded_pages for d in self.devices) // planes)
        for action, n in (("nand_read", sum(c.read_cmds for c in cs) + fold_cmds),
                          ("nand_program", progs - slc_cmds + fold_cmds),
                          ("nand_program_slc", slc_cmds),
                          ("block_erase", sum(c.erase_cmds for c in cs)),
                          ("channel_byte", sum(c.channel_bytes for c in cs))):
            e.add(action, n - e.counts[action])
        e.add_busy(sum(d.active_ps for d in self.devices) - e.busy_ps)
        super().finalize(now)

    def _report(self) -> dict[str, Any]:
        elapsed = self.finalized_at if self.finalized_at else self.now
        reps = [d.report(elapsed) for d in self.devices]
        out: dict[str, Any] = {"model": self.model, "seed": self.seed,
                               "devices": len(reps)}
        if len(reps) == 1:
            out.update(reps[0])
            out["transfers"] = self.transfers
            return out
        # A device's report may leave out a figure it has nothing of (the SLC cache's
        # ``slc_advanced_pages`` where the run moved no fill on it): the array's is the
        # sum over the devices that give it, in the order the devices first give it.
        for key in _union(reps):
            if key in _NOT_SUMMED or key.startswith("ch"):
                continue
            parts = [r[key] for r in reps if key in r]
            if isinstance(parts[0], dict):
                out[key] = {k: sum(p.get(k, 0) for p in parts) for k in _union(parts)}
            else:
                out[key] = sum(parts)
        out["transfers"] = self.transfers
        written = sum(r["host_pages_written"] for r in reps)
        moved = sum(r["gc_pages_moved"] + r["wl_pages_moved"] for r in reps)
        out["waf"] = (written + moved) / written if written else 1.0
        out["max_erase_count"] = max(r["max_erase_count"] for r in reps)
        out["ftl_state_bytes"] = sum(r["ftl_state_bytes"] for r in reps)
        for k, r in enumerate(reps):
            out[f"dev{k}"] = r
        return out


def _union(dicts: list[dict[str, Any]]) -> list[str]:
    """The keys of ``dicts``, each once, in the order they first appear."""
    return list(dict.fromkeys(k for d in dicts for k in d))


def compile_kernels() -> None:
    """Compile the flash models' kernels (``tmhw.sim.jit``) into numba's on-disk cache,
    by a chunk written and read on a small device: a process that finds them there
    loads them in a fraction of a second instead of compiling them for several. ``make``
    runs this before the tests and the default study (``tmhw.system.compile_kernels``)."""
    from dataclasses import replace

    from flash.config import PRESETS
    from tmhw.sim.env import Environment
    from tmhw.sim.units import MiB, S

    # the flash bench's closed loops (``closed_loop``: ``flash.pages``' of whole-page
    # reads and of writes, the same kernel on either timing model, and
    # ``flash.convoy_loop``'s reads under MQSim's rules), each a handful of requests
    plain = PRESETS["mqsim-default"]  # (no write buffer, no SLC cache: a write loop)
    for model, cfg in (("fast", plain), ("detailed", plain),
                       ("detailed", replace(plain, compat="mqsim"))):
        for reads, n in (([True] * 4, 1), ([False] * 4, 2), ([True, False] * 2, 1)):
            bench = FlashTarget(Environment(), "flash", None, cfg, model=model)
            size = n * cfg.page_size
            loop = bench.closed_loop(np.array(reads), np.arange(4, dtype=np.int64) * size,
                                     size, 2)
            if loop is not None:
                times = np.zeros((2, 4), dtype=np.int64)
                loop.run(4, times[0], times[1])
                loop.finish()
    # the detailed model's reads of several pages (``read_cmds``)
    FlashTarget(Environment(), "flash", None, plain, model="detailed").transport(
        Transfer(Op.READ, 0, 4 * plain.page_size), 0)
    dev = FlashTarget(Environment(), "flash", None, PRESETS["990pro"], precondition=0.01)
    dev.transport(Transfer(Op.WRITE, 0, 2 * MiB), 0)
    dev.transport(Transfer(Op.WRITE, 0, 2 * MiB), 0)  # its L2P segment dense now
    dev.transport(Transfer(Op.READ, 64 * MiB, 2 * MiB), 0)  # not in the write buffer
    dev.channels.start_time(0, 0)
    dev.channels.prune(0)
    dev.devices[0].report(1)  # the dies' work queued past the end (``busy_after``)
    # one page each way (``program_page``, ``read_page``), the dies' grouping called
    # from Python (a lane's row grown), and the old copies' unmapping (``drop_old``, of
    # ``FTL._unmap`` and a long write's ``_unmap_run``) on its own: a long write is 2 GiB
    dev.transport(Transfer(Op.WRITE, 32 * MiB, 16 * 1024), 0)
    dev.transport(Transfer(Op.READ, 96 * MiB, 16 * 1024), 0)
    # a device whose writes only place their pages (``FTL.place_only``, ``place_run``:
    # the bounds' flash batch, ``flash.batch``)
    placed = FlashTarget(Environment(), "flash", None, PRESETS["990pro"], precondition=0.01)
    for d in placed.devices:
        d.ftl.place_only()
    placed.transport(Transfer(Op.WRITE, 256 * MiB, 2 * MiB), 0)
    # a batch of whole pages each way (``flash.pages``: ``_read_pages``,
    # ``_write_pages``, the FTL's ``write_open``, the write buffer's ``buffer_pages``);
    # a read of pages still buffered (``first_held_page``), and writes once they have
    # left (``release_ended``)
    pages = FlashTarget(Environment(), "flash", None, PRESETS["990pro"], precondition=0.01)
    for op, t in ((Op.READ, 0), (Op.WRITE, 0), (Op.READ, 0), (Op.WRITE, S)):
        pages.transport_many(op, [128 * MiB, 160 * MiB], 16 * 1024, Pattern.RANDOM, t)
    # a chunk on two devices striped: each device's part (``flash.runs``' compiled
    # calls, on the devices' one array of lanes)
    striped = FlashTarget(Environment(), "flash", None,
                          replace(PRESETS["990pro"], devices=2, stripe_bytes=512 * 1024),
                          precondition=0.01)
    striped.transport(Transfer(Op.WRITE, 0, 2 * MiB), 0)
    striped.transport(Transfer(Op.READ, 64 * MiB, 2 * MiB), 0)
    # the detailed model's per-transaction command bookings (``flash.engine.commands``)
    detailed = FlashTarget(Environment(), "flash", None, PRESETS["990pro"],
                           model="detailed", precondition=0.01)
    detailed.transport(Transfer(Op.WRITE, 0, 64 * 1024), 0)
    fast = dev.devices[0].fast
    if fast is not None:
        fast.former.die_groups(np.zeros(1, dtype=np.int64))
    drop_old(np.zeros(1, dtype=np.int32), np.full(1, -1, dtype=np.int64), 1)
    # the sparse maps' bulk kernels (``flash.intmap``)
    imap = IntMap(2)  # too small for two keys: rehashed
    imap.update(np.arange(2, dtype=np.int64), np.arange(2, dtype=np.int64))
    got = np.empty(2, dtype=np.int64)
    im_get_many(imap.table, imap.meta, np.arange(2, dtype=np.int64), -2, got)
    im_pop_range(imap.table, imap.meta, 0, 2, -2, got)
    imap[0] = 0
    imap.pop(0)  # (``im_remove`` called from Python)
    # the placement of the general write path and of GC (``Programmer.place``): one
    # page into a block with room
    one = np.zeros(1, dtype=np.int64)
    place((one, 0), (one, one, np.ones(1, dtype=np.int64), 1),
          (one, one.copy(), np.ones(1, dtype=np.int32),
           np.full((1, 2), -1, dtype=dev.ftl.mapping.lpn_dtype), np.zeros(1, dtype=np.int32),
           np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int8)),
          np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
          (np.ones(5, dtype=np.int64), np.zeros(1, dtype=np.bool_), np.zeros(6, dtype=np.int64),
           (one, one, one)))
