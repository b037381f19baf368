"""attn_course.widgets: slider_panel (no browser needed: the widgets run in plain Python)."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pytest

from attn_course import plot_nw_fit, slider_panel
from attn_course.data import toy_regression


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
            r"columns must be a positive integer, got 0",
        ),
        (
            RecordingPlot(),
            {"h": widgets.FloatSlider()},
            {"columns": 1.5},
            ValueError,
            r"columns must be a positive integer, got 1\.5",
        ),
        (
            RecordingPlot(),
            {"h": widgets.FloatSlider()},
            {"columns": True},
            ValueError,
            r"columns must be a positive integer, got True",
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
