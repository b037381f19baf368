"""attn_course.widgets.frames: the static slider panels of the course site (grids of frames switched in the browser)."""

import hashlib
import io
import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image

import attn_course as ac
from attn_course.widgets import frames as _frames


def _plot(a=1.0, b=0, kind="x", flag=False):
    fig, ax = plt.subplots(figsize=(2, 1.5), dpi=50)
    ax.plot([0, 1], [0, a + b + (1 if flag else 0)], label=kind)
    ax.set_title(f"a line of slope {a}")
    return fig


def _controls():
    return {
        "a": widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1, description="slope a"),
        "kind": widgets.Dropdown(options=["x", "y", "z"], value="y", description="kind"),
        "flag": widgets.Checkbox(value=False, description="flag"),
    }


def _classes(widget) -> list[str]:
    """The CSS classes a widget carries (added with its public add_class), from its public state."""
    return list(widget.get_state()["_dom_classes"])


def test_grid_keeps_every_choice_and_the_defaults_within_budget():
    controls = _controls()
    values = _frames.grid(controls, budget=60)
    assert [label for label, _ in values["kind"]] == ["x", "y", "z"]
    assert [v for _, v in values["flag"]] == [False, True]
    numbers = [v for _, v in values["a"]]
    assert 2 <= len(numbers) <= 10 and numbers == sorted(numbers)
    assert 1.0 in numbers, "the default value must be a frame: the page opens on it"
    assert numbers[0] == 0.0 and numbers[-1] == 2.0, "the range's ends are shown"
    assert math.prod(len(v) for v in values.values()) <= 60


@pytest.mark.parametrize(
    "control",
    [
        widgets.IntSlider(value=7, min=1, max=40),
        widgets.FloatLogSlider(value=0.5, base=10, min=-2, max=1, step=0.05),
        widgets.FloatSlider(value=0.33, min=0, max=1, step=0.01),
    ],
    ids=["int", "log", "float"],
)
def test_numeric_sliders_include_an_off_grid_default(control):
    values = [v for _, v in _frames.grid({"v": control}, budget=9)["v"]]
    assert len(values) <= 9
    assert any(math.isclose(v, control.value) for v in values)
    assert all(
        control.min <= (math.log10(v) if isinstance(control, widgets.FloatLogSlider) else v) <= control.max
        for v in values
    )


def test_a_control_it_cannot_show_is_refused_by_name():
    with pytest.raises(TypeError, match="cannot show a Text"):
        _frames.grid({"words": widgets.Text(value="a")})


def test_frames_panel_stacks_one_frame_per_point_linked_to_its_controls(monkeypatch):
    controls = _controls()
    monkeypatch.setattr(_frames, "MAX_FRAMES", 24)  # a smaller grid, the same stacks and links
    linked, jslink = [], widgets.jslink
    monkeypatch.setattr(widgets, "jslink", lambda a, b: linked.append((a, b)) or jslink(a, b))
    rendered = []

    def render(**values):
        merged = {"a": controls["a"].value, "kind": controls["kind"].value, "flag": controls["flag"].value} | values
        rendered.append(merged)
        fig = _plot(**merged)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        pixels = np.array(canvas.buffer_rgba())  # (height, width, 4), as the panel's drawing gives them
        plt.close(fig)
        return [pixels]

    panel = _frames.frames_panel(render, controls, title="a line")
    images = [w for w in _walk(panel) if isinstance(w, widgets.Image)]
    values = _frames.grid(controls, budget=_frames.MAX_FRAMES)
    assert len(images) == panel.frame_count == math.prod(len(v) for v in values.values())
    for image in images:  # the class records the bytes' hash, for the browser test
        sha = next(c for c in _classes(image) if c.startswith("attn-sha-"))
        assert sha == "attn-sha-" + hashlib.sha256(image.value).hexdigest()[:16]
        assert image.format == "webp" and Image.open(io.BytesIO(image.value)).format == "WEBP"
    places = sorted(next(c for c in _classes(i) if c.startswith("attn-frame-")) for i in images)
    assert len(set(places)) == len(places), "every point of the grid has its own frame"
    selectors = [
        w for w in _walk(panel) if isinstance(w, widgets.SelectionSlider | widgets.Dropdown | widgets.ToggleButtons)
    ]
    assert [s.description for s in selectors] == ["slope a", "kind", "flag"]
    stacks = [w for w in _walk(panel) if isinstance(w, widgets.Stack)]
    assert all(source[1] == "index" and target[1] == "selected_index" for source, target in linked)
    moved = {id(target[0]): source[0] for source, target in linked}
    assert len(moved) == len(stacks) and all(id(stack) in moved for stack in stacks), "a stack that no control moves"
    depth = {id(stack): d for d, level in enumerate(_levels(panel)) for stack in level}
    for stack in stacks:  # the outer stack follows the first control, the innermost ones the last
        assert moved[id(stack)] is selectors[depth[id(stack)]]
    assert selectors[1].index == 1, "the page opens on the default: kind 'y'"
    assert "slope a" in panel.children[-1].value and "make lab" in panel.children[-1].value


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def _levels(panel):
    """The panel's stacks, level by level: [[outer], [its children], ...]."""
    frames = next(w for w in panel.children if isinstance(w, widgets.Stack))
    levels, level = [], [frames]
    while level:
        levels.append(level)
        level = [c for stack in level for c in stack.children if isinstance(c, widgets.Stack)]
    return levels


def test_slider_panel_is_static_while_the_site_is_built(monkeypatch):
    monkeypatch.setenv(_frames.ENV, "1")
    panel = ac.slider_panel(_plot, {"a": widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.5)})
    assert "attn-frames-panel" in _classes(panel)
    monkeypatch.delenv(_frames.ENV)
    live = ac.slider_panel(_plot, {"a": widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.5)})
    assert "attn-frames-panel" not in _classes(live)


def test_describe_figure_says_what_it_shows():
    fig, (left, right) = plt.subplots(1, 2)
    left.set_title("keys")
    right.set_title("$\\sqrt{D}$ scores")
    assert _frames.describe_figure(fig) == "keys; sqrt{D} scores"
    fig.suptitle("Attention")
    assert _frames.describe_figure(fig).startswith("Attention. keys")
    bare, ax = plt.subplots()
    ax.set_xlabel("x")
    ax.set_ylabel("weight")
    assert _frames.describe_figure(bare) == "weight against x"
    plt.close("all")


def test_choices_reads_labels_and_values_from_the_public_options():
    pairs = widgets.Dropdown(options=[("one", 1), ("two", 2)], value=2)
    plain = widgets.SelectionSlider(options=[16, 32, 64], value=32)
    words = widgets.Dropdown(options=["cross", "decoder"])
    assert _frames.choices(pairs) == [("one", 1), ("two", 2)]
    assert _frames.choices(plain) == [("16", 16), ("32", 32), ("64", 64)]
    assert _frames.choices(words) == [("cross", "cross"), ("decoder", "decoder")]
    assert _frames.choices(widgets.Checkbox(value=True)) == [("off", False), ("on", True)]
    assert _frames.choices(widgets.IntSlider(value=3, min=1, max=9)) is None, "a range is not a list of choices"
