"""Checks for the exercises of notebook 07 (attention in seq2seq)."""

from __future__ import annotations

import torch

from ._feedback import Feedback, _close, _hint, _number, _ok, _tensor_problem

__all__ = ["check_alignment_position", "check_context", "check_memory_size"]


def check_alignment_position(position) -> Feedback:
    """``position(t, L)``: the source position that output step ``t`` should attend to when reversing ``L`` digits.

    The source is ``L`` digits then ``<eos>`` (positions 0 .. L); the output is the ``L`` reversed digits then
    ``<eos>`` (steps 0 .. L).
    """
    if position is None:
        return _hint("replace None with a function position(t, L) that returns a source position.")
    if not callable(position):
        return _hint(f"expected a function position(t, L), got {type(position).__name__}.")
    for length in range(1, 13):
        for t in range(length + 1):
            want = length - 1 - t if t < length else length
            try:
                got = position(t, length)
            except Exception as exc:  # the learner's code: report what it raised
                return _hint(f"position({t}, {length}) raised {type(exc).__name__}: {exc}.")
            if got != want:
                if t == length:
                    return _hint(f"the last step writes <eos>: which source position holds <eos> when L = {length}?")
                if got == length - t:
                    return _hint("off by one: positions count from 0, so the last digit is at L - 1.")
                if got == t:
                    return _hint("that is copying (a diagonal); reversing reads the source from its end.")
                return _hint(f"position({t}, {length}) gave {got!r}; step {t} writes digit number {t} from the end.")
    return _ok("L - 1 - t for the digits, and L for <eos>: the anti-diagonal, then the bottom-right corner.")


def check_context(context) -> Feedback:
    """The context for weights [0.1, 0.7, 0.2] over encoder states [[1, 0], [0, 2], [4, 4]]."""
    problem = _tensor_problem(context, (2,), "a tensor of 2 numbers")
    if problem is not None:
        return problem
    states = torch.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]], dtype=torch.float64)
    weights = torch.tensor([0.1, 0.7, 0.2], dtype=torch.float64)
    if _close(context, weights @ states):
        return _ok("0.1 * h_0 + 0.7 * h_1 + 0.2 * h_2 = [0.9, 2.2]: a weighted average of the encoder states.")
    if _close(context, states.sum(0) / 3):
        return _hint("that is the plain average; weight each state by its attention weight.")
    return _hint("sum weight_j * h_j over the three positions, one coordinate at a time.")


def check_memory_size(answer) -> Feedback:
    """How many numbers the attention decoder can read about a 12-digit source, with U = 64 hidden units."""
    value = _number(answer, "a count of numbers")
    if isinstance(value, Feedback):
        return value
    if value == 13 * 64:
        return _ok("13 states (12 digits and <eos>) of 64 numbers: 832, against 64 for the decoder without attention.")
    if value == 12 * 64:
        return _hint("the encoder also reads <eos>, so the source has 13 positions.")
    if value == 64:
        return _hint(
            "64 is what the decoder without attention gets; with attention every encoder state stays reachable."
        )
    return _hint("count the encoder states (one per source position, <eos> included) times their size U.")
