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
``lanes[lane]`` per lane (``LANE``), ``ops[slot]`` the queued ops (``OP``; a lane's
row is slots ``lane * cap`` on), ``par[0]`` the parameters (``PAR``), and ``rec[k]`` the
recorded spans (``REC``; none when not recording), appended by the kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tmhw.sim.jit import njit_noref

I64 = npt.NDArray[np.int64]
Rec = npt.NDArray[np.void]
#: (lanes, ops, par, rec): the module docstring's state
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
def _now_slot(ops: Rec, head: int, slot: int) -> tuple[int, int]:
    """The true start and end of queued slot ``slot`` of a lane whose head op is at slot
    ``head`` (module docstring)."""
    start = ops[slot]["st"]
    end = ops[slot]["en"]
    if slot > head:
        base = ops[head]["en"] + ops[slot]["qs"] - ops[head + 1]["qs"]
        if base > start:
            return base, end + base - start
    return start, end


@njit_noref
def _busy_after(ops: Rec, head: int, tail: int, t: int) -> int:
    """``Dies.busy_after`` over slots ``head`` to ``tail`` of one lane."""
    after = 0
    for slot in range(head, tail):
        start, end = _now_slot(ops, head, slot)
        if end > max(start, t):
            after += end - max(start, t)
    return after


@njit_noref
def _record(par: Rec, rec: Rec, lane: int, start: int, end: int) -> int:
    """Append span (``start``, ``end``) of lane ``lane`` when recording; its row, or -1."""
    if rec.shape[0] == 0:
        return -1
    row: int = par[0]["nrec"]
    span = rec[row]
    span["lane"] = lane
    span["start"] = start
    span["end"] = end
    par[0]["nrec"] = row + 1
    return row


@njit_noref
def _suspend_latency(par: Rec, kind: int, left: int) -> int:
    """The suspend latency of an op of ``kind`` with ``left`` to run that a read
    suspends, or -1 when the rule lets it run on."""
    if par[0]["r_any"] == 0 or kind == GC:
        return -1
    if not (par[0]["r_erase"] if kind == ERASE else par[0]["r_prog"]):
        return -1
    latency = par[0]["r_terase"] if kind == ERASE else par[0]["r_tprog"]
    return latency if left >= par[0]["r_min"] and left > latency else -1


@njit_noref
def die_read(state: DieState, lane: int, earliest: int, duration: int, dies: int,
             arrive: int) -> int:
    """A read of ``duration`` on lane ``lane`` no earlier than ``earliest``; its end. On
    a chip lane, ``dies`` is the bit mask of its dies the read uses and ``arrive`` when
    it reached the scheduler (-1: ``earliest``); 0 on a die lane."""
    lanes, ops, par, rec = state
    tail = lanes[lane]["tail"]
    head = lanes[lane]["head"]
    # the newest queued op's end
    queue_end = _now_slot(ops, head, tail - 1)[1] if tail != head else -1
    if dies and queue_end < 0:
        batch_start: int = lanes[lane]["bstart"]
        if (earliest if arrive < 0 else arrive) <= batch_start and not lanes[lane]["bmask"] & dies:
            end = batch_start + duration  # joins the chip's batch
            lanes[lane]["bmask"] |= dies
            batch_end = lanes[lane]["bend"]
            if end > batch_end:
                lanes[lane]["busy"] += end - batch_end
                _record(par, rec, lane, batch_end, end)
                lanes[lane]["bend"] = end
            if lanes[lane]["rd"] < end:
                lanes[lane]["rd"] = end
            if lanes[lane]["until"] < end:
                lanes[lane]["until"] = end
            return end
    last_read = lanes[lane]["rd"]
    start = earliest if earliest > last_read else last_read
    if queue_end > start:
        return _read_queued(state, lane, start, duration)
    if queue_end >= 0:  # queued work that ended before the read: forgotten
        lanes[lane]["head"] = lane * par[0]["cap"]
        lanes[lane]["tail"] = lane * par[0]["cap"]
    end = start + duration
    lanes[lane]["rd"] = end
    if lanes[lane]["until"] < end:
        lanes[lane]["until"] = end
    lanes[lane]["busy"] += duration
    lanes[lane]["count"] += 1
    _record(par, rec, lane, start, end)
    if dies:  # this read opens the chip's next batch
        lanes[lane]["bstart"] = start
        lanes[lane]["bmask"] = dies
        lanes[lane]["bend"] = end
    return end


