"""attn_course.selfattention: the worked 3-token example step by step, and its figures (Agg backend)."""

import inspect
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _helpers import draw_cleanly
from matplotlib.figure import Figure
from torch.testing import assert_close

from attn_course import (
    SelfAttentionSteps,
    plot_self_attention_steps,
    plot_worked_example,
    self_attention_steps,
    show_matrix,
)
from attn_course.data import three_token_example

# ----------------------------------------------------------------------------------------------
# The worked example by hand: inputs x1 = [1, 0, 1, 0], x2 = [0, 2, 0, 2], x3 = [1, 1, 1, 1]
# ----------------------------------------------------------------------------------------------

INPUTS = [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]
QUERIES = [[1, 0, 2], [2, 2, 2], [2, 1, 3]]  # x @ W_Q, e.g. q1 = row 1 + row 3 of W_Q = [1, 0, 1] + [0, 0, 1]
KEYS = [[0, 1, 1], [4, 4, 0], [2, 3, 1]]  # x @ W_K, e.g. k2 = 2 (row 2 + row 4 of W_K) = 2 ([1, 1, 0] + [1, 1, 0])
VALUES = [[1, 2, 3], [2, 8, 0], [2, 6, 3]]  # x @ W_V
SCORES = [[2, 4, 4], [4, 16, 12], [4, 12, 10]]  # q_i . k_j, e.g. q1 . k2 = 1*4 + 0*4 + 2*0 = 4


def _softmax(row):
    e = [math.exp(s) for s in row]
    return [x / sum(e) for x in e]


def _pool(weights):
    """outputs[i][c] = sum_j weights[i][j] * VALUES[j][c]."""
    return [[sum(w[j] * VALUES[j][c] for j in range(3)) for c in range(3)] for w in weights]


WEIGHTS = [_softmax(row) for row in SCORES]
OUTPUTS = _pool(WEIGHTS)
SCALED_SCORES = [[s / math.sqrt(3) for s in row] for row in SCORES]  # D = 3
SCALED_WEIGHTS = [_softmax(row) for row in SCALED_SCORES]
SCALED_OUTPUTS = _pool(SCALED_WEIGHTS)


def _t(rows, dtype=torch.float64):
    return torch.tensor(rows, dtype=dtype)


def test_hand_values_of_token_1():
    # softmax([2, 4, 4]): e^2 / (e^2 + 2 e^4) for k1, e^4 / (e^2 + 2 e^4) for k2 and k3
    assert [round(w, 4) for w in WEIGHTS[0]] == [0.0634, 0.4683, 0.4683]
    assert [round(v, 4) for v in OUTPUTS[0]] == [1.9366, 6.6831, 1.5951]


def test_self_attention_steps_worked_example_hand_computed(dtype, call_unmodified):
    example = three_token_example(dtype)
    steps = call_unmodified(self_attention_steps, *example)
    assert isinstance(steps, SelfAttentionSteps)
    assert all(t.dtype == dtype for t in steps)
    assert_close(steps.queries, _t(QUERIES, dtype))
    assert_close(steps.keys, _t(KEYS, dtype))
    assert_close(steps.values, _t(VALUES, dtype))
    assert_close(steps.scores, _t(SCORES, dtype))
    assert_close(steps.weights, _t(WEIGHTS, dtype))
    assert_close(steps.outputs, _t(OUTPUTS, dtype))
    assert steps.weighted.shape == (3, 3, 3)


def test_self_attention_steps_weighted_values_and_outputs():
    steps = self_attention_steps(*three_token_example(torch.float64))
    for i in range(3):
        for j in range(3):
            expected = [WEIGHTS[i][j] * VALUES[j][c] for c in range(3)]  # what token j contributes to output i
            assert_close(steps.weighted[i, j], _t(expected))
    assert_close(steps.outputs, steps.weighted.sum(1))
    assert_close(steps.weights.sum(-1), torch.ones(3, dtype=torch.float64))


