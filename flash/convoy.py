"""Stock MQSim's read arbitration as events, for ``flash.compat = "mqsim"``: what the
channel does next is decided when it frees, as MQSim's transaction scheduler and ONFI
PHY decide it (``TSU_Priority_OutOfOrder::Schedule``, ``TSU_Base::issue_command_to_chip``,
``NVM_PHY_ONFI_NVDDR2``):

- a chip takes a read command only when it is idle: no die reading and no data waiting
  to leave (the chip lock); the command is one die's pages, on distinct planes at one
  page offset (a multi-plane read), the oldest queued page's die first;
- when tR ends, each page's data-out waits for the channel, oldest first;
- a channel that frees first drains every waiting data-out, one page at a time (the
  data-out convoy), and only then hands a command to the next idle chip with queued
  reads, round robin from the chip after the last one served.

So the data-out of a read that arrived later, but whose data is ready while an earlier
read's command still waits, goes first and pushes that command back, as in MQSim. A
model that books every command when its request arrives (``flash.fast``) cannot do
this: it would need the reads that have not arrived yet. Here each phase is one SimPy
event (a command, a tR, a page's data-out, and the request's end on the host link), and
each decision is booked on the model's lanes when it is taken (channels: gap lanes, so
a command or data-out fits around programs the write path booked ahead; chips: die
lanes, so a read still goes ahead of or suspends a program).

``EventReads`` serves the reads of one device this way (``FlashTarget.request``); the
loosely timed path (``FlashTarget.transport``, which returns a completion time at once)
keeps the booked-ahead approximation of ``flash.fast``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import simpy

from flash.scheduler import TimingBase
from flash.ssd import Ssd
from tmhw.sim.env import call_after


class _Read:
    """One page read: its chip lane, die, plane, page offset, tR and bytes, and the
    request it belongs to; its data-out time once its command is formed."""

    __slots__ = ("lane", "die", "plane", "page", "t_r", "nbytes", "req", "x")

    def __init__(self, lane: int, die: int, plane: int, page: int, t_r: int, nbytes: int,
                 req: _Request) -> None:
        self.lane, self.die, self.plane, self.page = lane, die, plane, page
        self.t_r, self.nbytes, self.req = t_r, nbytes, req
        self.x = 0


class _Request:
    """A host read's pages still to come off the channels, and its first data-out start
    and last end so far; ``done(start, end)`` once the last is out."""

    __slots__ = ("left", "start", "end", "done")

    def __init__(self, left: int, done: Callable[[int, int], None]) -> None:
        self.left, self.start, self.end, self.done = left, -1, 0, done


class ConvoyArbiter:
    """The chips and channels of one device's ``model`` (under the chip lock: a lane per
    chip), arbitrated by events on ``env`` (module docstring)."""

    def __init__(self, env: simpy.Environment, model: TimingBase) -> None:
        self.env = env
        self.m = model
        f = model.former
        self.cpc = f.lanes_per_channel
        self.lane0 = model.lane0
        self.ch0 = model.ch0
        lanes = model.lane1 - model.lane0
        self.queued: list[deque[_Read]] = [deque() for _ in range(lanes)]
        #: per chip, the page reads of its command still to leave (0: the chip is idle)
        self.held = [0] * lanes
        channels = model.ch1 - model.ch0
        self.busy = [False] * channels
        self.waiting: list[deque[_Read]] = [deque() for _ in range(channels)]
        self.turn = [0] * channels

    def submit(self, ppns: list[int], nbytes: list[int], done: Callable[[int, int], None]
               ) -> None:
        """Queue reads of device-local pages ``ppns`` (``nbytes`` of each wanted) now;
        ``done(first data-out start, last end)`` once all are off the channels."""
        m, f = self.m, self.m.former
        req = _Request(len(ppns), done)
        touched = []
        for ppn, nb in zip(ppns, nbytes, strict=True):
            g = ppn + m.ppn0
            plane = g // f.ppp
            die = plane // f.P
            off = g % m.ppb
            r = _Read(f.lane_of(die) - self.lane0, die, plane % f.P, off,
                      m.t_r_of[off % m.bits], nb, req)
            self.queued[r.lane].append(r)
            ch = r.lane // self.cpc
            if ch not in touched:
                touched.append(ch)
        for ch in sorted(touched):
            self._step(ch)

    def _after(self, delay: int, fn: Callable[[Any], None]) -> None:
        call_after(self.env, delay, fn)

    def _step(self, ch: int) -> None:
        """Channel ``ch``, if idle: its oldest waiting data-out, else a command to the
        next idle chip with queued reads."""
        if self.busy[ch]:
            return
        now = int(self.env.now)
        wait = self.waiting[ch]
        if wait:
            r = wait.popleft()
            end = self.m.channels.reserve1(ch + self.ch0, now, r.x)
            self.busy[ch] = True
            self._after(end - now, lambda _: self._out(ch, r, end))
            return
        base = ch * self.cpc
        for j in range(self.cpc):
            k = (self.turn[ch] + j) % self.cpc
            if not self.held[base + k] and self.queued[base + k]:
                self.turn[ch] = (k + 1) % self.cpc
                self._issue(ch, base + k, now)
                return

    def _issue(self, ch: int, lane: int, now: int) -> None:
        """A read command to chip ``lane``: its oldest page's die, with the queued pages
        of that die on other planes at the same page offset."""
        m = self.m
        q = self.queued[lane]
        first = q.popleft()
        cmd = [first]
        if m.former.multi:
            planes = 1 << first.plane
            for r in list(q):
                if r.die == first.die and r.page == first.page and not planes >> r.plane & 1:
                    planes |= 1 << r.plane
                    cmd.append(r)
                    q.remove(r)
        k = len(cmd)
        phy = m.phy
        setup = phy.rsetup[k]
        for r in cmd:  # each page's data-out: its bytes and its share of the setup
            r.x = setup // k + (phy.page_data if r.nbytes == m.page else phy.data_ps(r.nbytes))
        cmd[0].x += setup % k
        c_end = m.channels.reserve1(ch + self.ch0, now, phy.rcmd[k])
        d_end = m.dies.read1(lane + self.lane0, c_end, max(r.t_r for r in cmd))
        m.c.read_cmds += 1
        self.held[lane] = k
        self.busy[ch] = True
        self._after(c_end - now, lambda _: self._free(ch))
        self._after(d_end - now, lambda _: self._ready(ch, cmd))

    def _free(self, ch: int) -> None:
        self.busy[ch] = False
        self._step(ch)

    def _ready(self, ch: int, cmd: list[_Read]) -> None:
        self.waiting[ch].extend(cmd)
        self._step(ch)

    def _out(self, ch: int, r: _Read, end: int) -> None:
        """``r``'s data is out at ``end`` (now)."""
        self.busy[ch] = False
        self.held[r.lane] -= 1
        if not self.held[r.lane]:  # the chip is idle again
            self.m.dies.hold1(r.lane + self.lane0, end)
        req = r.req
        start = end - r.x
        if req.start < 0 or start < req.start:
            req.start = start
        if end > req.end:
            req.end = end
        req.left -= 1
        if not req.left:
            req.done(req.start, req.end)
        self._step(ch)


