"""Input checks shared by the helpers (private): every check of the package lives here, or is built from these
(a module's ``_require_*`` for its own arguments).

Every helper checks what a learner hands it before computing, so a mistake is reported
as a sentence that names the argument, what was expected and what came, instead of a
shape error deep inside ``torch.bmm`` or a silent NaN.

One rule everywhere: a wrong type raises ``TypeError``; a wrong value or shape raises
``ValueError``. The same fault gets the same words, because the same function words it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

# A private module: every helper imports the checks it needs by name, so it has no __all__.


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


def require_finite(x: torch.Tensor, name: str) -> torch.Tensor:
    """No NaN or infinity. Tensors without data (the ``meta`` device) pass: there is nothing to look at."""
    if x.device.type != "meta" and x.numel():
        # A NaN or an infinity makes the sum NaN or infinite, so a finite sum proves every entry finite: one pass and
        # one number read back. Only a sum that overflowed (huge but finite entries) needs the entry-by-entry look.
        if not math.isfinite(x.detach().sum().item()) and not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} must be finite, got NaN or infinity")
    return x


def require_param_dtype(x: torch.Tensor, name: str, param: torch.Tensor) -> torch.Tensor:
    """``x`` in the dtype of a layer's parameters (``param``): a layer computes in one dtype."""
    if x.dtype != param.dtype:
        raise TypeError(
            f"{name} has dtype {x.dtype} but the layer's parameters are {param.dtype}; "
            f"convert {name} with {name}.to({param.dtype}), or the layer with .to({x.dtype})"
        )
    return x


def require_rank(x: torch.Tensor, name: str, ranks: Sequence[int], meaning: str) -> torch.Tensor:
    """Check ``x.ndim`` is one of ``ranks``; ``meaning`` spells the expected shape, e.g. '(B, Q, D)'."""
    require_tensor(x, name)
    if x.ndim not in tuple(ranks):
        raise ValueError(
            f"{name} must have shape {meaning} ({' or '.join(f'{r}-D' for r in ranks)}), "
            f"got shape {tuple(x.shape)} ({x.ndim}-D)"
        )
    return x


def require_dim(x: torch.Tensor, name: str, dim: int, size: int, expected: str = "", note: str = "", lead: str = ""):
    """Check ``x.shape[dim] == size``, else "<lead>x.shape[dim] must be <expected><size> (<note>), got x of shape S"."""
    if x.shape[dim] != size:
        must = f"{lead}{name}.shape[{dim}] must be {expected}{size}" + (f" ({note})" if note else "")
        raise ValueError(f"{must}, got {name} of shape {tuple(x.shape)}")


def require_same_dtype(x: torch.Tensor, name: str, ref: torch.Tensor, ref_name: str) -> None:
    if x.dtype != ref.dtype:
        raise TypeError(
            f"{name} has dtype {x.dtype} but {ref_name} has dtype {ref.dtype}; "
            f"use one dtype for both (e.g. {name}.to({ref_name}.dtype))"
        )


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


def require_last_size(x, name: str, size: int, size_name: str) -> torch.Tensor:
    """A tensor whose last axis has ``size`` entries (a layer's input: ``size`` is the layer's ``size_name``)."""
    require_tensor(x, name)
    if x.dim() == 0 or x.shape[-1] != size:
        raise ValueError(
            f"{name} must have size {size_name} = {size} in its last axis (B, T, {size}), got shape {tuple(x.shape)}"
        )
    return x


def require_feature_size(x: torch.Tensor, name: str, meaning: str) -> None:
    """A last axis (the size D of queries and keys) of at least 1: a dot product of nothing scores 0 / sqrt(0)."""
    if x.shape[-1] == 0:
        raise ValueError(f"{name} must have a last axis of size D >= 1 {meaning}, got shape {tuple(x.shape)}")


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


