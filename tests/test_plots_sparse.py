"""attn_course.plots.sparse: the mass the k largest weights keep, and the keys three sparse patterns read (notebook 13),
the second figure's in-place update for a slider and the errors of both (Agg backend, see conftest).

The references are loops written here: sorted rows for the mass kept, and for the patterns each query's keys picked
one by one (ties to the lower index), never the functions of ``attn_course.sparse``.
"""

import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from attn_course.plots.sparse import plot_mass_kept, plot_sparse_selection
from attn_course.widgets.panel import SliderPanel

BUDGETS = [1, 2, 4, 8]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ---- plot_mass_kept -------------------------------------------------------------------------------------------------


def _hand_weights() -> torch.Tensor:
    """(2, 4, 4) causal weights, rows summing to 1: head 0 peaked, head 1 flatter, with ties."""
    head0 = [[1.0, 0, 0, 0], [0.9, 0.1, 0, 0], [0.1, 0.7, 0.2, 0], [0.05, 0.05, 0.1, 0.8]]
    head1 = [[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.3, 0.3, 0.4, 0], [0.25, 0.25, 0.3, 0.2]]
    return torch.tensor([head0, head1], dtype=torch.float64)


def _mass_reference(weights: torch.Tensor, budgets) -> np.ndarray:
    """(H, len(budgets)): each row sorted in decreasing order, summed cumulatively, read at k (or at its end)."""
    cumulative = weights.sort(dim=-1, descending=True).values.cumsum(-1)  # (H, Q, K)
    return np.array(
        [[cumulative[h, :, min(k, weights.shape[-1]) - 1].mean().item() for k in budgets] for h in range(2)]
    )


def _lines(fig) -> dict:
    return {line.get_label(): np.asarray(line.get_ydata(), dtype=float) for line in fig.axes[0].get_lines()}


def test_plot_mass_kept_draws_one_labelled_line_per_head_and_the_uniform_baseline():
    fig = plot_mass_kept(_hand_weights(), [8, 1, 2, 4])  # unsorted budgets: drawn in increasing order
    assert isinstance(fig, Figure) and len(fig.axes) == 1 and fig.dpi == 90
    ax = fig.axes[0]
    assert ax.get_title() == "Mass kept by the k largest weights"
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_ylim() == (0, 1.02)
    assert ax.get_xscale() == "log" and list(ax.get_xticks()) == BUDGETS
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "8"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "head 0",
        "head 1",
        "uniform weights: k / (keys allowed)",
    ]
    baseline = [line for line in ax.get_lines() if line.get_label().startswith("uniform")][0]
    assert baseline.get_linestyle() == "--"
    assert all(list(line.get_xdata()) == BUDGETS for line in ax.get_lines())


