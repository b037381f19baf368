"""Bad input found by fuzzing every public helper: empty, non-finite, wrongly typed, low-precision, requiring grad,
non-contiguous, and plain lists where tensors are expected.

One test per class of fault: a clear TypeError or ValueError that names the argument (not a raw error from inside
PyTorch, NumPy or matplotlib, nor the name of an inner helper's argument), no NaN from finite input, no warning.
"""

import math

import pandas as pd
import pytest
import torch

import attn_course as ac
from attn_course import tasks


def _tiny_lm():
    torch.manual_seed(0)
    return ac.DecoderOnlyLM(8, 8, 2, 2, max_len=16)


BATCH = tasks.make_batch(["12", "345"])
_RESULTS = pd.DataFrame({"scheme": ["rope", "rope"], "seed": [0, 0], "test_len": [4, 8], "accuracy": [1.0, 0.5]})


def _block(kind):
    torch.manual_seed(0)
    return (ac.EncoderBlock if kind == "encoder" else ac.DecoderBlock)(8, 2, 16).eval()


def _block_call(kind, x, src_len=None, memory=None):
    block = _block(kind)
    src_len = torch.tensor([3, 2]) if src_len is None else src_len
    if kind == "encoder":
        return block(x, src_len)
    return block(x, torch.randn(2, 3, 8) if memory is None else memory, src_len)


