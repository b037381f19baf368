"""The checks' shared defence: any answer a learner may hand in gets a hint that names what came, never a crash, never
a pass by accident, and no check moves torch's global random generator (a learner's later random numbers must not
depend on whether a check cell ran)."""

import inspect

import numpy as np
import pytest
import torch

from attn_course import checks

CHECKS = [name for name in checks.__all__ if name.startswith("check_")]

# What a learner may leave in an answer's place: values, and functions that return the wrong kind of thing.
WRONG = {
    "the string '2'": "2",
    "True": True,
    "an empty tuple": (),
    "a list": [1.0, 2.0],
    "a NumPy array": np.zeros((3, 3)),
    "a float16 tensor": torch.zeros(3, dtype=torch.float16),
    "an integer tensor": torch.zeros(2, 2, dtype=torch.long),
    "a function returning None": lambda *args, **kwargs: None,
    "a function returning ()": lambda *args, **kwargs: (),
    "a function returning a list": lambda *args, **kwargs: [torch.zeros(2)],
    "a function returning a string": lambda *args, **kwargs: "2",
    "a function returning a NumPy array": lambda *args, **kwargs: np.zeros((2, 2)),
}


def _call(name, answer):
    check = getattr(checks, name)
    required = [p for p in inspect.signature(check).parameters.values() if p.default is inspect.Parameter.empty]
    return check(*[answer] * len(required))  # a check of two answers (split and merge) gets the same wrong one twice


@pytest.mark.parametrize("name", CHECKS)
def test_a_wrong_kind_of_answer_gets_a_hint_and_leaves_the_global_generator_alone(name):
    for label, answer in WRONG.items():
        state = torch.random.get_rng_state()
        feedback = _call(name, answer)
        assert isinstance(feedback, checks.Feedback), f"{name}({label}) returned {type(feedback).__name__}"
        assert not feedback.passed, f"{name} accepted {label}: {feedback.message}"
        assert feedback.message.strip(), f"{name}({label}) gave an empty hint"
        assert torch.equal(state, torch.random.get_rng_state()), f"{name}({label}) moved torch's global generator"


def test_a_number_written_as_a_string_is_named_as_one():
    feedback = checks.check_cache_memory("2")
    assert not feedback and "got the str '2'" in feedback.message and "write the number itself" in feedback.message
    assert "got the bool True" in checks.check_cache_memory(True).message
