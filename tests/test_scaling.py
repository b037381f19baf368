"""attn_course.scaling: why scores are divided by sqrt(D) (notebook 03; Agg backend, see conftest)."""

import inspect
import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from _helpers import refused
from matplotlib.figure import Figure

from attn_course import dot_product_variance, mean_entropy, plot_saturation
from attn_course.scaling import softmax_entropy

LOG16 = math.log(16)  # 2.7726: the entropy of a uniform row over the default 16 keys


def _softmax(scores):
    """Softmax of a list of floats, in plain Python (shifted by the max, as every stable softmax is)."""
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    return [v / sum(e) for v in e]


def _entropy(weights):
    return -sum(w * math.log(w) for w in weights if w > 0)


# ----------------------------------------------------------------------------------------------
# dot_product_variance: Var(q . k) = D for standard normal components
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("d", [1, 4, 64, 256])
def test_dot_product_variance_is_close_to_d(d, seed):
    """q . k is a sum of D independent terms q_i k_i of variance 1 and fourth moment E[q^4] E[k^4] = 9.

    So E[(q . k)^4] = 9 D + 3 D (D - 1) and the sample variance of N values has a standard deviation of
    about sqrt((3 D^2 + 6 D - D^2) / N) = D sqrt(2 + 6 / D) / sqrt(N): 2.8 % of D at D = 1 and 1.4 % for
    large D with N = 10_000. A relative tolerance of 10 % is 3.5 standard deviations at worst.
    """
    value = dot_product_variance(d, num_samples=10_000, seed=seed)
    assert isinstance(value, float)
    assert value == pytest.approx(d, rel=0.10)


def test_dot_product_variance_is_the_unbiased_sample_variance_of_the_seeded_draws():
    """With two samples x_1, x_2 the unbiased sample variance is (x_1 - x_2)^2 / 2."""
    gen = torch.Generator().manual_seed(7)
    q = torch.randn(2, 3, generator=gen, dtype=torch.float64).tolist()  # queries are drawn first
    k = torch.randn(2, 3, generator=gen, dtype=torch.float64).tolist()  # then keys
    x1, x2 = (sum(a * b for a, b in zip(q[n], k[n], strict=True)) for n in range(2))
    assert dot_product_variance(3, num_samples=2, seed=7) == pytest.approx((x1 - x2) ** 2 / 2, rel=1e-12)


def test_dot_product_variance_is_deterministic_per_seed_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    first = dot_product_variance(8, num_samples=500, seed=3)
    assert dot_product_variance(8, num_samples=500, seed=3) == first
    assert dot_product_variance(8, num_samples=500, seed=4) != first
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        *refused("d", 0, -3, 2.5, 4.0, True, "4"),
        *refused("num_samples", 1, True, 100.0, wanted="an integer >= 2", d=4),
    ],
)
def test_dot_product_variance_error_messages(kwargs, match, int_error):
    with pytest.raises(int_error(kwargs[match.split()[0]]), match=match):
        dot_product_variance(**kwargs)


# ----------------------------------------------------------------------------------------------
# softmax_entropy
# ----------------------------------------------------------------------------------------------


def _tol(dtype):
    return 1e-6 if dtype == torch.float32 else 1e-12


@pytest.mark.parametrize(
    "weights, expected",
    [
        ([0.0, 1.0, 0.0, 0.0], 0.0),  # one-hot: no uncertainty
        ([1.0], 0.0),  # a single key
        ([0.25] * 4, math.log(4)),  # uniform over K: log K
        ([0.1] * 10, math.log(10)),
        ([0.5, 0.5, 0.0], math.log(2)),  # a zero weight adds nothing
        ([0.5, 0.25, 0.25], 1.5 * math.log(2)),  # 0.5 log 2 + 2 * 0.25 log 4
    ],
    ids=["one-hot", "single", "uniform-4", "uniform-10", "half-half-zero", "half-quarter-quarter"],
)
def test_softmax_entropy_hand_computed(weights, expected, dtype, call_unmodified):
    w = torch.tensor(weights, dtype=dtype)
    got = call_unmodified(softmax_entropy, w)
    assert got.shape == () and got.dtype == dtype
    assert float(got) == pytest.approx(expected, abs=_tol(dtype))


