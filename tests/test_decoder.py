"""attn_course.causal, decoder, kvcache, generation, lmdata, lmtrain and lmeval: the decoder-only model of notebook 09,
and GQA."""

import math

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attn_course import (
    DecoderOnlyLM,
    KVCache,
    MultiHeadAttention,
    copying_scores,
    generate,
    half_losses,
    head_scores,
    kv_cache_bytes,
    multi_head_attention,
    next_token_probs,
    repeat_kv_heads,
    repeat_task,
    train_lm,
)
from attn_course.causal import CausalSelfAttention, causal_attention, window_mask
from attn_course.decoder import POSITIONAL, DecoderOnlyBlock
from attn_course.lmdata import BOS_TOKEN
from attn_course.lmtrain import LMHistory

AVAILABLE = [p for p in POSITIONAL if p not in ("rope", "alibi")]
try:  # RoPE and ALiBi come from attn_course.rotary
    import attn_course.rotary  # noqa: F401

    AVAILABLE = list(POSITIONAL)
except ImportError:
    pass


def _model(positional="learned", num_kv_heads=None, seed=0, vocab=11, max_len=40, dtype=torch.float64, **kw):
    torch.manual_seed(seed)
    model = DecoderOnlyLM(vocab, 16, 4, 2, max_len, num_kv_heads=num_kv_heads, positional=positional, **kw)
    return model.to(dtype).eval()


def _tokens(b, t, vocab=11, seed=1):
    return torch.randint(0, vocab, (b, t), generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("positional", AVAILABLE)
def test_logits_have_shape_b_t_vocab(positional):
    logits = _model(positional)(_tokens(3, 7))
    assert logits.shape == (3, 7, 11)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("positional", AVAILABLE)
@pytest.mark.parametrize("num_kv_heads", [None, 1])
def test_causality_a_later_token_never_changes_earlier_logits(positional, num_kv_heads):
    model = _model(positional, num_kv_heads)
    tokens = _tokens(2, 9)
    for t in (0, 4, 8):
        changed = tokens.clone()
        changed[:, t] = (changed[:, t] + 1) % 11
        with torch.no_grad():
            a, b = model(tokens), model(changed)
        assert_close(a[:, :t], b[:, :t], rtol=0, atol=1e-12)
        assert not torch.allclose(a[:, t], b[:, t])  # the changed position itself does see its token


def test_attention_weights_are_causal_and_rows_sum_to_one():
    model = _model()
    model(_tokens(2, 6))
    w = model.attention_weights()
    assert w.shape == (2, 2, 4, 6, 6)  # (B, L, H, T, T)
    assert (w.triu(1) == 0).all()
    assert_close(w.sum(-1), torch.ones(2, 2, 4, 6, dtype=w.dtype))


def test_positional_none_sees_no_order_learned_does():
    """Without positions, one layer's last logits depend on the multiset of tokens only (with two layers, the
    earlier positions' causal prefixes differ, which tells order apart)."""
    tokens = torch.tensor([[1, 2, 3, 4, 5]])
    swapped = torch.tensor([[2, 1, 3, 4, 5]])
    with torch.no_grad():
        torch.manual_seed(0)
        none = DecoderOnlyLM(11, 16, 4, 1, 8, positional="none").double()
        assert_close(none(tokens)[:, -1], none(swapped)[:, -1])
        torch.manual_seed(0)
        learned = DecoderOnlyLM(11, 16, 4, 1, 8, positional="learned").double()
        assert not torch.allclose(learned(tokens)[:, -1], learned(swapped)[:, -1])


def test_ablating_a_head_equals_zeroing_its_slice_of_w_o():
    model, tokens = _model(), _tokens(2, 8)
    with torch.no_grad():
        ablated = model(tokens, ablate=[(1, 2)])
        edited = _model()
        edited.blocks[1].attention.W_o.weight[:, 8:12] = 0.0  # head 2 of 4, head size 4: features 8..11
        assert_close(ablated, edited(tokens))
        assert not torch.allclose(ablated, model(tokens))


def test_ffn_size_defaults_to_four_times_the_model_size():
    model = _model()
    assert model.blocks[0].ffn.dense1.out_features == 64
    assert _model(ffn_hiddens=24).blocks[0].ffn.dense1.out_features == 24


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_low_precision_model_keeps_its_dtype(dtype):
    logits = _model(dtype=dtype)(_tokens(2, 5))
    assert logits.dtype == dtype and torch.isfinite(logits).all()


# ----------------------------------------------------------------------------------------------
# Generation and the KV cache
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("positional", "num_kv_heads", "batch", "prompt_len", "new"),
    [(p, None, 1, 1, 8) for p in AVAILABLE]
    + [(p, 2, 3, 5, 6) for p in AVAILABLE]
    + [(p, 1, 2, 12, 10) for p in AVAILABLE]
    + [("learned", None, 2, 30, 10)],
)
def test_cache_and_no_cache_give_the_same_tokens_and_logits(positional, num_kv_heads, batch, prompt_len, new):
    model = _model(positional, num_kv_heads)
    prompt = _tokens(batch, prompt_len, seed=prompt_len)
    greedy = [generate(model, prompt, new, temperature=0, use_cache=c) for c in (True, False)]
    assert torch.equal(greedy[0], greedy[1])
    sampled = [
        generate(model, prompt, new, temperature=1.0, top_k=5, use_cache=c, generator=torch.Generator().manual_seed(3))
        for c in (True, False)
    ]
    assert torch.equal(sampled[0], sampled[1])
    # the logits themselves, position by position
    cache = KVCache(2)
    with torch.no_grad():
        stepwise = [model(greedy[0][:, :prompt_len], cache)]
        stepwise += [model(greedy[0][:, t : t + 1], cache) for t in range(prompt_len, greedy[0].shape[1])]
        assert_close(torch.cat(stepwise, dim=1), model(greedy[0]), rtol=1e-10, atol=1e-10)
    assert len(cache) == greedy[0].shape[1]