def require_mask(mask, name: str = "mask") -> torch.Tensor:
    """A bool tensor, ``True`` = may attend (its shape is the caller's to check)."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"{name} must be a bool tensor (True = may attend), got {got}")
    return mask


def _require_int_tensor(x, name: str, example: str) -> torch.Tensor:
    require_tensor(x, name)
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(
            f"{name} must be an integer tensor (e.g. {example}), got {x.dtype}; convert it with {name}.long()"
        )
    return x


def require_valid_lens(valid_lens, num_keys: int, leading: tuple[int, ...], name: str = "valid_lens") -> int:
    """valid_lens: integer tensor of shape ``leading[:1]`` (B,) or ``leading`` (B, Q), values in [0, K].

    Returns the shortest length (``num_keys`` when there is none), so that callers know without another pass
    whether some row has nothing to attend to. On the ``meta`` device, where there are no values, ``num_keys``.
    """
    _require_int_tensor(valid_lens, name, "torch.tensor([2, 3])")
    allowed = [leading[:1], leading] if len(leading) > 1 else [leading]
    if tuple(valid_lens.shape) not in allowed:
        wanted = " or ".join(f"{s}" for s in allowed)
        raise ValueError(
            f"{name} must have shape {wanted} (one length per sequence, or per query), "
            f"got shape {tuple(valid_lens.shape)}"
        )
    if not valid_lens.numel() or valid_lens.device.type == "meta":
        return num_keys
    shortest, longest = (int(x) for x in torch.aminmax(valid_lens))  # one pass for both ends
    if shortest < 0 or longest > num_keys:
        bad = valid_lens[(valid_lens < 0) | (valid_lens > num_keys)][0]
        raise ValueError(f"{name} must lie in [0, {num_keys}] (the number of keys), got {int(bad)}")
    return shortest


def require_qkv(queries, keys, values, same_size: bool = True) -> None:
    """Batched queries (B, Q, D), keys (B, K, D) and values (B, K, V): floating, one dtype, finite.

    With ``same_size=False`` (additive attention) queries and keys may differ in their last size.
    """
    for name, t, meaning in (
        ("queries", queries, "(B, Q, D)"),
        ("keys", keys, "(B, K, D)"),
        ("values", values, "(B, K, V)"),
    ):
        require_float(t, name)
        require_rank(t, name, (3,), meaning)
    require_same_dtype(keys, "keys", queries, "queries")
    require_same_dtype(values, "values", queries, "queries")
    if not (queries.shape[0] == keys.shape[0] == values.shape[0]):
        raise ValueError(
            "queries, keys and values must share the batch size B, got "
            f"queries {tuple(queries.shape)}, keys {tuple(keys.shape)}, values {tuple(values.shape)}"
        )
    if keys.shape[1] != values.shape[1]:
        raise ValueError(
            f"values must have one row per key: values.shape[1] must be K = {keys.shape[1]} "
            f"(keys {tuple(keys.shape)}), got values {tuple(values.shape)}"
        )
    if same_size and queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"queries and keys must have the same size D for a dot product, got queries "
            f"{tuple(queries.shape)} (D = {queries.shape[-1]}) and keys {tuple(keys.shape)} "
            f"(D = {keys.shape[-1]}); use additive attention for different sizes"
        )
    if same_size:
        require_feature_size(queries, "queries", "(B, Q, D)")
    for name, t in (("queries", queries), ("keys", keys), ("values", values)):
        require_finite(t, name)


def require_tokens(tokens, name: str, vocab_size: int) -> torch.Tensor:
    """A (B, T) int64 tensor of ids in ``[0, vocab_size)``."""
    require_tensor(tokens, name)
    if tokens.dtype != torch.long:
        raise TypeError(f"{name} must be a (B, T) int64 tensor of token ids, got {tokens.dtype}")
    if tokens.ndim != 2:
        raise ValueError(f"{name} must be a (B, T) int64 tensor of token ids, got shape {tuple(tokens.shape)}")
    if tokens.numel() and tokens.device.type != "meta" and (tokens.min() < 0 or tokens.max() >= vocab_size):
        raise ValueError(
            f"{name} must hold token ids in [0, {vocab_size}), got values {int(tokens.min())}..{int(tokens.max())}"
        )
    return tokens


def require_source(src, src_len, vocab_size: int) -> None:
    """``src`` (B, S) token ids and ``src_len`` (B,) int64 lengths in ``[1, S]``."""
    require_tokens(src, "src", vocab_size)
    require_tensor(src_len, "src_len")
    if src_len.dtype != torch.long:
        raise TypeError(f"src_len must be an int64 tensor of shape ({src.shape[0]},), got {src_len.dtype}")
    if tuple(src_len.shape) != src.shape[:1]:
        raise ValueError(
            f"src_len must be an int64 tensor of shape ({src.shape[0]},), got shape {tuple(src_len.shape)}"
        )
    if src_len.numel() and src_len.device.type != "meta" and (src_len.min() < 1 or src_len.max() > src.shape[1]):
        raise ValueError(f"src_len must lie in [1, S = {src.shape[1]}], got {src_len.tolist()}")


def require_target(tgt_in, src: torch.Tensor, vocab_size: int) -> None:
    """``tgt_in`` (B, T) token ids with the same batch size B as ``src``."""
    require_tokens(tgt_in, "tgt_in", vocab_size)
    if tgt_in.shape[0] != src.shape[0]:
        raise ValueError(f"tgt_in must have one row per source: shape ({src.shape[0]}, T), got {tuple(tgt_in.shape)}")


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


def require_positions(positions, length: int, name: str = "positions") -> torch.Tensor:
    """positions: an integer tensor of shape (L,) = (``length``,) with values >= 0 (RoPE's token positions)."""
    _require_int_tensor(positions, name, "torch.arange(L)")
    if tuple(positions.shape) != (length,):
        raise ValueError(
            f"{name} must have shape (L,) = ({length},), one position per row of x, got shape {tuple(positions.shape)}"
        )
    if positions.numel() and positions.device.type != "meta" and int(positions.min()) < 0:
        raise ValueError(f"{name} must be non-negative integers, got {int(positions.min())}")
    return positions


def require_min_rank(x: torch.Tensor, name: str, low: int, meaning: str) -> torch.Tensor:
    """Check ``x.ndim >= low``; ``meaning`` spells the expected shape, e.g. '(..., L, D)'."""
    require_tensor(x, name)
    if x.ndim < low:
        raise ValueError(
            f"{name} must have shape {meaning} (at least {low}-D), got shape {tuple(x.shape)} ({x.ndim}-D)"
        )
    return x


def require_keywords(value, name: str, what: str, example: str) -> dict:
    """A dict of keyword argument name -> ``what`` (a slider panel's ``controls`` or ``fixed``), keyed by names."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict of argument name -> {what}, got {type(value).__name__}; e.g. {example}")
    for key in value:
        if not isinstance(key, str) or not key.isidentifier():
            raise TypeError(f"{name} must be keyed by argument names (str), got {key!r}")
    return dict(value)
