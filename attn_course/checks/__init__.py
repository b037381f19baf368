"""Instant feedback for the exercises.

Each ``check_*`` function takes a learner's answer and returns a ``Feedback``: it shows as
one line in the notebook ("Correct: ..." or "Not yet: <a hint at what is off>") and is truthy
exactly when the answer is right, so it can be tested like any other function.
One module per topic, named after the topic module of ``attn_course`` whose exercises it checks (``checks.masking``
checks the exercises on ``attn_course.masking``), so a notebook of several topics has several (notebook 03:
``scoring``, ``cost``, ``scaling``), and ``cost`` checks the costs of notebooks 03 and 10. What the modules share:
``feedback`` (the verdict and its hints) and ``build_it`` (the hidden cases of the build-it checks of notebooks 10
and 12).

``claim`` is the other kind of check: what a notebook says of a trained result, asserted where it is printed
(``claims``).
"""

import sys

from .claims import ClaimError, claim
from .feedback import Feedback

# The check modules in course order (by the notebook of their first exercise), not sorted by name; each module's
# ``__all__`` lists its checks in the order of the exercises.
# isort: off
from .pooling import *  # noqa: F403
from .interpolation import *  # noqa: F403
from .scoring import *  # noqa: F403
from .cost import *  # noqa: F403
from .scaling import *  # noqa: F403
from .selfattention import *  # noqa: F403
from .masking import *  # noqa: F403
from .multihead import *  # noqa: F403
from .positional import *  # noqa: F403
from .tasks import *  # noqa: F403
from .seq2seq import *  # noqa: F403
from .transformer import *  # noqa: F403
from .decoder import *  # noqa: F403
from .mla import *  # noqa: F403
from .efficient import *  # noqa: F403
from .rotary import *  # noqa: F403
from .extrapolation import *  # noqa: F403
from .linear import *  # noqa: F403
from .delta_rule import *  # noqa: F403
from .sparse import *  # noqa: F403
# isort: on

# Each module's ``__all__``, in the order above.
_MODULES = (
    "pooling",
    "interpolation",
    "scoring",
    "cost",
    "scaling",
    "selfattention",
    "masking",
    "multihead",
    "positional",
    "tasks",
    "seq2seq",
    "transformer",
    "decoder",
    "mla",
    "efficient",
    "rotary",
    "extrapolation",
    "linear",
    "delta_rule",
    "sparse",
)
__all__ = ["Feedback", "ClaimError", "claim"]
__all__ += [name for module in _MODULES for name in sys.modules[f"{__name__}.{module}"].__all__]
