"""Bad input to the course's other helpers (positions, figures, data, models, checks), one class of fault at a time.

The attention path has its own file (test_bad_input.py). Here: a clear TypeError or ValueError that names the
argument instead of a raw error from deep inside PyTorch, NumPy or matplotlib; the right answer for empty input and
for low precision; no NaN from finite input; no input changed.
"""

import math

import matplotlib.pyplot as plt
import pytest
import torch
from torch import nn

import attn_course as ac
from attn_course import checks, tasks

BATCH = tasks.make_batch(["12", "345"])
NO_EXAMPLES = BATCH.select(slice(0, 0))


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: ac.frequencies(8, dtype=torch.int64), TypeError, r"dtype must be a floating torch.dtype"),
        (lambda: ac.rotation_matrix(1.0, 0.5, dtype=torch.int32), TypeError, r"dtype must be a floating torch.dtype"),
        (lambda: ac.show_heatmaps("abc"), TypeError, r"matrices must be a tensor or an array of numbers, got str"),
        (lambda: ac.show_heatmaps([["a", "b"]]), TypeError, r"matrices must be a tensor or an array of numbers"),
        (lambda: ac.show_heatmaps(torch.rand(2, 2), vmin=math.nan), ValueError, r"vmin must be a finite number"),
        (lambda: ac.show_matrix(torch.zeros(0, 3)), ValueError, r"matrix must be 2-D \(R, C\) with no empty axis"),
        (lambda: ac.show_matrix("abc"), TypeError, r"matrix must be a tensor or an array of numbers, got str"),
        (
            lambda: ac.plot_lagrange_basis(torch.zeros(0, dtype=torch.float64)),
            ValueError,
            r"nodes must hold at least one node",
        ),
        (lambda: ac.pattern_scores("diagonal", 4, "big"), TypeError, r"strength must be a finite number, got 'big'"),
        (lambda: ac.plot_head_weights(tokens=[]), ValueError, r"tokens must name at least one token, got none"),
        (lambda: ac.plot_head_weights(tokens="cat"), TypeError, r"tokens must be a sequence of token names"),
        (lambda: tasks.to_text(None), TypeError, r"tokens must be a sequence of token ids .*got NoneType"),
        (lambda: ac.plot_history({"RNN": 3}), TypeError, r"histories\['RNN'\] must be a History"),
        (lambda: ac.data.toy_regression(x_max=math.inf), ValueError, r"x_max must be a finite number > 0, got inf"),
        (lambda: ac.data.toy_regression(step="0.1"), TypeError, r"step must be a finite number"),
        (lambda: ac.data.toy_regression(seed=None), TypeError, r"seed must be an integer >= 0, got None"),
        (lambda: ac.loglog_slope(None, None), TypeError, r"sizes must be a sequence of numbers .*got NoneType"),
        (lambda: ac.plot_nw_fit(torch.rand(5), torch.rand(5), torch.zeros(0)), ValueError, r"x_test must be a 1-D"),
        (lambda: ac.plot_kernels([]), ValueError, r"names must name at least one kernel"),
        (lambda: checks.check_pooling_limit(1.5, "12"), TypeError, r"y_train must be a sequence of training targets"),
    ],
    ids=[
        "frequencies-int-dtype",
        "rotation-int-dtype",
        "heatmaps-str",
        "heatmaps-words",
        "heatmaps-nan-vmin",
        "matrix-empty",
        "matrix-str",
        "lagrange-no-nodes",
        "pattern-str-strength",
        "head-weights-no-tokens",
        "head-weights-str-tokens",
        "to-text-none",
        "history-not-a-history",
        "toy-x-max-inf",
        "toy-step-str",
        "toy-seed-none",
        "loglog-none",
        "nw-fit-no-queries",
        "kernels-none",
        "pooling-limit-str",
    ],
)
def test_bad_input_to_a_helper_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("layer", [ac.AddNorm(8), ac.PositionWiseFFN(8, 16)], ids=["AddNorm", "PositionWiseFFN"])
def test_a_layer_given_the_wrong_model_size_names_it(layer):
    x = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match=r"x must have size num_hiddens = 8 in its last axis .*got shape \(2, 3, 4\)"):
        layer(x, x) if isinstance(layer, ac.AddNorm) else layer(x)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ac.scaled_dot_product_attention(torch.zeros(1, 2, 0), torch.zeros(1, 3, 0), torch.zeros(1, 3, 4)),
        lambda: ac.dot_product_scores(torch.zeros(1, 2, 0), torch.zeros(1, 3, 0)),
        lambda: ac.DotProductAttention()(torch.zeros(1, 2, 0), torch.zeros(1, 3, 0), torch.zeros(1, 3, 4)),
    ],
    ids=["sdpa", "scores", "layer"],
)
def test_queries_and_keys_of_size_zero_are_named_not_called_non_finite(call):
    """A dot product of nothing divided by sqrt(0) is 0 / 0: the size is the fault, and the message says so."""
    with pytest.raises(ValueError, match=r"queries must have a last axis of size D >= 1 \(B, Q, D\), got shape"):
        call()


def test_a_zero_size_projection_of_the_worked_example_is_named():
    with pytest.raises(ValueError, match=r"w_query must have a last axis of size D >= 1"):
        ac.self_attention_steps(torch.randn(3, 4), torch.zeros(4, 0), torch.zeros(4, 0), torch.randn(4, 2), scale=True)


