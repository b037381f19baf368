"""Input checks of the model modules (private): causal self-attention, latent attention, the decoder-only model, the
Transformer and the RNN encoder-decoder; with the checks several of them share.

Each public function of a topic module opens with one call from here, from ``rotary_linear`` (RoPE, linear
attention), ``lm`` (the KV cache, generation, the language-modelling tasks) or ``_validate`` (the checks all
these are built from), so that the formula comes right after. The messages name the argument, what was expected and
what came.
"""

from __future__ import annotations

import torch

from . import (
    require_bool,
    require_choice,
    require_finite,
    require_float,
    require_int,
    require_kv_heads,
    require_last_size,
    require_mask,
    require_param_dtype,
    require_positions,
    require_probability,
    require_rank,
    require_same_dtype,
    require_tensor,
    require_tokens,
)
from .rotary_linear import require_even, require_scaling

# A private module: every helper imports the checks it needs by name, so it has no __all__.


# ---- checks several modules share ------------------------------------------------------------------------------------


def require_nonempty(x: torch.Tensor, name: str, what: str = "position") -> None:
    """At least one ``what`` along axis 1 (a sequence of no positions has nothing to attend to or predict)."""
    if x.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one {what}, got shape {tuple(x.shape)}")


def require_cache(cache, num_layers: int | None = None) -> None:
    """None or an ``attn_course.KVCache`` (with ``num_layers`` slots when given). Checked by the methods the model
    calls, not by class: importing the cache module from here would close an import cycle (it imports these checks)."""
    if cache is not None and not all(
        hasattr(cache, name) for name in ("update", "advance", "key_positions", "num_layers")
    ):
        raise TypeError(f"cache must be an attn_course.KVCache or None, got {type(cache).__name__}")
    if cache is not None and num_layers is not None and cache.num_layers != num_layers:
        raise ValueError(f"cache must have num_layers = {num_layers}, got {cache.num_layers}")


def require_called(value, what: str, hint: str = "call the model") -> None:
    """A result of the last forward pass, kept on the model: RuntimeError before the first pass."""
    if value is None:
        raise RuntimeError(f"no {what} yet: {hint} first")


def require_ablate(ablate, num_layers: int, num_heads: int) -> list[tuple[int, int]]:
    """(layer, head) pairs of heads to switch off, as a list."""
    pairs = []
    for pair in ablate:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"ablate must hold (layer, head) pairs, got {pair!r}")
        layer = require_int(pair[0], "layer in ablate", 0, num_layers - 1)
        pairs.append((layer, require_int(pair[1], "head in ablate", 0, num_heads - 1)))
    return pairs


# ---- causal self-attention, latent attention (causal, mla) -----------------------------------------------------------


def require_latent_sizes(num_hiddens, num_heads, latent_dim, rope_dim, head_dim) -> int:
    """MultiHeadLatentAttention's sizes; returns dh (``head_dim``, default D / H, which H must then divide)."""
    require_int(num_hiddens, "num_hiddens")
    require_int(num_heads, "num_heads")
    require_int(latent_dim, "latent_dim")
    require_int(rope_dim, "rope_dim", 0)
    require_even(rope_dim, "rope_dim", "RoPE rotates pairs of features")
    if head_dim is None:
        if num_hiddens % num_heads:
            raise ValueError(
                f"num_hiddens = {num_hiddens} must be divisible by num_heads = {num_heads} "
                "(or give head_dim explicitly)"
            )
        head_dim = num_hiddens // num_heads
    return require_int(head_dim, "head_dim")


