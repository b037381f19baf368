"""Masks and the masked softmax: attend only to the keys that are really there.

Notebooks 03 (scoring functions) and 05 (masking and heatmaps).

Polarity, everywhere in the course: a boolean mask is ``True`` where a query *may attend*.
"""

from __future__ import annotations

import torch

from ._validate import require_float, require_rank, require_tensor, shape_str

__all__ = ["sequence_mask", "causal_mask", "masked_softmax"]


def _check_valid_lens(valid_lens, num_keys: int, leading: tuple[int, ...], name: str = "valid_lens") -> None:
    """valid_lens: integer tensor of shape ``leading[:1]`` (B,) or ``leading`` (B, Q), values in [0, K]."""
    require_tensor(valid_lens, name)
    if valid_lens.is_floating_point() or valid_lens.is_complex() or valid_lens.dtype == torch.bool:
        raise TypeError(
            f"{name} must be an integer tensor (e.g. torch.tensor([2, 3])), got {valid_lens.dtype}; "
            f"convert it with {name}.long()"
        )
    allowed = [leading[:1], leading] if len(leading) > 1 else [leading]
    if tuple(valid_lens.shape) not in allowed:
        wanted = " or ".join(f"{shape_str(s)}" for s in allowed)
        raise ValueError(
            f"{name} must have shape {wanted} (one length per sequence, or per query), "
            f"got shape {shape_str(valid_lens.shape)}"
        )
    if valid_lens.numel() and (valid_lens.min() < 0 or valid_lens.max() > num_keys):
        bad = valid_lens[(valid_lens < 0) | (valid_lens > num_keys)][0]
        raise ValueError(f"{name} must lie in [0, {num_keys}] (the number of keys), got {int(bad)}")


def sequence_mask(valid_lens: torch.Tensor, num_keys: int) -> torch.Tensor:
    """Boolean mask from valid lengths: ``mask[..., k] = k < valid_lens[...]``.

    Args:
        valid_lens: integer tensor of any shape, e.g. (B,) or (B, Q), entries in [0, num_keys].
        num_keys: K, the padded length.

    Returns:
        bool tensor of shape ``valid_lens.shape + (K,)``; ``True`` = may attend.
    """
    if isinstance(num_keys, bool) or not isinstance(num_keys, int) or num_keys < 0:
        raise ValueError(f"num_keys must be an integer >= 0, got {num_keys!r}")
    _check_valid_lens(valid_lens, num_keys, tuple(valid_lens.shape) if isinstance(valid_lens, torch.Tensor) else ())
    positions = torch.arange(num_keys, device=valid_lens.device)  # (K,)
    return positions < valid_lens.unsqueeze(-1)  # (..., 1) vs (K,) -> (..., K)


def causal_mask(num_queries: int, num_keys: int | None = None) -> torch.Tensor:
    """Decoder mask: query ``i`` may attend to keys ``0..i`` only, never to later positions.

    Args:
        num_queries: Q.
        num_keys: K (default Q). With K > Q the queries are the last Q positions of the K keys
            (query ``i`` sees keys ``0..i + K - Q``), as when a decoder extends a known prefix.

    Returns:
        bool (Q, K), ``True`` on and below the diagonal: may attend.
    """
    if isinstance(num_queries, bool) or not isinstance(num_queries, int) or num_queries < 1:
        raise ValueError(f"num_queries must be an integer >= 1, got {num_queries!r}")
    num_keys = num_queries if num_keys is None else num_keys
    if isinstance(num_keys, bool) or not isinstance(num_keys, int) or num_keys < num_queries:
        raise ValueError(f"num_keys must be an integer >= num_queries = {num_queries}, got {num_keys!r}")
    return torch.ones(num_queries, num_keys, dtype=torch.bool).tril(diagonal=num_keys - num_queries)


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
    require_float(scores, "scores")
    require_rank(scores, "scores", (3,), "(B, Q, K)")
    if valid_lens is None and mask is None:
        return torch.softmax(scores, dim=-1)
    batch, num_q, num_k = scores.shape
    allowed = torch.ones((), dtype=torch.bool, device=scores.device)
    if valid_lens is not None:
        _check_valid_lens(valid_lens, num_k, (batch, num_q))
        lens = valid_lens.unsqueeze(1) if valid_lens.ndim == 1 else valid_lens  # (B,) -> (B, 1): same for all queries
        allowed = torch.arange(num_k, device=scores.device) < lens.unsqueeze(-1)  # (B, Q or 1, K)
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
            raise TypeError(f"mask must be a bool tensor (True = may attend), got {got}")
        try:
            fits = torch.broadcast_shapes(mask.shape, scores.shape) == scores.shape
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(
                f"mask must broadcast to the scores' shape (B, Q, K) = {shape_str(scores.shape)}, "
                f"got {shape_str(mask.shape)}"
            )
        allowed = allowed & mask  # (B, Q, K) after broadcasting
    # The dtype's most negative number rather than -inf (which turns an empty row into NaN)
    # or d2l's -1e6 (which wins when every real score is below -1e6). masked_fill returns a copy.
    filled = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)  # (B, Q, K)
    return torch.softmax(filled, dim=-1).masked_fill(~allowed, 0.0)  # empty rows: uniform -> zeros
