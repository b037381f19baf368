"""Figures of attention pooling (notebook 01): the data and the fit, the kernels, one query's weights.

Every helper takes ``ax=None`` (or ``axes=None``), draws on a new figure when none is given,
returns the ``Figure``, labels its axes, and never calls ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure

from .._validate import require_number
from ..pooling import KERNELS, nadaraya_watson
from .base import as_numpy, float_vectors, new_axes, require_same_length

__all__ = ["plot_regression", "plot_kernels", "plot_query_weights", "plot_nw_fit"]

WEIGHT_TICKS = [0.0, 0.05, 0.2, 0.5, 1.0]  # on the square-root scale of the weights


def plot_regression(
    x_train,
    y_train,
    x_test,
    y_pred,
    y_true=None,
    ax=None,
    title: str | None = None,
    label: str = "prediction",
    figsize=(5.5, 3.2),
) -> Figure:
    """Training points, the prediction at the test inputs, and (optionally) the true curve.

    Args:
        x_train, y_train: (n,) training inputs and targets (tensors, arrays or lists).
        x_test: (m,) test inputs; y_pred: (m,) the prediction there; y_true: (m,) the truth, or None.
        ax: axes to draw on, or None for a new figure.
        title, label: the axes' title and the prediction's legend label.
    """
    what = {"x_train": "training input", "y_train": "training target", "x_test": "test input", "y_pred": "prediction"}
    x_train, y_train, x_test, y_pred = float_vectors(
        what, x_train=x_train, y_train=y_train, x_test=x_test, y_pred=y_pred
    )
    require_same_length(y_train, "y_train", x_train, "x_train")
    require_same_length(y_pred, "y_pred", x_test, "x_test")
    if y_true is not None:
        (y_true,) = float_vectors({"y_true": "true value"}, y_true=y_true)
        require_same_length(y_true, "y_true", x_test, "x_test")
    fig, ax = new_axes(ax, figsize)
    if y_true is not None:
        ax.plot(as_numpy(x_test), as_numpy(y_true), color="0.3", linestyle="--", linewidth=1.2, label="truth")
    ax.plot(as_numpy(x_test), as_numpy(y_pred), color="C0", linewidth=2, label=label)
    ax.scatter(as_numpy(x_train), as_numpy(y_train), s=14, color="C1", alpha=0.7, label="training data (keys, values)")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    return fig


def plot_kernels(names: Sequence[str] | None = None, ax=None, figsize=(5.0, 3.0)) -> Figure:
    """The kernel shapes ``K(u)`` of ``attn_course.KERNELS`` on u in [-2.5, 2.5]."""
    names = list(KERNELS) if names is None else list(names)
    if not names:
        raise ValueError(f"names must name at least one kernel from {sorted(KERNELS)}, got none")
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        raise ValueError(f"names must be kernel names from {sorted(KERNELS)}, got {unknown}")
    fig, ax = new_axes(ax, figsize)
    u = torch.linspace(-2.5, 2.5, 501, dtype=torch.float64)
    for name in names:
        ax.plot(u.numpy(), KERNELS[name](u).numpy(), linewidth=2, label=name)
    ax.set_xlabel("u = (query - key) / bandwidth")
    ax.set_ylabel("K(u)")
    ax.set_title("Kernels: how much a key counts at distance u", fontsize=10)
    ax.legend(fontsize=8)
    return fig


def plot_query_weights(
    query: float, keys, values, kernel: str = "gaussian", bandwidth: float = 1.0, axes=None, figsize=(6.0, 4.2)
) -> Figure:
    """One query's Nadaraya-Watson attention over the keys: data coloured by weight, weights as bars.

    The colours and the bars share one fixed weight scale from 0 to 1, square-root stretched as in ``plot_nw_fit``'s
    heatmap: any two pictures can be compared, and small weights still show. A slider panel updates the figure in
    place (see ``attn_course.widgets``).

    Args:
        query: the query x.
        keys, values: (K,) training inputs and targets.
        kernel, bandwidth: as in ``nadaraya_watson``.
        axes: two axes (top: data, bottom: weights) sharing x, or None.
    """
    query = require_number(query, "query")
    keys, values = float_vectors({"keys": "key", "values": "value"}, keys=keys, values=values)
    require_same_length(values, "values", keys, "keys")
    pred, weights = _query_weights(query, keys, values, kernel, bandwidth)
    keys_np = as_numpy(keys)
    if axes is None:
        fig, axes = plt.subplots(2, 1, figsize=figsize, sharex=True, height_ratios=(2, 1), layout="constrained")
    top, bottom = axes
    norm = PowerNorm(gamma=0.5, vmin=0.0, vmax=1.0)
    points = top.scatter(
        keys_np, as_numpy(values), c=weights, cmap="Reds", norm=norm, s=22, edgecolors="0.4", linewidths=0.4
    )
    top_line = top.axvline(query, color="C0", linewidth=1)
    label = _prediction_label(query, pred)
    (star,) = top.plot([query], [pred], marker="*", markersize=13, color="C0", linestyle="none", label=label)
    top.set_ylabel("value y_i")
    legend = top.legend(fontsize=8, loc="best")
    # one colour bar keeps both x axes aligned
    top.figure.colorbar(points, ax=list(axes), label="weight", shrink=0.9, ticks=WEIGHT_TICKS)
    bars, bottom_line = _weight_bars(bottom, keys_np, weights, query)
    title = top.set_title(_query_title(query, kernel, bandwidth), fontsize=10)

    def update(query: float, kernel: str = "gaussian", bandwidth: float = 1.0, **_) -> bool:
        """New values on the same artists (see ``attn_course.widgets``); True when they need a new figure."""
        pred, weights = _query_weights(query, keys, values, kernel, bandwidth)
        ticks = bottom.xaxis.get_major_formatter().format_ticks(bottom.get_xticks())
        bottom.set_xlim(*_query_limits(keys_np, query))
        if bottom.xaxis.get_major_formatter().format_ticks(bottom.get_xticks()) != ticks:
            return True  # other x tick labels (a query far outside the keys): the layout changes
        points.set_array(weights)
        bars.set_segments([[(x, 0.0), (x, w)] for x, w in zip(keys_np, weights, strict=True)])
        for line in (top_line, bottom_line):
            line.set_xdata([query, query])
        star.set_data([query], [pred])
        star.set_label(_prediction_label(query, pred))
        legend.get_texts()[0].set_text(_prediction_label(query, pred))
        title.set_text(_query_title(query, kernel, bandwidth))
        return False

    fig = top.figure
    fig.slider_update = update
    return fig


def _weight_bars(bottom, keys: np.ndarray, weights: np.ndarray, query: float) -> tuple:
    """``plot_query_weights``'s lower panel: one thin bar per key at the key's x, on the colour bar's square-root
    scale, and a line at the query; the bars and the line."""
    bars = bottom.vlines(keys, 0.0, weights, color="C3", linewidth=2.5)
    bottom.set_yscale("function", functions=(np.sqrt, np.square))  # the colour bar's stretch
    bottom.set_ylim(0.0, 1.0)
    bottom.set_yticks(WEIGHT_TICKS)
    line = bottom.axvline(query, color="C0", linewidth=1)
    bottom.set_xlim(*_query_limits(keys, query))
    bottom.set(xlabel="key x_i", ylabel="attention weight")
    return bars, line


def _query_limits(keys: np.ndarray, query: float) -> tuple[float, float]:
    """The x range of ``plot_query_weights``: the keys and the query, with 5% to spare on each side."""
    low, high = min(float(keys.min()), query), max(float(keys.max()), query)
    spare = 0.05 * (high - low) if high > low else 0.5
    return low - spare, high + spare


def _query_weights(query: float, keys, values, kernel, bandwidth) -> tuple[float, np.ndarray]:
    """The prediction at ``query`` and the weights (K,) of ``plot_query_weights``."""
    prediction, weights = nadaraya_watson(
        torch.tensor([float(query)], dtype=keys.dtype), keys, values, kernel, bandwidth
    )
    return float(prediction[0]), as_numpy(weights[0])


def _prediction_label(query: float, pred: float) -> str:
    return f"prediction f({query:.2f}) = {pred:.2f}"


def _kernel_label(kernel: str, bandwidth: float) -> str:
    """``"gaussian kernel, bandwidth h = 0.5"``; the constant kernel ignores h, so its label names no h."""
    if kernel == "constant":
        return "constant kernel (no bandwidth: every key weighs 1/K)"
    return f"{kernel} kernel, bandwidth h = {bandwidth:.3g}"


def _query_title(query: float, kernel: str, bandwidth: float) -> str:
    setting = "constant kernel, no h" if kernel == "constant" else f"{kernel}, h = {bandwidth:.3g}"
    return f"Query x = {query:.2f} ({setting}): the weight of every key"


def plot_nw_fit(
    x_train,
    y_train,
    x_test,
    y_true=None,
    kernel: str = "gaussian",
    bandwidth: float = 1.0,
    axes=None,
    figsize=(10.0, 3.6),
) -> Figure:
    """Nadaraya-Watson fit (left) and its attention weights, queries by keys (right).

    The heatmap places every key at its real x (and every query at its real x), and uses one fixed colour
    scale from 0 to 1 (square-root stretched) so that pictures for different bandwidths can be compared.

    Args:
        x_train, y_train: (n,) training inputs (keys) and targets (values); x_train need not be sorted.
        x_test: (m,) test inputs (queries), increasing; y_true: (m,) the truth there, or None.
        kernel, bandwidth: as in ``nadaraya_watson``.
        axes: two axes (fit, heatmap), or None for a new figure.
    """
    what = {"x_train": "key", "y_train": "value", "x_test": "query"}
    x_train, y_train, x_test = float_vectors(what, x_train=x_train, y_train=y_train, x_test=x_test)
    require_same_length(y_train, "y_train", x_train, "x_train")
    order = torch.argsort(x_train)
    keys, values = x_train[order], y_train[order]
    y_pred, weights = nadaraya_watson(x_test, keys, values, kernel, bandwidth)
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=figsize, layout="constrained", width_ratios=(1.25, 1))
    fig = axes[0].figure
    plot_regression(
        keys,
        values,
        x_test,
        y_pred,
        y_true,
        ax=axes[0],
        title=_kernel_label(kernel, bandwidth),
        label="Nadaraya-Watson",
    )
    # Cells drawn at the real positions: key i spans the midpoints to its neighbours.
    norm = PowerNorm(gamma=0.5, vmin=0.0, vmax=1.0)
    image = axes[1].pcolormesh(
        as_numpy(keys), as_numpy(x_test), as_numpy(weights), cmap="Reds", norm=norm, shading="nearest"
    )
    axes[1].invert_yaxis()  # queries top to bottom, as in show_heatmaps
    axes[1].set_xlabel("training input x_i (key)")
    axes[1].set_ylabel("test input x (query)")
    axes[1].set_title("Attention weights (keys at their real x)", fontsize=10)
    fig.colorbar(image, ax=axes[1], label="weight")
    fit = next(line for line in axes[0].get_lines() if line.get_label() == "Nadaraya-Watson")

    def update(kernel: str = "gaussian", bandwidth: float = 1.0, **_) -> None:
        """New values on the same artists (see ``attn_course.widgets``): the fit, the weights and the title."""
        y_pred, weights = nadaraya_watson(x_test, keys, values, kernel, bandwidth)
        fit.set_ydata(as_numpy(y_pred))  # a weighted mean of the values: the y range stays the data's
        image.set_array(as_numpy(weights))
        axes[0].set_title(_kernel_label(kernel, bandwidth), fontsize=10)

    fig.slider_update = update
    return fig
