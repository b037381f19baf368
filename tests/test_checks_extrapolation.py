"""attn_course.checks.extrapolation, the checks of notebook 11 on YaRN (its frequencies, the pairs it keeps):
"Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import (
    frequencies,
    rope_frequencies,
)
from attn_course.checks import (
    check_yarn_frequencies,
    check_yarn_kept,
)

# ----------------------------------------------------------------------------------------------
# check_yarn_frequencies: the "build it" of YaRN's frequencies, on hidden cases
# ----------------------------------------------------------------------------------------------


def _yarn(head_dim, base, factor, original_len, rounded=True, reverse=False, beta=(32, 1)):
    """YaRN by hand (transformers' definition), with one thing changed when asked."""

    def pair_index(rotations):
        return head_dim * math.log(original_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_index(beta[0]), pair_index(beta[1])
    if rounded:
        low, high = max(math.floor(low), 0), min(math.ceil(high), head_dim - 1)
    high = high + 0.001 if high == low else high
    omega = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    ramp = 1 - ramp if reverse else ramp
    return (omega / factor) * ramp + omega * (1 - ramp)


def test_check_yarn_frequencies_right_answer():
    assert_correct(check_yarn_frequencies(_yarn), "5 hidden cases")
    assert_correct(check_yarn_frequencies(lambda d, b, s, n: rope_frequencies(d, b, ("yarn", s, n)).float()))


@pytest.mark.parametrize(
    "fn, words",
    [
        (None, ["replace None"]),
        (3, ["expected a function"]),
        (lambda d, b, s, n: None, ["returned None"]),
        (lambda d, b, s, n: 1 / 0, ["ZeroDivisionError"]),
        (lambda d, b, s, n: torch.ones(d), ["one frequency per pair"]),
        (lambda d, b, s, n: frequencies(d, b) * math.nan, ["NaN"]),
        (lambda d, b, s, n: frequencies(d, b), ["nothing changed"]),
        (lambda d, b, s, n: frequencies(d, b) / s, ["position interpolation"]),
        (lambda d, b, s, n: rope_frequencies(d, b, ("ntk", s)), ["NTK-aware"]),
        (lambda d, b, s, n: _yarn(d, b, s, n, reverse=True), ["wrong way round"]),
        (lambda d, b, s, n: _yarn(d, b, s, n, beta=(1, 32)), ["swapped"]),
        (lambda d, b, s, n: _yarn(d, b, 1 / s, n), ["do not multiply"]),
        (lambda d, b, s, n: _yarn(d, b, s, n, rounded=False), ["floor", "ceil"]),
        (lambda d, b, s, n: _yarn(d, b, s, n) * 1.1, ["turns"]),
    ],
)
def test_check_yarn_frequencies_hints(fn, words):
    assert_hint(check_yarn_frequencies(fn), *words)


def test_check_yarn_frequencies_blend_hint_when_only_the_ends_are_right():
    def blend_wrong(d, b, s, n):
        out = _yarn(d, b, s, n)
        middle = (out > out[-1] * 1.0001) & (out < out[0] * 0.9999) & (out < frequencies(d, b) * 0.9999)
        return torch.where(middle, out * 0.9, out)

    assert_hint(check_yarn_frequencies(blend_wrong), "blend")


def test_check_yarn_frequencies_runs_every_hidden_case():
    """The learner's function is run on each of the five hidden cases, head sizes all different."""
    calls = []

    def spy(d, b, s, n):
        calls.append((d, n))
        return _yarn(d, b, s, n)

    assert_correct(check_yarn_frequencies(spy))
    assert len({d for d, _ in calls}) == len(calls) == 5  # five head sizes, all different


# ----------------------------------------------------------------------------------------------
# check_yarn_kept: the prediction of which pairs YaRN leaves alone (D = 64, base 10000, L = 2048)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [list(range(9)), tuple(range(8, -1, -1)), torch.arange(9), range(9)])
def test_check_yarn_kept_right_answer(answer):
    assert_correct(check_yarn_kept(answer), "floor 8")


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        (8, ["expected a list"]),
        ("0-8", ["expected a list"]),
        (["a"], ["whole numbers"]),
        (list(range(8)), ["pair 8 too"]),
        (list(range(21, 32)), ["slows down"]),
        (list(range(21)), ["on the ramp"]),
        ([0, 40], ["indices 0 to 31"]),
        ([], ["keeps some pairs"]),
        ([3, 4], ["count the turns"]),
        ([True] * 9 + [False] * 23, ["indices of the kept pairs", "not True / False"]),
        (np.arange(32) < 9, ["indices of the kept pairs", "not True / False"]),  # a NumPy bool mask
        (torch.arange(32) < 9, ["indices of the kept pairs", "not True / False"]),
    ],
)
def test_check_yarn_kept_hints(answer, words):
    assert_hint(check_yarn_kept(answer), *words)


