"""No tensor is created on the CPU behind the caller's back: the functions and models run on the ``meta`` device.

A ``meta`` tensor has a shape, a dtype and a device but no data, so any operation that mixes it with a tensor
made on the CPU fails. Running the course's functions and models there shows that every tensor they make follows
the inputs' device (on a machine with a GPU the same holds there).
"""

import torch

from attn_course import (
    AdditiveAttention,
    DotProductAttention,
    MultiHeadAttention,
    TransformerSeq2Seq,
    causal_mask,
    masked_softmax,
    multi_head_attention,
    scaled_dot_product_attention,
    sequence_mask,
)

META = torch.device("meta")


def _qkv(b=2, q=3, k=5, d=8):
    return tuple(torch.empty(b, n, d, device=META) for n in (q, k, k))


def test_masks_follow_the_device_they_are_given():
    assert causal_mask(3, 5, device=META).device == META
    assert sequence_mask(torch.tensor([1, 2], device=META), 4).device == META
    assert causal_mask(3).device == torch.get_default_device()


def test_attention_functions_run_on_the_meta_device():
    q, k, v = _qkv()
    lens = torch.tensor([5, 2], device=META)
    mask = causal_mask(3, 5, device=META)
    out, weights = scaled_dot_product_attention(q, k, v, lens, mask)
    assert (out.device, out.shape, weights.shape) == (META, (2, 3, 8), (2, 3, 5))
    assert masked_softmax(q @ k.transpose(1, 2), lens, mask).device == META
    proj = torch.nn.Linear(8, 8, bias=False).to(META)
    out, weights = multi_head_attention(q, k, v, proj, proj, proj, proj, 2, valid_lens=lens, mask=mask)
    assert (out.device, weights.shape) == (META, (2, 2, 3, 5))


def test_attention_layers_run_on_the_meta_device():
    q, k, v = _qkv()
    lens = torch.tensor([5, 2], device=META)
    assert DotProductAttention()(q, k, v, lens).device == META
    assert AdditiveAttention(8, 8, 4).to(META)(q, k, v, lens).device == META
    layer = MultiHeadAttention(8, 2).to(META)
    assert layer(q, k, v, lens, causal_mask(3, 5, device=META)).device == META
    assert layer.attention_weights.device == META


def test_the_transformer_trains_and_decodes_on_the_meta_device():
    model = TransformerSeq2Seq(num_hiddens=8, num_heads=2, num_layers=1, ffn_hiddens=16, max_len=8).to(META)
    src = torch.empty(2, 4, dtype=torch.long, device=META)
    src_len = torch.empty(2, dtype=torch.long, device=META)
    tgt_in = torch.empty(2, 3, dtype=torch.long, device=META)
    logits = model(src, src_len, tgt_in)
    assert (logits.device, logits.shape[:2]) == (META, (2, 3))
    logits.sum().backward()  # the backward pass too
    tokens, weights = model.greedy(src, src_len, max_len=3)
    assert tokens.device == META and all(w.device == META for w in weights.values())
