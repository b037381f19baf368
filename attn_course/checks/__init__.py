"""Instant feedback for the exercises.

Each ``check_*`` function takes a learner's answer and returns a ``Feedback``: it shows as
one line in the notebook ("Correct: ..." or "Not yet: <a hint at what is off>") and is truthy
exactly when the answer is right, so it can be tested like any other function.
One module per notebook: ``nb01``, ``nb02``, ... (``nb06`` keeps its checks on positions in ``nb06_positions``).

``claim`` is the other kind of check: what a notebook says of a trained result, asserted where it is printed
(``claims``).
"""

from . import nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb09, nb10, nb11, nb12
from ._feedback import Feedback
from .claims import ClaimError, claim
from .nb01 import *  # noqa: F403  (the names in nb01.__all__)
from .nb02 import *  # noqa: F403  (the names in nb02.__all__)
from .nb03 import *  # noqa: F403  (the names in nb03.__all__)
from .nb04 import *  # noqa: F403  (the names in nb04.__all__)
from .nb05 import *  # noqa: F403  (the names in nb05.__all__)
from .nb06 import *  # noqa: F403  (the names in nb06.__all__)
from .nb07 import *  # noqa: F403  (the names in nb07.__all__)
from .nb08 import *  # noqa: F403  (the names in nb08.__all__)
from .nb09 import *  # noqa: F403  (the names in nb09.__all__)
from .nb10 import *  # noqa: F403  (the names in nb10.__all__)
from .nb11 import *  # noqa: F403  (the names in nb11.__all__)
from .nb12 import *  # noqa: F403  (the names in nb12.__all__)

# Each module's ``__all__`` names its checks, in the order of the notebook's exercises.
_MODULES = (nb01, nb02, nb03, nb04, nb05, nb06, nb07, nb08, nb09, nb10, nb11, nb12)
__all__ = ["Feedback", "ClaimError", "claim", *(name for module in _MODULES for name in module.__all__)]
