"""Masks and the masked softmax: attend only to the keys that are really there; patterns to read in heatmaps.

Notebooks 03 (scoring functions) and 05 (masking and heatmaps; its figures: ``plots.masking``).

Polarity, everywhere in the course: a boolean mask is ``True`` where a query *may attend*.

In a heatmap of attention weights rows are queries and columns are keys. ``pattern_scores`` makes the typical
patterns from constructed scores, so that each picture has a known cause.
"""

from __future__ import annotations

import math

import torch

from ._validate import require_masking, require_scores
from ._validate.args import require_causal_sizes, require_lens_and_keys, require_pattern_args

__all__ = ["sequence_mask", "causal_mask", "masked_softmax", "pattern_scores"]


def sequence_mask(valid_lens: torch.Tensor, num_keys: int) -> torch.Tensor:
    """Boolean mask from valid lengths: ``mask[..., k] = k < valid_lens[...]``.

    Args:
        valid_lens: integer tensor of any shape, e.g. (B,) or (B, Q), entries in [0, num_keys].
        num_keys: K, the padded length.

    Returns:
        bool tensor of shape ``valid_lens.shape + (K,)``; ``True`` = may attend.
    """
    require_lens_and_keys(valid_lens, num_keys)
    positions = torch.arange(num_keys, device=valid_lens.device)  # (K,)
    return positions < valid_lens.unsqueeze(-1)  # (..., 1) vs (K,) -> (..., K)


def causal_mask(
    num_queries: int, num_keys: int | None = None, device: torch.device | str | None = None
) -> torch.Tensor:
    """Decoder mask: query ``i`` may attend to keys ``0..i`` only, never to later positions.

    Args:
        num_queries: Q.
        num_keys: K (default Q). With K > Q the queries are the last Q positions of the K keys
            (query ``i`` sees keys ``0..i + K - Q``), as when a decoder extends a known prefix.
        device: where the mask lives (default: PyTorch's default device); pass the scores' device.

    Returns:
        bool (Q, K), ``True`` on and below the diagonal: may attend.
    """
    num_keys = require_causal_sizes(num_queries, num_keys)
    return torch.ones(num_queries, num_keys, dtype=torch.bool, device=device).tril(diagonal=num_keys - num_queries)


def masked_softmax(
    scores: torch.Tensor, valid_lens: torch.Tensor | None = None, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Softmax over the last axis that gives masked keys a weight of exactly 0.

    Args:
        scores: (B, Q, K) attention scores, floating point.
        valid_lens: None (every key valid), (B,) one length per sequence, or (B, Q) one per
            query; integers in [0, K]. Keys at positions >= the valid length are masked.
        mask: optional bool tensor broadcastable to (B, Q, K), ``True`` = may attend, e.g. a
            ``causal_mask(Q)`` of shape (Q, K). Combined with ``valid_lens``: a key must pass both.

    Returns:
        (B, Q, K) weights: rows sum to 1 over the allowed keys, masked weights are exactly 0,
        and a row with nothing allowed is all zeros (never NaN). ``scores`` is not modified.
    """
    require_scores(scores)
    return softmax_over_allowed(scores, valid_lens, mask)


def softmax_over_allowed(scores: torch.Tensor, valid_lens=None, mask=None) -> torch.Tensor:
    """``masked_softmax`` of scores already checked (``attention_pooling`` shares it); checks ``valid_lens`` and
    ``mask``. In the package, not in ``__all__``: a learner calls ``masked_softmax``."""
    require_masking(scores.shape, valid_lens, mask)
    if valid_lens is None and mask is None:
        return torch.softmax(scores, dim=-1)  # (B, Q, K)
    num_k = scores.shape[-1]
    blocked = None  # True where a query may NOT attend, broadcastable to (B, Q, K)
    if valid_lens is not None:
        lens = valid_lens.unsqueeze(1) if valid_lens.ndim == 1 else valid_lens  # (B,) -> (B, 1): same for all queries
        blocked = torch.arange(num_k, device=scores.device) >= lens.unsqueeze(-1)  # (B, Q or 1, K)
    if mask is not None:
        blocked = ~mask if blocked is None else blocked | ~mask  # (B, Q, K) after broadcasting
    # A row with nothing allowed would be all -inf, whose softmax is NaN (and so are its gradients): let it
    # see every key, then set it to zeros. Its scores then get a gradient of exactly 0.
    empty = blocked.all(-1, keepdim=True)  # (B, Q or 1, 1)
    blocked = blocked & ~empty
    # -inf, as in torch's own masking: exp(-inf) is exactly 0, so masked weights are exactly 0.
    weights = torch.softmax(scores.masked_fill(blocked, -math.inf), dim=-1)  # (B, Q, K); scores stay as they are
    return weights.masked_fill(empty, 0.0)  # rows with nothing allowed: zeros


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
    strength = require_pattern_args(kind, n, strength, PATTERNS)
    scores = torch.zeros(n, n)
    rows = torch.arange(n)
    if kind == "diagonal":
        scores[rows, rows] = strength
    elif kind == "previous token":
        scores[rows, (rows - 1).clamp(min=0)] = strength
    elif kind == "first token":
        scores[:, 0] = strength
    return scores
