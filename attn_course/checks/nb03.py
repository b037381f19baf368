"""Checks for the exercises of notebook 03 (scoring functions).

Two are "build it" checks: the learner's function runs on random cases it cannot see (a private
generator seed), is compared with a reference, and the hint names what is off.
"""

from __future__ import annotations

import math

import torch

from ._feedback import (
    Feedback,
    _call_on_copies,
    _close,
    _described,
    _earlier_shape,
    _first_hint,
    _function_answer,
    _hint,
    _not_finite,
    _number_answer,
    _ok,
    _own_random_state,
    _rounded,
    _tensor_problem,
)

__all__ = [
    "check_scaled_scores",
    "check_attention_memory",
    "check_dot_scores_fn",
    "check_additive_scores_fn",
    "check_parameter_growth",
    "check_variance_scale",
]

SCORE_QUERY = ((1.0, 2.0),)  # (Q, D) = (1, 2)
SCORE_KEYS = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))  # (K, D) = (3, 2)
_HIDDEN_SEED = 20_241_103  # the hidden cases of the build-it checks; not shown in the notebook
MIB = 2**20


def check_scaled_scores(scores) -> Feedback:
    """Scaled dot-product scores of the query [1, 2] against the keys [1, 0], [0, 1], [1, 1]: shape (1, 3)."""
    q, k = torch.tensor(SCORE_QUERY, dtype=torch.float64), torch.tensor(SCORE_KEYS, dtype=torch.float64)
    problem = _tensor_problem(scores, (1, 3), "a (1, 3) tensor: one row per query, one column per key")
    if problem is not None:
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (3, 1):
            return _hint("transposed: rows are queries and columns keys, so compute q @ k.T, shape (1, 3).")
        return problem
    if not scores.is_floating_point():
        return _hint(f"scores are real numbers after the scaling: use a floating-point tensor, got {scores.dtype}.")
    raw = q @ k.T
    if _close(scores, raw / math.sqrt(2)):
        return _ok("q . k / sqrt(2) = [0.7071, 1.4142, 2.1213]: the key most aligned with the query scores highest.")
    for hint in (_not_finite(scores, "your scores"), _rounded(scores, raw / math.sqrt(2))):
        if hint is not None:
            return hint
    if _close(scores, raw):
        return _hint("these are the plain dot products: divide by sqrt(D), with D = 2.")
    if _close(scores, raw / 2):
        return _hint("divide by the square root of D, not by D.")
    if _close(scores, torch.softmax(raw / math.sqrt(2), dim=-1)):
        return _hint("these are the weights; the scores are what goes into the softmax.")
    if _close(scores, raw * math.sqrt(2)):
        return _hint("you multiplied by sqrt(D); divide the dot products by sqrt(D), with D = 2.")
    return _hint("score = (query . key) / sqrt(D) for each key; D = 2 here.")


def _two_numbers(answer, what: str) -> tuple[float, float] | Feedback:
    if answer is None:
        return _hint(f"replace None with {what}.")
    try:
        first, second = answer
        return float(first), float(second)
    except (TypeError, ValueError, RuntimeError):
        kind = _described(answer) if isinstance(answer, (list, tuple)) else type(answer).__name__
        return _hint(f"expected two numbers ({what}), got {kind}: {answer!r}.")


