"""attn_course.pooling: the kernel functions and Nadaraya-Watson pooling."""

import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from attn_course import KERNELS, boxcar, constant, epanechnikov, gaussian, nadaraya_watson

SQRT_2PI = math.sqrt(2 * math.pi)
COMPACT = ["boxcar", "epanechnikov"]


# ----------------------------------------------------------------------------------------------
# Kernel functions
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kernel, u, expected",
    [
        (
            gaussian,
            [0.0, 1.0, -1.0, 2.0],
            [1 / SQRT_2PI, math.exp(-0.5) / SQRT_2PI, math.exp(-0.5) / SQRT_2PI, math.exp(-2.0) / SQRT_2PI],
        ),
        (boxcar, [-1.5, -1.0, -0.3, 0.0, 1.0, 1.0001], [0.0, 0.5, 0.5, 0.5, 0.5, 0.0]),
        (epanechnikov, [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0], [0.0, 0.0, 0.5625, 0.75, 0.5625, 0.0, 0.0]),
        (constant, [-100.0, 0.0, 3.0], [1.0, 1.0, 1.0]),
    ],
    ids=["gaussian", "boxcar", "epanechnikov", "constant"],
)
def test_kernel_hand_values(kernel, u, expected):
    got = kernel(torch.tensor(u, dtype=torch.float64))
    assert_close(got, torch.tensor(expected, dtype=torch.float64))


def test_kernels_registry_maps_names_to_the_functions():
    assert KERNELS == {"gaussian": gaussian, "boxcar": boxcar, "epanechnikov": epanechnikov, "constant": constant}


@pytest.mark.parametrize("name", ["gaussian", "boxcar", "epanechnikov"])
def test_density_kernels_integrate_to_one(name):
    u = torch.linspace(-8, 8, 160_001, dtype=torch.float64)
    assert abs(float(torch.trapezoid(KERNELS[name](u), u)) - 1) < 1e-3


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernels_are_symmetric_nonnegative_keep_dtype_and_input(name, dtype, call_unmodified):
    u = torch.linspace(-3, 3, 61, dtype=dtype)
    k = call_unmodified(KERNELS[name], u)
    assert k.dtype == dtype and k.shape == u.shape
    assert (k >= 0).all()
    assert torch.equal(k, KERNELS[name](-u))


# ----------------------------------------------------------------------------------------------
# Nadaraya-Watson: hand-computed cases and agreement with PyTorch
# ----------------------------------------------------------------------------------------------


def test_nw_hand_computed_gaussian_case():
    # query 2 over keys 1, 2, 4 with h = 1: scores -(q - k)^2 / 2 = -0.5, 0, -2
    e = [math.exp(-0.5), math.exp(0.0), math.exp(-2.0)]
    w = [x / sum(e) for x in e]
    values = [10.0, 20.0, 40.0]
    pred, weights = nadaraya_watson(
        torch.tensor([2.0], dtype=torch.float64),
        torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64),
        torch.tensor(values, dtype=torch.float64),
    )
    assert_close(weights, torch.tensor([w], dtype=torch.float64))
    assert_close(pred, torch.tensor([sum(a * b for a, b in zip(w, values, strict=True))], dtype=torch.float64))


def test_nw_hand_computed_boxcar_case():
    # query 0 with h = 1.5: keys -1 and 1 inside the support, 2 outside -> the mean of their values
    pred, weights = nadaraya_watson(
        torch.tensor([0.0]), torch.tensor([-1.0, 1.0, 2.0]), torch.tensor([3.0, 5.0, 100.0]), "boxcar", 1.5
    )
    assert_close(weights, torch.tensor([[0.5, 0.5, 0.0]]))
    assert_close(pred, torch.tensor([4.0]))


@pytest.mark.parametrize("bandwidth", [0.3, 1.0, 2.5])
def test_nw_gaussian_matches_torch_softmax(bandwidth, dtype, gen):
    queries = torch.rand(7, generator=gen, dtype=dtype) * 5
    keys = torch.rand(9, generator=gen, dtype=dtype) * 5
    values = torch.randn(9, generator=gen, dtype=dtype)
    pred, weights = nadaraya_watson(queries, keys, values, "gaussian", bandwidth)
    expected = torch.softmax(-((queries[:, None] - keys[None, :]) ** 2) / (2 * bandwidth**2), dim=1)
    assert_close(weights, expected)
    assert_close(pred, expected @ values)


