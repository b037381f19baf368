"""attn_course.interpolation: the Lagrange basis, curve_mean_var and the figures of notebook 02 (Agg backend, see
conftest)."""

import inspect

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from _helpers import draw_cleanly, named_cases
from matplotlib.figure import Figure
from torch.testing import assert_close

from attn_course import (
    curve_mean_var,
    lagrange_basis,
    nadaraya_watson,
    plot_lagrange_basis,
    plot_noisy_fit,
    plot_weight_comparison,
)
from attn_course.data import lagrange_points, noisy_samples, true_function

# ----------------------------------------------------------------------------------------------
# curve_mean_var
# ----------------------------------------------------------------------------------------------


def _tol(dtype):
    return 1e-5 if dtype == torch.float32 else 1e-9


@pytest.mark.parametrize(
    "x, f, mean, var",
    [
        # a tent: int f = 1 and int f^2 = 1 over a length of 2 -> mean 1/2, variance 1/2 - 1/4
        ([0.0, 1.0, 2.0], [0.0, 1.0, 0.0], 0.5, 0.25),
        # uneven steps: int f = 2 * 1 + (2 + 5) / 2 * 2 = 9, int f^2 = 4 * 1 + (4 + 25) / 2 * 2 = 33, length 3
        ([0.0, 1.0, 3.0], [2.0, 2.0, 5.0], 3.0, 11.0 - 9.0),
        # two points: the straight line from (1, 1) to (3, 5): mean 3, trapezoid of f^2 = (1 + 25) / 2
        ([1.0, 3.0], [1.0, 5.0], 3.0, 13.0 - 9.0),
    ],
    ids=["tent", "uneven", "two-points"],
)
def test_curve_mean_var_hand_computed(x, f, mean, var, dtype):
    got = curve_mean_var(torch.tensor(x, dtype=dtype), torch.tensor(f, dtype=dtype))
    assert isinstance(got, tuple) and len(got) == 2
    assert all(isinstance(v, float) for v in got)
    assert got == pytest.approx((mean, var), rel=_tol(dtype), abs=_tol(dtype))


def test_curve_mean_var_square_on_a_fine_grid_matches_the_exact_integrals(dtype):
    # mean of x^2 on [0, 1] is 1/3; variance is int x^4 - (1/3)^2 = 1/5 - 1/9
    x = torch.linspace(0, 1, 4001, dtype=dtype)
    mean, var = curve_mean_var(x, x**2)
    tol = 1e-5 if dtype == torch.float32 else 1e-7  # the trapezoid's own error is h^2 / 6 ~ 1e-8
    assert mean == pytest.approx(1 / 3, abs=tol)
    assert var == pytest.approx(1 / 5 - 1 / 9, abs=tol)


