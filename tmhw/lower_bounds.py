"""The lower bounds a run is measured against, for one system (``System.bounds``),
from a record of what they depend on (``BoundsInput``), not from the system itself.

- **Traffic**: the fewest inter-tier bytes of a steady-state iteration at this HBM
  capacity (``tmhw.placement.bounds.traffic_bound``, the plain optimum, whatever
  tie-break a planner used, so the bound never depends on which policy asked first),
  with every tensor movable, the mini-batch included: a policy may write it back and
  fetch it again to make room (AutoTM does on ResNet-50 b32 at 12.5%, and moves 1.3%
  less than a bound that kept it resident).
- **Time**: the largest of
  - the NPU's iteration with every operand in HBM and nothing else using HBM (the
    ``hbm-only`` time, simulated op by op on the NPU and HBM models: no policy runs an
    op faster);
  - the link's time for the minimum traffic (full duplex);
  - the flash devices' own time for those bytes: the writes as one ideally ordered
    batch, drained (``flash.batch``: in a steady state each iteration's writes are
    programmed within an iteration on average; the write buffer only moves programs in
    time), less the slowest page program (the batch's last may run on into the next
    iteration while other dies take its writes), and the reads over the SSDs' links.
    A read need not reach the NAND (the write buffer may still hold the page: on one
    channel, TM-Training serves 149 MB of its 1.8 GB of reads per iteration so), so
    the NAND is not charged for reads;
  - the dies' time for the least NAND work (``die_ps``, ``flash.work.die_work_ps``): the
    fewest pages any policy reads from the NAND arrays, with the SSDs' write buffers and
    read caches counted as extra fast capacity (at most what they hold at once is
    served from DRAM), plus the fewest it programs (every write-back is programmed),
    each an LP over the gaps (``tmhw.placement.nand_bound``); a die reads or programs,
    so the two add up, at the fastest tR and tPROG over every plane of every die (in
    a steady state that was found, ``run.warmup_iterations = "auto"``, an SLC cache's
    programs cost their folding too: ``flash.work``). A
    read that meets a program either suspends it (its latency on top) or waits, so
    interference only adds to this; a schedule that alternates reads and programs on
    each die avoids it, so the bound does not charge it;
  - the phase bound (``tmhw.placement.bounds.phase_bound_ps``): write-backs forced
    before an op and fetches forced after it cannot overlap, each at the slower of the
    NPU's port and the SSDs' links, and the write-backs before the op programmed too
    but for what the write buffers hold at that instant.

A run starts its bounds before it simulates and takes them after (``start_bounds``):
the NPU-alone passes, one compiled call each on the fast HBM model (which lets go of
Python's lock while it books), run on a thread of their own meanwhile, on a machine of
their own, so they give what they give on the caller's thread (a run of BERT-large,
s512 b32: 0.37 s of its 1.5 s off the run's path, on a second core), and so do the
NAND LPs (``nand_later``). Both threads give way to the run's (``_yielding``).
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from dram import DramTarget
from npu import NPU
from tmhw.sim import jit
from tmhw.sim.component import Component
from tmhw.sim.env import Environment
from tmhw.sim.memo import memoised
from tmhw.sim.units import S

if TYPE_CHECKING:
    from npu import ComputeTask
    from tmhw.config import SystemConfig
    from tmhw.placement.base import PlanContext
    from tmhw.placement.gaps import GapPlan
    from tmhw.workload.graph import Workload

T = TypeVar("T")
#: the parts of the bounds already computed in this process, by what each depends on
#: (``System.memo_key``); at most ``MEMO_SIZE`` of them, the oldest dropped first
MEMO: dict[tuple[str, str], Any] = {}
MEMO_SIZE = 64
#: warm passes of the NPU-alone run (``npu_alone_ps``), the shortest counting
WARM_PASSES = 8
#: an LP optimum within this of a whole page counts as that page (solver round-off)
_TOL = 1e-6
#: the bounds' threads' niceness (``_yielding``)
BOUNDS_NICE = 19
#: ``solved_parts`` started ahead (``solve_ahead``), by their key, until waited for
_SOLVING: dict[str, threading.Thread] = {}
_SOLVING_LOCK = threading.Lock()
#: held while ``MEMO`` changes (``_memo``)
_MEMO_LOCK = threading.Lock()


def _memo(kind: str, key: str | None, fn: Callable[[], T]) -> T:
    """``fn()``, memoised in ``MEMO`` by ``(kind, key)`` (None: not memoised), the
    oldest entry dropped when it is full. The bounds' threads share it (and a thread may
    still solve while a sweep's next point starts), so it changes under a lock."""
    if key is None:
        return fn()
    return memoised(MEMO, _MEMO_LOCK, MEMO_SIZE, (kind, key), fn)


