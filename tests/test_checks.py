"""attn_course.checks: the exercise checks give "Correct" for a right answer and a hint for each mistake."""

import math

import numpy as np
import pytest
import torch

from attn_course import (
    PositionWiseFFN,
    RNNSeq2Seq,
    alibi_bias,
    apply_rope,
    causal_mask,
    checks,
    lagrange_basis,
    nadaraya_watson,
)
from attn_course.checks import (
    Feedback,
    check_alibi_row,
    check_alignment_position,
    check_apply_rope,
    check_bmm_shape,
    check_cache_memory,
    check_cache_update,
    check_causal_mask,
    check_causal_row,
    check_context,
    check_convex_bound,
    check_distance_scores,
    check_dot_variance,
    check_epanechnikov,
    check_ffn_parameters,
    check_lagrange_weight,
    check_layer_norm,
    check_leave_one_out_mask,
    check_memory_size,
    check_nearest_neighbour_limit,
    check_new_token_key,
    check_new_token_output,
    check_new_token_scores,
    check_nw_weights,
    check_padding_causal_mask,
    check_padding_mask,
    check_parameter_count,
    check_pooling_limit,
    check_repeat_kv,
    check_rope_angle,
    check_rotation,
    check_scaled_scores,
    check_split_shape,
)
from attn_course.checks.nb04 import NEW_TOKEN
from attn_course.data import lagrange_points, three_token_example
from attn_course.tasks import make_batch


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
    """Each public check has a right-answer test and a hints test in this file."""
    public = sorted(name for name in checks.__all__ if name.startswith("check_"))
    assert {
        "check_nw_weights",
        "check_pooling_limit",
        "check_epanechnikov",
        "check_leave_one_out_mask",
        "check_lagrange_weight",
        "check_nearest_neighbour_limit",
        "check_convex_bound",
        "check_scaled_scores",
        "check_dot_variance",
        "check_distance_scores",
        "check_bmm_shape",
        "check_new_token_key",
        "check_new_token_scores",
        "check_new_token_output",
        "check_padding_mask",
        "check_causal_mask",
        "check_padding_causal_mask",
        "check_split_shape",
        "check_parameter_count",
        "check_rotation",
        "check_alignment_position",
        "check_context",
        "check_memory_size",
        "check_layer_norm",
        "check_ffn_parameters",
        "check_causal_row",
    } <= set(public)
    tests = {name for name, obj in globals().items() if name.startswith("test_") and callable(obj)}
    missing = [
        f"test_{name}_{kind}"
        for name in public
        for kind in ("right_answer", "hints")
        if f"test_{name}_{kind}" not in tests
    ]
    assert not missing, f"checks without tests: {missing}"


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


# ----------------------------------------------------------------------------------------------
# check_lagrange_weight: l_5(3.5) for the ten points of notebook 02
# ----------------------------------------------------------------------------------------------

X_POINTS = [1.1, 1.5, 2.0, 3.1, 4.2, 4.3, 4.6, 5.1, 7.1, 8.3]
Y_POINTS = [2.4, 3.0, 1.1, 4.5, 3.6, 2.2, 1.0, 5.6, 3.7, 0.2]


def _basis(i, x):
    """l_i(x) with 0-based i, by a plain Python product over the other nodes."""
    value = 1.0
    for j, xj in enumerate(X_POINTS):
        if j != i:
            value *= (x - xj) / (X_POINTS[i] - xj)
    return value


L5 = _basis(4, 3.5)  # the fifth point, x_5 = 4.2


def test_the_ten_points_are_those_of_the_data_module():
    x, y = lagrange_points()
    assert x.tolist() == X_POINTS and y.tolist() == Y_POINTS
    assert L5 == pytest.approx(8.0819, abs=1e-4)  # large: Lagrange weights are not bounded by 1


@pytest.mark.parametrize(
    "answer",
    [
        L5,
        torch.tensor(L5, dtype=torch.float64),
        np.float64(L5),
        lagrange_basis(torch.tensor([3.5], dtype=torch.float64), lagrange_points()[0])[0, 4],
    ],
    ids=["float", "tensor", "numpy", "lagrange_basis"],
)
def test_check_lagrange_weight_right_answer(answer):
    feedback = check_lagrange_weight(answer)
    assert_correct(feedback)
    assert "8.0819" in repr(feedback) and "x_5 = 4.2" in repr(feedback)


def _float32_loop():
    nodes = torch.tensor(X_POINTS)  # float32, torch's default
    value = torch.tensor(1.0)
    for j in range(10):
        if j != 4:
            value = value * (3.5 - nodes[j]) / (nodes[4] - nodes[j])
    return value


