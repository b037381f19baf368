"""Context extension: RoPE's frequencies changed so that longer inputs meet no angle unseen in training (notebook 11).

A model trained on sequences of ``original_len`` positions meets, on longer ones, angles ``p w_j`` its slow pairs never
took (``rotary.apply_rope`` turns pair ``j`` at position ``p`` by ``p w_j``). ``rope_frequencies(D, scaling=...)``
changes the frequencies so that they do not:

* position interpolation (``("linear", s)``, Chen et al. 2023) divides every frequency by ``s``;
* NTK-aware scaling (``("ntk", s)``) raises the base to ``base * s^(D / (D - 2))``, which leaves the fastest pair as
  it is and divides the slowest by ``s``;
* YaRN (``("yarn", s, original_len)``, Peng et al. 2023) keeps the pairs that turn many times over ``original_len``,
  divides those that turn less than once by ``s`` and blends in between, computed as Hugging Face transformers'
  ``_compute_yarn_parameters`` does. YaRN also scales the queries and keys by ``rope_attention_scale(scaling) =
  0.1 ln s + 1`` (so the scores by its square).

``yarn_ramp`` gives the blend two ways: linear in the pair index (``rule="index"``, the authors' code and transformers)
or linear in the number of turns (``rule="turns"``, the paper's ramp function); ``("parts", s, ramp, attention)``
applies any blend with any factor.
"""

from __future__ import annotations

import math

import torch

from ._validate.rotary_linear import require_frequency_args, require_ntk_base, require_ramp_args, require_scaling
from .positional import frequencies

__all__ = ["rope_frequencies", "rope_attention_scale", "yarn_ramp"]

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
