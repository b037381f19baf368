"""Checks for the exercises of notebook 12 (linear attention)."""

from __future__ import annotations

import math

import torch

from ._feedback import (
    Feedback,
    _call_on_copies,
    _described,
    _first_hint,
    _function_answer,
    _half_precision,
    _hint,
    _not_finite,
    _number_answer,
    _ok,
    _raised_on,
    _rounded,
)

__all__ = ["check_recurrent_step", "check_delta_step", "check_state_capacity"]

CAPACITY_D, CAPACITY_V = 48, 20  # exercise 3: keys of size D, values of size V


def _float64(*shape, gen) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def _close(answer: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal up to float32 rounding."""
    return bool(torch.allclose(answer.detach().double(), want, rtol=1e-5, atol=1e-6))


def _with_case(problem: Feedback, what: str) -> Feedback:
    return _hint(f"{problem.message.rstrip('.')} (hidden case: {what}).")


def _tensors(result, count: int) -> bool:
    """Whether ``result`` is ``count`` tensors, in a tuple (or a list: the same answer in another container)."""
    return (
        isinstance(result, (tuple, list)) and len(result) == count and all(isinstance(t, torch.Tensor) for t in result)
    )


def _shape_hint(name: str, got: torch.Tensor, want: torch.Tensor, what: str, advice: str) -> Feedback | None:
    if tuple(got.shape) == tuple(want.shape):
        return None
    return _hint(f"{name} must have shape {tuple(want.shape)}, got {tuple(got.shape)} (hidden case: {what}); {advice}")


def _match(answer: torch.Tensor, candidates) -> str | None:
    """The hint of the first candidate (a common mistake's result) that ``answer`` equals, else None."""
    for candidate, hint in candidates:
        if candidate.shape == answer.shape and _close(answer, candidate):
            return hint
    return None


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
                state, norm, _float64(size, gen=gen), _float64(size, gen=gen).exp(), _float64(v, gen=gen), decay
            )
        phi_q = torch.zeros(size, dtype=torch.float64) if zero_query else _float64(size, gen=gen).exp()
        return {
            "S": state,
            "z": norm,
            "phi_q": phi_q,
            "phi_k": _float64(size, gen=gen).exp(),  # positive features, as elu + 1 gives
            "v": _float64(v, gen=gen),
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


@_function_answer("your function step(S, z, phi_q, phi_k, v, decay)", "a function")
def check_recurrent_step(step) -> Feedback:
    """Build it: ``step(S, z, phi_q, phi_k, v, decay) -> (S_new, z_new, o)``, one step of causal linear attention.

    ``S_new = decay S + phi_k v^T`` (F, V), ``z_new = decay z + phi_k`` (F,), ``o = S_new^T phi_q / (z_new . phi_q)``
    (V,), zeros when the normaliser is 0. Checked on hidden cases of varied F, V and decay (a first step, a state
    after several steps, a query with zero features); the learner's function gets copies.
    """
    for case, (what, inputs) in enumerate(_step_cases()):
        want_state, want_norm, want_out = _reference_step(*inputs.values())
        result, problem = _call_on_copies(step, inputs)
        if problem is not None:
            return _with_case(_raised_on(problem, inputs["S"].shape, worked_before=case > 0), what)
        if isinstance(result, tuple) and any(t is None for t in result):
            return _hint("replace the None placeholders: return S_new (F, V), z_new (F,) and o (V,).")
        if not _tensors(result, 3):
            return _hint(
                f"return three tensors: (S_new, z_new, o), of shapes (F, V), (F,) and (V,); got {_described(result)}."
            )
        new_state, new_norm, out = (t.detach() for t in result)
        low = _half_precision(new_state, new_norm, out, what="S_new, z_new or o")
        if low is not None:
            return low
        advice = "take every size from the inputs, write none in."
        if tuple(new_state.shape) == tuple(want_state.shape)[::-1] and want_state.shape[0] != want_state.shape[1]:
            return _hint(
                f"S_new must have shape {tuple(want_state.shape)} (F, V), got {tuple(new_state.shape)}: the state is "
                "sum phi(k) v^T, torch.outer(phi_k, v), not torch.outer(v, phi_k)."
            )
        for name, got, want in (("S_new", new_state, want_state), ("z_new", new_norm, want_norm), ("o", out, want_out)):
            shape = _shape_hint(name, got, want, what, advice)
            if shape is not None:
                return shape
        states, norms, outputs = _step_mistakes(*inputs.values())
        for name, got, want, mistakes in (
            ("S_new", new_state, want_state, states),
            ("z_new", new_norm, want_norm, norms),
        ):
            if not _close(got, want):
                hint = _match(got, mistakes)
                if hint is not None:
                    return _hint(hint)
                return _first_hint(
                    _rounded(got, want),
                    _hint(f"{name} is off on {what}: S_new = decay * S + outer(phi_k, v), z_new = decay * z + phi_k."),
                )
        if _close(out, want_out):
            continue
        if "zero" in what:
            not_finite = _not_finite(out, "o for a query whose features are all zero")
            if not_finite is not None:
                return _hint(
                    "a query whose features are all zero has normaliser z_new . phi_q = 0, and 0 / 0 is NaN: return "
                    "zeros (V,) there, as a softmax row with nothing to attend to gives zeros."
                )
        hint = _match(out, outputs)
        if hint is not None:
            return _hint(hint)
        return _first_hint(
            _rounded(out, want_out),
            _not_finite(out, f"o on {what}"),
            _hint(f"o is off on {what}: o = S_new^T phi_q / (z_new . phi_q), a (V,) vector."),
        )
    return _ok(
        "S, z and the output match on every hidden case, with and without decay: this is the loop inside "
        "ac.linear_attention_rnn."
    )


# ----------------------------------------------------------------------------------------------------------------------
# Exercise 2: the delta rule's update
# ----------------------------------------------------------------------------------------------------------------------


def _reference_delta(S, q, k, v, beta):
    new_state = S + beta * torch.outer(k, v - k @ S)  # (D, V): the error v - S^T k written at k
    return new_state, q @ new_state  # (D, V), (V,)


def _delta_cases() -> list[tuple[str, dict]]:
    """Hidden cases: unit keys, queries of other lengths, float64; D, V and beta vary; one rewrites a stored key."""
    gen = torch.Generator().manual_seed(2121)

    def unit(size):
        x = _float64(size, gen=gen)
        return x / x.norm()

    def case(size: int, v: int, beta: float, steps: int, repeat: bool = False) -> dict:
        state, first = torch.zeros(size, v, dtype=torch.float64), unit(size)
        for i in range(steps):
            key = first if i == 0 else unit(size)
            state, _ = _reference_delta(state, key, key, _float64(v, gen=gen), 1.0)
        k = first if repeat else unit(size)
        query = _float64(size, gen=gen)  # not a unit vector: a read that normalises q must fail
        return {"S": state, "q": query, "k": k, "v": _float64(v, gen=gen), "beta": beta}

    return [
        ("after 3 writes, D = V = 5, beta 0.7", case(5, 5, 0.7, 3)),  # square: S vs S^T gives the right shape
        ("after 3 writes, D = 6, V = 4, beta 0.5", case(6, 4, 0.5, 3)),
        ("the first write, D = 5, V = 3, beta 1", case(5, 3, 1.0, 0)),
        ("a key written before, written again, D = 7, V = 2, beta 1", case(7, 2, 1.0, 4, repeat=True)),
        ("after 5 writes, D = 3, V = 8, beta 0.3", case(3, 8, 0.3, 5)),
    ]


def _delta_mistakes(S, q, k, v, beta):
    new_state = S + beta * torch.outer(k, v - k @ S)
    states = [
        (
            new_state.T if S.shape[0] == S.shape[1] else S[:0],
            "S_new is (D, V), keys along the rows: write torch.outer(k, error), not torch.outer(error, k) (nor a "
            "transposed S).",
        ),
        (
            S + beta * torch.outer(k, v),
            "subtract what the memory already returns for the key: write beta * outer(k, v - S^T k); adding "
            "outer(k, v) alone is plain linear attention, which piles values up.",
        ),
        (S + torch.outer(k, v - k @ S), "scale the write by beta: S + beta * outer(k, v - S^T k)."),
        (
            S + torch.outer(k, beta * v - k @ S),
            "beta multiplies the whole error (v - S^T k), not v alone: S + beta * outer(k, v - S^T k).",
        ),
        (
            S + torch.outer(k, v - beta * (k @ S)),
            "beta multiplies the whole error (v - S^T k), not the recalled value alone: "
            "S + beta * outer(k, v - S^T k).",
        ),
        (
            S + beta * torch.outer(k, k @ S - v),
            "the error is the new value minus the recalled one, v - S^T k; the other sign pushes the memory away "
            "from v.",
        ),
        (
            S + beta * torch.outer(k, v - q @ S),
            "recall with the key being written, S^T k (what S holds for k now), not with the query.",
        ),
        (
            S + beta * torch.outer(k, v - S @ k) if S.shape[0] == S.shape[1] else S[:0],
            "S^T k is k @ S (or S.T @ k): the memory is (D, V), keys along the rows; S @ k reads it the other way.",
        ),
        (
            S + beta * torch.outer(q, v - k @ S),
            "write at the key: beta * outer(k, v - S^T k); the query only reads, after the write.",
        ),
    ]
    outputs = [
        (
            q @ S,
            "read the output from the updated state: o_t = S_t^T q_t, after the write (S_{t-1} is only for the error).",
        ),
        (
            new_state @ q if S.shape[0] == S.shape[1] else S[:0, 0],
            "o = S_new^T q = q @ S_new (or S_new.T @ q): the memory is (D, V); S_new @ q reads it the other way.",
        ),
        (
            beta * (q @ new_state),
            "beta scales the write only; read the memory as it is: o = S_new^T q.",
        ),
        (
            k @ new_state,
            "read with the query: o = S_new^T q; the key is what was written.",
        ),
    ]
    return states, outputs, new_state


@_function_answer("your function delta_step(S, q, k, v, beta)", "a function")
def check_delta_step(step) -> Feedback:
    """Build it: ``delta_step(S, q, k, v, beta) -> (S_new, o)``, one step of the delta rule.

    ``S_new = S + beta k (v - S^T k)^T`` (D, V), ``o = S_new^T q`` (V,). Checked on hidden cases of varied D, V and
    beta, with unit keys and queries that are not unit vectors, including a key written before; the learner's function
    gets copies.
    """
    for case, (what, inputs) in enumerate(_delta_cases()):
        want_state, want_out = _reference_delta(*inputs.values())
        result, problem = _call_on_copies(step, inputs)
        if problem is not None:
            return _with_case(_raised_on(problem, inputs["S"].shape, worked_before=case > 0), what)
        if isinstance(result, tuple) and any(t is None for t in result):
            return _hint("replace the None placeholders: return S_new (D, V) and o (V,).")
        if not _tensors(result, 2):
            return _hint(f"return two tensors: (S_new, o), of shapes (D, V) and (V,); got {_described(result)}.")
        new_state, out = (t.detach() for t in result)
        low = _half_precision(new_state, out, what="S_new or o")
        if low is not None:
            return low
        if tuple(new_state.shape) == tuple(want_state.shape)[::-1] and want_state.shape[0] != want_state.shape[1]:
            return _hint(
                f"S_new must have shape {tuple(want_state.shape)} (D, V), got {tuple(new_state.shape)}: write "
                "torch.outer(k, error), keys along the rows, not torch.outer(error, k)."
            )
        advice = "take every size from the inputs, write none in."
        for name, got, want in (("S_new", new_state, want_state), ("o", out, want_out)):
            shape = _shape_hint(name, got, want, what, advice)
            if shape is not None:
                return shape
        states, outputs, _ = _delta_mistakes(*inputs.values())
        if not _close(new_state, want_state):
            hint = _match(new_state, states)
            if hint is not None:
                return _hint(hint)
            return _first_hint(
                _rounded(new_state, want_state),
                _not_finite(new_state, f"S_new on {what}"),
                _hint(f"S_new is off on {what}: S_new = S + beta * outer(k, v - S^T k), with S^T k = k @ S."),
            )
        if not _close(out, want_out):
            hint = _match(out, outputs)
            if hint is not None:
                return _hint(hint)
            return _first_hint(
                _rounded(out, want_out), _hint(f"o is off on {what}: o = S_new^T q = q @ S_new, a (V,) vector.")
            )
    return _ok(
        "the state and the output match on every hidden case, including a key written twice: the second write "
        "replaces the first (with beta = 1). This is the loop inside ac.delta_rule."
    )


# ----------------------------------------------------------------------------------------------------------------------
# Exercise 3: how many pairs a D x V state holds exactly
# ----------------------------------------------------------------------------------------------------------------------


@_number_answer("the number of pairs")
def check_state_capacity(answer: float) -> Feedback:
    """Predict: the most key-value pairs ``S = sum_i k_i v_i^T`` (keys of size D = 48, values of size V = 20) holds
    so that each stored key reads back exactly its value, whatever the values: D = 48 (orthonormal keys)."""
    d, v = CAPACITY_D, CAPACITY_V
    if not math.isfinite(answer):
        return _hint(
            "a finite number: each extra pair adds crosstalk k_i . k_j to every other read, so the state fills up."
        )
    if answer == d:
        return _ok(
            f"{d}: at most D = {d} keys can be orthonormal, and then S^T k_i = v_i exactly; one key more has a "
            "component along the others, and reading it picks up their values too."
        )
    if answer == d * v:
        return _hint(
            f"S has D x V = {d * v} numbers, but a read S^T k only looks along the key: pairs share the D key "
            "directions, and the V entries of one value are one pair, not V."
        )
    if answer == d * d:
        return _hint("D x D counts a square matrix; the reads are S^T k, so count how many keys can be orthogonal.")
    if answer == v:
        return _hint(
            f"V = {v} is the size of a value; the limit comes from the keys: how many keys of size D can be "
            "orthogonal to one another?"
        )
    if answer in (d - 1, d + 1):
        return _hint("off by one: count the orthonormal vectors of a D-dimensional space.")
    if answer == d + v:
        return _hint(
            f"D + V = {d + v} adds a key's size to a value's; only the keys limit the reads: how many keys of size D "
            "can be orthogonal to one another?"
        )
    return _hint(
        "reading key k_i gives S^T k_i = sum_j (k_j . k_i) v_j: exact when the other keys are orthogonal to k_i. "
        "How many mutually orthogonal keys of size D are there?"
    )