def check_attention_memory(answer) -> Feedback:
    """MiB of the (B, Q, K) scores and of additive attention's (B, Q, K, U) hidden tensor, float32,
    for B = 8, Q = K = 1024, U = 128: the pair ``(scores_mib, hidden_mib)``."""
    got = _two_numbers(answer, "(scores_mib, hidden_mib)")
    if isinstance(got, Feedback):
        return got
    scores, hidden = 8 * 1024 * 1024 * 4 / MIB, 8 * 1024 * 1024 * 128 * 4 / MIB  # 32, 4096

    def near(a, b):
        return math.isclose(a, b, rel_tol=1e-3)

    if near(got[0], scores) and near(got[1], hidden):
        return _ok("32 MiB of scores against 4096 MiB (4 GiB) of hidden units: U = 128 times more, for one layer.")
    if near(got[0], scores):  # the scores are right: what is off is the hidden tensor
        if near(got[1], scores):
            return _hint("the hidden tensor holds U = 128 numbers for every (query, key) pair, not one.")
        return _hint("the scores are right; the hidden tensor has shape (B, Q, K, U) = (8, 1024, 1024, 128).")
    if near(got[0], hidden) and near(got[1], scores):
        return _hint("the pair is swapped: the scores (B, Q, K) come first, then the hidden tensor (B, Q, K, U).")
    if near(got[0], scores * MIB):
        return _hint("these are in bytes; divide by 2**20 = 1,048,576 for MiB.")
    if near(got[0], scores * 2):
        return _hint("a float32 number takes 4 bytes, not 8 (that is float64).")
    if near(got[0], scores / 1024):
        return _hint("that is in GiB (2**30 bytes); the question asks for MiB, 2**20 bytes.")
    if near(got[0], scores / 4):
        return _hint("that counts numbers (in Mi); a float32 number takes 4 bytes.")
    if near(got[0], scores * MIB / 1e6):
        return _hint("a MiB is 2**20 = 1,048,576 bytes, not 10**6.")
    if near(got[0], scores / 8):
        return _hint("that is one sequence; the batch holds B = 8.")
    return _hint("bytes = B * Q * K (* U for the hidden tensor) * 4 for float32; divide by 2**20 for MiB.")


def _call(fn, args: dict, described: str) -> tuple[object, Feedback | None]:
    """The learner's function on copies of ``args`` (``_call_on_copies``); a hint naming the case if it raises or
    changes an input in place."""
    result, problem = _call_on_copies(fn, args)
    if problem is not None:
        return None, _hint(f"on {described}, {problem.message}")
    return result, None


_DOT_SIZES = ((2, 3, 5, 6), (1, 6, 2, 11), (3, 4, 7, 16))  # (B, Q, K, D): Q != K, D not all perfect squares


def _dot_cases():
    gen = torch.Generator().manual_seed(_HIDDEN_SEED)
    for batch, num_q, num_k, d in _DOT_SIZES:
        queries = torch.randn(batch, num_q, d, generator=gen) * 2
        keys = torch.randn(batch, num_k, d, generator=gen) * 2
        yield queries, keys


@_function_answer("your function of (queries, keys)", "a function of (queries, keys)")
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
            return _hint(
                f"transposed: for queries {(b, q, d)} and keys {(b, k, d)} the scores are (B, Q, K) = "
                f"{(b, q, k)}, you returned {(b, k, q)}; multiply queries by keys.transpose(1, 2)."
            )
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (b, q, q) != (b, q, k):
            if _close(scores, queries @ queries.transpose(-2, -1) / math.sqrt(d)):
                return _hint("you scored the queries against themselves; score each query against the keys.")
        problem = _first_hint(
            _earlier_shape(scores, (b, q, k), shapes),
            _tensor_problem(scores, (b, q, k), f"scores of shape (B, Q, K) = {(b, q, k)}"),
        )
        if problem is not None:
            return problem
        if not scores.is_floating_point():
            return _hint(f"scores must be floating point, got {scores.dtype}.")
        if _close(scores, want):
            earlier = math.sqrt(d)
            shapes.append((b, q, k))
            continue
        hint = _first_hint(_not_finite(scores, "your scores"), _rounded(scores, want))
        if hint is not None:
            return hint
        if _close(scores, raw * math.sqrt(d)):
            return _hint("you multiplied by sqrt(D); divide the dot products by sqrt(D).")
        if _close(scores, raw):
            return _hint("missing the 1/sqrt(D) scale: these are the plain dot products.")
        if _close(scores, raw / d):
            return _hint("divided by D; divide by sqrt(D).")
        if earlier is not None and _close(scores, raw / earlier):
            return _hint(
                f"you divided by {earlier:.4g} = sqrt({round(earlier**2)}) again, but D = {d} here, so the scale is "
                f"sqrt({d}) = {math.sqrt(d):.4g}: read D from the inputs (queries.shape[-1]) instead of fixing it."
            )
        if _close(scores, raw / math.sqrt(k)) or _close(scores, raw / math.sqrt(q)):
            return _hint("wrong scale: D is the size of each query and key (the last axis), not a number of tokens.")
        if _close(scores, torch.softmax(want, dim=-1)):
            return _hint("these are the weights (softmax applied); return the scores that go into the softmax.")
        scale = _one_scale(raw, scores)
        if scale is not None and abs(scale - round(scale)) < 1e-6:
            return _hint(
                f"you divided by the whole number {round(scale)}, but D = {d} here and sqrt({d}) = {math.sqrt(d):.4g}: "
                "divide by math.sqrt(D) (not math.isqrt(D), not a fixed number), with D read from the inputs "
                "(queries.shape[-1])."
            )
        if scale is not None:
            return _hint(
                f"you divided by {scale:.4g}, but D = {d} here, so the scale is sqrt({d}) = {math.sqrt(d):.4g}: "
                "read D from the inputs (queries.shape[-1]) instead of fixing it."
            )
        return _hint("scores[b, i, j] = queries[b, i] . keys[b, j] / sqrt(D); compare with one entry by hand.")
    sizes = ", ".join(str(d) for *_, d in _DOT_SIZES)
    return _ok(
        f"your scores match queries @ keys^T / sqrt(D) on {len(_DOT_SIZES)} hidden cases with Q != K and D in {sizes}."
    )


