"""attn_course.plots.pooling: the constant kernel's titles name no bandwidth (it has none), and the figures draw
on the axes they are given (Agg backend, see conftest)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from attn_course import plot_nw_fit, plot_query_weights
from attn_course.data import toy_regression

DATA = toy_regression(n_train=12, step=0.5, seed=1)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("bandwidth", [0.3, 2.0])
def test_plot_nw_fit_constant_kernel_title_names_no_bandwidth(bandwidth):
    fig = plot_nw_fit(DATA.x_train, DATA.y_train, DATA.x_test, DATA.y_test, kernel="constant", bandwidth=bandwidth)
    title = fig.axes[0].get_title()
    assert title.startswith("constant kernel") and "h =" not in title and f"{bandwidth:.3g}" not in title


def test_plot_nw_fit_other_kernels_keep_their_bandwidth_in_the_title():
    fig = plot_nw_fit(DATA.x_train, DATA.y_train, DATA.x_test, DATA.y_test, kernel="boxcar", bandwidth=0.7)
    assert fig.axes[0].get_title() == "boxcar kernel, bandwidth h = 0.7"


def test_plot_nw_fit_draws_on_the_axes_it_is_given_as_on_a_new_figure():
    kwargs = {"x_train": DATA.x_train, "y_train": DATA.y_train, "x_test": DATA.x_test, "y_true": DATA.y_test}
    fresh = plot_nw_fit(**kwargs, kernel="constant", bandwidth=0.5)
    fig, axes = plt.subplots(1, 2)
    assert plot_nw_fit(**kwargs, kernel="constant", bandwidth=0.5, axes=axes) is fig
    assert [ax.get_title() for ax in axes] == [ax.get_title() for ax in fresh.axes[:2]]
    assert "h =" not in axes[0].get_title()
    np.testing.assert_allclose(axes[0].lines[-1].get_ydata(), fresh.axes[0].lines[-1].get_ydata())
    np.testing.assert_allclose(axes[1].collections[0].get_array(), fresh.axes[1].collections[0].get_array())


def test_plot_query_weights_constant_kernel_title_names_no_bandwidth():
    fig = plot_query_weights(2.0, DATA.x_train, DATA.y_train, kernel="constant", bandwidth=0.4)
    title = fig.axes[0].get_title()
    assert "constant kernel, no h" in title and "h = 0.4" not in title
    other = plot_query_weights(2.0, DATA.x_train, DATA.y_train, kernel="epanechnikov", bandwidth=0.4)
    assert "(epanechnikov, h = 0.4)" in other.axes[0].get_title()
