"""Checks for the exercises on scoring functions: scaled dot-product and additive scores (notebook 03).

Two are "build it" checks: the learner's function runs on random cases it cannot see (a private
generator seed), is compared with a reference, and the hint names what is off. Notebook 03's other checks are in
``checks.cost`` (memory and parameters) and ``checks.scaling`` (the variance of a dot product).
"""

from __future__ import annotations

import math

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_scaled_scores", "check_dot_scores_fn", "check_additive_scores_fn"]

SCORE_QUERY = ((1.0, 2.0),)  # (Q, D) = (1, 2)
SCORE_KEYS = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))  # (K, D) = (3, 2)
_HIDDEN_SEED = 20_241_103  # the hidden cases of the build-it checks; not shown in the notebook


def check_scaled_scores(scores) -> Feedback:
    """Scaled dot-product scores of the query [1, 2] against the keys [1, 0], [0, 1], [1, 1]: shape (1, 3)."""
    q, k = torch.tensor(SCORE_QUERY, dtype=torch.float64), torch.tensor(SCORE_KEYS, dtype=torch.float64)
    problem = fb.tensor_problem(scores, (1, 3), "a (1, 3) tensor: one row per query, one column per key")
    if problem is not None:
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (3, 1):
            return fb.hint("transposed: rows are queries and columns keys, so compute q @ k.T, shape (1, 3).")
        return problem
    if not scores.is_floating_point():
        return fb.hint(f"scores are real numbers after the scaling: use a floating-point tensor, got {scores.dtype}.")
    raw = q @ k.T
    if fb.close(scores, raw / math.sqrt(2)):
        return fb.ok("q . k / sqrt(2) = [0.7071, 1.4142, 2.1213]: the key most aligned with the query scores highest.")
    for hint in (fb.not_finite(scores, "your scores"), fb.rounded(scores, raw / math.sqrt(2))):
        if hint is not None:
            return hint
    if fb.close(scores, raw):
        return fb.hint("these are the plain dot products: divide by sqrt(D), with D = 2.")
    if fb.close(scores, raw / 2):
        return fb.hint("divide by the square root of D, not by D.")
    if fb.close(scores, torch.softmax(raw / math.sqrt(2), dim=-1)):
        return fb.hint("these are the weights; the scores are what goes into the softmax.")
    if fb.close(scores, raw * math.sqrt(2)):
        return fb.hint("you multiplied by sqrt(D); divide the dot products by sqrt(D), with D = 2.")
    return fb.hint("score = (query . key) / sqrt(D) for each key; D = 2 here.")


def _call(fn, args: dict, described: str) -> tuple[object, Feedback | None]:
    """The learner's function on copies of ``args`` (``fb.call_on_copies``); a hint naming the case if it raises or
    changes an input in place."""
    result, problem = fb.call_on_copies(fn, args)
    if problem is not None:
        return None, fb.hint(f"on {described}, {problem.message}")
    return result, None


_DOT_SIZES = ((2, 3, 5, 6), (1, 6, 2, 11), (3, 4, 7, 16))  # (B, Q, K, D): Q != K, D not all perfect squares


def _dot_cases():
    gen = torch.Generator().manual_seed(_HIDDEN_SEED)
    for batch, num_q, num_k, d in _DOT_SIZES:
        queries = torch.randn(batch, num_q, d, generator=gen) * 2
        keys = torch.randn(batch, num_k, d, generator=gen) * 2
        yield queries, keys


