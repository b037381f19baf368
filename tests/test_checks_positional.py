"""attn_course.checks.positional, the checks of notebook 06 on positions (the rotation between positions, the
sinusoidal encoding): "Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import checks
from attn_course.checks import check_rotation

# ----------------------------------------------------------------------------------------------
# check_rotation: [sin(i w), cos(i w)] -> [sin((i + 2) w), cos((i + 2) w)] for w = 0.5
# ----------------------------------------------------------------------------------------------


def _rotation_by_angle(angle, dtype=torch.float64):
    """[[cos a, sin a], [-sin a, cos a]].

    From sin(x + a) = sin x cos a + cos x sin a and cos(x + a) = cos x cos a - sin x sin a.
    """
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, s], [-s, c]], dtype=dtype)


def _rotation_solved_from_two_positions():
    """The matrix R with R [sin(i w), cos(i w)] = [sin((i + 2) w), cos((i + 2) w)] at i = 0 and 1, by a solve."""
    w = 0.5
    pairs = torch.tensor([[math.sin(i * w), math.cos(i * w)] for i in range(4)], dtype=torch.float64)  # (4, 2)
    x, y = pairs[:2].T, pairs[2:].T  # columns: positions 0, 1 and positions 2, 3
    return torch.linalg.solve(x.T, y.T).T  # R x = y  <=>  x^T R^T = y^T


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_rotation_by_angle(1.0), id="float64"),
        pytest.param(_rotation_by_angle(1.0, torch.float32), id="float32"),
        pytest.param(_rotation_solved_from_two_positions(), id="solved"),
        pytest.param(_rotation_by_angle(1.0).requires_grad_(), id="requires-grad"),
    ],
)
def test_check_rotation_right_answer(answer):
    assert_correct(check_rotation(answer), "1 radian", "column form", "M @ v")


def _row_vector_rotation():
    """The matrix M with [sin(i w), cos(i w)] @ M = [sin((i + 2) w), cos((i + 2) w)]: rows, as the course writes x W."""
    w = 0.5
    rows = torch.tensor([[math.sin(i * w), math.cos(i * w)] for i in range(4)], dtype=torch.float64)  # (4, 2)
    return torch.linalg.solve(rows[:2], rows[2:])  # rows[:2] @ M = rows[2:]


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_row_vector_rotation(), id="solved"),
        pytest.param(_rotation_by_angle(1.0).T, id="transposed-column-form"),
        pytest.param(_rotation_by_angle(-1.0, torch.float32), id="angle-minus-1"),
    ],
)
def test_check_rotation_accepts_the_row_vector_form_and_says_so(answer):
    """v @ M with v a row, the convention of the course's code, is right too; the verdict names the convention."""
    assert_correct(check_rotation(answer), "1 radian", "row form", "v @ M")


def test_row_vector_rotation_moves_every_position_by_two():
    w, M = 0.5, _row_vector_rotation()
    for i in range(10):
        v = torch.tensor([math.sin(i * w), math.cos(i * w)], dtype=torch.float64)
        want = torch.tensor([math.sin((i + 2) * w), math.cos((i + 2) * w)], dtype=torch.float64)
        torch.testing.assert_close(v @ M, want)


