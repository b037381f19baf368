"""Slider panels: controls in a box above a figure that changes when a control moves.

The figure comes from an ``attn_course`` plotting function, so whatever a slider shows can also be drawn, tested and
timed without a browser: ``panel.render(**values)`` does what one control change does and returns the PNG images.

How a panel draws. A light figure is built again on each change and drawn once, straight to PNG. A heavier one
follows matplotlib's idiom for interactive figures: build it once, then set new data on its artists and draw again.
A plotting function takes part by giving the figure it returns a ``slider_update`` function::

    def plot_wave(x, frequency=1.0, ax=None):
        fig, ax = ...                                     # a new figure (or the caller's axes)
        (line,) = ax.plot(x, np.sin(frequency * x))
        ax.set_ylim(-1.1, 1.1)                            # limits that no control changes
        title = ax.set_title(f"frequency {frequency:.2f}")

        def update(frequency=1.0, **_):                   # the plotting function's keywords
            line.set_ydata(np.sin(frequency * x))
            title.set_text(f"frequency {frequency:.2f}")  # returns None: the layout still holds

        fig.slider_update = update
        return fig

Called on its own, ``plot_wave`` returns an ordinary ``Figure``. A panel calls it once and draws it (its layout
engine places the axes), freezes the layout (``fig.set_layout_engine("none")``; axis labels stay where they stand),
and on every change calls ``fig.slider_update(**fixed, **values)`` and draws the same figure again. The update must
leave the figure as the plotting function would build it for those values. When a change moves what the layout makes
room for (tick labels of another length, a colour bar's new scale), ``update`` returns True and the panel builds a
new figure instead (a layout run again on a used figure can place the axes a fraction of a pixel elsewhere).
``make bench`` checks every slider picture against the figure built and drawn afresh.

A panel whose controls take at most ``FRAMES_AHEAD`` combinations of values (options, checkboxes, short integer
sliders) draws them all when it is built; a change then shows a picture already drawn, of the data as it was when
the cell ran. Drawing runs on one PyTorch thread (a figure's tensors are too small to gain from more, and waiting for
a busy second thread costs milliseconds) and with Python's garbage collector paused (a figure is thousands of new
objects, enough to set off a collection that walks the whole notebook's objects).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import math
import struct
import threading
import zlib
from collections.abc import Callable, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import Image as IPythonImage
from IPython.display import display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .._validate import require_int, require_keywords
from . import frames

__all__ = ["slider_panel"]

FRAMES_AHEAD = 12  # a panel with at most this many combinations of control values draws them all when built
# Titles at a fixed height: else every draw measures all tick labels to see if one is above the axes (none is here).
TITLES_AT_TOP = {"axes.titley": 1.0}  # set while a panel draws, never globally

# Widget messages are handled on other threads, even while a cell draws: one redraw at a time, each of its own figures.
_DRAW_LOCK = threading.RLock()


def slider_panel(
    plot_fn: Callable[..., object],
    controls: Mapping[str, widgets.ValueWidget],
    fixed: Mapping[str, object] | None = None,
    heavy: bool = False,
    columns: int = 2,
) -> widgets.VBox:
    """A panel that calls ``plot_fn(**fixed, **{name: control.value})`` and shows the figure.

    Args:
        plot_fn: a plotting function that draws a new figure and returns it; if the figure has a
            ``slider_update`` function, later changes update that figure instead (see the module's docstring).
        controls: keyword name of ``plot_fn`` -> widget (slider, dropdown, checkbox...).
        fixed: keyword arguments passed unchanged on every call (the data, for example).
        heavy: redraw only when a slider is released (``continuous_update=False``).
            Every control's description is shown in full (``style.description_width = "initial"``).
        columns: controls per row.

    Returns:
        A ``VBox`` of the controls and the output area; it has already drawn the defaults. Its
        ``render(**changes)`` does what a control change does, for the controls' current values with
        ``changes`` applied, and returns the PNG images (bytes), one per figure that ``plot_fn`` left open.
        Its ``frames_ahead`` counts the combinations of values drawn when it was built (0 for most panels).

    Raises:
        Whatever ``plot_fn`` raises for the default values, before any widget is built.
    """
    if not callable(plot_fn):
        raise TypeError(f"plot_fn must be a plotting function, got {type(plot_fn).__name__}")
    controls = require_keywords(controls, "controls", "widget", "controls={'bandwidth': FloatSlider(...)}")
    if not controls:
        raise ValueError("controls must name at least one widget, got none")
    for name, control in controls.items():
        if not isinstance(control, widgets.ValueWidget):
            raise TypeError(
                f"controls[{name!r}] must be an ipywidgets control (e.g. FloatSlider), got {type(control).__name__}"
            )
    fixed = require_keywords({} if fixed is None else fixed, "fixed", "value", "fixed={'seed': 0}")
    clash = sorted(set(fixed) & set(controls))
    if clash:
        raise ValueError(f"fixed and controls must not name the same argument, both name {clash}")
    require_int(columns, "columns", 1)
    for control in controls.values():  # show whole labels ("bandwidth h"), not ipywidgets' truncated default
        if hasattr(control, "style") and hasattr(control.style, "description_width"):
            control.style.description_width = "initial"
    if heavy:
        for control in controls.values():
            if hasattr(control, "continuous_update"):
                control.continuous_update = False

    live = {}  # "figure": the figure that later changes update in place, when plot_fn's figures can
    ahead = {}  # combination of control values (in the order of controls) -> its PNG images, drawn in advance

    def draw(**changes) -> list[np.ndarray]:  # the pictures (RGBA pixels) for the controls' values with changes
        values = {name: control.value for name, control in controls.items()} | changes
        with _DRAW_LOCK, _quietly(), plt.rc_context(TITLES_AT_TOP):
            if "figure" in live and live["figure"].slider_update(**fixed, **values):
                del live["figure"]  # the update cannot show these values on this layout: a new figure
            if "figure" not in live:
                figures = _new_figures(plot_fn, fixed | values)
                if not _updatable(figures):
                    return [_pixels(fig) for fig in figures]
                live["figure"] = figures[0]  # closed in pyplot (no cell's plt.show() shows it), drawn by its canvas
            fig = live["figure"]
            picture = _pixels(fig)  # a figure's first draw: its layout engine places the axes ...
            if live.get("frozen") is not fig:
                live["frozen"] = fig
                fig.set_layout_engine("none")  # ... and they stay there, and so do the axis labels beside their
                for axis in (axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)):  # unchanged tick labels
                    axis.set_label_coords(*axis.label.get_position(), transform=axis.label.get_transform())
            return [picture]

    def render(**changes) -> list[bytes]:
        values = {name: control.value for name, control in controls.items()} | changes
        pngs = ahead.get(_combination_key(controls, values)) if ahead else None
        if pngs is not None:
            return list(pngs)
        return [_png(picture) for picture in draw(**changes)]

    # Draw the defaults once outside the widget: an exception raised inside the widget's output area is shown
    # there but swallowed, so a broken panel would otherwise pass a notebook test run.
    with plt.rc_context(TITLES_AT_TOP):
        opened = _new_figures(plot_fn, fixed | {name: control.value for name, control in controls.items()})
    title = frames.describe_figure(opened[0]) if opened else "a figure"
    if _updatable(opened):
        live["figure"] = opened[0]  # drawn (and its layout frozen) by the first render

    def redraw(**values):
        with _quietly():  # until the picture is out
            for png in render(**values):
                display(IPythonImage(data=png, format="png"))

    if frames.wanted():  # building the static site: every figure drawn now, switched in the browser
        return frames.frames_panel(draw, controls, title=title)
    for values in _few_combinations(controls):  # see the module's docstring
        try:
            pngs = render(**values)
        except Exception:  # noqa: BLE001 - not kept: choosing these values draws live and shows the error there
            continue
        ahead[_combination_key(controls, values)] = tuple(pngs)
    output = widgets.interactive_output(redraw, dict(controls))
    items = list(controls.values())
    panel = widgets.VBox([*(widgets.HBox(items[i : i + columns]) for i in range(0, len(items), columns)), output])
    panel.render, panel.frames_ahead = render, len(ahead)
    return panel


def _new_figures(plot_fn: Callable[..., object], arguments: dict) -> list[Figure]:
    """The figures one call of ``plot_fn`` draws, closed in pyplot: the one it returns, else those it opened (never
    pyplot's whole list, which may hold a figure that a cell running at the same time is drawing)."""
    before = set(plt.get_fignums())
    try:
        result = plot_fn(**arguments)
    finally:
        opened = [plt.figure(num) for num in plt.get_fignums() if num not in before]
        for fig in opened:
            plt.close(fig)
    return [result] if isinstance(result, Figure) else opened


def _updatable(figures: list[Figure]) -> bool:  # one figure that takes new values in place: see the docstring
    return len(figures) == 1 and callable(getattr(figures[0], "slider_update", None))


def _pixels(fig: Figure) -> np.ndarray:
    """The figure drawn once by Agg: a copy of its RGBA pixels, (height, width, 4)."""
    canvas = fig.canvas if type(fig.canvas) is FigureCanvasAgg else FigureCanvasAgg(fig)
    canvas.draw()
    return np.array(canvas.buffer_rgba())  # a copy: the canvas's buffer is drawn over at the next change


def _png(rgba: np.ndarray) -> bytes:
    """RGBA pixels as PNG bytes: rows unfiltered, deflated fast by zlib (Pillow filters every row first, which takes
    four times as long for the same size; the picture goes to the browser at once)."""
    rows = np.pad(rgba.reshape(rgba.shape[0], -1), ((0, 0), (1, 0)))  # each row: filter type 0, then its pixels
    header = struct.pack(">IIBBBBB", rgba.shape[1], rgba.shape[0], 8, 6, 0, 0, 0)  # 8 bits per channel, RGBA
    parts = [(b"IHDR", header), (b"IDAT", zlib.compress(rows.tobytes(), 1)), (b"IEND", b"")]
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data)) for kind, data in parts
    )


