"""Masks and the masked softmax: attend only to the keys that are really there.

Notebooks 03 (scoring functions) and 05 (masking and heatmaps).

Polarity, everywhere in the course: a boolean mask is ``True`` where a query *may attend*.
"""

from __future__ import annotations

import math

import torch

from ._validate import require_float, require_rank, require_tensor, shape_str

__all__ = ["sequence_mask", "causal_mask", "masked_softmax"]


def _check_valid_lens(valid_lens, num_keys: int, leading: tuple[int, ...], name: str = "valid_lens") -> int:
    """valid_lens: integer tensor of shape ``leading[:1]`` (B,) or ``leading`` (B, Q), values in [0, K].

    Returns the shortest length (``num_keys`` when there is none), so that callers know without another pass
    whether some row has nothing to attend to.
    """
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
    if not valid_lens.numel():
        return num_keys
    shortest, longest = (int(x) for x in torch.aminmax(valid_lens))  # one pass for both ends
    if shortest < 0 or longest > num_keys:
        bad = valid_lens[(valid_lens < 0) | (valid_lens > num_keys)][0]
        raise ValueError(f"{name} must lie in [0, {num_keys}] (the number of keys), got {int(bad)}")
    return shortest


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
    return _masked_softmax(scores, valid_lens, mask)


def _masked_softmax(scores, valid_lens=None, mask=None, own_scores: bool = False) -> torch.Tensor:
    """``masked_softmax`` after the checks of ``scores``. ``own_scores``: the caller made ``scores`` and will not
    use them again, so they may be overwritten (a (B, Q, K) tensor fewer to allocate: at 1024 keys, allocating
    one costs about as much as the softmax itself)."""
    if valid_lens is None and mask is None:
        if own_scores and not _needs_grad(scores):
            return torch.softmax(scores, dim=-1, out=scores)  # in place: row by row, each read before it is written
        return torch.softmax(scores, dim=-1)
    batch, num_q, num_k = scores.shape
    blocked = None  # True where a query may NOT attend, broadcastable to (B, Q, K)
    empty = None  # the rows with nothing allowed, broadcastable to (B, Q, 1); None when there is none
    if valid_lens is not None:
        shortest = _check_valid_lens(valid_lens, num_k, (batch, num_q))
        lens = valid_lens.unsqueeze(1) if valid_lens.ndim == 1 else valid_lens  # (B,) -> (B, 1): same for all queries
        blocked = torch.arange(num_k, device=scores.device) >= lens.unsqueeze(-1)  # (B, Q or 1, K)
        if shortest == 0:
            empty = (lens == 0).unsqueeze(-1)  # (B, Q or 1, 1)
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
        blocked = ~mask if blocked is None else blocked | ~mask  # (B, Q, K) after broadcasting
        empty = blocked.all(-1, keepdim=True)  # (..., 1)
        empty = empty if empty.any() else None
    if empty is not None:
        # A row with nothing allowed would be all -inf, whose softmax is NaN (and so are its gradients): let it
        # see every key, then set it to zeros below. Its scores then get a gradient of exactly 0.
        blocked = blocked & ~empty
    # -inf, as in torch's own masking: exp(-inf) is exactly 0, so masked weights need no second pass.
    if own_scores and not _needs_grad(scores):
        # In place in the caller's temporary; where(out=) does the same as masked_fill_ in half the time.
        filled = torch.where(blocked, scores.new_full((), -math.inf), scores, out=scores)  # (B, Q, K)
    elif own_scores:
        filled = scores.masked_fill_(blocked, -math.inf)  # (B, Q, K), in place in the caller's temporary
    else:
        filled = scores.masked_fill(blocked, -math.inf)  # (B, Q, K), a copy: the caller's scores stay as they are
    if _needs_grad(filled):  # autograd keeps the softmax's output: no writing into it
        weights = torch.softmax(filled, dim=-1)  # (B, Q, K)
        return weights if empty is None else weights.masked_fill(empty, 0.0)  # empty rows: zeros
    weights = torch.softmax(filled, dim=-1, out=filled)  # (B, Q, K), in place in our own copy
    return weights if empty is None else weights.masked_fill_(empty, 0.0)  # empty rows: zeros


def _needs_grad(t: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and t.requires_grad
