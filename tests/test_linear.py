"""attn_course.linear: feature maps, linear attention in its parallel, causal, recurrent and chunked forms, decay and
the delta rule; every form against a direct O(N^2) computation of the same formula."""

import math

import pytest
import torch
import torch.nn.functional as F

import attn_course as ac

FORMS = ["linear_attention", "linear_attention_rnn", "linear_attention_chunked", "delta_rule"]


def _qkv(b=2, t=9, d=5, v=3, q=None, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    queries = torch.randn(b, t if q is None else q, d, generator=gen, dtype=dtype)
    return queries, torch.randn(b, t, d, generator=gen, dtype=dtype), torch.randn(b, t, v, generator=gen, dtype=dtype)


def _direct(queries, keys, values, phi, causal, decay=1.0):
    """o_i = sum_j gamma^(p_i - j) phi(q_i).phi(k_j) v_j / sum_j ..., by plain loops over queries and keys."""
    b, num_q, num_k = queries.shape[0], queries.shape[1], keys.shape[1]
    out = torch.zeros(b, num_q, values.shape[-1], dtype=queries.dtype)
    for n in range(b):
        for i in range(num_q):
            top, bottom = torch.zeros(values.shape[-1], dtype=queries.dtype), 0.0
            for j in range(num_k):
                back = i + num_k - num_q - j
                if causal and back < 0:
                    continue
                weight = float(phi(queries[n, i]) @ phi(keys[n, j])) * (decay**back if causal else 1.0)
                top, bottom = top + weight * values[n, j], bottom + weight
            out[n, i] = top / bottom if bottom != 0 else 0.0
    return out


def _elu(x):
    return F.elu(x) + 1


# ----------------------------------------------------------------------------------------------------------------------
# apply_feature_map
# ----------------------------------------------------------------------------------------------------------------------


def test_apply_feature_map_elu_and_relu_by_hand():
    x = torch.tensor([[-1.0, 0.0, 2.0]])
    torch.testing.assert_close(ac.apply_feature_map(x), torch.tensor([[math.exp(-1.0), 1.0, 3.0]]))
    torch.testing.assert_close(ac.apply_feature_map(x, "relu"), torch.tensor([[0.0, 0.0, 2.0]]))


def test_positive_random_features_by_hand_and_shared_vectors():
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
    phi = ac.apply_feature_map(x, "positive_random", num_features=7, generator=torch.Generator().manual_seed(5))
    w = torch.randn(7, 3, generator=torch.Generator().manual_seed(5))  # the same vectors w_r, drawn again
    want = torch.exp(x @ w.T - (x * x).sum(-1, keepdim=True) / 2) / math.sqrt(7)
    torch.testing.assert_close(phi, want)
    assert phi.shape == (4, 7) and bool((phi > 0).all())


def test_positive_random_features_estimate_the_exponential_kernel():
    gen = torch.Generator().manual_seed(2)
    q, k = (F.normalize(torch.randn(1, 6, generator=gen, dtype=torch.float64), dim=-1) for _ in range(2))
    phi_q, phi_k = (
        ac.apply_feature_map(x, "positive_random", num_features=200_000, generator=torch.Generator().manual_seed(0))
        for x in (q, k)
    )
    assert (phi_q @ phi_k.T).item() == pytest.approx(math.exp((q @ k.T).item()), rel=0.02)


def test_positive_random_features_of_a_huge_input_underflow_to_zero_and_attention_gives_zeros():
    x = torch.full((1, 1, 2), 500.0)  # |x|^2 / 2 = 250000 dwarfs w . x: every exp underflows to 0

    def phi(t):
        return ac.apply_feature_map(t, "positive_random", num_features=4, generator=torch.Generator().manual_seed(0))

    assert bool((phi(x) == 0).all())
    assert bool((ac.linear_attention(x, x, torch.ones(1, 1, 3), phi) == 0).all())


def test_favor_weights_approach_softmax_weights_as_features_grow():
    gen = torch.Generator().manual_seed(0)
    queries, keys = torch.randn(16, 8, generator=gen) * 0.5, torch.randn(16, 8, generator=gen) * 0.5
    errors = ac.favor_weight_error(queries, keys, [4, 64, 1024], draws=4)
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.05


phi = ac.apply_feature_map  # short, for the table of errors below


def _random(x, num_features=4, generator=0):
    generator = torch.Generator().manual_seed(generator) if isinstance(generator, int) else generator
    return ac.apply_feature_map(x, "positive_random", num_features=num_features, generator=generator)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: phi(torch.ones(2, 3), "softmax"), ValueError, r"kind must be one of \['elu', 'relu', "),
        (lambda: phi(torch.ones(2, 3), 3), TypeError, r"kind must be one of"),
        (lambda: phi(torch.ones(2, 3), "positive_random", generator=torch.Generator()), TypeError, r"num_features"),
        (lambda: _random(torch.ones(2, 3), num_features=0), ValueError, r"num_features must be an integer >= 1"),
        (lambda: _random(torch.ones(2, 3), generator=None), TypeError, r"generator must be a torch.Generator"),
        (lambda: phi(torch.ones(2, 3), "elu", num_features=4), ValueError, r"for kind='positive_random' only"),
        (lambda: _random(torch.ones(2, 0)), ValueError, r"last axis of size D >= 1"),
        (lambda: phi(torch.tensor(1.0)), ValueError, r"x must have shape \(\.\.\., D\)"),
        (lambda: phi(torch.tensor([1, 2])), TypeError, r"x must be a floating-point tensor"),
        (lambda: phi(torch.tensor([1.0, math.nan])), ValueError, r"x must be finite"),
    ],
)  # fmt: skip
def test_apply_feature_map_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------------------------------------------------
# The forms against the direct computation
# ----------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, phi", [("elu", _elu), ("relu", F.relu)])
@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_equals_the_direct_formula(kind, phi, causal):
    q, k, v = _qkv()
    torch.testing.assert_close(ac.linear_attention(q, k, v, kind, causal), _direct(q, k, v, phi, causal))


