"""Checks for the exercises on positions inside attention: a RoPE angle, a row of ALiBi's bias, RoPE applied
(notebook 11).

Notebook 11's checks on extending the context with YaRN are in ``checks.extrapolation``.
"""

from __future__ import annotations

import math

import torch

from ..rotary import alibi_bias, apply_rope
from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_rope_angle", "check_alibi_row", "check_apply_rope"]


@fb.number_answer("the angle in radians")
def check_rope_angle(answer: float) -> Feedback:
    """The angle (radians) by which RoPE turns pair j = 1 of a D = 8 vector at position p = 5 (base 10000)."""
    right = 5 * 10000 ** (-2 / 8)  # p * w_1 = 5 * 0.1
    if math.isclose(answer, right, rel_tol=1e-3):
        return fb.ok("w_1 = 10000^(-2/8) = 0.1, so pair 1 turns by 5 * 0.1 = 0.5 radian; pair 0 turns by 5.")
    if math.isclose(answer, 5.0, rel_tol=1e-3):
        return fb.hint("that is pair 0's angle (w_0 = 1); pair 1 has a lower frequency.")
    if math.isclose(answer, 5 * 10000 ** (-1 / 8), rel_tol=1e-3):
        return fb.hint("the exponent is -2j / D with j = 1, that is -2/8, not -1/8.")
    if math.isclose(answer, 5 * 10000 ** (-4 / 8), rel_tol=1e-3):
        return fb.hint("j counts pairs, not columns: pair 1 holds columns 2 and 3, and its exponent is -2 * 1 / 8.")
    if math.isclose(answer, 5 / 10000 ** (-2 / 8), rel_tol=1e-3):
        return fb.hint("multiply the position by w_j = 10000^(-2j/D); do not divide by it.")
    if math.isclose(answer, math.degrees(right), rel_tol=1e-3):
        return fb.hint("in radians, please, not degrees.")
    if math.isclose(answer, right / 5, rel_tol=1e-3):
        return fb.hint("that is w_1 = 0.1, the frequency; multiply it by the position p = 5 for the angle.")
    if math.isclose(answer, right / (2 * math.pi), rel_tol=1e-3):
        return fb.hint("that is the angle in turns (divided by 2 pi); give it in radians.")
    return fb.hint("the angle is p * w_j with w_j = 10000^(-2j / D); here p = 5, j = 1 and D = 8.")


@fb.tensor_answer((6,), "a (6,) tensor: one bias per key")
def check_alibi_row(row) -> Feedback:
    """The bias that head h = 1 of H = 4 (counted from 0) adds to query 3's scores over keys 0..5 (Q = K = 6)."""
    if not row.is_floating_point():
        return fb.hint(f"slopes are fractions: use a floating-point tensor, got {row.dtype}.")
    want = alibi_bias(4, 6, 6, dtype=torch.float64)[1, 3]  # head 1: the second, slope 2^(-8 * 2 / 4)
    finite = torch.isfinite(row)
    if torch.equal(~finite, torch.arange(6) > 3) and fb.close(row[finite], want[finite]):
        return fb.hint(
            "ALiBi's bias is 0 after the diagonal: the causal mask is separate (it removes keys 4 and 5 on its own), "
            "so the bias holds no -inf."
        )
    if fb.close(row, want):
        return fb.ok(
            "slope m_1 = 2^(-8 * (1 + 1) / 4) = 1/16: -3/16, -2/16, -1/16 for keys 0..2, 0 on the diagonal and after."
        )
    if fb.close(row, -want):
        return fb.hint("the bias is a penalty: far keys get a negative bias, so their scores go down.")
    m = 2 ** (-4.0)
    symmetric = torch.tensor([-m * abs(3 - j) for j in range(6)], dtype=torch.float64)
    if fb.close(row, symmetric):
        return fb.hint("keys after query 3 are masked by the causal mask: ALiBi gives them 0 here, not -m (j - i).")
    for h in (0, 2):  # the slope of head 1 counted from 1 (2^(-8 / 4)), or of head 2 (2^(-8 * 3 / 4))
        if fb.close(row, alibi_bias(4, 6, 6, dtype=torch.float64)[h, 3]):
            return fb.hint(
                f"that is head {h}'s row; heads are counted from 0, h = 0 .. H - 1, and head 1's slope is "
                "2^(-8 * (1 + 1) / 4)."
            )
    if fb.close(row, alibi_bias(4, 6, 6, dtype=torch.float64)[1, 2]):
        return fb.hint(
            "that is query 2's row; query 3, counted from 0, is the fourth row: keys 0, 1, 2 get -3m, -2m, -m."
        )
    return fb.hint("bias[j] = -m * (3 - j) for j <= 3 and 0 after, with m = 2^(-8 (h + 1) / H), h = 1, H = 4.")


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