@pytest.mark.parametrize(
    "answer",
    [_float32_loop(), lagrange_basis(torch.tensor([3.5]), lagrange_points(torch.float32)[0])[0, 4]],
    ids=["loop", "lagrange_basis"],
)
def test_check_lagrange_weight_accepts_a_float32_computation(answer):
    """A right computation in float32 (torch.tensor's default) is right, as in check_nw_weights."""
    assert answer.dtype == torch.float32
    assert abs(float(answer) - L5) < 1e-4 * L5  # right to float32 rounding, which 4.2 - 4.3 amplifies
    assert_correct(check_lagrange_weight(answer))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "l_5(3.5)"]),
        ("eight", ["one number", "str"]),
        ([L5, L5], ["one number", "list"]),
        (torch.tensor([L5, L5]), ["one number", "Tensor"]),
        (_basis(3, 3.5), ["off by one", "x_5 = 4.2", "index 4"]),
        (_basis(5, 3.5), ["off by one", "x_5 = 4.2", "index 4"]),
        (1 / L5, ["upside down", "x - x_j on top"]),
        (-L5, ["multiply (3.5 - x_j) / (x_5 - x_j)"]),
        (8.0, ["multiply (3.5 - x_j) / (x_5 - x_j)"]),
        (1.0, ["multiply (3.5 - x_j) / (x_5 - x_j)"]),
    ],
    ids=["none", "str", "list", "tensor-2", "l_4", "l_6", "reciprocal", "sign", "rounded", "one"],
)
def test_check_lagrange_weight_hints(answer, words):
    assert_hint(check_lagrange_weight(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_nearest_neighbour_limit: h -> 0 at x = 6.0 gives the value of the nearest point, x = 5.1
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [5.6, torch.tensor(5.6), torch.tensor(5.6, dtype=torch.float64), np.float64(5.6)])
def test_check_nearest_neighbour_limit_right_answer(answer):
    feedback = check_nearest_neighbour_limit(answer)
    assert_correct(feedback)
    assert "x = 5.1" in repr(feedback) and "5.6" in repr(feedback)


def test_check_nearest_neighbour_limit_agrees_with_a_tiny_bandwidth():
    x, y = lagrange_points()
    pred, _ = nadaraya_watson(torch.tensor([6.0], dtype=torch.float64), x, y, "gaussian", 1e-3)
    assert_correct(check_nearest_neighbour_limit(pred[0]))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("5.6 or so", ["one number", "str"]),
        ([5.6], ["one number", "list"]),
        (3.7, ["0.9 from x = 5.1", "1.1 from x = 7.1", "nearest"]),
        (sum(Y_POINTS) / 10, ["h -> infinity", "average pooling"]),
        (torch.tensor(Y_POINTS).mean(), ["h -> infinity", "average pooling"]),
        (4.65, ["all weight on the key", "nearest"]),
        (0.0, ["all weight on the key", "nearest"]),
    ],
    ids=["none", "str", "list", "next-nearest", "mean", "mean-float32", "between", "zero"],
)
def test_check_nearest_neighbour_limit_hints(answer, words):
    assert_hint(check_nearest_neighbour_limit(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_convex_bound: a convex combination of the y_i stays below max y_i = 5.6
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [5.6, max(Y_POINTS), torch.tensor(Y_POINTS).max(), np.float64(5.6)])
def test_check_convex_bound_right_answer(answer):
    feedback = check_convex_bound(answer)
    assert_correct(feedback)
    assert "5.6" in repr(feedback) and "convex combination" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("max", ["one number", "str"]),
        (np.array(Y_POINTS), ["one number", "ndarray"]),
        (11.78, ["positive and sum to 1", "exceed the largest value"]),  # the Lagrange estimate at 3.5
        (float("inf"), ["exceed the largest value"]),
        (5.61, ["exceed the largest value"]),
        (5.59, ["which y_i is largest"]),
        (3.7, ["which y_i is largest"]),
        (sum(Y_POINTS) / 10, ["which y_i is largest"]),
    ],
    ids=["none", "str", "numpy-array", "lagrange-value", "inf", "just-above", "just-below", "second-largest", "mean"],
)
def test_check_convex_bound_hints(answer, words):
    assert_hint(check_convex_bound(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_scaled_scores: query [1, 2], keys [1, 0], [0, 1], [1, 1], D = 2
# ----------------------------------------------------------------------------------------------

DOTS = [1.0, 2.0, 3.0]  # q . k for the three keys: 1*1 + 2*0, 1*0 + 2*1, 1*1 + 2*1
SCALED = [v / math.sqrt(2) for v in DOTS]  # [0.7071, 1.4142, 2.1213]


def _scores_by_matmul(dtype):
    q = torch.tensor([[1.0, 2.0]], dtype=dtype)  # (Q, D) = (1, 2)
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=dtype)  # (K, D) = (3, 2)
    return q @ k.T / math.sqrt(2)  # (1, 2) x (2, 3) -> (1, 3)


@pytest.mark.parametrize(
    "answer",
    [
        torch.tensor([SCALED]),
        torch.tensor([SCALED], dtype=torch.float64),
        _scores_by_matmul(torch.float32),
        _scores_by_matmul(torch.float64),
        torch.tensor([SCALED], requires_grad=True),
    ],
    ids=["float32", "float64", "matmul-float32", "matmul-float64", "requires-grad"],
)
def test_check_scaled_scores_right_answer(answer):
    feedback = check_scaled_scores(answer)
    assert_correct(feedback)
    assert "[0.7071, 1.4142, 2.1213]" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "(1, 3) tensor"]),
        ([SCALED], ["torch.Tensor", "list"]),
        (np.array([SCALED]), ["torch.Tensor", "ndarray"]),
        (torch.tensor(SCALED), ["expected shape (1, 3)", "got (3,)"]),
        (torch.tensor([SCALED, SCALED]), ["expected shape (1, 3)", "got (2, 3)"]),
        (torch.tensor([[v] for v in SCALED]), ["transposed", "q @ k.T"]),
        (torch.tensor([[1, 2, 3]]), ["floating-point", "torch.int64"]),
        (torch.tensor([DOTS]), ["plain dot products", "sqrt(D)"]),
        (torch.tensor([[v / 2 for v in DOTS]]), ["square root of D, not by D"]),
        (_softmax(SCALED).unsqueeze(0), ["these are the weights", "into the softmax"]),
        (torch.tensor([[-v for v in SCALED]]), ["(query . key) / sqrt(D)", "D = 2"]),
        (torch.zeros(1, 3), ["(query . key) / sqrt(D)"]),
    ],
    ids=[
        "none",
        "list",
        "numpy",
        "1-D",
        "two-rows",
        "transposed",
        "integer",
        "plain-dots",
        "divided-by-d",
        "softmax-weights",
        "sign",
        "zeros",
    ],
)
def test_check_scaled_scores_hints(answer, words):
    assert_hint(check_scaled_scores(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_dot_variance: Var(q . k) = 64 for D = 64 independent products of variance 1
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [64, 64.0, torch.tensor(64.0), torch.tensor(64), np.float64(64.0), np.int64(64), sum([1.0] * 64)],
    ids=["int", "float", "tensor", "int-tensor", "numpy-float", "numpy-int", "sum-of-ones"],
)
def test_check_dot_variance_right_answer(answer):
    feedback = check_dot_variance(answer)
    assert_correct(feedback)
    assert "64" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("sixty-four", ["one number", "str"]),
        ([64.0], ["one number", "list"]),
        (torch.tensor([64.0, 64.0]), ["one number", "Tensor"]),
        (8, ["standard deviation", "variance"]),
        (torch.tensor(8.0), ["standard deviation"]),
        (1.0, ["after dividing by sqrt(D)"]),
        (32.0, ["how do variances of independent terms combine"]),
        (64.0**2, ["how do variances of independent terms combine"]),
        (0, ["how do variances of independent terms combine"]),
    ],
    ids=["none", "str", "list", "tensor-2", "sqrt", "sqrt-tensor", "after-scaling", "half", "squared", "zero"],
)
def test_check_dot_variance_hints(answer, words):
    assert_hint(check_dot_variance(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_distance_scores: scores whose softmax is softmax(-|q - k|^2 / 2), queries (2, 3, 4), keys (2, 5, 4)
# ----------------------------------------------------------------------------------------------


def _distance_scores_bmm(queries, keys):
    # -|q - k|^2 / 2 = q . k - |k|^2 / 2 - |q|^2 / 2, and the last term is the same for every key
    dots = torch.bmm(queries, keys.transpose(1, 2))  # (B, Q, D) x (B, D, K) -> (B, Q, K)
    return dots - (keys**2).sum(-1).unsqueeze(1) / 2  # (B, Q, K) - (B, 1, K)


def _distance_scores_full(queries, keys):
    diff = queries.unsqueeze(2) - keys.unsqueeze(1)  # (B, Q, 1, D) - (B, 1, K, D) -> (B, Q, K, D)
    return -(diff**2).sum(-1) / 2  # (B, Q, K)


def _distance_scores_float32(queries, keys):
    return _distance_scores_bmm(queries.float(), keys.float())


def _distance_scores_in_place(queries, keys):
    dots = torch.bmm(queries, keys.transpose(1, 2))  # (B, Q, K)
    keys.pow_(2)  # squares the keys it was given: the check must compare against its own copy
    return dots - keys.sum(-1).unsqueeze(1) / 2


def _plain_dots(queries, keys):
    return torch.bmm(queries, keys.transpose(1, 2))  # (B, Q, K)


def _query_norm_instead(queries, keys):
    return _plain_dots(queries, keys) - (queries**2).sum(-1).unsqueeze(2) / 2  # (B, Q, K) - (B, Q, 1)


def _bmm_without_transpose(queries, keys):
    return torch.bmm(queries, keys)  # (B, Q, D) x (B, K, D): the sizes do not fit


def _raises(*args):
    raise ZeroDivisionError("oops")


@pytest.mark.parametrize(
    "fn",
    [_distance_scores_bmm, _distance_scores_full, _distance_scores_float32, _distance_scores_in_place],
    ids=["bmm", "full-distance", "float32", "in-place"],
)
def test_check_distance_scores_right_answer(fn):
    feedback = check_distance_scores(fn)
    assert_correct(feedback)
    assert "|k|^2 / 2" in repr(feedback)


@pytest.mark.parametrize(
    "fn, words",
    [
        (None, ["replace None", "function of (queries, keys)"]),
        (torch.zeros(2, 3, 5), ["expected a function of (queries, keys)", "Tensor"]),
        (_raises, ["raised ZeroDivisionError", "oops"]),
        (_bmm_without_transpose, ["raised RuntimeError", "queries (2, 3, 4) and keys (2, 5, 4)"]),
        (lambda q, k: _distance_scores_bmm(q, k).tolist(), ["torch.Tensor", "list"]),
        (lambda q, k: (_distance_scores_bmm(q, k), None), ["torch.Tensor", "tuple"]),
        (lambda q, k: _distance_scores_bmm(q, k)[0], ["expected shape (2, 3, 5)", "got (3, 5)"]),
        (lambda q, k: _distance_scores_bmm(q, k).transpose(1, 2), ["expected shape (2, 3, 5)", "got (2, 5, 3)"]),
        (_plain_dots, ["plain dot-product attention", "squared key norms"]),
        (_query_norm_instead, ["plain dot-product attention"]),  # the query's norm cancels in the softmax
        (lambda q, k: 2 * _distance_scores_full(q, k), ["expand -|q - k|^2 / 2", "from key to key"]),
        (lambda q, k: -_distance_scores_full(q, k), ["expand -|q - k|^2 / 2"]),
        (lambda q, k: _plain_dots(q, k) / 2, ["expand -|q - k|^2 / 2"]),  # scaled dot product, D = 4
    ],
    ids=[
        "none",
        "not-callable",
        "raises",
        "bmm-shapes",
        "list",
        "tuple",
        "no-batch",
        "transposed",
        "plain-dots",
        "query-norm",
        "missing-half",
        "sign",
        "scaled-dots",
    ],
)
def test_check_distance_scores_hints(fn, words):
    assert_hint(check_distance_scores(fn), *words)


# ----------------------------------------------------------------------------------------------
# check_bmm_shape: torch.bmm of (2, 3, 4) and (2, 4, 6)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        (2, 3, 6),
        [2, 3, 6],
        torch.Size([2, 3, 6]),
        torch.bmm(torch.zeros(2, 3, 4), torch.zeros(2, 4, 6)).shape,
        np.array([2, 3, 6]),
        torch.tensor([2, 3, 6]),
    ],
    ids=["tuple", "list", "size", "bmm", "numpy", "tensor"],
)
def test_check_bmm_shape_right_answer(answer):
    feedback = check_bmm_shape(answer)
    assert_correct(feedback)
    assert "(3, 6)" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ((3, 6), ["keeps the batch axis in front"]),
        ((2, 4, 4), ["shared size 4 disappears"]),
        ((2, 3, 4, 6), ["shared size 4 disappears"]),
        (6, ["expected a shape", "int"]),
        ("2 x 3 x 6", ["expected a shape", "str"]),
        (torch.tensor(6), ["expected a shape", "Tensor"]),
        ((2, 6, 3), ["for each of the 2 batch elements", "(3, 4) matrix by a (4, 6)"]),
        ((6, 3, 2), ["for each of the 2 batch elements"]),
        ((2, 3), ["for each of the 2 batch elements"]),
    ],
    ids=["none", "no-batch", "shared-size", "all-sizes", "int", "str", "0-d-tensor", "swapped", "reversed", "short"],
)
def test_check_bmm_shape_hints(answer, words):
    assert_hint(check_bmm_shape(answer), *words)


