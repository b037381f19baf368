"""Checks for the exercises on attention pooling: Nadaraya-Watson weights and kernels (notebook 01)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .._validate import LOW_PRECISION, require_sequence
from ..pooling import epanechnikov, nadaraya_watson
from . import feedback as fb
from .feedback import Feedback

__all__ = [
    "check_nw_weights",
    "check_pooling_limit",
    "check_epanechnikov",
    "check_nw_pooling",
]

NW_QUERY, NW_KEYS = 2.0, (1.0, 2.0, 4.0)


@fb.tensor_answer((3,), "the three weights as a tensor of shape (3,)")
def check_nw_weights(weights) -> Feedback:
    """Gaussian attention weights (bandwidth 1) of the query 2.0 over the keys 1.0, 2.0, 4.0."""
    keys = torch.tensor(NW_KEYS, dtype=torch.float64)
    d2 = (NW_QUERY - keys) ** 2
    if not weights.is_floating_point():
        return fb.hint(f"weights are fractions: use a floating-point tensor, got {weights.dtype}.")
    right = torch.softmax(-d2 / 2, 0)
    if fb.close(weights, right):
        return fb.ok("the key at the query's own position gets the most weight; the far key at 4.0 the least.")
    for hint in (fb.not_finite(weights, "your weights"), fb.rounded(weights, right)):
        if hint is not None:
            return hint
    if fb.close(weights, torch.exp(-d2 / 2)) or fb.close(weights, torch.exp(-d2 / 2) / math.sqrt(2 * math.pi)):
        return fb.hint("these are the kernel values; divide by their sum (softmax) so the weights sum to 1.")
    if fb.close(weights, torch.softmax(d2 / 2, 0)):
        return fb.hint("the far key gets the most weight: the score is MINUS the squared distance over 2.")
    if fb.close(weights, torch.softmax(-d2, 0)):
        return fb.hint("close: the Gaussian score is -(x - x_i)^2 / 2, you left out the 1/2.")
    if fb.close(weights, torch.softmax(-(NW_QUERY - keys).abs() / 2, 0)):
        return fb.hint("square the distance: the score is -(x - x_i)^2 / 2.")
    if abs(float(weights.sum()) - 1) > 1e-4:
        return fb.hint(f"attention weights sum to 1, yours sum to {float(weights.sum()):.4f}.")
    if fb.close(weights, torch.nn.functional.one_hot(d2.argmin(), 3).double()):
        return fb.hint(
            "all weight on the nearest key is the limit h -> 0; with h = 1 the softmax spreads it over the keys."
        )
    if fb.close(weights, torch.full((3,), 1 / 3, dtype=torch.float64)):
        return fb.hint("equal weights 1/3 are the limit h -> infinity; with h = 1 nearer keys get more weight.")
    if fb.close(weights.sort().values, right.sort().values):
        return fb.hint("the right weights in another order: entry i belongs to key i, in the order 1.0, 2.0, 4.0.")
    return fb.hint("the weights sum to 1 but are not softmax(-(x - x_i)^2 / 2); check each score.")


def check_pooling_limit(answer, y_train: torch.Tensor) -> Feedback:
    """The single value every prediction tends to as the bandwidth grows without bound."""
    if answer is None:
        return fb.hint("replace None with a number computed from the training targets.")
    value = fb.as_number(answer, "one number computed from the training targets")
    if isinstance(value, Feedback):
        return value
    if isinstance(y_train, torch.Tensor):
        y_train = y_train.detach()  # a target that requires grad is read for its values alone
    else:
        require_sequence(y_train, "y_train", "training targets")
    try:
        y_train = torch.as_tensor(y_train, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(f"y_train must hold the training targets as numbers, got {type(y_train).__name__}") from error
    target = float(y_train.mean())
    if math.isclose(value, target, rel_tol=1e-4, abs_tol=1e-4):
        return fb.ok(
            f"with a huge bandwidth every key gets weight 1/n, so every prediction is the mean {target:.4f}: "
            "average pooling."
        )
    for hint in (fb.not_finite(torch.tensor(value), "your number"), fb.rounded(value, target)):
        if hint is not None:
            return hint
    if math.isclose(value, float(y_train.sum()), rel_tol=1e-4, abs_tol=1e-4):
        return fb.hint(f"that is the sum of the {len(y_train)} targets; each has weight 1/n, so divide the sum by n.")
    if math.isclose(value, 1 / len(y_train), rel_tol=1e-4, abs_tol=1e-4):
        return fb.hint("that is the weight 1/n each key gets; the prediction is the weighted sum of the targets.")
    if math.isclose(value, float(y_train.median()), rel_tol=1e-4, abs_tol=1e-4):
        return fb.hint("that is the median; with equal weights 1/n the weighted sum is a different statistic.")
    return fb.hint(
        "as h grows, every kernel value tends to the same number, so every key gets weight 1/n. What is sum_i y_i / n?"
    )


@fb.function_answer("your function of u", "a function of u")
def check_epanechnikov(fn: Callable[[torch.Tensor], torch.Tensor] | None) -> Feedback:
    """A function ``u -> K(u)`` equal to the Epanechnikov density ``3/4 (1 - u^2)`` on [-1, 1], 0 elsewhere."""
    u = torch.linspace(-2, 2, 81, dtype=torch.float64)
    want = epanechnikov(u)  # the reference first, from the original grid
    got, problem = fb.call_on_copies(fn, {"u": u})
    if problem is None:
        problem = fb.tensor_problem(got, tuple(u.shape), "a tensor of K(u) values shaped like u")
    if problem is not None:
        return problem
    if not got.is_floating_point():
        return fb.hint(f"K(u) values are fractions such as 0.75: return a floating-point tensor, got {got.dtype}.")
    if fb.close(got, want):
        return fb.ok("the weight falls from 3/4 at u = 0 to exactly 0 at |u| = 1 and stays 0 beyond.")
    hint = fb.not_finite(got, "your K(u)")
    if hint is not None:
        return hint
    outside = u.abs() > 1
    if (got[outside] < -1e-9).any():
        return fb.hint("the kernel is negative for |u| > 1: clip it at 0 there (torch.clamp(..., min=0)).")
    if (got[outside].abs() > 1e-9).any():
        return fb.hint("a compact kernel is exactly 0 for |u| > 1.")
    ratio = got[~outside & (u.abs() < 0.9)] / want[~outside & (u.abs() < 0.9)]
    if torch.allclose(ratio, ratio[0].expand_as(ratio), rtol=1e-4):
        return fb.hint(
            f"the shape is right but the scale is {float(ratio[0]) * 0.75:.4g} (1 - u^2): use 3/4 "
            "so that the density integrates to 1."
        )
    return fb.hint("inside |u| <= 1 the kernel is 3/4 (1 - u^2).")


_POOLING_SEED = 1964  # private: the student never sees these cases


def _pooling_cases() -> list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor, float, torch.Tensor | None]]:
    """Hidden cases (name, queries (Q,), keys (K,), values (K,), h, mask (Q, K) or None); Q != K in each."""
    gen = torch.Generator().manual_seed(_POOLING_SEED)

    def draw(num_q: int, num_k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q = torch.rand(num_q, generator=gen, dtype=torch.float64) * 5
        k = torch.rand(num_k, generator=gen, dtype=torch.float64) * 5
        return q, k, torch.randn(num_k, generator=gen, dtype=torch.float64)

    h = 0.3 + 1.5 * float(torch.rand((), generator=gen, dtype=torch.float64))
    mask = torch.rand(6, 8, generator=gen) < 0.6  # (Q, K)
    mask[:, 0], mask[:, 1] = True, False  # every row keeps a key and loses one
    empty = mask.clone()
    empty[2] = False  # the query in row 2 may use no key
    return [
        ("h = 1, no mask", *draw(4, 7), 1.0, None),
        (f"h = {h:.2f}, no mask", *draw(5, 9), h, None),
        ("a mask", *draw(6, 8), 0.8, mask),
        ("a mask that leaves row 2 empty", *draw(6, 8), 0.8, empty),
    ]


@fb.function_answer("your function my_nw_pooling(queries, keys, values, bandwidth, mask=None)", "a function")
def check_nw_pooling(fn) -> Feedback:
    """A Gaussian Nadaraya-Watson pooling ``fn(queries, keys, values, bandwidth, mask=None) -> (predictions, weights)``.

    Runs ``fn`` on hidden random cases (more keys than queries, with and without a mask, one masked row with no
    key at all) and compares with ``attn_course.nadaraya_watson``; the hint names the first thing that is off.
    """
    for name, queries, keys, values, h, mask in _pooling_cases():
        num_q, num_k = len(queries), len(keys)
        want_pred, want = nadaraya_watson(queries, keys, values, "gaussian", h, mask)  # the reference first
        inputs = {"queries": queries, "keys": keys, "values": values, "bandwidth": h}
        if mask is not None:
            inputs["mask"] = mask  # passed fifth, by position: my_nw_pooling(queries, keys, values, bandwidth, mask)
        result, problem = fb.call_on_copies(fn, inputs)
        if problem is not None:
            return fb.hint(f"on a case with {name}, {problem.message}")
        if not (isinstance(result, tuple) and len(result) == 2):
            return fb.hint(f"return two things, (predictions, weights); got {type(result).__name__}.")
        pred, weights = result
        for got, what, shape in ((weights, "weights", (num_q, num_k)), (pred, "predictions", (num_q,))):
            if not isinstance(got, torch.Tensor):
                return fb.hint(f"{what} should be a torch.Tensor, got {type(got).__name__}.")
            if got.dtype in LOW_PRECISION:
                return fb.low_precision(got, f"your {what}")
            if tuple(got.shape) == shape[::-1] and len(shape) == 2:
                return fb.hint(
                    f"weights have shape {tuple(got.shape)} = (K, Q): transposed. One row per query: "
                    f"with {num_q} queries and {num_k} keys the shape is (Q, K) = {shape}."
                )
            if tuple(got.shape) != shape:
                return fb.hint(
                    f"{what}: expected shape {shape} for {num_q} queries and {num_k} keys, got {tuple(got.shape)}."
                )
        if mask is not None and fb.close(weights.nan_to_num(0.0), _masked_softmax(queries, keys, h, ~mask)):
            return fb.hint(
                "the mask polarity is reversed: True means 'may attend', so fill the scores where mask is False."
            )
        if torch.isnan(weights).any() or torch.isnan(pred).any():
            if mask is not None and torch.isnan(weights[~mask.any(-1)]).any():
                return fb.hint(
                    "a query whose mask row is all False gets NaN (softmax of only -inf is 0/0). "
                    "Give such a row zero weights and the prediction 0: it has nothing to attend to."
                )
            return fb.hint(f"NaN in your output on a case with {name}.")
        if fb.close(weights, want) and fb.close(pred, want_pred):
            continue
        if mask is not None and _finite_fill(weights, want, mask):
            return fb.hint(
                "the query whose mask row is all False still gets weights that sum to 1: a finite fill such as -1e9 "
                "leaves softmax something to spread. Fill with -inf, then give that row zero weights and the "
                "prediction 0 (it has nothing to attend to)."
            )
        return _pooling_hint(name, queries, keys, values, h, mask, pred, weights, want)
    return fb.ok(
        "your pooling matches attn_course.nadaraya_watson on every hidden case, masks and an empty row included."
    )


def _pooling_hint(name, queries, keys, values, h, mask, pred, weights, want) -> Feedback:
    """The hint for weights or predictions that differ from the reference on one hidden case."""
    if fb.close(weights, want):
        return fb.hint("the weights are right but the predictions are not: the prediction is weights @ values.")
    d2 = (queries.unsqueeze(1) - keys.unsqueeze(0)) ** 2  # (Q, K)
    allowed = torch.ones_like(d2, dtype=torch.bool) if mask is None else mask

    def softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return torch.softmax(scores.masked_fill(~allowed, -math.inf), dim).nan_to_num(0.0)

    if mask is not None and fb.close(weights, nadaraya_watson(queries, keys, values, "gaussian", h)[1]):
        return fb.hint(
            "the weights ignore the mask: set the scores of masked keys (mask False) to -inf before softmax."
        )
    if fb.close(weights, softmax(-d2 / (2 * h**2), dim=0)):
        return fb.hint("each column sums to 1: you normalised over the queries. Softmax over the keys (dim=-1).")
    if fb.close(weights, softmax(d2 / (2 * h**2))):
        return fb.hint(
            "the far keys get the most weight: the score is MINUS the squared distance, -(x - x_i)^2 / (2h^2)."
        )
    if fb.close(weights, softmax(-d2 / h**2)):
        return fb.hint("wrong scale: the Gaussian score is -(x - x_i)^2 / (2 h^2); you left out the 2.")
    if any(fb.close(weights, softmax(-d2 / s)) for s in (2 * h, 2.0, 2 / h**2)):
        return fb.hint("wrong scale: divide the squared distance by 2 h^2 (h squared).")
    if fb.close(weights, torch.exp(-d2 / (2 * h**2)) * allowed):
        return fb.hint("these are kernel values: divide each row by its sum (softmax) so the weights sum to 1.")
    return fb.hint(f"your weights differ from Nadaraya-Watson's on a case with {name}: compare one row by hand.")


def _finite_fill(weights: torch.Tensor, want: torch.Tensor, mask: torch.Tensor) -> bool:
    """Whether the weights are right on every row with a key to attend to, and sum to 1 on an all-False row."""
    empty = ~mask.any(-1)  # (Q,)
    if not bool(empty.any()) or not fb.close(weights[~empty], want[~empty]):
        return False
    return fb.close(weights[empty].sum(-1), torch.ones(int(empty.sum()), dtype=torch.float64))


def _masked_softmax(queries: torch.Tensor, keys: torch.Tensor, h: float, allowed: torch.Tensor) -> torch.Tensor:
    """Gaussian weights (Q, K) over the keys where ``allowed`` is True; a row with none is all zeros."""
    scores = -((queries.unsqueeze(1) - keys.unsqueeze(0)) ** 2) / (2 * h**2)  # (Q, K)
    return torch.softmax(scores.masked_fill(~allowed, -math.inf), -1).nan_to_num(0.0)
