"""Input checks of RoPE and ALiBi (``rotary``), context extension (``extrapolation``), linear attention (``linear``)
and the delta rule (``delta_rule``) (private); see ``models``.
"""

from __future__ import annotations

import math

import torch

from . import (
    require_bool,
    require_choice,
    require_finite,
    require_float,
    require_float_dtype,
    require_int,
    require_min_rank,
    require_number,
    require_positions,
    require_qkv,
    require_rank,
    require_same_dtype,
)

# A private module: every helper imports the checks it needs by name, so it has no __all__.

ROPE_SCALINGS = ("linear", "ntk", "yarn", "parts")  # the kinds of RoPE's ``scaling``
YARN_RULES = ("index", "turns")  # yarn_ramp: linear in the pair index (the code), or in the turns (the paper)


def require_even(value: int, name: str, why: str) -> int:
    """An even integer (``why`` says what comes in pairs)."""
    if value % 2:
        raise ValueError(f"{name} must be even ({why}), got {value}")
    return value


def require_finite_result(out: torch.Tensor, message: str) -> torch.Tensor:
    """A result computed from finite input that must be finite too (never a NaN from finite input)."""
    if out.numel() and out.device.type != "meta" and not bool(torch.isfinite(out).all()):
        raise ValueError(message)
    return out


# ---- RoPE and ALiBi (rotary), context extension (extrapolation) ------------------------------------------------------


def require_scaling(scaling) -> tuple | None:
    """None, ``("linear", s)``, ``("ntk", s)``, ``("yarn", s, original_len)`` or ``("parts", s, ramp, attention)``.

    s >= 1, original_len >= 1; ``ramp`` a sequence (or 1-D tensor) of numbers in [0, 1], one per pair, returned as a
    tuple of floats; ``attention`` > 0.
    """
    if scaling is None:
        return None
    wanted = 'None, ("linear", s), ("ntk", s), ("yarn", s, original_len) or ("parts", s, ramp, attention)'
    if not isinstance(scaling, tuple) or not scaling:
        raise TypeError(f"scaling must be {wanted}, got {scaling!r} ({type(scaling).__name__})")
    kind = scaling[0]
    if not isinstance(kind, str):
        raise TypeError(f"scaling[0] must be one of {list(ROPE_SCALINGS)}, got {kind!r} ({type(kind).__name__})")
    if kind not in ROPE_SCALINGS:
        raise ValueError(f"scaling[0] must be one of {list(ROPE_SCALINGS)}, got {kind!r}")
    size = {"yarn": 3, "parts": 4}.get(kind, 2)
    if len(scaling) != size:
        raise ValueError(f"scaling must be {wanted}: {kind!r} takes {size} entries, got {len(scaling)}: {scaling!r}")
    factor = require_number(scaling[1], "scaling[1] (the factor s)", ">= 1", lambda v: v >= 1)
    if kind == "yarn":
        return (kind, factor, require_int(scaling[2], "scaling[2] (original_len)"))
    if kind == "parts":
        ramp = _require_ramp(scaling[2])
        attention = require_number(scaling[3], "scaling[3] (the attention factor)", "> 0", lambda v: v > 0)
        return (kind, factor, ramp, attention)
    return (kind, factor)


def _require_ramp(ramp) -> tuple[float, ...]:
    """``("parts", s, ramp, attention)``'s ramp: a 1-D tensor, list or tuple of numbers in [0, 1], as floats."""
    name = "scaling[2] (the ramp, one number per pair)"
    if isinstance(ramp, torch.Tensor):
        if ramp.ndim != 1 or ramp.is_complex():
            raise ValueError(f"{name} must be a 1-D real tensor, got shape {tuple(ramp.shape)} ({ramp.dtype})")
        ramp = ramp.tolist()
    if not isinstance(ramp, (list, tuple)) or not ramp:
        raise TypeError(f"{name} must be a non-empty list, tuple or 1-D tensor of numbers, got {type(ramp).__name__}")
    return tuple(require_number(r, f"{name}[{i}]", "in [0, 1]", lambda v: 0 <= v <= 1) for i, r in enumerate(ramp))


def _require_head_dim(head_dim) -> int:
    require_int(head_dim, "head_dim", 2)
    return require_even(head_dim, "head_dim", "pairs of columns are rotated")


def _require_base(base) -> float:
    return require_number(base, "base", "> 1", lambda v: v > 1)


