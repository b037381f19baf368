"""Checks for the exercise on the delta rule: one update that writes the error v - S^T k, so a key stored twice is
overwritten (notebook 12)."""

from __future__ import annotations

import torch

from . import feedback as fb
from .build_it import float32_close, gaussian, mistake_hint, shape_hint, step_results, with_case
from .feedback import Feedback

__all__ = ["check_delta_step"]


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
