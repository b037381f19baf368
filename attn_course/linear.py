"""Linear attention: the softmax kernel replaced by features, its recurrent and chunked forms, and decay (notebook 12).

Attention as kernel regression (notebook 01) weighs value ``v_j`` by ``kappa(q, k_j) / sum_j kappa(q, k_j)``. When the
kernel is a dot product of features, ``kappa(q, k) = phi(q) . phi(k)``, the sums can be taken before the query comes:

    o_i = phi(q_i)^T S / (phi(q_i)^T z),   S = sum_j phi(k_j) v_j^T  (F, V),   z = sum_j phi(k_j)  (F,)

so the cost grows like ``N F V`` instead of ``N^2 D`` (Katharopoulos et al., 2020, "Transformers are RNNs"). Causal
attention keeps running sums: ``S_t = gamma S_{t-1} + phi(k_t) v_t^T``, ``z_t = gamma z_{t-1} + phi(k_t)``, a
recurrent network whose state does not grow (``gamma = 1``; a fixed ``gamma < 1`` decays S as RetNet does, though
RetNet keeps no normaliser z: it normalises each head's output with GroupNorm). The delta rule, which writes the error
instead of the value, is in ``delta_rule``.

The feature map phi is the argument ``feature_map`` of every form: a name (``"elu"``, ``"relu"``) or a function;
``apply_feature_map(x, kind)`` computes ``phi(x)`` for each kind of ``FEATURE_MAPS``.

A zero normaliser (``phi(q)^T z = 0``: for example ``"relu"`` features of all-zero keys, or a query that sees no key)
gives an output of zeros, as a softmax row with nothing to attend to does in ``masked_softmax``.

Shapes: queries (B, Q, D), keys (B, K, D), values (B, K, V); F is the feature size (D for ``"elu"`` and ``"relu"``,
``num_features`` for ``"positive_random"``); T = Q = K for the recurrent and chunked forms. float16 and bfloat16
are computed in float32 and returned in their own dtype. Inputs are never modified.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from ._validate import LOW_PRECISION
from ._validate.rotary_linear import (
    require_feature_args,
    require_features,
    require_finite_output,
    require_finite_result,
    require_linear_inputs,
)

__all__ = [
    "apply_feature_map",
    "linear_attention",
    "linear_attention_weights",
    "linear_attention_rnn",
    "linear_attention_chunked",
]

FEATURE_MAPS = ("elu", "relu", "positive_random")  # the kinds of apply_feature_map


def _work(x: torch.Tensor) -> torch.Tensor:
    return x.float() if x.dtype in LOW_PRECISION else x


def apply_feature_map(
    x: torch.Tensor, kind: str = "elu", *, num_features: int | None = None, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Features ``phi(x)`` with ``phi(q) . phi(k)`` as a kernel: (..., D) -> (..., F).

    Args:
        x: (..., D) floating point, finite.
        kind: ``"elu"``: ``elu(x) + 1``, positive, F = D (Katharopoulos et al., 2020); ``"relu"``: ``max(x, 0)``,
            F = D; ``"positive_random"``: positive random features ``exp(w_r . x - |x|^2 / 2) / sqrt(m)`` for ``m``
            Gaussian vectors ``w_r ~ N(0, I_D)``, drawn independently and not of unit length (the features of
            Performer's FAVOR+, Choromanski et al., 2021, without its orthogonal draws), whose dot products estimate
            ``exp(q . k)`` without bias. Scale queries and keys by ``D ** -0.25`` first for the softmax's
            ``exp(q . k / sqrt(D))``.
        num_features: m, with ``"positive_random"`` only (required there).
        generator: the ``torch.Generator`` the vectors ``w_r`` are drawn from (``"positive_random"`` only, required):
            queries and keys need the same ``w_r``, so give each call a generator in the same state. A row with
            ``|x|^2 / 2`` far above every ``w . x`` (``|x|`` much larger than ``sqrt(D)``) has features that all
            underflow to 0, so its normaliser is 0 and attention gives it zeros: scale such inputs down.

    Returns:
        (..., F) of the dtype of ``x`` (float16/bfloat16 computed in float32).
    """
    require_feature_args(x, kind, num_features, generator, FEATURE_MAPS)
    work = _work(x)
    if kind != "positive_random":
        phi = F.elu(work) + 1 if kind == "elu" else F.relu(work)  # (..., D)
        return phi.to(x.dtype)
    w = torch.randn(num_features, x.shape[-1], generator=generator, dtype=work.dtype).to(x.device)  # (m, D): w_r
    exponent = work @ w.T - (work * work).sum(-1, keepdim=True) / 2  # (..., D) x (D, m) -> (..., m)
    phi = torch.exp(exponent) / num_features**0.5  # (..., m)
    overflow = (
        f"x is too large for kind='positive_random': exp(w . x - |x|^2 / 2) overflowed {work.dtype}; scale x down"
    )
    return require_finite_result(phi, overflow).to(x.dtype)


