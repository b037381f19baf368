"""Generating text with a decoder-only model, with and without a KV cache (notebook 09).

Each step turns the logits of the last position into a distribution over the next token (temperature, top-k),
draws a token, appends it and feeds it back. Without a cache the model reads the whole sequence again at every
step; with a :class:`~attn_course.kvcache.KVCache` it reads the newest token only.

Shapes: ``B`` batch, ``T`` prompt length, ``N`` new tokens, ``C`` vocabulary size.
"""

from __future__ import annotations

import math
import time

import torch
from torch import nn

from ._validate.lm import require_generate_args, require_sampling, require_timing_args
from .kvcache import KVCache

__all__ = ["next_token_probs", "generate", "time_per_token"]


def next_token_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None) -> torch.Tensor:
    """``softmax(logits / temperature)`` over the ``top_k`` largest logits (all when None): (..., C) -> (..., C).

    Temperature 0 is greedy decoding: probability 1 on the largest logit (the first one, on a tie). Logits tied
    with the ``top_k``-th largest are kept too.
    """
    temperature = require_sampling(logits, temperature, top_k)
    if temperature == 0:
        return nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)  # (..., C)
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest logit
        logits = logits.masked_fill(logits < kth, -torch.inf)  # the others get probability exactly 0
    shifted = logits - logits.amax(dim=-1, keepdim=True)  # (..., C), <= 0: a small temperature cannot overflow
    return torch.softmax(shifted / temperature, dim=-1)  # (..., C), = softmax(logits / temperature)


@torch.no_grad()
def generate(
    model: nn.Module,
    prompt: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    use_cache: bool = True,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Continue ``prompt`` (B, T) by ``max_new_tokens`` tokens: returns (B, T + N).

    Args:
        model: a ``DecoderOnlyLM`` (any module called as ``model(tokens, cache)`` with ``.blocks`` and
            ``.vocab_size``). It is run in evaluation mode, then put back in the mode it was in.
        temperature, top_k: as in :func:`next_token_probs`; temperature 0 is greedy decoding.
        use_cache: feed only the newest token, reusing what each layer kept of the others (a ``KVCache``: keys and
            values, or MLA's latents), or feed the whole sequence again at every step. Both give the same tokens.
        generator: the random generator of the draws (None: PyTorch's global one).
    """
    require_generate_args(model, prompt, max_new_tokens, temperature, top_k, use_cache, generator)
    was_training = model.training
    model.eval()
    try:
        tokens = prompt
        cache = KVCache(len(model.blocks)) if use_cache else None
        fed = prompt  # what the model reads next: the prompt, then one token (cache) or everything (no cache)
        for _ in range(max_new_tokens):
            logits = model(fed, cache)[:, -1]  # (B, C): the prediction of the last position
            probs = next_token_probs(logits, temperature, top_k)
            if temperature == 0:
                nxt = probs.argmax(-1, keepdim=True)  # (B, 1)
            else:
                nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
            tokens = torch.cat([tokens, nxt], dim=1)  # (B, t + 1)
            fed = nxt if use_cache else tokens
    finally:
        model.train(was_training)
    return tokens


@torch.no_grad()
def time_per_token(model: nn.Module, lengths, *, use_cache: bool, repeats: int = 5, seed: int = 0) -> list[float]:
    """Seconds to compute the next token's logits when ``n`` tokens precede it, for each ``n`` in ``lengths``.

    With the cache, the ``n`` tokens are already in a ``KVCache`` (filled beforehand, not timed) and the model reads
    the newest token only; without it, the model reads all ``n + 1`` tokens. Each time is the fastest of ``repeats``
    runs (the least disturbed by other work on the machine). Tokens are random, drawn with ``seed``.
    """
    lengths = require_timing_args(model, lengths, use_cache, repeats)
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    results = []
    try:
        for n in lengths:
            tokens = torch.randint(0, model.vocab_size, (1, n + 1), generator=generator).to(device)  # (1, n + 1)
            best = math.inf
            for _ in range(repeats):
                cache = None
                if use_cache:
                    cache = KVCache(len(model.blocks))
                    model(tokens[:, :n], cache)  # the n earlier tokens, kept (not timed)
                started = time.perf_counter()
                model(tokens[:, n:], cache) if use_cache else model(tokens)
                best = min(best, time.perf_counter() - started)
            results.append(best)
    finally:
        model.train(was_training)
    return results