def test_curve_mean_var_uses_the_trapezoidal_rule():
    """On a coarse grid the error of the rule shows: it is exactly the Euler-Maclaurin term of the trapezoid."""
    h = 0.1
    x = torch.linspace(0, 1, 11, dtype=torch.float64)
    mean, var = curve_mean_var(x, x**2)
    # trapezoid of x^2 = 1/3 + h^2/6 and of x^4 = 1/5 + h^2/3 - h^4/30 (the series ends: x^2, x^4 are polynomials)
    expected_mean = 1 / 3 + h**2 / 6
    assert mean == pytest.approx(expected_mean, rel=1e-12)
    assert var == pytest.approx(1 / 5 + h**2 / 3 - h**4 / 30 - expected_mean**2, rel=1e-10)
    # and agrees with the rule written out on an uneven grid: each interval's width times its two ends' mean
    xs = np.array([0.0, 0.3, 0.4, 1.2, 2.0])
    fs = np.array([1.0, -2.0, 0.5, 3.0, 2.0])
    length = 2.0

    def trapezoid(f):
        return float(np.sum(np.diff(xs) * (f[1:] + f[:-1]) / 2))

    mean = trapezoid(fs) / length
    expected = (mean, trapezoid(fs**2) / length - mean**2)
    assert curve_mean_var(torch.from_numpy(xs), torch.from_numpy(fs)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("a, b, x0, x1", [(2.0, 3.0, 0.0, 1.0), (-1.0, 0.5, 1.0, 4.1), (0.0, -2.0, 2.0, 5.0)])
def test_curve_mean_var_linear_curve_matches_the_exact_formulas(a, b, x0, x1, dtype):
    # f = a + b x on [x0, x1]: mean a + b (x0 + x1) / 2, variance b^2 (x1 - x0)^2 / 12
    x = torch.linspace(x0, x1, 4001, dtype=dtype)
    mean, var = curve_mean_var(x, a + b * x)
    scale = 10 * _tol(dtype) * (1 + abs(a) + abs(b) * x1) ** 2
    assert mean == pytest.approx(a + b * (x0 + x1) / 2, abs=scale)
    assert var == pytest.approx(b**2 * (x1 - x0) ** 2 / 12, abs=scale)


@pytest.mark.parametrize("c", [0.3, 2.4, 5.6, 1000.0])
@pytest.mark.parametrize("n", [11, 1001])
def test_curve_mean_var_constant_curve_has_variance_zero(c, n, dtype):
    """A variance is never negative, and a flat curve has none (up to rounding relative to c^2)."""
    x = torch.linspace(0, 1, n, dtype=dtype)
    mean, var = curve_mean_var(x, torch.full_like(x, c))
    assert mean == pytest.approx(c, rel=_tol(dtype))
    assert var >= 0, f"negative variance {var!r} for the constant {c}"
    assert var <= 1e-9 * c**2, f"variance {var!r} of the constant {c} is not 0"


def test_curve_mean_var_variance_does_not_depend_on_a_shift(dtype):
    x = torch.linspace(0, 2, 201, dtype=dtype)
    f = torch.sin(3 * x)
    mean, var = curve_mean_var(x, f)
    mean_shifted, var_shifted = curve_mean_var(x, f + 100)
    assert mean_shifted == pytest.approx(mean + 100, rel=_tol(dtype))
    assert var_shifted == pytest.approx(var, rel=1e-3 if dtype == torch.float32 else 1e-9)


def test_curve_mean_var_keeps_its_inputs(dtype, call_unmodified):
    x = torch.linspace(0, 1, 21, dtype=dtype)
    f = (x - 0.5) ** 3
    call_unmodified(curve_mean_var, x, f)


@pytest.mark.parametrize(
    "x, f, error, match",
    named_cases(
        {
            "x-list": ([0.0, 1.0], torch.tensor([0.0, 1.0]), TypeError, r"x must be a torch\.Tensor, got list"),
            "f-numpy": (
                torch.tensor([0.0, 1.0]),
                np.array([0.0, 1.0]),
                TypeError,
                r"f must be a torch\.Tensor, got ndarray",
            ),
            "x-integer": (
                torch.tensor([0, 1, 2]),
                torch.zeros(3),
                TypeError,
                r"x must be a floating-point tensor.*got torch\.int64",
            ),
            "f-integer": (
                torch.zeros(3),
                torch.tensor([0, 1, 2]),
                TypeError,
                r"f must be a floating-point tensor.*got torch\.int64",
            ),
            "dtypes-differ": (
                torch.tensor([0.0, 1.0]),
                torch.tensor([0.0, 1.0], dtype=torch.float64),
                TypeError,
                r"f has dtype torch\.float64 but x has dtype torch\.float32",
            ),
            "x-2-D": (
                torch.zeros(2, 3),
                torch.zeros(2, 3),
                ValueError,
                r"x must have shape \(N,\).*got shape \(2, 3\) \(2-D\)",
            ),
            "x-0-D": (
                torch.tensor(1.0),
                torch.tensor(1.0),
                ValueError,
                r"x must have shape \(N,\).*got shape \(\) \(0-D\)",
            ),
            "lengths-differ": (
                torch.linspace(0, 1, 3),
                torch.zeros(4),
                ValueError,
                r"x and f must both have shape \(N,\) with N >= 2, got \(3,\) and \(4,\)",
            ),
            "f-2-D": (
                torch.linspace(0, 1, 3),
                torch.zeros(3, 1),
                ValueError,
                r"x and f must both have shape \(N,\) with N >= 2, got \(3,\) and \(3, 1\)",
            ),
            "one-point": (torch.tensor([0.5]), torch.tensor([1.0]), ValueError, r"N >= 2, got \(1,\) and \(1,\)"),
            "empty": (torch.zeros(0), torch.zeros(0), ValueError, r"N >= 2, got \(0,\) and \(0,\)"),
            "repeated-x": (torch.tensor([0.0, 1.0, 1.0]), torch.zeros(3), ValueError, r"x must be strictly increasing"),
            "decreasing-x": (
                torch.tensor([2.0, 1.0, 0.0]),
                torch.zeros(3),
                ValueError,
                r"x must be strictly increasing",
            ),
            "nan-x": (
                torch.tensor([0.0, float("nan"), 1.0]),
                torch.zeros(3),
                ValueError,
                r"x must be strictly increasing",
            ),
        }
    ),
)
def test_curve_mean_var_error_messages(x, f, error, match):
    with pytest.raises(error, match=match):
        curve_mean_var(x, f)


# ----------------------------------------------------------------------------------------------
# plot_lagrange_basis
# ----------------------------------------------------------------------------------------------


def _labelled_lines(ax):
    return {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}


def test_plot_lagrange_basis_draws_each_basis_polynomial(call_unmodified):
    nodes, _ = lagrange_points()
    fig = call_unmodified(plot_lagrange_basis, nodes)
    (ax,) = fig.axes
    lines = _labelled_lines(ax)
    assert list(lines) == [f"$l_{{{i}}}$" for i in range(10)]  # counted from 0, as in the notebook
    for i, line in enumerate(lines.values()):
        xs = torch.as_tensor(line.get_xdata(), dtype=torch.float64)
        assert xs[0] == pytest.approx(1.1) and xs[-1] == pytest.approx(8.3)  # the nodes' range
        np.testing.assert_allclose(line.get_ydata(), lagrange_basis(xs, nodes)[:, i].numpy(), rtol=1e-9, atol=1e-9)
    # a dot at (x_i, 1) on every curve
    dots = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert [(float(d.get_xdata()[0]), float(d.get_ydata()[0])) for d in dots] == [(v, 1.0) for v in nodes.tolist()]
    assert ax.get_ylim() == pytest.approx((-3.0, 3.0))
    assert ax.get_xlabel() == "x" and "l_i(x)" in ax.get_ylabel()
    assert "10 nodes" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(lines)


def test_plot_lagrange_basis_two_nodes_are_straight_lines_and_ylim_is_honoured():
    # nodes 0 and 2: l_0(x) = (2 - x) / 2 and l_1(x) = x / 2
    fig = plot_lagrange_basis(torch.tensor([0.0, 2.0]), ylim=(-0.5, 1.5))
    (ax,) = fig.axes
    first, second = _labelled_lines(ax).values()
    xs = np.asarray(first.get_xdata())
    np.testing.assert_allclose(first.get_ydata(), (2 - xs) / 2, atol=1e-6)
    np.testing.assert_allclose(second.get_ydata(), xs / 2, atol=1e-6)
    assert ax.get_ylim() == pytest.approx((-0.5, 1.5))
    assert "2 nodes" in ax.get_title()


def test_plot_lagrange_basis_highlight_marks_ones_and_zeros_of_the_chosen_curves():
    nodes, _ = lagrange_points()
    (ax,) = plot_lagrange_basis(nodes, highlight=(2, 8)).axes
    lines = list(_labelled_lines(ax).values())
    widths = [line.get_linewidth() for line in lines]
    assert widths[2] == widths[8] > max(w for i, w in enumerate(widths) if i not in (2, 8))
    assert all(line.get_alpha() < 1 for i, line in enumerate(lines) if i not in (2, 8))
    circles = [line for line in ax.get_lines() if line.get_marker() == "o" and line.get_markerfacecolor() == "white"]
    assert len(circles) == 2
    for circle, i in zip(circles, (2, 8), strict=True):
        xs = np.asarray(circle.get_xdata())
        np.testing.assert_allclose(xs, np.delete(nodes.numpy(), i))
        np.testing.assert_allclose(circle.get_ydata(), 0.0)
        # the curve is 0 there: l_i(x_j) = 0 for j != i
        np.testing.assert_allclose(lagrange_basis(torch.as_tensor(xs), nodes)[:, i].numpy(), 0.0, atol=1e-9)
    assert "open circles" in ax.get_title()


@pytest.mark.parametrize("highlight", [(10,), (-1,)])
def test_plot_lagrange_basis_highlight_out_of_range(highlight):
    with pytest.raises(ValueError, match=r"each index in highlight must be an integer in \[0, 9\], got -?1"):
        plot_lagrange_basis(lagrange_points()[0], highlight=highlight)


@pytest.mark.parametrize(
    "highlight, match",
    [
        (2, "highlight must be a sequence of node indices, got int"),
        ("2", "highlight must be a sequence of node indices, got str"),
        ((2.0,), r"each index in highlight must be an integer in \[0, 9\], got 2.0 \(float\)"),
        ((True,), r"each index in highlight must be an integer .* \(bool\)"),
    ],
    ids=["int", "str", "float", "bool"],
)
def test_plot_lagrange_basis_highlight_wrong_type(highlight, match):
    with pytest.raises(TypeError, match=match):
        plot_lagrange_basis(lagrange_points()[0], highlight=highlight)


# ----------------------------------------------------------------------------------------------
# plot_weight_comparison
# ----------------------------------------------------------------------------------------------


def _heights(ax):
    return np.array([bar.get_height() for bar in ax.patches])


@pytest.mark.parametrize("query, bandwidth", [(3.5, 0.5), (6.0, 0.3), (1.1, 1.0)])
def test_plot_weight_comparison_bars_are_the_weights_of_the_query(query, bandwidth, call_unmodified):
    nodes, values = lagrange_points()
    fig = call_unmodified(plot_weight_comparison, query, nodes, values, bandwidth)
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 3
    left, top, bottom = fig.axes
    q = torch.tensor([query], dtype=torch.float64)
    w_lag = lagrange_basis(q, nodes)[0]
    pred_nw, w_nw = nadaraya_watson(q, nodes, values, "gaussian", bandwidth)
    np.testing.assert_allclose(_heights(top), w_lag.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_heights(bottom), w_nw[0].numpy(), rtol=1e-9, atol=1e-12)
    for ax, w, name in ((top, w_lag, "Lagrange"), (bottom, w_nw[0], "Gaussian")):
        title = ax.get_title()
        assert title.startswith(f"{name} weights")
        assert "sum 1.0000" in title  # both kinds of weights sum to 1
        assert f"from {float(w.min()):.3g} to {float(w.max()):.3g}" in title
        assert ax.get_ylabel() == "weight"
    # the data points label the lower chart's bars, which stand under the upper chart's (shown once)
    assert [t.get_text() for t in bottom.get_xticklabels()] == [f"{v:.1f}" for v in nodes.tolist()]
    assert top.get_xticklabels() == [] and list(top.get_xticks()) == list(bottom.get_xticks())
    assert bottom.get_xlabel() == "data point $x_i$"
    # the stars on the left are the two estimates at the query
    stars = [line for line in left.get_lines() if line.get_marker() == "*"]
    assert [float(s.get_xdata()[0]) for s in stars] == [query, query]
    assert [float(s.get_ydata()[0]) for s in stars] == pytest.approx([float(w_lag @ values), float(pred_nw[0])])
    assert left.get_xlabel() == "x" and left.get_ylabel() == "y" and f"{query:.2f}" in left.get_title()


def test_plot_weight_comparison_curves_data_and_range():
    nodes, values = lagrange_points()
    fig = plot_weight_comparison(3.5, nodes, values, bandwidth=0.5)
    left = fig.axes[0]
    lines = _labelled_lines(left)
    lagrange = next(line for label, line in lines.items() if label.startswith("Lagrange"))
    gauss = next(line for label, line in lines.items() if label.startswith("Gaussian NW"))
    xs = torch.as_tensor(lagrange.get_xdata(), dtype=torch.float64)
    np.testing.assert_allclose(lagrange.get_ydata(), (lagrange_basis(xs, nodes) @ values).numpy(), rtol=1e-9)
    np.testing.assert_allclose(gauss.get_ydata(), nadaraya_watson(xs, nodes, values, "gaussian", 0.5)[0].numpy())
    # at 3.5 the Lagrange estimate (11.78) leaves [min y, max y] = [0.2, 5.6]; the Gaussian one (3.61) cannot
    assert lagrange.get_label() == "Lagrange: f(3.50) = 11.78"
    assert gauss.get_label() == "Gaussian NW, h = 0.5: f(3.50) = 3.611"
    np.testing.assert_allclose(left.collections[0].get_offsets(), torch.stack([nodes, values], 1).numpy())
    lo, hi = 0.2, 5.6
    assert left.get_ylim() == pytest.approx((lo - 0.6 * (hi - lo), hi + 0.6 * (hi - lo)))


def test_plot_weight_comparison_weight_scales_stay_put_while_the_query_moves():
    """Gaussian weights on 0 to 1; Lagrange weights on one symmetric log scale to the power of ten above the largest
    weight anywhere between the nodes (2044, near 7.94, for these points), whatever the query."""
    nodes, values = lagrange_points()
    fine = torch.linspace(float(nodes.min()), float(nodes.max()), 801, dtype=torch.float64)
    largest = float(lagrange_basis(fine, nodes).abs().max())
    assert 1e3 < largest < 1e4
    for query in (1.1, 3.15, 6.1, 7.8):
        _, top, bottom = plot_weight_comparison(query, nodes, values, 0.5).axes
        assert top.get_yscale() == "symlog" and top.get_ylim() == pytest.approx((-1e4, 1e4))
        assert [t.get_text() for t in top.get_yticklabels()] == [
            "\N{MINUS SIGN}10⁴",
            "\N{MINUS SIGN}100",
            "\N{MINUS SIGN}1",
            "0",
            "1",
            "100",
            "10⁴",
        ]
        assert list(top.get_yticks(minor=True)) == [-1000.0, -10.0, 10.0, 1000.0]
        assert bottom.get_yscale() == "linear" and bottom.get_ylim() == (0.0, 1.0)
        plt.close("all")
    _, top, _ = plot_weight_comparison(9.5, nodes, values, 0.5).axes  # outside the nodes: weights beyond 1e4
    assert top.get_ylim()[1] > float(lagrange_basis(torch.tensor([9.5], dtype=torch.float64), nodes).abs().max())
    plt.close("all")


@pytest.mark.parametrize("query", [2.5, 3.5, 6.1, 7.8])
def test_plot_weight_comparison_writes_an_estimate_off_the_chart_inside_it(query):
    nodes, values = lagrange_points()
    fig = plot_weight_comparison(query, nodes, values, 0.5)
    fig.canvas.draw()
    left = fig.axes[0]
    (note,) = left.texts  # the Lagrange estimate, above or below the chart
    box, frame = note.get_window_extent(), left.get_window_extent()
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
    plt.close(fig)


def test_plot_weight_comparison_works_in_float32():
    nodes, values = lagrange_points(torch.float32)
    _, top, bottom = plot_weight_comparison(2.5, nodes, values, 0.4).axes
    q = torch.tensor([2.5])
    np.testing.assert_allclose(_heights(top), lagrange_basis(q, nodes)[0].numpy(), rtol=1e-6)
    np.testing.assert_allclose(_heights(bottom), nadaraya_watson(q, nodes, values, "gaussian", 0.4)[1][0].numpy())


def test_plot_weight_comparison_mismatched_lengths():
    with pytest.raises(ValueError, match=r"values\.shape\[0\] must be 3.*got values of shape \(2,\)"):
        plot_weight_comparison(0.5, torch.tensor([0.0, 1.0, 2.0]), torch.tensor([1.0, 2.0]))


# ----------------------------------------------------------------------------------------------
# plot_noisy_fit
# ----------------------------------------------------------------------------------------------


def _rmse(curve, truth):
    return float(((curve - truth) ** 2).mean().sqrt())


@pytest.mark.parametrize("n_nodes, noise, bandwidth, seed", [(10, 0.3, 0.4, 0), (7, 0.0, 0.6, 3), (12, 1.0, 0.25, 5)])
def test_plot_noisy_fit_draws_truth_samples_and_both_fits(n_nodes, noise, bandwidth, seed):
    fig = plot_noisy_fit(n_nodes, noise, bandwidth, seed)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    x_nodes, y_nodes = noisy_samples(n_nodes, noise, seed=seed)
    np.testing.assert_allclose(ax.collections[0].get_offsets(), torch.stack([x_nodes, y_nodes], 1).numpy())
    assert ax.collections[0].get_label() == f"{n_nodes} noisy samples"
    lines = _labelled_lines(ax)
    x = torch.as_tensor(lines["truth"].get_xdata(), dtype=torch.float64)
    assert float(x[0]) == 0.0 and float(x[-1]) == 5.0
    truth = true_function(x)
    lag = lagrange_basis(x, x_nodes) @ y_nodes
    nw, _ = nadaraya_watson(x, x_nodes, y_nodes, "gaussian", bandwidth)
    np.testing.assert_allclose(lines["truth"].get_ydata(), truth.numpy())
    lag_label = f"Lagrange (RMSE {_rmse(lag, truth):.3g})"
    nw_label = f"Nadaraya-Watson, h = {bandwidth:.2g} (RMSE {_rmse(nw, truth):.3g})"
    np.testing.assert_allclose(lines[lag_label].get_ydata(), lag.numpy(), rtol=1e-9)
    np.testing.assert_allclose(lines[nw_label].get_ydata(), nw.numpy())
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y"
    assert f"Noise level {noise:.2g}" in ax.get_title()
    assert ax.get_ylim() == pytest.approx((-2.0, 6.0))


def test_plot_noisy_fit_without_noise_lagrange_passes_through_the_samples():
    x_nodes, y_nodes = noisy_samples(11, 0.0)  # nodes 0.5 apart: on the plot's grid of step 5 / 800
    assert torch.equal(y_nodes, true_function(x_nodes))
    (ax,) = plot_noisy_fit(11, 0.0, 0.4, 0).axes
    lines = _labelled_lines(ax)
    lag = next(line for label, line in lines.items() if label.startswith("Lagrange"))
    xs, ys = np.asarray(lag.get_xdata()), np.asarray(lag.get_ydata())
    for xv, yv in zip(x_nodes.tolist(), y_nodes.tolist(), strict=True):
        (i,) = np.flatnonzero(np.isclose(xs, xv, atol=1e-12))
        assert ys[i] == pytest.approx(yv, abs=1e-9)


def test_plot_noisy_fit_is_deterministic_per_seed():
    def samples(seed):
        return plot_noisy_fit(seed=seed).axes[0].collections[0].get_offsets()

    np.testing.assert_array_equal(samples(4), samples(4))
    assert not np.array_equal(samples(4), samples(5))


# ----------------------------------------------------------------------------------------------
# Every helper: draws on given axes, returns the Figure, no plt.show(), no global settings
# ----------------------------------------------------------------------------------------------

_NODES, _VALUES = lagrange_points()
HELPERS = {
    "plot_lagrange_basis": (lambda **kw: plot_lagrange_basis(_NODES, **kw), 1, "ax"),
    "plot_weight_comparison": (lambda **kw: plot_weight_comparison(3.5, _NODES, _VALUES, 0.5, **kw), 3, "axes"),
    "plot_noisy_fit": (lambda **kw: plot_noisy_fit(10, 0.3, 0.4, 0, **kw), 1, "ax"),
}


@pytest.mark.parametrize("name", HELPERS)
def test_helper_returns_a_figure_without_show_or_global_changes(name, monkeypatch):
    draw, n_axes, _ = HELPERS[name]
    fig = draw_cleanly(monkeypatch, draw)
    assert len(fig.axes) == n_axes
    assert all(ax.get_ylabel() and ax.get_title() for ax in fig.axes)  # every panel is labelled and titled
    assert any(ax.get_xlabel() for ax in fig.axes)


@pytest.mark.parametrize("name", HELPERS)
def test_helper_draws_on_the_axes_it_is_given(name):
    """STYLE 7: every helper takes ax=None (or axes=None) and draws there, without a new figure."""
    draw, n_axes, keyword = HELPERS[name]
    fn = globals()[name]
    assert inspect.signature(fn).parameters[keyword].default is None
    fig, axes = plt.subplots(1, n_axes)
    result = draw(**{keyword: axes})
    assert result is fig
    assert plt.get_fignums() == [fig.number]  # no new figure
    assert list(fig.axes) == list(np.atleast_1d(axes))  # and no extra axes
    for ax in np.atleast_1d(axes):
        assert ax.has_data() and ax.get_ylabel()


def test_plot_weight_comparison_accepts_a_tuple_of_axes_from_two_figures_order_kept():
    """axes = (curves, Lagrange weights, Gaussian weights), in that order; the curves' figure is returned."""
    fig_a, curves = plt.subplots()
    fig_b, (lag, gauss) = plt.subplots(2, 1)
    result = plot_weight_comparison(3.5, _NODES, _VALUES, 0.5, axes=(curves, lag, gauss))
    assert result is fig_a
    assert sorted(plt.get_fignums()) == sorted([fig_a.number, fig_b.number])
    assert len(curves.get_lines()) >= 2 and not curves.containers  # curves only, no bars
    assert lag.get_title().startswith("Lagrange") and gauss.get_title().startswith("Gaussian")
    assert [len(c) for c in lag.containers] == [len(c) for c in gauss.containers] == [10]


# ----------------------------------------------------------------------------------------------
# Lagrange basis
# ----------------------------------------------------------------------------------------------


def _lagrange_loop(x, nodes):
    """The product formula, written out with plain Python floats."""
    rows = []
    for xa in x.tolist():
        row = []
        for i, xi in enumerate(nodes.tolist()):
            value = 1.0
            for j, xj in enumerate(nodes.tolist()):
                if j != i:
                    value *= (xa - xj) / (xi - xj)
            row.append(value)
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)


