"""Checks for the exercises of notebook 07 (attention in seq2seq)."""

from __future__ import annotations

import math

import torch

from ._feedback import (
    Feedback,
    _call_on_copies,
    _close,
    _function_answer,
    _hint,
    _not_finite,
    _number_answer,
    _ok,
    _rounded,
    _tensor_answer,
)

__all__ = ["check_alignment_position", "check_context", "check_memory_size", "check_bahdanau_step"]


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
                if got == length - t:
                    return _hint("off by one: positions count from 0, so the last digit is at L - 1.")
                if got == t:
                    return _hint("that is copying (a diagonal); reversing reads the source from its end.")
                return _hint(f"position({t}, {length}) gave {answer!r}; step {t} writes digit number {t} from the end.")
    return _ok(
        "L - 1 - t for the digit steps: the anti-diagonal. The <eos> step needs no particular source position: "
        "where a trained model reads there is its own choice."
    )


@_tensor_answer((2,), "a tensor of 2 numbers")
def check_context(context) -> Feedback:
    """The context for weights [0.1, 0.7, 0.2] over encoder states [[1, 0], [0, 2], [4, 4]]."""
    states = torch.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]], dtype=torch.float64)
    weights = torch.tensor([0.1, 0.7, 0.2], dtype=torch.float64)
    if _close(context, weights @ states):
        return _ok("0.1 * h_0 + 0.7 * h_1 + 0.2 * h_2 = [0.9, 2.2]: a weighted average of the encoder states.")
    hint = _not_finite(context, "your context")
    if hint is not None:
        return hint
    if _close(context, states.sum(0) / 3):
        return _hint("that is the plain average; weight each state by its attention weight.")
    return _hint("sum weight_j * h_j over the three positions, one coordinate at a time.")


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
    """Random cases the learner does not see: padding in every batch, a source of one position in some."""
    gen = torch.Generator().manual_seed(7070)
    for batch, length, size, hidden in _STEP_CASES:
        src_len = torch.randint(1, length + 1, (batch,), generator=gen)
        src_len[0] = length if length > 1 else 1  # one full source, the others padded
        if batch > 1:
            src_len[-1] = 1  # a source of one position: all its weight on position 0
        states = torch.randn(batch, length, size, generator=gen, dtype=torch.float64)
        states[torch.arange(length) >= src_len[:, None]] = 0.0  # the encoder's states are zero on padding
        yield (
            torch.randn(batch, size, generator=gen, dtype=torch.float64),  # query: the decoder's state (B, U)
            states,  # keys = values (B, S, U)
            src_len,  # (B,)
            torch.randn(hidden, size, generator=gen, dtype=torch.float64),  # W_q (A, U)
            torch.randn(hidden, size, generator=gen, dtype=torch.float64),  # W_k (A, U)
            torch.randn(hidden, generator=gen, dtype=torch.float64),  # w_v (A,)
        )


def _step_mistake(args, got_weights) -> str:
    """Name what is off in wrong weights, by comparing with the usual mistakes' weights."""
    query, states, src_len, W_q, W_k, w_v = args
    valid = torch.arange(states.shape[1]) < src_len[:, None]
    on_padding = got_weights[~valid]
    if on_padding.numel() and on_padding.abs().max() > 1e-6:
        if got_weights[valid].abs().max() < 1e-6:
            return "mask polarity reversed: the weight sits on padded positions; True (j < src_len) = may attend."
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
    if not _close(got_weights.sum(-1), torch.ones(len(src_len), dtype=got_weights.dtype)):
        return (
            "the weights of each example should sum to 1 over its valid positions: mask before the softmax, "
            "and take it over the source positions (dim=-1)."
        )
    return "the weights differ from w_v . tanh(W_q s + W_k h_j), soft-maxed over the valid source positions."


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
    for args in _step_cases():
        want_context, want_weights = _bahdanau_reference(*args)  # from the originals, before the learner's code runs
        batch, length, size = args[1].shape
        names = ("query", "states", "src_len", "W_q", "W_k", "w_v")
        result, problem = _call_on_copies(step, dict(zip(names, args, strict=True)))
        if problem is not None:
            if problem.message.startswith("your function raised"):
                return _hint(
                    f"on a case with B = {batch}, S = {length}, U = {size}, A = {args[3].shape[0]} "
                    f"{problem.message[len('your function ') :].rstrip('.')}. W_q is (A, U): W_q s is query @ W_q.T."
                )
            return problem
        if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(r, torch.Tensor) for r in result)):
            return _hint(f"return a tuple (context, weights) of two tensors, got {type(result).__name__}.")
        context, weights = (r.detach() for r in result)
        if tuple(weights.shape) != (batch, length):
            return _hint(f"weights should have shape (B, S) = {(batch, length)}, got {tuple(weights.shape)}.")
        if tuple(context.shape) != (batch, size):
            return _hint(f"context should have shape (B, U) = {(batch, size)}, got {tuple(context.shape)}.")
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
            return _hint(_step_mistake(args, weights.double()))
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
