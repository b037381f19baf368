"""Causal self-attention: the multi-head attention of a decoder-only model, with RoPE and a KV cache (notebook 09).

Each position attends to itself and the positions before it. ``causal_attention`` is the formula on heads that are
already split; ``CausalSelfAttention`` is the layer: notebook 06's ``MultiHeadAttention`` projections (``W_q``,
``W_k``, ``W_v``, ``W_o``; with ``num_kv_heads`` = G < H, grouped-query attention), applied to one sequence, with the
heads kept apart so that RoPE can rotate queries and keys and a cache can keep the keys and values (B, G, K, dh).

Every attention layer of ``DecoderOnlyLM`` (this one, ``attn_course.mla.MultiHeadLatentAttention``) is called the
same way, so that a block never asks which kind it holds::

    layer(x (B, T, D), positions (T,), cache=None, *, layer=0, mask=(T, K), bias=None, keep_heads=None) -> (B, T, D)

and keeps the last pass's weights in ``.attention_weights`` (B, H, T, K) and the heads' outputs in ``.head_outputs``
(B, H, T, dh), before its output projection ``W_o`` (B, T, H * dh) -> (B, T, D). What it keeps in the cache (keys
and values here, a latent in MLA) is its own business: it calls ``cache.update(layer, name=tensor, ...)``.

Shapes: ``B`` batch, ``T`` positions fed in this call, ``K`` positions attended to (kept in a cache, then the new
ones), ``D`` model size, ``H`` query heads, ``G`` key/value heads, ``dh = D / H``.
"""

from __future__ import annotations

import math

import torch

from ._validate import require_bool
from ._validate.models import require_self_attention_input
from .extrapolation import rope_attention_scale
from .multihead import MultiHeadAttention, repeat_kv_heads
from .rotary import apply_rope

__all__ = ["window_mask", "causal_attention", "CausalSelfAttention"]


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


class CausalSelfAttention(MultiHeadAttention):
    """Causal multi-head (or grouped-query) self-attention: ``(B, T, D) -> (B, T, D)``, caching keys and values.

    Args:
        num_hiddens: D, divisible by ``num_heads``. num_heads: H.
        num_kv_heads: G key/value heads (None: G = H); H must be a multiple of G.
        rope: rotate queries and keys by their positions (``attn_course.rotary.apply_rope``); dh must be even.

    ``rope_scaling``: None, or a context-extension scaling of RoPE's frequencies (``rope_frequencies``); YaRN and
    ``"parts"`` also multiply the queries and keys by ``rope_attention_scale``. ``DecoderOnlyLM.rope_scaling`` sets it.

    ``forward(x, positions=None, cache=None, *, layer=0, mask=None, bias=None, keep_heads=None)``:

    - ``positions`` (T,): the positions of ``x``'s rows (default: the next ones after the cache's, else 0..T-1).
    - ``cache``: a :class:`~attn_course.kvcache.KVCache`; slot ``layer`` gets the new keys and values (names ``k``
      and ``v``, (B, G, T, dh)) and the attention reads all of them (the caller advances the cache).
    - ``mask`` (T, K) bool, True = may attend (default causal); ``bias`` None or (H, T, K) added to the scores;
      ``keep_heads`` None or (H,), multiplies each head's output (0 switches a head off).

    Keeps the last weights in ``.attention_weights`` (B, H, T, K) and the heads' outputs in ``.head_outputs``
    (B, H, T, dh), before ``W_o``.
    """

    def __init__(self, num_hiddens: int, num_heads: int, num_kv_heads: int | None = None, *, rope: bool = False):
        super().__init__(num_hiddens, num_heads, num_kv_heads=num_kv_heads)
        self.rope = require_bool(rope, "rope")
        self.rope_scaling = None  # a context-extension scaling of RoPE's frequencies, or None
        self.head_outputs: torch.Tensor | None = None

    def forward(self, x, positions=None, cache=None, *, layer=0, mask=None, bias=None, keep_heads=None):
        positions, mask = require_self_attention_input(
            x, self.W_q.weight, self.num_heads, positions, cache, mask, bias, keep_heads
        )
        (B, T, D), H, G = x.shape, self.num_heads, self.num_kv_heads
        q = self.W_q(x).reshape(B, T, H, D // H).transpose(1, 2)  # (B, T, H * dh) -> (B, H, T, dh)
        k = self.W_k(x).reshape(B, T, G, D // H).transpose(1, 2)  # (B, T, G * dh) -> (B, G, T, dh)
        v = self.W_v(x).reshape(B, T, G, D // H).transpose(1, 2)  # (B, G, T, dh)
        if self.rope:
            q, k = self._rotate(q, positions), self._rotate(k, positions)  # by each position's angle
        if cache is not None:
            k, v = cache.update(layer, k=k, v=v)  # (B, G, K, dh): the kept positions, then the new ones
        out, weights = causal_attention(q, repeat_kv_heads(k, H), repeat_kv_heads(v, H), mask, bias)  # (B, H, T, dh)
        if keep_heads is not None:
            out = out * keep_heads.view(1, H, 1, 1)  # 0 silences a head (ablation)
        self.attention_weights, self.head_outputs = weights.detach(), out.detach()
        return self.W_o(out.transpose(1, 2).reshape(B, T, D))  # (B, H, T, dh) -> (B, T, H * dh) -> (B, T, D)

    def _rotate(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """RoPE on queries or keys (B, ., T, dh), with ``rope_scaling``'s frequencies and attention factor."""
        if self.rope_scaling is None:
            return apply_rope(x, positions)
        return apply_rope(x, positions, scaling=self.rope_scaling) * rope_attention_scale(self.rope_scaling)
