"""attn_course.checks.delta_rule, the checks of notebook 12 on the delta rule's update and on the UT transform of the
chunked delta rule: "Correct" for a right answer, a hint for each mistake."""

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
# Exercise: check_ut_transform, a chunk's writes U from one triangular solve
# ----------------------------------------------------------------------------------------------


def _ut(keys, values, beta, state):
    system = torch.eye(len(keys), dtype=keys.dtype) + beta[:, None] * torch.tril(keys @ keys.T, diagonal=-1)
    rhs = beta[:, None] * (values - keys @ state)
    return torch.linalg.solve_triangular(system, rhs, upper=False, unitriangular=True)


def _ut_loop(keys, values, beta, state):
    """Right, step by step: u_t = beta_t (v_t - S^T k_t), then S += k_t u_t^T (the delta rule itself)."""
    S, rows = state.clone(), []
    for t in range(len(keys)):
        rows.append(beta[t] * (values[t] - S.T @ keys[t]))
        S = S + torch.outer(keys[t], rows[-1])
    return torch.stack(rows) if rows else values[:0]


def _ut_inverse_float32(keys, values, beta, state):
    """Right, in float32, with a general inverse and the diagonal left in (solve_triangular's unitriangular=True
    reads it as 1 anyway)."""
    k, v, b, s = (t.float() for t in (keys, values, beta, state))
    system = torch.eye(len(k)) + b[:, None] * torch.tril(k @ k.T, diagonal=-1)
    return torch.linalg.inv(system) @ (b[:, None] * (v - k @ s))


def _ut_unit_with_diagonal(keys, values, beta, state):
    """Right: tril(K K^T) with the diagonal, but solve_triangular(unitriangular=True) never reads it."""
    system = torch.eye(len(keys), dtype=keys.dtype) + beta[:, None] * torch.tril(keys @ keys.T)
    rhs = beta[:, None] * (values - keys @ state)
    return torch.linalg.solve_triangular(system, rhs, upper=False, unitriangular=True)


@pytest.mark.parametrize("fn", [_ut, _ut_loop, _ut_inverse_float32, _ut_unit_with_diagonal])
def test_check_ut_transform_right_answer(fn):
    assert_correct(checks.check_ut_transform(fn), "a key written twice", "delta_rule_chunked")


def _bad_ut(kind):
    def ut(keys, values, beta, state):
        eye, gram, b = torch.eye(len(keys), dtype=keys.dtype), keys @ keys.T, beta[:, None]
        lower, rhs = torch.tril(gram, diagonal=-1), b * (values - keys @ state)
        system = eye + b * lower
        if kind == "diagonal-included":
            system = eye + b * torch.tril(gram)
        elif kind == "upper":
            system = eye + b * torch.triu(gram, diagonal=1)
        elif kind == "minus":
            system = eye - b * lower
        elif kind == "no-beta-rhs":
            rhs = values - keys @ state
        elif kind == "no-beta-matrix":
            system = eye + lower
        elif kind == "beta-on-columns":
            system = eye + lower * beta[None, :]
        elif kind == "beta-on-v":
            rhs = b * values - keys @ state
        elif kind == "no-state":
            rhs = b * values
        elif kind == "state-transposed":
            rhs = b * (values - keys @ state.T)
        elif kind == "state-at-keys":
            rhs = b * (values - (state @ keys.T).T)
        elif kind == "no-correction":  # the plain loop of outer products: u_t = beta_t (v_t - S_0^T k_t)
            return rhs
        elif kind == "the-matrix":
            return system
        elif kind == "with-state":
            U = torch.linalg.solve(system, rhs)
            return U, state + keys.T @ U
        elif kind == "transposed":
            return torch.linalg.solve(system, rhs).T
        elif kind == "eye-of-5":
            system = torch.eye(5, dtype=keys.dtype) + b * lower
        elif kind == "loop-of-5":  # the loop's length written in, into a buffer of 5 rows
            U, S = torch.zeros(5, values.shape[1], dtype=keys.dtype), state.clone()
            for t in range(min(5, len(keys))):
                U[t] = beta[t] * (values[t] - S.T @ keys[t])
                S = S + torch.outer(keys[t], U[t])
            return U
        elif kind == "in-place":
            values -= keys @ state
            rhs = b * values
        elif kind == "divide-by-beta":  # rows scaled by 1 / beta_t: NaN where beta_t = 0
            return torch.linalg.solve_triangular(system / b, values - keys @ state, upper=False)
        elif kind == "rounded":
            return torch.linalg.solve(system, rhs).round(decimals=3)
        elif kind == "half":
            return torch.linalg.solve(system, rhs).half()
        elif kind == "integers":
            return (1000 * torch.linalg.solve(system, rhs)).long()
        return torch.linalg.solve(system, rhs)

    return ut


