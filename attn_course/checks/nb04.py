"""Checks for the exercises of notebook 04 (self-attention by hand).

The exercises add a fourth token, ``x4 = [2, 0, 1, 1]``, to the worked example, so that no answer is
already printed in the notebook: its key, its query's scores against the three tokens, and its output.
"""

from __future__ import annotations

import torch

from ..data import three_token_example
from ._feedback import Feedback, _close, _hint, _ok, _tensor_problem

__all__ = ["NEW_TOKEN", "check_new_token_key", "check_new_token_scores", "check_new_token_output"]

NEW_TOKEN = (2.0, 0.0, 1.0, 1.0)


def _parts():
    ex = three_token_example(torch.float64)
    x4 = torch.tensor(NEW_TOKEN, dtype=torch.float64)
    keys, values = ex.inputs @ ex.w_key, ex.inputs @ ex.w_value  # (3, 3) each
    return ex, x4, keys, values


def check_new_token_key(key) -> Feedback:
    """The key of the new token ``x4 = [2, 0, 1, 1]``: ``x4 @ W_K``, shape (3,)."""
    problem = _tensor_problem(key, (3,), "the key as a tensor of shape (3,)")
    if problem is not None:
        return problem
    ex, x4, _, _ = _parts()
    if _close(key, x4 @ ex.w_key):
        return _ok("k4 = [1, 2, 2]: row 1 of W_K twice, plus rows 3 and 4.")
    if _close(key, x4 @ ex.w_query) or _close(key, x4 @ ex.w_value):
        return _hint("right token, wrong matrix: keys use W_K.")
    return _hint("multiply the row vector [2, 0, 1, 1] by the 4 x 3 matrix W_K.")


def check_new_token_scores(scores) -> Feedback:
    """Unscaled scores of the new token's query ``x4 @ W_Q`` against the keys of tokens 1-3, shape (3,)."""
    problem = _tensor_problem(scores, (3,), "three scores as a tensor of shape (3,)")
    if problem is not None:
        return problem
    ex, x4, keys, _ = _parts()
    want = keys @ (x4 @ ex.w_query)  # (3,): q4 . k_j
    if _close(scores, want):
        return _ok("q4 = [2, 1, 4] scores [5, 12, 11]: the new token attends mostly to token 2, then token 3.")
    if _close(scores, want / 3**0.5):
        return _hint("these are scaled by 1/sqrt(3); the exercise asks for the unscaled scores.")
    if _close(scores, torch.softmax(want, 0)):
        return _hint("these are the weights; the scores are the dot products before the softmax.")
    if _close(scores, (ex.inputs @ ex.w_query) @ (x4 @ ex.w_key)):
        return _hint("swapped roles: use the new token's query against the old tokens' keys, not its key.")
    return _hint("score_j = q4 . k_j, with q4 = x4 @ W_Q and k_j = x_j @ W_K.")


def check_new_token_output(output) -> Feedback:
    """The exact (unscaled) output of the new token attending to tokens 1-3, shape (3,)."""
    problem = _tensor_problem(output, (3,), "the output as a tensor of shape (3,)")
    if problem is not None:
        return problem
    ex, x4, keys, values = _parts()
    scores = keys @ (x4 @ ex.w_query)  # (3,)
    if _close(output, torch.softmax(scores, 0) @ values):
        return _ok("weights about [0.0007, 0.7306, 0.2688]: the output lies between v2 = [2, 8, 0] and v3 = [2, 6, 3].")
    if _close(output, torch.softmax(scores / 3**0.5, 0) @ values):
        return _hint("that is the scaled version; the exercise asks for the unscaled one.")
    if _close(output, scores @ values):
        return _hint("apply the softmax to the scores before weighting the values.")
    if _close(output, torch.softmax(scores, 0) @ keys):
        return _hint("the weights mix the values V, not the keys.")
    return _hint("output = softmax(q4 . k_j over j) @ V.")
