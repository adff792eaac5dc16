"""The die lanes: each die (or, under MQSim's chip lock, each chip) as a busy lane with
read priority and suspension, and the kernels that book on it (the only implementation
of each rule; ``DieLanes`` calls them from Python, the chunk and batch kernels from
compiled code).

Rules (times in ps, never negative):

- **Read priority and suspension** (``die_read``). Per lane the state keeps the end of
  its last read and the programs and erases booked after it, in order. A read queues
  behind reads only: it goes ahead of programs and erases still waiting to start, and
  if one is running it suspends it (when the ``SuspendRule`` allows: enabled, at least
  ``min_remaining`` of it left, and more than the suspend latency), starting after the
  suspend latency; otherwise it follows the running one. The work behind the read
  moves later by what the read took, in order.
- **Chip batches** (MQSim's die-interleaved read, ``dies`` != 0). A chip takes a new
  command only when all its dies are idle, and then issues every waiting read of a die
  not already reading together: a read that reached the scheduler (``arrive``) before
  the chip's latest batch of reads started joins it if its dies are free in it.
- **Multi-plane programs** (``die_prog``). A program may absorb a page for other planes
  of its die while it waits to start: if one of the die's waiting programs (the last
  few commands of the lane; on a chip, those of the same die) has not started by the
  page's ready time, programs none of its planes and the same page offset (ONFI: one
  page per plane at one offset), the page joins the newest such program at no die
  time. The search stops at the newest waiting program of the die that already
  programs one of these planes.
- **Independent plane reads** (``plane_read``): a one-page read holds the die for
  ``tR / planes`` and its data is ready ``tR`` after it starts.
- **Hold** (``die_hold``): a die starts nothing before its cache register drains.
- **Work** (``die_work``): garbage-collection relocations and erases, queued.

A read moves the work queued behind it without touching it: an op's start is the latest
of its stored start and the head op's end plus the durations queued between them (a
prefix sum of durations kept per slot, ``qs``), so only the head op is kept at its true
times and a read costs the same whatever the queue's depth. When spans are recorded,
every queued op's times are written out after each read, for timelines.

State (``DieLanes.state``, one tuple of structured arrays handed to every kernel):
``lane[i]`` per lane (``LANE``), ``ops[slot]`` the queued ops (``OP``; lane ``i``'s row
is slots ``i * cap`` on), ``par[0]`` the parameters (``PAR``), and ``rec[k]`` the
recorded spans (``REC``; none when not recording), appended by the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tmhw.sim.jit import njit_noref

I64 = npt.NDArray[np.int64]
Rec = npt.NDArray[np.void]
#: (lane, ops, par, rec): the module docstring's state
DieState = tuple[Rec, Rec, Rec, Rec]

#: the kinds of queued op
PROG, ERASE, GC = 0, 1, 2


def _fields(*names: str) -> np.dtype[np.void]:
    return np.dtype([(name, np.int64) for name in names])


#: a lane: when it is next free, the end of its last read, its busy time, its bookings,
#: the durations of every op queued on it so far (``qs``'s running sum: only
#: differences are read, so it is never reset), its queue's head and tail slots, reads'
#: suspends of programs and of erases, pages merged into waiting programs, and its
#: latest batch of reads (chip lanes: start, dies, end)
LANE = _fields("until", "rd", "busy", "count", "qsum", "head", "tail", "sus_p", "sus_e",
               "merged", "bstart", "bmask", "bend")
#: a queued op: its start and end (true for the head op; module docstring), kind, plane
#: mask, page offset, its row of ``rec`` and the durations queued before it; with one
#: spare field a slot is 64 bytes, so a booking touches one cache line per slot
OP = _fields("st", "en", "kind", "mask", "page", "span", "qs", "spare")
#: the parameters: slots per lane's row, plane bits per die in a mask, the suspend rule
#: (``SuspendRule``: any, program, erase, their latencies, least remaining time), and
#: the recorded spans' count
PAR = _fields("cap", "planes", "r_any", "r_prog", "r_erase", "r_tprog", "r_terase",
              "r_min", "nrec")
#: a recorded span: its lane, start and end
REC = _fields("lane", "start", "end")


@dataclass(frozen=True, slots=True)
class SuspendRule:
    """When a read may suspend the program or erase it finds on its die, and at what
    cost (``FlashConfig.program_suspend`` and its siblings)."""

    program: bool
    erase: bool
    t_program: int
    t_erase: int
    min_remaining: int


# -- kernels --------------------------------------------------------------------------
@njit_noref
def _now_slot(ops: Rec, h: int, k: int) -> tuple[int, int]:
    """The true start and end of queued slot ``k`` of a lane whose head op is at slot
    ``h`` (module docstring)."""
    a = ops[k]["st"]
    e = ops[k]["en"]
    if k > h:
        base = ops[h]["en"] + ops[k]["qs"] - ops[h + 1]["qs"]
        if base > a:
            return base, e + base - a
    return a, e


@njit_noref
def _record(par: Rec, rec: Rec, i: int, s: int, e: int) -> int:
    """Append span (``s``, ``e``) of lane ``i`` when recording; its row, or -1."""
    if rec.shape[0] == 0:
        return -1
    n: int = par[0]["nrec"]
    r = rec[n]
    r["lane"] = i
    r["start"] = s
    r["end"] = e
    par[0]["nrec"] = n + 1
    return n


@njit_noref
def _suspend_latency(par: Rec, kind: int, left: int) -> int:
    """The suspend latency of an op of ``kind`` with ``left`` to run that a read
    suspends, or -1 when the rule lets it run on."""
    if par[0]["r_any"] == 0 or kind == GC:
        return -1
    if not (par[0]["r_erase"] if kind == ERASE else par[0]["r_prog"]):
        return -1
    lat = par[0]["r_terase"] if kind == ERASE else par[0]["r_tprog"]
    return lat if left >= par[0]["r_min"] and left > lat else -1


@njit_noref
def die_read(st: DieState, i: int, earliest: int, d: int, dies: int, arrive: int) -> int:
    """A read of ``d`` on lane ``i`` no earlier than ``earliest``; its end. On a chip
    lane, ``dies`` is the bit mask of its dies the read uses and ``arrive`` when it
    reached the scheduler (-1: ``earliest``); 0 on a die lane."""
    lane, ops, par, rec = st
    t = lane[i]["tail"]
    h = lane[i]["head"]
    qe = _now_slot(ops, h, t - 1)[1] if t != h else -1  # the newest queued op's end
    if dies and qe < 0:
        bs: int = lane[i]["bstart"]
        if (earliest if arrive < 0 else arrive) <= bs and not lane[i]["bmask"] & dies:
            end = bs + d  # joins the chip's batch
            lane[i]["bmask"] |= dies
            be = lane[i]["bend"]
            if end > be:
                lane[i]["busy"] += end - be
                _record(par, rec, i, be, end)
                lane[i]["bend"] = end
            if lane[i]["rd"] < end:
                lane[i]["rd"] = end
            if lane[i]["until"] < end:
                lane[i]["until"] = end
            return end
    r = lane[i]["rd"]
    s = earliest if earliest > r else r
    if qe > s:
        return _read_queued(st, i, s, d)
    if qe >= 0:  # queued work that ended before the read: forgotten
        lane[i]["head"] = i * par[0]["cap"]
        lane[i]["tail"] = i * par[0]["cap"]
    end = s + d
    lane[i]["rd"] = end
    if lane[i]["until"] < end:
        lane[i]["until"] = end
    lane[i]["busy"] += d
    lane[i]["count"] += 1
    _record(par, rec, i, s, end)
    if dies:  # this read opens the chip's next batch
        lane[i]["bstart"] = s
        lane[i]["bmask"] = dies
        lane[i]["bend"] = end
    return end


@njit_noref
def plane_read(st: DieState, i: int, earliest: int, t_r: int, share: int, dies: int,
               arrive: int) -> int:
    """A one-page read of ``t_r`` on lane ``i``; when its data is in the page register.
    With independent plane reads (``share`` = planes > 1; NAND that reads each plane
    with its own word-line and sense circuits) a die overlaps ``share`` such reads: the
    read holds the lane for ``t_r / share`` and its data is ready ``t_r`` after it
    starts (a die as a pipeline of ``share`` reads; two reads of one plane overlap too,
    which random reads over many planes rarely ask for)."""
    if share <= 1:
        return die_read(st, i, earliest, t_r, dies, arrive)
    occ = t_r // share
    return die_read(st, i, earliest, occ, dies, arrive) - occ + t_r


@njit_noref
def _read_queued(st: DieState, i: int, s: int, d: int) -> int:
    """A read of ``d`` from ``s`` on lane ``i``, whose queue has work left to run after
    ``s``: it queues ahead of it, or suspends it; its end."""
    lane, ops, par, rec = st
    h = lane[i]["head"]
    t = lane[i]["tail"]
    st0 = ops[h]["st"]
    en0 = ops[h]["en"]
    while en0 <= s:  # ended before the read: forgotten, and the next is the head
        h += 1
        st0, en0 = _now_slot(ops, h - 1, h)
        ops[h]["st"] = st0
        ops[h]["en"] = en0
    lat = 0
    kind = ops[h]["kind"]
    if s < st0:
        start = s  # ahead of every waiting program and erase
    else:
        sl = _suspend_latency(par, kind, en0 - s)
        if sl >= 0:
            lat = sl
            if kind == ERASE:
                lane[i]["sus_e"] += 1
            else:
                lane[i]["sus_p"] += 1
            if rec.shape[0]:  # the part done before the suspend, then the rest
                rec[ops[h]["span"]]["start"] = st0
                rec[ops[h]["span"]]["end"] = s
                ops[h]["span"] = _record(par, rec, i, s, en0)
            ops[h]["st"] = s  # the rest runs after the read
            start = s + lat
        else:
            start = en0  # after the running one
            h += 1
    end = start + d
    lane[i]["rd"] = end
    if h < t:
        # the head starts after the read (the next op's start is at least the end of
        # the one that ran, which the read follows); the ops behind follow it
        a = ops[h]["st"]
        if end > a:
            ops[h]["st"] = end
            ops[h]["en"] += end - a
            if rec.shape[0]:
                rec[ops[h]["span"]]["start"] = end
                rec[ops[h]["span"]]["end"] = ops[h]["en"]
        last = _now_slot(ops, h, t - 1)[1]
        lane[i]["until"] = last if last > end else end
        lane[i]["head"] = h
        if rec.shape[0]:  # every queued op where it now runs, for timelines
            for k in range(h + 1, t):
                a, e = _now_slot(ops, h, k)
                if a != ops[k]["st"]:
                    ops[k]["st"] = a
                    ops[k]["en"] = e
                    rec[ops[k]["span"]]["start"] = a
                    rec[ops[k]["span"]]["end"] = e
    else:
        if lane[i]["until"] < end:
            lane[i]["until"] = end
        lane[i]["head"] = i * par[0]["cap"]
        lane[i]["tail"] = i * par[0]["cap"]
    lane[i]["busy"] += d + lat
    lane[i]["count"] += 1
    _record(par, rec, i, start - lat, end)
    return end


@njit_noref
def lane_full(st: DieState, i: int) -> bool:
    """Whether lane ``i``'s row has no free slot at its tail (``DieLanes.make_room``)."""
    return bool(st[0][i]["tail"] == (i + 1) * st[2][0]["cap"])