@pytest.mark.parametrize("answer", [(2.9, 3.1, 6.7), (2.5, 3, 6), "236"], ids=["fractions", "one-fraction", "str"])
def test_check_bmm_shape_does_not_round_a_wrong_answer_to_the_right_one(answer):
    """int() truncates 2.9 to 2 and reads "236" digit by digit: these are not the shape (2, 3, 6)."""
    assert_hint(check_bmm_shape(answer))


# ----------------------------------------------------------------------------------------------
# Notebook 04, the worked self-attention example: inputs x1 = [1, 0, 1, 0], x2 = [0, 2, 0, 2], x3 = [1, 1, 1, 1]
# ----------------------------------------------------------------------------------------------

W_Q = [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]
W_K = [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]
W_V = [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]
X_TOKENS = [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]


def _row_times(x, w):
    """x @ w for a row vector x and a matrix w given as lists, by a plain loop."""
    return [sum(x[r] * w[r][c] for r in range(len(x))) for c in range(len(w[0]))]


Q_ROWS = [_row_times(x, W_Q) for x in X_TOKENS]  # [[1, 0, 2], [2, 2, 2], [2, 1, 3]]
K_ROWS = [_row_times(x, W_K) for x in X_TOKENS]  # [[0, 1, 1], [4, 4, 0], [2, 3, 1]]
V_ROWS = [_row_times(x, W_V) for x in X_TOKENS]  # [[1, 2, 3], [2, 8, 0], [2, 6, 3]]
TOKEN2_SCORES = [sum(a * b for a, b in zip(Q_ROWS[1], k, strict=True)) for k in K_ROWS]  # q2 . k_j
TOKEN3_SCORES = [sum(a * b for a, b in zip(Q_ROWS[2], k, strict=True)) for k in K_ROWS]  # q3 . k_j