def require_self_attention_input(x, param, num_heads, positions, cache, mask, bias, keep_heads, absorbed=False):
    """A causal self-attention layer's input (``attn_course.causal``): x (B, T, D), T >= 1, finite, in the dtype of
    the layer's (., D) weight ``param``; None or a KVCache; None or (T,) ``positions``; a (T, K) ``mask`` or None;
    None or an (H, T, K) ``bias``; None or (H,) ``keep_heads``; ``absorbed`` True or False.

    Returns the positions (default: the next ones after the cache's, else 0..T-1) and the mask (default: causal,
    each position sees itself and the positions before it, those kept in the cache included)."""
    require_float(x, "x")
    require_rank(x, "x", (3,), "(B, T, D)")
    require_last_size(x, "x", param.shape[1], "num_hiddens")
    require_finite(x, "x")
    require_nonempty(x, "x")
    require_bool(absorbed, "absorbed")
    require_cache(cache)
    require_param_dtype(x, "x", param)
    require_keep_heads(keep_heads, num_heads)
    if positions is None:
        start = 0 if cache is None else cache.next_position
        positions = torch.arange(start, start + x.shape[1], device=x.device)
    require_positions(positions, x.shape[1])
    k_pos = positions if cache is None else cache.key_positions(positions)  # (K,): the kept ones, then these
    if mask is None:
        mask = (positions.unsqueeze(1) - k_pos.unsqueeze(0)) >= 0  # (T, K): never a later position
    require_score_terms(mask, bias, num_heads, x.shape[1], k_pos.shape[0])
    return positions, mask


def require_keep_heads(keep_heads, num_heads: int) -> None:
    """None, or (H,) floating factors, one per head."""
    if keep_heads is None:
        return
    require_float(keep_heads, "keep_heads")
    if keep_heads.ndim != 1 or keep_heads.shape[0] != num_heads:
        raise ValueError(
            f"keep_heads must have shape (H,) = ({num_heads},), one factor per head, "
            f"got shape {tuple(keep_heads.shape)}"
        )


def require_score_terms(mask, bias, num_heads: int, num_queries: int, num_keys: int) -> None:
    """A (T, K) bool mask (True = may attend) and None or an (H, T, K) floating bias (1 for H too) for the scores."""
    require_mask(mask)
    if tuple(mask.shape) != (num_queries, num_keys):
        raise ValueError(f"mask must have shape (T, K) = ({num_queries}, {num_keys}), got shape {tuple(mask.shape)}")
    if bias is None:
        return
    require_float(bias, "bias")
    if bias.ndim != 3 or bias.shape[0] not in (1, num_heads) or tuple(bias.shape[1:]) != (num_queries, num_keys):
        raise ValueError(
            f"bias must have shape (H, T, K) = ({num_heads}, {num_queries}, {num_keys}), added to the scores, "
            f"got shape {tuple(bias.shape)}"
        )


# ---- the decoder-only model (decoder) --------------------------------------------------------------------------------


def require_decoder_sizes(vocab_size, num_hiddens, num_heads, num_layers, max_len, num_kv_heads, ffn_hiddens, dropout):
    """DecoderOnlyLM's sizes: whole numbers (``ffn_hiddens`` may be None), H a multiple of G and a divisor of D, and a
    dropout probability."""
    require_int(vocab_size, "vocab_size")
    require_int(num_hiddens, "num_hiddens")
    require_int(num_heads, "num_heads")
    require_int(num_layers, "num_layers")
    require_int(max_len, "max_len")
    require_kv_heads(num_heads, num_kv_heads)
    if ffn_hiddens is not None:
        require_int(ffn_hiddens, "ffn_hiddens")
    require_probability(dropout)
    if num_hiddens % num_heads:
        raise ValueError(f"num_hiddens = {num_hiddens} must be divisible by num_heads = {num_heads}")


def require_decoder_attention(attention, positional, latent_dim, rope_dim, num_kv_heads, head_size) -> None:
    """``latent_dim`` (and ``rope_dim``, > 0 with RoPE) for ``attention="mla"`` only, ``num_kv_heads`` for ``"mha"``
    only; RoPE on multi-head attention rotates pairs, so an even head size."""
    require_int(rope_dim, "rope_dim", 0)
    if attention == "mla":
        require_int(latent_dim, "latent_dim")
        if num_kv_heads is not None:
            raise ValueError(
                f"num_kv_heads is for attention='mha' (grouped-query attention); attention='mla' shares one latent "
                f"among all heads: leave num_kv_heads=None, got {num_kv_heads}"
            )
        if positional == "rope" and rope_dim == 0:
            raise ValueError(
                "attention='mla' with positional='rope' needs rope_dim > 0: latent attention rotates a decoupled "
                "RoPE part of size rope_dim, not its keys"
            )
    elif latent_dim is not None or rope_dim:
        raise ValueError(
            f"latent_dim and rope_dim are for attention='mla', got latent_dim={latent_dim!r}, rope_dim={rope_dim!r} "
            "with attention='mha'"
        )
    if positional == "rope" and attention == "mha" and head_size % 2:
        raise ValueError(f"positional='rope' needs an even head size, got num_hiddens / num_heads = {head_size}")


