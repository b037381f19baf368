"""attn_course.checks: the exercise checks give "Correct" for a right answer and a hint for each mistake."""

import math

import numpy as np
import pytest
import torch

from attn_course import (
    AdditiveAttention,
    PositionWiseFFN,
    RNNSeq2Seq,
    additive_scores,
    alibi_bias,
    apply_rope,
    causal_mask,
    checks,
    dot_product_scores,
    lagrange_basis,
    nadaraya_watson,
)
from attn_course.checks import (
    Feedback,
    check_additive_scores_fn,
    check_alibi_row,
    check_alignment_position,
    check_apply_rope,
    check_attention_memory,
    check_bahdanau_step,
    check_cache_memory,
    check_cache_update,
    check_causal_mask,
    check_causal_row,
    check_chebyshev_nodes,
    check_context,
    check_convex_bound,
    check_dot_scores_fn,
    check_epanechnikov,
    check_ffn_parameters,
    check_lagrange_weight,
    check_layer_norm,
    check_memory_size,
    check_nearest_neighbour_limit,
    check_new_token_key,
    check_new_token_output,
    check_new_token_scores,
    check_nw_pooling,
    check_nw_weights,
    check_padding_causal_mask,
    check_padding_mask,
    check_parameter_count,
    check_parameter_growth,
    check_pooling_limit,
    check_repeat_kv,
    check_reversed_outputs,
    check_rope_angle,
    check_rotation,
    check_scaled_scores,
    check_self_attending_key,
    check_split_shape,
    check_variance_scale,
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
        "check_nw_pooling",
        "check_lagrange_weight",
        "check_nearest_neighbour_limit",
        "check_convex_bound",
        "check_chebyshev_nodes",
        "check_scaled_scores",
        "check_attention_memory",
        "check_dot_scores_fn",
        "check_additive_scores_fn",
        "check_parameter_growth",
        "check_variance_scale",
        "check_new_token_key",
        "check_new_token_scores",
        "check_new_token_output",
        "check_reversed_outputs",
        "check_self_attending_key",
        "check_padding_mask",
        "check_causal_mask",
        "check_padding_causal_mask",
        "check_split_shape",
        "check_parameter_count",
        "check_rotation",
        "check_alignment_position",
        "check_context",
        "check_memory_size",
        "check_bahdanau_step",
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


@pytest.mark.parametrize("fn", [_nw_right, _nw_right_with_where, _nw_reference])
def test_check_nw_pooling_right_answer(fn):
    feedback = check_nw_pooling(fn)
    assert_correct(feedback)
    assert "hidden case" in repr(feedback)


@pytest.mark.parametrize(
    "fn, words",
    [
        (None, ["replace None", "my_nw_pooling"]),
        ("f", ["expected a function", "str"]),
        (lambda q, k, v, h, mask=None: 1 / 0, ["raised ZeroDivisionError"]),
        (lambda q, k, v, h, mask=None: _nw_right(q, k, v, h, mask)[1], ["(predictions, weights)", "Tensor"]),
        (
            lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[0], _nw_right(q, k, v, h, mask)[1].T),
            ["transposed", "(Q, K)"],
        ),
        (
            lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[0][:2], _nw_right(q, k, v, h, mask)[1]),
            ["predictions", "expected shape"],
        ),
        (lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[0], [1.0]), ["weights", "torch.Tensor", "list"]),
        (_nw_in_place, ["changed one of its inputs"]),
        (_nw_nan_on_empty_row, ["all False", "NaN", "zero weights"]),
        (_nw_reversed, ["polarity is reversed"]),
        (lambda q, k, v, h, mask=None: _nw_right(q, k, v, h), ["ignore the mask"]),
        (_nw_over_queries, ["normalised over the queries", "dim=-1"]),
        (lambda q, k, v, h, mask=None: _nw_right(q, k, v, h / math.sqrt(2), mask), ["left out the 2"]),
        (lambda q, k, v, h, mask=None: _nw_right(q, k, v, math.sqrt(h), mask), ["wrong scale", "h squared"]),
        (lambda q, k, v, h, mask=None: _nw_right(q, k, v, 1.0, mask), ["wrong scale", "h squared"]),
        (
            lambda q, k, v, h, mask=None: (lambda w: (w @ v, w))(
                torch.softmax(_nw_scores(q, k, h, mask, sign=1.0), -1).nan_to_num(0.0)
            ),
            ["MINUS"],
        ),
        (
            lambda q, k, v, h, mask=None: (lambda w: (w @ v, w))(torch.exp(_nw_scores(q, k, h, mask))),
            ["kernel values", "sum"],
        ),
        (
            lambda q, k, v, h, mask=None: (_nw_right(q, k, v, h, mask)[1].sum(-1), _nw_right(q, k, v, h, mask)[1]),
            ["weights @ values"],
        ),
        (
            lambda q, k, v, h, mask=None: (lambda w: (w @ v, w))(
                torch.full((len(q), len(k)), 1 / len(k), dtype=q.dtype)
            ),
            ["differ", "by hand"],
        ),
    ],
    ids=[
        "none",
        "not-callable",
        "raises",
        "one-output",
        "transposed",
        "short-predictions",
        "list-weights",
        "in-place",
        "nan-empty-row",
        "reversed-mask",
        "no-mask",
        "over-queries",
        "no-2",
        "sqrt-h",
        "no-h",
        "sign",
        "unnormalised",
        "predictions",
        "uniform",
    ],
)
def test_check_nw_pooling_hints(fn, words):
    assert_hint(check_nw_pooling(fn), *words)


