"""Figures with matplotlib (PNG and SVG): the timeline of a run (one lane per
component), stacked energy, and sweep curves. Reads traces and reports only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tmhw.sim.trace import Tracer  # noqa: E402
from tmhw.sim.units import MS  # noqa: E402

LANE_COLORS = {"compute": "#4c72b0", "stall": "#c44e52", "fetch": "#55a868",
               "writeback": "#dd8452", "gc": "#8172b3"}


def _save(fig: Any, stem: Path) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for ext in ("png", "svg"):
        p = stem.with_suffix(f".{ext}")
        fig.savefig(p, dpi=DPI, bbox_inches="tight")
        out.append(p)
    plt.close(fig)
    return out


def _legend_outside(ax: Any) -> None:
    """The legend to the right of the axes, where it can hide no bar or line."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def _color(lane: str) -> str:
    for key, c in LANE_COLORS.items():
        if key in lane:
            return c
    return "#64b5cd"

def _grouped(ax: Any, categories: Sequence[str], series: dict[str, Sequence[float]]) -> None:
    """One group of bars per category, one bar per series, side by side."""
    k = max(1, len(series))
    width = 0.8 / k
    for j, (name, vals) in enumerate(series.items()):
        xs = [i + (j - (k - 1) / 2) * width for i in range(len(categories))]
        ax.bar(xs, vals, width=width, label=name)
    ax.set_xticks(range(len(categories)))


def _panel_grid(n: int, max_cols: int, panel_in: tuple[float, float]) -> tuple[Any, Any]:
    """A grid of ``n`` panels, at most ``max_cols`` wide, each ``panel_in`` inches."""
    cols = min(max_cols, n)
    rows = -(-n // cols)
    return plt.subplots(rows, cols, figsize=(panel_in[0] * cols, panel_in[1] * rows),
                        squeeze=False)


def _finish_panels(fig: Any, axes: Any, n: int, title: str, stem: str | Path) -> list[Path]:
    """Hide unused panels, put one legend under the grid, title, save."""
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=min(7, len(labels)),
                   fontsize=8, bbox_to_anchor=(0.5, -0.02))
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return _save(fig, Path(stem))


#: The resolution figures are saved at (dots per inch).
DPI = 130
#: Width of the timeline figure (inches) and the most prefetch arrows it draws (spread
#: evenly over time when a run has more; a trace file keeps them all).
TIMELINE_WIDTH_IN = 12.0
MAX_ARROWS = 2000


def timeline_bars(tracer: Tracer, end_ps: int, width_px: float
                  ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], float]:
    """Each lane's bars for a timeline ``width_px`` pixels wide showing [0, end_ps]: its
    spans merged into busy intervals (ps), gaps shorter than one pixel closed, nothing
    dropped. Returns the bars and the pixel's length in ps."""
    px = end_ps / max(width_px, 1.0)
    return tracer.busy(min_gap=px), px


def _spread(items: Sequence[Any], k: int) -> list[Any]:
    """At most ``k`` of ``items``, evenly spread over the sequence (all if fewer)."""
    if len(items) <= k:
        return list(items)
    return [items[i] for i in np.linspace(0, len(items) - 1, k).round().astype(int)]


