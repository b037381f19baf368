"""attn_course.rotary: apply_rope and alibi_bias."""

import math

import pytest
import torch
from torch.testing import assert_close

from attn_course import alibi_bias, apply_rope, causal_mask, frequencies, positional_encoding

META = torch.device("meta")


def _rope_complex(x, positions, base=10000.0):
    """The complex-number form: pair j of row p as x[2j] + i x[2j+1], times exp(i p w_j), with w_j = base^(-2j/D)."""
    d = x.shape[-1]
    omega = torch.tensor([base ** (-2 * j / d) for j in range(d // 2)], dtype=torch.float64)
    z = torch.complex(x[..., 0::2].double(), x[..., 1::2].double())  # (..., L, D/2)
    turned = z * torch.polar(torch.ones_like(omega), positions.double().unsqueeze(-1) * omega)  # (..., L, D/2)
    return torch.stack((turned.real, turned.imag), dim=-1).flatten(-2)  # (..., L, D)


def _rope_loop(x, positions, base=10000.0):
    """Entry by entry with math: the 2 x 2 rotation of each pair."""
    out = torch.empty_like(x, dtype=torch.float64)
    length, d = x.shape
    for row in range(length):
        for j in range(d // 2):
            angle = int(positions[row]) * base ** (-2 * j / d)
            a, b = float(x[row, 2 * j]), float(x[row, 2 * j + 1])
            out[row, 2 * j] = a * math.cos(angle) - b * math.sin(angle)
            out[row, 2 * j + 1] = a * math.sin(angle) + b * math.cos(angle)
    return out


# ----------------------------------------------------------------------------------------------
# apply_rope: values
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 4), (2, 7, 8), (2, 3, 6, 16), (1, 1, 2)])
@pytest.mark.parametrize("base", [10000.0, 100.0, 2.0])
def test_apply_rope_matches_the_complex_form(shape, base):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    positions = torch.randint(0, 50, shape[-2:-1], generator=gen)
    assert_close(apply_rope(x, positions, base), _rope_complex(x, positions, base), atol=1e-12, rtol=0)


def test_apply_rope_matches_a_loop_of_two_by_two_rotations():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(6, 8, generator=gen, dtype=torch.float64)
    positions = torch.tensor([0, 3, 1, 7, 100, 2])
    assert_close(apply_rope(x, positions), _rope_loop(x, positions), atol=1e-12, rtol=0)


def test_apply_rope_hand_computed():
    """D = 2: one pair, w = 1, so (1, 0) at position p goes to (cos p, sin p): counter-clockwise."""
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    got = apply_rope(x, torch.tensor([0, 1, 2]))
    expected = torch.tensor([[1.0, 0.0], [math.cos(1), math.sin(1)], [-math.sin(2), math.cos(2)]], dtype=torch.float64)
    assert_close(got, expected, atol=1e-12, rtol=0)


def test_apply_rope_at_position_zero_is_the_identity():
    x = torch.randn(3, 4, 8)
    assert torch.equal(apply_rope(x, torch.zeros(4, dtype=torch.long)), x)


def test_apply_rope_uses_the_frequencies_and_pairs_of_the_sinusoidal_encoding():
    """Rotating (0, 1) in every pair, at position p, gives (-sin(p w_j), cos(p w_j)): notebook 06's P up to a sign."""
    d, length = 8, 12
    x = torch.tensor([0.0, 1.0] * (d // 2), dtype=torch.float64).expand(length, d)
    got = apply_rope(x, torch.arange(length))
    P = positional_encoding(length, d, dtype=torch.float64)  # (L, D): (sin, cos) pairs
    assert_close(got[:, 0::2], -P[:, 0::2], atol=1e-12, rtol=0)
    assert_close(got[:, 1::2], P[:, 1::2], atol=1e-12, rtol=0)
    assert_close(frequencies(d), torch.tensor([10000 ** (-2 * j / d) for j in range(d // 2)], dtype=torch.float64))


def test_apply_rope_keeps_every_norm_and_every_pair_norm():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(4, 20, 16, generator=gen, dtype=torch.float64)
    out = apply_rope(x, torch.arange(20) * 37)
    assert_close(out.norm(dim=-1), x.norm(dim=-1), atol=1e-12, rtol=0)
    assert_close(out.reshape(4, 20, 8, 2).norm(dim=-1), x.reshape(4, 20, 8, 2).norm(dim=-1), atol=1e-12, rtol=0)


@pytest.mark.parametrize("offset", [0, 1, 5, 40])
def test_scores_depend_only_on_the_offset(offset):
    """rope(q, i) . rope(k, j) is the same for every (i, j) with i - j = offset."""
    gen = torch.Generator().manual_seed(3)
    q, k = torch.randn(2, 16, generator=gen, dtype=torch.float64)
    scores = []
    for j in [0, 3, 17, 250]:
        i = j + offset
        q_rot = apply_rope(q.view(1, 16), torch.tensor([i]))[0]
        k_rot = apply_rope(k.view(1, 16), torch.tensor([j]))[0]
        scores.append(q_rot @ k_rot)
    assert_close(torch.stack(scores), scores[0].expand(4), atol=1e-10, rtol=0)


def test_the_offset_property_is_the_rotation_of_q_by_the_offset():
    """rope(q, i) . rope(k, j) = rope(q, i - j) . k."""
    gen = torch.Generator().manual_seed(4)
    q, k = torch.randn(2, 1, 8, generator=gen, dtype=torch.float64)
    left = apply_rope(q, torch.tensor([9])) @ apply_rope(k, torch.tensor([4])).mT
    right = apply_rope(q, torch.tensor([5])) @ k.mT
    assert_close(left, right, atol=1e-12, rtol=0)


def test_additive_sinusoidal_scores_do_depend_on_the_absolute_position():
    """The contrast the notebook draws: (q + P_i) . (k + P_j) changes with i at a fixed offset."""
    gen = torch.Generator().manual_seed(5)
    q, k = torch.randn(2, 16, generator=gen, dtype=torch.float64)
    P = positional_encoding(60, 16, dtype=torch.float64)
    scores = torch.stack([(q + P[j + 3]) @ (k + P[j]) for j in range(50)])
    assert scores.max() - scores.min() > 0.1


def test_apply_rope_follows_leading_axes_and_keeps_the_input():
    x = torch.randn(2, 3, 5, 4)
    before = x.clone()
    positions = torch.tensor([4, 3, 2, 1, 0])
    out = apply_rope(x, positions)
    assert torch.equal(x, before)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert_close(out[1, 2], apply_rope(x[1, 2], positions))


def test_apply_rope_on_empty_input():
    assert apply_rope(torch.empty(3, 0, 4), torch.empty(0, dtype=torch.long)).shape == (3, 0, 4)
    assert apply_rope(torch.empty(0, 2, 4), torch.tensor([0, 1])).shape == (0, 2, 4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_apply_rope_low_precision_keeps_its_dtype_and_stays_close(dtype):
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(2, 10, 8, generator=gen)
    positions = torch.arange(10) * 100
    out = apply_rope(x.to(dtype), positions)
    assert out.dtype == dtype and torch.isfinite(out).all()
    tol = 1e-2 if dtype == torch.float16 else 4e-2
    assert_close(out.float(), apply_rope(x.to(dtype).float(), positions), atol=tol, rtol=tol)


def test_apply_rope_never_gives_nan_from_large_finite_input():
    x = torch.full((3, 4), 1e30)
    assert torch.isfinite(apply_rope(x, torch.arange(3) * 10**6)).all()


def test_apply_rope_runs_on_the_meta_device():
    out = apply_rope(torch.empty(2, 5, 8, device=META), torch.arange(5, device=META))
    assert out.device == META and out.shape == (2, 5, 8)


# ----------------------------------------------------------------------------------------------
# apply_rope: errors
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [3, 7, 1])
def test_apply_rope_refuses_an_odd_size(d):
    with pytest.raises(ValueError, match=r"x must have an even last size D >= 2.*D = " + str(d)):
        apply_rope(torch.randn(4, d), torch.arange(4))


def test_apply_rope_refuses_negative_positions():
    with pytest.raises(ValueError, match="positions must be non-negative integers, got -2"):
        apply_rope(torch.randn(3, 4), torch.tensor([0, -2, 1]))


def test_apply_rope_refuses_positions_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"positions must have shape \(L,\) = \(3,\).*got shape \(4,\)"):
        apply_rope(torch.randn(3, 4), torch.arange(4))
    with pytest.raises(ValueError, match=r"positions must have shape \(L,\) = \(3,\).*got shape \(1, 3\)"):
        apply_rope(torch.randn(3, 4), torch.arange(3).view(1, 3))


@pytest.mark.parametrize(
    "x, positions, match",
    [
        ([[1.0, 2.0]], torch.tensor([0]), "x must be a torch.Tensor, got list"),
        (torch.ones(1, 2, dtype=torch.long), torch.tensor([0]), "x must be a floating-point tensor"),
        (torch.ones(1, 2), [0], "positions must be a torch.Tensor, got list"),
        (torch.ones(1, 2), torch.tensor([0.0]), "positions must be an integer tensor"),
        (torch.ones(1, 2), torch.tensor([True]), "positions must be an integer tensor"),
    ],
)
def test_apply_rope_refuses_wrong_types_by_name(x, positions, match):
    with pytest.raises(TypeError, match=match):
        apply_rope(x, positions)


def test_apply_rope_refuses_a_vector_without_positions_axis():
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., L, D\) \(at least 2-D\), got shape \(4,\)"):
        apply_rope(torch.randn(4), torch.arange(1))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_apply_rope_refuses_non_finite_input(bad):
    x = torch.randn(2, 4)
    x[1, 3] = bad
    with pytest.raises(ValueError, match="x must be finite, got NaN or infinity"):
        apply_rope(x, torch.arange(2))


@pytest.mark.parametrize(
    "base, error", [(1.0, ValueError), (0.5, ValueError), (float("nan"), ValueError), ("a", TypeError)]
)
def test_apply_rope_refuses_a_bad_base(base, error):
    with pytest.raises(error, match="base must be a finite number > 1"):
        apply_rope(torch.randn(2, 4), torch.arange(2), base=base)


# ----------------------------------------------------------------------------------------------
# alibi_bias
# ----------------------------------------------------------------------------------------------


def test_alibi_bias_hand_computed_for_two_heads():
    """H = 2: slopes 2^-4 and 2^-8."""
    got = alibi_bias(2, 3, 3)
    distance = torch.tensor([[0.0, 0, 0], [1, 0, 0], [2, 1, 0]])
    expected = torch.stack([-(2.0**-4) * distance, -(2.0**-8) * distance])
    assert got.shape == (2, 3, 3) and got.dtype == torch.float32
    assert torch.equal(got, expected)


@pytest.mark.parametrize("num_heads", [1, 4, 8, 12, 16])
def test_alibi_slopes_are_two_to_the_minus_eight_h_plus_one_over_h(num_heads):
    bias = alibi_bias(num_heads, 2, 2, dtype=torch.float64)
    slopes = -bias[:, 1, 0]  # distance 1
    expected = torch.tensor([2 ** (-8 * (h + 1) / num_heads) for h in range(num_heads)], dtype=torch.float64)
    assert_close(slopes, expected, atol=1e-7, rtol=1e-7)
    assert slopes[-1] == 2**-8  # the last head's slope is always 1/256


def test_alibi_bias_matches_a_loop_and_is_zero_above_the_diagonal():
    num_heads, length = 4, 7
    got = alibi_bias(num_heads, length, length, dtype=torch.float64)
    for h in range(num_heads):
        m = 2 ** (-8 * (h + 1) / num_heads)
        for i in range(length):
            for j in range(length):
                assert got[h, i, j] == (-m * (i - j) if j <= i else 0.0)
    assert not torch.signbit(got[:, 0, 1:]).any()  # 0.0, not -0.0


def test_alibi_bias_with_fewer_queries_is_the_bottom_right_corner():
    """Like causal_mask(Q, K): query row i sits at position i + K - Q."""
    full = alibi_bias(3, 9, 9)
    corner = alibi_bias(3, 4, 9)
    assert torch.equal(corner, full[:, -4:, :])
    allowed = causal_mask(4, 9)  # (Q, K): query i sees keys 0 .. i + 5
    diagonal = allowed & ~allowed.tril(diagonal=4)  # (Q, K): the key at the query's own position
    assert diagonal.sum() == 4 and (corner[:, diagonal] == 0).all()
    assert torch.equal(corner[0] != 0, allowed & ~diagonal)  # a penalty on every earlier key, none elsewhere


def test_alibi_bias_dtype_and_device():
    assert alibi_bias(2, 3, 4, dtype=torch.float64).dtype == torch.float64
    assert alibi_bias(2, 3, 4, device=META).device == META


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_alibi_bias_low_precision_stays_finite_and_close(dtype):
    got = alibi_bias(8, 5, 100_000, dtype=dtype)
    assert got.dtype == dtype and torch.isfinite(got).all()
    small = alibi_bias(4, 6, 6, dtype=dtype)
    assert_close(small.float(), alibi_bias(4, 6, 6), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        ((0, 3, 3), {}, ValueError, "num_heads must be an integer >= 1, got 0"),
        ((2.0, 3, 3), {}, TypeError, r"num_heads must be an integer >= 1, got 2.0 \(float\)"),
        ((2, 0, 3), {}, ValueError, "q_len must be an integer >= 1, got 0"),
        ((2, 4, 3), {}, ValueError, "k_len must be an integer >= q_len = 4, got 3"),
        ((2, 3, True), {}, TypeError, "k_len must be an integer"),
        ((2, 3, 3), {"dtype": torch.long}, TypeError, "dtype must be a floating torch.dtype"),
        ((2, 3, 3), {"dtype": "float32"}, TypeError, "dtype must be a floating torch.dtype"),
    ],
)
def test_alibi_bias_refuses_bad_arguments_by_name(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        alibi_bias(*args, **kwargs)