def test_check_nw_pooling_hidden_cases_tell_queries_from_keys_and_include_an_empty_row():
    from attn_course.checks.nb01 import _pooling_cases

    cases = _pooling_cases()
    assert all(len(q) != len(k) for _, q, k, _, _, _ in cases)
    assert any(m is not None and (~m.any(-1)).any() for *_, m in cases)
    assert [c[1] for c in cases][0].dtype == torch.float64
    assert torch.equal(_pooling_cases()[1][1], cases[1][1])  # the same hidden cases every call


# ----------------------------------------------------------------------------------------------
# check_lagrange_weight: l_4(3.5) for the ten points of notebook 02 (nodes counted from 0)
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


L5 = _basis(4, 3.5)  # x_4 = 4.2, the fifth point


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
    assert "8.0819" in repr(feedback) and "x_4 = 4.2" in repr(feedback)


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
        (None, ["replace None", "l_4(3.5)"]),
        ("eight", ["one number", "str"]),
        ([L5, L5], ["one number", "list"]),
        (torch.tensor([L5, L5]), ["one number", "Tensor"]),
        (_basis(3, 3.5), ["off by one", "x_4 = 4.2", "index 4"]),
        (_basis(5, 3.5), ["off by one", "x_4 = 4.2", "index 4"]),
        (1 / L5, ["upside down", "x - x_j on top"]),
        (-L5, ["multiply (3.5 - x_j) / (x_4 - x_j)"]),
        (8.0, ["multiply (3.5 - x_j) / (x_4 - x_j)"]),
        (1.0, ["multiply (3.5 - x_j) / (x_4 - x_j)"]),
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
# check_chebyshev_nodes: 20 Chebyshev nodes on [0, 5], counted from 0
# ----------------------------------------------------------------------------------------------

_K20 = list(range(20))
CHEBYSHEV_20 = [2.5 + 2.5 * math.cos((2 * k + 1) * math.pi / 40) for k in _K20]


@pytest.mark.parametrize(
    "answer",
    [
        torch.tensor(CHEBYSHEV_20, dtype=torch.float64),
        torch.tensor(CHEBYSHEV_20[::-1]),  # float32, increasing: any order is right
        2.5 + 2.5 * torch.cos((2 * torch.arange(1, 21) - 1) * torch.pi / 40),  # k from 1: the same nodes
    ],
    ids=["float64", "float32-reversed", "counted-from-1"],
)
def test_check_chebyshev_nodes_right_answer(answer):
    feedback = check_chebyshev_nodes(answer)
    assert_correct(feedback)
    gaps = np.diff(sorted(CHEBYSHEV_20))
    assert f"{gaps.min():.3f} apart near the ends" in repr(feedback) and f"{gaps.max():.3f} in the middle" in repr(
        feedback
    )


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "(20,)"]),
        (CHEBYSHEV_20, ["torch.Tensor", "list"]),
        (torch.tensor(CHEBYSHEV_20[:10]), ["expected shape (20,)", "got (10,)"]),
        (torch.arange(20), ["floating-point", "torch.int64"]),
        (torch.tensor([(v - 2.5) / 2.5 for v in CHEBYSHEV_20]), ["[-1, 1]", "map them to [0, 5]"]),
        (torch.linspace(0, 5, 20), ["evenly spaced"]),
        (torch.tensor([2.5 + 2.5 * math.cos(k * math.pi / 19) for k in _K20]), ["extrema", "(2k + 1) pi / (2n)"]),
        (torch.tensor([2.5 + 2.5 * math.cos((k + 1) * math.pi / 20) for k in _K20]), ["extrema"]),
        (torch.tensor([2.5 + 2.5 * math.cos((2 * k + 1) / 40) for k in _K20]), ["left out pi"]),
        (torch.tensor([2.5 + 2.5 * math.cos((2 * k + 1) * math.pi / 20) for k in _K20]), ["x_k = (a + b)/2"]),
    ],
    ids=["none", "list", "short", "integer", "unit-interval", "even", "extrema", "extrema-2", "no-pi", "other"],
)
def test_check_chebyshev_nodes_hints(answer, words):
    assert_hint(check_chebyshev_nodes(answer), *words)


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
# check_attention_memory: B = 8, Q = K = 1024, U = 128, float32 -> 32 MiB of scores, 4096 MiB hidden
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [(32, 4096), (32.0, 4096.0), [32, 4096], torch.tensor([32.0, 4096.0])])
def test_check_attention_memory_right_answer(answer):
    feedback = check_attention_memory(answer)
    assert_correct(feedback)
    assert "4096 MiB" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (32, ["two numbers"]),
        ((8, 1024), ["4 bytes"]),
        ((33.554432, 4294.967296), ["2**20"]),
        ((4, 512), ["B = 8"]),
        ((32, 32), ["U = 128"]),
        ((32, 1024), ["(8, 1024, 1024, 128)"]),
        ((1, 2), ["bytes = B * Q * K"]),
    ],
    ids=["none", "one-number", "numbers-not-bytes", "decimal-mb", "one-sequence", "no-u", "scores-only", "wrong"],
)
def test_check_attention_memory_hints(answer, words):
    assert_hint(check_attention_memory(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_dot_scores_fn (build it): hidden random cases, reference queries @ keys^T / sqrt(D)
# ----------------------------------------------------------------------------------------------


def _dot_right(queries, keys):
    return torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])


@pytest.mark.parametrize(
    "fn",
    [_dot_right, lambda q, k: torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5, dot_product_scores],
    ids=["bmm", "einsum", "attn-course"],
)
def test_check_dot_scores_fn_right_answer(fn):
    feedback = check_dot_scores_fn(fn)
    assert_correct(feedback)
    assert "hidden" in repr(feedback)


def _in_place(q, k):
    q.mul_(1.0)  # a no-op numerically, but it still writes
    q.add_(1.0)
    return _dot_right(q - 1.0, k)


