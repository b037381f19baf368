"""Reading attention heatmaps: typical patterns and a masking demo (notebook 05); the figures are in ``plots.gallery``.

Rows are queries, columns are keys. The patterns below are made from constructed scores, so that
each picture has a known cause.
"""

from __future__ import annotations

import torch

from ._validate import require_choice, require_int, require_number
from .masking import causal_mask, masked_softmax

__all__ = ["pattern_scores"]

PATTERNS = ("diagonal", "previous token", "uniform", "first token")


def pattern_scores(kind: str, n: int = 6, strength: float = 4.0) -> torch.Tensor:
    """Scores (n, n) whose softmax shows one typical pattern.

    * ``"diagonal"``: each token attends to itself.
    * ``"previous token"``: each token attends to the one before it (the first token to itself).
    * ``"uniform"``: every score equal, so every weight is 1/n.
    * ``"first token"``: every token attends to the first one (an "attention sink" in trained models).

    Args:
        kind: one of ``PATTERNS``.
        n: number of tokens.
        strength: the score given to the favoured key (others get 0); larger means sharper.
    """
    require_choice(kind, "kind", PATTERNS)
    require_int(n, "n", 2)
    strength = require_number(strength, "strength")
    scores = torch.zeros(n, n)
    rows = torch.arange(n)
    if kind == "diagonal":
        scores[rows, rows] = strength
    elif kind == "previous token":
        scores[rows, (rows - 1).clamp(min=0)] = strength
    elif kind == "first token":
        scores[:, 0] = strength
    return scores


def _masking_demo(valid_len_1: int, valid_len_2: int, causal: bool, seed: int):
    """What ``plot_masking_demo`` shows: weights (2, 6, 6), each sequence's tokens, the titles and the suptitle."""
    length = 6
    for name, value in (("valid_len_1", valid_len_1), ("valid_len_2", valid_len_2)):
        require_int(value, name, 0, length)
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(2, length, length, generator=gen)  # (B, Q, K) self-attention: Q = K = 6 positions
    mask = causal_mask(length) if causal else None
    weights = masked_softmax(scores, torch.tensor([valid_len_1, valid_len_2]), mask)  # (B, Q, K)
    tokens = [[f"w{i}" if i < n else "<pad>" for i in range(length)] for n in (valid_len_1, valid_len_2)]
    titles = [f"sequence 1: valid length {valid_len_1}", f"sequence 2: valid length {valid_len_2}"]
    suptitle = ("padding + causal mask" if causal else "padding mask") + " (rows: queries)"
    return weights, tokens, titles, suptitle
