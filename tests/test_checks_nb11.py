"""attn_course.checks.nb11, the checks of notebook 11 (RoPE, ALiBi and extrapolation):
"Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint

from attn_course import (
    alibi_bias,
    apply_rope,
    frequencies,
    rope_frequencies,
)
from attn_course.checks import (
    check_alibi_row,
    check_apply_rope,
    check_rope_angle,
    check_yarn_frequencies,
    check_yarn_kept,
)

# ----------------------------------------------------------------------------------------------
# notebook 11: check_rope_angle, check_alibi_row and the "build it" check_apply_rope
# ----------------------------------------------------------------------------------------------
# check_rope_angle
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [0.5, 5 * 10000 ** (-2 / 8), torch.tensor(0.5), 0.50001])
def test_check_rope_angle_right_answer(answer):
    assert_correct(check_rope_angle(answer))


def test_check_rope_angle_agrees_with_apply_rope():
    """Pair 1 of (1, 0, 1, 0, ...) at position 5 points at the angle the check wants."""
    x = torch.tensor([[1.0, 0.0] * 4], dtype=torch.float64)
    turned = apply_rope(x, torch.tensor([5]))[0]
    assert_correct(check_rope_angle(math.atan2(turned[3], turned[2])))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("half", ["expected one number"]),
        (5.0, ["pair 0"]),
        (5 * 10000 ** (-1 / 8), ["-2/8"]),
        (5 * 10000 ** (-4 / 8), ["j counts pairs"]),
        (5 / 10000 ** (-2 / 8), ["do not divide"]),
        (math.degrees(0.5), ["radians"]),
        (1.0, ["p * w_j"]),
    ],
)
def test_check_rope_angle_hints(answer, words):
    assert_hint(check_rope_angle(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_alibi_row
# ----------------------------------------------------------------------------------------------


def test_check_alibi_row_right_answer():
    m = 1 / 16
    assert_correct(check_alibi_row(torch.tensor([-3 * m, -2 * m, -m, 0.0, 0.0, 0.0])))
    assert_correct(check_alibi_row(alibi_bias(4, 6, 6)[1, 3]))


@pytest.mark.parametrize(
    "row, words",
    [
        (None, ["replace None"]),
        ([0.0] * 6, ["torch.Tensor"]),
        (torch.zeros(5), ["shape (6,)"]),
        (torch.zeros(6, dtype=torch.long), ["floating-point"]),
        (-alibi_bias(4, 6, 6)[1, 3], ["penalty"]),
        (torch.tensor([-3 / 16, -2 / 16, -1 / 16, 0.0, -1 / 16, -2 / 16]), ["causal mask"]),
        (alibi_bias(4, 6, 6)[0, 3], ["head 0's row", "counted from 0, h = 0 .. H - 1"]),
        (alibi_bias(4, 6, 6)[2, 3], ["head 2's row", "head 1's slope is 2^(-8 * (1 + 1) / 4)"]),
        (torch.ones(6), ["bias[j] = -m * (3 - j)"]),
    ],
)
def test_check_alibi_row_hints(row, words):
    assert_hint(check_alibi_row(row), *words)


# ----------------------------------------------------------------------------------------------
# check_apply_rope: wrong functions a learner might write, each named
# ----------------------------------------------------------------------------------------------


def _rope_variant(x, positions, pairing="interleaved", sign=1.0, exponent=2.0, use_rows=False, scale=1.0):
    d = x.shape[-1]
    if use_rows:
        positions = torch.arange(x.shape[-2])
    omega = 10000.0 ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)
    angles = sign * positions.double().unsqueeze(-1) * omega
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if pairing == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        return scale * torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return scale * torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def test_check_apply_rope_right_answer():
    assert_correct(check_apply_rope(_rope_variant))
    assert_correct(check_apply_rope(apply_rope))
    assert_correct(check_apply_rope(lambda x, p: _rope_variant(x.float(), p)))  # float32 inside is close enough


def _rope_in_place(x, positions):
    out = _rope_variant(x, positions)
    x.mul_(2)
    return out


def _rope_raises(x, positions):
    raise IndexError("index 8 is out of bounds")


def _rope_shifts_positions(x, positions):
    positions += 1  # changes the caller's positions: the check's reference must not follow it
    return apply_rope(x, positions)


def _rope_zeroes_positions(x, positions):
    positions.zero_()
    return x.clone()  # right for positions that are all 0, which the check must not compute its reference from


def _rope_mixed_layout(x, positions, read="interleaved"):
    """Pairs read one way and written back the other: right angles, columns in the wrong places."""
    d = x.shape[-1]
    omega = 10000.0 ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)
    angles = positions.double().unsqueeze(-1) * omega
    cos, sin = angles.cos(), angles.sin()
    a, b = (x[..., 0::2], x[..., 1::2]) if read == "interleaved" else (x[..., : d // 2], x[..., d // 2 :])
    first, second = a * cos - b * sin, a * sin + b * cos
    if read == "interleaved":
        return torch.cat((first, second), dim=-1)
    return torch.stack((first, second), dim=-1).flatten(-2)


def _rope_angles_off(x, positions):
    return _rope_variant(x, positions * 2)  # twice the angle: not one of the named mistakes


@pytest.mark.parametrize(
    "fn, words",
    [
        (None, ["replace None"]),
        (42, ["expected a function"]),
        (lambda x, p: None, ["returned None"]),
        (lambda x, p: x.tolist(), ["torch.Tensor"]),
        (lambda x, p: x[..., :2], ["expected shape"]),
        (_rope_raises, ["raised IndexError", "index 8"]),
        (_rope_in_place, ["changed its input x in place"]),
        (_rope_shifts_positions, ["changed its input positions in place"]),
        (_rope_zeroes_positions, ["changed its input positions in place"]),
        (_rope_mixed_layout, ["read pairs as (2j, 2j + 1)", "wrote them back as (j, j + D/2)"]),
        (lambda x, p: _rope_mixed_layout(x, p, read="half"), ["read pairs as (j, j + D/2)", "back as (2j, 2j + 1)"]),
        (lambda x, p: x * float("nan"), ["NaN"]),
        (lambda x, p: x.clone(), ["nothing was rotated"]),
        (lambda x, p: _rope_variant(x, p, pairing="half"), ["j + D/2", "half-split"]),
        (lambda x, p: _rope_variant(x, p, sign=-1.0), ["wrong sign", "clockwise"]),
        (lambda x, p: _rope_variant(x, p, use_rows=True), ["row index", "positions argument"]),
        (lambda x, p: _rope_variant(x, p, exponent=1.0), ["wrong frequency", "base^(-1 j / D)"]),
        (lambda x, p: _rope_variant(x, p, exponent=4.0), ["wrong frequency", "base^(-4 j / D)"]),
        (lambda x, p: _rope_variant(x, p, exponent=-2.0), ["wrong frequency", "base^(2 j / D)"]),
        (lambda x, p: _rope_variant(x, p, scale=2.0), ["keeps the length"]),
        (_rope_angles_off, ["angles are off"]),
    ],
)
def test_check_apply_rope_hints(fn, words):
    assert_hint(check_apply_rope(fn), *words)


def test_check_apply_rope_hidden_cases_include_shuffled_positions_and_batch_axes():
    """A function that ignores the positions passes a case whose positions are 0..L-1 only by luck: the check's
    positions are shuffled, so it fails; a function that handles only 2-D input fails on the batched cases."""
    seen = []

    def spy(x, positions):
        seen.append((tuple(x.shape), positions.clone()))
        return apply_rope(x, positions)

    assert_correct(check_apply_rope(spy))
    assert any(len(shape) > 2 for shape, _ in seen)
    assert all(not torch.equal(p, torch.arange(len(p))) for _, p in seen if len(p) > 2)


# ----------------------------------------------------------------------------------------------
# check_yarn_frequencies: the "build it" of YaRN's frequencies, on hidden cases
# ----------------------------------------------------------------------------------------------


def _yarn(head_dim, base, factor, original_len, rounded=True, reverse=False, beta=(32, 1)):
    """YaRN by hand (transformers' definition), with one thing changed when asked."""

    def pair_index(rotations):
        return head_dim * math.log(original_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_index(beta[0]), pair_index(beta[1])
    if rounded:
        low, high = max(math.floor(low), 0), min(math.ceil(high), head_dim - 1)
    high = high + 0.001 if high == low else high
    omega = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    ramp = 1 - ramp if reverse else ramp
    return (omega / factor) * ramp + omega * (1 - ramp)


def test_check_yarn_frequencies_right_answer():
    assert_correct(check_yarn_frequencies(_yarn), "5 hidden cases")
    assert_correct(check_yarn_frequencies(lambda d, b, s, n: rope_frequencies(d, b, ("yarn", s, n)).float()))


@pytest.mark.parametrize(
    "fn, words",
    [
        (None, ["replace None"]),
        (3, ["expected a function"]),
        (lambda d, b, s, n: None, ["returned None"]),
        (lambda d, b, s, n: 1 / 0, ["ZeroDivisionError"]),
        (lambda d, b, s, n: torch.ones(d), ["one frequency per pair"]),
        (lambda d, b, s, n: frequencies(d, b) * math.nan, ["NaN"]),
        (lambda d, b, s, n: frequencies(d, b), ["nothing changed"]),
        (lambda d, b, s, n: frequencies(d, b) / s, ["position interpolation"]),
        (lambda d, b, s, n: rope_frequencies(d, b, ("ntk", s)), ["NTK-aware"]),
        (lambda d, b, s, n: _yarn(d, b, s, n, reverse=True), ["wrong way round"]),
        (lambda d, b, s, n: _yarn(d, b, s, n, beta=(1, 32)), ["swapped"]),
        (lambda d, b, s, n: _yarn(d, b, 1 / s, n), ["do not multiply"]),
        (lambda d, b, s, n: _yarn(d, b, s, n, rounded=False), ["floor", "ceil"]),
        (lambda d, b, s, n: _yarn(d, b, s, n) * 1.1, ["turns"]),
    ],
)
def test_check_yarn_frequencies_hints(fn, words):
    assert_hint(check_yarn_frequencies(fn), *words)


def test_check_yarn_frequencies_blend_hint_when_only_the_ends_are_right():
    def blend_wrong(d, b, s, n):
        out = _yarn(d, b, s, n)
        middle = (out > out[-1] * 1.0001) & (out < out[0] * 0.9999) & (out < frequencies(d, b) * 0.9999)
        return torch.where(middle, out * 0.9, out)

    assert_hint(check_yarn_frequencies(blend_wrong), "blend")


def test_check_yarn_frequencies_runs_every_hidden_case():
    """The learner's function is run on each of the five hidden cases, head sizes all different."""
    calls = []

    def spy(d, b, s, n):
        calls.append((d, n))
        return _yarn(d, b, s, n)

    assert_correct(check_yarn_frequencies(spy))
    assert len({d for d, _ in calls}) == len(calls) == 5  # five head sizes, all different


# ----------------------------------------------------------------------------------------------
# check_yarn_kept: the prediction of which pairs YaRN leaves alone (D = 64, base 10000, L = 2048)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [list(range(9)), tuple(range(8, -1, -1)), torch.arange(9), range(9)])
def test_check_yarn_kept_right_answer(answer):
    assert_correct(check_yarn_kept(answer), "floor 8")


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (8, ["expected a list"]),
        ("0-8", ["expected a list"]),
        (["a"], ["whole numbers"]),
        (list(range(8)), ["pair 8 too"]),
        (list(range(21, 32)), ["slows down"]),
        (list(range(21)), ["on the ramp"]),
        ([0, 40], ["indices 0 to 31"]),
        ([], ["keeps some pairs"]),
        ([3, 4], ["count the turns"]),
        ([True] * 9 + [False] * 23, ["indices of the kept pairs", "not True / False"]),
        (np.arange(32) < 9, ["indices of the kept pairs", "not True / False"]),  # a NumPy bool mask
        (torch.arange(32) < 9, ["indices of the kept pairs", "not True / False"]),
    ],
)
def test_check_yarn_kept_hints(answer, words):
    assert_hint(check_yarn_kept(answer), *words)


