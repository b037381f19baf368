"""The KV cache of a decoder-only model (notebook 09): what each layer keeps of every position seen so far.

Generating token ``t + 1`` needs the attention of the newest position only: its query against the keys and
values of positions ``0..t``. Causal masking means that the keys and values of the earlier positions never
change when a token is appended, so they are computed once and kept, per layer. A step then costs one position's
projections plus one row of attention, instead of the whole prefix again.

What a layer keeps is the attention layer's choice, passed by name to :meth:`KVCache.update`: multi-head and
grouped-query attention (``attn_course.causal``) keep keys and values ``k``, ``v`` (B, G, K, dh); multi-head latent
attention (``attn_course.mla``) keeps one latent ``c_t`` of size ``d_c`` and one RoPE key of size ``d_R`` per position,
shared by all heads (``latent``, ``rope_key``: (B, 1, K, d_c), (B, 1, K, d_R)). The cache only appends along the
position axis 2, drops positions that a sliding window no longer shows, and counts bytes.

Shapes: ``B`` batch, ``G`` key/value heads, ``K`` positions kept, ``T`` positions added, ``dh`` head size, ``L``
layers, ``d_c`` latent size, ``d_R`` RoPE key size.
"""

from __future__ import annotations

import torch

from ._validate import require_int
from ._validate.lm import require_cache_size_args, require_cache_update

__all__ = ["KVCache", "kv_cache_bytes"]


def kv_cache_bytes(
    num_layers: int,
    num_kv_heads: int | None,
    head_size: int | None,
    length: int,
    bytes_per_value: int = 2,
    batch_size: int = 1,
    *,
    latent_dim: int | None = None,
    rope_dim: int = 0,
) -> int:
    """``2 x L x G x dh x length x bytes x B``: the keys and the values of every layer, head and position.

    With ``latent_dim`` (multi-head latent attention), ``(d_c + d_R) x L x length x bytes x B``: one latent of size
    ``d_c = latent_dim`` and one RoPE key of size ``d_R = rope_dim`` per position and layer; then give
    ``num_kv_heads=None`` and ``head_size=None`` (the cache holds no per-head keys or values).
    """
    require_cache_size_args(
        num_layers, num_kv_heads, head_size, length, bytes_per_value, batch_size, latent_dim, rope_dim
    )
    if latent_dim is not None:
        return (latent_dim + rope_dim) * num_layers * length * bytes_per_value * batch_size
    return 2 * num_layers * num_kv_heads * head_size * length * bytes_per_value * batch_size


class KVCache:
    """Per layer, the tensors its attention keeps (by name, positions on axis 2), and the positions kept (K,).

    ``DecoderOnlyLM.forward(tokens, cache)`` reads and extends it: each layer's attention calls :meth:`update` with
    what it keeps of the new positions and attends to everything returned; after the last layer the model calls
    :meth:`advance`, which records the new positions and, with a sliding window, drops the positions no later query
    may see (all but the ``sinks`` first positions and the ``window - 1`` most recent).

    Args:
        num_layers: L, one slot per layer. ``layers[l]`` is a dict, name -> tensor, empty until layer ``l`` keeps
            something (``{"k": (B, G, K, dh), "v": (B, G, K, dh)}`` for multi-head attention).
    """

    def __init__(self, num_layers: int):
        self.num_layers = require_int(num_layers, "num_layers")
        self.layers: list[dict[str, torch.Tensor]] = [{} for _ in range(num_layers)]
        self.positions: torch.Tensor | None = None  # (K,) int64: the position of every key kept
        self.next_position = 0  # the position of the next token fed in

    def __len__(self) -> int:
        """K, the number of positions kept."""
        return 0 if self.positions is None else self.positions.numel()

    def key_positions(self, new_positions: torch.Tensor) -> torch.Tensor:
        """The positions of the keys the new positions attend to: those kept, then the new ones. (K + T,)"""
        return new_positions if self.positions is None else torch.cat([self.positions, new_positions])

    def update(self, layer: int, **tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Append one layer's new tensors (B, ., T, .), given by name (``k=..., v=...``), to those it keeps; return
        all of them, (B, ., K + T, .), in the order given. A layer keeps the same names at every call."""
        require_cache_update(self, layer, tensors)
        kept = self.layers[layer]
        self.layers[layer] = {
            name: t if not kept else torch.cat([kept[name], t], dim=2)  # (B, ., K, .) + (B, ., T, .) on positions
            for name, t in tensors.items()
        }
        return tuple(self.layers[layer].values())

    def advance(self, new_positions: torch.Tensor, window: int | None = None, sinks: int = 0) -> None:
        """Record the positions just fed (T,); with a ``window``, drop the positions that no later query may see."""
        positions = self.key_positions(new_positions)  # (K + T,)
        self.next_position = int(new_positions[-1]) + 1
        if window is not None:
            keep = (positions < sinks) | (positions > self.next_position - window)  # the next query's window
            positions = positions[keep]
            self.layers = [{name: t[:, :, keep] for name, t in kept.items()} for kept in self.layers]
        self.positions = positions

    def nbytes(self) -> int:
        """The memory the kept tensors take, in bytes."""
        return sum(t.numel() * t.element_size() for kept in self.layers for t in kept.values())