def test_lagrange_basis_hand_computed_two_nodes():
    # nodes 0 and 2: l_0(x) = (x - 2) / (0 - 2), l_1(x) = x / 2
    got = lagrange_basis(torch.tensor([0.0, 1.0, 3.0]), torch.tensor([0.0, 2.0]))
    assert_close(got, torch.tensor([[1.0, 0.0], [0.5, 0.5], [-0.5, 1.5]]))


def test_lagrange_basis_matches_product_formula_loop():
    nodes, _ = lagrange_points()
    x = torch.linspace(0.5, 9.0, 37, dtype=torch.float64)
    assert_close(lagrange_basis(x, nodes), _lagrange_loop(x, nodes), rtol=1e-10, atol=1e-10)


def test_lagrange_basis_is_one_at_own_node_zero_at_others():
    nodes, _ = lagrange_points()
    basis = lagrange_basis(nodes, nodes)
    assert (basis - torch.eye(10, dtype=torch.float64)).abs().max() < 1e-9


def test_lagrange_basis_rows_sum_to_one():
    nodes, _ = lagrange_points()
    x = torch.linspace(0.6, 8.8, 300, dtype=torch.float64)
    assert (lagrange_basis(x, nodes).sum(1) - 1).abs().max() < 1e-9


@pytest.mark.parametrize("num_nodes", [4, 5, 7, 10])
def test_lagrange_basis_reproduces_a_cubic_exactly(num_nodes):
    def cubic(t):
        return 2 - t + 0.5 * t**2 - 0.1 * t**3

    nodes = lagrange_points()[0][:num_nodes]
    x = torch.linspace(0.6, 8.8, 200, dtype=torch.float64)
    assert_close(lagrange_basis(x, nodes) @ cubic(nodes), cubic(x), rtol=1e-9, atol=1e-9)


