"""Checks for the exercises of notebook 08 (a tiny Transformer)."""

from __future__ import annotations

import math

import torch

from ._feedback import Feedback, _close, _hint, _not_finite, _number_answer, _ok, _rounded, _tensor_answer

__all__ = ["check_layer_norm", "check_ffn_parameters", "check_causal_row"]


@_tensor_answer((4,), "a tensor of 4 numbers")
def check_layer_norm(answer) -> Feedback:
    """Layer normalisation (no learned scale or shift, eps ignored) of x = [1, 2, 3, 6]."""
    x = torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64)
    right = (x - x.mean()) / x.std(correction=0)
    if _close(answer, right, tol=1e-3):
        return _ok("mean 3, variance 3.5: (x - 3) / sqrt(3.5) = [-1.069, -0.535, 0, 1.604].")
    for hint in (_not_finite(answer, "your answer"), _rounded(answer, right)):
        if hint is not None:  # a Feedback is falsy when it is a hint: compare with None
            return hint
    if _close(answer, (x - x.mean()) / x.std(correction=1), tol=1e-3):
        return _hint("layer norm divides by the population variance (divide by n = 4, not n - 1).")
    if _close(answer, x - x.mean(), tol=1e-3):
        return _hint("centred, yes; now divide by the standard deviation.")
    return _hint("subtract the mean of the 4 numbers, then divide by their standard deviation.")


@_number_answer("the number of parameters")
def check_ffn_parameters(answer: float) -> Feedback:
    """Parameters of ``PositionWiseFFN(num_hiddens=32, ffn_hiddens=64)``."""
    want = 32 * 64 + 64 + 64 * 32 + 32
    if not math.isfinite(answer):
        return _hint(f"your count is {answer}; give a whole number of parameters.")
    if answer == want:
        return _ok("32 x 64 + 64 + 64 x 32 + 32 = 4192, the same whatever the sequence length.")
    if answer == 32 * 64 + 64 * 32:
        return _hint("both linear layers have biases too.")
    if answer in (want * 12, want * 13):
        return _hint("the same two layers serve every position: the count does not depend on the length.")
    return _hint("two nn.Linear layers, 32 -> 64 and 64 -> 32, each with a weight matrix and a bias.")


@_tensor_answer((6,), "a bool tensor of 6 entries")
def check_causal_row(answer) -> Feedback:
    """The row of the query at position 3 (from 0) of the causal mask for 6 positions, True = may attend."""
    if answer.dtype != torch.bool:
        return _hint(f"masks are bool tensors (True = may attend), got {answer.dtype}.")
    want = torch.tensor([True, True, True, True, False, False])
    if torch.equal(answer, want):
        return _ok("position 3 sees positions 0, 1, 2 and itself, never the future.")
    if torch.equal(answer, ~want):
        return _hint("polarity: True means may attend.")
    if torch.equal(answer, torch.tensor([True, True, True, False, False, False])):
        return _hint(
            "that row lets position 3 see 0, 1, 2 but not itself, or it is the row of position 2: rows count from 0, "
            "and a position may attend to itself (its own input token is known)."
        )
    if _close(answer.double(), torch.ones(6, dtype=torch.float64)):
        return _hint("that is the encoder's view; the decoder must not see later target tokens.")
    return _hint("positions are numbered from 0; position 3 may see positions 0 to 3, itself included.")
