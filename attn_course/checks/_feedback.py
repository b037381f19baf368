"""The verdict type of the checks, and what every check needs to give hints."""

from __future__ import annotations

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
        return float(answer)
    except (TypeError, ValueError, RuntimeError):
        return _hint(f"expected one number ({what}), got {type(answer).__name__}.")
