"""Checks for the exercises of notebook 11 (RoPE, ALiBi and extrapolation)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..rotary import alibi_bias, apply_rope, rope_frequencies
from ._feedback import (
    Feedback,
    _call_on_copies,
    _close,
    _function_answer,
    _half_precision,
    _hint,
    _not_finite,
    _number_answer,
    _ok,
    _raised_on,
    _rounded,
    _tensor_answer,
    _tensor_problem,
)

__all__ = ["check_rope_angle", "check_alibi_row", "check_apply_rope", "check_yarn_frequencies", "check_yarn_kept"]


@_number_answer("the angle in radians")
def check_rope_angle(answer: float) -> Feedback:
    """The angle (radians) by which RoPE turns pair j = 1 of a D = 8 vector at position p = 5 (base 10000)."""
    right = 5 * 10000 ** (-2 / 8)  # p * w_1 = 5 * 0.1
    if math.isclose(answer, right, rel_tol=1e-3):
        return _ok("w_1 = 10000^(-2/8) = 0.1, so pair 1 turns by 5 * 0.1 = 0.5 radian; pair 0 turns by 5.")
    if math.isclose(answer, 5.0, rel_tol=1e-3):
        return _hint("that is pair 0's angle (w_0 = 1); pair 1 has a lower frequency.")
    if math.isclose(answer, 5 * 10000 ** (-1 / 8), rel_tol=1e-3):
        return _hint("the exponent is -2j / D with j = 1, that is -2/8, not -1/8.")
    if math.isclose(answer, 5 * 10000 ** (-4 / 8), rel_tol=1e-3):
        return _hint("j counts pairs, not columns: pair 1 holds columns 2 and 3, and its exponent is -2 * 1 / 8.")
    if math.isclose(answer, 5 / 10000 ** (-2 / 8), rel_tol=1e-3):
        return _hint("multiply the position by w_j = 10000^(-2j/D); do not divide by it.")
    if math.isclose(answer, math.degrees(right), rel_tol=1e-3):
        return _hint("in radians, please, not degrees.")
    if math.isclose(answer, right / 5, rel_tol=1e-3):
        return _hint("that is w_1 = 0.1, the frequency; multiply it by the position p = 5 for the angle.")
    if math.isclose(answer, right / (2 * math.pi), rel_tol=1e-3):
        return _hint("that is the angle in turns (divided by 2 pi); give it in radians.")
    return _hint("the angle is p * w_j with w_j = 10000^(-2j / D); here p = 5, j = 1 and D = 8.")


@_tensor_answer((6,), "a (6,) tensor: one bias per key")
def check_alibi_row(row) -> Feedback:
    """The bias that head h = 1 of H = 4 (counted from 0) adds to query 3's scores over keys 0..5 (Q = K = 6)."""
    if not row.is_floating_point():
        return _hint(f"slopes are fractions: use a floating-point tensor, got {row.dtype}.")
    want = alibi_bias(4, 6, 6, dtype=torch.float64)[1, 3]  # head 1: the second, slope 2^(-8 * 2 / 4)
    finite = torch.isfinite(row)
    if torch.equal(~finite, torch.arange(6) > 3) and _close(row[finite], want[finite]):
        return _hint(
            "ALiBi's bias is 0 after the diagonal: the causal mask is separate (it removes keys 4 and 5 on its own), "
            "so the bias holds no -inf."
        )
    if _close(row, want):
        return _ok(
            "slope m_1 = 2^(-8 * (1 + 1) / 4) = 1/16: -3/16, -2/16, -1/16 for keys 0..2, 0 on the diagonal and after."
        )
    if _close(row, -want):
        return _hint("the bias is a penalty: far keys get a negative bias, so their scores go down.")
    m = 2 ** (-4.0)
    symmetric = torch.tensor([-m * abs(3 - j) for j in range(6)], dtype=torch.float64)
    if _close(row, symmetric):
        return _hint("keys after query 3 are masked by the causal mask: ALiBi gives them 0 here, not -m (j - i).")
    for h in (0, 2):  # the slope of head 1 counted from 1 (2^(-8 / 4)), or of head 2 (2^(-8 * 3 / 4))
        if _close(row, alibi_bias(4, 6, 6, dtype=torch.float64)[h, 3]):
            return _hint(
                f"that is head {h}'s row; heads are counted from 0, h = 0 .. H - 1, and head 1's slope is "
                "2^(-8 * (1 + 1) / 4)."
            )
    if _close(row, alibi_bias(4, 6, 6, dtype=torch.float64)[1, 2]):
        return _hint(
            "that is query 2's row; query 3, counted from 0, is the fourth row: keys 0, 1, 2 get -3m, -2m, -m."
        )
    return _hint("bias[j] = -m * (3 - j) for j <= 3 and 0 after, with m = 2^(-8 (h + 1) / H), h = 1, H = 4.")


