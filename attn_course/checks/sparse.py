"""Checks for the exercises on sparse attention: MoBA's causal choice of blocks for one query; DeepSeek-V3.2-Exp's
lightning indexer, the cheap scores that choose the keys (notebook 13)."""

from __future__ import annotations

import math

import torch

from ..sparse import lightning_indexer
from . import feedback as fb
from .build_it import float32_close, gaussian, mistake_hint, shape_hint, tensor_answer, with_case
from .feedback import Feedback

__all__ = ["check_causal_blocks", "check_indexer_scores"]


def _in_case(problem: Feedback, what: str) -> Feedback:
    return problem if "hidden case" in problem.message else with_case(problem, what)


# ----------------------------------------------------------------------------------------------------------------------
# MoBA's causal choice of blocks for one query
# ----------------------------------------------------------------------------------------------------------------------


def _choose(scores, own: int, slots: int, candidates, lower_ties: bool = True, sign: int = 1) -> torch.Tensor:
    """(n,) bool: block ``own`` (if 0 <= own < n) and the ``slots`` highest ``sign * scores`` among ``candidates``,
    ties to the lower block index (or the higher)."""
    candidates = [b for b in candidates if b < len(scores)]
    ranked = sorted(candidates, key=lambda b: (-sign * float(scores[b]), b if lower_ties else -b))
    chosen = torch.zeros(scores.shape, dtype=torch.bool)  # (n,)
    chosen[ranked[: max(slots, 0)]] = True
    if 0 <= own < len(scores):
        chosen[own] = True
    return chosen


def _reference_blocks(block_scores, position: int, block_size: int, top_blocks: int) -> torch.Tensor:
    own = position // block_size  # the block holding the query
    return _choose(block_scores, own, top_blocks - 1, range(own))  # (n,): own block + best earlier blocks


def _block_cases() -> list[tuple[str, dict]]:
    """Hidden cases, the scores written out so that each holds the trap its name says."""

    def case(scores: list[float], position: int, block_size: int, top_blocks: int) -> dict:
        scores = torch.tensor(scores, dtype=torch.float64)
        return {"block_scores": scores, "position": position, "block_size": block_size, "top_blocks": top_blocks}

    return [
        (
            "8 blocks of 4, position 15 (the last key of block 3), top_blocks 3; a future block scores highest, "
            "the own block lowest",
            case([0.3, -0.2, 0.9, -1.5, 0.1, 2.0, 0.4, 1.1], 15, 4, 3),
        ),
        ("5 blocks of 3, position 6, block 2's first key, top_blocks 2, a tie", case([0.5, 0.5, -0.3, 1, 0], 6, 3, 2)),
        ("6 blocks of 4, position 9 (inside block 2), top_blocks 1", case([1.2, 0.7, -0.4, 0.3, 2.5, 0.0], 9, 4, 1)),
        ("6 blocks of 1 key, position 3, top_blocks 3, a tie", case([0.2, 0.9, 0.2, 2.0, 1.5, 0.0], 3, 1, 3)),
        (
            "10 blocks of 5, position 44 (the last key of block 8), top_blocks 3, every score negative, a tie",
            case([-0.9, -0.4, -0.2, -1.3, -0.6, -0.2, -2.0, -0.2, -3.0, -0.05], 44, 5, 3),
        ),
        ("5 blocks of 4, position 17 in the short last block, top_blocks 8", case([-0.1, 0.2, -0.6, 0.4, 0], 17, 4, 8)),
        ("7 blocks of 2, position 0, top_blocks 3: no earlier block", case([-2, 1, 0.5, 3, -0.2, 0.1, 0.7], 0, 2, 3)),
    ]


def _future(position: int, own: int) -> str:
    return (
        f"a block that starts after position {position} is in the query's future: causal MoBA never selects it, even "
        f"when it scores highest; rank blocks 0 .. {own - 1} alone, before the own block {own} (a future score masked "
        "to 0 instead of -inf still beats a negative one), and take no more of them than there are."
    )


