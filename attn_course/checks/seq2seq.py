"""Checks for the exercises on attention in seq2seq: a context, what the decoder reads, a Bahdanau step (notebook 07).

Notebook 07's check on the reversal task's alignment is in ``checks.tasks``.
"""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_context", "check_memory_size", "check_bahdanau_step"]


def _context_problem(context) -> Feedback | None:
    """None, not a tensor, or a shape other than (2,): a hint; the two shapes of a sum taken wrongly are named."""
    named = {
        (3, 2): "those are the weighted states, one row per position; sum them over the positions (dim 0) to get the "
        "context.",
        (3,): "that is one number per position; the context has one number per coordinate of h: sum weight_j * h_j "
        "over the positions j.",
    }
    return fb.shape_problem(context, (2,), "a tensor of 2 numbers", named)


@fb.answer_check(_context_problem)
def check_context(context) -> Feedback:
    """The context for weights [0.1, 0.7, 0.2] over encoder states [[1, 0], [0, 2], [4, 4]]."""
    states = torch.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]], dtype=torch.float64)
    weights = torch.tensor([0.1, 0.7, 0.2], dtype=torch.float64)
    if not (context.is_floating_point() or context.is_complex()):
        return fb.hint(
            f"your context is an integer tensor ({context.dtype}); the context holds fractions: give floats "
            "(leave out .long() and .int())."
        )
    right = weights @ states
    if fb.close(context, right):
        return fb.ok("0.1 * h_0 + 0.7 * h_1 + 0.2 * h_2 = [0.9, 2.2]: a weighted average of the encoder states.")
    hint = fb.not_finite(context, "your context")
    if hint is not None:
        return hint
    if fb.close(context, states.sum(0) / 3):
        return fb.hint("that is the plain average; weight each state by its attention weight.")
    named = (
        (
            states[1],
            "that is h_1 alone, the state with the largest weight (hard attention); the context mixes all three",
        ),
        (states.sum(0), "that is the unweighted sum of the states; multiply each state by its weight first"),
        (right.flip(0), "the two coordinates are swapped: coordinate 0 of the context is sum_j weight_j * h_j[0]"),
        (weights.flip(0) @ states, "the weights are in reverse order: weight_j goes with h_j (0.1 with h_0)"),
        (right.round(), "close, but rounded to whole numbers: give the computed values, with their decimals"),
    )
    for wrong, hint in named:
        if fb.close(context, wrong):
            return fb.hint(f"{hint}: sum weight_j * h_j over the three positions.")
    rounded = fb.rounded(context, right)
    return (
        rounded
        if rounded is not None
        else fb.hint("sum weight_j * h_j over the three positions, one coordinate at a time.")
    )


@fb.number_answer("a count of numbers")
def check_memory_size(answer: float) -> Feedback:
    """How many numbers the attention decoder can read about a 12-digit source, with U = 64 hidden units."""
    if not math.isfinite(answer):
        return fb.hint(f"your count is {answer}; give a whole number of numbers.")
    if answer == 13 * 64:
        return fb.ok(
            "13 states (12 digits and <eos>) of 64 numbers: 832, against 64 for the decoder without attention."
        )
    if answer == 12 * 64:
        return fb.hint("the encoder also reads <eos>, so the source has 13 positions.")
    if answer == 64:
        return fb.hint(
            "64 is what the decoder without attention gets; with attention every encoder state stays reachable."
        )
    if answer == 13:
        return fb.hint(
            "13 is the number of encoder states (12 digits and <eos>), and each holds U = 64 numbers: count the "
            "encoder states times their size U."
        )
    if answer == 12:
        return fb.hint("12 counts the digits alone: the encoder also reads <eos> (13 states), each of U = 64 numbers.")
    if answer in (4 * 13 * 64, 8 * 13 * 64):
        return fb.hint("that looks like bytes (4 or 8 per number); the question counts numbers, not bytes.")
    if answer == 2 * 13 * 64:
        return fb.hint(
            "the keys and the values are the same states here, so count them once: count the encoder states (one per "
            "source position, <eos> included) times their size U."
        )
    return fb.hint("count the encoder states (one per source position, <eos> included) times their size U.")


_STEP_CASES = ((1, 1, 3, 2), (3, 5, 4, 6), (4, 7, 6, 3), (2, 9, 5, 8))  # hidden cases: (B, S, U, A)


def _bahdanau_reference(query, states, src_len, W_q, W_k, w_v):
    """Additive attention for one decoder step; padded positions j >= src_len get weight 0."""
    features = torch.tanh((query @ W_q.T)[:, None] + states @ W_k.T)  # (B, 1, A) + (B, S, A) -> (B, S, A)
    scores = features @ w_v  # (B, S, A) @ (A,) -> (B, S)
    valid = torch.arange(states.shape[1]) < src_len[:, None]  # (B, S), True = may attend
    weights = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=-1)  # (B, S)
    return (weights[:, :, None] * states).sum(1), weights  # (B, U), (B, S)


