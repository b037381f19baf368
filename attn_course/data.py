"""Data of the course, made in code (nothing is downloaded).

* ``toy_regression``: the seeded 1-D regression set of notebook 01.
* ``lagrange_points``: the ten data points of notebook 02 (from the seed on Lagrange interpolation);
  ``noisy_samples``: evenly spaced noisy samples for its noise experiment.
* ``three_token_example``: the worked self-attention example of notebook 04.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ._validate import require_float_dtype
from ._validate.args import require_curve_input, require_regression_args, require_samples_args

__all__ = [
    "true_function",
    "RegressionData",
    "toy_regression",
    "noisy_samples",
    "lagrange_points",
    "ThreeTokenExample",
    "three_token_example",
]


def true_function(x: torch.Tensor) -> torch.Tensor:
    """The curve behind the toy data: ``y = 2 sin(x) + x^0.8`` (for x >= 0)."""
    require_curve_input(x)
    return 2 * torch.sin(x) + x**0.8


class RegressionData(NamedTuple):
    """Training pairs (keys, values), test inputs (queries) and the noise-free truth there."""

    x_train: torch.Tensor  # (n_train,) sorted
    y_train: torch.Tensor  # (n_train,)
    x_test: torch.Tensor  # (n_test,)
    y_test: torch.Tensor  # (n_test,) true_function(x_test), no noise


def toy_regression(
    n_train: int = 50,
    noise: float = 0.5,
    x_max: float = 5.0,
    step: float = 0.1,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> RegressionData:
    """Noisy samples of ``true_function`` at ``n_train`` sorted random x in [0, x_max).

    Args:
        n_train: number of training points (keys and values).
        noise: standard deviation of the Gaussian noise added to the training targets.
        x_max: the inputs lie in [0, x_max).
        step: spacing of the test inputs ``0, step, 2 step, ... < x_max``.
        seed: seed of a private ``torch.Generator``: the same arguments give the same data.
        dtype: floating dtype of every returned tensor.
    """
    x_max, step = require_regression_args(n_train, noise, x_max, step, seed, dtype)
    gen = torch.Generator().manual_seed(seed)
    x_train, _ = torch.sort(torch.rand(n_train, generator=gen, dtype=torch.float64) * x_max)
    y_train = true_function(x_train) + noise * torch.randn(n_train, generator=gen, dtype=torch.float64)
    x_test = torch.arange(0, x_max, step, dtype=torch.float64)
    return RegressionData(*(t.to(dtype) for t in (x_train, y_train, x_test, true_function(x_test))))


def noisy_samples(
    n: int = 10,
    noise: float = 0.3,
    x_min: float = 0.0,
    x_max: float = 5.0,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` evenly spaced x in [x_min, x_max] and ``true_function(x)`` plus Gaussian noise.

    Evenly spaced nodes are where polynomial interpolation oscillates most (Runge's phenomenon).
    """
    require_samples_args(n, noise, x_min, x_max, dtype)
    gen = torch.Generator().manual_seed(seed)
    x = torch.linspace(x_min, x_max, n, dtype=torch.float64)
    y = true_function(x) + noise * torch.randn(n, generator=gen, dtype=torch.float64)
    return x.to(dtype), y.to(dtype)


def lagrange_points(dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """The ten points ``(x_i, y_i)`` of the Lagrange-interpolation seed; x is sorted."""
    require_float_dtype(dtype)
    x = torch.tensor([1.1, 1.5, 2.0, 3.1, 4.2, 4.3, 4.6, 5.1, 7.1, 8.3], dtype=dtype)
    y = torch.tensor([2.4, 3.0, 1.1, 4.5, 3.6, 2.2, 1.0, 5.6, 3.7, 0.2], dtype=dtype)
    return x, y


class ThreeTokenExample(NamedTuple):
    """Three 4-d input tokens (rows) and the 4x3 projection matrices of the worked example."""

    inputs: torch.Tensor  # (3, 4)
    w_query: torch.Tensor  # (4, 3)
    w_key: torch.Tensor  # (4, 3)
    w_value: torch.Tensor  # (4, 3)


def three_token_example(dtype: torch.dtype = torch.float32) -> ThreeTokenExample:
    """The worked self-attention example: ``Q = inputs @ w_query``, likewise K and V."""
    require_float_dtype(dtype)

    def t(rows):
        return torch.tensor(rows, dtype=dtype)

    return ThreeTokenExample(
        inputs=t([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]),
        w_query=t([[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]),
        w_key=t([[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]),
        w_value=t([[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]),
    )
