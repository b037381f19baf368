"""attn_course.checks.nb06, the checks of notebook 06 (multi-head attention and positional encoding):
"Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import as_int_float_tensor_numpy, assert_correct, assert_hint, attack

from attn_course import (
    checks,
)
from attn_course.checks import (
    check_parameter_count,
    check_rotation,
    check_split_shape,
)

# ----------------------------------------------------------------------------------------------
# Notebook 06, check_split_shape: split_heads of x (B, T, H * dh) = (2, 5, 8) into H = 4 heads
# ----------------------------------------------------------------------------------------------


def _split_by_reshape():
    x = torch.zeros(2, 5, 8)  # (B, T, H * dh)
    return x.reshape(2, 5, 4, 2).transpose(1, 2).reshape(2 * 4, 5, 2).shape  # (B, H, T, dh) -> (B * H, T, dh)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param((8, 5, 2), id="tuple"),
        pytest.param([8, 5, 2], id="list"),
        pytest.param(torch.Size([8, 5, 2]), id="size"),
        pytest.param(_split_by_reshape(), id="reshape"),
        pytest.param(np.array([8, 5, 2]), id="numpy"),
        pytest.param(torch.tensor([8, 5, 2]), id="tensor"),
    ],
)
def test_check_split_shape_right_answer(answer):
    assert_correct(check_split_shape(answer), "2 * 4 = 8", "8 / 4 = 2")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "(1, 2, 3)"], id="none"),
        pytest.param("8, 5, 2", ["expected a shape", "str"], id="str"),
        pytest.param("852", ["expected a shape", "str"], id="digits"),
        pytest.param(8, ["expected a shape", "int"], id="int"),
        pytest.param((8.0, 5.0, 2.0), ["whole numbers", "got float in (8.0, 5.0, 2.0)"], id="floats"),
        pytest.param((8, 5, 2.0), ["whole numbers", "got float in (8, 5, 2.0)"], id="one-float"),
        pytest.param(torch.tensor([8.0, 5.0, 2.0]), ["whole numbers", "Tensor"], id="float-tensor"),
        pytest.param(torch.tensor(8), ["expected a shape", "Tensor"], id="0-d-tensor"),
        pytest.param(
            (2, 4, 5, 2), ["before the head axis is folded into the batch axis", "(B * H, T, dh)"], id="unfolded"
        ),
        pytest.param((8, 5, 8), ["its share of the features", "dh = 8 / 4"], id="full-width-heads"),
        pytest.param((2, 5, 4, 2), ["after the first reshape"], id="first-reshape"),
        pytest.param((2, 5, 8), ["(B, T, H * dh) -> (B * H, T, dh)", "B = 2, T = 5, H = 4"], id="input-shape"),
        pytest.param((5, 8, 2), ["(B, T, H * dh) -> (B * H, T, dh)"], id="swapped"),
        pytest.param((8, 2, 5), ["(B, T, H * dh) -> (B * H, T, dh)"], id="t-and-dh-swapped"),
    ],
)
def test_check_split_shape_hints(answer, words):
    assert_hint(check_split_shape(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_parameter_count: MultiHeadAttention(num_hiddens=64, num_heads=8) without biases
# ----------------------------------------------------------------------------------------------

MHA_PARAMS = 4 * 64 * 64  # W_q, W_k, W_v, W_o, each 64 x 64, whatever the number of heads


@pytest.mark.parametrize(
    "answer",
    [
        *as_int_float_tensor_numpy(MHA_PARAMS),
        pytest.param(sum([64 * 64] * 4), id="sum"),
    ],
)
def test_check_parameter_count_right_answer(answer):
    assert_correct(check_parameter_count(answer), "16384", "heads split the work")


def test_check_parameter_count_agrees_with_torch_multihead_attention():
    ref = torch.nn.MultiheadAttention(64, 8, bias=False, device="meta")  # meta: no memory, no random numbers
    count = sum(p.numel() for p in ref.parameters())
    assert count == MHA_PARAMS
    assert_correct(check_parameter_count(count))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "number of parameters"], id="none"),
        pytest.param("16k", ["one number", "str"], id="str"),
        pytest.param([MHA_PARAMS], ["one number", "list"], id="list"),
        pytest.param(torch.tensor([1.0, 2.0]), ["one number", "Tensor"], id="tensor-2"),
        pytest.param(3 * 64 * 64, ["W_q, W_k and W_v", "output projection W_o"], id="no-w_o"),
        pytest.param(8 * MHA_PARAMS, ["size 64 / 8", "share the 64 x 64 matrices"], id="per-head-copies"),
        pytest.param(MHA_PARAMS + 4 * 64, ["no biases", "bias=False"], id="with-biases"),
        pytest.param(MHA_PARAMS // 8, ["count the entries of W_q, W_k, W_v and W_o"], id="divided-by-heads"),
        pytest.param(MHA_PARAMS + 1, ["count the entries"], id="off"),
        pytest.param(0, ["count the entries"], id="zero"),
    ],
)
def test_check_parameter_count_hints(answer, words):
    assert_hint(check_parameter_count(answer), *words)


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
# check_split_merge and check_multi_head (build it): against torch.nn.MultiheadAttention
# ----------------------------------------------------------------------------------------------


def _split(x, num_heads):
    batch, steps, size = x.shape
    return (
        x.reshape(batch, steps, num_heads, size // num_heads).permute(0, 2, 1, 3).reshape(-1, steps, size // num_heads)
    )


def _merge(x, num_heads):
    steps, dh = x.shape[1:]
    return x.reshape(-1, num_heads, steps, dh).permute(0, 2, 1, 3).reshape(-1, steps, num_heads * dh)


def _split_head_major(x, num_heads):
    batch, steps, size = x.shape
    return (
        x.reshape(batch, steps, num_heads, size // num_heads).permute(2, 0, 1, 3).reshape(-1, steps, size // num_heads)
    )


def _split_strided(x, num_heads):
    batch, steps, size = x.shape
    return (
        x.reshape(batch, steps, size // num_heads, num_heads).permute(0, 3, 1, 2).reshape(-1, steps, size // num_heads)
    )


def _split_no_permute(x, num_heads):
    return x.reshape(x.shape[0] * num_heads, x.shape[1], -1)


def _split_in_place(x, num_heads):
    x.mul_(2.0)
    return _split(x / 2.0, num_heads)


def _merge_in_place(x, num_heads):
    out = _merge(x.clone(), num_heads)
    x.zero_()
    return out


@pytest.mark.parametrize("which", ["by-hand", "course"])
def test_check_split_merge_right_answer(which):
    from attn_course import merge_heads, split_heads

    split, merge = (_split, _merge) if which == "by-hand" else (split_heads, merge_heads)
    assert_correct(checks.check_split_merge(split, merge), "undoes")


@pytest.mark.parametrize(
    ("split", "merge", "words"),
    [
        pytest.param(None, _merge, ["replace None", "split_heads"], id="no-split"),
        pytest.param(_split, None, ["replace None", "merge_heads"], id="no-merge"),
        pytest.param(_split, "merge", ["expected a function"], id="not-callable"),
        pytest.param(_split_no_permute, _merge, ["mixes positions and heads"], id="no-permute"),
        pytest.param(_split_head_major, _merge, ["head order"], id="head-major"),
        pytest.param(_split_strided, _merge, ["consecutive features"], id="strided"),
        pytest.param(_split_in_place, _merge, ["split_heads", "changed its input x in place"], id="in-place"),
        pytest.param(_split, _merge_in_place, ["merge_heads", "changed its input x in place"], id="merge-in-place"),
        pytest.param(lambda x, h: x, _merge, ["split_heads", "expected shape"], id="identity"),
        pytest.param(
            _split, lambda x, h: x.reshape(x.shape[0] // h, x.shape[1], -1), ["does not undo"], id="merge-no-permute"
        ),
        pytest.param(_split, lambda x, h: x, ["merge_heads", "expected shape"], id="merge-identity"),
        pytest.param(lambda x, h: x.reshape(3, 7), _merge, ["raised RuntimeError"], id="raises"),
    ],
)
def test_check_split_merge_hints(split, merge, words):
    assert_hint(checks.check_split_merge(split, merge), *words)


def _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, *, split=_split, merge=_merge, project=True, scale=None):
    """A learner's multi-head attention with x @ W weights: right with the defaults, each keyword a mistake."""
    q, k, v = split(x_q @ W_q, num_heads), split(x_kv @ W_k, num_heads), split(x_kv @ W_v, num_heads)
    scale = q.shape[-1] ** -0.5 if scale is None else scale(x_q.shape[-1])
    out = merge(torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v, num_heads)  # (B, Q, D)
    return out @ W_o if project else out


