"""attn_course.masking: sequence_mask and masked_softmax."""

import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from attn_course import masked_softmax, sequence_mask


def _mask_by_loop(valid_lens, num_keys):
    """mask[..., k] = k < valid_lens[...], written out element by element."""
    flat = [[k < int(n) for k in range(num_keys)] for n in valid_lens.reshape(-1)]
    return torch.tensor(flat, dtype=torch.bool).reshape(*valid_lens.shape, num_keys)


# ----------------------------------------------------------------------------------------------
# sequence_mask
# ----------------------------------------------------------------------------------------------


def test_sequence_mask_hand_computed():
    got = sequence_mask(torch.tensor([2, 0, 3]), 3)
    expected = torch.tensor([[True, True, False], [False, False, False], [True, True, True]])
    assert got.dtype == torch.bool
    assert torch.equal(got, expected)


@pytest.mark.parametrize("shape", [(4,), (2, 3), (2, 2, 2)])
def test_sequence_mask_matches_loop_for_any_shape(shape, gen, call_unmodified):
    valid_lens = torch.randint(0, 6, shape, generator=gen)
    got = call_unmodified(sequence_mask, valid_lens, 5)
    assert got.shape == (*shape, 5)
    assert torch.equal(got, _mask_by_loop(valid_lens, 5))


def test_sequence_mask_zero_keys():
    assert sequence_mask(torch.tensor([0, 0]), 0).shape == (2, 0)


@pytest.mark.parametrize(
    "valid_lens, num_keys, error, match",
    [
        (torch.tensor([1, 2]), -1, ValueError, r"num_keys must be an integer >= 0, got -1"),
        (torch.tensor([1, 2]), 2.5, ValueError, r"num_keys must be an integer >= 0, got 2\.5"),
        (torch.tensor([1, 2]), True, ValueError, r"num_keys must be an integer >= 0, got True"),
        ([1, 2], 3, TypeError, r"valid_lens must be a torch\.Tensor, got list"),
        (np.array([1, 2]), 3, TypeError, r"valid_lens must be a torch\.Tensor, got ndarray"),
        (torch.tensor([1.0, 2.0]), 3, TypeError, r"valid_lens must be an integer tensor.*got torch\.float32"),
        (torch.tensor([True, False]), 3, TypeError, r"valid_lens must be an integer tensor.*got torch\.bool"),
        (torch.tensor([1, 4]), 3, ValueError, r"valid_lens must lie in \[0, 3\] \(the number of keys\), got 4"),
        (torch.tensor([-1, 2]), 3, ValueError, r"valid_lens must lie in \[0, 3\] \(the number of keys\), got -1"),
    ],
)
def test_sequence_mask_error_messages(valid_lens, num_keys, error, match):
    with pytest.raises(error, match=match):
        sequence_mask(valid_lens, num_keys)


# ----------------------------------------------------------------------------------------------
# masked_softmax: hand-computed cases and agreement with torch.softmax
# ----------------------------------------------------------------------------------------------


def test_masked_softmax_hand_computed():
    scores = torch.tensor([[[-0.5, 0.0, -2.0], [-0.5, 0.0, -2.0]]], dtype=torch.float64)
    e = [math.exp(-0.5), math.exp(0.0), math.exp(-2.0)]
    full = [x / sum(e) for x in e]
    two = [e[0] / (e[0] + e[1]), e[1] / (e[0] + e[1]), 0.0]
    got = masked_softmax(scores, torch.tensor([[3, 2]]))  # (B, Q) lengths: 3 for query 0, 2 for query 1
    assert_close(got, torch.tensor([[full, two]], dtype=torch.float64))


def test_masked_softmax_without_mask_matches_torch_softmax(dtype, gen):
    scores = torch.randn(2, 3, 5, generator=gen, dtype=dtype) * 3
    assert_close(masked_softmax(scores), torch.softmax(scores, dim=-1))


@pytest.mark.parametrize(
    "valid_lens",
    [torch.tensor([3, 5]), torch.tensor([[1, 5, 2], [4, 1, 3]])],
    ids=["per-sequence (B,)", "per-query (B, Q)"],
)
def test_masked_softmax_matches_torch_softmax_with_minus_inf_mask(valid_lens, dtype, gen):
    scores = torch.randn(2, 3, 5, generator=gen, dtype=dtype) * 3
    lens = valid_lens if valid_lens.ndim == 2 else valid_lens[:, None].expand(2, 3)
    mask = _mask_by_loop(lens, 5)  # (B, Q, K); every row has at least one valid key
    expected = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)
    got = masked_softmax(scores, valid_lens)
    assert_close(got, expected)
    # the same with PyTorch's boolean-mask convention for attention (True = take part)
    assert_close(got, torch.softmax(torch.where(mask, scores, torch.tensor(-math.inf, dtype=dtype)), dim=-1))


# ----------------------------------------------------------------------------------------------
# masked_softmax: properties
# ----------------------------------------------------------------------------------------------


def test_masked_softmax_rows_sum_to_one_and_masked_weights_are_exactly_zero(dtype, gen):
    scores = torch.randn(3, 4, 6, generator=gen, dtype=dtype) * 10
    valid_lens = torch.randint(1, 7, (3, 4), generator=gen)
    weights = masked_softmax(scores, valid_lens)
    mask = _mask_by_loop(valid_lens, 6)
    assert (weights[~mask] == 0).all()
    assert (weights[mask] > 0).all()
    assert_close(weights.sum(-1), torch.ones(3, 4, dtype=dtype))


