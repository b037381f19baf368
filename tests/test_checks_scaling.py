"""attn_course.checks.scaling, the check of notebook 03 on the variance of a dot product:
"Correct" for a right answer, a hint for each mistake."""

import math

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course.checks import check_variance_scale

# ----------------------------------------------------------------------------------------------
# check_variance_scale: D = 64, sigma^2 = 4 -> Var(q . k) = 1024, scale 32
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [32, 32.0, torch.tensor(32.0), math.sqrt(64 * 4 * 4)])
def test_check_variance_scale_right_answer(answer):
    assert_correct(check_variance_scale(answer))


def test_check_variance_scale_matches_a_measurement():
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(20_000, 64, generator=gen, dtype=torch.float64) * 2  # variance 4
    k = torch.randn(20_000, 64, generator=gen, dtype=torch.float64) * 2
    assert ((q * k).sum(-1) / 32).var().item() == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param("x", ["one number"], id="str"),
        pytest.param(16, ["sigma^4"], id="sigma-sqrt-d"),
        pytest.param(8, ["unit-variance"], id="sqrt-d"),
        pytest.param(1024, ["square root"], id="variance"),
        pytest.param(5, ["E[q_i^2] E[k_i^2]"], id="wrong"),
    ],
)
def test_check_variance_scale_hints(answer, words):
    assert_hint(check_variance_scale(answer), *words)


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words of its cause
# ----------------------------------------------------------------------------------------------


ATTACKS = {
    "check_variance_scale": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "32"),
        attack("a list", "list", [32]),
        attack("sigma sqrt(D)", "sigma^4", 16),
        attack("sqrt(D)", "unit-variance", 8),
        attack("the variance, not its root", "square root", 1024),
        attack("sigma^2 alone", "sigma^2 alone", 4),
        attack("the reciprocal", "reciprocal", 1 / 32),
        attack("measured, not computed", "measured", 32.6),
        attack("D sigma^2", "sigma^4", 256),
        attack("NaN", "NaN", math.nan),
    ],
}
