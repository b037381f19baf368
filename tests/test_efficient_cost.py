"""attn_course.efficient_cost and plots.efficient: measured peak memory, the IO model, the figures."""

import math

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F

import attn_course as ac


def test_peak_memory_sees_one_allocation_exactly():
    assert ac.peak_memory(torch.empty, 1000, 1000) == 4 * 1000 * 1000  # float32


def test_peak_memory_is_the_peak_not_the_sum():
    def two_in_turn():
        a = torch.ones(1000, 1000)  # 4 MB
        del a
        b = torch.ones(1000, 1000)  # 4 MB again, after the first was freed
        return b

    def two_at_once():
        a = torch.ones(1000, 1000)
        b = torch.ones(1000, 1000)
        return a, b

    assert ac.peak_memory(two_in_turn) == 4_000_000
    assert ac.peak_memory(two_at_once) == 8_000_000


def test_peak_memory_restores_the_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # the tests run on one thread: start from another count, so a reset to 1 shows
    try:
        ac.peak_memory(torch.zeros, 10, threads=1)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_flash_attention_memory_grows_with_the_block_not_with_the_square():
    """Materialised: about two (Q, K) matrices; tiled: the output plus a few (block, block) tiles."""
    n, d = 1024, 32
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, n, d, generator=gen) for _ in range(3))
    materialised = ac.peak_memory(ac.scaled_dot_product_attention, q, k, v)
    tiled = ac.peak_memory(ac.flash_attention, q, k, v, 64)
    fused = ac.peak_memory(F.scaled_dot_product_attention, q, k, v)
    assert materialised >= 2 * 4 * n * n  # scores and weights
    assert tiled < 4 * n * d + 20 * 4 * 64 * 64  # the output and at most 20 tiles
    assert tiled < 2 * fused
    assert materialised > 10 * tiled


def test_peak_memory_errors():
    with pytest.raises(TypeError, match="fn must be a function to measure, got int"):
        ac.peak_memory(3)
    with pytest.raises(ValueError, match="threads must be an integer >= 1, got 0"):
        ac.peak_memory(torch.zeros, 3, threads=0)


def test_io_cost_closed_forms():
    cost = ac.io_cost(4096, 64, 128)
    n, d, b = 4096, 64, 128
    assert cost["naive_bytes"] == 4 * (4 * n * d + 4 * n * n)
    assert cost["tiled_bytes"] == 4 * (2 * n * d + 2 * (n // b) * n * d)
    assert cost["flops"] == 4 * n * n * d
    assert cost["tiled_intensity"] == pytest.approx(cost["flops"] / cost["tiled_bytes"])
    assert cost["tile_bytes"] == 4 * (4 * b * d + b * b + 2 * b)
    assert cost["kv_outer_bytes"] == 4 * (2 * n * d + (n // b) * (3 * n * d + 4 * n))


def _count_loads_and_stores(n, d, b, keys_outside):
    """Elements moved by the two loop orders, counted block by block as the algorithms are written."""
    moved = 0
    blocks = [min(b, n - start) for start in range(0, n, b)]
    if keys_outside:  # FlashAttention, Algorithm 1: K_j, V_j once; Q_i, O_i, l_i, m_i in and O_i, l_i, m_i out
        for key_rows in blocks:
            moved += 2 * key_rows * d
            for query_rows in blocks:
                moved += query_rows * d + query_rows * d + 2 * query_rows  # load Q_i, O_i, l_i, m_i
                moved += query_rows * d + 2 * query_rows  # write O_i, l_i, m_i
    else:  # FlashAttention-2: Q_i once, then every K_j, V_j; O_i out once
        for query_rows in blocks:
            moved += query_rows * d + sum(2 * key_rows * d for key_rows in blocks) + query_rows * d
    return moved


@pytest.mark.parametrize("n, d, b", [(64, 8, 16), (100, 6, 32), (7, 3, 7)])
def test_io_cost_tiled_counts_follow_the_two_loops(n, d, b):
    cost = ac.io_cost(n, d, b, bytes_per_element=2)
    assert cost["tiled_bytes"] == 2 * _count_loads_and_stores(n, d, b, keys_outside=False)
    assert cost["kv_outer_bytes"] == 2 * _count_loads_and_stores(n, d, b, keys_outside=True)
    assert cost["kv_outer_bytes"] > cost["tiled_bytes"]


def test_io_cost_tiling_moves_fewer_bytes_and_bigger_blocks_fewer_still():
    small, big = ac.io_cost(8192, 64, 32), ac.io_cost(8192, 64, 256)
    assert big["tiled_bytes"] < small["tiled_bytes"] < small["naive_bytes"]
    assert big["tiled_intensity"] > small["tiled_intensity"] > small["naive_intensity"]


def test_io_cost_fits_flags_a_tile_too_big_for_fast_memory():
    assert ac.io_cost(1024, 64, 64, fast_memory=192 * 1024)["fits"] == 1.0
    assert ac.io_cost(1024, 64, 512, fast_memory=192 * 1024)["fits"] == 0.0


def test_io_cost_uneven_blocks_round_up():
    assert ac.io_cost(100, 8, 30)["tiled_bytes"] == 4 * (2 * 100 * 8 + 2 * math.ceil(100 / 30) * 100 * 8)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"num_tokens": 0}, ValueError, "num_tokens must be an integer >= 1, got 0"),
        ({"num_tokens": 8, "block_size": 2.5}, TypeError, "block_size must be an integer >= 1"),
        ({"num_tokens": 8, "d": True}, TypeError, "d must be an integer >= 1"),
        ({"num_tokens": 8, "fast_memory": -1}, ValueError, "fast_memory must be a finite number > 0"),
    ],
)
def test_io_cost_errors(kwargs, error, words):
    with pytest.raises(error) as info:
        ac.io_cost(**kwargs)
    assert words in str(info.value)


