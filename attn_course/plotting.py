"""Figures of the course.

Every helper takes ``ax=None`` (or ``axes=None``), draws on a new figure when none is given,
returns the ``Figure``, labels its axes, and never calls ``plt.show()`` or changes global
matplotlib settings. In a notebook, end the cell with ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure

from .kernels import KERNELS, nadaraya_watson

__all__ = ["show_heatmaps", "plot_regression", "plot_kernels", "plot_query_weights", "plot_nw_fit"]

ANNOTATE_MAX_CELLS = 100  # "auto" annotates matrices up to 10 x 10
# Titles at a fixed height above the axes. Left to itself, matplotlib measures every tick label again on each draw
# to check that none sits above the axes (none does in the course's figures): a tenth of a slider's redraw.
TITLE_Y = 1.0


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _new_axes(ax, figsize):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax.figure, ax


def _draw_matrix(
    ax,
    data: np.ndarray,
    vmin: float,
    vmax: float,
    cmap: str,
    annotate: bool,
    fmt: str = ".2f",
    square: bool = True,
    gridlines: bool = False,
    fontsize: float = 8,
):
    """Draw a (R, C) matrix on ``ax`` as coloured cells, row 0 at the top; optionally write each value.

    Cell (i, j) spans [j, j + 1] x [i, i + 1], so tick positions are ``index + 0.5``. Annotations are black on
    light cells and white on dark ones. Returns the ``QuadMesh`` (for a colour bar).
    """
    rows, cols = data.shape
    mesh = ax.pcolormesh(
        np.arange(cols + 1),
        np.arange(rows + 1),
        data,
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        edgecolors="white" if gridlines else "face",
        linewidth=0.5 if gridlines else 0,
    )
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)  # row 0 at the top, as in a printed matrix
    if square:
        ax.set_aspect("equal")
    for spine in ax.spines.values():
        spine.set_visible(False)
    if annotate:
        colours = mesh.to_rgba(data)  # (R, C, 4)
        luminance = colours[..., :3] @ np.array([0.2126, 0.7152, 0.0722])  # (R, C)
        for i in range(rows):
            for j in range(cols):
                ax.text(
                    j + 0.5,
                    i + 0.5,
                    format(data[i, j], fmt),
                    ha="center",
                    va="center",
                    fontsize=fontsize,
                    color="black" if luminance[i, j] > 0.408 else "white",
                )
    return mesh


def _update_matrix(ax, data: np.ndarray, vmin: float, vmax: float, fmt: str = ".2f") -> None:
    """Redraw in place a matrix that ``_draw_matrix`` drew on ``ax``: new values of the same shape, same look."""
    mesh = ax.collections[0]
    mesh.set_array(data)
    mesh.set_clim(vmin, vmax)
    if ax.texts:  # the annotations, written row by row
        colours = mesh.to_rgba(data)  # (R, C, 4)
        luminance = colours[..., :3] @ np.array([0.2126, 0.7152, 0.0722])  # (R, C)
        for text, value, light in zip(ax.texts, data.ravel(), luminance.ravel() > 0.408, strict=True):
            text.set_text(format(value, fmt))
            text.set_color("black" if light else "white")


def _updatable(fig: Figure, plot_fn, update) -> Figure:
    """Mark ``fig``, just drawn by ``plot_fn``, as one a slider may redraw in place (``attn_course.widgets``).

    ``update(**kwargs)`` takes ``plot_fn``'s keyword arguments and either redraws the figure's artists for them and
    returns True, or returns False, having changed nothing, when they need a figure of another shape. Redrawing in
    place skips building axes and ticks again: about half of what a slider's change costs. A panel uses it only
    when its plotting function is ``plot_fn`` itself (a wrapper around ``plot_fn`` may draw more than ``update``
    knows of).
    """
    fig._attn_course_update = (plot_fn, update)
    return fig


def _edges(centres: np.ndarray) -> np.ndarray:
    """Cell edges around sorted centres: the midpoints, extended by half a gap at both ends."""
    if len(centres) == 1:
        return np.array([centres[0] - 0.5, centres[0] + 0.5])
    mid = (centres[1:] + centres[:-1]) / 2
    return np.concatenate([[2 * centres[0] - mid[0]], mid, [2 * centres[-1] - mid[-1]]])


def _thin_ticks(ax, axis: str, labels: Sequence[str] | None, n: int, max_ticks: int = 20) -> None:
    """Label every cell up to ``max_ticks`` cells, then every k-th one."""
    step = max(1, int(np.ceil(n / max_ticks)))
    positions = np.arange(0, n, step)
    texts = [str(labels[i]) if labels is not None else str(i) for i in positions]
    if axis == "x":
        slanted = max(map(len, texts), default=0) > 3  # words: slant them; short numbers: upright
        ax.set_xticks(positions + 0.5, texts, rotation=45 if slanted else 0, ha="right" if slanted else "center")
    else:
        ax.set_yticks(positions + 0.5, texts, rotation=0)


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
    data = _np(matrices).astype(float)
    if data.ndim not in (2, 3, 4) or 0 in data.shape:
        raise ValueError(
            f"matrices must have shape (Q, K), (P, Q, K) or (R, C, Q, K) with no empty axis, got shape {data.shape}"
        )
    grid = data.reshape((1, 1) + data.shape[-2:]) if data.ndim == 2 else data
    grid = grid[None] if grid.ndim == 3 else grid  # (R, C, Q, K)
    rows, cols, num_q, num_k = grid.shape
    panel_labels = {}  # name -> one list of labels per panel
    for name, labels, n in (("xticklabels", xticklabels, num_k), ("yticklabels", yticklabels, num_q)):
        per_panel = labels is not None and len(labels) > 0 and isinstance(labels[0], (list, tuple))
        if per_panel and len(labels) != rows * cols:
            raise ValueError(f"{name} must hold one list per panel ({rows * cols}), got {len(labels)} lists")
        panel_labels[name] = list(labels) if per_panel else [labels] * (rows * cols)
        for panel in panel_labels[name]:
            if panel is not None and len(panel) != n:
                raise ValueError(
                    f"{name} must hold {n} labels (one per {'key' if name[0] == 'x' else 'query'}), got {len(panel)}"
                )
    shared = all(len({tuple(p) if p is not None else None for p in v}) == 1 for v in panel_labels.values())
    if titles is not None and len(titles) != rows * cols:
        raise ValueError(f"titles must hold {rows * cols} titles (one per panel), got {len(titles)}")
    if not np.isfinite(data).all():
        raise ValueError("matrices must be finite; got NaN or infinity (check the masking)")
    lo = min(0.0, float(data.min())) if vmin is None else vmin
    hi = float(data.max()) if vmax is None else vmax
    hi = lo + 1.0 if hi <= lo else hi
    if annotate == "auto":
        annotate = num_q * num_k <= ANNOTATE_MAX_CELLS
    if figsize is None:
        cell = 0.45 if annotate else min(0.25, 5.0 / max(num_q, num_k))
        figsize = (cols * max(2.2, num_k * cell + 1.0) + 1.2, rows * max(2.0, num_q * cell + 1.5))
    if ax is not None:
        given = np.asarray(ax, dtype=object).reshape(-1)
        if given.size != rows * cols:
            raise ValueError(f"ax must hold one axes per panel ({rows * cols}), got {given.size}")
        fig, axes = given[0].figure, given.reshape(rows, cols)
    else:
        fig, axes = plt.subplots(
            rows, cols, figsize=figsize, squeeze=False, sharex=shared, sharey=shared, layout="constrained"
        )
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            _draw_matrix(ax, grid[r, c], lo, hi, cmap, bool(annotate), fmt, square=num_q * num_k <= 400)
            _thin_ticks(ax, "x", panel_labels["xticklabels"][r * cols + c], num_k)
            _thin_ticks(ax, "y", panel_labels["yticklabels"][r * cols + c], num_q)
            ax.tick_params(labelbottom=r == rows - 1 or not shared, labelleft=c == 0 or not shared, length=0)
            ax.set_xlabel(xlabel if r == rows - 1 else "")
            ax.set_ylabel(ylabel if c == 0 else "")
            if titles is not None:
                ax.set_title(titles[r * cols + c], fontsize=10, y=TITLE_Y)
    fig.colorbar(axes[0, 0].collections[0], ax=axes, shrink=0.8, label=colorbar_label)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


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
    fig, ax = _new_axes(ax, figsize)
    if y_true is not None:
        ax.plot(_np(x_test), _np(y_true), color="0.3", linestyle="--", linewidth=1.2, label="truth")
    ax.plot(_np(x_test), _np(y_pred), color="C0", linewidth=2, label=label)
    ax.scatter(_np(x_train), _np(y_train), s=14, color="C1", alpha=0.7, label="training data (keys, values)")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    if title:
        ax.set_title(title, fontsize=10, y=TITLE_Y)
    ax.legend(fontsize=8, loc="best")
    return fig


def plot_kernels(names: Sequence[str] | None = None, ax=None, figsize=(5.0, 3.0)) -> Figure:
    """The kernel shapes ``K(u)`` of ``attn_course.KERNELS`` on u in [-2.5, 2.5]."""
    names = list(KERNELS) if names is None else list(names)
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        raise ValueError(f"names must be kernel names from {sorted(KERNELS)}, got {unknown}")
    fig, ax = _new_axes(ax, figsize)
    u = torch.linspace(-2.5, 2.5, 501, dtype=torch.float64)
    for name in names:
        ax.plot(u.numpy(), KERNELS[name](u).numpy(), linewidth=2, label=name)
    ax.set_xlabel("u = (query - key) / bandwidth")
    ax.set_ylabel("K(u)")
    ax.set_title("Kernels: how much a key counts at distance u", fontsize=10, y=TITLE_Y)
    ax.legend(fontsize=8)
    return fig


def plot_query_weights(
    query: float, keys, values, kernel: str = "gaussian", bandwidth: float = 1.0, axes=None, figsize=(6.0, 4.2)
) -> Figure:
    """One query's Nadaraya-Watson attention over the keys: data coloured by weight, weights as bars.

    Args:
        query: the query x.
        keys, values: (K,) training inputs and targets.
        kernel, bandwidth: as in ``nadaraya_watson``.
        axes: two axes (top: data, bottom: weights) sharing x, or None.
    """
    data = (keys, values)
    keys, values = torch.as_tensor(keys), torch.as_tensor(values)
    pred, weights = _query_weights(query, keys, values, kernel, bandwidth)
    keys_np = _np(keys)
    new_figure = axes is None
    if new_figure:
        fig, axes = plt.subplots(2, 1, figsize=figsize, sharex=True, height_ratios=(2, 1), layout="constrained")
    top, bottom = axes
    points = top.scatter(
        keys_np,
        _np(values),
        c=weights,
        cmap="Reds",
        vmin=0,
        vmax=max(float(weights.max()), 1e-12),
        s=22,
        edgecolors="0.4",
        linewidths=0.4,
    )
    top.axvline(query, color="C0", linewidth=1)
    top.plot(
        [query],
        [pred],
        marker="*",
        markersize=13,
        color="C0",
        linestyle="none",
        label=_prediction_label(query, pred),
    )
    top.set_ylabel("value y_i")
    top.legend(fontsize=8, loc="best")
    top.figure.colorbar(points, ax=list(axes), label="weight", shrink=0.9)  # one bar keeps both x axes aligned
    bottom.bar(keys_np, weights, width=0.06, color="C3")
    bottom.axvline(query, color="C0", linewidth=1)
    bottom.set_xlabel("key x_i")
    bottom.set_ylabel("attention weight")
    top.set_title(_query_title(query, kernel, bandwidth), fontsize=10, y=TITLE_Y)
    fig = top.figure
    if not new_figure:
        return fig

    def update(query, keys, values, kernel="gaussian", bandwidth=1.0, axes=None, figsize=figsize) -> bool:
        same_data = keys is data[0] and values is data[1]
        if axes is not None or not same_data or tuple(figsize) != tuple(fig.get_size_inches()):
            return False
        pred, weights = _query_weights(query, torch.as_tensor(keys), torch.as_tensor(values), kernel, bandwidth)
        points.set_array(weights)
        points.set_clim(0, max(float(weights.max()), 1e-12))  # the colour bar follows
        top_line, star = top.lines
        top_line.set_xdata([query, query])
        star.set_data([query], [pred])
        star.set_label(_prediction_label(query, pred))
        top.get_legend().get_texts()[0].set_text(star.get_label())
        for rect, height in zip(bottom.containers[0].patches, weights, strict=True):
            rect.set_height(height)
        bottom.lines[0].set_xdata([query, query])
        top.set_title(_query_title(query, kernel, bandwidth), fontsize=10, y=TITLE_Y)
        for ax in axes_pair:
            ax.relim()
            ax.autoscale_view()
        return True

    axes_pair = (top, bottom)
    return _updatable(fig, plot_query_weights, update)


def _query_weights(query: float, keys, values, kernel, bandwidth) -> tuple[float, np.ndarray]:
    """The prediction at ``query`` and the weights (K,) of ``plot_query_weights``."""
    prediction, weights = nadaraya_watson(
        torch.tensor([float(query)], dtype=keys.dtype), keys, values, kernel, bandwidth
    )
    return float(prediction[0]), _np(weights[0])


def _prediction_label(query: float, pred: float) -> str:
    return f"prediction f({query:.2f}) = {pred:.2f}"


def _query_title(query: float, kernel: str, bandwidth: float) -> str:
    return f"Query x = {query:.2f} ({kernel}, h = {bandwidth:.3g}): the weight of every key"


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
    data = (x_train, y_train, x_test, y_true)
    x_train, y_train, x_test = (torch.as_tensor(t) for t in (x_train, y_train, x_test))
    order = torch.argsort(x_train)
    keys, values = x_train[order], y_train[order]
    y_pred, weights = nadaraya_watson(x_test, keys, values, kernel, bandwidth)
    new_figure = axes is None
    if new_figure:
        fig, axes = plt.subplots(1, 2, figsize=figsize, layout="constrained", width_ratios=(1.25, 1))
    fig = axes[0].figure
    plot_regression(
        keys,
        values,
        x_test,
        y_pred,
        y_true,
        ax=axes[0],
        title=f"{kernel} kernel, bandwidth h = {bandwidth:.3g}",
        label="Nadaraya-Watson",
    )
    # Cells drawn at the real positions: key i spans the midpoints to its neighbours.
    norm = PowerNorm(gamma=0.5, vmin=0.0, vmax=1.0)
    image = axes[1].pcolormesh(_edges(_np(keys)), _edges(_np(x_test)), _np(weights), cmap="Reds", norm=norm)
    axes[1].invert_yaxis()  # queries top to bottom, as in show_heatmaps
    axes[1].set_xlabel("training input x_i (key)")
    axes[1].set_ylabel("test input x (query)")
    axes[1].set_title("Attention weights (keys at their real x)", fontsize=10, y=TITLE_Y)
    fig.colorbar(image, ax=axes[1], label="weight")
    if not new_figure:
        return fig
    left, prediction = axes[0], axes[0].lines[-1]  # plot_regression draws the prediction after the truth

    def update(x_train, y_train, x_test, y_true=None, kernel="gaussian", bandwidth=1.0, axes=None, figsize=figsize):
        same_data = all(a is b for a, b in zip((x_train, y_train, x_test, y_true), data, strict=True))
        if axes is not None or not same_data or tuple(figsize) != tuple(fig.get_size_inches()):
            return False
        y_pred, weights = nadaraya_watson(torch.as_tensor(x_test), keys, values, kernel, bandwidth)
        prediction.set_ydata(_np(y_pred))
        image.set_array(_np(weights))
        left.set_title(f"{kernel} kernel, bandwidth h = {bandwidth:.3g}", fontsize=10, y=TITLE_Y)
        left.relim()  # the prediction may leave the old y range
        left.autoscale_view()
        return True

    return _updatable(fig, plot_nw_fit, update)
