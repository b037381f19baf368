"""attn_course.multihead: split_heads, merge_heads, multi_head_attention and MultiHeadAttention."""

import functools
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from _helpers import bool_mask_by_loop, draw_cleanly, random_qkv
from matplotlib.collections import QuadMesh
from torch import nn
from torch.testing import assert_close

from attn_course import (
    MultiHeadAttention,
    causal_mask,
    merge_heads,
    multi_head_attention,
    plot_head_weights,
    scaled_dot_product_attention,
    split_heads,
)

_qkv = functools.partial(random_qkv, dq=8, dk=8, dv=8)  # (B, Q, 8), (B, K, 8), (B, K, 8)


def _layer(dtype=torch.float32, num_hiddens=8, num_heads=2, seed=0, **kwargs):
    torch.manual_seed(seed)  # the same parameters for every call with the same seed
    return MultiHeadAttention(num_hiddens, num_heads, **kwargs).to(dtype).eval()


# ----------------------------------------------------------------------------------------------
# split_heads and merge_heads
# ----------------------------------------------------------------------------------------------


def test_split_heads_hand_built_example():
    """x[b, t, f] = 100 b + 10 t + f; with H = 3 heads of size 2, head h gets features 2h and 2h + 1."""
    x = torch.tensor([[[100.0 * b + 10 * t + f for f in range(6)] for t in range(2)] for b in range(2)])
    got = split_heads(x, 3)
    expected = torch.tensor(
        [
            [[0.0, 1.0], [10.0, 11.0]],  # b = 0, head 0: features 0, 1
            [[2.0, 3.0], [12.0, 13.0]],  # b = 0, head 1: features 2, 3
            [[4.0, 5.0], [14.0, 15.0]],  # b = 0, head 2: features 4, 5
            [[100.0, 101.0], [110.0, 111.0]],  # b = 1, head 0
            [[102.0, 103.0], [112.0, 113.0]],  # b = 1, head 1
            [[104.0, 105.0], [114.0, 115.0]],  # b = 1, head 2
        ]
    )
    assert got.shape == (6, 2, 2)
    assert torch.equal(got, expected)
    assert torch.equal(merge_heads(expected, 3), x)