def _pool(weights):
    return [sum(w * v[c] for w, v in zip(weights, V_ROWS, strict=True)) for c in range(3)]


def test_worked_example_by_hand_is_the_data_module_example():
    example = three_token_example(torch.float64)
    assert example.inputs.tolist() == X_TOKENS
    assert example.w_query.tolist() == W_Q and example.w_key.tolist() == W_K and example.w_value.tolist() == W_V
    assert K_ROWS == [[0, 1, 1], [4, 4, 0], [2, 3, 1]]
    assert TOKEN2_SCORES == [4, 16, 12] and TOKEN3_SCORES == [4, 12, 10]


X4 = [2, 0, 1, 1]  # the new token of the exercises
Q4 = _row_times(X4, W_Q)  # [2, 1, 4]
K4 = _row_times(X4, W_K)  # [1, 2, 2]
SCORES4 = [sum(a * b for a, b in zip(Q4, k, strict=True)) for k in K_ROWS]  # q4 . k_j = [5, 12, 11]
OUTPUT4 = _pool(_softmax(SCORES4).tolist())


def test_new_token_by_hand():
    assert list(NEW_TOKEN) == X4
    assert Q4 == [2, 1, 4] and K4 == [1, 2, 2] and SCORES4 == [5, 12, 11]


@pytest.mark.parametrize(
    "answer",
    [torch.tensor(K4, dtype=torch.float64), torch.tensor(K4, dtype=torch.float32), torch.tensor([1.0, 2.0, 2.00001])],
    ids=["float64", "float32", "close"],
)
def test_check_new_token_key_right_answer(answer):
    feedback = check_new_token_key(answer)
    assert_correct(feedback)
    assert "[1, 2, 2]" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ([1, 2, 2], ["torch.Tensor", "list"]),
        (torch.zeros(1, 3), ["shape (3,)", "(1, 3)"]),
        (torch.tensor(Q4, dtype=torch.float64), ["wrong matrix", "W_K"]),
        (torch.tensor(_row_times(X4, W_V), dtype=torch.float64), ["wrong matrix", "W_K"]),
        (torch.tensor([9.0, 9.0, 9.0]), ["[2, 0, 1, 1]", "W_K"]),
    ],
    ids=["none", "list", "shape", "query", "value", "other"],
)
def test_check_new_token_key_hints(answer, words):
    assert_hint(check_new_token_key(answer), *words)


@pytest.mark.parametrize(
    "answer",
    [torch.tensor(SCORES4, dtype=torch.float64), torch.tensor(SCORES4, dtype=torch.float32)],
    ids=["float64", "float32"],
)
def test_check_new_token_scores_right_answer(answer):
    feedback = check_new_token_scores(answer)
    assert_correct(feedback)
    assert "[5, 12, 11]" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (torch.zeros(3, 1), ["shape (3,)", "(3, 1)"]),
        (torch.tensor([s / math.sqrt(3) for s in SCORES4]), ["scaled", "unscaled"]),
        (_softmax(SCORES4), ["weights", "before the softmax"]),
        (torch.tensor([sum(a * b for a, b in zip(q, K4, strict=True)) for q in Q_ROWS]), ["swapped", "query"]),
        (torch.tensor([1.0, 2.0, 3.0]), ["q4 . k_j", "W_Q"]),
    ],
    ids=["none", "shape", "scaled", "softmax", "swapped", "other"],
)
def test_check_new_token_scores_hints(answer, words):
    assert_hint(check_new_token_scores(answer), *words)


@pytest.mark.parametrize(
    "answer",
    [torch.tensor(OUTPUT4, dtype=torch.float64), torch.tensor(OUTPUT4, dtype=torch.float32)],
    ids=["float64", "float32"],
)
def test_check_new_token_output_right_answer(answer):
    assert_correct(check_new_token_output(answer))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("output", ["torch.Tensor", "str"]),
        (torch.tensor(_pool(_softmax([s / math.sqrt(3) for s in SCORES4]).tolist())), ["scaled", "unscaled"]),
        (torch.tensor(_pool(SCORES4)), ["softmax", "before"]),
        (
            torch.tensor(
                [sum(w * k[c] for w, k in zip(_softmax(SCORES4).tolist(), K_ROWS, strict=True)) for c in range(3)]
            ),
            ["values V", "not the keys"],
        ),
        (torch.tensor([0.0, 0.0, 0.0]), ["softmax", "@ V"]),
    ],
    ids=["none", "str", "scaled", "no-softmax", "keys", "other"],
)
def test_check_new_token_output_hints(answer, words):
    assert_hint(check_new_token_output(answer), *words)


# ----------------------------------------------------------------------------------------------
# Notebook 05, masks: True = may attend
# ----------------------------------------------------------------------------------------------

T, F_ = True, False
PADDING = [[T, T, F_, F_, F_], [T, T, T, T, F_]]  # valid lengths 2 and 4 of 5 positions
CAUSAL = [[T, F_, F_, F_], [T, T, F_, F_], [T, T, T, F_], [T, T, T, T]]
PADDING_CAUSAL = [[T, F_, F_, F_], [T, T, F_, F_], [T, T, T, F_], [T, T, T, F_]]  # valid length 3: column 4 hidden


