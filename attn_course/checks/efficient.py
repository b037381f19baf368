"""Checks for the exercises on efficient attention: one update of the online softmax, one tile of FlashAttention
(notebook 10).

Notebook 10's checks on what tiling saves are in ``checks.cost``.
"""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .build_it import float32_close, gaussian, is_tensors, shape_hint, step_results, with_case
from .feedback import Feedback

__all__ = ["check_online_step", "check_tile_update"]

_NEG_INF = -math.inf


def _named_mistake(got, want, mistakes, what: str, otherwise: str, **tolerance) -> Feedback:
    """The hint for a wrong ``got``: rounded, else the first typical mistake ``(its result, hint)`` that it equals
    within ``tolerance`` (a NaN where the mistake has NaN counts as that mistake), else NaN or infinity in ``what``,
    else ``otherwise``."""
    same = (text for wrong, text in mistakes if torch.allclose(got.double(), wrong, equal_nan=True, **tolerance))
    named = next(same, None)
    return fb.first_hint(
        fb.rounded(got, want), fb.hint(named) if named else None, fb.not_finite(got, what), fb.hint(otherwise)
    )


# ----------------------------------------------------------------------------------------------------------------------
# Exercise 1: one update of the online softmax
# ----------------------------------------------------------------------------------------------------------------------


def _reference_step(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))  # (R,)
    new_sum = running_sum * torch.exp(running_max - new_max) + torch.exp(block - new_max.unsqueeze(-1)).sum(-1)
    return new_max, new_sum