@pytest.mark.parametrize("num_heads", [1, 2, 3, 6])
def test_split_heads_row_b_times_h_plus_h_holds_slice_h(num_heads, dtype, gen, call_unmodified):
    """Element b * H + h of the split is x[b, :, h * dh:(h + 1) * dh], for every b and h."""
    x = torch.randn(2, 4, 12, generator=gen, dtype=dtype)
    got = call_unmodified(split_heads, x, num_heads)
    dh = 12 // num_heads
    assert got.dtype == dtype and got.shape == (2 * num_heads, 4, dh)
    for b in range(2):
        for h in range(num_heads):
            assert torch.equal(got[b * num_heads + h], x[b, :, h * dh : (h + 1) * dh])


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
def test_split_and_merge_heads_are_inverse(num_heads, dtype, gen, call_unmodified):
    x = torch.randn(3, 5, 8, generator=gen, dtype=dtype)
    assert torch.equal(merge_heads(split_heads(x, num_heads), num_heads), x)
    y = torch.randn(3 * num_heads, 5, 8 // num_heads, generator=gen, dtype=dtype)
    merged = call_unmodified(merge_heads, y, num_heads)
    assert merged.shape == (3, 5, 8)
    assert torch.equal(split_heads(merged, num_heads), y)


@pytest.mark.parametrize(
    "fn, x, num_heads, error, match",
    [
        (split_heads, torch.zeros(2, 3, 8), 3, ValueError, r"x\.shape\[-1\] = 8 must be divisible by num_heads = 3"),
        (split_heads, torch.zeros(3, 8), 2, ValueError, r"x must have shape \(B, T, H \* dh\).*got shape \(3, 8\)"),
        (split_heads, torch.zeros(1, 2, 3, 8), 2, ValueError, r"got shape \(1, 2, 3, 8\) \(4-D\)"),
        (split_heads, torch.zeros(2, 3, 8, dtype=torch.int64), 2, TypeError, r"x must be a floating-point.*int64"),
        (split_heads, [[[0.0, 1.0]]], 2, TypeError, r"x must be a torch\.Tensor, got list"),
        (merge_heads, torch.zeros(6, 3, 2), 4, ValueError, r"x\.shape\[0\] = 6 must be divisible by num_heads = 4"),
        (merge_heads, torch.zeros(6, 2), 2, ValueError, r"x must have shape \(B \* H, T, dh\).*got shape \(6, 2\)"),
        (merge_heads, torch.zeros(4, 3, 2, dtype=torch.int32), 2, TypeError, r"x must be a floating-point.*int32"),
    ],
    ids=[
        "split-not-divisible",
        "split-2-D",
        "split-4-D",
        "split-integer",
        "split-list",
        "merge-not-divisible",
        "merge-2-D",
        "merge-integer",
    ],
)
def test_split_and_merge_heads_error_messages(fn, x, num_heads, error, match):
    with pytest.raises(error, match=match):
        fn(x, num_heads)


@pytest.mark.parametrize("fn", [split_heads, merge_heads])
@pytest.mark.parametrize(
    "num_heads, shown",
    [(0, "0"), (-2, "-2"), (2.0, r"2\.0"), (True, "True")],
    ids=["zero", "negative", "float", "bool"],
)
def test_split_and_merge_heads_reject_a_bad_num_heads(fn, num_heads, shown, int_error):
    """As MultiHeadAttention does: not a ZeroDivisionError, a reshape error, or True taken as one head."""
    with pytest.raises(int_error(num_heads), match=rf"num_heads must be an integer >= 1, got {shown}"):
        fn(torch.zeros(4, 3, 8), num_heads)


# ----------------------------------------------------------------------------------------------
# MultiHeadAttention against torch.nn.MultiheadAttention
# ----------------------------------------------------------------------------------------------


def _torch_copy(layer):
    """torch.nn.MultiheadAttention with the weights of ``layer`` (in_proj = [W_q; W_k; W_v], out_proj = W_o)."""
    num_hiddens, bias = layer.W_o.in_features, layer.W_o.bias is not None
    kdim, vdim = layer.W_k.in_features, layer.W_v.in_features
    ref = nn.MultiheadAttention(num_hiddens, layer.num_heads, bias=bias, batch_first=True, kdim=kdim, vdim=vdim)
    ref = ref.to(layer.W_o.weight.dtype).eval()
    with torch.no_grad():
        if ref.in_proj_weight is not None:
            ref.in_proj_weight.copy_(torch.cat([layer.W_q.weight, layer.W_k.weight, layer.W_v.weight]))
        else:
            ref.q_proj_weight.copy_(layer.W_q.weight)
            ref.k_proj_weight.copy_(layer.W_k.weight)
            ref.v_proj_weight.copy_(layer.W_v.weight)
        ref.out_proj.weight.copy_(layer.W_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([layer.W_q.bias, layer.W_k.bias, layer.W_v.bias]))
            ref.out_proj.bias.copy_(layer.W_o.bias)
    return ref


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_mha_matches_torch_multihead_attention(num_heads, bias, dtype, gen, call_unmodified):
    layer = _layer(dtype, num_heads=num_heads, bias=bias)
    queries, keys, values = _qkv(gen, dtype)
    with torch.no_grad():
        output = call_unmodified(layer, queries, keys, values)
        expected, expected_w = _torch_copy(layer)(queries, keys, values, average_attn_weights=False)
    assert output.dtype == dtype and output.shape == (2, 3, 8)
    assert_close(output, expected)
    assert layer.attention_weights.shape == (2, num_heads, 3, 5)
    assert_close(layer.attention_weights, expected_w)


def test_mha_valid_lens_match_torch_key_padding_mask(dtype, gen):
    layer = _layer(dtype, num_heads=4)
    queries, keys, values = _qkv(gen, dtype)
    valid_lens = torch.tensor([2, 5])
    key_padding_mask = torch.tensor([[False, False, True, True, True], [False] * 5])  # True = ignore
    with torch.no_grad():
        output = layer(queries, keys, values, valid_lens)
        ref = _torch_copy(layer)
        expected, expected_w = ref(queries, keys, values, key_padding_mask=key_padding_mask, average_attn_weights=False)
        _, expected_mean = ref(queries, keys, values, key_padding_mask=key_padding_mask)
    assert_close(output, expected)
    assert_close(layer.attention_weights, expected_w)
    assert_close(layer.attention_weights.mean(1), expected_mean)  # torch's default averages over the heads


def test_mha_causal_mask_matches_torch_attn_mask(dtype, gen):
    layer = _layer(dtype, num_heads=2)
    queries, keys, values = _qkv(gen, dtype, q=5, k=5)
    with torch.no_grad():
        output = layer(queries, keys, values, mask=causal_mask(5))
        attn_mask = torch.ones(5, 5, dtype=torch.bool).triu(1)  # torch's polarity: True = may NOT attend
        expected, expected_w = _torch_copy(layer)(
            queries, keys, values, attn_mask=attn_mask, average_attn_weights=False
        )
    assert_close(output, expected)
    assert_close(layer.attention_weights, expected_w)
    assert (layer.attention_weights.triu(1) == 0).all()


def test_mha_batch_mask_matches_torch_per_head_attn_mask(dtype, gen):
    layer = _layer(dtype, num_heads=2)
    queries, keys, values = _qkv(gen, dtype)
    mask = torch.rand(2, 3, 5, generator=gen) < 0.6
    mask[..., 0] = True  # every query may attend to something: torch gives NaN for an empty row
    # torch wants (B * H, Q, K) with element b * H + h for sequence b, head h, and True = may NOT attend
    attn_mask = ~mask[:, None].expand(2, 2, 3, 5).reshape(4, 3, 5)
    with torch.no_grad():
        output = layer(queries, keys, values, mask=mask)
        expected, expected_w = _torch_copy(layer)(
            queries, keys, values, attn_mask=attn_mask, average_attn_weights=False
        )
    assert_close(output, expected)
    assert_close(layer.attention_weights, expected_w)
    assert (layer.attention_weights[~mask[:, None].expand(2, 2, 3, 5)] == 0).all()


def test_mha_key_and_value_sizes_match_torch_kdim_vdim(dtype, gen):
    layer = _layer(dtype, num_heads=2, key_size=3, value_size=5)
    queries, keys, values = _qkv(gen, dtype, dk=3, dv=5)
    with torch.no_grad():
        output = layer(queries, keys, values, torch.tensor([4, 1]))
        key_padding_mask = torch.tensor([[False] * 4 + [True], [False] + [True] * 4])
        expected, expected_w = _torch_copy(layer)(
            queries, keys, values, key_padding_mask=key_padding_mask, average_attn_weights=False
        )
    assert output.shape == (2, 3, 8)
    assert_close(output, expected)
    assert_close(layer.attention_weights, expected_w)


# ----------------------------------------------------------------------------------------------
# MultiHeadAttention against a loop over heads
# ----------------------------------------------------------------------------------------------


def _heads_by_loop(layer, queries, keys, values, valid_lens=None, mask=None):
    """Each head on its own slice of the projections with scaled_dot_product_attention, then concat and W_o."""
    q_all, k_all, v_all = layer.W_q(queries), layer.W_k(keys), layer.W_v(values)  # (B, T, num_hiddens)
    dh = q_all.shape[-1] // layer.num_heads
    outputs, weights = [], []
    for h in range(layer.num_heads):
        cols = slice(h * dh, (h + 1) * dh)
        out, w = scaled_dot_product_attention(q_all[..., cols], k_all[..., cols], v_all[..., cols], valid_lens, mask)
        outputs.append(out)  # (B, Q, dh)
        weights.append(w)  # (B, Q, K)
    return layer.W_o(torch.cat(outputs, dim=-1)), torch.stack(weights, dim=1)  # (B, Q, D), (B, H, Q, K)


LOOP_CASES = [
    (None, None),
    (torch.tensor([2, 5]), None),
    (torch.tensor([[1, 5, 3], [2, 4, 0]]), None),
    (None, torch.tensor([[True, True, False, True, False]] * 3)),
    (torch.tensor([[1, 5, 3], [2, 4, 1]]), causal_mask(3, 5)),
]


@pytest.mark.parametrize("valid_lens, mask", LOOP_CASES, ids=["plain", "(B,)", "(B, Q)", "(Q, K)", "causal+(B, Q)"])
@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
def test_mha_matches_a_loop_over_heads(valid_lens, mask, bias, dtype, gen, call_unmodified):
    layer = _layer(dtype, num_hiddens=12, num_heads=3, query_size=4, key_size=6, value_size=7, bias=bias)
    queries, keys, values = _qkv(gen, dtype, dq=4, dk=6, dv=7)
    with torch.no_grad():
        output = call_unmodified(layer, queries, keys, values, valid_lens, mask)
        expected, expected_w = _heads_by_loop(layer, queries, keys, values, valid_lens, mask)
    assert output.dtype == dtype and output.shape == (2, 3, 12)
    assert_close(output, expected)
    assert_close(layer.attention_weights, expected_w)


def test_mha_batch_mask_matches_a_loop_over_heads(dtype, gen):
    layer = _layer(dtype, num_heads=4)
    queries, keys, values = _qkv(gen, dtype)
    mask = torch.rand(2, 3, 5, generator=gen) < 0.5
    mask[1, 2] = False  # one query with nothing to attend to
    with torch.no_grad():
        output = layer(queries, keys, values, mask=mask)
        expected, expected_w = _heads_by_loop(layer, queries, keys, values, mask=mask)
    assert_close(output, expected)
    assert_close(layer.attention_weights, expected_w)


# ----------------------------------------------------------------------------------------------
# Properties of the weights and the output
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "valid_lens",
    [torch.tensor([2, 4]), torch.tensor([[1, 5, 3], [2, 4, 0]])],
    ids=["(B,)", "(B, Q)"],
)
def test_mha_weights_sum_to_one_and_are_zero_past_valid_lengths(valid_lens, dtype, gen):
    layer = _layer(dtype, num_heads=2)
    queries, keys, values = _qkv(gen, dtype)
    output = layer(queries, keys, values, valid_lens)
    weights = layer.attention_weights
    allowed = bool_mask_by_loop(valid_lens, 3, 5)[:, None].expand(2, 2, 3, 5)  # the same mask for every head
    assert weights.shape == (2, 2, 3, 5) and not weights.requires_grad
    assert (weights[~allowed] == 0).all() and (weights[allowed] > 0).all()
    has_key = allowed.any(-1)
    assert_close(weights.sum(-1)[has_key], torch.ones(int(has_key.sum()), dtype=dtype))
    assert (weights.sum(-1)[~has_key] == 0).all()
    assert not output.isnan().any()


