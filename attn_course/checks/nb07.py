"""Checks for the exercises of notebook 07 (attention in seq2seq)."""

from __future__ import annotations

import math

import torch

from ._feedback import (
    Feedback,
    _answer_check,
    _call_on_copies,
    _close,
    _described,
    _function_answer,
    _hint,
    _not_finite,
    _number_answer,
    _ok,
    _raised_on,
    _rounded,
    _tensor_problem,
)

__all__ = ["check_alignment_position", "check_context", "check_memory_size", "check_bahdanau_step"]

# ----------------------------------------------------------------------------------------------------------------------
# Two helpers that the build-it checks of notebooks 07-12 share (a shared home would be _feedback)
# ----------------------------------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------------------------------
# Notebook 07's checks
# ----------------------------------------------------------------------------------------------------------------------


def _one_position(got) -> float | Feedback | None:
    """``got`` as one number, a hint when it is several numbers (a list, an array, a tensor of more than one entry),
    or None when it is not a number at all (the caller names what it gave)."""
    if isinstance(got, (bool, str)):
        return None
    size = getattr(got, "size", None)
    count = got.numel() if isinstance(got, torch.Tensor) else (size if isinstance(size, int) else None)
    if isinstance(got, (list, tuple)):
        kind = type(got).__name__
        return _hint(f"position(t, L) should return one number, the source position of step t, not a {kind}.")
    if count is not None and count != 1:
        return _hint(
            f"position(t, L) should return one number, the source position of step t; got a {type(got).__name__} of "
            f"{count} numbers. It is called with one t at a time."
        )
    try:
        return float(got.item() if hasattr(got, "item") else got)
    except (TypeError, ValueError, RuntimeError):
        return None


def _position_mistake(position, t: int, length: int, answer, got: float | None) -> Feedback:
    """The hint for a wrong ``position(t, length)``: ``answer`` as returned, ``got`` as a number (or None)."""
    call = f"position({t}, {length}) gave {answer!r}"
    if answer is None:
        return _hint(f"{call}: your function returned None; return the position.")
    if isinstance(answer, (str, bytes)):
        return _hint(f"{call}, a {type(answer).__name__}: return a number, not text.")
    if got == length - t:
        return _hint("off by one: positions count from 0, so the last digit is at L - 1.")
    if got == t:
        return _hint("that is copying (a diagonal); reversing reads the source from its end.")
    if got is not None and got < 0:
        return _hint(
            f"{call}: a negative index counts from the end, as in a Python list, but this source ends with <eos> "
            "(position L); give the position counted from 0."
        )
    if got is not None and math.isfinite(got) and _ignores_length(position, t, got):
        return _hint(
            f"{call}: your function gives {got + t:g} - t whatever L is, a length written in; use the L argument, "
            "L - 1 - t."
        )
    return _hint(f"{call}; step {t} writes digit number {t} from the end.")


def _ignores_length(position, t: int, got: float) -> bool:
    """Whether ``position(s, n)`` is ``got + t - s`` for other lengths n too: a length written in."""
    try:
        return all(float(position(s, n)) == got + t - s for n in (3, 7, 12) for s in range(3))
    except Exception:  # the learner's code: any failure means "no"
        return False


@_function_answer("a function position(t, L) that returns a source position", "a function position(t, L)")
def check_alignment_position(position) -> Feedback:
    """``position(t, L)``: the source position that digit step ``t`` should attend to when reversing ``L`` digits.

    The source is ``L`` digits then ``<eos>`` (positions 0 .. L); the output is the ``L`` reversed digits
    (steps 0 .. L - 1) then ``<eos>``. Only the digit steps are checked: no source position holds what the
    ``<eos>`` step needs, so no position is the right one there.
    """
    for length in range(1, 13):
        for t in range(length):
            want = length - 1 - t
            try:
                answer = position(t, length)
            except Exception as exc:  # the learner's code: report what it raised
                return _hint(f"position({t}, {length}) raised {type(exc).__name__}: {exc}.")
            got = _one_position(answer)
            if isinstance(got, Feedback):
                return got
            if got is None or not math.isfinite(got) or got != want:
                return _position_mistake(position, t, length, answer, got)
    return _ok(
        "L - 1 - t for the digit steps: the anti-diagonal. The <eos> step needs no particular source position: "
        "where a trained model reads there is its own choice."
    )


