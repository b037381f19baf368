"""A decoder-only language model: causal self-attention in pre-norm blocks (notebook 09).

Notebook 08's decoder without the encoder and the cross-attention: a stack of blocks, each
``x + attention(LayerNorm(x))`` then ``x + FFN(LayerNorm(x))`` (pre-norm, as in GPT-2 and its successors), a final
LayerNorm and a linear layer to the vocabulary. Position ``t`` attends to positions ``0..t``; the logits at ``t``
predict token ``t + 1``.

Positions enter in one of five ways (``positional``): ``"learned"`` (a table of vectors added to the tokens),
``"sinusoidal"`` (notebook 06's encoding, added), ``"rope"`` (queries and keys rotated per head,
``attn_course.rotary.apply_rope``), ``"alibi"`` (a distance penalty added to the scores,
``attn_course.rotary.alibi_bias``) and ``"none"``.

Attention is multi-head (``attention="mha"``, with ``num_kv_heads`` for grouped-query attention) or multi-head latent
attention (``attention="mla"``, ``attn_course.mla``): keys and values made from one cached latent of size
``latent_dim`` per position, with a decoupled RoPE key of size ``rope_dim``.

Shapes: ``B`` batch, ``T`` positions fed in this call, ``K`` positions attended to (kept in a cache, then the
new ones), ``D`` model size, ``H`` query heads, ``G`` key/value heads, ``dh = D / H``, ``U`` FFN units,
``L`` layers, ``C`` vocabulary size.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import require_choice
from ._validate_models import (
    require_ablate,
    require_called,
    require_decoder_attention,
    require_decoder_input,
    require_decoder_sizes,
    require_model_scaling,
)
from .mla import MultiHeadLatentAttention
from .multihead import MultiHeadAttention, repeat_kv_heads
from .positional import positional_encoding
from .transformer import PositionWiseFFN

__all__ = ["POSITIONAL", "ATTENTION", "window_mask", "causal_attention", "DecoderOnlyBlock", "DecoderOnlyLM"]

POSITIONAL = ("learned", "sinusoidal", "rope", "alibi", "none")
ATTENTION = ("mha", "mla")


def window_mask(q_pos: torch.Tensor, k_pos: torch.Tensor, window: int | None = None, sinks: int = 0) -> torch.Tensor:
    """(Q, K) bool, ``True`` = may attend: key position ``j <= i``, the query's position, and, with a ``window``,
    ``i - j < window`` or ``j < sinks`` (the first ``sinks`` positions stay visible, as in StreamingLLM)."""
    distance = q_pos.unsqueeze(1) - k_pos.unsqueeze(0)  # (Q, 1) - (1, K) -> (Q, K): how far back each key is
    allowed = distance >= 0  # causal: never a later position
    if window is not None:
        allowed = allowed & ((distance < window) | (k_pos < sinks).unsqueeze(0))
    return allowed


def causal_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, bias: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(q k^T / sqrt(dh) + bias)`` over the allowed keys, times ``v``.

    Args:
        q: (B, H, T, dh); k, v: (B, H, K, dh). mask: (T, K) bool, ``True`` = may attend; every row allows at least
            one key (the query's own position). bias: None or (H, T, K), added to the scores (ALiBi).

    Returns:
        output (B, H, T, dh) and weights (B, H, T, K).
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, T, dh) x (B, H, dh, K) -> (B, H, T, K)
    if bias is not None:
        scores = scores + bias  # + (H, T, K), broadcast over the batch
    weights = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)  # (B, H, T, K); masked: exactly 0
    return weights @ v, weights  # (B, H, T, K) x (B, H, K, dh) -> (B, H, T, dh)


class DecoderOnlyBlock(nn.Module):
    """``x + attention(LayerNorm(x))``, then ``x + FFN(LayerNorm(x))``: causal self-attention, pre-norm.

    The projections are those of a ``MultiHeadAttention(num_hiddens, num_heads, num_kv_heads=G)`` (``W_q``,
    ``W_k``, ``W_v``, ``W_o``); the block splits them into heads itself, so that a cache can keep the keys and values
    (B, G, K, dh) and RoPE can rotate queries and keys. Keeps the last weights in ``.attention_weights`` (B, H, T, K)
    and the heads' outputs before ``W_o`` in ``.head_outputs`` (B, H, T, dh).

    With ``latent_dim`` (an int), the attention is a ``MultiHeadLatentAttention(num_hiddens, num_heads, latent_dim,
    rope_dim=rope_dim)`` instead, which applies RoPE to its decoupled part itself.
    """

    def __init__(
        self,
        num_hiddens,
        num_heads,
        ffn_hiddens,
        num_kv_heads=None,
        dropout=0.0,
        positional="learned",
        latent_dim=None,
        rope_dim=0,
    ):
        super().__init__()
        self.norm1 = nn.LayerNorm(num_hiddens)
        if latent_dim is None:
            self.attention = MultiHeadAttention(num_hiddens, num_heads, num_kv_heads=num_kv_heads)
        else:
            self.attention = MultiHeadLatentAttention(num_hiddens, num_heads, latent_dim, rope_dim=rope_dim)
        self.norm2 = nn.LayerNorm(num_hiddens)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_hiddens)
        self.dropout = nn.Dropout(dropout)
        self.positional = positional
        self.rope_scaling = None  # a context-extension scaling of RoPE (DecoderOnlyLM.rope_scaling sets it)
        self.attention_weights: torch.Tensor | None = None
        self.head_outputs: torch.Tensor | None = None

    def forward(self, x, positions, mask, bias=None, cache=None, layer=0, keep_heads=None):
        """x (B, T, D), positions (T,), mask (T, K), bias None or (H, T, K), keep_heads None or (H,) -> (B, T, D)."""
        if isinstance(self.attention, MultiHeadLatentAttention):
            att = self.attention
            h = att(self.norm1(x), positions, cache, layer=layer, mask=mask, bias=bias, keep_heads=keep_heads)
            self.attention_weights, self.head_outputs = att.attention_weights, att.head_outputs
            x = x + self.dropout(h)  # (B, T, D)
            return x + self.dropout(self.ffn(self.norm2(x)))
        att, (B, T, D) = self.attention, x.shape
        H, G = att.num_heads, att.num_kv_heads
        h = self.norm1(x)
        q = att.W_q(h).reshape(B, T, H, D // H).transpose(1, 2)  # (B, T, H * dh) -> (B, H, T, dh)
        k = att.W_k(h).reshape(B, T, G, D // H).transpose(1, 2)  # (B, T, G * dh) -> (B, G, T, dh)
        v = att.W_v(h).reshape(B, T, G, D // H).transpose(1, 2)  # (B, G, T, dh)
        if self.positional == "rope":
            from .rotary import apply_rope

            if self.rope_scaling is None:
                q, k = apply_rope(q, positions), apply_rope(k, positions)  # rotate by each position's angle
            else:
                from .rotary import rope_attention_scale

                scale = rope_attention_scale(self.rope_scaling)  # YaRN's 0.1 ln s + 1 on q and k, 1 otherwise
                q = apply_rope(q, positions, scaling=self.rope_scaling) * scale  # (B, H, T, dh)
                k = apply_rope(k, positions, scaling=self.rope_scaling) * scale  # (B, G, T, dh)
        if cache is not None:
            k, v = cache.update(layer, k, v)  # (B, G, K, dh): the kept positions, then the new ones
        out, weights = causal_attention(q, repeat_kv_heads(k, H), repeat_kv_heads(v, H), mask, bias)  # (B, H, T, dh)
        self.attention_weights = weights.detach()
        if keep_heads is not None:
            out = out * keep_heads.view(1, H, 1, 1)  # 0 silences a head (ablation)
        self.head_outputs = out.detach()
        x = x + self.dropout(att.W_o(out.transpose(1, 2).reshape(B, T, D)))  # (B, H, T, dh) -> (B, T, D)
        return x + self.dropout(self.ffn(self.norm2(x)))  # (B, T, D)

    def head_writes(self) -> torch.Tensor:
        """What each head of the last pass added to the residual stream: ``W_o``'s columns of head h times the
        head's output, (B, H, T, D); summed over the heads, the attention sublayer's output."""
        require_called(self.head_outputs, "head outputs")
        out = self.head_outputs  # (B, H, T, dh)
        att = self.attention
        W_o = (att.W_O if isinstance(att, MultiHeadLatentAttention) else att.W_o).weight  # (D, H * dh)
        H, dh = out.shape[1], out.shape[3]
        return torch.einsum("bhtd,ehd->bhte", out, W_o.detach().view(-1, H, dh))  # (B, H, T, D)


class DecoderOnlyLM(nn.Module):
    """A decoder-only language model: ``model(tokens (B, T)) -> logits (B, T, C)``; logits at ``t`` predict ``t + 1``.

    Args:
        vocab_size: C. num_hiddens: D, divisible by ``num_heads``. num_heads: H. num_layers: L.
        max_len: the longest sequence (positions ``0..max_len - 1``) for ``"learned"`` and ``"sinusoidal"``.
        num_kv_heads: G key/value heads (None: G = H); H must be a multiple of G.
        positional: one of ``POSITIONAL``. ffn_hiddens: U (default 4 D). dropout: on the sublayers' outputs.
        attention: ``"mha"`` (multi-head, or grouped-query with ``num_kv_heads``) or ``"mla"`` (multi-head latent
            attention, ``attn_course.mla``), which needs ``latent_dim`` (d_c) and takes ``rope_dim`` (d_R, even;
            > 0 for ``positional="rope"``, which then rotates the decoupled part only).
        rope_scaling: None, or a context-extension scaling of RoPE's frequencies for ``positional="rope"`` with
            ``attention="mha"`` (``attn_course.rotary.rope_frequencies``: ``("linear", s)``, ``("ntk", s)`` or
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
        require_choice(attention, "attention", ATTENTION)
        require_decoder_attention(attention, positional, latent_dim, rope_dim, num_kv_heads, num_hiddens // num_heads)
        self.vocab_size, self.max_len, self.positional, self.attention = vocab_size, max_len, positional, attention
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
                num_hiddens, num_heads, ffn_hiddens, num_kv_heads, dropout, positional, latent_dim, rope_dim
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(num_hiddens)
        self.head = nn.Linear(num_hiddens, vocab_size)
        self.rope_scaling = rope_scaling

    @property
    def rope_scaling(self):
        """None or RoPE's context-extension scaling (see the class docstring); setting it checks it."""
        return self.blocks[0].rope_scaling

    @rope_scaling.setter
    def rope_scaling(self, scaling) -> None:
        scaling = require_model_scaling(scaling, self.positional, self.attention)
        for block in self.blocks:
            block.rope_scaling = scaling

    def _alibi(self, positions: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
        """ALiBi's bias (H, T, K) for any query and key positions: the bias at distance 1, times the distance."""
        from .rotary import alibi_bias

        dtype = self.head.weight.dtype
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
        return self.head(self.norm(x))  # (B, T, D) -> (B, T, C)

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
        require_called(self.blocks[0].attention_weights, "attention weights")
        return torch.stack([b.attention_weights for b in self.blocks], dim=1)
