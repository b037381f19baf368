"""attn_course.efficient: the online softmax and the tiled forward pass, against PyTorch; block counts; errors."""

import math

import pytest
import torch
import torch.nn.functional as F

import attn_course as ac
from attn_course import efficient

TOL = {torch.float32: {"atol": 1e-5, "rtol": 1e-5}, torch.float64: {"atol": 1e-12, "rtol": 1e-12}}
SOFTMAX_TOL = {torch.float32: {"atol": 1e-6, "rtol": 1e-6}, torch.float64: {"atol": 1e-12, "rtol": 1e-12}}


def _qkv(gen, lead, num_q, num_k, d, v, dtype):
    q = torch.randn(*lead, num_q, d, generator=gen, dtype=dtype)  # (..., Q, D)
    k = torch.randn(*lead, num_k, d, generator=gen, dtype=dtype)  # (..., K, D)
    val = torch.randn(*lead, num_k, v, generator=gen, dtype=dtype)  # (..., K, V)
    return q, k, val


def _bottom_right(num_q, num_k):
    """The bottom-right causal mask for any Q and K: causal_mask's for K >= Q; with Q > K the first rows are empty."""
    return torch.ones(num_q, num_k, dtype=torch.bool).tril(num_k - num_q)


def _window_mask(num_q, num_k, window):
    """Bottom-right causal mask that keeps each query's last ``window`` keys."""
    causal = _bottom_right(num_q, num_k)
    too_old = torch.ones(num_q, num_k, dtype=torch.bool).tril(num_k - num_q - window)
    return causal & ~too_old


# ----------------------------------------------------------------------------------------------------------------------
# online_softmax
# ----------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 10), (2, 3, 33), (4, 64)])
@pytest.mark.parametrize("block_size", [1, 3, 8, 64, 100])
def test_online_softmax_equals_torch_softmax(shape, block_size, dtype, gen):
    scores = torch.randn(*shape, generator=gen, dtype=dtype) * 3
    torch.testing.assert_close(
        ac.online_softmax(scores, block_size), torch.softmax(scores, dim=-1), **SOFTMAX_TOL[dtype]
    )


def test_online_softmax_hand_computed():
    weights = ac.online_softmax(torch.tensor([0.0, math.log(3.0)]), 1)
    torch.testing.assert_close(weights, torch.tensor([0.25, 0.75]))


def test_online_softmax_does_not_overflow_at_1e4(dtype, gen):
    scores = torch.randn(5, 40, generator=gen, dtype=dtype) * 1e4
    scores[:, -1] = 2e4  # the maximum arrives in the last block: every earlier sum is rescaled
    weights = ac.online_softmax(scores, 7)
    assert torch.isfinite(weights).all()
    torch.testing.assert_close(weights, torch.softmax(scores, dim=-1), **SOFTMAX_TOL[dtype])
    torch.testing.assert_close(weights.sum(-1), torch.ones(5, dtype=dtype))


def test_online_softmax_does_not_modify_its_input(gen):
    scores = torch.randn(3, 20, generator=gen)
    copy = scores.clone()
    ac.online_softmax(scores, 6)
    assert torch.equal(scores, copy)


@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16])
def test_online_softmax_low_precision_keeps_dtype(low, gen):
    scores = (torch.randn(4, 30, generator=gen) * 5).to(low)
    weights = ac.online_softmax(scores, 8)
    assert weights.dtype == low
    torch.testing.assert_close(weights.float(), torch.softmax(scores.float(), -1).to(low).float(), atol=1e-2, rtol=0)


# ----------------------------------------------------------------------------------------------------------------------
# flash_attention against F.scaled_dot_product_attention
# ----------------------------------------------------------------------------------------------------------------------

GRID = [  # (leading sizes, Q, K, D, V)
    ((), 1, 1, 4, 4),
    ((2,), 7, 7, 8, 5),
    ((2, 3), 16, 16, 8, 8),
    ((1, 2), 33, 70, 16, 4),
    ((3,), 50, 20, 4, 6),
    ((2, 2), 65, 65, 32, 32),
]


@pytest.mark.parametrize("lead, num_q, num_k, d, v", GRID)
@pytest.mark.parametrize("block_size", [1, 4, 16, 64, 128])
def test_flash_attention_agrees_with_pytorch(lead, num_q, num_k, d, v, block_size, dtype, gen):
    q, k, val = _qkv(gen, lead, num_q, num_k, d, v, dtype)
    out = ac.flash_attention(q, k, val, block_size)
    assert out.shape == (*lead, num_q, v) and out.dtype == dtype
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, val), **TOL[dtype])


