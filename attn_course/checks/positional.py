"""Checks for the exercises on positions: the rotation between positions, the sinusoidal encoding (notebook 06).

Notebook 06's checks on heads are in ``checks.multihead``.
"""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_rotation", "check_positional_encoding"]


def _rotation(angle: float) -> torch.Tensor:
    """The column-vector rotation of section 3.2: ``R @ [sin a, cos a] = [sin(a + angle), cos(a + angle)]``."""
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, s], [-s, c]], dtype=torch.float64)


@fb.tensor_answer((2, 2), "a (2, 2) tensor")
def check_rotation(matrix) -> Feedback:
    """The 2 x 2 matrix that maps ``[sin(i w), cos(i w)]`` to ``[sin((i + 2) w), cos((i + 2) w)]`` for ``w = 0.5``.

    Both conventions are right: ``M @ v`` with ``v`` a column (section 3.2's equation), and ``v @ M`` with ``v`` a row
    (how the course applies matrices to tokens); the two matrices are each other's transpose. The verdict says which
    one the answer is.
    """
    if not matrix.is_floating_point():
        return fb.hint(f"rotation entries are cosines and sines: use a floating-point tensor, got {matrix.dtype}.")
    problem = fb.not_finite(matrix, "your matrix")
    if problem is not None:
        return problem
    column = _rotation(2 * 0.5)  # the angle is delta * w = 2 * 0.5 = 1 radian
    if fb.close(matrix, column):
        return fb.ok(
            "a rotation by delta * w = 1 radian, the same matrix at every position i, in the column form of "
            "section 3.2: M @ v with v = [sin(i w), cos(i w)] as a column. For a row vector, v @ M.T."
        )
    if fb.close(matrix, column.T):
        return fb.ok(
            "a rotation by delta * w = 1 radian, the same matrix at every position i, in the row form: v @ M with "
            "v = [sin(i w), cos(i w)] as a row, as the course applies matrices to tokens. Section 3.2 writes the "
            "column form, its transpose: M.T @ v."
        )
    for right in (column, column.T):
        problem = fb.rounded(matrix, right)
        if problem is not None:
            return problem
    if fb.close(matrix, _rotation(2.0)) or fb.close(matrix, _rotation(2.0).T):
        return fb.hint("the angle is delta * w = 2 * 0.5 = 1, not 2.")
    if fb.close(matrix, _rotation(0.5)) or fb.close(matrix, _rotation(0.5).T):
        return fb.hint("the angle is delta * w = 2 * 0.5 = 1: that is the rotation by one position, w = 0.5.")
    if fb.close(matrix, torch.eye(2, dtype=torch.float64)):
        return fb.hint(
            "the identity leaves every position where it is; the matrix must move i to i + 2: expand sin(a + b) and "
            "cos(a + b) with a = i w and b = 2 w, and read off the matrix."
        )
    if fb.close(matrix, _rotation(math.radians(1.0))) or fb.close(matrix, _rotation(math.radians(1.0)).T):
        return fb.hint("that is a rotation by 1 degree; the angle delta * w = 1 is in radians (torch.cos(1.0)).")
    return fb.hint(
        "expand sin(a + b) and cos(a + b) with a = i w and b = 2 w, and read off the matrix: M @ v for a column v, "
        "or v @ M for a row v (either is accepted)."
    )


def _encodings(num_steps: int, num_hiddens: int) -> dict[str, torch.Tensor]:
    """The sinusoidal encoding (T, D) and its typical mistakes, in float64."""
    pos = torch.arange(num_steps, dtype=torch.float64).unsqueeze(1)  # (T, 1)
    pairs = torch.arange(0, num_hiddens, 2, dtype=torch.float64)  # 2j
    cols = torch.arange(num_hiddens, dtype=torch.float64)  # column index c

    def interleave(first, second):
        out = torch.empty(num_steps, num_hiddens, dtype=torch.float64)
        out[:, 0::2], out[:, 1::2] = first, second
        return out

    def per_column(exponent):  # each column c its own frequency 10000^(-exponent(c)): sin in even, cos in odd columns
        angles = pos * 10000.0 ** (-exponent(cols))  # (T, D)
        return torch.where(cols.long() % 2 == 0, torch.sin(angles), torch.cos(angles))

    omega = 10000.0 ** (-pairs / num_hiddens)  # (D / 2,)
    return {
        "right": interleave(torch.sin(pos * omega), torch.cos(pos * omega)),
        "swapped": interleave(torch.cos(pos * omega), torch.sin(pos * omega)),
        "from 1": interleave(torch.sin((pos + 1) * omega), torch.cos((pos + 1) * omega)),
        "exponent j": interleave(
            torch.sin(pos * 10000.0 ** (-pairs / 2 / num_hiddens)),
            torch.cos(pos * 10000.0 ** (-pairs / 2 / num_hiddens)),
        ),
        "exponent column": per_column(lambda c: c / num_hiddens),
        "exponent 2 column": per_column(lambda c: 2 * c / num_hiddens),
        "no minus": interleave(torch.sin(pos / omega), torch.cos(pos / omega)),
        "blocks": torch.cat([torch.sin(pos * omega), torch.cos(pos * omega)], dim=1),
    }


