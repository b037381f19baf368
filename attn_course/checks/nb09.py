"""Checks for the exercises of notebook 09 (a decoder-only model, the KV cache, grouped-query attention)."""

from __future__ import annotations

import torch

from ._feedback import Feedback, _function_answer, _hint, _number_answer, _ok

__all__ = ["check_repeat_kv", "check_cache_update", "check_cache_memory"]


def _call(fn, *args) -> torch.Tensor | Feedback:
    """``fn(*args)``, or a hint saying what went wrong when it raises or returns something else than a tensor."""
    try:
        out = fn(*args)
    except Exception as error:  # the learner's code: any error becomes a hint
        return _hint(f"your function raised {type(error).__name__}: {error}")
    if not isinstance(out, torch.Tensor):
        return _hint(f"your function must return a tensor, got {type(out).__name__}.")
    return out


def _compare(out: torch.Tensor, want: torch.Tensor, *, wrong_shape: str, mistakes, otherwise: str) -> Feedback | None:
    """None when ``out`` equals ``want``; else a hint: ``wrong_shape`` (its ``{got}`` is the shape received), the hint
    of the first typical mistake ``(what it computes, hint)`` that ``out`` equals, or ``otherwise``."""
    if tuple(out.shape) != tuple(want.shape):
        return _hint(wrong_shape.format(got=tuple(out.shape)))
    if torch.equal(out, want):
        return None
    return _hint(next((hint for wrong, hint in mistakes if torch.equal(out, wrong)), otherwise))


@_function_answer("your function", "a function")
def check_repeat_kv(fn) -> Feedback:
    """``fn(kv (B, G, K, dh), num_heads H) -> (B, H, K, dh)``: key/value head ``g`` serves query heads
    ``g * H/G .. (g + 1) * H/G - 1``. Run on random cases against ``repeat_interleave``."""
    gen = torch.Generator().manual_seed(9)
    for batch, groups, num_heads, keys, size in ((2, 2, 4, 5, 3), (1, 3, 6, 4, 2), (3, 1, 4, 2, 5), (2, 4, 4, 3, 2)):
        kv = torch.randn(batch, groups, keys, size, generator=gen)
        original = kv.clone()
        out = _call(fn, kv, num_heads)
        if isinstance(out, Feedback):
            return out
        if not torch.equal(kv, original):
            return _hint("your function changed its input in place; build a new tensor instead.")
        want = kv.repeat_interleave(num_heads // groups, dim=1)  # (B, H, K, dh)
        problem = _compare(
            out,
            want,
            wrong_shape=f"for kv of shape {tuple(kv.shape)} and H = {num_heads} expected shape {tuple(want.shape)}, "
            "got {got}: repeat along the head axis (dim 1), H / G times.",
            mistakes=[
                (
                    kv.repeat(1, num_heads // groups, 1, 1),  # heads (0, 1, 0, 1) instead of (0, 0, 1, 1)
                    "the heads come in the wrong order: kv.repeat tiles them (0, 1, 0, 1); each group must serve "
                    "neighbouring query heads (0, 0, 1, 1), as repeat_interleave gives.",
                )
            ],
            otherwise="the values differ from H / G copies of each key/value head, side by side, along dim 1.",
        )
        if problem is not None:
            return problem
    return _ok("each key/value head is copied H / G times next to itself: query head h reads kv head h // (H / G).")


@_function_answer("your function", "a function")
def check_cache_update(fn) -> Feedback:
    """``fn(cached (B, G, K, dh) or None, new (B, G, T, dh)) -> (B, G, K + T, dh)``: the old positions, then the
    new ones. Run on random cases, with and without earlier positions."""
    gen = torch.Generator().manual_seed(11)
    cases = [(None, torch.randn(2, 2, 3, 4, generator=gen))]
    cases += [
        (torch.randn(2, 2, k, 4, generator=gen), torch.randn(2, 2, t, 4, generator=gen)) for k, t in ((3, 1), (5, 2))
    ]
    for cached, new in cases:
        out = _call(fn, None if cached is None else cached.clone(), new.clone())
        if isinstance(out, Feedback):
            return out
        if cached is None:
            if not torch.equal(out, new):
                return _hint("with an empty cache (None), the keys kept are just the new ones.")
            continue
        want = torch.cat([cached, new], dim=2)
        problem = _compare(
            out,
            want,
            wrong_shape=f"cached {tuple(cached.shape)} and new {tuple(new.shape)} should give {tuple(want.shape)}, got "
            "{got}: concatenate along the positions' axis (dim 2).",
            mistakes=[
                (
                    torch.cat([new, cached], dim=2),
                    "the new positions go after the old ones (positions in order: old, then new).",
                )
            ],
            otherwise="the values differ from the cached positions followed by the new ones along dim 2.",
        )
        if problem is not None:
            return problem
    return _ok("the cache grows by T positions along dim 2, old positions first; nothing is computed again.")


@_number_answer("a number of GiB")
def check_cache_memory(answer: float) -> Feedback:
    """KV cache of Llama 2 7B (32 layers, 32 key/value heads, head size 128) for 4096 tokens in float16, in GiB."""
    gib = 2**30
    want = 2 * 32 * 32 * 128 * 4096 * 2 / gib
    if abs(answer - want) < 0.01:
        return _ok("2 x 32 x 32 x 128 x 4096 x 2 bytes = 2 GiB for one sequence of 4096 tokens.")
    if abs(answer - want / 2) < 0.01:
        return _hint("the cache holds keys and values: a factor 2.")
    if abs(answer - want * 2) < 0.01:
        return _hint("float16 takes 2 bytes per value, not 4.")
    if abs(answer - want * gib / 1e9) < 0.01:
        return _hint("a GiB is 2^30 bytes, not 10^9.")
    if abs(answer - want / 4) < 0.01:
        return _hint("count both keys and values (a factor 2), at 2 bytes each (another factor 2).")
    return _hint(
        "multiply 2 (keys and values) x layers x KV heads x head size x tokens x 2 bytes, then divide by 2^30."
    )
