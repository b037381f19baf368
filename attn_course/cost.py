"""What attention costs: time and memory as the sizes grow (notebooks 03 and 10; the benchmarks reuse it).

Scaled dot-product attention over Q queries and K keys of size D computes a (Q, K) score matrix:
about ``Q K D`` multiply-adds for the scores and as many for pooling values of size D, and
``Q K`` numbers to store per batch element. Time grows like ``Q K D``, memory like ``Q K``.
Additive attention with U hidden units first builds a (Q, K, U) tensor, ``tanh(W_q q + W_k k)``
for every pair: ``U`` times the memory of the score matrix (``attention_cost`` times both).

What efficient attention saves (notebook 10):

* ``peak_memory`` measures: PyTorch's profiler records every allocation and every free of its CPU allocator
  (``profile_memory=True``) with a time stamp and a size in bytes (negative for a free). Summed in time order,
  they give the bytes alive at each moment; the peak of that sum is the most memory the call held at once, on top
  of what existed before it (its inputs). Memory that PyTorch does not allocate (Python objects, the profiler's
  own records) is not counted; it is small here.
* ``io_cost`` counts: bytes moved between slow memory (a GPU's HBM, a CPU's RAM) and fast memory (on-chip SRAM,
  caches) by the materialised and the tiled forward pass, against the floating-point operations of both. The tiled
  pass is counted in both loop orders: FlashAttention-2's (Dao, 2023; query blocks outside), which ``flash_attention``
  follows, and FlashAttention's first (Dao et al., 2022, Algorithm 1; key blocks outside).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from ._validate import require_loglog_data
from ._validate.cost import require_cost_args, require_io_args, require_measured, require_timing
from .scoring import additive_scores, attention_pooling, scaled_dot_product_attention

__all__ = ["attention_cost", "loglog_slope", "peak_memory", "io_cost"]

SCORINGS = ("dot", "additive")


def _time_call(fn, *args, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall-clock seconds of ``fn(*args)`` over ``repeats`` runs, after ``warmup`` runs."""
    require_timing(repeats, warmup)
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
    require_cost_args(num_queries, num_keys, d, batch, dtype, scoring, num_hiddens, SCORINGS)
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


class _QuietStderr:
    """Silence file descriptor 2 while the profiler starts and stops: its C++ side writes a line to it each time,
    which a notebook would show (with a time stamp in it) under the cell."""

    def __enter__(self):
        self.saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)


def peak_memory(fn: Callable, *args, threads: int = 1, **kwargs) -> int:
    """Peak bytes that ``fn(*args, **kwargs)`` holds at once in PyTorch's CPU allocator (module docstring).

    Args:
        fn: the function to measure; its inputs already exist, so they are not counted, and its result is.
        threads: PyTorch threads while it runs (restored afterwards). Some kernels, such as
            ``F.scaled_dot_product_attention``, allocate one buffer per thread: one thread makes the number the
            same on every machine.

    Returns:
        bytes, an int: the largest total of live allocations made during the call.
    """
    require_measured(fn, threads)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        # torch.autograd.profiler.profile rather than torch.profiler.profile: the same recorder (Kineto), without
        # the latter's first start, which imports torch._inductor (seconds) to look up a setting for GPUs.
        with _QuietStderr(), torch.autograd.profiler.profile(profile_memory=True) as prof:
            fn(*args, **kwargs)  # the result is freed as the call returns: it is counted while it was alive
    finally:
        torch.set_num_threads(before)
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.kineto_results.events() if e.name() == "[memory]")
    live = peak = 0
    for _, nbytes in events:  # + for an allocation, - for a free
        live += nbytes
        peak = max(peak, live)
    return peak


def io_cost(
    num_tokens: int,
    d: int = 64,
    block_size: int = 64,
    bytes_per_element: int = 4,
    fast_memory: float = 192 * 1024,
) -> dict[str, float]:
    """Bytes moved to and from slow memory, FLOPs and arithmetic intensity of one head of attention (no mask).

    Closed forms, for Q = K = N tokens, D = V = d, block size b, n = ceil(N / b) query blocks:

    * materialised: read Q and K (2 N d), write the scores (N^2), read them for the softmax (N^2), write the weights
      (N^2), read them and V (N^2 + N d), write the output (N d): ``4 N d + 4 N^2`` elements.
    * tiled, query blocks outside (FlashAttention-2): read Q once and write the output once (2 N d), and read K
      and V once per query block (n * 2 N d): ``2 N d + 2 n N d`` elements; the scores never leave fast memory.
    * tiled, key blocks outside (FlashAttention, Algorithm 1 as written): read K and V once (2 N d); for each of
      the n key blocks, read Q and the output so far and write the output back (3 N d), and read and write each
      query's maximum and sum (4 N): ``2 N d + n (3 N d + 4 N)`` elements.
    * FLOPs: two matrix products of ``2 N^2 d`` each: ``4 N^2 d`` for both.
    * a tile needs a block of Q, K, V and the output (4 b d), the (b, b) scores, and a maximum and a sum per
      query (2 b) in fast memory: ``tile_bytes``; ``fits`` says whether that is at most ``fast_memory`` bytes.

    Args:
        fast_memory: bytes of fast memory for one tile; the default, 192 KiB, is an A100's L1 cache and shared
            memory per streaming multiprocessor (an H100 has 256 KiB).

    Returns:
        dict with ``naive_bytes``, ``tiled_bytes``, ``kv_outer_bytes`` (the tiled pass with key blocks outside),
        ``flops``, ``naive_intensity`` and ``tiled_intensity`` (FLOPs per byte), ``tile_bytes`` and ``fits``
        (1.0 or 0.0).
    """
    require_io_args(num_tokens, d, block_size, bytes_per_element, fast_memory)
    n, b = num_tokens, block_size
    blocks = math.ceil(n / b)
    naive = bytes_per_element * (4 * n * d + 4 * n * n)
    tiled = bytes_per_element * (2 * n * d + 2 * blocks * n * d)
    kv_outer = bytes_per_element * (2 * n * d + blocks * (3 * n * d + 4 * n))
    flops = 4 * n * n * d
    tile = bytes_per_element * (4 * b * d + b * b + 2 * b)
    return {
        "naive_bytes": float(naive),
        "tiled_bytes": float(tiled),
        "kv_outer_bytes": float(kv_outer),
        "flops": float(flops),
        "naive_intensity": flops / naive,
        "tiled_intensity": flops / tiled,
        "tile_bytes": float(tile),
        "fits": float(tile <= fast_memory),
    }