def test_self_attention_steps_scaled_divides_the_scores_by_sqrt_d(dtype):
    steps = self_attention_steps(*three_token_example(dtype), scale=True)
    assert_close(steps.scores, _t(SCALED_SCORES, dtype))
    assert_close(steps.weights, _t(SCALED_WEIGHTS, dtype))
    assert_close(steps.outputs, _t(SCALED_OUTPUTS, dtype))
    assert_close(steps.queries, _t(QUERIES, dtype))  # the projections do not change


def test_self_attention_steps_match_torch_scaled_dot_product_attention(dtype, gen, call_unmodified):
    inputs = torch.randn(5, 4, generator=gen, dtype=dtype)
    w_query, w_key = torch.randn(4, 3, generator=gen, dtype=dtype), torch.randn(4, 3, generator=gen, dtype=dtype)
    w_value = torch.randn(4, 2, generator=gen, dtype=dtype)
    q, k, v = inputs @ w_query, inputs @ w_key, inputs @ w_value  # (T, D), (T, D), (T, V)
    scaled = call_unmodified(self_attention_steps, inputs, w_query, w_key, w_value, True)
    assert scaled.outputs.shape == (5, 2) and scaled.weights.shape == (5, 5) and scaled.weighted.shape == (5, 5, 2)
    assert_close(scaled.outputs, F.scaled_dot_product_attention(q[None], k[None], v[None])[0])
    unscaled = self_attention_steps(inputs, w_query, w_key, w_value)
    assert_close(unscaled.outputs, F.scaled_dot_product_attention(q[None], k[None], v[None], scale=1.0)[0])
    assert_close(unscaled.weights, torch.softmax(q @ k.T, dim=-1))


def test_self_attention_steps_worked_example_matches_torch_when_scaled():
    example = three_token_example(torch.float64)
    q, k, v = (_t(m)[None] for m in (QUERIES, KEYS, VALUES))  # (1, T, 3)
    steps = self_attention_steps(*example, scale=True)
    assert_close(steps.outputs, F.scaled_dot_product_attention(q, k, v)[0])


X64 = three_token_example(torch.float64)


@pytest.mark.parametrize(
    "override, error, match",
    [
        ({"inputs": INPUTS}, TypeError, r"inputs must be a torch\.Tensor, got list"),
        ({"inputs": torch.tensor(INPUTS)}, TypeError, r"inputs must be a floating-point tensor.*torch\.int64"),
        ({"inputs": X64.inputs[0]}, ValueError, r"inputs must have shape \(T, Din\) \(2-D\), got shape \(4,\) \(1-D\)"),
        ({"inputs": X64.inputs[None]}, ValueError, r"inputs must have shape \(T, Din\).*got shape \(1, 3, 4\) \(3-D\)"),
        ({"w_query": X64.w_query[0]}, ValueError, r"w_query must have shape \(Din, D\) \(2-D\), got shape \(3,\)"),
        ({"w_key": X64.w_key[None]}, ValueError, r"w_key must have shape \(Din, D\).*got shape \(1, 4, 3\)"),
        ({"w_value": X64.w_value.numpy()}, TypeError, r"w_value must be a torch\.Tensor, got ndarray"),
        ({"w_value": X64.w_value.long()}, TypeError, r"w_value must be a floating-point tensor.*torch\.int64"),
        (
            {"w_key": X64.w_key[:3]},
            ValueError,
            r"w_key\.shape\[0\] must be Din = 4 \(inputs \(3, 4\)\), got w_key of shape \(3, 3\)",
        ),
        ({"w_query": torch.zeros(5, 3, dtype=torch.float64)}, ValueError, r"w_query\.shape\[0\] must be Din = 4"),
        ({"w_value": torch.zeros(2, 3, dtype=torch.float64)}, ValueError, r"w_value\.shape\[0\] must be Din = 4"),
        (
            {"w_key": X64.w_key[:, :2]},
            ValueError,
            r"w_query and w_key must project to one size D, got \(4, 3\) and \(4, 2\)",
        ),
        (
            {"w_key": X64.w_key.float()},
            TypeError,
            r"w_key has dtype torch\.float32 but inputs has dtype torch\.float64",
        ),
        (
            {"w_value": X64.w_value.float()},
            TypeError,
            r"w_value has dtype torch\.float32 but inputs has dtype torch\.float64",
        ),
    ],
    ids=[
        "inputs-list",
        "inputs-int",
        "inputs-1-D",
        "inputs-3-D",
        "w_query-1-D",
        "w_key-3-D",
        "w_value-numpy",
        "w_value-int",
        "w_key-Din",
        "w_query-Din",
        "w_value-Din",
        "D-differs",
        "w_key-dtype",
        "w_value-dtype",
    ],
)
def test_self_attention_steps_error_messages(override, error, match):
    args = X64._asdict()
    args.update(override)
    with pytest.raises(error, match=match):
        self_attention_steps(**args)


