"""attn_course.masking: sequence_mask and masked_softmax."""

import contextlib
import math

import numpy as np
import pytest
import torch
from _helpers import refused
from torch.testing import assert_close

from attn_course import causal_mask, masked_softmax, sequence_mask


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
        (torch.tensor([1, 2]), 2.5, TypeError, r"num_keys must be an integer >= 0, got 2\.5"),
        (torch.tensor([1, 2]), True, TypeError, r"num_keys must be an integer >= 0, got True"),
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


# ----------------------------------------------------------------------------------------------
# causal_mask
# ----------------------------------------------------------------------------------------------


def test_causal_mask_hand_computed_square():
    got = causal_mask(3)
    expected = torch.tensor([[True, False, False], [True, True, False], [True, True, True]])
    assert got.dtype == torch.bool
    assert torch.equal(got, expected)


def test_causal_mask_hand_computed_more_keys_than_queries():
    # the 2 queries are the last 2 of 4 positions: query 0 is position 2 (sees keys 0-2), query 1 is position 3
    got = causal_mask(2, 4)
    assert torch.equal(got, torch.tensor([[True, True, True, False], [True, True, True, True]]))


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_causal_mask_equals_tril_of_ones(n):
    expected = torch.tril(torch.ones(n, n)).bool()
    assert torch.equal(causal_mask(n), expected)
    assert torch.equal(causal_mask(n, n), expected)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        *refused("num_queries", 0, -2, 2.0, True, "3"),
        *refused("num_keys", 2, 4.0, True, wanted="an integer >= num_queries = 3", num_queries=3),
    ],
)
def test_causal_mask_error_messages(kwargs, match, int_error):
    with pytest.raises(int_error(kwargs[match.split()[0]]), match=match):
        causal_mask(*kwargs.values())  # num_queries first, as a notebook passes them


# ----------------------------------------------------------------------------------------------
# masked_softmax with a boolean mask (True = may attend), alone or with valid_lens
# ----------------------------------------------------------------------------------------------


def _reference_masked_softmax(scores, allowed):
    """torch.softmax over scores.masked_fill(~allowed, -inf) on rows with an allowed key; zeros elsewhere."""
    allowed = allowed.expand_as(scores)
    expected = torch.zeros_like(scores)
    rows = allowed.any(-1)  # (B, Q)
    expected[rows] = torch.softmax(scores.masked_fill(~allowed, -math.inf)[rows], dim=-1)
    return expected


@pytest.mark.parametrize("mask_shape", [(3, 5), (2, 3, 5), (2, 1, 5)], ids=["(Q, K)", "(B, Q, K)", "(B, 1, K)"])
def test_masked_softmax_with_mask_matches_torch_softmax_with_minus_inf(mask_shape, dtype, gen, call_unmodified):
    scores = torch.randn(2, 3, 5, generator=gen, dtype=dtype) * 3
    mask = torch.rand(mask_shape, generator=gen) < 0.6
    mask[..., 0] = True  # every row keeps at least one key
    got = call_unmodified(masked_softmax, scores, mask=mask)
    assert got.dtype == dtype and got.shape == (2, 3, 5)
    assert_close(got, torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1))
    full = mask.expand(2, 3, 5)
    assert (got[~full] == 0).all()
    assert_close(got.sum(-1), torch.ones(2, 3, dtype=dtype))


def test_masked_softmax_causal_mask_hand_computed():
    scores = torch.tensor([[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]], dtype=torch.float64)
    e1, e2, e3 = math.exp(1.0), math.exp(2.0), math.exp(3.0)
    expected = torch.tensor(
        [[[1.0, 0.0, 0.0], [e1 / (e1 + e2), e2 / (e1 + e2), 0.0], [e1, e2, e3]]], dtype=torch.float64
    )
    expected[0, 2] /= e1 + e2 + e3
    assert_close(masked_softmax(scores, mask=causal_mask(3)), expected)