def _flip(rows):
    return [[not v for v in row] for row in rows]


@pytest.mark.parametrize(
    "mask",
    [torch.tensor(PADDING), torch.arange(5) < torch.tensor([[2], [4]])],
    ids=["literal", "comparison"],
)
def test_check_padding_mask_right_answer(mask):
    feedback = check_padding_mask(mask)
    assert_correct(feedback)
    assert "padding" in repr(feedback)


@pytest.mark.parametrize(
    "mask, words",
    [
        (None, ["replace None", "(2, 5) bool tensor"]),
        (PADDING, ["torch.Tensor", "list"]),
        (torch.tensor(PADDING).T, ["expected shape (2, 5)", "got (5, 2)"]),
        (torch.tensor(PADDING)[:, :4], ["expected shape (2, 5)", "got (2, 4)"]),
        (torch.tensor(PADDING).long(), ["bool tensor", "True = may attend", "torch.int64", ".bool()"]),
        (torch.tensor(PADDING).float(), ["bool tensor", "torch.float32"]),
        (torch.tensor(_flip(PADDING)), ["polarity is reversed", "padding is False"]),
        (torch.tensor([[T, T, T, F_, F_], [T, T, T, T, T]]), ["off by one", "use < rather than <="]),
        (torch.tensor([[T, T, F_, F_, F_], [T, T, T, F_, F_]]), ["k < valid_lens[b]"]),
    ],
    ids=["none", "list", "transposed", "shape", "int", "float", "reversed", "off-by-one", "other"],
)
def test_check_padding_mask_hints(mask, words):
    assert_hint(check_padding_mask(mask), *words)


@pytest.mark.parametrize("mask", [torch.tensor(CAUSAL), torch.tril(torch.ones(4, 4)).bool()], ids=["literal", "tril"])
def test_check_causal_mask_right_answer(mask):
    feedback = check_causal_mask(mask)
    assert_correct(feedback)
    assert "never the future" in repr(feedback)


@pytest.mark.parametrize(
    "mask, words",
    [
        (None, ["replace None", "(4, 4) bool tensor"]),
        (np.array(CAUSAL), ["torch.Tensor", "ndarray"]),
        (torch.tensor(CAUSAL)[:3], ["expected shape (4, 4)", "got (3, 4)"]),
        (torch.tensor(CAUSAL).int(), ["bool tensor", "torch.int32"]),
        (torch.tensor(CAUSAL).double(), ["bool tensor", "torch.float64"]),
        (torch.tensor(_flip(CAUSAL)), ["polarity is reversed"]),
        (torch.tensor(CAUSAL).T.contiguous(), ["transposed", "torch.tril"]),
        (torch.tensor([[F_, F_, F_, F_], [T, F_, F_, F_], [T, T, F_, F_], [T, T, T, F_]]), ["keep the diagonal"]),
        (torch.ones(4, 4, dtype=torch.bool), ["row i must be True in columns 0..i"]),
    ],
    ids=["none", "numpy", "shape", "int", "float", "reversed", "transposed", "tril-minus-1", "other"],
)
def test_check_causal_mask_hints(mask, words):
    assert_hint(check_causal_mask(mask), *words)


@pytest.mark.parametrize(
    "mask",
    [torch.tensor(PADDING_CAUSAL), torch.tril(torch.ones(4, 4)).bool() & (torch.arange(4) < 3)],
    ids=["literal", "tril-and-padding"],
)
def test_check_padding_causal_mask_right_answer(mask):
    feedback = check_padding_causal_mask(mask)
    assert_correct(feedback)
    assert "AND" in repr(feedback)


PADDING_ALONE = [[T, T, T, F_]] * 4
CAUSAL_OR_PADDING = [[T, T, T, F_], [T, T, T, F_], [T, T, T, F_], [T, T, T, T]]


@pytest.mark.parametrize(
    "mask, words",
    [
        (None, ["replace None", "(4, 4) bool tensor"]),
        (PADDING_CAUSAL, ["torch.Tensor", "list"]),
        (torch.tensor([PADDING_CAUSAL]), ["expected shape (4, 4)", "got (1, 4, 4)"]),
        (torch.tensor(PADDING_CAUSAL).long(), ["bool tensor", "torch.int64"]),
        (torch.tensor(CAUSAL_OR_PADDING), ["OR lets a query see", "(&)"]),
        (torch.tensor(CAUSAL), ["causal mask alone", "column 4"]),
        (torch.tensor(PADDING_ALONE), ["padding mask alone", "torch.tril"]),
        (torch.tensor(_flip(PADDING_CAUSAL)), ["combine the causal mask and the padding mask with &"]),
    ],
    ids=["none", "list", "3-D", "int", "or", "causal-alone", "padding-alone", "other"],
)
def test_check_padding_causal_mask_hints(mask, words):
    assert_hint(check_padding_causal_mask(mask), *words)


# ----------------------------------------------------------------------------------------------
# Notebook 06, check_split_shape: split_heads of x (B, T, H * dh) = (2, 5, 8) into H = 4 heads
# ----------------------------------------------------------------------------------------------


def _split_by_reshape():
    x = torch.zeros(2, 5, 8)  # (B, T, H * dh)
    return x.reshape(2, 5, 4, 2).transpose(1, 2).reshape(2 * 4, 5, 2).shape  # (B, H, T, dh) -> (B * H, T, dh)


