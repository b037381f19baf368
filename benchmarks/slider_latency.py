"""Slider latency: how long every slider of the course takes from a control change to a finished PNG.

The panels are discovered, not listed: each notebook's code cells run in a fresh process (this module run as
a script, one notebook per process) with ``attn_course.slider_panel`` wrapped by a recorder, which keeps the
panel it returns and the arguments it was built with; the cells after it run unchanged. Every control is then
swept over its range (about 15 values of a slider, every option of a dropdown or a checkbox) with the other
controls at their defaults. Each step is timed from the change to the last PNG byte, as the panel does it:
``panel.render(**change)`` (``plot_fn`` and each figure drawn to PNG). Each picture is then compared with the
figure drawn by matplotlib alone, to show that what makes a panel fast changes nothing a student sees. A panel
without ``render`` (a ``slider_panel`` of before) is timed as ``plt.show()`` under the inline backend would draw it:
``plot_fn(...)``, then every open figure through ``IPython.core.pylabtools.print_figure`` (the inline
backend's own function: figure dpi, bbox 'tight'), then closed.

Usage (what ``bench.py`` does for each notebook): ``python slider_latency.py NOTEBOOK.ipynb`` prints one JSON
list of records ``{"notebook", "cell", "panel", "control", "argument", "continuous", "values", "seconds", "same",
"inside", "ahead", "build"}``: ``continuous`` is False for every control of a heavy panel (they redraw when released);
``ahead`` counts the pictures the panel drew in advance when it was built (a panel whose controls take few values:
see ``attn_course.widgets``), ``build`` is the seconds it took to build.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

VALUES_PER_SLIDER = 15  # values of a slider's range swept per control (dropdowns and checkboxes: all options)
TARGET_MEDIAN, TARGET_P95 = 0.100, 0.200  # seconds: a control that redraws while dragged feels instant
RELEASE_MEDIAN, RELEASE_P95 = 0.250, 0.400  # seconds: a heavy panel's control, which redraws when released
EDGE_PX = 0.5  # a figure's drawing may pass the picture's edge by this much (anti-aliasing) and count as inside
CLOCK = time.process_time if os.environ.get("ATTN_BENCH_CPU_TIME") else time.perf_counter  # CPU time: to debug


def sweep_values(control) -> list:
    """The values to sweep a control over: evenly spaced over a slider's range, or every option."""
    import ipywidgets as widgets

    from attn_course.widgets import frames

    offered = frames.choices(control)
    if offered is not None:  # a checkbox's two values, or every option of a Dropdown, SelectionSlider, ...
        options = [value for _, value in offered]
        if len(options) <= 2 * VALUES_PER_SLIDER:
            return options
        stride = (len(options) - 1) / (VALUES_PER_SLIDER - 1)
        return [options[round(i * stride)] for i in range(VALUES_PER_SLIDER)]
    if isinstance(control, widgets.FloatLogSlider):
        lo, hi, base = control.min, control.max, control.base
        return [base ** (lo + (hi - lo) * i / (VALUES_PER_SLIDER - 1)) for i in range(VALUES_PER_SLIDER)]
    if isinstance(control, widgets.IntSlider | widgets.BoundedIntText):
        positions = range(control.min, control.max + 1, max(1, control.step))
        if len(positions) <= VALUES_PER_SLIDER:
            return list(positions)
        stride = (len(positions) - 1) / (VALUES_PER_SLIDER - 1)
        return sorted({positions[round(i * stride)] for i in range(VALUES_PER_SLIDER)})
    if isinstance(control, widgets.FloatSlider | widgets.BoundedFloatText):
        lo, hi = control.min, control.max
        step = control.step or (hi - lo) / (VALUES_PER_SLIDER - 1)
        count = int(math.floor((hi - lo) / step + 1e-9))  # the slider's grid: lo + i * step, i = 0..count
        picks = sorted({round(i * count / (VALUES_PER_SLIDER - 1)) for i in range(VALUES_PER_SLIDER)})
        return [min(hi, lo + i * step) for i in picks]
    return [control.value]  # a control this sweep does not know: its default only, still timed


def targets(continuous: bool) -> tuple[float, float]:
    """(median, p95) targets in seconds of a control that redraws while dragged, or only when released."""
    return (TARGET_MEDIAN, TARGET_P95) if continuous else (RELEASE_MEDIAN, RELEASE_P95)


def _inline_render(plot_fn, fixed: dict, values: dict) -> None:
    """``plot_fn`` then ``plt.show()`` under the inline backend: every open figure to PNG, then closed."""
    import matplotlib.pyplot as plt
    from IPython.core.pylabtools import print_figure

    plot_fn(**fixed, **values)
    for num in plt.get_fignums():
        print_figure(plt.figure(num), "png")
    plt.close("all")


