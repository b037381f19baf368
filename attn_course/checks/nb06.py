"""Checks for the exercises of notebook 06 (multi-head attention and positional encoding)."""

from __future__ import annotations

import math
import operator

import torch

from ._feedback import Feedback, _close, _hint, _number, _ok, _tensor_problem

__all__ = ["check_split_shape", "check_parameter_count", "check_rotation"]


def check_split_shape(shape) -> Feedback:
    """The shape of ``split_heads(x, 4)`` for ``x`` of shape (2, 5, 8)."""
    if shape is None:
        return _hint("replace None with the shape, e.g. (1, 2, 3).")
    try:
        if isinstance(shape, str):
            raise TypeError
        got = tuple(operator.index(s) for s in shape)
    except TypeError:
        return _hint(f"expected a shape such as (1, 2, 3): whole numbers in a tuple, got {type(shape).__name__}.")
    if got == (8, 5, 2):
        return _ok("B * H = 2 * 4 = 8 sequences of 5 positions, each head of size 8 / 4 = 2.")
    if got == (2, 4, 5, 2):
        return _hint("that is the shape before the head axis is folded into the batch axis: (B * H, T, dh).")
    if got == (8, 5, 8):
        return _hint("each head sees only its share of the features: dh = 8 / 4.")
    if got == (2, 5, 4, 2):
        return _hint("that is after the first reshape; the heads then move next to the batch and merge with it.")
    return _hint("(B, T, H * dh) -> (B * H, T, dh) with B = 2, T = 5, H = 4.")


def check_parameter_count(answer) -> Feedback:
    """Parameters of ``MultiHeadAttention(num_hiddens=64, num_heads=8)`` (no biases)."""
    value = _number(answer, "the number of parameters")
    if isinstance(value, Feedback):
        return value
    if value == 4 * 64 * 64:
        return _ok("4 matrices of 64 x 64 = 16384, whatever the number of heads: heads split the work, not add to it.")
    if value == 3 * 64 * 64:
        return _hint("W_q, W_k and W_v, yes, but also the output projection W_o.")
    if value == 8 * 4 * 64 * 64:
        return _hint("each head uses a slice of the projections, of size 64 / 8: the heads share the 64 x 64 matrices.")
    if value == 4 * 64 * 64 + 4 * 64:
        return _hint("this layer has no biases (bias=False).")
    return _hint("count the entries of W_q, W_k, W_v and W_o, each num_hiddens x num_hiddens.")


def check_rotation(matrix) -> Feedback:
    """The 2 x 2 matrix that maps ``[sin(i w), cos(i w)]`` to ``[sin((i + 2) w), cos((i + 2) w)]`` for ``w = 0.5``."""
    problem = _tensor_problem(matrix, (2, 2), "a (2, 2) tensor")
    if problem is not None:
        return problem
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
