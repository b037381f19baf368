"""attn_course.checks.nb04, the checks of notebook 04 (self-attention by hand):
"Correct" for a right answer, a hint for each mistake."""

import math

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, in_float64_and_float32, softmax_by_hand

from attn_course.checks import (
    check_new_token_key,
    check_new_token_output,
    check_new_token_scores,
    check_reversed_outputs,
    check_self_attending_key,
)
from attn_course.checks.nb04 import NEW_TOKEN
from attn_course.data import three_token_example

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
OUTPUT4 = _pool(softmax_by_hand(SCORES4).tolist())


def test_new_token_by_hand():
    assert list(NEW_TOKEN) == X4
    assert Q4 == [2, 1, 4] and K4 == [1, 2, 2] and SCORES4 == [5, 12, 11]


@pytest.mark.parametrize(
    "answer",
    [
        *in_float64_and_float32(K4),
        pytest.param(torch.tensor([1.0, 2.0, 2.00001]), id="close"),
    ],
)
def test_check_new_token_key_right_answer(answer):
    assert_correct(check_new_token_key(answer), "[1, 2, 2]")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param([1, 2, 2], ["torch.Tensor", "list"], id="list"),
        pytest.param(torch.zeros(1, 3), ["shape (3,)", "(1, 3)"], id="shape"),
        pytest.param(torch.tensor(Q4, dtype=torch.float64), ["wrong matrix", "W_K"], id="query"),
        pytest.param(torch.tensor(_row_times(X4, W_V), dtype=torch.float64), ["wrong matrix", "W_K"], id="value"),
        pytest.param(torch.tensor(_row_times(X4[::-1], W_K), dtype=torch.float64), ["reverse order"], id="reversed"),
        pytest.param(torch.tensor([9.0, 9.0, 9.0]), ["[2, 0, 1, 1]", "W_K"], id="other"),
    ],
)
def test_check_new_token_key_hints(answer, words):
    assert_hint(check_new_token_key(answer), *words)


@pytest.mark.parametrize("answer", in_float64_and_float32(SCORES4))
def test_check_new_token_scores_right_answer(answer):
    assert_correct(check_new_token_scores(answer), "[5, 12, 11]")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(torch.zeros(3, 1), ["shape (3,)", "(3, 1)"], id="shape"),
        pytest.param(torch.tensor([s / math.sqrt(3) for s in SCORES4]), ["scaled", "unscaled"], id="scaled"),
        pytest.param(softmax_by_hand(SCORES4), ["weights", "before the softmax"], id="softmax"),
        pytest.param(
            torch.tensor([sum(a * b for a, b in zip(q, K4, strict=True)) for q in Q_ROWS]),
            ["swapped", "query"],
            id="swapped",
        ),
        pytest.param(torch.tensor([1.0, 2.0, 3.0]), ["q3 . k_j", "W_Q"], id="other"),
        pytest.param(torch.tensor([5.0, math.nan, 11.0]), ["holds NaN"], id="nan"),
        pytest.param(
            torch.tensor([s / math.sqrt(3) for s in SCORES4]).round(decimals=2), ["q3 . k_j"], id="scaled-rounded"
        ),
    ],
)
def test_check_new_token_scores_hints(answer, words):
    assert_hint(check_new_token_scores(answer), *words)


