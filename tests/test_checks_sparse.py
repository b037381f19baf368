"""attn_course.checks.sparse, the checks of notebook 13 on MoBA's causal choice of blocks for one query and on
DeepSeek-V3.2-Exp's lightning indexer: "Correct" for a right answer, a hint for each mistake."""

import math

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import checks
from attn_course.sparse import block_sparse_attention

# ----------------------------------------------------------------------------------------------
# Exercise: check_causal_blocks, the blocks one query reads under causal MoBA
# ----------------------------------------------------------------------------------------------


def _blocks_loop(block_scores, position, block_size, top_blocks):
    """Right, by a Python loop: the own block, then the best earlier blocks one by one."""
    own = position // block_size
    selected = [False] * len(block_scores)
    selected[own] = True
    earlier = sorted(range(own), key=lambda b: (-float(block_scores[b]), b))
    for b in earlier[: top_blocks - 1]:
        selected[b] = True
    return torch.tensor(selected)


def _blocks_vectorised(block_scores, position, block_size, top_blocks):
    """Right, vectorised: a stable sort of the earlier blocks' scores, the rest masked to -inf."""
    index = torch.arange(block_scores.shape[0])
    own = position // block_size
    ranked = block_scores.masked_fill(index >= own, -math.inf)
    order = torch.sort(ranked, descending=True, stable=True).indices
    chosen = torch.zeros(block_scores.shape, dtype=torch.bool).scatter(0, order[: top_blocks - 1], True)
    return (chosen & (index < own)) | (index == own)


@pytest.mark.parametrize("fn", [_blocks_loop, _blocks_vectorised])
def test_check_causal_blocks_right_answer(fn):
    assert_correct(checks.check_causal_blocks(fn), "no future block", "ac.block_sparse_attention")


def _bad_blocks(kind):
    def causal_blocks(block_scores, position, block_size, top_blocks):
        n, index = block_scores.shape[0], torch.arange(block_scores.shape[0])
        own, slots = position // block_size, top_blocks - 1
        if kind == "ceil":
            own = math.ceil(position / block_size)
        elif kind == "plus-one":
            own = (position + 1) // block_size
        elif kind == "block-size-4":
            own = position // 4
        elif kind == "top-3":
            slots = 2
        elif kind == "not-counted":
            slots = top_blocks
        candidates = index < own
        if kind == "not-forced":  # the top_blocks best of every block up to the own one, the own one not forced
            ranked = block_scores.masked_fill(index > own, -math.inf)
            order = torch.sort(ranked, descending=True, stable=True).indices[: min(top_blocks, own + 1)]
            return torch.zeros(n, dtype=torch.bool).scatter(0, order, True)
        if kind == "future":  # every block but the own one is a candidate
            candidates = index != own
        if kind == "own-ranked":  # the own block ranked with the earlier ones, then added
            candidates = index <= own
        scores = block_scores
        if kind == "times-mask":  # the future masked by a product: a 0 score, above every negative one
            scores, candidates = block_scores * (index < own), index != own
        if kind == "lowest":
            scores = -scores
        ranked = scores.masked_fill(~candidates, -math.inf)
        order = torch.sort(ranked, descending=True, stable=True).indices
        if kind == "ties-high":  # an ascending stable sort turned round: equal scores come highest index first
            order = torch.argsort(ranked, stable=True).flip(0)
        count = min(slots, int(candidates.sum()))
        if kind == "topk":  # torch.topk of the earlier blocks, k = top_blocks - 1 even when there are fewer
            order = torch.topk(block_scores[:own], slots).indices
            count = slots
        chosen = torch.zeros(n, dtype=torch.bool).scatter(0, order[:count], True)
        chosen[own] = True
        if kind == "indices":
            return chosen.nonzero().flatten()
        if kind == "index-list":
            return chosen.nonzero().flatten().tolist()
        if kind == "up-to-own":
            return chosen[: own + 1]
        if kind == "eight":
            return torch.cat([chosen, torch.zeros(8, dtype=torch.bool)])[:8]
        if kind == "float":
            return chosen.double()
        if kind == "in-place":
            block_scores[own:] = -math.inf
        if kind == "pair":
            return chosen, chosen.nonzero().flatten()
        return chosen

    return causal_blocks


