"""Positions inside attention: rotary embeddings (RoPE) and ALiBi (notebook 11).

Notebook 06 adds the sinusoidal encoding ``P`` to the tokens and shows that moving column pair
``(2j, 2j + 1)`` from position ``i`` to ``i + delta`` is a rotation by ``delta * w_j``. RoPE rotates the
queries and keys themselves, pair ``(2j, 2j + 1)`` of the vector at position ``p`` by the angle ``p * w_j``
with the same frequencies ``w_j = base^(-2j / D)`` (``positional.frequencies``). A rotation keeps dot
products of vectors turned by the same angle, so ``rope(q, i) . rope(k, j)`` depends on ``i - j`` only.

Context extension: a model trained on sequences of ``original_len`` positions meets, on longer ones, angles ``p w_j``
its slow pairs never took. ``rope_frequencies(D, scaling=...)`` changes the frequencies so that they do not:
position interpolation (``"linear"``, Chen et al. 2023) divides every frequency by ``s``; NTK-aware scaling
(``"ntk"``) raises the base to ``base * s^(D / (D - 2))``, which leaves the fastest pair as it is and divides the
slowest by ``s``; YaRN (``"yarn"``, Peng et al. 2023) keeps the pairs that turn many times over ``original_len``,
divides those that turn less than once by ``s`` and blends in between, computed as Hugging Face
transformers' ``_compute_yarn_parameters`` does. YaRN also scales the queries and keys by
``rope_attention_scale(scaling) = 0.1 ln s + 1`` (so the scores by its square). ``yarn_ramp`` gives the blend two
ways: linear in the pair index (``rule="index"``, the authors' code and transformers) or linear in the number of turns
(``rule="turns"``, the paper's ramp function); ``("parts", s, ramp, attention)`` applies any blend with any factor.

ALiBi adds no embedding at all: head ``h`` adds ``-m_h * (i - j)`` to the score of query ``i`` and key
``j``, a penalty that grows with the distance, with one slope ``m_h`` per head (``alibi_slopes``).
"""

from __future__ import annotations

import math

import torch

from ._validate import LOW_PRECISION, require_float_dtype, require_int
from ._validate_rotary_linear import (
    require_frequency_args,
    require_ntk_base,
    require_ramp_args,
    require_rope_input,
    require_scaling,
)
from .positional import frequencies

__all__ = ["rope_frequencies", "rope_attention_scale", "yarn_ramp", "apply_rope", "alibi_slopes", "alibi_bias"]

YARN_BETA_FAST, YARN_BETA_SLOW = 32, 1  # YaRN's ramp: pairs turning > 32 times over original_len kept, < 1 scaled


