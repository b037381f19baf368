"""Figure of notebook 06's positional encoding: a column pair as two waves, and its rotation on the unit circle.

The encoding and the rotation are ``positional.positional_encoding`` and ``positional.rotation_matrix``; this module
only draws them.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .._validate import require_int
from ..positional import frequencies, positional_encoding, rotation_matrix
from .base import unit_circle

__all__ = ["plot_rotation"]


def _require_rotation_args(delta, freq_index, num_steps: int, num_hiddens: int) -> None:
    require_int(num_hiddens, "num_hiddens", 2)
    require_int(num_steps, "num_steps", 2)
    pairs = num_hiddens // 2
    require_int(freq_index, "freq_index", 0, pairs - 1)
    require_int(delta, "delta", 0, num_steps - 1)


def _rotation_titles(delta: int, omega: float, freq_index: int) -> tuple[str, str]:
    """The titles of ``plot_rotation``'s two axes (waves, circle)."""
    return (
        f"Column pair j = {freq_index}: frequency w = {omega:.4g}, wavelength {2 * math.pi / omega:.3g}",
        f"i -> i + {delta}: one rotation by {delta} w = {delta * omega:.3g} rad\n"
        "(dots: positions i; rings: the true encodings at i + delta)",
    )


def plot_rotation(
    delta: int = 3, freq_index: int = 1, num_steps: int = 40, num_hiddens: int = 16, axes=None, figsize=(11.0, 3.8)
) -> Figure:
    """The rotation at work for one column pair: left, the pair as two waves; right, the pair as points on the unit
    circle, each position joined to the position ``delta`` later by the same rotation.

    The waves keep the range [-1.1, 1.1] of the fast pairs, so pairs can be compared: a slow pair's waves stay nearly
    flat. A slider panel updates the figure in place.

    Args:
        delta: the offset.
        freq_index: j, the column pair (2j, 2j + 1) shown.
        num_steps, num_hiddens: size of the encoding.
        axes: two axes, or None for a new figure.
    """
    _require_rotation_args(delta, freq_index, num_steps, num_hiddens)
    encoding = positional_encoding(num_steps, num_hiddens, dtype=torch.float64)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=figsize, layout="constrained", width_ratios=(1.6, 1))
    left, right = axes
    positions = torch.arange(num_steps)
    fine = torch.linspace(0, num_steps - 1, 10 * (num_steps - 1) + 1)  # (F,): smooth waves between the positions
    # Every artist is drawn once with placeholder data; update() (called below) gives them the values.
    waves = [left.plot(fine, torch.zeros_like(fine), color=c, linewidth=1, label=c)[0] for c in ("C0", "C1")]
    dots = [left.plot(positions, torch.zeros(num_steps), "o", color=c, markersize=3)[0] for c in ("C0", "C1")]
    left.set_ylim(-1.1, 1.1)  # fixed: the fastest pair's range, which the smooth waves fill
    left.set_yticks([-1.0, -0.5, 0.0, 0.5, 1.0])  # few tick labels: each costs a slider's redraw time
    left.xaxis.set_major_locator(MaxNLocator(5, integer=True))
    left.set(xlabel="position i", ylabel="encoding value")
    legend = left.legend(fontsize=8, loc="lower left")
    unit_circle(right, 1.3, "cos(i w)", "sin(i w)")
    marks = _circle_marks(right, min(num_steps - delta, 5))  # positions i with i + delta inside the encoding
    titles = (left.set_title("", fontsize=10), right.set_title("\n", fontsize=9))

    built = (num_steps, num_hiddens)

    def update(delta: int = 3, freq_index: int = 1, num_steps: int = num_steps, num_hiddens: int = num_hiddens, **_):
        """New values on the same artists (see ``attn_course.widgets``); True when they need a new figure."""
        _require_rotation_args(delta, freq_index, num_steps, num_hiddens)
        if (num_steps, num_hiddens) != built or min(num_steps - delta, 5) != len(marks):
            return True  # another encoding, or another number of arrows
        omega = float(frequencies(num_hiddens)[freq_index])
        pair = encoding[:, 2 * freq_index : 2 * freq_index + 2].numpy()  # (T, 2): (sin, cos) at every position
        angles = fine.double().numpy() * omega
        labels = (f"column {2 * freq_index}: sin(i w)", f"column {2 * freq_index + 1}: cos(i w)")
        for k, (wave, dot_line, text, curve) in enumerate(
            zip(waves, dots, legend.get_texts(), (np.sin(angles), np.cos(angles)), strict=True)
        ):
            wave.set_ydata(curve)
            wave.set_label(labels[k])
            text.set_text(labels[k])
            dot_line.set_ydata(pair[:, k])  # the encoding exists at whole positions only
        moved = pair[: len(marks)] @ rotation_matrix(delta, omega).numpy().T  # (n, 2): (sin, cos) at i + delta
        _set_circle_marks(marks, pair, moved, delta)
        for title, text in zip(titles, _rotation_titles(delta, omega, freq_index), strict=True):
            title.set_text(text)
        return False

    update(delta, freq_index)
    left.figure.slider_update = update
    return left.figure


def _circle_marks(right, shown: int) -> list[tuple]:
    """Per position i of the first ``shown``, in its own colour: an arrow to where the rotation takes it, a dot,
    its number and a ring (at the true encoding of i + delta), placed by ``_set_circle_marks``."""
    marks = []
    for i, colour in enumerate(plt.get_cmap("viridis")(torch.linspace(0, 0.9, shown).numpy())):
        arrow = right.annotate("", xy=(0.0, 0.0), xytext=(0.0, 0.0), arrowprops={"arrowstyle": "->", "color": colour})
        (dot,) = right.plot([0.0], [0.0], "o", color=colour, markersize=5)
        number = right.text(0.0, 0.0, f"{i}", fontsize=8, color=colour, ha="center", va="center")
        (ring,) = right.plot([0.0], [0.0], "o", markerfacecolor="none", color=colour, markersize=10)
        marks.append((arrow, dot, number, ring))
    return marks


def _set_circle_marks(marks: list[tuple], pair: np.ndarray, moved: np.ndarray, delta: int) -> None:
    """Place the marks: position i at ``pair[i]`` (sin, cos), its arrow at ``moved[i]``, its ring at ``pair[i + d]``."""
    for i, (arrow, dot, number, ring) in enumerate(marks):
        (sin_i, cos_i), (sin_end, cos_end), (sin_true, cos_true) = pair[i], moved[i], pair[i + delta]
        arrow.xy = (float(cos_end), float(sin_end))
        arrow.xyann = (float(cos_i), float(sin_i))
        dot.set_data([cos_i], [sin_i])
        number.set_position((1.17 * cos_i, 1.17 * sin_i))  # outside the unit circle, where no arrow passes
        ring.set_data([cos_true], [sin_true])  # the true (sin, cos) at i + delta