@pytest.mark.parametrize(
    "answer",
    [(8, 5, 2), [8, 5, 2], torch.Size([8, 5, 2]), _split_by_reshape(), np.array([8, 5, 2]), torch.tensor([8, 5, 2])],
    ids=["tuple", "list", "size", "reshape", "numpy", "tensor"],
)
def test_check_split_shape_right_answer(answer):
    feedback = check_split_shape(answer)
    assert_correct(feedback)
    assert "2 * 4 = 8" in repr(feedback) and "8 / 4 = 2" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "(1, 2, 3)"]),
        ("8, 5, 2", ["expected a shape", "str"]),
        ("852", ["expected a shape", "str"]),
        (8, ["expected a shape", "int"]),
        ((8.0, 5.0, 2.0), ["whole numbers", "tuple"]),
        (torch.tensor([8.0, 5.0, 2.0]), ["whole numbers", "Tensor"]),
        (torch.tensor(8), ["expected a shape", "Tensor"]),
        ((2, 4, 5, 2), ["before the head axis is folded into the batch axis", "(B * H, T, dh)"]),
        ((8, 5, 8), ["its share of the features", "dh = 8 / 4"]),
        ((2, 5, 4, 2), ["after the first reshape"]),
        ((2, 5, 8), ["(B, T, H * dh) -> (B * H, T, dh)", "B = 2, T = 5, H = 4"]),
        ((5, 8, 2), ["(B, T, H * dh) -> (B * H, T, dh)"]),
        ((8, 2, 5), ["(B, T, H * dh) -> (B * H, T, dh)"]),
    ],
    ids=[
        "none",
        "str",
        "digits",
        "int",
        "floats",
        "float-tensor",
        "0-d-tensor",
        "unfolded",
        "full-width-heads",
        "first-reshape",
        "input-shape",
        "swapped",
        "t-and-dh-swapped",
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
    [MHA_PARAMS, 16384.0, torch.tensor(16384), np.int64(16384), sum([64 * 64] * 4)],
    ids=["int", "float", "tensor", "numpy", "sum"],
)
def test_check_parameter_count_right_answer(answer):
    feedback = check_parameter_count(answer)
    assert_correct(feedback)
    assert "16384" in repr(feedback) and "heads split the work" in repr(feedback)


def test_check_parameter_count_agrees_with_torch_multihead_attention():
    ref = torch.nn.MultiheadAttention(64, 8, bias=False, device="meta")  # meta: no memory, no random numbers
    count = sum(p.numel() for p in ref.parameters())
    assert count == MHA_PARAMS
    assert_correct(check_parameter_count(count))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "number of parameters"]),
        ("16k", ["one number", "str"]),
        ([MHA_PARAMS], ["one number", "list"]),
        (torch.tensor([1.0, 2.0]), ["one number", "Tensor"]),
        (3 * 64 * 64, ["W_q, W_k and W_v", "output projection W_o"]),
        (8 * MHA_PARAMS, ["size 64 / 8", "share the 64 x 64 matrices"]),
        (MHA_PARAMS + 4 * 64, ["no biases", "bias=False"]),
        (MHA_PARAMS // 8, ["count the entries of W_q, W_k, W_v and W_o"]),
        (MHA_PARAMS + 1, ["count the entries"]),
        (0, ["count the entries"]),
    ],
    ids=[
        "none",
        "str",
        "list",
        "tensor-2",
        "no-w_o",
        "per-head-copies",
        "with-biases",
        "divided-by-heads",
        "off",
        "zero",
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
        _rotation_by_angle(1.0),
        _rotation_by_angle(1.0, torch.float32),
        _rotation_solved_from_two_positions(),
        _rotation_by_angle(1.0).requires_grad_(),
    ],
    ids=["float64", "float32", "solved", "requires-grad"],
)
def test_check_rotation_right_answer(answer):
    feedback = check_rotation(answer)
    assert_correct(feedback)
    assert "1 radian" in repr(feedback)


def test_check_rotation_solved_matrix_is_the_rotation_by_one_radian():
    torch.testing.assert_close(_rotation_solved_from_two_positions(), _rotation_by_angle(1.0), atol=1e-12, rtol=0)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "(2, 2) tensor"]),
        (_rotation_by_angle(1.0).tolist(), ["torch.Tensor", "list"]),
        (np.eye(2), ["torch.Tensor", "ndarray"]),
        (torch.zeros(2), ["expected shape (2, 2)", "got (2,)"]),
        (_rotation_by_angle(1.0)[None], ["expected shape (2, 2)", "got (1, 2, 2)"]),
        (torch.eye(2, dtype=torch.int64), ["floating-point", "torch.int64"]),
        (_rotation_by_angle(1.0).T, ["transposed", "from i + 2 back to i"]),
        (_rotation_by_angle(-1.0), ["transposed"]),
        (_rotation_by_angle(2.0), ["2 * 0.5 = 1, not 2"]),
        (_rotation_by_angle(0.5), ["expand sin(a + b) and cos(a + b)"]),
        (torch.eye(2), ["expand sin(a + b)"]),
        (torch.tensor([[math.cos(1.0), -math.sin(1.0)], [-math.sin(1.0), math.cos(1.0)]]), ["expand sin(a + b)"]),
    ],
    ids=[
        "none",
        "list",
        "numpy",
        "1-D",
        "3-D",
        "integer",
        "transposed",
        "negative-angle",
        "angle-2",
        "angle-w",
        "identity",
        "sign",
    ],
)
def test_check_rotation_hints(answer, words):
    assert_hint(check_rotation(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_alignment_position: reversing L digits, output step t reads source position L - 1 - t, <eos> reads L
# ----------------------------------------------------------------------------------------------


def _position(t, length):
    return length - 1 - t if t < length else length


@pytest.mark.parametrize(
    "answer",
    [
        _position,
        lambda t, length: (length - 1 - t) % (length + 1),  # -1 wraps around to L
        lambda t, length: torch.tensor(_position(t, length)),
        lambda t, length: float(_position(t, length)),
    ],
    ids=["function", "modulo", "tensor", "float"],
)
def test_check_alignment_position_right_answer(answer):
    feedback = check_alignment_position(answer)
    assert_correct(feedback)
    assert "anti-diagonal" in repr(feedback)


@pytest.mark.parametrize("digits", ["7", "12345", "908172635412"])
def test_check_alignment_position_agrees_with_the_reversal_task(digits):
    """Output token t (tgt_out[t]) is the source token at position(t, L), <eos> included."""
    batch = make_batch([digits])
    length = len(digits)
    assert [int(batch.src[0, _position(t, length)]) for t in range(length + 1)] == batch.tgt_out[0].tolist()


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "position(t, L)"]),
        (3, ["expected a function position(t, L)", "got int"]),
        ("L - 1 - t", ["expected a function", "got str"]),
        (lambda t, length: length - 1 - t, ["the last step writes <eos>", "when L = 1"]),
        (lambda t, length: length - 1 - t if t < length else -1, ["the last step writes <eos>"]),
        (lambda t, length: length - t, ["off by one", "L - 1"]),
        (lambda t, length: t, ["copying (a diagonal)", "from its end"]),
        (lambda t, length: t if t < length else length, ["copying (a diagonal)"]),
        (lambda t, length: 1 / 0, ["position(0, 1) raised ZeroDivisionError: division by zero"]),
        (lambda t: t, ["position(0, 1) raised TypeError"]),
        (lambda t, length: 5, ["position(0, 1) gave 5", "step 0 writes digit number 0 from the end"]),
        (lambda t, length: None, ["position(0, 1) gave None"]),
    ],
    ids=[
        "none",
        "int",
        "str",
        "no-eos",
        "eos-minus-one",
        "off-by-one",
        "copy",
        "copy-with-eos",
        "raises",
        "one-argument",
        "constant",
        "returns-none",
    ],
)
def test_check_alignment_position_hints(answer, words):
    assert_hint(check_alignment_position(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_context: weights [0.1, 0.7, 0.2] over encoder states [[1, 0], [0, 2], [4, 4]] -> [0.9, 2.2]
# ----------------------------------------------------------------------------------------------

CONTEXT_STATES = torch.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]])
CONTEXT_WEIGHTS = torch.tensor([0.1, 0.7, 0.2])


