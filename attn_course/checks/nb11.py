"""Checks for the exercises of notebook 11 (RoPE, ALiBi and extrapolation)."""

from __future__ import annotations

import math

import torch

from ..rotary import alibi_bias, apply_rope, rope_frequencies
from ._feedback import (
    Feedback,
    _call_on_copies,
    _close,
    _function_answer,
    _hint,
    _not_finite,
    _number_answer,
    _ok,
    _tensor_answer,
    _tensor_problem,
)

__all__ = ["check_rope_angle", "check_alibi_row", "check_apply_rope", "check_yarn_frequencies", "check_yarn_kept"]


@_number_answer("the angle in radians")
def check_rope_angle(answer: float) -> Feedback:
    """The angle (radians) by which RoPE turns pair j = 1 of a D = 8 vector at position p = 5 (base 10000)."""
    right = 5 * 10000 ** (-2 / 8)  # p * w_1 = 5 * 0.1
    if math.isclose(answer, right, rel_tol=1e-3):
        return _ok("w_1 = 10000^(-2/8) = 0.1, so pair 1 turns by 5 * 0.1 = 0.5 radian; pair 0 turns by 5.")
    if math.isclose(answer, 5.0, rel_tol=1e-3):
        return _hint("that is pair 0's angle (w_0 = 1); pair 1 has a lower frequency.")
    if math.isclose(answer, 5 * 10000 ** (-1 / 8), rel_tol=1e-3):
        return _hint("the exponent is -2j / D with j = 1, that is -2/8, not -1/8.")
    if math.isclose(answer, 5 * 10000 ** (-4 / 8), rel_tol=1e-3):
        return _hint("j counts pairs, not columns: pair 1 holds columns 2 and 3, and its exponent is -2 * 1 / 8.")
    if math.isclose(answer, 5 / 10000 ** (-2 / 8), rel_tol=1e-3):
        return _hint("multiply the position by w_j = 10000^(-2j/D); do not divide by it.")
    if math.isclose(answer, math.degrees(right), rel_tol=1e-3):
        return _hint("in radians, please, not degrees.")
    return _hint("the angle is p * w_j with w_j = 10000^(-2j / D); here p = 5, j = 1 and D = 8.")


@_tensor_answer((6,), "a (6,) tensor: one bias per key")
def check_alibi_row(row) -> Feedback:
    """The bias that head h = 1 of H = 4 (counted from 0) adds to query 3's scores over keys 0..5 (Q = K = 6)."""
    if not row.is_floating_point():
        return _hint(f"slopes are fractions: use a floating-point tensor, got {row.dtype}.")
    want = alibi_bias(4, 6, 6, dtype=torch.float64)[1, 3]  # head 1: the second, slope 2^(-8 * 2 / 4)
    if _close(row, want):
        return _ok(
            "slope m_1 = 2^(-8 * (1 + 1) / 4) = 1/16: -3/16, -2/16, -1/16 for keys 0..2, 0 on the diagonal and after."
        )
    if _close(row, -want):
        return _hint("the bias is a penalty: far keys get a negative bias, so their scores go down.")
    m = 2 ** (-4.0)
    symmetric = torch.tensor([-m * abs(3 - j) for j in range(6)], dtype=torch.float64)
    if _close(row, symmetric):
        return _hint("keys after query 3 are masked by the causal mask: ALiBi gives them 0 here, not -m (j - i).")
    for h in (0, 2):  # the slope of head 1 counted from 1 (2^(-8 / 4)), or of head 2 (2^(-8 * 3 / 4))
        if _close(row, alibi_bias(4, 6, 6, dtype=torch.float64)[h, 3]):
            return _hint(
                f"that is head {h}'s row; heads are counted from 0, h = 0 .. H - 1, and head 1's slope is "
                "2^(-8 * (1 + 1) / 4)."
            )
    return _hint("bias[j] = -m * (3 - j) for j <= 3 and 0 after, with m = 2^(-8 (h + 1) / H), h = 1, H = 4.")


_PAIRS = {"interleaved": "as (2j, 2j + 1)", "half": "as (j, j + D/2)"}

# Hidden cases: shapes (..., L, D) and positions that are not simply 0 .. L - 1.
_CASES = [((5, 8), None), ((2, 7, 16), None), ((3, 2, 4, 6), None), ((1, 4), None)]


