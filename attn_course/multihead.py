"""Multi-head attention: several scaled dot-product attentions side by side (notebook 06).

Each of the H heads projects queries, keys and values to size ``dh = num_hiddens / H`` with its own
weights, attends, and the H outputs are concatenated and mixed by ``W_o``. The heads run as one
batch: the reshape trick folds the head axis into the batch axis, ``(B, T, H * dh) -> (B * H, T, dh)``.

``multi_head_attention`` is the formula as a pure function; ``MultiHeadAttention`` is the layer that
owns the four projections and calls it.

Grouped-query attention (notebook 09): with ``num_kv_heads = G`` below H, ``W_k`` and ``W_v`` project to G
heads only, and each key/value head serves H / G query heads (``repeat_kv_heads``). G = H is multi-head
attention; G = 1 is multi-query attention.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ._validate import (
    require_divisible,
    require_head_split,
    require_heads_inputs,
    require_int,
    require_kv_features,
    require_kv_head_tensor,
    require_kv_heads,
    require_layer_inputs,
    require_probability,
)
from .scoring import scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "repeat_kv_heads", "multi_head_attention", "MultiHeadAttention"]

Projection = Callable[[torch.Tensor], torch.Tensor]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, T, H * dh) -> (B * H, T, dh): one batch element per (sequence, head)."""
    require_head_split(x, num_heads, "(B, T, H * dh)", -1)
    batch, steps, size = x.shape
    x = x.reshape(batch, steps, num_heads, size // num_heads)  # (B, T, H, dh)
    return x.permute(0, 2, 1, 3).reshape(batch * num_heads, steps, size // num_heads)  # (B * H, T, dh)


def merge_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B * H, T, dh) -> (B, T, H * dh): the inverse of ``split_heads``."""
    require_head_split(x, num_heads, "(B * H, T, dh)", 0)
    batch, steps, size = x.shape[0] // num_heads, x.shape[1], x.shape[2]
    x = x.reshape(batch, num_heads, steps, size)  # (B, H, T, dh)
    return x.permute(0, 2, 1, 3).reshape(batch, steps, num_heads * size)  # (B, T, H * dh)


def repeat_kv_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, G, K, dh) -> (B, H, K, dh): key/value head ``g`` serves query heads ``g * H/G .. (g + 1) * H/G - 1``.

    The order of ``torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)``: query head ``h``
    uses key/value head ``h // (H / G)``.
    """
    require_kv_head_tensor(x, num_heads)
    return x.repeat_interleave(num_heads // x.shape[1], dim=1)  # (B, G, K, dh) -> (B, H, K, dh)


def multi_head_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    W_q: Projection,
    W_k: Projection,
    W_v: Projection,
    W_o: Projection,
    num_heads: int,
    valid_lens: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
    dropout: Projection | None = None,
    num_kv_heads: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``W_o(concat_h attention(W_q^h q, W_k^h k, W_v^h v))``: H scaled dot-product attentions side by side.

    Args:
        queries: (B, Q, Dq); keys: (B, K, Dk); values: (B, K, Dv); one floating dtype.
        W_q, W_k, W_v: the projections (``nn.Linear`` or any function) to H * dh features; head ``h`` owns
            features ``h * dh .. (h + 1) * dh - 1``.
        W_o: the output projection, (B, Q, H * dh) -> (B, Q, D).
        num_heads: H.
        valid_lens: None, (B,) or (B, Q), as in ``masked_softmax``; shared by all heads.
        mask: bool, ``True`` = may attend, (Q, K), (1, Q, K) or (B, Q, K); shared by all heads.
        dropout: optional function applied to the weights before they pool the values (``nn.Dropout``).
        num_kv_heads: G, the number of key/value heads (None: G = H). With G < H, ``W_k`` and ``W_v`` project
            to G * dh features and each key/value head serves H / G query heads (grouped-query attention).

    Returns:
        output (B, Q, D) and the weights of every head (B, H, Q, K).
    """
    projections = {"W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o}  # by name, for the error messages
    groups = require_heads_inputs(queries, keys, values, num_heads, valid_lens, mask, projections, num_kv_heads)
    batch = queries.shape[0]
    q = split_heads(W_q(queries), num_heads)  # (B, Q, Dq) -> (B, Q, H * dh) -> (B * H, Q, dh)
    k = split_heads(W_k(keys), groups)  # (B, K, Dk) -> (B, K, G * dh) -> (B * G, K, dh)
    v = split_heads(W_v(values), groups)  # (B, K, Dv) -> (B, K, G * dh) -> (B * G, K, dh)
    require_kv_features(k, v, q.shape[-1], groups)
    if groups != num_heads:  # each key/value head serves H / G query heads
        k = repeat_kv_heads(k.reshape(batch, groups, *k.shape[1:]), num_heads).flatten(0, 1)  # -> (B * H, K, dh)
        v = repeat_kv_heads(v.reshape(batch, groups, *v.shape[1:]), num_heads).flatten(0, 1)  # -> (B * H, K, dh)
    if valid_lens is not None:
        valid_lens = valid_lens.repeat_interleave(num_heads, dim=0)  # (B,) -> (B * H,), or (B, Q) -> (B * H, Q)
    if mask is not None and mask.ndim == 3:
        mask = mask.expand(batch, -1, -1).repeat_interleave(num_heads, dim=0)  # (B, Q, K) -> (B * H, Q, K)
    out, weights = scaled_dot_product_attention(q, k, v, valid_lens, mask, dropout)  # (B * H, Q, dh), (B * H, Q, K)
    output = W_o(merge_heads(out, num_heads))  # (B * H, Q, dh) -> (B, Q, H * dh) -> (B, Q, D)
    return output, weights.reshape(batch, num_heads, *weights.shape[1:])  # (B * H, Q, K) -> (B, H, Q, K)


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention: the layer that owns the projections of ``multi_head_attention``.

    Args:
        num_hiddens: model size D (the size of the output and of all heads together); divisible by ``num_heads``.
        num_heads: H.
        dropout: dropout probability on the attention weights.
        query_size, key_size, value_size: input sizes (default ``num_hiddens``).
        bias: whether the four projections have biases (default False).
        num_kv_heads: G key/value heads (None: G = H); ``num_heads`` must be a multiple of G. ``W_k`` and ``W_v``
            then map to G * dh features: the keys and values a cache keeps shrink by H / G.

    Called as ``(queries (B, Q, Dq), keys (B, K, Dk), values (B, K, Dv), valid_lens=None, mask=None)``;
    returns (B, Q, num_hiddens). ``valid_lens``: None, (B,) or (B, Q), as in ``masked_softmax``; ``mask``: bool,
    ``True`` = may attend, of shape (Q, K), (1, Q, K) or (B, Q, K), shared by all heads. Keeps the last weights
    per head in ``.attention_weights``: (B, H, Q, K).
    """

    def __init__(
        self,
        num_hiddens: int,
        num_heads: int,
        dropout: float = 0.0,
        query_size: int | None = None,
        key_size: int | None = None,
        value_size: int | None = None,
        bias: bool = False,
        num_kv_heads: int | None = None,
    ):
        super().__init__()
        require_int(num_hiddens, "num_hiddens")
        require_int(num_heads, "num_heads")
        require_divisible(num_hiddens, "num_hiddens", num_heads, "num_heads")
        self.num_kv_heads = require_kv_heads(num_heads, num_kv_heads)
        kv_size = num_hiddens // num_heads * self.num_kv_heads  # G * dh
        sizes = {}
        for name, value in (("query_size", query_size), ("key_size", key_size), ("value_size", value_size)):
            sizes[name] = num_hiddens if value is None else require_int(value, name)
        self.num_heads = num_heads
        self.W_q = nn.Linear(sizes["query_size"], num_hiddens, bias=bias)
        self.W_k = nn.Linear(sizes["key_size"], kv_size, bias=bias)
        self.W_v = nn.Linear(sizes["value_size"], kv_size, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.dropout = nn.Dropout(require_probability(dropout))
        self.attention_weights: torch.Tensor | None = None

    def forward(self, queries, keys, values, valid_lens=None, mask=None):
        require_layer_inputs(queries, keys, values, (self.W_q, self.W_k, self.W_v))
        output, weights = multi_head_attention(
            queries,
            keys,
            values,
            self.W_q,
            self.W_k,
            self.W_v,
            self.W_o,
            self.num_heads,
            valid_lens,
            mask,
            self.dropout,
            self.num_kv_heads,
        )
        self.attention_weights = weights.detach()  # (B, H, Q, K)
        return output  # (B, Q, D)