@dataclass(frozen=True)
class BoundsInput:
    """What the bounds of one system depend on."""

    cfg: SystemConfig
    workload: Workload
    ctx: PlanContext
    capacity_pages: int
    #: the policy holds the whole footprint in HBM (no traffic, no phase bound)
    whole_footprint: bool
    footprint_bytes: int
    #: each op's time in the stall-free profile, ps
    op_ps: np.ndarray
    #: the streamed fraction of each tensor, as the plan context has it
    streamed: np.ndarray | None
    #: the ops as NPU tasks at a given HBM capacity in pages
    tasks_at: Callable[[int], Sequence[ComputeTask]]
    #: a key naming the config sections given (``System.memo_key``), or None: not memoised
    memo_key: Callable[..., str | None]


def iteration_bounds(inp: BoundsInput) -> dict[str, Any]:
    """Traffic and time bounds of the system's workload at its capacity (module
    docstring)."""
    return start_bounds(inp, background=False)()


def start_bounds(inp: BoundsInput, background: bool = True) -> Callable[[], dict[str, Any]]:
    """``iteration_bounds`` begun: every part but the NPU-alone passes computed now,
    those on a thread of their own where they are compiled calls (``npu_alone_later``;
    ``background`` False: now too); the function returned waits for them and gives the
    bounds."""
    from flash.work import die_work_ps, program_bytes_per_s, slowest_t_prog
    from tmhw.placement.bounds import phase_bound_ps, time_bound_ps

    cfg = inp.cfg
    fc = cfg.flash
    # first, so that the passes run beside all the rest
    npu_key = inp.memo_key("npu", "hbm", "hbm_model", "capacity")
    if npu_key is not None and ("npu", npu_key) in MEMO:
        known: np.ndarray = MEMO[("npu", npu_key)]
        alone: Callable[[], np.ndarray] = lambda: known  # noqa: E731
    else:
        alone = npu_alone_later(inp, background)
    gp, rd, wr, batch_ps, nand = _solved(inp, background=background)
    _give_back_freed()
    compute = int(inp.op_ps.sum())
    # Every write is programmed (drained), but a read may be served from the write
    # buffer, so only the SSDs' links are sure to carry the reads.
    # The batch's last program may run on into the next iteration (another die takes
    # that one's writes), so one program, the slowest, is not an iteration's to wait.
    flash_ps = max(batch_ps - slowest_t_prog(fc) if wr else 0,
                   math.ceil(rd * S / (fc.devices * fc.host_read_bytes_per_s)))
    # measured in a steady state that was found, an SLC cache folds what it takes
    # (``flash.work``), within the steady state's tolerance
    link_ps = time_bound_ps(0, rd, wr, cfg.link_bytes_per_s, 0)
    port = min(cfg.link_bytes_per_s, fc.devices * fc.host_read_bytes_per_s)

    def finish() -> dict[str, Any]:
        nand_rd, prog = nand()
        die_ps = die_work_ps(fc, nand_rd, prog,
                             cfg.run.steady_tolerance
                             if cfg.run.warmup_iterations == "auto" else None)
        op_alone = _memo("npu", npu_key, alone)
        npu_ps = int(op_alone.sum())
        phase_ps = 0 if gp is None else phase_bound_ps(
            gp, inp.capacity_pages, op_alone, port, port, inp.streamed,
            programs=(program_bytes_per_s(fc), fc.devices * fc.write_buffer_bytes))
        return {"traffic_bytes": rd + wr, "read_bytes": rd, "write_bytes": wr,
                "nand_read_bytes": nand_rd, "program_bytes": prog,
                "iteration_time_ps": max(phase_ps, die_ps, time_bound_ps(
                    npu_ps, rd, wr, cfg.link_bytes_per_s, flash_ps)),
                "npu_ops_ps": compute, "npu_ps": npu_ps, "link_ps": link_ps,
                "flash_ps": flash_ps, "die_ps": die_ps, "phase_ps": phase_ps}
    return finish


