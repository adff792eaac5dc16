"""Tracing: spans (a lane was busy from t0 to t1 doing X), counters (a level changed),
flows (an arrow from one lane to another) and marks (a labelled instant, such as the
start of an iteration).

``Tracer`` records into memory and writes Chrome/Perfetto trace-event JSON (``X`` complete
events, one thread per lane, ``C`` counter events, global ``i`` instants for marks) or a
VCD through pyvcd (one 1-bit busy wire per lane and one real variable per counter). Every
span is written; nothing is capped. ``busy_intervals`` merges a lane's spans into the
intervals it was busy (the VCD's wires).

Two lanes that recorded the same spans are one signal (the executor's ``npu.compute`` and
the NPU's own ``system.npu`` when no op is streamed): both writers draw it once, under
both names (``same_signals``). A lane may be served by parallel resources (the flash tier
by its channels, a DMA direction by its link: ``serve``); its utilisation is then theirs,
not the share of time something was outstanding on it. ``utilisation`` gives each lane's
busy share per window; the Chrome trace carries it as one counter track per lane.
``NULL_TRACER`` is the no-op used when tracing is off: its methods do nothing, so the hot
path pays one call.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import numpy as np


def busy_intervals(starts: Any, ends: Any, min_gap: float = 0) -> tuple[np.ndarray,
                                                                         np.ndarray]:
    """The union of the spans ``[starts[i], ends[i])`` as sorted, disjoint intervals
    ``(s, e)``: overlapping and touching spans become one, and so do two intervals whose
    gap is shorter than ``min_gap`` (0: only those that touch or overlap). Every span
    lies inside one interval; the intervals' total length exceeds the spans' union by
    the gaps closed, each shorter than ``min_gap``."""
    s = np.asarray(starts)
    e = np.asarray(ends)
    if s.size == 0:
        return s[:0].copy(), e[:0].copy()
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)        # the furthest end of any span so far
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    gap = s[1:] - reach[:-1]                # > 0: the lane idles before span i
    new[1:] = gap >= min_gap if min_gap > 0 else gap > 0
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return s[first], reach[last]


class Tracer:
    """Records spans and counters. Times in ps."""

    enabled = True

    def __init__(self) -> None:
        self.spans: list[tuple[str, int, int, str, dict[str, Any] | None]] = []
        self.counters: list[tuple[str, int, float]] = []
        self.flows: list[tuple[str, int, str, int, str]] = []
        self.marks: list[tuple[int, str]] = []
        #: lane -> the lanes of the parallel resources that serve it (``serve``)
        self.served: dict[str, list[str]] = {}
        #: lane -> the other lanes whose work the same resources carry (``serve``)
        self.shared: dict[str, list[str]] = {}

    def serve(self, lane: str, resources: list[str], shared_with: list[str] | None = None
              ) -> None:
        """``lane``'s work is done by ``resources`` (lanes of their own, one per channel
        or link): its utilisation is their mean busy share, a resource that recorded
        nothing counting as idle. ``shared_with``: other lanes whose work the same
        resources carry (their busy time is in this lane's utilisation too, and its
        label says so)."""
        self.served[lane] = list(resources)
        if shared_with:
            self.shared[lane] = list(shared_with)

    def span(self, lane: str, start: int, end: int, name: str,
             args: dict[str, Any] | None = None) -> None:
        """Lane ``lane`` was busy on ``name`` over [start, end)."""
        if end < start:
            raise ValueError(f"span {name} on {lane} ends before it starts")
        self.spans.append((lane, start, end, name, args))

    def counter(self, name: str, t: int, value: float) -> None:
        self.counters.append((name, t, value))

    def flow(self, src_lane: str, t_src: int, dst_lane: str, t_dst: int, name: str) -> None:
        """An arrow from one lane at one time to another (a prefetch meeting its op)."""
        self.flows.append((src_lane, t_src, dst_lane, t_dst, name))

    def mark(self, t: int, label: str) -> None:
        """A labelled instant across every lane (an iteration starts)."""
        self.marks.append((t, label))

    def lanes(self) -> list[str]:
        seen: dict[str, None] = {}
        for lane, *_ in self.spans:
            seen.setdefault(lane, None)
        return list(seen)

    def same_signals(self) -> dict[str, list[str]]:
        """Lanes that recorded the same spans (start and end, in any order) grouped: the
        first lane of each group (in ``lanes`` order) -> every lane of it, itself first.
        A lane no other repeats is a group of one."""
        per: dict[str, list[tuple[int, int]]] = {lane: [] for lane in self.lanes()}
        for lane, s, e, _n, _a in self.spans:
            per[lane].append((int(s), int(e)))
        first: dict[tuple[tuple[int, int], ...], str] = {}
        groups: dict[str, list[str]] = {}
        for lane, sp in per.items():
            key = tuple(sorted(sp))
            head = first.setdefault(key, lane)
            groups.setdefault(head, []).append(lane)
        return groups

    def end(self) -> int:
        """The last instant recorded: a span's end or a mark (0 for an empty trace)."""
        return max([int(e) for _l, _s, e, _n, _a in self.spans]
                   + [int(t) for t, _ in self.marks] + [0])

    def utilisation(self, window: int, end: int | None = None
                    ) -> dict[str, tuple[np.ndarray, float]]:
        """Per lane: its busy share in each window ``[k * window, (k + 1) * window)``
        up to ``end`` (default ``end()``; the last window may be partial and is divided by
        its own length), and its share over ``[0, end)``. A lane's busy time is the union
        of its spans; a lane served by resources (``serve``) takes their mean instead.
        Resource lanes are lanes too. Shares lie in [0, 1]."""
        end = self.end() if end is None else int(end)
        if window <= 0:
            raise ValueError(f"utilisation window {window} ps must be > 0")
        edges = np.append(np.arange(0, max(end, 1), window, dtype=np.int64), max(end, 1))
        width = np.diff(edges).astype(np.float64)
        busy = self.busy()
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))

        def shares(lane: str) -> tuple[np.ndarray, float]:
            s, e = busy.get(lane, empty)
            cum = _busy_before(s, e, edges)
            return np.diff(cum) / width, float(cum[-1]) / max(end, 1)

        out: dict[str, tuple[np.ndarray, float]] = {}
        for lane in list(busy) + [r for rs in self.served.values() for r in rs]:
            if lane not in out:
                out[lane] = shares(lane)
        for lane, res in self.served.items():
            if res:
                parts = [out[r] for r in res]
                out[lane] = (np.mean([p[0] for p in parts], axis=0),
                             float(np.mean([p[1] for p in parts])))
        return out

    def busy(self, min_gap: float = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each lane's spans merged into busy intervals (``busy_intervals``), in ps."""
        per: dict[str, tuple[list[int], list[int]]] = {lane: ([], []) for lane in self.lanes()}
        for lane, s, e, _n, _a in self.spans:
            ss, ee = per[lane]
            ss.append(s)
            ee.append(e)
        return {lane: busy_intervals(np.array(ss, dtype=np.int64),
                                     np.array(ee, dtype=np.int64), min_gap)
                for lane, (ss, ee) in per.items()}

    # -- writers -----------------------------------------------------------------------
    def chrome_events(self) -> list[dict[str, Any]]:
        """Trace events; timestamps in microseconds as the format wants.

        The format wants complete events on one thread to nest, but a lane (the HBM, a
        DMA direction, the flash tier) carries concurrent transfers that overlap in part.
        So a lane is drawn as as many tracks as it has transfers at once: each span goes
        on the lane's first track free at its start (track k > 0 is named "lane #k+1"),
        and spans on one track never overlap. Lanes that are one signal
        (``same_signals``) are drawn once, named "a = b", each slice carrying the
        arguments of both. A second process, "utilisation", holds one counter track per
        lane: its busy share in each window of ``utilisation_window`` (``utilisation``)."""
        groups = self.same_signals()
        head_of = {lane: head for head, lanes in groups.items() for lane in lanes}
        merged = self._merged_spans(groups)
        order = sorted(merged, key=lambda x: (x[0], x[1], -x[2]))
        track_of: list[int] = []
        ends: dict[str, list[int]] = {}
        for lane, s, e, _name, _args in order:
            free = ends.setdefault(lane, [])
            k = next((j for j, end in enumerate(free) if end <= s), len(free))
            if k == len(free):
                free.append(e)
            else:
                free[k] = e
            track_of.append(k)
        tid: dict[tuple[str, int], int] = {}
        for lane in groups:
            for k in range(max(1, len(ends.get(lane, ())))):
                tid[(lane, k)] = len(tid) + 1
        ev: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": 1,
                                     "args": {"name": "tmhw"}}]
        for (lane, k), i in tid.items():
            name = " = ".join(groups[lane])
            ev.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": i,
                       "args": {"name": name if k == 0 else f"{name} #{k + 1}"}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": i,
                       "args": {"sort_index": i}})
        for (lane, s, e, name, args), k in zip(order, track_of, strict=True):
            d: dict[str, Any] = {"ph": "X", "name": name, "pid": 1, "tid": tid[(lane, k)],
                                 "ts": s / 1e6, "dur": (e - s) / 1e6}
            if args:
                d["args"] = args
            ev.append(d)
        for t, label in self.marks:
            ev.append({"ph": "i", "s": "g", "name": label, "pid": 1, "tid": 0,
                       "ts": t / 1e6})
        for name, t, v in sorted(self.counters, key=lambda x: (x[0], x[1])):
            ev.append({"ph": "C", "name": name, "pid": 1, "ts": t / 1e6, "args": {name: v}})
        for k, (sl, ts, dl, td, name) in enumerate(self.flows):
            sh, dh = head_of.get(sl, sl), head_of.get(dl, dl)
            if (sh, 0) in tid and (dh, 0) in tid:
                ev.append({"ph": "s", "id": k, "name": name, "cat": "flow", "pid": 1,
                           "tid": tid[(sh, 0)], "ts": ts / 1e6})
                ev.append({"ph": "f", "id": k, "name": name, "cat": "flow", "pid": 1,
                           "tid": tid[(dh, 0)], "ts": td / 1e6, "bp": "e"})
        ev += self._utilisation_events(groups)
        return ev

    def _merged_spans(self, groups: dict[str, list[str]]
                      ) -> list[tuple[str, int, int, str, dict[str, Any] | None]]:
        """The spans of each group's first lane, each with the arguments of the same span
        on the group's other lanes added (spans matched in (start, end) order)."""
        per: dict[str, list[tuple[str, int, int, str, dict[str, Any] | None]]] = {}
        for sp in self.spans:
            per.setdefault(sp[0], []).append(sp)
        out = []
        for head, lanes in groups.items():
            if len(lanes) == 1:
                out += per[head]
                continue
            rows = [sorted(per[lane], key=lambda x: (x[1], x[2])) for lane in lanes]
            for same in zip(*rows, strict=True):
                args: dict[str, Any] = {}
                for sp in reversed(same):
                    args.update(sp[4] or {})
                out.append((head, same[0][1], same[0][2], same[0][3], args or None))
        return out

    def _utilisation_events(self, groups: dict[str, list[str]]) -> list[dict[str, Any]]:
        """Counter tracks (process 2, "utilisation"): per drawn lane, its busy share in
        each window, written at the window's start, and 0 at the end of the run."""
        end = self.end()
        if not groups or end <= 0:
            return []
        window = utilisation_window(end)
        util = self.utilisation(window, end)
        ev: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": 2,
             "args": {"name": f"utilisation (busy share per {window / 1e6:g} us window)"}},
            {"ph": "M", "name": "process_sort_index", "pid": 2, "args": {"sort_index": 2}}]
        for head, lanes in groups.items():
            res = self.served.get(head, [])
            label = " = ".join(lanes) + (f" (mean of {len(res)} resources)" if res else "")
            shares = util[head][0]
            for k, v in enumerate(shares.tolist()):
                ev.append({"ph": "C", "name": label, "pid": 2, "ts": k * window / 1e6,
                           "args": {"busy": round(v, 6)}})
            ev.append({"ph": "C", "name": label, "pid": 2, "ts": end / 1e6,
                       "args": {"busy": 0.0}})
        return ev

    def write_chrome(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps({"traceEvents": self.chrome_events(),
                                          "displayTimeUnit": "ns"}, default=_json_scalar))

    def write_vcd(self, path: str | Path) -> None:
        """Busy wires per lane (1 while any span is open) and counter values, 1 ps scale.

        Each wire follows its lane's busy intervals, so back-to-back spans keep the wire
        high instead of writing a 0 and a 1 at the same instant; names are made VCD-safe and
        unique (two lanes may sanitise to the same identifier, a counter may share a
        lane's name). Lanes that are one signal (``same_signals``) are one wire declared
        under each name (VCD aliases: one identifier code)."""
        from vcd import VCDWriter

        changes: list[tuple[int, int, str, int | float]] = []
        groups = self.same_signals()
        busy = {lane: iv for lane, iv in self.busy().items() if lane in groups}
        for lane, (starts, ends) in busy.items():
            for t0, t1 in zip(starts.tolist(), ends.tolist(), strict=True):
                if t1 > t0:   # a zero-length span never raises the wire
                    changes.append((t0, 0, lane, 1))
                    changes.append((t1, 0, lane, 0))
        # The last value recorded at one time is the counter's value at that time.
        final: dict[tuple[str, int], float] = {}
        for name, t, val in self.counters:
            final[(name, t)] = val
        for (name, t), val in final.items():
            changes.append((t, 1, name, val))
        changes.sort(key=lambda x: (x[0], x[1], x[2]))
        # the header says when and by which version of tmhw (a date, not a time: two
        # runs of one config on one day write the same file)
        from importlib.metadata import PackageNotFoundError, version

        try:
            tool = f"tmhw {version('tmhw')}"
        except PackageNotFoundError:
            tool = "tmhw (not installed)"
        day = datetime.date.today().isoformat()
        with open(path, "w") as fh, VCDWriter(fh, timescale="1 ps", date=day,
                                              version=tool) as w:
            vars_: dict[tuple[int, str], Any] = {}
            taken: set[tuple[str, str]] = set()

            def unique(name: str) -> tuple[str, str]:
                parts = [_safe(p) for p in ("tmhw." + name).split(".")]
                scope, leaf = ".".join(parts[:-1]), parts[-1]
                ident, k = leaf, 1
                while (scope, ident) in taken:
                    ident, k = f"{leaf}_{k}", k + 1
                taken.add((scope, ident))
                return scope, ident

            def register(kind: int, name: str) -> None:
                scope, ident = unique(name)
                if kind == 0:
                    vars_[(0, name)] = w.register_var(scope, ident, "wire", size=1, init=0)
                else:
                    vars_[(1, name)] = w.register_var(scope, ident, "real", init=0.0)

            for lane in busy:
                register(0, lane)
                for alias in groups[lane][1:]:
                    w.register_alias(*unique(alias), vars_[(0, lane)])
            for name in dict.fromkeys(c[0] for c in self.counters):
                register(1, name)
            for t, kind, name, value in changes:
                w.change(vars_[(kind, name)], t, float(value) if kind else value)


