"""A study's charts (PNG and SVG): grouped and stacked bars, and panels of lines or bars.

A value is a number, or a short label (``"does not fit"``) drawn where its bar or point
would be, so that a policy that did not run is never a silent gap beside its legend
entry. Log axes carry 1-2-5 ticks written as plain numbers, so that a range within one
decade still has labels.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
from matplotlib.transforms import blended_transform_factory

from tmhw.plots import _save  # (importing tmhw.plots also selects the Agg backend)

#: characters a line of a heatmap cell's note takes (5.5 pt text in a cell 1.15 in wide)
_NOTE_WIDTH = 26

Value = float | str


def _numbers(vals: Sequence[Value]) -> list[float]:
    return [v if isinstance(v, int | float) else math.nan for v in vals]


def _log_ticks(axis: Any, lo: float, hi: float) -> None:
    """Ticks at 1-2-5 per decade, denser where the axis spans under two decades, and at
    every integer multiple where it spans under one (so a narrow axis still has three)."""
    decades = math.log10(hi / lo) if hi > 0 and lo > 0 else 3.0
    subs = tuple(float(i) for i in range(1, 10)) if decades < 0.7 else \
        (1.0, 1.5, 2.0, 3.0, 5.0, 7.0) if decades < 2 else (1.0, 2.0, 5.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.6g}"))
    axis.set_minor_formatter(NullFormatter())


def _label_gaps(ax: Any, xs: Sequence[float], vals: Sequence[Value]) -> None:
    """Write each label of ``vals`` upright at its x, from the bottom of the axes."""
    at_bottom = blended_transform_factory(ax.transData, ax.transAxes)
    for x, v in zip(xs, vals, strict=True):
        if isinstance(v, str):
            ax.text(x, 0.02, v, transform=at_bottom, rotation=90, ha="center",
                    va="bottom", fontsize=7, color="#555555")


def _colour(j: int, k: int) -> Any:
    """The colour of series ``j`` of ``k``: matplotlib's ten-colour cycle, or twenty
    colours where there are more series than ten (no two alike up to twenty)."""
    return plt.get_cmap("tab10")(j % 10) if k <= 10 else plt.get_cmap("tab20")(j % 20)


def _grouped(ax: Any, categories: Sequence[str],
             series: Mapping[str, Sequence[Value]], dots: bool = False) -> None:
    """One group of bars per category, one bar per series, side by side; with ``dots``
    a marker at each value instead of a bar (for a log axis, where a bar's length would
    depend on the axis's arbitrary bottom and misstate proportions)."""
    k = max(1, len(series))
    width = 0.8 / k
    for j, (name, vals) in enumerate(series.items()):
        xs = [i + (j - (k - 1) / 2) * width for i in range(len(categories))]
        missing = {v for v in vals if isinstance(v, str)}
        label = f"{name} ({missing.pop()})" if len(missing) == 1 and all(
            isinstance(v, str) for v in vals) else name
        if dots:
            ax.plot(xs, _numbers(vals), marker="o", markersize=7, linestyle="none",
                    label=label, color=_colour(j, k))
        else:
            ax.bar(xs, _numbers(vals), width=width, label=label, color=_colour(j, k))
        _label_gaps(ax, xs, vals)
    ax.set_xticks(range(len(categories)))
    # every group whole, also where its last bars are missing (matplotlib's limits
    # follow only the bars drawn, and cut a missing bar's label off the axes)
    ax.set_xlim(-0.5, len(categories) - 0.5)


def _finish(fig: Any, ax: Any, stem: str | Path, ylabel: str, title: str,
            log: bool) -> list[Path]:
    ax.set_ylabel(ylabel)
    if log:
        if ax.patches:
            raise ValueError(f"{stem}: bars on a log axis misstate proportions; draw dots")
        ax.set_yscale("log")
        _log_ticks(ax.yaxis, *ax.get_ylim())
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    if title:
        ax.set_title(title)
    return _save(fig, Path(stem))


def grouped_bars(categories: Sequence[str], series: Mapping[str, Sequence[Value]],
                 stem: str | Path, ylabel: str, title: str = "",
                 log: bool = False) -> list[Path]:
    """Grouped bars: one group per category, one bar per series key; with ``log``, a
    dot per value on a log axis (bars start at zero on a linear one)."""
    # wide enough that each group's label (its longest line) clears its neighbours'
    longest = max((len(line) for c in categories for line in c.split("\n")), default=0)
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(categories),
                                        0.085 * longest * len(categories)), 4))
    _grouped(ax, categories, series, dots=log)
    if log:
        ax.grid(axis="y", which="major", linewidth=0.4, alpha=0.5)
    ax.set_xticklabels(categories)
    return _finish(fig, ax, stem, ylabel, title, log)


