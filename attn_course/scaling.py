"""Why dot-product scores are divided by sqrt(D): the numbers of notebook 03 (its figure: ``plots.scaling``).

For queries and keys with independent components of mean 0 and variance 1, the dot product
``q . k`` has mean 0 and variance D. Large scores push the softmax towards a one-hot vector
(it *saturates*), whose gradients vanish; dividing by sqrt(D) brings the variance back to 1.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from ._validate import require_float
from ._validate.cost import require_entropy_args, require_variance_args

__all__ = ["dot_product_variance", "mean_entropy"]


def dot_product_variance(d: int, num_samples: int = 10_000, seed: int = 0) -> float:
    """Sample variance of ``q . k`` for ``q, k`` with independent standard normal components of size ``d``."""
    require_variance_args(d, num_samples)
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(num_samples, d, generator=gen, dtype=torch.float64)
    k = torch.randn(num_samples, d, generator=gen, dtype=torch.float64)
    return float((q * k).sum(-1).var())


def softmax_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy ``-sum_k w_k log w_k`` (in nats) of each row of weights over the last axis.

    0 for a one-hot row, ``log K`` for a uniform row over K keys. Zero weights contribute 0.

    Args:
        weights: (..., K) non-negative rows summing to 1.

    Returns:
        (...) one entropy per row.
    """
    require_float(weights, "weights")
    safe = torch.where(weights > 0, weights, torch.ones_like(weights))  # log 1 = 0 where w = 0
    return -(weights * torch.log(safe)).sum(-1)


def mean_entropy(
    d: int, num_keys: int = 16, temperature: float = 1.0, scaled: bool = True, num_queries: int = 500, seed: int = 0
) -> float:
    """Average softmax entropy of ``num_queries`` random queries over ``num_keys`` random keys of size ``d``.

    Scores are ``q . k / (temperature * sqrt(d))`` if ``scaled`` else ``q . k / temperature``. Results are
    cached (a slider revisits the same values); the arguments are checked before the cache is consulted.
    """
    temperature = require_entropy_args(d, num_keys, temperature, num_queries)
    return _mean_entropy(d, num_keys, temperature, bool(scaled), num_queries, int(seed))


@lru_cache(maxsize=1024)
def _mean_entropy(d: int, num_keys: int, temperature: float, scaled: bool, num_queries: int, seed: int) -> float:
    scores = _raw_scores(d, num_keys, num_queries, seed) / temperature  # (Q, K)
    if scaled:
        scores = scores / math.sqrt(d)
    return float(softmax_entropy(torch.softmax(scores, dim=-1)).mean())


@lru_cache(maxsize=128)
def _raw_scores(d: int, num_keys: int, num_queries: int, seed: int) -> torch.Tensor:
    """``q . k`` of random queries and keys, kept: a new temperature then costs a division, not new samples."""
    gen = torch.Generator().manual_seed(seed)
    queries = torch.randn(num_queries, d, generator=gen, dtype=torch.float64)  # (Q, D)
    keys = torch.randn(num_keys, d, generator=gen, dtype=torch.float64)  # (K, D)
    return queries @ keys.T  # (Q, D) x (D, K) -> (Q, K)