@pytest.mark.parametrize(
    "kind, words",
    [
        ("diagonal-included", ["strict lower triangle", "tril(K K^T, -1)", "diagonal=0"]),
        ("upper", ["the lower triangle", "not by the later ones (triu)"]),
        ("minus", ["plus sign"]),
        ("no-beta-rhs", ["beta scales the right side too"]),
        ("no-beta-matrix", ["beta scales the correction in the matrix too"]),
        ("beta-on-columns", ["from the left", "not the columns"]),
        ("beta-on-v", ["beta multiplies the whole error", "not V alone"]),
        ("no-state", ["subtract what the state from the earlier chunks returns"]),
        ("state-transposed", ["keys @ state (C, V)", "not keys @ state.T"]),
        ("state-at-keys", ["keys @ state (C, V)", "state @ keys.T"]),
        ("no-correction", ["the earlier writes of the chunk are missing", "plain loop of outer products"]),
        ("the-matrix", ["the system's matrix", "(5, 5)"]),
        ("with-state", ["return U alone", "not this function's"]),
        ("transposed", ["one row per step", "transposed"]),
        ("eye-of-5", ["raised", "names a size (5)", "C = 8"]),
        ("loop-of-5", ["must have shape (8, 3), got (5, 3)", "take every size from the inputs"]),
        ("in-place", ["changed its input values in place"]),
        ("divide-by-beta", ["NaN or infinity where beta_t = 0", "never divide by it", "zeros and ones"]),
        ("rounded", ["rounded to 3 decimals"]),
        ("half", ["float16"]),
        ("integers", ["int64", "floating"]),
    ],
)
def test_check_ut_transform_hints(kind, words):
    assert_hint(checks.check_ut_transform(_bad_ut(kind)), *words)


def test_check_ut_transform_asks_for_a_function():
    assert_hint(checks.check_ut_transform(None), "replace None", "ut_transform(keys, values, beta, state)")
    assert_hint(checks.check_ut_transform(torch.ones(3, 2)), "expected a function")
    numpy_answer = checks.check_ut_transform(lambda *args: _ut(*args).numpy())
    assert_hint(numpy_answer, "return U, one tensor of shape (C, V)", "ndarray")


def test_check_ut_transform_hidden_reference_is_the_delta_rule_step_by_step():
    """The hidden reference (a triangular solve) equals the loop written here on every hidden case, C = 1, 2, 5, 8."""
    from attn_course.checks.delta_rule import _reference_ut, _ut_cases

    cases = [inputs for _, inputs in _ut_cases()]
    for inputs in cases:
        torch.testing.assert_close(_reference_ut(*inputs.values()), _ut_loop(*inputs.values()), rtol=0, atol=1e-12)
    assert {len(inputs["keys"]) for inputs in cases} == {1, 2, 5, 8}
    assert any(inputs["keys"].shape[1] != inputs["values"].shape[1] for inputs in cases)
    assert all(inputs["state"].abs().max() > 0.1 and inputs["keys"].dtype == torch.float64 for inputs in cases)


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
    "check_ut_transform": [
        attack("left as None", "replace None", None),
        attack("tril with the diagonal, solved in full", "diagonal=0", _bad_ut("diagonal-included")),
        attack("the upper triangle", "not by the later ones (triu)", _bad_ut("upper")),
        attack("the correction's sign flipped", "plus sign", _bad_ut("minus")),
        attack("beta missing on the right side", "beta scales the right side too", _bad_ut("no-beta-rhs")),
        attack("beta missing in the matrix", "beta scales the correction in the matrix too", _bad_ut("no-beta-matrix")),
        attack("beta on the matrix's columns", "not the columns", _bad_ut("beta-on-columns")),
        attack("beta on V alone", "not V alone", _bad_ut("beta-on-v")),
        attack("the state term missing", "subtract what the state", _bad_ut("no-state")),
        attack("S_0 transposed", "not keys @ state.T", _bad_ut("state-transposed")),
        attack("the state @ keys convention", "state @ keys.T", _bad_ut("state-at-keys")),
        attack("no correction: a loop of outer products", "plain loop of outer products", _bad_ut("no-correction")),
        attack("the matrix returned", "the system's matrix", _bad_ut("the-matrix")),
        attack("(U, S) returned", "return U alone", _bad_ut("with-state")),
        attack("U transposed", "one row per step", _bad_ut("transposed")),
        attack("torch.eye(5) written in", "names a size (5)", _bad_ut("eye-of-5")),
        attack("a loop of 5 steps written in", "take every size from the inputs", _bad_ut("loop-of-5")),
        attack("values changed in place", "changed its input values in place", _bad_ut("in-place")),
        attack("divided by beta", "never divide by it", _bad_ut("divide-by-beta")),
        attack("U rounded", "rounded to 3 decimals", _bad_ut("rounded")),
        attack("computed in float16", "float16", _bad_ut("half")),
        attack("integers returned", "int64", _bad_ut("integers")),
        attack("a NumPy array returned", "ndarray", lambda *args: _ut(*args).numpy()),
    ],
}
