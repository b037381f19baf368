"""attn_course.checks: the package as a whole. The checks of ``attn_course.checks.X`` are tested in
tests/test_checks_X.py."""

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
from attn_course.checks.feedback import function_answer, number_answer, tensor_answer, tensor_problem

# The modules that hold checks (not feedback, build_it or claims, which the checks share), found rather than listed.
CHECK_MODULES = [
    module
    for module in (
        importlib.import_module(f"attn_course.checks.{info.name}") for info in pkgutil.iter_modules(checks.__path__)
    )
    if any(name.startswith("check_") for name in getattr(module, "__all__", ()))
]
CHECK_TESTS = {path.stem.removeprefix("test_checks_"): path for path in Path(__file__).parent.glob("test_checks_*.py")}
TOPICS = {path.stem for path in (Path(__file__).parents[1] / "attn_course").glob("[!_]*.py")}


def test_feedback_truthiness_and_repr():
    assert bool(Feedback(True, "fine")) and repr(Feedback(True, "fine")) == "Correct: fine"
    assert not Feedback(False, "look again") and repr(Feedback(False, "look again")) == "Not yet: look again"


@pytest.mark.parametrize("module", CHECK_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_check_of_a_check_module_is_exported(module):
    """Each ``check_*`` function defined in a check module is in its ``__all__`` and reachable as ``checks.check_*``."""
    defined = {
        name
        for name, obj in vars(module).items()
        if name.startswith("check_") and inspect.isfunction(obj) and obj.__module__ == module.__name__
    }
    assert defined and defined == set(module.__all__)
    for name in defined:
        assert name in checks.__all__ and getattr(checks, name) is getattr(module, name)


@pytest.mark.parametrize("module", CHECK_MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_a_check_module_is_named_after_its_topic_and_has_a_test_file(module):
    """``checks.X`` checks the exercises on the topic module ``attn_course.X``, and tests/test_checks_X.py tests it."""
    name = module.__name__.rsplit(".", 1)[-1]
    assert name in TOPICS, f"checks.{name} is named after no topic module of attn_course"
    assert name in CHECK_TESTS, f"checks.{name} has no tests/test_checks_{name}.py"


def test_every_check_function_is_covered():
    """Each public check has a right-answer test and a hints test in the test file of its module."""
    public = [name for name in checks.__all__ if name.startswith("check_")]
    assert sorted(public) == sorted(name for module in CHECK_MODULES for name in module.__all__)
    missing = []
    for module in CHECK_MODULES:
        path = CHECK_TESTS.get(module.__name__.rsplit(".", 1)[-1])
        defined = set(
            re.findall(r"^def (test_check_\w+?_(?:right_answer|hints))\(", path.read_text() if path else "", re.M)
        )
        missing += [
            f"test_{n}_{kind}"
            for n in module.__all__
            for kind in ("right_answer", "hints")
            if f"test_{n}_{kind}" not in defined
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


@number_answer("a number")
def _twice(answer: float) -> Feedback:
    """A check of one number: 2."""
    return Feedback(answer == 2, f"got {answer!r}")


@tensor_answer((2,), "two numbers")
def _pair(answer) -> Feedback:
    return Feedback(True, f"shape {tuple(answer.shape)}")


@function_answer("your function f(x)", "a function f(x)")
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
        assert repr(_pair(answer)) == repr(tensor_problem(answer, (2,), "two numbers"))


def test_function_answer_runs_the_check_only_on_a_function():
    assert_correct(_function(lambda x: x))
    assert repr(_function(None)) == "Not yet: replace None with your function f(x)."
    assert repr(_function(3)) == "Not yet: expected a function f(x), got int."
