"""attn_course.data: the seeded toy regression set, the Lagrange points, the three-token example."""

import math

import pytest
import torch
from _helpers import refused
from torch.testing import assert_close

from attn_course.data import (
    RegressionData,
    ThreeTokenExample,
    lagrange_points,
    noisy_samples,
    three_token_example,
    toy_regression,
    true_function,
)

# ----------------------------------------------------------------------------------------------
# true_function and toy_regression
# ----------------------------------------------------------------------------------------------


def test_true_function_hand_values():
    x = torch.tensor([0.0, 1.0, 2.5], dtype=torch.float64)
    expected = [2 * math.sin(v) + v**0.8 for v in x.tolist()]
    assert_close(true_function(x), torch.tensor(expected, dtype=torch.float64))


def test_toy_regression_shapes_and_test_grid():
    data = toy_regression(n_train=7, x_max=2.0, step=0.5, dtype=torch.float64)
    assert isinstance(data, RegressionData)
    assert data._fields == ("x_train", "y_train", "x_test", "y_test")
    assert data.x_train.shape == data.y_train.shape == (7,)
    assert_close(data.x_test, torch.tensor([0.0, 0.5, 1.0, 1.5], dtype=torch.float64))
    expected = [2 * math.sin(v) + v**0.8 for v in (0.0, 0.5, 1.0, 1.5)]
    assert_close(data.y_test, torch.tensor(expected, dtype=torch.float64))


def test_toy_regression_default_sizes():
    data = toy_regression()
    assert data.x_train.shape == (50,)
    assert data.x_test.shape == (50,)  # 0, 0.1, ..., 4.9


def test_toy_regression_x_train_sorted_and_in_range():
    data = toy_regression(n_train=200, x_max=3.0, seed=5)
    assert (data.x_train[1:] >= data.x_train[:-1]).all()
    assert data.x_train.min() >= 0 and data.x_train.max() < 3.0


def test_toy_regression_is_deterministic_for_a_seed_and_differs_across_seeds():
    a, b, c = toy_regression(seed=7), toy_regression(seed=7), toy_regression(seed=8)
    for ta, tb in zip(a, b, strict=True):
        assert torch.equal(ta, tb)
    assert not torch.equal(a.x_train, c.x_train)
    assert not torch.equal(a.y_train, c.y_train)
    assert torch.equal(a.x_test, c.x_test)  # the test grid does not depend on the seed


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_toy_regression_dtype(dtype):
    data = toy_regression(n_train=5, dtype=dtype)
    assert all(t.dtype == dtype for t in data)


def test_toy_regression_noise():
    clean = toy_regression(n_train=30, noise=0.0, dtype=torch.float64)
    assert_close(
        clean.y_train, torch.tensor([2 * math.sin(v) + v**0.8 for v in clean.x_train.tolist()], dtype=torch.float64)
    )
    noisy = toy_regression(n_train=4000, noise=0.5, dtype=torch.float64)
    residual = noisy.y_train - true_function(noisy.x_train)
    assert abs(float(residual.std()) - 0.5) < 0.05
    assert abs(float(residual.mean())) < 0.05


NOISE_WANTED = "a finite number >= 0 (a standard deviation)"


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        *refused("n_train", 0, -3, 2.5, True, "50", right_type=int),
        *refused("noise", -0.1, float("nan"), None, wanted=NOISE_WANTED, right_type=(int, float)),
        ({"x_max": 0.0}, ValueError, r"x_max must be a finite number > 0, got 0\.0"),
        ({"x_max": -1.0}, ValueError, r"x_max must be a finite number > 0, got -1\.0"),
        ({"x_max": math.inf}, ValueError, r"x_max must be a finite number > 0, got inf"),
        ({"step": 0.0}, ValueError, r"step must be a finite number in \(0, x_max = 5\.0\), got 0\.0"),
        ({"step": -0.1}, ValueError, r"step must be a finite number in \(0, x_max = 5\.0\), got -0\.1"),
        ({"step": 5.0}, ValueError, r"step must be a finite number in \(0, x_max = 5\.0\), got 5\.0"),
        ({"step": "0.1"}, TypeError, r"step must be a finite number in \(0, x_max = 5\.0\), got '0\.1' \(str\)"),
        ({"seed": None}, TypeError, r"seed must be an integer >= 0, got None \(NoneType\)"),
        ({"dtype": torch.int64}, (TypeError, ValueError), r"dtype.*torch\.int64"),
        ({"dtype": "float32"}, (TypeError, ValueError), r"dtype.*'float32'"),
    ],
)
def test_toy_regression_error_messages(kwargs, error, match):
    with pytest.raises(error, match=match):
        toy_regression(**kwargs)


# ----------------------------------------------------------------------------------------------
# noisy_samples
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n, x_min, x_max", [(10, 0.0, 5.0), (2, 1.0, 3.0), (5, 0.5, 1.5)])
def test_noisy_samples_x_is_evenly_spaced(n, x_min, x_max):
    x, y = noisy_samples(n, 0.3, x_min, x_max)
    assert x.shape == y.shape == (n,)
    assert_close(x, torch.linspace(x_min, x_max, n, dtype=torch.float64))
    assert x[0] == x_min and x[-1] == x_max
    assert_close(x.diff(), torch.full((n - 1,), (x_max - x_min) / (n - 1), dtype=torch.float64))


def test_noisy_samples_hand_values_without_noise():
    x, y = noisy_samples(3, 0.0, 0.0, 2.0)  # x = 0, 1, 2
    assert x.tolist() == [0.0, 1.0, 2.0]
    assert_close(y, torch.tensor([0.0, 2 * math.sin(1.0) + 1.0, 2 * math.sin(2.0) + 2**0.8], dtype=torch.float64))


