"""attn_course.checks: the exercise checks give "Correct" for a right answer and a hint for each mistake."""

import math

import numpy as np
import pytest
import torch

from attn_course import checks
from attn_course.checks import (
    Feedback,
    check_epanechnikov,
    check_leave_one_out_mask,
    check_nw_weights,
    check_pooling_limit,
)


def assert_correct(feedback):
    assert isinstance(feedback, Feedback)
    assert feedback and feedback.passed is True
    assert repr(feedback).startswith("Correct: ")


def assert_hint(feedback, *words):
    assert isinstance(feedback, Feedback)
    assert not feedback and feedback.passed is False
    text = repr(feedback)
    assert text.startswith("Not yet: ")
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"


def test_feedback_truthiness_and_repr():
    assert bool(Feedback(True, "fine")) and repr(Feedback(True, "fine")) == "Correct: fine"
    assert not Feedback(False, "look again") and repr(Feedback(False, "look again")) == "Not yet: look again"


def test_every_check_function_is_covered_here():
    public = {name for name in checks.__all__ if name.startswith("check_")}
    assert public == {"check_nw_weights", "check_pooling_limit", "check_epanechnikov", "check_leave_one_out_mask"}


# ----------------------------------------------------------------------------------------------
# check_nw_weights: query 2.0, keys 1.0, 2.0, 4.0, Gaussian, h = 1
# ----------------------------------------------------------------------------------------------

E = [math.exp(-0.5), math.exp(0.0), math.exp(-2.0)]  # exp of the scores -(x - x_i)^2 / 2
RIGHT = [e / sum(E) for e in E]


def _softmax(scores):
    e = [math.exp(s) for s in scores]
    return torch.tensor([v / sum(e) for v in e])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_check_nw_weights_right_answer(dtype):
    assert_correct(check_nw_weights(torch.tensor(RIGHT, dtype=dtype)))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (RIGHT, ["torch.Tensor", "list"]),
        (np.array(RIGHT), ["torch.Tensor", "ndarray"]),
        (torch.tensor(RIGHT[:2]), ["expected shape (3,)", "got (2,)"]),
        (torch.tensor([RIGHT]), ["expected shape (3,)", "got (1, 3)"]),
        (torch.tensor([0, 1, 0]), ["floating-point", "torch.int64"]),
        (torch.tensor(E), ["kernel values", "divide by their sum"]),
        (torch.tensor([e / math.sqrt(2 * math.pi) for e in E]), ["kernel values"]),
        (_softmax([0.5, 0.0, 2.0]), ["MINUS"]),
        (_softmax([-1.0, 0.0, -4.0]), ["1/2"]),
        (_softmax([-0.5, 0.0, -1.0]), ["square the distance"]),
        (torch.tensor([1.0, 1.0, 1.0]), ["sum to 1", "3.0000"]),
        (torch.tensor([0.2, 0.3, 0.5]), ["not softmax"]),
    ],
    ids=[
        "none",
        "list",
        "numpy",
        "short",
        "2-D",
        "integer",
        "kernel-values",
        "density-values",
        "sign",
        "missing-half",
        "not-squared",
        "sum",
        "other",
    ],
)
def test_check_nw_weights_hints(answer, words):
    assert_hint(check_nw_weights(answer), *words)


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
        (None, ["replace None"]),
        ("three", ["one number", "str"]),
        ([1.0, 2.0], ["one number", "list"]),
        (np.array([1.0, 2.0]), ["one number", "ndarray"]),
        (torch.tensor([3.0, 3.0]), ["one number", "Tensor"]),
        (2.0, ["median"]),
        (6.0, ["1/n", "sum_i y_i / n"]),
    ],
    ids=["none", "str", "list", "numpy-array", "tensor-2", "median", "other"],
)
def test_check_pooling_limit_hints(answer, words):
    assert_hint(check_pooling_limit(answer, Y), *words)


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
        (None, ["replace None"]),
        (0.75, ["function of u", "float"]),
        (_raises, ["raised ZeroDivisionError", "oops"]),
        (lambda u: u.tolist(), ["torch.Tensor", "list"]),
        (lambda u: u[:10], ["expected shape (81,)", "got (10,)"]),
        (lambda u: 0.75 * (1 - u**2), ["negative for |u| > 1", "clamp"]),
        (lambda u: 0.75 * (1 - u**2).abs(), ["exactly 0 for |u| > 1"]),
        (lambda u: torch.clamp(1 - u**2, min=0), ["scale is 1 ", "3/4"]),
        (lambda u: torch.where(u.abs() <= 1, 0.5, 0.0).to(u.dtype), ["3/4 (1 - u^2)"]),
    ],
    ids=["none", "not-callable", "raises", "list", "shape", "negative", "nonzero-outside", "scale", "boxcar"],
)
def test_check_epanechnikov_hints(fn, words):
    assert_hint(check_epanechnikov(fn), *words)


def test_check_epanechnikov_accepts_an_answer_that_works_in_place():
    def in_place(u):
        u.pow_(2)  # squares the grid it was given: the check must compare against its own copy
        return 0.75 * torch.clamp(1 - u, min=0)

    assert_correct(check_epanechnikov(in_place))


# ----------------------------------------------------------------------------------------------
# check_leave_one_out_mask
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [5, 3])
def test_check_leave_one_out_mask_right_answer(n):
    mask = torch.tensor([[i != j for j in range(n)] for i in range(n)])
    assert_correct(check_leave_one_out_mask(mask, n))


@pytest.mark.parametrize(
    "mask, words",
    [
        (None, ["replace None", "(5, 5) bool tensor"]),
        ([[True] * 5] * 5, ["torch.Tensor", "list"]),
        (torch.ones(4, 4, dtype=torch.bool), ["expected shape (5, 5)", "got (4, 4)"]),
        (1.0 - torch.eye(5), ["bool tensor", "torch.float32"]),
        (torch.eye(5, dtype=torch.bool), ["polarity is reversed"]),
        (torch.ones(5, 5, dtype=torch.bool), ["only the diagonal"]),
    ],
    ids=["none", "list", "shape", "float", "reversed", "all-true"],
)
def test_check_leave_one_out_mask_hints(mask, words):
    assert_hint(check_leave_one_out_mask(mask), *words)