def _merge_head_major(x, num_heads):
    steps, dh = x.shape[1:]
    return x.reshape(num_heads, -1, steps, dh).permute(1, 2, 0, 3).reshape(-1, steps, num_heads * dh)


def _merge_strided(x, num_heads):
    steps, dh = x.shape[1:]
    return x.reshape(-1, num_heads, steps, dh).permute(0, 2, 3, 1).reshape(-1, steps, num_heads * dh)


def _course_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
    import attn_course as ac

    return ac.multi_head_attention(
        x_q, x_kv, x_kv, lambda t: t @ W_q, lambda t: t @ W_k, lambda t: t @ W_v, lambda t: t @ W_o, num_heads
    )[0]


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(_multi_head, id="by-hand"),
        pytest.param(_course_multi_head, id="course"),
        pytest.param(
            lambda *a: _multi_head(*a, split=_split_head_major, merge=_merge_head_major), id="head-major-both-ways"
        ),
    ],
)
def test_check_multi_head_right_answer(fn):
    assert_correct(checks.check_multi_head(fn), "torch.nn.MultiheadAttention")


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        pytest.param("f", ["expected a function"], id="not-callable"),
        pytest.param(lambda *a: _multi_head(*a, project=False), ["output projection is missing"], id="no-projection"),
        pytest.param(lambda *a: _multi_head(*a, split=_split_head_major), ["head order"], id="split-head-major"),
        pytest.param(lambda *a: _multi_head(*a, merge=_merge_head_major), ["head order"], id="merge-head-major"),
        pytest.param(
            lambda *a: _multi_head(*a, split=_split_strided, merge=_merge_strided),
            ["consecutive features"],
            id="strided",
        ),
        pytest.param(lambda *a: _multi_head(*a, split=_split_strided), ["when splitting"], id="split-strided"),
        pytest.param(lambda *a: _multi_head(*a, merge=_merge_strided), ["when merging"], id="merge-strided"),
        pytest.param(lambda *a: _multi_head(*a, split=_split_no_permute), ["mixes positions"], id="no-permute"),
        pytest.param(lambda *a: _multi_head(*a, scale=lambda d: 1.0), ["scale is missing"], id="no-scale"),
        pytest.param(lambda *a: _multi_head(*a, scale=lambda d: d**-0.5), ["sqrt(dh), not sqrt(D)"], id="scale-D"),
        pytest.param(
            lambda x_q, x_kv, *w: _multi_head(x_q, x_kv, *[t.T for t in w[:4]], w[4]), ["transposed"], id="transposed"
        ),
        pytest.param(lambda *a: _multi_head(*a)[:, :1], ["expected shape"], id="shape"),
        pytest.param(lambda *a: _multi_head(*a) * 2.0, ["differ"], id="other"),
        pytest.param(lambda *a: 1 / 0, ["raised ZeroDivisionError"], id="raises"),
    ],
)
def test_check_multi_head_hints(fn, words):
    assert_hint(checks.check_multi_head(fn), *words)