def test_softmax_entropy_one_hot_is_exactly_zero_without_nan(dtype):
    w = torch.eye(5, dtype=dtype)  # five one-hot rows
    got = softmax_entropy(w)
    assert torch.equal(got, torch.zeros(5, dtype=dtype))


def test_softmax_entropy_zero_weights_give_no_nan_in_value_or_gradient(dtype):
    w = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], dtype=dtype, requires_grad=True)
    got = softmax_entropy(w)
    assert not torch.isnan(got).any()
    got.sum().backward()
    assert torch.isfinite(w.grad).all()
    # d/dw of -w log w is -(log w + 1) where w > 0
    positive = w.detach() > 0
    expected = torch.tensor([math.log(2) - 1, math.log(2) - 1, -1.0], dtype=dtype)
    torch.testing.assert_close(w.grad[positive], expected)


def test_softmax_entropy_batch_shape_and_agreement_with_torch_distributions(dtype, gen):
    scores = torch.randn(2, 3, 5, generator=gen, dtype=torch.float64)
    w = torch.softmax(scores, dim=-1).to(dtype)
    got = softmax_entropy(w)
    assert got.shape == (2, 3) and got.dtype == dtype
    torch.testing.assert_close(got, torch.distributions.Categorical(probs=w).entropy())
    for b in range(2):
        for i in range(3):
            assert float(got[b, i]) == pytest.approx(_entropy(w[b, i].tolist()), rel=_tol(dtype) * 10)


def test_softmax_entropy_lies_between_zero_and_log_k(gen):
    w = torch.softmax(3 * torch.randn(50, 7, generator=gen, dtype=torch.float64), dim=-1)
    got = softmax_entropy(w)
    assert (got >= 0).all() and (got <= math.log(7) + 1e-12).all()


@pytest.mark.parametrize(
    "weights, match",
    [
        (torch.tensor([0, 1, 0]), r"weights must be a floating-point tensor.*got torch\.int64"),
        (torch.tensor([True, False]), r"weights must be a floating-point tensor.*got torch\.bool"),
        ([0.5, 0.5], r"weights must be a torch\.Tensor, got list"),
        (np.array([0.5, 0.5]), r"weights must be a torch\.Tensor, got ndarray"),
    ],
    ids=["integer", "bool", "list", "numpy"],
)
def test_softmax_entropy_error_messages(weights, match):
    with pytest.raises(TypeError, match=match):
        softmax_entropy(weights)


# ----------------------------------------------------------------------------------------------
# mean_entropy (wrapped in functools.lru_cache: equal calls share one result)
# ----------------------------------------------------------------------------------------------


def _clear_cache():
    """Forget mean_entropy's cached results, so that the next call computes (whatever holds the cache)."""
    getattr(mean_entropy, "cache_clear", lambda: None)()


def test_mean_entropy_unscaled_saturates_as_d_grows():
    """Unscaled scores have a spread of sqrt(D): at D = 256 the top key beats the runner-up by several units."""
    values = [mean_entropy(d, scaled=False) for d in (1, 16, 256)]
    assert all(isinstance(v, float) for v in values)
    assert values[0] > values[1] > values[2]
    assert values[2] < 0.5  # close to one-hot; uniform would be log 16 = 2.77


@pytest.mark.parametrize("seed", [0, 1])
def test_mean_entropy_scaled_stays_in_a_narrow_band(seed):
    """Scaled scores have variance 1 for every D; for many keys the entropy of softmax of N(0, s^2) scores is
    log K - s^2 / 2, here 2.27. The band allows for K = 16 being finite and for sampling 16 keys and 500 queries.
    """
    scaled = [mean_entropy(d, scaled=True, seed=seed) for d in (1, 16, 256)]
    unscaled = [mean_entropy(d, scaled=False, seed=seed) for d in (1, 16, 256)]
    assert all(LOG16 - 1.0 < v < LOG16 - 0.1 for v in scaled), scaled
    assert max(scaled) - min(scaled) < 0.3
    assert max(unscaled) - min(unscaled) > 1.5  # what the scaling prevents