@pytest.mark.parametrize(
    "fn, words",
    [
        (None, ["replace None"]),
        ("q @ k.T", ["expected a function"]),
        (lambda q, k: torch.bmm(q, k.transpose(1, 2)), ["missing the 1/sqrt(D) scale"]),
        (lambda q, k: torch.bmm(k, q.transpose(1, 2)) / math.sqrt(q.shape[-1]), ["transposed", "(2, 3, 5)"]),
        (lambda q, k: torch.bmm(q, k.transpose(1, 2)) / q.shape[-1], ["divided by D"]),
        (lambda q, k: torch.bmm(q, k.transpose(1, 2)) / math.sqrt(k.shape[1]), ["wrong scale", "last axis"]),
        (lambda q, k: torch.softmax(_dot_right(q, k), dim=-1), ["weights", "softmax"]),
        (lambda q, k: torch.mm(q, k), ["raised"]),
        (lambda q, k: _dot_right(q, k)[0], ["expected shape"]),
        (lambda q, k: _dot_right(q, k).tolist(), ["torch.Tensor"]),
        (lambda q, k: _dot_right(q, k).round(), ["one entry by hand"]),
        (_in_place, ["modified its input"]),
    ],
    ids=[
        "none",
        "not-callable",
        "unscaled",
        "transposed",
        "by-d",
        "by-k",
        "softmax",
        "raises",
        "shape",
        "list",
        "rounded",
        "in-place",
    ],
)
def test_check_dot_scores_fn_hints(fn, words):
    assert_hint(check_dot_scores_fn(fn), *words)


def test_check_dot_scores_fn_cases_are_hidden_and_not_square():
    """A function right only for square score matrices, or only for one D, does not pass."""
    assert_hint(check_dot_scores_fn(lambda q, k: _dot_right(q, k) if q.shape[-1] == 4 else _dot_right(q, k) * 2))
    seen = []
    check_dot_scores_fn(lambda q, k: seen.append((tuple(q.shape), tuple(k.shape))) or _dot_right(q, k))
    assert len(seen) == 3 and all(q[1] != k[1] for q, k in seen)


# ----------------------------------------------------------------------------------------------
# check_additive_scores_fn (build it): hidden random cases, reference a torch.nn MLP on [q; k]
# ----------------------------------------------------------------------------------------------


def _additive_right(q, k, w_q, w_k, w_v):
    return torch.tanh((q @ w_q.T).unsqueeze(2) + (k @ w_k.T).unsqueeze(1)) @ w_v  # (B, Q, K)


def _additive_linear(q, k, w_q, w_k):
    return (q @ w_q.T).unsqueeze(2) + (k @ w_k.T).unsqueeze(1)  # (B, Q, K, U)


@pytest.mark.parametrize("fn", [_additive_right, additive_scores], ids=["broadcast", "attn-course"])
def test_check_additive_scores_fn_right_answer(fn):
    feedback = check_additive_scores_fn(fn)
    assert_correct(feedback)
    assert "torch.nn" in repr(feedback)


@pytest.mark.parametrize(
    "fn, words",
    [
        (None, ["replace None"]),
        (3, ["expected a function"]),
        (lambda q, k, wq, wk, wv: _additive_linear(q, k, wq, wk) @ wv, ["missing the tanh"]),
        (lambda q, k, wq, wk, wv: torch.tanh(_additive_linear(q, k, wq, wk) @ wv), ["before w_v"]),
        (lambda q, k, wq, wk, wv: torch.tanh(_additive_linear(q, k, wq, wk)).sum(-1), ["summed"]),
        (lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv).transpose(1, 2), ["transposed", "(2, 3, 5)"]),
        (lambda q, k, wq, wk, wv: torch.tanh(_additive_linear(q, k, wq, wk)), ["hidden layer", "w_v"]),
        (lambda q, k, wq, wk, wv: torch.softmax(_additive_right(q, k, wq, wk, wv), -1), ["softmax"]),
        (lambda q, k, wq, wk, wv: torch.tanh((q @ wq).unsqueeze(2) + (k @ wk.T).unsqueeze(1)) @ wv, ["w_q.T"]),
        (lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv) + 1, ["by hand"]),
        (lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv)[:, 0], ["expected shape"]),
        (lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv.mul_(2)) / 2, ["modified its input"]),
    ],
    ids=[
        "none",
        "not-callable",
        "no-tanh",
        "tanh-after",
        "sum",
        "transposed",
        "hidden",
        "softmax",
        "w-not-t",
        "offset",
        "shape",
        "in-place",
    ],
)
def test_check_additive_scores_fn_hints(fn, words):
    assert_hint(check_additive_scores_fn(fn), *words)


# ----------------------------------------------------------------------------------------------
# check_parameter_growth: D = 512, U = 64: additive U (2D + 1) = 65,600, bilinear D^2 = 262,144
# ----------------------------------------------------------------------------------------------