def _variant(x, positions, pairing="interleaved", sign=1.0, exponent=2.0, layout=None):
    """RoPE with one thing changed, to name what a wrong answer does. ``pairing`` says which columns are read as a
    pair, ``layout`` how the rotated pairs are written back (the same as ``pairing`` unless given)."""
    d = x.shape[-1]
    omega = 10000.0 ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)  # (D/2,)
    angles = sign * positions.double().unsqueeze(-1) * omega  # (L, D/2)
    cos, sin = angles.cos(), angles.sin()
    if pairing == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
    else:  # half-split: column j with column j + D/2
        a, b = x[..., : d // 2], x[..., d // 2 :]
    first, second = a * cos - b * sin, a * sin + b * cos
    if (layout or pairing) == "interleaved":
        return torch.stack((first, second), dim=-1).flatten(-2)
    return torch.cat((first, second), dim=-1)


@_function_answer("your function: my_rope(x, positions) returning the rotated x", "a function fn(x, positions)")
def check_apply_rope(fn) -> Feedback:
    """A learner's ``fn(x, positions)`` against ``apply_rope`` on random cases the learner does not see."""
    gen = torch.Generator().manual_seed(11)
    for shape, _ in _CASES:
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        positions = torch.randperm(40, generator=gen)[: shape[-2]]  # (L,): shuffled, not 0 .. L - 1
        want = apply_rope(x, positions)  # first: the learner only ever sees copies of x and positions
        got, problem = _call_on_copies(fn, {"x": x, "positions": positions})
        if problem is not None:
            return problem
        if got is None:
            return _hint("your function returned None: return the rotated tensor.")
        problem = _tensor_problem(got, tuple(shape), f"a tensor of x's shape {tuple(shape)}")
        if problem is not None:
            return problem
        got = got.detach()
        if (problem := _not_finite(got, "your rotated x")) is not None:
            return problem
        if _close(got, want, 1e-6):
            continue
        if _close(got, x, 1e-6):
            return _hint("nothing was rotated: the result equals x.")
        if _close(got, _variant(x, positions, pairing="half"), 1e-6):
            return _hint(
                "you paired column j with column j + D/2 (the half-split convention); here pair j is (2j, 2j + 1)."
            )
        for read, written in (("interleaved", "half"), ("half", "interleaved")):
            if _close(got, _variant(x, positions, pairing=read, layout=written), 1e-6):
                return _hint(
                    f"the angles are right, but you read pairs {_PAIRS[read]} and wrote them back {_PAIRS[written]}: "
                    "write each rotated pair where it came from, out[2j] and out[2j + 1]."
                )
        if _close(got, _variant(x, positions, sign=-1.0), 1e-6):
            return _hint("wrong sign: that turns clockwise; out[2j+1] = x[2j] sin + x[2j+1] cos, with a plus.")
        if _close(got, apply_rope(x, torch.arange(shape[-2])), 1e-6):
            return _hint("you used the row index 0 .. L - 1 as the position; use the positions argument.")
        for exponent in (1.0, 4.0, -2.0):
            if _close(got, _variant(x, positions, exponent=exponent), 1e-6):
                return _hint(
                    f"wrong frequency: you used base^({-exponent:g} j / D); pair j turns at w_j = base^(-2j / D)."
                )
        pairs_got = got.detach().double().reshape(*shape[:-1], -1, 2).norm(dim=-1)
        pairs_x = x.reshape(*shape[:-1], -1, 2).norm(dim=-1)
        if not _close(pairs_got, pairs_x, 1e-6):
            return _hint("a rotation keeps the length of every pair (2j, 2j + 1); yours changes it: check cos and sin.")
        return _hint(
            "each pair keeps its length, but the angles are off: pair j at position p turns by p * base^(-2j/D)."
        )
    return _ok(f"your function agrees with ac.apply_rope on {len(_CASES)} hidden cases, including shuffled positions.")


# Hidden cases of check_yarn_frequencies: (head_dim, base, factor, original_len), head sizes of different sizes, a ramp
# that starts above pair 0 (and where floor and ceil matter), and one where the 32-turn pair lies below 0.
_YARN_CASES = [(64, 10000.0, 4.0, 2048), (22, 500.0, 2.5, 300), (8, 10000.0, 4.0, 24), (128, 500000.0, 8.0, 8192)]


def _yarn_variant(head_dim, base, factor, original_len, rounded=True, reverse=False, beta=(32, 1)):
    """YaRN's frequencies with one thing changed, to name what a wrong answer does."""

    def pair_index(rotations):
        return head_dim * math.log(original_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_index(beta[0]), pair_index(beta[1])
    if rounded:
        low, high = max(math.floor(low), 0), min(math.ceil(high), head_dim - 1)
    high = high + 0.001 if high == low else high
    omega = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    if reverse:
        ramp = 1 - ramp
    return (omega / factor) * ramp + omega * (1 - ramp)


@_function_answer(
    "your function: my_yarn_frequencies(head_dim, base, factor, original_len)",
    "a function fn(head_dim, base, factor, original_len)",
)
def check_yarn_frequencies(fn) -> Feedback:
    """A learner's YaRN frequencies ``fn(head_dim, base, factor, original_len)`` against ``rope_frequencies`` with
    ``("yarn", factor, original_len)``, on cases the learner does not see."""
    for head_dim, base, factor, original_len in _YARN_CASES:
        want = rope_frequencies(head_dim, base, ("yarn", factor, original_len))  # (D/2,) float64
        got, problem = _call_on_copies(
            fn, {"head_dim": head_dim, "base": base, "factor": factor, "original_len": original_len}
        )
        if problem is not None:
            return problem
        if got is None:
            return _hint("your function returned None: return the (head_dim / 2,) tensor of frequencies.")
        if isinstance(got, torch.Tensor) and tuple(got.shape) == (head_dim,):
            return _hint(f"one frequency per pair of columns: shape ({head_dim // 2},) for head_dim = {head_dim}.")
        problem = _tensor_problem(got, (head_dim // 2,), f"a ({head_dim // 2},) tensor: one frequency per pair")
        if problem is not None:
            return problem
        got = got.detach().double()
        if (problem := _not_finite(got, "your frequencies")) is not None:
            return problem
        if _close(got, want, 1e-6):
            continue
        omega = rope_frequencies(head_dim, base)
        named = [
            (omega, "nothing changed: these are the original frequencies; divide the slow pairs by the factor."),
            (omega / factor, "that is position interpolation (every pair divided by s); YaRN keeps the fast pairs."),
            (
                rope_frequencies(head_dim, base, ("ntk", factor)),
                "that is NTK-aware scaling (a larger base); YaRN keeps or divides each pair by its number of turns.",
            ),
            (
                _yarn_variant(head_dim, base, factor, original_len, reverse=True),
                "the ramp is the wrong way round: the fast pairs (small j, many turns) are kept, the slow ones "
                "divided by s; use (w / s) * ramp + w * (1 - ramp) with the ramp rising from 0 to 1.",
            ),
            (
                _yarn_variant(head_dim, base, factor, original_len, beta=(1, 32)),
                "beta_fast and beta_slow are swapped: the ramp starts at the pair that turns 32 times and ends at "
                "the one that turns once.",
            ),
            (
                _yarn_variant(head_dim, base, 1 / factor, original_len),
                "the slow pairs must turn slower: divide them by the factor, do not multiply.",
            ),
            (
                _yarn_variant(head_dim, base, factor, original_len, rounded=False),
                "round the ramp's ends as transformers does: floor for the start (32 turns), ceil for the end "
                "(1 turn), clamped to [0, head_dim - 1].",
            ),
        ]
        for frequencies, hint in named:
            if _close(got, frequencies, 1e-6):
                return _hint(hint)
        if _close(got[:1], want[:1], 1e-6) and _close(got[-1:], want[-1:], 1e-6):
            return _hint(
                "the fastest and the slowest pairs are right, the blend between them is off: the ramp is "
                "(j - low) / (high - low), clamped to [0, 1]."
            )
        return _hint(
            "pair j turns original_len * w_j / (2 pi) times over original_len positions; kept above 32 turns, "
            "divided by s below 1, blended in between."
        )
    return _ok(f"your function agrees with ac.rope_frequencies on {len(_YARN_CASES)} hidden cases.")


def check_yarn_kept(answer) -> Feedback:
    """The pairs that YaRN leaves unchanged for D = 64, base 10000, original length 2048: pairs 0 to 8."""
    if answer is None:
        return _hint("replace None with a list of pair indices.")
    if isinstance(answer, torch.Tensor):
        answer = answer.tolist()
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__iter__"):
        return _hint(f"expected a list of pair indices, got {type(answer).__name__}.")
    try:
        kept = sorted({int(j) for j in answer})
    except (TypeError, ValueError):
        return _hint("expected a list of whole numbers: the indices of the pairs.")
    ratio = rope_frequencies(64, scaling=("yarn", 4.0, 2048)) / rope_frequencies(64)
    right = [j for j, r in enumerate(ratio.tolist()) if r == 1.0]  # 0 .. 8
    slowed = [j for j, r in enumerate(ratio.tolist()) if r == 0.25]  # the pairs divided by the full factor
    if kept == right:
        return _ok(
            f"pairs {right[0]} to {right[-1]}: pair 8 turns about 33 times over 2048 positions, pair 9 about 24; "
            "the 32-turn index is about 8.06, floor 8, so the ramp is 0 up to pair 8."
        )
    if any(j < 0 or j > 31 for j in kept):
        return _hint("a head of size 64 has 32 pairs: indices 0 to 31.")
    if kept == right[:-1]:
        return _hint("pair 8 too: the ramp starts at floor(8.06) = 8, where it is still 0.")
    if kept and kept[0] >= slowed[0]:
        return _hint("those are pairs YaRN slows down; the kept ones are the fast pairs, those that turn many times.")
    if kept and kept[0] == 0 and kept[-1] > right[-1]:
        return _hint(
            f"pairs {right[-1] + 1} to {slowed[0] - 1} lie on the ramp: blended, so slowed a little, not kept."
        )
    return _hint(
        "count the turns, 2048 * w_j / (2 pi) with w_j = 10000^(-2j / 64): the pairs kept are those up to floor of the "
        "index that turns 32 times."
    )