def test_mean_entropy_d_1_scaled_equals_unscaled_exactly():
    assert mean_entropy(1, scaled=True) == mean_entropy(1, scaled=False)


def test_mean_entropy_scaling_is_a_temperature_of_sqrt_d():
    # q . k / sqrt(4) = q . k / 2: scaling at D = 4 is the unscaled entropy at temperature 2
    assert mean_entropy(4, 16, 1.0, True) == pytest.approx(mean_entropy(4, 16, 2.0, False), rel=1e-12)


@pytest.mark.parametrize("scaled", [True, False])
def test_mean_entropy_temperature_limits(scaled):
    # scores of size 1e-6 give weights 1/K (1 + O(1e-6)): the entropy is log K to within 1e-12
    assert mean_entropy(16, temperature=1e6, scaled=scaled) == pytest.approx(LOG16, abs=1e-9)
    assert mean_entropy(16, num_keys=5, temperature=1e6, scaled=scaled) == pytest.approx(math.log(5), abs=1e-9)
    # at temperature 1e-3 the top two scores differ by hundreds for almost every query: one-hot rows
    assert 0 <= mean_entropy(16, temperature=1e-3, scaled=scaled) < 0.05


def test_mean_entropy_is_deterministic_per_seed_and_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    _clear_cache()  # compute, do not recall
    first = mean_entropy(8, 6, 1.0, True, 50, 11)
    _clear_cache()
    assert mean_entropy(8, 6, 1.0, True, 50, 11) == first
    assert mean_entropy(8, 6, 1.0, True, 50, 12) != first
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d": 0}, r"d must be an integer >= 1, got 0"),
        ({"d": 2.5}, r"d must be an integer >= 1, got 2\.5"),
        ({"d": True}, r"d must be an integer >= 1, got True"),
        ({"d": 4, "num_keys": 1}, r"num_keys must be an integer >= 2, got 1"),
        ({"d": 4, "num_keys": 16.0}, r"num_keys must be an integer >= 2, got 16\.0"),
        ({"d": 4, "num_queries": 0}, r"num_queries must be an integer >= 1, got 0"),
        ({"d": 4, "temperature": 0}, r"temperature must be a finite number > 0, got 0"),
        ({"d": 4, "temperature": -1.0}, r"temperature must be a finite number > 0, got -1\.0"),
        ({"d": 4, "temperature": float("nan")}, r"temperature must be a finite number > 0, got nan"),
        ({"d": 4, "temperature": True}, r"temperature must be a finite number > 0, got True"),
        ({"d": 4, "temperature": "1"}, r"temperature must be a finite number > 0, got '1'"),
    ],
    ids=[
        "d-zero",
        "d-fraction",
        "d-bool",
        "one-key",
        "keys-float",
        "no-queries",
        "temperature-zero",
        "temperature-negative",
        "temperature-nan",
        "temperature-bool",
        "temperature-str",
    ],
)
def test_mean_entropy_error_messages(kwargs, match, int_error, number_error):
    _clear_cache()  # on a fresh cache; what a filled one does is the next test
    name = match.split()[0]
    error = number_error(kwargs[name]) if name == "temperature" else int_error(kwargs[name])
    with pytest.raises(error, match=match):
        mean_entropy(**kwargs)


