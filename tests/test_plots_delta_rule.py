"""attn_course.plots.delta_rule: the gated memory figure of notebook 12, its in-place update for a slider and its
errors (Agg backend, see conftest)."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import attn_course as ac
from attn_course.widgets.panel import SliderPanel

AGES = np.array([0, 7, 6, 5, 4, 3, 2, 1])  # k0 written again last; k1 seven writes before the end, ..., k7 one


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _bars(fig, which: int) -> list:
    """The bars of the gated memory (0) or of the plain sum (1)."""
    return list(fig.axes[0].containers[which])


def _heights(fig, which: int) -> np.ndarray:
    return np.array([bar.get_height() for bar in _bars(fig, which)])


def _fade(fig) -> np.ndarray:
    (line,) = [line for line in fig.axes[0].get_lines() if "expected fade" in line.get_label()]
    return np.asarray(line.get_ydata(), dtype=float)


def test_plot_gated_memory_draws_one_pair_of_bars_per_key_with_labels():
    fig = ac.plot_gated_memory(0.9)
    assert isinstance(fig, Figure) and len(fig.axes) == 1 and fig.dpi == 90
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0].startswith("k0 (new)") and [t.split("\n")[0] for t in ticks[1:]] == [f"k{i}" for i in range(1, 8)]
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_ylim() == (-0.1, 2.1)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("Gated DeltaNet" in t for t in legend) and any("plain sum" in t for t in legend)
    assert len(_bars(fig, 0)) == len(_bars(fig, 1)) == 8


def test_without_a_gate_every_key_reads_back_its_latest_value_and_the_plain_sum_piles_up():
    fig = ac.plot_gated_memory(1.0)
    np.testing.assert_allclose(_heights(fig, 0), np.ones(8), rtol=0, atol=1e-9)  # the delta rule overwrote k0
    # The plain sum returns old + new for k0; the new value has cosine 0.5 with the old one and the same length.
    np.testing.assert_allclose(_heights(fig, 1), [1.5] + [1.0] * 7, rtol=0, atol=1e-9)
    assert "α = 1:" in fig.axes[0].get_title() and "keeps 1.000" in fig.axes[0].get_title()


@pytest.mark.parametrize("alpha", [0.5, 0.73, 0.0])
def test_a_gate_fades_every_older_key_like_alpha_to_its_age_and_k0_reads_its_new_value(alpha):
    fig = ac.plot_gated_memory(alpha)
    want = alpha**AGES  # orthonormal keys and beta = 1: each later step multiplies what k_i stored by alpha
    np.testing.assert_allclose(_heights(fig, 0), want, rtol=0, atol=1e-9)
    np.testing.assert_allclose(_fade(fig), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(_heights(fig, 1), [1.5] + [1.0] * 7, rtol=0, atol=1e-9)  # the plain sum has no gate
    title = fig.axes[0].get_title()
    assert f"α = {alpha:g}:" in title and f"keeps {alpha**7:.3f}" in title and "-0.000" not in title


def test_update_sets_the_same_artists_as_a_fresh_figure():
    fig = ac.plot_gated_memory(0.9)
    bars, plain = _bars(fig, 0), _heights(fig, 1)
    assert not fig.slider_update(alpha=0.5)  # falsy: the panel keeps this figure (True would ask for a new one)
    fresh = ac.plot_gated_memory(0.5)
    assert all(a is b for a, b in zip(_bars(fig, 0), bars, strict=True))
    np.testing.assert_allclose(_heights(fig, 0), _heights(fresh, 0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(_heights(fig, 0), 0.5**AGES, rtol=0, atol=1e-9)
    np.testing.assert_allclose(_fade(fig), _fade(fresh))
    np.testing.assert_array_equal(_heights(fig, 1), plain)
    assert fig.axes[0].get_title() == fresh.axes[0].get_title()


def test_a_slider_panel_keeps_the_figure_and_draws_what_a_fresh_one_shows():
    panel = SliderPanel(ac.plot_gated_memory, {"alpha": widgets.FloatSlider(value=0.9, min=0.0, max=1.0)}, {})
    kept = panel.figure
    assert kept is not None and panel.update({"alpha": 0.6}) is True and panel.figure is kept
    (picture,) = panel.draw(alpha=0.3)
    fresh = ac.plot_gated_memory(0.3)
    canvas = FigureCanvasAgg(fresh)
    canvas.draw()
    assert panel.figure is kept and np.array_equal(picture, np.asarray(canvas.buffer_rgba()))


def test_plot_gated_memory_draws_on_given_axes():
    fig, ax = plt.subplots()
    assert ac.plot_gated_memory(0.8, ax=ax) is fig and len(ax.containers) == 2


@pytest.mark.parametrize(
    "alpha, error, match",
    [
        (1.5, ValueError, r"alpha must be a finite number in \[0, 1\], got 1.5"),
        (-0.1, ValueError, r"alpha must be a finite number in \[0, 1\]"),
        (float("nan"), ValueError, r"alpha must be a finite number in \[0, 1\], got nan"),
        ("0.5", TypeError, r"alpha must be a finite number in \[0, 1\], got '0.5' \(str\)"),
        (torch.ones(2), ValueError, r"alpha must be a single number"),
        (True, TypeError, r"alpha must be a finite number"),
    ],
)
def test_a_bad_alpha_is_refused_by_name(alpha, error, match):
    with pytest.raises(error, match=match):
        ac.plot_gated_memory(alpha)
    fig = ac.plot_gated_memory(0.9)
    with pytest.raises(error, match=match):
        fig.slider_update(alpha=alpha)
