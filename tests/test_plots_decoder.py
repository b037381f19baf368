"""attn_course.plots.decoder and time_per_token: the figures and timings of notebook 09."""

import math

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure

from attn_course import (
    DecoderOnlyLM,
    head_scores,
    plot_cache_bytes,
    plot_half_losses,
    plot_head_patterns,
    plot_head_scores,
    plot_next_token,
    plot_time_per_token,
    repeat_task,
    time_per_token,
)
from attn_course.lmtrain import LMHistory

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _model():
    torch.manual_seed(0)
    return DecoderOnlyLM(9, 16, 2, 2, 40).eval()


def test_plot_half_losses_draws_both_halves_smoothed_and_the_uniform_line():
    history = LMHistory(first_half=[3.0] * 30, second_half=[3.0 - 0.1 * i for i in range(30)])
    fig = plot_half_losses(history, vocab_size=9, smooth=5)
    ax = fig.axes[0]
    first, second, uniform = ax.lines
    assert len(first.get_ydata()) == 26  # running mean over 5 of 30 values
    assert second.get_ydata()[0] == pytest.approx(3.0 - 0.1 * 2)  # mean of steps 0..4
    assert uniform.get_ydata()[0] == pytest.approx(math.log(8))
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert labels == ["first half (new tokens)", "repeated half (from a_2 on)", "log(8): a uniform guess"]
    with pytest.raises(TypeError, match="history must be the LMHistory of train_lm"):
        plot_half_losses({}, 9)


def test_plot_head_scores_annotates_every_head():
    scores = head_scores(_model(), repeat_task(4, 5, 9, generator=torch.Generator().manual_seed(0)))
    fig = plot_head_scores(scores)
    assert isinstance(fig, Figure)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == [f"{v:.2f}" for v in scores["previous"].flatten().tolist()]
    num_layers, num_heads = scores["previous"].shape
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [f"layer {i}" for i in range(num_layers)]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [str(h) for h in range(num_heads)]  # from 0 too
    with pytest.raises(TypeError, match="scores must be the dict of head_scores"):
        plot_head_scores({"previous": scores["previous"]})


def test_plot_head_patterns_one_panel_per_head():
    model = _model()
    tokens = repeat_task(1, 4, 9, generator=torch.Generator().manual_seed(0))
    model(tokens)
    weights = model.attention_weights()[0]  # (L, H, T, T)
    fig = plot_head_patterns(weights, [(0, 1), (1, 0)], labels=[str(t) for t in tokens[0].tolist()])
    assert [ax.get_title() for ax in fig.axes[:2]] == ["layer 0, head 1", "layer 1, head 0"]  # from 0
    with pytest.raises(ValueError, match=r"weights must have shape \(L, H, T, T\)"):
        plot_head_patterns(weights[0], [(0, 0)])


def test_plot_next_token_bars_are_the_distribution():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    fig = plot_next_token(logits, temperature=0.5, top_k=2, target=1)
    heights = [bar.get_height() for bar in fig.axes[0].patches]
    want = torch.softmax(torch.tensor([4.0, 2.0]), 0).tolist() + [0.0, 0.0]
    assert heights == pytest.approx(want)
    assert "top 2" in fig.axes[0].get_title()
    assert fig.axes[0].patches[1].get_facecolor() != fig.axes[0].patches[0].get_facecolor()
    with pytest.raises(ValueError, match=r"logits must have shape \(C,\)"):
        plot_next_token(torch.zeros(2, 4))


def test_plot_time_per_token_gives_each_line_its_slope():
    fig = plot_time_per_token([10, 100], {"a": [1e-3, 1e-2], "b": [1e-3, 1e-3 * 10**0.5]})
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["a (slope 1.00)", "b (slope 0.50)"]


def test_time_per_token_gives_one_positive_time_per_length_and_restores_the_mode():
    model = _model().train()
    times = time_per_token(model, [4, 8], use_cache=True, repeats=2)
    assert len(times) == 2 and all(t > 0 for t in times)
    assert len(time_per_token(model, [4], use_cache=False, repeats=1)) == 1
    assert model.training
    with pytest.raises(TypeError, match="use_cache must be True or False"):
        time_per_token(model, [4], use_cache=None)
    with pytest.raises(ValueError, match="each length must be an integer >= 1, got 0"):
        time_per_token(model, [0], use_cache=True)


def test_plot_next_token_at_temperature_0_puts_all_the_probability_on_the_largest_logit():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    fig = plot_next_token(logits, temperature=0.0)
    assert [bar.get_height() for bar in fig.axes[0].patches] == [1.0, 0.0, 0.0, 0.0]
    assert fig.axes[0].get_title().startswith("temperature 0, all tokens")


def test_plot_cache_bytes_bars_are_kib_per_token_and_the_update_rescales_them():
    counts = {"a (MHA)": 2048, "b (MLA)": 576}
    fig = plot_cache_bytes(counts, bytes_per_value=2)
    ax = fig.axes[0]
    ends = sorted(p.get_x() + p.get_width() for p in ax.patches)  # bars from 1 KiB on a log axis
    assert ends == pytest.approx([576 * 2 / 1024, 2048 * 2 / 1024])
    assert ax.get_xscale() == "log" and all(p.get_x() == 1 for p in ax.patches)
    at = {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks(), strict=True)}
    assert at["a (MHA)"] > at["b (MLA)"]  # the first name on top
    assert "2 bytes per value" in ax.get_title()
    xlim = ax.get_xlim()
    assert fig.slider_update(bytes_per_value=4) is False  # drawn in place
    assert sorted(p.get_x() + p.get_width() for p in ax.patches) == pytest.approx([576 * 4 / 1024, 2048 * 4 / 1024])
    assert sorted(t.get_text().strip() for t in ax.texts) == ["2", "8"]
    assert "4 bytes per value" in ax.get_title() and ax.get_xlim() == xlim


def test_plot_cache_bytes_errors():
    with pytest.raises(TypeError, match="values_per_token must be a non-empty dict"):
        plot_cache_bytes([576])
    with pytest.raises(TypeError, match="values_per_token"):
        plot_cache_bytes({"a": 1.5})
    with pytest.raises(ValueError, match="bytes_per_value must be an integer in"):
        plot_cache_bytes({"a": 576}, bytes_per_value=0)
