"""Gated DeltaNet's rule and the chunked delta rule against loop references written here, their edge cases and bad
input. (``delta_rule`` itself is tested with the other recurrent forms in test_linear.py.)"""

import pytest
import torch

from attn_course.delta_rule import delta_rule, delta_rule_chunked, gated_delta_rule


def inputs(B=2, T=11, D=4, V=3, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, T, n, generator=g, dtype=dtype) for n in (D, D, V))
    k = k / k.norm(dim=-1, keepdim=True)  # unit keys, as DeltaNet normalises them
    beta = torch.rand(B, T, generator=g, dtype=dtype)
    alpha = torch.rand(B, T, generator=g, dtype=dtype)
    return q, k, v, beta, alpha


def gated_loop(q, k, v, beta, alpha):
    """S_t = a_t S_{t-1} + b_t k_t (v_t - (a_t S_{t-1})^T k_t)^T and o_t = S_t^T q_t, step by step."""
    B, T, D = k.shape
    outs, states = torch.zeros(B, T, v.shape[-1], dtype=q.dtype), []
    for b in range(B):
        S = torch.zeros(D, v.shape[-1], dtype=q.dtype)
        for t in range(T):
            decayed = alpha[b, t] * S
            S = decayed + beta[b, t] * torch.outer(k[b, t], v[b, t] - decayed.T @ k[b, t])
            outs[b, t] = S.T @ q[b, t]
        states.append(S)
    return outs, torch.stack(states)


def test_gated_delta_rule_is_the_loop():
    q, k, v, beta, alpha = inputs()
    out, S = gated_delta_rule(q, k, v, beta, alpha)
    ref_out, ref_S = gated_loop(q, k, v, beta, alpha)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)
    torch.testing.assert_close(S, ref_S, rtol=0, atol=1e-12)


def test_alpha_one_is_the_delta_rule_exactly():
    q, k, v, beta, _ = inputs()
    gated = gated_delta_rule(q, k, v, beta, torch.ones_like(beta))
    plain = delta_rule(q, k, v, beta)
    assert torch.equal(gated[0], plain[0]) and torch.equal(gated[1], plain[1])


def test_alpha_zero_forgets_everything_before_the_step():
    q, k, v, beta, _ = inputs()
    out, S = gated_delta_rule(q, k, v, beta, torch.zeros_like(beta))
    last = beta[:, -1, None, None] * k[:, -1, :, None] * v[:, -1, None, :]  # beta_T k_T v_T^T, (B, D, V)
    torch.testing.assert_close(S, last, rtol=0, atol=1e-15)
    each = beta[..., None] * (k * q).sum(-1, keepdim=True) * v  # o_t = beta_t (k_t . q_t) v_t
    torch.testing.assert_close(out, each, rtol=0, atol=1e-14)


def test_a_gate_fades_what_an_orthonormal_key_stored_by_every_later_step():
    q, _, v, beta, _ = inputs(B=1, T=8, D=8)
    k = torch.linalg.qr(torch.randn(8, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64))[0]
    k = k.T.unsqueeze(0)  # (1, T, D): step t writes along its own direction, which no later write touches
    plain = k[0, 0] @ delta_rule(q, k, v, beta)[1][0]  # beta_0 v_0
    gated = k[0, 0] @ gated_delta_rule(q, k, v, beta, torch.full_like(beta, 0.5))[1][0]
    torch.testing.assert_close(plain, beta[0, 0] * v[0, 0], rtol=0, atol=1e-12)
    torch.testing.assert_close(gated, 0.5**7 * plain, rtol=0, atol=1e-12)  # decayed by the 7 steps after it


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 4, 5, 11, 16])
def test_the_chunked_form_is_the_delta_rule(chunk_size):
    q, k, v, beta, _ = inputs()
    out, S = delta_rule_chunked(q, k, v, beta, chunk_size)
    ref_out, ref_S = delta_rule(q, k, v, beta)
    assert (out - ref_out).abs().max() < 1e-9 and (S - ref_S).abs().max() < 1e-9


def test_the_chunked_form_on_unnormalised_keys_and_a_full_beta():
    q, k, v, beta, _ = inputs(T=9, D=6)
    k, beta = 2 * k, torch.ones_like(beta)
    assert (delta_rule_chunked(q, k, v, beta, 4)[0] - delta_rule(q, k, v, beta)[0]).abs().max() < 1e-9


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 4, 5, 11, 16])
def test_the_gated_chunked_form_is_gated_delta_net(chunk_size):
    q, k, v, beta, alpha = inputs()
    out, S = delta_rule_chunked(q, k, v, beta, chunk_size, alpha=alpha)
    ref_out, ref_S = gated_loop(q, k, v, beta, alpha)
    assert (out - ref_out).abs().max() < 1e-9 and (S - ref_S).abs().max() < 1e-9