def test_mha_query_with_no_valid_key_gives_a_zero_output_without_bias(gen):
    layer = _layer(num_heads=2)
    queries, keys, values = _qkv(gen, torch.float32)
    output = layer(queries, keys, values, torch.tensor([[0, 2, 5], [3, 0, 1]]))
    assert (output[0, 0] == 0).all() and (output[1, 1] == 0).all()
    assert (output[0, 1] != 0).any()


def test_mha_weights_without_mask_are_a_softmax_per_head(dtype, gen):
    layer = _layer(dtype, num_heads=4)
    queries, keys, values = _qkv(gen, dtype)
    layer(queries, keys, values)
    weights = layer.attention_weights
    assert (weights > 0).all()
    assert_close(weights.sum(-1), torch.ones(2, 4, 3, dtype=dtype))


def test_mha_keeps_the_weights_of_the_last_call(gen):
    layer = _layer(num_heads=2)
    assert layer.attention_weights is None
    queries, keys, values = _qkv(gen, torch.float32)
    layer(queries, keys, values, torch.tensor([1, 2]))
    assert (layer.attention_weights[0, :, :, 1:] == 0).all()
    layer(queries, keys, values)
    assert (layer.attention_weights > 0).all()


def test_mha_self_attention_is_permutation_equivariant(dtype, gen):
    """Without masks or positions, permuting the tokens permutes the output rows the same way."""
    layer = _layer(dtype, num_heads=2)
    x = torch.randn(2, 6, 8, generator=gen, dtype=dtype)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    with torch.no_grad():
        output = layer(x, x, x)
        weights = layer.attention_weights
        permuted = layer(x[:, perm], x[:, perm], x[:, perm])
    assert_close(permuted, output[:, perm])
    assert_close(layer.attention_weights, weights[:, :, perm][:, :, :, perm])


