"""Fast drawing of slider figures to PNG: the one home of the course's speed machinery.

A slider change must feel instant (a tenth of a second). The plotting functions stay plain matplotlib (they draw a
new figure and return it); everything that makes a redraw fast lives here, and only ``attn_course.widgets`` uses it:

* each figure is drawn once, straight to PNG, instead of through ``plt.show()`` (the inline backend lays a figure
  out and draws it twice, and measures it once more for a tight bounding box);
* the constrained layout is computed on the first figure of each shape and reused while the decorations that decide
  it (tick labels, titles, axis labels, legends) keep their shape;
* one Agg renderer per picture size serves every figure of a panel, and it keeps the text it has rasterised: the
  tick labels, titles and most numbers of one frame come back in the next, and turning a string into glyph bitmaps
  is most of what drawing a figure costs. A cached string is pasted at its new place, pixel for pixel as FreeType
  draws it there (the key holds the string, the font, the angle and the sub-pixel part of the position).
"""

from __future__ import annotations

import io
import math
from collections import OrderedDict

from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from PIL import Image

LAYOUTS_KEPT = 64  # layouts remembered per panel (one per figure shape met while sliding)
RENDERERS_KEPT = 4  # picture sizes per panel (a control may change the figure's size)
TEXTS_KEPT = 4096  # rasterised strings per renderer
# Titles at a fixed height above the axes. Left to itself, matplotlib measures every tick label again on each draw
# to check that none sits above the axes (none does in the course's figures): a tenth of a redraw. Set while a
# panel's plotting function runs (``plt.rc_context``), never globally.
TITLES_AT_TOP = {"axes.titley": 1.0}


class _Recorder:
    """Stands in for Agg's C++ renderer while a string is rasterised: keeps the glyph bitmaps instead of drawing."""

    def __init__(self):
        self.glyphs = []  # (bitmap, x, y) as RendererAgg passes them to draw_text_image

    def draw_text_image(self, bitmap, x, y, angle, gc) -> None:
        self.glyphs.append((bitmap.copy(), x, y, angle))


class _TextCachingRenderer(RendererAgg):
    """``RendererAgg`` that rasterises each (string, font, angle, sub-pixel offset) once and pastes it afterwards."""

    def __init__(self, width, height, dpi):
        super().__init__(width, height, dpi)
        self._texts = OrderedDict()
        self._heights = {}

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath:  # mathtext: rare in the course's slider figures, drawn as usual
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        left, top = math.floor(x), math.floor(y)
        key = (
            s,
            _font_key(prop),
            angle,
            gc.get_antialiased(),
            x - left,
            y - top,
            None if mtext is None else (tuple(mtext.get_fontfeatures() or ()), mtext.get_language()),
        )
        glyphs = self._texts.get(key)
        if glyphs is None:
            recorder, agg = _Recorder(), self._renderer
            self._renderer = recorder  # RendererAgg.draw_text hands every glyph to self._renderer.draw_text_image
            try:
                super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
            finally:
                self._renderer = agg
            glyphs = [(bitmap, gx - left, gy - top, a) for bitmap, gx, gy, a in recorder.glyphs]
            self._texts[key] = glyphs
            if len(self._texts) > TEXTS_KEPT:
                self._texts.popitem(last=False)
        for bitmap, gx, gy, a in glyphs:
            self._renderer.draw_text_image(bitmap, left + gx, top + gy, a, gc)
        return None

    def _get_font_height_metrics(self, prop):
        """The ascent, descent and line gap of ``prop``'s font, as ``Text`` computes them, once per font."""
        key = _font_key(prop)
        if key not in self._heights:
            self._heights[key] = _font_heights(prop, self.dpi)
        return self._heights[key]


def _font_key(prop) -> tuple:
    return (
        tuple(prop.get_family()),
        prop.get_style(),
        prop.get_variant(),
        prop.get_weight(),
        prop.get_stretch(),
        prop.get_size_in_points(),
        prop.get_file(),
    )