# ----------------------------------------------------------------------------------------------------------------------
# plots.efficient
# ----------------------------------------------------------------------------------------------------------------------


def test_plot_peak_memory_draws_one_line_per_version():
    fig = ac.plot_peak_memory([512, 1024], {"a": [1e6, 4e6], "b": [1e5, 2e5]})
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and ax.get_xscale() == "log" and ax.get_title()
    assert list(ax.lines[0].get_ydata()) == pytest.approx([1e6 / 2**20, 4e6 / 2**20])
    assert "MiB" in ax.get_ylabel()


def test_plot_peak_memory_errors():
    with pytest.raises(ValueError, match="must not be empty"):
        ac.plot_peak_memory([], {})
    with pytest.raises(ValueError, match=r"peaks\['a'\] must have one value per size \(2\), got 1"):
        ac.plot_peak_memory([1, 2], {"a": [1.0]})


def test_plot_tiles_title_gives_the_counts_and_draws_on_a_given_axes():
    _, ax = plt.subplots()
    fig = ac.plot_tiles(64, 64, 16, causal=True, ax=ax)
    assert fig is ax.figure
    assert "10 tiles computed" in ax.get_title() and "6 skipped" in ax.get_title()
    image = ax.images[0].get_array()
    assert image[0, -1] == 0 and image[-1, 0] == 2  # top right skipped, bottom left may attend


def test_plot_tiles_window_and_errors():
    fig = ac.plot_tiles(32, 32, 8, causal=True, window=8)
    assert "window 8" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="window needs causal=True"):
        ac.plot_tiles(8, 8, 2, causal=False, window=2)


def test_plot_tiles_with_more_queries_than_keys_leaves_the_first_rows_white():
    """Q > K: the first Q - K queries see no key; their tiles are skipped and their cells stay white (0)."""
    fig = ac.plot_tiles(13, 5, 4, causal=True)
    counts = ac.block_counts(13, 5, 4, causal=True)
    assert f"{counts['computed']} tiles computed" in fig.axes[0].get_title() and counts["skipped"] > 0
    image = fig.axes[0].images[0].get_array()
    assert (image[:8] == 0).all() and (image[8:] > 0).any()


def test_plot_io_cost_marks_n_and_says_whether_a_tile_fits():
    fig = ac.plot_io_cost(4096, 64)
    left, right = fig.axes
    assert "N = 4096" in left.get_title()
    assert "260 MiB against 130.0 MiB" in left.get_title() and "MiB" in left.get_ylabel()  # 2**20 bytes, not 10**6
    assert "fits in 192 KiB" in right.get_title()
    assert "does NOT fit" in ac.plot_io_cost(4096, 512).axes[1].get_title()


def test_plot_io_cost_draws_on_the_axes_it_is_given_as_on_a_new_figure():
    fig, axes = plt.subplots(1, 2)
    assert ac.plot_io_cost(1024, 256, axes=axes) is fig
    fresh = ac.plot_io_cost(1024, 256)
    for ax, want in zip(fig.axes, fresh.axes, strict=True):
        assert ax.get_title() == want.get_title()
        assert ax.title.get_color() == want.title.get_color()
        for line, want_line in zip(ax.lines, want.lines, strict=True):
            assert list(line.get_ydata()) == pytest.approx(list(want_line.get_ydata()))
        assert [p.get_height() for p in ax.patches] == pytest.approx([p.get_height() for p in want.patches])
        assert [t.get_text() for t in ax.texts] == [t.get_text() for t in want.texts]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()][1] == "tiled, b = 256"
