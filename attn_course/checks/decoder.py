"""Checks for the exercises on the decoder-only model: grouped-query attention's repeated heads, one cached decoding
step, the size of the KV cache (notebook 09).

Notebook 09's check on multi-head latent attention is in ``checks.mla``.
"""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_repeat_kv", "check_decode_step", "check_cache_memory"]


def _compare(out: torch.Tensor, want: torch.Tensor, *, wrong_shape: str, mistakes, otherwise: str) -> Feedback | None:
    """None when ``out`` equals ``want``; else a hint: ``wrong_shape`` (its ``{got}`` is the shape received), the hint
    of the first typical mistake ``(what it computes, hint)`` that ``out`` equals, or ``otherwise``."""
    if tuple(out.shape) != tuple(want.shape):
        return fb.hint(wrong_shape.format(got=tuple(out.shape)))
    if torch.equal(out, want):
        return None
    return fb.hint(next((hint for wrong, hint in mistakes if torch.equal(out, wrong)), otherwise))


def _repeat_shape(kv: torch.Tensor, num_heads: int, got: tuple[int, ...], want: tuple[int, ...]) -> str:
    """What a result of the wrong shape did, for check_repeat_kv's hint."""
    batch, groups, keys, size = kv.shape
    copies = num_heads // groups
    start = f"for kv of shape {tuple(kv.shape)} and H = {num_heads} expected shape {want}, got {got}"
    if got == tuple(kv.shape):
        return f"{start}: that is kv unchanged; copy each of its G heads H / G times (here {copies}) along dim 1."
    if len(got) == 4 and got[0] == batch and got[2:] == (keys, size) and got[1] % groups == 0:
        made = got[1] // groups
        if made == num_heads:
            return (
                f"{start}: each head copied H = {made} times, not H times but H / G = {copies} times "
                "(num_heads // kv.shape[1])."
            )
        return (
            f"{start}: each head copied {made} times where H / G = {copies} here: a count written in? Compute it "
            "from the inputs, num_heads // kv.shape[1]."
        )
    if sorted(got) == sorted(want):
        return f"{start}: the axes are in another order; the result is (B, H, K, d_h), the heads on dim 1."
    if len(got) == 4 and got[1] == groups:
        grown = [axis for axis in (0, 2, 3) if got[axis] != kv.shape[axis]]
        if grown:
            return f"{start}: you repeated along dim {grown[0]}; the heads are on dim 1: repeat there, H / G times."
    return f"{start}: repeat along the head axis (dim 1), H / G times."


