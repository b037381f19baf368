"""attn_course.layers: DotProductAttention, AdditiveAttention and NWKernelRegression."""

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from _helpers import bool_mask_by_loop, random_qkv
from torch.testing import assert_close

from attn_course import (
    KERNELS,
    AdditiveAttention,
    DotProductAttention,
    NWKernelRegression,
    causal_mask,
    nadaraya_watson,
)
from attn_course.data import toy_regression

VALID_LENS = [None, torch.tensor([2, 5]), torch.tensor([[1, 5, 3], [2, 4, 1]])]
VALID_IDS = ["none", "(B,)", "(B, Q)"]


# ----------------------------------------------------------------------------------------------
# DotProductAttention
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("valid_lens", VALID_LENS, ids=VALID_IDS)
def test_dot_product_attention_matches_torch(valid_lens, dtype, gen):
    queries, keys, values = random_qkv(gen, dtype)
    layer = DotProductAttention(dropout=0.0).eval()
    output = layer(queries, keys, values, valid_lens)
    mask = None if valid_lens is None else bool_mask_by_loop(valid_lens, 3, 5)
    assert output.dtype == dtype and output.shape == (2, 3, 6)
    assert_close(output, F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask))
    scores = queries @ keys.transpose(1, 2) / math.sqrt(4)
    expected_w = torch.softmax(scores if mask is None else scores.masked_fill(~mask, -math.inf), -1)
    assert_close(layer.attention_weights, expected_w)


def test_dot_product_attention_keeps_weights_of_the_last_call(gen):
    layer = DotProductAttention()
    assert layer.attention_weights is None
    queries, keys, values = random_qkv(gen, torch.float32)
    layer(queries, keys, values, torch.tensor([1, 2]))
    first = layer.attention_weights.clone()
    assert first.shape == (2, 3, 5) and (first[0, :, 1:] == 0).all() and (first[1, :, 2:] == 0).all()
    layer(queries, keys, values)
    assert (layer.attention_weights > 0).all()  # replaced by the unmasked call


def test_dot_product_attention_does_not_modify_inputs(dtype, gen, call_unmodified):
    queries, keys, values = random_qkv(gen, dtype)
    call_unmodified(DotProductAttention(dropout=0.3), queries, keys, values, torch.tensor([[0, 1, 2], [5, 4, 3]]))


# ----------------------------------------------------------------------------------------------
# AdditiveAttention
# ----------------------------------------------------------------------------------------------


def _additive_by_loop(layer, queries, keys, values, valid_lens):
    """Scores w_v . tanh(W_q q + W_k k) pair by pair with the layer's own weights, then masked pooling."""
    w_q, w_k, w_v = layer.W_q.weight, layer.W_k.weight, layer.w_v.weight[0]
    b, nq, nk = queries.shape[0], queries.shape[1], keys.shape[1]
    mask = torch.ones(b, nq, nk, dtype=torch.bool) if valid_lens is None else bool_mask_by_loop(valid_lens, nq, nk)
    weights = torch.zeros(b, nq, nk, dtype=queries.dtype)
    for i in range(b):
        for j in range(nq):
            scores = torch.stack([w_v @ torch.tanh(w_q @ queries[i, j] + w_k @ keys[i, k]) for k in range(nk)])
            valid = mask[i, j]
            weights[i, j, valid] = torch.softmax(scores[valid], dim=0)
    return weights @ values, weights


@pytest.mark.parametrize("valid_lens", VALID_LENS, ids=VALID_IDS)
def test_additive_attention_matches_loop(valid_lens, dtype, gen):
    torch.manual_seed(0)
    layer = AdditiveAttention(key_size=2, query_size=3, num_hiddens=8).to(dtype).eval()
    queries, keys, values = random_qkv(gen, dtype, dq=3, dk=2)
    with torch.no_grad():
        output = layer(queries, keys, values, valid_lens)
        expected_out, expected_w = _additive_by_loop(layer, queries, keys, values, valid_lens)
    assert output.dtype == dtype and output.shape == (2, 3, 6)
    assert_close(output, expected_out)
    assert_close(layer.attention_weights, expected_w)


