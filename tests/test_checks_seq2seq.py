"""attn_course.checks.seq2seq, the checks of notebook 07 on attention in seq2seq (a context, what the decoder
reads, a Bahdanau step): "Correct" for a right answer, a hint for each mistake."""

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import (
    AdditiveAttention,
    RNNSeq2Seq,
)
from attn_course.checks import (
    check_bahdanau_step,
    check_context,
    check_memory_size,
)
from attn_course.tasks import make_batch

# ----------------------------------------------------------------------------------------------
# check_bahdanau_step: one decoder step of additive attention, padding masked, on hidden cases
# ----------------------------------------------------------------------------------------------


def _bahdanau(query, states, src_len, W_q, W_k, w_v, *, tanh=True, scale=1.0, mask="before", dim=-1):
    features = (query @ W_q.T)[:, None] + states @ W_k.T  # (B, S, A)
    scores = (torch.tanh(features) if tanh else features) @ w_v / scale  # (B, S)
    valid = torch.arange(states.shape[1]) < src_len[:, None]
    if mask == "before":
        weights = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=dim)
    elif mask == "reversed":
        weights = torch.softmax(scores.masked_fill(valid, float("-inf")), dim=dim)
    elif mask == "after":
        weights = torch.softmax(scores, dim=dim) * valid
    else:
        weights = torch.softmax(scores, dim=dim)
    return (weights[:, :, None] * states).sum(1), weights


def _step(**kwargs):
    return lambda *args: _bahdanau(*args, **kwargs)


def test_check_bahdanau_step_reference_is_the_course_layer():
    """The hidden reference agrees with ac.AdditiveAttention (the layer notebook 07's decoder uses)."""
    from attn_course.checks.seq2seq import _bahdanau_reference, _step_cases

    for query, states, src_len, W_q, W_k, w_v in _step_cases():
        layer = AdditiveAttention(states.shape[-1], query.shape[-1], W_q.shape[0]).double()
        with torch.no_grad():
            layer.W_q.weight.copy_(W_q), layer.W_k.weight.copy_(W_k), layer.w_v.weight.copy_(w_v[None])
            want = layer(query[:, None], states, states, src_len)[:, 0]
        context, weights = _bahdanau_reference(query, states, src_len, W_q, W_k, w_v)
        torch.testing.assert_close(context, want)
        torch.testing.assert_close(weights, layer.attention_weights[:, 0])


def _right_with_bmm(query, states, src_len, W_q, W_k, w_v):
    scores = torch.tanh(query[:, None] @ W_q.T + states @ W_k.T) @ w_v  # (B, S)
    scores = scores.masked_fill(torch.arange(states.shape[1]) >= src_len[:, None], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch.bmm(weights[:, None], states)[:, 0], weights


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_step(), id="broadcast"),
        pytest.param(_right_with_bmm, id="bmm"),
    ],
)
def test_check_bahdanau_step_right_answer(answer):
    assert_correct(check_bahdanau_step(answer), "hidden cases")


def _in_place(query, states, src_len, W_q, W_k, w_v):
    query.mul_(2.0)
    return _bahdanau(query, states, src_len, W_q, W_k, w_v)


def _masks_src_len_in_place(query, states, src_len, W_q, W_k, w_v):
    src_len.fill_(states.shape[1])  # every position valid: the padding gets weight
    return _bahdanau(query, states, src_len, W_q, W_k, w_v)


