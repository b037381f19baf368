"""Input checks of the topic modules of notebooks 01-08 (private): ``data``, ``masking``, ``positional``, ``tasks``,
``training``, ``seq2seq`` and ``transformer``. One helper a function, built from the checks of ``_validate``, in the
order the function used to make them, so that the same fault still gets the same words.
"""

from __future__ import annotations

import math

import torch

from . import (
    require_choice,
    require_dim,
    require_finite,
    require_float,
    require_float_dtype,
    require_instance,
    require_int,
    require_kernel,
    require_last_size,
    require_mask,
    require_nonnegative,
    require_number,
    require_param_dtype,
    require_positive,
    require_rank,
    require_same_dtype,
    require_seq2seq_model,
    require_source,
    require_target,
    require_valid_lens,
)
from .models import require_block_input

# A private module: every helper imports the checks it needs by name, so it has no __all__.


def require_curve_input(x) -> None:
    """``true_function``'s input: floating point and >= 0 (``x^0.8`` has no real value below 0)."""
    require_float(x, "x")
    require_nonnegative(x, "x", "x^0.8 has no real value below 0")


def require_regression_args(n_train, noise, x_max, step, seed, dtype) -> tuple[float, float]:
    """``toy_regression``'s sizes, noise, range, grid step, seed and dtype; returns ``x_max`` and ``step``."""
    require_int(n_train, "n_train")
    require_number(noise, "noise", ">= 0 (a standard deviation)", lambda v: v >= 0)
    x_max = require_number(x_max, "x_max", "> 0", lambda v: v > 0)
    step = require_number(step, "step", f"in (0, x_max = {x_max})", lambda v: 0 < v < x_max)
    require_int(seed, "seed", 0)
    require_float_dtype(dtype)
    return x_max, step


def require_samples_args(n, noise, x_min, x_max, dtype) -> None:
    """``noisy_samples``'s number of points (>= 2), noise >= 0, an interval ``0 <= x_min < x_max`` and a dtype."""
    require_int(n, "n", 2)
    require_number(noise, "noise", ">= 0 (a standard deviation)", lambda v: v >= 0)
    if not 0 <= x_min < x_max < math.inf:
        raise ValueError(f"need 0 <= x_min < x_max, got x_min={x_min!r}, x_max={x_max!r}")
    require_float_dtype(dtype)


def require_lens_and_keys(valid_lens, num_keys) -> None:
    """``sequence_mask``'s K >= 0 and integer lengths in [0, K]."""
    require_int(num_keys, "num_keys", 0)
    require_valid_lens(valid_lens, num_keys, tuple(valid_lens.shape) if isinstance(valid_lens, torch.Tensor) else ())


def require_causal_sizes(num_queries, num_keys) -> int:
    """``causal_mask``'s Q >= 1 and K >= Q (K = Q when None); returns K."""
    require_int(num_queries, "num_queries")
    if num_keys is None:
        return num_queries
    return require_int(num_keys, "num_keys", num_queries, low_name="num_queries")


def require_pattern_args(kind, n, strength, patterns) -> float:
    """``pattern_scores``'s pattern (one of ``patterns``), n >= 2 tokens and a strength; returns the strength."""
    require_choice(kind, "kind", patterns)
    require_int(n, "n", 2)
    return require_number(strength, "strength")


def require_frequency_args(num_hiddens, base, dtype) -> None:
    """The sinusoidal encoding's size D >= 1, a base > 1 and a floating dtype."""
    require_int(num_hiddens, "num_hiddens", 1)
    require_number(base, "base", "> 1", lambda v: v > 1)
    require_float_dtype(dtype)


def require_steps_and_dtype(num_steps, dtype) -> None:
    """At least one position and a floating dtype."""
    require_int(num_steps, "num_steps", 1)
    require_float_dtype(dtype)


def require_rotation_args(delta, omega, dtype) -> float:
    """Two numbers (0-d tensors too) and a floating dtype; returns the angle ``delta * omega``."""
    angle = require_number(delta, "delta") * require_number(omega, "omega")
    require_float_dtype(dtype)
    return angle


def require_task_args(num_train, num_valid, num_test, min_len, max_len, seed) -> int:
    """``reversal_task``'s split sizes (>= 1), lengths ``1 <= min_len <= max_len`` and seed >= 0; returns the seed."""
    for name, value in (("num_train", num_train), ("num_valid", num_valid), ("num_test", num_test)):
        require_int(value, name, 1)
    require_int(min_len, "min_len", 1)
    require_int(max_len, "max_len", min_len)
    return require_int(seed, "seed", 0)


