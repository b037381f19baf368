"""attn_course.checks.rotary, the checks of notebook 11 on RoPE and ALiBi (a RoPE angle, a row of ALiBi's bias,
RoPE applied): "Correct" for a right answer, a hint for each mistake."""

import math

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import (
    alibi_bias,
    apply_rope,
)
from attn_course.checks import (
    check_alibi_row,
    check_apply_rope,
    check_rope_angle,
)

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
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


def _rope_d_eight(x, positions):
    """The visible example's D = 8 written in the frequencies."""
    omega = 10000.0 ** (-2.0 * torch.arange(4, dtype=torch.float64) / 8)  # (4,)
    angles = positions.double().unsqueeze(-1) * omega  # (L, 4)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()), dim=-1).flatten(-2)


def _rope_two_d_only(x, positions):
    """Right for a 2-D x (L, D) only: x[:, 0::2] slices the first axis of a batched x."""
    omega = 10000.0 ** (-2.0 * torch.arange(x.shape[-1] // 2, dtype=torch.float64) / x.shape[-1])
    angles = positions.double().unsqueeze(-1) * omega  # (L, D/2)
    a, b = x[:, 0::2], x[:, 1::2]
    return torch.stack((a * angles.cos() - b * angles.sin(), a * angles.sin() + b * angles.cos()), dim=-1).flatten(-2)


def _alibi_with_causal_mask():
    row = alibi_bias(4, 6, 6)[1, 3].clone()
    row[4:] = -math.inf  # the causal mask baked into the bias
    return row


ATTACKS = {
    "check_rope_angle": [
        attack("left as None", "replace None", None),
        attack("a string", "str", "0.5"),
        attack("pair 0's angle", "pair 0", 5.0),
        attack("exponent -j / D", "-2/8, not -1/8", 5 * 10000 ** (-1 / 8)),
        attack("j counted in columns", "j counts pairs", 5 * 10000 ** (-4 / 8)),
        attack("divided by the frequency", "do not divide", 5 / 10000 ** (-2 / 8)),
        attack("in degrees", "not degrees", math.degrees(0.5)),
        attack("the frequency w_1 alone", "that is w_1", 0.1),
        attack("in turns", "turns", 0.5 / (2 * math.pi)),
        attack("every pair's angle", "got Tensor", torch.tensor([5.0, 0.5, 0.05, 0.005])),
    ],
    "check_alibi_row": [
        attack("left as None", "replace None", None),
        attack("a list", "list", [-3 / 16, -2 / 16, -1 / 16, 0.0, 0.0, 0.0]),
        attack("one key short", "got (5,)", torch.zeros(5)),
        attack("an integer tensor", "floating-point", torch.zeros(6, dtype=torch.long)),
        attack("the sign flipped", "penalty", -alibi_bias(4, 6, 6)[1, 3]),
        attack(
            "symmetric distances", "not -m (j - i)", torch.tensor([-3 / 16, -2 / 16, -1 / 16, 0.0, -1 / 16, -2 / 16])
        ),
        attack("head counted from 1", "head 0's row", alibi_bias(4, 6, 6)[0, 3]),
        attack("head 2", "head 2's row", alibi_bias(4, 6, 6)[2, 3]),
        attack("the causal mask's -inf baked in", "separate", _alibi_with_causal_mask()),
        attack("query 2's row", "query 2", alibi_bias(4, 6, 6)[1, 2]),
        attack("the whole matrix", "got (6, 6)", alibi_bias(4, 6, 6)[1]),
        attack("a NumPy array", "ndarray", alibi_bias(4, 6, 6)[1, 3].numpy()),
    ],
    "check_apply_rope": [
        attack("left as None", "replace None", None),
        attack("forgot to return", "returned None", lambda x, p: None),
        attack("half-split pairs", "half-split", lambda x, p: _rope_variant(x, p, pairing="half")),
        attack("read interleaved, written half-split", "wrote them back", _rope_mixed_layout),
        attack("clockwise", "wrong sign", lambda x, p: _rope_variant(x, p, sign=-1.0)),
        attack("row index as the position", "row index", lambda x, p: _rope_variant(x, p, use_rows=True)),
        attack("exponent -j / D", "base^(-1 j / D)", lambda x, p: _rope_variant(x, p, exponent=1.0)),
        attack("rotates x in place", "changed its input x in place", _rope_in_place),
        attack("nothing rotated", "nothing was rotated", lambda x, p: x.clone()),
        attack("D = 8 written in", "written in", _rope_d_eight),
        attack("a list", "list", lambda x, p: apply_rope(x, p).tolist()),
        attack("a NumPy array", "ndarray", lambda x, p: apply_rope(x, p).numpy()),
        attack("scaled pairs", "keeps the length", lambda x, p: _rope_variant(x, p, scale=2.0)),
        attack("x[:, 0::2]: 2-D x only", "batch axes", _rope_two_d_only),
        attack("computed in float16", "float16", lambda x, p: apply_rope(x.half(), p)),
    ],
}