def _zeroes_w_v_in_place(query, states, src_len, W_q, W_k, w_v):
    w_v.zero_()  # every score 0: uniform weights over the valid positions
    return _bahdanau(query, states, src_len, W_q, W_k, w_v)


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "step(query, states"], id="none"),
        pytest.param(3, ["expected a function", "got int"], id="int"),
        pytest.param(lambda *a: a[1].mean(1), ["return a tuple (context, weights)", "Tensor"], id="one-tensor"),
        pytest.param(
            lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wq.T, Wk.T, wv),
            ["raised RuntimeError", "W_q.T"],
            id="transposed",
        ),
        pytest.param(_step(mask="none"), ["padded positions", "before the softmax"], id="no-mask"),
        pytest.param(_step(mask="reversed"), ["polarity"], id="polarity"),
        pytest.param(_step(mask="after"), ["sum to 1", "mask before the softmax"], id="masked-after-softmax"),
        pytest.param(_step(dim=0), ["sum to 1", "dim=-1"], id="softmax-over-batch"),
        pytest.param(_step(tanh=False), ["no tanh"], id="no-tanh"),
        pytest.param(
            lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wq, Wk, wv, scale=Wq.shape[0] ** 0.5),
            ["no 1/sqrt scale"],
            id="scaled",
        ),
        pytest.param(lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wk, Wq, wv), ["swapped"], id="swapped"),
        pytest.param(lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wq, Wk, -wv), ["sign of the scores"], id="sign"),
        pytest.param(lambda *a: (a[1].mean(1), _bahdanau(*a)[1]), ["plain average"], id="plain-average"),
        pytest.param(
            lambda *a: (2 * _bahdanau(*a)[0], _bahdanau(*a)[1]),
            ["the weights are right", "sum_j weights_j"],
            id="wrong-context",
        ),
        pytest.param(
            lambda *a: (_bahdanau(*a)[0], _bahdanau(*a)[1][:, None]),
            ["weights should have shape (B, S)"],
            id="weights-3d",
        ),
        pytest.param(
            lambda *a: (_bahdanau(*a)[0][None], _bahdanau(*a)[1]), ["context should have shape (B, U)"], id="context-3d"
        ),
        pytest.param(_in_place, ["changed its input query in place"], id="in-place"),
        pytest.param(_masks_src_len_in_place, ["changed its input src_len in place"], id="src-len-in-place"),
        pytest.param(_zeroes_w_v_in_place, ["changed its input w_v in place"], id="w-v-zeroed"),
        pytest.param(
            lambda *a: (_bahdanau(*a)[0], _bahdanau(*a)[1].round(decimals=3)),
            ["close", "rounded to 3 decimals"],
            id="weights-rounded",
        ),
        pytest.param(
            lambda *a: (_bahdanau(*a)[0].round(decimals=2), _bahdanau(*a)[1]),
            ["close", "rounded to 2 decimals"],
            id="context-rounded",
        ),
        pytest.param(
            lambda *a: (_bahdanau(*a)[0], torch.full_like(_bahdanau(*a)[1], float("nan"))),
            ["your weights holds NaN", "polarity"],
            id="nan-weights",
        ),
        pytest.param(
            lambda *a: (torch.full_like(_bahdanau(*a)[0], float("inf")), _bahdanau(*a)[1]),
            ["your context holds infinity"],
            id="inf-context",
        ),
    ],
)
def test_check_bahdanau_step_hints(answer, words):
    assert_hint(check_bahdanau_step(answer), *words)


def test_check_bahdanau_step_reference_comes_from_the_untouched_inputs():
    """A function that zeroes w_v in place and returns uniform weights would match a reference computed afterwards
    from the changed inputs; the check computes it first and names the change."""
    feedback = check_bahdanau_step(_zeroes_w_v_in_place)
    assert_hint(feedback, "w_v", "in place")
    assert "match the reference" not in feedback.message


def test_check_bahdanau_step_hidden_sizes_vary():
    """Different U and A from case to case, not all perfect squares: a hard-coded size or sqrt fails somewhere."""
    from attn_course.checks.seq2seq import _step_cases

    sizes = [(states.shape[-1], W_q.shape[0]) for _, states, _, W_q, _, _ in _step_cases()]
    assert len({u for u, _ in sizes}) == len(sizes) and len({a for _, a in sizes}) > 2
    assert any(int(u**0.5) ** 2 != u for u, _ in sizes)


# ----------------------------------------------------------------------------------------------
# check_context: weights [0.1, 0.7, 0.2] over encoder states [[1, 0], [0, 2], [4, 4]] -> [0.9, 2.2]
# ----------------------------------------------------------------------------------------------

