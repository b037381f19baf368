"""attn_course.checks.tasks, the check of notebook 07 on the reversal task's alignment:
"Correct" for a right answer, a hint for each mistake."""

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course.checks import check_alignment_position
from attn_course.tasks import make_batch

# ----------------------------------------------------------------------------------------------
# check_alignment_position: reversing L digits, output step t reads source position L - 1 - t, <eos> reads L
# ----------------------------------------------------------------------------------------------


def _position(t, length):
    return length - 1 - t if t < length else length  # the ideal position of each digit step, then <eos>'s own


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_position, id="function"),
        pytest.param(lambda t, length: (length - 1 - t) % (length + 1), id="modulo"),
        pytest.param(lambda t, length: torch.tensor(_position(t, length)), id="tensor"),
        pytest.param(lambda t, length: float(_position(t, length)), id="float"),
        pytest.param(lambda t, length: length - 1 - t if t < length else 0, id="eos-on-first"),
        pytest.param(lambda t, length: length - 1 - t, id="eos-anywhere"),
    ],
)
def test_check_alignment_position_right_answer(answer):
    assert_correct(check_alignment_position(answer), "anti-diagonal")


@pytest.mark.parametrize("digits", ["7", "12345", "908172635412"])
def test_check_alignment_position_agrees_with_the_reversal_task(digits):
    """Output token t (tgt_out[t]) is the source token at position(t, L), <eos> included."""
    batch = make_batch([digits])
    length = len(digits)
    assert [int(batch.src[0, _position(t, length)]) for t in range(length + 1)] == batch.tgt_out[0].tolist()


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "position(t, L)"], id="none"),
        pytest.param(3, ["expected a function position(t, L)", "got int"], id="int"),
        pytest.param("L - 1 - t", ["expected a function", "got str"], id="str"),
        pytest.param(lambda t, length: length - t, ["off by one", "L - 1"], id="off-by-one"),
        pytest.param(lambda t, length: t, ["copying (a diagonal)", "from its end"], id="copy"),
        pytest.param(lambda t, length: t if t < length else length, ["copying (a diagonal)"], id="copy-with-eos"),
        pytest.param(
            lambda t, length: 1 / 0, ["position(0, 1) raised ZeroDivisionError: division by zero"], id="raises"
        ),
        pytest.param(lambda t: t, ["position(0, 1) raised TypeError"], id="one-argument"),
        pytest.param(
            lambda t, length: 5, ["position(0, 1) gave 5", "step 0 writes digit number 0 from the end"], id="constant"
        ),
        pytest.param(lambda t, length: None, ["position(0, 1) gave None"], id="returns-none"),
    ],
)
def test_check_alignment_position_hints(answer, words):
    assert_hint(check_alignment_position(answer), *words)


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(
            lambda t, length: torch.arange(length - 1, -1, -1),
            ["should return one number", "got a Tensor of 2 numbers", "one t at a time"],
            id="tensor-of-all-positions",
        ),
        pytest.param(
            lambda t, length: np.arange(length)[::-1].copy(), ["one number", "got a ndarray of 2 numbers"], id="ndarray"
        ),
        pytest.param(lambda t, length: [length - 1 - t], ["one number", "not a list"], id="list"),
        pytest.param(lambda t, length: (length - 1 - t, t), ["one number", "not a tuple"], id="tuple"),
        pytest.param(lambda t, length: float("nan"), ["position(0, 1) gave nan"], id="nan"),
        pytest.param(lambda t, length: str(length - 1 - t), ["position(0, 1) gave '0'"], id="str"),
    ],
)
def test_check_alignment_position_answers_that_are_not_one_number_get_a_hint(answer, words):
    """A function that returns a vector used to crash the check with a raw RuntimeError (a tensor's truth value)."""
    assert_hint(check_alignment_position(answer), *words)


def test_check_alignment_position_says_nothing_that_depends_on_a_trained_model():
    """Where a trained model reads at the <eos> step changes with the seed: the verdict names no position there."""
    feedback = check_alignment_position(lambda t, length: length - 1 - t)
    assert_correct(feedback, "no particular source position", "its own choice")
    assert "position 0" not in feedback.message


def test_check_alignment_position_never_asks_for_the_eos_step():
    """No source position holds what the <eos> step needs: the check does not call position(L, L)."""
    asked = []

    def position(t, length):
        asked.append((t, length))
        return length - 1 - t

    assert_correct(check_alignment_position(position))
    assert all(t < length for t, length in asked) and len(asked) == sum(range(1, 13))


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


ATTACKS = {
    "check_alignment_position": [
        attack("left as None", "replace None", None),
        attack("a number, not a function", "expected a function", 3),
        attack("off by one: L - t", "off by one", lambda t, length: length - t),
        attack("copies instead of reversing", "copying", lambda t, length: t),
        attack("the visible example's L = 5 written in", "the L argument", lambda t, length: 4 - t),
        attack("a negative index from the end, as in Python lists", "negative", lambda t, length: -1 - t),
        attack("the position as a string", "str", lambda t, length: str(length - 1 - t)),
        attack("the position in a one-element list", "not a list", lambda t, length: [length - 1 - t]),
        attack("every position at once", "one t at a time", lambda t, length: torch.arange(length - 1, -1, -1)),
        attack("forgot to return", "returned None", lambda t, length: None),
    ],
}