@njit_noref
def die_hold(st: DieState, i: int, t: int) -> None:
    """Lane ``i`` starts nothing before ``t`` (its cache register is still full)."""
    lane = st[0]
    if lane[i]["rd"] < t:
        lane[i]["rd"] = t
    if lane[i]["until"] < t:
        lane[i]["until"] = t


@njit_noref
def die_work(st: DieState, i: int, earliest: int, d: int, kind: int, planes: int,
             page: int) -> int:
    """Queue an op of ``kind`` and ``d`` on lane ``i`` no earlier than ``earliest``; its
    end. The lane's row must have a free slot at its tail (``DieLanes.make_room``)."""
    lane, ops, par, rec = st
    b = lane[i]["until"]
    s = earliest if earliest > b else b
    end = s + d
    t = lane[i]["tail"]
    ops[t]["qs"] = lane[i]["qsum"]
    lane[i]["qsum"] += d
    ops[t]["st"] = s
    ops[t]["en"] = end
    ops[t]["kind"] = kind
    ops[t]["mask"] = planes
    ops[t]["page"] = page
    ops[t]["span"] = _record(par, rec, i, s, end)
    lane[i]["busy"] += d
    lane[i]["count"] += 1
    lane[i]["tail"] = t + 1
    lane[i]["until"] = end
    return end


