"""Fast drawing of slider figures to PNG: the one home of the course's speed machinery.

A slider change must feel instant (a tenth of a second). The plotting functions stay plain matplotlib (they draw a
new figure and return it); everything that makes a redraw fast lives here, and only ``attn_course.widgets`` uses it:

* each figure is drawn once, straight to PNG, instead of through ``plt.show()`` (the inline backend lays a figure
  out and draws it twice, and measures it once more for a tight bounding box);
* the constrained layout is computed once for each set of decorations that decides it and reused after: the number
  of lines of the titles and axis labels, the legends' entries, and the tick labels each axes writes once laid out
  (their number follows the axes' size; exact strings, since digits differ in ink width). Matplotlib's layout
  also looks at where the end ticks fall, which this key does not hold, so the result is checked, not assumed:
  ``make bench`` compares every slider picture of the course with the figure drawn alone (334 of 334 the same);
* one Agg renderer per picture size serves every figure of a panel and keeps the strings it has rasterised
  (``attn_course._render_text``);
* a panel whose plotting function takes ``axes=`` (or ``ax=``) draws each new figure on the axes of the last one,
  emptied by :func:`clear`: building new axes and their tick marks (lines, markers and labels that matplotlib
  makes one by one) is about half of what a redraw costs. When the new values need other axes (another number of
  panels), the plotting function draws a new figure instead.
"""

from __future__ import annotations

import inspect
import struct
import zlib
from collections import OrderedDict
from collections.abc import Callable

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator
from matplotlib.transforms import Bbox

from ._render_text import TextCachingRenderer

LAYOUTS_KEPT = 64  # layouts remembered per panel (one per figure shape met while sliding)
LAYOUTS_TRIED = 16  # layouts of the same decorations tried on a new figure, the most recently used first
RENDERERS_KEPT = 4  # picture sizes per panel (a control may change the figure's size)
# Titles at a fixed height above the axes. Left to itself, matplotlib measures every tick label again on each draw
# to check that none sits above the axes (none does in the course's figures): a tenth of a redraw. Set while a
# panel's plotting function runs (``plt.rc_context``), never globally.
TITLES_AT_TOP = {"axes.titley": 1.0}


class _Canvas(FigureCanvasAgg):
    """An Agg canvas that draws with its panel's renderers (see :class:`Drawer`)."""

    def __init__(self, figure, drawer: Drawer):
        super().__init__(figure)
        self._drawer = drawer

    def get_renderer(self):
        width, height = self.get_width_height(physical=True)
        self.renderer = self._drawer.renderer(width, height, self.figure.dpi)
        return self.renderer


def _lines(text: str) -> int:
    """What of a title or label decides the layout: its number of lines (0 if empty), not its words."""
    return text.count("\n") + 1 if text else 0


def _tick_shapes(fig: Figure) -> tuple:
    """The tick labels each axes of ``fig`` writes where it stands now (their number and width follow the axes'
    size in pixels, so the layout), with the offset text ("1e-3"), which sides show them and how they are turned.
    Exact strings: the layout measures the ink, and a "1" is narrower than a "0". Of labels fixed at given places
    (tokens), what the layout measures: how many, the set of them (the widest is in it) and the two at the ends."""
    shapes = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()
            labels = formatter.format_ticks(axis.get_major_locator()())
            offset = formatter.get_offset() if hasattr(formatter, "get_offset") else ""
            params = tuple(sorted(axis.get_tick_params().items()))
            first = axis.majorTicks[0].label1  # set_xticks(..., rotation=45, ha="right") sets the labels, not params
            params += (first.get_rotation(), first.get_horizontalalignment(), first.get_verticalalignment())
            labels = tuple(labels)
            if isinstance(axis.get_major_locator(), FixedLocator) and labels:  # labels at fixed places (tokens):
                labels = (len(labels), frozenset(labels), labels[0], labels[-1])  # the widest and the two ends
            shapes.append((labels, offset, params))
    return tuple(shapes)


def _place(ax) -> tuple | str:
    """Where ``ax`` sits before any layout: its cell of the grid, or its label (a colour bar's "<colorbar>")."""
    spec = ax.get_subplotspec()
    if spec is None:
        return ax.get_label()
    grid = spec.get_gridspec()
    return spec.get_geometry(), tuple(grid.get_width_ratios() or ()), tuple(grid.get_height_ratios() or ())