def test_check_rotation_solved_matrix_is_the_rotation_by_one_radian():
    torch.testing.assert_close(_rotation_solved_from_two_positions(), _rotation_by_angle(1.0), atol=1e-12, rtol=0)


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "(2, 2) tensor"], id="none"),
        pytest.param(_rotation_by_angle(1.0).tolist(), ["torch.Tensor", "list"], id="list"),
        pytest.param(np.eye(2), ["torch.Tensor", "ndarray"], id="numpy"),
        pytest.param(torch.zeros(2), ["expected shape (2, 2)", "got (2,)"], id="1-D"),
        pytest.param(_rotation_by_angle(1.0)[None], ["expected shape (2, 2)", "got (1, 2, 2)"], id="3-D"),
        pytest.param(torch.eye(2, dtype=torch.int64), ["floating-point", "torch.int64"], id="integer"),
        pytest.param(_rotation_by_angle(2.0), ["2 * 0.5 = 1, not 2"], id="angle-2"),
        pytest.param(_rotation_by_angle(2.0).T, ["2 * 0.5 = 1, not 2"], id="angle-2-row-form"),
        pytest.param(_rotation_by_angle(0.5), ["rotation by one position"], id="angle-w"),
        pytest.param(_rotation_by_angle(1.0).round(decimals=2), ["close", "rounded to 2 decimals"], id="rounded"),
        pytest.param(_rotation_by_angle(1.0).T.round(decimals=3), ["close", "rounded to 3 decimals"], id="rounded-row"),
        pytest.param(torch.full((2, 2), math.nan), ["NaN"], id="nan"),
        pytest.param(torch.eye(2), ["expand sin(a + b)"], id="identity"),
        pytest.param(
            torch.tensor([[math.cos(1.0), -math.sin(1.0)], [-math.sin(1.0), math.cos(1.0)]]),
            ["expand sin(a + b)"],
            id="sign",
        ),
    ],
)
def test_check_rotation_hints(answer, words):
    assert_hint(check_rotation(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_positional_encoding (build it): against ac.positional_encoding
# ----------------------------------------------------------------------------------------------


def _encoding(num_steps, num_hiddens, *, swap=False, start=0, exponent=lambda j, d: 2 * j / d, blocks=False):
    """A learner's sinusoidal encoding: right with the defaults, each keyword one typical mistake."""
    pos = torch.arange(start, start + num_steps, dtype=torch.float32).unsqueeze(1)  # (T, 1)
    j = torch.arange(num_hiddens // 2, dtype=torch.float32)  # pair index
    angles = pos * 10000.0 ** (-exponent(j, num_hiddens))  # (T, D / 2)
    first, second = (torch.cos(angles), torch.sin(angles)) if swap else (torch.sin(angles), torch.cos(angles))
    if blocks:
        return torch.cat([first, second], dim=1)
    return torch.stack([first, second], dim=-1).reshape(num_steps, num_hiddens)  # interleave columns


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(_encoding, id="float32"),
        pytest.param(lambda t, d: _encoding(t, d).double(), id="float64"),
        pytest.param(lambda t, d: __import__("attn_course").positional_encoding(t, d), id="course"),
    ],
)
def test_check_positional_encoding_right_answer(fn):
    assert_correct(checks.check_positional_encoding(fn), "i from 0")


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        pytest.param(1, ["expected a function"], id="not-callable"),
        pytest.param(lambda t, d: _encoding(t, d, swap=True), ["swapped"], id="swapped"),
        pytest.param(lambda t, d: _encoding(t, d, start=1), ["positions start at 0"], id="from-1"),
        pytest.param(
            lambda t, d: _encoding(t, d, exponent=lambda j, dd: j / dd), ["exponent is 2j / D"], id="exponent-j"
        ),
        pytest.param(lambda t, d: _encoding(t, d, exponent=lambda j, dd: -2 * j / dd), ["minus sign"], id="no-minus"),
        pytest.param(lambda t, d: _encoding(t, d, blocks=True), ["not two blocks"], id="blocks"),
        pytest.param(lambda t, d: _encoding(t, d).T, ["transposed"], id="transposed"),
        pytest.param(lambda t, d: _encoding(t, d).long(), ["floating-point"], id="int"),
        pytest.param(lambda t, d: _encoding(t, d)[:, :2], ["expected shape"], id="shape"),
        pytest.param(lambda t, d: _encoding(t, d) * 2, ["differs from ac.positional_encoding"], id="other"),
        pytest.param(lambda t, d: torch.zeros(t, d).sin_().log(), ["holds infinity", "between -1 and 1"], id="inf"),
        pytest.param(lambda t, d: _encoding(t, d) / 0 * 0, ["holds NaN"], id="nan"),
        pytest.param(lambda t, d: _encoding(t, d).round(decimals=3), ["close", "rounded to 3 decimals"], id="rounded"),
    ],
)
def test_check_positional_encoding_hints(fn, words):
    assert_hint(checks.check_positional_encoding(fn), *words)


def test_check_positional_encoding_hints_per_column_exponent():
    def per_column(num_steps, num_hiddens):
        pos = torch.arange(num_steps, dtype=torch.float64).unsqueeze(1)
        cols = torch.arange(num_hiddens, dtype=torch.float64)
        angles = pos * 10000.0 ** (-2 * cols / num_hiddens)  # each column its own frequency: wrong
        return torch.where(cols.long() % 2 == 0, torch.sin(angles), torch.cos(angles))

    assert_hint(checks.check_positional_encoding(per_column), "share one frequency")


