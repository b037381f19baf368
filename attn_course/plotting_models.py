"""Figures of the model modules: multi-head weights (notebook 06).

The model modules (``multihead``, ``positional``, ``transformer``) hold the formulas only; their
pictures live here. Every function returns the ``Figure`` and never calls ``plt.show()``.
"""

from __future__ import annotations

import torch

from ._validate import require_int
from .multihead import MultiHeadAttention
from .plotting import show_heatmaps

__all__ = ["plot_head_weights"]


def plot_head_weights(num_heads: int = 4, num_hiddens: int = 16, seed: int = 0, tokens=None, axes=None):
    """Per-head attention weights of a freshly initialised ``MultiHeadAttention`` on one random sequence.

    Shows that heads start out attending differently: each has its own slice of the projections.
    ``axes``: one axes per panel (up to four per row), or None for a new figure.
    """
    require_int(num_heads, "num_heads")
    tokens = list(tokens) if tokens is not None else ["the", "cat", "sat", "on", "the", "mat"]
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():  # seed the layer's initial weights without touching the caller's random state
        torch.manual_seed(seed)
        layer = MultiHeadAttention(num_hiddens, num_heads).eval()
    x = torch.randn(1, len(tokens), num_hiddens, generator=gen)  # (1, T, D): one sequence
    with torch.no_grad():
        layer(x, x, x)
    weights = layer.attention_weights[0]  # (H, T, T)
    cols = min(num_heads, 4)
    rows = -(-num_heads // cols)
    grid = torch.zeros(rows * cols, len(tokens), len(tokens))
    grid[:num_heads] = weights
    titles = [f"head {h + 1}" for h in range(num_heads)] + ["(no head)"] * (rows * cols - num_heads)
    return show_heatmaps(
        grid.reshape(rows, cols, len(tokens), len(tokens)),
        ax=axes,
        titles=titles,
        xticklabels=tokens,
        yticklabels=tokens,
        vmin=0.0,
        vmax=1.0,
        annotate=False,
        figsize=(cols * 2.8 + 1.2, rows * 2.8 + 1.0),
        suptitle=f"{num_heads} heads, one sequence (weights at initialisation)",
    )
