"""Checks for the exercises on the delta rule: one update that writes the error v - S^T k, so a key stored twice is
overwritten; the UT transform, the triangular solve that gives a whole chunk's writes at once (notebook 12)."""

from __future__ import annotations

import torch

from . import feedback as fb
from .build_it import float32_close, gaussian, mistake_hint, shape_hint, step_results, tensor_answer, with_case
from .feedback import Feedback

__all__ = ["check_delta_step", "check_ut_transform"]


def _reference_delta(S, q, k, v, beta):
    new_state = S + beta * torch.outer(k, v - k @ S)  # (D, V): the error v - S^T k written at k
    return new_state, q @ new_state  # (D, V), (V,)


def _delta_cases() -> list[tuple[str, dict]]:
    """Hidden cases: unit keys, queries of other lengths, float64; D, V and beta vary; one rewrites a stored key."""
    gen = torch.Generator().manual_seed(2121)

    def unit(size):
        x = gaussian(size, gen=gen)
        return x / x.norm()

    def case(size: int, v: int, beta: float, steps: int, repeat: bool = False) -> dict:
        state, first = torch.zeros(size, v, dtype=torch.float64), unit(size)
        for i in range(steps):
            key = first if i == 0 else unit(size)
            state, _ = _reference_delta(state, key, key, gaussian(v, gen=gen), 1.0)
        k = first if repeat else unit(size)
        query = gaussian(size, gen=gen)  # not a unit vector: a read that normalises q must fail
        return {"S": state, "q": query, "k": k, "v": gaussian(v, gen=gen), "beta": beta}

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


@fb.function_answer("your function delta_step(S, q, k, v, beta)", "a function")
def check_delta_step(step) -> Feedback:
    """Build it: ``delta_step(S, q, k, v, beta) -> (S_new, o)``, one step of the delta rule.

    ``S_new = S + beta k (v - S^T k)^T`` (D, V), ``o = S_new^T q`` (V,). Checked on hidden cases of varied D, V and
    beta, with unit keys and queries that are not unit vectors, including a key written before; the learner's function
    gets copies.
    """
    for case, (what, inputs) in enumerate(_delta_cases()):
        want_state, want_out = _reference_delta(*inputs.values())
        result, problem = fb.call_on_copies(step, inputs)
        if problem is not None:
            return with_case(fb.raised_on(problem, inputs["S"].shape, worked_before=case > 0), what)
        expected = "return two tensors: (S_new, o), of shapes (D, V) and (V,)"
        tensors = step_results(result, 2, "S_new or o", "return S_new (D, V) and o (V,)", expected)
        if isinstance(tensors, Feedback):
            return tensors
        new_state, out = tensors
        if tuple(new_state.shape) == tuple(want_state.shape)[::-1] and want_state.shape[0] != want_state.shape[1]:
            return fb.hint(
                f"S_new must have shape {tuple(want_state.shape)} (D, V), got {tuple(new_state.shape)}: write "
                "torch.outer(k, error), keys along the rows, not torch.outer(error, k)."
            )
        advice = "take every size from the inputs, write none in."
        shape = shape_hint(what, advice, ("S_new", new_state, want_state), ("o", out, want_out))
        if shape is not None:
            return shape
        states, outputs, _ = _delta_mistakes(*inputs.values())
        if not float32_close(new_state, want_state):
            return mistake_hint(
                new_state,
                want_state,
                states,
                fb.not_finite(new_state, f"S_new on {what}"),
                fb.hint(f"S_new is off on {what}: S_new = S + beta * outer(k, v - S^T k), with S^T k = k @ S."),
            )
        if not float32_close(out, want_out):
            return mistake_hint(
                out, want_out, outputs, fb.hint(f"o is off on {what}: o = S_new^T q = q @ S_new, a (V,) vector.")
            )
    return fb.ok(
        "the state and the output match on every hidden case, including a key written twice: the second write "
        "replaces the first (with beta = 1). This is the loop inside ac.delta_rule."
    )


# ----------------------------------------------------------------------------------------------------------------------
# The UT transform: a chunk's writes U from one unit lower-triangular solve
# ----------------------------------------------------------------------------------------------------------------------


