"""Figures of notebook 04: the matrices of the worked 3-token example, step by step.

The computation is ``selfattention.self_attention_steps``; this module only draws what it returns.
Tokens, input numbers and dimensions are counted from 0, as Python indexes them.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import require_number
from .._validate.figures import require_matrix, require_step_figure
from ..data import three_token_example
from ..selfattention import SelfAttentionSteps, self_attention_steps
from .base import as_numpy, draw_matrix, set_matrix

__all__ = ["show_matrix", "plot_self_attention_steps", "plot_worked_example"]


def show_matrix(
    matrix,
    ax=None,
    title: str = "",
    row_labels=None,
    col_labels=None,
    fmt: str = ".2f",
    cmap: str = "Blues",
    figsize=(3.0, 2.4),
    vmin: float | None = None,
    vmax: float | None = None,
) -> Figure:
    """A small matrix as an annotated heatmap: every number written in its cell.

    Args:
        matrix: (R, C) tensor or array.
        ax: axes to draw on, or None for a new figure.
        title: the panel's title (say what the matrix is, e.g. ``"Q = X W_Q"``).
        row_labels, col_labels: R and C labels (tokens, dimensions).
        fmt: number format of the annotations.
        vmin, vmax: the colour scale (to share one between panels); by default the matrix's own range.
    """
    data = require_matrix(matrix, row_labels, col_labels, vmin, vmax)  # (R, C)
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    low, high = _colour_range(data)
    low, high = (low if vmin is None else vmin), (high if vmax is None else vmax)
    draw_matrix(ax, data, low, high, cmap, True, fmt, square=False, gridlines=True)
    ax.set_xticks(np.arange(data.shape[1]) + 0.5 if col_labels is not None else [], col_labels)
    ax.set_yticks(np.arange(data.shape[0]) + 0.5 if row_labels is not None else [], row_labels)
    ax.tick_params(length=0, labelsize=8, bottom=False, left=False)  # no tick marks: of length 0, not even drawn
    ax.set_title(title, fontsize=9)
    return ax.figure


def _colour_range(data: np.ndarray) -> tuple[float, float]:
    """show_matrix's colour scale: from the smallest value to the largest (a range of 1 for a constant matrix)."""
    low, high = float(data.min()), float(data.max())
    return low, high if high > low else low + 1


def _step_panels(inputs, steps: SelfAttentionSteps, scale: bool, token: int, names: list[str]) -> list[tuple]:
    """The eight panels of ``plot_self_attention_steps``: (matrix, title, column labels, number format)."""
    dims = [f"dim {j}" for j in range(steps.queries.shape[1])]
    divide = " / sqrt(D)" if scale else ""
    value_dims = [f"dim {j}" for j in range(steps.values.shape[1])]
    return [
        (inputs, "inputs X", [f"i{j}" for j in range(inputs.shape[1])], ".3g"),
        (steps.queries, "queries Q = X W_Q", dims, ".3g"),
        (steps.keys, "keys K = X W_K", dims, ".3g"),
        (steps.values, "values V = X W_V", value_dims, ".3g"),
        (steps.scores, f"scores Q K^T{divide} (row: query)", names, ".2f"),
        (steps.weights, "weights: softmax of each row (0 to 1)", names, ".4f"),
        (steps.weighted[token], f"weighted values of {names[token]}: w_j v_j", value_dims, ".3f"),
        (steps.outputs, "outputs: sum of weighted values", value_dims, ".4f"),
    ]


WEIGHTS_PANEL = 5  # the weights have their own colour scale, 0 to 1; the other panels share one


def _shared_ranges(panels: list[tuple]) -> list[tuple[float, float]]:
    """One colour range per panel: 0 to 1 for the weights, the range of all the other panels for the rest."""
    others = [np.asarray(as_numpy(m)) for i, (m, *_) in enumerate(panels) if i != WEIGHTS_PANEL]
    shared = _colour_range(np.array([min(float(a.min()) for a in others), max(float(a.max()) for a in others)]))
    return [(0.0, 1.0) if i == WEIGHTS_PANEL else shared for i in range(len(panels))]


