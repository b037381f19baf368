"""attn_course.plots.heatmaps (show_heatmaps) and the figures of notebook 01 in plots.pooling (Agg backend, see
conftest)."""

import inspect

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from _helpers import colorbars, heatmap_panels, only_mesh
from matplotlib.figure import Figure
from torch.testing import assert_close

from attn_course import (
    KERNELS,
    nadaraya_watson,
    plot_head_weights,
    plot_kernels,
    plot_masking_demo,
    plot_nw_fit,
    plot_query_weights,
    plot_regression,
    show_heatmaps,
)
from attn_course.data import toy_regression


def _rand(*shape, **kwargs):
    """Uniform [0, 1) data from a fixed seed."""
    return torch.rand(*shape, generator=torch.Generator().manual_seed(0), **kwargs)


def _small_data():
    return toy_regression(n_train=12, x_max=5.0, step=0.5, seed=1, dtype=torch.float64)


# ----------------------------------------------------------------------------------------------
# show_heatmaps
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, rows, cols", [((3, 4), 1, 1), ((2, 3, 4), 1, 2), ((2, 3, 3, 4), 2, 3)])
def test_show_heatmaps_panels_colorbar_and_shared_scale(shape, rows, cols, gen):
    matrices = torch.rand(*shape, generator=gen)
    fig = show_heatmaps(matrices)
    assert isinstance(fig, Figure)
    panels = heatmap_panels(fig)
    assert len(panels) == rows * cols
    assert len(colorbars(fig)) == 1
    grid = matrices.reshape(rows, cols, 3, 4)
    expected_clim = (0.0, float(matrices.max()))  # default: min(0, data) to max(data)
    for i, ax in enumerate(panels):
        mesh = only_mesh(ax)
        assert mesh.get_clim() == pytest.approx(expected_clim)
        # panels in row order, each showing its own matrix
        np.testing.assert_allclose(
            np.asarray(mesh.get_array()).reshape(3, 4), grid[i // cols, i % cols].numpy(), rtol=1e-6
        )


def test_show_heatmaps_scale_includes_negative_values_and_honours_vmin_vmax():
    data = torch.tensor([[[-0.5, 1.0], [0.2, 0.3]], [[0.0, 2.0], [0.1, 0.4]]])
    for ax in heatmap_panels(show_heatmaps(data)):
        assert only_mesh(ax).get_clim() == pytest.approx((-0.5, 2.0))
    for ax in heatmap_panels(show_heatmaps(data, vmin=-1.0, vmax=3.0)):
        assert only_mesh(ax).get_clim() == pytest.approx((-1.0, 3.0))


def test_show_heatmaps_labels_titles_and_tokens():
    tokens_k = ["the", "cat", "sat", "down"]
    tokens_q = ["le", "chat", "assis"]
    fig = show_heatmaps(
        _rand(2, 2, 3, 4),
        xlabel="key tokens",
        ylabel="query tokens",
        titles=["a", "b", "c", "d"],
        xticklabels=tokens_k,
        yticklabels=tokens_q,
        colorbar_label="weight",
        suptitle="all heads",
    )
    panels = heatmap_panels(fig)
    assert [ax.get_title() for ax in panels] == ["a", "b", "c", "d"]
    for i, ax in enumerate(panels):
        row, col = divmod(i, 2)
        assert ax.get_xlabel() == ("key tokens" if row == 1 else "")
        assert ax.get_ylabel() == ("query tokens" if col == 0 else "")
        # token labels on the outer panels only (get_*ticklabels lists the visible ones)
        assert [t.get_text() for t in ax.get_xticklabels()] == (tokens_k if row == 1 else [])
        assert [t.get_text() for t in ax.get_yticklabels()] == (tokens_q if col == 0 else [])
        bottom, top = ax.get_ylim()
        assert bottom > top  # the first query is the top row
    assert colorbars(fig)[0].get_ylabel() == "weight"
    assert fig.get_suptitle() == "all heads"


def test_show_heatmaps_default_axis_labels_and_index_ticks():
    (ax,) = heatmap_panels(show_heatmaps(_rand(2, 3)))
    assert ax.get_xlabel() == "Keys" and ax.get_ylabel() == "Queries"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]


def test_show_heatmaps_thins_ticks_of_long_sequences():
    tokens = [f"t{i}" for i in range(30)]
    (ax,) = heatmap_panels(show_heatmaps(_rand(2, 30), xticklabels=tokens))
    assert [t.get_text() for t in ax.get_xticklabels()] == tokens[::2]


