"""Tracer: spans and counters written as Chrome/Perfetto trace-event JSON (per lane a
thread with its name, X slices sorted by start, never a negative duration) and as VCD
(one busy wire per lane that is 1 exactly while a span is open, counters as reals)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tmhw.sim.trace import NULL_TRACER, NullTracer, Tracer

LANES = ["system.npu.compute", "system.npu.stall", "system.dma.fetch", "system.dma.writeback",
         "system.flash.ch0", "flash-ch1 die#2", "système.hbm"]

spans = st.lists(
    st.tuples(st.sampled_from(LANES), st.integers(0, 10**9), st.integers(0, 10**6),
              st.sampled_from(["op.fwd", "op.bwd", "prefetch"])),
    max_size=40)
counters = st.lists(
    st.tuples(st.sampled_from(["hbm.occupancy", "dma.queue", "system.dma.fetch"]),
              st.integers(0, 10**9), st.floats(0, 1e12)),
    max_size=20)


def _tracer(sp: list[tuple[str, int, int, str]], cs: list[tuple[str, int, float]]) -> Tracer:
    tr = Tracer()
    for lane, s, d, name in sp:
        tr.span(lane, s, s + d, name, {"bytes": d})
    for name, t, v in cs:
        tr.counter(name, t, v)
    return tr


@settings(max_examples=100, deadline=None)
@given(spans, counters)
def test_chrome_trace_slices_are_sorted_per_lane_and_named(sp, cs) -> None:
    """Every lane is named; complete events on one track never overlap (the format
    wants them to nest, and a lane's concurrent transfers go on tracks of their own,
    "lane #2", ...), lanes that recorded the same spans are one track named "a = b",
    and each lane's busy time survives the unit change."""
    tr = _tracer(sp, cs)
    ev = json.loads(json.dumps({"traceEvents": tr.chrome_events()}))["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 1}
    lane_of = {tid: name.split(" #")[0] for tid, name in names.items()}
    drawn = [ln for name in set(lane_of.values()) for ln in name.split(" = ")]
    assert sorted(drawn) == sorted(set(s[0] for s in sp))     # each lane named once
    spans_of: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for lane, s, d, _ in sp:
        spans_of[lane].append((s, s + d))
    for name in set(lane_of.values()):                # one track: the same spans
        same = {tuple(sorted(spans_of[ln])) for ln in name.split(" = ")}
        assert len(same) == 1
    assert len({tuple(sorted(v)) for v in spans_of.values()}) == len(set(lane_of.values()))
    xs = [e for e in ev if e["ph"] == "X"]
    assert len(xs) == sum(len(spans_of[n.split(" = ")[0]]) for n in set(lane_of.values()))
    by_tid: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for e in xs:
        assert e["tid"] in names            # every slice's lane has a name
        assert e["dur"] >= 0
        by_tid[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    for slices in by_tid.values():
        slices.sort()
        for (_, end), (start, _) in zip(slices, slices[1:], strict=False):
            assert start >= end - 1e-9 * max(1.0, end)   # disjoint on one track
    # Times are microseconds: the busy time per lane survives the unit change.
    for name in set(lane_of.values()):
        got = sum(e["dur"] for e in xs if lane_of[e["tid"]] == name)
        assert got == pytest.approx(sum(b - a for a, b in spans_of[name.split(" = ")[0]])
                                    / 1e6)
    last_c: dict[str, float] = {}
    for e in (e for e in ev if e["ph"] == "C" and e["pid"] == 1):
        assert e["ts"] >= last_c.get(e["name"], 0.0)
        last_c[e["name"]] = e["ts"]
    assert sum(e["ph"] == "C" and e["pid"] == 1 for e in ev) == len(cs)


def test_chrome_trace_file_and_flows(tmp_path: Path) -> None:
    tr = Tracer()
    tr.span("dma.fetch", 1_000_000, 3_000_000, "w0", {"bytes": 4096})
    tr.span("npu.compute", 3_000_000, 5_000_000, "fc1")
    tr.flow("dma.fetch", 3_000_000, "npu.compute", 3_000_000, "w0")
    tr.flow("dma.fetch", 0, "nowhere", 0, "dropped")      # unknown lane: no arrow
    tr.counter("hbm.occupancy", 2_000_000, 4096)
    path = tmp_path / "t.json"
    tr.write_chrome(path)
    doc = json.loads(path.read_text())
    ev = doc["traceEvents"]
    x = [e for e in ev if e["ph"] == "X"]
    assert [(e["name"], e["ts"], e["dur"]) for e in x] == [("w0", 1.0, 2.0), ("fc1", 3.0, 2.0)]
    assert x[0]["args"] == {"bytes": 4096}
    flows = [e for e in ev if e["ph"] in "sf"]
    assert [(e["ph"], e["tid"]) for e in flows] == [("s", x[0]["tid"]), ("f", x[1]["tid"])]
    assert [e["args"] for e in ev if e["ph"] == "C" and e["pid"] == 1] == [
        {"hbm.occupancy": 4096}]


def test_a_lane_served_by_channels_is_as_busy_as_its_channels_not_as_its_requests() -> None:
    """The flash tier has a request outstanding all run (its lane is one span of 200 ps)
    while of its two channels one works half the run and the other not at all: its
    utilisation is the channels' mean, 0.5 in the first window, 0 in the second, 0.25
    over the run; a plain lane's is the share of the window a span of it was open."""
    tr = Tracer()
    tr.span("system.flash", 0, 200, "read")
    tr.span("system.flash.ch0", 0, 100, "busy")
    tr.span("npu.compute", 10, 40, "a")
    tr.span("npu.compute", 30, 60, "b")            # overlaps a: counted once
    tr.span("npu.compute", 150, 160, "c")
    tr.serve("system.flash", ["system.flash.ch0", "system.flash.ch1"])
    u = tr.utilisation(100)
    assert u["system.flash"][0].tolist() == [0.5, 0.0] and u["system.flash"][1] == 0.25
    assert u["system.flash.ch1"][0].tolist() == [0.0, 0.0]
    assert u["npu.compute"][0].tolist() == [0.5, 0.1] and u["npu.compute"][1] == 0.3
    # a last window shorter than the others is divided by its own length
    assert tr.utilisation(150)["npu.compute"][0].tolist() == [50 / 150, 10 / 50]


def test_chrome_counter_tracks_carry_each_lanes_utilisation_per_window() -> None:
    """One counter track per drawn lane in the "utilisation" process, a value per
    window: weighted by the windows, they give the lane's busy share of the run."""
    from tmhw.sim.trace import utilisation_window

    tr = Tracer()
    tr.span("npu.compute", 0, 3_000_000, "a")
    tr.span("npu.compute", 5_000_000, 6_000_000, "b")
    tr.span("system.npu", 0, 3_000_000, "a", {"macs": 7})
    tr.span("system.npu", 5_000_000, 6_000_000, "b", {"macs": 9})
    tr.span("system.flash", 0, 10_000_000, "read")
    tr.span("system.flash.ch0", 0, 2_000_000, "busy")
    tr.serve("system.flash", ["system.flash.ch0"])
    ev = tr.chrome_events()
    window = utilisation_window(10_000_000)
    assert window == 50_000                              # 10 us / 200, a round number
    util: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for e in ev:
        if e["ph"] == "C" and e["pid"] == 2:
            util[e["name"]].append((e["ts"], e["args"]["busy"]))
    assert set(util) == {"npu.compute = system.npu", "system.flash (mean of 1 resources)",
                         "system.flash.ch0"}
    for name, share in (("npu.compute = system.npu", 0.4),
                        ("system.flash (mean of 1 resources)", 0.2),
                        ("system.flash.ch0", 0.2)):
        pts = util[name]
        assert pts[-1] == (10.0, 0.0)                   # back to 0 at the run's end
        assert [t for t, _ in pts[:-1]] == pytest.approx([k * window / 1e6
                                                          for k in range(200)])
        assert sum(v for _, v in pts[:-1]) / 200 == pytest.approx(share)
    # the NPU's two lanes are one track whose slices carry both lanes' arguments
    xs = [e for e in ev if e["ph"] == "X" and e["name"] in "ab"]
    assert [(e["name"], e.get("args")) for e in xs] == [("a", {"macs": 7}),
                                                       ("b", {"macs": 9})]


def test_span_ending_before_it_starts_is_refused() -> None:
    with pytest.raises(ValueError, match="npu"):
        Tracer().span("npu", 10, 9, "x")


def test_null_tracer_records_nothing() -> None:
    assert isinstance(NULL_TRACER, NullTracer) and not NULL_TRACER.enabled
    NULL_TRACER.span("a", 0, 1, "x")
    NULL_TRACER.counter("c", 0, 1.0)
    NULL_TRACER.flow("a", 0, "b", 1, "f")
    assert NULL_TRACER.spans == [] and NULL_TRACER.counters == [] and NULL_TRACER.flows == []


class Vcd:
    """A minimal VCD reader (IEEE 1364 section 18): the declarations and, per variable,
    its (time, value) history with the $dumpvars initial value at time 0."""

    def __init__(self, text: str) -> None:
        tok = text.split()
        self.timescale = ""
        self.vars: dict[str, tuple[str, str]] = {}          # id -> (type, dotted name)
        self.names: dict[tuple[str, int], str] = {}         # every declared name
        self.history: dict[str, list[tuple[int, str]]] = defaultdict(list)
        scope: list[str] = []
        i = 0
        while tok[i] != "$enddefinitions":
            kw = tok[i]
            end = tok.index("$end", i)
            args = tok[i + 1:end]
            if kw == "$timescale":
                self.timescale = " ".join(args)
            elif kw == "$scope":
                scope.append(args[1])
            elif kw == "$upscope":
                scope.pop()
            elif kw == "$var":
                vtype, _size, ident, ref = args
                name = ".".join(scope + [ref])
                assert name not in self.names.values()
                if ident in self.vars:              # an alias: one signal, two names
                    assert self.vars[ident][0] == vtype
                else:
                    self.vars[ident] = (vtype, name)
                self.names[(ident, len(self.names))] = name
            i = end + 1
        assert scope == [], "unbalanced $scope"
        i = tok.index("$end", i) + 1
        t = -1
        while i < len(tok):
            w = tok[i]
            if w.startswith("#"):
                assert int(w[1:]) > t, "timestamps must increase"
                t = int(w[1:])
            elif w in ("$dumpvars", "$end"):
                pass
            elif w[0] in "rR":
                ident = tok[i + 1]
                assert self.vars[ident][0] == "real"
                self.history[ident].append((t, w[1:]))
                i += 1
            else:
                assert w[0] in "01xz" and self.vars[w[1:]][0] == "wire", w
                self.history[w[1:]].append((t, w[0]))
            i += 1

    def of_type(self, vtype: str) -> list[list[tuple[int, float]]]:
        return [[(t, float(v)) for t, v in self.history[i]]
                for i, (ty, _) in self.vars.items() if ty == vtype]


def _changes(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """A signal's value-change list from (time, value) samples in time order, starting
    at 0 from 0: only instants where the value differs from the previous one."""
    out = [(0, 0.0)]
    for t, v in points:
        if t == 0:
            out[0] = (0, v)
        elif v != out[-1][1]:
            out.append((t, v))
    return out


def _expected_wire(sp: list[tuple[str, int, int, str]], lane: str) -> list[tuple[int, float]]:
    times = sorted({t for ln, s, d, _ in sp if ln == lane for t in (s, s + d)})
    busy = [(t, float(any(s <= t < s + d for ln, s, d, _ in sp if ln == lane)))
            for t in times]
    return _changes(busy)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spans, counters)
def test_vcd_busy_wires_are_high_exactly_while_a_span_is_open(tmp_path: Path, sp, cs) -> None:
    tr = _tracer(sp, cs)
    path = tmp_path / "t.vcd"
    tr.write_vcd(path)
    vcd = Vcd(path.read_text())
    assert vcd.timescale == "1 ps"
    lanes = list(dict.fromkeys(s[0] for s in sp))
    cnames = list(dict.fromkeys(c[0] for c in cs))
    # One variable per lane and per counter, none merged although names collide once
    # made VCD-safe, and every dotted name distinct.
    heads = list(tr.same_signals())     # lanes with the same spans share one wire
    assert len(vcd.of_type("wire")) == len(heads)
    assert len(vcd.of_type("real")) == len(cnames)
    assert len(vcd.names) == len(lanes) + len(cnames)
    # Each wire is high exactly while one of its lane's spans is open: one change per
    # instant at most, so back-to-back spans do not glitch low.
    assert sorted(vcd.of_type("wire")) == sorted(_expected_wire(sp, ln) for ln in heads)
    expected_reals = []
    for name in cnames:
        last: dict[int, float] = {}
        for n, t, v in cs:
            if n == name:
                last[t] = v
        expected_reals.append(_changes(sorted(last.items())))
    got = sorted(vcd.of_type("real"))
    want = sorted(expected_reals)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert [t for t, _ in g] == [t for t, _ in w]
        assert [v for _, v in g] == pytest.approx([v for _, v in w], rel=1e-15)


def test_vcd_back_to_back_spans_hold_the_wire_high(tmp_path: Path) -> None:
    tr = Tracer()
    tr.span("npu.compute", 0, 5, "a")
    tr.span("npu.compute", 5, 9, "b")
    tr.span("npu.compute", 20, 20, "empty")
    path = tmp_path / "b.vcd"
    tr.write_vcd(path)
    vcd = Vcd(path.read_text())
    assert [name for _, name in vcd.vars.values()] == ["tmhw.npu.compute"]
    assert vcd.of_type("wire") == [[(0, 1.0), (9, 0.0)]]


def test_vcd_draws_two_lanes_with_the_same_spans_as_one_wire_with_two_names(
        tmp_path: Path) -> None:
    tr = Tracer()
    for lane in ("npu.compute", "system.npu"):
        tr.span(lane, 0, 5, "a")
        tr.span(lane, 7, 9, "b")
    tr.span("npu.stall", 5, 7, "a")
    path = tmp_path / "alias.vcd"
    tr.write_vcd(path)
    vcd = Vcd(path.read_text())
    assert sorted(vcd.names.values()) == ["tmhw.npu.compute", "tmhw.npu.stall",
                                          "tmhw.system.npu"]
    assert sorted(vcd.of_type("wire")) == [[(0, 0.0), (5, 1.0), (7, 0.0)],
                                           [(0, 1.0), (5, 0.0), (7, 1.0), (9, 0.0)]]


def test_vcd_of_an_empty_trace_is_a_valid_header(tmp_path: Path) -> None:
    path = tmp_path / "empty.vcd"
    Tracer().write_vcd(path)
    vcd = Vcd(path.read_text())
    assert vcd.timescale == "1 ps" and vcd.vars == {}
    # the header says the day it was written and the tool's version
    import datetime
    import re

    import tmhw

    text = path.read_text()
    day = re.search(r"\$date\s+(\S+)\s+\$end", text)
    assert day and datetime.date.fromisoformat(day.group(1))
    assert f"$version tmhw {tmhw.__version__} $end" in text


def test_numpy_numbers_in_spans_and_counters_are_written_as_numbers(tmp_path: Path) -> None:
    import numpy as np

    tr = Tracer()
    tr.span("dma.fetch", np.int64(2_000_000), np.int64(5_000_000), "w",
            {"pages": np.int64(3), "ratio": np.float32(0.5)})
    tr.counter("hbm.occupancy", np.int64(1_000_000), np.int64(4096))
    path = tmp_path / "np.json"
    tr.write_chrome(path)
    ev = json.loads(path.read_text())["traceEvents"]
    x = next(e for e in ev if e["ph"] == "X")
    assert (x["ts"], x["dur"], x["args"]) == (2.0, 3.0, {"pages": 3, "ratio": 0.5})
    assert next(e for e in ev if e["ph"] == "C")["args"] == {"hbm.occupancy": 4096}


# -- busy intervals: what the VCD wires and the timeline bars are made of ----------------

#: spans of at least 1 ps (a zero-length span is an instant: it may end an interval)
raw = st.lists(st.tuples(st.integers(0, 400), st.integers(1, 30)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(raw, st.integers(0, 25))
def test_busy_intervals_cover_every_span_and_only_close_gaps_under_min_gap(sp, gap) -> None:
    from tmhw.sim.trace import busy_intervals

    starts = np.array([s for s, _ in sp], dtype=np.int64)
    ends = np.array([s + d for s, d in sp], dtype=np.int64)
    s, e = busy_intervals(starts, ends, gap)
    assert len(s) == len(e) <= len(sp)
    assert np.all(e >= s)
    # sorted and disjoint, each gap between two intervals at least min_gap (and > 0)
    between = s[1:] - e[:-1]
    assert np.all(between >= max(gap, 1))
    # every span lies inside one interval
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        k = int(np.searchsorted(s, a, side="right")) - 1
        assert k >= 0 and s[k] <= a and b <= e[k]
    # the intervals' length is the spans' union plus the gaps closed, each < min_gap
    cover = np.zeros(500, dtype=bool)
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        cover[a:b] = True
    union = int(cover.sum())
    drawn = int((e - s).sum())
    closed = _idle_gaps(cover, s, e)
    assert drawn == union + sum(closed)
    assert all(0 < g < max(gap, 1) for g in closed)
    if sp:
        assert e[-1] == ends.max()          # the last span's end is kept


def _idle_gaps(cover: np.ndarray, s: np.ndarray, e: np.ndarray) -> list[int]:
    """The idle stretches of ``cover`` that lie inside an interval (closed gaps)."""
    gaps = []
    for a, b in zip(s.tolist(), e.tolist(), strict=True):
        run = 0
        for t in range(a, b):
            if cover[t]:
                if run:
                    gaps.append(run)
                run = 0
            else:
                run += 1
        assert run == 0                     # an interval ends on a busy instant
    return gaps


def test_busy_intervals_merge_touching_spans_and_keep_the_last_end() -> None:
    from tmhw.sim.trace import busy_intervals

    s, e = busy_intervals([30, 0, 10, 12, 55], [40, 10, 20, 14, 56])
    assert list(zip(s.tolist(), e.tolist(), strict=True)) == [(0, 20), (30, 40), (55, 56)]
    # a 10 ps gap closes under an 11 ps pixel, a 15 ps one stays
    s, e = busy_intervals([30, 0, 10, 12, 55], [40, 10, 20, 14, 56], min_gap=11)
    assert list(zip(s.tolist(), e.tolist(), strict=True)) == [(0, 40), (55, 56)]


def test_marks_are_global_instants_in_the_chrome_trace() -> None:
    tr = Tracer()
    tr.span("npu.compute", 0, 2_000_000, "fc1")
    tr.mark(0, "it 0 (warm-up)")
    tr.mark(2_000_000, "it 1")
    inst = [e for e in tr.chrome_events() if e["ph"] == "i"]
    assert [(e["name"], e["ts"], e["s"]) for e in inst] == [("it 0 (warm-up)", 0.0, "g"),
                                                             ("it 1", 2.0, "g")]
    NULL_TRACER.mark(0, "x")
    assert NULL_TRACER.marks == []


@pytest.fixture(scope="module", params=["flash.channels=16", "flash.devices=2"])
def whole_run(request: pytest.FixtureRequest) -> tuple[Tracer, dict]:
    """One small ResNet-18 iteration (batch 2, quarter HBM) of quick, traced: with 16
    flash channels, and with two SSDs striped."""
    import tmhw
    from tmhw.system import System

    tr = Tracer()
    cfg = tmhw.load_config("quick", [request.param, "policy.hbm_ratio=0.25",
                                     "run.iterations=1", 'workload.model="resnet18"',
                                     "workload.batch=2"])
    rep = System(cfg, tracer=tr).run()
    return tr, rep


def test_a_whole_runs_trace_has_no_overlapping_slices_on_a_track(
        whole_run: tuple[Tracer, dict]) -> None:
    """On quick with 16 flash channels, two thirds of the HBM's, the flash tier's and
    the DMA engine's slices once overlapped a neighbour on their one track: now each
    lane has as many tracks as it has transfers at once, and none overlaps (here on a
    small ResNet-18 iteration of that machine, and of one with two SSDs)."""
    tr, _rep = whole_run
    ev = tr.chrome_events()
    names = {e["tid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    by_tid: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for e in ev:
        if e["ph"] == "X":
            by_tid[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
    overlaps = sum(1 for slices in by_tid.values()
                   for (_, end), (start, _) in zip(sorted(slices), sorted(slices)[1:],
                                                   strict=False)
                   if start < end - 1e-9 * max(1.0, end))
    assert overlaps == 0
    assert any(" #2" in n for n in names.values())  # concurrent transfers got tracks


def _union_ps(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, -1
    for s, e in sorted(intervals):
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total


def test_the_vcd_and_the_chrome_trace_of_one_run_agree_on_every_lanes_busy_time(
        whole_run: tuple[Tracer, dict], tmp_path: Path) -> None:
    """Both files written from one run, read back by independent readers: each lane's
    busy time (the union of its slices on all its tracks; the time its wire is high) is
    the same to the picosecond, under every name a lane has; and the flash channels'
    busy time is the report's."""
    tr, rep = whole_run
    tr.write_chrome(tmp_path / "t.json")
    tr.write_vcd(tmp_path / "t.vcd")
    ev = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    names = {e["tid"]: e["args"]["name"].split(" #")[0] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    slices: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for e in ev:
        if e["ph"] == "X":
            s = round(e["ts"] * 1e6)
            slices[names[e["tid"]]].append((s, s + round(e["dur"] * 1e6)))
    chrome = {lane: _union_ps(iv) for name, iv in slices.items()
              for lane in name.split(" = ")}
    vcd = Vcd((tmp_path / "t.vcd").read_text())
    wires: dict[str, int] = {}
    for (ident, _), name in vcd.names.items():
        if vcd.vars[ident][0] == "wire":
            hist = vcd.history[ident]
            wires[name.removeprefix("tmhw.")] = sum(
                t1 - t0 for (t0, v), (t1, _) in zip(hist, hist[1:], strict=False)
                if v == "1")
    assert set(chrome) == set(wires) == set(tr.lanes())
    assert chrome == wires
    flash = rep["run_total"]["system"]["flash"]
    channels = tr.served["system.flash"]
    cfg = rep["config"]["flash"]
    assert len(channels) == int(cfg["channels"]) * int(cfg["devices"])
    assert sum(wires.get(c, 0) for c in channels) == sum(
        v["busy_ps"] for v in _channel_reports(flash).values()) > 0


def _channel_reports(flash: dict) -> dict[str, dict]:
    """The report's per-channel sections (``ch3``, or ``dev1.ch3`` on several SSDs)."""
    out = {}
    for k, v in flash.items():
        if isinstance(v, dict) and k.startswith("ch") and "busy_ps" in v:
            out[k] = v
        elif isinstance(v, dict) and k.startswith("dev"):
            out.update({f"{k}.{c}": cv for c, cv in _channel_reports(v).items()})
    return out


def test_a_lane_whose_link_carries_another_lanes_work_says_so() -> None:
    """FlatFlash's reads in place cross the DMA engine's link in, which also serves the
    fetch lane: the fetch lane's utilisation is the link's, so its label names the
    other work (``Tracer.serve``'s ``shared_with``); without in-place reads it does
    not."""
    from tmhw.config import QUICK, with_overrides
    from tmhw.plots import _lane_label
    from tmhw.system import System

    def fetch_label(policy: str) -> str:
        tr = Tracer()
        s = System(with_overrides(QUICK, ["workload.layers=2", "policy.hbm_ratio=0.25",
                                          f"policy.name={policy}"]), tracer=tr)
        s.run()
        return _lane_label(tr, ["system.dma.fetch"])

    assert fetch_label("flatflash") == "system.dma.fetch\n(its link_in, with inplace)"
    assert fetch_label("demand") == "system.dma.fetch\n(its link_in)"
