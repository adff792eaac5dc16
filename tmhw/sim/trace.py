"""Tracing: spans (a lane was busy from t0 to t1 doing X) and counters (a level changed).

``Tracer`` records into memory and writes Chrome/Perfetto trace-event JSON (``X`` complete
events, one thread per lane, ``C`` counter events) or a VCD through pyvcd (one 1-bit busy
wire per lane and one integer variable per counter). ``NULL_TRACER`` is the no-op used
when tracing is off: its methods do nothing, so the hot path pays one call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Tracer:
    """Records spans and counters. Times in ps."""

    enabled = True

    def __init__(self) -> None:
        self.spans: list[tuple[str, int, int, str, dict[str, Any] | None]] = []
        self.counters: list[tuple[str, int, float]] = []
        self.flows: list[tuple[str, int, str, int, str]] = []

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

    def lanes(self) -> list[str]:
        seen: dict[str, None] = {}
        for lane, *_ in self.spans:
            seen.setdefault(lane, None)
        return list(seen)

    # -- writers -----------------------------------------------------------------------
    def chrome_events(self) -> list[dict[str, Any]]:
        """Trace events; timestamps in microseconds as the format wants. Per lane, spans
        are emitted sorted by start (ties: longer first) so they nest in viewers."""
        lanes = self.lanes()
        tid = {lane: i + 1 for i, lane in enumerate(lanes)}
        ev: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": 1,
                                     "args": {"name": "tmhw"}}]
        for lane, i in tid.items():
            ev.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": i,
                       "args": {"name": lane}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": i,
                       "args": {"sort_index": i}})
        for lane, s, e, name, args in sorted(self.spans, key=lambda x: (tid[x[0]], x[1], -x[2])):
            d: dict[str, Any] = {"ph": "X", "name": name, "pid": 1, "tid": tid[lane],
                                 "ts": s / 1e6, "dur": (e - s) / 1e6}
            if args:
                d["args"] = args
            ev.append(d)
        for name, t, v in sorted(self.counters, key=lambda x: (x[0], x[1])):
            ev.append({"ph": "C", "name": name, "pid": 1, "ts": t / 1e6, "args": {name: v}})
        for k, (sl, ts, dl, td, name) in enumerate(self.flows):
            if sl in tid and dl in tid:
                ev.append({"ph": "s", "id": k, "name": name, "cat": "flow", "pid": 1,
                           "tid": tid[sl], "ts": ts / 1e6})
                ev.append({"ph": "f", "id": k, "name": name, "cat": "flow", "pid": 1,
                           "tid": tid[dl], "ts": td / 1e6, "bp": "e"})
        return ev

    def write_chrome(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps({"traceEvents": self.chrome_events(),
                                          "displayTimeUnit": "ns"}, default=_json_scalar))

    def write_vcd(self, path: str | Path) -> None:
        """Busy wires per lane (1 while any span is open) and counter values, 1 ps scale.

        Every edge at one time is netted first, so back-to-back spans keep the wire high
        instead of writing a 0 and a 1 at the same instant; names are made VCD-safe and
        unique (two lanes may sanitise to the same identifier, a counter may share a
        lane's name)."""
        from vcd import VCDWriter

        changes: list[tuple[int, int, str, int | float]] = []
        edges: dict[str, dict[int, int]] = {}
        for lane, s, e, _name, _a in self.spans:
            d = edges.setdefault(lane, {})
            d[s] = d.get(s, 0) + 1
            d[e] = d.get(e, 0) - 1
        for lane, d in edges.items():
            open_n = 0
            last = 0
            for t in sorted(d):
                open_n += d[t]
                v = 1 if open_n > 0 else 0
                if v != last:
                    changes.append((t, 0, lane, v))
                    last = v
        # The last value recorded at one time is the counter's value at that time.
        final: dict[tuple[str, int], float] = {}
        for name, t, val in self.counters:
            final[(name, t)] = val
        for (name, t), val in final.items():
            changes.append((t, 1, name, val))
        changes.sort(key=lambda x: (x[0], x[1], x[2]))
        with open(path, "w") as fh, VCDWriter(fh, timescale="1 ps", date="today") as w:
            vars_: dict[tuple[int, str], Any] = {}
            taken: set[tuple[str, str]] = set()

            def register(kind: int, name: str) -> None:
                parts = [_safe(p) for p in ("tmhw." + name).split(".")]
                scope, leaf = ".".join(parts[:-1]), parts[-1]
                ident, k = leaf, 1
                while (scope, ident) in taken:
                    ident, k = f"{leaf}_{k}", k + 1
                taken.add((scope, ident))
                if kind == 0:
                    vars_[(0, name)] = w.register_var(scope, ident, "wire", size=1, init=0)
                else:
                    vars_[(1, name)] = w.register_var(scope, ident, "real", init=0.0)

            for lane in edges:
                register(0, lane)
            for name in dict.fromkeys(c[0] for c in self.counters):
                register(1, name)
            for t, kind, name, value in changes:
                w.change(vars_[(kind, name)], t, float(value) if kind else value)


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


NULL_TRACER: Tracer = NullTracer()