def _yarn_wrong(
    head_dim,
    base,
    factor,
    original_len,
    rounding=(math.floor, math.ceil),
    clamp=True,
    nudge=True,
    two_pi=True,
    column=False,
    clamp_ramp=True,
):
    """YaRN by hand with one convention changed: how the ramp's ends are rounded and clamped, whether an end equal to
    the start is nudged by 0.001, the turn (2 pi or 1), the ramp's variable (pair j or column 2j), the ramp's clamp."""

    def pair_index(rotations):
        return head_dim * math.log(original_len / (rotations * (2 * math.pi if two_pi else 1))) / (2 * math.log(base))

    low, high = rounding[0](pair_index(32)), rounding[1](pair_index(1))
    if clamp:
        low, high = max(low, 0), min(high, head_dim - 1)
    if nudge and high == low:
        high += 0.001
    omega = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    j = torch.arange(head_dim // 2, dtype=torch.float64) * (2 if column else 1)
    ramp = (j - low) / (high - low)
    ramp = ramp.clamp(0, 1) if clamp_ramp else ramp
    return (omega / factor) * ramp + omega * (1 - ramp)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"rounding": (math.ceil, math.floor)}, ["floor and ceil are swapped"]),
        ({"rounding": (round, round)}, ["round()", "math.floor", "math.ceil"]),
        ({"rounding": (int, int)}, ["int()", "math.floor", "math.ceil"]),
        ({"clamp": False}, ["clamp the ramp's ends to [0, head_dim - 1]"]),
        ({"nudge": False}, ["add 0.001", "both ends of the ramp are clamped to 0"]),
        ({"two_pi": False}, ["2 pi radians"]),
        ({"column": True}, ["pair index j", "not over the column 2j"]),
        ({"clamp_ramp": False}, ["clamp the ramp to [0, 1]"]),
    ],
)
def test_check_yarn_frequencies_names_the_other_conventions(kwargs, words):
    """These used to get the generic "the blend is off" or "pair j turns ..." hint, or (no 0.001) to pass."""
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn_wrong(d, b, s, n, **kwargs)), *words)


def test_check_yarn_frequencies_names_rounded_and_hard_coded_answers():
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).round(decimals=4)), "rounded to 4")
    # within 1e-6 everywhere, but the slow pairs' tiny frequencies lose their digits
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).round(decimals=6)), "rounded to 6")
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).round(decimals=7)), "rounded to 7")
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).round(decimals=2)), "rounded to 2")
    assert_hint(check_yarn_frequencies(lambda d, b, s, n: _yarn(64, b, s, n)), "from the head_dim argument")


def test_check_yarn_frequencies_accepts_a_float32_answer():
    """float32, as transformers computes it, is right. (A ramp end clamped to head_dim / 2 - 1 instead of head_dim - 1
    passed too while no hidden case took the end past the last pair; now one does, and it is named: see the attack
    table.)"""
    assert_correct(check_yarn_frequencies(lambda d, b, s, n: _yarn(d, b, s, n).float()))


@pytest.mark.parametrize(
    "answer, words",
    [
        (list(range(1, 10)), ["counted from 0"]),
        (list(range(1, 9)), ["pair 0 too"]),
        ([True] * 9 + [False] * 23, ["not True / False"]),
        ([0.5, 1.5], ["whole numbers"]),
        (["0", "1"], ["whole numbers"]),
        ([float("nan")], ["whole numbers"]),
    ],
)
def test_check_yarn_kept_names_more_faults(answer, words):
    """Indices from 1, a missing pair 0 and a True / False mask got the generic hint; [0.5] was read as [0]."""
    assert_hint(check_yarn_kept(answer), *words)


def test_check_yarn_frequencies_has_a_case_whose_ramp_end_is_clamped():
    """Without a case whose ceil of the 1-turn pair index passes head_dim - 1, leaving out that clamp passed."""
    from attn_course.checks.extrapolation import _YARN_CASES

    def end(head_dim, base, factor, original_len):
        return math.ceil(head_dim * math.log(original_len / (2 * math.pi)) / (2 * math.log(base)))

    assert any(end(*case) > case[0] - 1 for case in _YARN_CASES)
    assert_hint(check_yarn_frequencies(_yarn_upper_end_not_clamped), "clamp the ramp's end to head_dim - 1")