def _step_cases() -> list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Hidden cases: (what, running_max (R,), running_sum (R,), block (R, b)), float64, R and b varied."""
    gen = torch.Generator().manual_seed(1234)
    first = torch.full((5,), _NEG_INF, dtype=torch.float64)
    cases = [("the first block", first, torch.zeros(5, dtype=torch.float64), gaussian(5, 4, gen=gen))]
    for rows, old_keys, new_keys, scale, what in (
        (6, 3, 5, 1.0, "scores near 0"),
        (7, 9, 2, 1.0, "7 rows, a block of 2 keys"),
        (6, 3, 5, 1e4, "scores of size 1e4"),
    ):
        start = torch.full((rows,), _NEG_INF, dtype=torch.float64)
        old = gaussian(rows, old_keys, gen=gen, scale=scale)
        m, s = _reference_step(start, torch.zeros(rows, dtype=torch.float64), old)
        new = gaussian(rows, new_keys, gen=gen, scale=scale)
        new[: rows // 2] += 3.0 * scale  # the first half of the rows: the new block raises the maximum; the rest not
        cases.append((what, m, s, new))
    return cases


def _step_mistakes(running_max, running_sum, block, new_max):
    """(what a common mistake computes for new_sum, the hint that names it)."""
    fresh = torch.exp(block - new_max.unsqueeze(-1)).sum(-1)  # (R,)
    rescale = torch.exp(running_max - new_max)  # (R,)
    return [
        (
            running_sum + fresh,
            "the old sum is not rescaled: it was taken against the old maximum, so multiply it by "
            "exp(running_max - new_max) when the maximum rises.",
        ),
        (
            running_sum * rescale + torch.exp(block - running_max.unsqueeze(-1)).sum(-1),
            "exponentiate the block against the new maximum, exp(block - new_max), not the old one (on the first "
            "block the old one is -inf).",
        ),
        (
            running_sum * torch.exp(new_max - running_max) + fresh,
            "the rescaling is inverted: the old sum shrinks by exp(running_max - new_max) <= 1.",
        ),
        (
            running_sum * rescale + torch.exp(block).sum(-1),
            "subtract new_max before exp: exp(block) overflows for scores of 1e4; exp(block - new_max) <= 1 cannot.",
        ),
    ]


@fb.function_answer("your function step(running_max, running_sum, block)", "a function")
def check_online_step(step) -> Feedback:
    """Build it: ``step(running_max, running_sum, block) -> (new_max, new_sum)``, one update of the online softmax.

    ``running_max`` and ``running_sum`` are (R,), ``block`` is (R, b); checked on hidden random cases of varied sizes
    (the first block, with ``running_max = -inf``; blocks that raise the maximum and blocks that do not; scores of
    1e4). The reference is computed from the originals; the learner's function gets copies, and an input it changes in
    place is named.
    """
    for case, (what, running_max, running_sum, block) in enumerate(_step_cases()):
        want_max, want_sum = _reference_step(running_max, running_sum, block)
        result, problem = fb.call_on_copies(
            step, {"running_max": running_max, "running_sum": running_sum, "block": block}
        )
        if problem is not None:
            return with_case(fb.raised_on(problem, block.shape, worked_before=case > 0), what)
        placeholders = "new_max and new_sum must be tensors of shape (R,)"
        expected = "return two tensors: (new_max, new_sum), each of shape (R,)"
        tensors = step_results(result, 2, "new_max or new_sum", placeholders, expected, none_in=(tuple, list))
        if isinstance(tensors, Feedback):
            return tensors
        new_max, new_sum = tensors
        rows = (running_max.shape[0],)
        if tuple(new_max.shape) != rows or tuple(new_sum.shape) != rows:
            return fb.hint(
                f"new_max and new_sum must have shape {rows} (one per row), got {tuple(new_max.shape)} and "
                f"{tuple(new_sum.shape)} on a hidden case of {rows[0]} rows and blocks of {block.shape[1]} keys; "
                "reduce the block over its last axis (dim=-1), with no size written in."
            )
        if not torch.allclose(new_max.double(), want_max, rtol=1e-6, atol=1e-6):
            if torch.allclose(new_max.double(), block.amax(dim=-1)):
                return fb.hint(
                    "new_max is off: it ignores running_max; it is the larger of running_max and the block's largest "
                    "score, per row."
                )
            if torch.allclose(new_max.double(), torch.maximum(running_max, block.max())):
                return fb.hint(
                    "new_max is off: one maximum for all rows (block.max()); each row keeps its own, "
                    "torch.maximum(running_max, block.amax(dim=-1))."
                )
            return fb.hint("new_max is off: it is the larger of running_max and the block's largest score, per row.")
        if torch.allclose(new_sum.double(), want_sum, rtol=1e-6):
            continue
        with torch.no_grad():
            mistakes = _step_mistakes(running_max, running_sum, block, want_max)
        formula = "new_sum = running_sum * exp(running_max - new_max) + sum(exp(block - new_max))."
        off = f"new_sum is off on {what}: {formula}"
        return _named_mistake(new_sum, want_sum, mistakes, f"new_sum on {what}", off, rtol=1e-6)
    return fb.ok(
        "the running maximum and sum match on every hidden case, including the first block and scores of 1e4: "
        "this is the update inside online_softmax and flash_attention."
    )


# ----------------------------------------------------------------------------------------------------------------------
# Exercise 2: one tile's update of the output (the accumulator rescale)
# ----------------------------------------------------------------------------------------------------------------------


def _reference_tile(running_max, running_sum, acc, scores, values):
    """FlashAttention's step: m, l and the un-normalised output O after one more block of keys."""
    new_max = torch.maximum(running_max, scores.amax(dim=-1))  # (R,)
    safe_max = torch.where(new_max == _NEG_INF, torch.zeros_like(new_max), new_max)  # (R,): no NaN from -inf - -inf
    probs = torch.exp(scores - safe_max.unsqueeze(-1))  # (R, b)
    rescale = torch.exp(running_max - safe_max)  # (R,)
    new_sum = running_sum * rescale + probs.sum(dim=-1)  # (R,)
    new_acc = acc * rescale.unsqueeze(-1) + probs @ values  # (R, V) + (R, b) x (b, V) -> (R, V)
    return new_max, new_sum, new_acc