def test_mha_output_ignores_the_order_of_key_value_pairs(dtype, gen):
    layer = _layer(dtype, num_heads=2)
    queries, keys, values = _qkv(gen, dtype)
    perm = torch.tensor([4, 2, 0, 3, 1])
    with torch.no_grad():
        output = layer(queries, keys, values)
        assert_close(layer(queries, keys[:, perm], values[:, perm]), output)


def test_mha_heads_see_only_their_own_features(gen):
    """A query/key change confined to head 0's projected features leaves head 1's weights unchanged."""
    layer = _layer(num_heads=2)
    with torch.no_grad():
        layer.W_q.weight.copy_(torch.eye(8))
        layer.W_k.weight.copy_(torch.eye(8))
    queries, keys, values = _qkv(gen, torch.float32)
    layer(queries, keys, values)
    before = layer.attention_weights.clone()
    queries2 = queries.clone()
    queries2[..., :4] *= 5.0  # head 0 owns features 0..3
    layer(queries2, keys, values)
    assert torch.equal(layer.attention_weights[:, 1], before[:, 1])
    assert not torch.allclose(layer.attention_weights[:, 0], before[:, 0])


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("num_hiddens, num_heads", [(8, 1), (8, 2), (8, 8), (64, 8), (12, 3)])
def test_mha_parameter_count(num_hiddens, num_heads, bias):
    layer = MultiHeadAttention(num_hiddens, num_heads, bias=bias)
    count = sum(p.numel() for p in layer.parameters())
    assert count == 4 * num_hiddens**2 + (4 * num_hiddens if bias else 0)  # independent of num_heads
    ref = nn.MultiheadAttention(num_hiddens, num_heads, bias=bias, device="meta")
    assert count == sum(p.numel() for p in ref.parameters())


def test_mha_parameter_count_with_other_input_sizes():
    layer = MultiHeadAttention(8, 2, query_size=3, key_size=5, value_size=7, bias=True)
    shapes = {name: tuple(p.shape) for name, p in layer.named_parameters()}
    assert shapes == {
        "W_q.weight": (8, 3),
        "W_q.bias": (8,),
        "W_k.weight": (8, 5),
        "W_k.bias": (8,),
        "W_v.weight": (8, 7),
        "W_v.bias": (8,),
        "W_o.weight": (8, 8),
        "W_o.bias": (8,),
    }
    assert sum(p.numel() for p in layer.parameters()) == 8 * (3 + 5 + 7 + 8) + 4 * 8


def test_mha_gradients_reach_all_parameters(gen):
    layer = _layer(num_heads=2, bias=True, query_size=4, key_size=3, value_size=5)
    queries, keys, values = _qkv(gen, torch.float32, dq=4, dk=3, dv=5)
    layer(queries, keys, values, torch.tensor([3, 5])).square().sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


# ----------------------------------------------------------------------------------------------
# Dropout on the attention weights
# ----------------------------------------------------------------------------------------------


def test_mha_dropout_only_in_train_mode(gen):
    queries, keys, values = _qkv(gen, torch.float32, q=6, k=10)
    valid_lens = torch.tensor([7, 10])
    with torch.no_grad():
        reference = _layer(num_heads=2, dropout=0.0)(queries, keys, values, valid_lens)
        layer = _layer(num_heads=2, dropout=0.5).train()
        torch.manual_seed(1)
        train_out = layer(queries, keys, values, valid_lens)
        train_weights = layer.attention_weights.clone()
        eval_out = layer.eval()(queries, keys, values, valid_lens)
    assert not torch.allclose(train_out, eval_out)
    assert_close(eval_out, reference)
    assert_close(train_weights, layer.attention_weights)  # kept before dropout, as in eval mode
    assert_close(train_weights.sum(-1), torch.ones(2, 2, 6))