@njit_noref
def plane_read(state: DieState, lane: int, earliest: int, t_r: int, share: int, dies: int,
               arrive: int) -> int:
    """A one-page read of ``t_r`` on lane ``lane``; when its data is in the page register.
    With independent plane reads (``share`` = planes > 1; NAND that reads each plane
    with its own word-line and sense circuits) a die overlaps ``share`` such reads: the
    read holds the lane for ``t_r / share`` and its data is ready ``t_r`` after it
    starts (a die as a pipeline of ``share`` reads; two reads of one plane overlap too,
    which random reads over many planes rarely ask for)."""
    if share <= 1:
        return die_read(state, lane, earliest, t_r, dies, arrive)
    hold = t_r // share
    return die_read(state, lane, earliest, hold, dies, arrive) - hold + t_r


@njit_noref
def _read_queued(state: DieState, lane: int, earliest: int, duration: int) -> int:
    """A read of ``duration`` from ``earliest`` on lane ``lane``, whose queue has work
    left to run after ``earliest``: it queues ahead of it, or suspends it; its end."""
    lanes, ops, par, rec = state
    head = lanes[lane]["head"]
    tail = lanes[lane]["tail"]
    head_start = ops[head]["st"]
    head_end = ops[head]["en"]
    while head_end <= earliest:  # ended before the read: forgotten, and the next is the head
        head += 1
        head_start, head_end = _now_slot(ops, head - 1, head)
        ops[head]["st"] = head_start
        ops[head]["en"] = head_end
    latency = 0
    kind = ops[head]["kind"]
    if earliest < head_start:
        start = earliest  # ahead of every waiting program and erase
    else:
        suspend = _suspend_latency(par, kind, head_end - earliest)
        if suspend >= 0:
            latency = suspend
            if kind == ERASE:
                lanes[lane]["sus_e"] += 1
            else:
                lanes[lane]["sus_p"] += 1
            if rec.shape[0]:  # the part done before the suspend, then the rest
                rec[ops[head]["span"]]["start"] = head_start
                rec[ops[head]["span"]]["end"] = earliest
                ops[head]["span"] = _record(par, rec, lane, earliest, head_end)
            ops[head]["st"] = earliest  # the rest runs after the read
            start = earliest + latency
        else:
            start = head_end  # after the running one
            head += 1
    end = start + duration
    lanes[lane]["rd"] = end
    if head < tail:
        # the head starts after the read (the next op's start is at least the end of
        # the one that ran, which the read follows); the ops behind follow it
        old_start = ops[head]["st"]
        if end > old_start:
            ops[head]["st"] = end
            ops[head]["en"] += end - old_start
            if rec.shape[0]:
                rec[ops[head]["span"]]["start"] = end
                rec[ops[head]["span"]]["end"] = ops[head]["en"]
        last = _now_slot(ops, head, tail - 1)[1]
        lanes[lane]["until"] = last if last > end else end
        lanes[lane]["head"] = head
        if rec.shape[0]:  # every queued op where it now runs, for timelines
            for slot in range(head + 1, tail):
                slot_start, slot_end = _now_slot(ops, head, slot)
                if slot_start != ops[slot]["st"]:
                    ops[slot]["st"] = slot_start
                    ops[slot]["en"] = slot_end
                    rec[ops[slot]["span"]]["start"] = slot_start
                    rec[ops[slot]["span"]]["end"] = slot_end
    else:
        if lanes[lane]["until"] < end:
            lanes[lane]["until"] = end
        lanes[lane]["head"] = lane * par[0]["cap"]
        lanes[lane]["tail"] = lane * par[0]["cap"]
    lanes[lane]["busy"] += duration + latency
    lanes[lane]["count"] += 1
    _record(par, rec, lane, start - latency, end)
    return end


#: queued ops a lane keeps whatever their end (``die_prune``), so that what a program's
#: join reads (the last four, ``die_prog``) and whether a read finds a queue at all
#: (``die_read``) stay as they were
PRUNE_KEEP = 8


