"""Checks for the exercises of notebook 06 on positions: the rotation between positions and the sinusoidal encoding.

``nb06`` re-exports them with the checks on heads.
"""

from __future__ import annotations

import math

import torch

from ._feedback import Feedback, _call_learner, _close, _function_answer, _hint, _ok, _tensor_answer, _tensor_problem

__all__ = ["check_rotation", "check_positional_encoding"]


@_tensor_answer((2, 2), "a (2, 2) tensor")
def check_rotation(matrix) -> Feedback:
    """The 2 x 2 matrix that maps ``[sin(i w), cos(i w)]`` to ``[sin((i + 2) w), cos((i + 2) w)]`` for ``w = 0.5``."""
    if not matrix.is_floating_point():
        return _hint(f"rotation entries are cosines and sines: use a floating-point tensor, got {matrix.dtype}.")
    c, s = math.cos(1.0), math.sin(1.0)  # the angle is delta * w = 2 * 0.5
    want = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    if _close(matrix, want):
        return _ok("a rotation by delta * w = 1 radian: the same matrix at every position i.")
    if _close(matrix, want.T):
        return _hint("transposed: that rotation goes from i + 2 back to i.")
    if _close(
        matrix, torch.tensor([[math.cos(2.0), math.sin(2.0)], [-math.sin(2.0), math.cos(2.0)]], dtype=torch.float64)
    ):
        return _hint("the angle is delta * w = 2 * 0.5 = 1, not 2.")
    return _hint("expand sin(a + b) and cos(a + b) with a = i w and b = 2 w, and read off the matrix.")


def _encodings(num_steps: int, num_hiddens: int) -> dict[str, torch.Tensor]:
    """The sinusoidal encoding (T, D) and its typical mistakes, in float64."""
    pos = torch.arange(num_steps, dtype=torch.float64).unsqueeze(1)  # (T, 1)
    pairs = torch.arange(0, num_hiddens, 2, dtype=torch.float64)  # 2j
    cols = torch.arange(num_hiddens, dtype=torch.float64)  # column index

    def interleave(first, second):
        out = torch.empty(num_steps, num_hiddens, dtype=torch.float64)
        out[:, 0::2], out[:, 1::2] = first, second
        return out

    omega = 10000.0 ** (-pairs / num_hiddens)  # (D / 2,)
    return {
        "right": interleave(torch.sin(pos * omega), torch.cos(pos * omega)),
        "swapped": interleave(torch.cos(pos * omega), torch.sin(pos * omega)),
        "from 1": interleave(torch.sin((pos + 1) * omega), torch.cos((pos + 1) * omega)),
        "exponent j": interleave(
            torch.sin(pos * 10000.0 ** (-pairs / 2 / num_hiddens)),
            torch.cos(pos * 10000.0 ** (-pairs / 2 / num_hiddens)),
        ),
        "exponent column": torch.where(
            cols.long() % 2 == 0,
            torch.sin(pos * 10000.0 ** (-2 * cols / num_hiddens)),
            torch.cos(pos * 10000.0 ** (-2 * cols / num_hiddens)),
        ),
        "no minus": interleave(torch.sin(pos / omega), torch.cos(pos / omega)),
        "blocks": torch.cat([torch.sin(pos * omega), torch.cos(pos * omega)], dim=1),
    }


_ENCODING_HINTS = {
    "swapped": "sin and cos are swapped: even columns 2j hold sin(i w_j), odd columns 2j + 1 hold cos(i w_j).",
    "from 1": "positions start at 0: the first row is P[0] = [0, 1, 0, 1, ...] (sin 0, cos 0).",
    "exponent j": "wrong frequency exponent: w_j = 10000^(-2j / D) for the column pair j, so the exponent is 2j / D.",
    "exponent column": "wrong frequency exponent: both columns of a pair share one frequency, w_j = 10000^(-2j / D); "
    "columns 2j and 2j + 1 must not get different ones.",
    "no minus": "the frequencies fall from 1 towards 1/10000: w_j = 10000^(-2j / D), with a minus sign.",
    "blocks": "the columns interleave: sin in the even columns 0, 2, 4, ..., cos in the odd ones, not two blocks.",
}


@_function_answer(
    "your function positional_encoding(num_steps, num_hiddens)",
    "a function positional_encoding(num_steps, num_hiddens)",
)
def check_positional_encoding(positional_encoding) -> Feedback:
    """Build it: ``positional_encoding(num_steps, num_hiddens)`` -> (T, D), compared with ``ac.positional_encoding``."""
    from ..positional import positional_encoding as reference  # the course's own, checked by its unit tests

    for num_steps, num_hiddens in ((7, 8), (50, 16), (12, 6)):
        got, problem = _call_learner(positional_encoding, num_steps, num_hiddens)
        if problem is not None:
            return problem
        if isinstance(got, torch.Tensor) and tuple(got.shape) == (num_hiddens, num_steps):
            return _hint("transposed: one row per position, P has shape (num_steps, num_hiddens).")
        problem = _tensor_problem(got, (num_steps, num_hiddens), "the encoding (num_steps, num_hiddens)")
        if problem is not None:
            return problem
        if not got.is_floating_point():
            return _hint(f"the encoding holds sines and cosines: use a floating-point tensor, got {got.dtype}.")
        want = reference(num_steps, num_hiddens, dtype=torch.float64)
        if _close(got, want, 1e-5):
            continue
        variants = _encodings(num_steps, num_hiddens)
        for mistake, hint in _ENCODING_HINTS.items():
            if _close(got, variants[mistake], 1e-5):
                return _hint(hint)
        return _hint(f"differs from ac.positional_encoding({num_steps}, {num_hiddens}); compare the first rows.")
    return _ok("matches ac.positional_encoding: sin in even columns, cos in odd ones, w_j = 10000^(-2j / D), i from 0.")