def _reference_ut(keys, values, beta, state):
    eye = torch.eye(keys.shape[0], dtype=keys.dtype)  # (C, C)
    system = eye + beta[:, None] * torch.tril(keys @ keys.T, diagonal=-1)  # (C, C): I + diag(beta) tril(K K^T, -1)
    rhs = beta[:, None] * (values - keys @ state)  # (C, V): diag(beta) (V - K S_0)
    return torch.linalg.solve_triangular(system, rhs, upper=False, unitriangular=True)  # (C, V)


def _ut_cases() -> list[tuple[str, dict]]:
    """Hidden cases: unit keys, a state written by earlier chunks, float64; C, D, V and beta vary (zeros and ones)."""
    gen = torch.Generator().manual_seed(1313)

    def case(steps: int, size: int, v: int, beta: list[float] | None = None, repeat: bool = False) -> dict:
        keys = gaussian(steps, size, gen=gen)
        keys = keys / keys.norm(dim=-1, keepdim=True)  # (C, D)
        if repeat:
            keys[-1] = keys[0]  # a key written twice inside the chunk
        state = torch.zeros(size, v, dtype=torch.float64)
        for _ in range(3):  # the state that the earlier chunks left: three delta-rule writes
            key = gaussian(size, gen=gen)
            state, _ = _reference_delta(state, key, key / key.norm(), gaussian(v, gen=gen), 0.8)
        b = torch.rand(steps, generator=gen, dtype=torch.float64) * 0.8 + 0.1 if beta is None else beta
        return {
            "keys": keys,
            "values": gaussian(steps, v, gen=gen),
            "beta": torch.as_tensor(b).double(),
            "state": state,
        }

    return [
        ("C = 5 steps, D = V = 4, beta in (0, 1)", case(5, 4, 4)),  # square: S_0 vs S_0^T gives the right shape
        ("C = 8, D = 6, V = 3, beta with zeros and ones", case(8, 6, 3, [1, 0, 0.5, 1, 0, 0.3, 1, 0.9])),
        ("C = 1, D = 5, V = 2", case(1, 5, 2)),
        ("C = 2, D = 3, V = 7", case(2, 3, 7)),
        ("C = 5, D = 7, V = 2, the first key written again at the end", case(5, 7, 2, repeat=True)),
    ]


def _ut_mistakes(keys, values, beta, state):
    """(what a common mistake computes for U, the hint that names it)."""
    eye, gram, b = torch.eye(keys.shape[0], dtype=keys.dtype), keys @ keys.T, beta[:, None]  # (C, C), (C, C), (C, 1)
    lower = torch.tril(gram, diagonal=-1)  # (C, C)
    system, rhs, square = eye + b * lower, b * (values - keys @ state), state.shape[0] == state.shape[1]
    why = "U's row t is beta_t (v_t - S_0^T k_t - sum_{i<t} (k_i . k_t) u_i)"
    return [
        (
            rhs,
            f"the earlier writes of the chunk are missing: {why}; each u_i changes what the memory returns for k_t "
            "(the plain loop of outer products is the triangular system with no tril(K K^T, -1) term).",
        ),
        (
            torch.linalg.solve(eye + b * torch.tril(gram), rhs),
            "take the strict lower triangle, tril(K K^T, -1): step t "
            "is corrected by the earlier steps i < t only; with diagonal=0 each u_t is divided by 1 + beta_t |k_t|^2.",
        ),
        (
            torch.linalg.solve(eye + b * torch.triu(gram, diagonal=1), rhs),
            "the lower triangle, tril(K K^T, -1): step "
            "t is corrected by the steps written before it (i < t), not by the later ones (triu).",
        ),
        (
            torch.linalg.solve(eye - b * lower, rhs),
            f"the correction enters with a plus sign, I + diag(beta) tril(K K^T, -1): {why}, moved to the left side.",
        ),
        (
            torch.linalg.solve(system, values - keys @ state),
            "beta scales the right side too: diag(beta) (V - K S_0), each step writes beta_t times its error.",
        ),
        (
            torch.linalg.solve(eye + lower, rhs),
            "beta scales the correction in the matrix too: I + diag(beta) tril(K K^T, -1), row t times beta_t.",
        ),
        (
            torch.linalg.solve(eye + lower * beta[None, :], rhs),
            "diag(beta) multiplies the matrix from the left (row t "
            "gets beta_t, the strength of the step being written), not the columns: tril(K K^T, -1) diag(beta).",
        ),
        (
            torch.linalg.solve(system, b * values - keys @ state),
            "beta multiplies the whole error, diag(beta) (V - K S_0), not V alone.",
        ),
        (
            torch.linalg.solve(system, b * values),
            "subtract what the state from the earlier chunks returns: "
            "diag(beta) (V - K S_0); K S_0 holds S_0^T k_t for every step.",
        ),
        (
            torch.linalg.solve(system, b * (values - keys @ state.T)) if square else values[:0],
            "S_0 is (D, V), keys "
            "along the rows: S_0^T k_t for every step is keys @ state (C, V), not keys @ state.T nor state @ keys.T.",
        ),
    ]


