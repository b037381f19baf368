"""Input checks shared by the helpers (private).

Every helper checks what a learner hands it before computing, so a mistake is reported
as a sentence that names the argument, what was expected and what came, instead of a
shape error deep inside ``torch.bmm`` or a silent NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = [
    "require_tensor",
    "require_float",
    "require_rank",
    "require_same_dtype",
    "require_size",
    "require_positive",
    "require_int",
    "shape_str",
]


def shape_str(shape: Sequence[int]) -> str:
    """``(2, 3)`` for a shape, ``()`` for a scalar."""
    dims = tuple(shape)
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def require_tensor(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(x).__name__}; "
            f"wrap it with torch.tensor(...) or torch.as_tensor(...)"
        )
    return x


def require_float(x, name: str) -> torch.Tensor:
    """A floating-point tensor (float16/bfloat16/float32/float64)."""
    require_tensor(x, name)
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor (e.g. torch.float32), got {x.dtype}; "
            f"convert it with {name}.float()"
        )
    return x


def require_rank(x: torch.Tensor, name: str, ranks: Sequence[int], meaning: str) -> torch.Tensor:
    """Check ``x.ndim`` is one of ``ranks``; ``meaning`` spells the expected shape, e.g. '(B, Q, D)'."""
    if x.ndim not in tuple(ranks):
        raise ValueError(
            f"{name} must have shape {meaning} ({' or '.join(f'{r}-D' for r in ranks)}), "
            f"got shape {shape_str(x.shape)} ({x.ndim}-D)"
        )
    return x


def require_same_dtype(x: torch.Tensor, name: str, ref: torch.Tensor, ref_name: str) -> None:
    if x.dtype != ref.dtype:
        raise TypeError(
            f"{name} has dtype {x.dtype} but {ref_name} has dtype {ref.dtype}; "
            f"use one dtype for both (e.g. {name}.to({ref_name}.dtype))"
        )


def require_size(actual: int, expected: int, what: str, got_shape, name: str) -> None:
    """``what`` says which size must agree, e.g. 'keys.shape[0] (number of keys K)'."""
    if actual != expected:
        raise ValueError(f"{what} must be {expected}, got {actual} ({name} has shape {shape_str(got_shape)})")


def require_positive(value, name: str) -> None:
    """A finite number > 0 (Python number or 0-d tensor)."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name} must be a single number, got a tensor of shape {shape_str(value.shape)}")
        number = float(value.detach())
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__} {value!r}")
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {number}")


def require_int(value, name: str, low: int = 1) -> int:
    """A whole number >= ``low`` (``True``/``False`` are refused although Python counts them as ints)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return value