def test_mha_zero_dropout_in_train_mode_equals_eval_mode(gen):
    queries, keys, values = _qkv(gen, torch.float32)
    layer = _layer(num_heads=2)
    with torch.no_grad():
        assert torch.equal(layer.train()(queries, keys, values), layer.eval()(queries, keys, values))


def test_mha_dropout_with_a_fixed_seed_is_reproducible(gen):
    queries, keys, values = _qkv(gen, torch.float32)
    layer = _layer(num_heads=2, dropout=0.3).train()
    with torch.no_grad():
        torch.manual_seed(7)
        first = layer(queries, keys, values)
        torch.manual_seed(7)
        assert torch.equal(layer(queries, keys, values), first)


def test_mha_does_not_modify_inputs(dtype, gen, call_unmodified):
    layer = _layer(dtype, num_heads=2, dropout=0.3).train()
    queries, keys, values = _qkv(gen, dtype)
    call_unmodified(layer, queries, keys, values, torch.tensor([[0, 1, 2], [5, 4, 3]]), causal_mask(3, 5))


# ----------------------------------------------------------------------------------------------
# Error messages
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_hiddens": 6, "num_heads": 4}, r"num_hiddens = 6 must be divisible by num_heads = 4"),
        ({"num_hiddens": 0, "num_heads": 1}, r"num_hiddens must be an integer >= 1, got 0"),
        ({"num_hiddens": 8.0, "num_heads": 2}, r"num_hiddens must be an integer >= 1, got 8\.0"),
        ({"num_hiddens": True, "num_heads": 1}, r"num_hiddens must be an integer >= 1, got True"),
        ({"num_hiddens": 8, "num_heads": 0}, r"num_heads must be an integer >= 1, got 0"),
        ({"num_hiddens": 8, "num_heads": -2}, r"num_heads must be an integer >= 1, got -2"),
        ({"num_hiddens": 8, "num_heads": "2"}, r"num_heads must be an integer >= 1, got '2'"),
    ],
    ids=["not-divisible", "zero-hiddens", "float-hiddens", "bool-hiddens", "zero-heads", "negative-heads", "str-heads"],
)
def test_mha_bad_num_hiddens_and_num_heads(kwargs, match, int_error):
    name = match.split(" ")[0]  # the argument the message names
    error = ValueError if name not in kwargs else int_error(kwargs[name])
    with pytest.raises(error, match=match):
        MultiHeadAttention(**kwargs)


@pytest.mark.parametrize("arg", ["query_size", "key_size", "value_size"])
@pytest.mark.parametrize("value, shown", [(0, "0"), (-1, "-1"), (2.5, r"2\.5"), (True, "True"), ("4", "'4'")])
def test_mha_bad_input_sizes(arg, value, shown, int_error):
    with pytest.raises(int_error(value), match=rf"{arg} must be an integer >= 1, got {shown}"):
        MultiHeadAttention(8, 2, **{arg: value})


@pytest.mark.parametrize(
    "dropout, shown",
    [(-0.1, r"-0\.1"), (1.0, r"1\.0"), ("0.1", r"'0\.1'"), (True, "True"), (float("nan"), "nan"), (None, "None")],
)
def test_mha_bad_dropout(dropout, shown, number_error):
    with pytest.raises(number_error(dropout), match=rf"dropout must be a probability in \[0, 1\), got {shown}"):
        MultiHeadAttention(8, 2, dropout=dropout)


GOOD_QKV = {"queries": torch.zeros(2, 3, 4), "keys": torch.zeros(2, 5, 6), "values": torch.zeros(2, 5, 5)}


@pytest.mark.parametrize(
    "change, error, match",
    [
        (
            {"queries": torch.zeros(2, 3, 7)},
            ValueError,
            r"queries\.shape\[-1\] must be 4, got queries of shape \(2, 3, 7\)",
        ),
        ({"keys": torch.zeros(2, 5, 4)}, ValueError, r"keys\.shape\[-1\] must be 6, got keys of shape \(2, 5, 4\)"),
        (
            {"values": torch.zeros(2, 5, 8)},
            ValueError,
            r"values\.shape\[-1\] must be 5, got values of shape \(2, 5, 8\)",
        ),
        (
            {"keys": torch.zeros(3, 5, 6)},
            ValueError,
            r"must share the batch size B, got queries \(2, 3, 4\), keys \(3, 5, 6\), values \(2, 5, 5\)",
        ),
        (
            {"values": torch.zeros(2, 4, 5)},
            ValueError,
            r"values must have one row per key: values\.shape\[1\] must be K = 5 .*got values \(2, 4, 5\)",
        ),
        (
            {"queries": torch.zeros(3, 4)},
            ValueError,
            r"queries must have shape \(B, Q, D\) \(3-D\), got shape \(3, 4\) \(2-D\)",
        ),
        (
            {"keys": torch.zeros(2, 5, 6, dtype=torch.int64)},
            TypeError,
            r"keys must be a floating-point tensor.*got torch\.int64",
        ),
        ({"queries": [[[0.0] * 4]]}, TypeError, r"queries must be a torch\.Tensor"),
    ],
    ids=["query-size", "key-size", "value-size", "batch", "length", "queries-rank", "integer-keys", "queries-list"],
)
def test_mha_forward_error_messages(change, error, match):
    """Each case changes one of the inputs in GOOD_QKV, which the layer accepts."""
    layer = MultiHeadAttention(8, 2, query_size=4, key_size=6, value_size=5)
    assert layer(**GOOD_QKV).shape == (2, 3, 8)
    with pytest.raises(error, match=match):
        layer(**(GOOD_QKV | change))


