"""What attention costs: time and memory as the sizes grow (notebook 03; the benchmarks reuse it).

Scaled dot-product attention over Q queries and K keys of size D computes a (Q, K) score matrix:
about ``Q K D`` multiply-adds for the scores and as many for pooling values of size D, and
``Q K`` numbers to store per batch element. Time grows like ``Q K D``, memory like ``Q K``.
Additive attention with U hidden units first builds a (Q, K, U) tensor, ``tanh(W_q q + W_k k)``
for every pair: ``U`` times the memory of the score matrix.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from ._validate import require_choice, require_float_dtype, require_int, require_loglog_data
from .scoring import additive_scores, attention_pooling, scaled_dot_product_attention

__all__ = ["attention_cost", "loglog_slope"]

SCORINGS = ("dot", "additive")


def _time_call(fn, *args, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall-clock seconds of ``fn(*args)`` over ``repeats`` runs, after ``warmup`` runs."""
    require_int(repeats, "repeats")
    require_int(warmup, "warmup", 0)
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def attention_cost(
    num_queries: int,
    num_keys: int,
    d: int,
    batch: int = 1,
    repeats: int = 7,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    scoring: str = "dot",
    num_hiddens: int = 32,
) -> dict[str, float]:
    """Time and memory of one attention call on random inputs of the given sizes.

    Args:
        scoring: ``"dot"`` times ``scaled_dot_product_attention``; ``"additive"`` times ``additive_scores``
            (U = ``num_hiddens`` hidden units, random weights) followed by ``attention_pooling``.

    Returns:
        ``seconds``: median time of one call; ``weight_bytes``: bytes of the (B, Q, K) weight tensor it
        returns (measured on the tensor); ``input_bytes``: bytes of the queries, keys and values;
        for ``"additive"`` also ``hidden_bytes``: bytes of the (B, Q, K, U) tensor that its scoring builds.
    """
    for name, value in (("num_queries", num_queries), ("num_keys", num_keys), ("d", d), ("batch", batch)):
        require_int(value, name)
    require_float_dtype(dtype)
    require_choice(scoring, "scoring", SCORINGS)
    require_int(num_hiddens, "num_hiddens")
    gen = torch.Generator().manual_seed(seed)
    queries = torch.randn(batch, num_queries, d, generator=gen, dtype=dtype)  # (B, Q, D)
    keys = torch.randn(batch, num_keys, d, generator=gen, dtype=dtype)  # (B, K, D)
    values = torch.randn(batch, num_keys, d, generator=gen, dtype=dtype)  # (B, K, V) with V = D
    extra = {}
    if scoring == "dot":
        call = scaled_dot_product_attention
    else:
        w_q = torch.randn(num_hiddens, d, generator=gen, dtype=dtype) / d**0.5  # (U, D)
        w_k = torch.randn(num_hiddens, d, generator=gen, dtype=dtype) / d**0.5  # (U, D)
        w_v = torch.randn(num_hiddens, generator=gen, dtype=dtype) / num_hiddens**0.5  # (U,)

        def call(queries, keys, values):
            return attention_pooling(additive_scores(queries, keys, w_q, w_k, w_v), values)  # (B, Q, V), (B, Q, K)

        extra["hidden_bytes"] = batch * num_queries * num_keys * num_hiddens * queries.element_size()  # (B, Q, K, U)
    with torch.no_grad():
        _, weights = call(queries, keys, values)
        seconds = _time_call(call, queries, keys, values, repeats=repeats, warmup=2)
    inputs = sum(t.numel() * t.element_size() for t in (queries, keys, values))
    return {
        "seconds": seconds,
        "weight_bytes": weights.numel() * weights.element_size(),
        "input_bytes": inputs,
    } | extra


def loglog_slope(sizes, costs) -> float:
    """Least-squares slope of ``log cost`` against ``log size`` (``numpy.polyfit``, degree 1): cost ~ size^slope."""
    require_loglog_data(sizes, costs)
    slope, _ = np.polyfit(np.log(np.asarray(sizes, dtype=float)), np.log(np.asarray(costs, dtype=float)), 1)
    return float(slope)
