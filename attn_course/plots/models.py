"""Figures of the model modules: multi-head weights and the rotations of the positional encoding (notebook 06),
the attention of every layer and head of the Transformer (notebook 08).

The model modules (``multihead``, ``positional``, ``transformer``) hold the formulas only; their
pictures live here. Every function returns the ``Figure`` and never calls ``plt.show()``.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .._validate import require_choice, require_int, require_sequence
from ..multihead import MultiHeadAttention
from ..positional import frequencies, positional_encoding, rotation_matrix
from ..tasks import EOS, Batch, labels, to_text
from .heatmaps import show_heatmaps

__all__ = ["plot_head_weights", "plot_rotation", "plot_transformer_attention"]


def plot_head_weights(num_heads: int = 4, num_hiddens: int = 16, seed: int = 0, tokens=None, axes=None):
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
        xticklabels=tokens,
        yticklabels=tokens,
        vmin=0.0,
        vmax=1.0,
        annotate=False,
        figsize=(max(cols * 2.8 + 1.2, 5.0), rows * 2.8 + 1.0),  # at least as wide as the title
        suptitle=f"{num_heads} head{'s' if num_heads > 1 else ''}, one sequence (weights at initialisation)",
    )


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
):
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
    left.set_xlabel("position i")
    left.set_ylabel("encoding value")
    legend = left.legend(fontsize=8, loc="lower left")
    circle = torch.linspace(0, 2 * math.pi, 200)
    right.plot(torch.cos(circle), torch.sin(circle), color="0.85", linewidth=1)
    shown = min(num_steps - delta, 5)  # positions i with i + delta inside the encoding (at most 5)
    colours = plt.get_cmap("viridis")(torch.linspace(0, 0.9, shown).numpy())
    marks = []  # per position i: (arrow, dot, number, ring)
    for i, colour in enumerate(colours):
        arrow = right.annotate("", xy=(0.0, 0.0), xytext=(0.0, 0.0), arrowprops={"arrowstyle": "->", "color": colour})
        (dot,) = right.plot([0.0], [0.0], "o", color=colour, markersize=5)
        number = right.text(0.0, 0.0, f"{i}", fontsize=8, color=colour, ha="center", va="center")
        (ring,) = right.plot([0.0], [0.0], "o", markerfacecolor="none", color=colour, markersize=10)
        marks.append((arrow, dot, number, ring))
    right.set_xlim(-1.3, 1.3)
    right.set_ylim(-1.3, 1.3)
    right.set_xticks([-1.0, 0.0, 1.0])
    right.set_yticks([-1.0, 0.0, 1.0])
    right.set_aspect("equal")
    right.set_xlabel("cos(i w)")
    right.set_ylabel("sin(i w)")
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
        for i, (arrow, dot, number, ring) in enumerate(marks):
            (sin_i, cos_i), (sin_end, cos_end), (sin_true, cos_true) = pair[i], moved[i], pair[i + delta]
            arrow.xy = (float(cos_end), float(sin_end))
            arrow.xyann = (float(cos_i), float(sin_i))
            dot.set_data([cos_i], [sin_i])
            number.set_position((1.17 * cos_i, 1.17 * sin_i))  # outside the unit circle, where no arrow passes
            ring.set_data([cos_true], [sin_true])  # the true (sin, cos) at i + delta
        for title, text in zip(titles, _rotation_titles(delta, omega, freq_index), strict=True):
            title.set_text(text)
        return False

    update(delta, freq_index)
    fig = left.figure
    fig.slider_update = update
    return fig


ATTENTION_KINDS = {
    "encoder": ("encoder self-attention", "source", "source"),
    "decoder": ("decoder self-attention (causal)", "decoder input", "decoder input"),
    "cross": ("cross-attention: output attends to source", "source", "decoder input"),
}


def plot_transformer_attention(
    weights: dict, batch: Batch, tokens: torch.Tensor, index: int = 0, kind: str = "cross", figsize=None
) -> Figure:
    """Heatmaps of one example's attention in every layer (rows) and head (columns).

    Args:
        weights: ``TransformerSeq2Seq.greedy``'s weights: ``kind`` -> (B, L, H, queries, keys).
        batch: the decoded examples. tokens: (B, T) the decoded tokens.
        index: which example. kind: ``"encoder"``, ``"decoder"`` or ``"cross"``.
    """
    require_choice(kind, "kind", ATTENTION_KINDS)
    if not isinstance(weights, dict):
        got = type(weights).__name__
        raise TypeError(f"weights must be the dict of attention weights from TransformerSeq2Seq.greedy, got {got}")
    if kind not in weights:
        raise ValueError(
            f"weights must be the dict of attention weights from TransformerSeq2Seq.greedy, got {weights!r}"
        )
    require_int(index, "index", 0, len(batch) - 1)
    src_len = int(batch.src_len[index])
    out = tokens[index].tolist()
    out_len = out.index(EOS) + 1 if EOS in out else len(out)
    src_labels = labels(batch.src[index], src_len)
    dec_labels = ["<bos>"] + labels(tokens[index], out_len - 1)  # what the decoder read at each step
    title, xlabel, ylabel = ATTENTION_KINDS[kind]
    w = weights[kind][index]  # (L, H, queries, keys)
    num_layers, num_heads = w.shape[:2]
    if kind == "encoder":
        w, xl, yl = w[:, :, :src_len, :src_len], src_labels, src_labels
    elif kind == "decoder":
        w, xl, yl = w[:, :, :out_len, :out_len], dec_labels, dec_labels
    else:
        w, xl, yl = w[:, :, :out_len, :src_len], src_labels, dec_labels
    titles = [f"layer {layer}, head {head}" for layer in range(num_layers) for head in range(num_heads)]
    if figsize is None:  # about 0.2 inch per cell
        figsize = (num_heads * (0.2 * w.shape[-1] + 0.9) + 1.3, num_layers * (0.2 * w.shape[-2] + 1.0) + 0.6)
    return show_heatmaps(
        w,
        xlabel=xlabel,
        ylabel=ylabel,
        titles=titles,
        xticklabels=xl,
        yticklabels=yl,
        vmin=0.0,
        vmax=1.0,
        annotate=False,
        suptitle=f"{title}: {to_text(batch.src[index])} -> {to_text(tokens[index])}",
        figsize=figsize,
    )
