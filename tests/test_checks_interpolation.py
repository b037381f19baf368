"""attn_course.checks.interpolation, the checks of notebook 02 (Lagrange interpolation and Nadaraya-Watson):
"Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import (
    lagrange_basis,
    nadaraya_watson,
)
from attn_course.checks import (
    check_chebyshev_nodes,
    check_convex_bound,
    check_lagrange_weight,
    check_nearest_neighbour_limit,
)
from attn_course.data import lagrange_points

# ----------------------------------------------------------------------------------------------
# check_lagrange_weight: l_4(3.5) for the ten points of notebook 02 (nodes counted from 0)
# ----------------------------------------------------------------------------------------------

X_POINTS = [1.1, 1.5, 2.0, 3.1, 4.2, 4.3, 4.6, 5.1, 7.1, 8.3]
Y_POINTS = [2.4, 3.0, 1.1, 4.5, 3.6, 2.2, 1.0, 5.6, 3.7, 0.2]


def _basis(i, x):
    """l_i(x) with 0-based i, by a plain Python product over the other nodes."""
    value = 1.0
    for j, xj in enumerate(X_POINTS):
        if j != i:
            value *= (x - xj) / (X_POINTS[i] - xj)
    return value


L5 = _basis(4, 3.5)  # x_4 = 4.2, the fifth point


def test_the_ten_points_are_those_of_the_data_module():
    x, y = lagrange_points()
    assert x.tolist() == X_POINTS and y.tolist() == Y_POINTS
    assert L5 == pytest.approx(8.0819, abs=1e-4)  # large: Lagrange weights are not bounded by 1


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(L5, id="float"),
        pytest.param(torch.tensor(L5, dtype=torch.float64), id="tensor"),
        pytest.param(np.float64(L5), id="numpy"),
        pytest.param(
            lagrange_basis(torch.tensor([3.5], dtype=torch.float64), lagrange_points()[0])[0, 4], id="lagrange_basis"
        ),
    ],
)
def test_check_lagrange_weight_right_answer(answer):
    assert_correct(check_lagrange_weight(answer), "8.0819", "x_4 = 4.2")


def _float32_loop():
    nodes = torch.tensor(X_POINTS)  # float32, torch's default
    value = torch.tensor(1.0)
    for j in range(10):
        if j != 4:
            value = value * (3.5 - nodes[j]) / (nodes[4] - nodes[j])
    return value


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_float32_loop(), id="loop"),
        pytest.param(lagrange_basis(torch.tensor([3.5]), lagrange_points(torch.float32)[0])[0, 4], id="lagrange_basis"),
    ],
)
def test_check_lagrange_weight_accepts_a_float32_computation(answer):
    """A right computation in float32 (torch.tensor's default) is right, as in check_nw_weights."""
    assert answer.dtype == torch.float32
    assert abs(float(answer) - L5) < 1e-4 * L5  # right to float32 rounding, which 4.2 - 4.3 amplifies
    assert_correct(check_lagrange_weight(answer))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "l_4(3.5)"], id="none"),
        pytest.param("eight", ["one number", "str"], id="str"),
        pytest.param([L5, L5], ["one number", "list"], id="list"),
        pytest.param(torch.tensor([L5, L5]), ["one number", "Tensor"], id="tensor-2"),
        pytest.param(_basis(3, 3.5), ["off by one", "x_4 = 4.2", "index 4"], id="l_4"),
        pytest.param(_basis(5, 3.5), ["off by one", "x_4 = 4.2", "index 4"], id="l_6"),
        pytest.param(1 / L5, ["upside down", "x - x_j on top"], id="reciprocal"),
        pytest.param(-L5, ["multiply (3.5 - x_j) / (x_4 - x_j)"], id="sign"),
        pytest.param(8.0, ["multiply (3.5 - x_j) / (x_4 - x_j)"], id="rounded-to-units"),
        pytest.param(8.08, ["close", "decimals"], id="rounded-to-2-decimals"),
        pytest.param(8.1, ["close", "rounded to 1 decimal"], id="rounded-to-1-decimal"),
        pytest.param(math.nan, ["NaN"], id="nan"),
        pytest.param(math.inf, ["infinity"], id="inf"),
        pytest.param(1.0, ["multiply (3.5 - x_j) / (x_4 - x_j)"], id="one"),
    ],
)
def test_check_lagrange_weight_hints(answer, words):
    assert_hint(check_lagrange_weight(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_nearest_neighbour_limit: h -> 0 at x = 6.0 gives the value of the nearest point, x = 5.1
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [5.6, torch.tensor(5.6), torch.tensor(5.6, dtype=torch.float64), np.float64(5.6)])
def test_check_nearest_neighbour_limit_right_answer(answer):
    assert_correct(check_nearest_neighbour_limit(answer), "x = 5.1", "5.6")


def test_check_nearest_neighbour_limit_agrees_with_a_tiny_bandwidth():
    x, y = lagrange_points()
    pred, _ = nadaraya_watson(torch.tensor([6.0], dtype=torch.float64), x, y, "gaussian", 1e-3)
    assert_correct(check_nearest_neighbour_limit(pred[0]))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param("5.6 or so", ["one number", "str"], id="str"),
        pytest.param([5.6], ["one number", "list"], id="list"),
        pytest.param(3.7, ["0.9 from x = 5.1", "1.1 from x = 7.1", "nearest"], id="next-nearest"),
        pytest.param(sum(Y_POINTS) / 10, ["h -> infinity", "average pooling"], id="mean"),
        pytest.param(torch.tensor(Y_POINTS).mean(), ["h -> infinity", "average pooling"], id="mean-float32"),
        pytest.param(4.65, ["all weight on the key", "nearest"], id="between"),
        pytest.param(0.0, ["all weight on the key", "nearest"], id="zero"),
        pytest.param(math.nan, ["NaN"], id="nan"),
    ],
)
def test_check_nearest_neighbour_limit_hints(answer, words):
    assert_hint(check_nearest_neighbour_limit(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_convex_bound: a convex combination of the y_i stays below max y_i = 5.6
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [5.6, max(Y_POINTS), torch.tensor(Y_POINTS).max(), np.float64(5.6)])
def test_check_convex_bound_right_answer(answer):
    assert_correct(check_convex_bound(answer), "5.6", "convex combination")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param("max", ["one number", "str"], id="str"),
        pytest.param(np.array(Y_POINTS), ["one number", "ndarray"], id="numpy-array"),
        pytest.param(11.78, ["positive and sum to 1", "exceed the largest value"], id="lagrange-value"),
        pytest.param(float("inf"), ["exceed the largest value"], id="inf"),
        pytest.param(5.61, ["exceed the largest value"], id="just-above"),
        pytest.param(5.59, ["which y_i is largest"], id="just-below"),
        pytest.param(3.7, ["which y_i is largest"], id="second-largest"),
        pytest.param(sum(Y_POINTS) / 10, ["which y_i is largest"], id="mean"),
        pytest.param(math.nan, ["NaN"], id="nan"),
    ],
)
def test_check_convex_bound_hints(answer, words):
    assert_hint(check_convex_bound(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_chebyshev_nodes: 20 Chebyshev nodes on [0, 5], counted from 0
# ----------------------------------------------------------------------------------------------

_K20 = list(range(20))
CHEBYSHEV_20 = [2.5 + 2.5 * math.cos((2 * k + 1) * math.pi / 40) for k in _K20]


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(torch.tensor(CHEBYSHEV_20, dtype=torch.float64), id="float64"),
        pytest.param(torch.tensor(CHEBYSHEV_20[::-1]), id="float32-reversed"),
        pytest.param(2.5 + 2.5 * torch.cos((2 * torch.arange(1, 21) - 1) * torch.pi / 40), id="counted-from-1"),
    ],
)
def test_check_chebyshev_nodes_right_answer(answer):
    feedback = check_chebyshev_nodes(answer)
    assert_correct(feedback)
    gaps = np.diff(sorted(CHEBYSHEV_20))
    assert f"{gaps.min():.3f} apart near the ends" in repr(feedback) and f"{gaps.max():.3f} in the middle" in repr(
        feedback
    )


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "(20,)"], id="none"),
        pytest.param(CHEBYSHEV_20, ["torch.Tensor", "list"], id="list"),
        pytest.param(torch.tensor(CHEBYSHEV_20[:10]), ["expected shape (20,)", "got (10,)"], id="short"),
        pytest.param(torch.arange(20), ["floating-point", "torch.int64"], id="integer"),
        pytest.param(
            torch.tensor([(v - 2.5) / 2.5 for v in CHEBYSHEV_20]), ["[-1, 1]", "map them to [0, 5]"], id="unit-interval"
        ),
        pytest.param(torch.linspace(0, 5, 20), ["evenly spaced"], id="even"),
        pytest.param(
            torch.tensor([2.5 + 2.5 * math.cos(k * math.pi / 19) for k in _K20]),
            ["extrema", "(2k + 1) pi / (2n)"],
            id="extrema",
        ),
        pytest.param(
            torch.tensor([2.5 + 2.5 * math.cos((k + 1) * math.pi / 20) for k in _K20]), ["extrema"], id="extrema-2"
        ),
        pytest.param(torch.tensor([2.5 + 2.5 * math.cos((2 * k + 1) / 40) for k in _K20]), ["left out pi"], id="no-pi"),
        pytest.param(
            torch.tensor([2.5 + 2.5 * math.cos((2 * k + 1) * math.pi / 20) for k in _K20]),
            ["x_k = (a + b)/2"],
            id="other",
        ),
        pytest.param(torch.tensor(CHEBYSHEV_20).round(decimals=3), ["close", "decimals"], id="rounded-to-3-decimals"),
        pytest.param(torch.tensor(CHEBYSHEV_20).round(decimals=2), ["close", "decimals"], id="rounded-to-2-decimals"),
        pytest.param(torch.tensor([math.nan] + CHEBYSHEV_20[1:]), ["NaN"], id="nan"),
    ],
)
def test_check_chebyshev_nodes_hints(answer, words):
    assert_hint(check_chebyshev_nodes(answer), *words)


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words of its cause
# ----------------------------------------------------------------------------------------------