@pytest.mark.parametrize(
    "call, error, match",
    [
        # a kernel given something that is not a tensor
        (lambda: ac.gaussian([0.0, 1.0]), TypeError, r"u must be a torch.Tensor, got list"),
        (lambda: ac.boxcar(None), TypeError, r"u must be a torch.Tensor, got NoneType"),
        (lambda: ac.epanechnikov(2), TypeError, r"u must be a torch.Tensor, got int"),
        (lambda: ac.constant("abc"), TypeError, r"u must be a torch.Tensor, got str"),
        (lambda: ac.boxcar(torch.tensor([0, 2])), TypeError, r"u must be a floating-point tensor"),
        # the RNN encoder on its own
        (lambda: ac.Seq2SeqEncoder(4, 6)([[3, 4]], BATCH.src_len), TypeError, r"src must be a torch.Tensor, got list"),
        (lambda: ac.Seq2SeqEncoder(4, 6)(BATCH.src, None), TypeError, r"src_len must be a torch.Tensor, got NoneType"),
        (
            lambda: ac.Seq2SeqEncoder(4, 6)(BATCH.src, BATCH.src_len[:0]),
            ValueError,
            r"src_len must be an int64 tensor of shape \(2,\), got shape \(0,\)",
        ),
        # layers given the wrong dtype, or a residual that is not a tensor
        (
            lambda: ac.PositionWiseFFN(4, 8)(torch.randn(2, 3, 4, dtype=torch.float64)),
            TypeError,
            r"x has dtype torch.float64 but the layer's parameters are torch.float32",
        ),
        (
            lambda: ac.AddNorm(4)(torch.randn(2, 3, 4).bfloat16(), torch.randn(2, 3, 4).bfloat16()),
            TypeError,
            r"x has dtype torch.bfloat16 but the layer's parameters are torch.float32",
        ),
        (lambda: ac.AddNorm(4)(torch.randn(2, 3, 4), None), TypeError, r"y must be a torch.Tensor, got NoneType"),
        (
            lambda: ac.AddNorm(4)(torch.randn(2, 3, 4), torch.randn(2, 3, 4).double()),
            TypeError,
            r"y has dtype torch.float64 but x has dtype torch.float32",
        ),
        # a Transformer block names its own arguments, not those of the attention inside it
        (lambda: _block_call("encoder", [[0.0] * 8]), TypeError, r"x must be a torch.Tensor, got list"),
        (lambda: _block_call("decoder", None), TypeError, r"x must be a torch.Tensor, got NoneType"),
        (
            lambda: _block_call("encoder", torch.randn(2, 3, 8).half()),
            TypeError,
            r"x has dtype torch.float16 but the layer's parameters are torch.float32",
        ),
        (
            lambda: _block_call("encoder", torch.full((2, 3, 8), math.nan)),
            ValueError,
            r"x must be finite, got NaN or infinity",
        ),
        (
            lambda: _block_call("encoder", torch.randn(2, 3, 8), src_len={"a": 1}),
            TypeError,
            r"src_len must be a torch.Tensor, got dict",
        ),
        (
            lambda: _block_call("decoder", torch.randn(2, 3, 8), memory=torch.full((2, 3, 8), math.inf)),
            ValueError,
            r"memory must be finite, got NaN or infinity",
        ),
        (
            lambda: _block_call("decoder", torch.randn(2, 3, 8), memory=torch.randn(2, 3, 8).bfloat16()),
            TypeError,
            r"memory has dtype torch.bfloat16 but the layer's parameters are torch.float32",
        ),
        # a projection whose input size the queries do not have (D = 0 among them)
        (
            lambda: ac.multi_head_attention(
                torch.zeros(2, 3, 0),
                torch.randn(2, 5, 4),
                torch.randn(2, 5, 4),
                *[torch.nn.Linear(4, 4, bias=False) for _ in range(4)],
                num_heads=2,
            ),
            ValueError,
            r"queries.shape\[-1\] must be 4 \(the input size of W_q\), got queries of shape \(2, 3, 0\)",
        ),
        (
            lambda: ac.repeat_kv_heads(torch.zeros(2, 0, 3, 4), 2),
            ValueError,
            r"x must hold at least one key/value head: shape \(B, G, K, dh\), G >= 1, got \(2, 0, 3, 4\)",
        ),
        (
            lambda: ac.additive_scores(
                torch.zeros(2, 3, 0), torch.randn(2, 5, 6), torch.randn(7, 4), torch.randn(7, 6), torch.randn(7)
            ),
            ValueError,
            r"w_q must have shape \(U, Dq\) = \(7, 0\) \(U from w_v \(7,\), Dq from queries \(2, 3, 0\)\)",
        ),
        # figures given no numbers, numbers of the wrong length, or non-finite numbers
        (
            lambda: ac.plot_regression([0.0, 1.0], [1.0, 2.0], [0.5], None),
            TypeError,
            r"y_pred must be a tensor or an array of numbers, got NoneType",
        ),
        (
            lambda: ac.plot_regression(torch.zeros(0), torch.zeros(0), [0.5], [1.0]),
            ValueError,
            r"x_train must be a 1-D tensor of at least one training input, got shape \(0,\)",
        ),
        (
            lambda: ac.plot_regression([0.0, 1.0], [1.0], [0.5], [1.0]),
            ValueError,
            r"y_train.shape\[0\] must be 2 \(one per entry of x_train\), got y_train of shape \(1,\)",
        ),
        (
            lambda: ac.plot_query_weights(1.0, None, [1.0, 2.0]),
            TypeError,
            r"keys must be a tensor or an array of numbers, got NoneType",
        ),
        (lambda: ac.plot_query_weights(None, [0.0, 1.0], [1.0, 2.0]), TypeError, r"query must be a finite number"),
        (
            lambda: ac.plot_weight_comparison(None, [0.0, 1.0], [1.0, 2.0]),
            TypeError,
            r"query must be a finite number",
        ),
        (
            lambda: ac.plot_nw_fit(torch.tensor([0.0, math.nan]), torch.rand(2), torch.rand(3)),
            ValueError,
            r"x_train must be finite, got NaN or infinity",
        ),
        (
            lambda: ac.plot_weight_comparison(1.0, torch.tensor([0.0, math.inf]), torch.rand(2)),
            ValueError,
            r"nodes must be finite, got NaN or infinity",
        ),
        (
            lambda: ac.plot_alignments(torch.rand(2, 3, 4), BATCH, [[5, 5, 5], [5, 5, 5]], [0]),
            TypeError,
            r"tokens must be a torch.Tensor, got list",
        ),
        (
            lambda: ac.plot_alignments(torch.rand(2, 3, 0), BATCH, torch.full((2, 3), 5), [0]),
            ValueError,
            r"weights.shape\[2\] must be S = 4 \(one column per source position\), got weights of shape \(2, 3, 0\)",
        ),
        (
            lambda: ac.plot_alignments(torch.rand(2, 3, 4), BATCH, torch.full((2, 3), 5), "0"),
            TypeError,
            r"indices must be a sequence of example numbers .*got str",
        ),
        (
            lambda: ac.plot_alignments(torch.rand(2, 3, 4), BATCH, torch.full((2, 3), 5), [0.0]),
            TypeError,
            r"indices\[0\] must be an integer in \[0, 1\], got 0.0",
        ),
        (
            lambda: ac.plot_decoding_step(0, torch.rand(2, 3), None, ["a", "b"]),
            TypeError,
            r"src_labels must be a sequence of token labels .*got NoneType",
        ),
        (
            lambda: ac.plot_decoding_step(0, torch.tensor([[0.5, math.inf]]), ["a", "b"], ["c"]),
            ValueError,
            r"weights must be finite, got NaN or infinity",
        ),
        (
            lambda: ac.plot_self_attention_steps(
                torch.randn(3, 4), torch.full((4, 3), math.nan), torch.randn(4, 3), torch.randn(4, 2)
            ),
            ValueError,
            r"w_query must be finite, got NaN or infinity",
        ),
        (
            lambda: ac.plot_self_attention_steps(
                torch.randn(3, 4), torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 0)
            ),
            ValueError,
            r"w_value must have no empty axis to be drawn, got shape \(4, 0\)",
        ),
        (
            lambda: ac.plot_self_attention_steps(
                torch.randn(0, 4), torch.randn(4, 3), torch.randn(4, 3), torch.randn(4, 2)
            ),
            ValueError,
            r"inputs must have no empty axis to be drawn, got shape \(0, 4\)",
        ),
        (lambda: ac.plot_worked_example(x11="a"), TypeError, r"x11 must be a finite number, got 'a'"),
        (
            lambda: ac.show_matrix(torch.tensor([[1.0, math.inf]])),
            ValueError,
            r"matrix must be finite, got NaN or infinity",
        ),
        (
            lambda: ac.plot_rope_scores(torch.full((4,), math.nan), torch.randn(4)),
            ValueError,
            r"q must be finite, got NaN or infinity",
        ),
        # labels and titles given as a number
        (
            lambda: ac.show_heatmaps(torch.rand(2, 2), titles=3),
            TypeError,
            r"titles must be a sequence of panel titles .*got int",
        ),
        (
            lambda: ac.show_heatmaps(torch.rand(2, 2), xticklabels=3),
            TypeError,
            r"xticklabels must be a sequence of tick labels .*got int",
        ),
        (lambda: ac.show_matrix(torch.rand(2, 2), row_labels=3), TypeError, r"row_labels must be a sequence of labels"),
        (lambda: ac.plot_pattern_gallery(tokens=3), TypeError, r"tokens must be a sequence of token names .*got int"),
        # a table of results that is not one, is empty, or holds no numbers
        (lambda: ac.plot_extrapolation(_RESULTS.iloc[:0], 4), ValueError, r"results must hold at least one row"),
        (
            lambda: ac.plot_extrapolation(_RESULTS.assign(accuracy=["a", "b"]), 4),
            TypeError,
            r"results\['accuracy'\] must hold numbers, got dtype",
        ),
        (lambda: ac.plot_extrapolation(_RESULTS, 4, metric=3), TypeError, r"metric must be the name of a column"),
        # a shared shape check given something that is not a tensor
        (lambda: ac.plot_next_token(None), TypeError, r"logits must be a torch.Tensor, got NoneType"),
        # the data and the accuracy
        (lambda: ac.data.true_function([1.0]), TypeError, r"x must be a torch.Tensor, got list"),
        (
            lambda: ac.sequence_accuracy(ac.RNNSeq2Seq(embed_size=8, num_hiddens=8), None),
            TypeError,
            r"batch must be a Batch of a task .*got NoneType",
        ),
        # a timing helper, a memory figure and a check given the wrong kind of argument
        (
            lambda: ac.time_per_token(ac.DecoderOnlyLM(5, 8, 2, 1, max_len=8), None, use_cache=True),
            TypeError,
            r"lengths must be a sequence of token counts, got NoneType",
        ),
        (lambda: ac.plot_peak_memory([64, 128], [[1, 2]]), TypeError, r"peaks must map each version's name"),
        # the decoder's figures and scores
        (lambda: ac.plot_time_per_token([1, 2], None), TypeError, r"seconds must map each method's name"),
        (lambda: ac.plot_time_per_token([1, 2], {}), ValueError, r"seconds must hold at least one method"),
        (lambda: ac.plot_time_per_token(None, {"a": [1]}), TypeError, r"lengths must be a sequence"),
        (
            lambda: ac.plot_time_per_token([1, 2], {"a": [1]}),
            ValueError,
            r"seconds\['a'\] must hold one time per length",
        ),
        (lambda: ac.plot_head_patterns(torch.rand(2, 3, 5, 5), []), ValueError, r"heads must name at least one"),
        (lambda: ac.plot_head_patterns(torch.rand(2, 3, 5, 5), None), TypeError, r"heads must be a list of"),
        (lambda: ac.plot_head_patterns(torch.rand(2, 3, 5, 5), [(0, 5)]), ValueError, r"head in \[0, 2\]"),
        (lambda: ac.plot_head_patterns(torch.rand(2, 3, 5, 5), [(0.5, 1)]), TypeError, r"pairs of integers"),
        (lambda: ac.plot_head_patterns(torch.rand(2, 0, 5, 5), [(0, 0)]), ValueError, r"at least one layer, head"),
        (lambda: ac.head_scores(_tiny_lm(), ac.repeat_task(3, 6, 8)[:0]), ValueError, r"at least one sequence"),
        (lambda: ac.half_losses(_tiny_lm(), ac.repeat_task(3, 6, 8)[:0]), ValueError, r"at least one sequence"),
        (
            lambda: ac.copying_scores(_tiny_lm(), ac.repeat_task(3, 6, 8)[:0]),
            ValueError,
            r"at least one sequence",
        ),
        (lambda: ac.plot_peak_memory(64, {"a": [1]}), TypeError, r"sizes must be a sequence of lengths N, got int"),
        (
            lambda: ac.checks.check_pooling_limit(1.0, {"a": 1}),
            TypeError,
            r"y_train must hold the training targets as numbers, got dict",
        ),
        # notebook 12's second half: the gated and chunked delta rules, the recall race
        (
            lambda: ac.delta_rule_chunked(*[torch.randn(1, 5, 3)] * 3, torch.rand(1, 5), 2, alpha=[0.5] * 5),
            TypeError,
            r"alpha must be a torch.Tensor, got list",
        ),
        (
            lambda: ac.gated_delta_rule(*[torch.randn(1, 5, 3).half()] * 3, torch.rand(1, 5).half(), torch.rand(1, 5)),
            TypeError,
            r"alpha has dtype torch.float32 but queries has dtype torch.float16",
        ),
        (lambda: ac.train_recall("delta"), TypeError, r"memories must be a non-empty list of memory kinds"),
        (lambda: ac.plot_gated_memory("0.5"), TypeError, r"alpha must be a finite number in \[0, 1\], got '0.5'"),
        # notebook 13: sparse attention and the lightning indexer
        (lambda: ac.topk_attention([[1.0]], torch.randn(2, 6, 4), torch.randn(2, 6, 3), 2), TypeError, r"queries must"),
        (
            lambda: ac.topk_attention(*[torch.randn(2, 6, 4)] * 3, 2.0),
            TypeError,
            r"top_k must be an integer >= 1, got 2.0 \(float\)",
        ),
        (
            lambda: ac.block_sparse_attention(torch.randn(2, 6, 4), torch.randn(2, 5, 4), torch.randn(2, 6, 3), 2, 1),
            ValueError,
            r"values must have one row per key",
        ),
        (
            lambda: ac.native_sparse_attention(*[torch.randn(2, 6, 4)] * 3, torch.full((2, 6, 3), 2.0), 2, 1, 2),
            ValueError,
            r"gates must lie in \[0, 1\], got 2.0",
        ),
        (
            lambda: ac.lightning_indexer(torch.randn(2, 6, 3, 4), torch.randn(2, 6, 5), torch.randn(2, 6, 3)),
            ValueError,
            r"index_keys must have shape \(B, K, D_I\)",
        ),
        (
            lambda: ac.attention_mass_kept(torch.rand(2, 3, 4), torch.rand(2, 3, 4)),
            TypeError,
            r"selected must be a bool tensor",
        ),
        (lambda: ac.plot_mass_kept([[0.5]], [1]), TypeError, r"weights must be a torch.Tensor, got list"),
        (lambda: ac.train_indexer(None), TypeError, r"model must be a FactsModel"),
        (lambda: ac.facts_batch(-1), ValueError, r"batch_size must be an integer >= 1, got -1"),
    ],
)
def test_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_true_function_refuses_negative_x_instead_of_returning_nan():
    """``x^0.8`` has no real value below 0: finite input, NaN output, unless the input is refused."""
    with pytest.raises(ValueError, match=r"x must be >= 0 \(x\^0.8 has no real value below 0\), got -1.0"):
        ac.data.true_function(torch.tensor([1.0, -1.0]))


