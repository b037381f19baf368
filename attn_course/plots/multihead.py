"""Figure of notebook 06's multi-head attention: the weights of every head at initialisation.

The layer is ``multihead.MultiHeadAttention``; this module only draws what it computes.
"""

from __future__ import annotations

import torch
from matplotlib.figure import Figure

from .._validate import require_int, require_sequence
from ..multihead import MultiHeadAttention
from .base import weight_map
from .heatmaps import show_heatmaps

__all__ = ["plot_head_weights"]


def plot_head_weights(num_heads: int = 4, num_hiddens: int = 16, seed: int = 0, tokens=None, axes=None) -> Figure:
    """Per-head attention weights of a freshly initialised ``MultiHeadAttention`` on one random sequence.

    Shows that heads start out attending differently: each has its own slice of the projections.
    ``axes``: one axes per panel (up to four per row), or None for a new figure.
    """
    require_int(num_heads, "num_heads")
    if tokens is not None:
        require_sequence(tokens, "tokens", "token names")
    tokens = list(tokens) if tokens is not None else ["the", "cat", "sat", "on", "the", "mat"]
    if not tokens:
        raise ValueError("tokens must name at least one token, got none")
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
    titles = [f"head {h}" for h in range(num_heads)] + ["(no head)"] * (rows * cols - num_heads)
    return show_heatmaps(
        grid.reshape(rows, cols, len(tokens), len(tokens)),
        ax=axes,
        titles=titles,
        annotate=False,
        **weight_map(tokens),
        figsize=(max(cols * 2.8 + 1.2, 5.0), rows * 2.8 + 1.0),  # at least as wide as the title
        suptitle=f"{num_heads} head{'s' if num_heads > 1 else ''}, one sequence (weights at initialisation)",
    )