@njit_noref
def die_prune(state: DieState, lo: int, hi: int, before: int) -> None:
    """Forget the queued ops of lanes ``lo`` to ``hi`` that ended by ``before``, oldest
    first, keeping the last ``PRUNE_KEEP``: the head moves on an op at a time as a
    read's does (``_read_queued``), the next op becoming the head at its true times, so
    every op behind it keeps its times (module docstring: an op's start is the latest
    of its stored start and the head's end plus the durations queued between them).
    Like the channels' ``gap_prune``, for a time no later booking comes before."""
    lanes, ops, _, _ = state
    for lane in range(lo, hi):
        head = lanes[lane]["head"]
        tail = lanes[lane]["tail"]
        if tail - head <= PRUNE_KEEP or ops[head]["en"] > before:
            continue
        while tail - head > PRUNE_KEEP and ops[head]["en"] <= before:
            start, end = _now_slot(ops, head, head + 1)
            head += 1
            ops[head]["st"] = start
            ops[head]["en"] = end
        lanes[lane]["head"] = head


@njit_noref
def lane_full(state: DieState, lane: int) -> bool:
    """Whether lane ``lane``'s row has no free slot at its tail (``DieLanes.make_room``)."""
    return bool(state[0][lane]["tail"] == (lane + 1) * state[2][0]["cap"])


@njit_noref
def die_hold(state: DieState, lane: int, until: int) -> None:
    """Lane ``lane`` starts nothing before ``until`` (its cache register is still full)."""
    lanes = state[0]
    if lanes[lane]["rd"] < until:
        lanes[lane]["rd"] = until
    if lanes[lane]["until"] < until:
        lanes[lane]["until"] = until


@njit_noref
def die_work(state: DieState, lane: int, earliest: int, duration: int, kind: int, planes: int,
             page: int) -> int:
    """Queue an op of ``kind`` and ``duration`` on lane ``lane`` no earlier than ``earliest``; its
    end. The lane's row must have a free slot at its tail (``DieLanes.make_room``)."""
    lanes, ops, par, rec = state
    free_at = lanes[lane]["until"]
    start = earliest if earliest > free_at else free_at
    end = start + duration
    tail = lanes[lane]["tail"]
    ops[tail]["qs"] = lanes[lane]["qsum"]
    lanes[lane]["qsum"] += duration
    ops[tail]["st"] = start
    ops[tail]["en"] = end
    ops[tail]["kind"] = kind
    ops[tail]["mask"] = planes
    ops[tail]["page"] = page
    ops[tail]["span"] = _record(par, rec, lane, start, end)
    lanes[lane]["busy"] += duration
    lanes[lane]["count"] += 1
    lanes[lane]["tail"] = tail + 1
    lanes[lane]["until"] = end
    return end


@njit_noref
def _top(value: int) -> int:
    """``value.bit_length() - 1`` of positive ``value``."""
    bit = -1
    while value:
        value >>= 1
        bit += 1
    return bit


@njit_noref
def die_prog(state: DieState, lane: int, ready: int, duration: int, planes: int, page: int) -> int:
    """A program of ``duration`` of plane mask ``planes`` (0: no multi-plane forming) at page
    offset ``page`` on lane ``lane``, its data in at ``ready``: its end, or the end of the
    waiting program the page joined (module docstring), counted in the lane's ``merged``.
    The lane's row must have a free slot at its tail (``DieLanes.make_room``)."""
    lanes, ops, par, _ = state
    tail = lanes[lane]["tail"]
    head = lanes[lane]["head"]
    # the page may join a program only if the newest queued op is one still waiting
    if (planes and tail != head and ops[tail - 1]["kind"] == PROG
            and ready <= _now_slot(ops, head, tail - 1)[0]):
        planes_per_die = par[0]["planes"]
        die = _top(planes) // planes_per_die
        slot = tail - 1
        stop = max(slot - 4, head - 1)  # among the last four commands of the lane
        while slot > stop:
            start, end = _now_slot(ops, head, slot)
            if start < ready or ops[slot]["kind"] != PROG:
                break
            other_mask = ops[slot]["mask"]
            if other_mask and _top(other_mask) // planes_per_die == die:
                if other_mask & planes:
                    break
                if ops[slot]["page"] == page:
                    ops[slot]["mask"] = other_mask | planes
                    lanes[lane]["merged"] += 1
                    return int(end)
                # an older waiting program may be at this offset
            slot -= 1
    return die_work(state, lane, ready, duration, PROG, planes, page)


