"""Input checks of the KV cache (``kvcache``), generation (``generation``) and the language-modelling data, training and
measures (``lmdata``, ``lmtrain``, ``lmeval``) (private); see ``models``.
"""

from __future__ import annotations

import torch

from . import (
    require_bool,
    require_choice,
    require_finite,
    require_float,
    require_int,
    require_number,
    require_positive,
    require_rank,
    require_same_dtype,
    require_tokens,
)
from .models import require_nonempty
from .rotary_linear import require_even

# A private module: every helper imports the checks it needs by name, so it has no __all__.


def require_generator(generator, name: str = "generator") -> None:
    """None or a ``torch.Generator``."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {type(generator).__name__}")


# ---- the KV cache (kvcache) ------------------------------------------------------------------------------------------


def require_cache_size_args(
    num_layers, num_kv_heads, head_size, length, bytes_per_value, batch_size, latent_dim, rope_dim
):
    """kv_cache_bytes' arguments: whole numbers; with ``latent_dim``, an even ``rope_dim`` and no per-head sizes;
    without it, no ``rope_dim``."""
    require_int(num_layers, "num_layers")
    require_int(length, "length", 0)
    require_int(bytes_per_value, "bytes_per_value")
    require_int(batch_size, "batch_size")
    if latent_dim is not None:
        require_int(latent_dim, "latent_dim")
        require_int(rope_dim, "rope_dim", 0)
        require_even(rope_dim, "rope_dim", "RoPE rotates pairs of features")
        if num_kv_heads is not None or head_size is not None:
            raise ValueError(
                "with latent_dim (multi-head latent attention) the cache holds latents, not per-head keys and values: "
                f"give num_kv_heads=None and head_size=None, got {num_kv_heads!r} and {head_size!r}"
            )
        return
    if rope_dim:
        raise ValueError(f"rope_dim is the decoupled RoPE key of latent attention: give latent_dim too, got {rope_dim}")
    require_int(num_kv_heads, "num_kv_heads")
    require_int(head_size, "head_size")


def require_cache_update(cache, layer, tensors: dict) -> None:
    """One layer's new tensors for ``cache.update``, by name: at least one, each (B, ., T, .) floating and finite,
    one dtype, one B and T; and, once the layer keeps some, the same names, with the B, axes 1 and 3 and dtype of
    those kept."""
    require_int(layer, "layer", 0, cache.num_layers - 1)
    if not tensors:
        raise ValueError("cache.update needs at least one tensor to keep, by name (for example k=..., v=...)")
    for name, t in tensors.items():
        require_float(t, name)
        require_rank(t, name, (4,), "(B, ., T, .), positions on axis 2")
        require_finite(t, name)
    (first, t0), kept = next(iter(tensors.items())), cache.layers[layer]
    for name, t in tensors.items():
        require_same_dtype(t, name, t0, first)
        if (t.shape[0], t.shape[2]) != (t0.shape[0], t0.shape[2]):
            raise ValueError(
                f"{first} and {name} must share B and T (axes 0 and 2), got {tuple(t0.shape)} and {tuple(t.shape)}"
            )
    if not kept:
        return
    if list(kept) != list(tensors):
        raise ValueError(f"layer {layer} of the cache keeps {', '.join(kept)}, got {', '.join(tensors)}")
    for name, t in tensors.items():
        old = kept[name]
        if (t.shape[:2], t.shape[3]) != (old.shape[:2], old.shape[3]):
            raise ValueError(
                f"{name} must have the B, axis 1 and axis 3 of the cached {name} {tuple(old.shape)}, "
                f"got {tuple(t.shape)}"
            )
        require_same_dtype(t, name, old, f"the cached {name}")


# ---- generation, the language-modelling data, training and measures (generation, lmdata, lmtrain, lmeval) ------------


def require_lm(model, *attributes: str) -> None:
    """A ``DecoderOnlyLM``: an ``nn.Module`` with ``vocab_size`` and the other ``attributes`` (e.g. ``"blocks"``)."""
    if not isinstance(model, torch.nn.Module) or not all(hasattr(model, a) for a in (*attributes, "vocab_size")):
        raise TypeError(f"model must be a DecoderOnlyLM, got {type(model).__name__}")


def require_sampling(logits, temperature, top_k) -> float:
    """next_token_probs' arguments: finite floating logits (C,), (B, C) or (B, T, C) with C >= 1, a temperature >= 0
    (returned as a float) and None or a top_k in [1, C]."""
    require_float(logits, "logits")
    require_rank(logits, "logits", (1, 2, 3), "(C,), (B, C) or (B, T, C)")
    require_finite(logits, "logits")
    if logits.shape[-1] == 0:
        raise ValueError(f"logits must hold at least one token's logit (C >= 1), got shape {tuple(logits.shape)}")
    temperature = require_number(temperature, "temperature", ">= 0", lambda t: t >= 0)
    if top_k is not None:
        require_int(top_k, "top_k", 1, logits.shape[-1])
    return temperature


def require_generate_args(model, prompt, max_new_tokens, temperature, top_k, use_cache, generator) -> None:
    """generate's arguments: a DecoderOnlyLM, a (B, T) prompt with T >= 1, N >= 0, a temperature >= 0, None or a
    top_k in [1, C], ``use_cache`` True or False, None or a generator."""
    require_lm(model, "blocks")
    require_tokens(prompt, "prompt", model.vocab_size)
    require_nonempty(prompt, "prompt", "token")
    require_int(max_new_tokens, "max_new_tokens", 0)
    require_number(temperature, "temperature", ">= 0", lambda t: t >= 0)
    if top_k is not None:
        require_int(top_k, "top_k", 1, model.vocab_size)
    require_bool(use_cache, "use_cache")
    require_generator(generator)


def require_timing_args(model, lengths, use_cache, repeats) -> list[int]:
    """time_per_token's arguments: a DecoderOnlyLM, a sequence of token counts >= 1 (returned as a list), whole
    ``repeats`` >= 1, ``use_cache`` True or False."""
    require_lm(model, "blocks")
    if isinstance(lengths, str | bytes) or not hasattr(lengths, "__iter__"):
        raise TypeError(f"lengths must be a sequence of token counts, got {type(lengths).__name__}")
    lengths = [require_int(n, "each length") for n in lengths]
    require_int(repeats, "repeats")
    require_bool(use_cache, "use_cache")
    return lengths


def require_repeat_args(batch_size, half_len, vocab_size, generator) -> None:
    """repeat_task's arguments: B >= 1, n >= 1, C >= 2 (BOS and one token at least), None or a generator."""
    require_int(batch_size, "batch_size")
    require_int(half_len, "half_len")
    require_int(vocab_size, "vocab_size", 2)
    require_generator(generator)


