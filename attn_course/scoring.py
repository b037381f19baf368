"""Scoring functions and attention pooling over batches: the pure functions.

Notebook 03 (scoring functions); the layers in ``attn_course.layers`` wrap these.

Attention = softmax(scores) @ values, where the score of a query and a key is
* scaled dot product: ``q . k / sqrt(D)`` (queries and keys of one size D),
* additive: ``w_v . tanh(W_q q + W_k k)`` (a one-hidden-layer MLP; any sizes).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._validate import require_additive_inputs, require_pooling_inputs, require_qkv, require_queries_keys
from .masking import softmax_over_allowed

__all__ = [
    "attention_pooling",
    "dot_product_scores",
    "additive_scores",
    "scaled_dot_product_attention",
]


def attention_pooling(
    scores: torch.Tensor,
    values: torch.Tensor,
    valid_lens: torch.Tensor | None = None,
    dropout: Callable[[torch.Tensor], torch.Tensor] | None = None,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights = masked softmax of the scores; output = weights @ values.

    Args:
        scores: (B, Q, K).
        values: (B, K, V), of the dtype of ``scores``.
        valid_lens: None, (B,) or (B, Q); see ``masked_softmax``.
        dropout: optional function applied to the weights before they pool the values
            (a ``torch.nn.Dropout`` during training); the returned weights are before dropout.
        mask: optional bool, broadcastable to (B, Q, K), ``True`` = may attend; see ``masked_softmax``.

    Returns:
        output (B, Q, V) and weights (B, Q, K).
    """
    require_pooling_inputs(scores, values, dropout)
    weights = softmax_over_allowed(scores, valid_lens, mask)  # (B, Q, K)
    pooled = weights if dropout is None else dropout(weights.clone())  # an in-place dropout keeps its hands off weights
    return torch.bmm(pooled, values), weights  # (B, Q, K) x (B, K, V) -> (B, Q, V)


def dot_product_scores(queries: torch.Tensor, keys: torch.Tensor, scale: bool = True) -> torch.Tensor:
    """``queries @ keys^T``, divided by ``sqrt(D)`` when ``scale``.

    Args:
        queries: (B, Q, D); keys: (B, K, D).
        scale: divide by ``sqrt(D)`` (scaled dot product) or not (plain dot product).

    Returns:
        (B, Q, K) scores.
    """
    require_queries_keys(queries, keys)
    scores = torch.bmm(queries, keys.transpose(1, 2))  # (B, Q, D) x (B, D, K) -> (B, Q, K)
    return scores / math.sqrt(queries.shape[-1]) if scale else scores


def additive_scores(
    queries: torch.Tensor, keys: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor
) -> torch.Tensor:
    """Additive (Bahdanau) scores ``w_v . tanh(W_q q + W_k k)`` for every query-key pair.

    Args:
        queries: (B, Q, Dq); keys: (B, K, Dk).
        w_q: (U, Dq); w_k: (U, Dk): the ``.weight`` of ``nn.Linear(Dq, U)`` and ``nn.Linear(Dk, U)``;
        w_v: (U,), the one row of ``nn.Linear(U, 1).weight``; U is the number of hidden units.

    Returns:
        (B, Q, K) scores.
    """
    require_additive_inputs(queries, keys, w_q, w_k, w_v)
    q_feat = queries @ w_q.T  # (B, Q, Dq) x (Dq, U) -> (B, Q, U)
    k_feat = keys @ w_k.T  # (B, K, Dk) x (Dk, U) -> (B, K, U)
    hidden = torch.tanh(q_feat.unsqueeze(2) + k_feat.unsqueeze(1))  # (B, Q, 1, U) + (B, 1, K, U) -> (B, Q, K, U)
    return hidden @ w_v  # (B, Q, K, U) x (U,) -> (B, Q, K)


def scaled_dot_product_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    valid_lens: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    dropout: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q K^T / sqrt(D)) V`` with padded (and optionally other) keys masked out.

    Args:
        queries: (B, Q, D); keys: (B, K, D); values: (B, K, V); all of one floating dtype.
        valid_lens: None, (B,) or (B, Q) integers in [0, K].
        mask: optional bool, broadcastable to (B, Q, K), ``True`` = may attend (e.g. ``causal_mask(Q)``).
        dropout: optional function applied to the weights before they pool the values (``nn.Dropout``).

    Returns:
        output (B, Q, V) and weights (B, Q, K); rows of the weights sum to 1 over the allowed keys
        (a query with no valid key gets zero weights and a zero output).
    """
    require_qkv(queries, keys, values)
    scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])  # (B, Q, D) x (B, D, K) -> (B, Q, K)
    return attention_pooling(scores, values, valid_lens, dropout, mask)  # (B, Q, V), (B, Q, K)
