"""attn_course.checks.linear, the checks of notebook 12 on linear attention (a step of its recurrent form, how many
pairs its state holds): "Correct" for a right answer, a hint for each mistake."""

import math

import pytest
import torch
from _check_helpers import as_int_float_tensor_numpy, assert_correct, assert_hint, attack

from attn_course import checks

# ----------------------------------------------------------------------------------------------
# Exercise 1: check_recurrent_step
# ----------------------------------------------------------------------------------------------


def _step(S, z, phi_q, phi_k, v, decay):
    S_new = decay * S + torch.outer(phi_k, v)
    z_new = decay * z + phi_k
    normaliser = phi_q @ z_new
    return S_new, z_new, phi_q @ S_new / normaliser if normaliser != 0 else torch.zeros_like(v)


def _step_float32(S, z, phi_q, phi_k, v, decay):
    return tuple(t.double() for t in _step(S.float(), z.float(), phi_q.float(), phi_k.float(), v.float(), decay))


def _step_batched_style(S, z, phi_q, phi_k, v, decay):
    """Right, written with broadcasting and a clamp-free zero test."""
    S_new = decay * S + phi_k[:, None] * v[None, :]
    z_new = decay * z + phi_k
    den = (phi_q * z_new).sum()
    out = (phi_q[:, None] * S_new).sum(0) / torch.where(den == 0, 1.0, den) * (den != 0)
    return S_new, z_new, out


def _step_in_a_list(*inputs):
    return list(_step(*inputs))  # the same tensors in another container


@pytest.mark.parametrize("fn", [_step, _step_float32, _step_batched_style, _step_in_a_list])
def test_check_recurrent_step_right_answer(fn):
    assert_correct(checks.check_recurrent_step(fn), "with and without decay")


def _bad_step(kind):
    def step(S, z, phi_q, phi_k, v, decay):
        S_new, z_new, out = _step(S, z, phi_q, phi_k, v, decay)
        if kind == "transposed":
            return decay * S.T + torch.outer(v, phi_k), z_new, out
        if kind == "no-decay-state":
            S_new = S + torch.outer(phi_k, v)
            return S_new, z_new, phi_q @ S_new / (phi_q @ z_new)
        if kind == "decay-after-add":
            S_new = decay * (S + torch.outer(phi_k, v))
            return S_new, z_new, phi_q @ S_new / (phi_q @ z_new)
        if kind == "no-decay-norm":
            return S_new, z + phi_k, out
        if kind == "norm-with-query":
            return S_new, decay * z + phi_q, out
        if kind == "norm-not-updated":
            return S_new, decay * z, out
        if kind == "read-before":
            den = phi_q @ (decay * z)
            return S_new, z_new, phi_q @ (decay * S) / den if den != 0 else torch.zeros_like(v)
        if kind == "no-normaliser":
            return S_new, z_new, phi_q @ S_new
        if kind == "old-normaliser":
            den = phi_q @ z
            return S_new, z_new, phi_q @ S_new / (den if den != 0 else phi_q @ z_new)
        if kind == "nan-on-zero":
            return S_new, z_new, phi_q @ S_new / (phi_q @ z_new)
        if kind == "rounded":
            return S_new, z_new, out.round(decimals=2)
        if kind == "read-S-not-ST":  # S_new @ phi_q: only the right shape when F = V
            den = phi_q @ z_new
            return S_new, z_new, S_new @ phi_q / den if den != 0 else torch.zeros_like(v)
        if kind == "read-with-key":
            return S_new, z_new, phi_k @ S_new / (phi_k @ z_new)
        if kind == "zeros-hard-coded":  # torch.zeros(3) for the zero normaliser: V written in
            den = phi_q @ z_new
            return S_new, z_new, phi_q @ S_new / den if den != 0 else torch.zeros(3, dtype=v.dtype)
        if kind == "convex-gate":
            S_new, z_new = decay * S + (1 - decay) * torch.outer(phi_k, v), decay * z + (1 - decay) * phi_k
            return S_new, z_new, phi_q @ S_new / (phi_q @ z_new)
        if kind == "norm-decay-after-add":
            return S_new, decay * (z + phi_k), out
        if kind == "transposed-square":  # the transposed state: caught on the F = V case by its values
            return S_new.T, z_new, out
        if kind == "in-place-z":
            z.mul_(decay).add_(phi_k)
            return S_new, z, out
        if kind == "placeholders":
            return None, None, None
        if kind == "two":
            return S_new, z_new
        if kind == "hard-coded":
            return S_new, z_new, out.view(3)
        if kind == "in-place":
            S.mul_(decay).add_(torch.outer(phi_k, v))
            return S, z_new, out
        raise RuntimeError("boom")

    return step


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "step(S, z, phi_q, phi_k, v, decay)"], id="none"),
        pytest.param("f", ["expected a function", "str"], id="str"),
        pytest.param(_bad_step("transposed"), ["(F, V)", "torch.outer(phi_k, v)"], id="transposed"),
        pytest.param(_bad_step("no-decay-state"), ["decay the old state", "old keys fade"], id="no-decay-state"),
        pytest.param(_bad_step("decay-after-add"), ["before adding the new key", "full strength"], id="decay-after"),
        pytest.param(_bad_step("no-decay-norm"), ["decay the normaliser with the state", "sum to 1"], id="norm-decay"),
        pytest.param(_bad_step("norm-with-query"), ["add phi_k, not phi_q"], id="norm-query"),
        pytest.param(_bad_step("norm-not-updated"), ["add the new key's features to z"], id="norm-stale"),
        pytest.param(_bad_step("read-before"), ["read after the update", "sees itself"], id="read-before"),
        pytest.param(_bad_step("no-normaliser"), ["divide by the normaliser", "Nadaraya-Watson"], id="no-norm"),
        pytest.param(_bad_step("old-normaliser"), ["updated normaliser"], id="old-norm"),
        pytest.param(_bad_step("nan-on-zero"), ["features are all zero", "return zeros"], id="nan"),
        pytest.param(_bad_step("rounded"), ["close", "rounded to 2 decimals"], id="rounded"),
        pytest.param(_bad_step("read-S-not-ST"), ["read along F", "phi_q @ S_new"], id="read-S"),
        pytest.param(
            _bad_step("zeros-hard-coded"), ["o must have shape (7,)", "take every size from the inputs"], id="zeros-3"
        ),
        pytest.param(_bad_step("convex-gate"), ["full strength", "no (1 - decay)"], id="convex-gate"),
        pytest.param(_bad_step("read-with-key"), ["read with the query's features phi_q"], id="read-key"),
        pytest.param(_bad_step("norm-decay-after-add"), ["decay the old normaliser before adding"], id="norm-after"),
        pytest.param(_bad_step("transposed-square"), ["(F, V)", "torch.outer(phi_k, v)"], id="transposed-square"),
        pytest.param(_bad_step("in-place-z"), ["changed its input z in place"], id="in-place-z"),
        pytest.param(_bad_step("placeholders"), ["replace the None placeholders"], id="placeholders"),
        pytest.param(_bad_step("two"), ["return three tensors"], id="two"),
        pytest.param(_bad_step("hard-coded"), ["raised RuntimeError", "after 3 steps, F = V = 6"], id="hard-coded"),
        pytest.param(_bad_step("in-place"), ["changed its input S in place"], id="in-place"),
        pytest.param(_bad_step("raise"), ["raised RuntimeError", "boom"], id="raise"),
    ],
)
def test_check_recurrent_step_hints(answer, words):
    assert_hint(checks.check_recurrent_step(answer), *words)


