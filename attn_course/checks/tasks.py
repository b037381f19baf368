"""Checks for the exercise on the reversal task: the source position each output step should attend to (notebook 07).

Notebook 07's checks on the attention decoder are in ``checks.seq2seq``.
"""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_alignment_position"]


def _one_position(got) -> float | Feedback | None:
    """``got`` as one number, a hint when it is several numbers (a list, an array, a tensor of more than one entry),
    or None when it is not a number at all (the caller names what it gave)."""
    if isinstance(got, (bool, str)):
        return None
    size = getattr(got, "size", None)
    count = got.numel() if isinstance(got, torch.Tensor) else (size if isinstance(size, int) else None)
    if isinstance(got, (list, tuple)):
        kind = type(got).__name__
        return fb.hint(f"position(t, L) should return one number, the source position of step t, not a {kind}.")
    if count is not None and count != 1:
        return fb.hint(
            f"position(t, L) should return one number, the source position of step t; got a {type(got).__name__} of "
            f"{count} numbers. It is called with one t at a time."
        )
    try:
        return float(got.item() if hasattr(got, "item") else got)
    except (TypeError, ValueError, RuntimeError):
        return None


def _position_mistake(position, t: int, length: int, answer, got: float | None) -> Feedback:
    """The hint for a wrong ``position(t, length)``: ``answer`` as returned, ``got`` as a number (or None)."""
    call = f"position({t}, {length}) gave {answer!r}"
    if answer is None:
        return fb.hint(f"{call}: your function returned None; return the position.")
    if isinstance(answer, (str, bytes)):
        return fb.hint(f"{call}, a {type(answer).__name__}: return a number, not text.")
    if got == length - t:
        return fb.hint("off by one: positions count from 0, so the last digit is at L - 1.")
    if got == t:
        return fb.hint("that is copying (a diagonal); reversing reads the source from its end.")
    if got is not None and got < 0:
        return fb.hint(
            f"{call}: a negative index counts from the end, as in a Python list, but this source ends with <eos> "
            "(position L); give the position counted from 0."
        )
    if got is not None and math.isfinite(got) and _ignores_length(position, t, got):
        return fb.hint(
            f"{call}: your function gives {got + t:g} - t whatever L is, a length written in; use the L argument, "
            "L - 1 - t."
        )
    return fb.hint(f"{call}; step {t} writes digit number {t} from the end.")


def _ignores_length(position, t: int, got: float) -> bool:
    """Whether ``position(s, n)`` is ``got + t - s`` for other lengths n too: a length written in."""
    try:
        return all(float(position(s, n)) == got + t - s for n in (3, 7, 12) for s in range(3))
    except Exception:  # the learner's code: any failure means "no"
        return False


@fb.function_answer("a function position(t, L) that returns a source position", "a function position(t, L)")
def check_alignment_position(position) -> Feedback:
    """``position(t, L)``: the source position that digit step ``t`` should attend to when reversing ``L`` digits.

    The source is ``L`` digits then ``<eos>`` (positions 0 .. L); the output is the ``L`` reversed digits
    (steps 0 .. L - 1) then ``<eos>``. Only the digit steps are checked: no source position holds what the
    ``<eos>`` step needs, so no position is the right one there.
    """
    for length in range(1, 13):
        for t in range(length):
            want = length - 1 - t
            try:
                answer = position(t, length)
            except Exception as exc:  # the learner's code: report what it raised
                return fb.hint(f"position({t}, {length}) raised {type(exc).__name__}: {exc}.")
            got = _one_position(answer)
            if isinstance(got, Feedback):
                return got
            if got is None or not math.isfinite(got) or got != want:
                return _position_mistake(position, t, length, answer, got)
    return fb.ok(
        "L - 1 - t for the digit steps: the anti-diagonal. The <eos> step needs no particular source position: "
        "where a trained model reads there is its own choice."
    )
