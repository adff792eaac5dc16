"""The timeline figure draws every span: a lane's spans are merged into busy intervals
(gaps under one pixel closed), never dropped, so each lane reaches the end of the run;
iteration starts are dashed lines with their labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tmhw import plots
from tmhw.sim.trace import Tracer, busy_intervals
from tmhw.sim.units import MS


def _drawn(fig: Any) -> list[list[tuple[float, float]]]:
    """The bars of each lane's collection, as (x0, x1) in ms, in lane order."""
    ax = fig.axes[0]
    lanes = []
    for coll in ax.collections:
        bars = []
        for path in coll.get_paths():
            xs = path.vertices[:, 0]
            bars.append((float(xs.min()), float(xs.max())))
        lanes.append(sorted(bars))
    return lanes


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    figs: list[Any] = []

    def keep(fig: Any, stem: Path) -> list[Path]:
        figs.append(fig)
        return []

    monkeypatch.setattr(plots, "_save", keep)
    return figs


def test_every_lane_reaches_its_last_span_and_keeps_its_busy_time(captured: list[Any]) -> None:
    # 60,000 short flash bookings over 40 s (three times the 20,000 spans per lane the
    # figure used to keep: its flash lane then ended at a third of the run) and a
    # compute lane with gaps far wider than a pixel.
    rng = np.random.default_rng(1)
    n = 60_000
    starts = np.sort(rng.integers(0, 40_000 * MS, size=n))
    ends = starts + rng.integers(1, 200_000_000, size=n)        # up to 0.2 ms each
    tr = Tracer()
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        tr.span("flash.ch0", s, e, "read")
    for k in range(40):
        tr.span("npu.compute", k * 1000 * MS, k * 1000 * MS + 100 * MS, f"op{k}")
    for k in range(5):
        tr.mark(k * 8000 * MS, f"it {k}")
    plots.timeline_figure(tr, Path("unused"), title="t")
    fig = captured[0]
    flash, compute = _drawn(fig)
    end_ms = float(ends.max()) / MS
    assert flash[-1][1] == pytest.approx(end_ms)               # the last span is drawn
    assert flash[0][0] == pytest.approx(float(starts.min()) / MS)
    # The drawn bars are the busy intervals with gaps under one pixel closed: they cover
    # the spans' union, and exceed it by less than a pixel per closed gap.
    px_ms = fig.axes[0].get_xlim()[1] / (fig.axes[0].get_position().width
                                         * plots.TIMELINE_WIDTH_IN * plots.DPI)
    us, ue = busy_intervals(starts, ends)                        # the exact union
    union_ms = float((ue - us).sum()) / MS
    drawn_ms = sum(b - a for a, b in flash)
    closed = len(us) - len(flash)
    assert union_ms - 1e-6 <= drawn_ms <= union_ms + closed * px_ms + 1e-6
    # Sparse lanes keep their gaps: 40 bars of 100 ms.
    assert len(compute) == 40
    assert [b - a for a, b in compute] == pytest.approx([100.0] * 40)
    # Every iteration start is a dashed line with its label.
    ax = fig.axes[0]
    assert sorted(round(ln.get_xdata()[0]) for ln in ax.lines) == [0, 8000, 16000, 24000,
                                                                   32000]
    assert [t.get_text().strip() for t in ax.texts] == [f"it {k}" for k in range(5)]


def test_arrows_are_spread_over_the_run_not_cut(captured: list[Any],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plots, "MAX_ARROWS", 10)
    tr = Tracer()
    tr.span("dma.fetch", 0, 100 * MS, "w")
    tr.span("npu.compute", 0, 100 * MS, "op")
    for k in range(100):
        tr.flow("dma.fetch", k * MS, "npu.compute", k * MS, "in time")
    plots.timeline_figure(tr, Path("unused"))
    arrows = [t for t in captured[0].axes[0].texts if t.arrow_patch is not None]
    xs = sorted(a.xy[0] for a in arrows)
    assert len(xs) == 10 and xs[0] == 0 and xs[-1] == pytest.approx(99)


def test_no_figure_draws_bars_on_a_log_axis(tmp_path: Path) -> None:
    """A bar's length on a log axis depends on the axis's arbitrary bottom ($1.09 against
    $8.21 looked like 30x): a log-axis chart draws a dot per value, and a bar chart
    forced onto a log axis is refused."""
    import matplotlib.pyplot as plt

    from tmhw.studies import figures

    paths = figures.grouped_bars(["a", "b"], {"x": [1.0, 100.0], "y": [3.0, "does not fit"]},
                                 tmp_path / "dots", "value", log=True)
    assert all(p.is_file() for p in paths)
    fig, ax = plt.subplots()
    ax.bar([0, 1], [1.0, 100.0])
    with pytest.raises(ValueError, match="bars on a log axis"):
        figures._finish(fig, ax, tmp_path / "bars", "value", "", log=True)