def _uniform_grid_data(gen, dtype):
    """Keys every 0.5 on [0, 5] and queries in [0, 5]: every query is within 0.25 of a key."""
    keys = torch.linspace(0, 5, 11, dtype=dtype)
    queries = torch.rand(13, generator=gen, dtype=dtype) * 5
    values = torch.randn(11, 2, generator=gen, dtype=dtype)
    return queries, keys, values


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_nw_matches_normalised_public_kernel(name, dtype, gen):
    queries, keys, values = _uniform_grid_data(gen, dtype)
    bandwidth = 0.8  # > 0.25: each query has a key inside every kernel's support
    pred, weights = nadaraya_watson(queries, keys, values, name, bandwidth)
    k = KERNELS[name]((queries[:, None] - keys[None, :]).abs() / bandwidth)  # (Q, K)
    expected = k / k.sum(1, keepdim=True)
    assert_close(weights, expected)
    assert_close(pred, expected @ values)
    assert pred.shape == (13, 2)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_nw_kernel_function_argument_equals_kernel_name(name, gen):
    queries, keys, values = _uniform_grid_data(gen, torch.float64)
    by_name = nadaraya_watson(queries, keys, values, name, 0.8)
    by_function = nadaraya_watson(queries, keys, values, KERNELS[name], 0.8)
    assert_close(by_function[1], by_name[1])
    assert_close(by_function[0], by_name[0])


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_nw_vector_queries_use_euclidean_distance(name, dtype, gen):
    grid = torch.arange(5, dtype=dtype)
    keys = torch.cartesian_prod(grid, grid)  # (25, 2), neighbours 1 apart
    queries = torch.rand(6, 2, generator=gen, dtype=dtype) * 4  # within sqrt(0.5) of a key
    values = torch.randn(25, 3, generator=gen, dtype=dtype)
    bandwidth = 1.0
    pred, weights = nadaraya_watson(queries, keys, values, name, bandwidth)
    k = KERNELS[name](torch.cdist(queries, keys) / bandwidth)
    expected = k / k.sum(1, keepdim=True)
    assert_close(weights, expected)
    assert_close(pred, expected @ values)


def test_nw_vector_gaussian_matches_softmax_of_cdist(dtype, gen):
    queries = torch.randn(4, 3, generator=gen, dtype=dtype)
    keys = torch.randn(6, 3, generator=gen, dtype=dtype)
    values = torch.randn(6, generator=gen, dtype=dtype)
    _, weights = nadaraya_watson(queries, keys, values, "gaussian", 0.9)
    assert_close(weights, torch.softmax(-(torch.cdist(queries, keys) ** 2) / (2 * 0.9**2), dim=1))


def test_nw_huge_bandwidth_is_average_pooling(gen):
    queries, keys, values = _uniform_grid_data(gen, torch.float64)
    pred, weights = nadaraya_watson(queries, keys, values, "gaussian", 1e6)
    assert_close(weights, torch.full((13, 11), 1 / 11, dtype=torch.float64))
    assert_close(pred, values.mean(0).expand(13, 2))


# ----------------------------------------------------------------------------------------------
# Nadaraya-Watson: properties
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_nw_weights_are_nonnegative_rows_summing_to_one(name, dtype, gen):
    queries = torch.rand(20, generator=gen, dtype=dtype) * 8 - 1.5  # some outside the keys' range
    keys = torch.rand(15, generator=gen, dtype=dtype) * 5
    _, weights = nadaraya_watson(queries, keys, torch.randn(15, generator=gen, dtype=dtype), name, 0.4)
    assert (weights >= 0).all()
    assert_close(weights.sum(1), torch.ones(20, dtype=dtype))


@pytest.mark.parametrize("name", COMPACT)
def test_nw_compact_kernel_tiny_bandwidth_falls_back_to_nearest_key(name, dtype):
    keys = torch.tensor([0.0, 1.0, 3.0], dtype=dtype)
    values = torch.tensor([2.0, 4.0, 8.0], dtype=dtype)
    queries = torch.tensor([0.5, 2.9, 10.0, -4.0], dtype=dtype)  # 0.5 is halfway between keys 0 and 1
    pred, weights = nadaraya_watson(queries, keys, values, name, 1e-3)
    expected = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=dtype)
    assert not weights.isnan().any() and not pred.isnan().any()
    assert_close(weights, expected)
    assert (weights[expected == 0] == 0).all()
    assert_close(pred, torch.tensor([3.0, 8.0, 8.0, 2.0], dtype=dtype))