@fb.function_answer("your function", "a function")
def check_repeat_kv(fn) -> Feedback:
    """``fn(kv (B, G, K, dh), num_heads H) -> (B, H, K, dh)``: key/value head ``g`` serves query heads
    ``g * H/G .. (g + 1) * H/G - 1``. Run on random cases against ``repeat_interleave``."""
    gen = torch.Generator().manual_seed(9)
    for batch, groups, num_heads, keys, size in ((2, 2, 4, 5, 3), (1, 3, 6, 4, 2), (3, 1, 4, 2, 5), (2, 4, 4, 3, 2)):
        kv = torch.randn(batch, groups, keys, size, generator=gen)
        want = kv.repeat_interleave(num_heads // groups, dim=1)  # (B, H, K, dh), the reference first
        out, problem = fb.call_on_copies(fn, {"kv": kv, "num_heads": num_heads})
        if problem is not None:
            return problem
        if not isinstance(out, torch.Tensor):
            return fb.hint(f"your function must return a tensor, got {type(out).__name__}.")
        if tuple(out.shape) != tuple(want.shape):
            return fb.hint(_repeat_shape(kv, num_heads, tuple(out.shape), tuple(want.shape)))
        if out.dtype != kv.dtype:
            return fb.hint(
                f"your result is {out.dtype} where kv is {kv.dtype}: keep kv's dtype (copying heads changes no value)."
            )
        problem = _compare(
            out,
            want,
            wrong_shape="expected shape " + str(tuple(want.shape)) + ", got {got}.",
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
    return fb.ok("each key/value head is copied H / G times next to itself: query head h reads kv head h // (H / G).")


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: bool = True) -> torch.Tensor:
    """softmax(q k^T / sqrt(dh)) v for queries that may see every key: (B, H, Q, dh) -> (B, H, Q, dh)."""
    scores = q @ k.transpose(-2, -1)  # (B, H, Q, dh) x (B, H, dh, K) -> (B, H, Q, K)
    return torch.softmax(scores / math.sqrt(q.shape[-1]) if scale else scores, dim=-1) @ v  # (B, H, Q, dh)


def _step_mistakes(q, k, v, t) -> list[tuple[torch.Tensor, str]]:
    """What typical wrong decode steps return at step ``t`` (q, k, v: the whole (B, H, T, dh) sequence)."""
    now = slice(t, t + 1)
    return [
        (
            _attend(q[:, :, now], k[:, :, now], v[:, :, now]),
            "the output ignores the cached positions: concatenate the cache and the new key and value on dim 2, "
            "then attend to all of them.",
        ),
        (
            _attend(q[:, :, now], k[:, :, : t + 1], v[:, :, : t + 1], scale=False),
            "divide the scores by sqrt(d_h) before the softmax.",
        ),
        (
            torch.softmax(q[:, :, now] @ k[:, :, : t + 1].transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-2)
            @ v[:, :, : t + 1],
            "take the softmax over the keys (the last axis of the scores, dim -1).",
        ),
        (
            torch.softmax(q[:, :, now] @ k[:, :, : t + 1].transpose(-2, -1) * math.sqrt(q.shape[-1]), dim=-1)
            @ v[:, :, : t + 1],
            "the scores are multiplied by sqrt(d_h); divide them by it: q k^T / sqrt(d_h).",
        ),
        (
            v[:, :, :1].expand(-1, -1, 1, -1) if t > 0 else v[:, :, :0],
            "the new query reads key 0 alone: a causal mask of shape (1, t + 1) made with tril keeps only the first "
            "key. The newest query may see every cached position, so it needs no mask.",
        ),
    ]


def _scale_written_in(q, k, v, t, out) -> str | None:
    """The hint for scores divided by sqrt(n) (or n) for some n other than d_h: a size written in; else None."""
    size = q.shape[-1]
    scores = q[:, :, t : t + 1] @ k[:, :, : t + 1].transpose(-2, -1)  # (B, H, 1, t + 1)
    for n in range(2, 1025):
        for scale, written in ((math.sqrt(n), f"sqrt({n})"), (float(n), str(n))):
            if n == size and written.startswith("sqrt"):
                continue
            if fb.close(out, torch.softmax(scores / scale, dim=-1) @ v[:, :, : t + 1], 1e-6):
                return (
                    f"the scores are divided by {written}, but d_h = {size} in this hidden case: a size written in? "
                    "Divide by sqrt(d_h) with d_h = q.shape[-1]."
                )
    return None


@fb.function_answer("your function", "a function")
def check_decode_step(fn) -> Feedback:
    """``fn(q, k, v, cache) -> (out, cache)``: one decoding step of one layer's attention.

    ``q``, ``k``, ``v`` (B, H, 1, dh) are the new position's; ``cache`` is None at the first step, then the
    ``(keys, values)`` (B, H, t, dh) that the previous call returned. The step appends ``k`` and ``v`` to the cache
    (dim 2, oldest first), attends with ``q`` to every cached position and returns ``out`` (B, H, 1, dh) and the grown
    cache. Run step by step on hidden sequences; each output is compared with full causal attention over the whole
    sequence, computed first.
    """
    gen = torch.Generator().manual_seed(11)
    for batch, heads, length, size in ((2, 3, 5, 6), (1, 2, 4, 10), (3, 1, 6, 5)):
        q, k, v = (torch.randn(batch, heads, length, size, generator=gen, dtype=torch.float64) for _ in range(3))
        causal = torch.ones(length, length, dtype=torch.bool).tril()  # (T, T), True = may attend
        scores = (q @ k.transpose(-2, -1) / math.sqrt(size)).masked_fill(~causal, -math.inf)
        want = torch.softmax(scores, dim=-1) @ v  # (B, H, T, dh): the full recomputation
        cache = None
        for t in range(length):
            now = slice(t, t + 1)
            args = {"q": q[:, :, now], "k": k[:, :, now], "v": v[:, :, now], "cache": cache}
            result, problem = fb.call_on_copies(fn, args)
            if problem is not None:
                if "in place" in problem.message:
                    return problem
                if t == 0 and "NoneType" in problem.message:  # a None used as a tuple or a tensor: the cache's?
                    detail = problem.message.split(": ", 1)[-1].rstrip(".")  # "cannot unpack non-iterable NoneType"
                    return fb.hint(
                        f"your function used a None where a tuple or a tensor was needed ({detail}). The first call "
                        "gets cache None (nothing is cached yet): start the cache from the new k and v alone. If the "
                        "None comes from a helper of yours, make the helper return its result."
                    )
                cached = f"with {t} position{'s' if t != 1 else ''} cached"
                if t > 0 and "size" in problem.message:  # tensors of mismatched shapes
                    return fb.hint(
                        f"at step {t}, {cached}, {problem.message.rstrip('.')}; concatenate the cached keys "
                        f"(B, H, {t}, d_h) and the new key (B, H, 1, d_h) on dim 2, and the same for the values."
                    )
                return fb.hint(f"at step {t}, {cached}, {problem.message}")
            if not (isinstance(result, tuple) and len(result) == 2):
                return fb.hint(f"return two things, (out, cache), got {fb.described(result)}.")
            out, cache = result
            if not (isinstance(cache, tuple) and len(cache) == 2 and all(isinstance(c, torch.Tensor) for c in cache)):
                got = "" if isinstance(cache, tuple) and len(cache) == 2 else f" (got {fb.described(cache)})"
                return fb.hint(f"return the cache as a tuple (keys, values) of two tensors, for the next call{got}.")
            low = fb.half_precision(out, *cache, what="your output or cache")
            if low is not None:
                return low
            shape = (batch, heads, t + 1, size)
            if tuple(cache[0].shape) != shape or tuple(cache[1].shape) != shape:
                return fb.hint(
                    f"after {t + 1} step{'s' if t else ''} the cached keys and values should have shape {shape} "
                    f"(one row per position seen), got {tuple(cache[0].shape)} and {tuple(cache[1].shape)}: "
                    "concatenate the cache and the new position on dim 2."
                )
            if not (fb.close(cache[0], k[:, :, : t + 1], 1e-6) and fb.close(cache[1], v[:, :, : t + 1], 1e-6)):
                if fb.close(cache[0], torch.cat([k[:, :, now], k[:, :, :t]], dim=2), 1e-6):
                    return fb.hint("the new position goes after the cached ones (concatenate [cache, new] on dim 2).")
                return fb.hint("the cache should hold the keys and values of every position so far, oldest first.")
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != (batch, heads, 1, size):
                got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                return fb.hint(f"out should have shape {(batch, heads, 1, size)} (one query per head), got {got}.")
            bad = fb.not_finite(out, "out")
            if bad is not None:
                return bad
            if not fb.close(out, want[:, :, now], 1e-6):
                for wrong, hint in _step_mistakes(q, k, v, t):
                    if wrong.shape == out.shape and fb.close(out, wrong, 1e-6):
                        return fb.hint(hint)
                written_in = _scale_written_in(q, k, v, t, out)
                if written_in is not None:
                    return fb.hint(written_in)
                return fb.hint(
                    f"at step {t} the output differs from full causal attention over the whole sequence: "
                    "softmax(q k^T / sqrt(d_h)) over all cached keys, times the cached values."
                )
    return fb.ok(
        "step by step, the cached attention gives exactly the outputs of full causal attention: the new query needs "
        "only the keys and values kept so far."
    )


@fb.number_answer("a number of GiB")
def check_cache_memory(answer: float) -> Feedback:
    """KV cache of Llama 2 7B (32 layers, 32 key/value heads, head size 128) for 4096 tokens in float16, in GiB."""
    gib = 2**30
    want = 2 * 32 * 32 * 128 * 4096 * 2 / gib
    if abs(answer - want) < 0.01:
        return fb.ok("2 x 32 x 32 x 128 x 4096 x 2 bytes = 2 GiB for one sequence of 4096 tokens.")
    if abs(answer - want / 2) < 0.01:
        return fb.hint("the cache holds keys and values: a factor 2.")
    if abs(answer - want * 2) < 0.01:
        return fb.hint("float16 takes 2 bytes per value, not 4.")
    if abs(answer - want * gib / 1e9) < 0.01:
        return fb.hint("a GiB is 2^30 bytes, not 10^9.")
    if abs(answer - want / 4) < 0.01:
        return fb.hint("count both keys and values (a factor 2), at 2 bytes each (another factor 2).")
    named = (
        (want * 2**10, "that is in MiB (2^20 bytes); give GiB, 2^30 bytes: divide by 1024."),
        (want * gib, "that is a number of bytes; divide by 2^30 to give GiB."),
        (want / 32, "that is one layer's cache; Llama 2 7B has 32 layers, each with its own keys and values."),
        (want / 4096, "that is one token's cache; the sequence has 4096 tokens, each with its keys and values."),
        (
            2 * 80 * 8 * 128 * 4096 * 2 / gib,
            "that is Llama 2 70B's cache (80 layers, 8 key/value heads); Llama 2 7B has 32 layers and 32 key/value "
            "heads.",
        ),
        (8 * want, "that is a batch of 8 sequences; the question asks for one sequence of 4096 tokens."),
    )
    for wrong, hint in named:
        if math.isclose(answer, wrong, rel_tol=1e-3):
            return fb.hint(hint)
    return fb.hint(
        "multiply 2 (keys and values) x layers x KV heads x head size x tokens x 2 bytes, then divide by 2^30."
    )
