"""Masks and the masked softmax: attend only to the keys that are really there.

Notebooks 03 (scoring functions) and 05 (masking and heatmaps).

Polarity, everywhere in the course: a boolean mask is ``True`` where a query *may attend*.
"""

from __future__ import annotations

import torch

from ._validate import require_float, require_rank, require_tensor, shape_str

__all__ = ["sequence_mask", "masked_softmax"]


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


def masked_softmax(scores: torch.Tensor, valid_lens: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis that gives padded keys a weight of exactly 0.

    Args:
        scores: (B, Q, K) attention scores, floating point.
        valid_lens: None (every key valid), (B,) one length per sequence, or (B, Q) one per
            query; integers in [0, K]. Keys at positions >= the valid length are masked.

    Returns:
        (B, Q, K) weights: rows sum to 1 over the valid keys, masked weights are exactly 0,
        and a row with valid length 0 is all zeros (never NaN). ``scores`` is not modified.
    """
    require_float(scores, "scores")
    require_rank(scores, "scores", (3,), "(B, Q, K)")
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    batch, num_q, num_k = scores.shape
    _check_valid_lens(valid_lens, num_k, (batch, num_q))
    if valid_lens.ndim == 1:
        valid_lens = valid_lens.unsqueeze(1)  # (B,) -> (B, 1): the same length for every query
    mask = torch.arange(num_k, device=scores.device) < valid_lens.unsqueeze(-1)  # (B, Q or 1, K)
    # The dtype's most negative number rather than -inf (which turns an empty row into NaN)
    # or d2l's -1e6 (which a large enough score still beats). masked_fill returns a copy.
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # (B, Q, K)
    return torch.softmax(filled, dim=-1).masked_fill(~mask, 0.0)  # empty rows: uniform -> zeros
