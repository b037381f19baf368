"""Checks for the exercise on multi-head latent attention: scores read from the latents, W_UK absorbed into the
query (notebook 09)."""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_absorbed_scores"]


def _absorbed_reference(q: torch.Tensor, w_uk: torch.Tensor, latents: torch.Tensor) -> torch.Tensor:
    """q (B, H, T, dh), w_uk (H, dh, d_c), latents (B, K, d_c) -> (B, H, T, K), through the keys W_UK_h c_j."""
    keys = torch.einsum("hdc,bkc->bhkd", w_uk, latents)  # (B, H, K, dh)
    return q @ keys.transpose(-2, -1)  # (B, H, T, dh) x (B, H, dh, K) -> (B, H, T, K)


@fb.function_answer("your function", "a function")
def check_absorbed_scores(fn) -> Feedback:
    """``fn(q (B, H, T, dh), W_UK (H, dh, d_c), latents (B, K, d_c)) -> scores (B, H, T, K)``:
    ``q_h . (W_UK_h c_j) = (W_UK_h^T q_h) . c_j``, unscaled. Run on hidden cases against the keys built explicitly."""
    gen = torch.Generator().manual_seed(28)
    cases = ((2, 3, 4, 5, 6, 10), (1, 2, 3, 7, 5, 5), (3, 4, 1, 2, 3, 7))
    for case, (batch, heads, queries, keys, size, latent) in enumerate(cases):
        q = torch.randn(batch, heads, queries, size, generator=gen)
        w_uk = torch.randn(heads, size, latent, generator=gen)
        latents = torch.randn(batch, keys, latent, generator=gen)
        want = _absorbed_reference(q, w_uk, latents)  # the reference first
        out, problem = fb.call_on_copies(fn, {"q": q, "W_UK": w_uk, "latents": latents})
        if problem is not None:
            return fb.raised_on(problem, (batch, heads, queries, keys, size, latent), worked_before=case > 0)
        if not isinstance(out, torch.Tensor):
            return fb.hint(f"your function must return a tensor, got {type(out).__name__}.")
        if tuple(out.shape) != tuple(want.shape):
            transposed = tuple(out.shape) == (batch, heads, keys, queries) and keys != queries
            return fb.hint(
                f"for q {tuple(q.shape)}, W_UK {tuple(w_uk.shape)} and latents {tuple(latents.shape)} expected scores "
                f"of shape {tuple(want.shape)} (B, H, T, K), got {tuple(out.shape)}"
                + (", the last two axes transposed (one row per query, one column per key)" if transposed else "")
                + ": turn each query into the latent space with W_UK_h^T (size d_c), then take its dot product with "
                "every latent."
            )
        low = fb.half_precision(out, what="your scores")
        if low is not None:
            return low
        bad = fb.not_finite(out, "your scores")
        if bad is not None:
            return bad
        if fb.close(out, want):
            continue
        rounded = fb.rounded(out, want)
        if rounded is not None:
            return rounded
        if fb.close(out, want / math.sqrt(size)) or fb.close(out, want / math.sqrt(latent)):
            return fb.hint("give the raw dot products: the scaling by sqrt(d) comes later, with the softmax.")
        if fb.close(out, want.sum(dim=1, keepdim=True).expand_as(want)):
            return fb.hint("each head h uses its own W_UK_h: do not sum over the heads.")
        if fb.close(out, _absorbed_reference(q, w_uk[:1].expand_as(w_uk), latents)):
            return fb.hint("every head used W_UK[0], head 0's matrix: head h uses its own W_UK_h = W_UK[h].")
        if fb.close(out, want.softmax(dim=-1)):
            return fb.hint(
                "those are attention weights (a softmax over the keys); return the raw scores: the softmax "
                "comes later, after the scaling."
            )
        return fb.hint(
            "the scores differ from q_h . (W_UK_h c_j): compute W_UK_h^T q_h (size d_c) per head, then its dot "
            "product with each latent c_j."
        )
    return fb.ok(
        "your scores equal q_h . (W_UK_h c_j) on every hidden case. Computed as (W_UK_h^T q_h) . c_j, they need no "
        "key at all: the cache keeps only the latents."
    )