def _step_cases():
    """Random cases the learner does not see: padding in every batch, a source of one position in some. The course's
    encoder leaves zeros on padding; the last case does not (an encoder may leave anything there), so only src_len
    tells the padding."""
    gen = torch.Generator().manual_seed(7070)
    for case, (batch, length, size, hidden) in enumerate(_STEP_CASES):
        src_len = torch.randint(1, length + 1, (batch,), generator=gen)
        src_len[0] = length if length > 1 else 1  # one full source, the others padded
        if batch > 1:
            src_len[-1] = 1  # a source of one position: all its weight on position 0
        states = torch.randn(batch, length, size, generator=gen, dtype=torch.float64)
        if case < len(_STEP_CASES) - 1:
            states[torch.arange(length) >= src_len[:, None]] = 0.0  # the course's encoder: zero states on padding
        yield (
            torch.randn(batch, size, generator=gen, dtype=torch.float64),  # query: the decoder's state (B, U)
            states,  # keys = values (B, S, U)
            src_len,  # (B,)
            torch.randn(hidden, size, generator=gen, dtype=torch.float64),  # W_q (A, U)
            torch.randn(hidden, size, generator=gen, dtype=torch.float64),  # W_k (A, U)
            torch.randn(hidden, generator=gen, dtype=torch.float64),  # w_v (A,)
        )


def _step_mistake(args, got_weights, passed_before: bool) -> str:
    """Name what is off in wrong weights, by comparing with the usual mistakes' weights (``passed_before``: earlier
    hidden cases, with padding, passed)."""
    query, states, src_len, W_q, W_k, w_v = args
    valid = torch.arange(states.shape[1]) < src_len[:, None]
    on_padding = got_weights[~valid]
    if on_padding.numel() and on_padding.abs().max() > 1e-6:
        if got_weights[valid].abs().max() < 1e-6:
            return "mask polarity reversed: the weight sits on padded positions; True (j < src_len) = may attend."
        scores = torch.tanh((query @ W_q.T)[:, None] + states @ W_k.T) @ w_v  # (B, S)
        one_more = torch.arange(states.shape[1]) <= src_len[:, None]  # (B, S): position src_len let in
        if fb.close(got_weights, torch.softmax(scores.masked_fill(~one_more, float("-inf")), dim=-1)):
            return (
                "off by one in the mask: position src_len is already padding; valid is j < src_len, not j <= src_len."
            )
        if passed_before and bool((states[~valid] != 0).any()):
            return (
                "padded positions j >= src_len get weight in this hidden case, whose encoder states on padding are not "
                "zero (the earlier cases, with zeros there, passed): mask from src_len, not from the states' values "
                "(the encoder's states on padding need not be zero)."
            )
        return "padded positions j >= src_len get weight: mask them before the softmax (weight exactly 0)."
    scores = torch.tanh((query @ W_q.T)[:, None] + states @ W_k.T) @ w_v  # (B, S)
    masked = scores.masked_fill(~valid, float("-inf"))
    if fb.close(got_weights, torch.softmax((-scores).masked_fill(~valid, float("-inf")), dim=-1)):
        return "the sign of the scores is flipped: the softmax of e, not of -e."
    plain = ((query @ W_q.T)[:, None] + states @ W_k.T) @ w_v
    if fb.close(got_weights, torch.softmax(plain.masked_fill(~valid, float("-inf")), dim=-1)):
        return "no tanh: the score is w_v . tanh(W_q s + W_k h_j)."
    for scale in (W_q.shape[0], states.shape[-1]):
        if fb.close(got_weights, torch.softmax(masked / scale**0.5, dim=-1)):
            return "additive attention has no 1/sqrt scale: that belongs to the scaled dot product."
    swapped = torch.tanh((query @ W_k.T)[:, None] + states @ W_q.T) @ w_v
    if fb.close(got_weights, torch.softmax(swapped.masked_fill(~valid, float("-inf")), dim=-1)):
        return "W_q and W_k are swapped: W_q projects the query (the decoder's state), W_k the encoder's states."
    if fb.close(got_weights, torch.softmax(scores, dim=-1) * valid):
        return (
            "masked after the softmax: the weights of each example should sum to 1 over its valid positions; mask "
            "before the softmax (scores of padded positions to -inf), so that it shares all the weight among them."
        )
    by_batch = torch.softmax(masked, dim=0).nan_to_num(0.0)  # a position padded in every example: a column of -inf
    if torch.allclose(got_weights.nan_to_num(0.0), by_batch, rtol=1e-4, atol=1e-4):
        return (
            "the softmax ran over the batch (dim 0): the weights of each example should sum to 1 over its source "
            "positions; take it over dim=-1."
        )
    if not fb.close(got_weights.sum(-1), torch.ones(len(src_len), dtype=got_weights.dtype)):
        return (
            "the weights of each example should sum to 1 over its valid positions: mask before the softmax, "
            "and take it over the source positions (dim=-1)."
        )
    return "the weights differ from w_v . tanh(W_q s + W_k h_j), soft-maxed over the valid source positions."