def _ut_problem(result, want, what: str, earlier: list) -> Feedback | torch.Tensor:
    """The learner's U, detached, or the hint for a result that is not one floating (C, V) tensor."""
    if isinstance(result, (tuple, list)):
        kept = any(isinstance(t, torch.Tensor) and t.shape == want.shape for t in result)
        return fb.hint(
            f"return U alone, one (C, V) tensor; got {fb.described(result)}"
            + (": the new state S_0 + K^T U is the next step's work, not this function's." if kept else ".")
        )
    if not isinstance(result, torch.Tensor):
        return fb.hint(f"return U, one tensor of shape (C, V); got {fb.described(result)}.")
    (steps, width), got = want.shape, tuple(result.shape)
    if got == (steps, steps) and steps != width:
        return fb.hint(
            f"U must have shape {(steps, width)} (C, V), got {got}, the system's matrix: return the "
            "solution U of (I + diag(beta) tril(K K^T, -1)) U = diag(beta) (V - K S_0)."
        )
    if got == (width, steps) and steps != width:
        return fb.hint(f"U must have shape {(steps, width)} (C, V), one row per step, got {got}: transposed.")
    return tensor_answer(result, want, earlier, what, "U")


def _ut_wrong(got, want, inputs: dict) -> Feedback:
    """The hint for a U of the right shape but other numbers: NaN from a division by beta = 0, a typical mistake."""
    if bool((inputs["beta"] == 0).any()) and fb.not_finite(got) is not None:
        return fb.hint(
            "U holds NaN or infinity where beta_t = 0: a step that does not write has u_t = 0; keep beta on "
            "the products, never divide by it"
        )
    off = "U is off: solve (I + diag(beta) tril(K K^T, -1)) U = diag(beta) (V - K S_0), with K S_0 = keys @ state"
    return mistake_hint(got, want, _ut_mistakes(*inputs.values()), fb.not_finite(got, "U"), fb.hint(off))


@fb.function_answer("your function ut_transform(keys, values, beta, state)", "a function")
def check_ut_transform(ut_transform) -> Feedback:
    """Build it: ``ut_transform(keys, values, beta, state) -> U`` (C, V), the writes of one chunk of the delta rule.

    U solves ``(I + diag(beta) tril(K K^T, -1)) U = diag(beta) (V - K S_0)``, keys (C, D), values (C, V), beta (C,),
    state S_0 (D, V). Checked on hidden cases of varied C (1, 2, 5, 8), D and V, beta with zeros and ones, a state
    left by earlier chunks and a key written twice in a chunk, against ``torch.linalg.solve_triangular``; the
    learner's function gets copies.
    """
    shapes = []
    for case, (what, inputs) in enumerate(_ut_cases()):
        want = _reference_ut(*inputs.values())
        result, problem = fb.call_on_copies(ut_transform, inputs)
        if problem is not None:
            return with_case(fb.raised_on(problem, (*inputs["keys"].shape, want.shape[1]), case > 0), what)
        got = _ut_problem(result, want, what, shapes)
        if isinstance(got, Feedback):
            return with_case(got, what) if "hidden case" not in got.message else got
        shapes.append(tuple(want.shape))
        if not float32_close(got, want):
            return with_case(_ut_wrong(got, want, inputs), what)
    return fb.ok(
        "U matches on every hidden case, from a chunk of 1 step to 8, with beta 0 and 1 and a key written twice: one "
        "triangular solve gives what the step-by-step delta rule writes. This is the solve inside delta_rule_chunked."
    )