def layout_key(fig: Figure) -> tuple:
    """A summary of what the constrained layout of ``fig`` depends on, but its tick labels (see ``_tick_shapes``)."""
    key = [tuple(fig.get_size_inches()), fig.dpi, len(fig.axes)]
    key.extend(None if text is None else _lines(text.get_text()) for text in _figure_titles(fig))
    key.extend(("figure legend", len(legend.get_texts())) for legend in fig.legends)
    for ax in fig.axes:
        titles = tuple(_lines(ax.get_title(loc)) for loc in ("left", "center", "right"))
        labels = (_lines(ax.get_xlabel()), _lines(ax.get_ylabel()))
        legend = ax.get_legend()
        key.append((type(ax).__name__, _place(ax), titles, labels, None if legend is None else len(legend.get_texts())))
    return tuple(key)


def _figure_titles(fig: Figure) -> list:
    """The figure's suptitle, supxlabel and supylabel (None where absent): the constrained layout moves them."""
    return [getattr(fig, name, None) for name in ("_suptitle", "_supxlabel", "_supylabel")]


class Drawer:
    """Draws a panel's figures to PNG, reusing layouts and rasterised text from one figure to the next."""

    def __init__(self):
        self.layouts = OrderedDict()  # (layout_key, tick shapes) -> (axes positions, figure title positions)
        self._renderers = OrderedDict()  # (width, height, dpi) -> renderer
        self._kept = None  # the last figure drawn, whose axes the next one may be drawn on
        self._engine = None  # the layout engine of the panel's figures

    def renderer(self, width: int, height: int, dpi: float) -> TextCachingRenderer:
        key = (width, height, dpi)
        if key not in self._renderers:
            self._renderers[key] = TextCachingRenderer(width, height, dpi)
            while len(self._renderers) > RENDERERS_KEPT:
                self._renderers.popitem(last=False)
        self._renderers.move_to_end(key)
        return self._renderers[key]

    def png(self, fig: Figure) -> bytes:
        """Draw ``fig`` (a new figure, not yet drawn) once and return it as PNG bytes.

        With a layout engine, the layout is taken from an earlier figure with the same decorations (see
        :meth:`_layout_for`), or computed by this draw; either way the figure then keeps those positions and
        no layout engine.
        """
        engine = fig.get_layout_engine()
        if engine is None or not fig.axes:
            canvas = _Canvas(fig, self)  # also replaces the canvas of a closed figure, which cannot draw to pixels
            canvas.draw()
            return _png(canvas)
        self._engine = engine
        return self._draw_laid_out(fig)

    def _draw_laid_out(self, fig: Figure) -> bytes:
        """Draw ``fig``, its axes where no layout has moved them yet, with a layout met before or a new one."""
        before = _layout_of(fig)
        canvas = _Canvas(fig, self)
        if self._layout_for(fig) is None:
            _place_as(fig, before)  # as the figure came: the layout engine starts from there
            for ax in fig.axes:
                ax.set_in_layout(True)  # which set_position turned off
            fig.set_layout_engine(self._engine)
            canvas.draw()  # the layout engine places the axes (and moves the figure's titles) first
            self.layouts[layout_key(fig), _tick_shapes(fig)] = _layout_of(fig)
            while len(self.layouts) > LAYOUTS_KEPT:
                self.layouts.popitem(last=False)
        else:
            fig.set_layout_engine("none")  # the axes stand where the layout puts them: no layout pass in the draw
            canvas.draw()
        fig.set_layout_engine("none")  # the positions are the layout now
        return _png(canvas)

    def _layout_for(self, fig: Figure) -> tuple | None:
        """A layout met before that fits ``fig``, with ``fig``'s axes and titles put there; or None.

        A layout fits when the figure has the same decorations (``layout_key``) and, with its axes where the layout
        puts them, writes tick labels of the same shape as the figure the layout was computed for.
        """
        key = layout_key(fig)
        candidates = [(ticks, layout) for (other, ticks), layout in reversed(self.layouts.items()) if other == key]
        for ticks, layout in candidates[:LAYOUTS_TRIED]:
            _place_as(fig, layout)
            if _tick_shapes(fig) == ticks:
                self.layouts.move_to_end((key, ticks))
                return layout
        return None

    def keep(self, fig: Figure) -> None:
        """Keep ``fig``, just drawn by :meth:`png` with a layout engine, for :meth:`png_again` to draw on."""
        self._kept = fig if fig.axes and fig.get_layout_engine() is not None else None

    def png_again(self, plot_fn: Callable[..., object], keyword: str, arguments: dict) -> bytes | None:
        """``plot_fn(**arguments)`` drawn on the axes of the kept figure, as PNG bytes; or None (and the kept
        figure dropped) when the new values need other axes: draw a new figure then.

        ``keyword`` is the argument through which ``plot_fn`` draws on given axes (see :func:`axes_keyword`).
        """
        fig, self._kept = self._kept, None
        if fig is None:
            return None
        axes = clear(fig)
        if any(ax.get_subplotspec() is None for ax in axes):  # axes placed by hand: a new figure places them
            return None
        for ax in axes:  # back where a new figure has them before any layout
            ax.set_position(ax.get_subplotspec().get_position(fig))
            ax.set_in_layout(True)
        try:
            result = plot_fn(**arguments, **{keyword: axes[0] if keyword == "ax" and len(axes) == 1 else axes})
        except Exception:  # noqa: BLE001 - these axes do not fit the new values (say, another number of panels):
            return None  # a new figure is drawn, which raises again if the values themselves are wrong
        if result is not fig:  # it drew a figure of its own: not shown, the caller draws a new one
            if isinstance(result, Figure):
                plt.close(result)
            return None
        self._kept = fig
        return self._draw_laid_out(fig)


