"""Slider panels: controls in a box above a figure that redraws when a control moves.

The figure comes from an ``attn_course`` plotting function, so whatever a slider shows can
also be drawn, tested and timed without a browser: ``panel.render(**values)`` does exactly
what one control change does and returns the PNG images.

A change must feel instant (a tenth of a second), so the panel draws each figure once, straight
to PNG, instead of through ``plt.show()``: the inline backend behind it lays a figure out and
draws it twice, and measures it once more for a tight bounding box. The constrained layout is
computed on the first figure of each shape and reused while the decorations that decide it (tick
labels, titles, axis labels, legends) keep their shape. A figure whose plotting function knows how
(``attn_course.plotting._updatable``) is redrawn in place instead of built again.

The plotting function runs on one PyTorch thread: a figure's tensors are far too small to gain from
more, and on a busy machine each operation that waits for a second thread can take milliseconds.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from IPython.display import Image as IPythonImage
from IPython.display import display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from . import _frames
from ._validate import require_int

__all__ = ["slider_panel"]

# ipykernel handles widget messages without waiting for the running cell, on other threads, so a redraw
# can run while a cell (or another panel) draws. One redraw at a time, and each touches only its own figures.
_DRAW_LOCK = threading.RLock()
LAYOUTS_KEPT = 64  # layouts remembered per panel (one per figure shape met while sliding)
FIGURES_KEPT = 4  # figures a panel keeps to redraw in place: a control that changes the figure's shape and back
# Titles at a fixed height above the axes, for the figures a panel builds. Left to itself, matplotlib measures every
# tick label again on each draw to check that none sits above the axes (none does in the course's figures): a tenth
# of a redraw. Set while the plotting function runs, never globally.
TITLES_AT_TOP = {"axes.titley": 1.0}


def _text_shape(text: str) -> int:
    """What of a title or label decides the layout: its number of lines (0 if empty), not its words."""
    return text.count("\n") + 1 if text else 0


def _tick_shape(axis) -> tuple:
    """What of the tick labels the next draw writes decides the layout: the widest (in characters), the
    offset text ("1e-3") and which sides show them."""
    formatter = axis.get_major_formatter()
    labels = formatter.format_ticks(axis.get_major_locator()())
    offset = formatter.get_offset() if hasattr(formatter, "get_offset") else ""
    return max(map(len, labels), default=0), len(offset), tuple(sorted(axis.get_tick_params().items()))


def _place(ax) -> tuple | str:
    """Where ``ax`` sits before any layout: its cell of the grid, or its label (a colour bar's "<colorbar>")."""
    spec = ax.get_subplotspec()
    if spec is None:
        return ax.get_label()
    grid = spec.get_gridspec()
    return spec.get_geometry(), tuple(grid.get_width_ratios() or ()), tuple(grid.get_height_ratios() or ())


def _layout_key(fig: Figure) -> tuple:
    """A summary of everything the constrained layout of ``fig`` depends on."""
    key = [tuple(fig.get_size_inches()), fig.dpi, _text_shape(fig.get_suptitle())]
    key.extend(("figure legend", len(legend.get_texts())) for legend in fig.legends)
    for ax in fig.axes:
        titles = tuple(_text_shape(ax.get_title(loc)) for loc in ("left", "center", "right"))
        labels = (_text_shape(ax.get_xlabel()), _text_shape(ax.get_ylabel()))
        legend = ax.get_legend()
        key.append(
            (
                type(ax).__name__,
                _place(ax),
                titles,
                labels,
                _tick_shape(ax.xaxis),
                _tick_shape(ax.yaxis),
                None if legend is None else len(legend.get_texts()),
            )
        )
    return tuple(key)


def _figure_png(fig: Figure, layouts: OrderedDict | None = None) -> bytes:
    """Draw ``fig`` once and return it as PNG bytes.

    Args:
        fig: the figure; with a layout engine, its layout is computed by this draw, or taken from ``layouts``.
            A figure without an Agg canvas (one closed by ``plt.close``, for example) is given one.
        layouts: a cache of layouts (key -> axes positions) that this call reads and fills, or None.
    """
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)  # closed: a bare canvas
    engine = fig.__dict__.setdefault("_attn_course_layout", fig.get_layout_engine())  # before any freezing
    # Where the axes stood before any layout: a layout starts from there (with axes of a fixed aspect, the
    # constrained layout depends on where it starts), so a figure redrawn in place is laid out as a new one.
    start = fig.__dict__.setdefault("_attn_course_start", [ax.get_position(original=True).frozen() for ax in fig.axes])
    positions = key = None
    if layouts is not None and engine is not None and fig.axes:
        key = _layout_key(fig)
        positions = layouts.get(key)
    if positions is not None and len(positions) == len(fig.axes):
        fig.set_layout_engine("none")  # the positions below are the layout: no layout pass in the draw
        for ax, position in zip(fig.axes, positions, strict=True):
            ax.set_position(position)
            ax.set_in_layout(True)  # set_position takes it out of any later layout
        canvas.draw()
    else:
        if engine is not None:
            fig.set_layout_engine(engine)  # a figure redrawn in place may have had its layout frozen
            if len(start) == len(fig.axes):
                for ax, position in zip(fig.axes, start, strict=True):
                    ax.set_position(position)
                    ax.set_in_layout(True)
        canvas.draw()  # the layout engine, if any, places the axes first
        if key is not None:
            layouts[key] = [ax.get_position(original=True).frozen() for ax in fig.axes]
            while len(layouts) > LAYOUTS_KEPT:
                layouts.popitem(last=False)
    width, height = canvas.get_width_height(physical=True)
    buffer = io.BytesIO()
    # Level 1: a slider's picture is shown once and thrown away, so speed matters more than a few kB.
    Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
        buffer, format="png", compress_level=1
    )
    return buffer.getvalue()


