"""attn_course.rotary and extrapolation: apply_rope, alibi_bias, and RoPE's frequencies under each context extension."""

import math

import pytest
import torch
from torch.testing import assert_close

from attn_course import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    causal_mask,
    frequencies,
    positional_encoding,
    rope_attention_scale,
    rope_frequencies,
    yarn_ramp,
)

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


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8, 16])
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


# ----------------------------------------------------------------------------------------------
# alibi_slopes: any number of heads (Press et al.'s get_slopes)
# ----------------------------------------------------------------------------------------------


def _press_get_slopes(n):
    """Press et al.'s get_slopes, as in their repository (heads counted from 1 there)."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _press_get_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("num_heads", [1, 2, 3, 5, 6, 7, 8, 12, 20, 24])
def test_alibi_slopes_match_the_papers_get_slopes(num_heads):
    assert_close(alibi_slopes(num_heads).double(), torch.tensor(_press_get_slopes(num_heads), dtype=torch.float64))


def test_alibi_slopes_hand_computed_for_three_and_six_heads():
    assert alibi_slopes(3).tolist() == [2**-4, 2**-8, 2**-2]  # those of 2 heads, then slope 0 of 4 heads
    assert alibi_slopes(6).tolist() == [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]


@pytest.mark.parametrize("num_heads", [3, 6, 12])
def test_alibi_slopes_are_distinct_and_the_bias_uses_them(num_heads):
    slopes = alibi_slopes(num_heads)
    assert len(set(slopes.tolist())) == num_heads
    assert_close(-alibi_bias(num_heads, 2, 2)[:, 1, 0], slopes)


@pytest.mark.parametrize("num_heads", [3, 5, 6, 7, 12])
def test_alibi_extra_slopes_interleave_and_the_first_lies_above_all(num_heads):
    """The docstring's (and notebook 11's) words: the extra slopes' first lies above every base slope, each further
    one halfway in the exponent between two neighbouring base slopes."""
    closest = 2 ** int(math.log2(num_heads))
    exponents = torch.log2(alibi_slopes(num_heads).double())
    base, extra = exponents[:closest], exponents[closest:]
    assert extra[0] > base.max()
    for e in extra[1:]:
        above, below = base[base > e].min(), base[base < e].max()
        assert_close(e, (above + below) / 2)


def test_alibi_slopes_refuse_a_bad_head_count():
    with pytest.raises(ValueError, match="num_heads must be an integer >= 1, got 0"):
        alibi_slopes(0)
    with pytest.raises(TypeError, match="num_heads must be an integer"):
        alibi_slopes(2.5)


# ----------------------------------------------------------------------------------------------
# rope_frequencies, rope_attention_scale and apply_rope(scaling=)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [2, 8, 22, 64])
def test_rope_frequencies_without_scaling_are_the_sinusoidal_ones(d):
    assert torch.equal(rope_frequencies(d), frequencies(d))
    assert torch.equal(rope_frequencies(d, 500.0), frequencies(d, 500.0))


def test_rope_frequencies_linear_and_ntk_against_the_direct_formula():
    d, s = 10, 3.0
    direct = torch.tensor([10000.0 ** (-2 * j / d) for j in range(d // 2)], dtype=torch.float64)
    assert_close(rope_frequencies(d, scaling=("linear", s)), direct / s)
    base = 10000.0 * s ** (d / (d - 2))
    ntk = torch.tensor([base ** (-2 * j / d) for j in range(d // 2)], dtype=torch.float64)
    assert_close(rope_frequencies(d, scaling=("ntk", s)), ntk)
    assert_close(ntk[0], direct[0])  # the fastest pair is kept
    assert_close(ntk[-1], direct[-1] / s)  # the slowest is divided by exactly s


def _hf_yarn(dim, base, factor, original_len):
    """Hugging Face transformers' _compute_yarn_parameters, written out by hand with math (beta_fast 32, slow 1)."""

    def find_correction_dim(num_rotations):
        return (dim * math.log(original_len / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(find_correction_dim(32)), 0)
    high = min(math.ceil(find_correction_dim(1)), dim - 1)
    if low == high:
        high += 0.001
    out = []
    for i in range(dim // 2):
        pos_freq = base ** (2 * i / dim)
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        extrapolation_factor = 1 - ramp
        out.append((1 / (factor * pos_freq)) * (1 - extrapolation_factor) + (1 / pos_freq) * extrapolation_factor)
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize(
    "dim, base, factor, original_len",
    [
        (64, 10000.0, 4.0, 2048),
        (8, 10000.0, 4.0, 24),
        (128, 500000.0, 8.0, 8192),
        (22, 500.0, 2.5, 300),
        (4, 10.0, 2.0, 5),
    ],
)
def test_rope_frequencies_yarn_match_the_transformers_definition(dim, base, factor, original_len):
    assert_close(rope_frequencies(dim, base, ("yarn", factor, original_len)), _hf_yarn(dim, base, factor, original_len))


def test_rope_frequencies_yarn_hand_computed_ramp():
    """D = 64, base 10000, L = 2048: pair index of 32 turns = 8.06 (floor 8), of 1 turn = 20.1 (ceil 21)."""
    omega = frequencies(64)
    ratio = rope_frequencies(64, scaling=("yarn", 4.0, 2048)) / omega
    assert ratio[:9].tolist() == [1.0] * 9  # pairs 0..8 kept
    assert_close(ratio[9], torch.tensor(0.25 * (1 / 13) + (12 / 13), dtype=torch.float64))  # 1/13 of the way down
    assert_close(ratio[21:], torch.full((11,), 0.25, dtype=torch.float64))  # pairs 21..31 divided by s


def test_rope_frequencies_with_a_factor_of_one_change_nothing():
    for scaling in [("linear", 1.0), ("ntk", 1), ("yarn", 1.0, 100)]:
        assert_close(rope_frequencies(16, scaling=scaling), frequencies(16))
        assert rope_attention_scale(scaling) == 1.0


def test_rope_attention_scale():
    assert rope_attention_scale(None) == 1.0
    assert rope_attention_scale(("linear", 4.0)) == 1.0
    assert rope_attention_scale(("ntk", 4.0)) == 1.0
    assert math.isclose(rope_attention_scale(("yarn", 4.0, 2048)), 0.1 * math.log(4.0) + 1.0)
    assert math.isclose(rope_attention_scale(("yarn", 4.0, 2048)), 1.1386294361, rel_tol=1e-9)


def test_apply_rope_default_is_bit_identical_to_the_unscaled_frequencies():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 9, 10, generator=gen)
    positions = torch.randperm(30, generator=gen)[:9]
    omega = frequencies(10)
    angles = positions.double().unsqueeze(-1) * omega
    cos, sin = angles.cos().float(), angles.sin().float()
    even, odd = x[..., 0::2], x[..., 1::2]
    expected = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)
    assert torch.equal(apply_rope(x, positions), expected)
    assert torch.equal(apply_rope(x, positions, scaling=None), expected)


