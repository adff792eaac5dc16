"""The detailed DRAM model: one command-level controller per unit (pseudo-channel).

The controllers' rules (FR-FCFS scheduling, write drain, page policy, refresh, the
JEDEC timing constraints) and the split of a transfer into bursts are the compiled
command scheduler's, ``dram/scheduler.py``; this module holds the model around it: the
state of every unit in numpy arrays (grown as requests come), a view of each unit
(``UnitController``), the random lines of random transfers, and the figures.

The controller steps from command to command (no per-cycle loop) and runs its own event
loop, outside SimPy: ``DetailedModel.serve`` (what ``DramTarget(model="detailed")
.transport`` calls) enqueues a transfer's bursts and runs the units it touches until
those bursts complete; ``submit`` (or ``submit_many``, a batch at once) + ``run`` serve
a batch (the bench). A transfer that arrives before a unit's current time is served
from that time. Every command can be logged for ``dram/checker.py`` (a unit's ``log``:
a list to append to, or None).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

import dram.scheduler as sched
from dram.config import DramConfig
from dram.mapping import RANDOM_ACCESS_BYTES, AddressMap
from dram.timing import Cmd, Command, ref_phase, rules
from tmhw.sim.transfer import Pattern

I64 = npt.NDArray[np.int64]
#: Commands the scheduler logs before the model moves them into the units' logs.
LOG_CAPACITY = 4096
#: Initial room for bursts pending per unit, and for requests; both grow as needed.
PENDING_CAPACITY = 1024
REQUEST_CAPACITY = 1024


class Burst:
    """One column access of one request, pending at its unit."""

    __slots__ = ("req", "write", "bank", "row", "arrival", "seq")

    def __init__(self, req: int, write: bool, bank: int, row: int, arrival: int,
                 seq: int) -> None:
        self.req = req
        self.write = write
        self.bank = bank
        self.row = row
        self.arrival = arrival
        self.seq = seq


class UnitController:
    """Command scheduler of one unit: a view of its part of the model's state. Times
    in ps."""

    def __init__(self, model: DetailedModel, unit: int, log: bool = False) -> None:
        self.model = model
        self.cfg = model.cfg
        self.unit = unit
        self._log: list[Command] | None = None
        self.log = [] if log else None

    @property
    def log(self) -> list[Command] | None:
        """The commands this unit issued, in order, when logging (else None)."""
        return self._log

    @log.setter
    def log(self, value: list[Command] | None) -> None:
        self._log = value
        self.model._logging[self.unit] = value is not None

    # -- state ---------------------------------------------------------------------------
    def _ctrl(self, name: str) -> int:
        return int(self.model._ctrl[self.unit][name])

    @property
    def t(self) -> int:
        """The unit's time: its latest command or wake-up, ps."""
        return self._ctrl("t")

    @property
    def first_use(self) -> int | None:
        """Its first command's time (None before)."""
        t = self._ctrl("first_use")
        return None if t < 0 else t

    @property
    def pending(self) -> list[Burst]:
        """The bursts not yet admitted to a queue, in arrival order."""
        p = self.model._pending[self.unit, self._ctrl("head"):self._ctrl("tail")]
        return [Burst(int(x[sched.P_REQ]), bool(x[sched.P_WRITE]), int(x[sched.P_BANK]),
                      int(x[sched.P_ROW]), int(x[sched.P_ARRIVAL]), int(x[sched.P_SEQ]))
                for x in p]

    @property
    def open_row(self) -> list[int]:
        """Open row of each bank (rank-major), -1 precharged."""
        out: list[int] = self.model._banks[self.unit, :, sched.OPEN_ROW].tolist()
        return out

    @property
    def counts(self) -> list[int]:
        """Commands issued, by kind (``Cmd``)."""
        out: list[int] = self.model._counts[self.unit].tolist()
        return out

    @property
    def bursts_read(self) -> int:
        return self._ctrl("bursts_read")

    @property
    def bursts_written(self) -> int:
        return self._ctrl("bursts_written")

    @property
    def row_hits(self) -> int:
        """Column accesses that found their row open (not opened for them)."""
        return self._ctrl("row_hits")

    def busy(self) -> bool:
        """Whether bursts are pending or queued."""
        return self._ctrl("head") < self._ctrl("tail") or self._ctrl("n_rq") > 0 \
            or self._ctrl("n_wq") > 0

    # -- scheduling ----------------------------------------------------------------------
    def step(self) -> bool:
        """Issue the next command, or advance time to the next arrival or refresh.
        Returns False when there is nothing to do."""
        return self.model._run(self.unit, self.unit + 1, sched.NO_STOP, 1) == sched.STEPS

    def run_until_done(self, req: int) -> None:
        """Serve until request ``req``'s bursts on this unit have issued."""
        if self.model._run(self.unit, self.unit + 1, req) == sched.STUCK:
            raise RuntimeError(f"unit {self.unit}: request {req} stuck")

    def run(self) -> None:
        """Serve every burst pending or queued."""
        if self.model._run(self.unit, self.unit + 1, sched.UNTIL_IDLE) == sched.STUCK:
            raise RuntimeError(f"unit {self.unit}: queued bursts but nothing to issue")

    # -- figures -------------------------------------------------------------------------
    def active_ps(self, now: int) -> int:
        """Time (summed over ranks) with at least one bank open, up to ``now``."""
        a = self._ctrl("active_total")
        for r in range(self.cfg.ranks):
            n_open, since = self.model._ranks[self.unit, r, [sched.N_OPEN,
                                                             sched.ACTIVE_SINCE]]
            if n_open > 0 and now > since:
                a += now - int(since)
        return a

    def refreshes(self, now: int) -> int:
        """Refresh commands issued, plus those due while idle up to ``now``."""
        c = self.cfg
        counts = self.model._counts[self.unit]
        if c.refresh == "all-bank":
            due: list[int] = self.model._ranks[self.unit, :, sched.REF_DUE].tolist()
            extra = sum(max(0, (now - d) // c.t_refi + 1) for d in due if d <= now)
            return int(counts[sched.REF]) + extra
        if c.refresh == "per-bank":
            d = self._ctrl("ref_due_pb")
            period = c.t_refi // (c.ranks * c.banks)
            extra = (now - d) // period + 1 if d <= now else 0
            return int(counts[sched.REFPB]) + extra
        return 0


class DetailedModel:
    """All units of one ``DramConfig`` and the requests in flight. Times in ps."""

    def __init__(self, cfg: DramConfig, log: bool = False, seed: int = 1) -> None:
        self.cfg = cfg
        self.amap = AddressMap(cfg)
        self.rules = rules(cfg)
        self.rng = np.random.default_rng(seed)
        units, ranks, nb = cfg.units, cfg.ranks, cfg.ranks * cfg.banks
        self._ctrl = np.zeros(units, sched.CTRL)
        self._ctrl["ref_target"] = -1
        self._ctrl["first_use"] = -1
        self._ctrl["ref_due_pb"] = [ref_phase(cfg, u) for u in range(units)]
        self._par = sched.build_par(cfg, self.amap)
        self._par[0]["log_cap"] = LOG_CAPACITY
        self._banks = np.zeros((units, nb, sched.BANK_FIELDS), dtype=np.int64)
        self._banks[:, :, [sched.OPEN_ROW, sched.LAST_CAS, sched.ACT_SEQ]] = -1
        self._ranks = np.zeros((units, ranks, sched.RANK_FIELDS), dtype=np.int64)
        self._ranks[:, :, sched.REF_DUE] = [[ref_phase(cfg, u, r) for r in range(ranks)]
                                            for u in range(units)]
        self._faw = np.zeros((units, ranks, 4), dtype=np.int64)
        nk = sched.NK
        self._next_bank = np.zeros((units, nb, nk), dtype=np.int64)
        self._next_group = np.zeros((units, ranks * cfg.bank_groups, nk), dtype=np.int64)
        self._next_rank = np.zeros((units, ranks, nk), dtype=np.int64)
        self._next_unit = np.zeros((units, nk), dtype=np.int64)
        self._counts = np.zeros((units, nk), dtype=np.int64)
        self._qlen = np.zeros((units, 2, nb), dtype=np.int64)
        self._queue = np.zeros((units, 2, nb, max(cfg.read_queue, cfg.write_queue),
                                sched.QUEUED_FIELDS), dtype=np.int64)
        self._pending = np.zeros((units, PENDING_CAPACITY, sched.PENDING_FIELDS),
                                 dtype=np.int64)
        self._requests = np.zeros((REQUEST_CAPACITY, sched.REQUEST_FIELDS), dtype=np.int64)
        self._done = np.zeros(REQUEST_CAPACITY, dtype=np.int64)
        self._effects, self._n_effects = sched.build_effects(self.rules)
        self._logging = np.zeros(units, dtype=np.int64)
        self._log = np.zeros((LOG_CAPACITY, sched.LOGGED_FIELDS), dtype=np.int64)
        self._need = np.zeros(units, dtype=np.int64)
        self._no_lines = np.zeros(0, dtype=np.int64)
        self._state: sched.State = ()
        self._pack()
        self.ctrls = [UnitController(self, u, log) for u in range(units)]

    def _pack(self) -> None:
        """The scheduler's state tuple, rebuilt when an array is reallocated."""
        self._state = (self._ctrl, self._par, self._banks, self._ranks, self._faw,
                       self._next_bank, self._next_group, self._next_rank, self._next_unit,
                       self._counts, self._qlen, self._queue, self._pending,
                       self._requests, self._done, self._effects, self._n_effects,
                       self._logging, self._log)

    # -- the scheduler -------------------------------------------------------------------
    def _run(self, first: int, last: int, stop: int, max_steps: int = -1) -> int:
        """``scheduler.run`` over units ``first`` to ``last - 1``, the commands it logs
        moved into the units' logs as it goes; DONE, STUCK or STEPS."""
        par = self._par[0]
        while True:
            status = int(sched.run(self._state, first, last, stop, max_steps))
            if par["n_log"]:
                self._drain_log(int(par["stop_unit"]))
            if status != sched.LOG_FULL:
                return status
            first = int(par["stop_unit"])

    def _drain_log(self, unit: int) -> None:
        par = self._par[0]
        n = int(par["n_log"])
        log = self.ctrls[unit].log
        if log is not None:
            c = self.cfg
            for t, kind, bank, row in self._log[:n].tolist():
                rank = bank // c.banks
                log.append(Command(t, Cmd(kind), rank, (bank // c.banks_per_group)
                                   % c.bank_groups, bank, row))
        par["n_log"] = 0

    # -- requests ------------------------------------------------------------------------
    def _reserve_requests(self, n: int) -> None:
        need = self._next_req + n
        cap = len(self._requests)
        if need <= cap:
            return
        cap = max(2 * cap, need)
        requests = np.zeros((cap, sched.REQUEST_FIELDS), dtype=np.int64)
        requests[:len(self._requests)] = self._requests
        done = np.zeros(cap, dtype=np.int64)
        done[:len(self._done)] = self._done
        self._requests, self._done = requests, done
        self._pack()

    def _reserve_pending(self, per_unit: I64) -> None:
        """Room at each unit's tail of the pending FIFO for ``per_unit`` more bursts:
        the consumed head dropped, then the FIFO enlarged if still short."""
        ctrl = self._ctrl
        cap = self._pending.shape[1]
        if int((ctrl["tail"] + per_unit).max()) <= cap:
            return
        heads = ctrl["head"].tolist()
        tails = ctrl["tail"].tolist()
        live = [t - h for h, t in zip(heads, tails, strict=True)]
        need = max(n + k for n, k in zip(live, per_unit.tolist(), strict=True))
        if need > cap:
            pending = np.zeros((len(ctrl), max(2 * cap, need), sched.PENDING_FIELDS),
                               dtype=np.int64)
        else:
            pending = self._pending
        for u, (h, n) in enumerate(zip(heads, live, strict=True)):
            pending[u, :n] = self._pending[u, h:h + n]
        ctrl["head"] = 0
        ctrl["tail"] = live
        if pending is not self._pending:
            self._pending = pending
            self._pack()

    def submit_many(self, writes: Sequence[bool] | npt.NDArray[np.bool_],
                    addresses: Sequence[int] | I64, nbytes: Sequence[int] | I64,
                    streams: Sequence[bool] | npt.NDArray[np.bool_],
                    arrivals: Sequence[int] | I64) -> int:
        """Queue transfers (``streams``: consecutive bursts, else random 64 B accesses
        of a random bank, row and column) arriving at ``arrivals``, as ``submit`` one
        after another would; returns the first one's request id (the others follow in
        order)."""
        write = np.ascontiguousarray(writes, dtype=np.bool_)
        address = np.ascontiguousarray(addresses, dtype=np.int64)
        size = np.ascontiguousarray(nbytes, dtype=np.int64)
        stream = np.ascontiguousarray(streams, dtype=np.bool_)
        arrival = np.ascontiguousarray(arrivals, dtype=np.int64)
        rid = self._next_req
        random_sizes = size[~stream]
        n_lines = int(np.maximum(0, -(-random_sizes // RANDOM_ACCESS_BYTES)).sum()) \
            if random_sizes.size else 0
        # One draw for the batch takes the same numbers as a draw per transfer: the bit
        # generator hands out its stream in order, whatever the sizes asked for.
        lines = (self.rng.integers(0, self.amap.capacity // RANDOM_ACCESS_BYTES,
                                   size=n_lines) if n_lines else self._no_lines)
        self._reserve_requests(len(address))
        while sched.enqueue(self._state, write, address, size, stream, arrival, lines,
                            self._need) < 0:
            self._reserve_pending(self._need)
        return rid

    def submit(self, write: bool, address: int, nbytes: int, pattern: Pattern,
               arrival: int) -> int:
        """Queue a transfer arriving at ``arrival``; returns its request id."""
        return self.submit_many([write], [address], [nbytes], [pattern is Pattern.STREAM],
                                [arrival])

    def run(self) -> None:
        """Serve everything submitted."""
        for c in self.ctrls:
            c.run()

    def serve(self, write: bool, address: int, nbytes: int, pattern: Pattern,
              earliest: int) -> int:
        """Serve one transfer now; return its completion time (end of its last data)."""
        if nbytes <= 0:
            return earliest
        rid = self.submit(write, address, nbytes, pattern, earliest + self.cfg.controller_delay)
        if self._run(0, self.cfg.units, rid) == sched.STUCK:
            raise RuntimeError(f"unit {int(self._par[0]['stop_unit'])}: request {rid} stuck")
        return int(self._requests[rid, sched.R_END])

    # -- figures -------------------------------------------------------------------------
    @property
    def _next_req(self) -> int:
        return int(self._par[0]["next_req"])

    @property
    def bytes_read(self) -> int:
        return int(self._par[0]["bytes_read"])

    @property
    def bytes_written(self) -> int:
        return int(self._par[0]["bytes_written"])

    def request_times(self) -> tuple[I64, I64, I64]:
        """The completed requests in completion order: ids, starts (admission of their
        first burst to a queue) and ends (their last data), ps."""
        ids = self._done[:int(self._par[0]["n_done"])].copy()
        req = self._requests[ids]
        return ids, req[:, sched.R_START], req[:, sched.R_END]

    @property
    def completed(self) -> list[tuple[int, int, int]]:
        """(id, start, end) of each completed request, in completion order."""
        ids, starts, ends = self.request_times()
        return list(zip(ids.tolist(), starts.tolist(), ends.tolist(), strict=True))

    @property
    def req_arrival(self) -> I64:
        """Each submitted request's arrival, by id, ps."""
        arrivals: I64 = self._requests[:self._next_req, sched.R_ARRIVAL]
        return arrivals

    @property
    def last_end(self) -> int:
        """The latest completion, ps."""
        return int(self._par[0]["last_end"])

    @property
    def bursts_read(self) -> int:
        return int(self._ctrl["bursts_read"].sum())

    @property
    def bursts_written(self) -> int:
        return int(self._ctrl["bursts_written"].sum())

    @property
    def acts(self) -> int:
        return int(self._counts[:, sched.ACT].sum())

    @property
    def row_hits(self) -> int:
        """Column accesses that found their row open (not opened for them)."""
        return int(self._ctrl["row_hits"].sum())

    @property
    def data_ps(self) -> list[int]:
        t_burst = self.cfg.t_burst
        return [(int(r) + int(w)) * t_burst for r, w in
                zip(self._ctrl["bursts_read"], self._ctrl["bursts_written"], strict=True)]

    def refreshes(self, now: int) -> int:
        return sum(c.refreshes(now) for c in self.ctrls)

    def active_ps(self, now: int) -> list[int]:
        return [c.active_ps(now) for c in self.ctrls]

    def logs(self) -> list[list[Command]]:
        return [c.log or [] for c in self.ctrls]


def compile_kernels() -> None:
    """Compile the scheduler's kernels into numba's on-disk cache (``run`` and
    ``enqueue`` compile with every kernel they call), by a few transfers on an HBM2
    stack, one unit logging (``tmhw.system.compile_kernels`` runs this)."""
    from dram.config import PRESETS

    m = DetailedModel(PRESETS["hbm2"])
    m.ctrls[0].log = []
    for i, pattern in enumerate((Pattern.STREAM, Pattern.STREAM, Pattern.RANDOM)):
        m.serve(i == 1, i << 12, 4096, pattern, 0)