def stacked_bars(categories: Sequence[str], series: Mapping[str, Sequence[Value]],
                 stem: str | Path, ylabel: str, title: str = "") -> list[Path]:
    """Stacked bars: one bar per category, one segment per series key; a category whose
    first series holds a label is drawn as that label."""
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(categories)), 4))
    xs = list(range(len(categories)))
    bottom = [0.0] * len(categories)
    # more segments than the default cycle's ten colours: twenty, then hatched, so that
    # no two segments look the same
    many = len(series) > 10
    for i, (name, vals) in enumerate(series.items()):
        nums = [0.0 if math.isnan(v) else v for v in _numbers(vals)]
        style: dict[str, Any] = ({"color": plt.get_cmap("tab20")(i % 20),
                                  "hatch": ("", "//", "..", "xx")[i // 20 % 4]}
                                 if many else {})
        ax.bar(xs, nums, bottom=bottom, label=name, **style)
        bottom = [b + v for b, v in zip(bottom, nums, strict=True)]
    first = next(iter(series.values()), [])
    _label_gaps(ax, xs, first)
    ax.set_xticks(xs)
    ax.set_xticklabels(categories, rotation=30, ha="right")
    return _finish(fig, ax, stem, ylabel, title, False)


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
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)),
                   fontsize=8, bbox_to_anchor=(0.5, -0.02))
    if title:
        fig.suptitle(title)
    rows = -(-len(labels) // 4) if handles else 0
    fig.tight_layout(rect=(0, 0.03 + 0.03 * rows, 1, 1))
    return _save(fig, Path(stem))


def _line_label(name: str, xlabels: Sequence[str], vals: Sequence[Value]) -> str:
    """A line's legend entry, saying where it has no points and why."""
    gaps: dict[str, list[str]] = {}
    for x, v in zip(xlabels, vals, strict=True):
        if isinstance(v, str):
            gaps.setdefault(v, []).append(x)
    if not gaps:
        return name
    if len(gaps) == 1 and len(next(iter(gaps.values()))) == len(vals):
        return f"{name} ({next(iter(gaps))})"
    return name + " (" + "; ".join(f"{why} at {', '.join(xs)}"
                                   for why, xs in gaps.items()) + ")"


def line_panels(xs: Sequence[float], panels: Mapping[str, Mapping[str, Sequence[Value]]],
                stem: str | Path, xlabel: str, title: str = "", logx: bool = False,
                xticklabels: Sequence[str] | None = None,
                logy: Sequence[str] = ()) -> list[Path]:
    """One small line plot per panel (panel title -> series name -> values), sharing the
    x axis: sweep curves of several figures side by side. The panels named in ``logy``
    have a log y axis (where one series sets a scale that flattens the others)."""
    n = max(1, len(panels))
    fig, axes = _panel_grid(n, 3, (4.2, 3.2))
    xl = list(xticklabels) if xticklabels is not None else [f"{x:g}" for x in xs]
    for ax, (ptitle, series) in zip(axes.flat, panels.items(), strict=False):
        for j, (name, ys) in enumerate(series.items()):
            ax.plot(xs, _numbers(ys), marker="o", ms=3, label=_line_label(name, xl, ys),
                    color=_colour(j, len(series)))
        ax.set_title(ptitle + (" (log scale)" if ptitle in logy else ""), fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        if ptitle in logy:
            ax.set_yscale("log")
            lo, hi = ax.get_ylim()
            _log_ticks(ax.yaxis, lo, hi)
        if logx:
            ax.set_xscale("log")
        ax.minorticks_off()   # a log axis's minor labels would overprint these
        ax.set_xticks(list(xs))
        ax.set_xticklabels(xl, fontsize=7)
        ax.tick_params(labelsize=7)
    return _finish_panels(fig, axes, n, title, stem)


def bar_panels(panels: Mapping[str, tuple[Sequence[str], Mapping[str, Sequence[Value]]]],
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


def heatmaps(panels: dict[str, list[list[Value]]], rows: Sequence[str], cols: Sequence[str],
             stem: str | Path, ylabel: str, xlabel: str, title: str = "",
             boundary: list[list[bool]] | None = None, boundary_label: str = "",
             cbar: str = "", notes: list[list[str]] | None = None,
             max_cols: int = 0) -> list[Path]:
    """One heatmap per panel (title -> rows x cols of values, a label where a cell has no
    number), sharing a diverging colour scale centred on 0, each cell written out.
    ``boundary`` (rows x cols) marks a region: its cells carry ``boundary_label`` and a
    thick line is drawn along every cell edge between a marked and an unmarked cell.
    ``notes`` (rows x cols) is a line of small text at the top of each cell (e.g. which
    policies do not fit there). ``max_cols`` (0: all in one row) wraps the panels into
    rows of at most that many."""
    n = max(1, len(panels))
    ncols = min(n, max_cols) if max_cols > 0 else n
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols,
                             figsize=(ncols * ((1.15 if notes else 0.9) * len(cols) + 1.6)
                                      + 1.2,
                                      nrows * ((0.6 if notes else 0.5) * len(rows) + 1.6)
                                      + 0.3),
                             squeeze=False, constrained_layout=True)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    nums = [v for grid in panels.values() for r in grid for v in _numbers(r)
            if not math.isnan(v)]
    lim = max([abs(v) for v in nums] + [1e-9])
    image = None
    for ax, (ptitle, grid) in zip(axes.flat, panels.items(), strict=False):
        data = [_numbers(r) for r in grid]
        image = ax.imshow(data, cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
        for i, r in enumerate(grid):
            for j, v in enumerate(r):
                dark = not isinstance(v, str) and abs(v) > 0.6 * lim
                ax.text(j, i, v if isinstance(v, str) else f"{v:+.0%}", ha="center",
                        va="center", fontsize=7 if isinstance(v, str) else 8,
                        color="white" if dark else "black")
                note = notes[i][j] if notes else ""
                if note:  # "what: who" on two lines or more, to fit the cell
                    ax.text(j, i - 0.3, _fit_note(note), ha="center",
                            va="center", fontsize=5.5, linespacing=0.9,
                            color="#dddddd" if dark else "#444444")
        if boundary is not None:
            _region_edges(ax, boundary)
            for i, marks in enumerate(boundary):
                for j, marked in enumerate(marks):
                    if marked:
                        ax.text(j, i + 0.32, boundary_label, ha="center", va="center",
                                fontsize=6, color="#444444")
        ax.set_xticks(range(len(cols)))
        ax.set_xticklabels(cols, fontsize=7, rotation=30, ha="right")
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(rows, fontsize=7)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(ptitle, fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    if image is not None and cbar:
        # ticks as far apart as the scale's tenth: a scale of +-2% ticks every 0.5%,
        # which whole percents would label "+0%" twice
        fmt = f"{{:+.{_decimals(lim)}%}}"
        fig.colorbar(image, ax=list(axes.flat), shrink=0.8, label=cbar,
                     format=FuncFormatter(lambda v, _pos: fmt.format(v)))
    return _save(fig, Path(stem))


def _decimals(lim: float) -> int:
    """Decimals of a percentage that tell apart the ticks of a scale of +-``lim``
    (matplotlib puts some eight of them on it): 0 from 10%, 1 from 1%, else 2."""
    return 0 if lim >= 0.1 else 1 if lim >= 0.01 else 2


def _fit_note(note: str) -> str:
    """A cell's note in lines of at most ``_NOTE_WIDTH`` characters, its first "what:
    who" broken after the colon (a list of strategies or policies is wider than a
    cell)."""
    lines = note.replace(": ", ":\n", 1).split("\n")
    return "\n".join(textwrap.fill(line, _NOTE_WIDTH) for line in lines)


def _region_edges(ax: Any, marked: list[list[bool]]) -> None:
    """Thick lines along the cell edges between marked and unmarked cells."""
    nr, nc = len(marked), len(marked[0]) if marked else 0
    for i in range(nr):
        for j in range(nc):
            if j + 1 < nc and marked[i][j] != marked[i][j + 1]:
                ax.plot([j + 0.5, j + 0.5], [i - 0.5, i + 0.5], color="black", lw=2.5)
            if i + 1 < nr and marked[i][j] != marked[i + 1][j]:
                ax.plot([j - 0.5, j + 0.5], [i + 0.5, i + 0.5], color="black", lw=2.5)
