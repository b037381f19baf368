"""What the tests of the exercise checks (tests/test_checks*.py) share: the verdict assertions, a softmax by hand."""

import math

import numpy as np
import pytest
import torch

from attn_course.checks import Feedback


def assert_correct(feedback, *words):
    """``feedback`` says "Correct: ..." and its message holds each of ``words``."""
    _assert_verdict(feedback, True, words)


def assert_hint(feedback, *words):
    """``feedback`` says "Not yet: ..." and its hint holds each of ``words``."""
    _assert_verdict(feedback, False, words)


def _assert_verdict(feedback, passed: bool, words):
    assert isinstance(feedback, Feedback)
    assert bool(feedback) is passed and feedback.passed is passed
    text = repr(feedback)
    assert text.startswith("Correct: " if passed else "Not yet: ")
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"


def softmax_by_hand(scores):
    """The softmax of a list of numbers, by a plain Python loop."""
    e = [math.exp(s) for s in scores]
    return torch.tensor([v / sum(e) for v in e])


def in_float64_and_float32(values):
    """The same numbers as a float64 and as a float32 tensor: a right answer passes in either."""
    return [
        pytest.param(torch.tensor(values, dtype=dtype), id=str(dtype)[6:]) for dtype in (torch.float64, torch.float32)
    ]


def as_int_float_tensor_numpy(count: int):
    """One count as a Python int and float, a 0-d tensor and a numpy integer: a check of a number takes each."""
    forms = {"int": count, "float": float(count), "tensor": torch.tensor(count), "numpy": np.int64(count)}
    return [pytest.param(answer, id=name) for name, answer in forms.items()]


# ----------------------------------------------------------------------------------------------
# Attack tables: each tests/test_checks_<topic>.py ends with ATTACKS, {check name: [attack(...), ...]}, at least 8
# plausible wrong answers per check, each with the words its hint must hold to name the real cause.
# tests/test_check_attacks.py runs every row and counts them.
# ----------------------------------------------------------------------------------------------


def attack(label: str, cause, *answers):
    """One wrong answer for a check: ``label`` says in a teaching assistant's words what is wrong, ``cause`` is a word
    (or a tuple of words) the hint must hold to name that fault, ``answers`` are what the check is called with."""
    words = (cause,) if isinstance(cause, str) else tuple(cause)
    if not label or not words or not answers:
        raise ValueError("an attack needs a label, the words of its cause and at least one answer")
    return label, words, answers
