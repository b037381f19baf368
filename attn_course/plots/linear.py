"""Figures of notebook 12: linear attention.

``plot_favor_weights`` compares one query's softmax weights with their FAVOR+ estimate and draws the error against
the number of random features, beside two baselines (elu + 1, and uniform weights that ignore the query);
``plot_decay_weights`` shows how far back a query reads under a decay gamma. Both support in-place updates for a
slider panel (see ``attn_course.widgets``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import require_int
from .._validate.figures import require_query_key_rows, require_recall_curves
from ..linear import apply_feature_map, linear_attention_weights
from .base import as_numpy

__all__ = ["plot_favor_weights", "plot_decay_weights", "favor_weight_error", "plot_recall_curves"]

FEATURE_COUNTS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)  # the m of plot_favor_weights' error curve
_SHARE = 0.9  # plot_decay_weights marks where this share of the weight is reached, counting back


def _qk(queries, keys) -> tuple[torch.Tensor, torch.Tensor]:
    require_query_key_rows(queries, keys)
    return queries.double().unsqueeze(0), keys.double().unsqueeze(0)  # (1, Q, D), (1, K, D)


def _favor_weights(q: torch.Tensor, k: torch.Tensor, num_features: int, seed: int) -> torch.Tensor:
    """FAVOR+ estimate of softmax(q k^T / sqrt(D)): (1, Q, D), (1, K, D) -> (1, Q, K); the vectors w_r from ``seed``."""
    scale = q.shape[-1] ** -0.25  # exp(q . k / sqrt(D)) = exp((q D^-1/4) . (k D^-1/4))

    def phi(x):
        generator = torch.Generator().manual_seed(seed)
        return apply_feature_map(x * scale, "positive_random", num_features=num_features, generator=generator)

    return linear_attention_weights(q, k, phi)


def favor_weight_error(queries, keys, feature_counts: Sequence[int] = FEATURE_COUNTS, draws: int = 8) -> list[float]:
    """Mean total-variation distance between softmax weights and their FAVOR+ estimate, for each number of features.

    For each m: ``0.5 * sum_j |w_ij - w~_ij|`` averaged over the queries and over ``draws`` draws of the random
    vectors w_r (seeds 0 .. draws - 1). 0 is exact, 1 is disjoint.

    Args:
        queries: (Q, D); keys: (K, D), floating point, finite (computed in float64).
        feature_counts: the values of m.
        draws: how many draws of the random vectors to average, an integer >= 1.

    Returns:
        one error per entry of ``feature_counts``.
    """
    q, k = _qk(queries, keys)
    require_int(draws, "draws")
    exact = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)  # (1, Q, K)
    errors = []
    for m in feature_counts:
        require_int(m, "feature_counts[...]")
        gaps = [0.5 * (_favor_weights(q, k, m, s) - exact).abs().sum(-1).mean().item() for s in range(draws)]
        errors.append(float(np.mean(gaps)))
    return errors


def plot_favor_weights(
    queries,
    keys,
    num_features: int = 64,
    feature_counts: Sequence[int] = FEATURE_COUNTS,
    draws: int = 8,
    axes=None,
    figsize=(9.6, 3.4),
) -> Figure:
    """Left: the first query's softmax weights and their FAVOR+ estimate with ``num_features`` random features (the
    vectors w_r of seed 0). Right: ``favor_weight_error`` against m (log scale), with two baselines as lines: elu + 1's
    error and that of uniform weights (1/K on every key, which ignore the query).

    Args:
        queries: (Q, D); keys: (K, D).
        num_features: m of the left panel, marked on the right one.
        feature_counts, draws: as in ``favor_weight_error``.
        axes: two axes, or None for a new figure.
    """
    q, k = _qk(queries, keys)
    require_int(num_features, "num_features")
    every = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)[0]  # (Q, K): every query's weights
    exact = every[0]  # (K,): the first query's, drawn on the left
    errors = favor_weight_error(queries, keys, feature_counts, draws)
    elu = linear_attention_weights(q, k, "elu")[0]  # (Q, K)
    elu_error = 0.5 * (elu - every).abs().sum(-1).mean().item()  # averaged over the queries, as favor_weight_error
    uniform_error = 0.5 * (every - 1 / k.shape[1]).abs().sum(-1).mean().item()  # every key weighted 1/K
    tops = [_favor_weights(q, k, m, 0)[0, 0].max().item() for m in (*feature_counts, num_features)]
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=figsize, dpi=90, layout="constrained", width_ratios=(1.4, 1))
    left, right = axes
    positions = np.arange(k.shape[1])
    left.bar(positions, as_numpy(exact), color="0.75", label="softmax weights")
    (estimate,) = left.plot(positions, as_numpy(_favor_weights(q, k, num_features, 0)[0, 0]), "o-", color="C0", ms=3)
    left.set_ylim(0, 1.1 * max(*tops, exact.max().item()))
    left.set_xlabel("key j")
    left.set_ylabel("weight of query 0 on key j")
    legend = left.legend([left.patches[0], estimate], ["softmax weights", _favor_label(num_features)], fontsize=8)
    left.set_title("One query's weights: exact and estimated", fontsize=10)
    right.plot(feature_counts, errors, "s-", color="C0", label="FAVOR+ (mean of draws)")
    right.axhline(elu_error, color="C2", linestyle="--", label="elu + 1 (another kernel)")
    right.axhline(uniform_error, color="0.4", linestyle=":", label="uniform weights (1/K each)")
    (marker,) = right.plot([num_features], [_error_at(num_features, feature_counts, errors)], "o", color="C3", ms=9)
    right.set_xscale("log", base=2)
    right.set_ylim(0, 1.1 * max(*errors, elu_error, uniform_error))
    right.set_xlabel("number of random features m (log scale)")
    right.set_ylabel("error of the weights (total variation)")
    right.legend(fontsize=8)
    title = right.set_title(_error_title(num_features, feature_counts, errors), fontsize=10)

    def update(num_features: int = 64, **_) -> bool:
        """New values on the same artists; True (a new figure) for an m outside the curve or off its scale."""
        require_int(num_features, "num_features")
        row = _favor_weights(q, k, num_features, 0)[0, 0]
        if num_features not in feature_counts or row.max().item() > left.get_ylim()[1]:
            return True
        estimate.set_ydata(as_numpy(row))
        legend.get_texts()[1].set_text(_favor_label(num_features))
        marker.set_data([num_features], [_error_at(num_features, feature_counts, errors)])
        title.set_text(_error_title(num_features, feature_counts, errors))
        return False

    fig = left.figure
    fig.slider_update = update
    return fig


def _favor_label(num_features: int) -> str:
    return f"FAVOR+, m = {num_features}"


def _error_at(num_features: int, feature_counts, errors) -> float:
    counts = list(feature_counts)
    return errors[counts.index(num_features)] if num_features in counts else float("nan")


def _error_title(num_features: int, feature_counts, errors) -> str:
    value = _error_at(num_features, feature_counts, errors)
    return f"m = {num_features}: error {value:.3f}" if value == value else f"m = {num_features}"


def _reach(weights: np.ndarray) -> int:
    """How many positions, counting back from the query (its own included), hold ``_SHARE`` of the weight."""
    return int(np.searchsorted(np.cumsum(weights), _SHARE - 1e-12) + 1)


def plot_decay_weights(queries, keys, decay: float = 1.0, feature_map: str = "elu", ax=None, figsize=(6.4, 3.4)):
    """The last query's weights in causal linear attention with decay gamma, against how far back each key lies.

    Log scale of the weight, on which ``gamma^n`` is a straight line; the dotted line marks how many positions,
    counting back from the query's own, hold 90% of the weight.

    Args:
        queries: (T, D); keys: (T, D).
        decay: gamma in (0, 1] (``linear_attention_weights``).
        feature_map: ``"elu"`` or ``"relu"``.
        ax: axes to draw on, or None.
    """
    q, k = _qk(queries, keys)

    def weights_back(gamma: float) -> np.ndarray:
        row = linear_attention_weights(q, k, feature_map, causal=True, decay=gamma)[0, -1]  # (T,)
        return as_numpy(row.flip(0))  # (T,): 0 = the query's own position, T - 1 = the first key

    back = weights_back(decay)
    distance = np.arange(len(back))  # 0 = the query's own key
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=90, layout="constrained")
    (line,) = ax.plot(distance, np.clip(back, 1e-12, None), color="C0", linewidth=1.5)
    reach = ax.axvline(_reach(back) - 1, color="C3", linestyle=":", linewidth=1.5)
    ax.set_yscale("log")
    ax.set_ylim(1e-10, 1.5)
    ax.set_xlim(0, len(back) - 1)
    ax.set_xlabel("positions back from the query (0 = its own)")
    ax.set_ylabel("weight (log scale)")
    title = ax.set_title(_decay_title(decay, back), fontsize=10)

    def update(decay: float = 1.0, **_) -> None:
        back = weights_back(decay)
        line.set_ydata(np.clip(back, 1e-12, None))
        reach.set_xdata([_reach(back) - 1] * 2)
        title.set_text(_decay_title(decay, back))

    fig = ax.figure
    fig.slider_update = update
    return fig


def _decay_title(decay: float, back: np.ndarray) -> str:
    return f"γ = {decay:g}: {_SHARE:.0%} of the weight on the last {_reach(back)} of {len(back)} positions"


def plot_recall_curves(
    pairs: Sequence[int],
    curves: Mapping[str, Sequence[float]],
    ylabel: str,
    reference: Sequence[float] | None = None,
    reference_label: str = "",
    ax=None,
    figsize=(5.2, 3.4),
) -> Figure:
    """One line per memory (softmax, linear, decayed, delta rule...) against the number of stored pairs.

    Args:
        pairs: the numbers of pairs n (x axis).
        curves: memory name -> one value per entry of ``pairs`` (an error, an accuracy).
        ylabel: what the values are.
        reference: an optional dashed curve (a prediction), one value per entry of ``pairs``, named ``reference_label``.
        ax: axes to draw on, or None.
    """
    require_recall_curves(pairs, curves, reference)
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=90, layout="constrained")
    for (name, values), marker in zip(curves.items(), "osD^vx*", strict=False):
        ax.plot(pairs, values, marker=marker, ms=4, label=name)
    if reference is not None:
        ax.plot(pairs, reference, "k--", linewidth=1, label=reference_label)
    ax.set_xlabel("pairs stored, n")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    return ax.figure
