"""attn_course.plots.rotary and plots.extrapolation: the figures of notebook 11 and their redraw in place."""

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure

from attn_course import (
    alibi_slopes,
    plot_alibi,
    plot_extrapolation,
    plot_rope_angles,
    plot_rope_scalings,
    plot_rope_scores,
    rope_frequencies,
    yarn_ramp,
)


def _vectors(d=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(2, d, generator=gen)


def test_plot_rope_angles_draws_each_pair_at_its_angle():
    fig = plot_rope_angles(position=5, num_hiddens=8)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    left = fig.axes[0]
    arrows = left.lines[1:]  # after the unit circle
    assert len(arrows) == 4
    for j, arrow in enumerate(arrows):
        x, y = arrow.get_data()
        angle = 5 * 10000 ** (-2 * j / 8)
        assert x[1] == pytest.approx(math.cos(angle)) and y[1] == pytest.approx(math.sin(angle))
    assert "p = 5" in left.get_title()


def test_plot_rope_angles_draws_on_the_axes_it_is_given_as_on_a_new_figure():
    fig, axes = plt.subplots(1, 2)
    assert plot_rope_angles(position=20, num_hiddens=8, axes=axes) is fig
    fresh = plot_rope_angles(position=20, num_hiddens=8)
    for a, b in zip(fig.axes[0].lines, fresh.axes[0].lines, strict=True):
        np.testing.assert_allclose(np.asarray(a.get_data()), np.asarray(b.get_data()))
    assert fig.axes[0].get_title() == fresh.axes[0].get_title()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"position": 70}, ValueError, r"position must be an integer in \[0, 64\], got 70"),
        ({"position": 1.5}, TypeError, "position must be an integer"),
        ({"num_hiddens": 1}, ValueError, "num_hiddens must be an integer >= 2"),
    ],
)
def test_plot_rope_angles_refuses_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        plot_rope_angles(**kwargs)


def test_plot_rope_scores_flat_for_rope_and_moving_for_the_additive_encoding():
    q, k = _vectors()
    fig = plot_rope_scores(q, k, offset=4, num_positions=30)
    left, right = fig.axes
    rope_line, add_line = right.lines
    rope = rope_line.get_ydata()
    assert len(rope) == 26 and np.ptp(rope) < 1e-6  # offset-only: one value at every key position
    assert np.ptp(add_line.get_ydata()) > 0.1
    dot_x, dot_y = left.lines[1].get_data()
    assert dot_x[0] == 4 and dot_y[0] == pytest.approx(rope[0])


def test_plot_rope_scores_draws_on_the_axes_it_is_given_and_keeps_its_inputs():
    q, k = _vectors()
    before = q.clone(), k.clone()
    fig, axes = plt.subplots(1, 2)
    assert plot_rope_scores(q, k, offset=9, axes=axes) is fig
    fresh = plot_rope_scores(q, k, offset=9)
    for a, b in zip(fig.axes[1].lines, fresh.axes[1].lines, strict=True):
        np.testing.assert_allclose(np.asarray(a.get_data()), np.asarray(b.get_data()))
    assert torch.equal(q, before[0]) and torch.equal(k, before[1])


@pytest.mark.parametrize(
    "q, k, error, match",
    [
        (torch.randn(5), torch.randn(5), ValueError, "q and k must have the same even size D"),
        (torch.randn(4), torch.randn(6), ValueError, "q and k must have the same even size D"),
        (torch.randn(2, 4), torch.randn(4), ValueError, r"q must have shape \(D,\)"),
        (torch.ones(4, dtype=torch.long), torch.randn(4), TypeError, "q must be a floating-point tensor"),
        ([1.0, 2.0], torch.randn(2), TypeError, "q must be a torch.Tensor"),
    ],
)
def test_plot_rope_scores_refuses_bad_vectors(q, k, error, match):
    with pytest.raises(error, match=match):
        plot_rope_scores(q, k)


