"""The delta rule: a linear-attention memory that overwrites what it stores for a key (notebook 12).

Linear attention (``linear``) adds ``phi(k_t) v_t^T`` to its state at every step, so a key written twice returns the
sum of its values. The delta rule (Widrow & Hoff, 1960; brought to linear Transformers by Schlag, Irie & Schmidhuber,
2021, DeltaNet) writes the error instead of the value:

    S_t = S_{t-1} + beta_t k_t (v_t - S_{t-1}^T k_t)^T,   o_t = S_t^T q_t

``gated_delta_rule`` decays the state by a gate ``alpha_t`` before each write (Gated DeltaNet), and
``delta_rule_chunked`` computes ``delta_rule`` a chunk of steps at a time, with one triangular solve per chunk.

Shapes: queries (B, T, D), keys (B, T, D), values (B, T, V), beta (B, T); the state S is (D, V). float16 and bfloat16
are computed in float32 and returned in their own dtype. Inputs are never modified.
"""

from __future__ import annotations

import torch

from ._validate import LOW_PRECISION
from ._validate.rotary_linear import require_chunked_delta_inputs, require_delta_inputs, require_finite_output

__all__ = ["delta_rule", "gated_delta_rule", "delta_rule_chunked"]


def delta_rule(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The delta rule: ``S_t = S_{t-1} + beta_t k_t (v_t - S_{t-1}^T k_t)^T``, ``o_t = S_t^T q_t``, S_0 = 0.

    ``S_{t-1}^T k_t`` is what the memory returns for ``k_t`` before the write; the rule stores the error, so with
    ``beta_t = 1`` and a unit key the memory returns ``v_t`` for ``k_t`` afterwards: a key written twice is
    overwritten, not summed. It is Widrow & Hoff's (1960) rule, one step of gradient descent on
    ``|S^T k_t - v_t|^2 / 2``, brought to linear Transformers by Schlag, Irie & Schmidhuber (2021; DeltaNet). It edits
    what is stored for a key; it adds no room to the (D, V) state. The keys are used as given (normalise them for that
    guarantee) and there is no normaliser.

    Args:
        queries: (B, T, D); keys: (B, T, D); values: (B, T, V); one floating dtype, finite.
        beta: (B, T), the writing strength of each step, in [0, 1], the dtype of ``queries``.

    Returns:
        ``(outputs (B, T, V), S (B, D, V))`` in the dtype of ``queries``.
    """
    require_delta_inputs(queries, keys, values, beta)
    return _recurrence(queries, keys, values, beta)


def gated_delta_rule(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, beta: torch.Tensor, alpha: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gated DeltaNet's rule: ``S_t = a_t S_{t-1} + beta_t k_t (v_t - (a_t S_{t-1})^T k_t)^T``, ``o_t = S_t^T q_t``.

    The state first decays by ``a_t = alpha[:, t]`` (the forget gate of notebook 12's decay, one number per step),
    then the delta rule writes into what is left: ``alpha = 1`` everywhere is ``delta_rule`` exactly, ``alpha = 0``
    forgets everything before the step, so that S is the step's own ``beta_t k_t v_t^T``. Yang, Kautz & Hatamizadeh
    (ICLR 2025, Gated DeltaNet) combine the two; Qwen3-Next's linear layers use it.

    Args:
        queries: (B, T, D); keys: (B, T, D); values: (B, T, V); one floating dtype, finite.
        beta: (B, T), the writing strength of each step, in [0, 1]; alpha: (B, T), the decay of each step, in [0, 1];
            both in the dtype of ``queries``.

    Returns:
        ``(outputs (B, T, V), S (B, D, V))`` in the dtype of ``queries``.
    """
    require_delta_inputs(queries, keys, values, beta, alpha)
    return _recurrence(queries, keys, values, beta, alpha)


def delta_rule_chunked(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    beta: torch.Tensor,
    chunk_size: int,
    alpha: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``delta_rule`` (or, given ``alpha``, ``gated_delta_rule``) computed C = ``chunk_size`` steps at a time.

    Inside a chunk that starts from the state S_0, each step adds ``k_t u_t^T`` with
    ``u_t = beta_t (v_t - S_0^T k_t - sum_{i<t} u_i k_i^T k_t)``: one unit lower-triangular system for the chunk's
    U (C, V), ``(I + diag(beta) tril(K K^T, -1)) U = diag(beta) (V - K S_0)`` (the UT transform of Yang et al., 2024,
    "Parallelizing Linear Transformers with the Delta Rule over Sequence Length"). Then
    ``O = Q S_0 + tril(Q K^T) U`` and ``S_C = S_0 + K^T U``: T / C sequential steps of matrix products. Equal to
    ``delta_rule`` up to rounding, for any C (1, a C that does not divide T, a C larger than T).

    With the gate, step i's write has decayed by ``G[t, i] = alpha_{i+1} ... alpha_t`` when step t reads, and S_0 by
    ``g_t = alpha_1 ... alpha_t``: every ``tril`` above is multiplied by G, ``K S_0`` by g, and
    ``S_C = g_C S_0 + K^T (G[C, :] U)``: the chunked form of Gated DeltaNet (Yang, Kautz & Hatamizadeh, 2025).

    Args:
        queries, keys, values, beta: as in ``delta_rule``. chunk_size: C, a whole number >= 1.
        alpha: None, or (B, T) in [0, 1] as in ``gated_delta_rule``.

    Returns:
        ``(outputs (B, T, V), S (B, D, V))`` in the dtype of ``queries``.
    """
    require_chunked_delta_inputs(queries, keys, values, beta, chunk_size, alpha)
    work = torch.float32 if queries.dtype in LOW_PRECISION else queries.dtype
    q, k, v, b = (t.to(work) for t in (queries, keys, values, beta))
    log_alpha = torch.zeros_like(b) if alpha is None else alpha.to(work).log()  # (B, T); log 0 = -inf: forgets all
    state = k.new_zeros(k.shape[0], k.shape[-1], v.shape[-1])  # (B, D, V)
    outputs = [v.new_zeros(v.shape[0], 0, v.shape[-1])]
    for start in range(0, k.shape[1], chunk_size):
        part = slice(start, start + chunk_size)
        qc, kc, vc, bc = q[:, part], k[:, part], v[:, part], b[:, part, None]  # (B, C, .), beta (B, C, 1)
        decay, g = _decays(log_alpha[:, part])  # (B, C, C) G[t, i] (0 above the diagonal), (B, C, 1) g_t
        lower = torch.tril(kc @ kc.transpose(1, 2), diagonal=-1) * decay  # (B, C, C): G[t, i] k_t . k_i for i < t
        system = torch.eye(kc.shape[1], dtype=work, device=kc.device) + bc * lower  # (B, C, C), unit lower-triangular
        rhs = bc * (vc - g * (kc @ state))  # (B, C, V): beta_t (v_t - g_t S_0^T k_t)
        u = torch.linalg.solve_triangular(system, rhs, upper=False, unitriangular=True)  # (B, C, V)
        outputs.append(g * (qc @ state) + (qc @ kc.transpose(1, 2) * decay) @ u)  # (B, C, V) + (B, C, C)(B, C, V)
        state = g[:, -1:] * state + kc.transpose(1, 2) @ (decay[:, -1, :, None] * u)  # (B, D, C)(B, C, V) -> (B, D, V)
    what = "the delta rule's memory"
    out = torch.cat(outputs, dim=1)  # (B, T, V)
    return require_finite_output(out, queries.dtype, what), require_finite_output(state, queries.dtype, what)


def _decays(log_alpha: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A chunk's decays from its (B, C) log gates: G[t, i] = exp(sum_{i < s <= t} log alpha_s) for i <= t, else 0
    (summed, never differenced, so a gate of 0, log -inf, gives 0 and no NaN), and g_t = exp(sum_{s <= t})."""
    size = log_alpha.shape[1]
    below = torch.ones(size, size, dtype=torch.bool, device=log_alpha.device).tril(-1)  # (C, C): s > i
    steps = log_alpha[:, :, None].expand(-1, -1, size).masked_fill(~below, 0.0)  # (B, C, C): log alpha_s if s > i
    summed = steps.cumsum(1).masked_fill(below.T, float("-inf"))  # (B, C, C): -inf above the diagonal (t < i)
    return summed.exp(), log_alpha.cumsum(1).exp()[:, :, None]  # (B, C, C), (B, C, 1)


def _recurrence(queries, keys, values, beta, alpha=None) -> tuple[torch.Tensor, torch.Tensor]:
    """The delta rule step by step, with the gate ``alpha`` (B, T) when given; checked inputs."""
    work = torch.float32 if queries.dtype in LOW_PRECISION else queries.dtype
    q, k, v, b = (t.to(work) for t in (queries, keys, values, beta))
    batch, steps, size = k.shape
    state = k.new_zeros(batch, size, v.shape[-1])  # (B, D, V)
    outputs = []
    for t in range(steps):
        if alpha is not None:
            state = alpha[:, t, None, None].to(work) * state  # (B, 1, 1) * (B, D, V): decay first
        recalled = (k[:, t].unsqueeze(-1) * state).sum(1)  # (B, D, 1) * (B, D, V) -> (B, V): S_{t-1}^T k_t
        error = v[:, t] - recalled  # (B, V)
        state = state + b[:, t, None, None] * k[:, t, :, None] * error[:, None, :]  # (B, D, V)
        outputs.append((q[:, t].unsqueeze(-1) * state).sum(1))  # (B, V): S_t^T q_t
    out = torch.stack(outputs, dim=1) if outputs else v.new_zeros(batch, 0, v.shape[-1])  # (B, T, V)
    what = "the delta rule's memory"
    return require_finite_output(out, queries.dtype, what), require_finite_output(state, queries.dtype, what)