@pytest.mark.parametrize(
    "answer",
    [
        torch.tensor([0.9, 2.2]),
        torch.tensor([0.9, 2.2], dtype=torch.float64),
        CONTEXT_WEIGHTS @ CONTEXT_STATES,
        (CONTEXT_WEIGHTS[:, None] * CONTEXT_STATES).sum(0),
        torch.tensor([0.9, 2.2], requires_grad=True),
    ],
    ids=["float32", "float64", "matmul", "broadcast-sum", "requires-grad"],
)
def test_check_context_right_answer(answer):
    feedback = check_context(answer)
    assert_correct(feedback)
    assert "[0.9, 2.2]" in repr(feedback) and "weighted average" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "a tensor of 2 numbers"]),
        ([0.9, 2.2], ["torch.Tensor", "list"]),
        (np.array([0.9, 2.2]), ["torch.Tensor", "ndarray"]),
        (torch.tensor([0.9, 2.2, 0.0]), ["expected shape (2,)", "got (3,)"]),
        (torch.tensor([[0.9, 2.2]]), ["expected shape (2,)", "got (1, 2)"]),
        (CONTEXT_STATES.mean(0), ["plain average", "attention weight"]),
        (CONTEXT_STATES[1], ["sum weight_j * h_j"]),
        (CONTEXT_STATES.sum(0), ["sum weight_j * h_j"]),
        (torch.tensor([2.2, 0.9]), ["sum weight_j * h_j"]),
    ],
    ids=["none", "list", "numpy", "3-numbers", "2-D", "plain-average", "argmax-state", "sum", "swapped"],
)
def test_check_context_hints(answer, words):
    assert_hint(check_context(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_memory_size: a 12-digit source has 13 encoder states (with <eos>) of U = 64 numbers: 832
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [832, 832.0, torch.tensor(832), np.int64(832), 13 * 64],
    ids=["int", "float", "tensor", "numpy", "product"],
)
def test_check_memory_size_right_answer(answer):
    feedback = check_memory_size(answer)
    assert_correct(feedback)
    assert "832" in repr(feedback) and "13 states" in repr(feedback)


def test_check_memory_size_agrees_with_the_encoder():
    """The attention decoder reads the encoder's states: (1, 13, 64) for one 12-digit source."""
    batch = make_batch(["123456789012"])
    model = RNNSeq2Seq(attention=True, embed_size=8, num_hiddens=64)
    with torch.no_grad():
        states, _ = model.encoder(batch.src, batch.src_len)
    assert states.shape == (1, 13, 64)
    assert_correct(check_memory_size(states.numel()))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "a count of numbers"]),
        ("lots", ["one number", "str"]),
        ([832], ["one number", "list"]),
        (12 * 64, ["also reads <eos>", "13 positions"]),
        (64, ["64 is what the decoder without attention gets"]),
        (13, ["count the encoder states", "times their size U"]),
        (2 * 832, ["count the encoder states"]),
        (0, ["count the encoder states"]),
    ],
    ids=["none", "str", "list", "without-eos", "fixed-context", "states-only", "double", "zero"],
)
def test_check_memory_size_hints(answer, words):
    assert_hint(check_memory_size(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_layer_norm: x = [1, 2, 3, 6], mean 3, population variance 3.5
# ----------------------------------------------------------------------------------------------

LN_X = torch.tensor([1.0, 2.0, 3.0, 6.0])
LN_RIGHT = (LN_X - 3.0) / math.sqrt(3.5)  # [-1.069, -0.535, 0, 1.604]


@pytest.mark.parametrize(
    "answer",
    [
        LN_RIGHT,
        LN_RIGHT.double(),
        torch.tensor([-1.069, -0.535, 0.0, 1.604]),  # rounded to 3 decimals
        torch.nn.functional.layer_norm(LN_X, (4,)),  # eps = 1e-5
        torch.nn.LayerNorm(4, elementwise_affine=False)(LN_X),
    ],
    ids=["exact", "float64", "rounded", "functional", "module"],
)
def test_check_layer_norm_right_answer(answer):
    feedback = check_layer_norm(answer)
    assert_correct(feedback)
    assert "variance 3.5" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "a tensor of 4 numbers"]),
        (LN_RIGHT.tolist(), ["torch.Tensor", "list"]),
        (LN_RIGHT[None], ["expected shape (4,)", "got (1, 4)"]),
        (LN_RIGHT[:3], ["expected shape (4,)", "got (3,)"]),
        ((LN_X - 3.0) / LN_X.std(), ["population variance", "n = 4, not n - 1"]),
        (LN_X - 3.0, ["centred, yes", "divide by the standard deviation"]),
        ((LN_X - 3.0) / 3.5, ["subtract the mean", "standard deviation"]),
        (LN_X / LN_X.norm(), ["subtract the mean"]),
        (LN_X, ["subtract the mean"]),
    ],
    ids=["none", "list", "2-D", "short", "sample-std", "centred-only", "divided-by-variance", "unit-norm", "input"],
)
def test_check_layer_norm_hints(answer, words):
    assert_hint(check_layer_norm(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_ffn_parameters: PositionWiseFFN(32, 64) = Linear(32, 64) + Linear(64, 32), with biases
# ----------------------------------------------------------------------------------------------

FFN_PARAMS = 32 * 64 + 64 + 64 * 32 + 32  # 4192


@pytest.mark.parametrize(
    "answer", [FFN_PARAMS, 4192.0, torch.tensor(4192), np.int64(4192)], ids=["int", "float", "tensor", "numpy"]
)
def test_check_ffn_parameters_right_answer(answer):
    feedback = check_ffn_parameters(answer)
    assert_correct(feedback)
    assert "4192" in repr(feedback)


def test_check_ffn_parameters_agrees_with_the_module():
    count = sum(p.numel() for p in PositionWiseFFN(num_hiddens=32, ffn_hiddens=64).parameters())
    assert count == FFN_PARAMS == 4192
    assert_correct(check_ffn_parameters(count))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "the number of parameters"]),
        ("4k", ["one number", "str"]),
        (torch.tensor([4192, 1]), ["one number", "Tensor"]),
        (32 * 64 + 64 * 32, ["both linear layers have biases too"]),
        (12 * FFN_PARAMS, ["same two layers serve every position", "does not depend on the length"]),
        (13 * FFN_PARAMS, ["does not depend on the length"]),
        (32 * 64 + 64, ["two nn.Linear layers, 32 -> 64 and 64 -> 32"]),
        (0, ["two nn.Linear layers"]),
    ],
    ids=["none", "str", "tensor-2", "no-biases", "per-position-12", "per-position-13", "one-layer", "zero"],
)
def test_check_ffn_parameters_hints(answer, words):
    assert_hint(check_ffn_parameters(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_causal_row: row 3 of the causal mask for 6 positions, True = may attend
# ----------------------------------------------------------------------------------------------

CAUSAL_ROW = torch.tensor([True, True, True, True, False, False])


@pytest.mark.parametrize(
    "answer",
    [CAUSAL_ROW, causal_mask(6)[3], torch.arange(6) <= 3, torch.ones(6, 6, dtype=torch.bool).tril()[3]],
    ids=["literal", "causal-mask", "arange", "tril"],
)
def test_check_causal_row_right_answer(answer):
    feedback = check_causal_row(answer)
    assert_correct(feedback)
    assert "never the future" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "a bool tensor of 6 entries"]),
        (CAUSAL_ROW.tolist(), ["torch.Tensor", "list"]),
        (causal_mask(6), ["expected shape (6,)", "got (6, 6)"]),
        (CAUSAL_ROW.float(), ["masks are bool tensors (True = may attend)", "torch.float32"]),
        (CAUSAL_ROW.long(), ["masks are bool tensors", "torch.int64"]),
        (~CAUSAL_ROW, ["polarity", "True means may attend"]),
        (causal_mask(6)[2], ["may attend to itself"]),
        (torch.ones(6, dtype=torch.bool), ["the encoder's view", "must not see later target tokens"]),
        (causal_mask(6)[4], ["numbered from 0", "up to and including 3"]),
        (torch.zeros(6, dtype=torch.bool), ["numbered from 0"]),
    ],
    ids=["none", "list", "whole-mask", "float", "int", "polarity", "strictly-before", "all-true", "row-4", "all-false"],
)
def test_check_causal_row_hints(answer, words):
    assert_hint(check_causal_row(answer), *words)