def _yarn_wrong(
    head_dim,
    base,
    factor,
    original_len,
    rounding=(math.floor, math.ceil),
    clamp=True,
    nudge=True,
    two_pi=True,
    column=False,
    clamp_ramp=True,
):
    """YaRN by hand with one convention changed: how the ramp's ends are rounded and clamped, whether an end equal to
    the start is nudged by 0.001, the turn (2 pi or 1), the ramp's variable (pair j or column 2j), the ramp's clamp."""

    def pair_index(rotations):
        return head_dim * math.log(original_len / (rotations * (2 * math.pi if two_pi else 1))) / (2 * math.log(base))

    low, high = rounding[0](pair_index(32)), rounding[1](pair_index(1))
    if clamp:
        low, high = max(low, 0), min(high, head_dim - 1)
    if nudge and high == low:
        high += 0.001
    omega = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    j = torch.arange(head_dim // 2, dtype=torch.float64) * (2 if column else 1)
    ramp = (j - low) / (high - low)
    ramp = ramp.clamp(0, 1) if clamp_ramp else ramp
    return (omega / factor) * ramp + omega * (1 - ramp)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"rounding": (math.ceil, math.floor)}, ["floor and ceil are swapped"]),
        ({"rounding": (round, round)}, ["round()", "math.floor", "math.ceil"]),
        ({"rounding": (int, int)}, ["int()", "math.floor", "math.ceil"]),
        ({"clamp": False}, ["clamp the ramp's ends to [0, head_dim - 1]"]),
        ({"nudge": False}, ["add 0.001", "both ends of the ramp are clamped to 0"]),
        ({"two_pi": False}, ["2 pi radians"]),
        ({"column": True}, ["pair index j", "not over the column 2j"]),
        ({"clamp_ramp": False}, ["clamp the ramp to [0, 1]"]),
    ],
)
def test_check_yarn_frequencies_names_the_other_conventions(kwargs, words):
    """These used to get the generic "the blend is off" or "pair j turns ..." hint, or (no 0.001) to pass."""
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn_wrong(d, b, s, n, **kwargs)), *words)


