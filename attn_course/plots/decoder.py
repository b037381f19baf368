"""Figures of notebook 09: training curves of the two halves, head patterns, the next-token distribution, the
time per generated token and the cache bytes per token of published models.

The model, the cache, the training loop and the scores are in ``decoder``, ``kvcache``, ``generation``, ``lmtrain``
and ``lmeval``; this module only draws what they return.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from .._validate import require_rank
from .._validate.model_figures import (
    require_cache_counts,
    require_half_losses,
    require_head_pairs,
    require_head_scores,
    require_time_curves,
)
from ..cost import loglog_slope
from ..generation import next_token_probs
from ..lmtrain import LMHistory
from .base import as_numpy, draw_matrix, new_axes, thin_ticks

__all__ = [
    "plot_half_losses",
    "plot_head_scores",
    "plot_head_patterns",
    "plot_next_token",
    "plot_time_per_token",
    "plot_cache_bytes",
]


def plot_half_losses(history: LMHistory, vocab_size: int, smooth: int = 10, ax=None, figsize=(6.0, 3.2)) -> Figure:
    """The loss on the first half and on the repeated half of each training batch, against the step (the repeated
    half from its second token on, the targets that can be copied, as ``half_losses`` counts them).

    Both start at the loss of a uniform guess; a dashed line marks ``log(C - 1)``, the best the first half allows.
    ``smooth``: the curves are running means over that many steps.
    """
    require_half_losses(history, LMHistory, vocab_size, smooth)
    fig, ax = new_axes(ax, figsize)
    kernel = np.ones(smooth) / smooth
    for values, label in (
        (history.first_half, "first half (new tokens)"),
        (history.second_half, "repeated half (from a_2 on)"),
    ):
        curve = np.convolve(values, kernel, mode="valid") if len(values) >= smooth else np.asarray(values)
        ax.plot(np.arange(len(curve)) + (len(values) - len(curve)), curve, label=label)
    ax.axhline(math.log(vocab_size - 1), color="grey", ls="--", lw=1, label=f"log({vocab_size - 1}): a uniform guess")
    ax.set(xlabel="training step", ylabel="cross-entropy (nats)", title="next-token loss on each half")
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower left", fontsize=8)
    return fig


def plot_head_scores(scores: dict[str, torch.Tensor], figsize=(7.0, 2.6)) -> Figure:
    """The previous-token and induction scores of every head, (L, H) each, as two annotated grids."""
    require_head_scores(scores)
    fig, axes = plt.subplots(1, 2, figsize=figsize, layout="constrained")
    for ax, (name, title) in zip(
        axes, (("previous", "previous-token score"), ("induction", "induction score")), strict=True
    ):
        data = as_numpy(scores[name])
        mesh = draw_matrix(ax, data, 0.0, 1.0, "viridis", annotate=True)
        ax.set_xticks(np.arange(data.shape[1]) + 0.5, [str(h) for h in range(data.shape[1])])
        ax.set_yticks(np.arange(data.shape[0]) + 0.5, [f"layer {layer}" for layer in range(data.shape[0])])
        ax.set(xlabel="head", title=title)
    fig.colorbar(mesh, ax=axes, shrink=0.8, label="mean weight")
    return fig


def plot_head_patterns(weights: torch.Tensor, heads, labels=None, titles=None, figsize=(8.0, 3.8)) -> Figure:
    """Attention weights of a few heads on one sequence, side by side.

    Args:
        weights: (L, H, T, T) one sequence's weights (``model.attention_weights()[b]``).
        heads: (layer, head) pairs, counted from 0. labels: T token names for the axes (optional).
        titles: one title per head (default "layer l, head h").
    """
    heads = require_head_pairs(weights, heads)  # [(layer, head), ...]
    n = weights.shape[-1]  # T
    fig, axes = plt.subplots(1, len(heads), figsize=figsize, layout="constrained", squeeze=False)
    for i, (ax, (layer, head)) in enumerate(zip(axes[0], heads, strict=True)):
        mesh = draw_matrix(ax, as_numpy(weights[layer, head]), 0.0, 1.0, "Blues", annotate=False)
        thin_ticks(ax, "x", labels, n, max_ticks=40)
        thin_ticks(ax, "y", labels, n, max_ticks=40)
        ax.tick_params(labelsize=6)
        ax.set(xlabel="key position", title=titles[i] if titles else f"layer {layer}, head {head}")
        if i == 0:
            ax.set_ylabel("query position")
    fig.colorbar(mesh, ax=axes[0].tolist(), shrink=0.8, label="weight")
    return fig


def plot_next_token(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    labels=None,
    target=None,
    ax=None,
    figsize=(7.0, 3.0),
) -> Figure:
    """The next-token distribution ``next_token_probs(logits, temperature, top_k)`` as bars over the vocabulary.

    A slider panel updates the figure in place: the bars' heights and the title.

    Args:
        logits: (C,) one position's logits. labels: C token names (optional). target: the index of the token that
            truly comes next, drawn in another colour (optional).
    """
    require_rank(logits, "logits", (1,), "(C,)")
    probs = as_numpy(next_token_probs(logits, temperature, top_k))
    fig, ax = new_axes(ax, figsize)
    colours = ["tab:blue"] * len(probs)
    if target is not None:
        colours[int(target)] = "tab:orange"
    bars = ax.bar(np.arange(len(probs)), probs, color=colours)
    names = [str(x) for x in (labels if labels is not None else range(len(probs)))]
    ax.set_xticks(np.arange(len(probs)), names, fontsize=7)
    ax.set(xlabel="next token", ylabel="probability", ylim=(0, 1.02))
    title = ax.set_title(_next_token_title(probs, temperature, top_k))

    built = (logits, labels, target)

    def update(temperature=1.0, top_k=None, logits=logits, labels=labels, target=target, **_) -> bool:
        """New values on the same artists (see ``attn_course.widgets``); True for other logits, labels or target."""
        if logits is not built[0] or labels is not built[1] or target != built[2]:
            return True
        probs = as_numpy(next_token_probs(logits, temperature, top_k))
        for bar, p in zip(bars, probs, strict=True):
            bar.set_height(float(p))
        title.set_text(_next_token_title(probs, temperature, top_k))
        return False

    fig.slider_update = update
    return fig


def _next_token_title(probs: np.ndarray, temperature: float, top_k: int | None) -> str:
    kept = "all tokens" if top_k is None else f"top {top_k}"
    return f"temperature {float(temperature):g}, {kept}: largest p = {probs.max():.2f}"


def plot_time_per_token(lengths, seconds: dict[str, list[float]], ax=None, figsize=(5.5, 3.4)) -> Figure:
    """Seconds per generated token against the sequence length, log-log, one line per method, with its slope."""
    require_time_curves(lengths, seconds)
    fig, ax = new_axes(ax, figsize)
    for (name, values), marker in zip(seconds.items(), "os^", strict=False):
        slope = loglog_slope(list(lengths), list(values))
        ax.loglog(lengths, np.asarray(values) * 1e3, marker=marker, label=f"{name} (slope {slope + 0.0:.2f})")
    ax.set(xlabel="tokens already in the sequence", ylabel="ms per new token", title="time per generated token")
    ax.legend(fontsize=8)
    return fig


def plot_cache_bytes(values_per_token: dict[str, int], bytes_per_value: int = 2, ax=None, figsize=(6.5, 3.0)) -> Figure:
    """KiB of KV cache per token (all layers) for each model, as horizontal bars labelled with their value, on a
    log scale (the sizes span orders of magnitude); bars start at 1 KiB.

    ``values_per_token``: model name -> numbers cached per token over all layers (``kv_cache_bytes(..., length=1,
    bytes_per_value=1)``). ``bytes_per_value``: 1 (8-bit), 2 (16-bit) or 4 (32-bit). A slider panel updates the
    bars' widths and labels in place; the axis keeps the range of 4 bytes per value, so that bars can be compared
    across settings.
    """
    counts = require_cache_counts(values_per_token, bytes_per_value)  # one per model
    fig, ax = new_axes(ax, figsize)
    names = list(values_per_token)
    y = np.arange(len(names))[::-1]
    widths = np.asarray(counts, dtype=float) * bytes_per_value / 1024
    bars = ax.barh(y, widths - 1, left=1, color="tab:blue")  # from 1 KiB: a log axis has no 0
    labels = [ax.text(w, yy, f" {w:.0f}", va="center", fontsize=8) for w, yy in zip(widths, y, strict=True)]
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(1, max(counts) * 4 / 1024 * 4)  # room for the labels at 4 bytes per value
    ax.set(xlabel="KiB per token (all layers, log scale)")
    title = ax.set_title(f"KV cache per token at {bytes_per_value} byte{'s' if bytes_per_value > 1 else ''} per value")

    def update(bytes_per_value=2, **_) -> bool:
        """New widths and labels on the same bars (see ``attn_course.widgets``)."""
        for bar, label, count in zip(bars, labels, counts, strict=True):
            width = count * bytes_per_value / 1024
            bar.set_width(width - 1)
            label.set_x(width)
            label.set_text(f" {width:.0f}")
        title.set_text(f"KV cache per token at {bytes_per_value} byte{'s' if bytes_per_value > 1 else ''} per value")
        return False

    fig.slider_update = update
    return fig