@pytest.mark.parametrize("num_queries", [4, 13])  # fewer and more queries than the 9 keys
def test_causal_linear_attention_is_bottom_right_aligned(num_queries):
    q, k, v = _qkv(q=num_queries)
    out = ac.linear_attention(q, k, v, causal=True)
    torch.testing.assert_close(out, _direct(q, k, v, _elu, True))
    weights = ac.linear_attention_weights(q, k, causal=True)
    assert bool((weights[:, ~ac.causal_mask(num_queries, 9) if num_queries <= 9 else slice(None)] >= 0).all())
    if num_queries > 9:  # the first Q - K queries sit before every key: zeros, as masked_softmax gives
        assert bool((out[:, : num_queries - 9] == 0).all())
        assert bool((weights[:, : num_queries - 9] == 0).all())


def test_linear_attention_weights_rows_sum_to_one_and_respect_the_mask():
    q, k, _ = _qkv(t=7)
    weights = ac.linear_attention_weights(q, k, causal=True, decay=0.7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 7, dtype=torch.float64))
    assert bool((weights[:, ~ac.causal_mask(7)] == 0).all())
    back = weights[0, -1, -2] / weights[0, -1, -1]  # one step back: gamma times the ratio of the kernel values
    ratio = (_elu(q[0, -1]) @ _elu(k[0, -2])) / (_elu(q[0, -1]) @ _elu(k[0, -1]))
    assert back.item() == pytest.approx(0.7 * ratio.item())


def test_a_callable_feature_map_is_applied_to_queries_and_keys():
    q, k, v = _qkv()
    torch.testing.assert_close(ac.linear_attention(q, k, v, torch.exp), _direct(q, k, v, torch.exp, False))


@pytest.mark.parametrize("decay", [1.0, 0.8, 0.3])
def test_rnn_equals_the_direct_formula_and_returns_the_state(decay):
    q, k, v = _qkv()
    outputs, state, norm = ac.linear_attention_rnn(q, k, v, decay=decay)
    torch.testing.assert_close(outputs, _direct(q, k, v, _elu, True, decay))
    age = decay ** torch.arange(8, -1, -1, dtype=torch.float64)  # (T,): the last key counts once
    phi_k = _elu(k) * age[:, None]
    torch.testing.assert_close(state, phi_k.transpose(1, 2) @ v)
    torch.testing.assert_close(norm, phi_k.sum(1))
    if decay == 1.0:
        torch.testing.assert_close(outputs, ac.linear_attention(q, k, v, causal=True))


@pytest.mark.parametrize("chunk_size", [1, 2, 4, 9, 20])
def test_chunked_form_equals_the_recurrent_form(chunk_size):
    q, k, v = _qkv(t=11)
    want = ac.linear_attention_rnn(q, k, v, "relu")[0]
    torch.testing.assert_close(ac.linear_attention_chunked(q, k, v, chunk_size, "relu"), want)


def _delta_by_hand(q, k, v, beta):
    state = torch.zeros(q.shape[0], k.shape[-1], v.shape[-1], dtype=q.dtype)
    outs = []
    for t in range(q.shape[1]):
        for n in range(q.shape[0]):
            state[n] = state[n] + beta[n, t] * torch.outer(k[n, t], v[n, t] - state[n].T @ k[n, t])
        outs.append(torch.einsum("bd,bdv->bv", q[:, t], state))
    return torch.stack(outs, 1), state


