"""attn_course.plots.efficient and plots.cost: the tiles, the peak memory and the IO model of notebook 10."""

import matplotlib.pyplot as plt
import pytest

import attn_course as ac


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
