"""Attention without the (Q, K) matrix: the online softmax and a tiled forward pass (notebook 10).

The softmax of a row needs its maximum and its sum, and both can be computed one block at a time. With a
running maximum ``m`` and a running sum ``l`` of ``exp(score - m)``, a new block of scores ``s`` updates them as

    m_new = max(m, max(s))
    l_new = l * exp(m - m_new) + sum(exp(s - m_new))

(the old sum was taken against the old maximum, so it is rescaled when the maximum rises). FlashAttention applies
the same rescaling to a running output ``o = sum(exp(s - m) v)``, so that the weights are never stored: memory
grows with the block, not with the number of keys.

Causal masks are bottom-right aligned, as ``causal_mask``: query ``i`` sits at position ``i + K - Q`` and sees the
keys up to it. With more queries than keys (Q > K), the first Q - K queries sit before every key and see none: their
output is zeros, as ``masked_softmax`` gives a row with nothing to attend to zero weights (and as
``F.scaled_dot_product_attention`` returns for such rows). A sliding window of size ``w`` keeps the last ``w`` keys.

The loop order is FlashAttention-2's (Dao, 2023): query blocks outside, key blocks inside, the output normalised
once at the end. FlashAttention's first version (Dao et al., 2022, Algorithm 1) put the key blocks outside.
"""

from __future__ import annotations

import math

import torch

from ._validate import (
    LOW_PRECISION,
    require_attention_inputs,
    require_block_grid,
    require_no_overflow,
    require_row_scores,
)

__all__ = ["online_softmax", "flash_attention", "block_counts"]


def online_softmax(scores: torch.Tensor, block_size: int) -> torch.Tensor:
    """``torch.softmax(scores, dim=-1)``, with the maximum and the sum of each row gathered block by block.

    Args:
        scores: (..., K) floating point, finite, not empty. float16 and bfloat16 are computed in float32.
        block_size: keys per block, an integer >= 1 (the last block may be shorter).

    Returns:
        (..., K) weights of the dtype of ``scores``; each row sums to 1. ``scores`` is not modified.
    """
    require_row_scores(scores, block_size)
    work = scores.float() if scores.dtype in LOW_PRECISION else scores  # (..., K)
    num_keys = work.shape[-1]
    running_max = torch.full(work.shape[:-1], -math.inf, dtype=work.dtype, device=work.device)  # (...,)
    running_sum = torch.zeros_like(running_max)  # (...,)
    for start in range(0, num_keys, block_size):  # pass 1: the maximum and the sum, one block at a time
        block = work[..., start : start + block_size]  # (..., b)
        new_max = torch.maximum(running_max, block.amax(dim=-1))  # (...,)
        rescale = torch.exp(running_max - new_max)  # (...,): exp(-inf) = 0 on the first block
        running_sum = running_sum * rescale + torch.exp(block - new_max.unsqueeze(-1)).sum(dim=-1)  # (...,)
        running_max = new_max
    weights = torch.exp(work - running_max.unsqueeze(-1)) / running_sum.unsqueeze(-1)  # pass 2: (..., K)
    return weights.to(scores.dtype)


def _key_range(q_start: int, q_stop: int, num_keys: int, offset: int, causal: bool, window: int | None):
    """Keys ``[first, stop)`` that queries ``q_start .. q_stop - 1`` may see (query i at position i + offset)."""
    if not causal:
        return 0, num_keys
    stop = min(num_keys, q_stop + offset)  # the last query sees keys up to q_stop - 1 + offset
    first = 0 if window is None else max(0, q_start + offset - window + 1)  # the first query's oldest key
    return first, stop


