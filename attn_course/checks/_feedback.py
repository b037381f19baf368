"""The verdict type of the checks, and what every check needs to give hints."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = ["Feedback"]


@dataclass(frozen=True)
class Feedback:
    """The verdict of a check: ``passed`` and a one-line ``message``; shows as "Correct: ..." or "Not yet: ..."."""

    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return ("Correct: " if self.passed else "Not yet: ") + self.message


def _ok(message: str) -> Feedback:
    return Feedback(True, message)


def _hint(message: str) -> Feedback:
    return Feedback(False, message)


def _tensor_problem(answer, shape: tuple[int, ...], what: str) -> Feedback | None:
    """A hint when the answer is missing, not a tensor, or of the wrong shape; else None."""
    if answer is None:
        return _hint(f"replace None with {what}.")
    if not isinstance(answer, torch.Tensor):
        return _hint(f"expected a torch.Tensor ({what}), got {type(answer).__name__}.")
    if tuple(answer.shape) != shape:
        return _hint(f"expected shape {tuple(shape)}, got {tuple(answer.shape)}.")
    return None


def _close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-4) -> bool:
    return bool(torch.allclose(a.detach().double(), b.double(), atol=tol, rtol=tol))


def _number(answer, what: str) -> float | Feedback:
    """The answer as a float, or a hint when it is missing or not one number."""
    if answer is None:
        return _hint(f"replace None with {what}.")
    try:
        return float(answer.detach() if isinstance(answer, torch.Tensor) else answer)
    except (TypeError, ValueError, RuntimeError):
        return _hint(f"expected one number ({what}), got {type(answer).__name__}.")


def _function_problem(fn, missing: str, expected: str) -> Feedback | None:
    """A hint when the answer is not yet a function: "replace None with <missing>." or "expected <expected>, got
    <type>."; else None."""
    if fn is None:
        return _hint(f"replace None with {missing}.")
    if not callable(fn):
        return _hint(f"expected {expected}, got {type(fn).__name__}.")
    return None


def _answer_check(problem: Callable[[object], Feedback | None]) -> Callable:
    """Decorate a check: when ``problem(answer)`` gives a hint (a missing answer, a wrong type or shape), the check
    returns it without running; otherwise the check runs on the answer."""

    def decorate(check: Callable[[object], Feedback]) -> Callable[[object], Feedback]:
        @functools.wraps(check)
        def checked(answer) -> Feedback:
            if isinstance(answer, torch.Tensor):
                answer = answer.detach()  # an answer that requires grad is checked for its values alone
            hint = problem(answer)
            return hint if hint is not None else check(answer)

        return checked

    return decorate


def _tensor_answer(shape: tuple[int, ...], what: str) -> Callable:
    """The check runs only on a tensor of ``shape``; otherwise the answer gets ``_tensor_problem``'s hint."""
    return _answer_check(lambda answer: _tensor_problem(answer, shape, what))


def _function_answer(missing: str, expected: str) -> Callable:
    """The check runs only on a function; None or anything else gets ``_function_problem``'s hint."""
    return _answer_check(lambda fn: _function_problem(fn, missing, expected))


def _number_answer(what: str) -> Callable:
    """The check runs on the answer turned into a float; None or anything else gets ``_number``'s hint."""

    def decorate(check: Callable[[float], Feedback]) -> Callable[[object], Feedback]:
        @functools.wraps(check)
        def checked(answer) -> Feedback:
            value = _number(answer, what)
            return value if isinstance(value, Feedback) else check(value)

        return checked

    return decorate


def _call_learner(fn, *args):
    """``fn(*args)`` and None, or None and a hint naming the exception that the learner's code raised."""
    try:
        return fn(*args), None
    except Exception as error:  # the learner's code: report what went wrong
        return None, _hint(f"your function raised {type(error).__name__}: {str(error).rstrip('.')}.")