def test_masked_softmax_all_true_mask_is_the_plain_softmax(dtype, gen):
    scores = torch.randn(2, 3, 4, generator=gen, dtype=dtype)
    assert_close(masked_softmax(scores, mask=torch.ones(3, 4, dtype=torch.bool)), torch.softmax(scores, dim=-1))


@pytest.mark.parametrize(
    "valid_lens",
    [torch.tensor([2, 5]), torch.tensor([[1, 4, 5], [3, 0, 2]])],
    ids=["(B,)", "(B, Q)"],
)
@pytest.mark.parametrize("mask_kind", ["causal (Q, K)", "random (B, Q, K)", "random (B, 1, K)"])
def test_masked_softmax_combines_mask_and_valid_lens_with_and(valid_lens, mask_kind, dtype, gen, call_unmodified):
    scores = torch.randn(2, 3, 5, generator=gen, dtype=dtype) * 3
    if mask_kind.startswith("causal"):
        mask = causal_mask(3, 5)
    else:
        mask = torch.rand((2, 3, 5) if "Q, K" in mask_kind else (2, 1, 5), generator=gen) < 0.5
    lens = valid_lens if valid_lens.ndim == 2 else valid_lens[:, None].expand(2, 3)
    allowed = _mask_by_loop(lens, 5) & mask  # (B, Q, K): a key must pass both
    got = call_unmodified(masked_softmax, scores, valid_lens, mask)
    assert_close(got, _reference_masked_softmax(scores, allowed))
    assert (got[~allowed] == 0).all()
    assert (got[allowed] > 0).all()
    rows = allowed.any(-1)
    assert_close(got.sum(-1)[rows], torch.ones(int(rows.sum()), dtype=dtype))
    assert (got[~rows] == 0).all()
    # the same as handing masked_softmax the combined mask alone
    assert torch.equal(got, masked_softmax(scores, mask=allowed))


def test_masked_softmax_ignores_whatever_masked_scores_hold(dtype, gen):
    scores = torch.randn(2, 4, 4, generator=gen, dtype=dtype)
    mask = causal_mask(4)
    changed = scores.clone()
    changed[:, ~mask] = torch.tensor([1e30, -1e30, 7.0, 1e4, 0.0, -3.0], dtype=dtype)  # the 6 cells above the diagonal
    assert torch.equal(masked_softmax(changed, mask=mask), masked_softmax(scores, mask=mask))


@pytest.mark.parametrize("valid_lens", [None, torch.tensor([3, 3])], ids=["mask-only", "with-valid_lens"])
def test_masked_softmax_row_with_nothing_allowed_is_zero_with_finite_gradient(valid_lens, dtype, gen):
    scores = torch.randn(2, 3, 3, generator=gen, dtype=dtype, requires_grad=True)
    mask = torch.tensor([[True, False, True], [False, False, False], [False, True, False]])  # (Q, K): query 1 empty
    weights = masked_softmax(scores, valid_lens, mask)
    assert not weights.isnan().any()
    assert (weights[:, 1] == 0).all()
    assert_close(weights[:, [0, 2]].sum(-1), torch.ones(2, 2, dtype=dtype))
    (weights * torch.randn(2, 3, 3, generator=gen, dtype=dtype)).sum().backward()
    assert torch.isfinite(scores.grad).all()
    assert (scores.grad[:, ~mask] == 0).all()  # masked scores get no gradient