def test_check_yarn_frequencies_calls_the_clamp_of_pair_0_the_codes_edge_behaviour_not_the_papers_rule():
    feedback = check_yarn_frequencies(lambda d, b, s, n: _yarn_wrong(d, b, s, n, clamp=False))
    assert_hint(feedback, "implementation's edge behaviour, not the paper's rule", "linear in the number of turns")
    assert "alpha = 1, beta = 32" in feedback.message and "linearly in the pair index" in feedback.message


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


def _yarn_upper_end_not_clamped(head_dim, base, factor, original_len, last=None):
    """YaRN with the ramp's end not clamped to head_dim - 1 (or clamped to ``last`` instead)."""

    def pair_index(rotations):
        return head_dim * math.log(original_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = max(math.floor(pair_index(32)), 0), math.ceil(pair_index(1))  # only the start clamped
    high = high if last is None else min(high, last)
    high = high + 0.001 if high == low else high
    omega = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    return (omega / factor) * ramp + omega * (1 - ramp)


ATTACKS = {
    "check_yarn_frequencies": [
        attack("left as None", "replace None", None),
        attack("the ramp reversed", "wrong way round", lambda d, b, s, n: _yarn(d, b, s, n, reverse=True)),
        attack(
            "beta_fast and beta_slow swapped",
            "beta_fast and beta_slow are swapped",
            lambda d, b, s, n: _yarn(d, b, s, n, beta=(1, 32)),
        ),
        attack("multiplied by the factor", "do not multiply", lambda d, b, s, n: _yarn(d, b, 1 / s, n)),
        attack(
            "floor and ceil swapped",
            "floor and ceil are swapped",
            lambda d, b, s, n: _yarn_wrong(d, b, s, n, rounding=(math.ceil, math.floor)),
        ),
        attack("round()", "round()", lambda d, b, s, n: _yarn_wrong(d, b, s, n, rounding=(round, round))),
        attack("ends not clamped", "clamp the ramp's ends", lambda d, b, s, n: _yarn_wrong(d, b, s, n, clamp=False)),
        attack("no 0.001 nudge", "add 0.001", lambda d, b, s, n: _yarn_wrong(d, b, s, n, nudge=False)),
        attack("a turn taken as 1 radian", "2 pi radians", lambda d, b, s, n: _yarn_wrong(d, b, s, n, two_pi=False)),
        attack(
            "ramp over the column 2j", "not over the column 2j", lambda d, b, s, n: _yarn_wrong(d, b, s, n, column=True)
        ),
        attack(
            "ramp not clamped", "clamp the ramp to [0, 1]", lambda d, b, s, n: _yarn_wrong(d, b, s, n, clamp_ramp=False)
        ),
        attack("position interpolation", "position interpolation", lambda d, b, s, n: frequencies(d, b) / s),
        attack("NTK-aware scaling", "NTK-aware", lambda d, b, s, n: rope_frequencies(d, b, ("ntk", s))),
        attack("head_dim 64 written in", "from the head_dim argument", lambda d, b, s, n: _yarn(64, b, s, n)),
        attack("rounded to 4 decimals", "rounded to 4", lambda d, b, s, n: _yarn(d, b, s, n).round(decimals=4)),
        attack("a list", "list", lambda d, b, s, n: _yarn(d, b, s, n).tolist()),
        attack("a NumPy array", "ndarray", lambda d, b, s, n: _yarn(d, b, s, n).numpy()),
        attack(
            "the end clamped to the last pair, head_dim / 2 - 1",
            "clamped the ramp's end to head_dim / 2 - 1",
            lambda d, b, s, n: _yarn_upper_end_not_clamped(d, b, s, n, last=d // 2 - 1),
        ),
        attack(
            "the upper end not clamped to head_dim - 1",
            "the ramp's end to head_dim - 1 too",
            _yarn_upper_end_not_clamped,
        ),
        attack(
            "the visible example's frequencies (D = 8, s = 4, L = 24) whatever the input",
            "from the head_dim argument",
            lambda d, b, s, n: rope_frequencies(8, 10000.0, ("yarn", 4.0, 24)),
        ),
    ],
    "check_yarn_kept": [
        attack("left as None", "replace None", None),
        attack("one number", "expected a list", 8),
        attack("a string", "expected a list", "0-8"),
        attack("pair 8 left out", "pair 8 too", list(range(8))),
        attack("ceil instead of floor", "not ceil", list(range(10))),
        attack("the slowed pairs", "slows down", list(range(21, 32))),
        attack("every pair up to the ramp's end", "pairs 9 to 20 lie on the ramp", list(range(21))),
        attack("counted from 1", "counted from 0", list(range(1, 10))),
        attack("a True / False mask", "not True / False", [True] * 9 + [False] * 23),
        attack("the D = 8 example's answer", "pairs 1 to 8", [0]),
        attack("indices past 31", "indices 0 to 31", [0, 40]),
    ],
}
