"""Figures of notebook 10: peak memory against N, the tiles a causal or local pass computes, and the IO model.

The numbers come from ``efficient`` and ``efficient_cost``; this module only draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from .._validate import require_int
from ..efficient import _key_blocks, _require_causal_sizes, block_counts
from ..efficient_cost import io_cost

__all__ = ["plot_peak_memory", "plot_tiles", "plot_io_cost"]

_MIB = 2**20
_IO_SIZES = [2**k for k in range(8, 16)]  # the N of plot_io_cost's curves: 256 .. 32768


def _axes(ax, figsize):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=90, layout="constrained")
    return ax


def plot_peak_memory(sizes: Sequence[int], peaks: Mapping[str, Sequence[float]], ax=None, figsize=(6.4, 3.6)) -> Figure:
    """Measured peak memory (MiB, log scale) against the sequence length N (log scale), one line per version.

    Args:
        sizes: the lengths N.
        peaks: version name -> peak bytes at each size (``efficient_cost.peak_memory``).
        ax: axes to draw on, or None for a new figure.
    """
    if not isinstance(peaks, Mapping):
        raise TypeError(f"peaks must map each version's name to its peak bytes per size, got {type(peaks).__name__}")
    if isinstance(sizes, str | bytes) or not isinstance(sizes, Sequence):
        raise TypeError(f"sizes must be a sequence of lengths N, got {type(sizes).__name__}")
    if not sizes or not peaks:
        raise ValueError("sizes and peaks must not be empty")
    for name, values in peaks.items():
        if len(values) != len(sizes):
            raise ValueError(f"peaks[{name!r}] must have one value per size ({len(sizes)}), got {len(values)}")
    ax = _axes(ax, figsize)
    for (name, values), marker in zip(peaks.items(), "osd^v", strict=False):
        ax.plot(sizes, np.asarray(values, dtype=float) / _MIB, marker=marker, label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length N = Q = K (log scale)")
    ax.set_ylabel("peak memory of one call (MiB, log)")
    ax.set_title("Peak memory measured with PyTorch's profiler", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return ax.figure


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
    for name, value in (("num_queries", num_queries), ("num_keys", num_keys), ("block_size", block_size)):
        require_int(value, name)
    offset = _require_causal_sizes(num_queries, num_keys, causal, window)
    q_pos = np.arange(num_queries)[:, None] + offset  # (Q, 1)
    k_pos = np.arange(num_keys)[None, :]  # (1, K)
    allowed = np.ones((num_queries, num_keys), dtype=bool) if not causal else k_pos <= q_pos  # (Q, K)
    if window is not None:
        allowed &= k_pos > q_pos - window
    image = np.zeros((num_queries, num_keys))  # 0 skipped, 1 computed tile, 2 pair that may attend
    for q_start in range(0, num_queries, block_size):
        q_stop = min(q_start + block_size, num_queries)
        for k_start in _key_blocks(q_start, q_stop, num_keys, block_size, offset, causal, window):
            image[q_start:q_stop, k_start : k_start + block_size] = 1
    image[allowed] = 2
    ax = _axes(ax, figsize)
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


def plot_io_cost(
    num_tokens: int = 4096,
    block_size: int = 64,
    d: int = 64,
    fast_memory_kib: float = 192.0,
    axes=None,
    figsize=(10.0, 3.6),
) -> Figure:
    """The IO model (``io_cost``): bytes moved against N for both versions (left), arithmetic intensity (right).

    A slider panel updates the figure in place.

    Args:
        num_tokens: N, marked on the left panel; block_size: b of the tiled version; d: head size.
        fast_memory_kib: fast memory per tile, in KiB (192: an A100's per streaming multiprocessor); the title says
            whether a tile fits.
        axes: two axes, or None for a new figure.
    """
    require_int(num_tokens, "num_tokens")
    require_int(block_size, "block_size")
    here = io_cost(num_tokens, d, block_size, fast_memory=fast_memory_kib * 1024)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=figsize, dpi=90, layout="constrained", width_ratios=(1.3, 1))
    left, right = axes
    sizes = _IO_SIZES
    naive = [io_cost(n, d, block_size)["naive_bytes"] / _MIB for n in sizes]
    left.plot(sizes, naive, marker="o", color="C3", label="materialised")
    (tiled,) = left.plot(
        sizes, _tiled_curve(sizes, d, block_size), marker="s", color="C0", label=f"tiled, b = {block_size}"
    )
    (marker,) = left.plot([num_tokens] * 2, [here["naive_bytes"] / _MIB, here["tiled_bytes"] / _MIB], "k:", linewidth=1)
    # Fixed ticks and limits: the same axes for every N and b, so that two pictures compare at a glance.
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xticks(sizes, [f"{n // 1024}k" if n >= 1024 else str(n) for n in sizes])
    left.set_yticks([1e-1, 1e1, 1e3, 1e5], ["0.1", "10", "1000", "100000"])
    left.minorticks_off()
    left.set_ylim(0.05, 2e5)
    left.set_xlabel("N = Q = K (log scale)")
    left.set_ylabel("MiB moved to and from slow memory")
    left_title = left.set_title(_bytes_title(num_tokens, here), fontsize=10)
    legend = left.legend(fontsize=8, loc="upper left")
    values = [here["naive_intensity"], here["tiled_intensity"]]
    bars = right.bar(["materialised", "tiled"], values, color=["C3", "C0"])
    numbers = [right.text(x, v, f"{v:.1f}", ha="center", va="bottom", fontsize=9) for x, v in enumerate(values)]
    right.set_ylim(0, _intensity_top(values))
    right.set_ylabel("FLOPs per byte moved")
    title, colour = _fit_title(here, fast_memory_kib)
    right_title = right.set_title(title, fontsize=10, color=colour)

    built = (num_tokens, d, fast_memory_kib)

    def update(num_tokens: int = 4096, block_size: int = 64, d: int = d, fast_memory_kib: float = fast_memory_kib, **_):
        """New values on the same artists (see ``attn_course.widgets``); True when they need a new figure."""
        require_int(num_tokens, "num_tokens")
        require_int(block_size, "block_size")
        if (d, fast_memory_kib) != built[1:] or not _inside(num_tokens) or not _inside(built[0]):
            return True  # other curves, or an N line that widens the N axis
        here = io_cost(num_tokens, d, block_size, fast_memory=fast_memory_kib * 1024)
        values = [here["naive_intensity"], here["tiled_intensity"]]
        if _intensity_top(values) != right.get_ylim()[1]:
            return True  # other tick labels on the intensity axis
        tiled.set_ydata(_tiled_curve(sizes, d, block_size))
        tiled.set_label(f"tiled, b = {block_size}")
        legend.get_texts()[1].set_text(f"tiled, b = {block_size}")
        marker.set_data([num_tokens] * 2, [here["naive_bytes"] / _MIB, here["tiled_bytes"] / _MIB])
        left_title.set_text(_bytes_title(num_tokens, here))
        for x, (bar, number, v) in enumerate(zip(bars, numbers, values, strict=True)):
            bar.set_height(v)
            number.set_position((x, v))
            number.set_text(f"{v:.1f}")
        title, colour = _fit_title(here, fast_memory_kib)
        right_title.set_text(title)
        right_title.set_color(colour)
        return False

    fig = left.figure
    fig.slider_update = update
    return fig


def _inside(num_tokens: int) -> bool:
    """Whether ``plot_io_cost``'s line at N lies within its curves, which then set the N axis alone."""
    return _IO_SIZES[0] <= num_tokens <= _IO_SIZES[-1]


def _intensity_top(values: list[float]) -> float:
    """The top of the intensity axis: 150 FLOPs per byte, or more for a larger intensity."""
    return max(150.0, max(values) * 1.2)


def _tiled_curve(sizes, d: int, block_size: int) -> list[float]:
    return [io_cost(n, d, block_size)["tiled_bytes"] / _MIB for n in sizes]


def _bytes_title(num_tokens: int, here: dict) -> str:
    ratio = here["naive_bytes"] / here["tiled_bytes"]
    return (
        f"N = {num_tokens}: {here['naive_bytes'] / _MIB:,.0f} MiB against "
        f"{here['tiled_bytes'] / _MIB:,.1f} MiB ({ratio:.1f}x less)"
    )


def _fit_title(here: dict, fast_memory_kib: float) -> tuple[str, str]:
    fits = "fits in" if here["fits"] else "does NOT fit in"
    title = (
        f"{here['flops'] / 1e9:.1f} GFLOP for both; a tile needs\n{here['tile_bytes'] / 1024:.0f} KiB, "
        f"{fits} {fast_memory_kib:.0f} KiB"
    )
    return title, "black" if here["fits"] else "C3"