@pytest.mark.parametrize(
    "good, bad, match",
    [
        ((1, 16), (True, 16), r"d must be an integer >= 1, got True"),
        ((4, 16), (4.0, 16), r"d must be an integer >= 1, got 4\.0"),
        ((4, 16), (4, 16.0), r"num_keys must be an integer >= 2, got 16\.0"),
        ((4, 16, 1.0), (4, 16, True), r"temperature must be a finite number > 0, got True"),
    ],
    ids=["d-bool", "d-float", "num_keys-float", "temperature-bool"],
)
def test_mean_entropy_cache_does_not_answer_for_an_invalid_argument(good, bad, match):
    """True == 1 and 4.0 == 4 with equal hashes, so lru_cache (typed=False) takes them for the same key:
    once the valid call is cached, the invalid one returns its value instead of raising."""
    _clear_cache()
    mean_entropy(*good)
    with pytest.raises(TypeError, match=match):  # every bad value here is of the wrong type
        mean_entropy(*bad)


def test_mean_entropy_unhashable_argument_gets_a_message_that_names_it():
    """STYLE 5: the message names the argument (lru_cache fails first with "unhashable type: 'list'")."""
    with pytest.raises((TypeError, ValueError), match=r"\bd must be"):
        mean_entropy([4])


# ----------------------------------------------------------------------------------------------
# plot_saturation
# ----------------------------------------------------------------------------------------------


