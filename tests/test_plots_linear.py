"""attn_course.plots.linear: the figures of notebook 12, their in-place updates and their errors (Agg backend, see
conftest)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import attn_course as ac


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _qk(t=24, d=8, scale=0.5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(t, d, generator=gen) * scale, torch.randn(t, d, generator=gen) * scale


def _lines(fig):
    return [np.asarray(line.get_ydata(), dtype=float) for ax in fig.axes for line in ax.get_lines()]


def _texts(fig):
    return [ax.get_title() for ax in fig.axes] + [t.get_text() for ax in fig.axes for t in ax.texts]


def test_plot_favor_weights_draws_the_estimate_and_the_error_curve():
    queries, keys = _qk()
    fig = ac.plot_favor_weights(queries, keys, num_features=64, feature_counts=(4, 64, 256), draws=2)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    left, right = fig.axes
    assert len(left.patches) == 24  # one bar per key: the softmax weights
    softmax = torch.softmax(queries @ keys.T / 8**0.5, dim=-1)[0].numpy()
    np.testing.assert_allclose([p.get_height() for p in left.patches], softmax, rtol=1e-5)
    errors = ac.favor_weight_error(queries, keys, (4, 64, 256), draws=2)
    np.testing.assert_allclose(right.get_lines()[0].get_ydata(), errors)
    assert right.get_title() == f"m = 64: error {errors[1]:.3f}"
    assert right.get_xlabel() and right.get_ylabel() and left.get_xlabel() and left.get_ylabel()


def test_plot_favor_weights_draws_the_two_baselines_over_every_query():
    queries, keys = _qk()
    fig = ac.plot_favor_weights(queries, keys, num_features=64, feature_counts=(4, 64), draws=1)
    lines = {line.get_label(): line for line in fig.axes[1].get_lines()}
    exact = torch.softmax(queries.double() @ keys.double().T / 8**0.5, dim=-1)  # (Q, K): every query, not the first
    elu = ac.linear_attention_weights(queries.double()[None], keys.double()[None])[0]
    want_elu = 0.5 * (elu - exact).abs().sum(-1).mean().item()
    want_uniform = 0.5 * (exact - 1 / 24).abs().sum(-1).mean().item()
    np.testing.assert_allclose(lines["elu + 1 (another kernel)"].get_ydata(), [want_elu] * 2)
    np.testing.assert_allclose(lines["uniform weights (1/K each)"].get_ydata(), [want_uniform] * 2)
    first_only = 0.5 * (elu - exact[0]).abs().sum(-1).mean().item()  # the slip of comparing with query 0 alone
    assert abs(first_only - want_elu) > 1e-3


def test_plot_favor_weights_update_in_place_equals_a_fresh_figure():
    queries, keys = _qk()
    counts = (4, 64, 256)
    fig = ac.plot_favor_weights(queries, keys, num_features=64, feature_counts=counts, draws=2)
    assert fig.slider_update(num_features=256) is False
    fresh = ac.plot_favor_weights(queries, keys, num_features=256, feature_counts=counts, draws=2)
    for got, want in zip(_lines(fig), _lines(fresh), strict=True):
        np.testing.assert_allclose(got, want)
    assert _texts(fig) == _texts(fresh)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()][1] == "FAVOR+, m = 256"


def test_plot_favor_weights_asks_for_a_new_figure_off_its_curve():
    queries, keys = _qk()
    fig = ac.plot_favor_weights(queries, keys, num_features=64, feature_counts=(4, 64), draws=1)
    assert fig.slider_update(num_features=100) is True


def test_plot_decay_weights_marks_the_reach_and_updates_in_place():
    queries, keys = _qk(t=60)
    fig = ac.plot_decay_weights(queries, keys, decay=0.5)
    assert "γ = 0.5" in fig.axes[0].get_title() and "of 60 positions" in fig.axes[0].get_title()
    assert fig.slider_update(decay=0.9) is None
    fresh = ac.plot_decay_weights(queries, keys, decay=0.9)
    for got, want in zip(_lines(fig), _lines(fresh), strict=True):
        np.testing.assert_allclose(got, want)
    assert _texts(fig) == _texts(fresh)
    row = ac.linear_attention_weights(queries[None], keys[None], causal=True, decay=0.9)[0, -1].flip(0).numpy()
    reach = int(np.searchsorted(np.cumsum(row), 0.9 - 1e-12) + 1)
    assert f"on the last {reach} of 60" in fig.axes[0].get_title()
    assert fig.axes[0].get_yscale() == "log"


def test_plot_recall_curves_draws_one_line_per_memory_and_the_reference():
    fig = ac.plot_recall_curves([8, 16], {"linear": [0.5, 0.7], "delta": [0.3, 0.5]}, "error", [0.4, 0.6], "guess")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["linear", "delta", "guess"]
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), [0.3, 0.5])
    assert ax.get_ylabel() == "error"


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: ac.plot_recall_curves([8, 16], {"linear": [0.5]}, "e"), ValueError, r"curves\['linear'\] must have"),
        (lambda: ac.plot_recall_curves([8], [0.5], "e"), TypeError, r"curves must map each memory's name"),
        (lambda: ac.plot_favor_weights(torch.ones(3, 4), torch.ones(3, 5)), ValueError, r"queries and keys must share"),
        (lambda: ac.plot_favor_weights(torch.ones(1, 3, 4), torch.ones(3, 4)), ValueError, r"queries must have shape"),
        (lambda: ac.plot_favor_weights([[1.0]], torch.ones(3, 4)), TypeError, r"queries must be a torch.Tensor"),
        (lambda: ac.plot_favor_weights(*_qk(), num_features=0), ValueError, r"num_features must be an integer >= 1"),
        (lambda: ac.plot_decay_weights(*_qk(), decay=2.0), ValueError, r"decay must be a finite number in \(0, 1\]"),
        (lambda: ac.favor_weight_error(*_qk(), draws=0), ValueError, r"draws must be an integer >= 1"),
        # empty inputs: a clear error, not an IndexError deep in the drawing or a NaN error curve
        (lambda: ac.plot_favor_weights(torch.ones(0, 4), torch.ones(3, 4)), ValueError, r"at least one row"),
        (lambda: ac.plot_favor_weights(torch.ones(3, 4), torch.ones(0, 4)), ValueError, r"at least one row"),
        (lambda: ac.plot_decay_weights(torch.ones(0, 4), torch.ones(0, 4)), ValueError, r"at least one row"),
        (lambda: ac.favor_weight_error(torch.ones(0, 4), torch.ones(3, 4)), ValueError, r"at least one row"),
        (lambda: ac.plot_recall_curves([8, 16], {"a": [0.5, 0.6]}, "e", [1.0]), ValueError, r"reference must have"),
        (lambda: ac.plot_recall_curves("ab", {"a": [0.5, 0.6]}, "e"), TypeError, r"pairs must be a non-empty list"),
        (lambda: ac.plot_recall_curves([8, 16], {"a": "xy"}, "e"), TypeError, r"curves\['a'\] must be a list"),
    ],
)
def test_plot_errors_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
