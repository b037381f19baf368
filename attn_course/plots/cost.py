"""Figures of notebook 10: the peak memory measured against N, and the IO model's bytes moved and intensity.

The numbers come from ``cost.peak_memory`` and ``cost.io_cost``; this module only draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .._validate import require_int
from .._validate.cost import require_peak_curves
from ..cost import io_cost

__all__ = ["plot_peak_memory", "plot_io_cost"]

_MIB = 2**20
_IO_SIZES = [2**k for k in range(8, 16)]  # the N of plot_io_cost's curves: 256 .. 32768


def plot_peak_memory(sizes: Sequence[int], peaks: Mapping[str, Sequence[float]], ax=None, figsize=(6.4, 3.6)) -> Figure:
    """Measured peak memory (MiB, log scale) against the sequence length N (log scale), one line per version.

    Args:
        sizes: the lengths N.
        peaks: version name -> peak bytes at each size (``peak_memory``).
        ax: axes to draw on, or None for a new figure.
    """
    require_peak_curves(sizes, peaks)
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, dpi=90, layout="constrained")
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
    _bytes_axes(left, sizes)
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
        _set_bars(bars, numbers, values)
        title, colour = _fit_title(here, fast_memory_kib)
        right_title.set_text(title)
        right_title.set_color(colour)
        return False

    left.figure.slider_update = update
    return left.figure


def _bytes_axes(ax, sizes: list[int]) -> None:
    """Fixed ticks and limits: the same axes for every N and b, so that two pictures compare at a glance."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [f"{n // 1024}k" if n >= 1024 else str(n) for n in sizes])
    ax.set_yticks([1e-1, 1e1, 1e3, 1e5], ["0.1", "10", "1000", "100000"])
    ax.minorticks_off()
    ax.set_ylim(0.05, 2e5)
    ax.set_xlabel("N = Q = K (log scale)")
    ax.set_ylabel("MiB moved to and from slow memory")


def _set_bars(bars, numbers, values: list[float]) -> None:
    """The intensity bars at new heights, each with its number on top."""
    for x, (bar, number, v) in enumerate(zip(bars, numbers, values, strict=True)):
        bar.set_height(v)
        number.set_position((x, v))
        number.set_text(f"{v:.1f}")


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
