"""attn_course.checks.pooling, the checks of notebook 01 (attention pooling):
"Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack, softmax_by_hand

from attn_course import nadaraya_watson
from attn_course.checks import (
    check_epanechnikov,
    check_nw_pooling,
    check_nw_weights,
    check_pooling_limit,
)

# ----------------------------------------------------------------------------------------------
# check_nw_weights: query 2.0, keys 1.0, 2.0, 4.0, Gaussian, h = 1
# ----------------------------------------------------------------------------------------------

E = [math.exp(-0.5), math.exp(0.0), math.exp(-2.0)]  # exp of the scores -(x - x_i)^2 / 2
RIGHT = [e / sum(E) for e in E]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_check_nw_weights_right_answer(dtype):
    assert_correct(check_nw_weights(torch.tensor(RIGHT, dtype=dtype)))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(RIGHT, ["torch.Tensor", "list"], id="list"),
        pytest.param(np.array(RIGHT), ["torch.Tensor", "ndarray"], id="numpy"),
        pytest.param(torch.tensor(RIGHT[:2]), ["expected shape (3,)", "got (2,)"], id="short"),
        pytest.param(torch.tensor([RIGHT]), ["expected shape (3,)", "got (1, 3)"], id="2-D"),
        pytest.param(torch.tensor([0, 1, 0]), ["floating-point", "torch.int64"], id="integer"),
        pytest.param(torch.tensor(E), ["kernel values", "divide by their sum"], id="kernel-values"),
        pytest.param(torch.tensor([e / math.sqrt(2 * math.pi) for e in E]), ["kernel values"], id="density-values"),
        pytest.param(softmax_by_hand([0.5, 0.0, 2.0]), ["MINUS"], id="sign"),
        pytest.param(softmax_by_hand([-1.0, 0.0, -4.0]), ["1/2"], id="missing-half"),
        pytest.param(softmax_by_hand([-0.5, 0.0, -1.0]), ["square the distance"], id="not-squared"),
        pytest.param(torch.tensor([1.0, 1.0, 1.0]), ["sum to 1", "3.0000"], id="sum"),
        pytest.param(torch.tensor([0.2, 0.3, 0.5]), ["not softmax"], id="other"),
    ],
)
def test_check_nw_weights_hints(answer, words):
    assert_hint(check_nw_weights(answer), *words)


@pytest.mark.parametrize("decimals", [3, 2])
def test_check_nw_weights_rounded_answer_is_told_to_give_more_decimals(decimals):
    rounded = torch.tensor(RIGHT).round(decimals=decimals)  # [0.348, 0.574, 0.078]: right, but rounded
    assert_hint(check_nw_weights(rounded), "close", "decimals")


def test_check_nw_weights_nan_is_named_not_told_the_weights_sum_to_1():
    feedback = check_nw_weights(torch.tensor([math.nan, 0.5, 0.5]))
    assert_hint(feedback, "NaN")
    assert "sum to 1" not in feedback.message


# ----------------------------------------------------------------------------------------------
# check_pooling_limit
# ----------------------------------------------------------------------------------------------

Y = torch.tensor([1.0, 2.0, 6.0])  # mean 3, median 2


@pytest.mark.parametrize("answer", [3.0, 3, torch.tensor(3.0), np.float64(3.0), Y.mean()])
def test_check_pooling_limit_right_answer(answer):
    assert_correct(check_pooling_limit(answer, Y))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param("three", ["one number", "str"], id="str"),
        pytest.param([1.0, 2.0], ["one number", "list"], id="list"),
        pytest.param(np.array([1.0, 2.0]), ["one number", "ndarray"], id="numpy-array"),
        pytest.param(torch.tensor([3.0, 3.0]), ["one number", "Tensor"], id="tensor-2"),
        pytest.param(2.0, ["median"], id="median"),
        pytest.param(6.0, ["1/n", "sum_i y_i / n"], id="other"),
    ],
)
def test_check_pooling_limit_hints(answer, words):
    assert_hint(check_pooling_limit(answer, Y), *words)


def test_check_pooling_limit_rounded_mean_is_told_to_give_more_decimals():
    y = torch.tensor([1.0, 2.0, 6.5])  # mean 3.1667
    assert_hint(check_pooling_limit(3.17, y), "close", "decimals")


def test_check_pooling_limit_nan_is_named():
    assert_hint(check_pooling_limit(math.nan, Y), "NaN")


# ----------------------------------------------------------------------------------------------
# check_epanechnikov
# ----------------------------------------------------------------------------------------------


def _right(u):
    return 0.75 * torch.clamp(1 - u**2, min=0)


def _right_with_where(u):
    return torch.where(u.abs() <= 1, 0.75 * (1 - u**2), torch.zeros_like(u))


def _raises(u):
    raise ZeroDivisionError("oops")


@pytest.mark.parametrize("fn", [_right, _right_with_where])
def test_check_epanechnikov_right_answer(fn):
    assert_correct(check_epanechnikov(fn))


@pytest.mark.parametrize(
    "fn, words",
    [
        pytest.param(0.75, ["function of u", "float"], id="not-callable"),
        pytest.param(_raises, ["raised ZeroDivisionError", "oops"], id="raises"),
        pytest.param(lambda u: u.tolist(), ["torch.Tensor", "list"], id="list"),
        pytest.param(lambda u: u[:10], ["expected shape (81,)", "got (10,)"], id="shape"),
        pytest.param(lambda u: 0.75 * (1 - u**2), ["negative for |u| > 1", "clamp"], id="negative"),
        pytest.param(lambda u: 0.75 * (1 - u**2).abs(), ["exactly 0 for |u| > 1"], id="nonzero-outside"),
        pytest.param(lambda u: torch.clamp(1 - u**2, min=0), ["scale is 1 ", "3/4"], id="scale"),
        pytest.param(lambda u: torch.where(u.abs() <= 1, 0.5, 0.0).to(u.dtype), ["3/4 (1 - u^2)"], id="boxcar"),
    ],
)
def test_check_epanechnikov_hints(fn, words):
    assert_hint(check_epanechnikov(fn), *words)


def test_check_epanechnikov_names_an_answer_that_changes_u_in_place():
    def in_place(u):
        u.pow_(2)  # squares the grid it was given: right values, but the caller's tensor is changed
        return 0.75 * torch.clamp(1 - u, min=0)

    assert_hint(check_epanechnikov(in_place), "changed its input u in place")


def test_check_epanechnikov_nan_is_named():
    assert_hint(check_epanechnikov(lambda u: torch.where(u.abs() < 0.5, math.nan, _right(u))), "NaN")


# ----------------------------------------------------------------------------------------------
# check_nw_pooling: the learner's Gaussian Nadaraya-Watson, run on hidden cases
# ----------------------------------------------------------------------------------------------


def _nw_scores(q, k, h, mask, sign=-1.0, scale=2.0):
    scores = sign * (q.unsqueeze(1) - k.unsqueeze(0)) ** 2 / (scale * h**2)  # (Q, K)
    return scores if mask is None else scores.masked_fill(~mask, -math.inf)


def _nw_right(q, k, v, h, mask=None):
    w = torch.softmax(_nw_scores(q, k, h, mask), dim=-1).nan_to_num(0.0)  # an empty row: zeros
    return w @ v, w


def _nw_right_with_where(q, k, v, h, mask=None):
    w = torch.exp(_nw_scores(q, k, h, mask))
    total = w.sum(-1, keepdim=True)
    w = torch.where(total > 0, w / torch.where(total > 0, total, 1.0), 0.0)
    return w @ v, w


def _nw_reference(q, k, v, h, mask=None):
    return nadaraya_watson(q, k, v, "gaussian", h, mask)


def _nw_nan_on_empty_row(q, k, v, h, mask=None):
    w = torch.softmax(_nw_scores(q, k, h, mask), dim=-1)
    return w @ v, w


def _nw_reversed(q, k, v, h, mask=None):
    return _nw_right(q, k, v, h, None if mask is None else ~mask)


def _nw_over_queries(q, k, v, h, mask=None):
    w = torch.softmax(_nw_scores(q, k, h, mask), dim=0).nan_to_num(0.0)
    return w @ v, w


def _nw_in_place(q, k, v, h, mask=None):
    q.sub_(k.mean())  # centres the queries it was given
    return _nw_right(q + k.mean(), k, v, h, mask)


def _nw_zeroes_keys(q, k, v, h, mask=None):
    k.zero_()  # a reference computed after this call, from the same tensors, would agree with it
    return _nw_right(q, k, v, h, mask)


def _nw_finite_fill(q, k, v, h, mask=None):
    scores = _nw_scores(q, k, h, None)
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)  # finite: a row with no key gets equal weights, not zeros
    w = torch.softmax(scores, dim=-1)
    return w @ v, w


def _nw_finite_penalty(q, k, v, h, mask=None):
    scores = _nw_scores(q, k, h, None)
    if mask is not None:
        scores = scores + (~mask) * -1e9  # lowers masked scores: a row with no key keeps its Gaussian weights
    w = torch.softmax(scores, dim=-1)
    return w @ v, w


@pytest.mark.parametrize("fn", [_nw_right, _nw_right_with_where, _nw_reference])
def test_check_nw_pooling_right_answer(fn):
    assert_correct(check_nw_pooling(fn), "hidden case")


@pytest.mark.parametrize(
    "fn, words",
    [
        pytest.param(None, ["replace None", "my_nw_pooling"], id="none"),
        pytest.param("f", ["expected a function", "str"], id="not-callable"),
        pytest.param(lambda q, k, v, h, mask=None: 1 / 0, ["raised ZeroDivisionError"], id="raises"),
        pytest.param(
            lambda q, k, v, h, mask=None: _nw_right(q, k, v, h, mask)[1],
            ["(predictions, weights)", "Tensor"],
            id="one-output",
        ),
        pytest.param(
            lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[0], _nw_right(q, k, v, h, mask)[1].T),
            ["transposed", "(Q, K)"],
            id="transposed",
        ),
        pytest.param(
            lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[0][:2], _nw_right(q, k, v, h, mask)[1]),
            ["predictions", "expected shape"],
            id="short-predictions",
        ),
        pytest.param(
            lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[0], [1.0]),
            ["weights", "torch.Tensor", "list"],
            id="list-weights",
        ),
        pytest.param(_nw_in_place, ["changed its input queries in place"], id="in-place"),
        pytest.param(_nw_zeroes_keys, ["changed its input keys in place"], id="zeroes-keys"),
        pytest.param(_nw_finite_fill, ["all False", "finite fill", "-inf", "zero weights"], id="finite-fill"),
        pytest.param(_nw_finite_penalty, ["all False", "finite fill", "-inf"], id="finite-penalty"),
        pytest.param(_nw_nan_on_empty_row, ["all False", "NaN", "zero weights"], id="nan-empty-row"),
        pytest.param(_nw_reversed, ["polarity is reversed"], id="reversed-mask"),
        pytest.param(lambda q, k, v, h, mask=None: _nw_right(q, k, v, h), ["ignore the mask"], id="no-mask"),
        pytest.param(_nw_over_queries, ["normalised over the queries", "dim=-1"], id="over-queries"),
        pytest.param(
            lambda q, k, v, h, mask=None: _nw_right(q, k, v, h / math.sqrt(2), mask), ["left out the 2"], id="no-2"
        ),
        pytest.param(
            lambda q, k, v, h, mask=None: _nw_right(q, k, v, math.sqrt(h), mask),
            ["wrong scale", "h squared"],
            id="sqrt-h",
        ),
        pytest.param(
            lambda q, k, v, h, mask=None: _nw_right(q, k, v, 1.0, mask), ["wrong scale", "h squared"], id="no-h"
        ),
        pytest.param(
            lambda q, k, v, h, mask=None: (lambda w: (w @ v, w))(
                torch.softmax(_nw_scores(q, k, h, mask, sign=1.0), -1).nan_to_num(0.0)
            ),
            ["MINUS"],
            id="sign",
        ),
        pytest.param(
            lambda q, k, v, h, mask=None: (lambda w: (w @ v, w))(torch.exp(_nw_scores(q, k, h, mask))),
            ["kernel values", "sum"],
            id="unnormalised",
        ),
        pytest.param(
            lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[1].sum(-1), _nw_right(q, k, v, h, mask)[1]),
            ["weights @ values"],
            id="predictions",
        ),
        pytest.param(
            lambda q, k, v, h, mask=None: (lambda w: (w @ v, w))(
                torch.full((len(q), len(k)), 1 / len(k), dtype=q.dtype)
            ),
            ["differ", "by hand"],
            id="uniform",
        ),
    ],
)
def test_check_nw_pooling_hints(fn, words):
    assert_hint(check_nw_pooling(fn), *words)


def test_check_nw_pooling_hidden_cases_tell_queries_from_keys_and_include_an_empty_row():
    from attn_course.checks.pooling import _pooling_cases

    cases = _pooling_cases()
    assert all(len(q) != len(k) for _, q, k, _, _, _ in cases)
    assert any(m is not None and (~m.any(-1)).any() for *_, m in cases)
    assert [c[1] for c in cases][0].dtype == torch.float64
    assert torch.equal(_pooling_cases()[1][1], cases[1][1])  # the same hidden cases every call


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words of its cause
# ----------------------------------------------------------------------------------------------


def _nw_fixed_size(q, k, v, h, mask=None):
    pred, w = _nw_right(q, k, v, h, mask)
    return pred.reshape(4), w.reshape(4, 7)  # the sizes of the first case, written in


def _nw_first_case_always(q, k, v, h, mask=None):
    from attn_course.checks.pooling import _pooling_cases

    _, q0, k0, v0, h0, m0 = _pooling_cases()[0]
    return _nw_right(q0, k0, v0, h0, m0)  # the right answer for one case, whatever the input


def _epanechnikov_int(u):
    return (0.75 * torch.clamp(1 - u**2, min=0)).long()


ATTACKS = {
    "check_nw_weights": [
        attack("None left in place", "replace None", None),
        attack("a Python list", "list", RIGHT),
        attack("a NumPy array", "ndarray", np.array(RIGHT)),
        attack("a string", "str", "0.348, 0.574, 0.078"),
        attack("rounded to 2 decimals", "rounded", torch.tensor(RIGHT).round(decimals=2)),
        attack("kernel values, not normalised", "kernel values", torch.tensor(E)),
        attack("plus the squared distance", "MINUS", softmax_by_hand([0.5, 0.0, 2.0])),
        attack("the 1/2 left out", "1/2", softmax_by_hand([-1.0, 0.0, -4.0])),
        attack("a (1, 3) row", "got (1, 3)", torch.tensor([RIGHT])),
        attack("an integer tensor", "floating-point", torch.tensor([0, 1, 0])),
        attack("float16 loses digits", "float16", torch.tensor(RIGHT, dtype=torch.float16)),
        attack("all weight on the nearest key (h -> 0)", "h -> 0", torch.tensor([0.0, 1.0, 0.0])),
        attack("equal weights (h -> infinity)", "h -> infinity", torch.full((3,), 1 / 3)),
        attack("the right weights sorted", "order", torch.tensor(sorted(RIGHT, reverse=True))),
    ],
    "check_pooling_limit": [
        attack("None left in place", "replace None", None, Y),
        attack("a string", "str", "mean", Y),
        attack("a bool", "bool", True, Y),
        attack("a list", "list", [3.0], Y),
        attack("the limit prediction at every query, a tensor", "one number", torch.full((5,), 3.0), Y),
        attack("the median", "median", 2.0, Y),
        attack("the sum, not divided by n", "divide", 9.0, Y),
        attack("the weight 1/n, not the prediction", "weight 1/n", 1 / 3, Y),
        attack("rounded", "rounded", 3.17, torch.tensor([1.0, 2.0, 6.5])),
        attack("NaN from an overflowing bandwidth", "NaN", math.nan, Y),
    ],
    "check_epanechnikov": [
        attack("None left in place", "replace None", None),
        attack("a string of the formula", "str", "0.75 * (1 - u**2)"),
        attack("not clipped outside [-1, 1]", "negative for |u| > 1", lambda u: 0.75 * (1 - u**2)),
        attack("absolute value instead of clipping", "exactly 0 for |u| > 1", lambda u: 0.75 * (1 - u**2).abs()),
        attack("the 3/4 left out", "3/4", lambda u: torch.clamp(1 - u**2, min=0)),
        attack(
            "squares u in place", "changed its input u in place", lambda u: 0.75 * torch.clamp(1 - u.pow_(2), min=0)
        ),
        attack("a list", "list", lambda u: (0.75 * torch.clamp(1 - u**2, min=0)).tolist()),
        attack("a NumPy array", "ndarray", lambda u: (0.75 * torch.clamp(1 - u**2, min=0)).numpy()),
        attack("a grid of its own", "(81,)", lambda u: 0.75 * torch.clamp(1 - torch.linspace(-1, 1, 50) ** 2, min=0)),
        attack("an integer tensor", "floating-point", _epanechnikov_int),
        attack("float16", "float16", lambda u: (0.75 * torch.clamp(1 - u**2, min=0)).half()),
        attack("a Gaussian kernel", "exactly 0 for |u| > 1", lambda u: torch.exp(-(u**2) / 2) / math.sqrt(2 * math.pi)),
    ],
    "check_nw_pooling": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "my_nw_pooling"),
        attack("centres the queries in place", "changed its input queries in place", _nw_in_place),
        attack(
            "weights transposed",
            "transposed",
            lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[0], _nw_right(q, k, v, h, mask)[1].T),
        ),
        attack("softmax over the queries", "normalised over the queries", _nw_over_queries),
        attack("mask polarity reversed", "polarity is reversed", _nw_reversed),
        attack("finite fill -1e9", "finite fill", _nw_finite_fill),
        attack("NaN on the empty row", "all False", _nw_nan_on_empty_row),
        attack(
            "the 2 left out", "left out the 2", lambda q, k, v, h, mask=None: _nw_right(q, k, v, h / math.sqrt(2), mask)
        ),
        attack("bandwidth fixed at 1", "h squared", lambda q, k, v, h, mask=None: _nw_right(q, k, v, 1.0, mask)),
        attack("weights only", "(predictions, weights)", lambda q, k, v, h, mask=None: _nw_right(q, k, v, h, mask)[1]),
        attack(
            "three things returned",
            "(predictions, weights)",
            lambda q, k, v, h, mask=None: (*_nw_right(q, k, v, h, mask), h),
        ),
        attack("sizes of the first case written in", "raised", _nw_fixed_size),
        attack("the first case's answer whatever the input", "expected shape", _nw_first_case_always),
        attack(
            "NumPy weights",
            "ndarray",
            lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[0], _nw_right(q, k, v, h, mask)[1].numpy()),
        ),
        attack(
            "float16 output",
            "float16",
            lambda q, k, v, h, mask=None: tuple(t.half() for t in _nw_right(q, k, v, h, mask)),
        ),
    ],
}
