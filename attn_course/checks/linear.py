"""Checks for the exercises on linear attention: one step of its recurrent form, how many pairs its state holds
exactly (notebook 12).

Notebook 12's check on the delta rule is in ``checks.delta_rule``.
"""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .build_it import float32_close, gaussian, mistake_hint, shape_hint, step_results, with_case
from .feedback import Feedback

__all__ = ["check_recurrent_step", "check_state_capacity"]

CAPACITY_D, CAPACITY_V = 48, 20  # exercise 3: keys of size D, values of size V


# ----------------------------------------------------------------------------------------------------------------------
# Exercise 1: one step of causal linear attention as a recurrent network
# ----------------------------------------------------------------------------------------------------------------------


def _read(state, norm, phi_q):
    denominator = phi_q @ norm  # ()
    return torch.zeros(state.shape[1], dtype=state.dtype) if denominator == 0 else phi_q @ state / denominator


def _reference_step(state, norm, phi_q, phi_k, value, decay):
    new_state = decay * state + torch.outer(phi_k, value)  # (F, V)
    new_norm = decay * norm + phi_k  # (F,)
    return new_state, new_norm, _read(new_state, new_norm, phi_q)


def _step_cases() -> list[tuple[str, dict]]:
    """Hidden cases: (what, inputs in the order of the learner's arguments), float64; F, V and the decay vary."""
    gen = torch.Generator().manual_seed(1212)

    def case(size: int, v: int, decay: float, steps: int, zero_query: bool = False) -> dict:
        state, norm = torch.zeros(size, v, dtype=torch.float64), torch.zeros(size, dtype=torch.float64)
        for _ in range(steps):  # a state some keys have been written into
            state, norm, _ = _reference_step(
                state, norm, gaussian(size, gen=gen), gaussian(size, gen=gen).exp(), gaussian(v, gen=gen), decay
            )
        phi_q = torch.zeros(size, dtype=torch.float64) if zero_query else gaussian(size, gen=gen).exp()
        return {
            "S": state,
            "z": norm,
            "phi_q": phi_q,
            "phi_k": gaussian(size, gen=gen).exp(),  # positive features, as elu + 1 gives
            "v": gaussian(v, gen=gen),
            "decay": decay,
        }

    return [
        ("after 3 steps, F = V = 6, decay 0.9", case(6, 6, 0.9, 3)),  # square: S vs S^T gives the right shape
        ("the first step, F = 5, V = 3, decay 1", case(5, 3, 1.0, 0)),
        ("after 4 steps, F = 7, V = 2, decay 1", case(7, 2, 1.0, 4)),
        ("after 6 steps, F = 6, V = 9, decay 0.8", case(6, 9, 0.8, 6)),
        ("after 3 steps, F = 3, V = 4, decay 0.5", case(3, 4, 0.5, 3)),
        (
            "a query whose features are all zero (relu of a negative query), F = 5, V = 7",
            case(5, 7, 1.0, 2, zero_query=True),  # V seen nowhere else: zeros of a written-in size fail here
        ),
    ]


def _step_mistakes(S, z, phi_q, phi_k, v, decay):
    """(what a common mistake computes, the hint that names it), for the new state, normaliser and output."""
    kv = torch.outer(phi_k, v)
    right_state, right_norm = decay * S + kv, decay * z + phi_k
    states = [
        (S + kv, "decay the old state: S_new = decay * S + outer(phi_k, v); with decay < 1 old keys fade."),
        (
            decay * (S + kv),
            "decay the old state before adding the new key: decay * S + outer(phi_k, v), not decay * (S + outer(...)); "
            "the newest key enters at full strength.",
        ),
        (
            decay * S + (1 - decay) * kv,
            "the new key enters at full strength: S_new = decay * S + outer(phi_k, v), with no (1 - decay) on it "
            "(the normaliser z divides the scale out).",
        ),
        (
            right_state.T if S.shape[0] == S.shape[1] else S[:0],
            "S_new is (F, V), features along the rows: the state is sum phi(k) v^T, torch.outer(phi_k, v), not "
            "torch.outer(v, phi_k) (nor a transposed S).",
        ),
    ]
    norms = [
        (
            z + phi_k,
            "decay the normaliser with the state: z_new = decay * z + phi_k; if S fades and z does not, the weights "
            "no longer sum to 1.",
        ),
        (decay * z + phi_q, "z sums the keys' features: add phi_k, not phi_q."),
        (decay * z, "add the new key's features to z: z_new = decay * z + phi_k."),
        (
            decay * (z + phi_k),
            "decay the old normaliser before adding the new key's features: decay * z + phi_k, not "
            "decay * (z + phi_k); the newest key enters at full strength.",
        ),
    ]
    den = phi_q @ right_norm
    safe = den if den != 0 else torch.tensor(1.0, dtype=den.dtype)
    outputs = [
        (
            _read(decay * S, decay * z, phi_q),
            "read after the update: o_t = S_new^T phi_q / (z_new . phi_q) includes the current key (a position sees "
            "itself).",
        ),
        (
            _read(S, z, phi_q),
            "read after the update: o_t = S_new^T phi_q / (z_new . phi_q) includes the current key (a position sees "
            "itself).",
        ),
        (
            phi_q @ right_state,
            "divide by the normaliser: o = S_new^T phi_q / (z_new . phi_q); without it the output is a sum of values, "
            "not a weighted mean (notebook 01's Nadaraya-Watson denominator).",
        ),
        (
            phi_q @ right_state / (phi_q @ z if phi_q @ z != 0 else safe),
            "divide by the updated normaliser z_new . phi_q, not the old z's.",
        ),
        (
            right_state @ phi_q / safe if right_state.shape[0] == right_state.shape[1] else right_state[:0, 0],
            "read along F: o = S_new^T phi_q = phi_q @ S_new (or S_new.T @ phi_q); S_new @ phi_q reads along V.",
        ),
        (
            _read(right_state, right_norm, phi_k),
            "read with the query's features phi_q; phi_k is what is written, phi_q is what asks.",
        ),
    ]
    return states, norms, outputs


