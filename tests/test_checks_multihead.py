"""attn_course.checks.multihead, the checks of notebook 06 on multi-head attention:
"Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import as_int_float_tensor_numpy, assert_correct, assert_hint, attack

from attn_course import checks
from attn_course.checks import (
    check_parameter_count,
    check_split_shape,
)

# ----------------------------------------------------------------------------------------------
# check_split_shape: split_heads of x (B, T, H * dh) = (2, 5, 8) into H = 4 heads
# ----------------------------------------------------------------------------------------------


def _split_by_reshape():
    x = torch.zeros(2, 5, 8)  # (B, T, H * dh)
    return x.reshape(2, 5, 4, 2).transpose(1, 2).reshape(2 * 4, 5, 2).shape  # (B, H, T, dh) -> (B * H, T, dh)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param((8, 5, 2), id="tuple"),
        pytest.param([8, 5, 2], id="list"),
        pytest.param(torch.Size([8, 5, 2]), id="size"),
        pytest.param(_split_by_reshape(), id="reshape"),
        pytest.param(np.array([8, 5, 2]), id="numpy"),
        pytest.param(torch.tensor([8, 5, 2]), id="tensor"),
    ],
)
def test_check_split_shape_right_answer(answer):
    assert_correct(check_split_shape(answer), "2 * 4 = 8", "8 / 4 = 2")


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "(1, 2, 3)"], id="none"),
        pytest.param("8, 5, 2", ["expected a shape", "str"], id="str"),
        pytest.param("852", ["expected a shape", "str"], id="digits"),
        pytest.param(8, ["expected a shape", "int"], id="int"),
        pytest.param((8.0, 5.0, 2.0), ["whole numbers", "got float in (8.0, 5.0, 2.0)"], id="floats"),
        pytest.param((8, 5, 2.0), ["whole numbers", "got float in (8, 5, 2.0)"], id="one-float"),
        pytest.param(torch.tensor([8.0, 5.0, 2.0]), ["whole numbers", "Tensor"], id="float-tensor"),
        pytest.param(torch.tensor(8), ["expected a shape", "Tensor"], id="0-d-tensor"),
        pytest.param(
            (2, 4, 5, 2), ["before the head axis is folded into the batch axis", "(B * H, T, dh)"], id="unfolded"
        ),
        pytest.param((8, 5, 8), ["its share of the features", "dh = 8 / 4"], id="full-width-heads"),
        pytest.param((2, 5, 4, 2), ["after the first reshape"], id="first-reshape"),
        pytest.param((2, 5, 8), ["(B, T, H * dh) -> (B * H, T, dh)", "B = 2, T = 5, H = 4"], id="input-shape"),
        pytest.param((5, 8, 2), ["(B, T, H * dh) -> (B * H, T, dh)"], id="swapped"),
        pytest.param((8, 2, 5), ["(B, T, H * dh) -> (B * H, T, dh)"], id="t-and-dh-swapped"),
    ],
)
def test_check_split_shape_hints(answer, words):
    assert_hint(check_split_shape(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_parameter_count: MultiHeadAttention(num_hiddens=64, num_heads=8) without biases
# ----------------------------------------------------------------------------------------------

MHA_PARAMS = 4 * 64 * 64  # W_q, W_k, W_v, W_o, each 64 x 64, whatever the number of heads


@pytest.mark.parametrize(
    "answer",
    [
        *as_int_float_tensor_numpy(MHA_PARAMS),
        pytest.param(sum([64 * 64] * 4), id="sum"),
    ],
)
def test_check_parameter_count_right_answer(answer):
    assert_correct(check_parameter_count(answer), "16384", "heads split the work")


def test_check_parameter_count_agrees_with_torch_multihead_attention():
    ref = torch.nn.MultiheadAttention(64, 8, bias=False, device="meta")  # meta: no memory, no random numbers
    count = sum(p.numel() for p in ref.parameters())
    assert count == MHA_PARAMS
    assert_correct(check_parameter_count(count))


@pytest.mark.parametrize(
    "answer, words",
    [
        pytest.param(None, ["replace None", "number of parameters"], id="none"),
        pytest.param("16k", ["one number", "str"], id="str"),
        pytest.param([MHA_PARAMS], ["one number", "list"], id="list"),
        pytest.param(torch.tensor([1.0, 2.0]), ["one number", "Tensor"], id="tensor-2"),
        pytest.param(3 * 64 * 64, ["W_q, W_k and W_v", "output projection W_o"], id="no-w_o"),
        pytest.param(8 * MHA_PARAMS, ["size 64 / 8", "share the 64 x 64 matrices"], id="per-head-copies"),
        pytest.param(MHA_PARAMS + 4 * 64, ["no biases", "bias=False"], id="with-biases"),
        pytest.param(MHA_PARAMS // 8, ["count the entries of W_q, W_k, W_v and W_o"], id="divided-by-heads"),
        pytest.param(MHA_PARAMS + 1, ["count the entries"], id="off"),
        pytest.param(0, ["count the entries"], id="zero"),
    ],
)
def test_check_parameter_count_hints(answer, words):
    assert_hint(check_parameter_count(answer), *words)


# ----------------------------------------------------------------------------------------------
# check_split_merge and check_multi_head (build it): against torch.nn.MultiheadAttention
# ----------------------------------------------------------------------------------------------


def _split(x, num_heads):
    batch, steps, size = x.shape
    return (
        x.reshape(batch, steps, num_heads, size // num_heads).permute(0, 2, 1, 3).reshape(-1, steps, size // num_heads)
    )


def _merge(x, num_heads):
    steps, dh = x.shape[1:]
    return x.reshape(-1, num_heads, steps, dh).permute(0, 2, 1, 3).reshape(-1, steps, num_heads * dh)


def _split_head_major(x, num_heads):
    batch, steps, size = x.shape
    return (
        x.reshape(batch, steps, num_heads, size // num_heads).permute(2, 0, 1, 3).reshape(-1, steps, size // num_heads)
    )


def _split_strided(x, num_heads):
    batch, steps, size = x.shape
    return (
        x.reshape(batch, steps, size // num_heads, num_heads).permute(0, 3, 1, 2).reshape(-1, steps, size // num_heads)
    )


def _split_no_permute(x, num_heads):
    return x.reshape(x.shape[0] * num_heads, x.shape[1], -1)


def _split_in_place(x, num_heads):
    x.mul_(2.0)
    return _split(x / 2.0, num_heads)


def _merge_in_place(x, num_heads):
    out = _merge(x.clone(), num_heads)
    x.zero_()
    return out


@pytest.mark.parametrize("which", ["by-hand", "course"])
def test_check_split_merge_right_answer(which):
    from attn_course import merge_heads, split_heads

    split, merge = (_split, _merge) if which == "by-hand" else (split_heads, merge_heads)
    assert_correct(checks.check_split_merge(split, merge), "undoes")


@pytest.mark.parametrize(
    ("split", "merge", "words"),
    [
        pytest.param(None, _merge, ["replace None", "split_heads"], id="no-split"),
        pytest.param(_split, None, ["replace None", "merge_heads"], id="no-merge"),
        pytest.param(_split, "merge", ["expected a function"], id="not-callable"),
        pytest.param(_split_no_permute, _merge, ["mixes positions and heads"], id="no-permute"),
        pytest.param(_split_head_major, _merge, ["head order"], id="head-major"),
        pytest.param(_split_strided, _merge, ["consecutive features"], id="strided"),
        pytest.param(_split_in_place, _merge, ["split_heads", "changed its input x in place"], id="in-place"),
        pytest.param(_split, _merge_in_place, ["merge_heads", "changed its input x in place"], id="merge-in-place"),
        pytest.param(lambda x, h: x, _merge, ["split_heads", "expected shape"], id="identity"),
        pytest.param(
            _split, lambda x, h: x.reshape(x.shape[0] // h, x.shape[1], -1), ["does not undo"], id="merge-no-permute"
        ),
        pytest.param(_split, lambda x, h: x, ["merge_heads", "expected shape"], id="merge-identity"),
        pytest.param(lambda x, h: x.reshape(3, 7), _merge, ["raised RuntimeError"], id="raises"),
    ],
)
def test_check_split_merge_hints(split, merge, words):
    assert_hint(checks.check_split_merge(split, merge), *words)


def _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, *, split=_split, merge=_merge, project=True, scale=None):
    """A learner's multi-head attention with x @ W weights: right with the defaults, each keyword a mistake."""
    q, k, v = split(x_q @ W_q, num_heads), split(x_kv @ W_k, num_heads), split(x_kv @ W_v, num_heads)
    scale = q.shape[-1] ** -0.5 if scale is None else scale(x_q.shape[-1])
    out = merge(torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v, num_heads)  # (B, Q, D)
    return out @ W_o if project else out