def test_the_lines_are_the_mean_mass_of_the_k_largest_weights_of_each_row():
    weights = _hand_weights()
    lines = _lines(plot_mass_kept(weights, BUDGETS, labels=["peaked", "flat"]))
    want = _mass_reference(weights, BUDGETS)
    np.testing.assert_allclose(lines["peaked"], want[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(lines["flat"], want[1], rtol=0, atol=1e-12)
    # By hand, k = 1: head 0 keeps (1 + 0.9 + 0.7 + 0.8) / 4, head 1 (1 + 0.5 + 0.4 + 0.3) / 4; k >= 4 keeps it all.
    np.testing.assert_allclose([lines["peaked"][0], lines["flat"][0]], [0.85, 0.55], rtol=0, atol=1e-12)
    np.testing.assert_allclose(lines["flat"][1], (1 + 1 + 0.7 + 0.55) / 4, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lines["peaked"][2:], [1.0, 1.0], rtol=0, atol=1e-12)
    assert weights.equal(_hand_weights())  # not modified


def test_uniform_causal_weights_keep_exactly_the_baseline_k_over_the_keys_allowed():
    size = 6
    allowed = torch.ones(size, size).tril()  # (Q, K): query i sees keys 0..i
    uniform = (allowed / allowed.sum(-1, keepdim=True))[None].repeat(2, 1, 1)  # (2, Q, K): 1 / (i + 1) each
    lines = _lines(plot_mass_kept(uniform, [1, 2, 3, 8]))
    by_hand = [sum(min(k, i + 1) / (i + 1) for i in range(size)) / size for k in (1, 2, 3, 8)]
    np.testing.assert_allclose(lines["uniform weights: k / (keys allowed)"], by_hand, rtol=0, atol=1e-15)
    np.testing.assert_allclose(lines["head 0"], by_hand, rtol=0, atol=1e-6)  # float32 weights
    np.testing.assert_allclose(lines["head 1"], lines["head 0"], rtol=0, atol=0)
    assert by_hand[-1] == 1.0 and abs(by_hand[0] - 2.45 / 6) < 1e-12  # 1 + 1/2 + ... + 1/6 = 2.45


def test_with_more_keys_than_queries_each_query_sees_its_prefix():
    """K > Q: query i stands at i + K - Q (bottom-right, as causal_mask): its baseline counts those keys."""
    weights = torch.tensor([[[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]])  # (1, 2, 3): queries at positions 1 and 2
    lines = _lines(plot_mass_kept(weights, [1, 2], ax=plt.subplots()[1]))
    np.testing.assert_allclose(lines["uniform weights: k / (keys allowed)"], [(1 / 2 + 1 / 3) / 2, (1 + 2 / 3) / 2])
    np.testing.assert_allclose(lines["head 0"], [(0.5 + 0.5) / 2, (1.0 + 0.8) / 2], atol=1e-7)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_weights_are_drawn_from_their_float32_values(dtype):
    weights = _hand_weights().to(dtype)
    lines = _lines(plot_mass_kept(weights, BUDGETS))
    np.testing.assert_allclose(lines["head 0"], _mass_reference(weights.double(), BUDGETS)[0], rtol=0, atol=1e-12)


# ---- plot_sparse_selection -----------------------------------------------------------------------------------------


def _data(size: int = 12, dim: int = 4, seed: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """queries and keys (T, D); keys 5 and 9 copy keys 1 and 2, so some scores tie exactly."""
    gen = torch.Generator().manual_seed(seed)
    queries = 2 * torch.randn(size, dim, generator=gen, dtype=torch.float64)
    keys = 2 * torch.randn(size, dim, generator=gen, dtype=torch.float64)
    keys[5], keys[9] = keys[1], keys[2]
    return queries, keys


def _dense(queries, keys) -> tuple[np.ndarray, np.ndarray]:
    """(T, T) scores and causal softmax weights, row by row in plain Python floats."""
    size, dim = queries.shape
    scores = np.array([[float(queries[t] @ keys[j]) / math.sqrt(dim) for j in range(size)] for t in range(size)])
    weights = np.zeros((size, size))
    for t in range(size):
        exps = [math.exp(scores[t, j] - max(scores[t, : t + 1])) for j in range(t + 1)]
        weights[t, : t + 1] = [e / sum(exps) for e in exps]
    return scores, weights


def _oracle(scores: np.ndarray, top_k: int) -> list[list[int]]:
    return [sorted(range(t + 1), key=lambda j: (-scores[t, j], j))[:top_k] for t in range(len(scores))]


def _moba(queries, keys, top_k: int, block_size: int) -> list[list[int]]:
    """The query's own block, then the best earlier blocks by q . mean(block), ties to the lower block."""
    size = len(keys)
    blocks = [list(range(s, min(s + block_size, size))) for s in range(0, size, block_size)]
    means = [keys[b].mean(0) for b in blocks]
    slots = -(-top_k // block_size)
    read = []
    for t in range(size):
        own = t // block_size
        earlier = sorted(range(own), key=lambda b: (-float(queries[t] @ means[b]), b))[: slots - 1]
        read.append([j for b in [own, *earlier] for j in blocks[b] if j <= t])
    return read


def _window(size: int, top_k: int) -> list[list[int]]:
    return [list(range(max(0, t - top_k + 1), t + 1)) for t in range(size)]


def _check_panel(image, weights: np.ndarray, read: list[list[int]], name: str, title: str) -> None:
    """The image shows the weights on the keys read, masked elsewhere before the query, below vmin (-1) after it."""
    data = image.get_array()
    mask = np.ma.getmaskarray(data)
    size = len(weights)
    for t in range(size):
        for j in range(size):
            if j > t:
                assert not mask[t, j] and data.data[t, j] == -1.0, (name, t, j)
            elif j in read[t]:
                assert not mask[t, j] and abs(data.data[t, j] - weights[t, j]) < 1e-12, (name, t, j)
            else:
                assert mask[t, j], (name, t, j)
    kept = np.mean([sum(weights[t, j] for j in read[t]) for t in range(size)])
    assert title == f"{name}: keeps {kept:.2f}"


def _check_figure(fig, queries, keys, top_k: int, block_size: int) -> None:
    scores, weights = _dense(queries, keys)
    blocks = -(-top_k // block_size)
    expected = [
        (f"oracle top-{top_k}", _oracle(scores, top_k)),
        (f"MoBA {blocks} block{'s' if blocks > 1 else ''} of {block_size}", _moba(queries, keys, top_k, block_size)),
        (f"window {top_k}", _window(len(keys), top_k)),
    ]
    for ax, (name, read) in zip(fig.axes[:3], expected, strict=True):
        _check_panel(ax.get_images()[0], weights, read, name, ax.get_title())
    assert f"about {top_k} keys" in fig.get_suptitle() and "same budget" in fig.get_suptitle()


def test_plot_sparse_selection_draws_three_labelled_panels_on_one_colour_scale():
    fig = plot_sparse_selection(*_data(), top_k=3, block_size=2)
    assert isinstance(fig, Figure) and fig.dpi == 90 and len(fig.axes) == 4  # three panels and one colour bar
    panels = fig.axes[:3]
    assert [ax.get_xlabel() for ax in panels] == ["key position"] * 3 and panels[0].get_ylabel() == "query position"
    assert fig.axes[3].get_ylabel() == "dense attention weight"
    assert all(panels[0].get_shared_y_axes().joined(panels[0], ax) for ax in panels[1:])
    norms = [ax.get_images()[0].norm for ax in panels]
    assert all(n is norms[0] for n in norms) and (norms[0].vmin, norms[0].vmax) == (0.0, 1.0)
    assert all(ax.get_images()[0].get_array().shape == (12, 12) for ax in panels)


@pytest.mark.parametrize("top_k, block_size", [(3, 2), (4, 4), (1, 3), (5, 2), (20, 4)])
def test_each_panel_shows_the_dense_weights_on_the_keys_its_pattern_reads(top_k, block_size):
    queries, keys = _data()
    fig = plot_sparse_selection(queries, keys, top_k=top_k, block_size=block_size)
    _check_figure(fig, queries, keys, top_k, block_size)
    if top_k >= len(keys):  # every pattern reads every key before the query: all keep the whole mass
        assert all(ax.get_title().endswith("keeps 1.00") for ax in fig.axes[:3])


def test_ties_go_to_the_lower_key():
    """Keys 1 and 3 are equal: the query that can take only one of them takes key 1."""
    keys = torch.tensor([[3.0, 0.0], [1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [-1.0, 0.0]])  # (5, 2)
    queries = torch.tensor([[1.0, 0.0]]).repeat(5, 1)  # every query: scores 3, 1, 0, 1, -1 (up to its position)
    fig = plot_sparse_selection(queries, keys, top_k=2, block_size=1)
    mask = np.ma.getmaskarray(fig.axes[0].get_images()[0].get_array())
    assert not mask[3, 0] and not mask[3, 1] and mask[3, 3]  # query 3: keys 0 and 1 read, key 3 (tied) not
    assert not mask[4, 1] and mask[4, 3] and mask[4, 4]
    _check_figure(fig, queries.double(), keys.double(), 2, 1)


def test_update_sets_the_same_artists_as_a_fresh_figure():
    queries, keys = _data()
    fig = plot_sparse_selection(queries, keys, top_k=3, block_size=2)
    images = [ax.get_images()[0] for ax in fig.axes[:3]]
    titles = [ax.title for ax in fig.axes[:3]]
    before = [image.get_array().copy() for image in images]
    assert fig.slider_update(queries=queries, keys=keys, top_k=5, block_size=2) is None  # None: the panel keeps it
    assert [ax.get_images()[0] for ax in fig.axes[:3]] == images and [ax.title for ax in fig.axes[:3]] == titles
    masks = [np.ma.getmaskarray(image.get_array()) for image in images]
    assert any(not np.array_equal(np.ma.getmaskarray(old), new) for old, new in zip(before, masks, strict=True))
    _check_figure(fig, queries, keys, 5, 2)
    fresh = plot_sparse_selection(queries, keys, top_k=5, block_size=2)
    for ax, new in zip(fig.axes[:3], fresh.axes[:3], strict=True):
        assert ax.get_title() == new.get_title()
        mine, theirs = ax.get_images()[0].get_array(), new.get_images()[0].get_array()
        np.testing.assert_array_equal(np.ma.getmaskarray(mine), np.ma.getmaskarray(theirs))
        np.testing.assert_array_equal(mine.data, theirs.data)
    assert fig.get_suptitle() == fresh.get_suptitle()
    fig.slider_update(top_k=2, block_size=4)  # the block size is a control too
    _check_figure(fig, queries, keys, 2, 4)


def test_a_slider_panel_keeps_the_figure_and_draws_what_a_fresh_one_shows():
    queries, keys = _data(size=16)
    fixed = {"queries": queries, "keys": keys, "block_size": 4}
    panel = SliderPanel(plot_sparse_selection, {"top_k": widgets.IntSlider(value=4, min=1, max=16)}, fixed)
    kept = panel.figure
    assert kept is not None and panel.update({"top_k": 6}) is True and panel.figure is kept
    (picture,) = panel.draw(top_k=8)
    fresh = plot_sparse_selection(queries, keys, top_k=8, block_size=4)
    canvas = FigureCanvasAgg(fresh)
    canvas.draw()
    assert panel.figure is kept and np.array_equal(picture, np.asarray(canvas.buffer_rgba()))


def test_plot_sparse_selection_draws_on_given_axes_and_leaves_its_inputs_alone():
    queries, keys = _data()
    copies = queries.clone(), keys.clone()
    fig, axes = plt.subplots(1, 3)
    assert plot_sparse_selection(queries, keys, top_k=3, block_size=2, axes=axes) is fig
    assert all(len(ax.get_images()) == 1 for ax in axes)
    assert queries.equal(copies[0]) and keys.equal(copies[1])


def test_one_position_and_low_precision_inputs_are_drawn():
    fig = plot_sparse_selection(torch.ones(1, 4), torch.ones(1, 4), top_k=2, block_size=2)
    assert all(ax.get_title().endswith("keeps 1.00") for ax in fig.axes[:3])
    queries, keys = _data()
    half = plot_sparse_selection(queries.half(), keys.half(), top_k=3, block_size=2)
    _check_figure(half, queries.half().double(), keys.half().double(), 3, 2)


# ---- errors ---------------------------------------------------------------------------------------------------------

_QK = torch.ones(4, 2), torch.ones(4, 2)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: plot_mass_kept([[[1.0]]], BUDGETS), TypeError, r"weights must be a torch.Tensor"),
        (lambda: plot_mass_kept(torch.ones(1, 1, 1, dtype=torch.long), BUDGETS), TypeError, r"weights must be a float"),
        (lambda: plot_mass_kept(torch.ones(2, 2), BUDGETS), ValueError, r"weights must have shape \(H, Q, K\)"),
        (lambda: plot_mass_kept(torch.ones(1, 3, 2), BUDGETS), ValueError, r"K >= Q >= 1 .*got shape \(1, 3, 2\)"),
        (lambda: plot_mass_kept(torch.ones(0, 2, 2), BUDGETS), ValueError, r"H >= 1"),
        (lambda: plot_mass_kept(torch.full((1, 2, 2), 0.5), BUDGETS), ValueError, r"weights must be causal"),
        (lambda: plot_mass_kept(-torch.eye(2)[None], BUDGETS), ValueError, r"weights must be >= 0"),
        (lambda: plot_mass_kept(torch.eye(2)[None] * math.nan, BUDGETS), ValueError, r"weights must be finite"),
        (lambda: plot_mass_kept(_hand_weights(), []), ValueError, r"budgets must be a non-empty list"),
        (lambda: plot_mass_kept(_hand_weights(), 4), TypeError, r"budgets must be a non-empty list"),
        (lambda: plot_mass_kept(_hand_weights(), [1, 0]), ValueError, r"budgets\[1\] must be an integer >= 1, got 0"),
        (lambda: plot_mass_kept(_hand_weights(), [2.0]), TypeError, r"budgets\[0\] must be an integer >= 1"),
        (lambda: plot_mass_kept(_hand_weights(), [1], labels=["a"]), ValueError, r"labels must hold 2 names"),
        (lambda: plot_mass_kept(_hand_weights(), [1], labels="ab"), TypeError, r"labels must be a sequence"),
        (lambda: plot_sparse_selection([[1.0]], torch.ones(1, 1)), TypeError, r"queries must be a torch.Tensor"),
        (lambda: plot_sparse_selection(torch.ones(4, 2), torch.ones(4, 2).long()), TypeError, r"keys must be a float"),
        (lambda: plot_sparse_selection(torch.ones(1, 4, 2), torch.ones(4, 2)), ValueError, r"queries must have shape"),
        (
            lambda: plot_sparse_selection(torch.ones(4, 2), torch.ones(5, 2)),
            ValueError,
            r"must have one shape \(T, D\)",
        ),
        (lambda: plot_sparse_selection(torch.ones(4, 2), torch.ones(4, 3)), ValueError, r"must share a size D"),
        (lambda: plot_sparse_selection(torch.ones(0, 2), torch.ones(0, 2)), ValueError, r"at least one row"),
        (lambda: plot_sparse_selection(torch.ones(4, 2) * math.inf, _QK[1]), ValueError, r"queries must be finite"),
        (lambda: plot_sparse_selection(*_QK, top_k=0), ValueError, r"top_k must be an integer >= 1, got 0"),
        (lambda: plot_sparse_selection(*_QK, top_k=2.0), TypeError, r"top_k must be an integer >= 1, got 2.0"),
        (lambda: plot_sparse_selection(*_QK, block_size=-1), ValueError, r"block_size must be an integer >= 1"),
        (lambda: plot_sparse_selection(*_QK, block_size=True), TypeError, r"block_size must be an integer >= 1"),
        (lambda: plot_sparse_selection(*_QK, axes=plt.subplots(1, 2)[1]), ValueError, r"axes must hold three axes"),
    ],
)
def test_bad_input_is_refused_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    "changes, error, match",
    [
        ({"top_k": 0}, ValueError, r"top_k must be an integer >= 1"),
        ({"top_k": "8"}, TypeError, r"top_k must be an integer >= 1"),
        ({"block_size": 0.5}, TypeError, r"block_size must be an integer >= 1"),
    ],
)
def test_a_bad_slider_value_is_refused_by_name_and_leaves_the_figure_as_it_was(changes, error, match):
    fig = plot_sparse_selection(*_data(), top_k=3, block_size=2)
    titles = [ax.get_title() for ax in fig.axes[:3]]
    with pytest.raises(error, match=match):
        fig.slider_update(**({"top_k": 3, "block_size": 2} | changes))
    assert [ax.get_title() for ax in fig.axes[:3]] == titles


def test_mass_by_position_is_the_top_k_mass_of_each_query_averaged_over_sequences():
    from attn_course.plots.sparse import plot_mass_by_position

    torch.manual_seed(0)
    allowed = torch.ones(3, 5, dtype=torch.bool).tril(2)  # (Q, K): query i sees keys 0..i + 2
    weights = torch.softmax(torch.randn(2, 4, 3, 5).masked_fill(~allowed, float("-inf")), -1)  # (H, B, Q, K)
    fig = plot_mass_by_position(weights, 2, labels=["a", "b"])
    ax = fig.axes[0]
    for head, line in enumerate(ax.get_lines()):
        expected = [
            sum(sorted(weights[head, b, i].tolist(), reverse=True)[:2]) / 4 * 1.0 for i in range(3) for b in range(4)
        ]
        per_query = [sum(expected[i * 4 : i * 4 + 4]) for i in range(3)]
        assert list(line.get_xdata()) == [2, 3, 4]
        assert np.allclose(line.get_ydata(), per_query)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    assert ax.get_xlabel() == "query position" and "top 2" in ax.get_ylabel()
    plt.close(fig)


def test_mass_by_position_names_a_bad_k():
    from attn_course.plots.sparse import plot_mass_by_position

    weights = torch.full((1, 2, 2), 0.5).tril()
    with pytest.raises(TypeError, match=r"k must be an integer >= 1, got 1.5"):
        plot_mass_by_position(weights, 1.5)
    with pytest.raises(ValueError, match=r"k must be an integer >= 1, got 0"):
        plot_mass_by_position(weights, 0)