def _features(x: torch.Tensor, feature_map, name: str) -> torch.Tensor:
    """``phi(x)`` for a kind name ("elu", "relu") or a function (..., D) -> (..., F) such as seeded random features."""
    if callable(feature_map):
        return _work(require_features(feature_map(x), x, name).to(x.dtype))
    return _work(apply_feature_map(x, feature_map))


def _read(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """numerator (..., V) / denominator (...,), zeros where the denominator is 0 (nothing seen, or zero features)."""
    safe = torch.where(denominator == 0, torch.ones_like(denominator), denominator)
    return torch.where((denominator == 0).unsqueeze(-1), 0.0, numerator / safe.unsqueeze(-1))


def linear_attention_weights(
    queries: torch.Tensor,
    keys: torch.Tensor,
    feature_map: str | Callable = "elu",
    causal: bool = False,
    decay: float = 1.0,
) -> torch.Tensor:
    """The weights linear attention puts on each key, computed directly (O(Q K)): to look at, and to test against.

    ``w_ij = gamma^(p_i - j) phi(q_i) . phi(k_j) / sum_j' gamma^(p_i - j') phi(q_i) . phi(k_j')`` over the keys
    ``j <= p_i`` that ``causal_mask(Q, K)`` allows (``p_i = i + K - Q``), or over all keys when not ``causal``.

    Args:
        queries: (B, Q, D); keys: (B, K, D); one floating dtype, finite.
        feature_map: ``"elu"``, ``"relu"`` or a function (..., D) -> (..., F).
        causal: bottom-right causal mask, as ``causal_mask``.
        decay: gamma in (0, 1]; needs ``causal`` when < 1 (the distance back is then defined).

    Returns:
        (B, Q, K) weights of the dtype of ``queries``; each row sums to 1, or is all zeros when its normaliser is 0.
    """
    gamma = require_linear_inputs(queries, keys, keys, feature_map, causal=causal, decay=decay)
    phi_q, phi_k = _features(queries, feature_map, "queries"), _features(keys, feature_map, "keys")
    scores = phi_q @ phi_k.transpose(-2, -1)  # (B, Q, F) x (B, F, K) -> (B, Q, K)
    num_q, num_k = queries.shape[1], keys.shape[1]
    if causal:
        back = (torch.arange(num_q, device=queries.device)[:, None] + num_k - num_q) - torch.arange(
            num_k, device=queries.device
        )  # (Q, K): how far key j lies behind query i
        factor = torch.where(back >= 0, gamma ** back.clamp(min=0).to(scores.dtype), 0.0)  # (Q, K)
        scores = scores * factor
    total = scores.sum(-1, keepdim=True)  # (B, Q, 1)
    weights = torch.where(total == 0, 0.0, scores / torch.where(total == 0, 1.0, total))
    return require_finite_output(weights, queries.dtype)


def linear_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    feature_map: str | Callable = "elu",
    causal: bool = False,
) -> torch.Tensor:
    """``o_i = phi(q_i)^T S / (phi(q_i)^T z)`` with ``S = sum_j phi(k_j) v_j^T`` and ``z = sum_j phi(k_j)``.

    The keys and values are folded into S and z first, so the (Q, K) matrix is never formed: O((Q + K) F V).

    Args:
        queries: (B, Q, D); keys: (B, K, D); values: (B, K, V); one floating dtype, finite.
        feature_map: ``"elu"`` (elu + 1), ``"relu"``, or a function (..., D) -> (..., F) applied to queries and keys
            (for random features: ``lambda x: apply_feature_map(x, "positive_random", num_features=m,
            generator=<a freshly seeded one>)``).
        causal: the sums run over the keys that ``causal_mask(Q, K)`` allows (key ``j <= i + K - Q``), as running
            sums over the keys; a query that sees no key gives zeros.

    Returns:
        (B, Q, V) of the dtype of ``queries``; zeros where the normaliser is 0 (see the module docstring).
    """
    require_linear_inputs(queries, keys, values, feature_map, causal=causal)
    phi_q, phi_k = _features(queries, feature_map, "queries"), _features(keys, feature_map, "keys")  # (B, Q/K, F)
    v = _work(values)
    if not causal:
        state = phi_k.transpose(-2, -1) @ v  # (B, F, K) x (B, K, V) -> (B, F, V)
        norm = phi_k.sum(1)  # (B, F)
        out = _read(phi_q @ state, (phi_q * norm.unsqueeze(1)).sum(-1))  # (B, Q, V)
        return require_finite_output(out, queries.dtype)
    num_q, num_k = queries.shape[1], keys.shape[1]
    states = torch.cumsum(phi_k.unsqueeze(-1) * v.unsqueeze(-2), dim=1)  # (B, K, F, V): S after each key
    norms = torch.cumsum(phi_k, dim=1)  # (B, K, F): z after each key
    last = torch.arange(num_q, device=queries.device) + num_k - num_q  # (Q,): the last key each query sees
    seen = last.clamp(min=0)
    state, norm = states[:, seen], norms[:, seen]  # (B, Q, F, V), (B, Q, F)
    numerator = (phi_q.unsqueeze(-1) * state).sum(-2)  # (B, Q, V)
    denominator = (phi_q * norm).sum(-1) * (last >= 0)  # (B, Q): 0 for a query before every key
    return require_finite_output(_read(numerator, denominator), queries.dtype)