@pytest.mark.parametrize(
    "annotate, shape, per_panel",
    [(True, (2, 3, 4), 12), (False, (2, 3, 4), 0), ("auto", (3, 3), 9), ("auto", (11, 11), 0)],
)
def test_show_heatmaps_annotations(annotate, shape, per_panel, gen):
    matrices = torch.rand(*shape, generator=gen)
    panels = heatmap_panels(show_heatmaps(matrices, annotate=annotate, fmt=".3f"))
    for ax, matrix in zip(panels, matrices.reshape(-1, *shape[-2:]), strict=True):
        texts = [t.get_text() for t in ax.texts]
        assert len(texts) == per_panel
        if per_panel:
            assert texts == [f"{v:.3f}" for v in matrix.reshape(-1).tolist()]


@pytest.mark.parametrize(
    "matrices",
    [
        _rand(2, 3, requires_grad=True),
        np.random.default_rng(0).random((2, 3)),
        [[0.1, 0.2], [0.3, 0.4]],
        _rand(2, 3, dtype=torch.float64),
    ],
    ids=["grad-tensor", "numpy", "list", "float64"],
)
def test_show_heatmaps_accepts_array_likes_and_keeps_them(matrices):
    before = matrices.detach().clone() if isinstance(matrices, torch.Tensor) else np.array(matrices, copy=True)
    fig = show_heatmaps(matrices)
    assert len(heatmap_panels(fig)) == 1
    after = matrices.detach() if isinstance(matrices, torch.Tensor) else np.asarray(matrices)
    np.testing.assert_array_equal(np.asarray(after), np.asarray(before))


@pytest.mark.parametrize(
    "matrices, kwargs, match",
    [
        (_rand(3, 4), {"xticklabels": ["a", "b"]}, r"xticklabels must hold 4 labels \(one per key\), got 2"),
        (
            _rand(3, 4),
            {"yticklabels": ["a", "b", "c", "d"]},
            r"yticklabels must hold 3 labels \(one per query\), got 4",
        ),
        (_rand(2, 2, 3, 4), {"titles": ["a", "b", "c"]}, r"titles must hold 4 titles \(one per panel\), got 3"),
        (_rand(4), {}, r"matrices must have shape \(Q, K\), \(P, Q, K\) or \(R, C, Q, K\).*got shape \(4,\)"),
        (_rand(1, 1, 1, 2, 2), {}, r"matrices must have shape .*got shape \(1, 1, 1, 2, 2\)"),
        (_rand(2, 0, 3), {}, r"no empty axis, got shape \(2, 0, 3\)"),
        (torch.tensor([[0.5, float("nan")]]), {}, r"matrices must be finite"),
    ],
)
def test_show_heatmaps_error_messages(matrices, kwargs, match):
    with pytest.raises(ValueError, match=match):
        show_heatmaps(matrices, **kwargs)


# ----------------------------------------------------------------------------------------------
# show_heatmaps: one list of tick labels per panel (sequences with different tokens)
# ----------------------------------------------------------------------------------------------


def _shared_x(ax):
    return len(ax.get_shared_x_axes().get_siblings(ax))


def test_show_heatmaps_per_panel_labels_each_panel_shows_its_own():
    keys = [["a", "b", "c", "d"], ["e", "f", "g", "h"], ["i", "j", "k", "l"], ["m", "n", "o", "p"]]
    queries = [["A", "B", "C"], ["D", "E", "F"], ["G", "H", "I"], ["J", "K", "L"]]
    fig = show_heatmaps(_rand(2, 2, 3, 4), xticklabels=keys, yticklabels=queries, titles=["1", "2", "3", "4"])
    panels = heatmap_panels(fig)
    assert len(panels) == 4 and len(colorbars(fig)) == 1
    for i, ax in enumerate(panels):
        row, col = divmod(i, 2)
        assert [t.get_text() for t in ax.get_xticklabels()] == keys[i]  # inner panels too
        assert [t.get_text() for t in ax.get_yticklabels()] == queries[i]
        assert _shared_x(ax) == 1  # panels with their own labels do not share axes
        assert ax.get_xlabel() == ("Keys" if row == 1 else "")
        assert ax.get_ylabel() == ("Queries" if col == 0 else "")


