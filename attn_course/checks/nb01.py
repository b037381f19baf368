"""Checks for the exercises of notebook 01 (attention pooling)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..kernels import epanechnikov
from ._feedback import Feedback, _close, _hint, _ok, _tensor_problem

__all__ = ["check_nw_weights", "check_pooling_limit", "check_epanechnikov", "check_leave_one_out_mask"]

NW_QUERY, NW_KEYS = 2.0, (1.0, 2.0, 4.0)


def check_nw_weights(weights) -> Feedback:
    """Gaussian attention weights (bandwidth 1) of the query 2.0 over the keys 1.0, 2.0, 4.0."""
    keys = torch.tensor(NW_KEYS, dtype=torch.float64)
    d2 = (NW_QUERY - keys) ** 2
    problem = _tensor_problem(weights, (3,), "the three weights as a tensor of shape (3,)")
    if problem is not None:
        return problem
    if not weights.is_floating_point():
        return _hint(f"weights are fractions: use a floating-point tensor, got {weights.dtype}.")
    if _close(weights, torch.softmax(-d2 / 2, 0)):
        return _ok("the key at the query's own position gets the most weight; the far key at 4.0 the least.")
    if _close(weights, torch.exp(-d2 / 2)) or _close(weights, torch.exp(-d2 / 2) / math.sqrt(2 * math.pi)):
        return _hint("these are the kernel values; divide by their sum (softmax) so the weights sum to 1.")
    if _close(weights, torch.softmax(d2 / 2, 0)):
        return _hint("the far key gets the most weight: the score is MINUS the squared distance over 2.")
    if _close(weights, torch.softmax(-d2, 0)):
        return _hint("close: the Gaussian score is -(x - x_i)^2 / 2, you left out the 1/2.")
    if _close(weights, torch.softmax(-(NW_QUERY - keys).abs() / 2, 0)):
        return _hint("square the distance: the score is -(x - x_i)^2 / 2.")
    if abs(float(weights.sum()) - 1) > 1e-4:
        return _hint(f"attention weights sum to 1, yours sum to {float(weights.sum()):.4f}.")
    return _hint("the weights sum to 1 but are not softmax(-(x - x_i)^2 / 2); check each score.")


def check_pooling_limit(answer, y_train: torch.Tensor) -> Feedback:
    """The single value every prediction tends to as the bandwidth grows without bound."""
    if answer is None:
        return _hint("replace None with a number computed from the training targets.")
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return _hint(f"expected one number, got {type(answer).__name__}.")
    target = float(y_train.double().mean())
    if math.isclose(value, target, rel_tol=1e-4, abs_tol=1e-4):
        return _ok(
            f"with a huge bandwidth every key gets weight 1/n, so every prediction is the mean {target:.4f}: "
            "average pooling."
        )
    if math.isclose(value, float(y_train.double().median()), rel_tol=1e-4, abs_tol=1e-4):
        return _hint("that is the median; with equal weights 1/n the weighted sum is a different statistic.")
    return _hint(
        "as h grows, every kernel value tends to the same number, so every key gets weight 1/n. What is sum_i y_i / n?"
    )


def check_epanechnikov(fn: Callable[[torch.Tensor], torch.Tensor] | None) -> Feedback:
    """A function ``u -> K(u)`` equal to the Epanechnikov density ``3/4 (1 - u^2)`` on [-1, 1], 0 elsewhere."""
    if fn is None:
        return _hint("replace None with your function of u.")
    if not callable(fn):
        return _hint(f"expected a function of u, got {type(fn).__name__}.")
    u = torch.linspace(-2, 2, 81, dtype=torch.float64)
    try:
        got = fn(u.clone())
    except Exception as error:  # report any failure as a hint, not a traceback
        return _hint(f"calling your function on a tensor of u values raised {type(error).__name__}: {error}")
    problem = _tensor_problem(got, tuple(u.shape), "a tensor of K(u) values shaped like u")
    if problem is not None:
        return problem
    want = epanechnikov(u)
    if _close(got, want):
        return _ok("the weight falls from 3/4 at u = 0 to exactly 0 at |u| = 1 and stays 0 beyond.")
    outside = u.abs() > 1
    if (got[outside] < -1e-9).any():
        return _hint("the kernel is negative for |u| > 1: clip it at 0 there (torch.clamp(..., min=0)).")
    if (got[outside].abs() > 1e-9).any():
        return _hint("a compact kernel is exactly 0 for |u| > 1.")
    ratio = got[~outside & (u.abs() < 0.9)] / want[~outside & (u.abs() < 0.9)]
    if torch.allclose(ratio, ratio[0].expand_as(ratio), rtol=1e-4):
        return _hint(
            f"the shape is right but the scale is {float(ratio[0]) * 0.75:.4g} (1 - u^2): use 3/4 "
            "so that the density integrates to 1."
        )
    return _hint("inside |u| <= 1 the kernel is 3/4 (1 - u^2).")


def check_leave_one_out_mask(mask, n: int = 5) -> Feedback:
    """The (n, n) leave-one-out mask: query i may use every training point but its own."""
    problem = _tensor_problem(mask, (n, n), f"a ({n}, {n}) bool tensor")
    if problem is not None:
        return problem
    if mask.dtype != torch.bool:
        return _hint(f"a mask is a bool tensor (True = may attend), got {mask.dtype}.")
    want = ~torch.eye(n, dtype=torch.bool)
    if torch.equal(mask, want):
        return _ok("every query sees all training points except itself, so h -> 0 no longer wins.")
    if torch.equal(mask, ~want):
        return _hint("the polarity is reversed: True means 'may attend', so the diagonal must be False.")
    return _hint("only the diagonal (a point and itself) should be False.")