def test_check_parameter_growth_right_answer():
    layer = AdditiveAttention(key_size=512, query_size=512, num_hiddens=64)
    counted = sum(p.numel() for p in layer.parameters())
    assert_correct(check_parameter_growth((counted, 512 * 512)))
    assert_correct(check_parameter_growth([65600.0, 262144]))


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("65600", ["two numbers"]),
        ((65536, 262144), ["w_v"]),
        ((512 * 1025, 262144), ["U stays at 64"]),
        ((65600 + 65, 262144), ["no biases"]),
        ((100, 262144), ["W_q (U x D)"]),
        ((65600, 1024), ["D x D"]),
    ],
    ids=["none", "str", "no-w-v", "u-equals-d", "biases", "wrong-additive", "wrong-bilinear"],
)
def test_check_parameter_growth_hints(answer, words):
    assert_hint(check_parameter_growth(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_variance_scale: D = 64, sigma^2 = 4 -> Var(q . k) = 1024, scale 32
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [32, 32.0, torch.tensor(32.0), math.sqrt(64 * 4 * 4)])
def test_check_variance_scale_right_answer(answer):
    assert_correct(check_variance_scale(answer))


def test_check_variance_scale_matches_a_measurement():
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(20_000, 64, generator=gen, dtype=torch.float64) * 2  # variance 4
    k = torch.randn(20_000, 64, generator=gen, dtype=torch.float64) * 2
    assert ((q * k).sum(-1) / 32).var().item() == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("x", ["one number"]),
        (16, ["sigma^4"]),
        (8, ["unit-variance"]),
        (1024, ["square root"]),
        (5, ["E[q_i^2] E[k_i^2]"]),
    ],
    ids=["none", "str", "sigma-sqrt-d", "sqrt-d", "variance", "wrong"],
)
def test_check_variance_scale_hints(answer, words):
    assert_hint(check_variance_scale(answer), *words)


# ----------------------------------------------------------------------------------------------
# Notebook 04, the worked self-attention example: inputs x0 = [1, 0, 1, 0], x1 = [0, 2, 0, 2], x2 = [1, 1, 1, 1]
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


X4 = [2, 0, 1, 1]  # the new token of the exercises, x3 (tokens counted from 0)
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
        (torch.tensor(_row_times(X4[::-1], W_K), dtype=torch.float64), ["reverse order"]),
        (torch.tensor([9.0, 9.0, 9.0]), ["[2, 0, 1, 1]", "W_K"]),
    ],
    ids=["none", "list", "shape", "query", "value", "reversed", "other"],
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
        (torch.tensor([1.0, 2.0, 3.0]), ["q3 . k_j", "W_Q"]),
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


# check_reversed_outputs: the worked example with X.flip(0), unscaled


def _outputs_by_hand(tokens, w_key=W_K):
    """Unscaled self-attention of ``tokens`` (lists), by plain loops."""
    q = [_row_times(x, W_Q) for x in tokens]
    k = [_row_times(x, w_key) for x in tokens]
    v = [_row_times(x, W_V) for x in tokens]
    rows = []
    for qi in q:
        w = _softmax([sum(a * b for a, b in zip(qi, kj, strict=True)) for kj in k]).tolist()
        rows.append([sum(wj * vj[c] for wj, vj in zip(w, v, strict=True)) for c in range(3)])
    return rows


REVERSED = _outputs_by_hand(X_TOKENS[::-1])


def test_reversed_outputs_by_hand_are_the_outputs_in_reverse_order():
    assert torch.allclose(torch.tensor(REVERSED), torch.tensor(_outputs_by_hand(X_TOKENS)[::-1]))


@pytest.mark.parametrize(
    "answer", [torch.tensor(REVERSED, dtype=torch.float64), torch.tensor(REVERSED)], ids=["float64", "float32"]
)
def test_check_reversed_outputs_right_answer(answer):
    feedback = check_reversed_outputs(answer)
    assert_correct(feedback)
    assert "order" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (torch.zeros(3), ["shape (3, 3)"]),
        (torch.tensor(_outputs_by_hand(X_TOKENS)), ["row i", "x2 is now in row 0"]),
        (torch.tensor(REVERSED).flip(1), ["not the columns"]),
        (torch.zeros(3, 3), ["X.flip(0)"]),
    ],
    ids=["none", "shape", "unchanged", "columns", "other"],
)
def test_check_reversed_outputs_hints(answer, words):
    assert_hint(check_reversed_outputs(answer), *words)


# check_self_attending_key: one entry of W_K changed, token 0 puts more than 0.5 on itself


def _w_key_with(row, column, value, dtype=torch.float64):
    w = torch.tensor(W_K, dtype=dtype)
    w[row, column] = value
    return w


def test_self_attending_key_by_hand():
    """W_K[1, 2] = -2: k1 = [4, 4, -4], k2 = k0 + k1 / 2 = [2, 3, -1]; q0 = [1, 0, 2] scores [2, -4, 0]."""
    w = [row[:] for row in W_K]
    w[1][2] = -2
    weights = _softmax([2, -4, 0]).tolist()
    assert [_row_times(x, w) for x in X_TOKENS] == [[0, 1, 1], [4, 4, -4], [2, 3, -1]]
    assert weights[0] > 0.5 and weights[0] == max(weights)


@pytest.mark.parametrize(
    "answer",
    [_w_key_with(1, 2, -2.0), _w_key_with(1, 2, -2.0, torch.float32), _w_key_with(3, 2, -5.0), _w_key_with(1, 0, -9.0)],
    ids=["row-1", "float32", "row-3", "row-1-col-0"],
)
def test_check_self_attending_key_right_answer(answer):
    feedback = check_self_attending_key(answer)
    assert_correct(feedback)
    assert "on itself" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (torch.zeros(3, 4), ["shape (4, 3)"]),
        (torch.tensor(W_K), ["floating-point"]),
        (_w_key_with(1, 2, float("nan")), ["finite"]),
        (torch.tensor(W_K, dtype=torch.float64), ["original W_K"]),
        (_w_key_with(1, 2, -2.0) * 2, ["exactly one entry"]),
        (_w_key_with(0, 2, 10.0), ["row 0", "k2 = k0 + k1 / 2"]),
        (_w_key_with(2, 0, -10.0), ["row 2", "does not use"]),
        (_w_key_with(1, 2, -0.2), ["q0 . k1 strongly negative"]),
    ],
    ids=["none", "shape", "integer", "nan", "unchanged", "several", "row-0", "row-2", "too-small"],
)
def test_check_self_attending_key_hints(answer, words):
    assert_hint(check_self_attending_key(answer), *words)