def _one_scale(raw: torch.Tensor, scores: torch.Tensor) -> float | None:
    """The number c with scores = raw / c on every entry, when there is one (a fixed scale); else None."""
    total = float(scores.double().abs().sum())
    if total == 0:
        return None
    scale = float(raw.abs().sum()) / total
    return scale if _close(scores, raw / scale) else None


def _additive_cases():
    gen = torch.Generator().manual_seed(_HIDDEN_SEED + 1)
    for batch, num_q, num_k, dq, dk, units in ((2, 3, 5, 6, 4, 7), (1, 4, 2, 3, 5, 8)):
        queries = torch.randn(batch, num_q, dq, generator=gen)
        keys = torch.randn(batch, num_k, dk, generator=gen)
        w_q = torch.randn(units, dq, generator=gen)
        w_k = torch.randn(units, dk, generator=gen)
        w_v = torch.randn(units, generator=gen)
        yield queries, keys, w_q, w_k, w_v


@_function_answer("your function of (queries, keys, w_q, w_k, w_v)", "a function of (queries, keys, w_q, w_k, w_v)")
@_own_random_state
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
                return _hint(problem.message + " (w_q is (U, Dq): project with queries @ w_q.T)")
            return problem
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (b, k, q):
            return _hint(
                f"transposed: the scores are (B, Q, K) = {(b, q, k)}, one row per query; you returned "
                f"{(b, k, q)}. Put the query axis before the key axis when you broadcast."
            )
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (b, q, k, units):
            return _hint(f"shape {(b, q, k, units)} is the hidden layer; reduce the last axis with w_v.")
        if isinstance(scores, torch.Tensor) and tuple(scores.shape) == (b, q, k, 1):
            return _hint(f"expected shape {(b, q, k)}, got {(b, q, k, 1)}: squeeze the last axis of size 1 away.")
        problem = _tensor_problem(scores, (b, q, k), f"scores of shape (B, Q, K) = {(b, q, k)}")
        if problem is not None:
            return problem
        if _close(scores, want):
            continue
        hint = _not_finite(scores, "your scores")
        if hint is not None:
            return hint
        if _close(scores, linear @ w_v):
            return _hint("missing the tanh: without it the score is linear, w_v . (W_q q + W_k k).")
        if _close(scores, torch.tanh(linear @ w_v)):
            return _hint("tanh belongs on the U hidden units, before w_v; you applied it after.")
        if _close(scores, torch.tanh(linear).sum(-1)):
            return _hint("the hidden units are summed; weight them with w_v instead (hidden @ w_v).")
        if _close(scores, torch.softmax(want, dim=-1)):
            return _hint("these are the weights (softmax applied); return the scores that go into the softmax.")
        if _close(scores, torch.relu(linear) @ w_v) or _close(scores, torch.sigmoid(linear) @ w_v):
            return _hint("the activation of the hidden units is tanh, not ReLU or a sigmoid.")
        return _hint("score[b, i, j] = w_v . tanh(w_q @ queries[b, i] + w_k @ keys[b, j]); check one entry by hand.")
    return _ok("your additive scores match the torch.nn MLP on [q; k] on 2 hidden cases with Dq != Dk and Q != K.")


