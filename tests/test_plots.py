"""The timeline figure fills each lane's band to its busy share per window (a lane
served by parallel resources: theirs), never dropping a span, so each lane reaches the end
of the run; iteration starts are dashed lines with their labels; no chart draws bars on a
log axis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.patches import StepPatch

from tmhw import plots
from tmhw.sim.trace import Tracer
from tmhw.sim.units import MS


def _fills(fig: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each band's fill, in lane order: (its share per window, the window edges in ms),
    read back from the drawn step patches (a band's fill rises 0.8 per unit share)."""
    out = []
    for i, patch in enumerate(p for p in fig.axes[0].patches if isinstance(p, StepPatch)):
        values, edges, baseline = patch.get_data()
        assert np.all(np.asarray(baseline) == i + 0.4)
        out.append(((i + 0.4 - values) / 0.8, edges))
    return out


def _share(spans: list[tuple[int, int]], edges_ps: np.ndarray) -> np.ndarray:
    """Each window's busy share of disjoint spans, by brute force."""
    out = []
    for a, b in zip(edges_ps[:-1], edges_ps[1:], strict=True):
        busy = sum(max(0, min(b, e) - max(a, s)) for s, e in spans)
        out.append(busy / (b - a))
    return np.array(out)


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    figs: list[Any] = []

    def keep(fig: Any, stem: Path) -> list[Path]:
        figs.append(fig)
        return []

    monkeypatch.setattr(plots, "_save", keep)
    return figs


def test_each_band_fills_to_its_lanes_busy_share_and_flash_to_its_channels(
        captured: list[Any]) -> None:
    """A flash tier with a request outstanding all 40 s while its two channels work 71%
    of the time between them fills 71% of its band, not all of it; a compute lane busy
    100 ms of every second fills 10% of it, window by window as the spans fall; the
    NPU's two names of one signal are one band; each band's share of the run is
    written beside it, and the caption says what a fill means."""
    tr = Tracer()
    end = 40_000 * MS
    tr.span("system.flash", 0, end, "read")
    tr.span("system.flash.ch0", 0, int(0.92 * end), "busy")
    tr.span("system.flash.ch1", 0, int(0.50 * end), "busy")
    tr.serve("system.flash", ["system.flash.ch0", "system.flash.ch1"])
    compute = [(k * 1000 * MS, k * 1000 * MS + 100 * MS) for k in range(40)]
    for lane in ("npu.compute", "system.npu"):
        for k, (s, e) in enumerate(compute):
            tr.span(lane, s, e, f"op{k}")
    for k in range(5):
        tr.mark(k * 8000 * MS, f"it {k}")
    plots.timeline_figure(tr, Path("unused"), title="t")
    fig = captured[0]
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "npu.compute = system.npu", "system.flash\n(mean of 2: ch0..ch1)"]
    (npu, edges), (flash, _) = _fills(fig)
    widths = np.diff(edges)
    assert float(np.sum(flash * widths)) / end * MS == pytest.approx(0.71)
    assert float(np.sum(npu * widths)) / end * MS == pytest.approx(0.10)
    edges_ps = np.round(edges * MS).astype(np.int64)
    assert npu == pytest.approx(_share(compute, edges_ps))
    assert edges[-1] == pytest.approx(40_000)                 # up to the run's end
    right = [t.get_text() for t in ax.texts if t.get_text().endswith("%")]
    assert right == ["10%", "71%"]
    caption = fig.texts[-1].get_text().replace("\n", " ")
    assert "share of the window its lane was busy" in caption
    assert "not the time a request was outstanding" in caption
    # Every iteration start is a dashed line with its label.
    assert sorted(round(ln.get_xdata()[0]) for ln in ax.lines) == [0, 8000, 16000, 24000,
                                                                   32000]
    assert [t.get_text().strip() for t in ax.texts if t.get_text().startswith(" it")] == [
        f"it {k}" for k in range(5)]


def test_iteration_labels_never_overlap(captured: list[Any]) -> None:
    """30 iterations, the first ten labelled warm-up (twice as wide as the others): every
    start is a dashed line, and of the labels only those that clear the last one drawn
    are kept, so none overlaps another as drawn and the run's last iterations, narrow
    labels, are labelled more densely than the warm-up's. (Spaced by a fixed 70 px, a
    warm-up label ran into the next one.)"""
    tr = Tracer()
    end = 30_000 * MS
    tr.span("npu.compute", 0, end, "op")
    for k in range(30):
        tr.mark(k * 1000 * MS, f"it {k}" + (" (warm-up)" if k < 10 else ""))
    plots.timeline_figure(tr, Path("unused"))
    ax = captured[0].axes[0]
    assert len(ax.lines) == 30
    labels = [t for t in ax.texts if t.get_text().startswith(" it")]
    boxes = sorted((b.x0, b.x1) for b in (t.get_window_extent() for t in labels))
    assert all(a1 <= b0 for (_, a1), (b0, _) in zip(boxes, boxes[1:], strict=False))
    kept = [int(t.get_text().split()[1]) for t in labels]
    assert kept[0] == 0
    warm = [k for k in kept if k < 10]
    steady = [k for k in kept if k >= 10]
    assert len(steady) / 20 > len(warm) / 10


def test_a_lane_of_many_short_spans_is_drawn_to_its_last_one(captured: list[Any]) -> None:
    """60,000 short flash bookings over 40 s: the band's fill reaches the window of the
    last one and its busy time is the spans' union, nothing dropped."""
    from tmhw.sim.trace import busy_intervals

    rng = np.random.default_rng(1)
    n = 60_000
    starts = np.sort(rng.integers(0, 40_000 * MS, size=n))
    ends = starts + rng.integers(1, 200_000_000, size=n)        # up to 0.2 ms each
    tr = Tracer()
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        tr.span("flash.ch0", s, e, "read")
    plots.timeline_figure(tr, Path("unused"))
    ((fill, edges),) = _fills(captured[0])
    us, ue = busy_intervals(starts, ends)
    assert float(np.sum(fill * np.diff(edges))) * MS == pytest.approx(float((ue - us).sum()))
    assert edges[-1] == pytest.approx(float(ends.max()) / MS)
    assert fill[-1] > 0


def test_arrows_are_spread_over_the_run_not_cut(captured: list[Any],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plots, "MAX_ARROWS", 10)
    tr = Tracer()
    tr.span("dma.fetch", 0, 99 * MS, "w")
    tr.span("npu.compute", 0, 100 * MS, "op")
    for k in range(100):
        tr.flow("dma.fetch", k * MS, "npu.compute", k * MS, "in time")
    plots.timeline_figure(tr, Path("unused"))
    arrows = [t for t in captured[0].axes[0].texts
              if getattr(t, "arrow_patch", None) is not None]
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
