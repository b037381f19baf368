"""attn_course.mla: multi-head latent attention, its cache, and the DecoderOnlyLM option attention="mla"."""

import math

import pytest
import torch
from torch.testing import assert_close

from attn_course import DecoderOnlyLM, KVCache, MultiHeadLatentAttention, apply_rope, generate, kv_cache_bytes


def _mla(rope_dim=4, seed=0, dtype=torch.float64, **kw):
    torch.manual_seed(seed)
    return MultiHeadLatentAttention(12, 3, 5, rope_dim=rope_dim, **kw).to(dtype)


def _lm(seed=0, rope_dim=4, positional="rope", **kw):
    torch.manual_seed(seed)
    model = DecoderOnlyLM(
        13, 12, 3, 2, 40, attention="mla", latent_dim=5, rope_dim=rope_dim, positional=positional, **kw
    )
    return model.double().eval()


def _by_hand(att, x):
    """MLA written as a loop over heads and query positions, straight from DeepSeek-V2's equations."""
    B, T, _ = x.shape
    H, dh, dr = att.num_heads, att.head_dim, att.rope_dim
    positions = torch.arange(T)
    c = x @ att.W_DKV.weight.T  # (B, T, d_c)
    out = torch.zeros(B, T, H * dh, dtype=x.dtype)
    for h in range(H):
        rows = slice(h * dh, (h + 1) * dh)
        q = x @ att.W_Q.weight[rows].T  # (B, T, dh)
        k = c @ att.W_UK.weight[rows].T  # (B, T, dh)
        v = c @ att.W_UV.weight[rows].T
        if dr:
            q = torch.cat([q, apply_rope(x @ att.W_QR.weight[h * dr : (h + 1) * dr].T, positions)], dim=-1)
            k = torch.cat([k, apply_rope(x @ att.W_KR.weight.T, positions)], dim=-1)
        for t in range(T):
            scores = q[:, t : t + 1] @ k[:, : t + 1].transpose(1, 2) / math.sqrt(dh + dr)  # (B, 1, t + 1)
            out[:, t, rows] = (torch.softmax(scores, dim=-1) @ v[:, : t + 1])[:, 0]
    return out @ att.W_o.weight.T


@pytest.mark.parametrize("rope_dim", [0, 4])
@pytest.mark.parametrize("absorbed", [False, True])
def test_mla_matches_a_loop_over_heads_and_positions(rope_dim, absorbed):
    att = _mla(rope_dim)
    x = torch.randn(2, 6, 12, dtype=torch.float64)
    assert_close(att(x, absorbed=absorbed), _by_hand(att, x))


def test_weights_are_named_as_in_the_paper_with_the_papers_shapes():
    att = _mla(rope_dim=4, head_dim=7)
    shapes = {name: tuple(p.shape) for name, p in att.named_parameters()}
    assert shapes == {
        "W_DKV.weight": (5, 12),
        "W_UK.weight": (21, 5),
        "W_UV.weight": (21, 5),
        "W_Q.weight": (21, 12),
        "W_o.weight": (12, 21),  # the output projection has one name in every attention layer
        "W_QR.weight": (12, 12),
        "W_KR.weight": (4, 12),
    }
    assert att.numbers_cached_per_position() == 9
    assert not hasattr(_mla(rope_dim=0), "W_KR")


def test_absorbed_equals_plain_in_float32():
    att = _mla(rope_dim=4, dtype=torch.float32)
    x = torch.randn(3, 9, 12)
    plain, absorbed = att(x), att(x, absorbed=True)
    assert torch.allclose(plain, absorbed, atol=1e-5, rtol=1e-5)
    assert not torch.equal(plain, torch.zeros_like(plain))


def test_mla_is_causal_and_its_weights_sum_to_one():
    att = _mla()
    x = torch.randn(2, 7, 12, dtype=torch.float64)
    changed = x.clone()
    changed[:, -1] += 1
    assert torch.equal(att(x)[:, :-1], att(changed)[:, :-1])
    w = att.attention_weights  # from the last call: (B, H, T, T)
    assert torch.equal(w.triu(1), torch.zeros_like(w))
    assert_close(w.sum(-1), torch.ones(2, 3, 7, dtype=torch.float64))


def test_decoupled_rope_scores_depend_on_the_distance_only():
    att = _mla(rope_dim=4)
    x = torch.randn(1, 1, 12, dtype=torch.float64).expand(1, 12, 12)  # one vector at every position
    att(x)
    w = att.attention_weights[0, 0]  # (T, T)
    scores = torch.log(w)  # equal inputs: log-weights differ by a row constant, which each row removes below
    assert_close(scores[5, 3] - scores[5, 2], scores[9, 7] - scores[9, 6])
    assert not torch.allclose(scores[5, 3] - scores[5, 2], scores[5, 4] - scores[5, 3])