def _block_mistakes(block_scores, position, block_size, top_blocks, seen) -> list[tuple[torch.Tensor, str]]:
    """(what a common mistake selects, its hint); ``seen``: the earlier cases' (block_size, top_blocks)."""
    s, n, own, slots = block_scores, len(block_scores), position // block_size, top_blocks - 1
    sizes, tops = {b for b, _ in seen}, {t for _, t in seen}  # one value in every earlier case: written in?
    rows = [(_choose(s, position // b, slots, range(position // b)), f"block_size ({block_size}") for b in sizes]
    rows = rows if len(sizes) == 1 else []
    rows += [(_choose(s, own, t - 1, range(own)), f"top_blocks ({top_blocks}") for t in tops if len(tops) == 1]
    rows = [
        (wrong, f"use this call's {why} here), not a number written in: take every size from the arguments.")
        for wrong, why in rows
    ]
    rows += [
        (
            _choose(s, high, slots, range(high)),
            f"position {position} is in block position // block_size = {own} (block b holds the keys b * block_size "
            f".. (b + 1) * block_size - 1), not {high}: round down; ceil(position / block_size) is one too high "
            "inside a block, (position + 1) // block_size at its last key.",
        )
        for high in {-(-position // block_size), (position + 1) // block_size} - {own}
    ]
    return rows + [
        (
            _choose(s, -1, top_blocks, range(own + 1)),
            f"the own block, position // block_size = {own}, which holds the query, is always selected, whatever "
            "its score (the query must read its own keys); it takes one of the top_blocks slots, the best earlier "
            "blocks the top_blocks - 1 others.",
        ),
        (
            _choose(s, own, top_blocks, range(own)),
            "the own block counts toward top_blocks: select it and the best top_blocks - 1 earlier blocks; yours "
            "selected top_blocks earlier blocks besides it, one too many.",
        ),
        (
            _choose(s, own, slots, range(own + 1)),
            "rank the earlier blocks alone: the own block is selected anyway, and ranked with them it also takes one "
            "of the top_blocks - 1 slots meant for them (yours selected one block too few).",
        ),
        (_choose(s, own, slots, [b for b in range(n) if b != own]), _future(position, own)),
        (_choose(s, -1, top_blocks, range(n)), f"that is the top-k of every block; {_future(position, own)}"),
        (
            _choose(s, own, slots, range(own), lower_ties=False),
            "equal scores go to the lower block index (rank with torch.sort(scores, descending=True, stable=True)); "
            "yours took the higher one.",
        ),
        (
            _choose(s, own, slots, range(own), sign=-1),
            "take the best earlier blocks, the highest block_scores (descending), not the lowest.",
        ),
    ]


def _wrong_blocks(got: torch.Tensor, want: torch.Tensor, inputs: dict, seen) -> Feedback:
    """The hint for a mask of the right shape that selects other blocks: a typical mistake, else what is off."""
    for wrong, why in _block_mistakes(*inputs.values(), seen):
        if torch.equal(got, wrong):
            return fb.hint(why)
    position, own = inputs["position"], inputs["position"] // inputs["block_size"]
    if bool(got[own + 1 :].any()):
        return fb.hint(_future(position, own))
    if not bool(got[own]):
        return fb.hint(f"the block holding position (position // block_size = {own}) is always selected.")
    return fb.hint(
        f"you selected {int(got.sum())} blocks, the rule {int(want.sum())}: the own block and the top_blocks - 1 "
        "highest-scoring earlier blocks (all of them when there are fewer), ties to the lower index."
    )


def _integers(result) -> list[int] | None:
    """``result`` as a list of ints when it is a 1-D integer tensor or a list or tuple of ints; else None."""
    if isinstance(result, torch.Tensor) and result.dim() == 1 and result.dtype in (torch.int32, torch.int64):
        return result.tolist()
    return list(result) if isinstance(result, (list, tuple)) and all(type(i) is int for i in result) else None


def _mask_problem(result, want: torch.Tensor, inputs: dict, what: str, earlier: list) -> Feedback | torch.Tensor:
    """The learner's mask, detached, or the hint for a result that is not one bool tensor of ``want``'s shape."""
    n, own = len(want), inputs["position"] // inputs["block_size"]
    expected = f"return a bool tensor of shape ({n},), one entry per block, True on the selected blocks"
    values = _integers(result)
    picked = want.nonzero().flatten().tolist()
    if values is not None and sorted(values) == picked and (len(values) != n or not set(values) <= {0, 1}):
        return fb.hint(
            f"{expected}, not the indices of the selected blocks: start from torch.zeros(len(block_scores), "
            "dtype=torch.bool) and set those indices to True."
        )
    if not isinstance(result, torch.Tensor):
        return fb.hint(f"{expected}; got {fb.described(result)}.")
    if tuple(result.shape) == (own + 1,) and own + 1 != n:
        return fb.hint(f"{expected}, future ones included (False); got {own + 1}, the blocks up to the own one only.")
    shape = fb.first_hint(
        fb.earlier_shape(result, want.shape, earlier),
        shape_hint(what, "take the number of blocks from block_scores, write no size in.", ("the mask", result, want)),
    )
    if shape is None and result.dtype != torch.bool:
        kind = str(result.dtype).removeprefix("torch.")
        return fb.hint(f"the mask is a bool tensor (True = selected), got {kind}: use dtype=torch.bool or compare.")
    return result.detach() if shape is None else shape


def _raised(problem: Feedback, inputs: dict, case: int) -> Feedback:
    """``problem``, with the likely cause when the code raised where there are fewer earlier blocks than slots."""
    own, slots = inputs["position"] // inputs["block_size"], inputs["top_blocks"] - 1
    if slots > own and problem.message.startswith("your function raised"):
        return fb.hint(
            f"{problem.message.rstrip('.')}: here there are fewer earlier blocks ({own}) than the top_blocks - 1 = "
            f"{slots} slots left after the own block, so take them all (torch.topk needs k <= the number of "
            "candidates: min(top_blocks - 1, position // block_size))."
        )
    sizes = (len(inputs["block_scores"]), inputs["position"], inputs["block_size"], inputs["top_blocks"])
    return fb.raised_on(problem, sizes, worked_before=case > 0)


@fb.function_answer("your function causal_blocks(block_scores, position, block_size, top_blocks)", "a function")
def check_causal_blocks(causal_blocks) -> Feedback:
    """Build it: ``causal_blocks(block_scores, position, block_size, top_blocks) -> selected``, MoBA's causal choice
    of blocks for one query.

    ``block_scores`` (n_blocks,) float, the query's score against each block's mean key; ``position`` its index among
    the keys; returns a bool (n_blocks,) mask. A block that starts after ``position`` is never selected; the block
    ``position // block_size`` always is and counts toward ``top_blocks``; the other ``top_blocks - 1`` go to the best
    earlier blocks, ties to the lower index (all of them when fewer). Hidden cases: a query at a block's first and last
    key and in a short last block, ``top_blocks`` 1 and above the blocks available, ties, negative scores, a future
    block that scores highest, an own block that scores lowest; the learner's function gets copies.
    """
    shapes, seen = [], []
    for case, (what, inputs) in enumerate(_block_cases()):
        want = _reference_blocks(*inputs.values())
        result, problem = fb.call_on_copies(causal_blocks, inputs)
        if problem is not None:
            return _in_case(_raised(problem, inputs, case), what)
        got = _mask_problem(result, want, inputs, what, shapes)
        if isinstance(got, Feedback):
            return _in_case(got, what)
        if not torch.equal(got, want):
            return _in_case(_wrong_blocks(got, want, inputs, seen), what)
        shapes.append(tuple(want.shape))
        seen.append((inputs["block_size"], inputs["top_blocks"]))
    return fb.ok(
        "the same blocks on every hidden case: the own block always, no future block even when it scores highest, the "
        "best earlier blocks with ties to the lower index. This is the choice inside ac.block_sparse_attention."
    )


# ----------------------------------------------------------------------------------------------------------------------
# The lightning indexer: scores[t, s] = sum_j w[t, j] ReLU(q[t, j] . k[s])
# ----------------------------------------------------------------------------------------------------------------------


def _indexer_cases() -> list[tuple[str, dict]]:
    """Hidden cases, float64: D != H, Q != K but the first, head weights and dot products of both signs."""
    gen = torch.Generator().manual_seed(1303)

    def case(queries: int, keys: int, heads: int, size: int) -> dict:
        return {
            "index_queries": gaussian(queries, heads, size, gen=gen),
            "index_keys": gaussian(keys, size, gen=gen),
            "head_weights": gaussian(queries, heads, gen=gen),
        }

    return [
        ("Q = K = 5, H = 3 heads of D = 4", case(5, 5, 3, 4)),  # square: weights per key and a transposed result run
        ("Q = 4 queries, K = 9 keys, H = 2, D = 6", case(4, 9, 2, 6)),
        ("Q = 7, K = 3, H = 4, D = 2", case(7, 3, 4, 2)),
        ("Q = 1, K = 6, H = 1, D = 3", case(1, 6, 1, 3)),
        ("Q = 6, K = 8, H = 5, D = 7", case(6, 8, 5, 7)),
    ]


def _indexer_mistakes(index_queries, index_keys, head_weights) -> list[tuple[torch.Tensor, str]]:
    """(what a common mistake computes, the hint that names it)."""
    q, k, w = index_queries, index_keys, head_weights
    dots, weight = torch.einsum("thd,sd->ths", q, k), w[..., None]  # (Q, H, D) x (K, D) -> (Q, H, K); (Q, H, 1)
    right, square = (weight * dots.clamp(min=0)).sum(1), q.shape[0] == k.shape[0]  # (Q, H, K) -> (Q, K)
    formula = "scores[t, s] = sum_j head_weights[t, j] * ReLU(q[t, j] . k[s])"
    return [
        ((weight * dots).sum(1), f"ReLU each head's dot product: {formula}; a negative one must count 0, not less."),
        ((weight * dots).sum(1).clamp(min=0), f"the ReLU goes inside the sum, not on the weighted sum: {formula}."),
        ((weight * dots.softmax(-1)).sum(1), f"ReLU, not softmax over the keys: {formula}."),
        ((weight * dots.softmax(1)).sum(1), f"ReLU, not softmax over the heads: {formula}."),
        (dots.clamp(min=0).sum(1), f"weight each head by head_weights[t, j]: {formula}; yours leaves them out."),
        (right / q.shape[1], f"sum over the heads, not the mean: {formula}."),
        ((weight * dots).clamp(min=0).sum(1), f"ReLU(w * q . k) drops a head of negative weight: {formula}."),
        (
            torch.einsum("sh,ths->ts", w, dots.clamp(min=0)) if square else right[:0],
            "the head weights belong to the query: head_weights[t, j] for query t, not head_weights[s, j] of key s.",
        ),
        (right.T if square else right[:0], "transposed: the scores are (Q, K), one row per query, one column per key."),
        (right / math.sqrt(q.shape[-1]), f"no 1/sqrt(D) in the indexer: {formula}; the scores only rank the keys."),
    ]


def _scores_problem(result, want: torch.Tensor, inputs: dict, what: str, earlier: list) -> Feedback | torch.Tensor:
    """The learner's scores, detached, or the hint for a result that is not one floating (Q, K) tensor."""
    expected = "return the scores alone, one (Q, K) tensor"
    if not isinstance(result, torch.Tensor):
        return fb.hint(f"{expected}; got {fb.described(result)}.")
    (queries, keys), heads, got = want.shape, inputs["head_weights"].shape[1], tuple(result.shape)
    if got == (keys, queries) and queries != keys:
        return fb.hint(
            f"the scores must have shape {(queries, keys)} (Q, K), one row per query, got {got}: transposed."
        )
    if got == (queries, heads, keys):
        return fb.hint(f"got {got}, one score per head (Q, H, K): sum the heads, weighted by head_weights, to (Q, K).")
    return tensor_answer(result, want, earlier, what, "the scores")


@fb.function_answer("your function indexer_scores(index_queries, index_keys, head_weights)", "a function")
def check_indexer_scores(indexer_scores) -> Feedback:
    """Build it: ``indexer_scores(index_queries, index_keys, head_weights) -> scores``, DeepSeek-V3.2-Exp's lightning
    indexer for one sequence.

    ``scores[t, s] = sum_j head_weights[t, j] * ReLU(index_queries[t, j] . index_keys[s])``: index_queries (Q, H, D),
    index_keys (K, D) shared by the H heads, head_weights (Q, H); scores (Q, K). Checked against
    ``lightning_indexer`` on hidden float64 cases (D != H, Q != K, weights and dot products of both signs); a float32
    answer passes; the learner's function gets copies.
    """
    shapes = []
    for case, (what, inputs) in enumerate(_indexer_cases()):
        want = lightning_indexer(*(t[None] for t in inputs.values()))[0]  # (1, ...) -> (Q, K), the reference first
        result, problem = fb.call_on_copies(indexer_scores, inputs)
        if problem is not None:
            sizes = (*inputs["index_queries"].shape, want.shape[1])
            return _in_case(fb.raised_on(problem, sizes, worked_before=case > 0), what)
        got = _scores_problem(result, want, inputs, what, shapes)
        if isinstance(got, Feedback):
            return _in_case(got, what)
        shapes.append(tuple(want.shape))
        if not float32_close(got, want):
            off = fb.hint("the scores are off: scores[t, s] = sum_j head_weights[t, j] * ReLU(q[t, j] . k[s]).")
            mistakes = _indexer_mistakes(*inputs.values())
            return _in_case(mistake_hint(got, want, mistakes, fb.not_finite(got, "the scores"), off), what)
    return fb.ok(
        "the index scores match on every hidden case: each head's dot product through a ReLU, weighted per query and "
        "summed over the heads. This is ac.lightning_indexer; the keys with the highest scores are the ones read."
    )
