"""attn_course.checks: the package as a whole. The checks of notebook NN are tested in tests/test_checks_nbNN.py."""

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint

from attn_course import checks
from attn_course.checks import Feedback
from attn_course.checks._feedback import _function_answer, _number_answer, _tensor_answer, _tensor_problem

CHECK_TESTS = sorted(Path(__file__).parent.glob("test_checks_nb*.py"))
NOTEBOOK_MODULES = [
    importlib.import_module(f"attn_course.checks.{info.name}")
    for info in pkgutil.iter_modules(checks.__path__)
    if re.fullmatch(r"nb\d\d", info.name)
]


def test_feedback_truthiness_and_repr():
    assert bool(Feedback(True, "fine")) and repr(Feedback(True, "fine")) == "Correct: fine"
    assert not Feedback(False, "look again") and repr(Feedback(False, "look again")) == "Not yet: look again"


@pytest.mark.parametrize("module", NOTEBOOK_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_check_of_a_notebook_module_is_exported(module):
    """Each ``check_*`` function of notebook NN (defined in ``nbNN`` or a module ``nbNN_*`` that it imports) is in
    ``nbNN.__all__`` and reachable as ``checks.check_*``."""
    defined = {
        name
        for name, obj in vars(module).items()
        if name.startswith("check_") and inspect.isfunction(obj) and obj.__module__.startswith(module.__name__)
    }
    assert defined and defined == set(module.__all__)
    for name in defined:
        assert name in checks.__all__ and getattr(checks, name) is getattr(module, name)


def test_every_check_function_is_covered():
    """Each public check has a right-answer test and a hints test in the test file of its notebook."""
    notebooks = sorted((Path(__file__).parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(CHECK_TESTS) == len(NOTEBOOK_MODULES) == len(notebooks), "one checks module and test file per notebook"
    defined = {
        match
        for path in CHECK_TESTS
        for match in re.findall(r"^def (test_check_\w+?_(?:right_answer|hints))\(", path.read_text(), re.M)
    }
    public = [name for name in checks.__all__ if name.startswith("check_")]
    missing = [
        f"test_{n}_{kind}" for n in public for kind in ("right_answer", "hints") if f"test_{n}_{kind}" not in defined
    ]
    assert len(public) == len(checks.__all__) - 3 and not missing, f"checks without tests: {missing}"


@pytest.mark.parametrize("name", [name for name in checks.__all__ if name.startswith("check_")])
def test_every_check_asks_to_replace_a_none_placeholder(name):
    """A learner's cell starts with None placeholders, so every check answers None with "replace None with ..."
    (the words after it are checked per notebook, and by nbval in the notebook's stored output)."""
    check = getattr(checks, name)
    required = [p for p in inspect.signature(check).parameters.values() if p.default is inspect.Parameter.empty]
    assert_hint(check(*[None] * len(required)), "replace None with ")


# ---- the guards that every check shares ------------------------------------------------------------------------


@_number_answer("a number")
def _twice(answer: float) -> Feedback:
    """A check of one number: 2."""
    return Feedback(answer == 2, f"got {answer!r}")


@_tensor_answer((2,), "two numbers")
def _pair(answer) -> Feedback:
    return Feedback(True, f"shape {tuple(answer.shape)}")


@_function_answer("your function f(x)", "a function f(x)")
def _function(fn) -> Feedback:
    return Feedback(fn(1) == 1, "called")


def test_a_guarded_check_keeps_its_name_and_docstring():
    assert _twice.__name__ == "_twice" and _twice.__doc__ == "A check of one number: 2."


def test_number_answer_passes_a_float_and_turns_the_rest_into_hints():
    assert_correct(_twice(torch.tensor(2)))
    assert repr(_twice(np.float32(2))) == "Correct: got 2.0"  # NumPy scalars and 0-d tensors are numbers
    assert_hint(_twice("2"), "expected one number (a number), got the str '2': write the number itself.")  # not one
    assert_hint(_twice(True), "got the bool True")
    assert_hint(_twice(None), "replace None with a number.")
    assert_hint(_twice([1, 2]), "expected one number (a number), got list.")


def test_tensor_answer_runs_the_check_only_on_the_right_shape():
    assert_correct(_pair(torch.zeros(2)))
    for answer in (None, [1.0, 2.0], torch.zeros(3)):
        assert repr(_pair(answer)) == repr(_tensor_problem(answer, (2,), "two numbers"))


def test_function_answer_runs_the_check_only_on_a_function():
    assert_correct(_function(lambda x: x))
    assert repr(_function(None)) == "Not yet: replace None with your function f(x)."
    assert repr(_function(3)) == "Not yet: expected a function f(x), got int."
