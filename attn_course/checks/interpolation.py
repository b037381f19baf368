"""Checks for the exercises on interpolation: Lagrange interpolation vs Nadaraya-Watson (notebook 02)."""

from __future__ import annotations

import math

import torch

from ..data import lagrange_points
from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_lagrange_weight", "check_nearest_neighbour_limit", "check_convex_bound", "check_chebyshev_nodes"]


@fb.number_answer("l_4(3.5) as a number")
def check_lagrange_weight(answer: float) -> Feedback:
    """``l_4(3.5)``: the Lagrange basis polynomial of ``x_4 = 4.2`` (nodes counted from 0), at x = 3.5."""
    nodes = lagrange_points()[0].tolist()

    def basis(i: int, x: float) -> float:
        return math.prod((x - nodes[j]) / (nodes[i] - nodes[j]) for j in range(len(nodes)) if j != i)

    target = basis(4, 3.5)
    if math.isclose(answer, target, rel_tol=1e-4, abs_tol=1e-9):
        return fb.ok(f"l_4(3.5) = {target:.4f}: the weight that the query 3.5 gives to x_4 = 4.2, far above 1.")
    hint = _number_problem(answer, target)
    if hint is not None:
        return hint
    if math.isclose(answer, basis(5, 3.5), rel_tol=1e-4) or math.isclose(answer, basis(3, 3.5), rel_tol=1e-4):
        return fb.hint("off by one: l_4 belongs to x_4 = 4.2, index 4 counting from 0 (the first point is x_0 = 1.1).")
    if math.isclose(answer, 1 / target, rel_tol=1e-4):
        return fb.hint("upside down: the factors are (x - x_j) / (x_4 - x_j), x - x_j on top.")
    if math.isclose(answer, 1.0, rel_tol=1e-9):
        return fb.hint(
            "l_4 is 1 at its own node x_4 = 4.2 (and 0 at the others); evaluate it at the query x = 3.5: "
            "multiply (3.5 - x_j) / (x_4 - x_j) over every j except j = 4."
        )
    return fb.hint("multiply (3.5 - x_j) / (x_4 - x_j) over every j except j = 4 itself.")


def _number_problem(answer: float, right: float) -> Feedback | None:
    """The hint for a NaN or infinite number, or for the right number rounded; else None."""
    if not math.isfinite(answer):
        return fb.not_finite(torch.tensor(answer), "your number")
    return fb.rounded(answer, right)


@fb.number_answer("the limit as a number")
def check_nearest_neighbour_limit(answer: float) -> Feedback:
    """The Gaussian Nadaraya-Watson prediction at x = 6.0 in the limit h -> 0, for the ten data points."""
    x, y = lagrange_points()
    target = float(y[torch.argmin((x - 6.0).abs())])
    if math.isclose(answer, target, abs_tol=1e-6):
        return fb.ok(f"as h -> 0 all weight goes to the nearest key, x = 5.1, so the prediction is its value {target}.")
    if math.isnan(answer):
        return fb.not_finite(torch.tensor(answer), "your number")
    if math.isclose(answer, float(y[8]), abs_tol=1e-6):
        return fb.hint("6.0 is 0.9 from x = 5.1 and 1.1 from x = 7.1: which one is nearest?")
    if math.isclose(answer, float(y.mean()), abs_tol=1e-6):
        return fb.hint("that is the limit h -> infinity (average pooling); for h -> 0 the nearest key wins.")
    nearest = int(torch.argmin((x - 6.0).abs()))
    if math.isclose(answer, float(x[nearest]), abs_tol=1e-6):
        return fb.hint(
            f"x = {float(x[nearest]):g} is the nearest key; the prediction is the value y that goes with it."
        )
    if math.isclose(answer, float(y[6]), abs_tol=1e-6):
        return fb.hint(
            "y_i[6] reads 6.0 as an index (the point x = 4.6); 6.0 is a query position: find the x_i nearest to it."
        )
    if answer == 0:
        return fb.hint(
            "every kernel value tends to 0, but the softmax divides them by their sum: as h -> 0 it puts all weight on "
            "the key with the highest score, the nearest one."
        )
    if min(float(y[nearest]), float(y[8])) < answer < max(float(y[nearest]), float(y[8])):
        return fb.hint(
            "that lies between the values of the two neighbours 5.1 and 7.1, a mix for a moderate h; as h -> 0 the "
            "softmax puts all weight on the key with the highest score, the nearest one."
        )
    return fb.hint("as h -> 0 the softmax puts all weight on the key with the highest score, the nearest one.")


