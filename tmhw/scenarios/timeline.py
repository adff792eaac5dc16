"""Timeline: one iteration of TM-Training, FlatFlash and demand paging, lane by lane.

One model (BERT-large; quick: ResNet-50 b4) at 12.5% HBM, traced: lanes for NPU compute
and stall, the DMA engine's fetches and write-backs (filled to their link direction's
busy share), HBM and the flash (filled to its channels' mean busy share). An arrow runs
from the end of each fetch request to the op that needs it: green when the data arrived
before the op wanted to start, red when the op stalled for it.
``timeline_<policy>.trace.json`` has every span (one track per flash channel), each
lane's utilisation per window as a counter, and every arrow, and opens in Perfetto.

    tmhw scenario timeline [--quick] [--out DIR] [--set a.b=v ...]
"""

from __future__ import annotations

from typing import Any

import tmhw.sweeps as SW
from tmhw import config as C
from tmhw.plots import timeline_figure
from tmhw.sim.errors import TmhwError
from tmhw.sim.trace import Tracer
from tmhw.studies import Study, cell, md_table, status_text
from tmhw.system import System

POLICIES = ("tm-training", "flatflash", "demand")
#: Arrows drawn, spread over the iteration (the trace and the counts have all).
MAX_ARROWS = 200


def traced_run(point: SW.Point) -> tuple[System, dict[str, Any], Tracer]:
    """Run ``point`` with a tracer (the system adds its flash channels' and DMA link's
    bookings as the lanes that serve the flash tier and the DMA engine)."""
    tracer = Tracer()
    system = System(C.from_dict(point["config"], C.PAPER), tracer=tracer)
    rep = system.run()
    rep["host"] = {"events": system.env.events}
    return system, rep, tracer


def prefetch_arrows(system: System, tracer: Tracer) -> tuple[int, int]:
    """Arrows from the end of each fetch request to the start of the op it was for;
    "late" where the data arrived after the op wanted to start. Returns (in time, late)."""
    want: dict[str, int] = {}
    start: dict[str, int] = {}
    ends: dict[tuple[str, int], tuple[int, str]] = {}
    for lane, s, e, name, args in tracer.spans:
        if lane == "npu.stall":
            want.setdefault(name, s)
        elif lane == "npu.compute":
            start.setdefault(name, s)
        elif lane.endswith("dma.fetch") and args and args.get("deadline_op", -1) >= 0:
            key = (name, int(args["deadline_op"]))
            if key not in ends or e > ends[key][0]:
                ends[key] = (e, lane)
    on_time = late = 0
    for (tag, op_i), (end, lane) in ends.items():
        op = system.workload.ops[op_i].name
        if op in start:
            is_late = end > want.get(op, start[op])
            late += is_late
            on_time += not is_late
            tracer.flow(lane, end, "npu.compute", start[op],
                        f"{'late' if is_late else 'in time'}: {tag} -> {op}")
    return on_time, late


def spread(items: list[Any], n: int) -> list[Any]:
    """At most ``n`` of ``items``, evenly spaced over the list."""
    if n <= 0 or len(items) <= n:
        return list(items) if n > 0 else []
    return [items[i * len(items) // n] for i in range(n)]


def for_figure(tracer: Tracer) -> Tracer:
    """The trace's lanes (the figure orders them, ``tmhw.plots.LANE_ORDER``) and at most
    MAX_ARROWS arrows, half of them late ones where there are that many."""
    fig = Tracer()
    fig.spans = tracer.spans
    fig.served = tracer.served
    fig.marks = tracer.marks
    late = [f for f in tracer.flows if f[4].startswith("late")]
    on_time = [f for f in tracer.flows if not f[4].startswith("late")]
    n_late = min(len(late), max(MAX_ARROWS // 2, MAX_ARROWS - len(on_time)))
    fig.flows = spread(late, n_late) + spread(on_time, MAX_ARROWS - n_late)
    return fig


def study(st: Study) -> str:
    """One traced iteration of TM-Training, FlatFlash and demand paging at 12.5% HBM."""
    m = st.model
    rows, results = [], []
    for p in POLICIES:
        pt = st.point(m.sets, {"policy": p}, {"policy.name": p, "policy.hbm_ratio": 0.125,
                                              "run.iterations": 1})
        res: SW.Result = {"id": pt["id"], "params": pt["params"], "status": "ok",
                          "error": "", "report": None}
        on_time = late = 0
        try:
            system, res["report"], tracer = traced_run(pt)
            on_time, late = prefetch_arrows(system, tracer)
            st.fig(timeline_figure(for_figure(tracer), st.out / f"timeline_{p}",
                                   title=f"{m.label} at 12.5% HBM: {p} (arrows: "
                                         f"{on_time} prefetches in time, {late} late)"))
            tracer.write_chrome(st.out / f"timeline_{p}.trace.json")
        except TmhwError as e:
            res.update(status=SW.refusal_status(e), error=str(e))
        results.append(res)
        rows.append([p, cell(res, "iteration_time_ms"), cell(res, "stall_ms"),
                     str(on_time), str(late), status_text(res)])
    st.write_csv(results)
    table = md_table(["policy", "iteration ms", "stall ms", "prefetches in time",
                      "prefetches late", "status"], rows)
    intro = (f"One iteration of {m.stands_for} ({m.label}) at 12.5% HBM: lanes for NPU "
             "compute and stall, the DMA engine's fetches and write-backs, HBM and the "
             "flash. Each lane's band fills, window by window, to the share of the window "
             "it was busy; the flash tier's to its channels' mean busy share and each DMA "
             "direction's to its link's (not the time a request was outstanding, which "
             "for the flash is nearly all of it); its share of the run is beside it. An "
             "arrow "
             "runs from the end of each fetch request to the op that needs it: green when "
             "the data arrived before the op wanted to start, red when the op stalled for "
             f"it (the figure draws at most {MAX_ARROWS}, spread over the iteration; the "
             "counts below are of all). `timeline_<policy>.trace.json` has every span "
             "(a track per flash channel), each lane's utilisation per window as a "
             "counter, and every arrow, and opens in Perfetto.")
    return st.write_md("Timeline of one iteration", intro, [table], 1)