CONTEXT_STATES = torch.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]])
CONTEXT_WEIGHTS = torch.tensor([0.1, 0.7, 0.2])


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(torch.tensor([0.9, 2.2]), id="float32"),
        pytest.param(torch.tensor([0.9, 2.2], dtype=torch.float64), id="float64"),
        pytest.param(CONTEXT_WEIGHTS @ CONTEXT_STATES, id="matmul"),
        pytest.param((CONTEXT_WEIGHTS[:, None] * CONTEXT_STATES).sum(0), id="broadcast-sum"),
        pytest.param(torch.tensor([0.9, 2.2], requires_grad=True), id="requires-grad"),
    ],
)
def test_check_context_right_answer(answer):
    assert_correct(check_context(answer), "[0.9, 2.2]", "weighted average")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "a tensor of 2 numbers"], id="none"),
        pytest.param([0.9, 2.2], ["torch.Tensor", "list"], id="list"),
        pytest.param(np.array([0.9, 2.2]), ["torch.Tensor", "ndarray"], id="numpy"),
        pytest.param(torch.tensor([0.9, 2.2, 0.0]), ["expected shape (2,)", "got (3,)"], id="3-numbers"),
        pytest.param(torch.tensor([[0.9, 2.2]]), ["expected shape (2,)", "got (1, 2)"], id="2-D"),
        pytest.param(CONTEXT_STATES.mean(0), ["plain average", "attention weight"], id="plain-average"),
        pytest.param(CONTEXT_STATES[1], ["sum weight_j * h_j"], id="argmax-state"),
        pytest.param(CONTEXT_STATES.sum(0), ["sum weight_j * h_j"], id="sum"),
        pytest.param(torch.tensor([2.2, 0.9]), ["sum weight_j * h_j"], id="swapped"),
        pytest.param(torch.tensor([float("nan"), 2.2]), ["your context holds NaN"], id="nan"),
    ],
)
def test_check_context_hints(answer, words):
    assert_hint(check_context(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_memory_size: a 12-digit source has 13 encoder states (with <eos>) of U = 64 numbers: 832
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(832, id="int"),
        pytest.param(832.0, id="float"),
        pytest.param(torch.tensor(832), id="tensor"),
        pytest.param(np.int64(832), id="numpy"),
        pytest.param(13 * 64, id="product"),
    ],
)
def test_check_memory_size_right_answer(answer):
    assert_correct(check_memory_size(answer), "832", "13 states")


def test_check_memory_size_agrees_with_the_encoder():
    """The attention decoder reads the encoder's states: (1, 13, 64) for one 12-digit source."""
    batch = make_batch(["123456789012"])
    model = RNNSeq2Seq(attention=True, embed_size=8, num_hiddens=64)
    with torch.no_grad():
        states, _ = model.encoder(batch.src, batch.src_len)
    assert states.shape == (1, 13, 64)
    assert_correct(check_memory_size(states.numel()))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "a count of numbers"], id="none"),
        pytest.param("lots", ["one number", "str"], id="str"),
        pytest.param([832], ["one number", "list"], id="list"),
        pytest.param(12 * 64, ["also reads <eos>", "13 positions"], id="without-eos"),
        pytest.param(64, ["64 is what the decoder without attention gets"], id="fixed-context"),
        pytest.param(13, ["count the encoder states", "times their size U"], id="states-only"),
        pytest.param(2 * 832, ["count the encoder states"], id="double"),
        pytest.param(0, ["count the encoder states"], id="zero"),
        pytest.param(float("nan"), ["your count is nan", "whole number"], id="nan"),
    ],
)
def test_check_memory_size_hints(answer, words):
    assert_hint(check_memory_size(answer), *words)


def test_check_bahdanau_step_finds_the_padding_from_src_len_alone():
    """One hidden case leaves non-zero states on its padding, so masking the zero states instead of using src_len
    fails there (the course's encoder leaves zeros, but an encoder need not)."""
    from attn_course.checks.seq2seq import _step_cases

    padded = []
    for _, states, src_len, _, _, _ in _step_cases():
        on_padding = states[torch.arange(states.shape[1]) >= src_len[:, None]]
        padded.append(bool(on_padding.numel()) and bool((on_padding != 0).any()))
    assert any(padded) and not all(padded)
    assert_hint(check_bahdanau_step(_step_masking_zero_states), "padded positions", "src_len")


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


def _step_with_five_positions(query, states, src_len, W_q, W_k, w_v):
    """Right for the visible example's S = 5 only: the mask's length written in."""
    features = torch.tanh((query @ W_q.T)[:, None] + states @ W_k.T)
    scores = features @ w_v
    valid = torch.arange(5) < src_len[:, None]  # (B, 5): S written in
    weights = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=-1)
    return (weights[:, :, None] * states).sum(1), weights


def _step_masking_zero_states(query, states, src_len, W_q, W_k, w_v):
    """src_len ignored: padding found as the states that are all zero (true of some encoders, not a rule)."""
    scores = torch.tanh((query @ W_q.T)[:, None] + states @ W_k.T) @ w_v
    weights = torch.softmax(scores.masked_fill((states == 0).all(-1), float("-inf")), dim=-1)
    return (weights[:, :, None] * states).sum(1), weights


def _step_mask_one_more(query, states, src_len, W_q, W_k, w_v):
    scores = torch.tanh((query @ W_q.T)[:, None] + states @ W_k.T) @ w_v
    valid = torch.arange(states.shape[1]) <= src_len[:, None]  # off by one: position src_len let in
    weights = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=-1)
    return (weights[:, :, None] * states).sum(1), weights