class EventReads:
    """Host reads of one device ``ssd`` served by events (module docstring): the NVMe
    queue, the controller DRAM and the FTL as in ``Ssd.read``, the NAND reads through a
    ``ConvoyArbiter``, then the host link. ``read`` returns an event that succeeds, with
    the completion time, when the read completes."""

    def __init__(self, env: simpy.Environment, ssd: Ssd) -> None:
        self.env = env
        self.ssd = ssd
        assert isinstance(ssd.model, TimingBase)
        self.arbiter = ConvoyArbiter(env, ssd.model)
        #: reads the device holds whose completion is not known yet (the NVMe queue
        #: knows the others), and reads waiting for a place in it
        self.holding = 0
        self.backlog: deque[tuple[int, int, int, simpy.Event]] = deque()

    def idle(self) -> bool:
        """Nothing in flight: no read held, waiting for the queue, queued at a chip,
        waiting for a channel or on one."""
        a = self.arbiter
        return not (self.holding or self.backlog or any(a.queued) or any(a.held)
                    or any(a.busy) or any(a.waiting))

    def read(self, address: int, nbytes: int, wire_bytes: int = 0) -> simpy.Event:
        """Read ``nbytes`` at device-local ``address`` from now."""
        ev = self.env.event()
        host = self.ssd.host
        if self.holding + host.held(int(self.env.now)) >= host.depth:  # the device is full
            host.queue_waits += 1
            self.backlog.append((address, nbytes, wire_bytes, ev))
            return ev
        self._start(address, nbytes, wire_bytes, ev)
        return ev

    def _start(self, address: int, nbytes: int, wire_bytes: int, ev: simpy.Event) -> None:
        ssd = self.ssd
        now = int(self.env.now)
        self.holding += 1
        t0, start, x_end, ppns, nb = ssd.read_map(address, nbytes, now, wire_bytes,
                                                  nand1=False)

        def done(s: int, e: int) -> None:
            self._done(t0, s if start < 0 or s < start else start, max(x_end, e), nbytes,
                       wire_bytes, ev)

        if ppns is None:
            done(start, x_end)
        else:
            self.arbiter.submit(ppns.tolist(), nb.tolist(), done)

    def _done(self, t0: int, start: int, x_end: int, nbytes: int, wire_bytes: int,
              ev: simpy.Event) -> None:
        end = self.ssd.read_done(t0, start, x_end, nbytes, wire_bytes)
        self.holding -= 1
        call_after(self.env, end - int(self.env.now), lambda _: self._complete(ev, end))

    def wake(self, _: object = None) -> None:
        """A command that is not a read by events completed now (a write: its place in
        the NVMe queue is free): the reads waiting for a place start while there is
        one."""
        host = self.ssd.host
        while self.backlog and self.holding + host.held(int(self.env.now)) < host.depth:
            self._start(*self.backlog.popleft())

    def _complete(self, ev: simpy.Event, end: int) -> None:
        """The read completes (now, at ``end``): the NVMe queue takes the next waiting
        one."""
        ev.succeed(end)
        if self.backlog:
            self._start(*self.backlog.popleft())