@contextlib.contextmanager
def _quietly():
    """One PyTorch thread and Python's garbage collector paused inside; as they were after."""
    threads, collecting = torch.get_num_threads(), gc.isenabled()
    torch.set_num_threads(1)
    gc.disable()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        if collecting:
            gc.enable()


def _few_combinations(controls: Mapping[str, widgets.ValueWidget]) -> list[dict]:
    """Every combination of the values the controls can take, if each takes a few (options, a checkbox's two, an
    integer slider's positions) and there are at most ``FRAMES_AHEAD`` in all; else none."""
    choices = []
    for control in controls.values():
        if isinstance(control, widgets.Checkbox | widgets.ToggleButton):
            choices.append([False, True])
        elif hasattr(control, "options"):  # Dropdown, SelectionSlider, RadioButtons...
            choices.append([value for _, value in frames.options(control)])
        elif isinstance(control, widgets.IntSlider):
            choices.append(range(control.min, control.max + 1, max(1, control.step)))  # counted, not listed
        else:
            return []
    if math.prod(map(len, choices)) > FRAMES_AHEAD:
        return []
    combinations = [dict(zip(controls, values, strict=True)) for values in itertools.product(*choices)]
    return [values for values in combinations if _combination_key(controls, values) is not None]


def _combination_key(controls: Mapping[str, widgets.ValueWidget], values: dict) -> tuple | None:
    """``values`` as a key of the pictures drawn in advance (None if a value cannot be one: a list, a tensor)."""
    key = tuple(values[name] for name in controls)
    try:
        hash(key)
    except TypeError:
        return None
    return key