def _step_raised(problem: Feedback, sizes: tuple[int, int, int, int], case: int) -> Feedback:
    """The hint for a step that raised (or changed an input): the case's sizes, and a size written in or W_q the
    wrong way round."""
    if not problem.message.startswith("your function raised"):
        return problem  # an input changed in place
    where = "on a case with B = {}, S = {}, U = {}, A = {} ".format(*sizes)
    written_in = fb.raised_on(problem, sizes, worked_before=case > 0)
    if written_in is not problem:  # a size written in, rather than a matrix the wrong way round
        return fb.hint(where + written_in.message[len("your function ") :])
    return fb.hint(
        where + f"{problem.message[len('your function ') :].rstrip('.')}. W_q is (A, U): W_q s is query @ W_q.T."
    )


def _step_shape_problem(context, weights, batch: int, length: int, size: int) -> Feedback | None:
    """A hint when context (B, U) or weights (B, S) has another shape, naming the usual causes; else None."""
    if (tuple(context.shape), tuple(weights.shape)) == ((batch, length), (batch, size)) and length != size:
        return fb.hint(
            f"return (context, weights) in that order: context (B, U) = {(batch, size)} first, then weights "
            f"(B, S) = {(batch, length)}; yours come the other way round."
        )
    expected = f"weights should have shape (B, S) = {(batch, length)}, got {tuple(weights.shape)}"
    if tuple(weights.shape) == (length, batch) and length != batch:
        return fb.hint(f"{expected}: transposed; one row per example, one column per source position.")
    if weights.dim() == 2 and weights.shape[0] == batch and weights.shape[1] != length:
        return fb.hint(
            f"{expected}: {weights.shape[1]} positions where this case's states have S = {length}. A size written in? "
            "Take S from states.shape[1]."
        )
    if tuple(weights.shape) != (batch, length):
        return fb.hint(f"{expected}.")
    if tuple(context.shape) != (batch, size):
        return fb.hint(f"context should have shape (B, U) = {(batch, size)}, got {tuple(context.shape)}.")
    return None


@fb.function_answer(
    "a function step(query, states, src_len, W_q, W_k, w_v)", "a function step(query, states, src_len, W_q, W_k, w_v)"
)
def check_bahdanau_step(step) -> Feedback:
    """``step(query, states, src_len, W_q, W_k, w_v) -> (context, weights)``: one step of Bahdanau attention.

    query (B, U) is the decoder's previous state, states (B, S, U) the encoder's states (keys and values),
    src_len (B,) the valid lengths, W_q and W_k (A, U), w_v (A,). Expected: weights (B, S) =
    softmax over j < src_len of ``w_v . tanh(W_q query + W_k states_j)`` (exactly 0 on padding), and
    context (B, U) = ``sum_j weights_j states_j``. Run on hidden random cases, float64.
    """
    for case, args in enumerate(_step_cases()):
        want_context, want_weights = _bahdanau_reference(*args)  # from the originals, before the learner's code runs
        batch, length, size = args[1].shape
        names = ("query", "states", "src_len", "W_q", "W_k", "w_v")
        result, problem = fb.call_on_copies(step, dict(zip(names, args, strict=True)))
        if problem is not None:
            return _step_raised(problem, (batch, length, size, args[3].shape[0]), case)
        if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(r, torch.Tensor) for r in result)):
            got = fb.described(result) if isinstance(result, (tuple, list)) else type(result).__name__
            return fb.hint(f"return a tuple (context, weights) of two tensors, got {got}.")
        context, weights = (r.detach() for r in result)
        hint = _step_shape_problem(context, weights, batch, length, size)
        if hint is not None:
            return hint
        for tensor, what in ((weights, "your weights"), (context, "your context")):
            hint = fb.not_finite(tensor, what)
            if hint is not None:
                return fb.hint(
                    hint.message + " Here: is the mask's polarity right (j < src_len may attend)? A row whose every "
                    "position is masked gives NaN."
                )
        if not fb.close(weights, want_weights):
            rounded = fb.rounded(weights, want_weights)
            if rounded is not None:
                return rounded
            return fb.hint(_step_mistake(args, weights.double(), passed_before=case > 0))
        if not fb.close(context, want_context):
            if fb.close(context, args[1].mean(1)):
                return fb.hint("the context is the plain average; weight each encoder state by its attention weight.")
            rounded = fb.rounded(context, want_context)
            if rounded is not None:
                return rounded
            return fb.hint("the weights are right; the context is sum_j weights_j * states_j, shape (B, U).")
    return fb.ok(
        f"weights and context match the reference on {len(_STEP_CASES)} hidden cases, padding included: "
        "Bahdanau attention for one decoder step."
    )