def test_generate_returns_prompt_then_new_tokens_and_keeps_the_training_mode():
    model = _model().train()
    prompt = _tokens(2, 3)
    out = generate(model, prompt, 4, temperature=0)
    assert out.shape == (2, 7) and torch.equal(out[:, :3], prompt)
    assert model.training
    assert torch.equal(generate(model, prompt, 0), prompt)


def test_greedy_takes_the_largest_logit_at_every_step():
    model, prompt = _model(), _tokens(1, 4)
    out = generate(model, prompt, 5, temperature=0)
    with torch.no_grad():
        logits = model(out[:, :-1])
    assert torch.equal(logits[:, 3:].argmax(-1), out[:, 4:])


def test_sampling_is_deterministic_under_a_seeded_generator_and_varies_without():
    model, prompt = _model(), _tokens(4, 2)
    draws = [generate(model, prompt, 10, generator=torch.Generator().manual_seed(s)) for s in (5, 5, 6)]
    assert torch.equal(draws[0], draws[1])
    assert not torch.equal(draws[0], draws[2])


def test_top_k_one_is_greedy():
    model, prompt = _model(), _tokens(2, 3)
    assert torch.equal(
        generate(model, prompt, 6, top_k=1, generator=torch.Generator().manual_seed(0)),
        generate(model, prompt, 6, temperature=0),
    )


def test_next_token_probs_temperature_and_top_k():
    logits = torch.tensor([2.0, 1.0, 0.0, 1.0])
    assert_close(next_token_probs(logits), torch.softmax(logits, -1))
    assert_close(next_token_probs(logits, 2.0), torch.softmax(logits / 2, -1))
    assert torch.equal(next_token_probs(logits, 0), torch.tensor([1.0, 0.0, 0.0, 0.0]))
    top2 = next_token_probs(logits, 1.0, top_k=2)  # the two 1.0 tie for second place: both kept
    assert top2[2] == 0 and abs(float(top2.sum()) - 1) < 1e-6
    e = math.e
    assert_close(top2, torch.tensor([e, 1.0, 0.0, 1.0]) / (e + 2))
    batched = next_token_probs(torch.randn(3, 5, 7), 0.5, top_k=3)
    assert batched.shape == (3, 5, 7) and ((batched > 0).sum(-1) == 3).all()


def test_kv_cache_stores_g_heads_per_layer_and_its_bytes_follow_the_formula():
    model = _model(num_kv_heads=2, dtype=torch.float32)
    cache = KVCache(2)
    with torch.no_grad():
        model(_tokens(3, 10), cache)
    assert list(cache.layers[0]) == ["k", "v"]  # what multi-head attention keeps
    assert cache.layers[0]["k"].shape == cache.layers[0]["v"].shape == (3, 2, 10, 4)  # (B, G, K, dh)
    assert cache.nbytes() == kv_cache_bytes(2, 2, 4, 10, bytes_per_value=4, batch_size=3)
    assert kv_cache_bytes(32, 8, 128, 4096) == 2 * 32 * 8 * 128 * 4096 * 2  # Llama 3 8B, float16, 4096 tokens


def test_kv_cache_update_refuses_what_would_corrupt_it_and_keeps_what_it_had():
    cache = KVCache(2)
    k = torch.randn(1, 2, 3, 4)
    kept_k, kept_v = cache.update(0, k=k, v=k.clone())  # returned in the order given
    assert torch.equal(kept_k, k) and torch.equal(kept_v, k)
    bad = [
        (0, {"k": [1.0], "v": k}, TypeError, r"k must be a torch\.Tensor, got list"),
        (0, {"k": k.long(), "v": k}, TypeError, r"k must be a floating-point tensor"),
        (0, {"k": k[0], "v": k[0]}, ValueError, r"k must have shape \(B, \., T, \.\), positions on axis 2 \(4-D\)"),
        (0, {"k": k, "v": k[:, :, :2]}, ValueError, r"k and v must share B and T \(axes 0 and 2\), got \(1, 2, 3, 4\)"),
        (0, {"k": k[:, :1], "v": k[:, :1]}, ValueError, r"k must have the B, axis 1 and axis 3 of the cached k"),
        (0, {"k": k.double(), "v": k.double()}, TypeError, r"k has dtype torch.float64 but the cached k"),
        (0, {"k": k, "v": k.double()}, TypeError, r"v has dtype torch.float64 but k has"),
        (0, {"k": k.clone().fill_(math.nan), "v": k}, ValueError, r"k must be finite, got NaN or infinity"),
        (0, {"latent": k}, ValueError, r"layer 0 of the cache keeps k, v, got latent"),
        (0, {}, ValueError, r"cache.update needs at least one tensor to keep, by name"),
        (2, {"k": k, "v": k}, ValueError, r"layer must be an integer in \[0, 1\], got 2"),
    ]
    for layer, tensors, error, match in bad:
        with pytest.raises(error, match=match):
            cache.update(layer, **tensors)
    assert cache.layers[0]["k"].shape == (1, 2, 3, 4) and torch.equal(cache.layers[0]["k"], k)  # untouched
    assert cache.layers[1] == {}
    both = cache.update(0, k=k, v=k)  # appended on the position axis
    assert [tuple(t.shape) for t in both] == [(1, 2, 6, 4)] * 2 and cache.nbytes() == 2 * 48 * 4


