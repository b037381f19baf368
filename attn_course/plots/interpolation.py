"""Figures of notebook 02: Lagrange basis polynomials, their weights against Nadaraya-Watson's, noisy fits.

The estimators are ``interpolation.lagrange_basis`` and ``pooling.nadaraya_watson``; this module only draws them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .._validate import require_float, require_int, require_number, require_rank
from ..data import noisy_samples, true_function
from ..interpolation import lagrange_basis
from ..pooling import nadaraya_watson
from .base import as_numpy, float_vectors, require_same_length

__all__ = ["plot_lagrange_basis", "plot_weight_comparison", "plot_noisy_fit"]


def plot_lagrange_basis(
    nodes: torch.Tensor, ax=None, ylim=(-3.0, 3.0), highlight: Sequence[int] = (), figsize=(7.0, 3.6)
) -> Figure:
    """The basis polynomials ``l_i(x)`` of ``nodes``: each is 1 at its node and 0 at the others.

    Args:
        nodes: (N,) distinct nodes ``x_0, ..., x_{N-1}``; the curves are labelled ``l_0`` to ``l_{N-1}``.
        ax: axes to draw on, or None for a new figure.
        ylim: the y range shown (the curves are clipped to it).
        highlight: indices ``i`` (counted from 0) of curves to draw thick, each with a dot at its own node
            (``l_i(x_i) = 1``) and open circles at the other nodes (``l_i(x_j) = 0``); the rest are drawn faint.
    """
    require_float(nodes, "nodes")
    require_rank(nodes, "nodes", (1,), "(N,)")
    n = len(nodes)
    if n == 0:
        raise ValueError("nodes must hold at least one node (N >= 1), got shape (0,)")
    if isinstance(highlight, int | str) or not isinstance(highlight, Sequence):
        raise TypeError(f"highlight must be a sequence of node indices, got {type(highlight).__name__}")
    highlight = [require_int(i, "each index in highlight", 0, n - 1) for i in highlight]
    nodes = nodes.detach()  # a figure needs the numbers only
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    x = torch.linspace(float(nodes.min()), float(nodes.max()), 1001, dtype=nodes.dtype)
    basis = lagrange_basis(x, nodes)  # (X, N)
    colours = plt.get_cmap("tab10")
    for i in range(n):
        strong = not highlight or i in highlight
        width, alpha = (2.2 if highlight else 1.0, 1.0) if strong else (0.8, 0.3)
        ax.plot(
            as_numpy(x),
            as_numpy(basis[:, i]),
            color=colours(i % 10),
            linewidth=width,
            alpha=alpha,
            label=f"$l_{{{i}}}$",
        )
        ax.plot([float(nodes[i])], [1.0], "o", color=colours(i % 10), markersize=5 if highlight and strong else 4)
    for i in highlight:
        others = torch.cat([nodes[:i], nodes[i + 1 :]])  # (N - 1,)
        ax.plot(as_numpy(others), np.zeros(n - 1), "o", mfc="white", mec=colours(i % 10), markersize=6, zorder=3)
    ax.axhline(0, color="0.5", linewidth=0.6)
    ax.set_ylim(*ylim)
    ax.set_xlabel("x")
    ax.set_ylabel("weight $l_i(x)$")
    marks = "; open circles: $l_i(x_j) = 0$" if highlight else ""
    ax.set_title(f"Lagrange basis of {n} nodes (dots: $l_i(x_i) = 1${marks}; clipped to {ylim})", fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax.figure


def plot_weight_comparison(
    query: float, nodes: torch.Tensor, values: torch.Tensor, bandwidth: float = 0.5, axes=None, figsize=(11.0, 4.2)
) -> Figure:
    """Both curves and the query (left); each method's weight of every data point, on its own scale (right).

    The weight scales stay put while the query moves, so that bars of any two queries can be compared. The Gaussian
    weights lie in [0, 1]. The Lagrange weights change sign and span orders of magnitude: their scale is symmetric
    logarithmic, linear from -1 to 1 and then one step per power of ten, up to the power of ten above the largest
    weight in size anywhere between the first and the last node (or at the query, if it lies outside them).
    A slider panel updates the figure in place (``fig.slider_update``), and builds it anew for a query outside the
    nodes.

    Args:
        query: the query x.
        nodes, values: (N,) the data points ``x_i`` and ``y_i``.
        bandwidth: the Gaussian kernel's ``h``.
        axes: three axes (curves, Lagrange weights, Gaussian weights), or None.
    """
    data = (nodes, values)  # as given: a panel passes these same objects to update
    query = require_number(query, "query")
    nodes, values = float_vectors({"nodes": "data point", "values": "data value"}, nodes=nodes, values=values)
    require_same_length(values, "values", nodes, "nodes")
    left, top, bottom = _comparison_axes(figsize) if axes is None else axes
    x = torch.linspace(float(nodes.min()), float(nodes.max()), 801, dtype=nodes.dtype)
    w_lag, w_nw, nw_curve, f_lag, f_nw = _weight_estimates(query, nodes, values, bandwidth, x)
    basis = lagrange_basis(x, nodes)  # (801, N): every Lagrange weight between the first and the last node
    (lag_line,) = left.plot(as_numpy(x), as_numpy(basis @ values), color="C2", label=_lagrange_label(query, f_lag))
    (nw_line,) = left.plot(as_numpy(x), as_numpy(nw_curve), color="C0", label=_nw_label(query, f_nw, bandwidth))
    left.scatter(as_numpy(nodes), as_numpy(values), color="C1", zorder=3, s=18, label="data")
    query_line = left.axvline(query, color="0.3", linewidth=0.8)
    (lag_star,) = left.plot([query], [f_lag], "*", color="C2", markersize=11)
    (nw_star,) = left.plot([query], [f_nw], "*", color="C0", markersize=11)
    _curves_axes(left, values)
    notes = _point_off_chart(left, query, f_lag, f_nw)
    title = left.set_title(_comparison_title(query), fontsize=10)
    legend = left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    basis_largest = float(basis.abs().max())
    power = _lagrange_power(basis_largest, w_lag)
    bars = _weight_bars(top, bottom, nodes, w_lag, w_nw, power)
    among_nodes = float(nodes.min()) <= query <= float(nodes.max())  # else the query widens the x range

    def update(query: float, bandwidth: float = 0.5, **given) -> bool:
        """New values on the same artists (see ``attn_course.widgets``); True when they need a new figure."""
        if given.get("nodes", data[0]) is not data[0] or given.get("values", data[1]) is not data[1]:
            return True  # other data points
        w_lag, w_nw, nw_curve, f_lag, f_nw = _weight_estimates(query, nodes, values, bandwidth, x)
        if not (among_nodes and float(nodes.min()) <= query <= float(nodes.max())):
            return True  # the query widens the x range
        if _lagrange_power(basis_largest, w_lag) != power:
            return True  # another scale for the Lagrange weights
        nw_line.set_ydata(as_numpy(nw_curve))
        query_line.set_xdata([query, query])
        lag_star.set_data([query], [f_lag])
        nw_star.set_data([query], [f_nw])
        for note in notes:  # the notes of the values off the chart, made again as the figure makes them
            note.remove()
        notes[:] = _point_off_chart(left, query, f_lag, f_nw)
        title.set_text(_comparison_title(query))
        labels = (_lagrange_label(query, f_lag), _nw_label(query, f_nw, bandwidth))
        for line, text, label in zip((lag_line, nw_line), legend.get_texts()[:2], labels, strict=True):
            line.set_label(label)
            text.set_text(label)
        _set_weight_bars(bars, w_lag, w_nw)
        return False

    left.figure.slider_update = update
    return left.figure


def _curves_axes(left, values: torch.Tensor) -> None:
    """The left panel's y range, the data's [min y, max y] band widened by 60% each way, and its x axis."""
    lo, hi = float(values.min()), float(values.max())
    left.axhspan(lo, hi, color="C0", alpha=0.07, label="[min y, max y]")
    spread = max(hi - lo, 1.0)  # equal values still get a visible range
    left.set_ylim(lo - 0.6 * spread, hi + 0.6 * spread)
    left.xaxis.set_major_locator(MaxNLocator(nbins=5))  # a few numbers are enough to read x; fewer to draw
    left.set(xlabel="x", ylabel="y")


def _weight_bars(top, bottom, nodes: torch.Tensor, w_lag: torch.Tensor, w_nw: torch.Tensor, power: int) -> list:
    """Each method's weight of every data point as bars (Lagrange on top, on its symmetric log scale up to
    10**power; Gaussian below, 0 to 1); per panel, its bars and its title."""
    idx = np.arange(len(nodes))
    _symmetric_log_axis(top, power)
    bottom.set_ylim(0.0, 1.0)
    bottom.set_yticks([0.0, 0.5, 1.0])
    bars = []
    for ax, w, colour, name in ((top, w_lag, "C2", "Lagrange"), (bottom, w_nw, "C0", "Gaussian")):
        bar_set = ax.bar(idx, as_numpy(w), width=0.6, color=colour)
        ax.axhline(0, color="0.4", linewidth=0.6)
        ax.set_ylabel("weight")
        bars.append((bar_set, ax.set_title(_weights_title(name, w), fontsize=9)))
        ax.set_xticks(idx, [f"{float(v):.1f}" for v in nodes])
    top.tick_params(labelbottom=False)  # the same data points as below: written once
    bottom.set_xlabel("data point $x_i$")
    return bars


def _comparison_axes(figsize) -> tuple:
    """A new figure's three axes for ``plot_weight_comparison``: the curves on the left, the weights on the right."""
    fig = plt.figure(figsize=figsize, layout="constrained")
    mosaic = fig.subplot_mosaic([["curves", "lagrange"], ["curves", "gauss"]], width_ratios=(1.2, 1))
    return mosaic["curves"], mosaic["lagrange"], mosaic["gauss"]


