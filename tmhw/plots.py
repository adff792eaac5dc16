"""Figures with matplotlib (PNG and SVG): the timeline of a run, one lane per component.
Reads traces only. The studies' bar and line charts are in ``tmhw.studies.figures``."""

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


def _color(lane: str) -> str:
    for key, c in LANE_COLORS.items():
        if key in lane:
            return c
    return "#64b5cd"

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
