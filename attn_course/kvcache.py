"""The KV cache of a decoder-only model (notebook 09): the keys and values of every position seen so far.

Generating token ``t + 1`` needs the attention of the newest position only: its query against the keys and
values of positions ``0..t``. Causal masking means that the keys and values of the earlier positions never
change when a token is appended, so they are computed once and kept, per layer. A step then costs one position's
projections plus one row of attention, instead of the whole prefix again.

Multi-head latent attention (``attn_course.mla``) keeps, per layer, one latent ``c_t`` of size ``d_c`` and one RoPE
key of size ``d_R`` per position instead (:meth:`KVCache.update_latent`), shared by all heads.

Shapes: ``B`` batch, ``G`` key/value heads, ``K`` positions kept, ``dh`` head size, ``L`` layers, ``d_c`` latent
size, ``d_R`` RoPE key size.
"""

from __future__ import annotations

import torch

from ._validate import require_int
from ._validate_models import require_cache_size_args, require_kv_update, require_latent_update

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
    """Per layer, the keys and values (B, G, K, dh) of the positions kept, and those positions (K,).

    ``DecoderOnlyLM.forward(tokens, cache)`` reads and extends it: each layer calls :meth:`update` with the new
    positions' keys and values and attends to everything returned; after the last layer the model calls
    :meth:`advance`, which records the new positions and, with a sliding window, drops the keys no later query may
    see (all but the ``sinks`` first positions and the ``window - 1`` most recent).

    Args:
        num_layers: L, one slot per layer.
    """

    def __init__(self, num_layers: int):
        self.num_layers = require_int(num_layers, "num_layers")
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers
        self.positions: torch.Tensor | None = None  # (K,) int64: the position of every key kept
        self.next_position = 0  # the position of the next token fed in

    def __len__(self) -> int:
        """K, the number of positions kept."""
        return 0 if self.positions is None else self.positions.numel()

    def key_positions(self, new_positions: torch.Tensor) -> torch.Tensor:
        """The positions of the keys the new positions attend to: those kept, then the new ones. (K + T,)"""
        return new_positions if self.positions is None else torch.cat([self.positions, new_positions])

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append one layer's new keys and values (B, G, T, dh); return all of them (B, G, K + T, dh)."""
        require_kv_update(self, layer, k, v)
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=2)  # (B, G, K, dh) + (B, G, T, dh) -> (B, G, K + T, dh)
            v = torch.cat([self.values[layer], v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v

    def update_latent(self, layer: int, latent: torch.Tensor, rope_key: torch.Tensor):
        """Multi-head latent attention's slot: append the new latents (B, 1, T, d_c) and RoPE keys (B, 1, T, d_R)
        of one layer; return all of them, (B, 1, K + T, d_c) and (B, 1, K + T, d_R). They are kept where
        :meth:`update` keeps keys and values, so :meth:`advance` and :meth:`nbytes` treat them alike."""
        require_latent_update(self, layer, latent, rope_key)
        kept = self.keys[layer]
        if kept is not None:
            latent = torch.cat([kept, latent], dim=2)  # (B, 1, K, d_c) + (B, 1, T, d_c) -> (B, 1, K + T, d_c)
            rope_key = torch.cat([self.values[layer], rope_key], dim=2)  # (B, 1, K + T, d_R)
        self.keys[layer], self.values[layer] = latent, rope_key
        return latent, rope_key

    def advance(self, new_positions: torch.Tensor, window: int | None = None, sinks: int = 0) -> None:
        """Record the positions just fed (T,); with a ``window``, drop the keys that no later query may see."""
        positions = self.key_positions(new_positions)  # (K + T,)
        self.next_position = int(new_positions[-1]) + 1
        if window is not None:
            keep = (positions < sinks) | (positions > self.next_position - window)  # the next query's window
            positions = positions[keep]
            for layer in range(self.num_layers):
                if self.keys[layer] is not None:
                    self.keys[layer] = self.keys[layer][:, :, keep]  # (B, G, K', dh)
                    self.values[layer] = self.values[layer][:, :, keep]
        self.positions = positions

    def nbytes(self) -> int:
        """The memory the keys and values take, in bytes."""
        return sum(t.numel() * t.element_size() for t in self.keys + self.values if t is not None)
