"""Sinusoidal positional encoding (notebook 06).

Self-attention treats its inputs as a set; adding ``P[i]`` to the token at position ``i`` tells
positions apart. Column pair ``(2j, 2j + 1)`` holds ``sin(i w_j)`` and ``cos(i w_j)`` with the
frequency ``w_j = 1 / base^(2j / num_hiddens)``: fast waves in the first columns, slow ones last.
"""

from __future__ import annotations

import math

import torch

from ._validate.args import require_frequency_args, require_rotation_args, require_steps_and_dtype

__all__ = ["positional_encoding", "frequencies", "rotation_matrix"]


def frequencies(num_hiddens: int, base: float = 10000.0, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The angular frequencies ``w_j = base^(-2j / num_hiddens)`` of the column pairs.

    Returns:
        (ceil(num_hiddens / 2),) one frequency per column pair, from 1 down towards ``1 / base``.
    """
    require_frequency_args(num_hiddens, base, dtype)
    j = torch.arange(0, num_hiddens, 2, dtype=dtype)  # 2j = 0, 2, 4, ...
    return base ** (-j / num_hiddens)


def positional_encoding(
    num_steps: int, num_hiddens: int, base: float = 10000.0, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The sinusoidal encoding ``P`` of positions ``0 .. num_steps - 1``.

    ``P[i, 2j] = sin(i w_j)`` and ``P[i, 2j + 1] = cos(i w_j)`` with ``w_j = base^(-2j / num_hiddens)``.

    Args:
        num_steps: number of positions T.
        num_hiddens: size of each encoding (the model size D); may be odd (the last column is then a sine).
        base: the wavelength scale (10000 in the Transformer paper).
        dtype: floating dtype of the result (computed in float64, then converted).

    Returns:
        (T, D) tensor with entries in [-1, 1].
    """
    require_steps_and_dtype(num_steps, dtype)
    omega = frequencies(num_hiddens, base)  # (ceil(D / 2),)
    angles = torch.arange(num_steps, dtype=torch.float64).unsqueeze(1) * omega  # (T, 1) * (D/2,) -> (T, D/2)
    encoding = torch.zeros(num_steps, num_hiddens, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angles)  # even columns
    encoding[:, 1::2] = torch.cos(angles[:, : num_hiddens // 2])  # odd columns
    return encoding.to(dtype)


def rotation_matrix(delta: float, omega: float, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """The 2 x 2 matrix that moves a column pair ``(sin(i w), cos(i w))`` to position ``i + delta``.

    ``[[cos(d w), sin(d w)], [-sin(d w), cos(d w)]] @ [sin(i w), cos(i w)] = [sin((i + d) w), cos((i + d) w)]``
    for every ``i``: it depends on the offset ``delta`` and the frequency only, not on the position.
    """
    angle = require_rotation_args(delta, omega, dtype)  # 0-d tensors too
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, s], [-s, c]], dtype=dtype)