def require_training_args(model, data, splits, epochs, batch_size, lr, clip, warmup, seed) -> tuple[int, int]:
    """``train_seq2seq``'s model, data (a ``splits``), sizes, rates, a warm-up shorter than the training, and seed;
    returns the number of optimiser steps and the seed."""
    require_seq2seq_model(model)
    require_instance(data, "data", splits, "the Splits of a task (e.g. tasks.reversal_task())")
    require_int(epochs, "epochs")
    require_int(batch_size, "batch_size")
    require_positive(lr, "lr")
    require_positive(clip, "clip")
    require_int(warmup, "warmup", 0)
    seed = require_int(seed, "seed", 0)
    steps = epochs * math.ceil(len(data.train) / batch_size)
    if warmup >= steps:
        raise ValueError(f"warmup must be fewer than the {steps} training steps, got {warmup}")
    return steps, seed


def require_seq2seq_call(src, src_len, tgt_in, vocab_size: int) -> None:
    """A sequence-to-sequence model's call under teacher forcing: the source, its lengths and the decoder's input."""
    require_source(src, src_len, vocab_size)
    require_target(tgt_in, src, vocab_size)


def require_greedy_call(src, src_len, max_len, vocab_size: int) -> None:
    """Greedy decoding's source, its lengths and the number of steps (>= 1)."""
    require_source(src, src_len, vocab_size)
    require_int(max_len, "max_len")


def require_ffn_input(x, dense: torch.nn.Linear) -> None:
    """The feed-forward network's input: D = ``dense.in_features`` features, in the dtype of its weights."""
    require_last_size(x, "x", dense.in_features, "num_hiddens")
    require_param_dtype(x, "x", dense.weight)


def require_encoder_block_call(x, src_len, param: torch.Tensor) -> None:
    """An encoder block's input (B, S, D) and, unless None, the source's valid lengths (B,)."""
    require_block_input(x, "x", param)
    if src_len is not None:
        require_valid_lens(src_len, x.shape[1], (x.shape[0],), "src_len")


def require_decoder_block_call(x, memory, src_len, param: torch.Tensor, memory_param: torch.Tensor) -> None:
    """A decoder block's input (B, T, D), the encoder's output (B, S, D) and, unless None, its valid lengths (B,)."""
    require_block_input(x, "x", param)
    require_block_input(memory, "memory", memory_param, batch=x.shape[0])
    if src_len is not None:
        require_valid_lens(src_len, memory.shape[1], (memory.shape[0],), "src_len")


def require_batch(batch, batch_type: type, nonempty: bool = False) -> None:
    """A ``Batch`` of a task (``batch_type``); with ``nonempty``, holding at least one example (a fraction of it is
    taken)."""
    require_instance(batch, "batch", batch_type, "a Batch of a task (e.g. tasks.make_batch(...))")
    if nonempty and len(batch) == 0:
        raise ValueError("batch must hold at least one example (a fraction of none is undefined), got 0")


def require_nw_inputs(queries, keys, values, kernel, bandwidth, mask, kernel_names) -> None:
    """Every argument of ``nadaraya_watson``: queries (Q,) or (Q, D), keys of the same kind, values (K,) or (K, V),
    one floating dtype, finite, K >= 1; a kernel name of ``kernels`` or a function; a bandwidth > 0; a bool
    (Q, K) mask or None."""
    for name, t in (("queries", queries), ("keys", keys), ("values", values)):
        require_float(t, name)
    require_same_dtype(keys, "keys", queries, "queries")
    require_same_dtype(values, "values", queries, "queries")
    require_rank(queries, "queries", (1, 2), "(Q,) or (Q, D)")
    require_rank(keys, "keys", (1, 2), "(K,) or (K, D)")
    require_rank(values, "values", (1, 2), "(K,) or (K, V)")
    if queries.ndim != keys.ndim or (queries.ndim == 2 and queries.shape[1] != keys.shape[1]):
        raise ValueError(
            f"queries and keys must have the same kind: both (N,) or both (N, D) with the same D; "
            f"got queries {tuple(queries.shape)} and keys {tuple(keys.shape)}"
        )
    one_row_per_key = "values must have one row per key: "
    require_dim(values, "values", 0, keys.shape[0], note=f"keys has shape {tuple(keys.shape)}", lead=one_row_per_key)
    if keys.shape[0] == 0:
        raise ValueError("keys must hold at least one key, got 0")
    for name, t in (("queries", queries), ("keys", keys), ("values", values)):
        require_finite(t, name)
    require_positive(bandwidth, "bandwidth")
    if mask is not None:
        require_mask(mask)
        if mask.shape != (queries.shape[0], keys.shape[0]):
            raise ValueError(
                f"mask must have shape (Q, K) = {(queries.shape[0], keys.shape[0])}, got {tuple(mask.shape)}"
            )
    require_kernel(kernel, kernel_names)