def drawn_alone(plot_fn, fixed: dict, values: dict):
    """The RGBA pixels (H, W, 4) of ``plot_fn``'s figure drawn by matplotlib alone: its own layout engine, a new
    Agg canvas, no cache of any kind (with the rc settings a panel draws with); and whether everything the figure
    draws lies inside the picture (no label cut off at an edge)."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from attn_course.widgets.panel import TITLES_AT_TOP

    with plt.rc_context(TITLES_AT_TOP):
        fig = plot_fn(**fixed, **values)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        pixels = np.asarray(canvas.buffer_rgba()).copy()
        box = fig.get_tightbbox(canvas.get_renderer()).transformed(fig.dpi_scale_trans)  # in pixels
    plt.close(fig)
    width, height = canvas.get_width_height()
    inside = box.x0 >= -EDGE_PX and box.y0 >= -EDGE_PX and box.x1 <= width + EDGE_PX and box.y1 <= height + EDGE_PX
    return pixels, bool(inside)


def _same_picture(png: bytes, pixels) -> bool:
    import numpy as np
    from PIL import Image

    got = np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))
    return got.shape == pixels.shape and bool(np.array_equal(got, pixels))


def time_panel(panel, plot_fn, controls: dict, fixed: dict) -> list[dict]:
    """Sweep each control of one panel with the others at their defaults; seconds per value.

    Then each picture the sweep drew is compared with the figure drawn alone (``drawn_alone``): ``"same"``
    counts the values whose picture is that one, pixel for pixel, and ``"inside"`` those whose figure draws nothing
    outside the picture (both None for a panel without ``render``). The comparison's figures are freed before the
    next control is timed, so that none of the benchmark's own garbage is collected inside a timing.
    """
    defaults = {name: control.value for name, control in controls.items()}
    render = getattr(panel, "render", None)
    heavy = any(getattr(control, "continuous_update", True) is False for control in controls.values())
    records = []
    for name, control in controls.items():
        values, seconds, pictures = sweep_values(control), [], []
        for value in values:
            start = CLOCK()
            if render is not None:
                pictures.append(render(**{**defaults, name: value}))
            else:
                _inline_render(plot_fn, fixed, {**defaults, name: value})
            seconds.append(CLOCK() - start)
        same = inside = None
        if render is not None:  # after the timing, which the comparison would disturb
            alone = [drawn_alone(plot_fn, fixed, {**defaults, name: value}) for value in values]
            same = sum(
                len(pngs) == 1 and _same_picture(pngs[0], pixels)
                for pngs, (pixels, _) in zip(pictures, alone, strict=True)
            )
            inside = sum(fits for _, fits in alone)
            # The comparison's figures are closed but held in reference cycles: freed here, not by a collection that
            # would start inside the next control's timing and count as that value's redraw.
            del alone
            gc.collect()
        label = getattr(control, "description", "") or name
        continuous = not heavy  # a heavy panel's controls redraw when released (or clicked), the others while dragged
        records.append(
            {
                "control": label,
                "argument": name,
                "continuous": continuous,
                "values": values,
                "seconds": seconds,
                "same": same,
                "inside": inside,
            }
        )
    return records


def _code_cells(path: Path) -> list[tuple[int, str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "code"]


def discover_and_time(path: Path) -> list[dict]:
    """Run the notebook's code cells with a recorder around ``slider_panel``; then time every recorded panel."""
    os.environ["MPLBACKEND"] = "Agg"  # the inline backend's canvas, without a kernel
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell

    import attn_course
    import attn_course.widgets

    panels, original = [], attn_course.widgets.slider_panel
    current = {"cell": None}

    def recording_panel(plot_fn, controls, fixed=None, *args, **kwargs):
        start = CLOCK()
        panel = original(plot_fn, controls, fixed, *args, **kwargs)
        built = CLOCK() - start  # the first picture, and every picture drawn in advance
        panels.append((current["cell"], panel, plot_fn, dict(controls), dict(fixed or {}), built))
        return panel

    attn_course.slider_panel = attn_course.widgets.slider_panel = recording_panel
    shell = InteractiveShell.instance()
    os.chdir(path.parent)  # as the kernel: relative paths from the notebook's folder
    for index, source in _code_cells(path):
        current["cell"] = index
        with contextlib.redirect_stdout(io.StringIO()):  # the cells' prints would mix with the JSON
            result = shell.run_cell(source, store_history=False, silent=True)
        if not result.success:
            error = result.error_in_exec or result.error_before_exec
            raise RuntimeError(f"{path.name}, cell {index} failed while looking for sliders: {error!r}")
        plt.close("all")
    records = []
    for cell, panel, plot_fn, controls, fixed, built in panels:
        name = getattr(plot_fn, "__name__", type(plot_fn).__name__)
        ahead = getattr(panel, "frames_ahead", 0)
        for record in time_panel(panel, plot_fn, controls, fixed):
            records.append(
                {"notebook": path.name, "cell": cell, "panel": name, **record, "ahead": ahead, "build": built}
            )
    return records


def run(notebooks: list[Path], progress=None) -> list[dict]:
    """Every panel of every notebook, each notebook in its own fresh process."""
    records = []
    for path in notebooks:
        if progress:
            progress(f"sliders: {path.name}")
        done = subprocess.run([sys.executable, __file__, str(path)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"slider sweep of {path.name} failed:\n{done.stderr[-3000:]}")
        records.extend(json.loads(done.stdout))
    return records


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python slider_latency.py NOTEBOOK.ipynb", file=sys.stderr)
        return 2
    records = discover_and_time(Path(argv[0]).resolve())
    json.dump(records, sys.stdout, default=repr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
