"""Sparse attention: each query reads a few of the keys, chosen per query, instead of all of them (notebook 13).

Dense attention reads every key for every query. A sparse pattern decides, for each query, which keys it reads; the
softmax then runs over those keys only (weights of exactly 0 elsewhere), ``o_i = sum_{j in S_i} softmax_j(s_ij) v_j``
with the scores ``s_ij = q_i . k_j / sqrt(D)``. The functions differ in how they choose ``S_i``:

* ``topk_attention``: the ``top_k`` highest scores (an oracle: it computes every score to choose, so it saves nothing,
  but it shows how much a few keys carry, measured by ``attention_mass_kept``).
* ``block_sparse_attention``: MoBA (Lu et al., 2025, arXiv 2502.13189): blocks of keys chosen by ``q . mean(block)``.
* ``lightning_indexer``: the cheap scorer with which DeepSeek-V3.2-Exp's sparse attention chooses its keys.
* ``native_sparse_attention``: NSA (Yuan et al., 2025, arXiv 2502.11089), simplified: compressed blocks, selected
  blocks and a sliding window, mixed by gates.

Causal attention follows ``causal_mask``'s bottom-right alignment: query ``i`` stands at position ``p_i = i + K - Q``
and sees keys ``0..p_i``. With Q > K the first Q - K queries see no key: their output rows are zeros, never NaN, as
are the rows of every query when there are no keys (K = 0). Ties between equal scores go to the lower key (or block)
index: the choice is a stable sort, not ``torch.topk``, which promises no order among ties.

Shapes: queries (B, Q, D), keys (B, K, D), values (B, K, V). float16 and bfloat16 are computed in float32 and returned
in their own dtype. Inputs are never modified.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._validate import LOW_PRECISION
from ._validate.rotary_linear import require_finite_output
from ._validate.sparse import (
    require_block_sparse_inputs,
    require_indexer_inputs,
    require_mass_inputs,
    require_nsa_inputs,
    require_topk_inputs,
)
from .masking import softmax_over_allowed

__all__ = [
    "attention_mass_kept",
    "topk_attention",
    "block_sparse_attention",
    "native_sparse_attention",
    "lightning_indexer",
]

_OVERFLOW = "the scores q . k / sqrt(D)"  # what require_finite_output names when finite input overflowed


def _work(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in LOW_PRECISION else x


def _positions(num_q: int, num_k: int, device) -> torch.Tensor:
    """(Q,): ``p_i = i + K - Q``, the position of each query among the keys (bottom-right, as ``causal_mask``)."""
    return torch.arange(num_q, device=device) + num_k - num_q


def _allowed(num_q: int, num_k: int, causal: bool, device) -> torch.Tensor:
    """(Q, K) bool, True = may attend: every key, or with ``causal`` the keys ``j <= p_i`` (none for p_i < 0)."""
    if not causal:
        return torch.ones(num_q, num_k, dtype=torch.bool, device=device)
    return torch.arange(num_k, device=device) <= _positions(num_q, num_k, device)[:, None]  # (K,) vs (Q, 1) -> (Q, K)


def _scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, Q, D) x (B, D, K) -> (B, Q, K)


def _attend(scores: torch.Tensor, read: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Softmax over the keys ``read`` (True) of each row, exactly 0 elsewhere, zeros for a row that reads none."""
    return softmax_over_allowed(scores, mask=read) @ v  # (B, Q, K) x (B, K, V) -> (B, Q, V)


def _top(scores: torch.Tensor, allowed: torch.Tensor, count: int) -> torch.Tensor:
    """The ``count`` highest ``scores`` (..., N) among the ``allowed`` entries of each row, ties to the lower index."""
    ranked = scores.masked_fill(~allowed, -math.inf)  # (..., N): never chosen before an allowed entry
    order = torch.sort(ranked, dim=-1, descending=True, stable=True).indices  # (..., N): best first, ties by index
    chosen = torch.zeros(ranked.shape, dtype=torch.bool, device=scores.device)  # (..., N)
    return chosen.scatter(-1, order[..., :count], True) & allowed  # (..., N): fewer than count when fewer allowed


