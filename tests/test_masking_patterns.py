"""attn_course.masking's heatmap patterns and plots.masking: the pattern gallery and the masking demo of notebook 05
(Agg backend)."""

import inspect
import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from _helpers import colorbars, heatmap_panels, only_mesh
from matplotlib.figure import Figure
from torch.testing import assert_close

from attn_course import pattern_scores, plot_masking_demo, plot_pattern_gallery
from attn_course.masking import PATTERNS


def _data(ax, n=6):
    return torch.as_tensor(np.asarray(only_mesh(ax).get_array()), dtype=torch.float64).reshape(n, n)


def _ticks(ax, axis):
    return [t.get_text() for t in (ax.get_xticklabels() if axis == "x" else ax.get_yticklabels())]


def _forbid_show(monkeypatch):
    def forbidden_show(*args, **kwargs):
        raise AssertionError("plot helpers must not call plt.show()")

    monkeypatch.setattr(plt, "show", forbidden_show)


# ----------------------------------------------------------------------------------------------
# pattern_scores
# ----------------------------------------------------------------------------------------------


def test_patterns_are_the_four_documented_ones():
    assert set(PATTERNS) == {"diagonal", "previous token", "uniform", "first token"}
    assert len(PATTERNS) == 4


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("diagonal", [[4, 0, 0, 0], [0, 4, 0, 0], [0, 0, 4, 0], [0, 0, 0, 4]]),
        ("previous token", [[4, 0, 0, 0], [4, 0, 0, 0], [0, 4, 0, 0], [0, 0, 4, 0]]),  # token 1 attends to itself
        ("first token", [[4, 0, 0, 0], [4, 0, 0, 0], [4, 0, 0, 0], [4, 0, 0, 0]]),
        ("uniform", [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]),
    ],
)
def test_pattern_scores_hand_built(kind, expected):
    got = pattern_scores(kind, 4, 4.0)
    assert got.shape == (4, 4) and got.is_floating_point()
    assert torch.equal(got, torch.tensor(expected, dtype=got.dtype))


FAVOURED = {  # the key each query (row i) should attend to most
    "diagonal": lambda i: i,
    "previous token": lambda i: max(i - 1, 0),
    "first token": lambda i: 0,
}


def test_every_pattern_has_an_expectation_here():
    assert set(FAVOURED) | {"uniform"} == set(PATTERNS)


@pytest.mark.parametrize("n", [2, 6, 9])
@pytest.mark.parametrize("kind", sorted(FAVOURED))
def test_pattern_weights_favour_the_right_key(kind, n):
    strength = 2.5
    weights = torch.softmax(pattern_scores(kind, n, strength).double(), dim=-1)
    favoured = [FAVOURED[kind](i) for i in range(n)]
    assert weights.argmax(-1).tolist() == favoured
    # softmax of one score s among n - 1 zeros: e^s / (e^s + n - 1) on the favoured key, 1 / (e^s + n - 1) elsewhere
    total = math.exp(strength) + n - 1
    expected = torch.full((n, n), 1 / total, dtype=torch.float64)
    expected[range(n), favoured] = math.exp(strength) / total
    assert_close(weights, expected)


@pytest.mark.parametrize("n", [2, 5])
def test_uniform_pattern_gives_every_key_one_over_n(n):
    weights = torch.softmax(pattern_scores("uniform", n, 10.0), dim=-1)
    assert_close(weights, torch.full((n, n), 1 / n))


def test_pattern_scores_default_size_and_strength():
    got = pattern_scores("diagonal")
    assert got.shape == (6, 6)
    assert torch.equal(got, 4.0 * torch.eye(6))


@pytest.mark.parametrize(
    "args, match",
    [
        (("diag",), r"kind must be one of \['diagonal', 'previous token', 'uniform', 'first token'\], got 'diag'"),
        ((None,), r"kind must be one of \[.*\], got None"),
        (("uniform", 1), r"n must be an integer >= 2, got 1"),
        (("uniform", 0), r"n must be an integer >= 2, got 0"),
        (("uniform", 4.0), r"n must be an integer >= 2, got 4\.0"),
        (("uniform", True), r"n must be an integer >= 2, got True"),
        (("uniform", "6"), r"n must be an integer >= 2, got '6'"),
    ],
    ids=["unknown-kind", "none-kind", "one", "zero", "float", "bool", "str"],
)
def test_pattern_scores_error_messages(args, match, int_error):
    kind = args[0]
    error = TypeError if not isinstance(kind, str) else ValueError if len(args) == 1 else int_error(args[1])
    with pytest.raises(error, match=match):
        pattern_scores(*args)