def _two_d_only(fn, x: torch.Tensor, positions: torch.Tensor) -> Feedback | None:
    """A hint when ``fn`` fails on a batched x (..., L, D) but is right on one (L, D) slice of it: axes counted from
    the front (x[:, 0::2]) where x may have batch axes; else None."""
    if x.dim() <= 2:
        return None
    part = x.reshape(-1, *x.shape[-2:])[0]  # (L, D)
    got, problem = fb.call_on_copies(fn, {"x": part, "positions": positions})
    if problem is None and isinstance(got, torch.Tensor) and got.shape == part.shape:
        if fb.close(got.detach(), apply_rope(part, positions), 1e-6):
            return fb.hint(
                f"right on an x of shape (L, D), not on one of shape {tuple(x.shape)}: x may have batch axes in front "
                "of (L, D), so index the last axes (x[..., 0::2], x.shape[-1]), not the first (x[:, 0::2])."
            )
    return None


@fb.function_answer("your function: my_rope(x, positions) returning the rotated x", "a function fn(x, positions)")
def check_apply_rope(fn) -> Feedback:
    """A learner's ``fn(x, positions)`` against ``apply_rope`` on random cases the learner does not see."""
    gen = torch.Generator().manual_seed(11)
    for case, (shape, _) in enumerate(_CASES):
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        positions = torch.randperm(40, generator=gen)[: shape[-2]]  # (L,): shuffled, not 0 .. L - 1
        want = apply_rope(x, positions)  # first: the learner only ever sees copies of x and positions
        got, problem = fb.call_on_copies(fn, {"x": x, "positions": positions})
        if problem is not None:
            two_d = _two_d_only(fn, x, positions) if problem.message.startswith("your function raised") else None
            sizes = (*shape, shape[-1] // 2)
            return two_d if two_d is not None else fb.raised_on(problem, sizes, worked_before=case > 0)
        if got is None:
            return fb.hint("your function returned None: return the rotated tensor.")
        problem = fb.tensor_problem(got, tuple(shape), f"a tensor of x's shape {tuple(shape)}")
        if problem is not None:
            return _two_d_only(fn, x, positions) or problem
        got = got.detach()
        if (problem := fb.not_finite(got, "your rotated x")) is not None:
            return problem
        if (problem := fb.half_precision(got, what="your rotated x")) is not None:
            return problem
        if fb.close(got, want, 1e-6):
            continue
        if (problem := _two_d_only(fn, x, positions)) is not None:
            return problem
        if fb.close(got, x, 1e-6):
            return fb.hint("nothing was rotated: the result equals x.")
        if fb.close(got, _variant(x, positions, pairing="half"), 1e-6):
            return fb.hint(
                "you paired column j with column j + D/2 (the half-split convention); here pair j is (2j, 2j + 1)."
            )
        for read, written in (("interleaved", "half"), ("half", "interleaved")):
            if fb.close(got, _variant(x, positions, pairing=read, layout=written), 1e-6):
                return fb.hint(
                    f"the angles are right, but you read pairs {_PAIRS[read]} and wrote them back {_PAIRS[written]}: "
                    "write each rotated pair where it came from, out[2j] and out[2j + 1]."
                )
        if fb.close(got, _variant(x, positions, sign=-1.0), 1e-6):
            return fb.hint("wrong sign: that turns clockwise; out[2j+1] = x[2j] sin + x[2j+1] cos, with a plus.")
        if fb.close(got, apply_rope(x, torch.arange(shape[-2])), 1e-6):
            return fb.hint("you used the row index 0 .. L - 1 as the position; use the positions argument.")
        for exponent in (1.0, 4.0, -2.0):
            if fb.close(got, _variant(x, positions, exponent=exponent), 1e-6):
                return fb.hint(
                    f"wrong frequency: you used base^({-exponent:g} j / D); pair j turns at w_j = base^(-2j / D)."
                )
        pairs_got = got.detach().double().reshape(*shape[:-1], -1, 2).norm(dim=-1)
        pairs_x = x.reshape(*shape[:-1], -1, 2).norm(dim=-1)
        if not fb.close(pairs_got, pairs_x, 1e-6):
            return fb.hint(
                "a rotation keeps the length of every pair (2j, 2j + 1); yours changes it: check cos and sin."
            )
        return fb.hint(
            "each pair keeps its length, but the angles are off: pair j at position p turns by p * base^(-2j/D)."
        )
    return fb.ok(
        f"your function agrees with ac.apply_rope on {len(_CASES)} hidden cases, including shuffled positions."
    )
