"""attn_course.widgets: slider_panel (no browser needed: the widgets run in plain Python)."""

import io
from collections import OrderedDict

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from PIL import Image

from attn_course import (
    plot_masking_demo,
    plot_noisy_fit,
    plot_nw_fit,
    plot_query_weights,
    plot_rotation,
    plot_saturation,
    plot_weight_comparison,
    plot_worked_example,
    slider_panel,
)
from attn_course.data import lagrange_points, toy_regression
from attn_course.widgets import _figure_png as figure_png


class RecordingPlot:
    """A fake plotting function: records every call's arguments and draws a tiny figure."""

    def __init__(self):
        self.calls = []
        self.figures = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        fig, ax = plt.subplots(figsize=(1, 1))
        ax.plot([0, 1], [0, kwargs.get("h", 0)])
        self.figures.append(fig)
        return fig


def _controls():
    return {
        "h": widgets.FloatSlider(value=1.0, min=0.1, max=3.0),
        "kernel": widgets.Dropdown(options=["gaussian", "boxcar"], value="gaussian"),
        "n": widgets.IntSlider(value=5, min=1, max=10),
    }


def test_slider_panel_is_a_vbox_of_the_controls_and_an_output():
    controls = _controls()
    panel = slider_panel(RecordingPlot(), controls, columns=2)
    assert isinstance(panel, widgets.VBox)
    *rows, output = panel.children
    assert isinstance(output, widgets.Output)
    assert all(isinstance(row, widgets.HBox) for row in rows)
    assert [list(row.children) for row in rows] == [[controls["h"], controls["kernel"]], [controls["n"]]]


def test_slider_panel_draws_the_defaults_and_redraws_on_change():
    plot = RecordingPlot()
    controls = _controls()
    slider_panel(plot, controls, fixed={"data": "xy"})
    defaults = {"data": "xy", "h": 1.0, "kernel": "gaussian", "n": 5}
    assert plot.calls == [defaults, defaults]  # a check outside the widget, then the widget's own drawing
    assert len(plot.figures) == 2 and plot.figures[1].axes[0].get_lines()
    controls["h"].value = 2.5
    assert plot.calls[-1] == {"data": "xy", "h": 2.5, "kernel": "gaussian", "n": 5}
    controls["kernel"].value = "boxcar"
    assert plot.calls[-1] == {"data": "xy", "h": 2.5, "kernel": "boxcar", "n": 5}
    assert len(plot.calls) == 4


def test_slider_panel_raises_when_the_defaults_fail():
    """Inside the widget an exception is only displayed; the check outside it makes a broken panel fail loudly."""

    def broken(**kwargs):
        raise RuntimeError(f"cannot draw {kwargs}")

    with pytest.raises(RuntimeError, match=r"cannot draw \{'h': 1\.0\}"):
        slider_panel(broken, {"h": widgets.FloatSlider(value=1.0)})


@pytest.mark.parametrize("heavy", [True, False])
def test_slider_panel_heavy_turns_off_continuous_update(heavy):
    controls = _controls()
    controls["flag"] = widgets.Checkbox(value=True)  # has no continuous_update: must be left alone
    slider_panel(RecordingPlot(), controls, heavy=heavy)
    assert controls["h"].continuous_update is (not heavy)
    assert controls["n"].continuous_update is (not heavy)