def _merge_head_major(x, num_heads):
    steps, dh = x.shape[1:]
    return x.reshape(num_heads, -1, steps, dh).permute(1, 2, 0, 3).reshape(-1, steps, num_heads * dh)


def _merge_strided(x, num_heads):
    steps, dh = x.shape[1:]
    return x.reshape(-1, num_heads, steps, dh).permute(0, 2, 3, 1).reshape(-1, steps, num_heads * dh)


def _course_multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
    import attn_course as ac

    return ac.multi_head_attention(
        x_q, x_kv, x_kv, lambda t: t @ W_q, lambda t: t @ W_k, lambda t: t @ W_v, lambda t: t @ W_o, num_heads
    )[0]


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(_multi_head, id="by-hand"),
        pytest.param(_course_multi_head, id="course"),
        pytest.param(
            lambda *a: _multi_head(*a, split=_split_head_major, merge=_merge_head_major), id="head-major-both-ways"
        ),
    ],
)
def test_check_multi_head_right_answer(fn):
    assert_correct(checks.check_multi_head(fn), "torch.nn.MultiheadAttention")


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        pytest.param("f", ["expected a function"], id="not-callable"),
        pytest.param(lambda *a: _multi_head(*a, project=False), ["output projection is missing"], id="no-projection"),
        pytest.param(lambda *a: _multi_head(*a, split=_split_head_major), ["head order"], id="split-head-major"),
        pytest.param(lambda *a: _multi_head(*a, merge=_merge_head_major), ["head order"], id="merge-head-major"),
        pytest.param(
            lambda *a: _multi_head(*a, split=_split_strided, merge=_merge_strided),
            ["consecutive features"],
            id="strided",
        ),
        pytest.param(lambda *a: _multi_head(*a, split=_split_strided), ["when splitting"], id="split-strided"),
        pytest.param(lambda *a: _multi_head(*a, merge=_merge_strided), ["when merging"], id="merge-strided"),
        pytest.param(lambda *a: _multi_head(*a, split=_split_no_permute), ["mixes positions"], id="no-permute"),
        pytest.param(lambda *a: _multi_head(*a, scale=lambda d: 1.0), ["scale is missing"], id="no-scale"),
        pytest.param(lambda *a: _multi_head(*a, scale=lambda d: d**-0.5), ["sqrt(dh), not sqrt(D)"], id="scale-D"),
        pytest.param(
            lambda x_q, x_kv, *w: _multi_head(x_q, x_kv, *[t.T for t in w[:4]], w[4]), ["transposed"], id="transposed"
        ),
        pytest.param(lambda *a: _multi_head(*a)[:, :1], ["expected shape"], id="shape"),
        pytest.param(lambda *a: _multi_head(*a) * 2.0, ["differ"], id="other"),
        pytest.param(lambda *a: 1 / 0, ["raised ZeroDivisionError"], id="raises"),
    ],
)
def test_check_multi_head_hints(fn, words):
    assert_hint(checks.check_multi_head(fn), *words)