def test_show_heatmaps_per_panel_tuples_for_one_axis_only():
    keys = (("w1", "w2", "<pad>"), ("w1", "w2", "w3"))
    fig = show_heatmaps(_rand(2, 2, 3), xticklabels=keys, yticklabels=["q1", "q2"])
    left, right = heatmap_panels(fig)
    assert [t.get_text() for t in left.get_xticklabels()] == ["w1", "w2", "<pad>"]
    assert [t.get_text() for t in right.get_xticklabels()] == ["w1", "w2", "w3"]
    assert [t.get_text() for t in right.get_yticklabels()] == ["q1", "q2"]


def test_show_heatmaps_one_list_for_all_panels_labels_the_outer_panels_only():
    fig = show_heatmaps(_rand(2, 2, 3, 4), xticklabels=["a", "b", "c", "d"], yticklabels=["p", "q", "r"])
    panels = heatmap_panels(fig)
    for i, ax in enumerate(panels):
        row, col = divmod(i, 2)
        assert [t.get_text() for t in ax.get_xticklabels()] == (["a", "b", "c", "d"] if row == 1 else [])
        assert [t.get_text() for t in ax.get_yticklabels()] == (["p", "q", "r"] if col == 0 else [])
        assert ax.get_xlim() == (0.0, 4.0) and ax.get_ylim() == (3.0, 0.0)  # the same cells in every panel


def test_show_heatmaps_per_panel_lists_label_every_panel_even_when_they_agree():
    # A slider that makes two sequences equal (notebook 05's lengths) keeps both panels' labels: no jump.
    fig = show_heatmaps(_rand(2, 3, 4), yticklabels=[["x", "y", "z"], ["x", "y", "z"]])
    left, right = heatmap_panels(fig)
    assert [t.get_text() for t in left.get_yticklabels()] == ["x", "y", "z"]
    assert [t.get_text() for t in right.get_yticklabels()] == ["x", "y", "z"]


def test_show_heatmaps_per_panel_labels_on_given_axes():
    fig, ax = plt.subplots()
    result = show_heatmaps(_rand(2, 3), ax=ax, xticklabels=[["a", "b", "c"]], yticklabels=[["p", "q"]])
    assert result is fig and plt.get_fignums() == [fig.number]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["p", "q"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"xticklabels": [["a", "b", "c", "d"]] * 3}, r"xticklabels must hold one list per panel \(4\), got 3 lists"),
        ({"yticklabels": [["a", "b", "c"]] * 5}, r"yticklabels must hold one list per panel \(4\), got 5 lists"),
        (
            {"xticklabels": [["a", "b", "c", "d"]] * 3 + [["a", "b", "c"]]},
            r"xticklabels must hold 4 labels \(one per key\), got 3",
        ),
        (
            {"yticklabels": [("a", "b", "c"), ("a", "b")] + [("a", "b", "c")] * 2},
            r"yticklabels must hold 3 labels \(one per query\), got 2",
        ),
    ],
    ids=["x-too-few-lists", "y-too-many-lists", "x-short-list", "y-short-tuple"],
)
def test_show_heatmaps_per_panel_label_error_messages(kwargs, match):
    with pytest.raises(ValueError, match=match):
        show_heatmaps(_rand(2, 2, 3, 4), **kwargs)
    assert plt.get_fignums() == []


# ----------------------------------------------------------------------------------------------
# plot_regression, plot_kernels, plot_query_weights, plot_nw_fit
# ----------------------------------------------------------------------------------------------


def test_plot_regression_draws_data_prediction_and_truth(call_unmodified):
    d = _small_data()
    y_pred = torch.zeros_like(d.x_test)
    fig = call_unmodified(plot_regression, d.x_train, d.y_train, d.x_test, y_pred, d.y_test, title="a fit")
    (ax,) = fig.axes
    assert isinstance(fig, Figure)
    assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y" and ax.get_title() == "a fit"
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["truth"].get_ydata(), d.y_test.numpy())
    np.testing.assert_allclose(lines["prediction"].get_ydata(), y_pred.numpy())
    np.testing.assert_allclose(ax.collections[0].get_offsets(), torch.stack([d.x_train, d.y_train], 1).numpy())
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"truth", "prediction"}


def test_plot_regression_without_truth_or_title():
    d = _small_data()
    (ax,) = plot_regression(d.x_train, d.y_train, d.x_test, d.y_test, label="NW").axes
    assert [line.get_label() for line in ax.get_lines()] == ["NW"]
    assert ax.get_title() == ""