def test_plot_alibi_shows_the_chosen_head_and_every_slope():
    fig = plot_alibi(head=2, num_heads=4, length=6)  # the third head: heads are counted from 0
    left, right = fig.axes[0], fig.axes[1]
    shown = left.collections[0].get_array().reshape(6, 6)
    m = 2 ** (-8 * 3 / 4)
    assert shown[5, 0] == pytest.approx(-5 * m) and shown[0, 5] == 0
    lines = [line for line in right.lines]
    assert len(lines) == 4
    for h, line in enumerate(lines):
        assert line.get_ydata()[1] == pytest.approx(-(2 ** (-8 * (h + 1) / 4)))
    assert lines[2].get_linewidth() > lines[0].get_linewidth()


def test_plot_alibi_draws_on_the_axes_it_is_given_as_on_a_new_figure():
    fig, axes = plt.subplots(1, 2)
    assert plot_alibi(head=5, num_heads=8, length=10, axes=axes) is fig
    fresh = plot_alibi(head=5, num_heads=8, length=10)
    np.testing.assert_allclose(fig.axes[0].collections[0].get_array(), fresh.axes[0].collections[0].get_array())
    assert fig.axes[0].get_title() == fresh.axes[0].get_title() == "Head 5 of 8: slope m = 2^(-8*6/8) = 0.0156"
    assert [line.get_linewidth() for line in axes[1].lines] == [1, 1, 1, 1, 1, 3, 1, 1]


@pytest.mark.parametrize(
    "kwargs, match",
    [({"head": 8}, r"head must be an integer in \[0, 7\]"), ({"head": 2, "num_heads": 2}, r"in \[0, 1\], got 2")],
)
def test_plot_alibi_refuses_a_head_out_of_range(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plot_alibi(**kwargs)


def _results():
    rows = []
    for scheme, level in [("rope", 0.9), ("alibi", 0.6)]:
        for seed in (0, 1):
            for length in (5, 11, 21):
                rows.append(
                    {
                        "scheme": scheme,
                        "seed": seed,
                        "test_len": length,
                        "accuracy": level - 0.01 * length + 0.02 * seed,
                    }
                )
    return pd.DataFrame(rows)


def test_plot_extrapolation_draws_the_mean_and_the_range_over_seeds():
    fig = plot_extrapolation(_results(), train_len=11)
    ax = fig.axes[0]
    means = [line.get_ydata() for line in ax.lines if len(line.get_ydata()) == 3]
    assert any(np.allclose(y, [0.9 - 0.05 + 0.01, 0.9 - 0.11 + 0.01, 0.9 - 0.21 + 0.01]) for y in means)
    bands = [c for c in ax.collections if c.get_paths()]
    assert len(bands) >= 2  # one band per scheme (plus the shading of the lengths beyond training)
    assert ax.get_xlabel() == "test sequence length" and ax.get_ylabel() == "accuracy"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["rope", "alibi"]


def test_plot_extrapolation_draws_a_baseline_line():
    fig = plot_extrapolation(_results(), train_len=11, baseline={21: 0.3, 5: 0.5, 11: 0.4}, baseline_label="shortcut")
    ax = fig.axes[0]
    dashed = [line for line in ax.lines if line.get_label() == "shortcut"]
    assert len(dashed) == 1
    assert list(dashed[0].get_xdata()) == [5, 11, 21] and list(dashed[0].get_ydata()) == [0.5, 0.4, 0.3]
    assert "shortcut" in [t.get_text() for t in ax.get_legend().get_texts()]
    with pytest.raises(TypeError, match="baseline must be a dict"):
        plot_extrapolation(_results(), train_len=11, baseline=[0.3, 0.4])


def test_plot_extrapolation_refuses_a_table_without_the_columns():
    with pytest.raises(ValueError, match=r"missing \['seed'\]"):
        plot_extrapolation(_results().drop(columns="seed"), train_len=11)
    with pytest.raises(ValueError, match="results must be a DataFrame"):
        plot_extrapolation([1, 2, 3], train_len=11)


def test_plot_alibi_with_a_head_count_that_is_not_a_power_of_two_uses_the_papers_slopes():
    fig = plot_alibi(head=4, num_heads=6, length=5)
    slopes = alibi_slopes(6).tolist()
    for h, line in enumerate(fig.axes[-1].lines):
        assert line.get_ydata()[1] == pytest.approx(-slopes[h])
    assert fig.axes[0].get_title() == "Head 4 of 6: slope m = 0.5"  # no 2^(-8 (h + 1) / H) formula for H = 6


def _position_results():
    rows = []
    for scheme, level in [("alibi", 1.5), ("rope", 1.4)]:
        for seed in (0, 1):
            for position in range(2, 40):
                rows.append({"scheme": scheme, "seed": seed, "position": position, "loss": level + 0.01 * seed})
    return pd.DataFrame(rows)


def test_plot_extrapolation_against_the_position_without_markers():
    fig = plot_extrapolation(
        _position_results(), train_len=11, metric="loss", x="position", xlabel="target position", markers=False,
        baseline={2: 1.0, 39: 1.0}, baseline_label="entropy",
    )  # fmt: skip
    ax = fig.axes[0]
    assert ax.get_xlabel() == "target position" and ax.get_ylabel() == "loss"
    means = [line for line in ax.lines if len(line.get_xdata()) == 38]
    assert len(means) == 2 and all(line.get_marker() in ("None", "", None) for line in means)
    assert np.allclose(means[0].get_ydata(), 1.505)
    assert "mean over seeds" in ax.get_title()
    one_run = plot_extrapolation(_position_results().query("seed == 0"), train_len=11, metric="loss", x="position")
    assert "one run" in one_run.axes[0].get_title()
    with pytest.raises(ValueError, match=r"missing \['position'\]"):
        plot_extrapolation(_results(), train_len=11, x="position")


def test_plot_rope_scalings_draws_each_ratio_against_the_turns():
    scalings = {"PI": ("linear", 4.0), "NTK": ("ntk", 4.0), "YaRN": ("yarn", 4.0, 2048)}
    fig = plot_rope_scalings(64, scalings, original_len=2048)
    ax = fig.axes[0]
    lines = [line for line in ax.lines if len(line.get_xdata()) == 32]
    assert [line.get_label() for line in lines] == ["PI", "NTK", "YaRN"]
    omega = rope_frequencies(64).numpy()
    np.testing.assert_allclose(lines[0].get_xdata(), 2048 * omega / (2 * math.pi))
    np.testing.assert_allclose(lines[0].get_ydata(), 0.25)
    yarn = lines[2].get_ydata()
    assert (yarn[:9] == 1.0).all() and np.allclose(yarn[21:], 0.25)  # kept, then interpolated
    assert [line.get_xdata()[0] for line in ax.lines if len(line.get_xdata()) == 2][:2] == [1, 32]  # the two betas
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "1/2", "1/4"]