def test_additive_attention_weights_properties_and_inputs(dtype, gen, call_unmodified):
    torch.manual_seed(0)
    layer = AdditiveAttention(key_size=2, query_size=3, num_hiddens=4).to(dtype)
    queries, keys, values = random_qkv(gen, dtype, dq=3, dk=2)
    valid_lens = torch.tensor([[0, 1, 2], [5, 4, 3]])
    output = call_unmodified(layer, queries, keys, values, valid_lens)
    weights = layer.attention_weights
    mask = bool_mask_by_loop(valid_lens, 3, 5)
    assert (weights[~mask] == 0).all() and not weights.isnan().any()
    assert (output[0, 0] == 0).all()  # a query with no valid key pools nothing
    assert_close(weights.sum(-1)[mask.any(-1)], torch.ones(5, dtype=dtype))


def test_additive_attention_gradients_reach_all_parameters(gen):
    torch.manual_seed(0)
    layer = AdditiveAttention(key_size=2, query_size=3, num_hiddens=4)
    queries, keys, values = random_qkv(gen, torch.float32, dq=3, dk=2)
    layer(queries, keys, values, torch.tensor([0, 3])).sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


# ----------------------------------------------------------------------------------------------
# Dropout on the attention weights (both layers)
# ----------------------------------------------------------------------------------------------


def _make(kind, dropout):
    torch.manual_seed(0)  # the same parameters for every dropout rate
    if kind == "dot":
        return DotProductAttention(dropout=dropout)
    return AdditiveAttention(key_size=4, query_size=4, num_hiddens=8, dropout=dropout)


@pytest.mark.parametrize("kind", ["dot", "additive"])
def test_dropout_only_in_train_mode(kind, gen):
    queries, keys, values = random_qkv(gen, torch.float32, q=6, k=10)
    valid_lens = torch.tensor([7, 10])
    with torch.no_grad():
        reference = _make(kind, 0.0).eval()(queries, keys, values, valid_lens)
        layer = _make(kind, 0.5)
        torch.manual_seed(1)
        train_out = layer.train()(queries, keys, values, valid_lens)
        train_weights = layer.attention_weights.clone()
        eval_out = layer.eval()(queries, keys, values, valid_lens)
    assert not torch.allclose(train_out, eval_out)
    assert_close(eval_out, reference)
    # the kept weights are those before dropout, the same as in eval mode
    assert_close(train_weights, layer.attention_weights)


@pytest.mark.parametrize("kind", ["dot", "additive"])
def test_zero_dropout_in_train_mode_equals_eval_mode(kind, gen):
    queries, keys, values = random_qkv(gen, torch.float32)
    layer = _make(kind, 0.0)
    with torch.no_grad():
        assert torch.equal(layer.train()(queries, keys, values), layer.eval()(queries, keys, values))


# ----------------------------------------------------------------------------------------------
# Error messages of DotProductAttention and AdditiveAttention
# ----------------------------------------------------------------------------------------------

BAD_DROPOUTS = [
    (-0.1, r"-0\.1"),
    (1.0, r"1\.0"),
    (1.5, r"1\.5"),
    ("0.1", r"'0\.1'"),
    (True, "True"),
    (float("nan"), "nan"),
    (None, "None"),
]


@pytest.mark.parametrize(
    "make",
    [
        lambda p: DotProductAttention(dropout=p),
        lambda p: AdditiveAttention(key_size=2, query_size=2, num_hiddens=2, dropout=p),
    ],
    ids=["dot", "additive"],
)
@pytest.mark.parametrize("dropout, shown", BAD_DROPOUTS)
def test_bad_dropout_error_messages(make, dropout, shown, number_error):
    with pytest.raises(number_error(dropout), match=rf"dropout must be a probability in \[0, 1\), got {shown}"):
        make(dropout)


@pytest.mark.parametrize("arg", ["key_size", "query_size", "num_hiddens"])
@pytest.mark.parametrize("value, shown", [(0, "0"), (-1, "-1"), (2.5, r"2\.5"), (True, "True"), ("4", "'4'")])
def test_additive_attention_bad_sizes(arg, value, shown, int_error):
    sizes = {"key_size": 2, "query_size": 3, "num_hiddens": 4, arg: value}
    with pytest.raises(int_error(value), match=rf"{arg} must be an integer >= 1, got {shown}"):
        AdditiveAttention(**sizes)


GOOD_QKV = {"queries": torch.zeros(2, 3, 3), "keys": torch.zeros(2, 5, 2), "values": torch.zeros(2, 5, 6)}