@fb.function_answer("your function of (queries, keys)", "a function of (queries, keys)")
def check_dot_scores_fn(fn) -> Feedback:
    """Build it: ``fn(queries (B, Q, D), keys (B, K, D)) -> (B, Q, K)`` scaled dot-product scores,
    compared with ``queries @ keys^T / sqrt(D)`` on hidden random cases (Q != K, several D)."""
    earlier = None  # the scale of the cases passed so far: a number written in passes one D and fails the next
    shapes = []  # the shapes of the cases passed so far
    for queries, keys in _dot_cases():
        (b, q, d), k = queries.shape, keys.shape[1]
        raw = torch.matmul(queries, keys.transpose(-2, -1))  # (B, Q, D) x (B, D, K) -> (B, Q, K): the reference first
        want = raw / math.sqrt(d)
        scores, problem = _call(fn, {"queries": queries, "keys": keys}, f"queries {(b, q, d)} and keys {(b, k, d)}")
        if problem is not None:
            return problem
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (b, k, q):
            return fb.hint(
                f"transposed: for queries {(b, q, d)} and keys {(b, k, d)} the scores are (B, Q, K) = "
                f"{(b, q, k)}, you returned {(b, k, q)}; multiply queries by keys.transpose(1, 2)."
            )
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (b, q, q) != (b, q, k):
            if fb.close(scores, queries @ queries.transpose(-2, -1) / math.sqrt(d)):
                return fb.hint("you scored the queries against themselves; score each query against the keys.")
        problem = fb.first_hint(
            fb.earlier_shape(scores, (b, q, k), shapes),
            fb.tensor_problem(scores, (b, q, k), f"scores of shape (B, Q, K) = {(b, q, k)}"),
        )
        if problem is not None:
            return problem
        if not scores.is_floating_point():
            return fb.hint(f"scores must be floating point, got {scores.dtype}.")
        if fb.close(scores, want):
            earlier = math.sqrt(d)
            shapes.append((b, q, k))
            continue
        hint = fb.first_hint(fb.not_finite(scores, "your scores"), fb.rounded(scores, want))
        if hint is not None:
            return hint
        if fb.close(scores, raw * math.sqrt(d)):
            return fb.hint("you multiplied by sqrt(D); divide the dot products by sqrt(D).")
        if fb.close(scores, raw):
            return fb.hint("missing the 1/sqrt(D) scale: these are the plain dot products.")
        if fb.close(scores, raw / d):
            return fb.hint("divided by D; divide by sqrt(D).")
        if earlier is not None and fb.close(scores, raw / earlier):
            return fb.hint(
                f"you divided by {earlier:.4g} = sqrt({round(earlier**2)}) again, but D = {d} here, so the scale is "
                f"sqrt({d}) = {math.sqrt(d):.4g}: read D from the inputs (queries.shape[-1]) instead of fixing it."
            )
        if fb.close(scores, raw / math.sqrt(k)) or fb.close(scores, raw / math.sqrt(q)):
            return fb.hint("wrong scale: D is the size of each query and key (the last axis), not a number of tokens.")
        if fb.close(scores, torch.softmax(want, dim=-1)):
            return fb.hint("these are the weights (softmax applied); return the scores that go into the softmax.")
        scale = _one_scale(raw, scores)
        if scale is not None and abs(scale - round(scale)) < 1e-6:
            return fb.hint(
                f"you divided by the whole number {round(scale)}, but D = {d} here and sqrt({d}) = {math.sqrt(d):.4g}: "
                "divide by math.sqrt(D) (not math.isqrt(D), not a fixed number), with D read from the inputs "
                "(queries.shape[-1])."
            )
        if scale is not None:
            return fb.hint(
                f"you divided by {scale:.4g}, but D = {d} here, so the scale is sqrt({d}) = {math.sqrt(d):.4g}: "
                "read D from the inputs (queries.shape[-1]) instead of fixing it."
            )
        return fb.hint("scores[b, i, j] = queries[b, i] . keys[b, j] / sqrt(D); compare with one entry by hand.")
    sizes = ", ".join(str(d) for *_, d in _DOT_SIZES)
    return fb.ok(
        f"your scores match queries @ keys^T / sqrt(D) on {len(_DOT_SIZES)} hidden cases with Q != K and D in {sizes}."
    )


def _one_scale(raw: torch.Tensor, scores: torch.Tensor) -> float | None:
    """The number c with scores = raw / c on every entry, when there is one (a fixed scale); else None."""
    total = float(scores.double().abs().sum())
    if total == 0:
        return None
    scale = float(raw.abs().sum()) / total
    return scale if fb.close(scores, raw / scale) else None


def _additive_cases():
    gen = torch.Generator().manual_seed(_HIDDEN_SEED + 1)
    for batch, num_q, num_k, dq, dk, units in ((2, 3, 5, 6, 4, 7), (1, 4, 2, 3, 5, 8)):
        queries = torch.randn(batch, num_q, dq, generator=gen)
        keys = torch.randn(batch, num_k, dk, generator=gen)
        w_q = torch.randn(units, dq, generator=gen)
        w_k = torch.randn(units, dk, generator=gen)
        w_v = torch.randn(units, generator=gen)
        yield queries, keys, w_q, w_k, w_v


