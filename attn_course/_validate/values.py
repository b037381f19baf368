"""Input checks of plain values (private): numbers, choices, flags, sequences, strings and argument types.

``attn_course._validate`` re-exports every name here; a helper imports its checks from there.

One rule everywhere: a wrong type raises ``TypeError``; a wrong value raises ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch


def require_int(value, name: str, low: int = 1, high: int | None = None, low_name: str = "") -> int:
    """A whole number in ``[low, high]`` (``True``/``False`` are refused although Python counts them as ints).

    ``low_name`` names where ``low`` comes from, e.g. ``"num_queries"`` for ``num_keys >= num_queries = 3``.
    """
    low_text = f"{low_name} = {low}" if low_name else f"{low}"
    wanted = f"an integer >= {low_text}" if high is None else f"an integer in [{low}, {high}]"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be {wanted}, got {value!r} ({type(value).__name__})")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return value


def require_sequence(value, name: str, what: str) -> None:
    """A sequence of ``what`` (a list, a tuple, an array or a tensor): not None, a string or a single number."""
    if value is None or isinstance(value, str | bytes) or not hasattr(value, "__len__"):
        raise TypeError(f"{name} must be a sequence of {what} (a list or a tensor), got {type(value).__name__}")


def require_number(value, name: str, wanted: str = "", ok=None) -> float:
    """A finite real number (Python number or one-element tensor) for which ``ok(number)`` holds.

    ``wanted`` words the condition, e.g. ``"> 0"`` or ``"in [0, 1)"``; ``""`` for any finite number.
    """
    wanted = f" {wanted}" if wanted else ""
    if isinstance(value, torch.Tensor) and not value.dtype.is_complex:
        if value.numel() != 1:
            raise ValueError(f"{name} must be a single number, got a tensor of shape {tuple(value.shape)}")
        number = float(value.detach())
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        raise TypeError(f"{name} must be a finite number{wanted}, got {value!r} ({type(value).__name__})")
    if not math.isfinite(number) or (ok is not None and not ok(number)):
        raise ValueError(f"{name} must be a finite number{wanted}, got {number}")
    return number


def require_positive(value, name: str) -> float:
    """A finite number > 0 (Python number or 0-d tensor)."""
    return require_number(value, name, "> 0", lambda v: v > 0)


def require_probability(value, name: str = "dropout") -> float:
    """A dropout probability in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a probability in [0, 1), got {value!r} ({type(value).__name__})")
    if not 0 <= value < 1:
        raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}")
    return float(value)


def require_float_dtype(dtype, name: str = "dtype") -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating torch.dtype (e.g. torch.float32), got {dtype!r}")
    return dtype


def require_choice(value, name: str, choices) -> str:
    """One of the names in ``choices`` (a kernel name, a pattern name...)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {list(choices)}, got {value!r} ({type(value).__name__})")
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def require_bool(value, name: str) -> bool:
    """``True`` or ``False`` (not 0/1, not None)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return value


def require_keywords(value, name: str, what: str, example: str) -> dict:
    """A dict of keyword argument name -> ``what`` (a slider panel's ``controls`` or ``fixed``), keyed by names."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict of argument name -> {what}, got {type(value).__name__}; e.g. {example}")
    for key in value:
        if not isinstance(key, str) or not key.isidentifier():
            raise TypeError(f"{name} must be keyed by argument names (str), got {key!r}")
    return dict(value)


def require_kv_heads(num_heads: int, num_kv_heads: int | None) -> int:
    """G, the number of key/value heads (``num_heads`` when None); H must be a multiple of G."""
    require_int(num_heads, "num_heads")
    if num_kv_heads is None:
        return num_heads
    require_int(num_kv_heads, "num_kv_heads")
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads = {num_heads} must be a multiple of num_kv_heads = {num_kv_heads} "
            f"(each key/value head serves num_heads / num_kv_heads query heads)"
        )
    return num_kv_heads


def require_divisible(value: int, name: str, by: int, by_name: str) -> int:
    """``value`` a multiple of ``by``: "<name> = 10 must be divisible by <by_name> = 3"."""
    if value % by:
        raise ValueError(f"{name} = {value} must be divisible by {by_name} = {by}")
    return value


def require_loglog_data(sizes, costs) -> None:
    """Two sequences of one length >= 2 of positive numbers, the sizes not all equal (a slope on log-log axes)."""
    require_sequence(sizes, "sizes", "numbers")
    require_sequence(costs, "costs", "numbers")
    if len(sizes) != len(costs) or len(sizes) < 2:
        raise ValueError(f"sizes and costs must have the same length >= 2, got {len(sizes)} and {len(costs)}")
    if min(sizes) <= 0 or min(costs) <= 0:
        raise ValueError(
            f"sizes and costs must be positive to take logarithms, got smallest size {min(sizes)} and cost {min(costs)}"
        )
    if len(set(sizes)) == 1:
        raise ValueError(f"sizes must not all be equal (a slope needs two different sizes), got {list(sizes)}")


def require_digit_string(digits) -> str:
    """A non-empty str of the ASCII digits 0-9."""
    if not isinstance(digits, str):
        raise TypeError(f"digits must be a non-empty string of the digits 0-9, got {digits!r}")
    if not digits or not digits.isdigit() or not digits.isascii():
        raise ValueError(f"digits must be a non-empty string of the digits 0-9, got {digits!r}")
    return digits


def require_nonempty_list(value, name: str, what: str) -> None:
    """A non-empty list or tuple of ``what``."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a non-empty list of {what}, got {value!r}")
    if not value:
        raise ValueError(f"{name} must be a non-empty list of {what}, got {value!r}")


def require_instance(value, name: str, kind, wanted: str) -> None:
    """An instance of ``kind``; ``wanted`` words it, e.g. "the Splits of a task (e.g. tasks.reversal_task())"."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {wanted}, got {type(value).__name__}")


def require_seq2seq_model(model) -> None:
    """An ``nn.Module`` with a ``greedy()`` method (the sequence-to-sequence models of notebooks 07 and 08)."""
    if not isinstance(model, torch.nn.Module) or not callable(getattr(model, "greedy", None)):
        raise TypeError(f"model must be an nn.Module with a greedy() method, got {type(model).__name__}")


def require_causal_window(causal, window) -> None:
    """``causal`` True or False; ``window`` None or an integer >= 1, and then only with ``causal``."""
    require_bool(causal, "causal")
    if window is not None:
        require_int(window, "window", 1)
        if not causal:
            raise ValueError("window needs causal=True: a sliding window keeps the last `window` keys up to a query")


def require_kernel(kernel, names) -> None:
    """A kernel name of ``names`` or a function K(u)."""
    if isinstance(kernel, str):
        require_choice(kernel, "kernel", names)
    elif not callable(kernel):
        raise TypeError(f"kernel must be a kernel name or a function K(u), got {type(kernel).__name__}")


def require_block_grid(num_queries, num_keys, block_size, causal, window) -> None:
    """The sizes of a tiled attention: Q, K and the block size integers >= 1, then ``causal`` and ``window``."""
    require_int(num_queries, "num_queries")
    require_int(num_keys, "num_keys")
    require_int(block_size, "block_size", 1)
    require_causal_window(causal, window)