@pytest.mark.parametrize("answer", in_float64_and_float32(OUTPUT4))
def test_check_new_token_output_right_answer(answer):
    assert_correct(check_new_token_output(answer))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param("output", ["torch.Tensor", "str"], id="str"),
        pytest.param(
            torch.tensor(_pool(softmax_by_hand([s / math.sqrt(3) for s in SCORES4]).tolist())),
            ["scaled", "unscaled"],
            id="scaled",
        ),
        pytest.param(torch.tensor(_pool(SCORES4)), ["softmax", "before"], id="no-softmax"),
        pytest.param(
            torch.tensor(
                [
                    sum(w * k[c] for w, k in zip(softmax_by_hand(SCORES4).tolist(), K_ROWS, strict=True))
                    for c in range(3)
                ]
            ),
            ["values V", "not the keys"],
            id="keys",
        ),
        pytest.param(torch.tensor([0.0, 0.0, 0.0]), ["softmax", "@ V"], id="other"),
        pytest.param(torch.tensor(OUTPUT4).round(decimals=2), ["close", "rounded to 2 decimals"], id="rounded-2"),
        pytest.param(torch.tensor(OUTPUT4).round(decimals=3), ["close", "rounded to 3 decimals"], id="rounded-3"),
        pytest.param(torch.tensor(_pool([0.0, 0.7, 0.3])), ["weights rounded to one decimal", "exact"], id="weights-1"),
        pytest.param(torch.tensor([math.nan, 7.0, 1.0]), ["holds NaN"], id="nan"),
    ],
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
        w = softmax_by_hand([sum(a * b for a, b in zip(qi, kj, strict=True)) for kj in k]).tolist()
        rows.append([sum(wj * vj[c] for wj, vj in zip(w, v, strict=True)) for c in range(3)])
    return rows


REVERSED = _outputs_by_hand(X_TOKENS[::-1])


def test_reversed_outputs_by_hand_are_the_outputs_in_reverse_order():
    assert torch.allclose(torch.tensor(REVERSED), torch.tensor(_outputs_by_hand(X_TOKENS)[::-1]))


@pytest.mark.parametrize("answer", in_float64_and_float32(REVERSED))
def test_check_reversed_outputs_right_answer(answer):
    assert_correct(check_reversed_outputs(answer), "order")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(torch.zeros(3), ["shape (3, 3)"], id="shape"),
        pytest.param(torch.tensor(_outputs_by_hand(X_TOKENS)), ["row i", "x2 is now in row 0"], id="unchanged"),
        pytest.param(torch.tensor(REVERSED).flip(1), ["not the columns"], id="columns"),
        pytest.param(torch.zeros(3, 3), ["X.flip(0)"], id="other"),
        pytest.param(torch.tensor(REVERSED).round(decimals=2), ["close", "rounded to 2 decimals"], id="rounded"),
        pytest.param(torch.tensor(REVERSED).round(decimals=1), ["close", "rounded to 1 decimal"], id="rounded-1"),
        pytest.param(torch.full((3, 3), math.inf), ["holds infinity"], id="inf"),
    ],
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
    weights = softmax_by_hand([2, -4, 0]).tolist()
    assert [_row_times(x, w) for x in X_TOKENS] == [[0, 1, 1], [4, 4, -4], [2, 3, -1]]
    assert weights[0] > 0.5 and weights[0] == max(weights)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_w_key_with(1, 2, -2.0), id="row-1"),
        pytest.param(_w_key_with(1, 2, -2.0, torch.float32), id="float32"),
        pytest.param(_w_key_with(3, 2, -5.0), id="row-3"),
        pytest.param(_w_key_with(1, 0, -9.0), id="row-1-col-0"),
    ],
)
def test_check_self_attending_key_right_answer(answer):
    assert_correct(check_self_attending_key(answer), "on itself")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(torch.zeros(3, 4), ["shape (4, 3)"], id="shape"),
        pytest.param(torch.tensor(W_K), ["floating-point"], id="integer"),
        pytest.param(_w_key_with(1, 2, float("nan")), ["finite"], id="nan"),
        pytest.param(torch.tensor(W_K, dtype=torch.float64), ["original W_K"], id="unchanged"),
        pytest.param(_w_key_with(1, 2, -2.0) * 2, ["exactly one entry"], id="several"),
        pytest.param(_w_key_with(0, 2, 10.0), ["row 0", "k2 = k0 + k1 / 2"], id="row-0"),
        pytest.param(_w_key_with(2, 0, -10.0), ["row 2", "does not use"], id="row-2"),
        pytest.param(_w_key_with(1, 2, -0.2), ["q0 . k1 strongly negative"], id="too-small"),
    ],
)
def test_check_self_attending_key_hints(answer, words):
    assert_hint(check_self_attending_key(answer), *words)