@pytest.mark.parametrize(
    "change, error, match",
    [
        (
            {"queries": torch.zeros(2, 3, 4)},
            ValueError,
            r"queries\.shape\[-1\] must be query_size = 3, got queries of shape \(2, 3, 4\)",
        ),
        (
            {"keys": torch.zeros(2, 5, 4)},
            ValueError,
            r"keys\.shape\[-1\] must be key_size = 2, got keys of shape \(2, 5, 4\)",
        ),
        (
            {name: t.double() for name, t in GOOD_QKV.items()},
            TypeError,
            r"queries have dtype torch\.float64 but the layer's parameters are torch\.float32.*\.to\(torch\.float64\)",
        ),
        ({"values": torch.zeros(2, 4, 6)}, ValueError, r"values\.shape\[1\] must be K = 5"),
        ({"queries": torch.zeros(3, 3)}, ValueError, r"queries must have shape \(B, Q, D\)"),
        ({"queries": [[[0.0] * 3]]}, TypeError, r"queries must be a torch\.Tensor"),
    ],
    ids=["query-size", "key-size", "dtype", "values-K", "queries-rank", "queries-list"],
)
def test_additive_attention_forward_error_messages(change, error, match):
    """Each case changes one or more of the inputs in GOOD_QKV, which the layer accepts."""
    layer = AdditiveAttention(key_size=2, query_size=3, num_hiddens=4)
    assert layer(**GOOD_QKV).shape == (2, 3, 6)
    with pytest.raises(error, match=match):
        layer(**(GOOD_QKV | change))


@pytest.mark.parametrize(
    "keys, valid_lens, error, match",
    [
        (torch.zeros(2, 5, 3), None, ValueError, r"same size D.*\(D = 4\).*\(D = 3\)"),
        (torch.zeros(2, 5, 4), torch.tensor([1, 6]), ValueError, r"valid_lens.*\[0, 5\].*got 6"),
        (torch.zeros(2, 5, 4), torch.tensor([1.0, 2.0]), TypeError, r"valid_lens must be an integer tensor"),
    ],
)
def test_dot_product_attention_forward_error_messages(keys, valid_lens, error, match):
    with pytest.raises(error, match=match):
        DotProductAttention()(torch.zeros(2, 3, 4), keys, torch.zeros(2, 5, 6), valid_lens)


# ----------------------------------------------------------------------------------------------
# NWKernelRegression
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_nw_layer_matches_nadaraya_watson(kernel, dtype, gen):
    model = NWKernelRegression(bandwidth=0.7, kernel=kernel)
    assert_close(model.bandwidth.detach(), torch.tensor(0.7))
    x = torch.rand(9, generator=gen, dtype=dtype) * 4
    y = torch.randn(9, generator=gen, dtype=dtype)
    queries = torch.linspace(0, 4, 5, dtype=dtype)
    pred = model(queries, x, y)
    expected_pred, expected_w = nadaraya_watson(queries, x, y, kernel, model.bandwidth.detach().item())
    assert pred.dtype == dtype and pred.shape == (5,)
    assert_close(pred, expected_pred)
    assert_close(model.attention_weights, expected_w)
    assert not model.attention_weights.requires_grad  # kept for plotting, detached


def test_nw_layer_passes_the_mask_and_does_not_modify_inputs(dtype, gen, call_unmodified):
    x = torch.rand(6, generator=gen, dtype=dtype)
    y = torch.randn(6, generator=gen, dtype=dtype)
    mask = ~torch.eye(6, dtype=torch.bool)
    model = NWKernelRegression(bandwidth=0.5)
    pred = call_unmodified(model, x, x, y, mask)
    assert pred.dtype == dtype
    assert (model.attention_weights.diagonal() == 0).all()


@pytest.mark.parametrize("log_h", [-30.0, 30.0, -120.0, 120.0])
def test_nw_layer_bandwidth_stays_positive_and_usable(log_h):
    """The docstring: h = exp(log h) "stays positive whatever step the optimiser takes"."""
    model = NWKernelRegression()
    with torch.no_grad():
        model.log_bandwidth.fill_(log_h)
    assert model.bandwidth > 0 and torch.isfinite(model.bandwidth)
    x = torch.tensor([0.0, 1.0, 2.0])
    assert torch.isfinite(model(x, x, x)).all()


