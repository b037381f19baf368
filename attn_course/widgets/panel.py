"""Slider panels: controls in a box above a figure that changes when a control moves.

The figure comes from an ``attn_course`` plotting function, so whatever a slider shows can also be drawn, tested and
timed without a browser: ``panel.render(**values)`` does what one control change does and returns the PNG images.

A light figure is built again on each change. A heavier one follows matplotlib's idiom for interactive figures, whose
steps :class:`SliderPanel` names: ``build`` the figure once, ``draw`` it (its layout engine places the axes),
``freeze`` its layout, then on each change ``update`` its artists and ``draw`` it again. A plotting function takes
part by giving the figure it returns a ``slider_update`` function::

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

The panel calls ``fig.slider_update(**fixed, **values)``, which must leave the figure as ``plot_wave`` would build it
for those values. When a change moves what the layout makes room for (tick labels of another length, a colour bar's
new scale), it returns True and the panel builds a new figure (a layout run again on a used figure can place the axes
a fraction of a pixel elsewhere). ``make bench`` checks every slider picture against the figure drawn afresh.

A panel whose controls take at most ``FRAMES_AHEAD`` combinations of values (options, checkboxes, short integer
sliders) draws them all when it is built; a change then shows a picture already drawn, of the data as the cell left it.
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

from .._validate.widgets import require_panel_args
from . import frames

__all__ = ["slider_panel"]  # SliderPanel is how it works; notebooks call slider_panel

FRAMES_AHEAD = 12  # a panel with at most this many combinations of control values draws them all when built
# Titles at a fixed height: else every draw measures all tick labels to see if one is above the axes (none is here).
TITLES_AT_TOP = {"axes.titley": 1.0}  # set while a panel draws, never globally
_DRAW_LOCK = threading.RLock()  # see _drawing


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
        controls: keyword name of ``plot_fn`` -> widget (slider, dropdown, checkbox...); each description is shown
            in full (``style.description_width = "initial"``).
        fixed: keyword arguments passed unchanged on every call (the data, for example).
        heavy: redraw only when a slider is released (``continuous_update=False``).
        columns: controls per row.

    Returns:
        A ``VBox`` of the controls and the output area; it has already drawn the defaults. Its
        ``render(**changes)`` does what a control change does, for the controls' current values with
        ``changes`` applied, and returns the PNG images (bytes), one per figure that ``plot_fn`` left open.
        Its ``frames_ahead`` counts the combinations of values drawn when it was built (0 for most panels).

    Raises:
        Whatever ``plot_fn`` raises for the default values, before any widget is built.
    """
    controls, fixed = require_panel_args(plot_fn, controls, fixed, columns)
    panel = SliderPanel(plot_fn, controls, fixed)
    if frames.wanted():  # building the static site: every figure drawn now, switched in the browser
        return frames.frames_panel(panel.draw, controls, title=panel.title)
    panel.draw_ahead()
    return panel.widget(columns, heavy)