def _context_problem(context) -> Feedback | None:
    """None, not a tensor, or a shape other than (2,): a hint; the two shapes of a sum taken wrongly are named."""
    if isinstance(context, torch.Tensor) and tuple(context.shape) == (3, 2):
        return _hint(
            "expected shape (2,), got (3, 2): those are the weighted states, one row per position; sum them over the "
            "positions (dim 0) to get the context."
        )
    if isinstance(context, torch.Tensor) and tuple(context.shape) == (3,):
        return _hint(
            "expected shape (2,), got (3,): that is one number per position; the context has one number per "
            "coordinate of h: sum weight_j * h_j over the positions j."
        )
    return _tensor_problem(context, (2,), "a tensor of 2 numbers")


@_answer_check(_context_problem)
def check_context(context) -> Feedback:
    """The context for weights [0.1, 0.7, 0.2] over encoder states [[1, 0], [0, 2], [4, 4]]."""
    states = torch.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]], dtype=torch.float64)
    weights = torch.tensor([0.1, 0.7, 0.2], dtype=torch.float64)
    if not (context.is_floating_point() or context.is_complex()):
        return _hint(
            f"your context is an integer tensor ({context.dtype}); the context holds fractions: give floats "
            "(leave out .long() and .int())."
        )
    right = weights @ states
    if _close(context, right):
        return _ok("0.1 * h_0 + 0.7 * h_1 + 0.2 * h_2 = [0.9, 2.2]: a weighted average of the encoder states.")
    hint = _not_finite(context, "your context")
    if hint is not None:
        return hint
    if _close(context, states.sum(0) / 3):
        return _hint("that is the plain average; weight each state by its attention weight.")
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
        if _close(context, wrong):
            return _hint(f"{hint}: sum weight_j * h_j over the three positions.")
    rounded = _rounded(context, right)
    return (
        rounded
        if rounded is not None
        else _hint("sum weight_j * h_j over the three positions, one coordinate at a time.")
    )


@_number_answer("a count of numbers")
def check_memory_size(answer: float) -> Feedback:
    """How many numbers the attention decoder can read about a 12-digit source, with U = 64 hidden units."""
    if not math.isfinite(answer):
        return _hint(f"your count is {answer}; give a whole number of numbers.")
    if answer == 13 * 64:
        return _ok("13 states (12 digits and <eos>) of 64 numbers: 832, against 64 for the decoder without attention.")
    if answer == 12 * 64:
        return _hint("the encoder also reads <eos>, so the source has 13 positions.")
    if answer == 64:
        return _hint(
            "64 is what the decoder without attention gets; with attention every encoder state stays reachable."
        )
    if answer == 13:
        return _hint(
            "13 is the number of encoder states (12 digits and <eos>), and each holds U = 64 numbers: count the "
            "encoder states times their size U."
        )
    if answer == 12:
        return _hint("12 counts the digits alone: the encoder also reads <eos> (13 states), each of U = 64 numbers.")
    if answer in (4 * 13 * 64, 8 * 13 * 64):
        return _hint("that looks like bytes (4 or 8 per number); the question counts numbers, not bytes.")
    if answer == 2 * 13 * 64:
        return _hint(
            "the keys and the values are the same states here, so count them once: count the encoder states (one per "
            "source position, <eos> included) times their size U."
        )
    return _hint("count the encoder states (one per source position, <eos> included) times their size U.")


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
        if _close(got_weights, torch.softmax(scores.masked_fill(~one_more, float("-inf")), dim=-1)):
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
    if _close(got_weights, torch.softmax((-scores).masked_fill(~valid, float("-inf")), dim=-1)):
        return "the sign of the scores is flipped: the softmax of e, not of -e."
    plain = ((query @ W_q.T)[:, None] + states @ W_k.T) @ w_v
    if _close(got_weights, torch.softmax(plain.masked_fill(~valid, float("-inf")), dim=-1)):
        return "no tanh: the score is w_v . tanh(W_q s + W_k h_j)."
    for scale in (W_q.shape[0], states.shape[-1]):
        if _close(got_weights, torch.softmax(masked / scale**0.5, dim=-1)):
            return "additive attention has no 1/sqrt scale: that belongs to the scaled dot product."
    swapped = torch.tanh((query @ W_k.T)[:, None] + states @ W_q.T) @ w_v
    if _close(got_weights, torch.softmax(swapped.masked_fill(~valid, float("-inf")), dim=-1)):
        return "W_q and W_k are swapped: W_q projects the query (the decoder's state), W_k the encoder's states."
    if _close(got_weights, torch.softmax(scores, dim=-1) * valid):
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
    if not _close(got_weights.sum(-1), torch.ones(len(src_len), dtype=got_weights.dtype)):
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
    written_in = _raised_on(problem, sizes, worked_before=case > 0)
    if written_in is not problem:  # a size written in, rather than a matrix the wrong way round
        return _hint(where + written_in.message[len("your function ") :])
    return _hint(
        where + f"{problem.message[len('your function ') :].rstrip('.')}. W_q is (A, U): W_q s is query @ W_q.T."
    )