@pytest.mark.parametrize("scaling", [("linear", 4.0), ("ntk", 2.0), ("yarn", 4.0, 24)])
def test_apply_rope_with_a_scaling_rotates_by_the_scaled_frequencies(scaling):
    x = torch.randn(7, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    positions = torch.arange(50, 57)
    omega = rope_frequencies(8, scaling=scaling)
    z = torch.complex(x[..., 0::2], x[..., 1::2])
    turned = z * torch.polar(torch.ones_like(omega), positions.double().unsqueeze(-1) * omega)
    assert_close(apply_rope(x, positions, scaling=scaling), torch.stack((turned.real, turned.imag), -1).flatten(-2))
    assert_close(apply_rope(x, positions, scaling=scaling).norm(dim=-1), x.norm(dim=-1))  # still a rotation


def test_apply_rope_linear_scaling_is_the_position_divided_by_s():
    x = torch.randn(5, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    assert_close(apply_rope(x, torch.arange(0, 20, 4), scaling=("linear", 4.0)), apply_rope(x, torch.arange(5)))


@pytest.mark.parametrize(
    "scaling, error, match",
    [
        ("yarn", TypeError, r'scaling must be None, \("linear", s\)'),
        (("cubic", 2.0), ValueError, r"scaling\[0\] must be one of \['linear', 'ntk', 'yarn', 'parts'\], got 'cubic'"),
        ((4.0, "linear"), TypeError, r"scaling\[0\] must be one of"),
        (("linear", 0.5), ValueError, r"scaling\[1\] \(the factor s\) must be .*>= 1"),
        (("ntk", float("nan")), ValueError, r"scaling\[1\] \(the factor s\)"),
        (("yarn", 4.0), ValueError, "'yarn' takes 3 entries, got 2"),
        (("linear", 2.0, 10), ValueError, "'linear' takes 2 entries, got 3"),
        (("yarn", 4.0, 0), ValueError, r"scaling\[2\] \(original_len\) must be an integer >= 1, got 0"),
        (("yarn", 4.0, 2.5), TypeError, r"scaling\[2\] \(original_len\) must be an integer"),
        ((), TypeError, "scaling must be None"),
        (("parts", 4.0, [0.0, 1.0]), ValueError, "'parts' takes 4 entries, got 3"),
        (
            ("parts", 4.0, [0.0, 1.5, 1.0, 1.0], 1.0),
            ValueError,
            r"scaling\[2\] \(the ramp, one number per pair\)\[1\] "
            r"must be a finite number in \[0, 1\], got 1.5",
        ),
        (("parts", 4.0, [0.0, float("nan"), 1.0, 1.0], 1.0), ValueError, r"ramp, one number per pair\)\[1\]"),
        (("parts", 4.0, ["0", 1.0, 1.0, 1.0], 1.0), TypeError, r"ramp, one number per pair\)\[0\] must be a finite"),
        (("parts", 4.0, "0111", 1.0), TypeError, r"must be a non-empty list, tuple or 1-D tensor of numbers, got str"),
        (("parts", 4.0, [], 1.0), TypeError, r"must be a non-empty list, tuple or 1-D tensor"),
        (("parts", 4.0, torch.zeros(2, 2), 1.0), ValueError, r"must be a 1-D real tensor, got shape \(2, 2\)"),
        (("parts", 4.0, [0.0, 1.0, 1.0, 1.0], 0.0), ValueError, r"scaling\[3\] \(the attention factor\) must be"),
        (("parts", 0.5, [0.0, 1.0, 1.0, 1.0], 1.0), ValueError, r"scaling\[1\] \(the factor s\)"),
    ],
)
def test_bad_scalings_are_refused_by_name(scaling, error, match):
    with pytest.raises(error, match=match):
        rope_frequencies(8, scaling=scaling)
    with pytest.raises(error, match=match):
        rope_attention_scale(scaling)
    with pytest.raises(error, match=match):
        apply_rope(torch.zeros(2, 8), torch.arange(2), scaling=scaling)


def test_rope_frequencies_refuses_odd_sizes_and_ntk_on_one_pair():
    with pytest.raises(ValueError, match="head_dim must be even"):
        rope_frequencies(7)
    with pytest.raises(ValueError, match="head_dim must be an integer >= 2, got 0"):
        rope_frequencies(0)
    with pytest.raises(ValueError, match=r"needs head_dim >= 4"):
        rope_frequencies(2, scaling=("ntk", 2.0))
    with pytest.raises(ValueError, match="base must be"):
        rope_frequencies(8, base=1.0)


@pytest.mark.parametrize("base, factor", [(10000.0, 1e300), (1e308, 2.0)])
def test_rope_frequencies_ntk_names_a_base_that_overflows(base, factor):
    """A huge factor used to raise Python's OverflowError (or give an infinite base) instead of the course's error."""
    with pytest.raises(ValueError, match=r"the new base base \* s\^\(D / \(D - 2\)\) overflows"):
        rope_frequencies(8, base, ("ntk", factor))


# ----------------------------------------------------------------------------------------------
# yarn_ramp (the paper's ramp and the code's) and the ("parts", s, ramp, attention) scaling
# ----------------------------------------------------------------------------------------------


def test_yarn_ramp_index_is_the_transformers_ramp():
    """rule="index" is the ramp _compute_yarn_parameters builds: rope_frequencies' "yarn" is this ramp applied."""
    for dim, base, factor, original_len in [(64, 10000.0, 4.0, 2048), (8, 10000.0, 4.0, 24), (22, 500.0, 2.5, 300)]:
        ramp = yarn_ramp(dim, original_len, base)
        omega = frequencies(dim, base)
        assert_close((omega / factor) * ramp + omega * (1 - ramp), _hf_yarn(dim, base, factor, original_len))
        assert_close(
            rope_frequencies(dim, base, ("parts", factor, ramp, 1.0)), _hf_yarn(dim, base, factor, original_len)
        )


def test_yarn_ramp_hand_computed_small_head():
    """D = 8, L = 24: pair 0 turns 24 / 2 pi = 3.82 times. The code's 32-turn index is -0.92, floor -1, clamped to 0;
    the 1-turn index 0.58, ceil 1: a one-step ramp that keeps pair 0. The paper: gamma = (3.82 - 1) / 31."""
    assert yarn_ramp(8, 24).tolist() == [0.0, 1.0, 1.0, 1.0]
    turns = 24 / (2 * math.pi)
    expected = torch.tensor([1 - (turns - 1) / 31, 1.0, 1.0, 1.0], dtype=torch.float64)
    assert_close(yarn_ramp(8, 24, rule="turns"), expected)
    assert_close(yarn_ramp(8, 24, rule="turns")[0], torch.tensor(0.909041, dtype=torch.float64), atol=1e-6, rtol=0)
    ratio = rope_frequencies(8, scaling=("parts", 4.0, yarn_ramp(8, 24, rule="turns"), 1.0)) / frequencies(8)
    assert_close(ratio[0], torch.tensor(0.25 * expected[0].item() + 1 - expected[0].item(), dtype=torch.float64))


def test_yarn_ramp_turns_is_linear_in_the_turns_and_clipped():
    dim, original_len = 64, 2048
    turns = original_len * frequencies(dim) / (2 * math.pi)  # (D/2,)
    ramp = yarn_ramp(dim, original_len, rule="turns")
    assert torch.equal(ramp[turns >= 32], torch.zeros_like(ramp[turns >= 32]))  # kept
    assert torch.equal(ramp[turns <= 1], torch.ones_like(ramp[turns <= 1]))  # divided by s
    between = (turns > 1) & (turns < 32)
    assert_close(ramp[between], 1 - (turns[between] - 1) / 31)
    assert bool((ramp[1:] >= ramp[:-1]).all())  # slower pairs are moved at least as far


def test_yarn_ramps_agree_on_the_kept_and_the_interpolated_pairs_of_a_large_head():
    """Where both ramps are real (D = 128, L = 4096), they keep the same pairs whole and divide the same pairs by s;
    they differ only between the thresholds, where the paper's (linear in the turns) lies above the code's."""
    index, turns = yarn_ramp(128, 4096), yarn_ramp(128, 4096, rule="turns")
    assert torch.equal(index == 0, turns == 0)
    assert torch.equal(index[:21], torch.zeros(21, dtype=torch.float64))
    assert torch.equal(index[46:], torch.ones(18, dtype=torch.float64))
    assert torch.equal(turns[46:], torch.ones(18, dtype=torch.float64))
    middle = slice(22, 45)
    assert bool((turns[middle] > index[middle]).all())


def test_yarn_ramp_all_kept_or_all_interpolated_at_the_extremes():
    assert torch.equal(yarn_ramp(8, 10**9, rule="turns")[0], torch.tensor(0.0, dtype=torch.float64))
    assert torch.equal(yarn_ramp(8, 2, rule="turns"), torch.ones(4, dtype=torch.float64))  # nothing turns once


def test_parts_scaling_matches_the_formula_and_its_attention_factor():
    ramp = [0.0, 0.5, 1.0]
    omega = frequencies(6)
    expected = omega * torch.tensor([1.0, 0.5 / 4 + 0.5, 0.25], dtype=torch.float64)
    assert_close(rope_frequencies(6, scaling=("parts", 4.0, ramp, 1.25)), expected)
    assert_close(rope_frequencies(6, scaling=("parts", 4.0, torch.tensor(ramp), 1.25)), expected)  # a tensor too
    assert rope_attention_scale(("parts", 4.0, ramp, 1.25)) == 1.25
    assert_close(
        rope_frequencies(6, scaling=("parts", 4.0, [1.0] * 3, 1.0)), rope_frequencies(6, scaling=("linear", 4.0))
    )
    assert torch.equal(
        rope_frequencies(8, scaling=("parts", 4.0, [0.0, 1.0, 1.0, 1.0], 1.0)),
        rope_frequencies(8, scaling=("yarn", 4.0, 24)),
    )


def test_parts_scaling_refuses_a_ramp_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"ramp must hold one number per pair, D/2 = 4, got 3"):
        rope_frequencies(8, scaling=("parts", 4.0, [0.0, 1.0, 1.0], 1.0))
    with pytest.raises(ValueError, match=r"ramp must hold one number per pair, D/2 = 4, got 3"):
        apply_rope(torch.zeros(2, 8), torch.arange(2), scaling=("parts", 4.0, [0.0, 1.0, 1.0], 1.0))


def test_a_decoder_takes_a_parts_scaling_and_its_attention_factor():
    from attn_course import DecoderOnlyLM

    torch.manual_seed(0)
    model = DecoderOnlyLM(10, 16, 2, 1, 12, positional="rope")
    tokens = torch.randint(0, 10, (2, 12))
    model.rope_scaling = ("yarn", 4.0, 3)
    yarn = model(tokens)
    model.rope_scaling = ("parts", 4.0, yarn_ramp(8, 3), rope_attention_scale(("yarn", 4.0, 3)))
    assert_close(model(tokens), yarn)


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((7, 24), ValueError, "head_dim must be even"),
        ((0, 24), ValueError, "head_dim must be an integer >= 2, got 0"),
        ((8.0, 24), TypeError, "head_dim must be an integer"),
        ((8, 0), ValueError, "original_len must be an integer >= 1, got 0"),
        ((8, 24, 1.0), ValueError, "base must be a finite number > 1"),
        ((8, 24, 10000.0, "paper"), ValueError, r"rule must be one of \['index', 'turns'\], got 'paper'"),
        ((8, 24, 10000.0, 1), TypeError, r"rule must be one of \['index', 'turns'\]"),
    ],
)
def test_yarn_ramp_refuses_bad_arguments_by_name(args, error, match):
    with pytest.raises(error, match=match):
        yarn_ramp(*args)
