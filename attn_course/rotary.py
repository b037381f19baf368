"""Positions inside attention: rotary embeddings (RoPE) and ALiBi (notebook 11).

Notebook 06 adds the sinusoidal encoding ``P`` to the tokens and shows that moving column pair
``(2j, 2j + 1)`` from position ``i`` to ``i + delta`` is a rotation by ``delta * w_j``. RoPE rotates the
queries and keys themselves, pair ``(2j, 2j + 1)`` of the vector at position ``p`` by the angle ``p * w_j``
with the same frequencies ``w_j = base^(-2j / D)`` (``positional.frequencies``). A rotation keeps dot
products of vectors turned by the same angle, so ``rope(q, i) . rope(k, j)`` depends on ``i - j`` only.
``apply_rope(..., scaling=...)`` turns the pairs by the frequencies of a context extension (``extrapolation``).

ALiBi adds no embedding at all: head ``h`` adds ``-m_h * (i - j)`` to the score of query ``i`` and key
``j``, a penalty that grows with the distance, with one slope ``m_h`` per head (``alibi_slopes``).
"""

from __future__ import annotations

import math

import torch

from ._validate import LOW_PRECISION, require_int
from ._validate.rotary_linear import require_alibi_args, require_rope_input
from .extrapolation import rope_frequencies

__all__ = ["apply_rope", "alibi_slopes", "alibi_bias"]


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0, scaling=None) -> torch.Tensor:
    """Rotate each pair ``(x[..., 2j], x[..., 2j + 1])`` of the vector at position ``p`` by the angle ``p * w_j``.

    ``w_j = base^(-2j / D)`` are notebook 06's frequencies (``frequencies(D, base)``), and the pairs are its
    (sin, cos) column pairs. Read pair ``j`` as the complex number ``z = x[2j] + 1j * x[2j + 1]``: the result is
    ``z * exp(1j * p * w_j)``, that is

        out[2j]     = x[2j] cos(p w_j) - x[2j + 1] sin(p w_j)
        out[2j + 1] = x[2j] sin(p w_j) + x[2j + 1] cos(p w_j)

    A rotation keeps every vector's norm, and ``apply_rope(q, [i]) . apply_rope(k, [j])`` depends on ``i - j``
    only. (Several libraries pair column ``j`` with column ``j + D / 2`` instead, the "half-split" convention;
    that is the same rotation on permuted columns, see notebook 11.)

    Args:
        x: (..., L, D) floating queries or keys (for example (B, L, D) or (B, H, L, dh)); D even.
        positions: (L,) integer tensor of non-negative positions, one per row of ``x``.
        base: the wavelength scale, > 1 (10000 as in notebook 06).
        scaling: None, or a context-extension scaling of the frequencies (``rope_frequencies``). Only the angles
            change: YaRN's ``rope_attention_scale`` is the caller's to apply.

    Returns:
        (..., L, D) tensor of ``x``'s dtype and device. float16 and bfloat16 inputs are rotated in float32 and
        rounded back (a pair close to the largest float16 can rotate to a value beyond it, which becomes inf).
        ``x`` is not modified.
    """
    base = require_rope_input(x, positions, base)
    size = x.shape[-1]  # D
    omega = rope_frequencies(size, base, scaling).to(x.device)  # (D/2,) float64
    angles = positions.to(device=x.device, dtype=torch.float64).unsqueeze(-1) * omega  # (L, 1) * (D/2,) -> (L, D/2)
    work = torch.float32 if x.dtype in LOW_PRECISION else x.dtype
    cos, sin = angles.cos().to(work), angles.sin().to(work)  # (L, D/2) each
    x_even, x_odd = x[..., 0::2].to(work), x[..., 1::2].to(work)  # (..., L, D/2) each: the pairs' two parts
    out_even = x_even * cos - x_odd * sin  # (..., L, D/2)
    out_odd = x_even * sin + x_odd * cos  # (..., L, D/2)
    return torch.stack((out_even, out_odd), dim=-1).flatten(-2).to(x.dtype)  # (..., L, D/2, 2) -> (..., L, D)