def _key_blocks(q_start, q_stop, num_keys, block_size, offset, causal, window) -> list[int]:
    """Starts of the key blocks a query block computes: blocks with no allowed key are skipped."""
    first, stop = _key_range(q_start, q_stop, num_keys, offset, causal, window)
    return list(range(first // block_size * block_size, stop, block_size))


def block_counts(
    num_queries: int, num_keys: int, block_size: int, causal: bool = False, window: int | None = None
) -> dict[str, int]:
    """How many (query block, key block) tiles ``flash_attention`` computes and how many it skips.

    Args: as ``flash_attention``'s sizes: Q, K, the block size, ``causal`` and ``window``.

    Returns:
        ``{"computed": ..., "skipped": ..., "total": ...}``, with total = ceil(Q / b) * ceil(K / b).
    """
    require_block_grid(num_queries, num_keys, block_size, causal, window)
    offset = num_keys - num_queries  # bottom-right alignment: query i sits at position i + K - Q
    computed = sum(
        len(_key_blocks(q, min(q + block_size, num_queries), num_keys, block_size, offset, causal, window))
        for q in range(0, num_queries, block_size)
    )
    total = math.ceil(num_queries / block_size) * math.ceil(num_keys / block_size)
    return {"computed": computed, "skipped": total - computed, "total": total}


def _tile_step(q_block, k_block, v_block, allowed, running_max, running_sum, acc):
    """One tile: scores of a query block against a key block, folded into the running max, sum and output.

    q_block (..., bq, D) already scaled by 1/sqrt(D); k_block (..., bk, D); v_block (..., bk, V); allowed: None
    or bool (bq, bk), True = may attend; running_max, running_sum (..., bq); acc (..., bq, V).
    """
    scores = q_block @ k_block.transpose(-2, -1)  # (..., bq, D) x (..., D, bk) -> (..., bq, bk)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, -math.inf)  # exp(-inf) = 0: masked keys add nothing
    new_max = torch.maximum(running_max, scores.amax(dim=-1))  # (..., bq)
    # A row with no allowed key yet has a maximum of -inf: subtract 0 instead, so that exp gives 0, never NaN.
    safe_max = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)  # (..., bq)
    probs = torch.exp(scores - safe_max.unsqueeze(-1))  # (..., bq, bk), unnormalised weights of this tile
    rescale = torch.exp(running_max - safe_max)  # (..., bq): how much the old maximum was too small
    running_sum = running_sum * rescale + probs.sum(dim=-1)  # (..., bq)
    acc = acc * rescale.unsqueeze(-1) + probs @ v_block  # (..., bq, bk) x (..., bk, V) -> (..., bq, V)
    return new_max, running_sum, acc


def flash_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    block_size: int = 64,
    causal: bool = False,
    window: int | None = None,
) -> torch.Tensor:
    """``softmax(Q K^T / sqrt(D)) V`` tile by tile, never storing more than one (block, block) tile of scores.

    An outer loop over blocks of queries, an inner loop over blocks of keys; the running maximum, sum and
    output of each query are rescaled whenever a new key block raises the maximum, and the output is divided by
    the sum once, at the end (FlashAttention-2's forward pass, Dao 2023).

    Args:
        queries: (..., Q, D); keys: (..., K, D); values: (..., K, V); one floating dtype, finite, not empty, the
            same leading sizes (...). float16 and bfloat16 are accumulated in float32.
        block_size: queries and keys per block, an integer >= 1.
        causal: query ``i`` sees keys ``0 .. i + K - Q`` only (bottom-right, as ``causal_mask``). With Q > K the
            first Q - K queries see no key and give zeros (as ``masked_softmax`` and
            ``F.scaled_dot_product_attention`` with that mask). Tiles with no allowed key are skipped
            (``block_counts`` counts them).
        window: with ``causal``, query ``i`` sees only its last ``window`` keys (sliding-window attention).

    Returns:
        (..., Q, V) of the dtype of ``queries``, as ``F.scaled_dot_product_attention`` (no weights). The inputs are
        not modified.
    """
    require_attention_inputs(queries, keys, values, block_size, causal, window)
    num_queries, num_keys = queries.shape[-2], keys.shape[-2]
    offset = num_keys - num_queries  # bottom-right alignment: query i sits at position i + K - Q
    work = torch.float32 if queries.dtype in LOW_PRECISION else queries.dtype
    q_all, k_all, v_all = (t.to(work) for t in (queries, keys, values))  # no copy unless the dtype changes
    scale = 1.0 / math.sqrt(queries.shape[-1])
    out = torch.empty(*values.shape[:-2], num_queries, values.shape[-1], dtype=work, device=values.device)
    positions = torch.arange(max(num_queries, num_keys), device=queries.device)
    for q_start in range(0, num_queries, block_size):  # outer loop: one block of queries
        q_stop = min(q_start + block_size, num_queries)
        q_block = q_all[..., q_start:q_stop, :] * scale  # (..., bq, D)
        running_max = torch.full(q_block.shape[:-1], -math.inf, dtype=work, device=q_block.device)  # (..., bq)
        running_sum = torch.zeros_like(running_max)  # (..., bq)
        acc = torch.zeros(*q_block.shape[:-1], values.shape[-1], dtype=work, device=q_block.device)  # (..., bq, V)
        q_pos = positions[q_start:q_stop].unsqueeze(-1) + offset  # (bq, 1): each query's position among the keys
        for k_start in _key_blocks(q_start, q_stop, num_keys, block_size, offset, causal, window):  # inner loop
            k_stop = min(k_start + block_size, num_keys)
            allowed = None
            # A tile wholly inside the allowed band needs no mask: its last key is no later than its first query,
            # and (with a window) its first key is within the window of its last query.
            inside = k_stop - 1 <= q_start + offset and (window is None or k_start > q_stop - 1 + offset - window)
            if causal and not inside:
                k_pos = positions[k_start:k_stop]  # (bk,)
                allowed = k_pos <= q_pos  # (bq, bk): the past and the present
                if window is not None:
                    allowed = allowed & (k_pos > q_pos - window)  # ... the last `window` keys only
            running_max, running_sum, acc = _tile_step(
                q_block,
                k_all[..., k_start:k_stop, :],
                v_all[..., k_start:k_stop, :],
                allowed,
                running_max,
                running_sum,
                acc,
            )
        sees_a_key = q_pos.squeeze(-1) >= 0 if causal else torch.ones_like(q_pos.squeeze(-1), dtype=torch.bool)
        # (bq,): a row that sees a key has a finite maximum, unless a score overflowed the dtype (it would give NaN)
        require_no_overflow(running_max, sees_a_key, work)
        # A row that sees no key (Q > K, causal) has acc = 0 and running_sum = 0: divide by 1 there, giving zeros.
        denominator = torch.where(running_sum > 0, running_sum, torch.ones_like(running_sum))  # (..., bq)
        out[..., q_start:q_stop, :] = acc / denominator.unsqueeze(-1)  # (..., bq, V): normalise once, at the end
    return out.to(queries.dtype)