def test_delta_rule_equals_the_update_by_hand():
    q, k, v = _qkv()
    beta = torch.rand(2, 9, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    outputs, state = ac.delta_rule(q, k, v, beta)
    want_out, want_state = _delta_by_hand(q, k, v, beta)
    torch.testing.assert_close(outputs, want_out)
    torch.testing.assert_close(state, want_state)


def test_delta_rule_overwrites_a_key_written_twice():
    keys = torch.linalg.qr(torch.randn(6, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64))[0]
    keys = torch.cat([keys[:3], keys[:1]])[None]  # (1, 4, 6): key 0 written again last
    values = torch.randn(1, 4, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    _, state = ac.delta_rule(keys, keys, values, torch.ones(1, 4, dtype=torch.float64))
    torch.testing.assert_close(keys[0, 0] @ state[0], values[0, 3])  # the new value, not the sum
    torch.testing.assert_close(keys[0, 1] @ state[0], values[0, 1])  # the others untouched
    _, nothing = ac.delta_rule(keys, keys, values, torch.zeros(1, 4, dtype=torch.float64))
    assert bool((nothing == 0).all())


# ----------------------------------------------------------------------------------------------------------------------
# Zero normalisers, dtypes, inputs left alone
# ----------------------------------------------------------------------------------------------------------------------


def test_zero_normaliser_gives_zeros_not_nan():
    q, v = torch.randn(1, 3, 4), torch.randn(1, 3, 2)
    zero_keys = torch.zeros(1, 3, 4)
    for out in (
        ac.linear_attention(q, zero_keys, v, "relu"),
        ac.linear_attention(q, zero_keys, v, "relu", causal=True),
        ac.linear_attention_rnn(q, zero_keys, v, "relu")[0],
        ac.linear_attention_chunked(q, zero_keys, v, 2, "relu"),
        ac.linear_attention_weights(q, zero_keys, "relu"),
    ):
        assert bool((out == 0).all())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("form", FORMS)
def test_low_precision_is_computed_in_float32_and_returned_in_its_dtype(form, dtype):
    q, k, v = _qkv(dtype=torch.float32)
    args = (q, F.normalize(k, dim=-1), v)
    extra = {"linear_attention_chunked": (3,), "delta_rule": (torch.full((2, 9), 0.5),)}.get(form, ())
    want = getattr(ac, form)(*args, *extra)
    low = getattr(ac, form)(*(t.to(dtype) for t in args), *(e.to(dtype) if torch.is_tensor(e) else e for e in extra))
    want, low = (w[0] if isinstance(w, tuple) else w for w in (want, low))
    assert low.dtype == dtype
    torch.testing.assert_close(low.float(), want, atol=0.05, rtol=0.05)


@pytest.mark.parametrize("form", FORMS)
def test_inputs_are_not_modified_and_gradients_flow(form):
    q, k, v = (t.float().requires_grad_() for t in _qkv())
    extra = {"linear_attention_chunked": (4,), "delta_rule": (torch.full((2, 9), 0.5),)}.get(form, ())
    kept = [t.detach().clone() for t in (q, k, v)]
    out = getattr(ac, form)(q, k.transpose(1, 2).contiguous().transpose(1, 2), v, *extra)  # non-contiguous keys
    (out[0] if isinstance(out, tuple) else out).sum().backward()
    assert all(torch.equal(t.detach(), c) for t, c in zip((q, k, v), kept, strict=True))
    assert all(t.grad is not None and bool(torch.isfinite(t.grad).all()) for t in (q, k, v))


def test_huge_finite_input_is_refused_rather_than_nan():
    q, k, v = _qkv(dtype=torch.float32)
    with pytest.raises(ValueError, match="overflowed"):
        ac.linear_attention(q * 1e30, k * 1e30, v)


# ----------------------------------------------------------------------------------------------------------------------
# Errors: the course's words, from _validate
# ----------------------------------------------------------------------------------------------------------------------

Q, K, V = _qkv(dtype=torch.float32)
BETA = torch.full((2, 9), 0.5)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: ac.linear_attention(Q, K, V, "softmax"), ValueError, r"feature_map must be one of \['elu', 'relu'\]"),
        (lambda: ac.linear_attention(Q, K, V, "positive_random"), ValueError, r"feature_map='positive_random' needs"),
        (lambda: ac.linear_attention(Q, K, V, lambda x: x.sum()), ValueError, r"feature_map must map queries"),
        (lambda: ac.linear_attention(Q, K, V, causal=1), TypeError, r"causal must be True or False"),
        (lambda: ac.linear_attention(Q, K[:, :4], V), ValueError, r"values must have one row per key"),
        (lambda: ac.linear_attention(Q, K[..., :3], V), ValueError, r"queries and keys must have the same size D"),
        (lambda: ac.linear_attention(Q[0], K, V), ValueError, r"queries must have shape \(B, Q, D\)"),
        (lambda: ac.linear_attention(Q.double(), K, V), TypeError, r"keys has dtype torch.float32 but queries"),
        (lambda: ac.linear_attention_rnn(Q, K, V, decay=0.0), ValueError, r"decay must be a finite number in \(0, 1\]"),
        (lambda: ac.linear_attention_rnn(Q, K, V, decay=1.5), ValueError, r"decay must be a finite number in \(0, 1\]"),
        (lambda: ac.linear_attention_rnn(Q, K, V, decay="0.5"), TypeError, r"decay must be a finite number"),
        (lambda: ac.linear_attention_rnn(Q[:, :4], K, V), ValueError, r"queries and keys must have the same length T"),
        (lambda: ac.linear_attention_weights(Q, K, decay=0.5), ValueError, r"decay < 1 needs causal=True"),
        (lambda: ac.linear_attention_chunked(Q, K, V, 0), ValueError, r"chunk_size must be an integer >= 1"),
        (lambda: ac.linear_attention_chunked(Q, K, V, 2.0), TypeError, r"chunk_size must be an integer >= 1"),
        (lambda: ac.delta_rule(Q, K, V, BETA * 3), ValueError, r"beta must lie in \[0, 1\], got 1.5"),
        (lambda: ac.delta_rule(Q, K, V, -BETA), ValueError, r"beta must lie in \[0, 1\], got -0.5"),
        (lambda: ac.delta_rule(Q, K, V, BETA[:, :3]), ValueError, r"beta must have shape \(B, T\) = \(2, 9\)"),
        (lambda: ac.delta_rule(Q, K, V, BETA[0]), ValueError, r"beta must have shape \(B, T\) \(2-D\)"),
        (lambda: ac.delta_rule(Q, K, V, BETA.double()), TypeError, r"beta has dtype torch.float64 but queries"),
        (lambda: ac.delta_rule(Q, K, V, 0.5), TypeError, r"beta must be a torch.Tensor, got float"),
        (lambda: ac.delta_rule(Q, K, V, BETA * math.nan), ValueError, r"beta must be finite"),
    ],
)  # fmt: skip
def test_errors_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------------------------------------------------
# Fuzz: every public name, every class of bad input
# ----------------------------------------------------------------------------------------------------------------------