def _layout_of(fig: Figure) -> tuple:
    """Where ``fig``'s axes and titles stand: (axes positions, figure title positions)."""
    positions = [ax.get_position(original=True).frozen() for ax in fig.axes]
    return positions, [None if text is None else text.get_position() for text in _figure_titles(fig)]


def _place_as(fig: Figure, layout: tuple) -> None:
    """Put ``fig``'s axes and titles where ``layout`` (the layout of a figure with the same key) has them."""
    positions, titles = layout
    for ax, position in zip(fig.axes, positions, strict=True):
        ax.set_position(position)
    for text, position in zip(_figure_titles(fig), titles, strict=True):
        if text is not None:
            text.set_position(position)


def _png(canvas: FigureCanvasAgg) -> bytes:
    """The canvas as a PNG: RGBA rows, no filter, zlib at level 1.

    A slider's picture is shown once and thrown away, so speed matters more than a few kB. Pillow (which
    matplotlib's own ``savefig`` uses) tries five filters on every row and takes twice as long, whatever the level.
    """
    width, height = canvas.get_width_height(physical=True)
    rows = np.zeros((height, 4 * width + 1), dtype=np.uint8)  # each row: filter type 0 (none), then its pixels
    rows[:, 1:] = np.asarray(canvas.buffer_rgba()).reshape(height, 4 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8 bits per channel, colour type 6: RGBA

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")


def axes_keyword(plot_fn: Callable[..., object]) -> str | None:
    """The argument through which ``plot_fn`` draws on given axes, ``"axes"`` or ``"ax"`` (default None), if any."""
    try:
        parameters = inspect.signature(plot_fn).parameters
    except (TypeError, ValueError):  # a callable whose signature Python cannot read
        return None
    for name in ("axes", "ax"):
        parameter = parameters.get(name)
        if parameter is not None and parameter.kind is not parameter.VAR_KEYWORD and parameter.default is None:
            return name
    return None


def clear(fig: Figure) -> list:
    """Take off ``fig`` what a plotting function drew and return the axes it drew on, as a new figure of the same
    shape has them: no artists, legends or colour bars, no titles or axis labels, limits from the data again and
    axes not inverted. The axes keep their tick marks, which the next drawing reuses; the figure keeps its
    titles, which the next drawing sets again."""
    for ax in fig.axes:
        for mappable in [*ax.collections, *ax.images]:
            if getattr(mappable, "colorbar", None) is not None:
                mappable.colorbar.remove()  # its axes go, and the axes it took room from get it back
    titles = [text for text in _figure_titles(fig) if text is not None]
    for artist in [*fig.legends, *fig.lines, *fig.patches, *fig.images, *fig.artists]:
        artist.remove()
    for text in [text for text in fig.texts if text not in titles]:
        text.remove()
    for ax in fig.axes:
        for artist in [*ax.collections, *ax.images, *ax.lines, *ax.patches, *ax.tables, *ax.texts, *ax.artists]:
            artist.remove()
        ax.containers.clear()
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        for loc in ("left", "center", "right"):
            if ax.get_title(loc):
                ax.set_title("", loc=loc)  # also back to the default font, as on new axes
        ax.set_xlabel("")
        ax.set_ylabel("")
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_inverted():
                axis.set_inverted(False)
        ax.dataLim.set(Bbox.null())
        ax.ignore_existing_data_limits = True
        ax.set_autoscale_on(True)
    return list(fig.axes)