# ----------------------------------------------------------------------------------------------
# Notebook 05, masks: True = may attend
# ----------------------------------------------------------------------------------------------

T, F_ = True, False
PADDING = [[T, T, F_, F_, F_], [T, T, T, T, F_]]  # valid lengths 2 and 4 of 5 positions
CAUSAL = [[T, F_, F_, F_], [T, T, F_, F_], [T, T, T, F_], [T, T, T, T]]
PADDING_CAUSAL = [[T, F_, F_, F_], [T, T, F_, F_], [T, T, T, F_], [T, T, T, F_]]  # valid length 3: column 3 hidden


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
        (torch.tensor(CAUSAL), ["causal mask alone", "column 3"]),
        (torch.tensor(PADDING_ALONE), ["padding mask alone", "torch.tril"]),
        (torch.tensor(_flip(PADDING_CAUSAL)), ["combine the causal mask and the padding mask with &"]),
    ],
    ids=["none", "list", "3-D", "int", "or", "causal-alone", "padding-alone", "other"],
)
def test_check_padding_causal_mask_hints(mask, words):
    assert_hint(check_padding_causal_mask(mask), *words)


# ----------------------------------------------------------------------------------------------
# check_key_padding_mask: nn.MultiheadAttention's key_padding_mask (True = ignore), valid lengths 3 and 5 of 5
# ----------------------------------------------------------------------------------------------

KEY_PADDING = [[F_, F_, F_, T, T], [F_, F_, F_, F_, F_]]


@pytest.mark.parametrize(
    "mask",
    [torch.tensor(KEY_PADDING), ~torch.tensor([[T, T, T, F_, F_], [T, T, T, T, T]])],
    ids=["literal", "flipped"],
)
def test_check_key_padding_mask_right_answer(mask):
    feedback = checks.check_key_padding_mask(mask)
    assert_correct(feedback)
    assert "ignored" in repr(feedback)


@pytest.mark.parametrize(
    ("mask", "words"),
    [
        (None, ["replace None"]),
        (torch.tensor(_flip(KEY_PADDING)), ["polarity", "~"]),
        (torch.tensor(KEY_PADDING).int(), ["bool"]),
        (torch.tensor(KEY_PADDING)[:1], ["shape"]),
        (torch.zeros(2, 5, dtype=torch.bool), ["flip it"]),
    ],
    ids=["none", "course-polarity", "int", "shape", "other"],
)
def test_check_key_padding_mask_hints(mask, words):
    assert_hint(checks.check_key_padding_mask(mask), *words)


# ----------------------------------------------------------------------------------------------
# check_masked_attention (build it): masked scaled dot-product attention against F.scaled_dot_product_attention
# ----------------------------------------------------------------------------------------------


def _masked_attention(
    queries, keys, values, mask, *, transpose=False, scale=None, reverse=False, fill=None, dim=-1, in_place=False
):
    """A learner's masked attention: right with the defaults, each keyword one typical mistake."""
    scale = queries.shape[-1] ** -0.5 if scale is None else scale
    scores = (keys @ queries.transpose(-2, -1) if transpose else queries @ keys.transpose(-2, -1)) * scale
    blocked = mask if reverse else ~mask
    if in_place:
        queries.mul_(1.0).add_(1.0)
    if fill is not None:  # a finite fill, or -inf without handling empty rows
        return torch.softmax(scores.masked_fill(blocked, fill), dim=dim) @ values
    empty = blocked.all(-1, keepdim=True)  # (B, Q, 1)
    weights = torch.softmax(scores.masked_fill(blocked & ~empty, -math.inf), dim=dim)
    return weights.masked_fill(blocked | empty, 0.0) @ values


@pytest.mark.parametrize(
    "fn",
    [
        _masked_attention,
        lambda q, k, v, m: (_masked_attention(q, k, v, m), None),
        lambda q, k, v, m: _masked_attention(q.double(), k.double(), v.double(), m),
    ],
    ids=["output", "output-and-weights", "float64"],
)
def test_check_masked_attention_right_answer(fn):
    feedback = checks.check_masked_attention(fn)
    assert_correct(feedback)
    assert "not NaN" in repr(feedback)


def _no_mask(q, k, v, m):
    return _masked_attention(q, k, v, torch.ones_like(m))


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (None, ["replace None"]),
        (3, ["expected a function"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m, transpose=True), ["transposed"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m, scale=1.0), ["scale is missing"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m, scale=1 / q.shape[-1]), ["sqrt(D), not by D"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m, scale=v.shape[-1] ** -0.5), ["not of the values"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m, reverse=True), ["polarity is reversed"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m, fill=-math.inf), ["NaN", "nothing to attend to"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m, fill=-1e6), ["-1e6", "zeros"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m, dim=-2), ["dim=-1"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m, in_place=True), ["modified its input"]),
        (_no_mask, ["not applied"]),
        (lambda q, k, v, m: q @ k.transpose(-2, -1), ["expected shape"]),
        (lambda q, k, v, m: q @ k, ["raised RuntimeError", "keys.transpose"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m) + 1.0, ["already differ"]),
        (lambda q, k, v, m: _masked_attention(q, k, v, m) + (~m).sum(-1, keepdim=True) * 0.1, ["with the mask"]),
    ],
    ids=[
        "none",
        "not-callable",
        "transposed",
        "no-scale",
        "scale-D",
        "scale-V",
        "polarity",
        "nan",
        "finite-fill",
        "softmax-axis",
        "in-place",
        "no-mask",
        "shape",
        "raises",
        "other",
        "other-masked",
    ],
)
def test_check_masked_attention_hints(fn, words):
    assert_hint(checks.check_masked_attention(fn), *words)