@pytest.mark.parametrize(
    "kind, words",
    [
        ("not-forced", ["is always selected, whatever its score", "position // block_size = 3", "8 blocks"]),
        ("not-counted", ["counts toward top_blocks", "one too many"]),
        ("own-ranked", ["rank the earlier blocks alone", "one block too few", "6 blocks of 1 key"]),
        ("future", ["in the query's future", "even when it scores highest", "rank blocks 0 .. 2 alone"]),
        ("times-mask", ["in the query's future", "masked to 0 instead of -inf", "every score negative"]),
        ("ceil", ["round down", "ceil(position / block_size)", "not 4"]),
        ("plus-one", ["round down", "(position + 1) // block_size at its last key", "position 15"]),
        ("block-size-4", ["this call's block_size (3 here)", "not a number written in", "5 blocks of 3"]),
        ("top-3", ["this call's top_blocks (2 here)", "not a number written in"]),
        ("lowest", ["the highest block_scores", "not the lowest"]),
        ("ties-high", ["equal scores go to the lower block index", "stable=True", "a tie"]),
        ("topk", ["raised", "fewer earlier blocks (4)", "top_blocks - 1 = 7", "min(top_blocks - 1"]),
        ("indices", ["bool tensor of shape (8,)", "not the indices of the selected blocks"]),
        ("index-list", ["not the indices of the selected blocks"]),
        ("up-to-own", ["future ones included (False)", "got 4, the blocks up to the own one only"]),
        ("eight", ["expected shape (5,)", "shape of an earlier hidden case"]),
        ("float", ["the mask is a bool tensor", "float64"]),
        ("in-place", ["changed its input block_scores in place"]),
        ("pair", ["bool tensor of shape (8,)", "got a tuple of 2"]),
    ],
)
def test_check_causal_blocks_hints(kind, words):
    assert_hint(checks.check_causal_blocks(_bad_blocks(kind)), *words)


def test_check_causal_blocks_asks_for_a_function():
    assert_hint(checks.check_causal_blocks(None), "replace None", "causal_blocks(block_scores, position, block_size")
    assert_hint(checks.check_causal_blocks(torch.ones(3)), "expected a function")
    assert_hint(checks.check_causal_blocks(lambda *args: None), "return a bool tensor", "got None")