# -- the lanes ------------------------------------------------------------------------
class DieLanes:
    """``n_lanes`` die lanes (module docstring), their state in arrays (``state``): each
    booking is one call of a kernel (a chunk's are booked by the chunk kernels,
    ``flash.engine.chunks``, on the same state). Growing a lane's row of queued ops
    and the recorded spans' buffer is done here, before the kernels need it."""

    def __init__(self, prefix: str, n_lanes: int, rule: SuspendRule | None = None,
                 record: bool = False, planes_per_die: int = 1) -> None:
        self.prefix = prefix
        self.rule = rule
        #: plane bits per die in a mask (a lane that is a chip has several dies' bits)
        self.planes_per_die = planes_per_die
        lanes = np.zeros(n_lanes, dtype=LANE)
        cap = 16
        lanes["head"] = np.arange(n_lanes, dtype=np.int64) * cap
        lanes["tail"] = lanes["head"]
        lanes["bstart"] = -1
        par = np.zeros(1, dtype=PAR)
        params = par[0]
        params["cap"] = cap
        params["planes"] = planes_per_die
        if rule is not None:
            params["r_any"], params["r_prog"], params["r_erase"] = 1, rule.program, rule.erase
            params["r_tprog"], params["r_terase"] = rule.t_program, rule.t_erase
            params["r_min"] = rule.min_remaining
        rec = np.zeros(1024 if record else 0, dtype=REC)
        self.state: DieState = (lanes, np.zeros(n_lanes * cap, dtype=OP), par, rec)
        self.record = record
        #: slots per lane's row of queued ops (``par``'s, for the Python side)
        self.cap = cap
        # the lanes' fields the Python side reads, as views of int64 (the lane array is
        # never replaced): a field of one record read through numpy costs ~0.3 us
        self._rd, self._until, self._tail, self._merged = (
            lanes["rd"], lanes["until"], lanes["tail"], lanes["merged"])

    def __len__(self) -> int:
        return int(self.state[0].shape[0])

    # -- room ----------------------------------------------------------------------------
    def make_room(self, lanes: I64) -> None:
        """A free slot at the tail of each of ``lanes`` that has none: their rows
        compacted (with every other lane used up past three quarters of its row), and
        every row doubled if one of them queues more than three quarters of a row, so
        that a lane stops for room at most once per quarter row of ops; the lanes'
        bookings are unchanged."""
        lanes = np.asarray(lanes, dtype=np.int64)
        lane_state, ops, par, rec = self.state
        cap = int(par[0]["cap"])
        head, tail = lane_state["head"], lane_state["tail"]
        full = tail[lanes] >= (lanes + 1) * cap
        if not full.any():
            return
        # the slots moved as rows of int64 (a copy of records goes field by field)
        raw = ops.view(np.int64).reshape(-1, OP.itemsize // 8)
        # with them every lane whose row is used up past three quarters at its tail: a
        # striped write fills the lanes alike, and one stop then serves them all
        # (compacting only the full lanes, a BERT-large trial stopped 2,667 times, 0.26 s
        # of its 10 s; now 336 times)
        first = np.arange(len(self), dtype=np.int64) * cap
        crowded = np.flatnonzero((tail - first > cap - cap // 4) & (head > first))
        stopped = lanes[full]
        for lane in np.union1d(stopped, crowded).tolist():
            head_slot, tail_slot = head.item(lane), tail.item(lane)
            if head_slot > lane * cap:
                raw[lane * cap:lane * cap + tail_slot - head_slot] = raw[head_slot:tail_slot]
                head[lane], tail[lane] = lane * cap, lane * cap + tail_slot - head_slot
        # (doubling only a row still full, a queue that stays near the row's size
        # stopped every few ops)
        if (tail[stopped] - head[stopped] > cap - cap // 4).any():
            n_lanes = len(self)
            grown = np.zeros((n_lanes, 2 * cap, raw.shape[1]), dtype=np.int64)
            grown[:, :cap] = raw.reshape(n_lanes, cap, raw.shape[1])
            base = np.arange(n_lanes, dtype=np.int64) * cap
            head += base
            tail += base
            par[0]["cap"] = self.cap = 2 * cap
            self.state = (lane_state, grown.reshape(-1).view(OP), par, rec)

    def prune(self, before: int, lo: int, hi: int) -> None:
        """Forget the ops of lanes ``lo`` to ``hi`` queued to end by ``before``
        (``die_prune``): a lane's row then holds its queue, not every op since its last
        read (a sequential write of 100,000 requests queued 3.2 M slots, and the rows
        were copied as they doubled)."""
        die_prune(self.state, lo, hi, before)

    def _room1(self, lane: int) -> None:
        if self._tail.item(lane) == (lane + 1) * self.cap:
            self.make_room(np.array([lane], dtype=np.int64))

    def reserve_records(self, more: int) -> None:
        """Room in the recorded spans for ``more`` more (when recording): a kernel that
        books on the lanes appends to them without growing them."""
        lane_state, ops, par, rec = self.state
        if self.record and par[0]["nrec"] + more > rec.shape[0]:
            grown = np.zeros(2 * rec.shape[0] + more, dtype=REC)
            grown[:rec.shape[0]] = rec
            self.state = (lane_state, ops, par, grown)

    # -- bookings ------------------------------------------------------------------------
    def read1(self, lane: int, earliest: int, duration: int, dies: int = 0,
              arrive: int = -1, share: int = 1) -> int:
        """``plane_read`` on lane ``lane`` (``die_read`` when ``share`` is 1); its end."""
        if self.record:
            self.reserve_records(2)
        return int(plane_read(self.state, lane, earliest, duration, share, dies, arrive))

    def hold1(self, lane: int, until: int) -> None:
        """Lane ``lane`` starts nothing before ``until`` (its cache register is still full)."""
        die_hold(self.state, lane, until)

    def read_free(self, lane: int) -> int:
        """When lane ``lane`` can start a new read (its last read and its cache register)."""
        return int(self._rd.item(lane))

    def prog1(self, lane: int, ready: int, duration: int, planes: int = 0,
              page: int = -1) -> int:
        """``die_prog`` on lane ``lane``; its end."""
        self._room1(lane)
        if self.record:
            self.reserve_records(1)
        return int(die_prog(self.state, lane, ready, duration, planes, page))

    def work1(self, lane: int, earliest: int, duration: int, erase: bool = False) -> int:
        """Book garbage-collection work on lane ``lane``: a relocation, or an erase."""
        self._room1(lane)
        if self.record:
            self.reserve_records(1)
        return int(die_work(self.state, lane, earliest, duration, ERASE if erase else GC,
                            0, -1))

    # -- figures -------------------------------------------------------------------------
    def start_time(self, lane: int, earliest: int) -> int:
        free_at = int(self._until.item(lane))
        return earliest if earliest > free_at else free_at

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

    def merged_on(self, lane: int) -> int:
        """Pages that joined a waiting program on lane ``lane``."""
        return int(self._merged.item(lane))

    @property
    def suspends(self) -> dict[str, int]:
        """Reads' suspends of programs and of erases, on every lane."""
        lanes = self.state[0]
        return {"program": int(lanes["sus_p"].sum()), "erase": int(lanes["sus_e"].sum())}

    def counts(self, lo: int, hi: int) -> tuple[dict[str, int], int]:
        """Reads' suspends of programs and erases, and pages that joined a waiting
        program, on lanes ``lo`` to ``hi`` (one device's, of lanes spanning several)."""
        lanes = self.state[0]
        part = lanes[lo:hi]
        return ({"program": int(part["sus_p"].sum()), "erase": int(part["sus_e"].sum())},
                int(part["merged"].sum()))

    @property
    def spans(self) -> list[list[tuple[int, int]]] | None:
        """(start, end) of every booking per lane, in booking order, when recording."""
        if not self.record:
            return None
        _, _, par, rec = self.state
        out: list[list[tuple[int, int]]] = [[] for _ in range(len(self))]
        for lane, start, end in rec[:par[0]["nrec"]].tolist():
            out[lane].append((start, end))
        return out

    def busy_after(self, lane: int, t: int) -> int:
        """Time lane ``lane``'s queued work runs after ``t``: programs and erases the
        write buffer handed the die before ``t`` that end after it (the host saw their
        writes complete when the buffer took them)."""
        lanes, ops, _, _ = self.state
        return int(_busy_after(ops, int(lanes[lane]["head"]), int(lanes[lane]["tail"]),
                               t))

    def report(self, lane: int, elapsed: int) -> dict[str, float | int]:
        """Busy time and utilization within ``elapsed`` (work queued to run after it,
        ``busy_after``, is left out, so utilization is at most 1), and operations."""
        lanes = self.state[0]
        busy = int(lanes[lane]["busy"]) - self.busy_after(lane, elapsed)
        return {"busy_ps": busy, "count": int(lanes[lane]["count"]),
                "utilization": round(busy / elapsed, 9) if elapsed > 0 else 0.0}
