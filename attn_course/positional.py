"""Sinusoidal positional encoding (notebook 06).

Self-attention treats its inputs as a set; adding ``P[i]`` to the token at position ``i`` tells
positions apart. Column pair ``(2j, 2j + 1)`` holds ``sin(i w_j)`` and ``cos(i w_j)`` with the
frequency ``w_j = 1 / base^(2j / num_hiddens)``: fast waves in the first columns, slow ones last.
"""

from __future__ import annotations

import math

import torch

from ._validate import require_float_dtype, require_int, require_number

__all__ = ["positional_encoding", "frequencies", "rotation_matrix", "plot_rotation"]


def frequencies(num_hiddens: int, base: float = 10000.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The angular frequencies ``w_j = base^(-2j / num_hiddens)`` of the column pairs.

    Returns:
        (ceil(num_hiddens / 2),) one frequency per column pair, from 1 down towards ``1 / base``.
    """
    require_int(num_hiddens, "num_hiddens", 1)
    require_number(base, "base", "> 1", lambda v: v > 1)
    j = torch.arange(0, num_hiddens, 2, dtype=dtype)  # 2j = 0, 2, 4, ...
    return base ** (-j / num_hiddens)


def positional_encoding(
    num_steps: int, num_hiddens: int, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The sinusoidal encoding ``P`` of positions ``0 .. num_steps - 1``.

    ``P[i, 2j] = sin(i w_j)`` and ``P[i, 2j + 1] = cos(i w_j)`` with ``w_j = base^(-2j / num_hiddens)``.

    Args:
        num_steps: number of positions T.
        num_hiddens: size of each encoding (the model size D); may be odd (the last column is then a sine).
        base: the wavelength scale (10000 in the Transformer paper).
        dtype: floating dtype of the result (computed in float64, then converted).

    Returns:
        (T, D) tensor with entries in [-1, 1].
    """
    require_int(num_steps, "num_steps", 1)
    require_float_dtype(dtype)
    omega = frequencies(num_hiddens, base)  # (ceil(D / 2),)
    angles = torch.arange(num_steps, dtype=torch.float64).unsqueeze(1) * omega  # (T, 1) * (D/2,) -> (T, D/2)
    encoding = torch.zeros(num_steps, num_hiddens, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angles)  # even columns
    encoding[:, 1::2] = torch.cos(angles[:, : num_hiddens // 2])  # odd columns
    return encoding.to(dtype)


def rotation_matrix(delta: float, omega: float, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The 2 x 2 matrix that moves a column pair ``(sin(i w), cos(i w))`` to position ``i + delta``.

    ``[[cos(d w), sin(d w)], [-sin(d w), cos(d w)]] @ [sin(i w), cos(i w)] = [sin((i + d) w), cos((i + d) w)]``
    for every ``i``: it depends on the offset ``delta`` and the frequency only, not on the position.
    """
    angle = require_number(delta, "delta") * require_number(omega, "omega")  # 0-d tensors too
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, s], [-s, c]], dtype=dtype)


def _check_rotation_args(delta, freq_index, num_steps: int, num_hiddens: int) -> None:
    require_int(num_hiddens, "num_hiddens", 2)
    require_int(num_steps, "num_steps", 2)
    pairs = num_hiddens // 2
    require_int(freq_index, "freq_index", 0, pairs - 1)
    require_int(delta, "delta", 0, num_steps - 1)


def _draw_rotation(left, right, encoding: torch.Tensor, delta: int, freq_index: int) -> None:
    """What changes with ``delta`` and ``freq_index``: the waves' data and labels, the arrows, dots and rings,
    the titles. ``left`` already holds two wave lines and a legend."""
    import matplotlib.pyplot as plt  # plotting only when asked for

    from .plotting import TITLE_Y

    num_steps, num_hiddens = encoding.shape
    omega = float(frequencies(num_hiddens)[freq_index])
    waves = (encoding[:, 2 * freq_index], encoding[:, 2 * freq_index + 1])  # sin and cos columns, (T,) each
    labels = (f"column {2 * freq_index}: sin(i w)", f"column {2 * freq_index + 1}: cos(i w)")
    for line, legend_text, wave, label in zip(left.lines, left.get_legend().get_texts(), waves, labels, strict=True):
        line.set_ydata(wave)
        line.set_label(label)
        legend_text.set_text(label)
    left.relim()  # slow waves span less than [-1, 1]
    left.autoscale_view()
    left.set_title(
        f"Column pair j = {freq_index}: frequency w = {omega:.4g}, wavelength {2 * math.pi / omega:.3g}",
        fontsize=10,
        y=TITLE_Y,
    )
    for artist in [*right.lines[1:], *right.texts]:  # all but the unit circle
        artist.remove()
    rotation = rotation_matrix(delta, omega)
    shown = range(min(num_steps - delta, 5))
    colours = plt.get_cmap("viridis")(torch.linspace(0, 0.9, len(shown)).numpy())
    for i, colour in zip(shown, colours, strict=True):
        start = encoding[i, 2 * freq_index : 2 * freq_index + 2]  # (sin, cos) at i
        end = rotation @ start  # predicted (sin, cos) at i + delta
        right.annotate(
            "",
            xy=(float(end[1]), float(end[0])),
            xytext=(float(start[1]), float(start[0])),
            arrowprops={"arrowstyle": "->", "color": colour},
        )
        right.plot([float(start[1])], [float(start[0])], "o", color=colour, markersize=5)
        right.annotate(
            f"{i}",
            (float(start[1]), float(start[0])),
            textcoords="offset points",
            xytext=(-10, -10),
            fontsize=8,
            color=colour,
        )
        target = encoding[i + delta, 2 * freq_index : 2 * freq_index + 2]  # the true (sin, cos) at i + delta
        right.plot([float(target[1])], [float(target[0])], "o", markerfacecolor="none", color=colour, markersize=10)
    right.set_xlim(-1.3, 1.3)
    right.set_ylim(-1.3, 1.3)
    right.set_title(
        f"i -> i + {delta}: one rotation by {delta} w = {delta * omega:.3g} rad\n"
        "(dots: positions i; rings: the true encodings at i + delta)",
        fontsize=9,
        y=TITLE_Y,
    )


def plot_rotation(
    delta: int = 3, freq_index: int = 1, num_steps: int = 40, num_hiddens: int = 16, axes=None, figsize=(11.0, 3.8)
):
    """The rotation at work for one column pair: left, the pair as two waves; right, the pair as points on the unit
    circle, each position joined to the position ``delta`` later by the same rotation.

    Args:
        delta: the offset.
        freq_index: j, the column pair (2j, 2j + 1) shown.
        num_steps, num_hiddens: size of the encoding.
        axes: two axes, or None for a new figure.
    """
    import matplotlib.pyplot as plt  # plotting only when asked for

    from .plotting import _updatable

    _check_rotation_args(delta, freq_index, num_steps, num_hiddens)
    encoding = positional_encoding(num_steps, num_hiddens, dtype=torch.float64)
    new_figure = axes is None
    if new_figure:
        _, axes = plt.subplots(1, 2, figsize=figsize, layout="constrained", width_ratios=(1.6, 1))
    left, right = axes
    positions = torch.arange(num_steps)
    left.plot(positions, encoding[:, 0], ".-", label="sin")  # data and labels: _draw_rotation
    left.plot(positions, encoding[:, 1], ".-", label="cos")
    left.set_xlabel("position i")
    left.set_ylabel("encoding value")
    left.legend(fontsize=8, loc="lower left")
    circle = torch.linspace(0, 2 * math.pi, 200)
    right.plot(torch.cos(circle), torch.sin(circle), color="0.85", linewidth=1)
    right.set_aspect("equal")
    right.set_xlabel("cos(i w)")
    right.set_ylabel("sin(i w)")
    _draw_rotation(left, right, encoding, delta, freq_index)
    fig = left.figure
    if not new_figure:
        return fig

    def update(delta=3, freq_index=1, num_steps=num_steps, num_hiddens=num_hiddens, axes=None, figsize=figsize):
        same = (num_steps, num_hiddens, tuple(figsize)) == (*encoding.shape, tuple(fig.get_size_inches()))
        if axes is not None or not same:
            return False
        _check_rotation_args(delta, freq_index, num_steps, num_hiddens)
        _draw_rotation(left, right, encoding, delta, freq_index)
        return True

    return _updatable(fig, plot_rotation, update)
