"""attn_course.checks.selfattention, the checks of notebook 04 (self-attention by hand):
"Correct" for a right answer, a hint for each mistake."""

import math

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack, in_float64_and_float32, softmax_by_hand

from attn_course.checks import (
    check_new_token_key,
    check_new_token_output,
    check_new_token_scores,
    check_reversed_outputs,
    check_self_attending_key,
)
from attn_course.checks.selfattention import NEW_TOKEN
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


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words of its cause
# ----------------------------------------------------------------------------------------------

_X3 = torch.tensor(NEW_TOKEN, dtype=torch.float64)
_WQ, _WK, _WV = (torch.tensor(w, dtype=torch.float64) for w in (W_Q, W_K, W_V))
_K3, _Q3 = _X3 @ _WK, _X3 @ _WQ  # [1, 2, 2], [2, 1, 4]
_SCORES3 = torch.tensor(K_ROWS, dtype=torch.float64) @ _Q3  # [5, 12, 11]
_WEIGHTS3 = torch.softmax(_SCORES3, 0)
_OUT3 = _WEIGHTS3 @ torch.tensor(V_ROWS, dtype=torch.float64)
_WITH_SELF = torch.softmax(torch.cat([_SCORES3, (_Q3 @ _K3).unsqueeze(0)]), 0) @ torch.cat(
    [torch.tensor(V_ROWS, dtype=torch.float64), (_X3 @ _WV).unsqueeze(0)]
)  # the new token attending to itself too
_REV = torch.tensor(REVERSED, dtype=torch.float64)
_REV_X = torch.tensor(X_TOKENS[::-1], dtype=torch.float64)
_REV_WEIGHTS = torch.softmax((_REV_X @ _WQ) @ (_REV_X @ _WK).T, -1)
_REV_SCALED = torch.softmax((_REV_X @ _WQ) @ (_REV_X @ _WK).T / math.sqrt(3), -1) @ (_REV_X @ _WV)

ATTACKS = {
    "check_new_token_key": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", [1.0, 2.0, 2.0]),
        attack("a NumPy array", "ndarray", _K3.numpy()),
        attack("a string", "str", "[1, 2, 2]"),
        attack("W_Q instead of W_K", "wrong matrix", _X3 @ _WQ),
        attack("W_V instead of W_K", "wrong matrix", _X3 @ _WV),
        attack("the token read backwards", "reverse order", _X3.flip(0) @ _WK),
        attack("the key of token 0 from the notebook", "token 0", torch.tensor(K_ROWS[0], dtype=torch.float64)),
        attack(
            "the keys of all four tokens", "(3,)", torch.cat([torch.tensor(K_ROWS, dtype=torch.float64), _K3[None]])
        ),
        attack("a (1, 3) row", "got (1, 3)", _K3[None]),
        attack("the token's first three numbers", "own numbers", _X3[:3]),
    ],
    "check_new_token_scores": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", [5.0, 12.0, 11.0]),
        attack("a NumPy array", "ndarray", _SCORES3.numpy()),
        attack("scaled by 1/sqrt(3)", "1/sqrt(3)", _SCORES3 / math.sqrt(3)),
        attack("the softmax weights", "weights", _WEIGHTS3),
        attack("the new key against the old queries", "swapped roles", torch.tensor(Q_ROWS, dtype=torch.float64) @ _K3),
        attack("with its own score, four entries", "tokens 0 to 2", torch.cat([_SCORES3, (_Q3 @ _K3)[None]])),
        attack("token 2's scores from the notebook", "token 2", torch.tensor(TOKEN3_SCORES, dtype=torch.float64)),
        attack("scaled by 1/sqrt(4), the input size", "unscaled", _SCORES3 / 2),
        attack("float16", "float16", _SCORES3.half()),
    ],
    "check_new_token_output": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", _OUT3.tolist()),
        attack("a NumPy array", "ndarray", _OUT3.numpy()),
        attack(
            "weights rounded to one decimal",
            "rounded to one decimal",
            torch.tensor([0.0, 0.7, 0.3]) @ torch.tensor(V_ROWS, dtype=torch.float32),
        ),
        attack(
            "the scaled version",
            "scaled",
            torch.softmax(_SCORES3 / math.sqrt(3), 0) @ torch.tensor(V_ROWS, dtype=torch.float64),
        ),
        attack("no softmax", "softmax", _SCORES3 @ torch.tensor(V_ROWS, dtype=torch.float64)),
        attack("keys mixed instead of values", "values V", _WEIGHTS3 @ torch.tensor(K_ROWS, dtype=torch.float64)),
        attack("the weights, not the output", "those are the weights", _WEIGHTS3),
        attack("the new token attends to itself too", "tokens 0-2", _WITH_SELF),
        attack("rounded to 2 decimals", "rounded", _OUT3.round(decimals=2)),
        attack("float16", "float16", _OUT3.half()),
    ],
    "check_reversed_outputs": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", REVERSED),
        attack("a NumPy array", "ndarray", _REV.numpy()),
        attack(
            "the original outputs", "x2 is now in row 0", torch.tensor(_outputs_by_hand(X_TOKENS), dtype=torch.float64)
        ),
        attack("columns flipped", "not the columns", _REV.flip(1)),
        attack("transposed", "transposed", _REV.T),
        attack("the weights, not the outputs", "weights", _REV_WEIGHTS),
        attack("the scaled version", "scaled", _REV_SCALED),
        attack("rounded to 2 decimals", "rounded", _REV.round(decimals=2)),
        attack("float16", "float16", _REV.half()),
        attack("one row only", "shape (3, 3)", _REV[0]),
    ],
    "check_self_attending_key": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", _w_key_with(1, 2, -2.0).tolist()),
        attack("a NumPy array", "ndarray", _w_key_with(1, 2, -2.0).numpy()),
        attack("the original W_K", "original W_K", torch.tensor(W_K, dtype=torch.float64)),
        attack("two entries changed", "exactly one entry", _w_key_with(1, 2, -2.0) * 2),
        attack("a row x0 uses", "row 0", _w_key_with(0, 2, 10.0)),
        attack("an integer tensor", "floating-point", torch.tensor(W_K)),
        attack("NaN written in", "finite", _w_key_with(1, 2, float("nan"))),
        attack("W_K transposed", "transposed", _w_key_with(1, 2, -2.0).T),
        attack("too small a change", "q0 . k1 strongly negative", _w_key_with(1, 2, -0.2)),
        attack("the sign the wrong way", "q0 . k1 strongly negative", _w_key_with(1, 2, 5.0)),
    ],
}