def _step_src_len_not_lined_up(query, states, src_len, W_q, W_k, w_v):
    scores = torch.tanh((query @ W_q.T)[:, None] + states @ W_k.T) @ w_v
    valid = torch.arange(states.shape[1]) < src_len  # (S,) < (B,): lines up only when B = 1 (or B = S)
    weights = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=-1)
    return (weights[:, :, None] * states).sum(1), weights


def _step_weights_first(*args):
    context, weights = _bahdanau(*args)
    return weights, context


def _step_with_scores(*args):
    context, weights = _bahdanau(*args)
    return context, weights, weights.log()


def _step_weights_transposed(*args):
    context, weights = _bahdanau(*args)
    return context, weights.T


ATTACKS = {
    "check_context": [
        attack("left as None", "replace None", None),
        attack("a list", "list", [0.9, 2.2]),
        attack("a NumPy array", "ndarray", np.array([0.9, 2.2])),
        attack("a string", "str", "[0.9, 2.2]"),
        attack("the plain average of the states", "plain average", CONTEXT_STATES.mean(0)),
        attack(
            "the weighted states, not summed", "sum them over the positions", CONTEXT_WEIGHTS[:, None] * CONTEXT_STATES
        ),
        attack(
            "summed over the coordinates instead",
            "one number per position",
            (CONTEXT_WEIGHTS[:, None] * CONTEXT_STATES).sum(1),
        ),
        attack("hard attention: the state of the largest weight", "largest weight", CONTEXT_STATES[1]),
        attack("the states summed without weights", "unweighted", CONTEXT_STATES.sum(0)),
        attack("the two coordinates swapped", "swapped", torch.tensor([2.2, 0.9])),
        attack("the weights in reverse order", "reverse order", CONTEXT_WEIGHTS.flip(0) @ CONTEXT_STATES),
        attack("an integer tensor", "integer", torch.tensor([0.9, 2.2]).long()),
        attack("rounded to whole numbers", "rounded", torch.tensor([1.0, 2.0])),
    ],
    "check_memory_size": [
        attack("left as None", "replace None", None),
        attack("a string", "str", "832"),
        attack("forgot <eos>: 12 x 64", "13 positions", 12 * 64),
        attack("the fixed context of the decoder without attention", "without attention", 64),
        attack("the number of states, not of numbers", "each holds U = 64", 13),
        attack("the digits alone", "the digits alone", 12),
        attack("bytes of float32 instead of numbers", "bytes", 4 * 832),
        attack("keys and values counted twice", "same states", 2 * 832),
        attack("a list", "list", [832]),
        attack("the shape instead of the count", "tuple", (13, 64)),
        attack("NaN", "nan", float("nan")),
    ],
    "check_bahdanau_step": [
        attack("left as None", "replace None", None),
        attack("scales the query in place", "changed its input query in place", _in_place),
        attack("mask polarity reversed", "polarity", _step(mask="reversed")),
        attack("no mask", ("padded positions", "mask them before the softmax"), _step(mask="none")),
        attack("masked after the softmax", "masked after the softmax", _step(mask="after")),
        attack("softmax over the batch axis", ("batch (dim 0)", "dim=-1"), _step(dim=0)),
        attack("no tanh", "no tanh", _step(tanh=False)),
        attack(
            "a scaled dot product's 1/sqrt(A)",
            "no 1/sqrt scale",
            lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wq, Wk, wv, scale=Wq.shape[0] ** 0.5),
        ),
        attack("W_q and W_k swapped", "swapped", lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wk, Wq, wv)),
        attack("scores negated", "sign of the scores", lambda q, h, n, Wq, Wk, wv: _bahdanau(q, h, n, Wq, Wk, -wv)),
        attack("the visible example's S = 5 written in", ("written in", "states.shape[1]"), _step_with_five_positions),
        attack("returns (weights, context)", "in that order", _step_weights_first),
        attack("mask j <= src_len", "off by one", _step_mask_one_more),
        attack("src_len not lined up with the positions", "line the axes up", _step_src_len_not_lined_up),
        attack("src_len ignored, padding found by zero states", "need not be zero", _step_masking_zero_states),
        attack("returns three things", "a tuple of 3", _step_with_scores),
        attack("weights transposed to (S, B)", "transposed", _step_weights_transposed),
        attack(
            "weights rounded",
            "rounded to 3 decimals",
            lambda *a: (_bahdanau(*a)[0], _bahdanau(*a)[1].round(decimals=3)),
        ),
    ],
}
