"""The delta rule: a linear-attention memory that overwrites what it stores for a key (notebook 12).

Linear attention (``linear``) adds ``phi(k_t) v_t^T`` to its state at every step, so a key written twice returns the
sum of its values. The delta rule (Widrow & Hoff, 1960; brought to linear Transformers by Schlag, Irie & Schmidhuber,
2021, DeltaNet) writes the error instead of the value:

    S_t = S_{t-1} + beta_t k_t (v_t - S_{t-1}^T k_t)^T,   o_t = S_t^T q_t

Shapes: queries (B, T, D), keys (B, T, D), values (B, T, V), beta (B, T); the state S is (D, V). float16 and bfloat16
are computed in float32 and returned in their own dtype. Inputs are never modified.
"""

from __future__ import annotations

import torch

from ._validate import LOW_PRECISION
from ._validate.rotary_linear import require_delta_inputs, require_finite_output

__all__ = ["delta_rule"]


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
    work = torch.float32 if queries.dtype in LOW_PRECISION else queries.dtype
    q, k, v, b = (t.to(work) for t in (queries, keys, values, beta))
    batch, steps, size = k.shape
    state = k.new_zeros(batch, size, v.shape[-1])  # (B, D, V)
    outputs = []
    for t in range(steps):
        recalled = (k[:, t].unsqueeze(-1) * state).sum(1)  # (B, D, 1) * (B, D, V) -> (B, V): S_{t-1}^T k_t
        error = v[:, t] - recalled  # (B, V)
        state = state + b[:, t, None, None] * k[:, t, :, None] * error[:, None, :]  # (B, D, V)
        outputs.append((q[:, t].unsqueeze(-1) * state).sum(1))  # (B, V): S_t^T q_t
    out = torch.stack(outputs, dim=1) if outputs else v.new_zeros(batch, 0, v.shape[-1])  # (B, T, V)
    what = "the delta rule's memory"
    return require_finite_output(out, queries.dtype, what), require_finite_output(state, queries.dtype, what)