def test_lagrange_basis_interpolates_the_data_points():
    x, y = lagrange_points()
    assert_close(lagrange_basis(x, x) @ y, y)


def test_lagrange_basis_keeps_dtype_and_inputs(dtype, call_unmodified):
    nodes = torch.tensor([0.0, 1.0, 3.0], dtype=dtype)
    x = torch.linspace(-1, 4, 11, dtype=dtype)
    basis = call_unmodified(lagrange_basis, x, nodes)
    assert basis.dtype == dtype and basis.shape == (11, 3)


@pytest.mark.parametrize(
    "x, nodes, error, match",
    [
        ([0.0, 1.0], torch.tensor([0.0, 1.0]), TypeError, r"x must be a torch\.Tensor, got list"),
        (torch.tensor([0.0]), np.array([0.0, 1.0]), TypeError, r"nodes must be a torch\.Tensor, got ndarray"),
        (torch.tensor([0.0]), torch.tensor([0, 1]), TypeError, r"nodes must be a floating-point tensor.*torch\.int64"),
        (
            torch.tensor([0.0]),
            torch.tensor([0.0, 1.0], dtype=torch.float64),
            TypeError,
            r"nodes has dtype torch\.float64 but x has dtype torch\.float32",
        ),
        (
            torch.zeros(2, 2),
            torch.tensor([0.0, 1.0]),
            ValueError,
            r"x must have shape \(X,\).*got shape \(2, 2\) \(2-D\)",
        ),
        (torch.zeros(2), torch.zeros(2, 1), ValueError, r"nodes must have shape \(N,\).*got shape \(2, 1\) \(2-D\)"),
        (torch.zeros(2), torch.zeros(0), ValueError, r"nodes must hold at least one node, got 0"),
        (
            torch.zeros(2),
            torch.tensor([1.0, 2.0, 1.0]),
            ValueError,
            r"nodes must be distinct, got nodes\[0\] == nodes\[2\] == 1\.0",
        ),
    ],
)
def test_lagrange_basis_error_messages(x, nodes, error, match):
    with pytest.raises(error, match=match):
        lagrange_basis(x, nodes)