def _give_back_freed() -> None:
    """Hand the C heap's freed pages back to the system (glibc's ``malloc_trim``; no
    work elsewhere), once the bounds' solvers and the plan's are done and before the
    run's per-page state fills in. HiGHS's and the batch's freed memory otherwise stays
    in the process's heap under the run's: GPT-2 medium at 1024 layers peaked at
    2.84 GB where it had peaked at 2.53 GB with scipy's LPs, whose allocations happened
    to leave less of it (the same LPs alone peak lower through highspy), and at
    2.62 GB with the heap trimmed here."""
    import ctypes
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def solved_parts(inp: BoundsInput, ahead: bool = False
                 ) -> tuple[GapPlan | None, int, int, int, int, int]:
    """The bounds' parts that are solved rather than simulated, each memoised by what it
    depends on: the gaps, the fewest bytes read and written (the traffic LP), the fewest
    NAND reads and programs (``least_pages``' LPs) and the drained flash batch of
    those writes (``_solved``, the NAND LPs waited for: ``ahead``, on ``solve_ahead``'s
    thread, solved on a thread of their own beside the traffic LP and the batch)."""
    gp, rd, wr, batch_ps, nand = _solved(inp, background=ahead)
    nand_rd, prog = nand()
    return gp, rd, wr, nand_rd, prog, batch_ps


def _solved(inp: BoundsInput, background: bool
            ) -> tuple[GapPlan | None, int, int, int, Callable[[], tuple[int, int]]]:
    """``solved_parts`` begun: the gaps, the traffic LP's bytes read and written and the
    flash batch now, and a function giving the NAND LPs' bytes (NAND reads, programs).
    Waits first for those ``solve_ahead`` started. Where ``background``, the NAND LPs
    are solved on a thread of their own (``nand_later``), beside the rest and what
    follows (HiGHS lets Python's lock go while it solves)."""
    from flash.batch import batch_time_ps
    from tmhw.placement.bounds import traffic_bound
    from tmhw.placement.gaps import GapPlan

    key = inp.memo_key("capacity")
    if key is not None:
        with _SOLVING_LOCK:
            started = _SOLVING.get(key)
        if started is not None and started is not threading.current_thread():
            started.join()  # (the thread leaves ``_SOLVING`` when it ends)
    cfg, wl = inp.cfg, inp.workload
    fc = cfg.flash
    gp = None if inp.whole_footprint else GapPlan(inp.ctx, windowed=True)
    nand = (lambda: (0, 0)) if gp is None else nand_later(inp, gp, key, background)
    if gp is None:
        rd = wr = 0
    else:
        # any policy may evict the mini-batch (AutoTM does, on ResNet-50 b32 at 12.5%);
        # the LP counts pages over the ops' order and takes no time or bandwidth, so a
        # sweep over flash and link solves it once per workload and capacity
        tb = _memo("traffic", key,
                   lambda: traffic_bound(gp, inp.capacity_pages, movable_input=True))
        rd, wr = tb.read_bytes, tb.write_bytes
    fkey = inp.memo_key("flash", "seed")
    batch_ps = _memo("flash", None if fkey is None else f"{fkey} {wr}",
                     lambda: batch_time_ps(fc, 0, wr, seed=cfg.run.seed, drain=True,
                                           precondition=wl.npages * wl.page_size
                                           / fc.total_capacity))
    return gp, rd, wr, batch_ps, nand