def test_nw_gaussian_tiny_bandwidth_far_query_has_no_underflow(dtype):
    keys = torch.linspace(0, 5, 11, dtype=dtype)
    values = torch.arange(11, dtype=dtype)
    queries = torch.tensor([100.0, -50.0, 2.4], dtype=dtype)
    pred, weights = nadaraya_watson(queries, keys, values, "gaussian", 1e-3)
    assert torch.isfinite(weights).all() and torch.isfinite(pred).all()
    assert_close(weights.sum(1), torch.ones(3, dtype=dtype))
    # all the weight on the nearest key: 5.0 (index 10), 0.0 (index 0), 2.5 (index 5)
    assert_close(pred, torch.tensor([10.0, 0.0, 5.0], dtype=dtype))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_nw_leave_one_out_mask(name, gen):
    x = torch.rand(8, generator=gen, dtype=torch.float64) * 4
    y = torch.randn(8, generator=gen, dtype=torch.float64)
    mask = ~torch.eye(8, dtype=torch.bool)
    pred, weights = nadaraya_watson(x, x, y, name, 1.5, mask=mask)
    assert (weights.diagonal() == 0).all()
    assert_close(weights.sum(1), torch.ones(8, dtype=torch.float64))
    for i in range(8):  # the same as dropping key i for query i
        others = torch.arange(8) != i
        p_i, w_i = nadaraya_watson(x[i : i + 1], x[others], y[others], name, 1.5)
        assert_close(weights[i, others], w_i[0])
        assert_close(pred[i], p_i[0])


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_nw_fully_masked_row_gives_zeros(name, dtype):
    keys = torch.tensor([0.0, 1.0, 2.0], dtype=dtype)
    values = torch.tensor([1.0, 2.0, 3.0], dtype=dtype)
    queries = torch.tensor([0.2, 1.1], dtype=dtype)
    mask = torch.tensor([[False, False, False], [True, True, True]])
    pred, weights = nadaraya_watson(queries, keys, values, name, 1.0, mask=mask)
    assert (weights[0] == 0).all() and pred[0] == 0
    assert not weights.isnan().any() and not pred.isnan().any()
    unmasked_pred, unmasked_weights = nadaraya_watson(queries[1:], keys, values, name, 1.0)
    assert_close(weights[1:], unmasked_weights)
    assert_close(pred[1:], unmasked_pred)


@pytest.mark.parametrize("name", COMPACT)
def test_nw_compact_fallback_respects_the_mask(name):
    # key 0 is the nearest but masked; key 1 is the nearest allowed one, outside the support
    pred, weights = nadaraya_watson(
        torch.tensor([0.0]),
        torch.tensor([0.0, 1.0, 2.0]),
        torch.tensor([5.0, 6.0, 7.0]),
        name,
        0.5,
        mask=torch.tensor([[False, True, True]]),
    )
    assert_close(weights, torch.tensor([[0.0, 1.0, 0.0]]))
    assert_close(pred, torch.tensor([6.0]))


@pytest.mark.parametrize("name", ["gaussian", "epanechnikov"])
def test_nw_gradient_wrt_bandwidth_matches_finite_differences(name, gen):
    queries, keys, values = _uniform_grid_data(gen, torch.float64)
    h = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda b: nadaraya_watson(queries, keys, values, name, b)[0], (h,))


def test_nw_gradient_is_finite_with_an_empty_row(gen):
    x = torch.rand(6, generator=gen, dtype=torch.float64) * 3
    y = torch.randn(6, generator=gen, dtype=torch.float64)
    mask = ~torch.eye(6, dtype=torch.bool)
    mask[2] = False  # query 2 may attend to nothing
    h = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    pred, _ = nadaraya_watson(x, x, y, "gaussian", h, mask=mask)
    pred.sum().backward()
    assert torch.isfinite(h.grad) and h.grad != 0


@pytest.mark.parametrize("name", ["boxcar", "constant"])
@pytest.mark.parametrize("h", [0.8, 0.05], ids=["in-support", "fallback"])
def test_nw_flat_kernels_give_a_zero_bandwidth_gradient(name, h, gen):
    """Boxcar and constant weights do not change with a small change of h: gradient exactly 0, not an error."""
    queries, keys, values = _uniform_grid_data(gen, torch.float64)
    bandwidth = torch.tensor(h, dtype=torch.float64, requires_grad=True)
    pred, weights = nadaraya_watson(queries, keys, values, name, bandwidth)
    assert pred.requires_grad and weights.requires_grad  # attached to the bandwidth
    pred.sum().backward()
    assert bandwidth.grad is not None and torch.isfinite(bandwidth.grad)
    assert bandwidth.grad == 0