def _expected_weights(d, temperature, num_keys, seed):
    """Softmax of one query's scores, unscaled and scaled: the query is drawn first, then the keys."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(d, generator=gen, dtype=torch.float64).tolist()
    keys = torch.randn(num_keys, d, generator=gen, dtype=torch.float64).tolist()
    raw = [sum(a * b for a, b in zip(k, q, strict=True)) / temperature for k in keys]
    return _softmax(raw), _softmax([s / math.sqrt(d) for s in raw])


def _labelled_lines(ax):
    return {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}


SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


@pytest.mark.parametrize("d, temperature, num_keys, seed", [(64, 1.0, 16, 0), (5, 0.5, 8, 3), (1, 2.0, 4, 1)])
def test_plot_saturation_bars_are_the_softmax_of_one_query(d, temperature, num_keys, seed):
    fig = plot_saturation(d, temperature, num_keys, seed)
    assert isinstance(fig, Figure)
    left, right = fig.axes
    unscaled, scaled = left.containers
    w_raw, w_scaled = _expected_weights(d, temperature, num_keys, seed)
    for bars, w, offset in ((unscaled, w_raw, -0.2), (scaled, w_scaled, 0.2)):
        assert len(bars) == num_keys
        np.testing.assert_allclose([b.get_height() for b in bars], w, rtol=1e-9, atol=1e-12)
        centres = [b.get_x() + b.get_width() / 2 for b in bars]
        np.testing.assert_allclose(centres, np.arange(num_keys) + offset, atol=1e-12)
    legend = [t.get_text() for t in left.get_legend().get_texts()]
    assert legend == [
        f"softmax(q.k): max {max(w_raw):.2f}, entropy {_entropy(w_raw):.2f}",
        f"softmax(q.k / sqrt(D)): max {max(w_scaled):.2f}, entropy {_entropy(w_scaled):.2f}",
    ]
    assert left.get_xlabel() == "key" and left.get_ylabel() == "attention weight"
    assert f"{num_keys} random keys, D = {d}, temperature {temperature:g}" in left.get_title()
    assert left.get_ylim() == pytest.approx((0, 1.05))
    # right: mean entropy against D, unscaled and scaled, a circle at the chosen D, and the uniform level
    lines = _labelled_lines(right)
    assert list(lines) == ["q.k", "q.k / sqrt(D)", f"uniform: log {num_keys} = {math.log(num_keys):.2f}"]
    for name, scaled_flag in (("q.k", False), ("q.k / sqrt(D)", True)):
        assert list(lines[name].get_xdata()) == SIZES
        expected = [mean_entropy(s, num_keys, temperature, scaled_flag, seed=seed) for s in SIZES]
        np.testing.assert_allclose(lines[name].get_ydata(), expected, rtol=1e-12)
    circles = [line for line in right.get_lines() if line.get_marker() == "o"]
    assert [list(c.get_xdata()) for c in circles] == [[d], [d]]
    assert [float(c.get_ydata()[0]) for c in circles] == [
        mean_entropy(d, num_keys, temperature, False, seed=seed),
        mean_entropy(d, num_keys, temperature, True, seed=seed),
    ]
    uniform = lines[f"uniform: log {num_keys} = {math.log(num_keys):.2f}"]
    assert list(uniform.get_ydata()) == pytest.approx([math.log(num_keys)] * 2)
    assert [t.get_text() for t in right.get_legend().get_texts()] == list(lines)
    assert right.get_xscale() == "log"
    assert right.get_ylim() == pytest.approx((0, 1.1 * math.log(num_keys)))
    assert "D" in right.get_xlabel() and "entropy" in right.get_ylabel()


def test_plot_saturation_default_figure_shows_the_saturation():
    fig = plot_saturation()
    left, right = fig.axes
    assert left.get_title() == "One query, 16 random keys, D = 64, temperature 1"
    lines = _labelled_lines(right)
    assert "uniform: log 16 = 2.77" in lines
    unscaled = lines["q.k"].get_ydata()
    scaled = lines["q.k / sqrt(D)"].get_ydata()
    assert unscaled[0] == scaled[0]  # D = 1: sqrt(D) = 1
    assert unscaled[-1] < 0.5 < LOG16 - 1.0 < min(scaled)  # at D = 1024 unscaled is near one-hot, scaled is not
    assert max(scaled) < LOG16


def test_plot_saturation_is_deterministic_per_seed():
    def heights(seed):
        return [b.get_height() for b in plot_saturation(d=8, seed=seed).axes[0].patches]

    assert heights(2) == heights(2)
    assert heights(2) != heights(3)


def test_plot_saturation_returns_a_figure_without_show_or_global_changes(monkeypatch):
    def forbidden_show(*args, **kwargs):
        raise AssertionError("plot helpers must not call plt.show()")

    monkeypatch.setattr(plt, "show", forbidden_show)
    before = dict(matplotlib.rcParams)
    rng = torch.get_rng_state()
    fig = plot_saturation(16, 1.0, 16, 0)
    assert isinstance(fig, Figure)
    assert dict(matplotlib.rcParams) == before
    assert torch.equal(torch.get_rng_state(), rng)
    assert len(fig.axes) == 2
    assert all(ax.get_xlabel() and ax.get_ylabel() and ax.get_title() for ax in fig.axes)
    assert plt.get_fignums() == [fig.number]


def test_plot_saturation_draws_on_the_axes_it_is_given():
    assert inspect.signature(plot_saturation).parameters["axes"].default is None
    fig, axes = plt.subplots(1, 2)
    result = plot_saturation(8, axes=axes)
    assert result is fig
    assert plt.get_fignums() == [fig.number]  # no new figure
    assert list(fig.axes) == list(axes)  # and no extra axes
    left, right = axes
    assert len(left.patches) == 2 * 16 and len(right.get_lines()) >= 2
    assert left.get_ylabel() and right.get_ylabel()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        *refused("d", 0, 8.0),
        *refused("num_keys", 1, 0, wanted="an integer >= 2"),
        *refused("temperature", 0, -2.0, wanted="a finite number > 0"),
    ],
)
def test_plot_saturation_error_messages(kwargs, match, int_error, number_error):
    name = match.split()[0]
    error = number_error(kwargs[name]) if name == "temperature" else int_error(kwargs[name])
    with pytest.raises(error, match=match):
        plot_saturation(**kwargs)


@pytest.mark.parametrize("kwargs", [{"num_keys": 1}, {"temperature": 0}], ids=["one-key", "temperature-zero"])
def test_plot_saturation_bad_input_opens_no_figure(kwargs):
    """Arguments are checked before drawing: a failed call leaves no half-drawn figure for the notebook to show."""
    with pytest.raises(ValueError):
        plot_saturation(**kwargs)
    assert plt.get_fignums() == []