@pytest.mark.parametrize("lead, num_q, num_k, d, v", [g for g in GRID if g[2] >= g[1]])
@pytest.mark.parametrize("block_size", [1, 3, 16, 64])
def test_causal_flash_attention_agrees_with_a_bottom_right_causal_mask(
    lead, num_q, num_k, d, v, block_size, dtype, gen
):
    q, k, val = _qkv(gen, lead, num_q, num_k, d, v, dtype)
    want = F.scaled_dot_product_attention(q, k, val, attn_mask=ac.causal_mask(num_q, num_k))
    torch.testing.assert_close(ac.flash_attention(q, k, val, block_size, causal=True), want, **TOL[dtype])


def test_bottom_right_mask_of_the_tests_is_causal_mask():
    for num_q, num_k in ((4, 4), (3, 8), (1, 5)):
        assert torch.equal(_bottom_right(num_q, num_k), ac.causal_mask(num_q, num_k))


@pytest.mark.parametrize("lead, num_q, num_k, d, v", [g for g in GRID if g[1] > g[2]] + [((2,), 9, 1, 4, 3)])
@pytest.mark.parametrize("block_size", [1, 3, 16, 64])
def test_causal_with_more_queries_than_keys_gives_zeros_where_no_key_is_seen(
    lead, num_q, num_k, d, v, block_size, dtype, gen
):
    """Q > K: the first Q - K queries see no key. Their rows are zeros, as masked_softmax's weights of such a row are,
    and as F.scaled_dot_product_attention returns for them; the other rows are the usual bottom-right causal ones."""
    q, k, val = _qkv(gen, lead, num_q, num_k, d, v, dtype)
    mask = _bottom_right(num_q, num_k)
    out = ac.flash_attention(q, k, val, block_size, causal=True)
    assert torch.isfinite(out).all()
    assert torch.equal(out[..., : num_q - num_k, :], torch.zeros_like(out[..., : num_q - num_k, :]))
    assert out[..., num_q - num_k :, :].abs().sum() > 0
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d)).reshape(-1, num_q, num_k)  # (B', Q, K)
    weights = ac.masked_softmax(scores, mask=mask).reshape(*lead, num_q, num_k)  # rows with no key: zeros
    torch.testing.assert_close(out, weights @ val, **TOL[dtype])
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, val, attn_mask=mask), **TOL[dtype])


def test_causal_with_more_queries_than_keys_and_a_window(gen):
    q, k, val = _qkv(gen, (2,), 30, 11, 8, 3, torch.float64)
    out = ac.flash_attention(q, k, val, 4, causal=True, window=3)
    want = F.scaled_dot_product_attention(q, k, val, attn_mask=_window_mask(30, 11, 3))
    torch.testing.assert_close(out, want, **TOL[torch.float64])
    assert torch.equal(out[:, :19], torch.zeros(2, 19, 3, dtype=torch.float64))


def test_causal_is_bottom_right_not_top_left(gen):
    """With Q < K, is_causal=True in PyTorch is top-left aligned; ours follows causal_mask (bottom-right)."""
    q, k, val = _qkv(gen, (2,), 3, 8, 4, 4, torch.float64)
    ours = ac.flash_attention(q, k, val, 2, causal=True)
    top_left = F.scaled_dot_product_attention(q, k, val, is_causal=True)
    assert not torch.allclose(ours, top_left)
    torch.testing.assert_close(ours[..., -1, :], F.scaled_dot_product_attention(q, k, val)[..., -1, :])


@pytest.mark.parametrize(
    "num_q, num_k, window, block_size", [(20, 20, 1, 4), (20, 20, 5, 4), (9, 30, 7, 8), (64, 64, 16, 16)]
)
def test_sliding_window_agrees_with_the_window_mask(num_q, num_k, window, block_size, dtype, gen):
    q, k, val = _qkv(gen, (2,), num_q, num_k, 8, 3, dtype)
    want = F.scaled_dot_product_attention(q, k, val, attn_mask=_window_mask(num_q, num_k, window))
    out = ac.flash_attention(q, k, val, block_size, causal=True, window=window)
    torch.testing.assert_close(out, want, **TOL[dtype])


def test_a_window_as_long_as_the_keys_is_plain_causal(gen):
    q, k, val = _qkv(gen, (2,), 12, 12, 8, 3, torch.float64)
    torch.testing.assert_close(
        ac.flash_attention(q, k, val, 5, causal=True, window=12), ac.flash_attention(q, k, val, 5, causal=True)
    )


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_does_not_modify_its_inputs(causal, gen):
    q, k, val = _qkv(gen, (2,), 10, 10, 4, 4, torch.float32)
    copies = [t.clone() for t in (q, k, val)]
    ac.flash_attention(q, k, val, 3, causal=causal)
    assert all(torch.equal(t, c) for t, c in zip((q, k, val), copies, strict=True))


