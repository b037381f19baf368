"""Checks for the exercises on the Transformer: layer norm, the feed-forward network, a causal row (notebook 08)."""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_layer_norm", "check_ffn_parameters", "check_causal_row"]


@fb.tensor_answer((4,), "a tensor of 4 numbers")
def check_layer_norm(answer) -> Feedback:
    """Layer normalisation (no learned scale or shift, eps ignored) of x = [1, 2, 3, 6]."""
    x = torch.tensor([1.0, 2.0, 3.0, 6.0], dtype=torch.float64)
    right = (x - x.mean()) / x.std(correction=0)
    if not (answer.is_floating_point() or answer.is_complex()):
        return fb.hint(
            f"your answer is an integer tensor ({answer.dtype}); layer norm gives fractions: give floats "
            "(leave out .long() and .int())."
        )
    if fb.close(answer, right, tol=1e-3):
        return fb.ok("mean 3, variance 3.5: (x - 3) / sqrt(3.5) = [-1.069, -0.535, 0, 1.604].")
    for hint in (fb.not_finite(answer, "your answer"), fb.rounded(answer, right)):
        if hint is not None:  # a Feedback is falsy when it is a hint: compare with None
            return hint
    if fb.close(answer, (x - x.mean()) / x.std(correction=1), tol=1e-3):
        return fb.hint("layer norm divides by the population variance (divide by n = 4, not n - 1).")
    if fb.close(answer, x - x.mean(), tol=1e-3):
        return fb.hint("centred, yes; now divide by the standard deviation.")
    named = (
        (
            (x - x.mean()) / x.var(correction=0),
            "you divided by the variance 3.5: divide by its square root, the standard deviation (subtract the mean, "
            "then divide by sqrt(3.5)).",
        ),
        (
            x / x.pow(2).mean().sqrt(),
            "that is RMSNorm (x divided by its root mean square, no centring); layer norm first subtracts the mean, "
            "then divides by the standard deviation.",
        ),
        (x, "that is x unchanged: subtract the mean, then divide by the standard deviation."),
        (-right, "the sign is flipped: x - mean, not mean - x; then divide by the standard deviation."),
    )
    for wrong, hint in named:
        if fb.close(answer, wrong, tol=1e-3):
            return fb.hint(hint)
    return fb.hint("subtract the mean of the 4 numbers, then divide by their standard deviation.")


@fb.number_answer("the number of parameters")
def check_ffn_parameters(answer: float) -> Feedback:
    """Parameters of ``PositionWiseFFN(num_hiddens=32, ffn_hiddens=64)``."""
    want = 32 * 64 + 64 + 64 * 32 + 32
    if not math.isfinite(answer):
        return fb.hint(f"your count is {answer}; give a whole number of parameters.")
    if answer == want:
        return fb.ok("32 x 64 + 64 + 64 x 32 + 32 = 4192, the same whatever the sequence length.")
    if answer == 32 * 64 + 64 * 32:
        return fb.hint("both linear layers have biases too.")
    if answer in (want * 12, want * 13):
        return fb.hint("the same two layers serve every position: the count does not depend on the length.")
    if answer in (32 * 64 + 64, 64 * 32 + 32):
        return fb.hint(
            "that is one of the two layers; count both: two nn.Linear layers, 32 -> 64 and 64 -> 32, each with a "
            "weight matrix and a bias."
        )
    if answer in (want - 64, want - 32):
        return fb.hint("one bias is missing: the first layer has 64 biases (one per output), the second 32.")
    if answer in (4 * want, 8 * want):
        return fb.hint("that looks like bytes (4 or 8 per parameter); count the parameters themselves.")
    if answer in (want + 2 * 32, want + 4 * 32):
        return fb.hint(
            "PositionWiseFFN has no LayerNorm: its parameters are the two nn.Linear layers' (the LayerNorm's scale "
            "and shift belong to AddNorm)."
        )
    return fb.hint("two nn.Linear layers, 32 -> 64 and 64 -> 32, each with a weight matrix and a bias.")


@fb.tensor_answer((6,), "a bool tensor of 6 entries")
def check_causal_row(answer) -> Feedback:
    """The row of the query at position 3 (from 0) of the causal mask for 6 positions, True = may attend."""
    if answer.dtype != torch.bool:
        return fb.hint(f"masks are bool tensors (True = may attend), got {answer.dtype}.")
    want = torch.tensor([True, True, True, True, False, False])
    if torch.equal(answer, want):
        return fb.ok("position 3 sees positions 0, 1, 2 and itself, never the future.")
    if torch.equal(answer, ~want):
        return fb.hint("polarity: True means may attend.")
    if torch.equal(answer, torch.tensor([True, True, True, False, False, False])):
        return fb.hint(
            "that row lets position 3 see 0, 1, 2 but not itself, or it is the row of position 2: rows count from 0, "
            "and a position may attend to itself (its own input token is known)."
        )
    if fb.close(answer.double(), torch.ones(6, dtype=torch.float64)):
        return fb.hint("that is the encoder's view; the decoder must not see later target tokens.")
    if torch.equal(answer, torch.ones(6, 6, dtype=torch.bool).triu()[3]):
        return fb.hint(
            "that is row 3 of the transposed mask (triu, the upper triangle): position 3 would see the future and "
            "not the past. The causal mask is the lower triangle, tril."
        )
    if torch.equal(answer, torch.arange(6) <= 4):
        return fb.hint(
            "that is row 4's view (positions 0 to 4): positions are numbered from 0; position 3 may see positions 0 to "
            "3, itself included."
        )
    return fb.hint("positions are numbered from 0; position 3 may see positions 0 to 3, itself included.")
