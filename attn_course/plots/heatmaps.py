"""Heatmaps of attention weights: ``show_heatmaps``, the figure of notebooks 01, 03, 05, 07 and 11.

Like every figure of ``attn_course.plots`` it takes ``ax=None``, draws on a new figure when none is given, returns
the ``Figure``, labels its axes, and never calls ``plt.show()`` or changes global matplotlib settings. In a notebook,
end the cell with ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .._validate.figures import require_heatmaps
from .base import draw_matrix, slants, thin_ticks

__all__ = ["show_heatmaps"]

ANNOTATE_MAX_CELLS = 100  # "auto" annotates matrices up to 10 x 10


def show_heatmaps(
    matrices,
    xlabel: str = "Keys",
    ylabel: str = "Queries",
    titles: Sequence[str] | None = None,
    xticklabels: Sequence[str] | None = None,
    yticklabels: Sequence[str] | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "Reds",
    annotate: bool | str = "auto",
    fmt: str = ".2f",
    figsize: tuple[float, float] | None = None,
    colorbar_label: str = "attention weight",
    suptitle: str | None = None,
    ax=None,
) -> Figure:
    """Attention weights as heatmaps: rows are queries, columns are keys.

    Args:
        matrices: (Q, K) one panel, (P, Q, K) P panels in a row, or (R, C, Q, K) a grid.
        xlabel, ylabel: axis labels (on the bottom row and the first column).
        titles: one title per panel (P, or R * C in row order).
        xticklabels: K key labels (tokens); yticklabels: Q query labels. Either may instead be a list with
            one list of labels per panel (sequences with different tokens); the panels then label their own axes.
        vmin, vmax: the colour scale, shared by every panel; by default from min(0, data) to max(data).
        annotate: write each value in its cell; ``"auto"`` does so up to 10 x 10 cells.
        fmt: number format of the annotations.
        colorbar_label: the label of the one colour bar.
        ax: axes to draw on instead of a new figure: one Axes for one panel, else an array of
            one Axes per panel (R * C, in row order).

    Returns:
        The Figure, with one colour bar for all panels.
    """
    grid, labels, shared, (lo, hi) = require_heatmaps(matrices, titles, xticklabels, yticklabels, vmin, vmax, ax)
    rows, cols, num_q, num_k = grid.shape  # (R, C, Q, K)
    slanted = any(slants(p, num_k) for p in labels["xticklabels"])  # one rule for all panels
    if annotate == "auto":
        annotate = num_q * num_k <= ANNOTATE_MAX_CELLS
    if figsize is None:
        cell = 0.45 if annotate else min(0.25, 5.0 / max(num_q, num_k))
        figsize = (cols * max(2.2, num_k * cell + 1.0) + 1.2, rows * max(2.0, num_q * cell + 1.5))
    fig, axes = _panel_axes(ax, rows, cols, figsize)
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            # Cells are not forced square: the constrained layout measures a fixed-aspect axes before its aspect
            # shrinks it, and left the x labels outside the figure (matplotlib issue 11809); figsize keeps them near
            # square instead.
            draw_matrix(ax, grid[r, c], lo, hi, cmap, bool(annotate), fmt, square=False)
            # With one set of labels for all panels, only the bottom row and the first column write them.
            if r == rows - 1 or not shared:
                thin_ticks(ax, "x", labels["xticklabels"][r * cols + c], num_k, slanted=slanted)
            else:
                ax.set_xticks([])
            if c == 0 or not shared:
                thin_ticks(ax, "y", labels["yticklabels"][r * cols + c], num_q)
            else:
                ax.set_yticks([])
            ax.tick_params(length=0)
            ax.set(xlabel=xlabel if r == rows - 1 else "", ylabel=ylabel if c == 0 else "")
            if titles is not None:
                ax.set_title(titles[r * cols + c], fontsize=10)
    fig.colorbar(axes[0, 0].collections[0], ax=axes, shrink=0.8, label=colorbar_label)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def _panel_axes(ax, rows: int, cols: int, figsize) -> tuple:
    """The figure and its (R, C) panels: the axes given (one per panel, in row order), or those of a new figure."""
    if ax is None:
        fig, axes = plt.subplots(rows, cols, figsize=figsize, squeeze=False, layout="constrained")
        return fig, axes
    given = np.asarray(ax, dtype=object).reshape(rows, cols)
    return given[0, 0].figure, given
