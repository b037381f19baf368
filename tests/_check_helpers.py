"""What the tests of the exercise checks (tests/test_checks*.py) share: the verdict assertions, a softmax by hand."""

import math

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