def test_self_attention_steps_w_value_rank_error_names_its_own_shape():
    """w_value is (Din, V) in the docstring; the message must not ask for (Din, D), the query/key size."""
    with pytest.raises(ValueError, match=r"w_value must have shape \(Din, V\) \(2-D\), got shape \(3,\)"):
        self_attention_steps(X64.inputs, X64.w_query, X64.w_key, X64.w_value[0])


def test_self_attention_steps_value_size_may_differ_from_d(gen):
    w_value = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    steps = self_attention_steps(X64.inputs, X64.w_query, X64.w_key, w_value)
    assert steps.values.shape == (3, 5) and steps.outputs.shape == (3, 5)
    assert_close(steps.outputs, _t(WEIGHTS) @ (X64.inputs @ w_value))


# ----------------------------------------------------------------------------------------------
# show_matrix
# ----------------------------------------------------------------------------------------------


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def _ticks(ax, axis):
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in labels]


def test_show_matrix_annotations_labels_and_title(call_unmodified):
    matrix = torch.tensor([[1.5, -2.25, 0.0], [3.25, 10.0, 0.5]])
    fig = call_unmodified(show_matrix, matrix, title="Q = X W_Q", row_labels=["x1", "x2"], col_labels=["a", "b", "c"])
    assert isinstance(fig, Figure)
    (ax,) = fig.axes  # no colour bar
    assert _texts(ax) == ["1.50", "-2.25", "0.00", "3.25", "10.00", "0.50"]  # row by row, format .2f
    assert _ticks(ax, "y") == ["x1", "x2"] and _ticks(ax, "x") == ["a", "b", "c"]
    assert ax.get_title() == "Q = X W_Q"
    bottom, top = ax.get_ylim()
    assert bottom > top  # the first row is at the top


@pytest.mark.parametrize(
    "matrix, fmt, expected",
    [
        (np.array([[1.0, 0.5], [12.0, -3.0]]), ".3g", ["1", "0.5", "12", "-3"]),
        ([[0.25, 0.125]], ".4f", ["0.2500", "0.1250"]),
        (torch.tensor([[2.0], [0.0]], requires_grad=True), ".1f", ["2.0", "0.0"]),
    ],
    ids=["numpy", "list", "grad-tensor"],
)
def test_show_matrix_accepts_array_likes_and_formats(matrix, fmt, expected):
    (ax,) = show_matrix(matrix, fmt=fmt).axes
    assert _texts(ax) == expected
    assert _ticks(ax, "x") == [] and _ticks(ax, "y") == []  # no labels given, no ticks


def test_show_matrix_draws_on_the_axes_it_is_given():
    assert inspect.signature(show_matrix).parameters["ax"].default is None
    fig, (left, right) = plt.subplots(1, 2)
    result = show_matrix(torch.eye(2), ax=right, title="I", row_labels=["r1", "r2"], col_labels=["c1", "c2"])
    assert result is fig
    assert plt.get_fignums() == [fig.number]  # no new figure
    assert list(fig.axes) == [left, right]  # and no extra axes
    assert right.has_data() and not left.has_data()
    assert _texts(right) == ["1.00", "0.00", "0.00", "1.00"] and right.get_title() == "I"