@pytest.mark.parametrize("query", [0.0, 1.0, 2.0], ids=["first-key", "middle-key", "last-key"])
def test_nw_callable_kernel_gradient_is_finite_where_a_query_is_a_key(query):
    """u = |q - k| / h has an infinite slope at q = k; the gradients must stay finite (no NaN)."""
    keys = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    values = torch.tensor([1.0, -2.0, 4.0], dtype=torch.float64)
    queries = torch.tensor([query, 0.4], dtype=torch.float64, requires_grad=True)
    h = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    pred, weights = nadaraya_watson(queries, keys, values, lambda u: torch.exp(-(u**2) / 2), h)
    assert not weights.isnan().any()
    pred.sum().backward()
    assert torch.isfinite(h.grad) and h.grad != 0
    assert torch.isfinite(queries.grad).all()
    # the same gradients as the built-in Gaussian, which works with u^2 and has no square root
    h_ref = h.detach().clone().requires_grad_(True)
    queries_ref = queries.detach().clone().requires_grad_(True)
    nadaraya_watson(queries_ref, keys, values, "gaussian", h_ref)[0].sum().backward()
    assert_close(h.grad, h_ref.grad)
    assert_close(queries.grad, queries_ref.grad)


def test_nw_callable_kernel_gradient_matches_finite_differences_at_a_key():
    keys = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64)
    values = torch.tensor([1.0, -2.0, 4.0], dtype=torch.float64)
    queries = torch.tensor([1.0, 0.4], dtype=torch.float64)
    h = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda b: nadaraya_watson(queries, keys, values, lambda u: torch.exp(-(u**2) / 2), b)[0], (h,)
    )


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_nw_keeps_dtype_and_does_not_modify_inputs(name, dtype, gen, call_unmodified):
    queries = torch.rand(5, 2, generator=gen, dtype=dtype)
    keys = torch.rand(7, 2, generator=gen, dtype=dtype)
    values = torch.randn(7, 3, generator=gen, dtype=dtype)
    mask = torch.rand(5, 7, generator=gen) > 0.3
    bandwidth = torch.tensor(0.6, dtype=dtype)
    pred, weights = call_unmodified(nadaraya_watson, queries, keys, values, name, bandwidth, mask)
    assert pred.dtype == dtype and weights.dtype == dtype
    assert pred.shape == (5, 3) and weights.shape == (5, 7)


@pytest.mark.parametrize(
    "bandwidth",
    [0.5, torch.tensor(0.5), torch.tensor(0.5, dtype=torch.float64), torch.tensor([0.5], dtype=torch.float64)],
    ids=["float", "0d-float32", "0d-float64", "1-element-float64"],
)
def test_nw_bandwidth_forms_keep_the_inputs_dtype(bandwidth):
    """Every bandwidth that passes validation ("a single number") must keep the inputs' float32."""
    x = torch.tensor([0.0, 1.0, 2.0])
    pred, weights = nadaraya_watson(x, x, x, "gaussian", bandwidth)
    assert pred.dtype == torch.float32 and weights.dtype == torch.float32


# ----------------------------------------------------------------------------------------------
# Nadaraya-Watson: error messages
# ----------------------------------------------------------------------------------------------

