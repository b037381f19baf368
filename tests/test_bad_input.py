"""Bad input to the attention functions and layers, one class of fault at a time.

Every public function and layer of the attention path must refuse non-finite, wrongly typed and wrongly shaped
input with an error that names the argument (TypeError for a wrong type, ValueError for a wrong value or shape),
handle empty input without NaN, never return NaN from finite input, keep low-precision dtypes working, and
never change its inputs. Each test below covers one class for all of them.
"""

import copy
import math

import pytest
import torch
from torch import nn

from attn_course import (
    AdditiveAttention,
    DotProductAttention,
    MultiHeadAttention,
    attention_pooling,
    dot_product_scores,
    masked_softmax,
    multi_head_attention,
    nadaraya_watson,
    scaled_dot_product_attention,
)

torch.manual_seed(0)
_LINEAR = nn.Linear(4, 4, bias=False)
LINEARS = {dtype: copy.deepcopy(_LINEAR).to(dtype) for dtype in (torch.float32, torch.float16, torch.bfloat16)}


def _qkv(b=2, q=3, k=5, d=4, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, n, d, generator=gen).to(dtype) for n in (q, k, k))


def _dtype(q) -> torch.dtype:
    """The dtype a layer is built in: that of the queries when they are a floating tensor, else float32."""
    return q.dtype if isinstance(q, torch.Tensor) and q.is_floating_point() else torch.float32


def _mha(q, k, v):
    w = LINEARS[_dtype(q)]
    return multi_head_attention(q, k, v, w, w, w, w, 2)[0]


# Each entry: name -> function of (queries, keys, values) that returns the output tensor.
ATTENTION = {
    "scaled_dot_product_attention": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
    "attention_pooling": lambda q, k, v: attention_pooling(dot_product_scores(q, k), v)[0],
    "multi_head_attention": _mha,
    "DotProductAttention": lambda q, k, v: DotProductAttention()(q, k, v),
    "AdditiveAttention": lambda q, k, v: AdditiveAttention(4, 4, 8).to(_dtype(q))(q, k, v),
    "MultiHeadAttention": lambda q, k, v: MultiHeadAttention(4, 2).to(_dtype(q))(q, k, v),
}