_PAIRS = {"interleaved": "as (2j, 2j + 1)", "half": "as (j, j + D/2)"}

# Hidden cases: shapes (..., L, D) and positions that are not simply 0 .. L - 1.
_CASES = [((5, 8), None), ((2, 7, 16), None), ((3, 2, 4, 6), None), ((1, 4), None)]


def _variant(x, positions, pairing="interleaved", sign=1.0, exponent=2.0, layout=None):
    """RoPE with one thing changed, to name what a wrong answer does. ``pairing`` says which columns are read as a
    pair, ``layout`` how the rotated pairs are written back (the same as ``pairing`` unless given)."""
    d = x.shape[-1]
    omega = 10000.0 ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)  # (D/2,)
    angles = sign * positions.double().unsqueeze(-1) * omega  # (L, D/2)
    cos, sin = angles.cos(), angles.sin()
    if pairing == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
    else:  # half-split: column j with column j + D/2
        a, b = x[..., : d // 2], x[..., d // 2 :]
    first, second = a * cos - b * sin, a * sin + b * cos
    if (layout or pairing) == "interleaved":
        return torch.stack((first, second), dim=-1).flatten(-2)
    return torch.cat((first, second), dim=-1)


def _two_d_only(fn, x: torch.Tensor, positions: torch.Tensor) -> Feedback | None:
    """A hint when ``fn`` fails on a batched x (..., L, D) but is right on one (L, D) slice of it: axes counted from
    the front (x[:, 0::2]) where x may have batch axes; else None."""
    if x.dim() <= 2:
        return None
    part = x.reshape(-1, *x.shape[-2:])[0]  # (L, D)
    got, problem = _call_on_copies(fn, {"x": part, "positions": positions})
    if problem is None and isinstance(got, torch.Tensor) and got.shape == part.shape:
        if _close(got.detach(), apply_rope(part, positions), 1e-6):
            return _hint(
                f"right on an x of shape (L, D), not on one of shape {tuple(x.shape)}: x may have batch axes in front "
                "of (L, D), so index the last axes (x[..., 0::2], x.shape[-1]), not the first (x[:, 0::2])."
            )
    return None


@_function_answer("your function: my_rope(x, positions) returning the rotated x", "a function fn(x, positions)")
def check_apply_rope(fn) -> Feedback:
    """A learner's ``fn(x, positions)`` against ``apply_rope`` on random cases the learner does not see."""
    gen = torch.Generator().manual_seed(11)
    for case, (shape, _) in enumerate(_CASES):
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        positions = torch.randperm(40, generator=gen)[: shape[-2]]  # (L,): shuffled, not 0 .. L - 1
        want = apply_rope(x, positions)  # first: the learner only ever sees copies of x and positions
        got, problem = _call_on_copies(fn, {"x": x, "positions": positions})
        if problem is not None:
            two_d = _two_d_only(fn, x, positions) if problem.message.startswith("your function raised") else None
            sizes = (*shape, shape[-1] // 2)
            return two_d if two_d is not None else _raised_on(problem, sizes, worked_before=case > 0)
        if got is None:
            return _hint("your function returned None: return the rotated tensor.")
        problem = _tensor_problem(got, tuple(shape), f"a tensor of x's shape {tuple(shape)}")
        if problem is not None:
            return _two_d_only(fn, x, positions) or problem
        got = got.detach()
        if (problem := _not_finite(got, "your rotated x")) is not None:
            return problem
        if (problem := _half_precision(got, what="your rotated x")) is not None:
            return problem
        if _close(got, want, 1e-6):
            continue
        if (problem := _two_d_only(fn, x, positions)) is not None:
            return problem
        if _close(got, x, 1e-6):
            return _hint("nothing was rotated: the result equals x.")
        if _close(got, _variant(x, positions, pairing="half"), 1e-6):
            return _hint(
                "you paired column j with column j + D/2 (the half-split convention); here pair j is (2j, 2j + 1)."
            )
        for read, written in (("interleaved", "half"), ("half", "interleaved")):
            if _close(got, _variant(x, positions, pairing=read, layout=written), 1e-6):
                return _hint(
                    f"the angles are right, but you read pairs {_PAIRS[read]} and wrote them back {_PAIRS[written]}: "
                    "write each rotated pair where it came from, out[2j] and out[2j + 1]."
                )
        if _close(got, _variant(x, positions, sign=-1.0), 1e-6):
            return _hint("wrong sign: that turns clockwise; out[2j+1] = x[2j] sin + x[2j+1] cos, with a plus.")
        if _close(got, apply_rope(x, torch.arange(shape[-2])), 1e-6):
            return _hint("you used the row index 0 .. L - 1 as the position; use the positions argument.")
        for exponent in (1.0, 4.0, -2.0):
            if _close(got, _variant(x, positions, exponent=exponent), 1e-6):
                return _hint(
                    f"wrong frequency: you used base^({-exponent:g} j / D); pair j turns at w_j = base^(-2j / D)."
                )
        pairs_got = got.detach().double().reshape(*shape[:-1], -1, 2).norm(dim=-1)
        pairs_x = x.reshape(*shape[:-1], -1, 2).norm(dim=-1)
        if not _close(pairs_got, pairs_x, 1e-6):
            return _hint("a rotation keeps the length of every pair (2j, 2j + 1); yours changes it: check cos and sin.")
        return _hint(
            "each pair keeps its length, but the angles are off: pair j at position p turns by p * base^(-2j/D)."
        )
    return _ok(f"your function agrees with ac.apply_rope on {len(_CASES)} hidden cases, including shuffled positions.")


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
):
    """YaRN's frequencies with one thing changed, to name what a wrong answer does. ``rounding`` rounds the ramp's
    start and end, ``clamp`` clamps them to [0, head_dim - 1] (``clamp_end``: False clamps the start alone, "half"
    clamps the end to head_dim / 2 - 1), ``nudge``
    adds 0.001 to an end equal to the start, ``index`` is the ramp's variable (the pair j, or the column 2j),
    ``clamp_ramp`` clamps the ramp to [0, 1]."""

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
    return (omega / factor) * ramp + omega * (1 - ramp)


def _yarn_named(head_dim, base, factor, original_len):
    """(frequencies, hint) for each wrong answer the check names, in the order tried."""
    omega = rope_frequencies(head_dim, base)
    case = (head_dim, base, factor, original_len)
    return [
        (omega, "nothing changed: these are the original frequencies; divide the slow pairs by the factor."),
        (omega / factor, "that is position interpolation (every pair divided by s); YaRN keeps the fast pairs."),
        (
            rope_frequencies(head_dim, base, ("ntk", factor)) if head_dim >= 4 else omega,
            "that is NTK-aware scaling (a larger base); YaRN keeps or divides each pair by its number of turns.",
        ),
        (
            _yarn_variant(*case, reverse=True),
            "the ramp is the wrong way round: the fast pairs (small j, many turns) are kept, the slow ones "
            "divided by s; use (w / s) * ramp + w * (1 - ramp) with the ramp rising from 0 to 1.",
        ),
        (
            _yarn_variant(*case, beta=(1, 32)),
            "beta_fast and beta_slow are swapped: the ramp starts at the pair that turns 32 times and ends at "
            "the one that turns once.",
        ),
        (
            _yarn_variant(head_dim, base, 1 / factor, original_len),
            "the slow pairs must turn slower: divide them by the factor, do not multiply.",
        ),
        (
            _yarn_variant(*case, rounding=("ceil", "floor")),
            "floor and ceil are swapped: the ramp starts at floor of the 32-turn pair index and ends at ceil of "
            "the 1-turn one (the ramp is widened, not narrowed).",
        ),
        (
            _yarn_variant(*case, rounding=("round", "round")),
            "round() (or int()) is not what transformers does: math.floor for the ramp's start (32 turns), "
            "math.ceil for its end (1 turn).",
        ),
        (
            _yarn_variant(*case, rounding=("int", "int")),
            "int() cuts towards 0, which is neither: math.floor for the ramp's start (32 turns), math.ceil for its "
            "end (1 turn).",
        ),
        (
            _yarn_variant(*case, rounding=("none", "none")),
            "round the ramp's ends as transformers does: floor for the start (32 turns), ceil for the end "
            "(1 turn), clamped to [0, head_dim - 1].",
        ),
        (
            _yarn_variant(*case, clamp=False),
            "clamp the ramp's ends to [0, head_dim - 1], as transformers and the YaRN authors' code do: when the "
            "32-turn pair index is below 0 the start becomes 0, so at small sizes pair 0 is kept whole by this clamp. "
            "That is the implementation's edge behaviour, not the paper's rule: Peng et al.'s ramp is linear in the "
            "number of turns r = L / lambda (alpha = 1, beta = 32), where the code maps 1 and 32 turns to pair indices "
            "and ramps linearly in the pair index.",
        ),
        (
            _yarn_variant(*case, clamp_end=False),
            "clamp the ramp's end to head_dim - 1 too: min(ceil(...), head_dim - 1), as transformers does; here ceil "
            "of the 1-turn pair index lies beyond head_dim - 1, and the unclamped end makes the ramp too shallow.",
        ),
        (
            _yarn_variant(*case, clamp_end="half"),
            "you clamped the ramp's end to head_dim / 2 - 1, the last pair; transformers clamps it to head_dim - 1 "
            "(its dim is the head size). Usually the same, but here ceil of the 1-turn pair index lies beyond the last "
            "pair, and the two clamps give the ramp different slopes.",
        ),
        (
            _yarn_variant(*case, index="column"),
            "the ramp runs over the pair index j = 0 .. head_dim / 2 - 1, not over the column 2j.",
        ),
        (
            _yarn_variant(*case, two_pi=False),
            "a turn is 2 pi radians: pair j turns original_len * w_j / (2 pi) times, so the pair index that turns "
            "r times is head_dim * ln(original_len / (2 pi r)) / (2 ln base).",
        ),
        (
            _yarn_variant(*case, clamp_ramp=False),
            "clamp the ramp to [0, 1]: below the start it is 0 (kept), beyond the end 1 (divided by s), not more.",
        ),
    ]


def _only_the_end_unclamped(fn, case) -> bool:
    """Whether, on ``case``, leaving out both clamps and leaving out the end's give the same frequencies, and ``fn``
    clamps the start where that matters (the hidden cases whose 32-turn pair index is below 0)."""
    if not _close(_yarn_variant(*case, clamp=False), _yarn_variant(*case, clamp_end=False), 1e-12):
        return False
    for other in _YARN_CASES:
        if _close(_yarn_variant(*other, clamp=False), _yarn_variant(*other, clamp_end=False), 1e-12):
            continue  # the start's clamp changes nothing here either
        got, problem = _call_on_copies(
            fn, {"head_dim": other[0], "base": other[1], "factor": other[2], "original_len": other[3]}
        )
        if problem is None and isinstance(got, torch.Tensor) and got.shape == (other[0] // 2,):
            if _close(got.detach().double(), _yarn_variant(*other, clamp=False), 1e-6):
                return False  # no clamp at the start either
    return True


@_function_answer(
    "your function: my_yarn_frequencies(head_dim, base, factor, original_len)",
    "a function fn(head_dim, base, factor, original_len)",
)
def check_yarn_frequencies(fn) -> Feedback:
    """A learner's YaRN frequencies ``fn(head_dim, base, factor, original_len)`` against ``rope_frequencies`` with
    ``("yarn", factor, original_len)``, on cases the learner does not see."""
    for head_dim, base, factor, original_len in _YARN_CASES:
        want = rope_frequencies(head_dim, base, ("yarn", factor, original_len))  # (D/2,) float64
        got, problem = _call_on_copies(
            fn, {"head_dim": head_dim, "base": base, "factor": factor, "original_len": original_len}
        )
        if problem is not None:
            return problem
        if got is None:
            return _hint("your function returned None: return the (head_dim / 2,) tensor of frequencies.")
        if isinstance(got, torch.Tensor) and tuple(got.shape) == (head_dim,):
            return _hint(f"one frequency per pair of columns: shape ({head_dim // 2},) for head_dim = {head_dim}.")
        if isinstance(got, torch.Tensor) and got.dim() == 1 and got.shape[0] != head_dim // 2:
            return _hint(
                f"expected shape ({head_dim // 2},) for head_dim = {head_dim}, got ({got.shape[0]},): compute the "
                "size from the head_dim argument, not a fixed number."
            )
        problem = _tensor_problem(got, (head_dim // 2,), f"a ({head_dim // 2},) tensor: one frequency per pair")
        if problem is not None:
            return problem
        got = got.detach().double()
        if not bool(torch.isfinite(got).all()):
            if not bool(torch.isfinite(_yarn_variant(head_dim, base, factor, original_len, nudge=False)).all()):
                return _hint(
                    f"for head_dim = {head_dim}, original_len = {original_len} both ends of the ramp are clamped to "
                    "0, so (j - low) / (high - low) divides by 0: as transformers does, add 0.001 to the end when it "
                    "equals the start."
                )
            return _not_finite(got, "your frequencies")
        # relative: the slow pairs' frequencies are tiny (1e-4 and below), so an absolute 1e-6 would pass them rounded
        if bool(torch.allclose(got, want, rtol=1e-5, atol=1e-12)):
            continue
        if (problem := _rounded(got, want)) is not None:
            return problem
        for decimals in range(4, 9):
            if _close(got, want.round(decimals=decimals), 1e-12):
                return _hint(
                    f"close: your frequencies look rounded to {decimals} decimals; return them in full (the slow "
                    "pairs' frequencies are tiny numbers)."
                )
        case = (head_dim, base, factor, original_len)
        for frequencies, hint in _yarn_named(*case):
            if _close(got, frequencies, 1e-6):
                if hint.startswith("clamp the ramp's ends") and _only_the_end_unclamped(fn, case):
                    continue  # here the start's clamp changes nothing: name the end's (the next hint)
                return _hint(hint)
        if _close(got[:1], want[:1], 1e-6) and _close(got[-1:], want[-1:], 1e-6):
            return _hint(
                "the fastest and the slowest pairs are right, the blend between them is off: the ramp is "
                "(j - low) / (high - low), clamped to [0, 1]."
            )
        return _hint(
            "pair j turns original_len * w_j / (2 pi) times over original_len positions; kept above 32 turns, "
            "divided by s below 1, blended in between."
        )
    return _ok(f"your function agrees with ac.rope_frequencies on {len(_YARN_CASES)} hidden cases.")


def check_yarn_kept(answer) -> Feedback:
    """The pairs that YaRN leaves unchanged for D = 64, base 10000, original length 2048: pairs 0 to 8."""
    if answer is None:
        return _hint("replace None with a list of pair indices.")
    if isinstance(answer, torch.Tensor):
        answer = answer.tolist()
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__iter__"):
        return _hint(f"expected a list of pair indices, got {type(answer).__name__}.")
    answer = list(answer)
    if answer and all(isinstance(j, (bool, np.bool_)) for j in answer):  # a mask, Python's or NumPy's
        return _hint("give the indices of the kept pairs (for example [0, 1, 2]), not True / False for each pair.")
    try:
        if any(isinstance(j, (str, bytes)) or float(j) != int(j) for j in answer):
            return _hint("expected a list of whole numbers: the indices of the pairs.")
        kept = sorted({int(j) for j in answer})
    except (TypeError, ValueError, OverflowError):
        return _hint("expected a list of whole numbers: the indices of the pairs.")
    ratio = rope_frequencies(64, scaling=("yarn", 4.0, 2048)) / rope_frequencies(64)
    right = [j for j, r in enumerate(ratio.tolist()) if r == 1.0]  # 0 .. 8
    slowed = [j for j, r in enumerate(ratio.tolist()) if r == 0.25]  # the pairs divided by the full factor
    if kept == right:
        return _ok(
            f"pairs {right[0]} to {right[-1]}: pair 8 turns about 33 times over 2048 positions, pair 9 about 24; "
            "the 32-turn index is about 8.06, floor 8, so the ramp is 0 up to pair 8."
        )
    if not kept:
        return _hint("YaRN keeps some pairs: the fast ones, which turn many times over 2048 positions.")
    if kept == [j + 1 for j in right]:
        return _hint("pairs are counted from 0, like every index of the course: the fastest pair is pair 0.")
    if any(j < 0 or j > 31 for j in kept):
        return _hint("a head of size 64 has 32 pairs: indices 0 to 31.")
    if kept == right[:-1]:
        return _hint("pair 8 too: the ramp starts at floor(8.06) = 8, where it is still 0.")
    if kept == right[1:]:
        return _hint("pair 0 too: the fastest pair turns the most times of all, and YaRN keeps it.")
    if kept == right + [right[-1] + 1]:
        return _hint(
            f"pair {right[-1] + 1} lies on the ramp: the ramp starts at floor(8.06) = {right[-1]}, not ceil "
            f"({right[-1] + 1}), so pair {right[-1] + 1} is already slowed a little."
        )
    if kept and kept == list(range(kept[-1] + 1)) and kept[-1] < right[-1]:
        return _hint(
            f"pairs {kept[-1] + 1} to {right[-1]} also turn more than 32 times over 2048 positions (pair {right[-1]} "
            "about 33): YaRN keeps them too."
        )
    if kept and kept[0] >= slowed[0]:
        return _hint("those are pairs YaRN slows down; the kept ones are the fast pairs, those that turn many times.")
    if kept and kept[0] == 0 and kept[-1] > right[-1]:
        return _hint(
            f"pairs {right[-1] + 1} to {slowed[0] - 1} lie on the ramp: blended, so slowed a little, not kept."
        )
    return _hint(
        "count the turns, 2048 * w_j / (2 pi) with w_j = 10000^(-2j / 64): the pairs kept are those up to floor of the "
        "index that turns 32 times."
    )