# ----------------------------------------------------------------------------------------------
# Notebook 09: check_repeat_kv, check_cache_update (build it), check_cache_memory (Llama 2 7B, 4096 tokens, GiB)
# ----------------------------------------------------------------------------------------------


def test_check_repeat_kv_right_answer():
    assert_correct(check_repeat_kv(lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=1)))
    assert_correct(check_repeat_kv(lambda kv, h: kv[:, torch.arange(h) // (h // kv.shape[1])]))


def _repeat_in_place(kv, h):
    kv.mul_(1.0)
    kv += 1
    return kv.repeat_interleave(h // kv.shape[1], dim=1)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (3, ["expected a function", "int"]),
        (lambda kv, h: kv.repeat(1, h // kv.shape[1], 1, 1), ["wrong order", "repeat_interleave"]),
        (lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=2), ["expected shape", "dim 1"]),
        (lambda kv, h: kv, ["expected shape", "H / G times"]),
        (lambda kv, h: kv.repeat_interleave(h // kv.shape[1], dim=1) * 2, ["values differ"]),
        (lambda kv, h: kv.tolist(), ["must return a tensor", "list"]),
        (lambda kv, h: 1 / 0, ["raised ZeroDivisionError"]),
        (_repeat_in_place, ["in place"]),
    ],
)
def test_check_repeat_kv_hints(answer, words):
    assert_hint(check_repeat_kv(answer), *words)


def test_check_cache_update_right_answer():
    assert_correct(check_cache_update(lambda cached, new: new if cached is None else torch.cat([cached, new], 2)))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (lambda cached, new: torch.cat([cached, new], 2), ["raised TypeError"]),
        (lambda cached, new: new if cached is None else torch.cat([new, cached], 2), ["after the old ones"]),
        (lambda cached, new: new if cached is None else torch.cat([cached, new], 3), ["raised RuntimeError"]),
        (lambda cached, new: new if cached is None else cached, ["should give", "dim 2"]),
        (lambda cached, new: new * 2, ["empty cache"]),
        (lambda cached, new: new if cached is None else torch.cat([cached, new], 2) + 1, ["values differ"]),
    ],
)
def test_check_cache_update_hints(answer, words):
    assert_hint(check_cache_update(answer), *words)


def test_check_cache_memory_right_answer():
    assert_correct(check_cache_memory(2.0))
    assert_correct(check_cache_memory(torch.tensor(2 * 32 * 32 * 128 * 4096 * 2 / 2**30)))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("two", ["one number", "str"]),
        (1.0, ["keys and values"]),
        (4.0, ["2 bytes"]),
        (0.5, ["factor 2", "another factor 2"]),
        (2 * 2**30 / 1e9, ["2^30"]),
        (7.0, ["multiply 2"]),
    ],
)
def test_check_cache_memory_hints(answer, words):
    assert_hint(check_cache_memory(answer), *words)


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
        (alibi_bias(4, 6, 6)[0, 3], ["head 1", "h = 1 .. H"]),
        (alibi_bias(4, 6, 6)[2, 3], ["head 3"]),
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
        (_rope_in_place, ["in place"]),
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