@pytest.mark.parametrize("names", [None, ["boxcar", "gaussian"]])
def test_plot_kernels_draws_each_kernel(names):
    fig = plot_kernels(names)
    (ax,) = fig.axes
    expected = list(KERNELS) if names is None else names
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == expected
    for line, name in zip(lines, expected, strict=True):
        u = torch.as_tensor(line.get_xdata(), dtype=torch.float64)
        np.testing.assert_allclose(line.get_ydata(), KERNELS[name](u).numpy())
    assert ax.get_xlabel() and ax.get_ylabel() == "K(u)" and ax.get_title()


def test_plot_kernels_unknown_name():
    with pytest.raises(ValueError, match=r"names must be kernel names from \[.*'gaussian'\], got \['cosine'\]"):
        plot_kernels(["gaussian", "cosine"])


def test_plot_query_weights_draws_points_bars_and_prediction():
    keys = torch.tensor([0.0, 1.0, 2.0, 3.0])
    values = torch.tensor([1.0, 3.0, 2.0, 5.0])
    # boxcar, h = 1.2: the keys 0, 1, 2 lie within 1.2 of the query 1.0 -> weights 1/3 each, prediction 2
    fig = plot_query_weights(1.0, keys, values, kernel="boxcar", bandwidth=1.2)
    top, bottom = heatmap_panels(fig)
    assert len(colorbars(fig)) == 1
    assert top.get_ylabel() and bottom.get_xlabel() and bottom.get_ylabel()
    assert "boxcar" in top.get_title() and "1.2" in top.get_title()
    bars = bottom.collections[0].get_segments()  # one vertical segment per key: (x, 0) to (x, weight)
    np.testing.assert_allclose([bar[1, 1] - bar[0, 1] for bar in bars], [1 / 3, 1 / 3, 1 / 3, 0.0], rtol=1e-6)
    np.testing.assert_allclose([bar[:, 0] for bar in bars], np.stack([keys.numpy()] * 2, axis=1))
    star = [line for line in top.get_lines() if line.get_marker() == "*"][0]
    assert star.get_xdata()[0] == pytest.approx(1.0) and star.get_ydata()[0] == pytest.approx(2.0)
    np.testing.assert_allclose(top.collections[0].get_array(), [1 / 3, 1 / 3, 1 / 3, 0.0], rtol=1e-6)


def test_plot_query_weights_gaussian_matches_nadaraya_watson(call_unmodified):
    d = _small_data()
    fig = call_unmodified(plot_query_weights, 2.0, d.x_train, d.y_train, "gaussian", 0.5)
    _, bottom = heatmap_panels(fig)
    pred, weights = nadaraya_watson(torch.tensor([2.0], dtype=torch.float64), d.x_train, d.y_train, "gaussian", 0.5)
    np.testing.assert_allclose([bar[1, 1] for bar in bottom.collections[0].get_segments()], weights[0].numpy())


def test_plot_query_weights_mismatched_lengths():
    with pytest.raises(ValueError, match=r"values\.shape\[0\] must be 3.*got values of shape \(2,\)"):
        plot_query_weights(0.5, torch.zeros(3), torch.zeros(2))


def test_plot_nw_fit_draws_the_fit_and_the_weights(call_unmodified):
    d = _small_data()
    x_shuffled = d.x_train.flip(0)  # unsorted keys are sorted inside
    y_shuffled = d.y_train.flip(0)
    fig = call_unmodified(plot_nw_fit, x_shuffled, y_shuffled, d.x_test, d.y_test, kernel="epanechnikov", bandwidth=0.8)
    left, right = heatmap_panels(fig)
    assert len(colorbars(fig)) == 1
    pred, weights = nadaraya_watson(d.x_test, d.x_train, d.y_train, "epanechnikov", 0.8)  # x_train is sorted
    lines = {line.get_label(): line for line in left.get_lines()}
    np.testing.assert_allclose(lines["Nadaraya-Watson"].get_ydata(), pred.numpy())
    mesh = only_mesh(right)
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(weights.shape), weights.numpy())
    assert mesh.get_clim()[0] == 0
    assert "epanechnikov" in left.get_title() and "0.8" in left.get_title()
    for ax in (left, right):
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()


# ----------------------------------------------------------------------------------------------
# Every helper: draws on given axes, returns the Figure, no plt.show(), no global settings
# ----------------------------------------------------------------------------------------------

