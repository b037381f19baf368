"""Figures of notebook 13: sparse attention.

``plot_mass_kept`` shows how much of each head's attention its k largest weights carry (the oracle top-k), against
the share uniform weights would keep. ``plot_sparse_selection`` draws which keys each query reads under three patterns
of about the same budget (oracle top-k, MoBA blocks, a sliding window) over the dense weights; it supports in-place
updates for a slider panel (see ``attn_course.widgets``).
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullLocator

from .._validate.figures import require_mass_by_position, require_mass_curves, require_selection_figure
from ..masking import causal_mask, masked_softmax
from ..sparse import attention_mass_kept, block_sparse_attention, topk_attention
from .base import as_numpy

__all__ = ["plot_mass_kept", "plot_mass_by_position", "plot_sparse_selection"]

_WEIGHT_TICKS = (0.0, 0.05, 0.2, 0.5, 1.0)  # the colour bar's, even on its square-root scale
_NORM_GAMMA = 0.5  # the colour of a weight goes with its square root: the small weights of long rows stay visible


def plot_mass_kept(weights, budgets, labels=None, ax=None, figsize=(5.6, 3.4)) -> Figure:
    """For each head, the mean over queries of the attention mass its ``k`` largest weights keep, for each budget k.

    The oracle top-k: ``sum`` of the k largest weights of each row (all of them, 1, for a query that sees k keys or
    fewer), averaged over the queries. The dashed grey line is what uniform weights would keep, ``min(k, n_i) / n_i``
    for a query that sees ``n_i`` keys, averaged the same way: a head above it concentrates its attention.

    Args:
        weights: (H, Q, K) causal attention weights of H heads (query i sees keys 0..i + K - Q, K >= Q), >= 0; or
            (H, B, Q, K), the same for B sequences, averaged over them too.
        budgets: the values of k, integers >= 1 (drawn sorted, on a log2 axis).
        labels: H names for the legend, or None for ``head 0, head 1, ...``.
        ax: axes to draw on, or None for a new figure.

    Returns:
        The figure.
    """
    budgets, labels = require_mass_curves(weights, budgets, labels)
    num_q, num_k = weights.shape[-2:]
    w = weights.detach().cpu().double().reshape(weights.shape[0], -1, num_k)  # (H, B Q, K): one row per query
    kept = [w.topk(min(k, num_k), dim=-1).values.sum(-1).mean(-1) for k in budgets]  # each (H, B Q, k) -> (H,)
    seen = causal_mask(num_q, num_k).sum(-1).double()  # (Q,): n_i, the keys each query sees
    uniform = [(seen.clamp(max=k) / seen).mean().item() for k in budgets]  # min(k, n_i) / n_i, mean over queries
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=90, layout="constrained")
    for head, label in enumerate(labels):
        ax.plot(budgets, [float(k[head]) for k in kept], "o-", ms=4, label=label)
    ax.plot(budgets, uniform, "--", color="0.5", label="uniform weights: k / (keys allowed)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets, [str(k) for k in budgets])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("k, the keys kept per query (log scale)")
    ax.set_ylabel("mass kept (mean over queries)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("Mass kept by the k largest weights", fontsize=10)
    return ax.figure


def plot_mass_by_position(weights, k: int, labels=None, ax=None, figsize=(5.6, 3.0)) -> Figure:
    """For each head, the mass its ``k`` largest weights keep at each query position, averaged over the sequences.

    Args:
        weights: (H, Q, K) or (H, B, Q, K) causal attention weights, as ``plot_mass_kept`` takes them; query i is
            position ``K - Q + i``.
        k: the keys kept per query, an integer >= 1.
        labels: H names for the legend, or None for ``head 0, head 1, ...``.
        ax: axes to draw on, or None for a new figure.

    Returns:
        The figure.
    """
    labels = require_mass_by_position(weights, k, labels)
    num_q, num_k = weights.shape[-2:]
    w = weights.detach().cpu().double().reshape(weights.shape[0], -1, num_q, num_k)  # (H, B, Q, K)
    kept = w.topk(min(k, num_k), dim=-1).values.sum(-1).mean(1)  # (H, B, Q, k) -> (H, Q): mean over the sequences
    position = np.arange(num_k - num_q, num_k)  # (Q,): each query's position
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=90, layout="constrained")
    for head, label in enumerate(labels):
        ax.plot(position, as_numpy(kept[head]), ".-", ms=3, label=label)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("query position")
    ax.set_ylabel(f"mass kept by the top {k}")
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(f"Mass kept by the {k} largest weights, query by query", fontsize=10)
    return ax.figure


def plot_sparse_selection(queries, keys, top_k: int = 8, block_size: int = 8, axes=None, figsize=(9.6, 3.4)) -> Figure:
    """The dense causal weights ``softmax(q k^T / sqrt(D))`` of one head, on the keys three sparse patterns read.

    Panels, queries down and keys across, one colour scale: the oracle top-k (``topk_attention``), MoBA
    (``block_sparse_attention`` with ``ceil(top_k / block_size)`` blocks of ``block_size`` keys, the query's own
    block among them: about the same budget) and a sliding window of the last ``top_k`` keys. A key a pattern does not
    read is grey, a key after the query white. Each title gives the pattern's mean ``attention_mass_kept``.

    Args:
        queries: (T, D); keys: (T, D); causal self-attention, query t sees keys 0..t.
        top_k: keys per query of the top-k and of the window, an integer >= 1.
        block_size: keys per MoBA block, an integer >= 1.
        axes: three axes, or None for a new figure.

    Returns:
        The figure; its ``slider_update(top_k=..., block_size=...)`` sets the three images and the titles in place.
    """
    require_selection_figure(queries, keys, top_k, block_size, axes)
    q, k = queries.detach().cpu().double()[None], keys.detach().cpu().double()[None]  # (1, T, D)
    allowed = causal_mask(q.shape[1])  # (T, T)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (1, T, D) x (1, D, T) -> (1, T, T)
    dense = masked_softmax(scores, mask=allowed)  # (1, T, T): the dense causal weights
    position = torch.arange(q.shape[1])  # (T,)

    def panels(top_k: int, block_size: int) -> list[tuple[str, np.ma.MaskedArray]]:
        """(title, image) of each pattern: the dense weights on the keys read, masked on the others."""
        blocks = -(-top_k // block_size)  # ceil(top_k / block_size)
        window = allowed & (position > position[:, None] - top_k)  # (T,) vs (T, 1) -> (T, T): keys t - top_k + 1..t
        moba = f"MoBA {blocks} block{'s' * (blocks > 1)} of {block_size}"
        patterns = {
            f"oracle top-{top_k}": topk_attention(q, k, k, top_k, causal=True)[1],  # (1, T, T)
            moba: block_sparse_attention(q, k, k, block_size, blocks, causal=True)[1],  # (1, T, T)
            f"window {top_k}": window[None],  # (1, T, T)
        }
        return [(_title(name, dense, read), _image(dense, allowed, read)) for name, read in patterns.items()]

    if axes is None:
        fig, axes = plt.subplots(1, 3, figsize=figsize, dpi=90, layout="constrained", sharey=True)
    axes, fig = list(np.ravel(axes)), np.ravel(axes)[0].figure
    norm = PowerNorm(_NORM_GAMMA, vmin=0.0, vmax=1.0)
    cmap = plt.get_cmap("Reds").with_extremes(bad="0.82", under="white")  # grey: not read; white: after the query
    images, titles = [], []
    ticks = [t for t in MaxNLocator(4, integer=True).tick_values(0, q.shape[1] - 1) if 0 <= t < q.shape[1]]  # fixed
    for ax, (title, image) in zip(axes, panels(top_k, block_size), strict=True):
        images.append(ax.imshow(image, cmap=cmap, norm=norm, interpolation="nearest", aspect="auto"))
        titles.append(ax.set_title(title, fontsize=10))
        ax.set_xlabel("key position")
        ax.set(xticks=ticks, yticks=ticks)
    axes[0].set_ylabel("query position")
    fig.colorbar(images[0], ax=axes, shrink=0.8, label="dense attention weight", ticks=_WEIGHT_TICKS)
    heading = fig.suptitle(_heading(top_k), fontsize=10)

    def update(top_k: int = 8, block_size: int = 8, **_) -> None:
        """The three images, their titles and the heading for another budget, on the same artists."""
        require_selection_figure(queries, keys, top_k, block_size)
        for image, title, (text, data) in zip(images, titles, panels(top_k, block_size), strict=True):
            image.set_data(data)
            title.set_text(text)
        heading.set_text(_heading(top_k))

    fig.slider_update = update
    return fig


def _image(dense: torch.Tensor, allowed: torch.Tensor, read: torch.Tensor) -> np.ma.MaskedArray:
    """(T, T): the dense weights on the keys ``read``, masked (grey) on the others, -1 (white) after the query."""
    shown = torch.where(allowed, dense[0], -1.0)  # (T, T)
    return np.ma.masked_array(as_numpy(shown), mask=as_numpy(allowed & ~read[0]))


def _title(name: str, dense: torch.Tensor, read: torch.Tensor) -> str:
    return f"{name}: keeps {attention_mass_kept(dense, read).mean().item():.2f}"


def _heading(top_k: int) -> str:
    return f"Keys each query reads, same budget of about {top_k} keys (grey: not read, white: after the query)"