def slider_panel(
    plot_fn: Callable[..., object],
    controls: Mapping[str, widgets.ValueWidget],
    fixed: Mapping[str, object] | None = None,
    heavy: bool = False,
    columns: int = 2,
) -> widgets.VBox:
    """A panel that calls ``plot_fn(**fixed, **{name: control.value})`` and shows the figure.

    Args:
        plot_fn: a plotting function that draws a new figure and returns it.
        controls: keyword name of ``plot_fn`` -> widget (slider, dropdown, checkbox...).
        fixed: keyword arguments passed unchanged on every call (the data, for example).
        heavy: redraw only when a slider is released (``continuous_update=False``).
            Every control's description is shown in full (``style.description_width = "initial"``).
        columns: controls per row.

    Returns:
        A ``VBox`` of the controls and the output area; it has already drawn the defaults. Its
        ``render(**changes)`` does what a control change does, for the controls' current values with
        ``changes`` applied, and returns the PNG images (bytes), one per figure that ``plot_fn`` left open.

    Raises:
        Whatever ``plot_fn`` raises for the default values, before any widget is built.
    """
    if not callable(plot_fn):
        raise TypeError(f"plot_fn must be a plotting function, got {type(plot_fn).__name__}")
    if not isinstance(controls, Mapping):
        raise TypeError(
            f"controls must be a dict of argument name -> widget, got {type(controls).__name__}; "
            "e.g. controls={'bandwidth': FloatSlider(...)}"
        )
    if not controls:
        raise ValueError("controls must name at least one widget, got none")
    for name, control in controls.items():
        if not isinstance(control, widgets.ValueWidget):
            raise TypeError(
                f"controls[{name!r}] must be an ipywidgets control (e.g. FloatSlider), got {type(control).__name__}"
            )
    fixed = dict(fixed or {})
    clash = sorted(set(fixed) & set(controls))
    if clash:
        raise ValueError(f"fixed and controls must not name the same argument, both name {clash}")
    require_int(columns, "columns")
    for control in controls.values():  # show whole labels ("bandwidth h"), not ipywidgets' truncated default
        if hasattr(control, "style") and hasattr(control.style, "description_width"):
            control.style.description_width = "initial"
    if heavy:
        for control in controls.values():
            if hasattr(control, "continuous_update"):
                control.continuous_update = False

    # Draw the defaults once outside the widget first: an exception raised inside the widget's output
    # area is shown there but swallowed, so a broken panel would otherwise pass a notebook test run.
    before = set(plt.get_fignums())
    with plt.rc_context(TITLES_AT_TOP):
        first = plot_fn(**fixed, **{name: control.value for name, control in controls.items()})
    opened = [first] if isinstance(first, Figure) else [plt.figure(n) for n in plt.get_fignums() if n not in before]
    title = _frames.describe_figure(opened[0]) if opened else "a figure"
    for fig in opened:
        plt.close(fig)

    layouts = OrderedDict()  # this panel's layouts, reused from one change to the next
    kept: list[Figure] = []  # recent figures that plot_fn can redraw in place, one per shape, most recent first

    def render(**changes) -> list[bytes]:
        with _DRAW_LOCK:  # see _DRAW_LOCK
            threads = torch.get_num_threads()
            torch.set_num_threads(1)  # a figure's tensors are small: see the module's docstring
            try:
                with plt.rc_context(TITLES_AT_TOP):
                    return draw({name: control.value for name, control in controls.items()} | changes)
            finally:
                torch.set_num_threads(threads)

    def draw(values: dict) -> list[bytes]:
        for fig in kept:  # an update returns False, untouched, for values that need another shape of figure
            if fig._attn_course_update[1](**fixed, **values):  # same figure, new data: no new axes or ticks
                kept.remove(fig)
                kept.insert(0, fig)
                return [_figure_png(fig, layouts)]
        before = set(plt.get_fignums())
        result = plot_fn(**fixed, **values)
        # Only this call's figures: the one plot_fn returns, else those it opened. Never pyplot's whole list,
        # which may hold a figure that a cell running at the same time is drawing (see _DRAW_LOCK).
        if isinstance(result, Figure):
            figures = [result]
        else:
            figures = [plt.figure(num) for num in plt.get_fignums() if num not in before]
        try:
            return [_figure_png(fig, layouts) for fig in figures]
        finally:
            for fig in figures:
                plt.close(fig)  # out of pyplot's hands; a figure kept below can still be drawn
            if len(figures) == 1 and getattr(figures[0], "_attn_course_update", (None,))[0] is plot_fn:
                kept.insert(0, figures[0])
                del kept[FIGURES_KEPT:]

    def redraw(**values):
        for png in render(**values):  # each figure drawn once, straight to PNG: see the module's docstring
            display(IPythonImage(data=png, format="png"))

    if _frames.wanted():  # building the static site: every figure drawn now, switched in the browser
        return _frames.frames_panel(render, controls, title=title)
    output = widgets.interactive_output(redraw, dict(controls))
    items = list(controls.values())
    rows = [widgets.HBox(items[i : i + columns]) for i in range(0, len(items), columns)]
    panel = widgets.VBox([*rows, output])
    panel.render = render
    return panel
