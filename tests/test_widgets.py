"""attn_course.widgets: slider_panel (no browser needed: the widgets run in plain Python)."""

import gc
import inspect
import io

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from PIL import Image

import attn_course.widgets.panel
from attn_course import (
    plot_head_weights,
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
from attn_course.widgets.panel import SliderPanel


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
    figures = []

    def plot(**kwargs):
        figures.append(plot_nw_fit(**kwargs))
        return figures[-1]

    bandwidth = widgets.FloatSlider(value=0.5, min=0.1, max=2.0)
    slider_panel(
        plot, {"bandwidth": bandwidth}, fixed={"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test}
    )
    assert [fig.axes[0].get_title() for fig in figures] == ["gaussian kernel, bandwidth h = 0.5"]
    bandwidth.value = 1.5  # the figure takes the new value in place (plot_nw_fit's slider_update)
    assert [fig.axes[0].get_title() for fig in figures] == ["gaussian kernel, bandwidth h = 1.5"]


@pytest.mark.parametrize(
    "plot_fn, controls, kwargs, error, match",
    [
        (42, {"h": widgets.FloatSlider()}, {}, TypeError, r"plot_fn must be a plotting function, got int"),
        (RecordingPlot(), {}, {}, ValueError, r"controls must name at least one widget, got none"),
        (
            RecordingPlot(),
            {1: widgets.FloatSlider()},
            {},
            TypeError,
            r"controls must be keyed by argument names .*got 1",
        ),
        (
            RecordingPlot(),
            {"h": widgets.FloatSlider()},
            {"fixed": [("seed", 0)]},
            TypeError,
            r"fixed must be a dict of argument name -> value, got list",
        ),
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
        "int-name",
        "fixed-list",
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


# ---- the panel's own drawing: straight to PNG; a new figure, or the same one updated in place ----

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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
    torch.set_num_threads(2)  # the tests run on one thread: start from another count, so a reset to 1 shows
    try:
        panel.render(h=0.5)
        assert seen[-1] == 1 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


def _image(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)))


def _plain_png(fig) -> bytes:
    """``fig`` drawn by matplotlib alone: its own layout engine, a new Agg canvas, no cache of any kind."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    buffer = io.BytesIO()
    Image.fromarray(np.asarray(canvas.buffer_rgba())).save(buffer, format="png")
    return buffer.getvalue()


# (plotting function, fixed arguments, the values of the first picture, the changes for the next)
def _slider_cases():
    data = toy_regression()
    nodes, values = lagrange_points()
    regression = {"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test, "y_true": data.y_test}
    return [
        (plot_nw_fit, regression, {"bandwidth": 0.5}, {"bandwidth": 0.02, "kernel": "epanechnikov"}),
        (plot_query_weights, {"keys": data.x_train, "values": data.y_train}, {"query": 2.5}, {"query": 0.0}),
        (plot_query_weights, {"keys": data.x_train, "values": data.y_train}, {"query": 2.5}, {"bandwidth": 10.0}),
        # the same decorations before any layout; after it, the weights axis holds 4 ticks instead of 5
        (
            plot_query_weights,
            {"keys": data.x_train, "values": data.y_train},
            {"query": 2.5, "bandwidth": 0.3},
            {"bandwidth": 0.2865},
        ),
        (plot_weight_comparison, {"nodes": nodes, "values": values}, {"query": 6.1}, {"query": 1.3}),
        (plot_weight_comparison, {"nodes": nodes, "values": values}, {"query": 6.1}, {"query": 0.5}),  # off the data
        (plot_noisy_fit, {"seed": 0}, {"n_nodes": 10}, {"n_nodes": 20, "noise": 1.5, "bandwidth": 10.0}),
        (plot_saturation, {"num_keys": 16, "seed": 0}, {"d": 64}, {"d": 1, "temperature": 10.0}),
        (plot_worked_example, {}, {"x11": 1.0}, {"x11": -2.0, "x13": 0.5, "scale": True}),
        (plot_masking_demo, {"seed": 0}, {"valid_len_1": 4}, {"valid_len_1": 0, "valid_len_2": 2, "causal": True}),
        (plot_masking_demo, {"seed": 0}, {"valid_len_2": 6}, {"valid_len_2": 5}),  # "<pad>" in both: wider labels
        (plot_rotation, {"num_hiddens": 16}, {"delta": 3}, {"delta": 20, "freq_index": 7}),
    ]


def _controls_for(values: dict) -> dict:
    """One control per argument, with ``values`` as defaults (the kind of control does not matter to render)."""
    controls = {}
    for name, value in values.items():
        if isinstance(value, bool):
            controls[name] = widgets.Checkbox(value=value)
        elif isinstance(value, str):
            controls[name] = widgets.Dropdown(options=[value, "epanechnikov", "gaussian"], value=value)
        elif isinstance(value, int):
            controls[name] = widgets.IntSlider(value=value, min=-100, max=10_000)
        else:
            controls[name] = widgets.FloatSlider(value=value, min=-100.0, max=100.0)
    return controls


@pytest.mark.parametrize("plot_fn, fixed, before, after", _slider_cases(), ids=lambda x: getattr(x, "__name__", ""))
def test_a_render_after_a_change_is_the_new_figure_pixel_for_pixel(plot_fn, fixed, before, after):
    """A figure updated in place (or built again) after a change is what matplotlib alone draws for the new values,
    pixel for pixel, and it differs from the first picture."""
    defaults = {name: inspect.signature(plot_fn).parameters[name].default for name in after} | before
    panel = slider_panel(plot_fn, _controls_for(defaults), fixed=fixed)
    first = panel.render()
    assert np.array_equal(_image(first[0]), _image(_plain_png(plot_fn(**fixed, **defaults))))
    second = panel.render(**after)
    expected = _image(_plain_png(plot_fn(**fixed, **(defaults | after))))
    got = _image(second[0])
    assert got.shape == expected.shape and np.array_equal(got, expected)
    assert not np.array_equal(got, _image(first[0]))


def test_a_panel_hangs_nothing_on_the_figures_it_draws():
    plot = RecordingPlot()
    panel = slider_panel(plot, _controls())
    panel.render(h=2.0)
    panel.render(h=0.5)
    for fig in plot.figures:
        assert not [name for name in vars(fig) if "attn" in name]


def test_a_panel_calls_a_plain_plot_fn_afresh_on_every_change():
    plot = RecordingPlot()
    panel = slider_panel(plot, {"h": widgets.FloatSlider(value=0.5)})
    panel.render(h=0.7)
    panel.render(h=0.9)
    assert [call["h"] for call in plot.calls] == [0.5, 0.5, 0.7, 0.9]  # the check, the first picture, two changes
    assert len({id(fig) for fig in plot.figures}) == 4


def test_an_updatable_figure_is_built_once_and_updated_with_every_argument():
    data = toy_regression(n_train=15, step=0.5, seed=2)
    fixed = {"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test}
    figures, updates = [], []

    def plot(**kwargs):
        fig = plot_nw_fit(**kwargs)
        update = fig.slider_update

        def recording_update(**values):
            updates.append(values)
            return update(**values)

        fig.slider_update = recording_update
        figures.append(fig)
        return fig

    panel = slider_panel(plot, {"bandwidth": widgets.FloatSlider(value=0.5)}, fixed=fixed)
    first = panel.render(bandwidth=0.7)
    second = panel.render(bandwidth=0.9)
    assert len(figures) == 1  # the check's figure, kept and updated from then on
    assert updates[-1] == fixed | {"bandwidth": 0.9}
    assert figures[0].axes[0].get_title() == "gaussian kernel, bandwidth h = 0.9"
    assert isinstance(figures[0].get_layout_engine(), PlaceHolderLayoutEngine)  # frozen after the first draw
    assert plt.get_fignums() == []  # closed in pyplot: no cell's plt.show() shows it again
    expected = _image(_plain_png(plot_nw_fit(**fixed, bandwidth=0.9)))
    assert np.array_equal(_image(second[0]), expected) and not np.array_equal(_image(first[0]), expected)
    plt.close("all")


class ScaledPlot:
    """A fake updatable plotting function: a bar whose axis top moves in steps; update asks for a new figure then."""

    def __init__(self):
        self.built = 0

    def __call__(self, h: float):
        self.built += 1
        fig, ax = plt.subplots(figsize=(2, 2), layout="constrained")
        (bar,) = ax.bar([0], [h])
        ax.set_ylim(0, 10 if h <= 10 else 1000)  # tick labels "1000" take more room than "10"

        def update(h: float, **_) -> bool:
            if (h <= 10) != (ax.get_ylim()[1] == 10):
                return True
            bar.set_height(h)
            return False

        fig.slider_update = update
        return fig


def test_an_update_that_returns_true_gets_a_new_figure_drawn_afresh():
    plot = ScaledPlot()
    panel = slider_panel(plot, {"h": widgets.FloatSlider(value=2.0, min=0, max=500)})
    assert plot.built == 1
    panel.render(h=5.0)
    assert plot.built == 1  # updated in place
    got = panel.render(h=400.0)
    assert plot.built == 2  # the axis top changed: a new figure, laid out afresh
    assert np.array_equal(_image(got[0]), _image(_plain_png(ScaledPlot()(h=400.0))))
    got = panel.render(h=300.0)
    assert plot.built == 2 and np.array_equal(_image(got[0]), _image(_plain_png(ScaledPlot()(h=300.0))))
    plt.close("all")


# ---- SliderPanel's steps one at a time: build, update, draw (which freezes a kept figure's layout), render ----


def test_the_steps_build_once_update_the_artists_and_freeze_the_layout_at_the_first_draw():
    data = toy_regression(n_train=15, step=0.5, seed=2)
    fixed = {"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test}
    panel = SliderPanel(plot_nw_fit, {"bandwidth": widgets.FloatSlider(value=0.5)}, fixed)
    built = panel.figure  # the defaults, built when the panel is made
    assert built.axes[0].get_title() == "gaussian kernel, bandwidth h = 0.5" and panel.frozen is None
    assert panel.update({"bandwidth": 0.7}) is True and panel.figure is built
    assert built.axes[0].get_title() == "gaussian kernel, bandwidth h = 0.7"
    assert not isinstance(built.get_layout_engine(), PlaceHolderLayoutEngine), "frozen before it was ever drawn"
    (picture,) = panel.draw(bandwidth=0.9)
    assert panel.figure is built and panel.frozen is built
    assert isinstance(built.get_layout_engine(), PlaceHolderLayoutEngine)
    assert picture.dtype == np.uint8 and picture.shape[2] == 4  # (height, width, RGBA)
    assert np.array_equal(picture, _image(_plain_png(plot_nw_fit(**fixed, bandwidth=0.9))))
    assert np.array_equal(_image(panel.render(bandwidth=0.9)[0]), picture)
    plt.close("all")


def test_update_gives_the_figure_up_when_its_layout_cannot_show_the_values():
    plot = ScaledPlot()
    panel = SliderPanel(plot, {"h": widgets.FloatSlider(value=2.0, min=0, max=500)}, {})
    kept = panel.figure
    assert panel.update({"h": 5.0}) is True and panel.figure is kept
    assert panel.update({"h": 400.0}) is False and panel.figure is None
    assert plot.built == 1, "update never builds a figure; draw does"
    panel.draw(h=400.0)
    assert plot.built == 2 and panel.figure not in (None, kept)
    plt.close("all")


def test_a_plain_figure_is_not_kept_and_update_leaves_it_to_build():
    plot = RecordingPlot()
    panel = SliderPanel(plot, {"h": widgets.FloatSlider(value=1.0)}, {})
    assert panel.figure is None and panel.update({"h": 2.0}) is False
    assert len(panel.build({"h": 2.0})) == 1 and panel.figure is None
    assert [call["h"] for call in plot.calls] == [1.0, 2.0]


def test_render_shows_the_pictures_drawn_ahead_without_drawing():
    plot = TitledPlot()
    panel = SliderPanel(plot, {"kind": widgets.Dropdown(options=["a", "b"], value="a")}, {"h": 1.0})
    assert panel.ahead == {}
    panel.draw_ahead()
    assert set(panel.ahead) == {("a",), ("b",)}
    calls = len(plot.calls)
    assert panel.render(kind="b") == list(panel.ahead[("b",)]) and len(plot.calls) == calls


def test_render_turns_the_garbage_collector_back_on_even_when_plot_fn_fails():
    seen = []

    def plot(h):
        seen.append(gc.isenabled())
        if h > 1.0:
            raise ValueError("h too large")
        return RecordingPlot()(h=h)

    panel = slider_panel(plot, {"h": widgets.FloatSlider(value=1.0)})
    assert gc.isenabled()
    with pytest.raises(ValueError, match="h too large"):
        panel.render(h=2.0)
    assert seen[-1] is False and gc.isenabled()


def test_a_panel_draws_a_new_figure_when_the_new_values_need_other_axes(monkeypatch):
    monkeypatch.setattr(attn_course.widgets.panel, "FRAMES_AHEAD", 0)  # drawn live, not in advance
    panel = slider_panel(plot_head_weights, {"num_heads": widgets.IntSlider(value=4, min=1, max=8)})
    panel.render(num_heads=4)
    got = _image(panel.render(num_heads=2)[0])  # two panels: the four of the last figure do not fit
    expected = _image(_plain_png(plot_head_weights(num_heads=2)))
    assert got.shape == expected.shape and np.array_equal(got, expected)


def test_a_plain_plot_function_is_drawn_afresh_and_leaves_no_figure_open():
    def plot(h: float, axes=None):  # always a figure of its own, with no slider_update
        fig, ax = plt.subplots(figsize=(2, 2), layout="constrained")
        ax.plot([0, 1], [0, h])
        return fig

    panel = slider_panel(plot, {"h": widgets.FloatSlider(value=1.0)})
    for h in (0.5, 2.0, 3.0):
        got = _image(panel.render(h=h)[0])
        assert np.array_equal(got, _image(_plain_png(plot(h))))
    plt.close("all")
    panel.render(h=1.5)
    assert plt.get_fignums() == []


def _choices():
    return {
        "kind": widgets.Dropdown(options=["a", "b", "c"], value="b"),
        "flag": widgets.Checkbox(value=False),
        "n": widgets.IntSlider(value=1, min=0, max=1),
    }


class TitledPlot(RecordingPlot):
    """A fake plotting function whose picture shows every argument (in its title)."""

    def __call__(self, **kwargs):
        fig = super().__call__(**kwargs)
        fig.axes[0].set_title(" ".join(f"{k}={v}" for k, v in sorted(kwargs.items())), fontsize=6)
        return fig


def test_a_panel_with_few_combinations_draws_them_all_when_built_and_shows_them_after():
    plot = TitledPlot()
    panel = slider_panel(plot, _choices(), fixed={"h": 2.0})
    assert panel.frames_ahead == 3 * 2 * 2
    calls = len(plot.calls)
    assert calls == 1 + 12  # the check, then the twelve combinations (the widget's first picture is one of them)
    drawn = {(c["kind"], c["flag"], c["n"]) for c in plot.calls[1:]}
    assert drawn == {(k, f, n) for k in "abc" for f in (False, True) for n in (0, 1)}
    got = panel.render(kind="c", flag=True, n=0)
    assert len(plot.calls) == calls  # shown, not drawn again
    expected = _image(_plain_png(plot(h=2.0, kind="c", flag=True, n=0)))
    assert np.array_equal(_image(got[0]), expected)
    assert not np.array_equal(_image(got[0]), _image(panel.render(kind="a")[0]))


def test_a_panel_with_many_combinations_or_a_float_slider_draws_only_on_a_change():
    plot = RecordingPlot()
    slider_panel(plot, _choices() | {"n": widgets.IntSlider(value=1, min=0, max=2)})  # 3 * 2 * 3 = 18 > 12
    assert len(plot.calls) == 2
    plot = RecordingPlot()
    slider_panel(plot, {"kind": widgets.Dropdown(options=["a", "b"]), "h": widgets.FloatSlider(value=1.0)})
    assert len(plot.calls) == 2


def test_a_combination_that_fails_in_advance_raises_when_chosen():
    def plot(kind):
        if kind == "c":
            raise ValueError("no such kind")
        return RecordingPlot()(h=1.0)

    panel = slider_panel(plot, {"kind": widgets.Dropdown(options=["a", "b", "c"], value="a")})
    assert panel.frames_ahead == 2
    with pytest.raises(ValueError, match="no such kind"):
        panel.render(kind="c")
    plt.close("all")


def test_values_that_cannot_be_keys_are_drawn_live():
    calls = []

    def plot(points):
        calls.append(points)
        return RecordingPlot()(h=float(len(points)))

    options = [("one", [1]), ("two", [1, 2])]  # lists: not hashable
    panel = slider_panel(plot, {"points": widgets.Dropdown(options=options, value=[1])})
    assert panel.frames_ahead == 0
    panel.render(points=[1, 2])
    assert calls[-1] == [1, 2]
    plt.close("all")


def test_plot_weight_comparison_given_lists_is_updated_not_rebuilt():
    """The figure converts the lists it is given; its update still knows them as the panel's fixed arguments."""
    built = []

    def plot(**kwargs):
        built.append(plot_weight_comparison(**kwargs))
        return built[-1]

    fixed = {"nodes": [1.0, 2.0, 3.5, 5.0], "values": [1.0, 0.0, 2.0, 1.0]}
    panel = slider_panel(plot, {"query": widgets.FloatSlider(value=2.0, min=1.0, max=5.0)}, fixed=fixed)
    pictures = [panel.render(query=q)[0] for q in (2.5, 3.0, 4.0)]
    assert len(built) == 1
    expected = _image(_plain_png(plot_weight_comparison(4.0, **fixed)))
    assert np.array_equal(_image(pictures[-1]), expected)
    plt.close("all")