@pytest.mark.parametrize(
    "entries, finite",
    [
        ([3e38, 3e38, 1.0], True),  # finite entries whose float32 sum overflows to infinity
        ([3e38, 3e38, -3e38, -3e38], True),  # partial sums may overflow either way: the sum can even be NaN
        ([math.inf, -math.inf, 0.0], False),  # a NaN sum from two infinities
        ([1.0, math.nan], False),
        ([-math.inf, 2.0], False),
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_the_finite_check_reads_every_entry_when_the_sum_overflows(entries, finite, dtype):
    x = torch.tensor(entries).clamp(torch.finfo(dtype).min, torch.finfo(dtype).max) if finite else torch.tensor(entries)
    scores = x.to(dtype).reshape(1, 1, -1)
    if finite:
        assert torch.isfinite(scores).all()
        weights = masked_softmax(scores)
        assert torch.isfinite(weights).all()
    else:
        with pytest.raises(ValueError, match=r"scores must be finite, got NaN or infinity"):
            masked_softmax(scores)


@pytest.mark.parametrize("name", ATTENTION)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("which", [0, 2], ids=["queries", "values"])
def test_non_finite_input_is_refused_by_name(name, bad, which):
    args = list(_qkv())
    args[which] = args[which].clone()
    args[which][0, 1, 2] = bad
    with pytest.raises(ValueError, match=r"must be finite, got NaN or infinity"):
        ATTENTION[name](*args)


def test_non_finite_scores_and_nadaraya_watson_inputs_are_refused_by_name():
    scores = torch.zeros(1, 2, 3)
    scores[0, 1, 1] = math.nan
    with pytest.raises(ValueError, match=r"scores must be finite"):
        masked_softmax(scores)
    x = torch.tensor([0.0, math.inf])
    with pytest.raises(ValueError, match=r"queries must be finite"):
        nadaraya_watson(x, torch.zeros(3), torch.zeros(3))


@pytest.mark.parametrize("name", ATTENTION)
@pytest.mark.parametrize("which", [0, 1, 2], ids=["queries", "keys", "values"])
def test_wrongly_typed_input_raises_a_type_error_naming_the_argument(name, which):
    args = list(_qkv())
    args[which] = args[which].tolist()
    with pytest.raises(TypeError, match=r"(queries|keys|values|scores) must be a torch\.Tensor, got list"):
        ATTENTION[name](*args)


@pytest.mark.parametrize("name", ATTENTION)
def test_integer_input_raises_a_type_error(name):
    q, k, v = _qkv()
    with pytest.raises(TypeError, match=r"must be a floating-point tensor .*got torch\.int64"):
        ATTENTION[name](q.long(), k.long(), v.long())


@pytest.mark.parametrize("name", ATTENTION)
def test_wrongly_shaped_input_raises_a_value_error_naming_the_shapes(name):
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"values.* \(2, 4, 4\)"):  # 4 values for 5 keys
        ATTENTION[name](q, k, v[:, :4])
    with pytest.raises(ValueError, match=r"must have shape .*got shape \(3, 4\) \(2-D\)"):
        ATTENTION[name](q[0], k, v)


@pytest.mark.parametrize("name", ATTENTION)
@pytest.mark.parametrize("sizes", [{"q": 0}, {"k": 0}, {"b": 0}], ids=["no-queries", "no-keys", "no-batch"])
def test_empty_input_gives_an_empty_or_zero_output_never_nan(name, sizes):
    q, k, v = _qkv(**sizes)
    out = ATTENTION[name](q, k, v)
    assert out.shape[:2] == (q.shape[0], q.shape[1])
    assert not out.isnan().any()
    if sizes == {"k": 0} and name != "MultiHeadAttention":  # nothing to attend to: zeros
        assert (out == 0).all()


def test_empty_input_to_masked_softmax_and_nadaraya_watson():
    assert masked_softmax(torch.zeros(2, 3, 0), torch.tensor([0, 0])).shape == (2, 3, 0)
    with pytest.raises(ValueError, match=r"keys must hold at least one key, got 0"):
        nadaraya_watson(torch.zeros(2), torch.zeros(0), torch.zeros(0))


@pytest.mark.parametrize("name", ATTENTION)
@pytest.mark.parametrize("scale", [1e3, 1e-30], ids=["large", "tiny"])
def test_finite_input_never_gives_nan(name, scale):
    """Large scores saturate the softmax and tiny ones make it uniform: neither may turn into NaN."""
    q, k, v = _qkv()
    try:
        out = ATTENTION[name](q * scale, k * scale, v)
    except ValueError as error:  # refused by name is allowed (scores that overflow), NaN is not
        assert "must be finite" in str(error)
    else:
        assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", ATTENTION)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_keeps_its_dtype_and_stays_close_to_float32(name, dtype):
    torch.manual_seed(0)
    want = ATTENTION[name](*_qkv())
    torch.manual_seed(0)
    got = ATTENTION[name](*_qkv(dtype=dtype))
    assert got.dtype == dtype
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.float(), want, atol=0.05, rtol=0.05)


@pytest.mark.parametrize("name", ATTENTION)
def test_inputs_are_never_modified(name, call_unmodified):
    q, k, v = _qkv()
    call_unmodified(ATTENTION[name], q, k, v)
    lens = torch.tensor([5, 2])
    call_unmodified(scaled_dot_product_attention, q, k, v, lens)
    call_unmodified(masked_softmax, q @ k.transpose(1, 2), lens)


def test_multi_head_attention_names_a_projection_of_another_dtype():
    q, k, v = _qkv(dtype=torch.float16)
    w = LINEARS[torch.float32]
    with pytest.raises(TypeError, match=r"W_q has dtype torch\.float32 but queries have dtype torch\.float16"):
        multi_head_attention(q, k, v, w, w, w, w, 2)