def test_check_multi_head_leaves_its_inputs_alone_and_catches_a_learner_who_does_not():
    def in_place(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
        out = _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads)
        W_o.zero_()
        return out

    assert_hint(checks.check_multi_head(in_place), "changed its input W_o in place")


def test_check_multi_head_compares_with_a_reference_computed_before_the_learners_call():
    """A function that zeroes the weights it was given and returns zeros cannot make the reference agree with it."""

    def zero_everything(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
        for w in (W_q, W_k, W_v, W_o):
            w.zero_()
        return torch.zeros_like(x_q)

    assert_hint(checks.check_multi_head(zero_everything), "changed its input W_q in place")


def test_check_multi_head_hidden_sizes_vary():
    """A head size or scale written as a number passes one hidden case at most."""

    def fixed_scale(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
        return _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, scale=lambda d: 3**-0.5)  # dh = 3 in one case

    assert_hint(checks.check_multi_head(fixed_scale), "differ")


def test_check_multi_head_names_nan_output():
    assert_hint(checks.check_multi_head(lambda *a: _multi_head(*a) * math.nan), "holds NaN")


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words of its cause
# ----------------------------------------------------------------------------------------------


def _split_four_heads(x, num_heads):
    return _split(x, 4)  # the notebook's H = 4, written in


def _split_keeps_head_axis(x, num_heads):
    batch, steps, size = x.shape
    return x.reshape(batch, steps, num_heads, size // num_heads).permute(0, 2, 1, 3)  # (B, H, T, dh), not folded


def _multi_head_scales_in_place(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
    W_q /= (x_q.shape[-1] // num_heads) ** 0.5  # folds the scale into the caller's W_q
    return _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, scale=lambda d: 1.0)


def _multi_head_two_heads(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
    return _multi_head(x_q, x_kv, W_q, W_k, W_v, W_o, 2)  # the first case's H = 2, written in


def _multi_head_over_queries(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads):
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    weights = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, dim=-2)  # over the queries
    return _merge(weights @ v, num_heads) @ W_o


ATTACKS = {
    "check_split_shape": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "(8, 5, 2)"),
        attack("a single number", "int", 80),
        attack("floats", "whole numbers", (8.0, 5.0, 2.0)),
        attack("the head axis not folded", "before the head axis is folded", (2, 4, 5, 2)),
        attack("full-width heads", "dh = 8 / 4", (8, 5, 8)),
        attack("after the first reshape", "after the first reshape", (2, 5, 4, 2)),
        attack("T first", "batch axis", (5, 8, 2)),
        attack("H alone, B forgotten", "B * H", (4, 5, 2)),
        attack("two axes", "three axes", (8, 10)),
        attack("the input shape unchanged", "B = 2, T = 5, H = 4", (2, 5, 8)),
    ],
    "check_parameter_count": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "16384"),
        attack("a list", "list", [MHA_PARAMS]),
        attack("W_o forgotten", "output projection W_o", 3 * 64 * 64),
        attack("a copy per head", "share the 64 x 64 matrices", 8 * MHA_PARAMS),
        attack("with biases", "no biases", MHA_PARAMS + 4 * 64),
        attack("one head's share", "one head", MHA_PARAMS // 8),
        attack("one matrix", "four", 64 * 64),
        attack("not squared", "64 x 64", 4 * 64),
        attack("a bool", "bool", True),
    ],
    "check_split_merge": [
        attack("split_heads None", "replace None", None, _merge),
        attack("merge_heads None", "merge_heads", _split, None),
        attack("a string", "expected a function", _split, "merge"),
        attack("reshape without permute", "mixes positions and heads", _split_no_permute, _merge),
        attack("head-major order", "head order", _split_head_major, _merge),
        attack("strided heads", "consecutive features", _split_strided, _merge),
        attack("split scales x in place", "changed its input x in place", _split_in_place, _merge),
        attack("merge zeroes x in place", "changed its input x in place", _split, _merge_in_place),
        attack(
            "merge by reshape alone",
            "does not undo",
            _split,
            lambda x, h: x.reshape(x.shape[0] // h, x.shape[1], -1),
        ),
        attack("the head axis kept", "(B * H, T, dh)", _split_keeps_head_axis, _merge),
        attack("H = 4 written in", "num_heads = 2", _split_four_heads, _merge),
        attack("a list", "list", lambda x, h: list(_split(x, h)), _merge),
    ],
    "check_multi_head": [
        attack("None left in place", "replace None", None),
        attack("a string", "expected a function", "multi_head"),
        attack("no output projection", "output projection is missing", lambda *a: _multi_head(*a, project=False)),
        attack("head-major split", "head order", lambda *a: _multi_head(*a, split=_split_head_major)),
        attack("no scale", "scale is missing", lambda *a: _multi_head(*a, scale=lambda d: 1.0)),
        attack("scale by sqrt(D)", "sqrt(dh), not sqrt(D)", lambda *a: _multi_head(*a, scale=lambda d: d**-0.5)),
        attack(
            "weights transposed",
            "transposed",
            lambda x_q, x_kv, *w: _multi_head(x_q, x_kv, *[t.T for t in w[:4]], w[4]),
        ),
        attack("folds the scale into W_q in place", "changed its input W_q in place", _multi_head_scales_in_place),
        attack("H = 2 written in", "num_heads", _multi_head_two_heads),
        attack("softmax over the queries", "dim=-1", _multi_head_over_queries),
        attack("(output, weights) returned", "tuple", lambda *a: (_multi_head(*a), None)),
        attack("float16", "float16", lambda *a: _multi_head(*a).half()),
    ],
}