def test_flash_attention_large_scores_stay_finite(gen):
    q, k, val = _qkv(gen, (1,), 20, 20, 4, 4, torch.float32)
    out = ac.flash_attention(q * 300, k * 300, val, 6)  # scores of order 1e5
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q * 300, k * 300, val), atol=1e-4, rtol=1e-4)


def test_flash_attention_scores_that_overflow_are_named_never_nan(gen):
    q, k, val = _qkv(gen, (1,), 4, 4, 4, 4, torch.float32)
    big = torch.full_like(q, 1e20)  # finite entries, but q . k = 4e40 / 2 does not fit in float32
    with pytest.raises(ValueError, match=r"scores must be finite, got NaN or infinity: Q K\^T / sqrt\(D\) overflowed"):
        ac.flash_attention(big, big, val, 2)
    with pytest.raises(ValueError, match=r"overflowed torch\.float32"):  # every score -inf: 0 / 0 would follow
        ac.flash_attention(big, -big, val, 2, causal=True)
    with pytest.raises(ValueError, match=r"scores must be finite"):  # the reference says the same words
        ac.scaled_dot_product_attention(big, big, val)


@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16])
def test_flash_attention_low_precision_accumulates_in_float32(low, gen):
    q, k, val = (t.to(low) for t in _qkv(gen, (2,), 24, 24, 8, 8, torch.float32))
    out = ac.flash_attention(q, k, val, 8, causal=True)
    assert out.dtype == low
    want = F.scaled_dot_product_attention(q.float(), k.float(), val.float(), attn_mask=ac.causal_mask(24))
    torch.testing.assert_close(out.float(), want, atol=2e-2, rtol=2e-2)


def test_every_computed_tile_is_one_tile_step(monkeypatch, gen):
    """flash_attention calls _tile_step exactly block_counts(...)['computed'] times: skipped tiles are skipped."""
    calls = []
    real = efficient._tile_step
    monkeypatch.setattr(efficient, "_tile_step", lambda *a: calls.append(1) or real(*a))
    q, k, val = _qkv(gen, (1,), 37, 50, 4, 4, torch.float32)
    for causal, window in ((False, None), (True, None), (True, 9)):
        calls.clear()
        ac.flash_attention(q, k, val, 8, causal=causal, window=window)
        assert len(calls) == ac.block_counts(37, 50, 8, causal, window)["computed"]


# ----------------------------------------------------------------------------------------------------------------------
# block_counts
# ----------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("blocks, block_size", [(1, 4), (2, 8), (8, 128), (16, 64)])
def test_causal_counts_of_a_square_follow_the_triangle_formula(blocks, block_size):
    counts = ac.block_counts(blocks * block_size, blocks * block_size, block_size, causal=True)
    assert counts == {
        "computed": blocks * (blocks + 1) // 2,
        "skipped": blocks * (blocks - 1) // 2,
        "total": blocks * blocks,
    }


def _counts_from_mask(mask: torch.Tensor, block_size: int) -> int:
    """Tiles holding at least one pair that may attend, counted on the mask itself."""
    num_q, num_k = mask.shape
    return sum(
        bool(mask[i : i + block_size, j : j + block_size].any())
        for i in range(0, num_q, block_size)
        for j in range(0, num_k, block_size)
    )


@pytest.mark.parametrize(
    "num_q, num_k, block_size",
    [(1000, 1000, 128), (37, 50, 8), (5, 13, 4), (64, 100, 7), (3, 3, 5), (50, 37, 8), (13, 5, 4), (9, 1, 2)],
)
def test_counts_equal_the_tiles_that_hold_an_allowed_pair(num_q, num_k, block_size):
    total = math.ceil(num_q / block_size) * math.ceil(num_k / block_size)
    assert ac.block_counts(num_q, num_k, block_size) == {"computed": total, "skipped": 0, "total": total}
    causal = ac.block_counts(num_q, num_k, block_size, causal=True)
    assert causal["computed"] == _counts_from_mask(_bottom_right(num_q, num_k), block_size)
    assert causal["computed"] + causal["skipped"] == total
    window = ac.block_counts(num_q, num_k, block_size, causal=True, window=9)
    assert window["computed"] == _counts_from_mask(_window_mask(num_q, num_k, 9), block_size)


