"""The course's figures, one module per topic module of ``attn_course`` (``plots.X`` draws what ``X`` computes).

* ``heatmaps``       ``show_heatmaps``: attention weights as heatmaps (most notebooks)
* ``pooling``        attention pooling (notebook 01)
* ``interpolation``  Lagrange against Nadaraya-Watson (notebook 02)
* ``scaling``        softmax saturation (notebook 03)
* ``selfattention``  the matrices of the worked example, step by step (notebook 04)
* ``masking``        the masking demo and the heatmap patterns (notebook 05)
* ``multihead``      the weights of every head (notebook 06)
* ``positional``     the rotations of the positional encoding (notebook 06)
* ``seq2seq``        training curves, accuracy by length, alignments, greedy decoding (notebook 07)
* ``transformer``    the attention of every layer and head of the Transformer (notebook 08)
* ``decoder``        the decoder-only model (notebook 09)
* ``efficient``      the tiles a tiled pass computes and skips (notebook 10)
* ``cost``           peak memory and the IO model (notebook 10)
* ``rotary``         RoPE's angles and scores, ALiBi's bias (notebook 11)
* ``extrapolation``  the extrapolation experiment, the frequencies of each RoPE scaling (notebook 11)
* ``linear``         linear attention (notebook 12)
* ``delta_rule``     the delta rule's memory and its gate, Gated DeltaNet (notebook 12)
* ``sparse``         the mass the largest weights keep, the keys sparse patterns read (notebook 13)

``base`` holds the small pieces the figures share (numbers in, matrices drawn, ticks thinned); it is not re-exported.

Every function takes ``ax=None`` (or ``axes=None``), draws on a new figure when none is given, returns the
``Figure``, labels its axes, and never calls ``plt.show()`` or changes global matplotlib settings. A figure that a
slider panel updates in place says so in its docstring (see ``attn_course.widgets``).
"""

import sys

# The figure modules in course order, not sorted by name.
# isort: off
from .heatmaps import *  # noqa: F403
from .pooling import *  # noqa: F403
from .interpolation import *  # noqa: F403
from .scaling import *  # noqa: F403
from .selfattention import *  # noqa: F403
from .masking import *  # noqa: F403
from .multihead import *  # noqa: F403
from .positional import *  # noqa: F403
from .seq2seq import *  # noqa: F403
from .transformer import *  # noqa: F403
from .decoder import *  # noqa: F403
from .efficient import *  # noqa: F403
from .cost import *  # noqa: F403
from .rotary import *  # noqa: F403
from .extrapolation import *  # noqa: F403
from .linear import *  # noqa: F403
from .delta_rule import *  # noqa: F403
from .sparse import *  # noqa: F403
# isort: on

# Each module's ``__all__``, in the order above.
_MODULES = (
    "heatmaps",
    "pooling",
    "interpolation",
    "scaling",
    "selfattention",
    "masking",
    "multihead",
    "positional",
    "seq2seq",
    "transformer",
    "decoder",
    "efficient",
    "cost",
    "rotary",
    "extrapolation",
    "linear",
    "delta_rule",
    "sparse",
)
__all__ = []
__all__ += [name for module in _MODULES for name in sys.modules[f"{__name__}.{module}"].__all__]