def test_an_in_place_dropout_leaves_the_returned_weights_alone():
    scores, values = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    torch.manual_seed(0)
    _, weights = ac.attention_pooling(scores, values, dropout=nn.Dropout(0.5, inplace=True))
    torch.testing.assert_close(weights, torch.softmax(scores, dim=-1))  # the weights before dropout, as documented


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kernel", ["gaussian", "constant", "boxcar", "epanechnikov"])
def test_low_precision_nadaraya_watson_far_from_every_key_still_weighs_to_one(dtype, kernel):
    """300^2 overflows float16: the distances are computed in float32, the result given back in the caller's dtype."""
    queries = torch.tensor([300.0, 1.2], dtype=dtype)
    keys, values = torch.tensor([0.0, 1.0, 2.0], dtype=dtype), torch.tensor([1.0, 2.0, 3.0], dtype=dtype)
    predictions, weights = ac.nadaraya_watson(queries, keys, values, kernel, 0.5)
    expected_p, expected_w = ac.nadaraya_watson(queries.float(), keys.float(), values.float(), kernel, 0.5)
    assert weights.dtype == predictions.dtype == dtype
    torch.testing.assert_close(weights.float().sum(-1), torch.ones(2), atol=2e-3, rtol=0)
    torch.testing.assert_close(weights.float(), expected_w, atol=2e-3, rtol=0)
    torch.testing.assert_close(predictions.float(), expected_p, atol=2e-2, rtol=0)


def test_lagrange_basis_gradients_are_finite_on_a_node_and_match_the_derivative():
    nodes = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    x = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    basis = ac.lagrange_basis(x, nodes)[0, 0]  # l_0(x) = (x - 1)(x - 2) / 2, so l_0'(1) = -1/2
    basis.backward()
    assert torch.isfinite(x.grad).all() and torch.isfinite(nodes.grad).all()
    assert x.grad.item() == pytest.approx(-0.5)
    # d l_0 / d x_1 = -(x - x_2) / ((x_0 - x_1)(x_0 - x_2)) = 1/2 at x = 1 (finite differences agree)
    assert nodes.grad[1].item() == pytest.approx(0.5)


@pytest.mark.parametrize(
    "plot",
    [
        lambda t: ac.show_heatmaps(t(torch.rand(3, 3))),
        lambda t: ac.show_matrix(t(torch.rand(3, 3))),
        lambda t: ac.plot_nw_fit(t(torch.rand(6) * 5), t(torch.rand(6)), t(torch.linspace(0, 5, 4))),
        lambda t: ac.plot_query_weights(0.5, t(torch.rand(6)), t(torch.rand(6))),
    ],
    ids=["heatmaps", "matrix", "nw-fit", "query-weights"],
)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_plots_draw_low_precision_tensors(plot, dtype):
    fig = plot(lambda t: t.to(dtype))
    assert fig.axes  # NumPy has no bfloat16: the figures widen what they draw


def test_plot_weight_comparison_takes_plain_lists():
    fig = ac.plot_weight_comparison(2.0, [1.0, 2.0, 3.0], [1.0, 0.0, 2.0])
    assert len(fig.axes) == 3


@pytest.mark.parametrize(
    "answer", [torch.tensor(0.5, requires_grad=True), torch.tensor([0.3, 0.4], requires_grad=True)]
)
def test_checks_take_answers_that_require_grad_without_a_warning(answer, recwarn):
    checks.check_nw_weights(torch.tensor([0.3, 0.5, 0.2], requires_grad=True))
    checks.check_pooling_limit(torch.tensor(1.5, requires_grad=True), torch.tensor([1.0, 2.0]))
    checks.check_variance_scale(torch.tensor(4.0, requires_grad=True))
    assert [str(w.message) for w in recwarn] == []


def test_check_pooling_limit_takes_a_list_of_targets():
    assert checks.check_pooling_limit(1.5, [1.0, 2.0]).passed


@pytest.mark.parametrize("attention", [False, True], ids=["rnn", "bahdanau"])
def test_rnn_seq2seq_on_no_examples_and_no_target_steps(attention):
    model = ac.RNNSeq2Seq(attention=attention, embed_size=8, num_hiddens=8)
    assert model(NO_EXAMPLES.src, NO_EXAMPLES.src_len, NO_EXAMPLES.tgt_in).shape == (0, NO_EXAMPLES.src.shape[1], 13)
    assert model(BATCH.src, BATCH.src_len, BATCH.tgt_in[:, :0]).shape == (2, 0, 13)
    assert model.greedy(NO_EXAMPLES.src, NO_EXAMPLES.src_len, 3)[0].shape == (0, 3)


def test_transformer_seq2seq_with_no_target_steps_gives_no_logits():
    model = ac.TransformerSeq2Seq(num_hiddens=8, num_heads=2, num_layers=1, ffn_hiddens=16)
    assert model(BATCH.src, BATCH.src_len, BATCH.tgt_in[:, :0]).shape == (2, 0, 13)


def test_accuracy_of_no_examples():
    model = ac.RNNSeq2Seq(attention=True, embed_size=8, num_hiddens=8)
    with pytest.raises(ValueError, match=r"batch must hold at least one example .*got 0"):
        ac.sequence_accuracy(model, NO_EXAMPLES)
    assert ac.accuracy_by_length(model, NO_EXAMPLES) == {}  # no length is present