def require_model_scaling(scaling, positional: str, attention: str) -> tuple | None:
    """A RoPE scaling (``require_scaling``) for a model with ``positional="rope"`` and ``attention="mha"``, or None."""
    scaling = require_scaling(scaling)
    if scaling is not None and (positional != "rope" or attention != "mha"):
        raise ValueError(
            f"rope_scaling is for positional='rope' with attention='mha', got positional={positional!r}, "
            f"attention={attention!r}"
        )
    return scaling


def require_decoder_input(model, tokens, cache, window, sinks) -> None:
    """DecoderOnlyLM's input: (B, T) token ids, T >= 1; a cache with a slot per block; a window >= 1 or None, sinks
    >= 0; with a table of positions (``"learned"``, ``"sinusoidal"``), positions below ``model.max_len``."""
    require_tokens(tokens, "tokens", model.vocab_size)
    require_nonempty(tokens, "tokens")
    require_cache(cache, len(model.blocks))
    if window is not None:
        require_int(window, "window")
    require_int(sinks, "sinks", 0)
    end = (0 if cache is None else cache.next_position) + tokens.shape[1]  # one past the last position
    if model.positional in ("learned", "sinusoidal") and end > model.max_len:
        raise ValueError(
            f"positions up to {end - 1} requested; a model with positional="
            f"'{model.positional}' has max_len = {model.max_len} (positions 0..{model.max_len - 1})"
        )


# ---- the Transformer and the RNN encoder-decoder (transformer, seq2seq) ----------------------------------------------


def require_block_input(x, name: str, param: torch.Tensor, batch: int | None = None) -> None:
    """A block's input (B, T, D): floating, 3-D, finite, D and dtype those of the block's (., D) weight ``param``;
    with ``batch``, B = ``batch`` (memory: one row per sequence of x)."""
    require_float(x, name)
    require_rank(x, name, (3,), "(B, T, D)")
    require_last_size(x, name, param.shape[1], "num_hiddens")
    require_param_dtype(x, name, param)
    require_finite(x, name)
    if batch is not None and x.shape[0] != batch:
        raise ValueError(f"{name} must have one row per sequence of x: shape ({batch}, S, D), got {tuple(x.shape)}")


def require_residual(x, y, size: int, param: torch.Tensor) -> None:
    """AddNorm's x (..., D), D = ``size``, in the dtype of ``param``, and a y of the same shape and dtype."""
    require_last_size(x, "x", size, "num_hiddens")
    require_param_dtype(x, "x", param)
    require_tensor(y, "y")
    require_same_dtype(y, "y", x, "x")
    if x.shape != y.shape:
        raise ValueError(
            f"x and y must have the same shape for the residual sum, got {tuple(x.shape)} and {tuple(y.shape)}"
        )


def require_max_len(tokens: torch.Tensor, name: str, max_len: int) -> None:
    """At most ``max_len`` positions (the table of positional encodings has no more)."""
    if tokens.shape[1] > max_len:
        raise ValueError(f"{name} has {tokens.shape[1]} positions; this model encodes at most max_len = {max_len}")


def require_encoder_sizes(embed_size, num_hiddens, vocab_size, bidirectional) -> None:
    """Seq2SeqEncoder's sizes: whole numbers, U even when bidirectional (half per direction)."""
    if not isinstance(bidirectional, bool):
        raise TypeError(f"bidirectional must be True or False, got {bidirectional!r}")
    if require_int(num_hiddens, "num_hiddens") % 2 and bidirectional:
        raise ValueError(f"num_hiddens must be even (half per direction), got {num_hiddens}")
    require_int(vocab_size, "vocab_size")
    require_int(embed_size, "embed_size")


def require_decoder_choice(attention, score, scores) -> None:
    """RNNSeq2Seq's decoder: ``attention`` True or False, a ``score`` of ``scores`` (not "additive" only with
    attention)."""
    if not isinstance(attention, bool):
        raise TypeError(f"attention must be True or False, got {attention!r}")
    require_choice(score, "score", scores)
    if score != "additive" and not attention:
        raise ValueError(f"score={score!r} needs attention=True (the decoder without attention has no score)")
