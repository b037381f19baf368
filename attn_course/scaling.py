"""Why dot-product scores are divided by sqrt(D): numbers and figures of notebook 03.

For queries and keys with independent components of mean 0 and variance 1, the dot product
``q . k`` has mean 0 and variance D. Large scores push the softmax towards a one-hot vector
(it *saturates*), whose gradients vanish; dividing by sqrt(D) brings the variance back to 1.
"""

from __future__ import annotations

import math
from functools import lru_cache

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from ._validate import require_float, require_int, require_positive
from .plotting import _updatable

__all__ = ["dot_product_variance", "mean_entropy", "plot_saturation"]


def dot_product_variance(d: int, num_samples: int = 10_000, seed: int = 0) -> float:
    """Sample variance of ``q . k`` for ``q, k`` with independent standard normal components of size ``d``."""
    require_int(d, "d")
    require_int(num_samples, "num_samples", 2)
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_samples, d, generator=gen, dtype=torch.float64)
    k = torch.randn(num_samples, d, generator=gen, dtype=torch.float64)
    return float((q * k).sum(-1).var())


def _softmax_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy ``-sum_k w_k log w_k`` (in nats) of each row of weights over the last axis.

    0 for a one-hot row, ``log K`` for a uniform row over K keys. Zero weights contribute 0.

    Args:
        weights: (..., K) non-negative rows summing to 1.

    Returns:
        (...) one entropy per row.
    """
    require_float(weights, "weights")
    safe = torch.where(weights > 0, weights, torch.ones_like(weights))  # log 1 = 0 where w = 0
    return -(weights * torch.log(safe)).sum(-1)


def _check_temperature(temperature) -> float:
    return require_positive(temperature, "temperature")


def mean_entropy(
    d: int, num_keys: int = 16, temperature: float = 1.0, scaled: bool = True, num_queries: int = 500, seed: int = 0
) -> float:
    """Average softmax entropy of ``num_queries`` random queries over ``num_keys`` random keys of size ``d``.

    Scores are ``q . k / (temperature * sqrt(d))`` if ``scaled`` else ``q . k / temperature``. Results are
    cached (a slider revisits the same values); the arguments are checked before the cache is consulted.
    """
    require_int(d, "d")
    require_int(num_keys, "num_keys", 2)
    require_int(num_queries, "num_queries")
    return _mean_entropy(d, num_keys, _check_temperature(temperature), bool(scaled), num_queries, int(seed))


@lru_cache(maxsize=1024)
def _mean_entropy(d: int, num_keys: int, temperature: float, scaled: bool, num_queries: int, seed: int) -> float:
    scores = _raw_scores(d, num_keys, num_queries, seed) / temperature  # (Q, K)
    if scaled:
        scores = scores / math.sqrt(d)
    return float(_softmax_entropy(torch.softmax(scores, dim=-1)).mean())


@lru_cache(maxsize=128)
def _raw_scores(d: int, num_keys: int, num_queries: int, seed: int) -> torch.Tensor:
    """``q . k`` of random queries and keys, kept: a new temperature then costs a division, not new samples."""
    gen = torch.Generator().manual_seed(seed)
    queries = torch.randn(num_queries, d, generator=gen, dtype=torch.float64)  # (Q, D)
    keys = torch.randn(num_keys, d, generator=gen, dtype=torch.float64)  # (K, D)
    return queries @ keys.T  # (Q, D) x (D, K) -> (Q, K)


def plot_saturation(
    d: int = 64, temperature: float = 1.0, num_keys: int = 16, seed: int = 0, axes=None, figsize=(11.0, 3.4)
) -> Figure:
    """One query's softmax weights over random keys, unscaled and scaled (left); mean entropy against D (right).

    Args:
        d: query and key size D.
        temperature: scores are divided by it too; above 1 flattens the softmax, below 1 sharpens it.
        num_keys: K, the number of random keys.
        seed: seed of the random queries and keys.
        axes: two axes, or None for a new figure.
    """
    require_int(d, "d")
    require_int(num_keys, "num_keys", 2)
    _check_temperature(temperature)  # every argument checked before a figure is opened
    new_figure = axes is None
    if new_figure:
        _, axes = plt.subplots(1, 2, figsize=figsize, layout="constrained", width_ratios=(1, 1.1))
    left, right = axes
    idx = np.arange(num_keys)
    bars = _one_query_weights(d, temperature, num_keys, seed)
    for offset, (w, label), colour in zip((-0.2, 0.2), bars, ("C3", "C0"), strict=True):
        left.bar(idx + offset, w, width=0.4, color=colour, label=label)
    left.set_ylim(0, 1.05)
    left.set_xlabel("key")
    left.set_ylabel("attention weight")
    left.set_title(_saturation_title(d, temperature, num_keys), fontsize=10)
    left.legend(fontsize=7, loc="upper left")
    curves = _entropy_curves(d, temperature, num_keys, seed)
    for (sizes, entropies, here), colour, name in zip(curves, ("C3", "C0"), ("q.k", "q.k / sqrt(D)"), strict=True):
        right.plot(sizes, entropies, marker=".", color=colour, label=name)
        right.plot([d], [here], "o", color=colour, markersize=9, markerfacecolor="none")
    right.axhline(
        math.log(num_keys), color="0.5", linestyle=":", label=f"uniform: log {num_keys} = {math.log(num_keys):.2f}"
    )
    right.set_xscale("log", base=2)
    right.set_ylim(0, math.log(num_keys) * 1.1)
    right.set_xlabel("D (log scale)")
    right.set_ylabel("mean entropy of the weights (nats)")
    right.set_title("Unscaled scores saturate the softmax as D grows", fontsize=10)
    right.legend(fontsize=7, loc="lower left")
    fig = left.figure
    if not new_figure:
        return fig
    fixed = (num_keys, seed, tuple(figsize))

    def update(d=64, temperature=1.0, num_keys=num_keys, seed=seed, axes=None, figsize=figsize) -> bool:
        if axes is not None or (num_keys, seed, tuple(figsize)) != fixed:
            return False
        require_int(d, "d")
        _check_temperature(temperature)
        bars = _one_query_weights(d, temperature, num_keys, seed)
        for container, text, (w, label) in zip(left.containers, left.get_legend().get_texts(), bars, strict=True):
            for rect, height in zip(container.patches, w, strict=True):
                rect.set_height(height)
            container.set_label(label)
            text.set_text(label)
        left.set_title(_saturation_title(d, temperature, num_keys), fontsize=10)
        curves = right.lines[:4]  # unscaled curve and its marker, scaled curve and its marker
        for (_, entropies, here), curve, marker in zip(
            _entropy_curves(d, temperature, num_keys, seed), curves[::2], curves[1::2], strict=True
        ):
            curve.set_ydata(entropies)
            marker.set_data([d], [here])
        right.relim()
        right.autoscale_view()
        return True

    return _updatable(fig, plot_saturation, update)


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
        label = f"softmax({name}): max {float(w.max()):.2f}, entropy {float(_softmax_entropy(w)):.2f}"
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