def test_check_causal_blocks_hidden_cases_hold_their_traps():
    """Each trap the docstring names is in some hidden case, and the hidden reference is the loop written here."""
    from attn_course.checks.sparse import _block_cases, _reference_blocks

    cases = [inputs for _, inputs in _block_cases()]
    for inputs in cases:
        assert torch.equal(_reference_blocks(*inputs.values()), _blocks_loop(*inputs.values()))
    owns = [(c["position"] // c["block_size"], c) for c in cases]
    assert {len(c["block_scores"]) for c in cases} >= {5, 6, 7, 8, 10}
    assert any(c["position"] % c["block_size"] == 0 and own > 0 for own, c in owns)  # a block's first key
    assert any(c["position"] % c["block_size"] == c["block_size"] - 1 and c["block_size"] > 1 for _, c in owns)
    assert any(c["top_blocks"] == 1 for c in cases) and any(c["top_blocks"] > own + 1 for own, c in owns)
    assert any(own == len(c["block_scores"]) - 1 for own, c in owns)  # the query in the last block
    assert any(bool((c["block_scores"] < 0).all()) for c in cases)
    first_own, first = owns[0]
    assert first["block_scores"].argmax() > first_own and first["block_scores"][: first_own + 1].argmin() == first_own
    tied = [c for own, c in owns if len(set(c["block_scores"][:own].tolist())) < own]
    assert len(tied) >= 2
    # the own block scoring highest of the blocks available, with slots left for earlier blocks
    assert any(c["block_scores"][: own + 1].argmax() == own and 0 < c["top_blocks"] - 1 < own for own, c in owns)


@pytest.mark.parametrize("keys, block_size, top_blocks", [(18, 4, 2), (18, 4, 3), (13, 3, 1), (7, 1, 3), (9, 2, 9)])
def test_check_causal_blocks_rule_is_block_sparse_attentions(keys, block_size, top_blocks):
    """The check's rule, applied to the block scores q . mean(block) of each query, reads the keys that
    ac.block_sparse_attention(causal=True) reads."""
    from attn_course.checks.sparse import _reference_blocks

    gen = torch.Generator().manual_seed(keys + block_size + top_blocks)
    q, k = (torch.randn(1, keys, 4, generator=gen, dtype=torch.float64) for _ in range(2))
    _, selected = block_sparse_attention(q, k, k, block_size, top_blocks, causal=True)
    for position in range(keys):
        blocks = [k[0, s : s + block_size].mean(0) @ q[0, position] for s in range(0, keys, block_size)]
        chosen = _reference_blocks(torch.stack(blocks), position, block_size, top_blocks)
        reads = chosen.repeat_interleave(block_size)[:keys] & (torch.arange(keys) <= position)
        assert torch.equal(reads, selected[0, position]), position


# ----------------------------------------------------------------------------------------------
# Exercise: check_indexer_scores, the lightning indexer for one sequence
# ----------------------------------------------------------------------------------------------


def _indexer_loop(index_queries, index_keys, head_weights):
    """Right, by loops over queries, keys and heads."""
    Q, H, _ = index_queries.shape
    scores = torch.zeros(Q, index_keys.shape[0], dtype=index_queries.dtype)
    for t in range(Q):
        for s in range(index_keys.shape[0]):
            for j in range(H):
                scores[t, s] += head_weights[t, j] * torch.relu(index_queries[t, j] @ index_keys[s])
    return scores


def _indexer_vectorised(index_queries, index_keys, head_weights):
    per_head = torch.relu(index_queries @ index_keys.T)  # (Q, H, D) x (D, K) -> (Q, H, K)
    return (head_weights.unsqueeze(-1) * per_head).sum(1)  # (Q, H, 1) * (Q, H, K) -> (Q, K)


def _indexer_float32(index_queries, index_keys, head_weights):
    q, k, w = index_queries.float(), index_keys.float(), head_weights.float()
    return torch.einsum("th,ths->ts", w, torch.einsum("thd,sd->ths", q, k).clamp(min=0))


@pytest.mark.parametrize("fn", [_indexer_loop, _indexer_vectorised, _indexer_float32])
def test_check_indexer_scores_right_answer(fn):
    assert_correct(checks.check_indexer_scores(fn), "summed over the heads", "ac.lightning_indexer")


def _bad_indexer(kind):
    def indexer_scores(index_queries, index_keys, head_weights):
        q, k, w = index_queries, index_keys, head_weights
        dots = q @ k.T  # (Q, H, K)
        per_head = torch.relu(dots)
        if kind == "no-relu":
            per_head = dots
        elif kind == "relu-after":
            return torch.relu((w[..., None] * dots).sum(1))
        elif kind == "softmax":
            per_head = dots.softmax(-1)
        elif kind == "softmax-heads":
            per_head = dots.softmax(1)
        elif kind == "unweighted":
            return per_head.sum(1)
        elif kind == "mean":
            return (w[..., None] * per_head).mean(1)
        elif kind == "relu-of-product":
            return torch.relu(w[..., None] * dots).sum(1)
        elif kind == "per-key":  # head_weights[s, j]: runs only when Q = K
            return (w.T[None] * per_head).sum(1)
        elif kind == "transposed":
            return (w[..., None] * per_head).sum(1).T
        elif kind == "scaled":
            per_head = per_head / math.sqrt(q.shape[-1])
        elif kind == "per-head":
            return w[..., None] * per_head
        elif kind == "batched":
            return (w[..., None] * per_head).sum(1)[None]
        elif kind == "five":  # the output written in as (5, 5)
            out = torch.zeros(5, 5, dtype=q.dtype)
            out[: q.shape[0], : k.shape[0]] = (w[..., None] * per_head).sum(1)[:5, :5]
            return out
        elif kind == "in-place":
            w.unsqueeze_(-1)
            return (w * per_head).sum(1)
        elif kind == "rounded":
            return (w[..., None] * per_head).sum(1).round(decimals=3)
        elif kind == "half":
            return (w[..., None] * per_head).sum(1).half()
        elif kind == "integers":
            return (1000 * (w[..., None] * per_head).sum(1)).long()
        elif kind == "numpy":
            return (w[..., None] * per_head).sum(1).numpy()
        return (w[..., None] * per_head).sum(1)

    return indexer_scores


@pytest.mark.parametrize(
    "kind, words",
    [
        ("no-relu", ["ReLU each head's dot product", "must count 0"]),
        ("relu-after", ["the ReLU goes inside the sum", "not on the weighted sum"]),
        ("softmax", ["ReLU, not softmax over the keys"]),
        ("softmax-heads", ["ReLU, not softmax over the heads"]),
        ("unweighted", ["weight each head by head_weights[t, j]", "leaves them out"]),
        ("mean", ["sum over the heads, not the mean"]),
        ("relu-of-product", ["drops a head of negative weight"]),
        ("per-key", ["belong to the query", "not head_weights[s, j]"]),
        ("transposed", ["transposed", "one row per query"]),
        ("scaled", ["no 1/sqrt(D)"]),
        ("per-head", ["one score per head (Q, H, K)", "(5, 3, 5)"]),
        ("batched", ["must have shape (5, 5), got (1, 5, 5)"]),
        ("five", ["expected shape (4, 9)", "shape of an earlier hidden case"]),
        ("in-place", ["changed its input head_weights in place"]),
        ("rounded", ["rounded to 3 decimals"]),
        ("half", ["float16"]),
        ("integers", ["int64", "floating"]),
        ("numpy", ["return the scores alone", "ndarray"]),
    ],
)
def test_check_indexer_scores_hints(kind, words):
    assert_hint(checks.check_indexer_scores(_bad_indexer(kind)), *words)


def test_check_indexer_scores_asks_for_a_function():
    assert_hint(checks.check_indexer_scores(None), "replace None", "indexer_scores(index_queries, index_keys")
    assert_hint(checks.check_indexer_scores("scores"), "expected a function")


def test_check_indexer_scores_hidden_cases_are_the_loop_and_hold_both_signs():
    """The hidden reference (ac.lightning_indexer) equals the loop on every case; every case has D != H, negative head
    weights and dot products of both signs; the first is square, the others not."""
    from attn_course.checks.sparse import _indexer_cases
    from attn_course.sparse import lightning_indexer

    cases = [inputs for _, inputs in _indexer_cases()]
    for q, k, w in (c.values() for c in cases):
        torch.testing.assert_close(lightning_indexer(q[None], k[None], w[None])[0], _indexer_loop(q, k, w))
        dots = q @ k.T
        assert q.dtype == torch.float64 and q.shape[1] != q.shape[2]
        assert bool((dots > 0).any() and (dots < 0).any()) and bool((w < 0).any() or w.numel() == 1)
    assert cases[0]["index_queries"].shape[0] == cases[0]["index_keys"].shape[0]
    assert all(c["index_queries"].shape[0] != c["index_keys"].shape[0] for c in cases[1:])


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


ATTACKS = {
    "check_causal_blocks": [
        attack("left as None", "replace None", None),
        attack("the own block not forced", "is always selected, whatever its score", _bad_blocks("not-forced")),
        attack("the own block not counted", "counts toward top_blocks", _bad_blocks("not-counted")),
        attack("the own block ranked too", "rank the earlier blocks alone", _bad_blocks("own-ranked")),
        attack("future blocks allowed", "in the query's future", _bad_blocks("future")),
        attack("the future masked by a product", "masked to 0 instead of -inf", _bad_blocks("times-mask")),
        attack("block index by ceil", ("round down", "ceil(position / block_size)"), _bad_blocks("ceil")),
        attack("block index (position + 1) // block_size", "(position + 1) // block_size", _bad_blocks("plus-one")),
        attack("ties to the higher index", "equal scores go to the lower block index", _bad_blocks("ties-high")),
        attack("the lowest scores", "not the lowest", _bad_blocks("lowest")),
        attack("torch.topk with too large a k", "fewer earlier blocks", _bad_blocks("topk")),
        attack("indices instead of a mask", "not the indices", _bad_blocks("indices")),
        attack("a list of indices", "not the indices", _bad_blocks("index-list")),
        attack("a mask up to the own block only", "future ones included", _bad_blocks("up-to-own")),
        attack("8 blocks written in", "shape of an earlier hidden case", _bad_blocks("eight")),
        attack("block size 4 written in", "this call's block_size", _bad_blocks("block-size-4")),
        attack("top_blocks 3 written in", "this call's top_blocks", _bad_blocks("top-3")),
        attack("a float mask", "the mask is a bool tensor", _bad_blocks("float")),
        attack("block_scores changed in place", "changed its input block_scores in place", _bad_blocks("in-place")),
        attack("a (mask, indices) pair", "got a tuple of 2", _bad_blocks("pair")),
    ],
    "check_indexer_scores": [
        attack("left as None", "replace None", None),
        attack("no ReLU", "ReLU each head's dot product", _bad_indexer("no-relu")),
        attack("ReLU after the weighted sum", "not on the weighted sum", _bad_indexer("relu-after")),
        attack("softmax instead of ReLU", "not softmax over the keys", _bad_indexer("softmax")),
        attack("softmax over the heads", "not softmax over the heads", _bad_indexer("softmax-heads")),
        attack("head weights ignored", "weight each head by head_weights", _bad_indexer("unweighted")),
        attack("mean over the heads", "not the mean", _bad_indexer("mean")),
        attack("ReLU of the weighted dot product", "drops a head of negative weight", _bad_indexer("relu-of-product")),
        attack("weights per key", "belong to the query", _bad_indexer("per-key")),
        attack("transposed result", "transposed", _bad_indexer("transposed")),
        attack("a 1/sqrt(D) scale", "no 1/sqrt(D)", _bad_indexer("scaled")),
        attack("per-head scores not summed", "one score per head", _bad_indexer("per-head")),
        attack("a batch axis left on", "got (1, 5, 5)", _bad_indexer("batched")),
        attack("a (5, 5) result written in", "shape of an earlier hidden case", _bad_indexer("five")),
        attack("head_weights changed in place", "changed its input head_weights in place", _bad_indexer("in-place")),
        attack("rounded scores", "rounded to 3 decimals", _bad_indexer("rounded")),
        attack("computed in float16", "float16", _bad_indexer("half")),
        attack("integers returned", "int64", _bad_indexer("integers")),
        attack("a NumPy array returned", "ndarray", _bad_indexer("numpy")),
    ],
}