@pytest.mark.parametrize("log_h", [-10.0, -30.0])
def test_nw_layer_gradient_is_finite_for_a_tiny_bandwidth(log_h):
    """Without leave-one-out, training drives h towards 0; the gradient must not turn into NaN."""
    x = torch.tensor([0.0, 1.0, 2.0, 3.5])
    y = torch.tensor([1.0, -1.0, 0.5, 2.0])
    model = NWKernelRegression()
    with torch.no_grad():
        model.log_bandwidth.fill_(log_h)
    ((model(x, x, y) - y) ** 2).mean().backward()
    assert torch.isfinite(model.log_bandwidth.grad)


def test_nw_layer_gradient_flows_to_log_bandwidth(gen):
    x = torch.rand(10, generator=gen) * 5
    y = torch.sin(x)
    model = NWKernelRegression(bandwidth=1.0)
    ((model(x, x, y, ~torch.eye(10, dtype=torch.bool)) - y) ** 2).mean().backward()
    grad = model.log_bandwidth.grad
    assert grad is not None and torch.isfinite(grad) and grad != 0


def _loo_loss(model, data):
    mask = ~torch.eye(len(data.x_train), dtype=torch.bool)
    return ((model(data.x_train, data.x_train, data.y_train, mask) - data.y_train) ** 2).mean()


@pytest.mark.parametrize("kernel", ["boxcar", "constant"])
@pytest.mark.parametrize("bandwidth", [1.0, 0.01], ids=["in-support", "fallback"])
def test_nw_layer_flat_kernels_backward_gives_a_zero_gradient(kernel, bandwidth):
    """Boxcar and constant weights do not move with a small change of h: the gradient is exactly 0, not an error."""
    data = toy_regression(n_train=20, seed=0)
    model = NWKernelRegression(bandwidth=bandwidth, kernel=kernel)
    loss = _loo_loss(model, data)
    assert loss.requires_grad
    loss.backward()
    grad = model.log_bandwidth.grad
    assert grad is not None and torch.isfinite(grad)
    assert grad == 0
    # an optimiser step runs and leaves h where it was
    torch.optim.SGD(model.parameters(), lr=0.5).step()
    assert_close(model.bandwidth.detach(), torch.tensor(bandwidth))


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
def test_nw_layer_smooth_kernels_backward_gives_a_nonzero_gradient(kernel):
    data = toy_regression(n_train=20, seed=0)
    model = NWKernelRegression(bandwidth=1.0, kernel=kernel)
    _loo_loss(model, data).backward()
    grad = model.log_bandwidth.grad
    assert grad is not None and torch.isfinite(grad) and grad != 0
    # and it points downhill: a small step against it lowers the loss
    with torch.no_grad():
        model.log_bandwidth -= 1e-3 * torch.sign(grad)
        assert _loo_loss(model, data) < _loo_loss(NWKernelRegression(bandwidth=1.0, kernel=kernel), data)


def test_nw_layer_training_with_leave_one_out_reduces_the_loss():
    data = toy_regression(n_train=50, seed=0)
    mask = ~torch.eye(50, dtype=torch.bool)
    model = NWKernelRegression(bandwidth=2.0)  # starts far too smooth
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    losses = []
    for _ in range(8):
        opt.zero_grad()
        loss = ((model(data.x_train, data.x_train, data.y_train, mask) - data.y_train) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False))
    assert losses[-1] < 0.9 * losses[0]
    assert model.bandwidth < 2.0


def test_nw_layer_repr_shows_kernel_and_bandwidth_without_warning():
    model = NWKernelRegression(bandwidth=0.5, kernel="boxcar")
    was_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)  # PyTorch emits some warnings only once per process otherwise
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # printing a model in a notebook must not emit a warning
            text = repr(model)
    finally:
        torch.set_warn_always(was_always)
    assert "kernel='boxcar'" in text and "bandwidth=0.5" in text


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"bandwidth": 0.0}, ValueError, r"bandwidth must be a finite number > 0, got 0\.0"),
        ({"bandwidth": -1.0}, ValueError, r"bandwidth must be a finite number > 0, got -1\.0"),
        ({"bandwidth": float("nan")}, ValueError, r"bandwidth must be a finite number > 0, got nan"),
        ({"bandwidth": float("inf")}, ValueError, r"bandwidth must be a finite number > 0, got inf"),
        ({"bandwidth": "1"}, TypeError, r"bandwidth must be a finite number > 0, got '1' \(str\)"),
        (
            {"kernel": "triangle"},
            ValueError,
            r"kernel must be one of \['gaussian', 'boxcar', 'epanechnikov', 'constant'\], got 'triangle'",
        ),
        ({"kernel": None}, TypeError, r"kernel must be one of .*, got None"),
        ({"kernel": ["gaussian"]}, TypeError, r"kernel must be one of .*, got \['gaussian'\]"),
    ],
    ids=["zero", "negative", "nan", "inf", "str-bandwidth", "unknown-kernel", "none-kernel", "list-kernel"],
)
def test_nw_layer_constructor_error_messages(kwargs, error, match):
    with pytest.raises(error, match=match):
        NWKernelRegression(**kwargs)


