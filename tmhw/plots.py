"""Figures with matplotlib (PNG and SVG): the timeline of a run (one lane per
component), stacked energy, and sweep curves. Reads traces and reports only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

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
        fig.savefig(p, dpi=130, bbox_inches="tight")
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


def timeline_figure(tracer: Tracer, stem: str | Path, title: str = "",
                    max_spans_per_lane: int = 20000) -> list[Path]:
    """One horizontal lane per component; flows drawn as arrows (prefetch -> op)."""
    lanes = tracer.lanes()
    by_lane: dict[str, list[tuple[float, float]]] = {lane: [] for lane in lanes}
    for lane, s, e, _n, _a in tracer.spans:
        if len(by_lane[lane]) < max_spans_per_lane:
            by_lane[lane].append((s / MS, max((e - s) / MS, 1e-6)))
    fig, ax = plt.subplots(figsize=(12, 0.45 * len(lanes) + 1.5))
    for i, lane in enumerate(lanes):
        ax.broken_barh(by_lane[lane], (i - 0.4, 0.8), facecolors=_color(lane))
    ypos = {lane: i for i, lane in enumerate(lanes)}
    for sl, ts, dl, td, name in tracer.flows[:2000]:
        if sl in ypos and dl in ypos:
            late = "late" in name
            ax.annotate("", xy=(td / MS, ypos[dl]), xytext=(ts / MS, ypos[sl]),
                        arrowprops={"arrowstyle": "->", "lw": 0.6,
                                    "color": "#c44e52" if late else "#2a7f3f"})
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes, fontsize=8)
    ax.set_xlabel("time (ms)")
    ax.invert_yaxis()
    if title:
        ax.set_title(title)
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