MASK_SHAPES = r"mask must have shape \(Q, K\), \(1, Q, K\) or \(B, Q, K\) = \(3, 5\) or \(1, 3, 5\) or \(2, 3, 5\)"


@pytest.mark.parametrize(
    "valid_lens, mask, error, match",
    [
        (torch.tensor([1, 6]), None, ValueError, r"valid_lens must lie in \[0, 5\].*got 6"),
        (torch.tensor([1.0, 2.0]), None, TypeError, r"valid_lens must be an integer tensor"),
        (None, torch.ones(3, 5), TypeError, r"mask must be a bool tensor \(True = may attend\), got torch\.float32"),
        (torch.tensor([1, 2, 3]), None, ValueError, r"valid_lens must have shape \(2,\) or \(2, 3\).*got shape \(3,\)"),
        (torch.zeros(8, dtype=torch.long), None, ValueError, r"valid_lens must have shape \(2,\) or \(2, 3\).*\(8,\)"),
        ([1, 2], None, TypeError, r"valid_lens must be a torch\.Tensor, got list"),
        (None, torch.ones(3, 4, dtype=torch.bool), ValueError, MASK_SHAPES + r", got \(3, 4\)"),
        (None, torch.ones(8, 3, 5, dtype=torch.bool), ValueError, MASK_SHAPES + r", got \(8, 3, 5\)"),
        (None, torch.ones(2, 1, 5, dtype=torch.bool), ValueError, MASK_SHAPES + r", got \(2, 1, 5\)"),
        (None, torch.ones(5, dtype=torch.bool), ValueError, MASK_SHAPES + r", got \(5,\)"),
        (None, torch.ones(2, 2, 3, 5, dtype=torch.bool), ValueError, MASK_SHAPES + r", got \(2, 2, 3, 5\)"),
        (None, [[True] * 5] * 3, TypeError, r"mask must be a bool tensor \(True = may attend\), got list"),
    ],
    ids=[
        "too-long",
        "float-lens",
        "float-mask",
        "lens-shape",
        "lens-b-times-h",
        "lens-list",
        "mask-shape",
        "mask-b-times-h",
        "mask-b-1-k",
        "mask-1-D",
        "mask-4-D",
        "mask-list",
    ],
)
def test_mha_valid_lens_and_mask_error_messages(valid_lens, mask, error, match):
    """B = 2, H = 4: a message names the shapes the caller may pass, not the (B * H, ...) ones inside."""
    with pytest.raises(error, match=match):
        MultiHeadAttention(8, 4)(torch.zeros(2, 3, 8), torch.zeros(2, 5, 8), torch.zeros(2, 5, 8), valid_lens, mask)


@pytest.mark.parametrize("shape", [(3, 5), (1, 3, 5), (2, 3, 5)], ids=["(Q, K)", "(1, Q, K)", "(B, Q, K)"])
def test_mha_documented_mask_shapes_mean_the_expanded_mask(shape, dtype, gen):
    """Each documented mask shape acts as its (B, Q, K) expansion, shared by all heads (checked head by head)."""
    layer = _layer(dtype, num_heads=2)
    queries, keys, values = _qkv(gen, dtype)
    mask = torch.rand(shape, generator=gen) < 0.6
    mask[..., 0] = True
    full = mask.expand(2, 3, 5).clone()  # (B, Q, K)
    with torch.no_grad():
        output = layer(queries, keys, values, mask=mask)
        expected, expected_w = _heads_by_loop(layer, queries, keys, values, mask=full)
    assert_close(output, expected)
    assert_close(layer.attention_weights, expected_w)
    assert (layer.attention_weights[~full[:, None].expand(2, 2, 3, 5)] == 0).all()