def _tile_cases() -> list[tuple[str, dict[str, torch.Tensor]]]:
    """Hidden cases: (what, inputs in the order of the learner's arguments), float64; R, b and V vary."""
    gen = torch.Generator().manual_seed(2024)

    def start(rows: int, v: int) -> dict[str, torch.Tensor]:
        return {
            "running_max": torch.full((rows,), _NEG_INF, dtype=torch.float64),
            "running_sum": torch.zeros(rows, dtype=torch.float64),
            "acc": torch.zeros(rows, v, dtype=torch.float64),
        }

    def after(rows: int, keys: int, v: int, scale: float = 1.0) -> dict[str, torch.Tensor]:
        """The state after one block of ``keys`` random keys."""
        m, s, o = _reference_tile(
            *start(rows, v).values(), gaussian(rows, keys, gen=gen, scale=scale), gaussian(keys, v, gen=gen)
        )
        return {"running_max": m, "running_sum": s, "acc": o}

    def block(rows: int, keys: int, v: int, scale: float = 1.0, raise_rows: int = 0, masked_rows=()) -> dict:
        scores = gaussian(rows, keys, gen=gen, scale=scale)  # (R, b)
        scores[:raise_rows] += 3.0 * scale  # these rows: the new block raises the maximum
        scores[list(masked_rows)] = _NEG_INF  # these rows: every key of the block is masked
        return {"scores": scores, "values": gaussian(keys, v, gen=gen)}

    masked_first = block(4, 3, 6, masked_rows=(0, 2))
    masked_first["scores"][1, 1] = _NEG_INF  # and one masked key in a row that sees the others
    return [
        ("the first block, 5 rows, 4 keys, V = 3", start(5, 3) | block(5, 4, 3)),
        (
            "a block that raises the maximum of rows 0-2, 6 rows, 5 keys, V = 7",
            after(6, 3, 7) | block(6, 5, 7, raise_rows=3),
        ),
        ("a fully masked first block (rows 0 and 2 all -inf), 4 rows, 3 keys, V = 6", start(4, 6) | masked_first),
        (
            "a fully masked block after others (rows 1 and 4 all -inf), 5 rows, 6 keys, V = 2",
            after(5, 4, 2) | block(5, 6, 2, masked_rows=(1, 4)),
        ),
        ("scores of size 1e4, 3 rows, 2 keys, V = 5", after(3, 8, 5, 1e4) | block(3, 2, 5, 1e4, raise_rows=2)),
    ]


_MASKED_NAN = (
    "a fully masked block gives NaN: where every score of a row is -inf and running_max is -inf too, new_max is -inf "
    "and exp(scores - new_max) is exp(-inf - (-inf)) = NaN. Keep new_max = -inf, but subtract a stand-in where it "
    "is -inf: safe = torch.where(new_max == -inf, 0, new_max), then exp(scores - safe) and exp(running_max - safe) "
    "are 0 there, and the row stays (-inf, 0, zeros)."
)


def _tile_acc_mistakes(running_max, running_sum, acc, scores, values, new_max, new_sum):
    """(what a common mistake computes for new_acc, the hint that names it)."""
    safe = torch.where(new_max == _NEG_INF, torch.zeros_like(new_max), new_max)
    fresh = torch.exp(scores - safe.unsqueeze(-1)) @ values  # (R, V)
    rescale = torch.exp(running_max - safe).unsqueeze(-1)  # (R, 1)
    right = acc * rescale + fresh
    old_safe = torch.where(running_max == _NEG_INF, torch.zeros_like(running_max), running_max)
    return [
        (
            acc + fresh,
            "the old output is not rescaled: acc holds sums of exp(s - running_max) v, taken against the old maximum; "
            "multiply it by exp(running_max - new_max) (one factor per row) before adding this block's P V.",
        ),
        (
            acc * torch.exp(safe - running_max).unsqueeze(-1) + fresh,
            "the rescaling is inverted: the old output shrinks by exp(running_max - new_max) <= 1, not "
            "exp(new_max - running_max).",
        ),
        (  # on the first block (running_max = -inf, taken as 0) exp(scores) and the old maximum agree
            acc * rescale + torch.exp(scores) @ values,
            "compute this block's P = exp(scores - new_max), against the new maximum: not exp(scores) unshifted "
            "(it overflows on large scores), and not against the old maximum."
            if bool((running_max == _NEG_INF).all())
            else "subtract the maximum before exp: P = exp(scores - new_max). exp(scores) alone overflows on large "
            "scores, and acc would not be on the scale of running_sum.",
        ),
        (
            acc * rescale + torch.exp(scores - old_safe.unsqueeze(-1)) @ values,
            "compute this block's P = exp(scores - new_max) against the new maximum, not the old one.",
        ),
        (
            right / new_sum.unsqueeze(-1),
            "keep acc un-normalised: it is the sum of exp(s - new_max) v, and the division by running_sum happens "
            "once, after the last block (FlashAttention-2's order; the first FlashAttention normalised at every step).",
        ),
    ]