def test_check_masked_attention_cases_have_one_empty_row_and_partly_masked_rows():
    """The hidden cases hold one row with nothing to attend to; every other row sees some keys and misses some."""
    from attn_course.checks.nb05 import _attention_cases

    for q, _, v, mask in _attention_cases():
        empty = (~mask).all(-1)
        assert empty.sum() == 1
        assert mask[~empty].any(-1).all() and (~mask[~empty]).any(-1).all()
        assert q.shape[-1] != v.shape[-1]  # a scale by sqrt(V) differs from sqrt(D)


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


@pytest.mark.parametrize("which", ["by-hand", "course"])
def test_check_split_merge_right_answer(which):
    from attn_course import merge_heads, split_heads

    split, merge = (_split, _merge) if which == "by-hand" else (split_heads, merge_heads)
    feedback = checks.check_split_merge(split, merge)
    assert_correct(feedback)
    assert "undoes" in repr(feedback)


@pytest.mark.parametrize(
    ("split", "merge", "words"),
    [
        (None, _merge, ["replace None", "split_heads"]),
        (_split, None, ["replace None", "merge_heads"]),
        (_split, "merge", ["expected a function"]),
        (_split_no_permute, _merge, ["mixes positions and heads"]),
        (_split_head_major, _merge, ["head order"]),
        (_split_strided, _merge, ["consecutive features"]),
        (_split_in_place, _merge, ["modified its input"]),
        (lambda x, h: x, _merge, ["split_heads", "expected shape"]),
        (_split, lambda x, h: x.reshape(x.shape[0] // h, x.shape[1], -1), ["does not undo"]),
        (_split, lambda x, h: x, ["merge_heads", "expected shape"]),
        (lambda x, h: x.reshape(3, 7), _merge, ["raised RuntimeError"]),
    ],
    ids=[
        "no-split",
        "no-merge",
        "not-callable",
        "no-permute",
        "head-major",
        "strided",
        "in-place",
        "identity",
        "merge-no-permute",
        "merge-identity",
        "raises",
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
    [_multi_head, _course_multi_head, lambda *a: _multi_head(*a, split=_split_head_major, merge=_merge_head_major)],
    ids=["by-hand", "course", "head-major-both-ways"],
)
def test_check_multi_head_right_answer(fn):
    feedback = checks.check_multi_head(fn)
    assert_correct(feedback)
    assert "torch.nn.MultiheadAttention" in repr(feedback)


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (None, ["replace None"]),
        ("f", ["expected a function"]),
        (lambda *a: _multi_head(*a, project=False), ["output projection is missing"]),
        (lambda *a: _multi_head(*a, split=_split_head_major), ["head order"]),
        (lambda *a: _multi_head(*a, merge=_merge_head_major), ["head order"]),
        (lambda *a: _multi_head(*a, split=_split_strided, merge=_merge_strided), ["consecutive features"]),
        (lambda *a: _multi_head(*a, split=_split_strided), ["when splitting"]),
        (lambda *a: _multi_head(*a, merge=_merge_strided), ["when merging"]),
        (lambda *a: _multi_head(*a, split=_split_no_permute), ["mixes positions"]),
        (lambda *a: _multi_head(*a, scale=lambda d: 1.0), ["scale is missing"]),
        (lambda *a: _multi_head(*a, scale=lambda d: d**-0.5), ["sqrt(dh), not sqrt(D)"]),
        (lambda x_q, x_kv, *w: _multi_head(x_q, x_kv, *[t.T for t in w[:4]], w[4]), ["transposed"]),
        (lambda *a: _multi_head(*a)[:, :1], ["expected shape"]),
        (lambda *a: _multi_head(*a) * 2.0, ["differ"]),
        (lambda *a: 1 / 0, ["raised ZeroDivisionError"]),
    ],
    ids=[
        "none",
        "not-callable",
        "no-projection",
        "split-head-major",
        "merge-head-major",
        "strided",
        "split-strided",
        "merge-strided",
        "no-permute",
        "no-scale",
        "scale-D",
        "transposed",
        "shape",
        "other",
        "raises",
    ],
)
def test_check_multi_head_hints(fn, words):
    assert_hint(checks.check_multi_head(fn), *words)


def test_check_multi_head_leaves_its_inputs_alone_and_catches_a_learner_who_does_not():
    def in_place(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
        out = _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads)
        W_o.zero_()
        return out

    assert_hint(checks.check_multi_head(in_place), "modified its input")


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
        _encoding,
        lambda t, d: _encoding(t, d).double(),
        lambda t, d: __import__("attn_course").positional_encoding(t, d),
    ],
    ids=["float32", "float64", "course"],
)
def test_check_positional_encoding_right_answer(fn):
    feedback = checks.check_positional_encoding(fn)
    assert_correct(feedback)
    assert "i from 0" in repr(feedback)


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (None, ["replace None"]),
        (1, ["expected a function"]),
        (lambda t, d: _encoding(t, d, swap=True), ["swapped"]),
        (lambda t, d: _encoding(t, d, start=1), ["positions start at 0"]),
        (lambda t, d: _encoding(t, d, exponent=lambda j, dd: j / dd), ["exponent is 2j / D"]),
        (lambda t, d: _encoding(t, d, exponent=lambda j, dd: -2 * j / dd), ["minus sign"]),
        (lambda t, d: _encoding(t, d, blocks=True), ["not two blocks"]),
        (lambda t, d: _encoding(t, d).T, ["transposed"]),
        (lambda t, d: _encoding(t, d).long(), ["floating-point"]),
        (lambda t, d: _encoding(t, d)[:, :2], ["expected shape"]),
        (lambda t, d: _encoding(t, d) * 2, ["differs from ac.positional_encoding"]),
        (lambda t, d: torch.zeros(t, d).sin_().log(), ["differs"]),
    ],
    ids=[
        "none",
        "not-callable",
        "swapped",
        "from-1",
        "exponent-j",
        "no-minus",
        "blocks",
        "transposed",
        "int",
        "shape",
        "other",
        "inf",
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


# ----------------------------------------------------------------------------------------------
# check_alignment_position: reversing L digits, output step t reads source position L - 1 - t, <eos> reads L
# ----------------------------------------------------------------------------------------------


def _position(t, length):
    return length - 1 - t if t < length else length  # the ideal position of each digit step, then <eos>'s own


@pytest.mark.parametrize(
    "answer",
    [
        _position,
        lambda t, length: (length - 1 - t) % (length + 1),  # -1 wraps around to L
        lambda t, length: torch.tensor(_position(t, length)),
        lambda t, length: float(_position(t, length)),
        lambda t, length: length - 1 - t if t < length else 0,  # the <eos> step reads position 0, as trained
        lambda t, length: length - 1 - t,  # -1 for <eos>: the <eos> step is not checked
    ],
    ids=["function", "modulo", "tensor", "float", "eos-on-first", "eos-anywhere"],
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


def test_check_alignment_position_never_asks_for_the_eos_step():
    """Notebook 07's trained model reads position 0 at <eos>: the check does not call position(L, L)."""
    asked = []

    def position(t, length):
        asked.append((t, length))
        return length - 1 - t

    assert_correct(check_alignment_position(position))
    assert all(t < length for t, length in asked) and len(asked) == sum(range(1, 13))


# ----------------------------------------------------------------------------------------------
# check_bahdanau_step: one decoder step of additive attention, padding masked, on hidden cases
# ----------------------------------------------------------------------------------------------


def _bahdanau(query, states, src_len, W_q, W_k, w_v, *, tanh=True, scale=1.0, mask="before", dim=-1):
    features = (query @ W_q.T)[:, None] + states @ W_k.T  # (B, S, A)
    scores = (torch.tanh(features) if tanh else features) @ w_v / scale  # (B, S)
    valid = torch.arange(states.shape[1]) < src_len[:, None]
    if mask == "before":
        weights = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=dim)
    elif mask == "reversed":
        weights = torch.softmax(scores.masked_fill(valid, float("-inf")), dim=dim)
    elif mask == "after":
        weights = torch.softmax(scores, dim=dim) * valid
    else:
        weights = torch.softmax(scores, dim=dim)
    return (weights[:, :, None] * states).sum(1), weights


def _step(**kwargs):
    return lambda *args: _bahdanau(*args, **kwargs)


def test_check_bahdanau_step_reference_is_the_course_layer():
    """The hidden reference agrees with ac.AdditiveAttention (the layer notebook 07's decoder uses)."""
    from attn_course import AdditiveAttention
    from attn_course.checks.nb07 import _bahdanau_reference, _step_cases

    for query, states, src_len, W_q, W_k, w_v in _step_cases():
        layer = AdditiveAttention(states.shape[-1], query.shape[-1], W_q.shape[0]).double()
        with torch.no_grad():
            layer.W_q.weight.copy_(W_q), layer.W_k.weight.copy_(W_k), layer.w_v.weight.copy_(w_v[None])
            want = layer(query[:, None], states, states, src_len)[:, 0]
        context, weights = _bahdanau_reference(query, states, src_len, W_q, W_k, w_v)
        torch.testing.assert_close(context, want)
        torch.testing.assert_close(weights, layer.attention_weights[:, 0])


def _right_with_bmm(query, states, src_len, W_q, W_k, w_v):
    scores = torch.tanh(query[:, None] @ W_q.T + states @ W_k.T) @ w_v  # (B, S)
    scores = scores.masked_fill(torch.arange(states.shape[1]) >= src_len[:, None], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch.bmm(weights[:, None], states)[:, 0], weights


@pytest.mark.parametrize("answer", [_step(), _right_with_bmm], ids=["broadcast", "bmm"])
def test_check_bahdanau_step_right_answer(answer):
    feedback = check_bahdanau_step(answer)
    assert_correct(feedback)
    assert "hidden cases" in repr(feedback)


def _in_place(query, states, src_len, W_q, W_k, w_v):
    query.mul_(2.0)
    return _bahdanau(query, states, src_len, W_q, W_k, w_v)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "step(query, states"]),
        (3, ["expected a function", "got int"]),
        (lambda *a: a[1].mean(1), ["return a tuple (context, weights)", "Tensor"]),
        (lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wq.T, Wk.T, wv), ["raised RuntimeError", "W_q.T"]),
        (_step(mask="none"), ["padded positions", "before the softmax"]),
        (_step(mask="reversed"), ["polarity"]),
        (_step(mask="after"), ["sum to 1", "mask before the softmax"]),
        (_step(dim=0), ["sum to 1", "dim=-1"]),
        (_step(tanh=False), ["no tanh"]),
        (lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wq, Wk, wv, scale=Wq.shape[0] ** 0.5), ["no 1/sqrt scale"]),
        (lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wk, Wq, wv), ["swapped"]),
        (lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wq, Wk, -wv), ["sign of the scores"]),
        (lambda *a: (a[1].mean(1), _bahdanau(*a)[1]), ["plain average"]),
        (lambda *a: (2 * _bahdanau(*a)[0], _bahdanau(*a)[1]), ["the weights are right", "sum_j weights_j"]),
        (lambda *a: (_bahdanau(*a)[0], _bahdanau(*a)[1][:, None]), ["weights should have shape (B, S)"]),
        (lambda *a: (_bahdanau(*a)[0][None], _bahdanau(*a)[1]), ["context should have shape (B, U)"]),
        (_in_place, ["modified one of its inputs"]),
    ],
    ids=[
        "none",
        "int",
        "one-tensor",
        "transposed",
        "no-mask",
        "polarity",
        "masked-after-softmax",
        "softmax-over-batch",
        "no-tanh",
        "scaled",
        "swapped",
        "sign",
        "plain-average",
        "wrong-context",
        "weights-3d",
        "context-3d",
        "in-place",
    ],
)
def test_check_bahdanau_step_hints(answer, words):
    assert_hint(check_bahdanau_step(answer), *words)


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
        (causal_mask(6)[2], ["may attend to itself", "rows count from 0"]),
        (torch.ones(6, dtype=torch.bool), ["the encoder's view", "must not see later target tokens"]),
        (causal_mask(6)[4], ["numbered from 0", "0 to 3, itself included"]),
        (torch.zeros(6, dtype=torch.bool), ["numbered from 0"]),
    ],
    ids=["none", "list", "whole-mask", "float", "int", "polarity", "strictly-before", "all-true", "row-4", "all-false"],
)
def test_check_causal_row_hints(answer, words):
    assert_hint(check_causal_row(answer), *words)