def check_parameter_growth(answer) -> Feedback:
    """Parameters at D = 512 with U fixed at 64: ``(additive, bilinear)`` for
    ``AdditiveAttention(key_size=D, query_size=D, num_hiddens=64)`` and a bilinear score ``M`` (D x D)."""
    got = _two_numbers(answer, "(additive, bilinear)")
    if isinstance(got, Feedback):
        return got
    d, units = 512, 64
    additive, bilinear = units * (2 * d + 1), d * d  # 65600, 262144
    if got == (additive, bilinear):
        return _ok(
            "65,600 against 262,144: U (2D + 1) grows linearly in D for a fixed U, D^2 quadratically; "
            "with U = 64 they are equal near D = 128 and the bilinear score costs more beyond."
        )
    if got == (bilinear, additive):
        return _hint("the pair is swapped: the additive count comes first, then the bilinear one.")
    if got == (units * (2 * 64 + 1), 64 * 64):
        return _hint("those are the counts at D = 64, the first row of the table; the question asks D = 512.")
    if got[0] == units * 2 * d:
        return _hint("W_q and W_k are counted; add w_v's U = 64 weights.")
    if got[0] == d * (2 * d + 1):
        return _hint("that is U = D; here U stays at 64 while D grows.")
    if got[0] == units * (2 * d + 1) + units + 1:
        return _hint("AdditiveAttention has no biases (bias=False in its three Linear layers).")
    if got[0] != additive:
        return _hint("additive: W_q (U x D) + W_k (U x D) + w_v (U) with U = 64, D = 512.")
    return _hint("the bilinear score q^T M k has one weight per entry of M, which is D x D.")


@_number_answer("the scale as a number")
def check_variance_scale(answer: float) -> Feedback:
    """The scale that brings q . k back to unit variance when q, k in R^64 have independent components of mean 0
    and variance sigma^2 = 4."""
    if math.isnan(answer):
        return _not_finite(torch.tensor(answer), "your number")
    if math.isclose(answer, 32.0, rel_tol=1e-6):
        return _ok(
            "Var(q_i k_i) = sigma^2 sigma^2 = 16, so Var(q . k) = 64 * 16 = 1024 and the scale is "
            "sqrt(1024) = 32 = sigma^2 sqrt(D)."
        )
    if math.isclose(answer, 16.0, rel_tol=1e-6):
        return _hint("sigma sqrt(D) = 16 forgets that both factors have variance sigma^2: Var(q_i k_i) = sigma^4.")
    if math.isclose(answer, 8.0, rel_tol=1e-6):
        return _hint("sqrt(D) = 8 is the scale for unit-variance components; here each has variance 4.")
    if math.isclose(answer, 1024.0, rel_tol=1e-6):
        return _hint("1024 is Var(q . k); dividing by c divides the variance by c^2, so take its square root.")
    if math.isclose(answer, 4.0, rel_tol=1e-6):
        return _hint("sigma^2 alone leaves out the D = 64 terms of the sum: Var(q . k) = D Var(q_i k_i).")
    if math.isclose(answer, 1 / 32, rel_tol=1e-6):
        return _hint("that is the reciprocal: the scale c is what q . k is divided by, so that Var(q . k / c) = 1.")
    if math.isclose(answer, 256.0, rel_tol=1e-6):
        return _hint("D sigma^2 = 256 counts one sigma^2 per term: Var(q_i k_i) = sigma^4; then take the square root.")
    if abs(answer - 32.0) < 0.05 * 32:
        return _hint("close: that looks measured from samples; compute the scale exactly from Var(q . k) = D sigma^4.")
    return _hint("Var(q . k) = D Var(q_i k_i) and Var(q_i k_i) = E[q_i^2] E[k_i^2]; the scale is the square root.")