def require_ramp_args(head_dim, original_len, base, rule) -> tuple[int, int, float, str]:
    """yarn_ramp's arguments: an even head_dim >= 2, original_len >= 1, base > 1, a rule of ``YARN_RULES``."""
    _require_head_dim(head_dim)
    require_int(original_len, "original_len")
    base = _require_base(base)
    return head_dim, original_len, base, require_choice(rule, "rule", YARN_RULES)


def require_frequency_args(head_dim, base, scaling) -> tuple[float, tuple | None]:
    """rope_frequencies' arguments: an even head_dim >= 2 (>= 4 for "ntk", D/2 ramp entries for "parts"), base > 1
    and a scaling; returns ``(base, scaling)`` as floats and tuples."""
    _require_head_dim(head_dim)
    base, scaling = _require_base(base), require_scaling(scaling)
    kind = None if scaling is None else scaling[0]
    if kind == "ntk" and head_dim < 4:
        raise ValueError(f'scaling ("ntk", s) needs head_dim >= 4 (its exponent is D / (D - 2)), got {head_dim}')
    if kind == "parts" and len(scaling[2]) != head_dim // 2:
        raise ValueError(
            f'scaling ("parts", s, ramp, attention): ramp must hold one number per pair, D/2 = {head_dim // 2}, '
            f"got {len(scaling[2])}"
        )
    return base, scaling


def require_ntk_base(new_base: float, base: float, factor: float, head_dim: int) -> float:
    """NTK-aware scaling's new base, finite."""
    if not math.isfinite(new_base):
        raise ValueError(
            f'scaling ("ntk", s): the new base base * s^(D / (D - 2)) overflows for base = {base}, s = {factor}, '
            f"D = {head_dim}; use a smaller factor s"
        )
    return new_base


def require_rope_input(x, positions, base) -> float:
    """apply_rope's input: floating (..., L, D) with an even D >= 2, finite; (L,) positions; base > 1."""
    require_float(x, "x")
    require_min_rank(x, "x", 2, "(..., L, D)")
    size = x.shape[-1]
    if size < 2 or size % 2:
        raise ValueError(
            f"x must have an even last size D >= 2 (pairs of columns are rotated), got shape {tuple(x.shape)} "
            f"(D = {size})"
        )
    require_positions(positions, x.shape[-2])
    base = _require_base(base)
    require_finite(x, "x")
    return base


def require_alibi_args(num_heads, q_len, k_len, dtype) -> None:
    """alibi_bias's sizes: H >= 1 heads, Q >= 1 queries, K >= Q keys; a floating dtype."""
    require_int(num_heads, "num_heads")
    require_int(q_len, "q_len")
    require_int(k_len, "k_len", q_len, low_name="q_len")
    require_float_dtype(dtype)


# ---- linear attention (linear) and the delta rule (delta_rule) -------------------------------------------------------


def require_feature_args(x, kind: str, num_features, generator, kinds) -> None:
    """apply_feature_map's arguments: floating, finite x (..., D); a kind of ``kinds``; ``num_features`` and a
    ``generator`` for ``"positive_random"`` (and D >= 1), neither for the others."""
    require_float(x, "x")
    require_choice(kind, "kind", kinds)
    if x.ndim < 1:
        raise ValueError(f"x must have shape (..., D) (1-D or more), got shape {tuple(x.shape)} (0-D)")
    if kind != "positive_random":
        if num_features is not None or generator is not None:
            raise ValueError(f"num_features and generator are for kind='positive_random' only, got kind={kind!r}")
        require_finite(x, "x")
        return
    require_int(num_features, "num_features")
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator (kind='positive_random' draws its random vectors from it), got "
            f"{type(generator).__name__}; e.g. torch.Generator().manual_seed(0)"
        )
    if x.shape[-1] == 0:
        raise ValueError(
            f"x must have a last axis of size D >= 1 for kind='positive_random', got shape {tuple(x.shape)}"
        )
    require_finite(x, "x")


def require_feature_map(feature_map) -> None:
    """A function (..., D) -> (..., F), or ``"elu"`` / ``"relu"`` (``"positive_random"`` needs its random vectors)."""
    if callable(feature_map):
        return
    if feature_map == "positive_random":
        raise ValueError(
            "feature_map='positive_random' needs its random vectors: pass a function, e.g. lambda x: "
            "ac.apply_feature_map(x, 'positive_random', num_features=64, generator=torch.Generator().manual_seed(0)), "
            "got 'positive_random'"
        )
    require_choice(feature_map, "feature_map", ("elu", "relu"))