def test_plot_rope_scalings_on_given_axes_and_refuses_bad_input():
    fig, ax = plt.subplots()
    assert plot_rope_scalings(8, {"PI": ("linear", 2)}, original_len=24, ax=ax) is fig
    with pytest.raises(TypeError, match="scalings must be a dict label -> scaling, not empty, got an empty dict"):
        plot_rope_scalings(8, {}, original_len=24)
    with pytest.raises(ValueError, match=r"scaling\[1\] \(the factor s\) must be"):
        plot_rope_scalings(8, {"bad": ("linear", 0.5)}, original_len=24)
    with pytest.raises(ValueError, match="original_len must be an integer >= 1"):
        plot_rope_scalings(8, {"PI": ("linear", 2)}, original_len=0)


def test_plot_rope_scalings_draws_the_papers_ramp_as_a_parts_scaling():
    """Notebook 11's figure: the paper's YaRN ramp (linear in the turns) as ("parts", s, ramp, attention)."""
    ramp = yarn_ramp(128, 4096, rule="turns")
    fig = plot_rope_scalings(128, {"YaRN (paper)": ("parts", 4, ramp, 1.1), "YaRN": ("yarn", 4, 4096)}, 4096)
    paper, code = (line.get_ydata() for line in fig.axes[0].lines if len(line.get_xdata()) == 64)
    np.testing.assert_allclose(paper, (1 - ramp.numpy()) + ramp.numpy() / 4)
    assert (paper[:21] == 1.0).all() and (code[:21] == 1.0).all()  # the same pairs kept
    assert (paper[22:45] < code[22:45]).all()  # the paper's ramp slows the middle pairs sooner
    with pytest.raises(ValueError, match="ramp must hold one number per pair, D/2 = 4, got 64"):
        plot_rope_scalings(8, {"bad": ("parts", 4, ramp, 1.0)}, original_len=24)