@pytest.mark.parametrize(("window", "sinks"), [(4, 0), (4, 1), (6, 2)])
def test_sliding_window_cache_equals_the_window_mask_and_keeps_window_keys(window, sinks):
    model, tokens = _model(), _tokens(2, 15)
    cache = KVCache(2)
    with torch.no_grad():
        stepwise = []
        for t in range(15):
            stepwise.append(model(tokens[:, t : t + 1], cache, window=window, sinks=sinks))
            assert len(cache) <= window - 1 + sinks
        assert_close(torch.cat(stepwise, 1), model(tokens, window=window, sinks=sinks), rtol=1e-10, atol=1e-10)
        assert not torch.allclose(model(tokens, window=window, sinks=sinks), model(tokens))
    assert cache.positions.tolist() == list(range(sinks)) + list(range(15 - window + 1, 15))


def test_window_mask_by_hand():
    mask = window_mask(torch.arange(5), torch.arange(5), window=2, sinks=1)
    expected = torch.tensor(
        [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 0, 1, 1, 0], [1, 0, 0, 1, 1]], dtype=torch.bool
    )
    assert torch.equal(mask, expected)
    assert torch.equal(window_mask(torch.arange(4), torch.arange(4)), torch.ones(4, 4).tril().bool())


def test_causal_attention_matches_pytorch():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    mask = window_mask(torch.arange(5), torch.arange(5))
    out, weights = causal_attention(q, k, v, mask)
    assert_close(out, nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert (weights.triu(1) == 0).all()


# ----------------------------------------------------------------------------------------------
# One attention interface: every kind, in any block, with and without the cache
# ----------------------------------------------------------------------------------------------

KINDS = {  # name: the DecoderOnlyLM options that choose it
    "MHA": {},
    "GQA": {"num_kv_heads": 2},
    "MQA": {"num_kv_heads": 1},
    "MLA": {"attention": "mla", "latent_dim": 8, "rope_dim": 4},
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("positional", ["rope", "learned"])
def test_every_attention_kind_generates_the_same_tokens_with_and_without_the_cache(kind, positional):
    model = _model(positional, **KINDS[kind])
    prompt = _tokens(2, 3, seed=7)
    for temperature, top_k in ((0, None), (1.0, 5)):
        runs = [
            generate(model, prompt, 10, temperature, top_k, use_cache=c, generator=torch.Generator().manual_seed(4))
            for c in (True, False)
        ]
        assert torch.equal(runs[0], runs[1])
    cache = KVCache(2)
    with torch.no_grad():
        model(prompt, cache)
    kept = ["latent", "rope_key"] if kind == "MLA" else ["k", "v"]  # the attention layer's choice, by name
    assert [list(layer) for layer in cache.layers] == [kept, kept]
    assert model.attention_kind == KINDS[kind].get("attention", "mha")


def test_causal_self_attention_is_multi_head_attention_with_a_causal_mask():
    torch.manual_seed(0)
    att = CausalSelfAttention(16, 4, num_kv_heads=2).double()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    assert_close(att(x), MultiHeadAttention.forward(att, x, x, x, mask=mask))  # the same projections W_q .. W_o
    assert att.attention_weights.shape == (2, 4, 6, 6) and att.head_outputs.shape == (2, 4, 6, 4)


class _Averaging(nn.Module):
    """The smallest layer with the interface of attn_course.causal: each head averages the values it may see (no
    scores). A block built on it shows that the block asks nothing else of its attention (sparse attention next)."""

    def __init__(self, num_hiddens, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.attention_weights = self.head_outputs = None

    def forward(self, x, positions=None, cache=None, *, layer=0, mask=None, bias=None, keep_heads=None):
        B, T, D = x.shape
        v = self.W_v(x).view(B, T, self.num_heads, -1).transpose(1, 2)  # (B, H, T, dh)
        if cache is not None:
            (v,) = cache.update(layer, v=v)  # (B, H, K, dh): this layer keeps values only
        weights = mask.to(x.dtype) / mask.sum(-1, keepdim=True)  # (T, K): even over the allowed keys
        out = weights @ v  # (T, K) x (B, H, K, dh) -> (B, H, T, dh)
        self.attention_weights, self.head_outputs = weights.expand(B, self.num_heads, -1, -1), out
        return self.W_o(out.transpose(1, 2).reshape(B, T, D))


def test_a_block_takes_any_attention_layer_with_the_interface():
    torch.manual_seed(0)
    block = DecoderOnlyBlock(_Averaging(8, 2), 8, 16).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    positions = torch.arange(5)
    mask = window_mask(positions, positions)  # (T, T) causal
    full = block(x, positions, mask)
    writes = block.head_writes()  # (B, H, T, D), read through the interface: head_outputs and W_o
    assert_close(writes.sum(dim=1), block.attention(block.norm1(x), positions, mask=mask))  # the sublayer's output
    cache, steps = KVCache(1), []
    for t in range(5):
        positions = torch.tensor([t])
        steps.append(
            block(x[:, t : t + 1], positions, window_mask(positions, cache.key_positions(positions)), cache=cache)
        )
        cache.advance(positions)
    assert_close(torch.cat(steps, dim=1), full)
    assert list(cache.layers[0]) == ["v"] and cache.layers[0]["v"].shape == (2, 2, 5, 4)


# ----------------------------------------------------------------------------------------------
# Grouped-query attention
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(4, 4), (4, 2), (4, 1), (6, 3)])
def test_gqa_agrees_with_pytorch_enable_gqa_on_the_layers_own_projections(num_heads, num_kv_heads):
    torch.manual_seed(0)
    layer = MultiHeadAttention(24, num_heads, num_kv_heads=num_kv_heads).double().eval()
    assert layer.W_k.out_features == layer.W_v.out_features == 24 // num_heads * num_kv_heads
    x = torch.randn(2, 7, 24, dtype=torch.float64)
    mask = torch.ones(7, 7).tril().bool()
    ours = layer(x, x, x, mask=mask)
    dh = 24 // num_heads
    q = layer.W_q(x).reshape(2, 7, num_heads, dh).transpose(1, 2)  # (B, H, T, dh)
    k = layer.W_k(x).reshape(2, 7, num_kv_heads, dh).transpose(1, 2)  # (B, G, T, dh)
    v = layer.W_v(x).reshape(2, 7, num_kv_heads, dh).transpose(1, 2)
    theirs = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    assert_close(ours, layer.W_o(theirs.transpose(1, 2).reshape(2, 7, 24)))
    assert layer.attention_weights.shape == (2, num_heads, 7, 7)


def test_gqa_with_g_equal_h_is_multi_head_attention_exactly():
    torch.manual_seed(0)
    a = MultiHeadAttention(8, 4)
    torch.manual_seed(0)
    b = MultiHeadAttention(8, 4, num_kv_heads=4)
    x = torch.randn(2, 5, 8)
    assert torch.equal(a(x, x, x), b(x, x, x))
    out, w = multi_head_attention(x, x, x, a.W_q, a.W_k, a.W_v, a.W_o, 4, num_kv_heads=4)
    assert torch.equal(out, a(x, x, x))


def test_repeat_kv_heads_by_hand():
    kv = torch.arange(2.0).view(1, 2, 1, 1)  # (B, G, K, dh) with heads 0 and 1
    assert repeat_kv_heads(kv, 6).flatten().tolist() == [0, 0, 0, 1, 1, 1]  # query head h uses kv head h // 3
    assert torch.equal(repeat_kv_heads(kv, 2), kv)  # G = H: nothing to repeat


def test_gqa_cache_is_h_over_g_times_smaller():
    sizes = {}
    for g in (4, 2, 1):
        cache = KVCache(2)
        with torch.no_grad():
            _model(num_kv_heads=g)(_tokens(1, 12), cache)
        sizes[g] = cache.nbytes()
    assert sizes[4] == 2 * sizes[2] == 4 * sizes[1]


# ----------------------------------------------------------------------------------------------
# The repeat task, training and the head scores
# ----------------------------------------------------------------------------------------------


def test_repeat_task_repeats_its_first_half_after_bos():
    tokens = repeat_task(5, 6, 9, generator=torch.Generator().manual_seed(0))
    assert tokens.shape == (5, 13) and tokens.dtype == torch.long
    assert (tokens[:, 0] == BOS_TOKEN).all()
    assert torch.equal(tokens[:, 1:7], tokens[:, 7:])
    assert tokens[:, 1:].min() >= 1 and tokens.max() <= 8
    again = repeat_task(5, 6, 9, generator=torch.Generator().manual_seed(0))
    assert torch.equal(tokens, again)


def test_half_losses_match_a_loop_over_positions():
    model = _model()
    tokens = repeat_task(3, 4, 11, generator=torch.Generator().manual_seed(2))
    first, second = half_losses(model, tokens)
    with torch.no_grad():
        logp = torch.log_softmax(model(tokens), -1)
    losses = [[-float(logp[b, t - 1, tokens[b, t]]) for t in range(1, 9)] for b in range(3)]
    assert first == pytest.approx(sum(sum(r[:4]) for r in losses) / 12)
    assert second == pytest.approx(sum(sum(r[5:]) for r in losses) / 9)  # targets n + 2..2n: a_1 counts in neither


def test_head_scores_match_a_loop_over_positions():
    model = _model()
    tokens = repeat_task(2, 5, 11, generator=torch.Generator().manual_seed(2))
    scores = head_scores(model, tokens)
    w = model.attention_weights()
    for layer in range(2):
        for head in range(4):
            prev = sum(float(w[b, layer, head, t, t - 1]) for b in range(2) for t in range(1, 11)) / 20
            ind = sum(float(w[b, layer, head, 5 + i, i + 1]) for b in range(2) for i in range(1, 5)) / 8
            assert float(scores["previous"][layer, head]) == pytest.approx(prev)
            assert float(scores["induction"][layer, head]) == pytest.approx(ind)


def test_head_scores_with_ablation_equal_the_scores_of_the_ablated_pass():
    model = _model()
    tokens = repeat_task(2, 5, 11, generator=torch.Generator().manual_seed(2))
    base = head_scores(model, tokens)
    off = head_scores(model, tokens, ablate=[(0, 1)])
    assert_close(off["previous"][0], base["previous"][0])  # layer 0 reads nothing that the ablation changes
    assert not torch.allclose(off["induction"][1], base["induction"][1])  # layer 1 reads what head (0, 1) wrote
    with torch.no_grad():
        model(tokens, ablate=[(0, 1)])
    assert_close(
        off["induction"][1],
        model.attention_weights()[:, 1, :, 5 + torch.arange(1, 5), torch.arange(2, 6)].mean(dim=(0, -1)),
    )


def test_mean_ablation_replaces_a_head_by_its_mean_at_each_position():
    model = _model()
    tokens = repeat_task(4, 5, 11, generator=torch.Generator().manual_seed(6))
    # One sequence: its own mean is itself, so mean ablation changes nothing.
    assert half_losses(model, tokens[:1], [(1, 2)], "mean") == pytest.approx(half_losses(model, tokens[:1]))
    # By hand: the head's slice of W_o's input replaced by its mean over the sequences.
    with torch.no_grad():
        model(tokens)
        mean = model.blocks[1].attention.head_outputs[:, 2].mean(dim=0)  # (T, dh)
        w_o = model.blocks[1].attention.W_o
        original = w_o.weight.clone()
        w_o.weight[:, 8:12] = 0  # head 2 silenced ...
        bias = nn.functional.linear(mean, original[:, 8:12])  # (T, D) ... and its mean added back
        hook = w_o.register_forward_hook(lambda m, i, o: o + bias)
        want = half_losses(model, tokens)
        hook.remove()
        w_o.weight.copy_(original)
    assert half_losses(model, tokens, [(1, 2)], "mean") == pytest.approx(want)
    assert half_losses(model, tokens, [(1, 2)], "mean") != pytest.approx(half_losses(model, tokens, [(1, 2)]))
    with pytest.raises(ValueError, match="ablation must be one of"):
        half_losses(model, tokens, [(1, 2)], "random")
    with pytest.raises(ValueError, match="head in ablate"):
        half_losses(model, tokens, [(1, 4)], "mean")


def test_head_writes_sum_to_the_attention_sublayer_output():
    model = _model()
    tokens = repeat_task(2, 4, 11, generator=torch.Generator().manual_seed(3))
    block = model.blocks[1]
    captured = {}
    hook = block.attention.W_o.register_forward_hook(lambda m, i, o: captured.update(out=o))
    with torch.no_grad():
        model(tokens)
    hook.remove()
    assert_close(block.head_writes().sum(dim=1), captured["out"])


def test_copying_scores_by_hand():
    """The direct logit attribution of each head, computed with the final LayerNorm written out."""
    model = _model()
    tokens = repeat_task(3, 5, 11, generator=torch.Generator().manual_seed(4))
    scores = copying_scores(model, tokens)
    captured = {}
    hook = model.norm.register_forward_hook(lambda m, i, o: captured.update(x=i[0]))
    with torch.no_grad():
        model(tokens)
    hook.remove()
    x = captured["x"]
    torch.set_grad_enabled(False)
    for layer in range(2):
        writes = model.blocks[layer].head_writes()  # (B, H, T, D)
        for head in range(4):
            total = 0.0
            for b in range(3):
                for i in range(1, 5):
                    t = 5 + i
                    u = writes[b, head, t]
                    sigma = math.sqrt(float(x[b, t].var(unbiased=False)) + model.norm.eps)
                    logits = model.lm_head.weight @ ((u - u.mean()) * model.norm.weight / sigma)  # (C,)
                    total += float(logits[tokens[b, t + 1]] - logits.mean())
            assert float(scores[layer, head]) == pytest.approx(total / 12)
    torch.set_grad_enabled(True)
    assert scores.shape == (2, 4)


def test_copying_scores_of_heads_that_write_nothing_are_zero():
    torch.manual_seed(0)
    model = DecoderOnlyLM(11, 16, 4, 1, 40, positional="none").double().eval()
    tokens = repeat_task(3, 5, 11, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        model.lm_head.weight.copy_(torch.randn(11, 16, dtype=torch.float64))
        assert copying_scores(model, tokens).shape == (1, 4)
        block = model.blocks[0]
        block.attention.W_o.weight.zero_()
        assert_close(copying_scores(model, tokens), torch.zeros(1, 4, dtype=torch.float64))  # writes nothing: 0
    with pytest.raises(ValueError, match="2 n \\+ 1 >= 5"):
        copying_scores(model, tokens[:, :4])


def test_train_lm_is_deterministic_and_lowers_the_loss():
    runs = []
    for _ in range(2):
        model = _model(dtype=torch.float32, vocab=8, max_len=13)
        history = train_lm(
            model, 20, batch_size=8, half_len=(2, 6), lr=3e-3, generator=torch.Generator().manual_seed(0)
        )
        runs.append((history, model))
    assert isinstance(runs[0][0], LMHistory) and len(runs[0][0].first_half) == 20
    assert runs[0][0].second_half == runs[1][0].second_half
    for a, b in zip(runs[0][1].parameters(), runs[1][1].parameters(), strict=True):
        assert torch.equal(a, b)
    h = runs[0][0]
    assert sum(h.first_half[-5:]) < sum(h.first_half[:5])  # from log(8) towards log(7)
    assert not runs[0][1].training


def test_train_lm_foreach_option_gives_the_same_training():
    # foreach=True batches AdamW's update over the tensors; the default updates tensor by tensor on the CPU
    models = []
    for foreach in (None, True):
        torch.manual_seed(0)
        model = _model(dtype=torch.float32, vocab=8, max_len=13)
        train_lm(model, 10, batch_size=8, half_len=(2, 6), generator=torch.Generator().manual_seed(0), foreach=foreach)
        models.append(model)
    for a, b in zip(models[0].parameters(), models[1].parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------


def test_num_heads_not_a_multiple_of_num_kv_heads_is_a_clear_value_error():
    with pytest.raises(ValueError, match=r"num_heads = 4 must be a multiple of num_kv_heads = 3"):
        MultiHeadAttention(8, 4, num_kv_heads=3)
    with pytest.raises(ValueError, match=r"num_heads = 4 must be a multiple of num_kv_heads = 3"):
        DecoderOnlyLM(10, 8, 4, 1, 5, num_kv_heads=3)
    lin = nn.Linear(8, 8)
    x = torch.randn(1, 2, 8)
    with pytest.raises(ValueError, match=r"multiple of num_kv_heads = 3"):
        multi_head_attention(x, x, x, lin, lin, lin, lin, 4, num_kv_heads=3)
    with pytest.raises(TypeError, match=r"num_kv_heads must be an integer >= 1, got 2.0"):
        MultiHeadAttention(8, 4, num_kv_heads=2.0)
    with pytest.raises(ValueError, match=r"num_kv_heads must be an integer >= 1, got 0"):
        MultiHeadAttention(8, 4, num_kv_heads=0)


def test_projections_of_the_wrong_kv_size_are_named():
    x = torch.randn(1, 2, 8)
    lin, small = nn.Linear(8, 8), nn.Linear(8, 2)
    with pytest.raises(ValueError, match=r"W_k and W_v must give num_kv_heads \* dh = 2 \* 2 features"):
        multi_head_attention(x, x, x, lin, small, small, lin, 4, num_kv_heads=2)


def test_repeat_kv_heads_errors():
    with pytest.raises(ValueError, match=r"x must have shape \(B, G, K, dh\)"):
        repeat_kv_heads(torch.zeros(2, 3, 4), 6)
    with pytest.raises(ValueError, match=r"num_heads = 4 must be a multiple of num_kv_heads = 3"):
        repeat_kv_heads(torch.zeros(1, 3, 2, 2), 4)
    with pytest.raises(TypeError, match=r"x must be a floating-point tensor"):
        repeat_kv_heads(torch.zeros(1, 2, 2, 2, dtype=torch.long), 4)


def test_model_constructor_errors():
    with pytest.raises(
        ValueError,
        match=r"positional must be one of \['learned', 'sinusoidal', 'rope', 'alibi', 'none'\], got 'absolute'",
    ):
        DecoderOnlyLM(10, 8, 2, 1, 5, positional="absolute")
    with pytest.raises(ValueError, match=r"num_hiddens = 10 must be divisible by num_heads = 4"):
        DecoderOnlyLM(10, 10, 4, 1, 5)
    with pytest.raises(ValueError, match=r"positional='rope' needs an even head size, got num_hiddens / num_heads = 3"):
        DecoderOnlyLM(10, 6, 2, 1, 5, positional="rope")
    with pytest.raises(TypeError, match=r"vocab_size must be an integer >= 1, got '10'"):
        DecoderOnlyLM("10", 8, 2, 1, 5)
    with pytest.raises(ValueError, match=r"dropout must be a probability in \[0, 1\), got 1.5"):
        DecoderOnlyLM(10, 8, 2, 1, 5, dropout=1.5)


def test_forward_errors():
    model = _model(max_len=6)
    with pytest.raises(TypeError, match=r"tokens must be a \(B, T\) int64 tensor of token ids, got torch.float32"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"tokens must hold token ids in \[0, 11\), got values 0..11"):
        model(torch.tensor([[0, 11]]))
    with pytest.raises(ValueError, match=r"tokens must be a \(B, T\) int64 tensor of token ids, got shape \(3,\)"):
        model(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"tokens must hold at least one position, got shape \(1, 0\)"):
        model(torch.zeros(1, 0, dtype=torch.long))
    with pytest.raises(
        ValueError, match=r"positions up to 6 requested; a model with positional='learned' has max_len = 6"
    ):
        model(torch.zeros(1, 7, dtype=torch.long))
    with pytest.raises(TypeError, match=r"cache must be an attn_course.KVCache or None, got dict"):
        model(torch.zeros(1, 2, dtype=torch.long), {})
    with pytest.raises(ValueError, match=r"cache must have num_layers = 2, got 3"):
        model(torch.zeros(1, 2, dtype=torch.long), KVCache(3))
    with pytest.raises(ValueError, match=r"window must be an integer >= 1, got 0"):
        model(torch.zeros(1, 2, dtype=torch.long), window=0)
    with pytest.raises(ValueError, match=r"head in ablate must be an integer in \[0, 3\], got 4"):
        model(torch.zeros(1, 2, dtype=torch.long), ablate=[(0, 4)])
    with pytest.raises(TypeError, match=r"ablate must hold \(layer, head\) pairs, got 1"):
        model(torch.zeros(1, 2, dtype=torch.long), ablate=[1])
    with pytest.raises(RuntimeError, match=r"no attention weights yet"):
        _model().attention_weights()


def test_generate_errors():
    model, prompt = _model(max_len=6), _tokens(1, 3)
    with pytest.raises(TypeError, match=r"model must be a DecoderOnlyLM, got Linear"):
        generate(nn.Linear(2, 2), prompt, 2)
    with pytest.raises(ValueError, match=r"temperature must be a finite number >= 0, got -1.0"):
        generate(model, prompt, 2, temperature=-1.0)
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 11\], got 12"):
        generate(model, prompt, 2, top_k=12)
    with pytest.raises(TypeError, match=r"use_cache must be True or False, got 1"):
        generate(model, prompt, 2, use_cache=1)
    with pytest.raises(TypeError, match=r"generator must be a torch.Generator or None, got int"):
        generate(model, prompt, 2, generator=0)
    with pytest.raises(ValueError, match=r"max_new_tokens must be an integer >= 0, got -1"):
        generate(model, prompt, -1)
    with pytest.raises(ValueError, match=r"prompt must hold at least one token"):
        generate(model, torch.zeros(1, 0, dtype=torch.long), 2)
    with pytest.raises(ValueError, match=r"positions up to 6 requested"):
        generate(model, prompt, 5)


def test_next_token_probs_errors():
    with pytest.raises(TypeError, match=r"logits must be a floating-point tensor"):
        next_token_probs(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"logits must be finite, got NaN or infinity"):
        next_token_probs(torch.tensor([1.0, math.nan]))
    with pytest.raises(ValueError, match=r"temperature must be a finite number >= 0, got inf"):
        next_token_probs(torch.tensor([1.0, 2.0]), math.inf)
    with pytest.raises(ValueError, match=r"logits must hold at least one token's logit \(C >= 1\), got shape \(2, 0\)"):
        next_token_probs(torch.zeros(2, 0), 0)
    assert next_token_probs(torch.tensor([1e30, -1e30, 0.0]), 1e-3).tolist() == [1.0, 0.0, 0.0]  # no NaN
    assert next_token_probs(torch.tensor([3e38, -3e38]), 0.5).tolist() == [1.0, 0.0]  # 6e38 would overflow float32
    for dtype in (torch.float16, torch.bfloat16):
        low = next_token_probs(torch.tensor([1.0, 2.0, 3.0], dtype=dtype), 0.7, top_k=2)
        assert low.dtype == dtype and low[0] == 0 and abs(float(low.sum()) - 1) < 1e-2
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[1, 2\], got 3"):
        next_token_probs(torch.tensor([1.0, 2.0]), top_k=3)


def test_task_training_and_score_errors():
    with pytest.raises(ValueError, match=r"vocab_size must be an integer >= 2, got 1"):
        repeat_task(2, 3, 1)
    with pytest.raises(TypeError, match=r"generator must be a torch.Generator or None, got int"):
        repeat_task(2, 3, 5, generator=3)
    with pytest.raises(ValueError, match=r"half_len\[1\] must be an integer >= half_len\[0\] = 5, got 3"):
        train_lm(_model(), 2, half_len=(5, 3))
    with pytest.raises(TypeError, match=r"model must be a DecoderOnlyLM, got Linear"):
        train_lm(nn.Linear(2, 2), 2)
    with pytest.raises(ValueError, match=r"lr must be a finite number > 0, got 0.0"):
        train_lm(_model(), 2, lr=0.0)
    with pytest.raises(TypeError, match=r"foreach must be a bool or None, got str"):
        train_lm(_model(), 2, foreach="yes")
    with pytest.raises(ValueError, match=r"tokens must be repeat_task sequences of 2 n \+ 1 >= 5 positions"):
        half_losses(_model(), torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"tokens must be repeat_task sequences of 2 n \+ 1 >= 5 positions"):
        head_scores(_model(), torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"num_layers must be an integer >= 1, got 0"):
        KVCache(0)
    with pytest.raises(ValueError, match=r"length must be an integer >= 0, got -1"):
        kv_cache_bytes(1, 1, 1, -1)


def test_alibi_bias_for_any_positions_equals_the_square_bias_of_the_rotary_module():
    from attn_course.rotary import alibi_bias

    model = _model("alibi")
    got = model._alibi(torch.arange(6), torch.arange(6))
    assert_close(got, alibi_bias(4, 6, 6, dtype=torch.float64))
    assert_close(model._alibi(torch.arange(3, 6), torch.arange(6)), alibi_bias(4, 3, 6, dtype=torch.float64))


def test_head_scores_ablated_at_some_positions_only():
    model = _model()
    tokens = repeat_task(3, 5, 11, generator=torch.Generator().manual_seed(3))
    base = head_scores(model, tokens)
    # Every position: the same as the model's own ablate= (a different code path).
    assert_close(
        head_scores(model, tokens, [(0, 1)], positions=range(11))["induction"],
        head_scores(model, tokens, [(0, 1)])["induction"],
    )
    # By hand: head (0, 1)'s write into the residual stream taken back at positions 2 and 4 alone.
    w_o = model.blocks[0].attention.W_o
    rows = torch.tensor([2, 4])

    def take_back(module, inputs, output):
        head = inputs[0][:, rows, 4:8]  # (B, 2, dh): head 1's output at those positions
        output = output.clone()
        output[:, rows] -= head @ w_o.weight[:, 4:8].T
        return output

    hook = w_o.register_forward_hook(take_back)
    try:
        want = head_scores(model, tokens)
    finally:
        hook.remove()
    got = head_scores(model, tokens, [(0, 1)], positions=[2, 4])
    assert_close(got["induction"], want["induction"])
    assert not torch.allclose(got["induction"][1], base["induction"][1])
    # Mean ablation over one sequence changes nothing (its mean is itself), at any positions.
    one = head_scores(model, tokens[:1], [(0, 1)], ablation="mean", positions=[1, 2, 3])
    assert_close(one["induction"], head_scores(model, tokens[:1])["induction"])
    # Ablated in the repeated half only: the first half's queries see nothing changed.
    late = head_scores(model, tokens, [(0, 1)], ablation="mean", positions=range(6, 11))
    weights = model.attention_weights()[:, 1, :, :6, :6]
    with torch.no_grad():
        model(tokens)
    assert_close(weights, model.attention_weights()[:, 1, :, :6, :6])
    assert late["induction"].shape == (2, 4)


def test_head_scores_positions_errors():
    model = _model()
    tokens = repeat_task(1, 5, 11, generator=torch.Generator().manual_seed(3))
    with pytest.raises(ValueError, match=r"each of positions must be an integer in \[0, 10\], got 11"):
        head_scores(model, tokens, [(0, 1)], positions=[1, 11])
    with pytest.raises(TypeError, match="positions must be None or a list of positions, got str"):
        head_scores(model, tokens, [(0, 1)], positions="first")
    with pytest.raises(ValueError, match="at least one position"):
        head_scores(model, tokens, [(0, 1)], positions=[])
    with pytest.raises(ValueError, match="ablation must be one of"):
        head_scores(model, tokens, [(0, 1)], ablation="random")


# ----------------------------------------------------------------------------------------------
# rope_scaling: RoPE's context extension, set at construction or after training
# ----------------------------------------------------------------------------------------------


def test_rope_scaling_none_is_the_default_and_changes_nothing():
    model = _model("rope")
    assert model.rope_scaling is None
    tokens = _tokens(2, 9)
    before = model(tokens)
    model.rope_scaling = None
    assert torch.equal(model(tokens), before)


@pytest.mark.parametrize("scaling", [("linear", 4.0), ("ntk", 4.0), ("yarn", 4.0, 8)])
def test_rope_scaling_rotates_queries_and_keys_with_the_scaled_frequencies(scaling):
    from attn_course import apply_rope, rope_attention_scale

    model = _model("rope")
    tokens = _tokens(2, 7)
    model.rope_scaling = scaling
    got = model(tokens)
    captured = {}
    block = model.blocks[0]

    def spy(module, inputs, output):
        captured["h"] = output

    hook = block.norm1.register_forward_hook(spy)
    model(tokens)
    hook.remove()
    h, att = captured["h"], block.attention  # (B, T, D)
    q = att.W_q(h).reshape(2, 7, 4, 4).transpose(1, 2)
    k = att.W_k(h).reshape(2, 7, 4, 4).transpose(1, 2)
    a = rope_attention_scale(scaling)
    positions = torch.arange(7)
    scores = (
        (apply_rope(q, positions, scaling=scaling) * a)
        @ (apply_rope(k, positions, scaling=scaling) * a).transpose(-2, -1)
        / 2.0
    )  # sqrt(dh) = 2
    weights = torch.softmax(scores.masked_fill(~torch.ones(7, 7, dtype=torch.bool).tril(), -math.inf), dim=-1)
    assert_close(block.attention.attention_weights, weights)
    assert not torch.allclose(got, _model("rope")(tokens))  # the scaling changes the output


def test_rope_scaling_in_the_constructor_equals_setting_it_later():
    tokens = _tokens(2, 9)
    built = _model("rope", rope_scaling=("yarn", 2.0, 5))
    later = _model("rope")
    later.rope_scaling = ("yarn", 2.0, 5)
    assert built.rope_scaling == ("yarn", 2.0, 5)
    assert torch.equal(built(tokens), later(tokens))


def test_rope_scaling_linear_by_s_equals_positions_divided_by_s():
    """With every frequency divided by 2, position 2p turns as position p did."""
    model = _model("rope")
    model.rope_scaling = ("linear", 2.0)
    x = torch.randn(1, 4, 3, 4, dtype=torch.float64)
    from attn_course import apply_rope

    assert_close(apply_rope(x, torch.tensor([0, 2, 4]), scaling=("linear", 2.0)), apply_rope(x, torch.arange(3)))


@pytest.mark.parametrize("positional", ["learned", "sinusoidal", "alibi", "none"])
def test_rope_scaling_is_refused_without_rope(positional):
    with pytest.raises(ValueError, match="rope_scaling is for positional='rope' with attention='mha'"):
        _model(positional, rope_scaling=("linear", 2.0))
    model = _model(positional)
    with pytest.raises(ValueError, match="rope_scaling is for positional='rope'"):
        model.rope_scaling = ("ntk", 2.0)
    model.rope_scaling = None  # always allowed


def test_rope_scaling_is_refused_with_latent_attention_and_checked_by_name():
    torch.manual_seed(0)
    mla = DecoderOnlyLM(11, 16, 4, 2, 40, positional="rope", attention="mla", latent_dim=8, rope_dim=4)
    with pytest.raises(ValueError, match="attention='mla'"):
        mla.rope_scaling = ("linear", 2.0)
    model = _model("rope")
    with pytest.raises(ValueError, match=r"scaling\[1\] \(the factor s\) must be"):
        model.rope_scaling = ("linear", 0.5)
    with pytest.raises(ValueError, match=r"scaling\[0\] must be one of"):
        model.rope_scaling = ("dynamic", 2.0)
    assert model.rope_scaling is None  # a refused scaling leaves the model as it was