def _call(form, q, k, v, beta=None):
    if form == "linear_attention_chunked":
        return ac.linear_attention_chunked(q, k, v, 3)
    if form == "delta_rule":
        return ac.delta_rule(q, k, v, torch.full(k.shape[:2], 0.5, dtype=k.dtype) if beta is None else beta)
    if form == "linear_attention_weights":
        return ac.linear_attention_weights(q, k)
    return getattr(ac, form)(q, k, v)


ALL_FORMS = [*FORMS, "linear_attention_weights"]


@pytest.mark.parametrize("form", ALL_FORMS)
def test_fuzz_lists_and_wrong_types_are_refused_by_name(form):
    q, k, v = _qkv(dtype=torch.float32)
    with pytest.raises(TypeError, match=r"queries must be a torch.Tensor, got list"):
        _call(form, q.tolist(), k, v)
    with pytest.raises(TypeError, match=r"keys must be a floating-point tensor"):
        _call(form, q, k.long(), v)
    with pytest.raises(TypeError, match=r"x must be a torch.Tensor, got list"):
        ac.apply_feature_map([[1.0, 2.0]])


@pytest.mark.parametrize("form", ALL_FORMS)
def test_fuzz_non_finite_input_is_refused_by_name(form):
    q, k, v = _qkv(dtype=torch.float32)
    bad = k.clone()
    bad[0, 0, 0] = math.inf
    with pytest.raises(ValueError, match=r"keys must be finite"):
        _call(form, q, bad, v)


@pytest.mark.parametrize("form", ALL_FORMS)
def test_fuzz_empty_batch_and_empty_sequence_give_empty_results(form):
    for sizes in ({"b": 0}, {"t": 0}):
        q, k, v = _qkv(dtype=torch.float32, **sizes)
        out = _call(form, q, k, v)
        out = out[0] if isinstance(out, tuple) else out
        assert out.numel() == 0 and not out.isnan().any()


@pytest.mark.parametrize("form", ALL_FORMS)
def test_fuzz_empty_feature_size_is_refused(form):
    q, k, v = _qkv(d=0, dtype=torch.float32)
    with pytest.raises(ValueError, match=r"last axis of size D >= 1"):
        _call(form, q, k, v)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("form", ALL_FORMS)
def test_fuzz_low_precision_gives_no_nan(form, dtype):
    q, k, v = (t.to(dtype) for t in _qkv(dtype=torch.float32, t=40))
    out = _call(form, q * 4, F.normalize(k.float(), dim=-1).to(dtype) if form == "delta_rule" else k * 4, v)
    out = out[0] if isinstance(out, tuple) else out
    assert out.dtype == dtype and bool(torch.isfinite(out).all())
