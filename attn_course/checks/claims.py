"""Claims about trained results, asserted where the notebook prints them.

A model trained on another processor ends in other last digits: another vendor's matrix products, another vector
width or thread count add the same numbers in another order. So a cell that prints what training or sampling gave
(a loss, an accuracy, a learned weight, generated text) is tagged ``nbval-ignore-output``, and the statement that
its prose relies on is written as a claim beside it::

    claim("attention reaches a test accuracy of 0.95 or more", accuracy >= 0.95, accuracy)

The claim prints ``✓`` and the statement when it holds, and raises :class:`ClaimError` with the measured value when
it does not, so ``make test`` fails where a model stops learning, on any machine.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

__all__ = ["ClaimError", "claim"]


class ClaimError(AssertionError):
    """A notebook's claim about a trained result that this run does not bear out."""


def claim(statement: str, holds, measured) -> None:
    """Print ``✓ statement`` when ``holds`` is true; raise :class:`ClaimError` naming ``measured`` when it is false.

    ``statement``: what the prose says, as a sentence ("the loss falls below 0.1"); ``holds``: a bool (a NumPy
    bool or a one-element bool tensor too), the test of the statement; ``measured``: the value or values it was
    read from, shown when the claim fails.
    """
    holds = _truth(statement, holds)
    if not holds:
        raise ClaimError(f"the notebook claims that {statement}, but this run measured {_shown(measured)}")
    print(f"✓ {statement}")


def _truth(statement, holds) -> bool:
    if not isinstance(statement, str) or not statement.strip():
        raise TypeError(f"claim: statement must be a sentence (a non-empty str), got {statement!r}")
    if isinstance(holds, torch.Tensor):
        if holds.numel() != 1 or holds.dtype != torch.bool:
            raise TypeError(f"claim: holds must be one bool, got a {holds.dtype} tensor of shape {tuple(holds.shape)}")
        return bool(holds)
    if not isinstance(holds, (bool, np.bool_)):
        raise TypeError(f"claim: holds must be a bool (the test of {statement!r}), got {type(holds).__name__}")
    return bool(holds)


def _shown(measured) -> str:
    """Numbers to 4 significant digits, containers element by element, anything else as ``repr``."""
    if isinstance(measured, torch.Tensor):
        measured = measured.tolist()
    if isinstance(measured, np.ndarray):
        measured = measured.tolist()
    if isinstance(measured, bool) or isinstance(measured, np.bool_):
        return str(bool(measured))
    if isinstance(measured, numbers.Real):
        return f"{float(measured):.4g}"
    if isinstance(measured, dict):
        return "{" + ", ".join(f"{key!r}: {_shown(value)}" for key, value in measured.items()) + "}"
    if isinstance(measured, (list, tuple)):
        return "[" + ", ".join(_shown(value) for value in measured) + "]"
    return repr(measured)
