"""Figures with matplotlib (PNG and SVG): the timeline of a run, one lane per component.
Reads traces only. The studies' bar and line charts are in ``tmhw.studies.figures``."""

from __future__ import annotations

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


def _color(lane: str) -> str:
    for key, c in LANE_COLORS.items():
        if key in lane:
            return c
    return "#64b5cd"

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
