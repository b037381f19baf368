"""Lagrange interpolation against Nadaraya-Watson: the numbers of notebook 02 (its figures: ``plots.interpolation``).

Both estimate ``y`` at a query ``x`` as ``sum_i w_i(x) y_i``. Lagrange uses the basis
polynomials ``l_i(x)`` as weights: they sum to 1 but can be negative and large. A positive
kernel such as the Gaussian gives a convex combination, so its estimate stays within
``[min y_i, max y_i]``.
"""

from __future__ import annotations

import torch

from ._validate import require_curve, require_lagrange_inputs

__all__ = ["lagrange_basis", "curve_mean_var"]


def lagrange_basis(x: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
    """Lagrange basis polynomials ``l_i(x) = prod_{j != i} (x - x_j) / (x_i - x_j)``.

    Args:
        x: (X,) points where the basis is evaluated.
        nodes: (N,) distinct interpolation nodes ``x_i``.

    Returns:
        (X, N): entry ``[a, i]`` is ``l_i(x[a])``; it is 1 at ``x = x_i`` and 0 at the other nodes,
        and every row sums to 1 (the basis interpolates the constant function 1).
        Interpolation of values ``y`` is ``lagrange_basis(x, nodes) @ y``.
    """
    require_lagrange_inputs(x, nodes)
    n = nodes.shape[0]
    gaps = nodes.unsqueeze(1) - nodes.unsqueeze(0)  # (N, N): x_i - x_j
    off_diag = ~torch.eye(n, dtype=torch.bool, device=nodes.device)  # (N, N)
    factors = (x.unsqueeze(1) - nodes.unsqueeze(0)).unsqueeze(1)  # (X, 1, N): x - x_j
    # (X, N, N): (x - x_j) / (x_i - x_j); the diagonal (j == i) divides by 1, not 0, so no gradient is NaN
    factors = factors / torch.where(off_diag, gaps, torch.ones_like(gaps)).unsqueeze(0)
    factors = torch.where(off_diag, factors, torch.ones_like(factors))  # j == i contributes 1
    return factors.prod(-1)  # (X, N)


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