def _font_heights(prop, dpi: float) -> tuple:
    """What ``matplotlib.text.Text._get_layout`` reads from the font's tables: (ascent, descent, line gap) in pixels."""
    from matplotlib.font_manager import fontManager, get_font

    font = get_font(fontManager._find_fonts_by_props(prop))
    for table_name, gap, ascent, descent in (
        ("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
        ("hhea", "lineGap", "ascent", "descent"),
    ):
        table = font.get_sfnt_table(table_name)
        if table is None:
            continue
        scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * prop.get_size_in_points() * dpi / 72
        return table[ascent] * scale, -table[descent] * scale, table[gap] * scale
    return None, None, None


class _Canvas(FigureCanvasAgg):
    """An Agg canvas that draws with its panel's renderers (see :class:`Drawer`)."""

    def __init__(self, figure, drawer: Drawer):
        super().__init__(figure)
        self._drawer = drawer

    def get_renderer(self):
        width, height = self.get_width_height(physical=True)
        self.renderer = self._drawer.renderer(width, height, self.figure.dpi)
        return self.renderer


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


def layout_key(fig: Figure) -> tuple:
    """A summary of everything the constrained layout of ``fig`` depends on."""
    key = [tuple(fig.get_size_inches()), fig.dpi, len(fig.axes)]
    key.extend(None if text is None else _text_shape(text.get_text()) for text in _figure_titles(fig))
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


def _figure_titles(fig: Figure) -> list:
    """The figure's suptitle, supxlabel and supylabel (None where absent): the constrained layout moves them."""
    return [getattr(fig, name, None) for name in ("_suptitle", "_supxlabel", "_supylabel")]


class Drawer:
    """Draws a panel's figures to PNG, reusing layouts and rasterised text from one figure to the next."""

    def __init__(self):
        self.layouts = OrderedDict()  # layout_key -> axes positions
        self._renderers = OrderedDict()  # (width, height, dpi) -> renderer

    def renderer(self, width: int, height: int, dpi: float) -> _TextCachingRenderer:
        key = (width, height, dpi)
        if key not in self._renderers:
            self._renderers[key] = _TextCachingRenderer(width, height, dpi)
            while len(self._renderers) > RENDERERS_KEPT:
                self._renderers.popitem(last=False)
        self._renderers.move_to_end(key)
        return self._renderers[key]

    def png(self, fig: Figure) -> bytes:
        """Draw ``fig`` (a new figure, not yet drawn) once and return it as PNG bytes.

        With a layout engine, the layout is computed by this draw, or taken from an earlier figure with the same
        layout key; either way the figure then keeps those positions and no layout engine.
        """
        canvas = _Canvas(fig, self)  # also replaces the canvas of a closed figure, which cannot draw to pixels
        key = layout = None
        if fig.get_layout_engine() is not None and fig.axes:
            key = layout_key(fig)
            layout = self.layouts.get(key)
        if layout is not None:
            fig.set_layout_engine("none")  # the positions below are the layout: no layout pass in the draw
            positions, titles = layout
            for ax, position in zip(fig.axes, positions, strict=True):
                ax.set_position(position)
            for text, position in zip(_figure_titles(fig), titles, strict=True):
                if text is not None:
                    text.set_position(position)
            canvas.draw()
        else:
            canvas.draw()  # the layout engine, if any, places the axes (and moves the figure's titles) first
            if key is not None:
                positions = [ax.get_position(original=True).frozen() for ax in fig.axes]
                titles = [None if text is None else text.get_position() for text in _figure_titles(fig)]
                self.layouts[key] = (positions, titles)
                while len(self.layouts) > LAYOUTS_KEPT:
                    self.layouts.popitem(last=False)
        width, height = canvas.get_width_height(physical=True)
        buffer = io.BytesIO()
        # Level 1: a slider's picture is shown once and thrown away, so speed matters more than a few kB.
        Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
            buffer, format="png", compress_level=1
        )
        return buffer.getvalue()
