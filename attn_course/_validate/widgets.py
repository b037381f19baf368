"""Input checks of the widget layer (private): ``attn_course.widgets``' slider panels."""

from __future__ import annotations

import ipywidgets as widgets

from .values import require_int, require_keywords


def require_panel_args(plot_fn, controls, fixed, columns) -> tuple[dict, dict]:
    """``slider_panel``'s arguments, checked before anything is drawn; ``controls`` and ``fixed`` as dicts."""
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
    return controls, fixed
