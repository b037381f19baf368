"""Figures of notebook 05: the masking demo and the gallery of heatmap patterns.

The masks and the patterns are in ``masking``; this module draws them (the demo's random scores are its own).
"""

from __future__ import annotations

import math

import torch
from matplotlib.figure import Figure
from matplotlib.textpath import text_to_path
from matplotlib.transforms import ScaledTranslation

from .._validate import require_int, require_sequence
from ..masking import PATTERNS, causal_mask, masked_softmax, pattern_scores
from .base import as_numpy, set_matrix, thin_ticks, weight_map
from .heatmaps import show_heatmaps

__all__ = ["plot_pattern_gallery", "plot_masking_demo"]


def plot_pattern_gallery(n: int = 6, strength: float = 4.0, tokens=None, axes=None) -> Figure:
    """The four patterns of ``PATTERNS`` side by side, on one colour scale; ``axes``: four axes, or None."""
    if tokens is not None:
        require_sequence(tokens, "tokens", "token names")
    tokens = list(tokens) if tokens is not None else [f"t{i}" for i in range(n)]
    if len(tokens) != n:
        raise ValueError(f"tokens must hold n = {n} names, got {len(tokens)}")
    weights = torch.stack([torch.softmax(pattern_scores(kind, n, strength), dim=-1) for kind in PATTERNS])
    return show_heatmaps(
        weights,
        ax=axes,
        titles=list(PATTERNS),
        figsize=(12.0, 3.4),
        **weight_map(tokens),
    )


def plot_masking_demo(
    valid_len_1: int = 4, valid_len_2: int = 6, causal: bool = False, seed: int = 0, axes=None
) -> Figure:
    """Self-attention weights of two padded sequences of 6 positions: padding and, optionally, causal masks.

    The token labels are always slanted, and each axis keeps room for a ``<pad>`` label whether or not it has one, so
    that the panels stay in place as the lengths change: a slider panel updates the figure in place.

    Args:
        valid_len_1, valid_len_2: the real lengths of the two sequences (0 to 6); later positions are padding.
        causal: also hide the future (query i sees keys 0..i; positions count from 0).
        seed: seed of the random scores.
        axes: two axes, or None for a new figure.
    """
    weights, tokens, titles, suptitle = _masking_demo(valid_len_1, valid_len_2, causal, seed)
    fig = show_heatmaps(
        weights,
        ax=axes,
        titles=titles,
        figsize=(9.0, 4.4),
        **weight_map(tokens),
    )
    panels = list(axes) if axes is not None else fig.axes[:2]  # show_heatmaps adds the colour bar after the panels
    for ax, labels in zip(panels, tokens, strict=True):
        _label_tokens(ax, labels)
        ax.tick_params(bottom=False, left=False)  # no tick marks: of length 0, not even drawn
        _keep_room_for_pad(ax)
    heading = fig.suptitle(suptitle)  # as show_heatmaps would, but keeping the Text to update
    drawn = list(tokens)  # each panel's token labels

    def update(valid_len_1: int = 4, valid_len_2: int = 6, causal: bool = False, seed: int = 0, **_) -> None:
        """New values on the same artists (see ``attn_course.widgets``): weights, token labels and titles."""
        weights, tokens, titles, suptitle = _masking_demo(valid_len_1, valid_len_2, causal, seed)
        for k, (ax, matrix, title) in enumerate(zip(panels, as_numpy(weights).astype(float), titles, strict=True)):
            set_matrix(ax, matrix)
            if tokens[k] != drawn[k]:
                _label_tokens(ax, tokens[k])
                drawn[k] = tokens[k]
            ax.title.set_text(title)
        heading.set_text(suptitle)

    fig.slider_update = update
    return fig


PAD = "<pad>"  # the label of a padding position


def _keep_room_for_pad(ax) -> None:
    """Make a panel take the room of a ``<pad>`` token label, the widest, on both axes, whatever its labels.

    Its layout then does not depend on the lengths. An axis label sits where the auto placement would put it below
    (or left of) a ``<pad>`` tick label, and stays there (matplotlib otherwise measures every tick label on each draw
    to place it); an axis with no label gets a transparent ``<pad>`` tick label instead (a minor one, between cells).
    """
    for axis, slanted in ((ax.xaxis, True), (ax.yaxis, False)):
        tick = axis.get_major_ticks()[0]
        if axis.label.get_text():
            width, height, _ = text_to_path.get_text_width_height_descent(
                PAD, tick.label1.get_fontproperties(), ismath=False
            )
            extent = (width + height) / math.sqrt(2) if slanted else width  # points, across the axis
            inches = (tick.get_pad() + tick.get_tick_padding() + extent + axis.labelpad) / 72
            (x, y), shift = ((0.5, 0.0), (0.0, -inches)) if slanted else ((0.0, 0.5), (-inches, 0.0))
            axis.set_label_coords(x, y, transform=ax.transAxes + ScaledTranslation(*shift, ax.figure.dpi_scale_trans))
        else:
            axis.set_label_coords(0.0, 0.0)  # empty: wherever it is, it takes no room
            if slanted:
                ax.set_xticks([3.0], [PAD], minor=True, rotation=45, ha="right", color="none")
            else:
                ax.set_yticks([3.0], [PAD], minor=True, color="none")
        # Minor labels sit 3.4 points from the axes by default, major ones 3.5.
        axis.set_tick_params(which="minor", length=0, pad=tick.get_pad(), tick1On=False)


def _label_tokens(ax, labels: list[str]) -> None:
    """One sequence's tokens on both axes of its panel, the keys' slanted (with or without a ``<pad>``)."""
    thin_ticks(ax, "x", labels, len(labels), slanted=True)
    thin_ticks(ax, "y", labels, len(labels))


def _masking_demo(valid_len_1: int, valid_len_2: int, causal: bool, seed: int):
    """What ``plot_masking_demo`` shows: weights (2, 6, 6), each sequence's tokens, the titles and the suptitle."""
    length = 6
    for name, value in (("valid_len_1", valid_len_1), ("valid_len_2", valid_len_2)):
        require_int(value, name, 0, length)
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(2, length, length, generator=gen)  # (B, Q, K) self-attention: Q = K = 6 positions
    mask = causal_mask(length) if causal else None
    weights = masked_softmax(scores, torch.tensor([valid_len_1, valid_len_2]), mask)  # (B, Q, K)
    tokens = [[f"w{i}" if i < n else PAD for i in range(length)] for n in (valid_len_1, valid_len_2)]
    titles = [f"sequence 1: valid length {valid_len_1}", f"sequence 2: valid length {valid_len_2}"]
    suptitle = ("padding + causal mask" if causal else "padding mask") + " (rows: queries)"
    return weights, tokens, titles, suptitle
