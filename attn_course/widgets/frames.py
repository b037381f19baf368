"""Slider panels for a static page: every figure drawn in advance, the controls switch between them in the browser.

A page of the course site has no kernel behind it. While the site is built (``tools/build_site.py`` sets
``ATTN_COURSE_FRAMES`` in the kernels that execute the notebooks), ``slider_panel`` returns :func:`frames_panel`: the
figure drawn for every point of a grid of control values, one ``Image`` per frame inside nested ``Stack`` widgets,
and controls whose ``index`` is linked in JavaScript (``jslink``) to the stacks' ``selected_index``. Moving a control
shows another frame, with no kernel and no request. In JupyterLab nothing here runs: the panel is live.

Each frame's image carries its place in the grid and the first 16 hex digits of its bytes' SHA-256 as CSS classes
(``attn-frame-2-0``, ``attn-sha-...``): a test checks that the page shows the frame drawn for the controls' values.
"""

from __future__ import annotations

import hashlib
import html
import io
import math
import os
from collections.abc import Callable, Mapping

import ipywidgets as widgets
import numpy as np
from PIL import Image

ENV = "ATTN_COURSE_FRAMES"
MAX_FRAMES = 100  # per panel: two sliders get 10 values each
MAX_BYTES = 1_000_000  # per panel, before base64 (4/3 of it after): three panels leave a page under 5 MB
SCALE = 0.75  # frames are drawn smaller than in JupyterLab
WEBP_QUALITY = 80
WEBP_METHOD = 2  # libwebp's effort, 0-6: below Pillow's default (4), as a site has thousands of frames to encode


def describe_figure(fig) -> str:
    """What a figure shows, in a few words: its suptitle, else its axes' titles, else what its axes plot."""
    titles = [ax.get_title().strip() for ax in fig.axes if ax.get_title().strip()]
    more = [f"and {len(titles) - 6} more panels"] if len(titles) > 6 else []
    parts = [part for part in (fig.get_suptitle().strip(), "; ".join(titles[:6] + more)) if part]
    if not parts:
        labels = [(ax.get_xlabel().strip(), ax.get_ylabel().strip()) for ax in fig.axes]
        parts = [f"{y or 'values'} against {x or 'position'}" for x, y in labels if x or y]
    text = ". ".join(parts) if parts else "a figure"
    return " ".join(text.replace("$", "").replace("\\", "").split())


def wanted() -> bool:
    """True while the site is being built (``tools/build_site.py`` sets the variable in its kernels)."""
    return os.environ.get(ENV, "") not in ("", "0")


def choices(control) -> list[tuple[str, object]] | None:
    """The (label, value) pairs a control offers: a checkbox's two, or a selection's options (a list of values, or of
    (label, value) pairs, as ipywidgets documents them); None for a slider over a range."""
    if isinstance(control, widgets.Checkbox | widgets.ToggleButton):
        return [("off", False), ("on", True)]
    if not hasattr(control, "options"):
        return None
    items = list(control.options)
    if items and all(isinstance(item, tuple | list) and len(item) == 2 for item in items):
        return [(str(label), value) for label, value in items]
    return [(str(item), item) for item in items]


def _numbers(control, count: int) -> list[tuple[str, object]]:
    """Up to ``count`` (label, value) pairs of a numeric slider, spread evenly over its range, default included."""
    if isinstance(control, widgets.FloatLogSlider):
        exponents = np.linspace(control.min, control.max, count)
        values = [float(control.base**e) for e in exponents]
    else:
        step = control.step or 1
        cells = int(round((control.max - control.min) / step))
        picks = np.unique(np.round(np.linspace(0, cells, min(count, cells + 1))).astype(int))
        digits = max(0, -math.floor(math.log10(step))) + 2 if step < 1 else 2
        whole = isinstance(control, widgets.IntSlider)
        values = [int(v) if whole else round(float(v), digits) for v in (control.min + int(k) * step for k in picks)]
    default = control.value
    if not any(math.isclose(v, default, rel_tol=1e-9, abs_tol=1e-12) for v in values):
        nearest = min(range(len(values)), key=lambda i: abs(values[i] - default))
        values[nearest] = default  # the page opens on the figure JupyterLab opens on
    label = "{:.3g}" if isinstance(control, widgets.FloatLogSlider | widgets.FloatSlider) else "{}"
    return [(label.format(value), value) for value in sorted(set(values))]