def require_sequences(tokens: torch.Tensor) -> None:
    """A batch of at least one sequence: the scores and losses are means over the batch (of none: NaN)."""
    if tokens.shape[0] == 0:
        raise ValueError(
            f"tokens must hold at least one sequence (the scores are means over them), got shape {tuple(tokens.shape)}"
        )


def require_repeats(model, tokens) -> int:
    """``tokens``: repeat_task sequences of 2 n + 1 >= 5 positions (n >= 2: a target to copy); returns n."""
    require_tokens(tokens, "tokens", getattr(model, "vocab_size", 2**62))
    if tokens.shape[1] < 5 or tokens.shape[1] % 2 == 0:
        raise ValueError(f"tokens must be repeat_task sequences of 2 n + 1 >= 5 positions, got {tuple(tokens.shape)}")
    require_sequences(tokens)
    return (tokens.shape[1] - 1) // 2


def require_repeat_logits(logits, tokens) -> None:
    """``tokens``: repeat_task sequences (B, 2 n + 1) (see :func:`require_repeats`); ``logits``: (B, 2 n + 1, C),
    floating, one row of logits per token."""
    require_repeats(None, tokens)
    require_float(logits, "logits")
    if logits.dim() != 3 or tuple(logits.shape[:2]) != tuple(tokens.shape):
        raise ValueError(
            f"logits must have shape (B, T, C) with the (B, T) = {tuple(tokens.shape)} of tokens, "
            f"got shape {tuple(logits.shape)}"
        )


def require_scored_tokens(model, tokens) -> None:
    """position_losses' arguments: a DecoderOnlyLM and (B, T) tokens, B >= 1, T >= 2 (one prediction)."""
    require_lm(model)
    require_tokens(tokens, "tokens", model.vocab_size)
    require_sequences(tokens)
    if tokens.shape[1] < 2:
        raise ValueError(f"tokens must hold at least 2 positions (one prediction), got shape {tuple(tokens.shape)}")