@fb.function_answer("your function step(S, z, phi_q, phi_k, v, decay)", "a function")
def check_recurrent_step(step) -> Feedback:
    """Build it: ``step(S, z, phi_q, phi_k, v, decay) -> (S_new, z_new, o)``, one step of causal linear attention.

    ``S_new = decay S + phi_k v^T`` (F, V), ``z_new = decay z + phi_k`` (F,), ``o = S_new^T phi_q / (z_new . phi_q)``
    (V,), zeros when the normaliser is 0. Checked on hidden cases of varied F, V and decay (a first step, a state
    after several steps, a query with zero features); the learner's function gets copies.
    """
    for case, (what, inputs) in enumerate(_step_cases()):
        want_state, want_norm, want_out = _reference_step(*inputs.values())
        result, problem = fb.call_on_copies(step, inputs)
        if problem is not None:
            return with_case(fb.raised_on(problem, inputs["S"].shape, worked_before=case > 0), what)
        expected = "return three tensors: (S_new, z_new, o), of shapes (F, V), (F,) and (V,)"
        tensors = step_results(result, 3, "S_new, z_new or o", "return S_new (F, V), z_new (F,) and o (V,)", expected)
        if isinstance(tensors, Feedback):
            return tensors
        new_state, new_norm, out = tensors
        advice = "take every size from the inputs, write none in."
        if tuple(new_state.shape) == tuple(want_state.shape)[::-1] and want_state.shape[0] != want_state.shape[1]:
            return fb.hint(
                f"S_new must have shape {tuple(want_state.shape)} (F, V), got {tuple(new_state.shape)}: the state is "
                "sum phi(k) v^T, torch.outer(phi_k, v), not torch.outer(v, phi_k)."
            )
        results = ("S_new", new_state, want_state), ("z_new", new_norm, want_norm), ("o", out, want_out)
        shape = shape_hint(what, advice, *results)
        if shape is not None:
            return shape
        states, norms, outputs = _step_mistakes(*inputs.values())
        for name, got, want, mistakes in (
            ("S_new", new_state, want_state, states),
            ("z_new", new_norm, want_norm, norms),
        ):
            if not float32_close(got, want):
                return mistake_hint(
                    got,
                    want,
                    mistakes,
                    fb.hint(
                        f"{name} is off on {what}: S_new = decay * S + outer(phi_k, v), z_new = decay * z + phi_k."
                    ),
                )
        if float32_close(out, want_out):
            continue
        if "zero" in what:
            not_finite = fb.not_finite(out, "o for a query whose features are all zero")
            if not_finite is not None:
                return fb.hint(
                    "a query whose features are all zero has normaliser z_new . phi_q = 0, and 0 / 0 is NaN: return "
                    "zeros (V,) there, as a softmax row with nothing to attend to gives zeros."
                )
        return mistake_hint(
            out,
            want_out,
            outputs,
            fb.not_finite(out, f"o on {what}"),
            fb.hint(f"o is off on {what}: o = S_new^T phi_q / (z_new . phi_q), a (V,) vector."),
        )
    return fb.ok(
        "S, z and the output match on every hidden case, with and without decay: this is the loop inside "
        "ac.linear_attention_rnn."
    )


# ----------------------------------------------------------------------------------------------------------------------
# Exercise 3: how many pairs a D x V state holds exactly
# ----------------------------------------------------------------------------------------------------------------------


@fb.number_answer("the number of pairs")
def check_state_capacity(answer: float) -> Feedback:
    """Predict: the most key-value pairs ``S = sum_i k_i v_i^T`` (keys of size D = 48, values of size V = 20) holds
    so that each stored key reads back exactly its value, whatever the values: D = 48 (orthonormal keys)."""
    d, v = CAPACITY_D, CAPACITY_V
    if not math.isfinite(answer):
        return fb.hint(
            "a finite number: each extra pair adds crosstalk k_i . k_j to every other read, so the state fills up."
        )
    if answer == d:
        return fb.ok(
            f"{d}: at most D = {d} keys can be orthonormal, and then S^T k_i = v_i exactly; one key more has a "
            "component along the others, and reading it picks up their values too."
        )
    if answer == d * v:
        return fb.hint(
            f"S has D x V = {d * v} numbers, but a read S^T k only looks along the key: pairs share the D key "
            "directions, and the V entries of one value are one pair, not V."
        )
    if answer == d * d:
        return fb.hint("D x D counts a square matrix; the reads are S^T k, so count how many keys can be orthogonal.")
    if answer == v:
        return fb.hint(
            f"V = {v} is the size of a value; the limit comes from the keys: how many keys of size D can be "
            "orthogonal to one another?"
        )
    if answer in (d - 1, d + 1):
        return fb.hint("off by one: count the orthonormal vectors of a D-dimensional space.")
    if answer == d + v:
        return fb.hint(
            f"D + V = {d + v} adds a key's size to a value's; only the keys limit the reads: how many keys of size D "
            "can be orthogonal to one another?"
        )
    return fb.hint(
        "reading key k_i gives S^T k_i = sum_j (k_j . k_i) v_j: exact when the other keys are orthogonal to k_i. "
        "How many mutually orthogonal keys of size D are there?"
    )
