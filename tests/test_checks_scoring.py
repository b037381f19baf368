"""attn_course.checks.scoring, the checks of notebook 03 on scoring functions (scaled dot-product and
additive): "Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack, softmax_by_hand

from attn_course import (
    additive_scores,
    dot_product_scores,
)
from attn_course.checks import (
    check_additive_scores_fn,
    check_dot_scores_fn,
    check_scaled_scores,
)

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
        pytest.param(torch.tensor([SCALED]), id="float32"),
        pytest.param(torch.tensor([SCALED], dtype=torch.float64), id="float64"),
        pytest.param(_scores_by_matmul(torch.float32), id="matmul-float32"),
        pytest.param(_scores_by_matmul(torch.float64), id="matmul-float64"),
        pytest.param(torch.tensor([SCALED], requires_grad=True), id="requires-grad"),
    ],
)
def test_check_scaled_scores_right_answer(answer):
    assert_correct(check_scaled_scores(answer), "[0.7071, 1.4142, 2.1213]")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "(1, 3) tensor"], id="none"),
        pytest.param([SCALED], ["torch.Tensor", "list"], id="list"),
        pytest.param(np.array([SCALED]), ["torch.Tensor", "ndarray"], id="numpy"),
        pytest.param(torch.tensor(SCALED), ["expected shape (1, 3)", "got (3,)"], id="1-D"),
        pytest.param(torch.tensor([SCALED, SCALED]), ["expected shape (1, 3)", "got (2, 3)"], id="two-rows"),
        pytest.param(torch.tensor([[v] for v in SCALED]), ["transposed", "q @ k.T"], id="transposed"),
        pytest.param(torch.tensor([[1, 2, 3]]), ["floating-point", "torch.int64"], id="integer"),
        pytest.param(torch.tensor([DOTS]), ["plain dot products", "sqrt(D)"], id="plain-dots"),
        pytest.param(torch.tensor([[v / 2 for v in DOTS]]), ["square root of D, not by D"], id="divided-by-d"),
        pytest.param(
            softmax_by_hand(SCALED).unsqueeze(0), ["these are the weights", "into the softmax"], id="softmax-weights"
        ),
        pytest.param(torch.tensor([[-v for v in SCALED]]), ["(query . key) / sqrt(D)", "D = 2"], id="sign"),
        pytest.param(torch.zeros(1, 3), ["(query . key) / sqrt(D)"], id="zeros"),
        pytest.param(torch.tensor([[0.707, 1.414, 2.121]]), ["close", "decimals"], id="rounded-to-3-decimals"),
        pytest.param(torch.tensor([[0.71, 1.41, 2.12]]), ["close", "decimals"], id="rounded-to-2-decimals"),
        pytest.param(torch.tensor([[math.nan, 1.4142, 2.1213]]), ["NaN"], id="nan"),
    ],
)
def test_check_scaled_scores_hints(answer, words):
    assert_hint(check_scaled_scores(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_dot_scores_fn (build it): hidden random cases, reference queries @ keys^T / sqrt(D)
# ----------------------------------------------------------------------------------------------


def _dot_right(queries, keys):
    return torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(_dot_right, id="bmm"),
        pytest.param(lambda q, k: torch.einsum("bqd,bkd->bqk", q, k) / q.shape[-1] ** 0.5, id="einsum"),
        pytest.param(dot_product_scores, id="attn-course"),
    ],
)
def test_check_dot_scores_fn_right_answer(fn):
    assert_correct(check_dot_scores_fn(fn), "hidden")


def _in_place(q, k):
    q.mul_(1.0)  # a no-op numerically, but it still writes
    q.add_(1.0)
    return _dot_right(q - 1.0, k)


@pytest.mark.parametrize(
    "fn, words",
    [
        pytest.param("q @ k.T", ["expected a function"], id="not-callable"),
        pytest.param(lambda q, k: torch.bmm(q, k.transpose(1, 2)), ["missing the 1/sqrt(D) scale"], id="unscaled"),
        pytest.param(
            lambda q, k: torch.bmm(k, q.transpose(1, 2)) / math.sqrt(q.shape[-1]),
            ["transposed", "(2, 3, 5)"],
            id="transposed",
        ),
        pytest.param(lambda q, k: torch.bmm(q, k.transpose(1, 2)) / q.shape[-1], ["divided by D"], id="by-d"),
        pytest.param(
            lambda q, k: torch.bmm(q, k.transpose(1, 2)) / math.sqrt(k.shape[1]),
            ["wrong scale", "last axis"],
            id="by-k",
        ),
        pytest.param(lambda q, k: torch.softmax(_dot_right(q, k), dim=-1), ["weights", "softmax"], id="softmax"),
        pytest.param(lambda q, k: torch.mm(q, k), ["raised"], id="raises"),
        pytest.param(lambda q, k: _dot_right(q, k)[0], ["expected shape"], id="shape"),
        pytest.param(lambda q, k: _dot_right(q, k).tolist(), ["torch.Tensor"], id="list"),
        pytest.param(lambda q, k: _dot_right(q, k).round(), ["one entry by hand"], id="rounded"),
        pytest.param(_in_place, ["changed its input queries in place"], id="in-place"),
        pytest.param(
            lambda q, k: torch.bmm(q, k.transpose(1, 2)) / math.isqrt(q.shape[-1]),
            ["whole number 2", "D = 6", "not math.isqrt(D)"],
            id="isqrt",
        ),
        pytest.param(
            lambda q, k: torch.bmm(q, k.transpose(1, 2)) / math.sqrt(8),
            ["divided by 2.828", "D = 6", "queries.shape[-1]"],
            id="fixed-d",
        ),
        pytest.param(lambda q, k: _dot_right(q, k) / 0, ["infinity"], id="inf"),
        pytest.param(  # the first hidden case has D = 6, the second Q = 6: a fixed number, not a count of tokens
            lambda q, k: q @ k.transpose(1, 2) / math.sqrt(6), ["sqrt(6) again", "D = 11 here"], id="sqrt-6"
        ),
        pytest.param(
            lambda q, k: q @ k.transpose(1, 2) / math.sqrt(k.shape[1]), ["not a number of tokens"], id="tokens"
        ),
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
    sizes = [q[-1] for q, _ in seen]
    assert len(set(sizes)) == len(sizes) and any(math.isqrt(d) ** 2 != d for d in sizes)


@pytest.mark.parametrize("d", [4, 9, 16])
def test_check_dot_scores_fn_a_scale_fixed_at_one_d_does_not_pass(d):
    assert_hint(check_dot_scores_fn(lambda q, k: torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d)), "queries.shape[-1]")


def test_check_dot_scores_fn_reference_comes_from_the_original_inputs():
    """A function that empties its keys and returns the scores of those empty keys: named, never marked right."""

    def zero_keys(q, k):
        k.zero_()
        return _dot_right(q, k)

    assert_hint(check_dot_scores_fn(zero_keys), "changed its input keys in place")


# ----------------------------------------------------------------------------------------------
# check_additive_scores_fn (build it): hidden random cases, reference a torch.nn MLP on [q; k]
# ----------------------------------------------------------------------------------------------


def _additive_right(q, k, w_q, w_k, w_v):
    return torch.tanh((q @ w_q.T).unsqueeze(2) + (k @ w_k.T).unsqueeze(1)) @ w_v  # (B, Q, K)


def _additive_linear(q, k, w_q, w_k):
    return (q @ w_q.T).unsqueeze(2) + (k @ w_k.T).unsqueeze(1)  # (B, Q, K, U)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(_additive_right, id="broadcast"),
        pytest.param(additive_scores, id="attn-course"),
    ],
)
def test_check_additive_scores_fn_right_answer(fn):
    assert_correct(check_additive_scores_fn(fn), "torch.nn")


@pytest.mark.parametrize(
    "fn, words",
    [
        pytest.param(3, ["expected a function"], id="not-callable"),
        pytest.param(lambda q, k, wq, wk, wv: _additive_linear(q, k, wq, wk) @ wv, ["missing the tanh"], id="no-tanh"),
        pytest.param(
            lambda q, k, wq, wk, wv: torch.tanh(_additive_linear(q, k, wq, wk) @ wv), ["before w_v"], id="tanh-after"
        ),
        pytest.param(lambda q, k, wq, wk, wv: torch.tanh(_additive_linear(q, k, wq, wk)).sum(-1), ["summed"], id="sum"),
        pytest.param(
            lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv).transpose(1, 2),
            ["transposed", "(2, 3, 5)"],
            id="transposed",
        ),
        pytest.param(
            lambda q, k, wq, wk, wv: torch.tanh(_additive_linear(q, k, wq, wk)), ["hidden layer", "w_v"], id="hidden"
        ),
        pytest.param(
            lambda q, k, wq, wk, wv: torch.softmax(_additive_right(q, k, wq, wk, wv), -1), ["softmax"], id="softmax"
        ),
        pytest.param(
            lambda q, k, wq, wk, wv: torch.tanh((q @ wq).unsqueeze(2) + (k @ wk.T).unsqueeze(1)) @ wv,
            ["w_q.T"],
            id="w-not-t",
        ),
        pytest.param(lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv) + 1, ["by hand"], id="offset"),
        pytest.param(lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv)[:, 0], ["expected shape"], id="shape"),
        pytest.param(
            lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv.mul_(2)) / 2,
            ["changed its input w_v in place"],
            id="in-place",
        ),
    ],
)
def test_check_additive_scores_fn_hints(fn, words):
    assert_hint(check_additive_scores_fn(fn), *words)


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words of its cause
# ----------------------------------------------------------------------------------------------


def _dot_first_case_always(q, k):
    from attn_course.checks.scoring import _dot_cases

    q0, k0 = next(iter(_dot_cases()))
    return _dot_right(q0, k0)  # the right scores of one case, whatever the input


def _dot_self_scores(q, k):
    return q @ q.transpose(1, 2) / math.sqrt(q.shape[-1])  # (B, Q, Q): the queries against themselves


def _dot_scales_in_place(q, k):
    q /= math.sqrt(q.shape[-1])  # scales the caller's queries
    return q @ k.transpose(1, 2)


def _additive_swapped_roles(q, k, w_q, w_k, w_v):
    return _additive_right(q, k, w_k, w_q, w_v)  # W_k on the queries, W_q on the keys


def _additive_relu(q, k, w_q, w_k, w_v):
    return torch.relu(_additive_linear(q, k, w_q, w_k)) @ w_v


ATTACKS = {
    "check_scaled_scores": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", [SCALED]),
        attack("a NumPy array", "ndarray", np.array([SCALED])),
        attack("a string", "str", "0.7071 1.4142 2.1213"),
        attack("transposed, one row per key", "transposed", torch.tensor([[v] for v in SCALED])),
        attack("plain dot products", "plain dot products", torch.tensor([DOTS])),
        attack("divided by D", "not by D", torch.tensor([[v / 2 for v in DOTS]])),
        attack("multiplied by sqrt(D)", "multiplied", torch.tensor([[v * math.sqrt(2) for v in DOTS]])),
        attack("the softmax weights", "weights", softmax_by_hand(SCALED).unsqueeze(0)),
        attack("rounded to 2 decimals", "rounded", torch.tensor([[0.71, 1.41, 2.12]])),
        attack("an integer tensor", "floating-point", torch.tensor([[1, 1, 2]])),
        attack("float16", "float16", torch.tensor([SCALED], dtype=torch.float16)),
    ],
    "check_dot_scores_fn": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "q @ k.T / sqrt(d)"),
        attack("unscaled", "missing the 1/sqrt(D) scale", lambda q, k: torch.bmm(q, k.transpose(1, 2))),
        attack(
            "keys times queries",
            "transposed",
            lambda q, k: torch.bmm(k, q.transpose(1, 2)) / math.sqrt(q.shape[-1]),
        ),
        attack("divided by D", "divided by D", lambda q, k: torch.bmm(q, k.transpose(1, 2)) / q.shape[-1]),
        attack(
            "multiplied by sqrt(D)", "multiplied", lambda q, k: torch.bmm(q, k.transpose(1, 2)) * math.sqrt(q.shape[-1])
        ),
        attack("the softmax weights", "softmax", lambda q, k: torch.softmax(_dot_right(q, k), dim=-1)),
        attack("scales the queries in place", "changed its input queries in place", _dot_scales_in_place),
        attack(
            "sqrt(6) of the first case written in", "sqrt(6) again", lambda q, k: q @ k.transpose(1, 2) / math.sqrt(6)
        ),
        attack(
            "math.isqrt", "not math.isqrt(D)", lambda q, k: torch.bmm(q, k.transpose(1, 2)) / math.isqrt(q.shape[-1])
        ),
        attack("a list", "list", lambda q, k: _dot_right(q, k).tolist()),
        attack("rounded to 2 decimals", "rounded", lambda q, k: _dot_right(q, k).round(decimals=2)),
        attack("float16", "float16", lambda q, k: _dot_right(q, k).half()),
        attack("the queries against themselves", "keys", _dot_self_scores),
        attack("the first case's scores whatever the input", "earlier hidden case", _dot_first_case_always),
    ],
    "check_additive_scores_fn": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "tanh"),
        attack("no tanh", "missing the tanh", lambda q, k, wq, wk, wv: _additive_linear(q, k, wq, wk) @ wv),
        attack(
            "tanh after w_v", "before w_v", lambda q, k, wq, wk, wv: torch.tanh(_additive_linear(q, k, wq, wk) @ wv)
        ),
        attack(
            "hidden units summed", "summed", lambda q, k, wq, wk, wv: torch.tanh(_additive_linear(q, k, wq, wk)).sum(-1)
        ),
        attack(
            "transposed",
            "transposed",
            lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv).transpose(1, 2),
        ),
        attack("the hidden layer", "hidden layer", lambda q, k, wq, wk, wv: torch.tanh(_additive_linear(q, k, wq, wk))),
        attack(
            "the softmax weights",
            "softmax",
            lambda q, k, wq, wk, wv: torch.softmax(_additive_right(q, k, wq, wk, wv), -1),
        ),
        attack(
            "w_v doubled in place",
            "changed its input w_v in place",
            lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv.mul_(2)) / 2,
        ),
        attack("W_q and W_k swapped", "w_q", _additive_swapped_roles),
        attack("ReLU instead of tanh", "ReLU", _additive_relu),
        attack(
            "keeps a last axis of 1",
            "squeeze",
            lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv).unsqueeze(-1),
        ),
        attack("float16", "float16", lambda q, k, wq, wk, wv: _additive_right(q, k, wq, wk, wv).half()),
    ],
}