def test_the_cache_holds_the_latents_and_steps_equal_the_full_pass():
    att = _mla(rope_dim=4)
    x = torch.randn(2, 6, 12, dtype=torch.float64)
    full = att(x)
    for absorbed in (False, True):
        cache, outs = KVCache(1), []
        for t in range(6):
            outs.append(att(x[:, t : t + 1], cache=cache, absorbed=absorbed))
            cache.advance(torch.tensor([t]))
        assert_close(torch.cat(outs, dim=1), full)
        assert list(cache.layers[0]) == ["latent", "rope_key"]  # what latent attention keeps
        assert tuple(cache.layers[0]["latent"].shape) == (2, 1, 6, 5)  # the latents c_t, shared by the heads
        assert tuple(cache.layers[0]["rope_key"].shape) == (2, 1, 6, 4)  # the RoPE keys
        assert cache.nbytes() == kv_cache_bytes(1, None, None, 6, 8, 2, latent_dim=5, rope_dim=4)


@pytest.mark.parametrize("positional, rope_dim", [("rope", 4), ("learned", 0), ("alibi", 2)])
@pytest.mark.parametrize("temperature, top_k", [(0, None), (1.0, None), (1.5, 4)])
def test_mla_model_generates_the_same_tokens_with_and_without_the_cache(positional, rope_dim, temperature, top_k):
    model = _lm(positional=positional, rope_dim=rope_dim)
    prompt = torch.randint(1, 13, (3, 4), generator=torch.Generator().manual_seed(1))
    runs = [
        generate(model, prompt, 9, temperature, top_k, use_cache=c, generator=torch.Generator().manual_seed(2))
        for c in (True, False)
    ]
    assert torch.equal(runs[0], runs[1])
    with torch.no_grad():
        cache = KVCache(2)
        stepped = torch.cat([model(runs[0][:, t : t + 1], cache) for t in range(runs[0].shape[1])], dim=1)
        assert_close(stepped, model(runs[0]))