def timeline_figure(tracer: Tracer, stem: str | Path, title: str = "") -> list[Path]:
    """One horizontal lane per component, each lane's spans merged into the intervals it
    was busy (``timeline_bars``: every span is drawn, gaps under a pixel closed), a
    dashed line and label where each marked iteration starts (``Tracer.mark``), and
    flows drawn as arrows (prefetch -> op; green in time, red late)."""
    lanes = tracer.lanes()
    end_ps = max([e for _l, _s, e, _n, _a in tracer.spans] + [t for t, _ in tracer.marks]
                 + [1])
    fig, ax = plt.subplots(figsize=(TIMELINE_WIDTH_IN, 0.45 * len(lanes) + 1.8))
    width_px = ax.get_position().width * TIMELINE_WIDTH_IN * DPI
    bars, px = timeline_bars(tracer, end_ps, width_px)
    for i, lane in enumerate(lanes):
        s, e = bars[lane]
        ax.broken_barh(list(zip((s / MS).tolist(), ((e - s) / MS).tolist(), strict=True)),
                       (i - 0.4, 0.8), facecolors=_color(lane), linewidth=0)
    ypos = {lane: i for i, lane in enumerate(lanes)}
    flows = sorted((f for f in tracer.flows if f[0] in ypos and f[2] in ypos),
                   key=lambda f: f[1])
    for sl, ts, dl, td, name in _spread(flows, MAX_ARROWS):
        ax.annotate("", xy=(td / MS, ypos[dl]), xytext=(ts / MS, ypos[sl]),
                    arrowprops={"arrowstyle": "->", "lw": 0.6,
                                "color": "#c44e52" if "late" in name else "#2a7f3f"})
    ax.set_xlim(0, end_ps / MS)
    ax.set_ylim(len(lanes) - 0.5, -0.5)        # the first lane on top
    last_label = -np.inf
    for t, label in sorted(tracer.marks):
        ax.axvline(t / MS, color="#333333", lw=0.8, ls="--", zorder=3)
        if t / px - last_label >= 70:          # labels at least 70 px apart
            ax.text(t / MS, 1.0, " " + label, transform=ax.get_xaxis_transform(),
                    fontsize=7, va="bottom", ha="left", clip_on=False)
            last_label = t / px
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes, fontsize=8)
    ax.set_xlabel("time (ms)")
    if title:
        ax.set_title(title, pad=14 if tracer.marks else 6)
    return _save(fig, Path(stem))


def stacked_bars(categories: Sequence[str], series: dict[str, Sequence[float]],
                 stem: str | Path, ylabel: str, title: str = "") -> list[Path]:
    """Stacked bars: one bar per category, one segment per series key."""
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(categories)), 4))
    bottom = [0.0] * len(categories)
    for name, vals in series.items():
        ax.bar(categories, vals, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, vals, strict=False)]
    ax.set_ylabel(ylabel)
    _legend_outside(ax)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    if title:
        ax.set_title(title)
    return _save(fig, Path(stem))


def grouped_bars(categories: Sequence[str], series: dict[str, Sequence[float]],
                 stem: str | Path, ylabel: str, title: str = "",
                 log: bool = False) -> list[Path]:
    """Grouped bars: one group per category, one bar per series key."""
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(categories)), 4))
    _grouped(ax, categories, series)
    ax.set_xticklabels(categories)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    _legend_outside(ax)
    if title:
        ax.set_title(title)
    return _save(fig, Path(stem))


def line_plot(xs: Sequence[float], series: dict[str, Sequence[float]], stem: str | Path,
              xlabel: str, ylabel: str, title: str = "", logx: bool = False) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name, ys in series.items():
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logx:
        ax.set_xscale("log")
    _legend_outside(ax)
    if title:
        ax.set_title(title)
    return _save(fig, Path(stem))


def line_panels(xs: Sequence[float], panels: dict[str, dict[str, Sequence[float]]],
                stem: str | Path, xlabel: str, title: str = "", logx: bool = False,
                xticklabels: Sequence[str] | None = None) -> list[Path]:
    """One small line plot per panel (panel title -> series name -> ys, NaN for a gap),
    sharing the x axis: sweep curves of several figures side by side."""
    n = max(1, len(panels))
    fig, axes = _panel_grid(n, 3, (4.2, 3.2))
    for ax, (ptitle, series) in zip(axes.flat, panels.items(), strict=False):
        for name, ys in series.items():
            ax.plot(xs, ys, marker="o", ms=3, label=name)
        ax.set_title(ptitle, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        if logx:
            ax.set_xscale("log")
        if xticklabels is not None:
            ax.minorticks_off()   # a log axis's minor labels would overprint these
            ax.set_xticks(list(xs))
            ax.set_xticklabels(xticklabels, fontsize=7)
        ax.tick_params(labelsize=7)
    return _finish_panels(fig, axes, n, title, stem)


def bar_panels(panels: dict[str, tuple[Sequence[str], dict[str, Sequence[float]]]],
               stem: str | Path, ylabel: str, title: str = "") -> list[Path]:
    """Grouped bars in several panels: panel title -> (categories, series -> values)."""
    n = max(1, len(panels))
    fig, axes = _panel_grid(n, 2, (5.5, 3.4))
    for ax, (ptitle, (cats, series)) in zip(axes.flat, panels.items(), strict=False):
        _grouped(ax, cats, series)
        ax.set_xticklabels(cats, fontsize=7)
        ax.set_title(ptitle, fontsize=9)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
    return _finish_panels(fig, axes, n, title, stem)
