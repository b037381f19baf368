"""Figure of notebook 10: the tiles a causal or local tiled pass computes, and those it skips.

The counts come from ``efficient.block_counts``; this module only draws them (the memory and IO figures of notebook
10: ``plots.cost``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from .._validate import require_block_grid
from ..efficient import block_counts

__all__ = ["plot_tiles"]


def plot_tiles(
    num_queries: int,
    num_keys: int,
    block_size: int,
    causal: bool = True,
    window: int | None = None,
    ax=None,
    figsize=(4.2, 4.0),
) -> Figure:
    """Which (query, key) pairs may attend (dark) and which tiles ``flash_attention`` computes (framed, tinted).

    Tiles left white are skipped: they hold no pair that may attend. The title gives ``block_counts``.
    """
    require_block_grid(num_queries, num_keys, block_size, causal, window)
    q_pos = np.arange(num_queries)[:, None] + num_keys - num_queries  # (Q, 1): aligned bottom-right, as causal_mask
    k_pos = np.arange(num_keys)[None, :]  # (1, K)
    allowed = np.ones((num_queries, num_keys), dtype=bool) if not causal else k_pos <= q_pos  # (Q, K)
    if window is not None:
        allowed &= k_pos > q_pos - window
    image = np.zeros((num_queries, num_keys))  # 0 skipped, 1 computed tile, 2 pair that may attend
    for q_start in range(0, num_queries, block_size):
        for k_start in range(0, num_keys, block_size):
            tile = (slice(q_start, q_start + block_size), slice(k_start, k_start + block_size))
            image[tile] = allowed[tile].any()  # flash_attention skips exactly the tiles with no allowed pair
    image[allowed] = 2
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=90, layout="constrained")
    cmap = ListedColormap(["white", "#c6dbef", "#08519c"])
    ax.imshow(image, cmap=cmap, vmin=0, vmax=2, interpolation="nearest", aspect="auto")
    for edge in range(0, num_queries + 1, block_size):
        ax.axhline(edge - 0.5, color="0.4", linewidth=0.8)
    for edge in range(0, num_keys + 1, block_size):
        ax.axvline(edge - 0.5, color="0.4", linewidth=0.8)
    counts = block_counts(num_queries, num_keys, block_size, causal, window)
    kind = "full" if not causal else ("causal" if window is None else f"window {window}")
    ax.set_title(
        f"{kind}, block {block_size}: {counts['computed']} tiles computed,\n{counts['skipped']} skipped "
        f"of {counts['total']}",
        fontsize=10,
    )
    ax.set_xlabel("key position")
    ax.set_ylabel("query")
    return ax.figure