def alibi_slopes(num_heads: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """ALiBi's slopes, one per head: ``m_h = 2^(-8 (h + 1) / H)`` when H is a power of two.

    For other H, Press et al.'s rule (their code's ``get_slopes``): the H' slopes of the largest power of two
    ``H' < H``, then every other slope of ``2 H'`` heads (the 1st, 3rd, 5th, ...: ``2^(-8 (2k + 1) / (2 H'))``) for
    the remaining ``H - H'`` heads. The extra slopes interleave with the first ones: the first, ``2^(-4 / H')``, lies
    above them all, each further one halfway (in the exponent) between two of them, so no two heads share a slope.

    Args:
        num_heads: H >= 1.
        device: where the slopes live (default: PyTorch's default device).

    Returns:
        (H,) float32 tensor; heads counted from 0.
    """
    require_int(num_heads, "num_heads")
    closest = 2 ** int(math.floor(math.log2(num_heads)))  # H': the largest power of two <= H
    heads = torch.arange(closest, dtype=torch.float32, device=device)  # (H',)
    slopes = torch.exp2(-8.0 * (heads + 1) / closest)  # (H',): 2^(-8 (h + 1) / H')
    if closest == num_heads:
        return slopes
    odd = torch.arange(0, 2 * (num_heads - closest), 2, dtype=torch.float32, device=device)  # 0, 2, 4, ...
    extra = torch.exp2(-8.0 * (odd + 1) / (2 * closest))  # (H - H',): every other slope of 2 H' heads
    return torch.cat([slopes, extra])  # (H,)


def alibi_bias(
    num_heads: int,
    q_len: int,
    k_len: int,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """ALiBi's additive score bias: ``bias[h, i, j] = -m_h * (i - j)`` for keys at or before the query.

    The slopes are ``alibi_slopes(H)``: ``m_h = 2^(-8 (h + 1) / H)`` for heads ``h = 0 .. H - 1`` when H is a power of
    two, counted from 0 like every index of the course (the paper counts from 1 and writes ``2^(-8 h / H)``): a
    geometric sequence from ``2^(-8 / H)`` down to ``2^-8``. For other H, the paper's rule (``alibi_slopes``). Keys
    after the query get 0: they are the causal mask's to remove (``causal_mask``), and the bias never holds -inf.

    When ``q_len < k_len`` the queries are the *last* ``q_len`` positions of the ``k_len`` keys, aligned
    bottom-right exactly as in ``causal_mask(q_len, k_len)``: query row ``i`` sits at position
    ``i + k_len - q_len``, so the distances, and the bias, are those of the last rows of the square case.

    Args:
        num_heads: H, one slope per head.
        q_len: Q, the number of queries (>= 1).
        k_len: K, the number of keys (>= Q).
        device: where the bias lives (default: PyTorch's default device); pass the scores' device.
        dtype: floating dtype of the bias (computed in float32; in float16 a penalty beyond the largest float16
            is clamped to the lowest finite value).

    Returns:
        (H, Q, K) tensor, 0 on the diagonal, ``-m_h * distance`` below it, 0 above it. Add it to the scores of
        head ``h`` (broadcast over the batch), and use no positional embedding.
    """
    require_alibi_args(num_heads, q_len, k_len, dtype)
    slopes = alibi_slopes(num_heads, device=device)  # (H,)
    query_pos = torch.arange(k_len - q_len, k_len, dtype=torch.float32, device=device)  # (Q,): aligned bottom-right
    key_pos = torch.arange(k_len, dtype=torch.float32, device=device)  # (K,)
    distance = (query_pos.unsqueeze(1) - key_pos).clamp(min=0)  # (Q, 1) - (K,) -> (Q, K): i - j, 0 after the query
    bias = -slopes.view(-1, 1, 1) * distance  # (H, 1, 1) * (Q, K) -> (H, Q, K)
    if dtype != torch.float32 and torch.finfo(dtype).max < torch.finfo(torch.float32).max:
        bias = bias.clamp(min=torch.finfo(dtype).min)  # no -inf in float16 or bfloat16
    return bias.to(dtype) + 0.0  # + 0.0 turns -0.0 (zero distance times a slope) into 0.0