def test_nw_layer_forward_errors_name_the_argument():
    model = NWKernelRegression()
    with pytest.raises(TypeError, match=r"queries must be a torch\.Tensor, got list"):
        model([0.5], torch.zeros(3), torch.zeros(3))
    with pytest.raises(ValueError, match=r"mask must have shape \(Q, K\) = \(2, 3\), got \(3, 3\)"):
        model(torch.zeros(2), torch.zeros(3), torch.zeros(3), torch.ones(3, 3, dtype=torch.bool))


# ----------------------------------------------------------------------------------------------
# DotProductAttention with a boolean mask (True = may attend)
# ----------------------------------------------------------------------------------------------


def _tril(n):
    return torch.tril(torch.ones(n, n)).bool()  # (Q, K): query i sees keys 0..i


def test_dot_product_attention_causal_mask_matches_torch_is_causal(dtype, gen, call_unmodified):
    queries, keys, values = random_qkv(gen, dtype, q=5, k=5)
    layer = DotProductAttention(dropout=0.0).eval()
    output = call_unmodified(layer, queries, keys, values, None, causal_mask(5))
    assert output.dtype == dtype and output.shape == (2, 5, 6)
    assert_close(output, F.scaled_dot_product_attention(queries, keys, values, is_causal=True))
    scores = queries @ keys.transpose(1, 2) / math.sqrt(4)
    assert_close(layer.attention_weights, torch.softmax(scores.masked_fill(~_tril(5), -math.inf), -1))
    assert (layer.attention_weights.triu(1) == 0).all()


@pytest.mark.parametrize("valid_lens", [torch.tensor([3, 5]), torch.tensor([[1, 2, 2, 2, 2], [1, 2, 3, 4, 5]])])
def test_dot_product_attention_causal_and_padding_matches_torch_attn_mask(valid_lens, dtype, gen):
    queries, keys, values = random_qkv(gen, dtype, q=5, k=5)
    layer = DotProductAttention().eval()
    output = layer(queries, keys, values, valid_lens, mask=causal_mask(5))
    attn_mask = _tril(5) & bool_mask_by_loop(valid_lens, 5, 5)  # every row keeps key 0
    assert_close(output, F.scaled_dot_product_attention(queries, keys, values, attn_mask=attn_mask))
    assert (layer.attention_weights[~attn_mask] == 0).all()


def test_dot_product_attention_with_causal_mask_is_invariant_to_padding(gen):
    queries, keys, values = random_qkv(gen, torch.float32, q=4, k=4)
    valid_lens = torch.tensor([2, 3])
    keys2, values2 = keys.clone(), values.clone()
    keys2[0, 2:], values2[0, 2:] = 100.0, -100.0
    keys2[1, 3:], values2[1, 3:] = -100.0, 100.0
    layer = DotProductAttention().eval()
    out1 = layer(queries, keys, values, valid_lens, causal_mask(4))
    out2 = layer(queries, keys2, values2, valid_lens, causal_mask(4))
    assert torch.equal(out1[0, :2], out2[0, :2]) and torch.equal(out1[1, :3], out2[1, :3])


@pytest.mark.parametrize(
    "mask, error, match",
    [
        (torch.ones(3, 5), TypeError, r"mask must be a bool tensor \(True = may attend\), got torch\.float32"),
        (torch.ones(3, 4, dtype=torch.bool), ValueError, r"mask must broadcast .* = \(2, 3, 5\), got \(3, 4\)"),
    ],
    ids=["float", "shape"],
)
def test_dot_product_attention_mask_error_messages(mask, error, match):
    with pytest.raises(error, match=match):
        DotProductAttention()(torch.zeros(2, 3, 4), torch.zeros(2, 5, 4), torch.zeros(2, 5, 6), mask=mask)
