"""The widget layer: slider panels (``panel``, whose docstring gives the update protocol) and their site frames."""

from .panel import slider_panel

__all__ = ["slider_panel"]
