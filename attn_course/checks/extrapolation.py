"""Checks for the exercises on context extension with YaRN, RoPE scaled by parts: its frequencies, the pairs it keeps
(notebook 11)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..extrapolation import rope_frequencies
from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_yarn_frequencies", "check_yarn_kept"]


# Hidden cases of check_yarn_frequencies: (head_dim, base, factor, original_len), head sizes of different sizes, a ramp
# that starts above pair 0 and whose end, ceil of the 1-turn pair index (22.4), is clamped to head_dim - 1 = 21 (and
# where floor and round differ: 9.7), one where the 32-turn pair lies below 0, and one so short that both ends of the
# ramp are clamped to 0 (transformers then adds 0.001 to the end).
_YARN_CASES = [
    (64, 10000.0, 4.0, 2048),
    (22, 20.0, 2.5, 2821),
    (8, 10000.0, 3.0, 30),  # the clamp edge of the notebook's D = 8 example, not that example itself
    (128, 500000.0, 8.0, 8192),
    (10, 10000.0, 3.0, 6),
]

_ROUNDINGS = {"floor": math.floor, "ceil": math.ceil, "round": round, "int": int, "none": lambda v: v}


def _yarn_variant(
    head_dim,
    base,
    factor,
    original_len,
    rounding=("floor", "ceil"),
    clamp=True,
    clamp_end=True,
    nudge=True,
    reverse=False,
    beta=(32, 1),
    two_pi=True,
    index="pair",
    clamp_ramp=True,
    invert=False,
):
    """YaRN's frequencies with one thing changed, to name what a wrong answer does. ``rounding`` rounds the ramp's
    start and end, ``clamp`` clamps them to [0, head_dim - 1] (``clamp_end``: False clamps the start alone, "half"
    clamps the end to head_dim / 2 - 1), ``nudge``
    adds 0.001 to an end equal to the start, ``index`` is the ramp's variable (the pair j, or the column 2j),
    ``clamp_ramp`` clamps the ramp to [0, 1], ``invert`` multiplies the slow pairs by the factor."""

    def pair_index(rotations):
        turn = 2 * math.pi if two_pi else 1.0
        return head_dim * math.log(original_len / (rotations * turn)) / (2 * math.log(base))

    low, high = _ROUNDINGS[rounding[0]](pair_index(beta[0])), _ROUNDINGS[rounding[1]](pair_index(beta[1]))
    if clamp:
        last = {True: head_dim - 1, "half": head_dim // 2 - 1}.get(clamp_end)
        low, high = max(low, 0), (high if last is None else min(high, last))
    if nudge and high == low:
        high += 0.001
    omega = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    j = torch.arange(head_dim // 2, dtype=torch.float64) * (2 if index == "column" else 1)
    ramp = (j - low) / (high - low)  # (D/2,); NaN at j = low when the ends are equal and not nudged
    if clamp_ramp:
        ramp = ramp.clamp(0, 1)
    if reverse:
        ramp = 1 - ramp
    return (omega * factor if invert else omega / factor) * ramp + omega * (1 - ramp)


# The wrong answers that check_yarn_frequencies names after the three other scalings, in the order tried: what each
# changes in _yarn_variant, and the hint that names it.
_YARN_MISTAKES = (
    (
        {"reverse": True},
        "the ramp is the wrong way round: the fast pairs (small j, many turns) are kept, the slow ones "
        "divided by s; use (w / s) * ramp + w * (1 - ramp) with the ramp rising from 0 to 1.",
    ),
    (
        {"beta": (1, 32)},
        "beta_fast and beta_slow are swapped: the ramp starts at the pair that turns 32 times and ends at "
        "the one that turns once.",
    ),
    ({"invert": True}, "the slow pairs must turn slower: divide them by the factor, do not multiply."),
    (
        {"rounding": ("ceil", "floor")},
        "floor and ceil are swapped: the ramp starts at floor of the 32-turn pair index and ends at ceil of "
        "the 1-turn one (the ramp is widened, not narrowed).",
    ),
    (
        {"rounding": ("round", "round")},
        "round() (or int()) is not what transformers does: math.floor for the ramp's start (32 turns), "
        "math.ceil for its end (1 turn).",
    ),
    (
        {"rounding": ("int", "int")},
        "int() cuts towards 0, which is neither: math.floor for the ramp's start (32 turns), math.ceil for its "
        "end (1 turn).",
    ),
    (
        {"rounding": ("none", "none")},
        "round the ramp's ends as transformers does: floor for the start (32 turns), ceil for the end "
        "(1 turn), clamped to [0, head_dim - 1].",
    ),
    (
        {"clamp": False},
        "clamp the ramp's ends to [0, head_dim - 1], as transformers and the YaRN authors' code do: when the "
        "32-turn pair index is below 0 the start becomes 0, so at small sizes pair 0 is kept whole by this clamp. "
        "That is the implementation's edge behaviour, not the paper's rule: Peng et al.'s ramp is linear in the "
        "number of turns r = L / lambda (alpha = 1, beta = 32), where the code maps 1 and 32 turns to pair indices "
        "and ramps linearly in the pair index.",
    ),
    (
        {"clamp_end": False},
        "clamp the ramp's end to head_dim - 1 too: min(ceil(...), head_dim - 1), as transformers does; here ceil "
        "of the 1-turn pair index lies beyond head_dim - 1, and the unclamped end makes the ramp too shallow.",
    ),
    (
        {"clamp_end": "half"},
        "you clamped the ramp's end to head_dim / 2 - 1, the last pair; transformers clamps it to head_dim - 1 "
        "(its dim is the head size). Usually the same, but here ceil of the 1-turn pair index lies beyond the last "
        "pair, and the two clamps give the ramp different slopes.",
    ),
    ({"index": "column"}, "the ramp runs over the pair index j = 0 .. head_dim / 2 - 1, not over the column 2j."),
    (
        {"two_pi": False},
        "a turn is 2 pi radians: pair j turns original_len * w_j / (2 pi) times, so the pair index that turns "
        "r times is head_dim * ln(original_len / (2 pi r)) / (2 ln base).",
    ),
    (
        {"clamp_ramp": False},
        "clamp the ramp to [0, 1]: below the start it is 0 (kept), beyond the end 1 (divided by s), not more.",
    ),
)


def _yarn_named(head_dim, base, factor, original_len):
    """(frequencies, hint) for each wrong answer the check names, in the order tried."""
    omega = rope_frequencies(head_dim, base)
    ntk = rope_frequencies(head_dim, base, ("ntk", factor)) if head_dim >= 4 else omega
    case = (head_dim, base, factor, original_len)
    return [
        (omega, "nothing changed: these are the original frequencies; divide the slow pairs by the factor."),
        (omega / factor, "that is position interpolation (every pair divided by s); YaRN keeps the fast pairs."),
        (ntk, "that is NTK-aware scaling (a larger base); YaRN keeps or divides each pair by its number of turns."),
        *((_yarn_variant(*case, **changes), hint) for changes, hint in _YARN_MISTAKES),
    ]


def _only_the_end_unclamped(fn, case) -> bool:
    """Whether, on ``case``, leaving out both clamps and leaving out the end's give the same frequencies, and ``fn``
    clamps the start where that matters (the hidden cases whose 32-turn pair index is below 0)."""
    if not fb.close(_yarn_variant(*case, clamp=False), _yarn_variant(*case, clamp_end=False), 1e-12):
        return False
    for other in _YARN_CASES:
        if fb.close(_yarn_variant(*other, clamp=False), _yarn_variant(*other, clamp_end=False), 1e-12):
            continue  # the start's clamp changes nothing here either
        got, problem = fb.call_on_copies(
            fn, {"head_dim": other[0], "base": other[1], "factor": other[2], "original_len": other[3]}
        )
        if problem is None and isinstance(got, torch.Tensor) and got.shape == (other[0] // 2,):
            if fb.close(got.detach().double(), _yarn_variant(*other, clamp=False), 1e-6):
                return False  # no clamp at the start either
    return True


@fb.function_answer(
    "your function: my_yarn_frequencies(head_dim, base, factor, original_len)",
    "a function fn(head_dim, base, factor, original_len)",
)
def check_yarn_frequencies(fn) -> Feedback:
    """A learner's YaRN frequencies ``fn(head_dim, base, factor, original_len)`` against ``rope_frequencies`` with
    ``("yarn", factor, original_len)``, on cases the learner does not see."""
    for head_dim, base, factor, original_len in _YARN_CASES:
        want = rope_frequencies(head_dim, base, ("yarn", factor, original_len))  # (D/2,) float64
        got, problem = fb.call_on_copies(
            fn, {"head_dim": head_dim, "base": base, "factor": factor, "original_len": original_len}
        )
        if problem is not None:
            return problem
        if got is None:
            return fb.hint("your function returned None: return the (head_dim / 2,) tensor of frequencies.")
        if isinstance(got, torch.Tensor) and tuple(got.shape) == (head_dim,):
            return fb.hint(f"one frequency per pair of columns: shape ({head_dim // 2},) for head_dim = {head_dim}.")
        if isinstance(got, torch.Tensor) and got.dim() == 1 and got.shape[0] != head_dim // 2:
            return fb.hint(
                f"expected shape ({head_dim // 2},) for head_dim = {head_dim}, got ({got.shape[0]},): compute the "
                "size from the head_dim argument, not a fixed number."
            )
        problem = fb.tensor_problem(got, (head_dim // 2,), f"a ({head_dim // 2},) tensor: one frequency per pair")
        if problem is not None:
            return problem
        got = got.detach().double()
        if not bool(torch.isfinite(got).all()):
            if not bool(torch.isfinite(_yarn_variant(head_dim, base, factor, original_len, nudge=False)).all()):
                return fb.hint(
                    f"for head_dim = {head_dim}, original_len = {original_len} both ends of the ramp are clamped to "
                    "0, so (j - low) / (high - low) divides by 0: as transformers does, add 0.001 to the end when it "
                    "equals the start."
                )
            return fb.not_finite(got, "your frequencies")
        # relative: the slow pairs' frequencies are tiny (1e-4 and below), so an absolute 1e-6 would pass them rounded
        if bool(torch.allclose(got, want, rtol=1e-5, atol=1e-12)):
            continue
        if (problem := fb.rounded(got, want)) is not None:
            return problem
        for decimals in range(4, 9):
            if fb.close(got, want.round(decimals=decimals), 1e-12):
                return fb.hint(
                    f"close: your frequencies look rounded to {decimals} decimals; return them in full (the slow "
                    "pairs' frequencies are tiny numbers)."
                )
        case = (head_dim, base, factor, original_len)
        for frequencies, hint in _yarn_named(*case):
            if fb.close(got, frequencies, 1e-6):
                if hint.startswith("clamp the ramp's ends") and _only_the_end_unclamped(fn, case):
                    continue  # here the start's clamp changes nothing: name the end's (the next hint)
                return fb.hint(hint)
        if fb.close(got[:1], want[:1], 1e-6) and fb.close(got[-1:], want[-1:], 1e-6):
            return fb.hint(
                "the fastest and the slowest pairs are right, the blend between them is off: the ramp is "
                "(j - low) / (high - low), clamped to [0, 1]."
            )
        return fb.hint(
            "pair j turns original_len * w_j / (2 pi) times over original_len positions; kept above 32 turns, "
            "divided by s below 1, blended in between."
        )
    return fb.ok(f"your function agrees with ac.rope_frequencies on {len(_YARN_CASES)} hidden cases.")


def check_yarn_kept(answer) -> Feedback:
    """The pairs that YaRN leaves unchanged for D = 64, base 10000, original length 2048: pairs 0 to 8."""
    if answer is None:
        return fb.hint("replace None with a list of pair indices.")
    if isinstance(answer, torch.Tensor):
        answer = answer.tolist()
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__iter__"):
        return fb.hint(f"expected a list of pair indices, got {type(answer).__name__}.")
    answer = list(answer)
    if answer and all(isinstance(j, (bool, np.bool_)) for j in answer):  # a mask, Python's or NumPy's
        return fb.hint("give the indices of the kept pairs (for example [0, 1, 2]), not True / False for each pair.")
    try:
        if any(isinstance(j, (str, bytes)) or float(j) != int(j) for j in answer):
            return fb.hint("expected a list of whole numbers: the indices of the pairs.")
        kept = sorted({int(j) for j in answer})
    except (TypeError, ValueError, OverflowError):
        return fb.hint("expected a list of whole numbers: the indices of the pairs.")
    ratio = rope_frequencies(64, scaling=("yarn", 4.0, 2048)) / rope_frequencies(64)
    right = [j for j, r in enumerate(ratio.tolist()) if r == 1.0]  # 0 .. 8
    slowed = [j for j, r in enumerate(ratio.tolist()) if r == 0.25]  # the pairs divided by the full factor
    if kept == right:
        return fb.ok(
            f"pairs {right[0]} to {right[-1]}: pair 8 turns about 33 times over 2048 positions, pair 9 about 24; "
            "the 32-turn index is about 8.06, floor 8, so the ramp is 0 up to pair 8."
        )
    if not kept:
        return fb.hint("YaRN keeps some pairs: the fast ones, which turn many times over 2048 positions.")
    if kept == [j + 1 for j in right]:
        return fb.hint("pairs are counted from 0, like every index of the course: the fastest pair is pair 0.")
    if any(j < 0 or j > 31 for j in kept):
        return fb.hint("a head of size 64 has 32 pairs: indices 0 to 31.")
    if kept == right[:-1]:
        return fb.hint("pair 8 too: the ramp starts at floor(8.06) = 8, where it is still 0.")
    if kept == right[1:]:
        return fb.hint("pair 0 too: the fastest pair turns the most times of all, and YaRN keeps it.")
    if kept == right + [right[-1] + 1]:
        return fb.hint(
            f"pair {right[-1] + 1} lies on the ramp: the ramp starts at floor(8.06) = {right[-1]}, not ceil "
            f"({right[-1] + 1}), so pair {right[-1] + 1} is already slowed a little."
        )
    if kept and kept == list(range(kept[-1] + 1)) and kept[-1] < right[-1]:
        return fb.hint(
            f"pairs {kept[-1] + 1} to {right[-1]} also turn more than 32 times over 2048 positions (pair {right[-1]} "
            "about 33): YaRN keeps them too."
        )
    if kept and kept[0] >= slowed[0]:
        return fb.hint("those are pairs YaRN slows down; the kept ones are the fast pairs, those that turn many times.")
    if kept and kept[0] == 0 and kept[-1] > right[-1]:
        return fb.hint(
            f"pairs {right[-1] + 1} to {slowed[0] - 1} lie on the ramp: blended, so slowed a little, not kept."
        )
    return fb.hint(
        "count the turns, 2048 * w_j / (2 pi) with w_j = 10000^(-2j / 64): the pairs kept are those up to floor of the "
        "index that turns 32 times."
    )