@njit_noref
def _top(x: int) -> int:
    """``x.bit_length() - 1`` of positive ``x``."""
    b = -1
    while x:
        x >>= 1
        b += 1
    return b


@njit_noref
def die_prog(st: DieState, i: int, ready: int, d: int, planes: int, page: int) -> int:
    """A program of ``d`` of plane mask ``planes`` (0: no multi-plane forming) at page
    offset ``page`` on lane ``i``, its data in at ``ready``: its end, or the end of the
    waiting program the page joined (module docstring), counted in the lane's ``merged``.
    The lane's row must have a free slot at its tail (``DieLanes.make_room``)."""
    lane, ops, par, _ = st
    t = lane[i]["tail"]
    h = lane[i]["head"]
    # the page may join a program only if the newest queued op is one still waiting
    if (planes and t != h and ops[t - 1]["kind"] == PROG
            and ready <= _now_slot(ops, h, t - 1)[0]):
        P = par[0]["planes"]
        die = _top(planes) // P
        k = t - 1
        stop = max(k - 4, h - 1)  # among the last four commands of the lane
        while k > stop:
            s, end = _now_slot(ops, h, k)
            if s < ready or ops[k]["kind"] != PROG:
                break
            om = ops[k]["mask"]
            if om and _top(om) // P == die:
                if om & planes:
                    break
                if ops[k]["page"] == page:
                    ops[k]["mask"] = om | planes
                    lane[i]["merged"] += 1
                    return int(end)
                # an older waiting program may be at this offset
            k -= 1
    return die_work(st, i, ready, d, PROG, planes, page)