def _set_weight_bars(bars: list, w_lag: torch.Tensor, w_nw: torch.Tensor) -> None:
    """New heights and titles on the bars ``_weight_bars`` drew."""
    for (bar_set, text), w, name in zip(bars, (w_lag, w_nw), ("Lagrange", "Gaussian"), strict=True):
        for bar, height in zip(bar_set, as_numpy(w).tolist(), strict=True):
            bar.set_height(height)
        text.set_text(_weights_title(name, w))


def _lagrange_power(basis_largest: float, w_lag: torch.Tensor) -> int:
    """The power of ten at the top of the Lagrange weights' axis: above the largest weight in size."""
    return math.ceil(math.log10(max(basis_largest, float(w_lag.abs().max()), 1.0)) - 1e-9)


def _symmetric_log_axis(ax, power: int) -> None:
    """A y axis linear from -1 to 1, then logarithmic up to +-10**power, with a tick at every power of ten and
    labels on every other one (and 0)."""
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylim(-(10.0**power), 10.0**power)
    labelled = [k for k in range(power + 1) if (power - k) % 2 == 0]
    others = [k for k in range(power + 1) if k not in labelled]
    ax.set_yticks(
        [-(10.0**k) for k in reversed(labelled)] + [0.0] + [10.0**k for k in labelled],
        [f"\N{MINUS SIGN}{_power(k)}" for k in reversed(labelled)] + ["0"] + [_power(k) for k in labelled],
    )
    ax.set_yticks([-(10.0**k) for k in reversed(others)] + [10.0**k for k in others], minor=True)