@fb.function_answer("your function of (queries, keys, w_q, w_k, w_v)", "a function of (queries, keys, w_q, w_k, w_v)")
@fb.own_random_state
def check_additive_scores_fn(fn) -> Feedback:
    """Build it: ``fn(queries (B, Q, Dq), keys (B, K, Dk), w_q (U, Dq), w_k (U, Dk), w_v (U,)) -> (B, Q, K)``
    additive scores ``w_v . tanh(W_q q + W_k k)``, compared with the same MLP written with ``torch.nn`` on
    hidden random cases (Dq != Dk, Q != K)."""
    for queries, keys, w_q, w_k, w_v in _additive_cases():
        (b, q, dq), (k, dk), units = queries.shape, keys.shape[1:], w_v.shape[0]
        mlp = torch.nn.Sequential(
            torch.nn.Linear(dq + dk, units, bias=False), torch.nn.Tanh(), torch.nn.Linear(units, 1, bias=False)
        )
        with torch.no_grad():  # the reference first, from the original inputs
            mlp[0].weight.copy_(torch.cat([w_q, w_k], dim=1))  # (U, Dq + Dk): the MLP on [q; k]
            mlp[2].weight.copy_(w_v.unsqueeze(0))  # (1, U)
            pairs = torch.cat([queries.unsqueeze(2).expand(b, q, k, dq), keys.unsqueeze(1).expand(b, q, k, dk)], -1)
            want = mlp(pairs).squeeze(-1)  # (B, Q, K, Dq + Dk) -> (B, Q, K)
            linear = (queries @ w_q.T).unsqueeze(2) + (keys @ w_k.T).unsqueeze(1)  # (B, Q, K, U)
        described = f"queries {(b, q, dq)}, keys {(b, k, dk)}, w_q {(units, dq)}, w_k {(units, dk)}, w_v {(units,)}"
        inputs = {"queries": queries, "keys": keys, "w_q": w_q, "w_k": w_k, "w_v": w_v}
        scores, problem = _call(fn, inputs, described)
        if problem is not None:
            if "raised" in problem.message and "shape" in problem.message:
                return fb.hint(problem.message + " (w_q is (U, Dq): project with queries @ w_q.T)")
            return problem
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (b, k, q):
            return fb.hint(
                f"transposed: the scores are (B, Q, K) = {(b, q, k)}, one row per query; you returned "
                f"{(b, k, q)}. Put the query axis before the key axis when you broadcast."
            )
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (b, q, k, units):
            return fb.hint(f"shape {(b, q, k, units)} is the hidden layer; reduce the last axis with w_v.")
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (b, q, k, 1):
            return fb.hint(f"expected shape {(b, q, k)}, got {(b, q, k, 1)}: squeeze the last axis of size 1 away.")
        problem = fb.tensor_problem(scores, (b, q, k), f"scores of shape (B, Q, K) = {(b, q, k)}")
        if problem is not None:
            return problem
        if fb.close(scores, want):
            continue
        hint = fb.not_finite(scores, "your scores")
        if hint is not None:
            return hint
        if fb.close(scores, linear @ w_v):
            return fb.hint("missing the tanh: without it the score is linear, w_v . (W_q q + W_k k).")
        if fb.close(scores, torch.tanh(linear @ w_v)):
            return fb.hint("tanh belongs on the U hidden units, before w_v; you applied it after.")
        if fb.close(scores, torch.tanh(linear).sum(-1)):
            return fb.hint("the hidden units are summed; weight them with w_v instead (hidden @ w_v).")
        if fb.close(scores, torch.softmax(want, dim=-1)):
            return fb.hint("these are the weights (softmax applied); return the scores that go into the softmax.")
        if fb.close(scores, torch.relu(linear) @ w_v) or fb.close(scores, torch.sigmoid(linear) @ w_v):
            return fb.hint("the activation of the hidden units is tanh, not ReLU or a sigmoid.")
        return fb.hint("score[b, i, j] = w_v . tanh(w_q @ queries[b, i] + w_k @ keys[b, j]); check one entry by hand.")
    return fb.ok("your additive scores match the torch.nn MLP on [q; k] on 2 hidden cases with Dq != Dk and Q != K.")
