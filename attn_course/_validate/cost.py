"""Input checks of the scaling and cost modules and their figures (private): ``scaling``, ``cost``, ``plots.cost``,
``plots.efficient``; see ``_validate``, whose checks these are built from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from . import require_choice, require_float_dtype, require_int, require_positive

# A private module: every helper imports the checks it needs by name, so it has no __all__.


def require_variance_args(d, num_samples) -> None:
    """dot_product_variance's sizes: D >= 1 and at least two samples (a variance)."""
    require_int(d, "d")
    require_int(num_samples, "num_samples", 2)


def require_entropy_args(d, num_keys, temperature, num_queries=1) -> float:
    """Softmax saturation's sizes: D >= 1, K >= 2 keys, Q >= 1 queries; returns the temperature (> 0) as a float."""
    require_int(d, "d")
    require_int(num_keys, "num_keys", 2)
    require_int(num_queries, "num_queries")
    return require_positive(temperature, "temperature")


def require_cost_args(num_queries, num_keys, d, batch, dtype, scoring, num_hiddens, scorings) -> None:
    """attention_cost's sizes (integers >= 1), a floating dtype and a scoring of ``scorings``."""
    for name, value in (("num_queries", num_queries), ("num_keys", num_keys), ("d", d), ("batch", batch)):
        require_int(value, name)
    require_float_dtype(dtype)
    require_choice(scoring, "scoring", scorings)
    require_int(num_hiddens, "num_hiddens")


def require_timing(repeats, warmup) -> None:
    """At least one timed run, and zero or more warm-up runs."""
    require_int(repeats, "repeats")
    require_int(warmup, "warmup", 0)


def require_measured(fn, threads) -> None:
    """peak_memory's arguments: a function to call and a number of threads >= 1."""
    if not callable(fn):
        raise TypeError(f"fn must be a function to measure, got {type(fn).__name__}")
    require_int(threads, "threads")


def require_io_args(num_tokens, d, block_size, bytes_per_element, fast_memory) -> None:
    """io_cost's sizes: integers >= 1, and fast memory > 0 bytes."""
    for name, value in (("num_tokens", num_tokens), ("d", d), ("block_size", block_size)):
        require_int(value, name)
    require_int(bytes_per_element, "bytes_per_element")
    require_positive(fast_memory, "fast_memory")


def require_peak_curves(sizes, peaks) -> None:
    """plot_peak_memory's data: a non-empty sequence of lengths N and a mapping name -> one peak per length."""
    if not isinstance(peaks, Mapping):
        raise TypeError(f"peaks must map each version's name to its peak bytes per size, got {type(peaks).__name__}")
    if isinstance(sizes, str | bytes) or not isinstance(sizes, Sequence):
        raise TypeError(f"sizes must be a sequence of lengths N, got {type(sizes).__name__}")
    if not sizes or not peaks:
        raise ValueError("sizes and peaks must not be empty")
    for name, values in peaks.items():
        if len(values) != len(sizes):
            raise ValueError(f"peaks[{name!r}] must have one value per size ({len(sizes)}), got {len(values)}")
