"""Input checks of tensors (private): types, dtypes, ranks, sizes, masks, lengths and token ids, and the small
specs of a few topic functions built from them (a curve, Lagrange nodes, heads to split).

``attn_course._validate`` re-exports every name here, next to the checks of plain values (``values``) and
of queries, keys and values together; a helper imports its checks from there.

One rule everywhere: a wrong type raises ``TypeError``; a wrong value or shape raises ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from .values import require_divisible, require_int, require_kv_heads


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


def require_not_empty(x: torch.Tensor, name: str, meaning: str) -> torch.Tensor:
    """At least one entry: every size of ``meaning`` >= 1."""
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty: shape {meaning} with every size >= 1, got {tuple(x.shape)}")
    return x


def require_nonnegative(x: torch.Tensor, name: str, reason: str) -> torch.Tensor:
    """Every entry >= 0; ``reason`` says why, e.g. "x^0.8 has no real value below 0"."""
    if x.numel() and x.device.type != "meta" and bool((x < 0).any()):
        raise ValueError(f"{name} must be >= 0 ({reason}), got {float(x.min())}")
    return x


def require_mask_fits(mask, shape: torch.Size, name: str = "mask") -> torch.Tensor:
    """A bool mask (True = may attend) that broadcasts to the scores' ``shape`` (B, Q, K)."""
    require_mask(mask, name)
    try:
        fits = torch.broadcast_shapes(mask.shape, shape) == shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            f"{name} must broadcast to the scores' shape (B, Q, K) = {tuple(shape)}, got {tuple(mask.shape)}"
        )
    return mask


def require_distinct_nodes(nodes: torch.Tensor, name: str = "nodes") -> torch.Tensor:
    """At least one node and no two equal (a Lagrange basis divides by every difference of nodes)."""
    if nodes.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one node, got 0")
    same = (nodes.unsqueeze(1) - nodes.unsqueeze(0)) == 0  # (N, N): x_i - x_j == 0
    same.fill_diagonal_(False)
    if same.any():
        i, j = (int(t) for t in torch.nonzero(same)[0])
        raise ValueError(f"{name} must be distinct, got {name}[{i}] == {name}[{j}] == {float(nodes[i])}")
    return nodes


def require_curve(x, f) -> None:
    """A curve on a grid: ``x`` (N,) strictly increasing, ``f`` (N,) of its dtype, N >= 2."""
    require_float(x, "x")
    require_float(f, "f")
    require_same_dtype(f, "f", x, "x")
    require_rank(x, "x", (1,), "(N,)")
    if f.shape != x.shape or x.shape[0] < 2:
        raise ValueError(f"x and f must both have shape (N,) with N >= 2, got {tuple(x.shape)} and {tuple(f.shape)}")
    if not (x[1:] > x[:-1]).all():
        raise ValueError("x must be strictly increasing")


def require_head_split(x, num_heads, meaning: str, dim: int) -> None:
    """x (3-D, ``meaning``) whose axis ``dim`` splits into ``num_heads`` equal parts."""
    require_float(x, "x")
    require_rank(x, "x", (3,), meaning)
    require_int(num_heads, "num_heads")
    require_divisible(x.shape[dim], f"x.shape[{dim}]", num_heads, "num_heads")


def require_kv_head_tensor(x, num_heads) -> None:
    """x (B, G, K, dh) with G >= 1 key/value heads, of which ``num_heads`` is a multiple."""
    require_float(x, "x")
    require_rank(x, "x", (4,), "(B, G, K, dh)")
    if x.shape[1] == 0:
        raise ValueError(f"x must hold at least one key/value head: shape (B, G, K, dh), G >= 1, got {tuple(x.shape)}")
    require_kv_heads(num_heads, x.shape[1])


def require_row_scores(scores, block_size) -> None:
    """``scores`` (..., K), at least 1-D, floating point, finite and not empty; ``block_size`` an integer >= 1
    (``online_softmax``)."""
    require_float(scores, "scores")
    require_int(block_size, "block_size", 1)
    if scores.ndim < 1:
        raise ValueError(f"scores must have shape (..., K) (1-D or more), got shape {tuple(scores.shape)} (0-D)")
    require_not_empty(scores, "scores", "(..., K)")
    require_finite(scores, "scores")


def require_no_overflow(row_max: torch.Tensor, sees_a_key: torch.Tensor, dtype: torch.dtype) -> None:
    """Every row that sees a key has a finite maximum score, unless Q K^T / sqrt(D) overflowed ``dtype``."""
    if row_max.device.type != "meta" and not bool(torch.isfinite(row_max[..., sees_a_key]).all()):
        raise ValueError(
            f"scores must be finite, got NaN or infinity: Q K^T / sqrt(D) overflowed {dtype} "
            "(scale the queries or keys down)"
        )


def require_kernel_weights(k_values, shape: torch.Size) -> None:
    """What a kernel function returned: a tensor shaped like u, of weights >= 0 (or +inf), no NaN."""
    if not isinstance(k_values, torch.Tensor) or k_values.shape != shape:
        got = tuple(k_values.shape) if isinstance(k_values, torch.Tensor) else type(k_values).__name__
        raise ValueError(f"kernel(u) must return a tensor shaped like u {tuple(shape)}, got {got}")
    if (k_values < 0).any() or torch.isnan(k_values).any():
        raise ValueError("kernel(u) must return weights >= 0 (or +inf); got a negative value or NaN")


def require_lagrange_inputs(x, nodes) -> None:
    """x (X,) and nodes (N,) of one floating dtype; at least one node, all distinct."""
    require_float(x, "x")
    require_float(nodes, "nodes")
    require_same_dtype(nodes, "nodes", x, "x")
    require_rank(x, "x", (1,), "(X,)")
    require_rank(nodes, "nodes", (1,), "(N,)")
    require_distinct_nodes(nodes)


def require_masking(shape: torch.Size, valid_lens=None, mask=None) -> None:
    """What may mask scores of ``shape`` (B, Q, K): ``valid_lens`` None, (B,) or (B, Q) in [0, K]; ``mask`` None or
    bool, broadcastable to (B, Q, K)."""
    if valid_lens is not None:
        require_valid_lens(valid_lens, shape[2], (shape[0], shape[1]))
    if mask is not None:
        require_mask_fits(mask, shape)


def require_scores(scores) -> None:
    """``scores`` (B, Q, K), floating point and finite."""
    require_float(scores, "scores")
    require_rank(scores, "scores", (3,), "(B, Q, K)")
    require_finite(scores, "scores")