def test_masked_softmax_with_mask_gradient_matches_torch_softmax(gen):
    scores = torch.randn(2, 4, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    probe = torch.randn(2, 4, 4, generator=gen, dtype=torch.float64)
    mask = causal_mask(4)
    (masked_softmax(scores, torch.tensor([4, 2]), mask) * probe).sum().backward()
    ours = scores.grad.clone()
    scores.grad = None
    allowed = mask & _mask_by_loop(torch.tensor([[4] * 4, [2] * 4]), 4)
    (torch.softmax(scores.masked_fill(~allowed, -math.inf), -1) * probe).sum().backward()
    assert_close(ours, scores.grad)


@pytest.mark.parametrize(
    "mask, error, match",
    [
        (
            torch.ones(3, 5, dtype=torch.int64),
            TypeError,
            r"mask must be a bool tensor \(True = may attend\), got torch\.int64",
        ),
        (torch.ones(3, 5), TypeError, r"mask must be a bool tensor \(True = may attend\), got torch\.float32"),
        ([[True] * 5] * 3, TypeError, r"mask must be a bool tensor \(True = may attend\), got list"),
        (np.ones((3, 5), dtype=bool), TypeError, r"mask must be a bool tensor \(True = may attend\), got ndarray"),
        (
            torch.ones(3, 4, dtype=torch.bool),
            ValueError,
            r"mask must broadcast to the scores' shape \(B, Q, K\) = \(2, 3, 5\), got \(3, 4\)",
        ),
        (torch.ones(3, dtype=torch.bool), ValueError, r"mask must broadcast .* = \(2, 3, 5\), got \(3,\)"),
        (torch.ones(4, 3, 5, dtype=torch.bool), ValueError, r"mask must broadcast .* = \(2, 3, 5\), got \(4, 3, 5\)"),
        (torch.ones(2, 5, 3, dtype=torch.bool), ValueError, r"mask must broadcast .* = \(2, 3, 5\), got \(2, 5, 3\)"),
    ],
    ids=["int", "float", "list", "numpy", "(Q, K-1)", "(Q,)", "batch-4", "transposed"],
)
def test_masked_softmax_mask_error_messages(mask, error, match):
    with pytest.raises(error, match=match):
        masked_softmax(torch.zeros(2, 3, 5), mask=mask)


@pytest.mark.parametrize("shape", [(1, 1, 3, 5), (2, 2, 3, 5)], ids=["(1, 1, Q, K)", "(B, H, Q, K)"])
def test_masked_softmax_rejects_a_mask_with_more_axes_than_the_scores(shape):
    """The docstring says broadcastable *to* (B, Q, K): a 4-D mask (B, H, Q, K) must not make the weights 4-D."""
    with pytest.raises(ValueError, match=r"mask must broadcast to the scores' shape \(B, Q, K\) = \(2, 3, 5\)"):
        masked_softmax(torch.zeros(2, 3, 5), mask=torch.ones(shape, dtype=torch.bool))


def test_masked_softmax_mask_errors_are_checked_alongside_valid_lens():
    with pytest.raises(TypeError, match=r"mask must be a bool tensor"):
        masked_softmax(torch.zeros(2, 3, 5), torch.tensor([1, 2]), torch.ones(3, 5))
    with pytest.raises(ValueError, match=r"valid_lens.*\[0, 5\].*got 6"):
        masked_softmax(torch.zeros(2, 3, 5), torch.tensor([1, 6]), torch.ones(3, 5, dtype=torch.bool))


@pytest.mark.parametrize("context", [contextlib.nullcontext, torch.no_grad, torch.inference_mode])
@pytest.mark.parametrize("masking", ["none", "valid_lens", "mask", "both"])
def test_masked_softmax_is_the_same_with_and_without_autograd_and_leaves_scores_alone(
    context, masking, gen, call_unmodified
):
    """Without autograd the softmax runs in place in masked_softmax's own copy, never in the caller's scores."""
    scores = torch.randn(2, 3, 4, generator=gen)
    lens = torch.tensor([2, 0]) if masking in ("valid_lens", "both") else None
    mask = causal_mask(3, 4) if masking in ("mask", "both") else None
    expected = masked_softmax(scores.clone().requires_grad_(), lens, mask).detach()
    with context():
        got = call_unmodified(masked_softmax, scores, lens, mask)
    assert_close(got, expected)