# ----------------------------------------------------------------------------------------------
# notebook 10: check_online_step (build it), check_causal_tiles, check_tiled_bytes
# ----------------------------------------------------------------------------------------------


def _online_step(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(block - new_max[:, None]).sum(-1)


def _online_step_in_place(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))
    running_sum.mul_(torch.exp(running_max - new_max)).add_(torch.exp(block - new_max[:, None]).sum(-1))
    return new_max, running_sum


def _online_step_float32(running_max, running_sum, block):
    new_max, new_sum = _online_step(running_max.float(), running_sum.float(), block.float())
    return new_max.double(), new_sum.double()


@pytest.mark.parametrize("fn", [_online_step, _online_step_float32], ids=["reference-formula", "float32"])
def test_check_online_step_right_answer(fn):
    feedback = checks.check_online_step(fn)
    assert_correct(feedback)
    assert "scores of 1e4" in repr(feedback)


def _bad_step(kind):
    def step(running_max, running_sum, block):
        new_max = torch.maximum(running_max, block.amax(dim=-1))
        if kind == "no-rescale":
            return new_max, running_sum + torch.exp(block - new_max[:, None]).sum(-1)
        if kind == "old-max":
            return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(
                block - running_max[:, None]
            ).sum(-1)
        if kind == "inverted":
            return new_max, running_sum * torch.exp(new_max - running_max) + torch.exp(block - new_max[:, None]).sum(-1)
        if kind == "no-max-subtracted":
            return new_max, running_sum * torch.exp(running_max - new_max) + torch.exp(block).sum(-1)
        if kind == "block-max-only":
            return block.amax(-1), running_sum * torch.exp(running_max - new_max) + torch.exp(
                block - new_max[:, None]
            ).sum(-1)
        if kind == "placeholders":
            return None, None
        if kind == "one-tensor":
            return new_max
        if kind == "keepdim":
            return block.amax(-1, keepdim=True), running_sum[:, None]
        raise RuntimeError("boom")

    return step


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None", "step(running_max, running_sum, block)"]),
        (3, ["expected a function", "int"]),
        (_bad_step("no-rescale"), ["not rescaled", "exp(running_max - new_max)"]),
        (_bad_step("old-max"), ["against the new maximum", "-inf"]),
        (_bad_step("inverted"), ["inverted"]),
        (_bad_step("no-max-subtracted"), ["subtract new_max before exp", "overflows"]),
        (_bad_step("block-max-only"), ["new_max is off", "larger of running_max"]),
        (_bad_step("one-tensor"), ["return two tensors"]),
        (_bad_step("placeholders"), ["replace the None placeholders"]),
        (_bad_step("keepdim"), ["shape (5,)", "dim=-1"]),
        (_bad_step("raise"), ["raised RuntimeError", "boom"]),
        (_online_step_in_place, ["in place"]),
    ],
    ids=[
        "none",
        "int",
        "no-rescale",
        "old-max",
        "inverted",
        "overflow",
        "block-max",
        "one",
        "none-pair",
        "keepdim",
        "raise",
        "inplace",
    ],
)
def test_check_online_step_hints(answer, words):
    assert_hint(checks.check_online_step(answer), *words)