@pytest.mark.parametrize(
    "matrix, kwargs, match",
    [
        (torch.zeros(3), {}, r"matrix must be 2-D \(R, C\) with no empty axis, got shape \(3,\)"),
        (torch.zeros(1, 2, 3), {}, r"matrix must be 2-D \(R, C\) with no empty axis, got shape \(1, 2, 3\)"),
        (torch.zeros(0, 3), {}, r"matrix must be 2-D \(R, C\) with no empty axis, got shape \(0, 3\)"),
        (torch.zeros(2, 3), {"row_labels": ["a", "b", "c"]}, r"row_labels must hold 2 labels, got 3"),
        (torch.zeros(2, 3), {"col_labels": ["a", "b"]}, r"col_labels must hold 3 labels, got 2"),
        (torch.zeros(2, 3), {"vmin": float("nan")}, r"vmin must be a finite number, got nan"),
        (torch.zeros(2, 3), {"vmin": 2.0, "vmax": 1.0}, r"vmin must be below vmax, got vmin = 2\.0 and vmax = 1\.0"),
    ],
    ids=["1-D", "3-D", "empty", "row-labels", "col-labels", "vmin-nan", "vmin-above-vmax"],
)
def test_show_matrix_error_messages_open_no_figure(matrix, kwargs, match):
    with pytest.raises(ValueError, match=match):
        show_matrix(matrix, **kwargs)
    assert plt.get_fignums() == []


# ----------------------------------------------------------------------------------------------
# plot_self_attention_steps and plot_worked_example (each call lays out 8 panels with a number in every
# cell, a slow draw, so every test below draws one figure and checks all it needs on it)
# ----------------------------------------------------------------------------------------------

PANEL_TITLES = ["inputs", "queries", "keys", "values", "scores", "weights", "weighted values", "outputs"]
INPUT_TEXTS = ["1", "0", "1", "0", "0", "2", "0", "2", "1", "1", "1", "1"]  # format .3g


def _flat(rows, fmt):
    return [f"{v:{fmt}}" for row in rows for v in row]


def test_plot_worked_example_default_draws_every_step_of_the_worked_example(monkeypatch):
    fig = draw_cleanly(monkeypatch, plot_worked_example)
    assert len(fig.axes) == 8  # no colour bars
    for ax, start in zip(fig.axes, PANEL_TITLES, strict=True):
        assert ax.get_title().startswith(start), (ax.get_title(), start)
    assert fig.get_suptitle().startswith("Unscaled") and "sqrt" not in fig.axes[4].get_title()
    assert "x0" in fig.axes[6].get_title()  # the weighted values of token 0 (token=0 by default)
    # the default is the worked example: every panel shows the hand-computed numbers
    inputs, queries, keys, values, scores, weights, weighted, outputs = fig.axes
    assert _texts(inputs) == INPUT_TEXTS
    assert _texts(queries) == _flat(QUERIES, ".3g")
    assert _texts(keys) == _flat(KEYS, ".3g")
    assert _texts(values) == _flat(VALUES, ".3g")
    assert _texts(scores) == _flat(SCORES, ".2f")
    assert _texts(weights) == _flat(WEIGHTS, ".4f")
    token_1 = [[WEIGHTS[0][j] * VALUES[j][c] for c in range(3)] for j in range(3)]  # rows: keys
    assert _texts(weighted) == _flat(token_1, ".3f")
    assert _texts(outputs) == _flat(OUTPUTS, ".4f")
    assert _texts(outputs)[:3] == ["1.9366", "6.6831", "1.5951"]
    # rows are tokens, columns input / projected dimensions or keys
    for ax in (inputs, queries, keys, values, scores, weights, outputs):
        assert _ticks(ax, "y") == ["x0", "x1", "x2"]  # tokens counted from 0, as Python indexes them
    assert _ticks(scores, "x") == ["x0", "x1", "x2"] and _ticks(weights, "x") == ["x0", "x1", "x2"]
    assert _ticks(inputs, "x") == ["i0", "i1", "i2", "i3"]
    assert _ticks(weighted, "y") == ["x0 (key)", "x1 (key)", "x2 (key)"]
    assert all(_ticks(ax, "x") for ax in fig.axes)
    # the scores and weights label their key axis (columns); their rows are queries
    for ax in (scores, weights):
        assert ax.get_xlabel() == "key"
    assert "row: query" in scores.get_title()
    assert all(ax.get_xlabel() == "" for ax in (inputs, queries, keys, values, weighted, outputs))
    # one colour scale for every panel but the weights, which go from 0 to 1
    shared = (0.0, 16.0)  # the smallest and the largest number of all the other panels: 0 and the score 16
    for ax in (inputs, queries, keys, values, scores, weighted, outputs):
        assert ax.collections[0].get_clim() == shared
    assert weights.collections[0].get_clim() == (0.0, 1.0)


