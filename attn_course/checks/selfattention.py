"""Checks for the exercises on self-attention, computed by hand (notebook 04).

Tokens are counted from 0, as Python indexes them. The first exercises add a fourth token,
``x3 = [2, 0, 1, 1]``, to the worked example, so that no answer is already printed in the notebook: its
key, its query's scores against tokens 0 to 2, and its output. The last two ask what reversing the tokens
does to the outputs, and for one entry of ``W_K`` that makes token 0 attend mostly to itself.
"""

from __future__ import annotations

import torch

from ..data import three_token_example
from . import feedback as fb
from .feedback import Feedback

__all__ = [
    "check_new_token_key",
    "check_new_token_scores",
    "check_new_token_output",
    "check_reversed_outputs",
    "check_self_attending_key",
]

NEW_TOKEN = (2.0, 0.0, 1.0, 1.0)


def _parts():
    ex = three_token_example(torch.float64)
    x3 = torch.tensor(NEW_TOKEN, dtype=torch.float64)
    keys, values = ex.inputs @ ex.w_key, ex.inputs @ ex.w_value  # (3, 3) each
    return ex, x3, keys, values


def _outputs(inputs, w_query, w_key, w_value, scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention of the worked example, unscaled unless ``scale`` is given: outputs (T, V) and weights (T, T)."""
    weights = torch.softmax((inputs @ w_query) @ (inputs @ w_key).T * scale, dim=-1)  # (T, T)
    return weights @ (inputs @ w_value), weights


@fb.tensor_answer((3,), "the key as a tensor of shape (3,)")
def check_new_token_key(key) -> Feedback:
    """The key of the new token ``x3 = [2, 0, 1, 1]``: ``x3 @ W_K``, shape (3,)."""
    ex, x3, keys, _ = _parts()
    if fb.close(key, x3 @ ex.w_key):
        return fb.ok("k3 = [1, 2, 2]: row 0 of W_K twice, plus rows 2 and 3.")
    problem = fb.first_hint(fb.not_finite(key, "your key"), fb.rounded(key, x3 @ ex.w_key))
    if problem is not None:
        return problem
    if fb.close(key, x3 @ ex.w_query) or fb.close(key, x3 @ ex.w_value):
        return fb.hint("right token, wrong matrix: keys use W_K.")
    if fb.close(key, ex.w_key.T @ x3.flip(0)):
        return fb.hint("the token's numbers are in reverse order: entry i of x3 multiplies row i of W_K.")
    for token, old_key in enumerate(keys):
        if fb.close(key, old_key):
            return fb.hint(f"that is the key of token {token}; the new token x3 = [2, 0, 1, 1] has a key of its own.")
    if fb.close(key, x3[:3]):
        return fb.hint("those are x3's own numbers; its key is x3 @ W_K, a weighted sum of the rows of W_K.")
    return fb.hint("multiply the row vector [2, 0, 1, 1] by the 4 x 3 matrix W_K.")


def _scores_problem(scores) -> Feedback | None:
    """A hint for an answer that is not three scores; four scores (the new token's own included) are named."""
    own = "the exercise asks for the scores against tokens 0 to 2, without the new token's score against itself."
    return fb.shape_problem(scores, (3,), "three scores as a tensor of shape (3,)", {(4,): own})


@fb.answer_check(_scores_problem)
def check_new_token_scores(scores) -> Feedback:
    """Unscaled scores of the new token's query ``x3 @ W_Q`` against the keys of tokens 0-2, shape (3,)."""
    ex, x3, keys, _ = _parts()
    want = keys @ (x3 @ ex.w_query)  # (3,): q3 . k_j
    if fb.close(scores, want):
        return fb.ok("q3 = [2, 1, 4] scores [5, 12, 11]: the new token attends mostly to token 1, then token 2.")
    problem = fb.first_hint(fb.not_finite(scores, "your scores"), fb.rounded(scores, want))
    if problem is not None:
        return problem
    if fb.close(scores, want / 3**0.5):
        return fb.hint("these are scaled by 1/sqrt(3); the exercise asks for the unscaled scores.")
    if fb.close(scores, torch.softmax(want, 0)):
        return fb.hint("these are the weights; the scores are the dot products before the softmax.")
    if fb.close(scores, (ex.inputs @ ex.w_query) @ (x3 @ ex.w_key)):
        return fb.hint("swapped roles: use the new token's query against the old tokens' keys, not its key.")
    for token, old_scores in enumerate((ex.inputs @ ex.w_query) @ keys.T):
        if fb.close(scores, old_scores):
            return fb.hint(f"those are the scores of token {token}'s query; use the new token's query q3 = x3 @ W_Q.")
    ratio = _one_ratio(scores, want)
    if ratio is not None:
        return fb.hint(
            f"these are the right scores times {ratio:.4g}; the exercise asks for the unscaled dot products."
        )
    return fb.hint("score_j = q3 . k_j, with q3 = x3 @ W_Q and k_j = x_j @ W_K.")


@fb.tensor_answer((3,), "the output as a tensor of shape (3,)")
def check_new_token_output(output) -> Feedback:
    """The exact (unscaled) output of the new token attending to tokens 0-2, shape (3,)."""
    ex, x3, keys, values = _parts()
    scores = keys @ (x3 @ ex.w_query)  # (3,)
    want = torch.softmax(scores, 0) @ values  # (3,)
    if fb.close(output, want):
        return fb.ok(
            "weights about [0.0007, 0.7306, 0.2688]: the output lies between v1 = [2, 8, 0] and v2 = [2, 6, 3]."
        )
    problem = fb.first_hint(fb.not_finite(output, "your output"), fb.rounded(output, want))
    if problem is not None:
        return problem
    rounded_weights = torch.softmax(scores, 0).round(decimals=1)  # [0.0, 0.7, 0.3], a hand calculation's shortcut
    if fb.close(output, rounded_weights @ values, 1e-3) or fb.close(
        output, (rounded_weights @ values).round(decimals=1)
    ):
        return fb.hint(
            "these are the outputs of weights rounded to one decimal, [0, 0.7, 0.3]: use the exact softmax weights "
            "(section 6, exact weights against rounded ones)."
        )
    if fb.close(output, torch.softmax(scores / 3**0.5, 0) @ values):
        return fb.hint("that is the scaled version; the exercise asks for the unscaled one.")
    if fb.close(output, scores @ values):
        return fb.hint("apply the softmax to the scores before weighting the values.")
    if fb.close(output, torch.softmax(scores, 0) @ keys):
        return fb.hint("the weights mix the values V, not the keys.")
    if fb.close(output, torch.softmax(scores, 0)):
        return fb.hint("those are the weights; the output is weights @ V, their mix of the values.")
    own = torch.cat([scores, (x3 @ ex.w_query @ (x3 @ ex.w_key)).unsqueeze(0)])  # (4,): with its own score
    if fb.close(output, torch.softmax(own, 0) @ torch.cat([values, (x3 @ ex.w_value).unsqueeze(0)])):
        return fb.hint("the new token attends to tokens 0-2 only; you let it attend to itself too.")
    return fb.hint("output = softmax(q3 . k_j over j) @ V.")


def _one_ratio(got: torch.Tensor, want: torch.Tensor) -> float | None:
    """The number c with got = c * want, when there is one and it is not 1; else None."""
    c = float(got.double().sum()) / float(want.sum())
    return c if abs(c - 1) > 1e-3 and fb.close(got, c * want) else None


@fb.tensor_answer((3, 3), "the outputs as a tensor of shape (3, 3), one row per token")
def check_reversed_outputs(outputs) -> Feedback:
    """The (unscaled) outputs, shape (3, 3), of the worked example with its three tokens in reverse order,
    ``X.flip(0)``: row i is the output of the token now in row i."""
    ex = three_token_example(torch.float64)
    original, _ = _outputs(ex.inputs, ex.w_query, ex.w_key, ex.w_value)  # (3, 3)
    if fb.close(outputs, original.flip(0)):
        return fb.ok(
            "the same three outputs in reverse order: each token's output does not depend on where it stands. "
            "Self-attention alone does not see the order of its inputs (notebook 06 adds positions)."
        )
    problem = fb.first_hint(fb.not_finite(outputs, "your outputs"), fb.rounded(outputs, original.flip(0)))
    if problem is not None:
        return problem
    if fb.close(outputs, original):
        return fb.hint("row i is the output of the token now in row i; the token x2 is now in row 0.")
    if fb.close(outputs, original.flip(1)) or fb.close(outputs, original.flip(0).flip(1)):
        return fb.hint("reversing the tokens reorders the rows (tokens), not the columns (value dimensions).")
    if fb.close(outputs, original.flip(0).T):
        return fb.hint("transposed: row i is the output of token i, its columns the value dimensions.")
    reversed_inputs = ex.inputs.flip(0)
    if fb.close(outputs, _outputs(reversed_inputs, ex.w_query, ex.w_key, ex.w_value)[1]):
        return fb.hint("those are the attention weights; the outputs are weights @ V.")
    if fb.close(outputs, _outputs(reversed_inputs, ex.w_query, ex.w_key, ex.w_value, 3**-0.5)[0]):
        return fb.hint("that is the scaled version (scores / sqrt(3)); the exercise asks for the unscaled outputs.")
    return fb.hint("compute softmax(Q K^T) V for X.flip(0), or predict it from the outputs of the notebook.")


@fb.tensor_answer((4, 3), "your W_K as a tensor of shape (4, 3)")
def check_self_attending_key(w_key) -> Feedback:
    """A ``W_K`` (4 x 3) that differs from the worked example's in exactly one entry and makes token 0 put most of
    its (unscaled) weight, more than 0.5, on itself."""
    if not w_key.is_floating_point() or not bool(torch.isfinite(w_key).all()):
        return fb.hint("W_K must hold finite floating-point numbers.")
    ex = three_token_example(torch.float64)
    changed = (w_key.detach().double() != ex.w_key).nonzero().tolist()  # [[row, column], ...]
    if not changed:
        return fb.hint("this is the original W_K; change one of its entries.")
    if len(changed) > 1:
        return fb.hint(f"change exactly one entry; you changed {len(changed)}: {[tuple(c) for c in changed]}.")
    ((row, column),) = changed
    _, weights = _outputs(ex.inputs, ex.w_query, w_key.detach().double(), ex.w_value)
    self_weight = float(weights[0, 0])
    if self_weight > 0.5:
        return fb.ok(
            f"W_K[{row}, {column}] = {float(w_key[row, column]):g} gives token 0 the weights "
            f"{[round(w, 4) for w in weights[0].tolist()]}: {self_weight:.4f} on itself."
        )
    if row in (0, 2):
        return fb.hint(
            f"row {row} is one that x0 uses, and x2 = x0 + x1 / 2 uses it as much: k2 = k0 + k1 / 2 moves with k0. "
            "Change a row that x0 does not use (x0 = [1, 0, 1, 0])."
        )
    return fb.hint(
        f"token 0 now puts {self_weight:.4f} on itself. Make q0 . k1 strongly negative: since k2 = k0 + k1 / 2, "
        "that lowers the scores of x1 and x2 below token 0's own."
    )