class SliderPanel:
    """A slider panel's figure, drawn in the steps named in the module's docstring, and its widget."""

    def __init__(self, plot_fn: Callable[..., object], controls: dict, fixed: dict):
        self.plot_fn, self.controls, self.fixed = plot_fn, controls, fixed
        self.figure = None  # the figure that later changes update in place, when plot_fn's figures can take them
        self.frozen = None  # the last figure whose layout was frozen, after its first draw
        self.ahead = {}  # combination of control values (in the order of controls) -> its PNG images
        # The defaults drawn outside the widget: an exception raised in the widget's output area is shown there but
        # swallowed, so a broken panel would otherwise pass a notebook test run.
        with plt.rc_context(TITLES_AT_TOP):
            opened = self.build(self.values())
        self.title = frames.describe_figure(opened[0]) if opened else "a figure"  # the site's alt text

    def values(self, **changes) -> dict:
        """The controls' current values, with ``changes`` applied."""
        return {name: control.value for name, control in self.controls.items()} | changes

    def build(self, values: dict) -> list[Figure]:
        """New figures for ``values``, closed in pyplot (no ``plt.show()`` shows them): the one ``plot_fn`` returns, or
        those it opened (not pyplot's whole list: another cell may be drawing one); an updatable one is kept."""
        before = set(plt.get_fignums())
        try:
            result = self.plot_fn(**(self.fixed | values))
        finally:
            opened = [plt.figure(num) for num in plt.get_fignums() if num not in before]
            for fig in opened:
                plt.close(fig)
        figures = [result] if isinstance(result, Figure) else opened
        self.figure = figures[0] if len(figures) == 1 and callable(getattr(figures[0], "slider_update", None)) else None
        return figures

    def update(self, values: dict) -> bool:
        """``values`` set on the kept figure's artists; False if none is kept or its layout cannot show them."""
        if self.figure is not None and self.figure.slider_update(**self.fixed, **values):
            self.figure = None
        return self.figure is not None

    def freeze(self) -> None:
        """The axes stay where the layout engine placed them, the axis labels beside their unchanged tick labels."""
        self.frozen = self.figure
        self.figure.set_layout_engine("none")
        for axis in (axis for ax in self.figure.axes for axis in (ax.xaxis, ax.yaxis)):
            axis.set_label_coords(*axis.label.get_position(), transform=axis.label.get_transform())

    def draw(self, **changes) -> list[np.ndarray]:
        """The pictures (Agg's RGBA pixels) for the controls' values with ``changes``: the kept figure or new ones."""
        values = self.values(**changes)
        with _drawing():
            figures = [self.figure] if self.update(values) else self.build(values)
            pictures = []
            for fig in figures:  # a figure's first draw: its layout engine places the axes
                canvas = fig.canvas if type(fig.canvas) is FigureCanvasAgg else FigureCanvasAgg(fig)
                canvas.draw()
                pictures.append(np.array(canvas.buffer_rgba()))  # a copy: the buffer is drawn over at the next change
            if self.figure is not None and self.frozen is not self.figure:
                self.freeze()
            return pictures

    def render(self, **changes) -> list[bytes]:
        """The PNG images of one control change: drawn in advance for these values, else drawn now."""
        values = self.values(**changes)
        pngs = self.ahead.get(tuple(values[name] for name in self.controls)) if self.ahead else None
        return list(pngs) if pngs is not None else [_png(picture) for picture in self.draw(**changes)]

    def draw_ahead(self) -> None:
        """Every combination of values rendered now, if the controls take few (see the module's docstring)."""
        for combination in _few_combinations(self.controls):
            try:
                self.ahead[combination] = tuple(self.render(**dict(zip(self.controls, combination, strict=True))))
            except Exception:  # noqa: BLE001 - not kept: choosing these values draws live and shows the error there
                continue

    def show(self, **values) -> None:
        """The images of a control change, in the widget's output area."""
        with _drawing():  # until the picture is out
            for png in self.render(**values):
                display(IPythonImage(data=png, format="png"))

    def widget(self, columns: int = 2, heavy: bool = False) -> widgets.VBox:
        """The controls, ``columns`` to a row, above the output area where ``show`` has drawn their values."""
        for control in self.controls.values():  # whole labels ("bandwidth h"), not ipywidgets' truncated default
            if hasattr(control, "style") and hasattr(control.style, "description_width"):
                control.style.description_width = "initial"
            if heavy and hasattr(control, "continuous_update"):
                control.continuous_update = False
        output = widgets.interactive_output(self.show, self.controls)
        items = list(self.controls.values())
        box = widgets.VBox([*(widgets.HBox(items[i : i + columns]) for i in range(0, len(items), columns)), output])
        box.render, box.frames_ahead = self.render, len(self.ahead)
        return box


def _png(rgba: np.ndarray) -> bytes:
    """RGBA pixels as PNG bytes: rows unfiltered, deflated fast by zlib (Pillow filters every row first, which takes
    longer for the same size; the picture goes to the browser at once)."""
    rows = np.pad(rgba.reshape(rgba.shape[0], -1), ((0, 0), (1, 0)))  # each row: filter type 0, then its pixels
    header = struct.pack(">IIBBBBB", rgba.shape[1], rgba.shape[0], 8, 6, 0, 0, 0)  # 8 bits per channel, RGBA
    parts = [(b"IHDR", header), (b"IDAT", zlib.compress(rows.tobytes(), 1)), (b"IEND", b"")]
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data)) for kind, data in parts
    )


@contextlib.contextmanager
def _drawing():
    """One redraw at a time (widget messages are handled on other threads, even while a cell draws), with titles at the
    top, on one PyTorch thread (a figure's tensors are too small to gain from more, and a busy second thread slows a
    redraw) and no garbage collection (a figure's thousands of new objects would start one over the notebook's)."""
    with _DRAW_LOCK, plt.rc_context(TITLES_AT_TOP):
        threads, collecting = torch.get_num_threads(), gc.isenabled()
        torch.set_num_threads(1)
        gc.disable()
        try:
            yield
        finally:
            torch.set_num_threads(threads)
            if collecting:
                gc.enable()


def _few_combinations(controls: Mapping[str, widgets.ValueWidget]) -> list[tuple]:
    """Every combination of the values the controls take (in their order), if each takes a few (options, a checkbox's
    two, an integer slider's positions), there are at most ``FRAMES_AHEAD`` and each can be a key; else none."""
    choices = []
    for control in controls.values():
        if frames.choices(control) is not None:  # a checkbox, a dropdown, a selection slider...
            choices.append([value for _, value in frames.choices(control)])
        elif isinstance(control, widgets.IntSlider):
            choices.append(range(control.min, control.max + 1, max(1, control.step)))  # counted, not listed
        else:
            return []
    if math.prod(map(len, choices)) > FRAMES_AHEAD:
        return []
    combinations = list(itertools.product(*choices))
    try:
        hash(tuple(combinations))
    except TypeError:  # a value that cannot be a key (a list): drawn live, on a change
        return []
    return combinations
