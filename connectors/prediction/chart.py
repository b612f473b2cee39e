"""The forecast chart: actuals, the forecast and its interval band, one PNG per call.

matplotlib (Agg backend, no display) is imported on the first chart, never at start. With groups
the chart has one small panel per group, for the :data:`MAX_PANELS` groups with the largest
total, stacked; the others are only in the table.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

MAX_PANELS = 6
_WIDTH_IN, _PANEL_IN = 9.0, 2.6


@dataclass(frozen=True)
class Panel:
    """One series to draw: its observed points and the forecast with its bounds."""

    title: str
    actual_times: Sequence[dt.datetime]
    actual: Sequence[float]
    forecast_times: Sequence[dt.datetime]
    point: Sequence[float]
    lower: Sequence[float]
    upper: Sequence[float]


def draw(panels: Sequence[Panel], title: str, interval: float, handle: BinaryIO) -> None:
    """Write the chart of (at most :data:`MAX_PANELS`) panels as PNG to ``handle``."""
    import matplotlib

    matplotlib.use("Agg")  # no display, and no GUI toolkit imported
    from matplotlib.figure import Figure

    shown = list(panels)[:MAX_PANELS]
    figure = Figure(figsize=(_WIDTH_IN, 1.0 + _PANEL_IN * len(shown)), dpi=100, layout="constrained")
    axes = figure.subplots(len(shown), 1, squeeze=False)[:, 0]
    for ax, panel in zip(axes, shown, strict=True):
        ax.plot(panel.actual_times, panel.actual, color="#1f3b73", linewidth=1.2, label="actual")
        # The forecast starts from the last actual, so the two lines join.
        joined_times = [panel.actual_times[-1], *panel.forecast_times]
        ax.plot(joined_times, [panel.actual[-1], *panel.point], color="#d9480f", linewidth=1.6, label="forecast")
        ax.fill_between(
            panel.forecast_times,
            panel.lower,
            panel.upper,
            color="#d9480f",
            alpha=0.2,
            linewidth=0,
            label=f"{interval:.0%} interval",
        )
        ax.axvline(panel.actual_times[-1], color="#868e96", linewidth=0.8, linestyle="--")
        ax.set_title(panel.title, fontsize=10, loc="left")
        ax.grid(True, linewidth=0.3, alpha=0.6)
        ax.tick_params(labelsize=8)
    axes[0].legend(loc="upper left", fontsize=8, frameon=False)
    figure.suptitle(title, fontsize=11)
    figure.savefig(handle, format="png")