def nand_later(inp: BoundsInput, gp: GapPlan, key: str | None, background: bool
               ) -> Callable[[], tuple[int, int]]:
    """A function giving the fewest bytes any policy reads from the NAND arrays (with
    the SSDs' DRAM as extra capacity) and programs, each an LP (``least_pages``),
    memoised by ``key``. Where ``background``, and they are neither memoised nor
    being solved by another thread, they are solved on a thread of their own
    (``tmhw-bounds-nand``) that gives way to the others (``_yielding``) and that the
    function waits for: a run needs them only for its report, so they fill the core
    the run's one thread leaves (GPT-2 medium at 1024 layers: 11 s of HiGHS, which
    slowed the plan and the traffic LP and batch beside them before the run). Another
    thread's such solve is waited for, not repeated; if it failed, the function solves
    them again, where the error is raised."""
    from tmhw.placement.nand_bound import least_pages

    wl, fc = inp.workload, inp.cfg.flash
    # what the SSDs' DRAM holds at once, in the workload's pages
    dram_pages = fc.devices * (fc.write_buffer_bytes + fc.read_cache_bytes) // wl.page_size
    rkey = None if key is None else f"{key} {dram_pages}"

    def nand() -> tuple[int, int]:
        prog = int(_memo("programs", key, lambda: least_pages(
            gp, inp.capacity_pages, "programs")) + _TOL) * wl.page_size
        nand_rd = int(_memo("nand_reads", rkey, lambda: least_pages(
            gp, inp.capacity_pages + dram_pages, "nand_reads")) + _TOL) * wl.page_size
        return nand_rd, prog

    skey = None if key is None else f"nand {key}"
    # what this thread's own solve found (unmemoised where ``key`` is None); another
    # thread's is read from ``MEMO``
    got: list[tuple[int, int]] = []
    with _SOLVING_LOCK:
        running = None if skey is None else _SOLVING.get(skey)
        known = key is not None and ("programs", key) in MEMO \
            and ("nand_reads", rkey) in MEMO
        if running is None and background and not known:
            def solve() -> None:
                try:
                    _yielding()
                    _quietly(lambda: got.append(nand()))
                finally:
                    if skey is not None:
                        with _SOLVING_LOCK:
                            del _SOLVING[skey]

            # not a daemon, as ``solve_ahead``'s
            running = threading.Thread(target=solve, daemon=False, name="tmhw-bounds-nand")
            if skey is not None:
                _SOLVING[skey] = running
            running.start()
    if running is None or running is threading.current_thread():
        return nand
    solving = running

    def wait() -> tuple[int, int]:
        solving.join()
        return got[0] if got else nand()
    return wait


def _yielding() -> None:
    """This thread gives way to the others of the process (Linux: the lowest
    scheduling priority, ``nice`` 19, of this thread alone). Its work is needed only
    for the report, so it takes the core the run's one thread leaves; where other
    processes keep every core busy it gets little of them, and the run waits for it
    at its end instead (at ``nice`` 10, which would give it a tenth of a contended core,
    GPT-2 medium at 1024 layers took 73.5 and 74.0 s against 71.5 and 72.4 s,
    alternated, on an idle machine)."""
    if sys.platform == "linux":
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BOUNDS_NICE)
        except OSError:
            pass