def _step_shape_problem(context, weights, batch: int, length: int, size: int) -> Feedback | None:
    """A hint when context (B, U) or weights (B, S) has another shape, naming the usual causes; else None."""
    if (tuple(context.shape), tuple(weights.shape)) == ((batch, length), (batch, size)) and length != size:
        return _hint(
            f"return (context, weights) in that order: context (B, U) = {(batch, size)} first, then weights "
            f"(B, S) = {(batch, length)}; yours come the other way round."
        )
    expected = f"weights should have shape (B, S) = {(batch, length)}, got {tuple(weights.shape)}"
    if tuple(weights.shape) == (length, batch) and length != batch:
        return _hint(f"{expected}: transposed; one row per example, one column per source position.")
    if weights.dim() == 2 and weights.shape[0] == batch and weights.shape[1] != length:
        return _hint(
            f"{expected}: {weights.shape[1]} positions where this case's states have S = {length}. A size written in? "
            "Take S from states.shape[1]."
        )
    if tuple(weights.shape) != (batch, length):
        return _hint(f"{expected}.")
    if tuple(context.shape) != (batch, size):
        return _hint(f"context should have shape (B, U) = {(batch, size)}, got {tuple(context.shape)}.")
    return None


@_function_answer(
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
        result, problem = _call_on_copies(step, dict(zip(names, args, strict=True)))
        if problem is not None:
            return _step_raised(problem, (batch, length, size, args[3].shape[0]), case)
        if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(r, torch.Tensor) for r in result)):
            got = _described(result) if isinstance(result, (tuple, list)) else type(result).__name__
            return _hint(f"return a tuple (context, weights) of two tensors, got {got}.")
        context, weights = (r.detach() for r in result)
        hint = _step_shape_problem(context, weights, batch, length, size)
        if hint is not None:
            return hint
        for tensor, what in ((weights, "your weights"), (context, "your context")):
            hint = _not_finite(tensor, what)
            if hint is not None:
                return _hint(
                    hint.message + " Here: is the mask's polarity right (j < src_len may attend)? A row whose every "
                    "position is masked gives NaN."
                )
        if not _close(weights, want_weights):
            rounded = _rounded(weights, want_weights)
            if rounded is not None:
                return rounded
            return _hint(_step_mistake(args, weights.double(), passed_before=case > 0))
        if not _close(context, want_context):
            if _close(context, args[1].mean(1)):
                return _hint("the context is the plain average; weight each encoder state by its attention weight.")
            rounded = _rounded(context, want_context)
            if rounded is not None:
                return rounded
            return _hint("the weights are right; the context is sum_j weights_j * states_j, shape (B, U).")
    return _ok(
        f"weights and context match the reference on {len(_STEP_CASES)} hidden cases, padding included: "
        "Bahdanau attention for one decoder step."
    )