@fb.function_answer("your function tile_update(running_max, running_sum, acc, scores, values)", "a function")
def check_tile_update(update) -> Feedback:
    """Build it: ``update(running_max, running_sum, acc, scores, values) -> (new_max, new_sum, new_acc)``.

    One block of keys folded into R queries' running maximum ``m`` (R,), sum ``l`` (R,) and un-normalised output
    ``O`` (R, V): ``scores`` is (R, b), possibly -inf where masked, ``values`` is (b, V).
    ``O <- diag(exp(m_old - m_new)) O + P V`` with ``P = exp(scores - m_new)``, and ``l`` likewise. Checked on hidden
    cases of varied sizes: the first block, a block that raises the maximum, a fully masked block (first and later)
    and scores of 1e4. The reference is computed from the originals; the learner's function gets copies.
    """
    for case, (what, inputs) in enumerate(_tile_cases()):
        want_max, want_sum, want_acc = _reference_tile(*inputs.values())
        result, problem = fb.call_on_copies(update, inputs)
        if problem is not None:
            sizes = (*inputs["scores"].shape, inputs["values"].shape[1])
            return with_case(fb.raised_on(problem, sizes, worked_before=case > 0), what)
        if isinstance(result, tuple) and any(t is None for t in result):
            return fb.hint("replace the None placeholders: return new_max (R,), new_sum (R,) and new_acc (R, V).")
        if not is_tensors(result, 3):
            got = f" (got {fb.described(result)})" if isinstance(result, (tuple, list)) else ""
            return fb.hint(f"return three tensors: (new_max, new_sum, new_acc), of shapes (R,), (R,) and (R, V){got}.")
        new_max, new_sum, new_acc = (t.detach() for t in result)
        low = fb.half_precision(new_max, new_sum, new_acc, what="new_max, new_sum or new_acc")
        if low is not None:
            return low
        advice = "take every size from the inputs (reduce scores over dim=-1; probs @ values), write none in."
        results = ("new_max", new_max, want_max), ("new_sum", new_sum, want_sum), ("new_acc", new_acc, want_acc)
        shape = shape_hint(what, advice, *results)
        if shape is not None:
            return shape
        masked_case = "masked" in what
        if masked_case and bool(torch.isnan(torch.cat([new_max, new_sum, new_acc.flatten()])).any()):
            return fb.hint(_MASKED_NAN)
        if not float32_close(new_max, want_max):
            if masked_case and float32_close(new_max, torch.where(want_max == _NEG_INF, 0.0, want_max)):
                return fb.hint(
                    "new_max of a row whose scores are all -inf so far must stay -inf (no key seen yet): use the "
                    "stand-in 0 only inside exp, not as the maximum you return."
                )
            return fb.hint(
                "new_max is off: it is the larger of running_max and the block's largest score, per row (-inf for a "
                "row that has seen only -inf)."
            )
        if not float32_close(new_acc, want_acc):
            with torch.no_grad():
                mistakes = _tile_acc_mistakes(*inputs.values(), want_max, want_sum)
            formula = "new_acc = acc * exp(running_max - new_max)[:, None] + exp(scores - new_max[:, None]) @ values."
            off = f"new_acc is off on {what}: {formula}"
            return _named_mistake(new_acc, want_acc, mistakes, f"new_acc on {what}", off, rtol=1e-5, atol=1e-6)
        if not float32_close(new_sum, want_sum):
            hint = fb.first_hint(fb.not_finite(new_sum, f"new_sum on {what}"), fb.rounded(new_sum, want_sum))
            if hint is not None:
                return hint
            if float32_close(new_sum, inputs["running_sum"]):
                return fb.hint(
                    "new_sum is the old running_sum: update l too, with the same factor as the output, "
                    "l * exp(running_max - new_max) + the row sums of P; the output is divided by it at the end."
                )
            return fb.hint(
                f"new_sum is off on {what} while new_acc is right: new_sum = running_sum * exp(running_max - new_max) "
                "+ P.sum(dim=-1), with the same P and the same factor as the output."
            )
    return fb.ok(
        "the maximum, the sum and the output match on every hidden case, including fully masked blocks (no NaN) and "
        "scores of 1e4: this is the step inside flash_attention's inner loop."
    )