_D = _small_data()
HELPERS = {
    "show_heatmaps": (lambda **kw: show_heatmaps(_rand(3, 4), **kw), 1, "ax"),
    "plot_regression": (lambda **kw: plot_regression(_D.x_train, _D.y_train, _D.x_test, _D.y_test, **kw), 1, "ax"),
    "plot_kernels": (lambda **kw: plot_kernels(**kw), 1, "ax"),
    "plot_query_weights": (lambda **kw: plot_query_weights(1.0, _D.x_train, _D.y_train, **kw), 2, "axes"),
    "plot_nw_fit": (lambda **kw: plot_nw_fit(_D.x_train, _D.y_train, _D.x_test, _D.y_test, **kw), 2, "axes"),
}


@pytest.mark.parametrize("name", HELPERS)
def test_helper_returns_a_figure_without_show_or_global_changes(name, monkeypatch):
    draw, _, _ = HELPERS[name]

    def forbidden_show(*args, **kwargs):
        raise AssertionError("plot helpers must not call plt.show()")

    monkeypatch.setattr(plt, "show", forbidden_show)
    before = dict(matplotlib.rcParams)
    fig = draw()
    assert isinstance(fig, Figure)
    assert dict(matplotlib.rcParams) == before
    panels = heatmap_panels(fig)
    assert all(ax.get_xlabel() or ax.get_ylabel() for ax in panels)  # every panel is labelled
    assert any(ax.get_xlabel() for ax in panels) and any(ax.get_ylabel() for ax in panels)
    assert plt.get_fignums() == [fig.number]


@pytest.mark.parametrize("name", HELPERS)
def test_helper_draws_on_the_axes_it_is_given(name):
    """STYLE 7 and the plotting module's docstring: every helper takes ax=None (or axes=None)."""
    draw, n_axes, keyword = HELPERS[name]
    fn = globals()[name]
    assert keyword in inspect.signature(fn).parameters, f"{name} has no {keyword}= parameter"
    fig, axes = plt.subplots(1, n_axes)
    result = draw(**{keyword: axes})
    assert result is fig
    assert plt.get_fignums() == [fig.number]  # no new figure
    for ax in np.atleast_1d(axes):
        assert ax.has_data() and ax.get_xlabel() + ax.get_ylabel()


def test_show_heatmaps_figure_values_match_weights_of_attention(gen):
    """End to end: the heatmap of nadaraya_watson's weights shows exactly those weights."""
    x = torch.rand(5, generator=gen) * 3
    _, weights = nadaraya_watson(torch.linspace(0, 3, 4), x, x, "gaussian", 0.5)
    (ax,) = heatmap_panels(show_heatmaps(weights))
    assert_close(torch.as_tensor(np.asarray(only_mesh(ax).get_array()), dtype=torch.float32).reshape(4, 5), weights)


def _outside_px(fig: Figure) -> float:
    """How far (in pixels) the figure's drawing passes the edge of its picture, drawn once as a slider draws it."""
    canvas = fig.canvas
    canvas.draw()
    box = fig.get_tightbbox(canvas.get_renderer()).transformed(fig.dpi_scale_trans)
    width, height = canvas.get_width_height()
    return max(-box.x0, -box.y0, box.x1 - width, box.y1 - height)


@pytest.mark.parametrize(
    "make",
    [
        # one panel's keys slanted (<pad>), the other's upright: the slanted labels and "Keys" stood below the picture
        lambda: plot_masking_demo(4, 6),
        lambda: plot_masking_demo(6, 6),
        lambda: plot_head_weights(1),  # one head: the suptitle was wider than the figure
        lambda: show_heatmaps(_rand(2, 6, 6), xticklabels=[["a"] * 6, ["word"] * 6], yticklabels=list("abcdef")),
    ],
)
def test_heatmap_figures_fit_their_picture_in_one_draw(make):
    fig = make()
    assert _outside_px(fig) <= 0.5
    plt.close(fig)


def test_show_heatmaps_slants_every_panel_alike_and_numbers_stay_out_of_the_layout():
    fig = show_heatmaps(_rand(2, 3, 3), xticklabels=[["a", "b", "c"], ["a", "b", "<pad>"]])
    rotations = {t.get_rotation() for ax in heatmap_panels(fig) for t in ax.get_xticklabels()}
    assert rotations == {45.0}  # one panel's long label slants both panels' labels
    assert all(not t.get_in_layout() for ax in heatmap_panels(fig) for t in ax.texts)  # inside the cells
    plt.close(fig)