def test_a_decoder_block_on_no_target_positions_gives_no_outputs():
    x = torch.randn(2, 0, 8)
    assert _block_call("decoder", x).shape == (2, 0, 8)


@pytest.mark.parametrize(
    "call",
    [
        lambda g: ac.curve_mean_var(
            torch.linspace(0, 1, 5, dtype=torch.float64).requires_grad_(), torch.rand(5).double()
        ),
        lambda g: ac.plot_lagrange_basis(torch.tensor([0.0, 1.0, 2.0]).requires_grad_()),
        lambda g: ac.plot_weight_comparison(1.0, torch.tensor([0.0, 1.0, 2.0]).requires_grad_(), torch.rand(3)),
        lambda g: ac.checks.check_pooling_limit(2.0, torch.tensor([1.0, 2.0, 3.0]).requires_grad_()),
    ],
    ids=["curve-mean-var", "lagrange-basis", "weight-comparison", "pooling-limit-check"],
)
def test_inputs_that_require_grad_give_no_warning(call, recwarn):
    """PyTorch warns once per process about ``float()`` of a tensor that requires grad: ask it to warn every time."""
    before = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    try:
        call(None)
    finally:
        torch.set_warn_always(before)
    assert [str(w.message) for w in recwarn] == []


@pytest.mark.parametrize(
    "plot",
    [
        lambda a, b, c: ac.plot_nw_fit(a, b, c),
        lambda a, b, c: ac.plot_query_weights(0.5, a, b),
        lambda a, b, c: ac.plot_weight_comparison(0.5, torch.sort(a).values, b),
    ],
    ids=["nw-fit", "query-weights", "weight-comparison"],
)
def test_figures_take_a_mix_of_dtypes_and_lists(plot):
    """A figure computes in the widest dtype it is given: a float32 key and a bfloat16 value are not an error."""
    keys = torch.tensor([0.5, 1.5, 3.0])
    fig = plot(keys, keys.bfloat16(), [0.0, 1.0, 2.0, 3.0])
    assert fig.axes