def test_check_multi_head_leaves_its_inputs_alone_and_catches_a_learner_who_does_not():
    def in_place(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
        out = _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads)
        W_o.zero_()
        return out

    assert_hint(checks.check_multi_head(in_place), "changed its input W_o in place")


def test_check_multi_head_compares_with_a_reference_computed_before_the_learners_call():
    """A function that zeroes the weights it was given and returns zeros cannot make the reference agree with it."""

    def zero_everything(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
        for w in (W_q, W_k, W_v, W_o):
            w.zero_()
        return torch.zeros_like(x_q)

    assert_hint(checks.check_multi_head(zero_everything), "changed its input W_q in place")


def test_check_multi_head_hidden_sizes_vary():
    """A head size or scale written as a number passes one hidden case at most."""

    def fixed_scale(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
        return _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, scale=lambda d: 3**-0.5)  # dh = 3 in one case

    assert_hint(checks.check_multi_head(fixed_scale), "differ")


def test_check_multi_head_names_nan_output():
    assert_hint(checks.check_multi_head(lambda *a: _multi_head(*a) * math.nan), "holds NaN")


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


def _split_four_heads(x, num_heads):
    return _split(x, 4)  # the notebook's H = 4, written in


def _split_keeps_head_axis(x, num_heads):
    batch, steps, size = x.shape
    return x.reshape(batch, steps, num_heads, size // num_heads).permute(0, 2, 1, 3)  # (B, H, T, dh), not folded


def _multi_head_scales_in_place(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
    W_q /= (x_q.shape[-1] // num_heads) ** 0.5  # folds the scale into the caller's W_q
    return _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, scale=lambda d: 1.0)


def _multi_head_two_heads(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
    return _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, 2)  # the first case's H = 2, written in


def _multi_head_over_queries(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    weights = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, dim=-2)  # over the queries
    return _merge(weights @ v, num_heads) @ W_o


def _encoding_eight(num_steps, num_hiddens):
    return _encoding(num_steps, 8)  # the notebook's D = 8, written in


ATTACKS = {
    "check_split_shape": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "(8, 5, 2)"),
        attack("a single number", "int", 80),
        attack("floats", "whole numbers", (8.0, 5.0, 2.0)),
        attack("the head axis not folded", "before the head axis is folded", (2, 4, 5, 2)),
        attack("full-width heads", "dh = 8 / 4", (8, 5, 8)),
        attack("after the first reshape", "after the first reshape", (2, 5, 4, 2)),
        attack("T first", "batch axis", (5, 8, 2)),
        attack("H alone, B forgotten", "B * H", (4, 5, 2)),
        attack("two axes", "three axes", (8, 10)),
        attack("the input shape unchanged", "B = 2, T = 5, H = 4", (2, 5, 8)),
    ],
    "check_parameter_count": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "16384"),
        attack("a list", "list", [MHA_PARAMS]),
        attack("W_o forgotten", "output projection W_o", 3 * 64 * 64),
        attack("a copy per head", "share the 64 x 64 matrices", 8 * MHA_PARAMS),
        attack("with biases", "no biases", MHA_PARAMS + 4 * 64),
        attack("one head's share", "one head", MHA_PARAMS // 8),
        attack("one matrix", "four", 64 * 64),
        attack("not squared", "64 x 64", 4 * 64),
        attack("a bool", "bool", True),
    ],
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
    "check_split_merge": [
        attack("split_heads None", "replace None", None, _merge),
        attack("merge_heads None", "merge_heads", _split, None),
        attack("a string", "expected a function", _split, "merge"),
        attack("reshape without permute", "mixes positions and heads", _split_no_permute, _merge),
        attack("head-major order", "head order", _split_head_major, _merge),
        attack("strided heads", "consecutive features", _split_strided, _merge),
        attack("split scales x in place", "changed its input x in place", _split_in_place, _merge),
        attack("merge zeroes x in place", "changed its input x in place", _split, _merge_in_place),
        attack(
            "merge by reshape alone",
            "does not undo",
            _split,
            lambda x, h: x.reshape(x.shape[0] // h, x.shape[1], -1),
        ),
        attack("the head axis kept", "(B * H, T, dh)", _split_keeps_head_axis, _merge),
        attack("H = 4 written in", "num_heads = 2", _split_four_heads, _merge),
        attack("a list", "list", lambda x, h: list(_split(x, h)), _merge),
    ],
    "check_multi_head": [
        attack("None left in place", "replace None", None),
        attack("a string", "expected a function", "multi_head"),
        attack("no output projection", "output projection is missing", lambda *a: _multi_head(*a, project=False)),
        attack("head-major split", "head order", lambda *a: _multi_head(*a, split=_split_head_major)),
        attack("no scale", "scale is missing", lambda *a: _multi_head(*a, scale=lambda d: 1.0)),
        attack("scale by sqrt(D)", "sqrt(dh), not sqrt(D)", lambda *a: _multi_head(*a, scale=lambda d: d**-0.5)),
        attack(
            "weights transposed",
            "transposed",
            lambda x_q, x_kv, *w: _multi_head(x_q, x_kv, *[t.T for t in w[:4]], w[4]),
        ),
        attack("folds the scale into W_q in place", "changed its input W_q in place", _multi_head_scales_in_place),
        attack("H = 2 written in", "num_heads", _multi_head_two_heads),
        attack("softmax over the queries", "dim=-1", _multi_head_over_queries),
        attack("(output, weights) returned", "tuple", lambda *a: (_multi_head(*a), None)),
        attack("float16", "float16", lambda *a: _multi_head(*a).half()),
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
