"""The widget layer: slider panels (``panel``, whose docstring gives the update protocol) and their site frames."""

import sys

from .panel import *  # noqa: F403

# Each module's ``__all__``, in the order above (``frames`` is the site's side of a panel, called by ``panel``).
_MODULES = ("panel",)
__all__ = [name for module in _MODULES for name in sys.modules[f"{__name__}.{module}"].__all__]