#: About how many windows the utilisation counters divide a run into.
UTILISATION_WINDOWS = 200


def utilisation_window(end: int, windows: int = UTILISATION_WINDOWS) -> int:
    """A window length (ps) for utilisation over ``[0, end)``: ``end / windows`` rounded
    up to 1, 2 or 5 times a power of ten, so that it reads as a plain number."""
    raw = max(1, -(-int(end) // max(1, windows)))
    p = 1
    while True:
        for m in (1, 2, 5):
            if m * p >= raw:
                return m * p
        p *= 10


def _busy_before(s: np.ndarray, e: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Busy time before each instant of ``t``, of the sorted disjoint intervals
    ``[s[i], e[i])``."""
    out = np.zeros(t.size, dtype=np.int64)
    if s.size == 0:
        return out
    cum = np.cumsum(e - s)
    k = np.searchsorted(s, t, side="right")      # intervals starting at or before t
    has = k > 0
    j = k[has] - 1
    out[has] = cum[j] - np.maximum(0, e[j] - t[has])
    return out


def _json_scalar(o: Any) -> Any:
    """Span arguments and times often come straight from numpy (page counts, byte sums):
    write its scalars as the numbers they are, anything else as its text."""
    item = getattr(o, "item", None)
    return item() if callable(item) else str(o)


def _safe(s: str) -> str:
    return "".join(ch if (ch.isascii() and ch.isalnum()) or ch == "_" else "_"
                   for ch in s) or "x"


class NullTracer(Tracer):
    """Tracing off: every method is a no-op."""

    enabled = False

    def span(self, lane: str, start: int, end: int, name: str,
             args: dict[str, Any] | None = None) -> None:
        return None

    def counter(self, name: str, t: int, value: float) -> None:
        return None

    def flow(self, src_lane: str, t_src: int, dst_lane: str, t_dst: int, name: str) -> None:
        return None

    def mark(self, t: int, label: str) -> None:
        return None


NULL_TRACER: Tracer = NullTracer()
