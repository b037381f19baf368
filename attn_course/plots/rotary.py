"""The figures of notebook 11: RoPE's angles and scores, and ALiBi's bias (context extension: ``plots.extrapolation``).

Each helper draws on a new figure unless given axes, returns the ``Figure``, and never calls ``plt.show()``.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .._validate import require_int
from .._validate.figures import require_vector_pair
from ..positional import frequencies, positional_encoding
from ..rotary import alibi_bias, alibi_slopes, apply_rope
from .base import as_numpy, draw_matrix, thin_ticks, unit_circle

__all__ = ["plot_rope_angles", "plot_rope_scores", "plot_alibi"]

TWO_PI = 2 * math.pi


def _pair_colours(num_pairs: int) -> np.ndarray:
    return plt.get_cmap("viridis")(np.linspace(0, 0.9, num_pairs))  # (D/2, 4): fast pairs dark, slow ones yellow


def plot_rope_angles(
    position: int = 10, num_hiddens: int = 16, base: float = 10000.0, max_position: int = 64, axes=None
) -> Figure:
    """RoPE's rotation angle ``position * w_j`` for every pair ``j``: left, each pair's angle at ``position`` as an
    arrow on the unit circle; right, each pair's angle (modulo 2 pi) against the position, up to ``max_position``.
    A slider panel updates the figure in place.

    Args:
        position: the position p marked (0 .. max_position).
        num_hiddens: D, even; D / 2 pairs.
        base: RoPE's wavelength scale.
        max_position: the last position on the right panel.
        axes: two axes, or None for a new figure.
    """
    require_int(num_hiddens, "num_hiddens", 2)
    require_int(max_position, "max_position")
    require_int(position, "position", 0, max_position)
    omega = as_numpy(frequencies(num_hiddens, base))[: num_hiddens // 2]  # (D/2,)
    colours = _pair_colours(len(omega))
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10.5, 3.8), layout="constrained", width_ratios=(1, 1.9))
    left, right = axes
    unit_circle(left, 1.15, "cos(p w_j)", "sin(p w_j)")
    arrows = [left.plot([0, 1], [0, 0], color=c, linewidth=2)[0] for c in colours]
    positions = np.arange(max_position + 1)
    wrapped = np.mod(positions[:, None] * omega, TWO_PI)  # (P, D/2)
    for j, c in enumerate(colours):
        right.plot(positions, wrapped[:, j], ".", color=c, markersize=3)  # dots: no line where the angle wraps
    marker = right.axvline(position, color="black", linestyle="--", linewidth=1)
    right.set_xlim(0, max_position)
    right.set_ylim(0, TWO_PI)
    right.set_yticks([0, math.pi, TWO_PI], ["0", "pi", "2 pi"])
    right.set_xlabel("position p")
    right.set_ylabel("angle p w_j (mod 2 pi)")
    right.set_title(
        f"Pair j = 0 (darkest) wraps around fast, pair j = {len(omega) - 1} (yellow) barely moves", fontsize=10
    )

    title = left.set_title("", fontsize=10)

    built = (num_hiddens, base, max_position)

    def update(position=10, num_hiddens=num_hiddens, base=base, max_position=max_position, **_) -> bool:
        """New values on the same artists (see ``attn_course.widgets``); True for another D, base or last position."""
        if (num_hiddens, base, max_position) != built:
            return True
        require_int(position, "position", 0, max_position)
        for arrow, angle in zip(arrows, position * omega, strict=True):
            arrow.set_data([0, math.cos(angle)], [0, math.sin(angle)])
        marker.set_xdata([position, position])
        title.set_text(f"Every pair's angle at position p = {position}")
        return False

    update(position)
    fig = left.figure
    fig.slider_update = update
    return fig


def plot_rope_scores(q: torch.Tensor, k: torch.Tensor, offset: int = 3, num_positions: int = 48, axes=None) -> Figure:
    """The score of two fixed vectors as their offset moves: left, ``rope(q, j + offset) . rope(k, j)`` against the
    offset; right, at the chosen offset, the score against the key's position j, for RoPE and for notebook 06's
    additive encoding ``(q + P[j + offset]) . (k + P[j])``. A slider panel updates the figure in place.

    Args:
        q, k: (D,) the fixed query and key, D even.
        offset: the offset i - j marked (0 .. num_positions - 1).
        num_positions: positions used; the offsets run over 0 .. num_positions - 1.
        axes: two axes, or None for a new figure.
    """
    d = require_vector_pair(q, k)
    require_int(num_positions, "num_positions", 2)
    require_int(offset, "offset", 0, num_positions - 1)
    positions = torch.arange(num_positions)
    q_all = apply_rope(q.double().expand(num_positions, d), positions)  # (T, D): q at every position
    k_all = apply_rope(k.double().expand(num_positions, d), positions)  # (T, D)
    rope = as_numpy(q_all @ k_all.T)  # (T, T): query position i, key position j
    P = positional_encoding(num_positions, d, dtype=torch.float64)  # (T, D)
    additive = as_numpy((q.double() + P) @ (k.double() + P).T)  # (T, T)
    by_offset = np.array([rope[o, 0] for o in range(num_positions)])  # depends on the offset only
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
    left, right = axes
    left.plot(positions, by_offset, ".-", color="C0")
    dot = left.plot([offset], [by_offset[offset]], "o", color="C3", markersize=9)[0]
    left.set_xlabel("offset i - j")
    left.set_ylabel("score")
    left.set_title("RoPE: score against the offset", fontsize=10)
    low, high = min(rope.min(), additive.min()), max(rope.max(), additive.max())
    pad = 0.05 * (high - low)
    (rope_line,) = right.plot([], [], ".-", color="C0", label="RoPE")
    (add_line,) = right.plot([], [], ".-", color="C1", label="additive (q + P) . (k + P)")
    right.set_xlim(-0.5, num_positions - 0.5)
    right.set_ylim(low - pad, high + 5 * pad)  # room at the top for the legend
    right.set_xlabel("key position j")
    right.set_ylabel("score")
    right.legend(fontsize=8, loc="upper left", ncols=2)
    for ax in (left, right):
        ax.yaxis.set_major_locator(MaxNLocator(5))  # a few tick labels

    title = right.set_title("", fontsize=10)

    built = (q, k, num_positions)

    def update(offset: int = 3, q=q, k=k, num_positions: int = num_positions, **_) -> bool:
        """New values on the same artists (see ``attn_course.widgets``); True for other vectors or positions."""
        if q is not built[0] or k is not built[1] or num_positions != built[2]:
            return True
        require_int(offset, "offset", 0, num_positions - 1)
        j = np.arange(num_positions - offset)
        rope_line.set_data(j, rope[j + offset, j])
        add_line.set_data(j, additive[j + offset, j])
        dot.set_data([offset], [by_offset[offset]])
        title.set_text(f"At offset {offset}: RoPE is flat, the additive score moves")
        return False

    update(offset)  # draws the lines of the right panel
    left.figure.slider_update = update
    return left.figure


def plot_alibi(head: int = 0, num_heads: int = 8, length: int = 16, axes=None) -> Figure:
    """ALiBi's bias: left, head ``head``'s (T, T) bias as a heatmap (one colour scale for all heads); right, the bias
    against the distance i - j for every head, head ``head`` drawn thick.

    Args:
        head: h in 0 .. num_heads - 1, the head shown (slope ``alibi_slopes(H)[h]``: 2^(-8 (h + 1) / H) when H is a
            power of two), counted from 0.
        num_heads: H.
        length: T, the number of positions.
        axes: two axes, or None for a new figure.
    """
    require_int(num_heads, "num_heads")
    require_int(head, "head", 0, num_heads - 1)
    require_int(length, "length", 2)
    bias = as_numpy(alibi_bias(num_heads, length, length))  # (H, T, T)
    vmin = float(bias.min())
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10.5, 4), layout="constrained", width_ratios=(1, 1.2))
    left, right = axes
    mesh = draw_matrix(left, bias[head], vmin, 0.0, "Blues_r", annotate=False)
    colorbar = left.figure.colorbar(mesh, ax=left, label="bias added to the score")
    colorbar.locator = MaxNLocator(4)  # a few tick labels
    thin_ticks(left, "x", None, length, max_ticks=5)
    thin_ticks(left, "y", None, length, max_ticks=5)
    left.set_xlabel("key position j (above the diagonal: masked)")
    left.set_ylabel("query position i")
    distance = np.arange(length)
    colours = plt.get_cmap("plasma")(np.linspace(0, 0.85, num_heads))
    lines = [right.plot(distance, bias[h, -1, ::-1], color=colours[h])[0] for h in range(num_heads)]
    right.text(distance[-1], bias[0, -1, 0], " h = 0", fontsize=8, va="center")  # the steepest line
    right.text(distance[-1], bias[-1, -1, 0], f" h = {num_heads - 1}", fontsize=8, va="center")  # the flattest
    right.set_xlabel("distance i - j")
    right.set_ylabel("bias -m_h (i - j)")
    right.set_title("Every head: a line of slope -m_h", fontsize=10)
    right.set_xlim(0, length + 1.5)  # room for the labels at the lines' ends

    slope = float(alibi_slopes(num_heads)[head])
    if num_heads & (num_heads - 1) == 0:  # a power of two: the slope is 2^(-8 (h + 1) / H)
        left.set_title(
            f"Head {head} of {num_heads}: slope m = 2^(-8*{head + 1}/{num_heads}) = {slope:.3g}", fontsize=10
        )
    else:
        left.set_title(f"Head {head} of {num_heads}: slope m = {slope:.3g}", fontsize=10)
    for h, line in enumerate(lines):
        line.set_linewidth(3 if h == head else 1)
        line.set_alpha(1.0 if h == head else 0.5)
    fig = left.figure
    return fig