_ENCODING_HINTS = {
    "swapped": "sin and cos are swapped: even columns 2j hold sin(i w_j), odd columns 2j + 1 hold cos(i w_j).",
    "from 1": "positions start at 0: the first row is P[0] = [0, 1, 0, 1, ...] (sin 0, cos 0).",
    "exponent j": "wrong frequency exponent: w_j = 10000^(-2j / D) for the column pair j, so the exponent is 2j / D.",
    "exponent column": "the sin columns are right, the cos columns are not: an exponent -c / D with c the column "
    "number gives column 2j + 1 the frequency 10000^(-(2j + 1) / D). Both columns of a pair share one frequency, "
    "w_j = 10000^(-2j / D): compute it from the pair index j, not from the column.",
    "exponent 2 column": "wrong frequency exponent: both columns of a pair share one frequency, w_j = 10000^(-2j / D); "
    "columns 2j and 2j + 1 must not get different ones.",
    "no minus": "the frequencies fall from 1 towards 1/10000: w_j = 10000^(-2j / D), with a minus sign.",
    "blocks": "the columns interleave: sin in the even columns 0, 2, 4, ..., cos in the odd ones, not two blocks.",
}


def _first_difference(got: torch.Tensor, want: torch.Tensor, tol: float) -> str:
    """Where the answer first differs, by column (a frequency) then row: the words of the fallback hint."""
    wrong = (got.double() - want).abs() > tol * (1 + want.abs())  # (T, D)
    column = int(wrong.any(0).nonzero()[0, 0])
    row = int(wrong[:, column].nonzero()[0, 0])
    kind = "sin" if column % 2 == 0 else "cos"
    return (
        f"column {column} ({kind}(i w_{column // 2}), w_{column // 2} = 10000^(-{2 * (column // 2)} / D)) differs "
        f"from row {row} on: there it should be {want[row, column]:.4f}, yours is {float(got[row, column]):.4f}."
    )


@fb.function_answer(
    "your function positional_encoding(num_steps, num_hiddens)",
    "a function positional_encoding(num_steps, num_hiddens)",
)
def check_positional_encoding(positional_encoding) -> Feedback:
    """Build it: ``positional_encoding(num_steps, num_hiddens)`` -> (T, D), compared with ``ac.positional_encoding``."""
    from ..positional import positional_encoding as reference  # the course's own, checked by its unit tests

    for num_steps, num_hiddens in ((7, 8), (50, 16), (12, 6), (9, 10)):
        want = reference(num_steps, num_hiddens, dtype=torch.float64)  # the reference first
        got, problem = fb.call_on_copies(positional_encoding, {"num_steps": num_steps, "num_hiddens": num_hiddens})
        if problem is not None:
            return problem
        if isinstance(got, torch.Tensor) and tuple(got.shape) == (num_hiddens, num_steps) != (num_steps, num_hiddens):
            return fb.hint("transposed: one row per position, P has shape (num_steps, num_hiddens).")
        if isinstance(got, torch.Tensor) and got.dim() == 2 and tuple(got.shape) != (num_steps, num_hiddens):
            return fb.hint(
                f"expected shape {(num_steps, num_hiddens)} for positional_encoding({num_steps}, {num_hiddens}), got "
                f"{tuple(got.shape)}: read the sizes from num_steps and num_hiddens, not numbers written in."
            )
        problem = fb.tensor_problem(got, (num_steps, num_hiddens), "the encoding (num_steps, num_hiddens)")
        if problem is not None:
            return problem
        if not got.is_floating_point():
            return fb.hint(f"the encoding holds sines and cosines: use a floating-point tensor, got {got.dtype}.")
        got = got.detach()
        if fb.close(got, want, 1e-5):
            continue
        if not bool(torch.isfinite(got).all()):
            bad = "NaN" if bool(torch.isnan(got).any()) else "infinity"
            return fb.hint(
                f"positional_encoding({num_steps}, {num_hiddens}) holds {bad}, where every entry is a sine or a cosine "
                "between -1 and 1: look for a log, or a division by zero."
            )
        problem = fb.rounded(got, want)
        if problem is not None:
            return problem
        variants = _encodings(num_steps, num_hiddens)
        for mistake, hint in _ENCODING_HINTS.items():
            if fb.close(got, variants[mistake], 1e-5):
                return fb.hint(hint)
        return fb.hint(
            f"differs from ac.positional_encoding({num_steps}, {num_hiddens}): "
            + _first_difference(got, want, 1e-5)
            + " Row 0 is [0, 1, 0, 1, ...] whatever the frequencies; row 1 is [sin w_0, cos w_0, sin w_1, ...]."
        )
    return fb.ok(
        "matches ac.positional_encoding: sin in even columns, cos in odd ones, w_j = 10000^(-2j / D), i from 0."
    )
