"""A decoder-only language model: causal self-attention in pre-norm blocks (notebook 09).

Notebook 08's decoder without the encoder and the cross-attention: a stack of blocks, each
``x + attention(LayerNorm(x))`` then ``x + FFN(LayerNorm(x))`` (pre-norm, as in GPT-2 and its successors), a final
LayerNorm and a linear layer to the vocabulary. Position ``t`` attends to positions ``0..t``; the logits at ``t``
predict token ``t + 1``.

Positions enter in one of five ways (``positional``): ``"learned"`` (a table of vectors added to the tokens),
``"sinusoidal"`` (notebook 06's encoding, added), ``"rope"`` (queries and keys rotated per head,
``attn_course.rotary.apply_rope``), ``"alibi"`` (a distance penalty added to the scores,
``attn_course.rotary.alibi_bias``) and ``"none"``.

Attention is multi-head (``attention="mha"``, ``attn_course.causal.CausalSelfAttention``, with ``num_kv_heads`` for
grouped-query attention) or multi-head latent attention (``attention="mla"``, ``attn_course.mla``): keys and values
made from one cached latent of size ``latent_dim`` per position, with a decoupled RoPE key of size ``rope_dim``. A block
calls either through the same interface (``attn_course.causal`` describes it) and never asks which one it holds.

Shapes: ``B`` batch, ``T`` positions fed in this call, ``K`` positions attended to (kept in a cache, then the
new ones), ``D`` model size, ``H`` query heads, ``G`` key/value heads, ``dh = D / H``, ``U`` FFN units,
``L`` layers, ``C`` vocabulary size.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_choice
from ._validate.models import (
    require_ablate,
    require_called,
    require_decoder_attention,
    require_decoder_input,
    require_decoder_sizes,
    require_model_scaling,
)
from .causal import CausalSelfAttention, window_mask
from .mla import MultiHeadLatentAttention
from .positional import positional_encoding
from .rotary import alibi_bias
from .transformer import PositionWiseFFN

__all__ = ["DecoderOnlyLM"]

POSITIONAL = ("learned", "sinusoidal", "rope", "alibi", "none")
ATTENTION_KINDS = ("mha", "mla")


class DecoderOnlyBlock(nn.Module):
    """``x + attention(LayerNorm(x))``, then ``x + FFN(LayerNorm(x))``: causal self-attention, pre-norm.

    Args:
        attention: a causal self-attention layer of size D with the interface of ``attn_course.causal`` (a
            ``CausalSelfAttention`` or a ``MultiHeadLatentAttention``): its last weights are in
            ``attention.attention_weights`` (B, H, T, K), its heads' outputs in ``attention.head_outputs``.
        num_hiddens: D. ffn_hiddens: U. dropout: on the two sublayers' outputs.
    """

    def __init__(self, attention: nn.Module, num_hiddens: int, ffn_hiddens: int, dropout: float = 0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(num_hiddens)
        self.attention = attention
        self.norm2 = nn.LayerNorm(num_hiddens)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_hiddens)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, positions, mask, bias=None, cache=None, layer=0, keep_heads=None):
        """x (B, T, D), positions (T,), mask (T, K), bias None or (H, T, K), keep_heads None or (H,) -> (B, T, D)."""
        h = self.attention(self.norm1(x), positions, cache, layer=layer, mask=mask, bias=bias, keep_heads=keep_heads)
        x = x + self.dropout(h)  # (B, T, D)
        return x + self.dropout(self.ffn(self.norm2(x)))  # (B, T, D)

    def head_writes(self) -> torch.Tensor:
        """What each head of the last pass added to the residual stream: ``W_o``'s columns of head h times the
        head's output, (B, H, T, D); summed over the heads, the attention sublayer's output."""
        require_called(self.attention.head_outputs, "head outputs")
        out = self.attention.head_outputs  # (B, H, T, dh)
        H, dh = out.shape[1], out.shape[3]
        W_o = self.attention.W_o.weight.detach().view(-1, H, dh)  # (D, H * dh) -> (D, H, dh)
        return torch.einsum("bhtd,ehd->bhte", out, W_o)  # (B, H, T, D)


class DecoderOnlyLM(nn.Module):
    """A decoder-only language model: ``model(tokens (B, T)) -> logits (B, T, C)``; logits at ``t`` predict ``t + 1``.

    Args:
        vocab_size: C. num_hiddens: D, divisible by ``num_heads``. num_heads: H. num_layers: L.
        max_len: the longest sequence (positions ``0..max_len - 1``) for ``"learned"`` and ``"sinusoidal"``.
        num_kv_heads: G key/value heads (None: G = H); H must be a multiple of G.
        positional: one of ``POSITIONAL``. ffn_hiddens: U (default 4 D). dropout: on the sublayers' outputs.
        attention: the kind of attention, one of ``ATTENTION_KINDS`` (kept as ``attention_kind``): ``"mha"``
            (multi-head, or grouped-query with ``num_kv_heads``; ``attn_course.causal``) or ``"mla"`` (multi-head
            latent attention, ``attn_course.mla``), which needs ``latent_dim`` (d_c) and takes ``rope_dim`` (d_R, even;
            > 0 for ``positional="rope"``, which then rotates the decoupled part only).
        rope_scaling: None, or a context-extension scaling of RoPE's frequencies for ``positional="rope"`` with
            ``attention="mha"`` (``attn_course.extrapolation.rope_frequencies``: ``("linear", s)``, ``("ntk", s)`` or
            ``("yarn", s, original_len)``, or ``("parts", s, ramp, attention)``, any ramp with any factor; YaRN and
            ``"parts"`` also multiply the queries and keys by ``rope_attention_scale``).
            An attribute too: set ``model.rope_scaling`` after training to evaluate a trained model with it.

    ``forward(tokens, cache=None, window=None, sinks=0, ablate=())``: with a :class:`KVCache`, ``tokens`` continue
    the sequence the cache holds. ``window`` limits each query to the ``window`` most recent positions plus the
    first ``sinks`` (the attention a sliding-window cache gives). ``ablate``: (layer, head) pairs whose output is
    set to 0.
    """

    def __init__(
        self,
        vocab_size: int,
        num_hiddens: int,
        num_heads: int,
        num_layers: int,
        max_len: int,
        *,
        num_kv_heads: int | None = None,
        positional: str = "learned",
        ffn_hiddens: int | None = None,
        dropout: float = 0.0,
        attention: str = "mha",
        latent_dim: int | None = None,
        rope_dim: int = 0,
        rope_scaling=None,
    ):
        super().__init__()
        require_decoder_sizes(
            vocab_size, num_hiddens, num_heads, num_layers, max_len, num_kv_heads, ffn_hiddens, dropout
        )
        require_choice(positional, "positional", POSITIONAL)
        require_choice(attention, "attention", ATTENTION_KINDS)
        require_decoder_attention(attention, positional, latent_dim, rope_dim, num_kv_heads, num_hiddens // num_heads)
        self.vocab_size, self.max_len, self.positional = vocab_size, max_len, positional
        self.attention_kind = attention
        ffn_hiddens = 4 * num_hiddens if ffn_hiddens is None else ffn_hiddens  # U
        self.num_heads = num_heads
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        if positional == "learned":
            self.pos_embedding = nn.Embedding(max_len, num_hiddens)
        elif positional == "sinusoidal":
            self.register_buffer("pos_encoding", positional_encoding(max_len, num_hiddens), persistent=False)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            DecoderOnlyBlock(
                self._attention_layer(num_hiddens, num_kv_heads, latent_dim, rope_dim),
                num_hiddens,
                ffn_hiddens,
                dropout,
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(num_hiddens)
        self.lm_head = nn.Linear(num_hiddens, vocab_size)  # to the logits (nanoGPT's name: not an attention head)
        self.rope_scaling = rope_scaling

    def _attention_layer(self, num_hiddens, num_kv_heads, latent_dim, rope_dim) -> nn.Module:
        """One block's causal self-attention, of the kind ``attention_kind``: the one place the kinds differ."""
        if self.attention_kind == "mla":  # RoPE, if any, on its decoupled part of size rope_dim
            return MultiHeadLatentAttention(num_hiddens, self.num_heads, latent_dim, rope_dim=rope_dim)
        return CausalSelfAttention(num_hiddens, self.num_heads, num_kv_heads, rope=self.positional == "rope")

    @property
    def rope_scaling(self):
        """None or RoPE's context-extension scaling (see the class docstring); setting it checks it."""
        return self._rope_scaling

    @rope_scaling.setter
    def rope_scaling(self, scaling) -> None:
        self._rope_scaling = require_model_scaling(scaling, self.positional, self.attention_kind)
        if self.attention_kind == "mha":  # the only kind that rotates with a scaling (the check refuses the others)
            for block in self.blocks:
                block.attention.rope_scaling = self._rope_scaling

    def _alibi(self, positions: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        """ALiBi's bias (H, T, K) for any query and key positions: the bias at distance 1, times the distance."""
        dtype = self.lm_head.weight.dtype
        per_step = alibi_bias(self.num_heads, 2, 2, device=positions.device, dtype=dtype)[:, 1, 0]  # (H,): -m_h
        distance = (positions.unsqueeze(1) - k_pos.unsqueeze(0)).clamp(min=0)  # (T, K); later keys are masked
        return per_step.view(-1, 1, 1) * distance.to(per_step.dtype)  # (H, 1, 1) * (T, K) -> (H, T, K)

    def forward(self, tokens, cache=None, *, window=None, sinks=0, ablate=()):
        require_decoder_input(self, tokens, cache, window, sinks)
        start = 0 if cache is None else cache.next_position
        positions = torch.arange(start, start + tokens.shape[1], device=tokens.device)  # (T,)
        keep = self._kept_heads(ablate, tokens.device)
        k_pos = positions if cache is None else cache.key_positions(positions)  # (K,)
        mask = window_mask(positions, k_pos, window, sinks)  # (T, K)
        bias = self._alibi(positions, k_pos) if self.positional == "alibi" else None
        x = self.embedding(tokens)  # (B, T) -> (B, T, D)
        if self.positional == "learned":
            x = x + self.pos_embedding(positions)  # + (T, D)
        elif self.positional == "sinusoidal":
            x = x + self.pos_encoding[positions]  # + (T, D)
        x = self.drop(x)
        for layer, block in enumerate(self.blocks):
            x = block(x, positions, mask, bias, cache, layer, keep[layer])
        if cache is not None:
            cache.advance(positions, window, sinks)
        return self.lm_head(self.norm(x))  # (B, T, D) -> (B, T, C)

    def _kept_heads(self, ablate, device) -> list[torch.Tensor | None]:
        """Per layer, None (all heads) or (H,) with 0 at each ablated head."""
        keep: list[torch.Tensor | None] = [None] * len(self.blocks)
        for layer, head in require_ablate(ablate, len(self.blocks), self.num_heads):
            if keep[layer] is None:
                keep[layer] = torch.ones(self.num_heads, device=device)
            keep[layer][head] = 0.0
        return keep

    def attention_weights(self) -> torch.Tensor:
        """The last forward pass's weights, stacked over layers: (B, L, H, T, K)."""
        require_called(self.blocks[0].attention.attention_weights, "attention weights")
        return torch.stack([b.attention.attention_weights for b in self.blocks], dim=1)
