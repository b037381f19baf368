"""Checks for the exercise on scaling: the factor that brings a dot product back to unit variance (notebook 03)."""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_variance_scale"]


@fb.number_answer("the scale as a number")
def check_variance_scale(answer: float) -> Feedback:
    """The scale that brings q . k back to unit variance when q, k in R^64 have independent components of mean 0
    and variance sigma^2 = 4."""
    if math.isnan(answer):
        return fb.not_finite(torch.tensor(answer), "your number")
    if math.isclose(answer, 32.0, rel_tol=1e-6):
        return fb.ok(
            "Var(q_i k_i) = sigma^2 sigma^2 = 16, so Var(q . k) = 64 * 16 = 1024 and the scale is "
            "sqrt(1024) = 32 = sigma^2 sqrt(D)."
        )
    if math.isclose(answer, 16.0, rel_tol=1e-6):
        return fb.hint("sigma sqrt(D) = 16 forgets that both factors have variance sigma^2: Var(q_i k_i) = sigma^4.")
    if math.isclose(answer, 8.0, rel_tol=1e-6):
        return fb.hint("sqrt(D) = 8 is the scale for unit-variance components; here each has variance 4.")
    if math.isclose(answer, 1024.0, rel_tol=1e-6):
        return fb.hint("1024 is Var(q . k); dividing by c divides the variance by c^2, so take its square root.")
    if math.isclose(answer, 4.0, rel_tol=1e-6):
        return fb.hint("sigma^2 alone leaves out the D = 64 terms of the sum: Var(q . k) = D Var(q_i k_i).")
    if math.isclose(answer, 1 / 32, rel_tol=1e-6):
        return fb.hint("that is the reciprocal: the scale c is what q . k is divided by, so that Var(q . k / c) = 1.")
    if math.isclose(answer, 256.0, rel_tol=1e-6):
        return fb.hint(
            "D sigma^2 = 256 counts one sigma^2 per term: Var(q_i k_i) = sigma^4; then take the square root."
        )
    if abs(answer - 32.0) < 0.05 * 32:
        return fb.hint(
            "close: that looks measured from samples; compute the scale exactly from Var(q . k) = D sigma^4."
        )
    return fb.hint("Var(q . k) = D Var(q_i k_i) and Var(q_i k_i) = E[q_i^2] E[k_i^2]; the scale is the square root.")