def grid(controls: Mapping[str, widgets.ValueWidget], budget: int = MAX_FRAMES) -> dict[str, list[tuple[str, object]]]:
    """The (label, value) pairs shown for each control, at most ``budget`` combinations in all.

    Choices (dropdowns, selection sliders, checkboxes) keep all their options; numeric sliders share what is left.
    """
    fixed = {name: choices(control) for name, control in controls.items() if choices(control) is not None}
    numeric = [name for name in controls if name not in fixed]  # sliders over a range
    for name in numeric:
        if not isinstance(controls[name], widgets.IntSlider | widgets.FloatSlider | widgets.FloatLogSlider):
            raise TypeError(f"a static slider panel cannot show a {type(controls[name]).__name__} ({name!r})")
    left = max(1, budget // max(1, math.prod(len(v) for v in fixed.values())))
    each = max(2, int(left ** (1 / len(numeric)))) if numeric else 0
    return {name: fixed[name] if name in fixed else _numbers(control, each) for name, control in controls.items()}


def _frame(pictures: list[np.ndarray]) -> bytes:
    """One WebP image of the panel's figure(s) (RGBA pixels, opaque), stacked vertically on white, at SCALE."""
    width = max(rgba.shape[1] for rgba in pictures)  # each (height, width, 4) uint8
    rows = [
        np.pad(rgba[..., :3], ((0, 0), (0, width - rgba.shape[1]), (0, 0)), constant_values=255) for rgba in pictures
    ]
    canvas = Image.fromarray(np.concatenate(rows))
    canvas = canvas.resize((max(1, round(canvas.width * SCALE)), max(1, round(canvas.height * SCALE))), Image.LANCZOS)
    buffer = io.BytesIO()
    canvas.save(buffer, format="webp", quality=WEBP_QUALITY, method=WEBP_METHOD)
    return buffer.getvalue()


def _selector(control, name: str, options: list[tuple[str, object]]) -> widgets.DOMWidget:
    """A control with an ``index`` to link: the same description, the grid's values as its options."""
    description = control.description or name
    labels = [label for label, _ in options]
    default = next((i for i, (_, v) in enumerate(options) if v == control.value), 0)
    if isinstance(control, widgets.Dropdown):
        selector = widgets.Dropdown(options=labels, index=default, description=description)
    elif isinstance(control, widgets.Checkbox | widgets.ToggleButton):
        selector = widgets.ToggleButtons(options=labels, index=default, description=description)
    else:
        selector = widgets.SelectionSlider(options=labels, index=default, description=description)
    selector.style.description_width = "initial"
    return selector


def frames_panel(
    draw: Callable[..., list[np.ndarray]], controls: Mapping[str, widgets.ValueWidget], title: str = "a figure"
) -> widgets.VBox:
    """The static version of a slider panel: ``draw(**values)`` drawn for every point of :func:`grid`.

    Args:
        draw: the live panel's drawing (``SliderPanel.draw``): the pictures of its figure(s) for the given control
            values, as RGBA pixels (height, width, 4), with no PNG encoded and decoded on the way.
        controls: the live panel's controls (name -> widget), whose descriptions and defaults are kept.
        title: what the figure shows (``describe_figure``), the frames' alt text on the page.

    Returns:
        A ``VBox`` of the selectors, the nested stacks of frames, and a note on the values offered.
    """
    names = list(controls)
    first = _frame(draw())
    budget = max(2, min(MAX_FRAMES, MAX_BYTES // max(1, len(first))))
    values = grid(controls, budget)
    selectors = [_selector(controls[n], n, values[n]) for n in names]

    def build(depth: int, chosen: tuple) -> widgets.Widget:
        name = names[depth]
        children = []
        for i, (label, value) in enumerate(values[name]):
            point = (*chosen, (i, label, value))
            if depth + 1 < len(names):
                children.append(build(depth + 1, point))
                continue
            webp = _frame(draw(**{n: v for n, (_, _, v) in zip(names, point, strict=True)}))
            digest = hashlib.sha256(webp).hexdigest()[:16]
            where = "-".join(str(k) for k, _, _ in point)
            image = widgets.Image(value=webp, format="webp")
            for css in ("attn-frame", f"attn-frame-{where}", f"attn-sha-{digest}"):
                image.add_class(css)
            children.append(image)
        stack = widgets.Stack(children=children, selected_index=selectors[depth].index)
        widgets.jslink((selectors[depth], "index"), (stack, "selected_index"))
        return stack

    frames = build(0, ())
    count = math.prod(len(values[n]) for n in names)
    offered = ", ".join(
        f"{len(values[n])} values of {controls[n].description or n}"
        for n in names
        if not isinstance(controls[n], widgets.Dropdown | widgets.Checkbox)
    )
    note = widgets.HTML(
        f"<p class='attn-frames-note'>On this page the figure moves over {count} pictures drawn when the "
        f"site was built{': ' + offered if offered else ''}. In JupyterLab (<code>make lab</code>) the controls "
        f"take every value.</p><span class='attn-frames-alt' hidden>Figure: {html.escape(title)}, for the values set "
        "on the controls above</span>"
    )
    rows = [widgets.HBox(selectors[i : i + 2]) for i in range(0, len(selectors), 2)]
    panel = widgets.VBox([*rows, frames, note])
    panel.add_class("attn-frames-panel")
    panel.frame_count = count
    return panel
