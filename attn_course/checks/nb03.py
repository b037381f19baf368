"""Checks for the exercises of notebook 03 (scoring functions)."""

from __future__ import annotations

import math
import operator

import torch

from ._feedback import Feedback, _close, _hint, _number, _ok, _tensor_problem

__all__ = ["check_scaled_scores", "check_dot_variance", "check_distance_scores", "check_bmm_shape"]

SCORE_QUERY = ((1.0, 2.0),)  # (Q, D) = (1, 2)
SCORE_KEYS = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))  # (K, D) = (3, 2)


def check_scaled_scores(scores) -> Feedback:
    """Scaled dot-product scores of the query [1, 2] against the keys [1, 0], [0, 1], [1, 1]: shape (1, 3)."""
    q, k = torch.tensor(SCORE_QUERY, dtype=torch.float64), torch.tensor(SCORE_KEYS, dtype=torch.float64)
    problem = _tensor_problem(scores, (1, 3), "a (1, 3) tensor: one row per query, one column per key")
    if problem is not None:
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (3, 1):
            return _hint("transposed: rows are queries and columns keys, so compute q @ k.T, shape (1, 3).")
        return problem
    if not scores.is_floating_point():
        return _hint(f"scores are real numbers after the scaling: use a floating-point tensor, got {scores.dtype}.")
    raw = q @ k.T
    if _close(scores, raw / math.sqrt(2)):
        return _ok("q . k / sqrt(2) = [0.7071, 1.4142, 2.1213]: the key most aligned with the query scores highest.")
    if _close(scores, raw):
        return _hint("these are the plain dot products: divide by sqrt(D), with D = 2.")
    if _close(scores, raw / 2):
        return _hint("divide by the square root of D, not by D.")
    if _close(scores, torch.softmax(raw / math.sqrt(2), dim=-1)):
        return _hint("these are the weights; the scores are what goes into the softmax.")
    return _hint("score = (query . key) / sqrt(D) for each key; D = 2 here.")


def check_dot_variance(answer) -> Feedback:
    """Var(q . k) for q, k in R^64 with independent components of mean 0 and variance 1."""
    value = _number(answer, "the variance as a number")
    if isinstance(value, Feedback):
        return value
    if math.isclose(value, 64.0, rel_tol=1e-9):
        return _ok("each of the 64 products q_i k_i has variance 1 and they are independent, so the sum has 64.")
    if math.isclose(value, 8.0, rel_tol=1e-9):
        return _hint("8 = sqrt(64) is the standard deviation; the question asks for the variance.")
    if math.isclose(value, 1.0, rel_tol=1e-9):
        return _hint("1 is the variance after dividing by sqrt(D); before, the variances of the 64 terms add up.")
    return _hint(
        "q . k = sum_i q_i k_i: what is the variance of one term q_i k_i, and how do variances of "
        "independent terms combine?"
    )


def check_distance_scores(fn) -> Feedback:
    """A function ``(queries (B, Q, D), keys (B, K, D)) -> scores (B, Q, K)`` whose softmax equals
    the Gaussian weights ``softmax(-|q - k|^2 / 2)``."""
    if fn is None:
        return _hint("replace None with your function of (queries, keys).")
    if not callable(fn):
        return _hint(f"expected a function of (queries, keys), got {type(fn).__name__}.")
    gen = torch.Generator().manual_seed(3)
    queries = torch.randn(2, 3, 4, generator=gen, dtype=torch.float64)
    keys = torch.randn(2, 5, 4, generator=gen, dtype=torch.float64)
    try:
        scores = fn(queries.clone(), keys.clone())
    except Exception as error:  # report any failure as a hint, not a traceback
        return _hint(
            f"calling your function on queries (2, 3, 4) and keys (2, 5, 4) raised {type(error).__name__}: {error}"
        )
    problem = _tensor_problem(scores, (2, 3, 5), "scores of shape (B, Q, K) = (2, 3, 5)")
    if problem is not None:
        return problem
    want = torch.softmax(-(torch.cdist(queries, keys) ** 2) / 2, dim=-1)
    if _close(torch.softmax(scores.double(), dim=-1), want):
        return _ok("q . k - |k|^2 / 2 gives the Gaussian weights: the query's own norm cancels in the softmax.")
    if _close(torch.softmax(scores.double(), dim=-1), torch.softmax(queries @ keys.transpose(1, 2), dim=-1)):
        return _hint("that is plain dot-product attention; the squared key norms must enter too.")
    return _hint("expand -|q - k|^2 / 2 = q . k - |k|^2 / 2 - |q|^2 / 2; which terms change from key to key?")


def check_bmm_shape(shape) -> Feedback:
    """The shape of ``torch.bmm(a, b)`` for ``a`` of shape (2, 3, 4) and ``b`` of shape (2, 4, 6)."""
    if shape is None:
        return _hint("replace None with the shape, e.g. (1, 2, 3).")
    try:  # whole numbers only: operator.index refuses floats, strings and non-integer tensors
        if isinstance(shape, str):
            raise TypeError
        got = tuple(operator.index(s) for s in shape)
    except TypeError:
        return _hint(
            f"expected a shape such as (1, 2, 3): whole numbers in a tuple, got {type(shape).__name__} {shape!r}."
        )
    if got == (2, 3, 6):
        return _ok("batch 2 kept, then (3, 4) @ (4, 6) -> (3, 6) for each batch element.")
    if got == (3, 6):
        return _hint("torch.bmm keeps the batch axis in front.")
    if got == (2, 4, 4) or got == (2, 3, 4, 6):
        return _hint("the shared size 4 disappears: (3, 4) @ (4, 6) -> (3, 6), per batch element.")
    return _hint("for each of the 2 batch elements, multiply a (3, 4) matrix by a (4, 6) matrix.")