_CHEB = torch.tensor(CHEBYSHEV_20, dtype=torch.float64)

ATTACKS = {
    "check_lagrange_weight": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "8.08"),
        attack("a list", "list", [L5]),
        attack(
            "all ten basis values at 3.5",
            "one number",
            lagrange_basis(torch.tensor([3.5], dtype=torch.float64), lagrange_points()[0])[0],
        ),
        attack("rounded to 2 decimals", "rounded", round(L5, 2)),
        attack("nodes counted from 1: x_4 = 3.1", "off by one", _basis(3, 3.5)),
        attack("the next node, x_5 = 4.3", "off by one", _basis(5, 3.5)),
        attack("factors upside down", "upside down", 1 / L5),
        attack("evaluated at its own node 4.2", "own node", _basis(4, 4.2)),
        attack("j = 4 kept in the product: 0 / 0", "NaN", math.nan),
        attack("a zero denominator: infinity", "infinity", math.inf),
    ],
    "check_nearest_neighbour_limit": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "5.6"),
        attack("a list", "list", [5.6]),
        attack("the farther neighbour x = 7.1", "nearest", 3.7),
        attack("the mean (h -> infinity)", "h -> infinity", float(torch.tensor(Y_POINTS).mean())),
        attack("the key x = 5.1, not its value", "key", 5.1),
        attack("a mix of the two neighbours", "between", 5.6 + (3.7 - 5.6) * 0.45),
        attack("y_i[6]: 6.0 read as an index", "index", 1.0),
        attack("every kernel value tends to 0", "divides", 0.0),
        attack("NaN from exp underflow: 0 / 0", "NaN", math.nan),
    ],
    "check_convex_bound": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "5.6"),
        attack("a bool", "bool", True),
        attack("a list", "list", [5.6]),
        attack("unbounded, like Lagrange", "infinity", math.inf),
        attack("the mean of the y_i", "mean", float(torch.tensor(Y_POINTS).mean())),
        attack("the largest x, not y", "largest x", 8.3),
        attack("the weights' sum, 1", "sum of the weights", 1.0),
        attack("the sum of the y_i", "sum of the y_i", sum(Y_POINTS)),
        attack("the second largest y", "largest", 4.5),
        attack("NaN", "NaN", math.nan),
    ],
    "check_chebyshev_nodes": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", CHEBYSHEV_20),
        attack("a NumPy array", "ndarray", np.array(CHEBYSHEV_20)),
        attack("evenly spaced", "evenly spaced", torch.linspace(0, 5, 20)),
        attack("left on [-1, 1]", "[-1, 1]", (_CHEB - 2.5) / 2.5),
        attack("the cosine extrema", "extrema", 2.5 + 2.5 * torch.cos(torch.arange(20) * torch.pi / 19)),
        attack("pi left out", "left out pi", 2.5 + 2.5 * torch.cos((2 * torch.arange(20) + 1) / 40)),
        attack("rounded to 2 decimals", "rounded", _CHEB.round(decimals=2)),
        attack("n = 10 written in", "(20,)", torch.tensor(CHEBYSHEV_20[::2])),
        attack("an integer tensor", "floating-point", torch.arange(20)),
        attack("float16", "float16", _CHEB.half()),
        attack("a (20, 1) column", "got (20, 1)", _CHEB.unsqueeze(1)),
        attack(
            "k from 1 to n", "one node too far", 2.5 + 2.5 * torch.cos((2 * torch.arange(1, 21) + 1) * torch.pi / 40)
        ),
        attack("b - a not halved", "spread past", 2.5 + 5 * torch.cos((2 * torch.arange(20) + 1) * torch.pi / 40)),
    ],
}
