"""Multi-head latent attention (MLA), DeepSeek-V2's answer to the size of the KV cache (notebook 09).

Every position's keys and values are made from one small *latent* vector, ``c_t = W_DKV h_t`` of size ``d_c``, that
all heads share; head ``h`` reads its key ``W_UK_h c_t`` and its value ``W_UV_h c_t`` from it. The cache keeps
``c_t`` alone, ``d_c`` numbers per position and layer, against ``2 G dh`` for multi-head or grouped-query attention.

RoPE cannot rotate ``W_UK_h c_t``: the rotation would sit between ``W_UK_h`` and the query, and ``W_UK_h`` could no
longer be folded into the query side (below). So a small extra key of size ``d_R``, ``k^R_t = RoPE(W_KR h_t)``,
shared by the heads, carries the position, and each head gets a matching query part ``q^R = RoPE(W_QR h_t)``
(decoupled RoPE). The cache keeps ``c_t`` and ``k^R_t``: ``d_c + d_R`` numbers per position and layer.

*Weight absorption.* ``q_h . (W_UK_h c_j) = (W_UK_h^T q_h) . c_j``: turn each query into the latent space once and
score it against the cached latents directly, never building the keys. Likewise ``W_o`` of the heads' outputs
``W_UV_h (sum_j a_hj c_j)`` folds ``W_UV_h`` into ``W_o``. ``forward(..., absorbed=True)`` computes this way; it
gives the same output as the plain way to float rounding.

Names as in DeepSeek-V2 (2024): ``W_DKV`` (down-projection to the latent), ``W_UK``, ``W_UV`` (up-projections per
head), ``W_Q`` (queries; the paper also compresses them, ``W_DQ`` / ``W_UQ``, which saves training memory, not
cache), ``W_QR`` and ``W_KR`` (the decoupled RoPE parts); the paper's ``W^O`` is ``W_o``, the name of the output
projection in every attention layer of the course (``attn_course.causal`` describes the interface they share).

Shapes: ``B`` batch, ``T`` positions fed in this call, ``K`` positions attended to (cached, then new), ``D`` model
size, ``H`` heads, ``dh`` head size, ``d_c`` latent size, ``d_R`` RoPE part size.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate.models import require_latent_sizes, require_self_attention_input
from .rotary import apply_rope

__all__ = ["MultiHeadLatentAttention"]


class MultiHeadLatentAttention(nn.Module):
    """Causal multi-head latent attention: ``(B, T, D) -> (B, T, D)``, caching ``d_c + d_R`` numbers per position.

    Args:
        num_hiddens: D. num_heads: H. latent_dim: d_c, the size of the shared latent ``c_t``.
        rope_dim: d_R, the size of the decoupled RoPE key (0: no RoPE part; else even).
        head_dim: dh, the size of each head's query, key and value (default D / H).

    ``forward(x, positions=None, cache=None, absorbed=False, *, layer=0, mask=None, bias=None, keep_heads=None)``:

    - ``positions`` (T,): the positions of ``x``'s rows (default: the next ones after the cache's, else 0..T-1);
      they rotate the RoPE part.
    - ``cache``: a :class:`~attn_course.kvcache.KVCache`; slot ``layer`` gets the new latents and RoPE keys (names
      ``latent`` and ``rope_key``, (B, 1, T, d_c) and (B, 1, T, d_R)) and the attention reads all of them (the
      caller advances the cache, as ``DecoderOnlyLM`` does).
    - ``absorbed``: score queries against the latents (``W_UK`` folded into the query side, ``W_UV`` into ``W_o``)
      instead of building keys and values.
    - ``mask`` (T, K) bool, True = may attend (default causal); ``bias`` None or (H, T, K) added to the scores;
      ``keep_heads`` None or (H,), multiplies each head's output (0 switches a head off).

    Keeps the last weights in ``.attention_weights`` (B, H, T, K) and the heads' outputs in ``.head_outputs``
    (B, H, T, dh), before ``W_o``.
    """

    def __init__(self, num_hiddens: int, num_heads: int, latent_dim: int, *, rope_dim: int = 0, head_dim=None):
        super().__init__()
        self.head_dim = require_latent_sizes(num_hiddens, num_heads, latent_dim, rope_dim, head_dim)  # dh
        self.num_hiddens, self.num_heads, self.latent_dim, self.rope_dim = num_hiddens, num_heads, latent_dim, rope_dim
        inner = num_heads * self.head_dim
        self.W_DKV = nn.Linear(num_hiddens, latent_dim, bias=False)  # h_t -> c_t, the cached latent
        self.W_UK = nn.Linear(latent_dim, inner, bias=False)  # c_t -> the H keys
        self.W_UV = nn.Linear(latent_dim, inner, bias=False)  # c_t -> the H values
        self.W_Q = nn.Linear(num_hiddens, inner, bias=False)
        self.W_o = nn.Linear(inner, num_hiddens, bias=False)
        if rope_dim:
            self.W_QR = nn.Linear(num_hiddens, num_heads * rope_dim, bias=False)  # a RoPE query part per head
            self.W_KR = nn.Linear(num_hiddens, rope_dim, bias=False)  # one RoPE key, shared by the heads (cached)
        self.attention_weights: torch.Tensor | None = None
        self.head_outputs: torch.Tensor | None = None

    def numbers_cached_per_position(self) -> int:
        """d_c + d_R: the numbers one position adds to the cache of one layer."""
        return self.latent_dim + self.rope_dim

    def _heads(self, weight: torch.Tensor, size: int) -> torch.Tensor:
        """A (H * size, d_c) up-projection seen per head: (H, size, d_c)."""
        return weight.view(self.num_heads, size, self.latent_dim)

    def forward(self, x, positions=None, cache=None, absorbed=False, *, layer=0, mask=None, bias=None, keep_heads=None):
        positions, mask = require_self_attention_input(
            x, self.W_Q.weight, self.num_heads, positions, cache, mask, bias, keep_heads, absorbed
        )
        q, q_rope, latent, k_rope = self._project(x, positions)
        if cache is not None:
            latent, k_rope = cache.update(layer, latent=latent, rope_key=k_rope)  # (B, 1, K, d_c), (B, 1, K, d_R)
        scores = self._scores(q, q_rope, latent, k_rope, absorbed)  # (B, H, T, K)
        if bias is not None:
            scores = scores + bias  # + (H, T, K)
        weights = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)  # (B, H, T, K); masked: exactly 0
        self.attention_weights = weights.detach()
        if absorbed:
            return self._absorbed_output(weights, latent, keep_heads)
        return self._plain_output(weights, latent, keep_heads)

    def _project(self, x: torch.Tensor, positions: torch.Tensor):
        """The queries (B, H, T, dh), the RoPE query parts (B, H, T, d_R), the latents c_t (B, 1, T, d_c) and the
        shared RoPE keys (B, 1, T, d_R) of x (B, T, D); d_R = 0 gives empty RoPE parts."""
        (B, T, _), H, dh, dr = x.shape, self.num_heads, self.head_dim, self.rope_dim
        q = self.W_Q(x).view(B, T, H, dh).transpose(1, 2)  # (B, T, H * dh) -> (B, H, T, dh)
        latent = self.W_DKV(x).unsqueeze(1)  # (B, T, d_c) -> (B, 1, T, d_c): one latent for all heads
        if not dr:
            return q, q.new_zeros(B, H, T, 0), latent, x.new_zeros(B, 1, T, 0)
        q_rope = apply_rope(self.W_QR(x).view(B, T, H, dr).transpose(1, 2), positions)  # (B, H, T, d_R)
        k_rope = apply_rope(self.W_KR(x).unsqueeze(1), positions)  # (B, 1, T, d_R), shared by the heads
        return q, q_rope, latent, k_rope

    def _scores(self, q, q_rope, latent, k_rope, absorbed: bool) -> torch.Tensor:
        """``(q_h . W_UK_h c_j + q^R_h . k^R_j) / sqrt(dh + d_R)``: (B, H, T, K). Absorbed: ``W_UK_h^T q_h . c_j``."""
        (B, H, _, dh), K = q.shape, latent.shape[2]
        rope_scores = q_rope @ k_rope.transpose(-2, -1)  # (B, H, T, d_R) x (B, 1, d_R, K) -> (B, H, T, K)
        if absorbed:
            q_latent = torch.einsum(
                "bhtd,hdc->bhtc", q, self._heads(self.W_UK.weight, dh)
            )  # W_UK_h^T q_h: (B, H, T, d_c)
            scores = q_latent @ latent.transpose(-2, -1)  # (B, H, T, d_c) x (B, 1, d_c, K) -> (B, H, T, K)
        else:
            keys = self.W_UK(latent[:, 0]).view(B, K, H, dh).transpose(1, 2)  # W_UK_h c_j: (B, H, K, dh)
            scores = q @ keys.transpose(-2, -1)  # (B, H, T, dh) x (B, H, dh, K) -> (B, H, T, K)
        return (scores + rope_scores) / math.sqrt(dh + self.rope_dim)

    def _plain_output(self, weights, latent, keep_heads) -> torch.Tensor:
        """``W_o`` of the heads' ``sum_j a_hj W_UV_h c_j``: the values built, (B, H, T, K) -> (B, T, D)."""
        (B, H, T, K), dh = weights.shape, self.head_dim
        values = self.W_UV(latent[:, 0]).view(B, K, H, dh).transpose(1, 2)  # W_UV_h c_j: (B, H, K, dh)
        out = weights @ values  # (B, H, T, K) x (B, H, K, dh) -> (B, H, T, dh)
        if keep_heads is not None:
            out = out * keep_heads.view(1, H, 1, 1)  # 0 silences a head
        self.head_outputs = out.detach()
        return self.W_o(out.transpose(1, 2).reshape(B, T, H * dh))  # (B, H, T, dh) -> (B, T, H * dh) -> (B, T, D)

    def _absorbed_output(self, weights, latent, keep_heads) -> torch.Tensor:
        """The same with ``W_UV`` folded into ``W_o``: the latents weighted, then ``W_o_h W_UV_h``: (B, T, D)."""
        H, dh = self.num_heads, self.head_dim
        W_UV = self._heads(self.W_UV.weight, dh)  # (H, dh, d_c)
        mixed = weights @ latent  # (B, H, T, K) x (B, 1, K, d_c) -> (B, H, T, d_c): the latents, weighted
        W_oUV = torch.einsum("ehd,hdc->ehc", self.W_o.weight.view(-1, H, dh), W_UV)  # W_o_h W_UV_h: (D, H, d_c)
        if keep_heads is not None:
            mixed = mixed * keep_heads.view(1, H, 1, 1)  # 0 silences a head
        self.head_outputs = torch.einsum("hdc,bhtc->bhtd", W_UV, mixed).detach()  # (B, H, T, dh)
        return torch.einsum("bhtc,ehc->bte", mixed, W_oUV)  # (B, T, D)