def test_masked_softmax_very_negative_valid_scores_still_beat_padding():
    # d2l masks with -1e6, which a valid score of -1e7 loses to; here padding must get 0 anyway
    scores = torch.tensor([[[-1e7, -1e7, 5.0]]])
    assert torch.equal(masked_softmax(scores, torch.tensor([2])), torch.tensor([[[0.5, 0.5, 0.0]]]))


def test_masked_softmax_ignores_whatever_padded_scores_hold(dtype, gen):
    scores = torch.randn(2, 3, 4, generator=gen, dtype=dtype)
    changed = scores.clone()
    changed[0, :, 2:] = 1e30
    changed[1, :, 1:] = -1e30
    valid_lens = torch.tensor([2, 1])
    assert torch.equal(masked_softmax(changed, valid_lens), masked_softmax(scores, valid_lens))


@pytest.mark.parametrize("valid_lens", [torch.tensor([0, 2]), torch.tensor([[0, 2], [3, 0]])], ids=["(B,)", "(B, Q)"])
def test_masked_softmax_empty_row_is_zero_with_finite_gradient(valid_lens, dtype, gen):
    scores = torch.randn(2, 2, 3, generator=gen, dtype=dtype, requires_grad=True)
    weights = masked_softmax(scores, valid_lens)
    lens = valid_lens if valid_lens.ndim == 2 else valid_lens[:, None].expand(2, 2)
    empty = lens == 0
    assert not weights.isnan().any()
    assert (weights[empty] == 0).all()
    assert_close(weights[~empty].sum(-1), torch.ones(int((~empty).sum()), dtype=dtype))
    (weights * torch.randn(2, 2, 3, generator=gen, dtype=dtype)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert (scores.grad[~_mask_by_loop(lens, 3)] == 0).all()  # masked scores get no gradient


def test_masked_softmax_gradient_matches_torch_softmax_on_valid_rows(gen):
    scores = torch.randn(2, 3, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    valid_lens = torch.tensor([2, 4])
    probe = torch.randn(2, 3, 4, generator=gen, dtype=torch.float64)
    (masked_softmax(scores, valid_lens) * probe).sum().backward()
    ours = scores.grad.clone()
    scores.grad = None
    mask = _mask_by_loop(valid_lens[:, None].expand(2, 3), 4)
    (torch.softmax(scores.masked_fill(~mask, -math.inf), -1) * probe).sum().backward()
    assert_close(ours, scores.grad)


@pytest.mark.parametrize("valid_lens", [None, torch.tensor([1, 3]), torch.tensor([[0, 1, 2], [3, 3, 1]])])
def test_masked_softmax_keeps_dtype_shape_and_inputs(valid_lens, dtype, gen, call_unmodified):
    scores = torch.randn(2, 3, 3, generator=gen, dtype=dtype)
    weights = call_unmodified(masked_softmax, scores, valid_lens)
    assert weights.dtype == dtype and weights.shape == (2, 3, 3)


# ----------------------------------------------------------------------------------------------
# masked_softmax: error messages
# ----------------------------------------------------------------------------------------------

S = torch.zeros(2, 3, 5)


@pytest.mark.parametrize(
    "scores, valid_lens, error, match",
    [
        ([[[0.0, 1.0]]], None, TypeError, r"scores must be a torch\.Tensor, got list"),
        (np.zeros((2, 3, 5)), None, TypeError, r"scores must be a torch\.Tensor, got ndarray"),
        (
            torch.zeros(2, 3, 5, dtype=torch.int64),
            None,
            TypeError,
            r"scores must be a floating-point tensor.*torch\.int64",
        ),
        (
            torch.zeros(2, 5),
            None,
            ValueError,
            r"scores must have shape \(B, Q, K\) \(3-D\), got shape \(2, 5\) \(2-D\)",
        ),
        (torch.zeros(1, 2, 3, 5), None, ValueError, r"scores must have shape \(B, Q, K\).*got shape \(1, 2, 3, 5\)"),
        (S, [2, 3], TypeError, r"valid_lens must be a torch\.Tensor, got list"),
        (S, torch.tensor([2.0, 3.0]), TypeError, r"valid_lens must be an integer tensor.*got torch\.float32"),
        (S, torch.tensor([True, True]), TypeError, r"valid_lens must be an integer tensor.*got torch\.bool"),
        (S, torch.tensor([2, 3, 4]), ValueError, r"valid_lens must have shape \(2,\) or \(2, 3\).*got shape \(3,\)"),
        (S, torch.tensor([[2], [3]]), ValueError, r"valid_lens must have shape \(2,\) or \(2, 3\).*got shape \(2, 1\)"),
        (S, torch.tensor(2), ValueError, r"valid_lens must have shape \(2,\) or \(2, 3\).*got shape \(\)"),
        (S, torch.tensor([2, 6]), ValueError, r"valid_lens.*\[0, 5\].*got 6"),
        (S, torch.tensor([-1, 2]), ValueError, r"valid_lens.*\[0, 5\].*got -1"),
        (S, torch.tensor([[1, 2, 3], [4, 5, 6]]), ValueError, r"valid_lens.*\[0, 5\].*got 6"),
    ],
)
def test_masked_softmax_error_messages(scores, valid_lens, error, match):
    with pytest.raises(error, match=match):
        masked_softmax(scores, valid_lens)