def test_slider_panel_around_a_course_plot_function():
    data = toy_regression(n_train=15, step=0.5, seed=2)
    titles = []

    def plot(**kwargs):
        fig = plot_nw_fit(**kwargs)
        titles.append(fig.axes[0].get_title())
        return fig

    bandwidth = widgets.FloatSlider(value=0.5, min=0.1, max=2.0)
    slider_panel(
        plot, {"bandwidth": bandwidth}, fixed={"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test}
    )
    bandwidth.value = 1.5
    assert titles == ["gaussian kernel, bandwidth h = 0.5"] * 2 + ["gaussian kernel, bandwidth h = 1.5"]


@pytest.mark.parametrize(
    "plot_fn, controls, kwargs, error, match",
    [
        (42, {"h": widgets.FloatSlider()}, {}, TypeError, r"plot_fn must be a plotting function, got int"),
        (RecordingPlot(), {}, {}, ValueError, r"controls must name at least one widget, got none"),
        (RecordingPlot(), None, {}, TypeError, r"controls must be a dict of argument name -> widget, got NoneType"),
        (
            RecordingPlot(),
            {"h": 0.5},
            {},
            TypeError,
            r"controls\['h'\] must be an ipywidgets control \(e\.g\. FloatSlider\), got float",
        ),
        (
            RecordingPlot(),
            {"go": widgets.Button()},
            {},
            TypeError,
            r"controls\['go'\] must be an ipywidgets control.*got Button",
        ),
        (
            RecordingPlot(),
            {"h": widgets.FloatSlider()},
            {"fixed": {"h": 1.0}},
            ValueError,
            r"fixed and controls must not name the same argument, both name \['h'\]",
        ),
        (
            RecordingPlot(),
            {"h": widgets.FloatSlider()},
            {"columns": 0},
            ValueError,
            r"columns must be an integer >= 1, got 0",
        ),
        (
            RecordingPlot(),
            {"h": widgets.FloatSlider()},
            {"columns": 1.5},
            TypeError,
            r"columns must be an integer >= 1, got 1\.5",
        ),
        (
            RecordingPlot(),
            {"h": widgets.FloatSlider()},
            {"columns": True},
            TypeError,
            r"columns must be an integer >= 1, got True",
        ),
        (RecordingPlot(), [widgets.FloatSlider()], {}, TypeError, r"controls must be .*got list"),
    ],
    ids=[
        "plot_fn",
        "empty",
        "none",
        "not-a-widget",
        "not-a-value-widget",
        "clash",
        "columns-0",
        "columns-float",
        "columns-bool",
        "controls-list",
    ],
)
def test_slider_panel_error_messages(plot_fn, controls, kwargs, error, match):
    with pytest.raises(error, match=match):
        slider_panel(plot_fn, controls, **kwargs)


def test_slider_panel_rejects_bad_input_before_drawing():
    plot = RecordingPlot()
    with pytest.raises(ValueError):
        slider_panel(plot, {"h": widgets.FloatSlider()}, fixed={"h": 1.0})
    assert plot.calls == []


def test_slider_panel_shows_whole_descriptions():
    """ipywidgets truncates long descriptions ("bandwidth h" -> "bandwidt..."); the panel widens them."""
    slider = widgets.FloatSlider(value=1.0, description="bandwidth h")
    assert slider.style.description_width == ""
    slider_panel(RecordingPlot(), {"h": slider})
    assert slider.style.description_width == "initial"


# ---- the panel's own drawing: once, straight to PNG; figures redrawn in place ----

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _pixels(fig):
    """Draw ``fig`` with its own layout engine and return its RGBA pixels."""
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def test_render_returns_one_png_per_figure_and_calls_plot_fn_with_the_change():
    plot = RecordingPlot()
    panel = slider_panel(plot, _controls(), fixed={"data": "xy"})
    pngs = panel.render(h=2.0)
    assert len(pngs) == 1 and pngs[0].startswith(PNG_SIGNATURE)
    assert plot.calls[-1] == {"data": "xy", "h": 2.0, "kernel": "gaussian", "n": 5}
    assert plt.get_fignums() == []  # nothing left open for plt.show() to show again


def test_render_leaves_other_open_figures_alone():
    """A figure that a running cell is drawing is neither shown in the panel nor closed by a redraw."""
    plot = RecordingPlot()
    panel = slider_panel(plot, _controls(), fixed={"data": "xy"})
    other = plt.figure()  # opened elsewhere, e.g. by a cell that runs while the slider moves
    pngs = panel.render(h=2.0)
    assert len(pngs) == 1
    assert plt.get_fignums() == [other.number]


def test_render_shows_the_figures_of_a_plot_function_that_returns_none():
    def plot(h):
        plt.subplots()  # opens a figure but does not return it
        plt.subplots()

    panel = slider_panel(plot, {"h": widgets.FloatSlider(value=1.0)})
    assert len(panel.render(h=0.5)) == 2 and plt.get_fignums() == []


def test_render_leaves_the_number_of_torch_threads_as_it_was():
    threads = torch.get_num_threads()
    seen = []

    def plot(h):
        seen.append(torch.get_num_threads())
        return RecordingPlot()(h=h)

    panel = slider_panel(plot, {"h": widgets.FloatSlider(value=1.0)})
    panel.render(h=0.5)
    assert seen[-1] == 1 and torch.get_num_threads() == threads


def test_figure_png_draws_a_closed_figure():
    fig = plot_nw_fit([0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [0.5, 1.5], bandwidth=0.7)
    plt.close(fig)  # pyplot gives a closed figure a bare canvas that cannot draw to pixels
    png = figure_png(fig)
    assert png.startswith(PNG_SIGNATURE)
    assert Image.open(io.BytesIO(png)).size == tuple(int(x) for x in fig.get_size_inches() * fig.dpi)


def test_figure_png_reuses_a_layout_and_redoes_it_when_the_decorations_change():
    data = toy_regression(n_train=15, step=0.5, seed=2)
    fixed = {"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test}
    layouts = OrderedDict()
    first = plot_nw_fit(**fixed, bandwidth=0.5)
    figure_png(first, layouts)
    assert len(layouts) == 1
    second = plot_nw_fit(**fixed, bandwidth=0.8)  # same decorations: the first layout, no layout pass
    figure_png(second, layouts)
    assert len(layouts) == 1 and second.get_layout_engine().__class__.__name__ == "PlaceHolderLayoutEngine"
    assert [ax.get_position().bounds for ax in second.axes] == [ax.get_position().bounds for ax in first.axes]
    wider = plot_nw_fit(**fixed, y_true=data.y_test * 1000, bandwidth=0.8)  # longer y tick labels: a new layout
    figure_png(wider, layouts)
    assert len(layouts) == 2


# (plotting function, fixed arguments, the values it is drawn for, the values it is then redrawn for)
def _updatable_cases():
    data = toy_regression()
    nodes, values = lagrange_points()
    regression = {"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test, "y_true": data.y_test}
    return [
        (plot_nw_fit, regression, {"bandwidth": 0.5}, {"bandwidth": 0.02, "kernel": "epanechnikov"}),
        (plot_query_weights, {"keys": data.x_train, "values": data.y_train}, {"query": 2.5}, {"query": 0.0}),
        (plot_query_weights, {"keys": data.x_train, "values": data.y_train}, {"query": 2.5}, {"bandwidth": 10.0}),
        (plot_weight_comparison, {"nodes": nodes, "values": values}, {"query": 6.1}, {"query": 1.3}),
        (plot_weight_comparison, {"nodes": nodes, "values": values}, {"query": 6.1}, {"bandwidth": 0.03}),
        (plot_weight_comparison, {"nodes": nodes, "values": values}, {"query": 6.1}, {"query": 0.5}),  # off the data
        (plot_noisy_fit, {"seed": 0}, {"n_nodes": 10}, {"n_nodes": 20, "noise": 1.5, "bandwidth": 10.0}),
        (plot_saturation, {"num_keys": 16, "seed": 0}, {"d": 64}, {"d": 1, "temperature": 10.0}),
        (plot_saturation, {"num_keys": 16, "seed": 0}, {"d": 64}, {"d": 1024, "temperature": 0.1}),
        (plot_worked_example, {}, {"x11": 1.0}, {"x11": -2.0, "x13": 0.5, "scale": True}),
        (plot_masking_demo, {"seed": 0}, {"valid_len_1": 4}, {"valid_len_1": 0, "valid_len_2": 2, "causal": True}),
        (plot_rotation, {"num_hiddens": 16}, {"delta": 3}, {"delta": 20, "freq_index": 7}),
    ]


@pytest.mark.parametrize("plot_fn, fixed, before, after", _updatable_cases(), ids=lambda x: getattr(x, "__name__", ""))
def test_a_figure_redrawn_in_place_is_the_figure_drawn_anew(plot_fn, fixed, before, after):
    after = {**before, **after}
    expected = _pixels(plot_fn(**fixed, **after))
    fig = plot_fn(**fixed, **before)
    made_by, update = fig._attn_course_update
    assert made_by is plot_fn
    assert update(**fixed, **after) is True
    assert np.array_equal(_pixels(fig), expected)


def test_a_figure_is_not_redrawn_in_place_for_other_data_or_given_axes():
    data = toy_regression(n_train=15, step=0.5, seed=2)
    fig = plot_nw_fit(data.x_train, data.y_train, data.x_test, bandwidth=0.5)
    _, update = fig._attn_course_update
    assert update(data.x_train, data.y_train, data.x_test, bandwidth=0.7) is True
    assert update(data.x_train.clone(), data.y_train, data.x_test, bandwidth=0.7) is False  # not the same data
    _, axes = plt.subplots(1, 2)
    assert update(data.x_train, data.y_train, data.x_test, bandwidth=0.7, axes=axes) is False
    assert not hasattr(plot_nw_fit(data.x_train, data.y_train, data.x_test, axes=axes), "_attn_course_update")


def test_a_panel_redraws_its_figure_in_place_and_shows_the_same_picture():
    data = toy_regression(n_train=15, step=0.5, seed=2)
    fixed = {"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test}
    panel = slider_panel(plot_nw_fit, {"bandwidth": widgets.FloatSlider(value=0.5, min=0.1, max=2.0)}, fixed=fixed)
    kept = panel.render(bandwidth=0.9)  # the figure the panel keeps, redrawn in place
    fresh = figure_png(plot_nw_fit(**fixed, bandwidth=0.9))
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(kept[0]))), np.asarray(Image.open(io.BytesIO(fresh))))


def test_a_wrapper_around_a_course_function_is_called_on_every_change():
    data = toy_regression(n_train=15, step=0.5, seed=2)
    calls = []

    def plot(**kwargs):
        calls.append(kwargs["bandwidth"])
        return plot_nw_fit(**kwargs)

    panel = slider_panel(
        plot,
        {"bandwidth": widgets.FloatSlider(value=0.5)},
        fixed={"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test},
    )
    panel.render(bandwidth=0.7)
    panel.render(bandwidth=0.9)
    assert calls[-2:] == [0.7, 0.9]


def test_a_panel_keeps_a_figure_per_shape_and_goes_back_to_it(monkeypatch):
    """Equal lengths share the axes of plot_masking_demo (another shape): going back reuses the first figure."""
    import attn_course.plotting

    built = []
    subplots = attn_course.plotting.plt.subplots
    monkeypatch.setattr(attn_course.plotting.plt, "subplots", lambda *a, **k: built.append(1) or subplots(*a, **k))
    length = widgets.IntSlider(value=6, min=0, max=6)
    panel = slider_panel(plot_masking_demo, {"valid_len_1": widgets.IntSlider(value=4), "valid_len_2": length})
    count = len(built)  # the check of the defaults and the first drawing
    panel.render(valid_len_2=5)  # same shape: redrawn in place
    panel.render(valid_len_2=4)  # 4 and 4: shared axes, a new figure
    panel.render(valid_len_2=3)  # back to the first shape: its figure again
    assert len(built) == count + 1
    assert Image.open(io.BytesIO(panel.render(valid_len_2=2)[0])).size == (900, 440)  # 9 x 4.4 inches at 100 dpi


def test_a_figure_redrawn_in_place_is_laid_out_as_a_new_one_when_its_decorations_change():
    """Its axes go back to where they started before the layout runs again (fixed-aspect axes make the constrained
    layout depend on where it starts)."""
    layouts = OrderedDict()
    fig = plot_masking_demo(valid_len_1=4, valid_len_2=6)
    figure_png(fig, layouts)
    assert fig._attn_course_update[1](valid_len_1=4, valid_len_2=5)  # "<pad>" in both: wider tick labels
    got = figure_png(fig, layouts)
    expected = figure_png(plot_masking_demo(valid_len_1=4, valid_len_2=5))
    assert len(layouts) == 2
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(got))), np.asarray(Image.open(io.BytesIO(expected))))
