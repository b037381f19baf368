"""What efficient attention saves: peak memory measured, and bytes moved by an IO model (notebook 10, benchmarks).

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
from collections.abc import Callable

import torch

from ._validate import require_int, require_positive

__all__ = ["peak_memory", "io_cost"]


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
    """Peak bytes that ``fn(*args, **kwargs)`` holds at once in PyTorch's CPU allocator (see the module docstring).

    Args:
        fn: the function to measure; its inputs already exist, so they are not counted, and its result is.
        threads: PyTorch threads while it runs (restored afterwards). Some kernels, such as
            ``F.scaled_dot_product_attention``, allocate one buffer per thread: one thread makes the number the
            same on every machine.

    Returns:
        bytes, an int: the largest total of live allocations made during the call.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function to measure, got {type(fn).__name__}")
    require_int(threads, "threads")
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
    require_int(num_tokens, "num_tokens")
    require_int(d, "d")
    require_int(block_size, "block_size")
    require_int(bytes_per_element, "bytes_per_element")
    require_positive(fast_memory, "fast_memory")
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