@pytest.mark.parametrize(
    "layer_dtype, dtypes, match",
    [
        (torch.float32, (torch.float64,) * 3, r"queries.*torch\.float64.*torch\.float32"),
        (torch.float32, (torch.float32, torch.float64, torch.float32), r"keys.*torch\.float64.*torch\.float32"),
        (torch.float64, (torch.float64, torch.float64, torch.float32), r"values.*torch\.float32.*torch\.float64"),
    ],
    ids=["all-float64", "keys-float64", "values-float32"],
)
def test_mha_dtype_mismatch_is_a_type_error_that_names_the_argument(layer_dtype, dtypes, match):
    """As AdditiveAttention does, rather than torch's "expected m1 and m2 to have the same dtype"."""
    layer = MultiHeadAttention(8, 2).to(layer_dtype)
    queries, keys, values = (
        torch.zeros(2, 3, 8, dtype=dtypes[0]),
        torch.zeros(2, 5, 8, dtype=dtypes[1]),
        torch.zeros(2, 5, 8, dtype=dtypes[2]),
    )
    with pytest.raises(TypeError, match=match):
        layer(queries, keys, values)


def test_mha_scale_uses_the_head_size():
    """Keys equal to the queries, one head of size dh: the score of a query with itself is |q|^2 / sqrt(dh)."""
    layer = MultiHeadAttention(4, 2)
    with torch.no_grad():
        for lin in (layer.W_q, layer.W_k, layer.W_v, layer.W_o):
            lin.weight.copy_(torch.eye(4))
    x = torch.tensor([[[1.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, 0.0]]])  # (1, 2, 4): head 0 = [1, 0], [0, 1]
    layer(x, x, x)
    # head 0: scores [[1, 0], [0, 1]] / sqrt(2); head 1: [[4, 0], [0, 0]] / sqrt(2)
    e = math.exp(1 / math.sqrt(2))
    e4 = math.exp(4 / math.sqrt(2))
    expected = torch.tensor(
        [[[[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]], [[e4 / (e4 + 1), 1 / (e4 + 1)], [0.5, 0.5]]]]
    )
    assert_close(layer.attention_weights, expected)


# ----------------------------------------------------------------------------------------------
# plot_head_weights
# ----------------------------------------------------------------------------------------------

TOKENS = ["the", "cat", "sat", "on", "the", "mat"]


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def _panel_data(ax):
    meshes = [c for c in ax.collections if isinstance(c, QuadMesh)]
    assert len(meshes) == 1
    data = np.asarray(meshes[0].get_array(), dtype=np.float64)
    n = int(round(math.sqrt(data.size)))
    return torch.as_tensor(data).reshape(n, n)


def test_plot_head_weights_one_panel_per_head_rows_sum_to_one(monkeypatch):
    fig = draw_cleanly(monkeypatch, plot_head_weights)
    panels = _panels(fig)
    assert [ax.get_title() for ax in panels] == ["head 0", "head 1", "head 2", "head 3"]
    assert len(fig.axes) == 5  # and one colour bar
    assert panels[0].get_ylabel() == "Queries" and all(ax.get_xlabel() == "Keys" for ax in panels)
    data = [_panel_data(ax) for ax in panels]
    for ax, weights in zip(panels, data, strict=True):
        assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS
        assert weights.shape == (6, 6) and (weights > 0).all()
        assert_close(weights.sum(-1), torch.ones(6, dtype=torch.float64), atol=1e-6, rtol=1e-6)
    for a in range(4):
        for b in range(a + 1, 4):
            assert not torch.allclose(data[a], data[b], atol=1e-3), f"heads {a + 1} and {b + 1} look the same"


def test_plot_head_weights_seed_tokens_and_empty_panels():
    first = [_panel_data(ax) for ax in _panels(plot_head_weights(num_heads=2, num_hiddens=8, seed=3))]
    again = [_panel_data(ax) for ax in _panels(plot_head_weights(num_heads=2, num_hiddens=8, seed=3))]
    other = [_panel_data(ax) for ax in _panels(plot_head_weights(num_heads=2, num_hiddens=8, seed=4))]
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.allclose(first[0], other[0])
    fig = plot_head_weights(num_heads=5, num_hiddens=10, tokens=["a", "b", "c"])
    panels = _panels(fig)
    assert [ax.get_title() for ax in panels] == [f"head {h}" for h in range(5)] + ["(no head)"] * 3
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["a", "b", "c"]
    assert all((_panel_data(ax) == 0).all() for ax in panels[5:])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_heads": 0}, r"num_heads must be an integer >= 1, got 0"),
        ({"num_heads": 2.0}, r"num_heads must be an integer >= 1, got 2\.0"),
        ({"num_heads": 3}, r"num_hiddens = 16 must be divisible by num_heads = 3"),
        ({"num_hiddens": 0}, r"num_hiddens must be an integer >= 1, got 0"),
    ],
    ids=["zero-heads", "float-heads", "not-divisible", "zero-hiddens"],
)
def test_plot_head_weights_error_messages(kwargs, match, int_error):
    with pytest.raises(int_error(*kwargs.values()), match=match):
        plot_head_weights(**kwargs)
    assert plt.get_fignums() == []


def test_plot_head_weights_draws_on_given_axes():
    """STYLE 7: plot helpers take axes (as plot_pattern_gallery and plot_masking_demo do) and draw there."""
    fig, axes = plt.subplots(1, 2)
    got = plot_head_weights(num_heads=2, num_hiddens=8, axes=axes)
    assert got is fig and plt.get_fignums() == [fig.number]
    assert [ax.get_title() for ax in axes] == ["head 0", "head 1"]