def _quietly(fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)``, its error left for the caller that computes it again."""
    try:
        fn(*args)
    except Exception:  # noqa: BLE001,S110 (solved again where the error is raised)
        pass


def solve_ahead(inp: BoundsInput) -> None:
    """Start ``solved_parts`` on a thread of their own, where they are memoised, so that
    a system's bounds' LPs and flash batch run beside its policy's plan. What runs
    there at once is the compiled work (the batch's kernels) and HiGHS's solves, which
    let go of Python's lock (``tmhw.placement.lp``: an LP of 10.7 s alone took 10.9 s
    on a thread beside a Python loop that ran at full speed); the Python around them
    (the LPs' rows, numpy's calls, the kernels' loads) takes turns with the plan's.
    The traffic LP and the batch end before the run (``start_bounds`` waits for them):
    the batch is the flash model's Python, which beside the run slowed it by about as
    long as it took. The NAND LPs, HiGHS's alone, go on a third thread that gives way
    to the others and runs on beside the run (``nand_later``): GPT-2 medium at 1024
    layers began its run 10 s sooner (22.0 s against 32.5 s) and ended 5-12 s sooner
    (paired runs), where the four threads had shared the two cores before the run.
    ``solved_parts`` waits for them; if they fail, it solves them again on its own
    thread, where the error is raised."""
    key = inp.memo_key("capacity")
    if key is None or inp.whole_footprint:
        return
    with _SOLVING_LOCK:
        if key in _SOLVING or ("traffic", key) in MEMO:
            return
        jit.load()  # (numba's load hides scipy's BLAS from other threads while it runs)
        # not a daemon (nor the NPU-alone passes' thread): the interpreter waits for
        # it at exit, where a daemon still in the solver's or a kernel's native code
        # aborted the process (``terminate called without an active exception``, exit
        # status 134) when a script built a ``System`` to read its plan and exited
        ahead = threading.Thread(target=_solve_quietly, args=(inp, key), daemon=False,
                                 name="tmhw-bounds")
        _SOLVING[key] = ahead
    ahead.start()


def _solve_quietly(inp: BoundsInput, key: str) -> None:
    try:
        _quietly(_solved, inp, True)
    finally:
        # only now: a ``solved_parts`` that comes while these are still solving waits
        # for them instead of solving them again beside them
        with _SOLVING_LOCK:
            del _SOLVING[key]


def npu_alone_ps(inp: BoundsInput) -> np.ndarray:
    """Each op's time on the NPU alone (``npu_alone_later``), on this thread."""
    return npu_alone_later(inp, background=False)()


def npu_alone_later(inp: BoundsInput, background: bool) -> Callable[[], np.ndarray]:
    """A function giving each op's time as ``npu_alone_ps`` has it: the passes run on a
    thread of their own where ``background`` and the HBM books a pass in one compiled
    call (``NPU.books_ops_at_once``), else before this returns.

    Each op's time on the NPU with every operand in HBM and nothing else using HBM,
    the ops' HBM addresses wrapping at the run's capacity as they do in the run (on the
    ``hbm-only`` machine, the footprint), so it depends on the workload, the NPU, the
    HBM and the capacity alone. No policy runs an op faster: a bound from addresses
    wrapped at the model's footprint sat 3 ppm over the ``recompute`` policy, whose ops
    wrap at its smaller capacity (the banks they hit differ).
    The first pass finds the HBM's rows, refresh and banks idle (a cold start), which
    no steady-state iteration does (a bound from it sat a few ppm under every steady
    iteration at HBM ratio 1), so it does not count; of the ``WARM_PASSES`` after it,
    the shortest does: where refresh falls in an iteration shifts from one to the next
    (BERT-base, one layer, s128 b3 alternates 1607.29 and 1607.04 us). Three passes
    were too few: a GPT-2 of width 64, 3 layers, s64 b8 with per-layer recomputation
    ran an iteration in 350.131 ms, under the best of three (350.269); six or more
    find 350.025."""
    cfg = inp.cfg
    env = Environment()
    root = Component(env, "alone")
    hbm = DramTarget(env, "hbm", root, cfg.hbm, model=cfg.run.hbm_model)
    npu = NPU(env, "npu", root, cfg.npu, hbm)
    root.elaborate()
    root.start()
    tasks = inp.tasks_at(inp.capacity_pages)

    def passes() -> np.ndarray:
        # a cold pass, then the warm ones; each op starts as the one before ends (what
        # ``NPU.execute`` would wait for, booked without its event): in one compiled
        # call on the fast HBM model, else op by op
        out = npu.back_to_back(tasks, WARM_PASSES + 1)
        if out is None:
            out = np.zeros((WARM_PASSES + 1, len(tasks)), dtype=np.int64)
            now = 0
            for k in range(WARM_PASSES + 1):
                for i, t in enumerate(tasks):
                    end = npu.book(t, now).end
                    out[k, i] = end - now
                    now = end
        warm = out[1:]
        best: np.ndarray = warm[int(np.argmin(warm.sum(axis=1)))]
        return best

    if not (background and npu.books_ops_at_once()):
        # op by op, the passes would hold Python's lock the thread needs
        best = passes()
        return lambda: best
    # numba loads here, not on the thread: its import hides scipy's BLAS from every
    # thread while it runs, and this one may go on to import scipy (a MILP); and the
    # ops are planned here, so that the thread's Python does not take turns with the
    # run's on Python's lock
    jit.load()
    npu.prepare(tasks)
    got: list[np.ndarray] = []
    failed: list[BaseException] = []

    def work() -> None:
        _yielding()
        try:
            got.append(passes())
        except BaseException as e:  # noqa: BLE001 (raised again in the caller's thread)
            failed.append(e)

    thread = threading.Thread(target=work, name="tmhw-npu-alone", daemon=False)
    thread.start()

    def wait() -> np.ndarray:
        thread.join()
        if failed:
            raise failed[0]
        return got[0]
    return wait