def plot_self_attention_steps(
    inputs,
    w_query,
    w_key,
    w_value,
    scale: bool = False,
    token: int = 0,
    token_names=None,
    axes=None,
    figsize=(13.0, 5.6),
) -> Figure:
    """All steps in one figure: X, Q, K, V; scores, weights, one token's weighted values, outputs.

    Every panel but the weights shares one colour scale, so one colour means one number across panels; the weights
    (0 to 1) have their own, in another colour. In the scores and weights, rows are queries and columns keys
    (the axis labelled "key"). A slider panel updates the figure in place (numbers, colours and titles).

    Args:
        inputs, w_query, w_key, w_value, scale: as in ``self_attention_steps``.
        token: whose weighted values to show (0-based).
        token_names: T names for the rows (default ``x0, x1, ...``).
        axes: 8 axes to draw on (two rows of four), or None for a new figure.
    """
    names = require_step_figure(inputs, w_query, w_key, w_value, token, token_names, axes)
    steps = self_attention_steps(inputs, w_query, w_key, w_value, scale)
    if axes is None:
        _, axes = plt.subplots(2, 4, figsize=figsize, layout="constrained")
    axes = np.asarray(axes, dtype=object).reshape(-1)  # (8,)
    fig = axes[0].figure
    panels = _step_panels(inputs, steps, scale, token, names)
    for i, (ax, panel, colour_range) in enumerate(zip(axes, panels, _shared_ranges(panels), strict=True)):
        _draw_step(ax, panel, colour_range, names, "Oranges" if i == WEIGHTS_PANEL else "Blues")
    suptitle = fig.suptitle(_suptitle(scale), fontsize=11)
    drawn = (panels, names)  # the shapes and labels the layout made room for

    def update(inputs, w_query, w_key, w_value, scale=False, token=0, token_names=None, **_) -> bool:
        """New values on the same artists (see ``attn_course.widgets``); True when they need a new figure."""
        names = require_step_figure(inputs, w_query, w_key, w_value, token, token_names)
        steps = self_attention_steps(inputs, w_query, w_key, w_value, scale)
        panels = _step_panels(inputs, steps, scale, token, names)
        if names != drawn[1] or any(
            new[0].shape != old[0].shape or new[2] != old[2] for new, old in zip(panels, drawn[0], strict=True)
        ):
            return True  # other tick labels or another number of cells
        for ax, (matrix, title, _, fmt), (low, high) in zip(axes, panels, _shared_ranges(panels), strict=True):
            set_matrix(ax, as_numpy(matrix), fmt, low, high)
            ax.title.set_text(title)
        suptitle.set_text(_suptitle(scale))  # the same Text: the layout engine placed it
        return False

    fig.slider_update = update
    return fig


def _draw_step(ax, panel: tuple, colour_range: tuple[float, float], names: list[str], cmap: str) -> None:
    """One panel of ``plot_self_attention_steps``: its matrix, numbers, labels and title."""
    matrix, title, columns, fmt = panel
    rows = [f"{n} (key)" for n in names] if title.startswith("weighted") else names
    low, high = colour_range
    show_matrix(
        matrix, ax=ax, title=title, row_labels=rows, col_labels=columns, fmt=fmt, cmap=cmap, vmin=low, vmax=high
    )
    key_axis = title.startswith(("scores", "weights:"))  # columns are keys (rows are queries)
    ax.set_xlabel("key" if key_axis else "", fontsize=8)
    for axis in (ax.xaxis, ax.yaxis):  # an empty axis label at a fixed spot: no tick label to measure on a draw
        if not axis.label.get_text():
            axis.set_label_coords(0.0, 0.0)


def _suptitle(scale: bool) -> str:
    return ("Scaled" if scale else "Unscaled") + " self-attention, step by step (one colour scale; weights: their own)"


def plot_worked_example(
    x11: float = 1.0, x12: float = 0.0, x13: float = 1.0, x14: float = 0.0, scale: bool = False, axes=None
) -> Figure:
    """The worked example with token 0's input set to ``[x11, x12, x13, x14]`` (slider-friendly); ``axes`` as in
    ``plot_self_attention_steps``. A slider panel updates the figure in place."""
    example = three_token_example(torch.float64)
    weights = (example.w_query, example.w_key, example.w_value)
    fig = plot_self_attention_steps(_worked_inputs(example, x11, x12, x13, x14), *weights, scale=scale, axes=axes)
    update_steps = fig.slider_update

    def update(x11: float = 1.0, x12: float = 0.0, x13: float = 1.0, x14: float = 0.0, scale: bool = False, **_):
        """New values on the same artists (see ``attn_course.widgets``): every matrix, its colours and the titles."""
        return update_steps(_worked_inputs(example, x11, x12, x13, x14), *weights, scale=scale)

    fig.slider_update = update
    return fig


def _worked_inputs(example, x11: float, x12: float, x13: float, x14: float) -> torch.Tensor:
    """The worked example's inputs (3, 4) with token 0's row set to ``[x11, x12, x13, x14]``."""
    row = [require_number(v, name) for name, v in (("x11", x11), ("x12", x12), ("x13", x13), ("x14", x14))]
    inputs = example.inputs.clone()
    inputs[0] = torch.tensor(row, dtype=torch.float64)
    return inputs