def yarn_ramp(head_dim: int, original_len: int, base: float = 10000.0, rule: str = "index") -> torch.Tensor:
    """YaRN's blend, one number per pair: 0 keeps ``w_i``, 1 divides it by s (``rope_frequencies``), between blends.

    Pair ``i`` turns ``r_i = original_len * w_i / (2 pi)`` times over ``original_len`` positions. Peng et al. (2023,
    section 3.2, "NTK-by-parts") keep a pair that turns more than ``beta = 32`` times, interpolate one that turns less
    than ``alpha = 1`` time, and ramp linearly *in the turns* between: their ``gamma(r) = (r - 1) / (32 - 1)`` clamped
    to [0, 1], and the blend is ``1 - gamma(r_i)`` (``rule="turns"``). Their code, and Hugging Face transformers'
    ``_compute_yarn_parameters``, ramp linearly *in the pair index* instead (``rule="index"``): from ``floor`` of the
    fractional index that turns 32 times to ``ceil`` of the one that turns once, both clamped to [0, D - 1] (0.001
    added to the end when they meet). When even pair 0 turns fewer than 32 times, the clamped start is 0 and pair 0
    is kept whole by ``"index"``, while ``"turns"`` moves it most of the way to ``w_0 / s``.

    Args:
        head_dim: D, the size of the rotated vectors (even, >= 2).
        original_len: the trained length, >= 1.
        base: the wavelength scale, > 1.
        rule: ``"index"`` (the code, the default, and what ``("yarn", s, original_len)`` uses) or ``"turns"``.

    Returns:
        (D/2,) float64 tensor on the CPU, values in [0, 1].
    """
    head_dim, original_len, base, rule = require_ramp_args(head_dim, original_len, base, rule)
    omega = frequencies(head_dim, base)  # (D/2,) float64: base^(-2i / D)
    if rule == "turns":
        turns = original_len * omega / (2 * math.pi)  # (D/2,): r_i, the turns over original_len
        gamma = ((turns - YARN_BETA_SLOW) / (YARN_BETA_FAST - YARN_BETA_SLOW)).clamp(0, 1)  # (D/2,): 1 keep, 0 slow
        return 1 - gamma

    def correction_dim(rotations):  # the fractional pair index i that turns `rotations` times over original_len
        return head_dim * math.log(original_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(correction_dim(YARN_BETA_FAST)), 0)
    high = min(math.ceil(correction_dim(YARN_BETA_SLOW)), head_dim - 1)
    if low == high:
        high += 0.001  # as in transformers: no division by zero
    pairs = torch.arange(head_dim // 2, dtype=torch.float64)  # (D/2,): i = 0 .. D/2 - 1
    return ((pairs - low) / (high - low)).clamp(0, 1)


def rope_frequencies(head_dim: int, base: float = 10000.0, scaling=None) -> torch.Tensor:
    """RoPE's angular frequencies ``w_i = base^(-2i / D)``, one per pair, changed by a context-extension ``scaling``.

    Args:
        head_dim: D, the size of the rotated vectors (even, >= 2).
        base: the wavelength scale, > 1.
        scaling: ``None`` (the frequencies above), ``("linear", s)`` (position interpolation: every ``w_i / s``),
            ``("ntk", s)`` (NTK-aware: ``base`` replaced by ``base * s^(D / (D - 2))``; D >= 4) or
            ``("yarn", s, original_len)`` (YaRN: ``w_i`` kept for pairs that turn more than 32 times over
            ``original_len`` positions, ``w_i / s`` for those that turn less than once, a blend between:
            ``w = (w / s) * ramp + w * (1 - ramp)`` with ``ramp = yarn_ramp(D, original_len, base)``), or
            ``("parts", s, ramp, attention)`` (the same formula with any ``ramp`` of D/2 numbers in [0, 1], for
            example ``yarn_ramp(D, original_len, base, rule="turns")``; ``attention`` is what
            ``rope_attention_scale`` returns). The factor s >= 1 is the new length over ``original_len``.

    Returns:
        (D/2,) float64 tensor on the CPU.
    """
    base, scaling = require_frequency_args(head_dim, base, scaling)
    omega = frequencies(head_dim, base)  # (D/2,) float64: base^(-2i / D)
    if scaling is None:
        return omega
    kind, factor = scaling[0], scaling[1]
    if kind == "linear":
        return omega / factor  # every pair turns s times slower: positions 0..sL take the angles of 0..L
    if kind == "ntk":
        try:
            new_base = base * factor ** (head_dim / (head_dim - 2))
        except OverflowError:
            new_base = math.inf
        return frequencies(head_dim, require_ntk_base(new_base, base, factor, head_dim))  # pair 0 kept, the last / s
    if kind == "yarn":
        ramp = yarn_ramp(head_dim, scaling[2], base)  # (D/2,): 0 = keep, 1 = interpolate
    else:
        ramp = torch.tensor(scaling[2], dtype=torch.float64)  # (D/2,)
    return (omega / factor) * ramp + omega * (1 - ramp)


def rope_attention_scale(scaling=None) -> float:
    """YaRN's factor ``0.1 ln s + 1`` for ``("yarn", s, original_len)``, ``attention`` for ``("parts", s, ramp,
    attention)``, 1.0 for any other scaling (and None).

    Hugging Face transformers multiplies RoPE's cos and sin by it, that is the queries and the keys, so the scores are
    multiplied by its square (Peng et al. 2023 write ``sqrt(1 / t) = 0.1 ln s + 1``).
    """
    scaling = require_scaling(scaling)
    if scaling is not None and scaling[0] == "parts":
        return scaling[3]
    if scaling is None or scaling[0] != "yarn":
        return 1.0
    return 0.1 * math.log(scaling[1]) + 1.0


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
    require_int(num_heads, "num_heads")
    require_int(q_len, "q_len")
    require_int(k_len, "k_len", q_len, low_name="q_len")
    require_float_dtype(dtype)
    slopes = alibi_slopes(num_heads, device=device)  # (H,)
    query_pos = torch.arange(k_len - q_len, k_len, dtype=torch.float32, device=device)  # (Q,): aligned bottom-right
    key_pos = torch.arange(k_len, dtype=torch.float32, device=device)  # (K,)
    distance = (query_pos.unsqueeze(1) - key_pos).clamp(min=0)  # (Q, 1) - (K,) -> (Q, K): i - j, 0 after the query
    bias = -slopes.view(-1, 1, 1) * distance  # (H, 1, 1) * (Q, K) -> (H, Q, K)
    if dtype != torch.float32 and torch.finfo(dtype).max < torch.finfo(torch.float32).max:
        bias = bias.clamp(min=torch.finfo(dtype).min)  # no -inf in float16 or bfloat16
    return bias.to(dtype) + 0.0  # + 0.0 turns -0.0 (zero distance times a slope) into 0.0