def require_features(phi, x: torch.Tensor, name: str) -> torch.Tensor:
    """What a feature_map function returned for ``name`` (..., D): a tensor (..., F)."""
    if not isinstance(phi, torch.Tensor) or phi.shape[:-1] != x.shape[:-1]:
        got = tuple(phi.shape) if isinstance(phi, torch.Tensor) else type(phi).__name__
        raise ValueError(f"feature_map must map {name} (..., D) to features (..., F), got {got} for {name}")
    return phi


def require_decay(decay, causal: bool | None = None) -> float:
    """gamma in (0, 1]; with ``causal`` given (True/False), gamma < 1 needs ``causal=True``."""
    gamma = require_number(decay, "decay", "in (0, 1]", lambda g: 0 < g <= 1)
    if causal is not None:
        require_bool(causal, "causal")
        if gamma < 1 and not causal:
            raise ValueError(f"decay < 1 needs causal=True (a key's distance back from the query), got decay={gamma}")
    return gamma


def require_linear_inputs(
    queries, keys, values, feature_map, *, causal=None, decay=1.0, steps=False, chunk_size=None
) -> float:
    """Linear attention's inputs: batched queries, keys and values (one per step, Q = K = T, with ``steps``);
    ``causal`` a bool when given; gamma = ``decay`` in (0, 1], below 1 only with ``causal=True`` when ``causal`` is
    given; a ``chunk_size`` >= 1 when given; a feature map. Returns gamma."""
    (require_steps if steps else require_qkv)(queries, keys, values)
    gamma = require_decay(decay, causal)
    if chunk_size is not None:
        require_int(chunk_size, "chunk_size")
    require_feature_map(feature_map)
    return gamma


def require_finite_output(out: torch.Tensor, dtype: torch.dtype, what: str = "the features' dot products"):
    """``out`` in ``dtype``, or a ValueError when a sum overflowed (finite input so large that ``what`` is infinite):
    never a NaN from finite input."""
    overflow = f"{what} overflowed {dtype} (queries, keys or values too large); scale them down"
    return require_finite_result(out.to(dtype), overflow)


def require_steps(queries, keys, values) -> None:
    """Self-attention inputs of the recurrent forms: batched (B, T, D), (B, T, D), (B, T, V), Q = K = T."""
    require_qkv(queries, keys, values)
    if queries.shape[1] != keys.shape[1]:
        raise ValueError(
            f"queries and keys must have the same length T (one query per step), got queries "
            f"{tuple(queries.shape)} and keys {tuple(keys.shape)}"
        )


def require_delta_inputs(queries, keys, values, beta, alpha=None) -> None:
    """The delta rules' inputs: the recurrent forms' (B, T, .), ``beta`` (B, T) in [0, 1] in the dtype of queries, and
    the same for the gated rule's ``alpha``."""
    require_steps(queries, keys, values)
    require_gate(beta, "beta", queries, "strength")
    if alpha is not None:
        require_gate(alpha, "alpha", queries, "decay factor")


def require_chunked_delta_inputs(queries, keys, values, beta, chunk_size, alpha=None) -> None:
    """The chunked delta rule's inputs: the plain or gated rule's, and ``chunk_size`` a whole number >= 1."""
    require_delta_inputs(queries, keys, values, beta, alpha)
    require_int(chunk_size, "chunk_size")


def require_gate(gate, name: str, queries, what: str) -> None:
    """A gate ``name`` of shape (B, T), one number in [0, 1] per step, finite, in the dtype of ``queries``."""
    require_float(gate, name)
    require_rank(gate, name, (2,), "(B, T)")
    require_same_dtype(gate, name, queries, "queries")
    if tuple(gate.shape) != tuple(queries.shape[:2]):
        raise ValueError(
            f"{name} must have shape (B, T) = {tuple(queries.shape[:2])}, one {what} per step, "
            f"got shape {tuple(gate.shape)}"
        )
    require_finite(gate, name)
    if gate.numel() and bool(((gate < 0) | (gate > 1)).any()):
        bad = gate[(gate < 0) | (gate > 1)][0]
        raise ValueError(f"{name} must lie in [0, 1], got {float(bad)}")