def test_window_counts_grow_linearly_not_quadratically():
    """Window w, blocks b dividing N and w: each query block needs w / b + 1 key blocks (the first needs 1)."""
    n, b, w = 1024, 32, 128
    computed = ac.block_counts(n, n, b, causal=True, window=w)["computed"]
    assert computed == sum(min(i, w // b) + 1 for i in range(n // b))


# ----------------------------------------------------------------------------------------------------------------------
# errors
# ----------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "block_size, error, words",
    [
        (0, ValueError, "block_size must be an integer >= 1, got 0"),
        (-3, ValueError, "block_size must be an integer >= 1, got -3"),
        (True, TypeError, "block_size must be an integer >= 1, got True (bool)"),
        (4.0, TypeError, "block_size must be an integer >= 1, got 4.0 (float)"),
        ("8", TypeError, "block_size must be an integer >= 1, got '8' (str)"),
    ],
)
def test_bad_block_size(block_size, error, words):
    x = torch.zeros(2, 4, 3)
    for call in (
        lambda: ac.online_softmax(x, block_size),
        lambda: ac.flash_attention(x, x, x, block_size),
        lambda: ac.block_counts(4, 4, block_size),
    ):
        with pytest.raises(error) as info:
            call()
        assert words in str(info.value)


def test_online_softmax_errors():
    with pytest.raises(TypeError, match="scores must be a torch.Tensor, got list"):
        ac.online_softmax([1.0, 2.0], 2)
    with pytest.raises(TypeError, match="scores must be a floating-point tensor .* got torch.int64"):
        ac.online_softmax(torch.tensor([1, 2]), 2)
    with pytest.raises(ValueError, match=r"scores must have shape \(..., K\) \(1-D or more\), got shape \(\) \(0-D\)"):
        ac.online_softmax(torch.tensor(1.0), 2)
    with pytest.raises(ValueError, match=r"scores must not be empty: .* got \(3, 0\)"):
        ac.online_softmax(torch.zeros(3, 0), 2)
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="scores must be finite, got NaN or infinity"):
            ac.online_softmax(torch.tensor([0.0, bad]), 2)


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda x: ([[1.0]], x, x), TypeError, "queries must be a torch.Tensor, got list"),
        (lambda x: (x, x.long(), x), TypeError, "keys must be a floating-point tensor"),
        (lambda x: (x, x, x.double()), TypeError, "values has dtype torch.float64 but queries has dtype torch.float32"),
        (lambda x: (x[0, 0], x, x), ValueError, "queries must have shape (..., Q, D) (2-D or more), got shape (3,)"),
        (lambda x: (x, x[:1], x[:1]), ValueError, "queries, keys and values must share their leading sizes"),
        (lambda x: (x, x, x[:, :2]), ValueError, "values must have one row per key: values.shape[-2] must be K = 4"),
        (lambda x: (x, x[..., :2], x), ValueError, "queries and keys must have the same size D"),
        (lambda x: (x[:, :0], x, x), ValueError, "queries must not be empty"),
        (lambda x: (x, x[:, :0], x[:, :0]), ValueError, "keys must not be empty"),
        (lambda x: (x, x, x.clone().fill_(math.nan)), ValueError, "values must be finite, got NaN or infinity"),
        (lambda x: (x.clone().fill_(math.inf), x, x), ValueError, "queries must be finite, got NaN or infinity"),
    ],
)
def test_flash_attention_input_errors(make, error, words):
    with pytest.raises(error) as info:
        ac.flash_attention(*make(torch.zeros(2, 4, 3)))
    assert words in str(info.value)


def test_flash_attention_causal_and_window_errors():
    x = torch.zeros(1, 5, 3)
    with pytest.raises(TypeError, match="causal must be True or False, got 1 \\(int\\)"):
        ac.flash_attention(x, x, x, 2, causal=1)
    with pytest.raises(ValueError, match="window needs causal=True"):
        ac.flash_attention(x, x, x, 2, window=3)
    with pytest.raises(ValueError, match="window must be an integer >= 1, got 0"):
        ac.flash_attention(x, x, x, 2, causal=True, window=0)
    with pytest.raises(ValueError, match="num_queries must be an integer >= 1, got 0"):
        ac.block_counts(0, 4, 2)


@pytest.mark.parametrize("causal, window", [(False, None), (True, None), (True, 5)])
def test_flash_attention_on_the_meta_device_keeps_device_shape_and_dtype(causal, window):
    q, k, v = (
        torch.empty(2, 3, 20, 8, device="meta"),
        torch.empty(2, 3, 30, 8, device="meta"),
        torch.empty(2, 3, 30, 4, device="meta"),
    )
    out = ac.flash_attention(q, k, v, 8, causal=causal, window=window)
    assert out.device.type == "meta" and out.shape == (2, 3, 20, 4) and out.dtype == torch.float32
    assert ac.online_softmax(torch.empty(3, 30, device="meta"), 8).device.type == "meta"
