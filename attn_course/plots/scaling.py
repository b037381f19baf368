"""Figure of notebook 03: how the softmax saturates as D grows, with and without the 1/sqrt(D) scale.

The numbers are ``scaling.mean_entropy`` and its helpers; this module only draws them.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate.cost import require_entropy_args
from ..scaling import mean_entropy, softmax_entropy

__all__ = ["plot_saturation"]


def plot_saturation(
    d: int = 64, temperature: float = 1.0, num_keys: int = 16, seed: int = 0, axes=None, figsize=(11.0, 3.4)
) -> Figure:
    """One query's softmax weights over random keys, unscaled and scaled (left); mean entropy against D (right).

    A slider panel updates the figure in place (``fig.slider_update``).

    Args:
        d: query and key size D.
        temperature: scores are divided by it too; above 1 flattens the softmax, below 1 sharpens it.
        num_keys: K, the number of random keys.
        seed: seed of the random queries and keys.
        axes: two axes, or None for a new figure.
    """
    require_entropy_args(d, num_keys, temperature)  # every argument checked before a figure is opened
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=figsize, layout="constrained", width_ratios=(1, 1.1))
    left, right = axes
    bars, title, legend = _draw_weights(left, d, temperature, num_keys, seed)
    curves, marks = _draw_entropies(right, d, temperature, num_keys, seed)
    sizes = curves[0].get_xdata()
    among_sizes = min(sizes) <= d <= max(sizes)  # else the marks widen the D axis

    def update(d: int = 64, temperature: float = 1.0, **given) -> bool:
        """New values on the same artists (see ``attn_course.widgets``); True when they need a new figure."""
        require_entropy_args(d, num_keys, temperature)
        if (given.get("num_keys", num_keys), given.get("seed", seed)) != (num_keys, seed):
            return True  # other keys: other bars
        if not (among_sizes and min(sizes) <= d <= max(sizes)):
            return True
        weights = _one_query_weights(d, temperature, num_keys, seed)
        for bar_set, (w, label), text in zip(bars, weights, legend.get_texts(), strict=True):
            for bar, height in zip(bar_set, w.tolist(), strict=True):
                bar.set_height(height)
            bar_set.set_label(label)
            text.set_text(label)
        title.set_text(_saturation_title(d, temperature, num_keys))
        for curve, mark, (_, entropies, here) in zip(
            curves, marks, _entropy_curves(d, temperature, num_keys, seed), strict=True
        ):
            curve.set_ydata(entropies)
            mark.set_data([d], [here])
        return False

    fig = left.figure
    fig.slider_update = update
    return fig


def _draw_weights(ax, d: int, temperature: float, num_keys: int, seed: int) -> tuple:
    """The left panel of ``plot_saturation``: one bar set per softmax (unscaled, scaled), and the title and legend
    that ``update`` rewrites."""
    idx = np.arange(num_keys)
    bars = []
    for offset, (w, label), colour in zip(
        (-0.2, 0.2), _one_query_weights(d, temperature, num_keys, seed), ("C3", "C0"), strict=True
    ):
        bars.append(ax.bar(idx + offset, w, width=0.4, color=colour, label=label))
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("key")
    ax.set_ylabel("attention weight")
    title = ax.set_title(_saturation_title(d, temperature, num_keys), fontsize=10)
    return bars, title, ax.legend(fontsize=7, loc="upper left")


def _draw_entropies(ax, d: int, temperature: float, num_keys: int, seed: int) -> tuple[list, list]:
    """The right panel of ``plot_saturation``: the mean-entropy curves against D and the marks at ``d``."""
    curves, marks = [], []
    for (sizes, entropies, here), colour, name in zip(
        _entropy_curves(d, temperature, num_keys, seed), ("C3", "C0"), ("q.k", "q.k / sqrt(D)"), strict=True
    ):
        curves.append(ax.plot(sizes, entropies, marker=".", color=colour, label=name)[0])
        marks.append(ax.plot([d], [here], "o", color=colour, markersize=9, markerfacecolor="none")[0])
    ax.axhline(
        math.log(num_keys), color="0.5", linestyle=":", label=f"uniform: log {num_keys} = {math.log(num_keys):.2f}"
    )
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, math.log(num_keys) * 1.1)
    ax.set_xlabel("D (log scale)")
    ax.set_ylabel("mean entropy of the weights (nats)")
    ax.set_title("Unscaled scores saturate the softmax as D grows", fontsize=10)
    ax.legend(fontsize=7, loc="lower left")
    return curves, marks


def _saturation_title(d: int, temperature: float, num_keys: int) -> str:
    return f"One query, {num_keys} random keys, D = {d}, temperature {temperature:g}"


def _one_query_weights(d: int, temperature: float, num_keys: int, seed: int) -> list[tuple[np.ndarray, str]]:
    """The left panel of ``plot_saturation``: softmax weights (K,) of one query, unscaled and scaled, and labels."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(d, generator=gen, dtype=torch.float64)
    keys = torch.randn(num_keys, d, generator=gen, dtype=torch.float64)
    raw = keys @ q / temperature  # (K, D) x (D,) -> (K,)
    bars = []
    for scores, name in ((raw, "q.k"), (raw / math.sqrt(d), "q.k / sqrt(D)")):
        w = torch.softmax(scores, dim=0)
        label = f"softmax({name}): max {float(w.max()):.2f}, entropy {float(softmax_entropy(w)):.2f}"
        bars.append((w.numpy(), label))
    return bars


def _entropy_curves(d: int, temperature: float, num_keys: int, seed: int) -> list[tuple[list, list, float]]:
    """The right panel of ``plot_saturation``: (sizes, mean entropies, the entropy at ``d``), unscaled then scaled."""
    sizes = [2**i for i in range(11)]
    return [
        (
            sizes,
            [mean_entropy(s, num_keys, temperature, scaled, seed=seed) for s in sizes],
            mean_entropy(d, num_keys, temperature, scaled, seed=seed),
        )
        for scaled in (False, True)
    ]