def test_noisy_samples_without_noise_lie_on_the_true_function():
    x, y = noisy_samples(25, noise=0.0, x_max=4.0, seed=3)
    assert torch.equal(y - true_function(x), torch.zeros(25, dtype=torch.float64))


def test_noisy_samples_noise_has_the_requested_standard_deviation():
    x, y = noisy_samples(4000, noise=0.5, seed=1)
    residual = y - true_function(x)
    assert abs(float(residual.std()) - 0.5) < 0.05
    assert abs(float(residual.mean())) < 0.05
    # the noise scales linearly: the same seed with twice the noise gives twice the residual
    _, y2 = noisy_samples(4000, noise=1.0, seed=1)
    assert_close(y2 - true_function(x), 2 * residual)


def test_noisy_samples_is_deterministic_for_a_seed_and_differs_across_seeds():
    x_a, y_a = noisy_samples(seed=7)
    x_b, y_b = noisy_samples(seed=7)
    x_c, y_c = noisy_samples(seed=8)
    assert torch.equal(x_a, x_b) and torch.equal(y_a, y_b)
    assert torch.equal(x_a, x_c)  # the nodes do not depend on the seed
    assert not torch.equal(y_a, y_c)


@pytest.mark.parametrize("make", [toy_regression, noisy_samples], ids=lambda f: f.__name__)
def test_the_data_makers_do_not_touch_the_global_rng(make):
    """They draw from a private generator seeded by ``seed``."""
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    make(seed=123)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_noisy_samples_dtype(dtype):
    x, y = noisy_samples(6, dtype=dtype)
    assert x.dtype == y.dtype == dtype
    x64, y64 = noisy_samples(6)  # float64 by default; other dtypes are the same numbers, rounded
    assert x64.dtype == y64.dtype == torch.float64
    assert torch.equal(x, x64.to(dtype)) and torch.equal(y, y64.to(dtype))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        *refused("n", 1, 0, -4, 5.0, True, "10", wanted="an integer >= 2", right_type=int),
        *refused("noise", -0.3, float("nan"), True, None, wanted=NOISE_WANTED, right_type=(int, float)),
        pytest.param(
            {"x_min": 5.0}, ValueError, r"need 0 <= x_min < x_max, got x_min=5\.0, x_max=5\.0", id="x_min-equals-x_max"
        ),
        pytest.param(
            {"x_min": 3.0, "x_max": 2.0},
            ValueError,
            r"need 0 <= x_min < x_max, got x_min=3\.0, x_max=2\.0",
            id="x_min-above-x_max",
        ),
        pytest.param(
            {"x_min": -1.0}, ValueError, r"need 0 <= x_min < x_max, got x_min=-1\.0, x_max=5\.0", id="x_min-negative"
        ),
        pytest.param(
            {"x_max": float("nan")}, ValueError, r"need 0 <= x_min < x_max, got x_min=0\.0, x_max=nan", id="x_max-nan"
        ),
        pytest.param(
            {"dtype": torch.int64},
            TypeError,
            r"dtype must be a floating torch\.dtype.*got torch\.int64",
            id="dtype-int",
        ),
        pytest.param(
            {"dtype": "float64"}, TypeError, r"dtype must be a floating torch\.dtype.*got 'float64'", id="dtype-str"
        ),
    ],
)
def test_noisy_samples_error_messages(kwargs, error, match):
    with pytest.raises(error, match=match):
        noisy_samples(**kwargs)


# ----------------------------------------------------------------------------------------------
# lagrange_points
# ----------------------------------------------------------------------------------------------


def test_lagrange_points_are_the_ten_seed_points():
    x, y = lagrange_points()
    assert x.dtype == y.dtype == torch.float64
    assert x.tolist() == [1.1, 1.5, 2.0, 3.1, 4.2, 4.3, 4.6, 5.1, 7.1, 8.3]
    assert y.tolist() == [2.4, 3.0, 1.1, 4.5, 3.6, 2.2, 1.0, 5.6, 3.7, 0.2]


def test_lagrange_points_dtype_and_sorted():
    x, y = lagrange_points(torch.float32)
    assert x.dtype == y.dtype == torch.float32
    assert (x[1:] > x[:-1]).all()


# ----------------------------------------------------------------------------------------------
# three_token_example
# ----------------------------------------------------------------------------------------------


def test_three_token_example_inputs_and_projections():
    ex = three_token_example()
    assert isinstance(ex, ThreeTokenExample)
    assert ex.inputs.tolist() == [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
    assert ex.inputs.shape == (3, 4)
    assert ex.w_query.shape == ex.w_key.shape == ex.w_value.shape == (4, 3)
    # worked by hand: row r of inputs @ W adds the rows of W picked (and scaled) by the input's entries
    assert (ex.inputs @ ex.w_key).tolist() == [[0, 1, 1], [4, 4, 0], [2, 3, 1]]
    assert (ex.inputs[1] @ ex.w_key).tolist() == [4, 4, 0]
    assert (ex.inputs @ ex.w_query).tolist() == [[1, 0, 2], [2, 2, 2], [2, 1, 3]]
    assert (ex.inputs @ ex.w_value).tolist() == [[1, 2, 3], [2, 8, 0], [2, 6, 3]]


def test_three_token_example_attention_scores_of_the_first_query():
    ex = three_token_example(torch.float64)
    # query 1 = [1, 0, 2]; keys [0, 1, 1], [4, 4, 0], [2, 3, 1] -> scores 2, 4, 4
    scores = (ex.inputs[0] @ ex.w_query) @ (ex.inputs @ ex.w_key).T
    assert scores.tolist() == [2.0, 4.0, 4.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_three_token_example_dtype(dtype):
    assert all(t.dtype == dtype for t in three_token_example(dtype))
