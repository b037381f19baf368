"""Self-attention by hand: every step of the worked 3-token example (notebook 04).

Self-attention projects one sequence ``X`` (T tokens, one per row) three ways, ``Q = X W_Q``,
``K = X W_K``, ``V = X W_V``, scores every pair of tokens, and mixes the values:
``outputs = softmax(Q K^T [/ sqrt(D)]) V``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ._validate import require_self_attention_inputs

__all__ = [
    "SelfAttentionSteps",
    "self_attention_steps",
]


class SelfAttentionSteps(NamedTuple):
    """The intermediate results of single-head self-attention on one sequence of T tokens."""

    queries: torch.Tensor  # (T, D) = X W_Q
    keys: torch.Tensor  # (T, D) = X W_K
    values: torch.Tensor  # (T, V) = X W_V
    scores: torch.Tensor  # (T, T): row i holds q_i . k_j (divided by sqrt(D) if scaled)
    weights: torch.Tensor  # (T, T): softmax of each row
    weighted: torch.Tensor  # (T, T, V): [i, j] = weights[i, j] * v_j, what token j contributes to output i
    outputs: torch.Tensor  # (T, V): row i = sum_j weighted[i, j]


def self_attention_steps(
    inputs: torch.Tensor, w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor, scale: bool = False
) -> SelfAttentionSteps:
    """Run single-head self-attention step by step.

    Args:
        inputs: (T, Din) one token per row.
        w_query, w_key: (Din, D); w_value: (Din, V). Projections act on the right: ``Q = inputs @ w_query``.
        scale: divide the scores by ``sqrt(D)`` (scaled dot product) or not (the worked example's plain one).

    Returns:
        ``SelfAttentionSteps`` with queries and keys (T, D), values (T, V), scores and weights (T, T),
        weighted (T, T, V) and outputs (T, V).
    """
    require_self_attention_inputs(inputs, w_query, w_key, w_value)
    queries = inputs @ w_query  # (T, Din) x (Din, D) -> (T, D)
    keys = inputs @ w_key  # (T, Din) x (Din, D) -> (T, D)
    values = inputs @ w_value  # (T, Din) x (Din, V) -> (T, V)
    scores = queries @ keys.T  # (T, D) x (D, T) -> (T, T)
    if scale:
        scores = scores / math.sqrt(queries.shape[1])  # (T, T)
    weights = torch.softmax(scores, dim=-1)  # (T, T)
    weighted = weights.unsqueeze(-1) * values.unsqueeze(0)  # (T, T, 1) * (1, T, V) -> (T, T, V)
    outputs = weighted.sum(1)  # (T, T, V) -> (T, V): sum over the keys
    return SelfAttentionSteps(queries, keys, values, scores, weights, weighted, outputs)