@pytest.mark.parametrize("answer", [36, 36.0, torch.tensor(36)])
def test_check_causal_tiles_right_answer(answer):
    feedback = checks.check_causal_tiles(answer)
    assert_correct(feedback)
    assert "28 skipped" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("many", ["one number"]),
        (64, ["every tile", "skipped"]),
        (28, ["below the diagonal only", "diagonal tiles"]),
        (28.0, ["below the diagonal only"]),
        (35, ["ceil(N / b)"]),
    ],
)
def test_check_causal_tiles_hints(answer, words):
    assert_hint(checks.check_causal_tiles(answer), *words)


def test_check_tiled_bytes_right_answer():
    from attn_course import io_cost

    feedback = checks.check_tiled_bytes(io_cost(4096, 64, 128)["tiled_bytes"])
    assert_correct(feedback)
    assert "69,206,016 bytes" in repr(feedback)


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (69_206_016 // 4, ["number of elements", "4 bytes"]),
        (4 * 2 * 32 * 4096 * 64, ["reading Q once"]),
        (4 * 4 * 4096 * 64, ["once per query block"]),
        (1.0, ["2 N d", "ceil(N / b)"]),
    ],
)
def test_check_tiled_bytes_hints(answer, words):
    assert_hint(checks.check_tiled_bytes(answer), *words)


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
