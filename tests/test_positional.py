"""attn_course.positional: positional_encoding, frequencies and rotation_matrix."""

import math

import matplotlib.pyplot as plt
import pytest
import torch
from _helpers import draw_cleanly, refused
from torch.testing import assert_close

from attn_course import frequencies, plot_rotation, positional_encoding, rotation_matrix


def _encoding_by_loop(num_steps, num_hiddens, base=10000.0):
    """P[i, 2j] = sin(i / base^(2j / d)), P[i, 2j + 1] = cos(i / base^(2j / d)), entry by entry with math."""
    rows = []
    for i in range(num_steps):
        row = []
        for col in range(num_hiddens):
            angle = i / base ** (2 * (col // 2) / num_hiddens)
            row.append(math.sin(angle) if col % 2 == 0 else math.cos(angle))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)


# ----------------------------------------------------------------------------------------------
# positional_encoding
# ----------------------------------------------------------------------------------------------

SIZES = [
    (8, 4, 10000.0),
    (10, 7, 10000.0),
    (5, 1, 10000.0),
    (1, 6, 10000.0),
    (60, 16, 10000.0),
    (12, 5, 100),
    (9, 6, 2.0),
]


@pytest.mark.parametrize("num_steps, num_hiddens, base", SIZES, ids=[f"T{t}-D{d}-base{b}" for t, d, b in SIZES])
def test_positional_encoding_matches_loop(num_steps, num_hiddens, base):
    got = positional_encoding(num_steps, num_hiddens, base, dtype=torch.float64)
    assert got.dtype == torch.float64 and got.shape == (num_steps, num_hiddens)
    assert_close(got, _encoding_by_loop(num_steps, num_hiddens, base), atol=1e-12, rtol=0)


@pytest.mark.parametrize("num_steps, num_hiddens", [(8, 4), (10, 7), (60, 16)])
def test_positional_encoding_default_is_float32_and_matches_loop(num_steps, num_hiddens):
    got = positional_encoding(num_steps, num_hiddens)
    assert got.dtype == torch.float32
    assert_close(got, _encoding_by_loop(num_steps, num_hiddens).float())


def test_positional_encoding_hand_computed():
    """D = 4: w = [1, 0.01], so row i is [sin(i), cos(i), sin(i / 100), cos(i / 100)]."""
    got = positional_encoding(3, 4, dtype=torch.float64)
    expected = torch.tensor(
        [
            [0.0, 1.0, 0.0, 1.0],
            [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
            [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)],
        ],
        dtype=torch.float64,
    )
    assert_close(got, expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("num_hiddens", [1, 2, 5, 8])
def test_positional_encoding_row_zero_alternates_zero_and_one(num_hiddens, dtype):
    row = positional_encoding(4, num_hiddens, dtype=dtype)[0]
    assert torch.equal(row, torch.tensor([float(c % 2) for c in range(num_hiddens)], dtype=dtype))


@pytest.mark.parametrize("num_hiddens", [6, 7])
def test_positional_encoding_values_in_unit_interval_and_pairs_on_the_unit_circle(num_hiddens):
    encoding = positional_encoding(200, num_hiddens, dtype=torch.float64)
    assert (encoding.abs() <= 1).all()
    pairs = encoding[:, : 2 * (num_hiddens // 2)].reshape(200, -1, 2)  # (T, D // 2, 2): (sin, cos) of one angle
    assert_close(pairs.square().sum(-1), torch.ones(200, num_hiddens // 2, dtype=torch.float64))


def test_positional_encoding_first_column_pair_is_the_fastest_wave():
    """Column 0 is sin(i): it changes sign within 4 steps; the last pair of D = 8 (w = 10^-3) barely moves."""
    encoding = positional_encoding(10, 8, dtype=torch.float64)
    assert (encoding[:4, 0] >= 0).all() and encoding[4, 0] < 0  # sin(4) < 0
    assert (encoding[:, 7] > 0.9999).all()  # cos(9 / 1000) > 0.9999


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_positional_encoding_honours_the_dtype(dtype):
    got = positional_encoding(6, 5, dtype=dtype)
    assert got.dtype == dtype and got.shape == (6, 5)
    assert_close(got, _encoding_by_loop(6, 5).to(dtype))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        *refused("num_steps", 0, -3, 2.0, True, "5", num_hiddens=4),
        *refused("num_hiddens", 0, 4.0, False, num_steps=5),
        *refused(
            "base", 1.0, 0.5, float("nan"), "10000", True, wanted="a finite number > 1", num_steps=5, num_hiddens=4
        ),
        *refused(
            "dtype",
            torch.int64,
            torch.bool,
            "float32",
            None,
            wanted="a floating torch.dtype (e.g. torch.float32)",
            num_steps=5,
            num_hiddens=4,
        ),
    ],
)
def test_positional_encoding_error_messages(kwargs, match, int_error, number_error):
    name = match.split()[0]  # the argument at fault
    error = TypeError if name == "dtype" else (number_error if name == "base" else int_error)(kwargs[name])
    with pytest.raises(error, match=match):
        positional_encoding(**kwargs)


# ----------------------------------------------------------------------------------------------
# frequencies
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "num_hiddens, base, expected",
    [
        (4, 10000.0, [1.0, 0.01]),  # 10000^0, 10000^(-2/4)
        (2, 10000.0, [1.0]),
        (1, 10000.0, [1.0]),
        (6, 1e6, [1.0, 1e-2, 1e-4]),  # 10^(-6 * 2j / 6)
        (5, 1e5, [1.0, 1e-2, 1e-4]),  # 10^(-5 * 2j / 5): odd D, ceil(5 / 2) = 3 pairs
        (8, 16.0, [1.0, 0.5, 0.25, 0.125]),  # 16^(-2j / 8) = 2^(-j)
        (3, 4, [1.0, 0.25 ** (2 / 3)]),  # integer base
    ],
    ids=["d4", "d2", "d1", "d6-base1e6", "d5-odd", "d8-base16", "int-base"],
)
def test_frequencies_hand_values(num_hiddens, base, expected):
    got = frequencies(num_hiddens, base)
    assert got.dtype == torch.float64 and got.shape == (math.ceil(num_hiddens / 2),)
    assert_close(got, torch.tensor(expected, dtype=torch.float64), atol=1e-15, rtol=1e-13)


def test_frequencies_default_base_and_dtype():
    assert_close(frequencies(4), torch.tensor([1.0, 0.01], dtype=torch.float64))
    got = frequencies(4, dtype=torch.float32)
    assert got.dtype == torch.float32
    assert_close(got, torch.tensor([1.0, 0.01]))


def test_frequencies_decrease_from_one_towards_one_over_base():
    omega = frequencies(64)
    assert omega[0] == 1 and (omega[1:] < omega[:-1]).all()
    assert 1e-4 < omega[-1] < 1.5e-4  # 10000^(-62/64)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        *refused("num_hiddens", 0, -2, 2.5, True),
        *refused("base", 1, 0, -10.0, float("nan"), "10", None, wanted="a finite number > 1", num_hiddens=4),
    ],
)
def test_frequencies_error_messages(kwargs, match, int_error, number_error):
    error = int_error(kwargs["num_hiddens"]) if match.startswith("num_hiddens") else number_error(kwargs["base"])
    with pytest.raises(error, match=match):
        frequencies(*kwargs.values())  # num_hiddens first, as a notebook passes them


# ----------------------------------------------------------------------------------------------
# rotation_matrix: the offset delta is a rotation of every column pair
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_hiddens", [8, 7])
@pytest.mark.parametrize("delta", [0, 1, 3, 7, -2])
def test_rotation_matrix_moves_every_position_by_delta(delta, num_hiddens):
    """R(delta, w_j) @ [P[i, 2j], P[i, 2j + 1]] = [P[i + delta, 2j], P[i + delta, 2j + 1]] for every i and j."""
    steps = 20
    encoding = _encoding_by_loop(steps, num_hiddens)
    omega = [1 / 10000.0 ** (2 * j / num_hiddens) for j in range(num_hiddens // 2)]
    checked = 0
    for j, w in enumerate(omega):
        rot = rotation_matrix(delta, w)
        assert rot.dtype == torch.float64 and rot.shape == (2, 2)
        for i in range(max(0, -delta), min(steps, steps - delta)):
            moved = rot @ encoding[i, 2 * j : 2 * j + 2]  # (2, 2) x (2,) -> (2,)
            assert_close(moved, encoding[i + delta, 2 * j : 2 * j + 2], atol=1e-10, rtol=0)
            checked += 1
    assert checked == (num_hiddens // 2) * (steps - abs(delta))


def test_rotation_matrix_hand_computed():
    """delta = 2, w = 0.5: a rotation by 1 radian."""
    c, s = math.cos(1.0), math.sin(1.0)
    assert_close(rotation_matrix(2, 0.5), torch.tensor([[c, s], [-s, c]], dtype=torch.float64), atol=1e-15, rtol=0)


@pytest.mark.parametrize("delta, omega", [(1, 1.0), (3, 0.01), (-5, 0.3), (2.5, 2.0), (100, 1e-4)])
def test_rotation_matrix_is_orthogonal_with_determinant_one(delta, omega):
    rot = rotation_matrix(delta, omega)
    assert_close(rot @ rot.T, torch.eye(2, dtype=torch.float64), atol=1e-14, rtol=0)
    assert_close(torch.linalg.det(rot), torch.tensor(1.0, dtype=torch.float64), atol=1e-14, rtol=0)


@pytest.mark.parametrize("omega", [1.0, 0.01, 3.7])
def test_rotation_matrix_delta_zero_is_the_identity(omega):
    assert torch.equal(rotation_matrix(0, omega), torch.eye(2, dtype=torch.float64))


def test_rotation_matrices_compose_and_invert():
    a, b, w = 3, 4, 0.2
    assert_close(rotation_matrix(a, w) @ rotation_matrix(b, w), rotation_matrix(a + b, w), atol=1e-14, rtol=0)
    assert_close(rotation_matrix(-a, w), rotation_matrix(a, w).T, atol=1e-15, rtol=0)


def test_rotation_matrix_dtype():
    rot = rotation_matrix(2, 0.5, dtype=torch.float32)
    assert rot.dtype == torch.float32
    c, s = math.cos(1.0), math.sin(1.0)
    assert_close(rot, torch.tensor([[c, s], [-s, c]]))


@pytest.mark.parametrize(
    "delta, omega, match",
    [
        ("2", 0.5, r"delta must be a finite number, got '2'"),
        (None, 0.5, r"delta must be a finite number, got None"),
        (True, 0.5, r"delta must be a finite number, got True"),
        (float("inf"), 0.5, r"delta must be a finite number, got inf"),
        (2, float("nan"), r"omega must be a finite number, got nan"),
        (2, [0.5], r"omega must be a finite number, got \[0\.5\]"),
    ],
    ids=["str-delta", "none-delta", "bool-delta", "inf-delta", "nan-omega", "list-omega"],
)
def test_rotation_matrix_error_messages(delta, omega, match, number_error):
    bad = delta if match.startswith("delta") else omega
    with pytest.raises(ValueError if isinstance(bad, torch.Tensor) else number_error(bad), match=match):
        rotation_matrix(delta, omega)


def test_rotation_matrix_with_the_module_frequencies_moves_the_module_encoding(dtype):
    """The same property with positional_encoding and frequencies themselves, in each dtype."""
    encoding = positional_encoding(12, 6, dtype=dtype)
    omega = frequencies(6)
    for j in range(3):
        rot = rotation_matrix(4, float(omega[j]), dtype=dtype)
        moved = encoding[:8, 2 * j : 2 * j + 2] @ rot.T  # (8, 2) x (2, 2) -> (8, 2): every row rotated
        assert_close(moved, encoding[4:, 2 * j : 2 * j + 2])


# ----------------------------------------------------------------------------------------------
# plot_rotation
# ----------------------------------------------------------------------------------------------


def _arrows(ax):
    return [t for t in ax.texts if t.get_text() == "" and t.arrow_patch is not None]


@pytest.mark.parametrize("delta, freq_index", [(3, 1), (1, 0), (7, 2)])
def test_plot_rotation_waves_and_arrows_land_on_the_true_encodings(delta, freq_index, monkeypatch):
    fig = draw_cleanly(monkeypatch, plot_rotation, delta=delta, freq_index=freq_index, num_steps=20, num_hiddens=8)
    left, right = fig.axes
    assert left.get_xlabel() == "position i" and left.get_ylabel() == "encoding value"
    assert right.get_xlabel() == "cos(i w)" and right.get_ylabel() == "sin(i w)"
    assert f"i -> i + {delta}" in right.get_title() and f"j = {freq_index}" in left.get_title()
    w = 1 / 10000.0 ** (2 * freq_index / 8)
    sin_dots, cos_dots = left.lines[2:4]  # the encoding, at whole positions
    assert list(sin_dots.get_xdata()) == list(range(20))
    assert_close(torch.as_tensor(sin_dots.get_ydata()), torch.tensor([math.sin(i * w) for i in range(20)]).double())
    assert_close(torch.as_tensor(cos_dots.get_ydata()), torch.tensor([math.cos(i * w) for i in range(20)]).double())
    sin_line, cos_line = left.lines[:2]  # the smooth waves the dots sample: no jagged polyline when w = 1
    fine = torch.as_tensor(sin_line.get_xdata()).double()
    assert len(fine) >= 10 * 19 and fine[0] == 0 and fine[-1] == 19
    assert_close(torch.as_tensor(sin_line.get_ydata()).double(), torch.sin(fine * w), atol=1e-6, rtol=0)
    assert_close(torch.as_tensor(cos_line.get_ydata()).double(), torch.cos(fine * w), atol=1e-6, rtol=0)
    arrows = _arrows(right)
    assert len(arrows) == 5
    for i, arrow in enumerate(arrows):
        # the arrow starts at position i and ends, by the rotation, on the true (cos, sin) at i + delta
        assert arrow.xyann == pytest.approx((math.cos(i * w), math.sin(i * w)), abs=1e-10)
        assert arrow.xy == pytest.approx((math.cos((i + delta) * w), math.sin((i + delta) * w)), abs=1e-10)
    digits = [t for t in right.texts if t.get_text().isdigit()]
    assert [t.get_text() for t in digits] == ["0", "1", "2", "3", "4"]
    for i, digit in enumerate(digits):  # outside the unit circle, on the ray through position i: clear of the arrows
        x, y = digit.get_position()
        assert math.hypot(x, y) > 1.1
        assert (x, y) == pytest.approx((1.17 * math.cos(i * w), 1.17 * math.sin(i * w)), abs=1e-10)


def test_plot_rotation_draws_on_given_axes_and_shows_fewer_arrows_near_the_end():
    fig, axes = plt.subplots(1, 2)
    got = plot_rotation(delta=8, freq_index=0, num_steps=10, num_hiddens=4, axes=axes)
    assert got is fig and plt.get_fignums() == [fig.number]
    assert len(_arrows(axes[1])) == 2  # positions 0 and 1 only: 1 + 8 is the last position


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"delta": -1}, r"delta must be an integer in \[0, 39\], got -1"),
        ({"delta": 40}, r"delta must be an integer in \[0, 39\], got 40"),
        ({"delta": 1.5}, r"delta must be an integer in \[0, 39\], got 1\.5"),
        ({"delta": True}, r"delta must be an integer in \[0, 39\], got True"),
        ({"freq_index": 8}, r"freq_index must be an integer in \[0, 7\], got 8"),
        ({"freq_index": -1}, r"freq_index must be an integer in \[0, 7\], got -1"),
        ({"num_hiddens": 1}, r"num_hiddens must be an integer >= 2, got 1"),
        ({"num_steps": 1}, r"num_steps must be an integer >= 2, got 1"),
    ],
    ids=["delta-negative", "delta-too-big", "delta-float", "delta-bool", "freq-too-big", "freq-negative", "d1", "t1"],
)
def test_plot_rotation_error_messages(kwargs, match, int_error):
    with pytest.raises(int_error(*kwargs.values()), match=match):
        plot_rotation(**kwargs)
    assert plt.get_fignums() == []