def test_check_yarn_frequencies_names_rounded_and_hard_coded_answers():
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).round(decimals=4)), "rounded to 4")
    # within 1e-6 everywhere, but the slow pairs' tiny frequencies lose their digits
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).round(decimals=6)), "rounded to 6")
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).round(decimals=7)), "rounded to 7")
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).round(decimals=2)), "rounded to 2")
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(64, b, s, n)), "from the head_dim argument")


def test_check_yarn_frequencies_accepts_a_float32_answer_and_the_other_clamp():
    """float32 as transformers computes it, and a ramp end clamped to head_dim / 2 - 1 (the same pairs): both right."""
    assert_correct(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).float()))


@pytest.mark.parametrize(
    "answer, words",
    [
        (list(range(1, 10)), ["counted from 0"]),
        (list(range(1, 9)), ["pair 0 too"]),
        ([True] * 9 + [False] * 23, ["not True / False"]),
        ([0.5, 1.5], ["whole numbers"]),
        (["0", "1"], ["whole numbers"]),
        ([float("nan")], ["whole numbers"]),
    ],
)
def test_check_yarn_kept_names_more_faults(answer, words):
    """Indices from 1, a missing pair 0 and a True / False mask got the generic hint; [0.5] was read as [0]."""
    assert_hint(check_yarn_kept(answer), *words)