def _block_means(x: torch.Tensor, block_size: int) -> torch.Tensor:
    """(B, N, F) -> (B, ceil(N / block_size), F): the mean of each block of rows, the last one possibly short."""
    batch, num, size = x.shape
    blocks = -(-num // block_size)  # n = ceil(N / block_size)
    padded = F.pad(x, (0, 0, 0, blocks * block_size - num))  # (B, n * block_size, F), zero rows appended
    sums = padded.reshape(batch, blocks, block_size, size).sum(2)  # (B, n, block_size, F) -> (B, n, F)
    starts = torch.arange(blocks, device=x.device) * block_size  # (n,)
    counts = (num - starts).clamp(max=block_size)  # (n,): block_size, and what is left for the last block
    return sums / counts[:, None].to(x.dtype)  # (B, n, F) / (n, 1)


def _read_blocks(block_scores, num_k: int, block_size: int, top_blocks: int, causal: bool) -> torch.Tensor:
    """Keys read (B, Q, K) when each query takes its ``top_blocks`` best blocks by ``block_scores`` (B, Q, n).

    Causal: blocks that start after ``p_i`` are never taken; the block holding ``p_i`` always is, in one of the
    ``top_blocks`` slots; the causal mask then applies inside it.
    """
    num_q, num_blocks, device = block_scores.shape[1], block_scores.shape[2], block_scores.device
    starts = torch.arange(num_blocks, device=device) * block_size  # (n,)
    own = torch.zeros(num_q, num_blocks, dtype=torch.bool, device=device)  # (Q, n): the block holding p_i (causal)
    available = ~own  # (Q, n): every block
    if causal:
        position = _positions(num_q, num_k, device)[:, None]  # (Q, 1)
        available = starts <= position  # (n,) vs (Q, 1) -> (Q, n): no block that starts after the query
        own = available & (position < starts + block_size)  # (Q, n)
    chosen = own | _top(block_scores, available & ~own, top_blocks - int(causal))  # (B, Q, n)
    key_block = torch.arange(num_k, device=device) // block_size  # (K,): the block of each key
    return chosen[..., key_block] & _allowed(num_q, num_k, causal, device)  # (B, Q, K)


def attention_mass_kept(weights: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
    """The attention weight that the ``selected`` keys carry for each query: ``sum_{j selected} w_ij``.

    With the dense weights of a query and the keys a sparse pattern reads, it says how much of the dense attention the
    pattern keeps (1 = all of it).

    Args:
        weights: (B, Q, K) attention weights (each row usually sums to 1), floating point, finite, >= 0.
        selected: (B, Q, K) bool, True = the key is read.

    Returns:
        (B, Q) in the dtype of ``weights``.
    """
    require_mass_inputs(weights, selected)
    kept = torch.where(selected, _work(weights), 0.0).sum(-1)  # (B, Q, K) -> (B, Q)
    return kept.to(weights.dtype)


def topk_attention(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, top_k: int, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention over each query's ``top_k`` highest scores ``q_i . k_j / sqrt(D)`` among its allowed keys.

    Ties go to the lower key index. With ``top_k`` at or above the number of allowed keys every allowed key is read,
    and the result is dense (masked) softmax attention exactly.

    Args:
        queries: (B, Q, D); keys: (B, K, D); values: (B, K, V); one floating dtype, finite.
        top_k: how many keys each query reads, an integer >= 1.
        causal: allow only the keys ``j <= i + K - Q`` (bottom-right, as ``causal_mask``); a query with none
            (Q > K) gives a zero row.

    Returns:
        ``(out (B, Q, V), selected (B, Q, K) bool)``: ``out`` in the dtype of ``queries``; ``selected`` True on the keys
        read (all False for a query that sees no key).
    """
    require_topk_inputs(queries, keys, values, top_k, causal)
    q, k, v = _work(queries), _work(keys), _work(values)
    scores = _scores(q, k)  # (B, Q, K)
    allowed = _allowed(q.shape[1], k.shape[1], causal, q.device)  # (Q, K)
    selected = _top(scores, allowed, top_k)  # (B, Q, K)
    return require_finite_output(_attend(scores, selected, v), queries.dtype, _OVERFLOW), selected


def block_sparse_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    block_size: int,
    top_blocks: int,
    causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """MoBA, Mixture of Block Attention (Lu et al., 2025, "MoBA: Mixture of Block Attention for Long-Context LLMs",
    arXiv 2502.13189): each query reads the keys of its ``top_blocks`` best blocks.

    The keys are split into blocks of ``block_size`` (the last may be shorter). Block ``b`` scores
    ``q_i . mean(k_j, j in b)`` for query ``i`` (a gate, as in a mixture of experts); each query takes its
    ``top_blocks`` highest-scoring blocks (ties to the lower block index), then softmax attention
    ``q . k / sqrt(D)`` over every key of those blocks.

    With ``causal``: a block that starts after the query's position ``p_i = i + K - Q`` is never taken; the block that
    holds ``p_i`` always is and counts toward ``top_blocks`` (the other slots go to the best earlier blocks); inside it
    the causal mask still applies. With ``top_blocks`` at or above the number of blocks available to a query the result
    is dense (masked) softmax attention exactly.

    Args:
        queries: (B, Q, D); keys: (B, K, D); values: (B, K, V); one floating dtype, finite.
        block_size: keys per block, an integer >= 1. top_blocks: blocks per query, an integer >= 1.
        causal: bottom-right causal attention, as ``causal_mask``; a query that sees no key gives a zero row.

    Returns:
        ``(out (B, Q, V), selected (B, Q, K) bool)``: ``out`` in the dtype of ``queries``; ``selected`` True on the keys
        actually read (the selected blocks, after the causal mask).
    """
    require_block_sparse_inputs(queries, keys, values, block_size, top_blocks, causal)
    q, k, v = _work(queries), _work(keys), _work(values)
    block_keys = _block_means(k, block_size)  # (B, n, D): n = ceil(K / block_size)
    gate = q @ block_keys.transpose(-2, -1)  # (B, Q, D) x (B, D, n) -> (B, Q, n)
    selected = _read_blocks(gate, k.shape[1], block_size, top_blocks, causal)  # (B, Q, K)
    out = _attend(_scores(q, k), selected, v)  # (B, Q, V)
    return require_finite_output(out, queries.dtype, _OVERFLOW), selected


def lightning_indexer(
    index_queries: torch.Tensor, index_keys: torch.Tensor, head_weights: torch.Tensor
) -> torch.Tensor:
    """DeepSeek-V3.2-Exp's lightning indexer (DeepSeek-AI, 2025, "DeepSeek-V3.2-Exp: Boosting Long-Context Efficiency
    with DeepSeek Sparse Attention"): ``I[b, t, s] = sum_j w[b, t, j] ReLU(q[b, t, j] . k[b, s])``.

    A few small indexer heads ``j`` score every key ``s`` for query ``t``; the keys share one index key per position
    across the heads. DeepSeek Sparse Attention then reads, for each query, only the keys with the highest index
    scores (2048 of them in the report), with the causal mask; the indexer can run in FP8 there.

    Args:
        index_queries: (B, Q, H_I, D_I); index_keys: (B, K, D_I); head_weights: (B, Q, H_I), the weight of each
            indexer head for each query; one floating dtype, finite.

    Returns:
        (B, Q, K) index scores in the dtype of ``index_queries``.
    """
    require_indexer_inputs(index_queries, index_keys, head_weights)
    q, k, w = _work(index_queries), _work(index_keys), _work(head_weights)
    per_head = torch.relu(torch.einsum("bthd,bsd->bths", q, k))  # (B, Q, H_I, D_I) x (B, K, D_I) -> (B, Q, H_I, K)
    scores = torch.einsum("bth,bths->bts", w, per_head)  # (B, Q, H_I) x (B, Q, H_I, K) -> (B, Q, K)
    return require_finite_output(scores, index_queries.dtype, "the index scores")


def _compressed(q, k, v, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """NSA's compressed branch: attention over one (mean key, mean value) per complete block ending at or before
    the query. Returns ``(out (B, Q, V), weights (B, Q, C))``, C = K // block_size complete blocks."""
    num_q, num_k = q.shape[1], k.shape[1]
    complete = num_k // block_size
    k_cmp, v_cmp = _block_means(k, block_size)[:, :complete], _block_means(v, block_size)[:, :complete]  # (B, C, .)
    last = (torch.arange(complete, device=q.device) + 1) * block_size - 1  # (C,): each block's last key
    seen = last <= _positions(num_q, num_k, q.device)[:, None]  # (C,) vs (Q, 1) -> (Q, C)
    weights = softmax_over_allowed(_scores(q, k_cmp), mask=seen)  # (B, Q, C); zero rows before a complete block
    return weights @ v_cmp, weights  # (B, Q, C) x (B, C, V) -> (B, Q, V)


def native_sparse_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    gates: torch.Tensor,
    block_size: int,
    top_blocks: int,
    window: int,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """NSA, Native Sparse Attention (Yuan et al., 2025, "Native Sparse Attention: Hardware-Aligned and Natively
    Trainable Sparse Attention", arXiv 2502.11089), simplified and causal only: three softmax attentions, gated.

    ``out = g_cmp * o_cmp + g_slc * o_slc + g_win * o_win``, each branch a softmax attention ``q . k / sqrt(D)`` of
    query ``i`` (at position ``p_i = i + K - Q``) over:

    * compressed: one key and one value per complete block of ``block_size`` keys that ends at or before ``p_i``, the
      mean of the block's keys and of its values. The paper compresses with a learned MLP with a positional encoding,
      over overlapping blocks taken with a stride; the mean of disjoint blocks stands in for it here.
    * selected: all keys of ``top_blocks`` blocks chosen by the compressed branch's attention weights (the paper's
      importance scores; one selection block per compression block here), with ``block_sparse_attention``'s causal
      rule: no block after ``p_i``, the block holding ``p_i`` always kept and counted, the causal mask inside it (the
      paper's 27B model always keeps the first block and two local blocks, counted among its 16).
    * window: the last ``window`` keys up to and including ``p_i``.

    A branch that has no key for a query (no complete block yet, Q > K, K = 0) gives it a zero row.

    Args:
        queries: (B, Q, D); keys: (B, K, D); values: (B, K, V); one floating dtype, finite.
        gates: (B, Q, 3), each in [0, 1], in the dtype of ``queries``: the weights of the compressed, selected and
            window branches for each query (the paper computes them from the input with an MLP and a sigmoid).
        block_size, top_blocks, window: integers >= 1.

    Returns:
        ``(out (B, Q, V), branches)``, ``branches`` a dict ``{"compressed", "selected", "window"}`` of (B, Q, V)
        tensors; all in the dtype of ``queries``.
    """
    require_nsa_inputs(queries, keys, values, gates, block_size, top_blocks, window)
    q, k, v, g = _work(queries), _work(keys), _work(values), _work(gates)
    num_q, num_k = q.shape[1], k.shape[1]
    scores = _scores(q, k)  # (B, Q, K)
    compressed, importance = _compressed(q, k, v, block_size)  # (B, Q, V), (B, Q, C)
    num_blocks = -(-num_k // block_size)  # ceil(K / block_size) >= C: a short last block has no compressed token
    importance = F.pad(importance, (0, num_blocks - importance.shape[-1]))  # (B, Q, n): a short block is always own
    chosen = _read_blocks(importance, num_k, block_size, top_blocks, causal=True)  # (B, Q, K)
    position = _positions(num_q, num_k, q.device)[:, None]  # (Q, 1)
    key = torch.arange(num_k, device=q.device)  # (K,)
    in_window = (key <= position) & (key > position - window)  # (Q, K): keys p_i - window + 1 .. p_i
    branches = {
        "compressed": compressed,
        "selected": _attend(scores, chosen, v),  # (B, Q, V)
        "window": _attend(scores, in_window, v),  # (B, Q, V)
    }
    out = sum(g[..., c, None] * branch for c, branch in enumerate(branches.values()))  # (B, Q, 1) * (B, Q, V)
    branches = {name: require_finite_output(b, queries.dtype, _OVERFLOW) for name, b in branches.items()}
    return require_finite_output(out, queries.dtype, _OVERFLOW), branches