# ----------------------------------------------------------------------------------------------
# plot_pattern_gallery
# ----------------------------------------------------------------------------------------------


def test_plot_pattern_gallery_four_panels_one_colorbar_fixed_scale(monkeypatch):
    _forbid_show(monkeypatch)
    before, rng = dict(matplotlib.rcParams), torch.get_rng_state()
    fig = plot_pattern_gallery()
    assert isinstance(fig, Figure)
    assert dict(matplotlib.rcParams) == before and torch.equal(torch.get_rng_state(), rng)
    assert plt.get_fignums() == [fig.number]
    panels = heatmap_panels(fig)
    assert len(panels) == 4 and len(colorbars(fig)) == 1
    assert [ax.get_title() for ax in panels] == list(PATTERNS)
    total = math.exp(4.0) + 5  # n = 6, strength 4
    for ax, kind in zip(panels, PATTERNS, strict=True):
        assert only_mesh(ax).get_clim() == pytest.approx((0.0, 1.0))
        assert _ticks(ax, "x") == ["t0", "t1", "t2", "t3", "t4", "t5"]
        assert ax.get_xlabel() == "Keys"
        if kind == "uniform":
            expected = torch.full((6, 6), 1 / 6, dtype=torch.float64)
        else:
            expected = torch.full((6, 6), 1 / total, dtype=torch.float64)
            expected[range(6), [FAVOURED[kind](i) for i in range(6)]] = math.exp(4.0) / total
        assert_close(_data(ax), expected, atol=1e-6, rtol=1e-6)  # the figure holds float32 weights
    assert panels[0].get_ylabel() == "Queries"
    assert _ticks(panels[0], "y") == ["t0", "t1", "t2", "t3", "t4", "t5"]


def test_plot_pattern_gallery_size_strength_and_tokens():
    fig = plot_pattern_gallery(n=3, strength=1.0, tokens=["the", "cat", "sat"])
    first = heatmap_panels(fig)[0]  # diagonal
    assert _ticks(first, "x") == ["the", "cat", "sat"] and _ticks(first, "y") == ["the", "cat", "sat"]
    total = math.exp(1.0) + 2
    expected = torch.full((3, 3), 1 / total, dtype=torch.float64)
    expected.fill_diagonal_(math.exp(1.0) / total)
    assert_close(_data(first, 3), expected, atol=1e-6, rtol=1e-6)


def test_plot_pattern_gallery_tokens_error_names_the_argument():
    """STYLE 5: the learner passed tokens, so the message says tokens (not show_heatmaps' xticklabels)."""
    with pytest.raises(ValueError, match=r"tokens"):
        plot_pattern_gallery(n=6, tokens=["a", "b", "c"])
    assert plt.get_fignums() == []


# ----------------------------------------------------------------------------------------------
# plot_masking_demo
# ----------------------------------------------------------------------------------------------


def _tokens(n):
    return [f"w{i}" for i in range(n)] + ["<pad>"] * (6 - n)


def test_plot_masking_demo_padding_panels_tokens_and_zeros(monkeypatch):
    _forbid_show(monkeypatch)
    before, rng = dict(matplotlib.rcParams), torch.get_rng_state()
    fig = plot_masking_demo(2, 5)
    assert isinstance(fig, Figure)
    assert dict(matplotlib.rcParams) == before and torch.equal(torch.get_rng_state(), rng)
    assert plt.get_fignums() == [fig.number]
    panels = heatmap_panels(fig)
    assert len(panels) == 2 and len(colorbars(fig)) == 1
    for ax, n in zip(panels, (2, 5), strict=True):
        assert _ticks(ax, "x") == _tokens(n)  # each panel shows its own sequence's tokens
        assert _ticks(ax, "y") == _tokens(n)
        assert str(n) in ax.get_title()
        assert ax.get_xlabel() == "Keys"
        assert only_mesh(ax).get_clim() == pytest.approx((0.0, 1.0))
        weights = _data(ax)
        assert (weights[:, n:] == 0).all()  # padded keys get exactly 0
        assert (weights[:, :n] > 0).all()
        assert_close(weights.sum(-1), torch.ones(6, dtype=torch.float64))
    assert panels[0].get_ylabel() == "Queries"
    assert "causal" not in fig.get_suptitle()


