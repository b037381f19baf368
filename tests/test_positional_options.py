"""The position schemes of notebook 11's experiment, as options of the decoder-only model: each one trains."""

import pytest
import torch
from torch import nn

from attn_course import DecoderOnlyLM, alibi_bias, apply_rope, repeat_task

OPTIONS = ["none", "learned", "sinusoidal", "rope", "alibi"]


def _loss(model, tokens):
    logits = model(tokens)  # (B, T, C)
    return nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


@pytest.mark.parametrize("positional", OPTIONS)
def test_every_positional_option_trains_a_few_steps_and_lowers_the_loss(positional):
    torch.manual_seed(0)
    model = DecoderOnlyLM(8, 16, 2, 2, 16, positional=positional)
    tokens = repeat_task(16, 5, 8, generator=torch.Generator().manual_seed(0))  # (16, 11)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with torch.no_grad():
        before = _loss(model, tokens).item()
    for _ in range(15):
        loss = _loss(model, tokens)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        after = _loss(model, tokens).item()
    assert after < 0.8 * before, f"{positional}: loss {before:.3f} -> {after:.3f}"


@pytest.mark.parametrize("positional", ["none", "rope", "alibi"])
def test_schemes_without_an_embedding_table_have_no_position_parameters(positional):
    """RoPE, ALiBi and no positions add no parameter: the same count as each other, fewer than learned positions."""
    counts = {
        p: sum(t.numel() for t in DecoderOnlyLM(8, 16, 2, 1, 16, positional=p).parameters())
        for p in ("none", positional, "learned")
    }
    assert counts[positional] == counts["none"]
    assert counts["learned"] == counts["none"] + 16 * 16  # max_len x D


def test_rope_and_alibi_models_see_no_absolute_position_in_the_first_layer_scores():
    """With RoPE or ALiBi, shifting every position by the same amount leaves the scores unchanged; the model's
    building blocks, apply_rope and alibi_bias, show it directly."""
    gen = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 2, 6, 8, generator=gen, dtype=torch.float64)  # (H, T, dh) each
    positions = torch.arange(6)
    scores = apply_rope(q, positions) @ apply_rope(k, positions).mT  # (H, T, T)
    shifted = apply_rope(q, positions + 50) @ apply_rope(k, positions + 50).mT
    torch.testing.assert_close(scores, shifted)
    torch.testing.assert_close(alibi_bias(2, 6, 6), alibi_bias(2, 6, 56)[:, :, 50:])
