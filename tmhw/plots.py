"""Figures with matplotlib (PNG and SVG): the timeline of a run, one lane per component.
Reads traces only. The studies' bar and line charts are in ``tmhw.studies.figures``."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from tmhw.sim.trace import Tracer, utilisation_window  # noqa: E402
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


def _lane_label(tracer: Tracer, group: list[str]) -> str:
    """A lane's name (every name of one signal, "a = b"), and what its utilisation is
    taken from when parallel resources serve it."""
    lane = group[0]
    res = tracer.served.get(lane, [])
    label = " = ".join(group)
    shared = tracer.shared.get(lane, [])
    if len(res) == 1:
        also = f", with {', '.join(s.rsplit('.', 1)[-1] for s in shared)}" if shared else ""
        return f"{label}\n(its {res[0].removeprefix(lane.rsplit('.', 1)[0] + '.')}{also})"
    if res:
        short = [r.removeprefix(lane + ".") for r in res]
        return f"{label}\n(mean of {len(res)}: {short[0]}..{short[-1]})"
    return label


def _spread(items: Sequence[Any], k: int) -> list[Any]:
    """At most ``k`` of ``items``, evenly spread over the sequence (all if fewer)."""
    if len(items) <= k:
        return list(items)
    return [items[i] for i in np.linspace(0, len(items) - 1, k).round().astype(int)]


#: Pixels per utilisation window in the timeline figure.
WINDOW_PX = 3.0


#: Lane order in the timeline: the NPU, the DMA engine, HBM, the flash, then the rest
#: in the trace's order (a lane goes where the first of its names matches a prefix).
LANE_ORDER = ("npu.compute", "system.npu", "npu.stall", "system.dma.fetch",
              "system.dma.writeback", "system.dma", "system.hbm", "system.flash")


def timeline_lanes(tracer: Tracer) -> list[list[str]]:
    """The figure's lanes: one per signal (``same_signals``: the names of a signal
    together), the resources that serve a lane folded into it, in ``LANE_ORDER``."""
    folded = {r for rs in tracer.served.values() for r in rs}
    groups = [g for head, g in tracer.same_signals().items() if head not in folded]

    def rank(group: list[str]) -> int:
        return min((i for i, p in enumerate(LANE_ORDER) for lane in group
                    if lane.startswith(p)), default=len(LANE_ORDER))

    return sorted(groups, key=rank)


def timeline_figure(tracer: Tracer, stem: str | Path, title: str = "") -> list[Path]:
    """One horizontal band per lane (``timeline_lanes``), filled in each window to the
    lane's busy share there (``Tracer.utilisation``: the time one of its spans was
    open; for a lane served by parallel resources, their mean, so a flash tier whose
    channels work 71% of the time fills 71% of its band however long requests are
    outstanding), its share over the run written beside it; a dashed line and label
    where each marked iteration starts (``Tracer.mark``), and flows drawn as arrows
    (prefetch -> op; green in time, red late). A caption under the axes says what a
    fill means."""
    lanes = timeline_lanes(tracer)
    end_ps = max(tracer.end(), 1)
    fig, ax = plt.subplots(figsize=(TIMELINE_WIDTH_IN, 0.55 * len(lanes) + 2.2))
    width_px = ax.get_position().width * TIMELINE_WIDTH_IN * DPI
    window = utilisation_window(end_ps, max(1, int(width_px / WINDOW_PX)))
    util = tracer.utilisation(window, end_ps)
    edges = np.append(np.arange(0, end_ps, window, dtype=np.int64), end_ps) / MS
    for i, group in enumerate(lanes):
        shares, whole = util[group[0]]
        ax.add_patch(Rectangle((0, i - 0.4), end_ps / MS, 0.8, facecolor="#eeeeee",
                               edgecolor="#bbbbbb", linewidth=0.5, zorder=0))
        ax.stairs(i + 0.4 - 0.8 * shares, edges, baseline=i + 0.4, fill=True,
                  color=_color(" ".join(group)), linewidth=0, zorder=1)
        ax.text(1.005, i, f"{whole:.0%}", transform=ax.get_yaxis_transform(),
                va="center", ha="left", fontsize=8)
    ypos = {lane: i for i, g in enumerate(lanes) for lane in g}
    flows = sorted((f for f in tracer.flows if f[0] in ypos and f[2] in ypos),
                   key=lambda f: f[1])
    for sl, ts, dl, td, name in _spread(flows, MAX_ARROWS):
        ax.annotate("", xy=(td / MS, ypos[dl]), xytext=(ts / MS, ypos[sl]),
                    arrowprops={"arrowstyle": "->", "lw": 0.6,
                                "color": "#c44e52" if "late" in name else "#2a7f3f"})
    ax.set_xlim(0, end_ps / MS)
    ax.set_ylim(len(lanes) - 0.5, -0.5)        # the first lane on top
    # a mark's label where it clears the last one drawn (measured as drawn: "it 12
    # (warm-up)" is twice as wide as "it 12")
    last_right = -np.inf
    for t, label in sorted(tracer.marks):
        ax.axvline(t / MS, color="#333333", lw=0.8, ls="--", zorder=3)
        if ax.transData.transform((t / MS, 0))[0] < last_right + 4:
            continue  # (its text starts there: no label, without making one)
        text = ax.text(t / MS, 1.0, " " + label, transform=ax.get_xaxis_transform(),
                       fontsize=7, va="bottom", ha="left", clip_on=False)
        last_right = text.get_window_extent().x1
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([_lane_label(tracer, g) for g in lanes], fontsize=7)
    ax.set_xlabel("time (ms)")
    ax.text(1.005, 1.0, "busy\n(run)", transform=ax.transAxes, fontsize=7, va="bottom",
            ha="left")
    if title:
        ax.set_title(title, pad=14 if tracer.marks else 6)
    fig.text(0.02, 0.0, textwrap.fill(caption(window), 150), fontsize=8, va="top",
             ha="left")
    return _save(fig, Path(stem))


def caption(window: int) -> str:
    """What the timeline's fill means, written under it."""
    return (f"Each band fills, window by window ({window / MS:.3g} ms each), to the share "
            "of the window its lane was busy: the time at least one of its spans was open; "
            "for a lane served by parallel resources (flash channels, a DMA link "
            "direction: in brackets), their mean busy share, not the time a request was "
            "outstanding on it. The grey band is 100%; the percentage on the right is "
            "the share over the whole run.")