def linear_attention_rnn(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    feature_map: str | Callable = "elu",
    decay: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Causal linear attention one step at a time: a recurrent network with a (F, V) state.

    For t = 0 .. T - 1: ``S = gamma S + phi(k_t) v_t^T``, ``z = gamma z + phi(k_t)``, then
    ``o_t = S^T phi(q_t) / (z^T phi(q_t))`` (zeros where the normaliser is 0). With ``decay=1`` the outputs equal
    ``linear_attention(..., causal=True)``; with ``decay < 1`` a key ``n`` steps back counts ``gamma^n`` times.

    Args:
        queries: (B, T, D); keys: (B, T, D); values: (B, T, V); one floating dtype, finite.
        feature_map: as in ``linear_attention``.
        decay: gamma in (0, 1], applied to S and z before each update (a fixed decay, as RetNet's per head, Sun et
            al., 2023; RetNet decays S alone, with no z, and normalises its output with GroupNorm).

    Returns:
        ``(outputs (B, T, V), S (B, F, V), z (B, F))``, the state after the last step; the dtype of ``queries``.
    """
    gamma = require_linear_inputs(queries, keys, values, feature_map, decay=decay, steps=True)
    phi_q, phi_k = _features(queries, feature_map, "queries"), _features(keys, feature_map, "keys")  # (B, T, F)
    v = _work(values)
    batch, steps, size = phi_k.shape
    state = phi_k.new_zeros(batch, size, v.shape[-1])  # (B, F, V)
    norm = phi_k.new_zeros(batch, size)  # (B, F)
    outputs = []
    for t in range(steps):
        state = gamma * state + phi_k[:, t, :, None] * v[:, t, None, :]  # (B, F, 1) * (B, 1, V) -> (B, F, V)
        norm = gamma * norm + phi_k[:, t]  # (B, F)
        q = phi_q[:, t]  # (B, F)
        outputs.append(_read((q.unsqueeze(-1) * state).sum(1), (q * norm).sum(-1)))  # (B, V)
    out = torch.stack(outputs, dim=1) if outputs else v.new_zeros(batch, 0, v.shape[-1])  # (B, T, V)
    return tuple(require_finite_output(t, queries.dtype) for t in (out, state, norm))  # (B, T, V), (B, F, V), (B, F)


def linear_attention_chunked(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    chunk_size: int,
    feature_map: str | Callable = "elu",
) -> torch.Tensor:
    """Causal linear attention in chunks: parallel inside a chunk, recurrent across chunks.

    For each chunk of ``c`` steps: the chunk's own keys through a masked (c, c) product (as softmax attention, with
    ``phi(q) . phi(k)`` for scores), the earlier chunks through the state S and z they left; then the chunk is
    folded into S and z. It equals ``linear_attention(..., causal=True)`` and ``linear_attention_rnn``.

    Args:
        queries, keys, values: (B, T, D), (B, T, D), (B, T, V), as ``linear_attention_rnn``.
        chunk_size: c, an integer >= 1 (the last chunk may be shorter).
        feature_map: as in ``linear_attention``.

    Returns:
        (B, T, V) of the dtype of ``queries``.
    """
    require_linear_inputs(queries, keys, values, feature_map, steps=True, chunk_size=chunk_size)
    phi_q, phi_k = _features(queries, feature_map, "queries"), _features(keys, feature_map, "keys")  # (B, T, F)
    v = _work(values)
    batch, steps, size = phi_k.shape
    state = phi_k.new_zeros(batch, size, v.shape[-1])  # (B, F, V): the chunks before this one
    norm = phi_k.new_zeros(batch, size)  # (B, F)
    out = v.new_zeros(batch, steps, v.shape[-1])  # (B, T, V)
    for start in range(0, steps, chunk_size):
        q, k, vc = (t[:, start : start + chunk_size] for t in (phi_q, phi_k, v))  # (B, c, F), (B, c, F), (B, c, V)
        inside = (q @ k.transpose(-2, -1)).tril()  # (B, c, F) x (B, F, c) -> (B, c, c), causal within the chunk
        numerator = q @ state + inside @ vc  # (B, c, V): earlier chunks + this one
        denominator = q @ norm.unsqueeze(-1) + inside.sum(-1, keepdim=True)  # (B, c, 1)
        out[:, start : start + chunk_size] = _read(numerator, denominator.squeeze(-1))
        state = state + k.transpose(-2, -1) @ vc  # (B, F, c) x (B, c, V) -> (B, F, V)
        norm = norm + k.sum(1)  # (B, F)
    return require_finite_output(out, queries.dtype)
