"""Slider panels: controls in a box above a figure that redraws when a control moves.

The figure comes from an ``attn_course`` plotting function, so whatever a slider shows can
also be drawn, tested and timed without a browser.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

__all__ = ["slider_panel"]


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
        A ``VBox`` of the controls and the output area; it has already drawn the defaults.

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
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be a positive integer, got {columns!r}")
    for control in controls.values():  # show whole labels ("bandwidth h"), not ipywidgets' truncated default
        if hasattr(control, "style") and hasattr(control.style, "description_width"):
            control.style.description_width = "initial"
    if heavy:
        for control in controls.values():
            if hasattr(control, "continuous_update"):
                control.continuous_update = False

    # Draw the defaults once outside the widget first: an exception raised inside the widget's output
    # area is shown there but swallowed, so a broken panel would otherwise pass a notebook test run.
    first = plot_fn(**fixed, **{name: control.value for name, control in controls.items()})
    if isinstance(first, Figure):
        plt.close(first)

    def redraw(**values):
        plot_fn(**fixed, **values)
        plt.show()

    output = widgets.interactive_output(redraw, dict(controls))
    items = list(controls.values())
    rows = [widgets.HBox(items[i : i + columns]) for i in range(0, len(items), columns)]
    return widgets.VBox([*rows, output])
