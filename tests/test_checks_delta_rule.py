"""attn_course.checks.delta_rule, the check of notebook 12 on the delta rule's update:
"Correct" for a right answer, a hint for each mistake."""

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import checks

# ----------------------------------------------------------------------------------------------
# Exercise 2: check_delta_step
# ----------------------------------------------------------------------------------------------


def _delta(S, q, k, v, beta):
    S_new = S + beta * torch.outer(k, v - k @ S)
    return S_new, q @ S_new


def _delta_transposed_maths(S, q, k, v, beta):
    """Right, written with S^T explicitly."""
    S_new = S + beta * k[:, None] * (v - S.T @ k)[None, :]
    return S_new, S_new.T @ q


def _delta_in_a_list(*inputs):
    return list(_delta(*inputs))  # the same tensors in another container


@pytest.mark.parametrize("fn", [_delta, _delta_transposed_maths, _delta_in_a_list])
def test_check_delta_step_right_answer(fn):
    assert_correct(checks.check_delta_step(fn), "a key written twice")


def _normalised_read(S, q, k, v, beta):  # the right update, but the query scaled to length 1 before the read
    new_state = S + beta * torch.outer(k, v - k @ S)
    return new_state, (q / q.norm()) @ new_state


def _bad_delta(kind):
    def step(S, q, k, v, beta):
        S_new, out = _delta(S, q, k, v, beta)
        if kind == "plain-sum":
            S_new = S + beta * torch.outer(k, v)
        elif kind == "no-beta":
            S_new = S + torch.outer(k, v - k @ S)
        elif kind == "beta-on-v":
            S_new = S + torch.outer(k, beta * v - k @ S)
        elif kind == "beta-on-recall":
            S_new = S + torch.outer(k, v - beta * (k @ S))
        elif kind == "sign":
            S_new = S + beta * torch.outer(k, k @ S - v)
        elif kind == "recall-with-query":
            S_new = S + beta * torch.outer(k, v - q @ S)
        elif kind == "transposed":
            return (S + beta * torch.outer(k, v - k @ S)).T, out
        elif kind == "recall-S-k":  # S k instead of S^T k: only the right shape when D = V
            S_new = S + beta * torch.outer(k, v - S @ k)
        elif kind == "write-at-query":
            S_new = S + beta * torch.outer(q, v - k @ S)
        elif kind == "read-S-not-ST":
            return S_new, S_new @ q
        elif kind == "beta-on-output":
            return S_new, beta * (q @ S_new)
        elif kind == "read-with-key":
            return S_new, k @ S_new

        elif kind == "read-old":
            return S_new, q @ S
        elif kind == "read-wrong-side":
            return S_new, S_new @ v
        elif kind == "rounded":
            return S_new.round(decimals=3), out
        elif kind == "in-place":
            S.add_(beta * torch.outer(k, v - k @ S))
            return S, q @ S
        elif kind == "one":
            return S_new
        return S_new, q @ S_new

    return step


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "delta_step(S, q, k, v, beta)"], id="none"),
        pytest.param(_bad_delta("plain-sum"), ["subtract what the memory already returns", "piles"], id="sum"),
        pytest.param(_bad_delta("no-beta"), ["scale the write by beta"], id="no-beta"),
        pytest.param(_bad_delta("beta-on-v"), ["beta multiplies the whole error", "not v alone"], id="beta-v"),
        pytest.param(_bad_delta("beta-on-recall"), ["beta multiplies the whole error", "recalled"], id="beta-recall"),
        pytest.param(_bad_delta("sign"), ["v - S^T k", "other sign"], id="sign"),
        pytest.param(_bad_delta("recall-with-query"), ["recall with the key being written"], id="query"),
        pytest.param(_bad_delta("transposed"), ["(D, V)", "torch.outer(k, error)"], id="transposed"),
        pytest.param(_bad_delta("recall-S-k"), ["S^T k is k @ S", "S @ k reads it the other way"], id="recall-S-k"),
        pytest.param(_bad_delta("write-at-query"), ["write at the key"], id="write-at-query"),
        pytest.param(_bad_delta("read-S-not-ST"), ["S_new @ q reads it the other way"], id="read-S"),
        pytest.param(_bad_delta("beta-on-output"), ["beta scales the write only"], id="beta-output"),
        pytest.param(_bad_delta("read-with-key"), ["read with the query"], id="read-key"),
        pytest.param(_bad_delta("read-old"), ["read the output from the updated state", "S_{t-1}"], id="read-old"),
        pytest.param(_bad_delta("read-wrong-side"), ["o is off", "q @ S_new"], id="read-shape"),
        pytest.param(_bad_delta("rounded"), ["close", "rounded to 3 decimals"], id="rounded"),
        pytest.param(_bad_delta("in-place"), ["changed its input S in place"], id="in-place"),
        pytest.param(_bad_delta("one"), ["return two tensors"], id="one"),
        pytest.param(
            lambda S, q, k, v, beta: _normalised_read(S, q, k, v, beta), ["o is off", "q @ S_new"], id="unit-query"
        ),
    ],
)
def test_check_delta_step_hints(answer, words):
    assert_hint(checks.check_delta_step(answer), *words)


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


ATTACKS = {
    "check_delta_step": [
        attack("left as None", "replace None", None),
        attack("plain linear attention's sum", "piles", _bad_delta("plain-sum")),
        attack("no beta", "scale the write by beta", _bad_delta("no-beta")),
        attack("beta on v alone", "not v alone", _bad_delta("beta-on-v")),
        attack("the error's sign flipped", "other sign", _bad_delta("sign")),
        attack("recall with the query", "recall with the key being written", _bad_delta("recall-with-query")),
        attack("the state transposed", "torch.outer(k, error)", _bad_delta("transposed")),
        attack("S @ k for the recall", "S @ k reads it the other way", _bad_delta("recall-S-k")),
        attack("written at the query", "write at the key", _bad_delta("write-at-query")),
        attack("read from the old state", "read the output from the updated state", _bad_delta("read-old")),
        attack("beta on the output", "beta scales the write only", _bad_delta("beta-on-output")),
        attack("S updated in place", "changed its input S in place", _bad_delta("in-place")),
        attack("S_new rounded", "rounded to 3 decimals", _bad_delta("rounded")),
        attack("one tensor returned", ("return two tensors", "got a tensor of shape"), _bad_delta("one")),
        attack(
            "NumPy arrays returned", "ndarray", lambda S, q, k, v, b: tuple(t.numpy() for t in _delta(S, q, k, v, b))
        ),
        attack(
            "computed in float16", "float16", lambda S, q, k, v, b: _delta(S.half(), q.half(), k.half(), v.half(), b)
        ),
    ],
}