def test_plot_masking_demo_causal_hides_the_future():
    panels = heatmap_panels(plot_masking_demo(4, 6, causal=True))
    assert [_ticks(ax, "x") for ax in panels] == [_tokens(4), _tokens(6)]
    for ax, n in zip(panels, (4, 6), strict=True):
        weights = _data(ax)
        assert (weights.triu(1) == 0).all()  # upper triangle: the future
        assert (weights[:, n:] == 0).all()
        allowed = torch.tril(torch.ones(6, 6)).bool() & (torch.arange(6) < n)
        assert (weights[allowed] > 0).all()
        assert_close(weights.sum(-1), torch.ones(6, dtype=torch.float64))
    assert "causal" in panels[0].figure.get_suptitle()


def test_plot_masking_demo_masks_renormalise_the_same_scores():
    """Masking keeps the allowed weights in proportion: each row is the unmasked row, cut and rescaled."""
    full = _data(heatmap_panels(plot_masking_demo(6, 6, seed=3))[0])
    padded = _data(heatmap_panels(plot_masking_demo(3, 6, seed=3))[0])
    causal = _data(heatmap_panels(plot_masking_demo(6, 6, causal=True, seed=3))[0])
    assert_close(padded[:, :3], full[:, :3] / full[:, :3].sum(-1, keepdim=True), atol=1e-6, rtol=1e-5)
    for i in range(6):
        row = full[i, : i + 1]
        assert_close(causal[i, : i + 1], row / row.sum(), atol=1e-6, rtol=1e-5)


def test_plot_masking_demo_seed_and_empty_sequence():
    first, again, other = (_data(heatmap_panels(plot_masking_demo(seed=seed))[1]) for seed in (1, 1, 2))
    assert torch.equal(first, again)
    assert not torch.equal(first, other)
    empty = heatmap_panels(plot_masking_demo(0, 6, causal=True))[0]
    assert _ticks(empty, "x") == ["<pad>"] * 6
    assert (_data(empty) == 0).all()  # nothing to attend to: zeros, not NaN


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"valid_len_1": 7}, r"valid_len_1 must be an integer in \[0, 6\], got 7"),
        ({"valid_len_1": -1}, r"valid_len_1 must be an integer in \[0, 6\], got -1"),
        ({"valid_len_2": 7}, r"valid_len_2 must be an integer in \[0, 6\], got 7"),
        ({"valid_len_2": 2.0}, r"valid_len_2 must be an integer in \[0, 6\], got 2\.0"),
        ({"valid_len_1": True}, r"valid_len_1 must be an integer in \[0, 6\], got True"),
    ],
    ids=["too-long", "negative", "second-too-long", "float", "bool"],
)
def test_plot_masking_demo_error_messages_open_no_figure(kwargs, match, int_error):
    with pytest.raises(int_error(*kwargs.values()), match=match):
        plot_masking_demo(**kwargs)
    assert plt.get_fignums() == []


# ----------------------------------------------------------------------------------------------
# STYLE 7: every plot helper takes ax=None or axes=None and draws there
# ----------------------------------------------------------------------------------------------

MULTI_PANEL = {
    "plot_pattern_gallery": (lambda **kw: plot_pattern_gallery(**kw), 4),
    "plot_masking_demo": (lambda **kw: plot_masking_demo(**kw), 2),
}


@pytest.mark.parametrize("name", MULTI_PANEL)
def test_multi_panel_helper_draws_on_the_axes_it_is_given(name):
    draw, n_axes = MULTI_PANEL[name]
    fn = globals()[name]
    assert "axes" in inspect.signature(fn).parameters, f"{name} has no axes= parameter"
    assert inspect.signature(fn).parameters["axes"].default is None
    fig, axes = plt.subplots(1, n_axes)
    result = draw(axes=axes)
    assert result is fig
    assert plt.get_fignums() == [fig.number]  # no new figure
    assert all(ax.has_data() for ax in axes)
