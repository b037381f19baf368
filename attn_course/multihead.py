"""Multi-head attention: several scaled dot-product attentions side by side (notebook 06).

Each of the H heads projects queries, keys and values to size ``num_hiddens / H`` with its own
weights, attends, and the H outputs are concatenated and mixed by ``W_o``. The heads run as one
batch: the reshape trick folds the head axis into the batch axis, ``(B, T, H * dh) -> (B * H, T, dh)``.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import require_float, require_rank, shape_str
from .masking import _check_valid_lens
from .scoring import _attention_pooling, _dot_product_scores

__all__ = ["split_heads", "merge_heads", "MultiHeadAttention", "plot_head_weights"]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, T, H * dh) -> (B * H, T, dh): one batch element per (sequence, head)."""
    require_float(x, "x")
    require_rank(x, "x", (3,), "(B, T, H * dh)")
    _check_int(num_heads, "num_heads")
    batch, steps, size = x.shape
    if size % num_heads:
        raise ValueError(f"x.shape[-1] = {size} must be divisible by num_heads = {num_heads}")
    x = x.reshape(batch, steps, num_heads, size // num_heads)  # (B, T, H, dh)
    return x.permute(0, 2, 1, 3).reshape(batch * num_heads, steps, size // num_heads)  # (B * H, T, dh)


def merge_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B * H, T, dh) -> (B, T, H * dh): the inverse of ``split_heads``."""
    require_float(x, "x")
    require_rank(x, "x", (3,), "(B * H, T, dh)")
    _check_int(num_heads, "num_heads")
    if x.shape[0] % num_heads:
        raise ValueError(f"x.shape[0] = {x.shape[0]} must be divisible by num_heads = {num_heads}")
    x = x.reshape(-1, num_heads, x.shape[1], x.shape[2])  # (B, H, T, dh)
    return x.permute(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)  # (B, T, H * dh)


def _check_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention.

    Args:
        num_hiddens: model size (the size of the output and of all heads together); divisible by ``num_heads``.
        num_heads: H.
        dropout: dropout probability on the attention weights.
        query_size, key_size, value_size: input sizes (default ``num_hiddens``).
        bias: whether the four projections have biases (default False).

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
    ):
        super().__init__()
        _check_int(num_hiddens, "num_hiddens")
        _check_int(num_heads, "num_heads")
        if num_hiddens % num_heads:
            raise ValueError(f"num_hiddens = {num_hiddens} must be divisible by num_heads = {num_heads}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ValueError(f"dropout must be a probability in [0, 1), got {dropout!r}")
        sizes = {}
        for name, value in (("query_size", query_size), ("key_size", key_size), ("value_size", value_size)):
            sizes[name] = num_hiddens if value is None else _check_int(value, name)
        self.num_heads = num_heads
        self.W_q = nn.Linear(sizes["query_size"], num_hiddens, bias=bias)
        self.W_k = nn.Linear(sizes["key_size"], num_hiddens, bias=bias)
        self.W_v = nn.Linear(sizes["value_size"], num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.dropout = nn.Dropout(float(dropout))
        self.attention_weights: torch.Tensor | None = None

    def forward(self, queries, keys, values, valid_lens=None, mask=None):
        for name, t, layer in (("queries", queries, self.W_q), ("keys", keys, self.W_k), ("values", values, self.W_v)):
            require_float(t, name)
            require_rank(t, name, (3,), f"(B, T, {layer.in_features})")
            if t.shape[-1] != layer.in_features:
                raise ValueError(
                    f"{name}.shape[-1] must be {layer.in_features}, got {name} of shape {shape_str(t.shape)}"
                )
        if not (queries.shape[0] == keys.shape[0] == values.shape[0]) or keys.shape[1] != values.shape[1]:
            raise ValueError(
                "queries, keys and values must share the batch size, and keys and values the length; got "
                f"{shape_str(queries.shape)}, {shape_str(keys.shape)}, {shape_str(values.shape)}"
            )
        for name, t in (("queries", queries), ("keys", keys), ("values", values)):
            if t.dtype != self.W_q.weight.dtype:
                raise TypeError(
                    f"{name} have dtype {t.dtype} but the layer's parameters are {self.W_q.weight.dtype}; "
                    f"convert the inputs, or the layer with .to({t.dtype})"
                )
        batch, heads = queries.shape[0], self.num_heads
        # Check against the batch before repeating for the heads, so that errors name the caller's sizes.
        if valid_lens is not None:
            _check_valid_lens(valid_lens, keys.shape[1], (batch, queries.shape[1]))
        if mask is not None:
            if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
                got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
                raise TypeError(f"mask must be a bool tensor (True = may attend), got {got}")
            wanted = [(queries.shape[1], keys.shape[1]), (1, queries.shape[1], keys.shape[1])]
            wanted.append((batch, queries.shape[1], keys.shape[1]))
            if tuple(mask.shape) not in wanted:
                raise ValueError(
                    f"mask must have shape (Q, K), (1, Q, K) or (B, Q, K) = {' or '.join(map(shape_str, wanted))}, "
                    f"got {shape_str(mask.shape)}"
                )
        q = split_heads(self.W_q(queries), heads)  # (B, Q, D) -> (B * H, Q, dh)
        k = split_heads(self.W_k(keys), heads)  # (B, K, D) -> (B * H, K, dh)
        v = split_heads(self.W_v(values), heads)  # (B, K, D) -> (B * H, K, dh)
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, heads, dim=0)  # (B,) -> (B * H,), or (B, Q) -> (B * H, Q)
        if mask is not None and mask.ndim == 3:
            mask = torch.repeat_interleave(mask.expand(batch, -1, -1), heads, dim=0)  # (B, Q, K) -> (B * H, Q, K)
        scores = _dot_product_scores(q, k)  # (B * H, Q, K)
        out, weights = _attention_pooling(scores, v, valid_lens, self.dropout, mask, own_scores=True)
        self.attention_weights = weights.detach().reshape(batch, heads, *weights.shape[1:])  # (B, H, Q, K)
        return self.W_o(merge_heads(out, heads))  # (B * H, Q, dh) -> (B, Q, D) -> (B, Q, D)


def plot_head_weights(num_heads: int = 4, num_hiddens: int = 16, seed: int = 0, tokens=None, axes=None):
    """Per-head attention weights of a freshly initialised ``MultiHeadAttention`` on one random sequence.

    Shows that heads start out attending differently: each has its own slice of the projections.
    ``axes``: one axes per panel (up to four per row), or None for a new figure.
    """
    from .plotting import show_heatmaps  # plotting only when asked for

    _check_int(num_heads, "num_heads")
    tokens = list(tokens) if tokens is not None else ["the", "cat", "sat", "on", "the", "mat"]
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():  # seed the layer's initial weights without touching the caller's random state
        torch.manual_seed(seed)
        layer = MultiHeadAttention(num_hiddens, num_heads).eval()
    x = torch.randn(1, len(tokens), num_hiddens, generator=gen)  # (1, T, D): one sequence
    with torch.no_grad():
        layer(x, x, x)
    weights = layer.attention_weights[0]  # (H, T, T)
    cols = min(num_heads, 4)
    rows = -(-num_heads // cols)
    grid = torch.zeros(rows * cols, len(tokens), len(tokens))
    grid[:num_heads] = weights
    titles = [f"head {h + 1}" for h in range(num_heads)] + ["(no head)"] * (rows * cols - num_heads)
    return show_heatmaps(
        grid.reshape(rows, cols, len(tokens), len(tokens)),
        ax=axes,
        titles=titles,
        xticklabels=tokens,
        yticklabels=tokens,
        vmin=0.0,
        vmax=1.0,
        annotate=False,
        figsize=(cols * 2.8 + 1.2, rows * 2.8 + 1.0),
        suptitle=f"{num_heads} heads, one sequence (weights at initialisation)",
    )