def test_plot_self_attention_steps_scaled_token_and_names(monkeypatch, call_unmodified):
    fig = draw_cleanly(
        monkeypatch,
        call_unmodified,
        plot_self_attention_steps,
        *X64,
        scale=True,
        token=1,
        token_names=["the", "cat", "sat"],
    )
    inputs, _, _, _, scores, weights, weighted, outputs = fig.axes
    assert "sqrt(D)" in scores.get_title()
    assert fig.get_suptitle().startswith("Scaled")
    assert _texts(inputs) == INPUT_TEXTS
    assert _texts(scores) == _flat(SCALED_SCORES, ".2f")
    assert _texts(outputs) == _flat(SCALED_OUTPUTS, ".4f")
    assert "cat" in weighted.get_title()
    token_2 = [[SCALED_WEIGHTS[1][j] * VALUES[j][c] for c in range(3)] for j in range(3)]
    assert _texts(weighted) == _flat(token_2, ".3f")
    assert _ticks(weights, "y") == ["the", "cat", "sat"] and _ticks(weights, "x") == ["the", "cat", "sat"]
    assert _ticks(weighted, "y") == ["the (key)", "cat (key)", "sat (key)"]


def test_plot_worked_example_token_0_input_changes_the_figure():
    fig = plot_worked_example(3.0, -1.0, 0.5, 2.0, scale=True)
    inputs_panel, outputs_panel = fig.axes[0], fig.axes[7]
    assert _texts(inputs_panel) == ["3", "-1", "0.5", "2"] + INPUT_TEXTS[4:]  # only token 0's row changes
    example = three_token_example(torch.float64)
    x = example.inputs.clone()
    x[0] = torch.tensor([3.0, -1.0, 0.5, 2.0], dtype=torch.float64)
    q, k, v = x @ example.w_query, x @ example.w_key, x @ example.w_value  # (3, 3) each
    expected = F.scaled_dot_product_attention(q[None], k[None], v[None])[0]  # scaled by 1 / sqrt(3)
    assert _texts(outputs_panel) == _flat(expected.tolist(), ".4f")
    assert _texts(outputs_panel) != _flat(SCALED_OUTPUTS, ".4f")
    assert fig.get_suptitle().startswith("Scaled")


@pytest.mark.parametrize(
    "token, shown", [(-1, "-1"), (3, "3"), (1.0, r"1\.0"), (True, "True")], ids=["negative", "too-big", "float", "bool"]
)
def test_plot_self_attention_steps_token_error_opens_no_figure(token, shown, int_error):
    with pytest.raises(int_error(token), match=rf"token must be an integer in \[0, 2\], got {shown}"):
        plot_self_attention_steps(*X64, token=token)
    assert plt.get_fignums() == []


def test_plot_self_attention_steps_token_names_error_names_the_argument_and_opens_no_figure():
    """STYLE 5: the message names the argument the learner passed (token_names, not an inner row_labels)."""
    with pytest.raises(ValueError, match=r"token_names"):
        plot_self_attention_steps(*X64, token_names=["the", "cat"])
    assert plt.get_fignums() == []