# ----------------------------------------------------------------------------------------------
# multi_head_attention: the pure function that MultiHeadAttention wraps
# ----------------------------------------------------------------------------------------------


def _projections(gen, dtype, d=8, dq=8, dk=8, dv=8):
    """Four random weight matrices (out, in), as nn.Linear stores them."""
    return [torch.randn(d, size, generator=gen, dtype=dtype) / math.sqrt(size) for size in (dq, dk, dv, d)]


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_multi_head_attention_matches_a_loop_over_heads(num_heads, dtype, gen, call_unmodified):
    """Head h attends with its own slice of W_q, W_k and W_v; the concatenated outputs go through W_o."""
    queries, keys, values = _qkv(gen, dtype, dq=6, dk=5, dv=7)
    w_q, w_k, w_v, w_o = _projections(gen, dtype, dq=6, dk=5, dv=7)
    out, weights = call_unmodified(
        multi_head_attention, queries, keys, values, lambda x: x @ w_q.T, lambda x: x @ w_k.T,
        lambda x: x @ w_v.T, lambda x: x @ w_o.T, num_heads,
    )  # fmt: skip
    dh = 8 // num_heads
    heads, per_head = [], []
    for h in range(num_heads):
        cols = slice(h * dh, (h + 1) * dh)
        q, k, v = queries @ w_q[cols].T, keys @ w_k[cols].T, values @ w_v[cols].T  # (B, T, dh) each
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(dh), dim=-1)  # (B, Q, K)
        per_head.append(a)
        heads.append(a @ v)  # (B, Q, dh)
    assert_close(out, torch.cat(heads, dim=-1) @ w_o.T)
    assert_close(weights, torch.stack(per_head, dim=1))  # (B, H, Q, K)


def test_multi_head_attention_matches_torch_multihead_attention(gen):
    """The same numbers as torch.nn.MultiheadAttention given the same four projections (no biases)."""
    queries, keys, values = _qkv(gen, torch.float64)
    torch_layer = nn.MultiheadAttention(8, 2, bias=False, batch_first=True, dtype=torch.float64).eval()
    w_q, w_k, w_v = torch_layer.in_proj_weight.detach().chunk(3)
    w_o = torch_layer.out_proj.weight.detach()
    lens = torch.tensor([5, 2])
    allowed = bool_mask_by_loop(lens, 3, 5)  # (B, Q, K)
    with torch.no_grad():
        expected, expected_w = torch_layer(
            queries, keys, values, key_padding_mask=~allowed[:, 0], average_attn_weights=False
        )
        out, weights = multi_head_attention(
            queries, keys, values, lambda x: x @ w_q.T, lambda x: x @ w_k.T, lambda x: x @ w_v.T,
            lambda x: x @ w_o.T, 2, valid_lens=lens,
        )  # fmt: skip
    assert_close(out, expected)
    assert_close(weights, expected_w)


def test_multi_head_attention_layer_is_the_function_with_its_own_projections(gen):
    layer = _layer(torch.float64, query_size=6, key_size=5, value_size=7).eval()
    queries, keys, values = _qkv(gen, torch.float64, dq=6, dk=5, dv=7)
    mask = causal_mask(3, 5)
    with torch.no_grad():
        expected = layer(queries, keys, values, mask=mask)
        out, weights = multi_head_attention(
            queries, keys, values, layer.W_q, layer.W_k, layer.W_v, layer.W_o, 2, mask=mask
        )
    assert_close(out, expected)
    assert_close(weights, layer.attention_weights)


@pytest.mark.parametrize(
    "override, error, match",
    [
        ({"W_k": "not a layer"}, TypeError, r"W_k must be a projection such as nn\.Linear, got str"),
        ({"num_heads": 0}, ValueError, r"num_heads must be an integer >= 1, got 0"),
        ({"num_heads": 2.0}, TypeError, r"num_heads must be an integer >= 1, got 2\.0 \(float\)"),
        (
            {"mask": torch.ones(3, 5)},
            TypeError,
            r"mask must be a bool tensor \(True = may attend\), got torch\.float32",
        ),
        ({"mask": torch.ones(5, 3, dtype=torch.bool)}, ValueError, r"mask must have shape \(Q, K\), \(1, Q, K\)"),
        ({"valid_lens": torch.tensor([1.0, 2.0])}, TypeError, r"valid_lens must be an integer tensor"),
        ({"queries": torch.full((2, 3, 8), math.nan)}, ValueError, r"queries must be finite, got NaN or infinity"),
    ],
    ids=["projection-not-callable", "zero-heads", "float-heads", "float-mask", "mask-shape", "float-lens", "nan"],
)
def test_multi_head_attention_error_messages(override, error, match, gen):
    queries, keys, values = _qkv(gen, torch.float32)
    linear = nn.Linear(8, 8, bias=False)
    args = {"queries": queries, "keys": keys, "values": values, "W_q": linear, "W_k": linear, "W_v": linear}
    args |= {"W_o": linear, "num_heads": 2} | override
    with pytest.raises(error, match=match):
        multi_head_attention(**args)