def _per_column_exponent(num_steps, num_hiddens):
    """Each column c its own frequency 10000^(-c / D): right in the sin columns, wrong in the cos columns."""
    pos = torch.arange(num_steps, dtype=torch.float64).unsqueeze(1)
    cols = torch.arange(num_hiddens, dtype=torch.float64)
    angles = pos * 10000.0 ** (-cols / num_hiddens)  # (T, D)
    return torch.where(cols.long() % 2 == 0, torch.sin(angles), torch.cos(angles))


def test_check_positional_encoding_names_the_cos_columns_of_a_per_column_exponent():
    """Row 0 is [0, 1, 0, 1, ...] for any frequencies: the hint names the columns and the exponent, not the rows."""
    assert not torch.equal(_per_column_exponent(5, 8)[1:], _encoding(5, 8).double()[1:])
    torch.testing.assert_close(_per_column_exponent(5, 8)[:, 0::2], _encoding(5, 8).double()[:, 0::2])
    feedback = checks.check_positional_encoding(_per_column_exponent)
    assert_hint(feedback, "cos columns", "10000^(-(2j + 1) / D)", "pair index j")
    assert "first rows" not in repr(feedback)


def test_check_positional_encoding_fallback_names_the_first_wrong_column_and_row():
    def wrong_last_pair(num_steps, num_hiddens):
        out = _encoding(num_steps, num_hiddens).double()
        out[:, -2] = torch.sin(torch.arange(num_steps) * 0.5)  # one frequency changed
        return out

    feedback = checks.check_positional_encoding(wrong_last_pair)
    assert_hint(feedback, "column 6 (sin(i w_3)", "from row 1 on", "Row 0 is [0, 1, 0, 1, ...]")


def test_check_positional_encoding_hidden_sizes_vary():
    """An encoding of one fixed size passes one hidden case at most."""

    def fixed_size(num_steps, num_hiddens):
        return _encoding(7, 8)

    assert_hint(checks.check_positional_encoding(fixed_size), "expected shape")


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words of its cause
# ----------------------------------------------------------------------------------------------


def _encoding_eight(num_steps, num_hiddens):
    return _encoding(num_steps, 8)  # the notebook's D = 8, written in


ATTACKS = {
    "check_rotation": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", _rotation_by_angle(1.0).tolist()),
        attack("a NumPy array", "ndarray", _rotation_by_angle(1.0).numpy()),
        attack("angle 2: delta without w", "not 2", _rotation_by_angle(2.0)),
        attack("angle w: one position", "one position", _rotation_by_angle(0.5)),
        attack("rounded to 2 decimals", "rounded", _rotation_by_angle(1.0).round(decimals=2)),
        attack("an integer tensor", "floating-point", torch.eye(2, dtype=torch.int64)),
        attack("float16", "float16", _rotation_by_angle(1.0).half()),
        attack("the identity", "identity", torch.eye(2)),
        attack("the vector at position 2, not a matrix", "got (2,)", torch.tensor([math.sin(1.0), math.cos(1.0)])),
        attack("degrees", "radians", _rotation_by_angle(math.radians(1.0))),
        attack("NaN", "NaN", torch.full((2, 2), math.nan)),
    ],
    "check_positional_encoding": [
        attack("None left in place", "replace None", None),
        attack("a string", "expected a function", "sin/cos"),
        attack("sin and cos swapped", "swapped", lambda t, d: _encoding(t, d, swap=True)),
        attack("positions from 1", "positions start at 0", lambda t, d: _encoding(t, d, start=1)),
        attack("exponent j / D", "exponent is 2j / D", lambda t, d: _encoding(t, d, exponent=lambda j, dd: j / dd)),
        attack("no minus sign", "minus sign", lambda t, d: _encoding(t, d, exponent=lambda j, dd: -2 * j / dd)),
        attack("two blocks", "not two blocks", lambda t, d: _encoding(t, d, blocks=True)),
        attack("transposed", "transposed", lambda t, d: _encoding(t, d).T),
        attack("an integer tensor", "floating-point", lambda t, d: _encoding(t, d).long()),
        attack("rounded", "rounded", lambda t, d: _encoding(t, d).round(decimals=3)),
        attack("float16", "float16", lambda t, d: _encoding(t, d).half()),
        attack("D = 8 written in", "num_hiddens", _encoding_eight),
        attack("a NumPy array", "ndarray", lambda t, d: _encoding(t, d).numpy()),
    ],
}