def test_plot_self_attention_steps_bad_weights_open_no_figure():
    with pytest.raises(ValueError, match=r"w_key\.shape\[0\] must be Din = 4"):
        plot_self_attention_steps(X64.inputs, X64.w_query, X64.w_key[:3], X64.w_value)
    assert plt.get_fignums() == []


# ----------------------------------------------------------------------------------------------
# Every helper: returns the Figure, no plt.show(), no global settings, draws on given axes
# ----------------------------------------------------------------------------------------------


def test_show_matrix_returns_a_figure_without_show_or_global_changes(monkeypatch):
    fig = draw_cleanly(monkeypatch, show_matrix, X64.inputs, title="X", row_labels=["x1", "x2", "x3"])
    (ax,) = fig.axes
    assert _ticks(ax, "y") == ["x1", "x2", "x3"] and ax.get_title() == "X"


_SMALL = (torch.eye(2), torch.eye(2), torch.eye(2), torch.eye(2))  # T = Din = D = V = 2
MULTI_PANEL = {
    "plot_self_attention_steps": lambda **kw: plot_self_attention_steps(*_SMALL, **kw),
    "plot_worked_example": lambda **kw: plot_worked_example(**kw),
}


@pytest.mark.parametrize("name", MULTI_PANEL)
def test_multi_panel_helper_draws_on_the_axes_it_is_given(name):
    """STYLE 7 and the plotting module: every helper takes ax=None or axes=None (as plot_saturation does)."""
    fn = globals()[name]
    assert "axes" in inspect.signature(fn).parameters, f"{name} has no axes= parameter"
    assert inspect.signature(fn).parameters["axes"].default is None
    fig, axes = plt.subplots(2, 4)
    result = MULTI_PANEL[name](axes=axes)
    assert result is fig
    assert plt.get_fignums() == [fig.number]  # no new figure
    assert list(fig.axes) == list(axes.flat)  # and no extra axes
    assert all(ax.has_data() for ax in axes.flat)


def test_plot_worked_example_on_given_axes_keeps_one_shared_colour_scale_and_the_key_axis():
    """Drawn on the axes it is given, the figure has the colour scales and labels of a figure drawn afresh."""
    fig, axes = plt.subplots(2, 4)
    assert plot_worked_example(-2.0, 0.0, 1.0, 0.0, scale=True, axes=axes) is fig
    fresh = plot_worked_example(-2.0, 0.0, 1.0, 0.0, scale=True)
    for redrawn, drawn in zip(fig.axes, fresh.axes, strict=True):
        assert redrawn.collections[0].get_clim() == drawn.collections[0].get_clim()
        assert _texts(redrawn) == _texts(drawn) and redrawn.get_xlabel() == drawn.get_xlabel()
    lows = {ax.collections[0].get_clim() for i, ax in enumerate(fig.axes) if i != 5}
    assert len(lows) == 1 and fig.axes[5].collections[0].get_clim() == (0.0, 1.0)
    assert fig.get_suptitle() == fresh.get_suptitle()


def test_show_matrix_vmax_of_a_wrong_type_is_a_type_error_that_names_it():
    with pytest.raises(TypeError, match=r"vmax must be a finite number, got '1' \(str\)"):
        show_matrix(torch.zeros(2, 2), vmax="1")
    assert plt.get_fignums() == []


def test_show_matrix_given_colour_scale_is_used():
    (ax,) = show_matrix(torch.tensor([[1.0, 2.0]]), vmin=0, vmax=torch.tensor(10.0)).axes
    assert ax.collections[0].get_clim() == (0.0, 10.0)
    (ax,) = show_matrix(torch.tensor([[1.0, 2.0]]), vmax=5.0).axes
    assert ax.collections[0].get_clim() == (1.0, 5.0)  # the other end is the matrix's own
