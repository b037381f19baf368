"""The Agg renderer of slider figures (``attn_course._render``): each string rasterised once, pasted afterwards.

Turning a string into glyph bitmaps is most of what drawing a figure costs, and the tick labels, titles and most
numbers of one frame come back in the next. A cached string is pasted at its new place, pixel for pixel as FreeType
draws it there: the key holds the string, the font, the angle and the sub-pixel part of the position.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from matplotlib.backends.backend_agg import RendererAgg

TEXTS_KEPT = 4096  # rasterised strings per renderer


class _Recorder:
    """Stands in for Agg's C++ renderer while a string is rasterised: keeps the glyph bitmaps instead of drawing."""

    def __init__(self):
        self.glyphs = []  # (bitmap, x, y) as RendererAgg passes them to draw_text_image

    def draw_text_image(self, bitmap, x, y, angle, gc) -> None:
        self.glyphs.append((bitmap.copy(), x, y, angle))


class TextCachingRenderer(RendererAgg):
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