def _power(k: int) -> str:
    """10**k as a tick label: 1, 10, 100, 1000, then 10 with a superscript exponent."""
    return str(10**k) if k <= 3 else "10" + str(k).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def _weight_estimates(query: float, nodes, values, bandwidth: float, x):
    """Lagrange and Gaussian weights (N,) at ``query``, the Gaussian curve on ``x`` and both estimates."""
    q = torch.tensor([float(query)], dtype=nodes.dtype)
    w_lag = lagrange_basis(q, nodes)[0]  # (N,)
    nw_curve, _ = nadaraya_watson(x, nodes, values, "gaussian", bandwidth)
    nw_q, w_nw = nadaraya_watson(q, nodes, values, "gaussian", bandwidth)
    return w_lag, w_nw[0], nw_curve, float(w_lag @ values), float(nw_q[0])


def _lagrange_label(query: float, f_lag: float) -> str:
    return f"Lagrange: f({query:.2f}) = {f_lag:.4g}"


def _nw_label(query: float, f_nw: float, bandwidth: float) -> str:
    return f"Gaussian NW, h = {bandwidth:.2g}: f({query:.2f}) = {f_nw:.4g}"


def _comparison_title(query: float) -> str:
    return f"Query x = {query:.2f}: the stars are the two estimates"


def _weights_title(name: str, w: torch.Tensor) -> str:
    return f"{name} weights: from {float(w.min()):.3g} to {float(w.max()):.3g}, sum {float(w.sum()):.4f}"