def test_the_gated_chunked_form_takes_a_gate_of_zero_without_nan():
    q, k, v, beta, alpha = inputs(T=12)
    alpha[0, 3], alpha[1, 5:7] = 0.0, 0.0  # forget everything there: log 0 = -inf inside the chunk
    out, S = delta_rule_chunked(q, k, v, beta, 8, alpha=alpha)
    ref_out, ref_S = gated_loop(q, k, v, beta, alpha)
    assert out.isfinite().all() and (out - ref_out).abs().max() < 1e-9 and (S - ref_S).abs().max() < 1e-9


def test_the_gated_chunked_form_with_alpha_one_is_the_plain_chunked_form():
    q, k, v, beta, _ = inputs()
    gated = delta_rule_chunked(q, k, v, beta, 4, alpha=torch.ones_like(beta))
    plain = delta_rule_chunked(q, k, v, beta, 4)
    assert all(torch.equal(a, b) for a, b in zip(gated, plain, strict=True))


def test_gradients_through_the_gated_chunked_form_are_the_loops():
    q, k, v, beta, alpha = (t.clone().requires_grad_() for t in inputs(T=7))
    out, S = delta_rule_chunked(q, k, v, beta, 3, alpha=alpha)
    grads = torch.autograd.grad((out.sum() + S.square().sum()), (q, k, v, beta, alpha))
    ref_out, ref_S = gated_loop(q, k, v, beta, alpha)
    ref_grads = torch.autograd.grad((ref_out.sum() + ref_S.square().sum()), (q, k, v, beta, alpha))
    for got, want in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)


def test_a_wrong_alpha_of_the_chunked_form_is_named():
    q, k, v, beta, alpha = inputs()
    with pytest.raises(ValueError, match=r"alpha must lie in \[0, 1\]"):
        delta_rule_chunked(q, k, v, beta, 4, alpha=alpha + 2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_low_precision_keeps_its_dtype_and_stays_close(dtype):
    q, k, v, beta, alpha = inputs(dtype=torch.float64)
    for fn, extra in ((gated_delta_rule, (alpha,)), (delta_rule_chunked, (4,))):
        cast = [t.to(dtype) if isinstance(t, torch.Tensor) else t for t in (q, k, v, beta, *extra)]
        out, S = fn(*cast)
        ref = fn(q, k, v, beta, *extra)[0]
        assert out.dtype == S.dtype == dtype
        assert (out.double() - ref).abs().max() < (0.05 if dtype != torch.float32 else 1e-5)


def test_no_steps_give_no_outputs_and_a_zero_state():
    q, k, v, beta, alpha = inputs(T=0)
    for out, S in (gated_delta_rule(q, k, v, beta, alpha), delta_rule_chunked(q, k, v, beta, 3)):
        assert out.shape == (2, 0, 3) and S.shape == (2, 4, 3) and not S.any()


def test_inputs_are_not_modified():
    q, k, v, beta, alpha = inputs()
    kept = [t.clone() for t in (q, k, v, beta, alpha)]
    gated_delta_rule(q, k, v, beta, alpha)
    delta_rule_chunked(q, k, v, beta, 3)
    assert all(torch.equal(a, b) for a, b in zip(kept, (q, k, v, beta, alpha), strict=True))


@pytest.mark.parametrize(
    "chunk_size, error",
    [(0, ValueError), (-2, ValueError), (2.0, TypeError), ("4", TypeError), (True, TypeError), (None, TypeError)],
)
def test_a_chunk_size_that_is_not_a_whole_number_from_1_is_named(chunk_size, error):
    q, k, v, beta, _ = inputs()
    with pytest.raises(error, match="chunk_size must be an integer >= 1"):
        delta_rule_chunked(q, k, v, beta, chunk_size)


@pytest.mark.parametrize(
    "change, error, match",
    [
        (lambda a: a + 1.5, ValueError, r"alpha must lie in \[0, 1\], got \d"),
        (lambda a: a - 1.5, ValueError, r"alpha must lie in \[0, 1\], got -"),
        (lambda a: a[:, :-1], ValueError, r"alpha must have shape \(B, T\) = \(2, 11\), one decay factor per step"),
        (lambda a: a.float(), TypeError, "alpha"),
        (lambda a: a.masked_fill(a > 0.5, float("nan")), ValueError, "alpha"),
        (lambda a: a.tolist(), TypeError, "alpha"),
    ],
    ids=["above 1", "below 0", "one step short", "float32 beside float64", "NaN", "a list"],
)
def test_a_wrong_alpha_is_named(change, error, match):
    q, k, v, beta, alpha = inputs()
    with pytest.raises(error, match=match):
        gated_delta_rule(q, k, v, beta, change(alpha))