Q2 = torch.tensor([0.5, 1.5])
K3 = torch.tensor([0.0, 1.0, 2.0])
V3 = torch.tensor([1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    "override, error, match",
    [
        ({"queries": [0.5, 1.5]}, TypeError, r"queries must be a torch\.Tensor, got list"),
        ({"keys": np.array([0.0, 1.0, 2.0])}, TypeError, r"keys must be a torch\.Tensor, got ndarray"),
        ({"values": torch.tensor([1, 2, 3])}, TypeError, r"values must be a floating-point tensor.*got torch\.int64"),
        ({"queries": torch.tensor([0, 1])}, TypeError, r"queries must be a floating-point tensor.*got torch\.int64"),
        ({"keys": K3.double()}, TypeError, r"keys has dtype torch\.float64 but queries has dtype torch\.float32"),
        ({"values": V3.double()}, TypeError, r"values has dtype torch\.float64 but queries has dtype torch\.float32"),
        (
            {"queries": torch.zeros(2, 1, 1)},
            ValueError,
            r"queries must have shape \(Q,\) or \(Q, D\).*got shape \(2, 1, 1\)",
        ),
        ({"keys": torch.tensor(1.0)}, ValueError, r"keys must have shape \(K,\) or \(K, D\).*got shape \(\) \(0-D\)"),
        (
            {"values": torch.zeros(3, 1, 1)},
            ValueError,
            r"values must have shape \(K,\) or \(K, V\).*got shape \(3, 1, 1\)",
        ),
        ({"queries": torch.zeros(2, 2)}, ValueError, r"same kind.*got queries \(2, 2\) and keys \(3,\)"),
        (
            {"queries": torch.zeros(2, 2), "keys": torch.zeros(3, 4)},
            ValueError,
            r"same D.*got queries \(2, 2\) and keys \(3, 4\)",
        ),
        ({"values": torch.zeros(4)}, ValueError, r"values\.shape\[0\] must be 3.*got values of shape \(4,\)"),
        ({"keys": torch.zeros(0), "values": torch.zeros(0)}, ValueError, r"keys must hold at least one key, got 0"),
        ({"bandwidth": 0}, ValueError, r"bandwidth must be a finite number > 0, got 0\.0"),
        ({"bandwidth": -1.5}, ValueError, r"bandwidth must be a finite number > 0, got -1\.5"),
        ({"bandwidth": float("nan")}, ValueError, r"bandwidth must be a finite number > 0, got nan"),
        ({"bandwidth": float("inf")}, ValueError, r"bandwidth must be a finite number > 0, got inf"),
        ({"bandwidth": torch.tensor(-2.0)}, ValueError, r"bandwidth must be a finite number > 0, got -2\.0"),
        ({"bandwidth": torch.tensor([1.0, 2.0])}, ValueError, r"bandwidth must be a single number.*shape \(2,\)"),
        ({"bandwidth": "1"}, TypeError, r"bandwidth must be a finite number > 0, got '1' \(str\)"),
        ({"bandwidth": True}, TypeError, r"bandwidth must be a finite number > 0, got True \(bool\)"),
        (
            {"kernel": "triangle"},
            ValueError,
            r"kernel must be one of \['gaussian', 'boxcar', 'epanechnikov', 'constant'\].*got 'triangle'",
        ),
        ({"kernel": 3}, TypeError, r"kernel must be a kernel name or a function K\(u\), got int"),
        (
            {"kernel": lambda u: u[:, :1]},
            ValueError,
            r"kernel\(u\) must return a tensor shaped like u \(2, 3\), got \(2, 1\)",
        ),
        (
            {"kernel": lambda u: u.tolist()},
            ValueError,
            r"kernel\(u\) must return a tensor shaped like u \(2, 3\), got list",
        ),
        ({"kernel": lambda u: -u}, ValueError, r"kernel\(u\) must return weights >= 0 \(or \+inf\); got a negative"),
        ({"kernel": lambda u: 0 * u / (0 * u)}, ValueError, r"kernel\(u\) must return weights >= 0 .*NaN"),
        (
            {"mask": torch.ones(2, 3)},
            TypeError,
            r"mask must be a bool tensor \(True = may attend\), got torch\.float32",
        ),
        ({"mask": [[True] * 3] * 2}, TypeError, r"mask must be a bool tensor \(True = may attend\), got list"),
        (
            {"mask": torch.ones(3, 2, dtype=torch.bool)},
            ValueError,
            r"mask must have shape \(Q, K\) = \(2, 3\), got \(3, 2\)",
        ),
    ],
)
def test_nw_error_messages(override, error, match):
    args = {"queries": Q2, "keys": K3, "values": V3, "kernel": "gaussian", "bandwidth": 1.0, "mask": None}
    args.update(override)
    with pytest.raises(error, match=match):
        nadaraya_watson(**args)


def test_callable_kernel_infinite_at_a_key_gives_that_key_all_the_weight():
    """Inverse distance weighting |u|^-2 is infinite at u = 0: the limit puts all weight on that key."""
    keys = torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64)
    values = torch.tensor([2.0, -1.0, 5.0], dtype=torch.float64)
    queries = torch.tensor([1.0, 2.0], dtype=torch.float64)  # on the key 1.0, and between keys
    pred, weights = nadaraya_watson(queries, keys, values, kernel=lambda u: u.abs() ** -2)
    assert torch.equal(weights[0], torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
    assert pred[0] == -1.0
    inverse = torch.tensor([1 / 4, 1.0, 1.0], dtype=torch.float64)  # |2 - k|^-2 for k = 0, 1, 3
    assert_close(weights[1], inverse / inverse.sum())
