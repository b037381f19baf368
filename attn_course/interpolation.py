"""Lagrange interpolation against Nadaraya-Watson: the numbers of notebook 02 (its figures: ``plots.interpolation``).

Both estimate ``y`` at a query ``x`` as ``sum_i w_i(x) y_i``. Lagrange uses the basis
polynomials ``l_i(x)`` as weights: they sum to 1 but can be negative and large. A positive
kernel such as the Gaussian gives a convex combination, so its estimate stays within
``[min y_i, max y_i]``.
"""

from __future__ import annotations

import torch

from ._validate import require_curve

__all__ = ["curve_mean_var"]


def curve_mean_var(x: torch.Tensor, f: torch.Tensor) -> tuple[float, float]:
    """Mean and variance of a curve over ``[x[0], x[-1]]``, by the trapezoidal rule.

    With ``x`` uniform on ``[a, b]``: mean ``= 1/(b-a) int f``, variance ``= 1/(b-a) int (f - mean)^2``. The variance
    says how much the curve wiggles about its own mean; it is not the variance of an estimator over noisy data sets.

    Args:
        x: (N,) increasing grid, N >= 2.
        f: (N,) the curve's values on the grid.
    """
    require_curve(x, f)
    x, f = x.detach(), f.detach()  # two plain numbers come back: no gradient to keep
    length = float(x[-1] - x[0])
    mean = torch.trapezoid(f, x) / length
    # Centred before squaring: the textbook E[f^2] - mean^2 cancels catastrophically for flat curves.
    return float(mean), float(torch.trapezoid((f - mean) ** 2, x)) / length
