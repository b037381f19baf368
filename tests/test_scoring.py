"""attn_course.scoring: dot-product and additive scores, attention pooling, scaled dot-product attention."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _helpers import bool_mask_by_loop, random_qkv
from torch.testing import assert_close

from attn_course import (
    additive_scores,
    attention_pooling,
    causal_mask,
    dot_product_scores,
    scaled_dot_product_attention,
)

# ----------------------------------------------------------------------------------------------
# dot_product_scores and additive_scores
# ----------------------------------------------------------------------------------------------


def test_dot_product_scores_hand_computed():
    queries = torch.tensor([[[1.0, 2.0]]])
    keys = torch.tensor([[[3.0, 4.0], [1.0, 0.0]]])  # q . k = 11 and 1
    assert_close(dot_product_scores(queries, keys, scale=False), torch.tensor([[[11.0, 1.0]]]))
    assert_close(dot_product_scores(queries, keys), torch.tensor([[[11.0, 1.0]]]) / math.sqrt(2))


def test_dot_product_scores_match_torch_matmul(dtype, gen, call_unmodified):
    queries, keys, _ = random_qkv(gen, dtype)
    got = call_unmodified(dot_product_scores, queries, keys)
    assert got.dtype == dtype
    assert_close(got, torch.matmul(queries, keys.transpose(-2, -1)) / math.sqrt(4))


def _additive_loop(queries, keys, w_q, w_k, w_v):
    """w_v . tanh(W_q q + W_k k) for every (batch, query, key), one pair at a time."""
    b, nq, nk = queries.shape[0], queries.shape[1], keys.shape[1]
    out = torch.empty(b, nq, nk, dtype=queries.dtype)
    for i in range(b):
        for j in range(nq):
            for k in range(nk):
                out[i, j, k] = torch.dot(w_v, torch.tanh(w_q @ queries[i, j] + w_k @ keys[i, k]))
    return out


def test_additive_scores_hand_computed():
    # one hidden unit: score = w_v * tanh(w_q . q + w_k . k)
    queries = torch.tensor([[[1.0, 0.0]]], dtype=torch.float64)
    keys = torch.tensor([[[2.0], [-1.0]]], dtype=torch.float64)
    w_q = torch.tensor([[0.5, 3.0]], dtype=torch.float64)
    w_k = torch.tensor([[0.25]], dtype=torch.float64)
    w_v = torch.tensor([2.0], dtype=torch.float64)
    expected = torch.tensor([[[2 * math.tanh(0.5 + 0.5), 2 * math.tanh(0.5 - 0.25)]]], dtype=torch.float64)
    assert_close(additive_scores(queries, keys, w_q, w_k, w_v), expected)


def test_additive_scores_match_loop(dtype, gen, call_unmodified):
    queries = torch.randn(2, 3, 5, generator=gen, dtype=dtype)
    keys = torch.randn(2, 4, 2, generator=gen, dtype=dtype)
    w_q = torch.randn(7, 5, generator=gen, dtype=dtype)
    w_k = torch.randn(7, 2, generator=gen, dtype=dtype)
    w_v = torch.randn(7, generator=gen, dtype=dtype)
    got = call_unmodified(additive_scores, queries, keys, w_q, w_k, w_v)
    assert got.dtype == dtype and got.shape == (2, 3, 4)
    assert_close(got, _additive_loop(queries, keys, w_q, w_k, w_v))


# ----------------------------------------------------------------------------------------------
# attention_pooling
# ----------------------------------------------------------------------------------------------


def test_attention_pooling_hand_computed():
    scores = torch.zeros(1, 2, 3)
    values = torch.tensor([[[1.0, 10.0], [3.0, 30.0], [100.0, 1000.0]]])
    output, weights = attention_pooling(scores, values, torch.tensor([[2, 1]]))
    assert_close(weights, torch.tensor([[[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]]))
    assert_close(output, torch.tensor([[[2.0, 20.0], [1.0, 10.0]]]))


def test_attention_pooling_applies_dropout_to_the_pooled_weights_only(gen):
    scores = torch.randn(2, 3, 4, generator=gen)
    values = torch.randn(2, 4, 5, generator=gen)
    plain_out, plain_w = attention_pooling(scores, values)
    out, weights = attention_pooling(scores, values, dropout=lambda w: 2 * w)
    assert torch.equal(weights, plain_w)  # returned weights are before dropout
    assert_close(out, 2 * plain_out)


def test_attention_pooling_matches_softmax_then_bmm(dtype, gen, call_unmodified):
    scores = torch.randn(2, 3, 4, generator=gen, dtype=dtype)
    values = torch.randn(2, 4, 5, generator=gen, dtype=dtype)
    valid_lens = torch.tensor([3, 1])
    out, weights = call_unmodified(attention_pooling, scores, values, valid_lens)
    mask = bool_mask_by_loop(valid_lens, 3, 4)
    expected_w = torch.softmax(scores.masked_fill(~mask, -math.inf), -1)
    assert out.dtype == dtype and weights.dtype == dtype
    assert_close(weights, expected_w)
    assert_close(out, torch.matmul(expected_w, values))


# ----------------------------------------------------------------------------------------------
# scaled_dot_product_attention
# ----------------------------------------------------------------------------------------------


def test_sdpa_hand_computed():
    queries = torch.tensor([[[1.0, 0.0]]], dtype=torch.float64)
    keys = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)  # scores 1/sqrt(2), 0
    values = torch.tensor([[[10.0], [20.0]]], dtype=torch.float64)
    a, b = math.exp(1 / math.sqrt(2)), math.exp(0.0)
    output, weights = scaled_dot_product_attention(queries, keys, values)
    assert_close(weights, torch.tensor([[[a / (a + b), b / (a + b)]]], dtype=torch.float64))
    assert_close(output, torch.tensor([[[(10 * a + 20 * b) / (a + b)]]], dtype=torch.float64))


@pytest.mark.parametrize(
    "valid_lens",
    [None, torch.tensor([2, 5]), torch.tensor([[1, 5, 3], [2, 4, 1]])],
    ids=["none", "(B,)", "(B, Q)"],
)
def test_sdpa_matches_torch_scaled_dot_product_attention(valid_lens, dtype, gen):
    queries, keys, values = random_qkv(gen, dtype)
    mask = None if valid_lens is None else bool_mask_by_loop(valid_lens, 3, 5)
    expected = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask)
    output, weights = scaled_dot_product_attention(queries, keys, values, valid_lens)
    assert_close(output, expected)
    scores = queries @ keys.transpose(1, 2) / math.sqrt(4)
    expected_w = torch.softmax(scores if mask is None else scores.masked_fill(~mask, -math.inf), -1)
    assert_close(weights, expected_w)


@pytest.mark.parametrize("valid_lens", [torch.tensor([2, 3]), torch.tensor([[1, 2, 3], [3, 2, 2]])])
def test_sdpa_weights_properties(valid_lens, dtype, gen):
    queries, keys, values = random_qkv(gen, dtype)
    _, weights = scaled_dot_product_attention(queries, keys, values, valid_lens)
    mask = bool_mask_by_loop(valid_lens, 3, 5)
    assert (weights[~mask] == 0).all()
    assert_close(weights.sum(-1), torch.ones(2, 3, dtype=dtype))


def test_sdpa_is_invariant_to_padded_keys_and_values(dtype, gen):
    queries, keys, values = random_qkv(gen, dtype)
    valid_lens = torch.tensor([2, 4])
    keys2, values2 = keys.clone(), values.clone()
    keys2[0, 2:] = torch.randn(3, 4, generator=gen, dtype=dtype) * 100
    values2[0, 2:] = torch.randn(3, 6, generator=gen, dtype=dtype) * 100
    keys2[1, 4:] = -1e4
    values2[1, 4:] = 1e4
    out1, w1 = scaled_dot_product_attention(queries, keys, values, valid_lens)
    out2, w2 = scaled_dot_product_attention(queries, keys2, values2, valid_lens)
    assert torch.equal(out1, out2)
    assert torch.equal(w1, w2)


def test_sdpa_is_invariant_to_padding_with_per_query_lengths(gen):
    queries, keys, values = random_qkv(gen, torch.float64)
    valid_lens = torch.tensor([[1, 2, 2], [3, 4, 2]])
    keys2, values2 = keys.clone(), values.clone()
    keys2[0, 2:], values2[0, 2:] = 50.0, -50.0  # beyond every query's length in sequence 0
    keys2[1, 4:], values2[1, 4:] = 50.0, -50.0
    assert torch.equal(
        scaled_dot_product_attention(queries, keys, values, valid_lens)[0],
        scaled_dot_product_attention(queries, keys2, values2, valid_lens)[0],
    )


def test_sdpa_query_with_no_valid_key_gives_zeros(dtype, gen):
    queries, keys, values = random_qkv(gen, dtype)
    output, weights = scaled_dot_product_attention(queries, keys, values, torch.tensor([[0, 2, 0], [5, 0, 1]]))
    assert not output.isnan().any() and not weights.isnan().any()
    assert (output[0, 0] == 0).all() and (output[0, 2] == 0).all() and (output[1, 1] == 0).all()
    assert (weights[0, 0] == 0).all()


@pytest.mark.parametrize("valid_lens", [None, torch.tensor([1, 5]), torch.tensor([[0, 1, 2], [3, 4, 5]])])
def test_sdpa_keeps_dtype_shape_and_inputs(valid_lens, dtype, gen, call_unmodified):
    queries, keys, values = random_qkv(gen, dtype)
    output, weights = call_unmodified(scaled_dot_product_attention, queries, keys, values, valid_lens)
    assert output.dtype == dtype and weights.dtype == dtype
    assert output.shape == (2, 3, 6) and weights.shape == (2, 3, 5)


# ----------------------------------------------------------------------------------------------
# Error messages
# ----------------------------------------------------------------------------------------------

QS, KS, VS = torch.zeros(2, 3, 4), torch.zeros(2, 5, 4), torch.zeros(2, 5, 6)


@pytest.mark.parametrize(
    "override, error, match",
    [
        ({"queries": QS.tolist()}, TypeError, r"queries must be a torch\.Tensor, got list"),
        ({"keys": np.zeros((2, 5, 4))}, TypeError, r"keys must be a torch\.Tensor, got ndarray"),
        ({"values": VS.long()}, TypeError, r"values must be a floating-point tensor.*torch\.int64"),
        (
            {"queries": torch.zeros(3, 4)},
            ValueError,
            r"queries must have shape \(B, Q, D\) \(3-D\), got shape \(3, 4\)",
        ),
        ({"keys": torch.zeros(5, 4)}, ValueError, r"keys must have shape \(B, K, D\) \(3-D\), got shape \(5, 4\)"),
        (
            {"values": torch.zeros(1, 2, 5, 6)},
            ValueError,
            r"values must have shape \(B, K, V\).*got shape \(1, 2, 5, 6\)",
        ),
        ({"keys": KS.double()}, TypeError, r"keys has dtype torch\.float64 but queries has dtype torch\.float32"),
        ({"values": VS.double()}, TypeError, r"values has dtype torch\.float64 but queries has dtype torch\.float32"),
        (
            {"keys": torch.zeros(3, 5, 4)},
            ValueError,
            r"share the batch size B, got queries \(2, 3, 4\), keys \(3, 5, 4\), values \(2, 5, 6\)",
        ),
        ({"values": torch.zeros(2, 6, 6)}, ValueError, r"values\.shape\[1\] must be K = 5.*got values \(2, 6, 6\)"),
        (
            {"keys": torch.zeros(2, 5, 3)},
            ValueError,
            r"same size D.*queries \(2, 3, 4\) \(D = 4\).*keys \(2, 5, 3\) \(D = 3\)",
        ),
        ({"valid_lens": [2, 3]}, TypeError, r"valid_lens must be a torch\.Tensor, got list"),
        ({"valid_lens": torch.tensor([2.0, 3.0])}, TypeError, r"valid_lens must be an integer tensor.*torch\.float32"),
        (
            {"valid_lens": torch.tensor([2, 3, 4])},
            ValueError,
            r"valid_lens must have shape \(2,\) or \(2, 3\).*got shape \(3,\)",
        ),
        ({"valid_lens": torch.tensor([2, 6])}, ValueError, r"valid_lens.*\[0, 5\].*got 6"),
        ({"valid_lens": torch.tensor([-1, 5])}, ValueError, r"valid_lens.*\[0, 5\].*got -1"),
    ],
)
def test_sdpa_error_messages(override, error, match):
    args = {"queries": QS, "keys": KS, "values": VS, "valid_lens": None}
    args.update(override)
    with pytest.raises(error, match=match):
        scaled_dot_product_attention(**args)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: dot_product_scores(torch.zeros(2, 3, 4), torch.zeros(2, 5, 3)), r"keys.*\(2, 5, 3\)"),
        (lambda: dot_product_scores(torch.zeros(3, 4), torch.zeros(5, 4)), r"queries.*\(3, 4\)"),
        (
            lambda: additive_scores(
                torch.zeros(2, 3, 4), torch.zeros(2, 5, 2), torch.zeros(7, 3), torch.zeros(7, 2), torch.zeros(7)
            ),
            r"w_q.*\(7, 3\)",
        ),
        (lambda: attention_pooling(torch.zeros(2, 3, 5), torch.zeros(2, 4, 6)), r"values.*\(2, 4, 6\)"),
    ],
    ids=["dot-D-mismatch", "dot-rank", "additive-w_q-size", "pooling-K-mismatch"],
)
def test_public_scoring_helpers_name_the_bad_argument(call, match):
    """These functions are public (attn_course.__all__), so bad shapes must be reported by name (STYLE 5)."""
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# ----------------------------------------------------------------------------------------------
# Boolean masks (True = may attend): causal, and causal & padding
# ----------------------------------------------------------------------------------------------


def _tril(n):
    return torch.tril(torch.ones(n, n)).bool()  # (Q, K): query i sees keys 0..i


def test_attention_pooling_with_a_causal_mask_hand_computed():
    scores = torch.zeros(1, 3, 3)
    values = torch.tensor([[[3.0, 30.0], [6.0, 60.0], [9.0, 90.0]]])
    output, weights = attention_pooling(scores, values, mask=causal_mask(3))
    third = 1 / 3
    assert_close(weights, torch.tensor([[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [third, third, third]]]))
    assert_close(output, torch.tensor([[[3.0, 30.0], [4.5, 45.0], [6.0, 60.0]]]))


def test_attention_pooling_combines_mask_and_valid_lens(dtype, gen, call_unmodified):
    scores = torch.randn(2, 4, 4, generator=gen, dtype=dtype)
    values = torch.randn(2, 4, 3, generator=gen, dtype=dtype)
    valid_lens = torch.tensor([2, 4])
    out, weights = call_unmodified(attention_pooling, scores, values, valid_lens, None, _tril(4))
    allowed = _tril(4) & bool_mask_by_loop(valid_lens, 4, 4)
    expected_w = torch.softmax(scores.masked_fill(~allowed, -math.inf), -1)  # every row keeps key 0
    assert_close(weights, expected_w)
    assert_close(out, torch.matmul(expected_w, values))


def test_sdpa_causal_mask_matches_torch_is_causal(dtype, gen, call_unmodified):
    queries, keys, values = random_qkv(gen, dtype, q=5, k=5)
    mask = causal_mask(5)
    output, weights = call_unmodified(scaled_dot_product_attention, queries, keys, values, mask=mask)
    assert output.dtype == dtype and output.shape == (2, 5, 6)
    assert_close(output, F.scaled_dot_product_attention(queries, keys, values, is_causal=True))
    scores = queries @ keys.transpose(1, 2) / math.sqrt(4)
    assert_close(weights, torch.softmax(scores.masked_fill(~_tril(5), -math.inf), -1))
    assert (weights.triu(1) == 0).all()  # nothing from the future, exactly


@pytest.mark.parametrize("valid_lens", [torch.tensor([2, 5]), torch.tensor([[1, 2, 3, 3, 3], [5, 4, 1, 2, 5]])])
def test_sdpa_causal_and_padding_matches_torch_attn_mask(valid_lens, dtype, gen):
    queries, keys, values = random_qkv(gen, dtype, q=5, k=5)
    attn_mask = _tril(5) & bool_mask_by_loop(valid_lens, 5, 5)  # (B, Q, K); key 0 is allowed in every row
    expected = F.scaled_dot_product_attention(queries, keys, values, attn_mask=attn_mask)
    output, weights = scaled_dot_product_attention(queries, keys, values, valid_lens, causal_mask(5))
    assert_close(output, expected)
    assert (weights[~attn_mask] == 0).all()
    assert_close(weights.sum(-1), torch.ones(2, 5, dtype=dtype))
    # the combined mask alone gives the same
    assert torch.equal(output, scaled_dot_product_attention(queries, keys, values, mask=attn_mask)[0])


def test_sdpa_with_causal_mask_is_invariant_to_padded_keys_and_values(dtype, gen):
    queries, keys, values = random_qkv(gen, dtype, q=5, k=5)
    valid_lens = torch.tensor([3, 4])
    keys2, values2 = keys.clone(), values.clone()
    keys2[0, 3:], values2[0, 3:] = 1e3, -1e3
    keys2[1, 4:] = torch.randn(1, 4, generator=gen, dtype=dtype) * 100
    values2[1, 4:] = torch.randn(1, 6, generator=gen, dtype=dtype) * 100
    out1, w1 = scaled_dot_product_attention(queries, keys, values, valid_lens, causal_mask(5))
    out2, w2 = scaled_dot_product_attention(queries, keys2, values2, valid_lens, causal_mask(5))
    assert torch.equal(out1[0, :3], out2[0, :3])  # real positions of sequence 0
    assert torch.equal(out1[1, :4], out2[1, :4])
    assert torch.equal(w1, w2)  # no query, padded or not, attends to a padded key


def test_sdpa_with_causal_mask_output_ignores_the_future(gen):
    queries, keys, values = random_qkv(gen, torch.float64, q=5, k=5)
    keys2, values2 = keys.clone(), values.clone()
    keys2[:, 3:] += 10.0  # positions 3 and 4 change
    values2[:, 3:] -= 10.0
    out1, _ = scaled_dot_product_attention(queries, keys, values, mask=causal_mask(5))
    out2, _ = scaled_dot_product_attention(queries, keys2, values2, mask=causal_mask(5))
    assert torch.equal(out1[:, :3], out2[:, :3])  # queries 0-2 see only keys 0-2
    assert not torch.allclose(out1[:, 3:], out2[:, 3:])


@pytest.mark.parametrize(
    "mask, error, match",
    [
        (torch.ones(3, 5), TypeError, r"mask must be a bool tensor \(True = may attend\), got torch\.float32"),
        (torch.ones(3, 5, dtype=torch.int64), TypeError, r"mask must be a bool tensor.*got torch\.int64"),
        (torch.ones(3, 4, dtype=torch.bool), ValueError, r"mask must broadcast .* = \(2, 3, 5\), got \(3, 4\)"),
    ],
    ids=["float", "int", "shape"],
)
def test_sdpa_and_attention_pooling_mask_error_messages(mask, error, match):
    with pytest.raises(error, match=match):
        scaled_dot_product_attention(QS, KS, VS, mask=mask)
    with pytest.raises(error, match=match):
        attention_pooling(torch.zeros(2, 3, 5), VS, mask=mask)


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode])
def test_scaled_dot_product_attention_without_autograd_matches_torch_and_leaves_inputs_alone(
    context, gen, call_unmodified
):
    """Without autograd the masking and the softmax write into the function's own scores: same numbers."""
    q, k, v = (torch.randn(3, 4, 8, generator=gen) for _ in range(3))
    lens = torch.tensor([4, 1, 2])
    allowed = torch.arange(4) < lens[:, None, None]  # (B, 1, K)
    with context():
        out, weights = call_unmodified(scaled_dot_product_attention, q, k, v, lens)
        plain_out, plain_weights = call_unmodified(scaled_dot_product_attention, q, k, v)
    assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=allowed))
    assert_close(plain_out, F.scaled_dot_product_attention(q, k, v))
    assert_close(weights, torch.softmax((q @ k.transpose(1, 2) / 8**0.5).masked_fill(~allowed, -math.inf), -1))
    assert_close(plain_weights, torch.softmax(q @ k.transpose(1, 2) / 8**0.5, -1))