# ----------------------------------------------------------------------------------------------
# Exercise 3: check_state_capacity
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", as_int_float_tensor_numpy(48))
def test_check_state_capacity_right_answer(answer):
    assert_correct(checks.check_state_capacity(answer), "orthonormal")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "number of pairs"], id="none"),
        pytest.param(48 * 20, ["D x V = 960", "key directions"], id="entries"),
        pytest.param(48 * 48, ["D x D"], id="square"),
        pytest.param(20, ["V = 20 is the size of a value"], id="value-size"),
        pytest.param(47, ["off by one"], id="minus-one"),
        pytest.param(49, ["off by one"], id="plus-one"),
        pytest.param(math.inf, ["a finite number", "crosstalk"], id="inf"),
        pytest.param(10, ["orthogonal", "How many"], id="other"),
        pytest.param("many", ["expected one number"], id="str"),
    ],
)
def test_check_state_capacity_hints(answer, words):
    assert_hint(checks.check_state_capacity(answer), *words)


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


ATTACKS = {
    "check_recurrent_step": [
        attack("left as None", "replace None", None),
        attack("a string", "expected a function", "f"),
        attack("the state transposed", "torch.outer(phi_k, v)", _bad_step("transposed")),
        attack("no decay on the state", "old keys fade", _bad_step("no-decay-state")),
        attack("decay after adding", "before adding the new key", _bad_step("decay-after-add")),
        attack("a convex (1 - decay) gate", "no (1 - decay)", _bad_step("convex-gate")),
        attack("no decay on the normaliser", "decay the normaliser with the state", _bad_step("no-decay-norm")),
        attack("normaliser sums the query", "add phi_k, not phi_q", _bad_step("norm-with-query")),
        attack("read before the update", "read after the update", _bad_step("read-before")),
        attack("no normaliser", "divide by the normaliser", _bad_step("no-normaliser")),
        attack("0 / 0 on a zero query", "return zeros", _bad_step("nan-on-zero")),
        attack("S_new @ phi_q", "read along F", _bad_step("read-S-not-ST")),
        attack("zeros(3) written in", "take every size from the inputs", _bad_step("zeros-hard-coded")),
        attack("V = 3 written in", "written in", _bad_step("hard-coded")),
        attack("S updated in place", "changed its input S in place", _bad_step("in-place")),
        attack("o rounded", "rounded to 2 decimals", _bad_step("rounded")),
        attack("two tensors returned", "a tuple of 2", _bad_step("two")),
        attack(
            "computed in float16",
            "float16",
            lambda S, z, q, k, v, d: _step(S.half(), z.half(), q.half(), k.half(), v.half(), d),
        ),
    ],
    "check_state_capacity": [
        attack("left as None", "replace None", None),
        attack("a string", "str", "48"),
        attack("every entry of S", "D x V = 960", 48 * 20),
        attack("D x D", "D x D", 48 * 48),
        attack("the value size", "V = 20 is the size of a value", 20),
        attack("one fewer", "off by one", 47),
        attack("one more", "off by one", 49),
        attack("unbounded", "a finite number", math.inf),
        attack("D + V", "D + V", 48 + 20),
        attack("a list", "list", [48]),
    ],
}