def require_head_probe(model, tokens, ablation: str, positions=None) -> tuple[int, list[int] | None]:
    """repeat_task ``tokens`` (see :func:`require_repeats`), an ``ablation`` ("zero" or "mean") and None (every
    position) or a non-empty list of positions in [0, T); returns n and the positions as a list (or None)."""
    half = require_repeats(model, tokens)
    require_choice(ablation, "ablation", ("zero", "mean"))
    if positions is None:
        return half, None
    if isinstance(positions, (str, bytes)) or not hasattr(positions, "__iter__"):
        raise TypeError(f"positions must be None or a list of positions, got {type(positions).__name__}")
    positions = [require_int(p, "each of positions", 0, tokens.shape[1] - 1) for p in positions]
    if not positions:
        raise ValueError("positions must hold at least one position (or be None: every position)")
    return half, positions


def require_foreach(foreach, wanted: str = "a bool or None", show_value: bool = False) -> None:
    """AdamW's ``foreach``: True, False or None."""
    if foreach is not None and not isinstance(foreach, bool):
        got = f"{foreach!r} ({type(foreach).__name__})" if show_value else type(foreach).__name__
        raise TypeError(f"foreach must be {wanted}, got {got}")


def require_train_args(model, steps, batch_size, half_len, lr, warmup, generator, foreach) -> tuple[int, int]:
    """train_lm's arguments; returns the range ``(low, high)`` of n, from ``half_len`` = n >= 2 or ``(low, high)``."""
    require_lm(model)
    require_int(steps, "steps")
    require_int(batch_size, "batch_size")
    if isinstance(half_len, tuple) and len(half_len) == 2:
        low = require_int(half_len[0], "half_len[0]", 2)  # n >= 2: the repeated half has a target to copy
        high = require_int(half_len[1], "half_len[1]", low, low_name="half_len[0]")
    else:
        low = high = require_int(half_len, "half_len", 2)
    require_positive(lr, "lr")
    require_int(warmup, "warmup", 0)
    require_generator(generator)
    require_foreach(foreach)
    return low, high


def require_fit_args(model, batches, lr, warmup, foreach) -> None:
    """fit_lm's arguments: a DecoderOnlyLM, (S, B, T) int64 tokens with S, B >= 1 and T >= 2, lr > 0, warmup >= 0."""
    require_lm(model)
    if not isinstance(batches, torch.Tensor) or batches.dim() != 3 or batches.shape[-1] < 2 or 0 in batches.shape:
        got = tuple(batches.shape) if isinstance(batches, torch.Tensor) else type(batches).__name__
        raise ValueError(f"batches must be a (S, B, T) tensor of tokens with S, B >= 1 and T >= 2, got {got}")
    if batches.dtype != torch.int64:
        raise TypeError(f"batches must be a (S, B, T) int64 tensor of tokens, got {batches.dtype}")
    require_tokens(batches.flatten(0, 1), "batches", model.vocab_size)
    require_positive(lr, "lr")
    require_int(warmup, "warmup", 0)
    require_foreach(foreach, "True, False or None", show_value=True)


def require_markov_args(batch_size, length, table, follow, generator) -> None:
    """markov_task's arguments: B >= 1, length >= 2, a (C, C) int64 table of tokens in [0, C), follow in [0, 1]."""
    require_int(batch_size, "batch_size")
    require_int(length, "length", 2)
    if not isinstance(table, torch.Tensor) or table.dim() != 2 or table.shape[0] != table.shape[1]:
        got = tuple(table.shape) if isinstance(table, torch.Tensor) else type(table).__name__
        raise ValueError(f"table must be a (C, C) tensor of tokens, got {got}")
    if table.numel() == 0:
        raise ValueError(f"table must hold at least one token (C >= 1), got shape {tuple(table.shape)}")
    if table.dtype != torch.int64:
        raise TypeError(f"table must be a (C, C) int64 tensor of tokens, got {table.dtype}")
    require_tokens(table, "table", table.shape[0])
    require_number(follow, "follow", "in [0, 1]", lambda v: 0 <= v <= 1)
    require_generator(generator)