def test_mla_model_sliding_window_cache_equals_the_window_mask():
    model = _lm()
    tokens = torch.randint(1, 13, (2, 14), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        full = model(tokens, window=4, sinks=1)
        cache = KVCache(2)
        stepped = torch.cat([model(tokens[:, t : t + 1], cache, window=4, sinks=1) for t in range(14)], dim=1)
    assert_close(stepped, full)
    assert len(cache) == 4  # the sink and the 3 most recent positions


def test_mla_model_ablation_and_head_writes():
    model = _lm()
    tokens = torch.randint(1, 13, (2, 8), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        base = model(tokens)
        block = model.blocks[1]
        writes = block.head_writes()  # (B, H, T, D)
        off = model(tokens, ablate=[(1, 2)])
        heads = block.attention.head_outputs  # (B, H, T, dh)
        assert torch.equal(heads[:, 2], torch.zeros_like(heads[:, 2]))
    assert tuple(writes.shape) == (2, 3, 8, 12)
    assert not torch.allclose(base, off)


def test_kv_cache_bytes_for_latent_attention_by_hand():
    # DeepSeek-V2: 60 layers, d_c = 512, d_R = 64, 16-bit values: 576 values per layer and token.
    assert kv_cache_bytes(60, None, None, 1, 2, latent_dim=512, rope_dim=64) == 576 * 60 * 2
    assert kv_cache_bytes(2, None, None, 10, 4, 3, latent_dim=6) == 6 * 2 * 10 * 4 * 3
    # the same model with multi-head attention, 128 heads of 128: 2 x 128 x 128 = 32768 values per layer and token
    assert kv_cache_bytes(60, 128, 128, 1, 2) == 32768 * 60 * 2


def test_errors():
    with pytest.raises(ValueError, match="rope_dim must be even"):
        MultiHeadLatentAttention(12, 3, 5, rope_dim=3)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        MultiHeadLatentAttention(10, 3, 5)
    with pytest.raises(TypeError, match="latent_dim must be an integer"):
        MultiHeadLatentAttention(12, 3, 5.0)
    att = _mla()
    with pytest.raises(ValueError, match=r"num_hiddens = 12 in its last axis"):
        att(torch.randn(2, 3, 10, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"\(B, T, D\)"):
        att(torch.randn(3, 12, dtype=torch.float64))
    with pytest.raises(TypeError, match="floating-point"):
        att(torch.ones(2, 3, 12, dtype=torch.long))
    with pytest.raises(ValueError, match="finite"):
        att(torch.full((1, 2, 12), math.nan, dtype=torch.float64))
    with pytest.raises(TypeError, match="absorbed must be True or False"):
        att(torch.randn(1, 2, 12, dtype=torch.float64), absorbed=1)
    with pytest.raises(TypeError, match="KVCache"):
        att(torch.randn(1, 2, 12, dtype=torch.float64), cache={})
    with pytest.raises(ValueError, match="positions must have shape"):
        att(torch.randn(1, 2, 12, dtype=torch.float64), positions=torch.arange(3))
    with pytest.raises(ValueError, match="latent_dim"):
        kv_cache_bytes(2, 4, 8, 10, latent_dim=6)
    with pytest.raises(ValueError, match="give latent_dim too"):
        kv_cache_bytes(2, 4, 8, 10, rope_dim=6)
    with pytest.raises(ValueError, match="attention must be one of"):
        DecoderOnlyLM(13, 12, 3, 2, 40, attention="gqa")
    with pytest.raises(TypeError, match="latent_dim must be an integer"):
        DecoderOnlyLM(13, 12, 3, 2, 40, attention="mla")
    with pytest.raises(ValueError, match="leave num_kv_heads=None"):
        DecoderOnlyLM(13, 12, 3, 2, 40, attention="mla", latent_dim=5, num_kv_heads=1)
    with pytest.raises(ValueError, match="needs rope_dim > 0"):
        DecoderOnlyLM(13, 12, 3, 2, 40, attention="mla", latent_dim=5, positional="rope")
    with pytest.raises(ValueError, match="for attention='mla'"):
        DecoderOnlyLM(13, 12, 3, 2, 40, latent_dim=5)
    cache = KVCache(1)
    with pytest.raises(ValueError, match=r"latent and rope_key must share B and T \(axes 0 and 2\)"):
        cache.update(0, latent=torch.zeros(1, 1, 3, 5), rope_key=torch.zeros(1, 1, 2, 4))
    cache.update(0, latent=torch.zeros(1, 1, 3, 5), rope_key=torch.zeros(1, 1, 3, 4))
    with pytest.raises(
        ValueError, match=r"latent must have the B, axis 1 and axis 3 of the cached latent \(1, 1, 3, 5\)"
    ):
        cache.update(0, latent=torch.zeros(1, 1, 1, 6), rope_key=torch.zeros(1, 1, 1, 4))
    with pytest.raises(TypeError, match="latent has dtype torch.float64 but the cached latent"):
        cache.update(
            0,
            latent=torch.zeros(1, 1, 1, 5, dtype=torch.float64),
            rope_key=torch.zeros(1, 1, 1, 4, dtype=torch.float64),
        )
    with pytest.raises(ValueError, match="layer 0 of the cache keeps latent, rope_key, got k, v"):
        cache.update(0, k=torch.zeros(1, 1, 1, 5), v=torch.zeros(1, 1, 1, 5))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_input_of_another_dtype_than_the_parameters_is_refused_by_name(dtype):
    att = _mla()  # float64 parameters
    with pytest.raises(TypeError, match=rf"x has dtype {dtype} but the layer's parameters are torch.float64"):
        att(torch.randn(1, 3, 12).to(dtype))
    cache = KVCache(1)
    att(torch.randn(1, 3, 12, dtype=torch.float64), cache=cache)
    cache.advance(torch.arange(3))
    with pytest.raises(TypeError, match=rf"x has dtype {dtype}"):
        att(torch.randn(1, 1, 12).to(dtype), cache=cache)


def test_keep_heads_and_bias_of_the_wrong_shape_are_refused():
    att, x = _mla(), torch.randn(2, 4, 12, dtype=torch.float64)
    with pytest.raises(
        ValueError, match=r"keep_heads must have shape \(H,\) = \(3,\), one factor per head, got shape \(2,\)"
    ):
        att(x, keep_heads=torch.ones(2, dtype=torch.float64))
    with pytest.raises(TypeError, match="keep_heads must be a floating-point tensor"):
        att(x, keep_heads=torch.ones(3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"bias must have shape \(H, T, K\) = \(3, 4, 4\), added to the scores, got"):
        att(x, bias=torch.zeros(3, 4, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"bias must have shape \(H, T, K\)"):
        att(x, bias=torch.zeros(4, 4, dtype=torch.float64))
    # the right shapes work: a head switched off, a bias that changes the weights
    off = att(x, keep_heads=torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64))
    assert torch.equal(att.head_outputs[:, 1], torch.zeros_like(att.head_outputs[:, 1]))
    assert not torch.allclose(off, att(x))
    att(x, bias=torch.zeros(3, 4, 4, dtype=torch.float64))


def test_kv_cache_bytes_refuses_an_odd_rope_dim_as_the_layer_does():
    with pytest.raises(ValueError, match="rope_dim must be even"):
        kv_cache_bytes(2, None, None, 10, latent_dim=24, rope_dim=7)
    with pytest.raises(ValueError, match="rope_dim must be even"):
        MultiHeadLatentAttention(12, 3, 24, rope_dim=7)
    assert kv_cache_bytes(2, None, None, 10, latent_dim=24, rope_dim=8) == 32 * 2 * 10 * 2