@fb.number_answer("a number")
def check_convex_bound(answer: float) -> Feedback:
    """The largest value a Gaussian Nadaraya-Watson estimate can approach on the ten data points, any x and h."""
    y = lagrange_points()[1]
    if math.isclose(answer, float(y.max()), abs_tol=1e-6):
        return fb.ok(
            "a convex combination of the y_i never exceeds max y_i = 5.6 (it gets close as h -> 0 at x = 5.1)."
        )
    if math.isnan(answer):
        return fb.not_finite(torch.tensor(answer), "your number")
    x = lagrange_points()[0]
    if math.isinf(answer):
        return fb.hint(
            "infinity is Lagrange's story (its weights are unbounded); Nadaraya-Watson's weights are positive and sum "
            "to 1: can a weighted average exceed the largest value?"
        )
    if math.isclose(answer, float(x.max()), abs_tol=1e-6):
        return fb.hint(
            "8.3 is the largest x, a query position; the bound is on the estimate, a weighted average of the y_i."
        )
    if math.isclose(answer, float(y.sum()), abs_tol=1e-6):
        return fb.hint(
            "that is the sum of the y_i; the weights sum to 1, so the estimate is a weighted average of them."
        )
    if math.isclose(answer, 1.0, abs_tol=1e-9):
        return fb.hint("1 is the sum of the weights; the estimate is sum_i w_i y_i, so the bound is one of the y_i.")
    if math.isclose(answer, float(y.mean()), abs_tol=1e-6):
        return fb.hint(
            "the mean is where every estimate tends as h -> infinity; a small h at the right x comes closer to one "
            "y_i: which y_i is largest?"
        )
    if answer > float(y.max()):
        return fb.hint("Gaussian weights are positive and sum to 1: can a weighted average exceed the largest value?")
    return fb.hint("some x and h bring the estimate closer to one of the y_i than this: which y_i is largest?")


def check_chebyshev_nodes(nodes, n: int = 20, a: float = 0.0, b: float = 5.0) -> Feedback:
    """The ``n`` Chebyshev nodes ``(a+b)/2 + (b-a)/2 cos((2k+1) pi / (2n))``, k = 0..n-1, in any order."""
    problem = fb.tensor_problem(nodes, (n,), f"the {n} nodes as a tensor of shape ({n},)")
    if problem is not None:
        return problem
    if not nodes.is_floating_point():
        return fb.hint(f"nodes are fractions: use a floating-point tensor, got {nodes.dtype}.")
    hint = fb.not_finite(nodes, "your nodes")
    if hint is not None:
        return hint
    got = torch.sort(nodes.detach().double()).values
    k = torch.arange(n, dtype=torch.float64)  # counted from 0
    unit = torch.cos((2 * k + 1) * math.pi / (2 * n))  # (n,) on [-1, 1]

    def on_ab(t: torch.Tensor) -> torch.Tensor:
        return torch.sort((a + b) / 2 + (b - a) / 2 * t).values

    if fb.close(got, on_ab(unit)):
        gaps = got[1:] - got[:-1]
        return fb.ok(
            f"the nodes are {float(gaps.min()):.3f} apart near the ends and {float(gaps.max()):.3f} in the middle: "
            "they crowd where evenly spaced interpolation runs away."
        )
    hint = fb.rounded(got, on_ab(unit))
    if hint is not None:
        return hint
    if fb.close(got, torch.sort(unit).values):
        return fb.hint(f"these nodes lie on [-1, 1]: map them to [{a:g}, {b:g}] with (a + b)/2 + (b - a)/2 cos(...).")
    if fb.close(got, torch.linspace(a, b, n, dtype=torch.float64)):
        return fb.hint("these are evenly spaced: Chebyshev nodes are cosines, crowded near the ends.")
    if fb.close(got, on_ab(torch.cos(k * math.pi / (n - 1)))) or fb.close(got, on_ab(torch.cos((k + 1) * math.pi / n))):
        return fb.hint("close: those are the cosine extrema; Chebyshev nodes use the angle (2k + 1) pi / (2n).")
    if fb.close(got, on_ab(torch.cos((2 * k + 1) / (2 * n)))):
        return fb.hint("the angle is (2k + 1) pi / (2n): you left out pi.")
    if fb.close(got, on_ab(torch.cos((2 * k + 3) * math.pi / (2 * n)))):
        return fb.hint(
            "one node too far along: k runs over 0, ..., n - 1 in (2k + 1) pi / (2n) "
            "(or use 2k - 1 with k = 1, ..., n)."
        )
    if fb.close(got, torch.sort((a + b) / 2 + (b - a) * unit).values):
        return fb.hint(
            f"the nodes spread past [{a:g}, {b:g}]: scale the cosines by (b - a)/2 = {(b - a) / 2:g}, not b - a."
        )
    return fb.hint(
        "use x_k = (a + b)/2 + (b - a)/2 cos((2k + 1) pi / (2n)) for k = 0, ..., n - 1, with a = 0, b = 5, n = 20."
    )