def _point_off_chart(left, query: float, f_lag: float, f_nw: float) -> list:
    """An arrow from the chart's edge to each estimate that falls outside it, with its value (on the side of the
    query with more room, inside the chart); the annotations made."""
    notes = []
    bottom_edge, top_edge = left.get_ylim()
    low, high = left.get_xlim()
    leftwards = query > (low + high) / 2
    for value, colour in ((f_lag, "C2"), (f_nw, "C0")):
        if not bottom_edge <= value <= top_edge:
            edge = top_edge if value > top_edge else bottom_edge
            notes.append(
                left.annotate(
                    f"{value:.4g} {'above' if value > top_edge else 'below'}",
                    xy=(query, edge),
                    xytext=(-6 if leftwards else 6, -14 if value > top_edge else 14),
                    textcoords="offset points",
                    color=colour,
                    fontsize=8,
                    ha="right" if leftwards else "left",
                    va="center",
                    arrowprops={"arrowstyle": "->", "color": colour},
                )
            )
    return notes


def plot_noisy_fit(
    n_nodes: int = 10, noise: float = 0.3, bandwidth: float = 0.4, seed: int = 0, ax=None, figsize=(6.5, 3.6)
) -> Figure:
    """Lagrange and Nadaraya-Watson through noisy samples of ``true_function`` on [0, 5].

    A slider panel updates the figure in place (``fig.slider_update``).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    x = torch.linspace(0.0, 5.0, 801, dtype=torch.float64)
    truth = true_function(x)
    x_nodes, y_nodes, lag, nw, labels = _noisy_fit(n_nodes, noise, bandwidth, seed, x, truth)
    ax.plot(as_numpy(x), as_numpy(truth), "--", color="0.3", linewidth=1.2, label="truth")
    (lag_line,) = ax.plot(as_numpy(x), as_numpy(lag), color="C2", label=labels[0])
    (nw_line,) = ax.plot(as_numpy(x), as_numpy(nw), color="C0", label=labels[1])
    samples = ax.scatter(as_numpy(x_nodes), as_numpy(y_nodes), color="C1", s=18, zorder=3, label=labels[2])
    ax.set_ylim(-2.0, 6.0)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    title = ax.set_title(_noisy_title(noise), fontsize=10)
    legend = ax.legend(fontsize=7, loc="lower left")

    def update(n_nodes: int = 10, noise: float = 0.3, bandwidth: float = 0.4, seed: int = 0, **_) -> None:
        """New values on the same artists (see ``attn_course.widgets``): the samples stay in [0, 5] as the x axis."""
        x_nodes, y_nodes, lag, nw, labels = _noisy_fit(n_nodes, noise, bandwidth, seed, x, truth)
        lag_line.set_ydata(as_numpy(lag))
        nw_line.set_ydata(as_numpy(nw))
        samples.set_offsets(np.column_stack([as_numpy(x_nodes), as_numpy(y_nodes)]))
        for artist, text, label in zip((lag_line, nw_line, samples), legend.get_texts()[1:], labels, strict=True):
            artist.set_label(label)
            text.set_text(label)
        title.set_text(_noisy_title(noise))

    fig = ax.figure
    fig.slider_update = update
    return fig


def _noisy_fit(n_nodes: int, noise: float, bandwidth: float, seed: int, x, truth):
    """Noisy samples, both curves on ``x`` and the legend labels of ``plot_noisy_fit``."""
    x_nodes, y_nodes = noisy_samples(n_nodes, noise, seed=seed)
    lag = lagrange_basis(x, x_nodes) @ y_nodes
    nw, _ = nadaraya_watson(x, x_nodes, y_nodes, "gaussian", bandwidth)
    rmse = {name: float(((c - truth) ** 2).mean().sqrt()) for name, c in (("lag", lag), ("nw", nw))}
    labels = (
        f"Lagrange (RMSE {rmse['lag']:.3g})",
        f"Nadaraya-Watson, h = {bandwidth:.2g} (RMSE {rmse['nw']:.3g})",
        f"{n_nodes} noisy samples",
    )
    return x_nodes, y_nodes, lag, nw, labels


def _noisy_title(noise: float) -> str:
    return f"Noise level {noise:.2g}: interpolation chases the noise, pooling smooths it"