# -- the lanes ------------------------------------------------------------------------
class DieLanes:
    """``n`` die lanes (module docstring), their state in arrays (``state``): each
    booking is one call of a kernel (a chunk's are booked by the chunk kernels,
    ``flash.engine.chunks``, on the same state). Growing a lane's row of queued ops
    and the recorded spans' buffer is done here, before the kernels need it."""

    def __init__(self, prefix: str, n: int, rule: SuspendRule | None = None,
                 record: bool = False, planes_per_die: int = 1) -> None:
        self.prefix = prefix
        self.rule = rule
        #: plane bits per die in a mask (a lane that is a chip has several dies' bits)
        self.P = planes_per_die
        lane = np.zeros(n, dtype=LANE)
        cap = 16
        lane["head"] = np.arange(n, dtype=np.int64) * cap
        lane["tail"] = lane["head"]
        lane["bstart"] = -1
        par = np.zeros(1, dtype=PAR)
        p = par[0]
        p["cap"] = cap
        p["planes"] = planes_per_die
        if rule is not None:
            p["r_any"], p["r_prog"], p["r_erase"] = 1, rule.program, rule.erase
            p["r_tprog"], p["r_terase"] = rule.t_program, rule.t_erase
            p["r_min"] = rule.min_remaining
        rec = np.zeros(1024 if record else 0, dtype=REC)
        self.state: DieState = (lane, np.zeros(n * cap, dtype=OP), par, rec)
        self.record = record
        #: slots per lane's row of queued ops (``par``'s, for the Python side)
        self.cap = cap
        # the lanes' fields the Python side reads, as views of int64 (the lane array is
        # never replaced): a field of one record read through numpy costs ~0.3 us
        self._rd, self._until, self._tail, self._merged = (
            lane["rd"], lane["until"], lane["tail"], lane["merged"])

    def __len__(self) -> int:
        return int(self.state[0].shape[0])

    # -- room ----------------------------------------------------------------------------
    def make_room(self, lanes: I64) -> None:
        """A free slot at the tail of each of ``lanes`` (their rows compacted, or every
        row given more slots); the lanes' bookings are unchanged."""
        lanes = np.asarray(lanes, dtype=np.int64)
        lane, ops, par, rec = self.state
        cap = int(par[0]["cap"])
        head, tail = lane["head"], lane["tail"]
        full = tail[lanes] >= (lanes + 1) * cap
        if not full.any():
            return
        # the slots moved as rows of int64 (a copy of records goes field by field)
        raw = ops.view(np.int64).reshape(-1, OP.itemsize // 8)
        for i in lanes[full].tolist():
            h, t = head.item(i), tail.item(i)
            if h > i * cap:
                raw[i * cap:i * cap + t - h] = raw[h:t]
                head[i], tail[i] = i * cap, i * cap + t - h
        if (tail[lanes] >= (lanes + 1) * cap).any():
            n = len(self)
            grown = np.zeros((n, 2 * cap, raw.shape[1]), dtype=np.int64)
            grown[:, :cap] = raw.reshape(n, cap, raw.shape[1])
            base = np.arange(n, dtype=np.int64) * cap
            head += base
            tail += base
            par[0]["cap"] = self.cap = 2 * cap
            self.state = (lane, grown.reshape(-1).view(OP), par, rec)

    def _room1(self, i: int) -> None:
        if self._tail.item(i) == (i + 1) * self.cap:
            self.make_room(np.array([i], dtype=np.int64))

    def reserve_records(self, k: int) -> None:
        """Room in the recorded spans for ``k`` more (when recording): a kernel that
        books on the lanes appends to them without growing them."""
        lane, ops, par, rec = self.state
        if self.record and par[0]["nrec"] + k > rec.shape[0]:
            grown = np.zeros(2 * rec.shape[0] + k, dtype=REC)
            grown[:rec.shape[0]] = rec
            self.state = (lane, ops, par, grown)

    # -- bookings ------------------------------------------------------------------------
    def read1(self, i: int, earliest: int, duration: int, dies: int = 0,
              arrive: int = -1, share: int = 1) -> int:
        """``plane_read`` on lane ``i`` (``die_read`` when ``share`` is 1); its end."""
        if self.record:
            self.reserve_records(2)
        return int(plane_read(self.state, i, earliest, duration, share, dies, arrive))

    def hold1(self, i: int, t: int) -> None:
        """Lane ``i`` starts nothing before ``t`` (its cache register is still full)."""
        die_hold(self.state, i, t)

    def read_free(self, i: int) -> int:
        """When lane ``i`` can start a new read (its last read and its cache register)."""
        return int(self._rd.item(i))

    def prog1(self, i: int, ready: int, duration: int, planes: int = 0,
              page: int = -1) -> int:
        """``die_prog`` on lane ``i``; its end."""
        self._room1(i)
        if self.record:
            self.reserve_records(1)
        return int(die_prog(self.state, i, ready, duration, planes, page))

    def work1(self, i: int, earliest: int, duration: int, erase: bool = False) -> int:
        """Book garbage-collection work on lane ``i``: a relocation, or an erase."""
        self._room1(i)
        if self.record:
            self.reserve_records(1)
        return int(die_work(self.state, i, earliest, duration, ERASE if erase else GC,
                            0, -1))

    # -- figures -------------------------------------------------------------------------
    def start_time(self, i: int, earliest: int) -> int:
        b = int(self._until.item(i))
        return earliest if earliest > b else b

    @property
    def busy_until(self) -> I64:
        out: I64 = self._until.copy()
        return out

    @property
    def busy_ps(self) -> I64:
        out: I64 = self.state[0]["busy"].copy()
        return out

    @property
    def count(self) -> I64:
        out: I64 = self.state[0]["count"].copy()
        return out

    @property
    def merged(self) -> int:
        """Pages that joined a waiting program, on every lane."""
        return int(self._merged.sum())

    def merged_on(self, i: int) -> int:
        """Pages that joined a waiting program on lane ``i``."""
        return int(self._merged.item(i))

    @property
    def suspends(self) -> dict[str, int]:
        """Reads' suspends of programs and of erases, on every lane."""
        lane = self.state[0]
        return {"program": int(lane["sus_p"].sum()), "erase": int(lane["sus_e"].sum())}

    def counts(self, lo: int, hi: int) -> tuple[dict[str, int], int]:
        """Reads' suspends of programs and erases, and pages that joined a waiting
        program, on lanes ``lo`` to ``hi`` (one device's, of lanes spanning several)."""
        lane = self.state[0]
        part = lane[lo:hi]
        return ({"program": int(part["sus_p"].sum()), "erase": int(part["sus_e"].sum())},
                int(part["merged"].sum()))

    @property
    def spans(self) -> list[list[tuple[int, int]]] | None:
        """(start, end) of every booking per lane, in booking order, when recording."""
        if not self.record:
            return None
        _, _, par, rec = self.state
        out: list[list[tuple[int, int]]] = [[] for _ in range(len(self))]
        for i, s, e in rec[:par[0]["nrec"]].tolist():
            out[i].append((s, e))
        return out

    def report(self, i: int, elapsed: int) -> dict[str, float | int]:
        lane = self.state[0]
        busy = int(lane[i]["busy"])
        return {"busy_ps": busy, "count": int(lane[i]["count"]),
                "utilization": round(busy / elapsed, 9) if elapsed > 0 else 0.0}
