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

from .._validate import require_number, require_sequence
from .base import draw_matrix, float_array, slants, thin_ticks

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
    grid, labels, shared, (lo, hi) = _heatmap_inputs(matrices, titles, xticklabels, yticklabels, vmin, vmax)
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
    given = np.asarray(ax, dtype=object).reshape(-1)
    if given.size != rows * cols:
        raise ValueError(f"ax must hold one axes per panel ({rows * cols}), got {given.size}")
    return given[0].figure, given.reshape(rows, cols)


def _heatmap_inputs(matrices, titles, xticklabels, yticklabels, vmin, vmax):
    """``show_heatmaps``'s arguments checked: the matrices as a grid (R, C, Q, K), one list of tick labels per panel
    for each axis, whether all panels share them, and the colour scale (lo, hi)."""
    data = float_array(matrices, "matrices")
    vmin, vmax = (None if v is None else require_number(v, name) for name, v in (("vmin", vmin), ("vmax", vmax)))
    if data.ndim not in (2, 3, 4) or 0 in data.shape:
        raise ValueError(
            f"matrices must have shape (Q, K), (P, Q, K) or (R, C, Q, K) with no empty axis, got shape {data.shape}"
        )
    grid = data.reshape((1, 1) + data.shape[-2:]) if data.ndim == 2 else data
    grid = grid[None] if grid.ndim == 3 else grid  # (R, C, Q, K)
    rows, cols, num_q, num_k = grid.shape
    panel_labels = {}  # name -> one list of labels per panel
    shared = True  # one set of labels for every panel: only the outer panels write them
    for name, labels, n in (("xticklabels", xticklabels, num_k), ("yticklabels", yticklabels, num_q)):
        if labels is not None:
            require_sequence(labels, name, "tick labels")
        per_panel = labels is not None and len(labels) > 0 and isinstance(labels[0], (list, tuple))
        shared = shared and not per_panel  # each panel its own, even when two agree (a slider keeps its frame)
        if per_panel and len(labels) != rows * cols:
            raise ValueError(f"{name} must hold one list per panel ({rows * cols}), got {len(labels)} lists")
        panel_labels[name] = list(labels) if per_panel else [labels] * (rows * cols)
        for panel in panel_labels[name]:
            if panel is not None and len(panel) != n:
                raise ValueError(
                    f"{name} must hold {n} labels (one per {'key' if name[0] == 'x' else 'query'}), got {len(panel)}"
                )
    if titles is not None:
        require_sequence(titles, "titles", "panel titles")
    if titles is not None and len(titles) != rows * cols:
        raise ValueError(f"titles must hold {rows * cols} titles (one per panel), got {len(titles)}")
    if not np.isfinite(data).all():
        raise ValueError("matrices must be finite; got NaN or infinity (check the masking)")
    lo = min(0.0, float(data.min())) if vmin is None else vmin
    hi = float(data.max()) if vmax is None else vmax
    return grid, panel_labels, shared, (lo, hi if hi > lo else lo + 1.0)
