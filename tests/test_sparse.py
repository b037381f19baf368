"""Sparse attention (notebook 13): top-k, MoBA's block selection, DeepSeek's lightning indexer and NSA's three gated
branches, each against a loop reference written here (per batch, per query, the list of keys it reads built by hand),
their exact dense limits, ties, the causal rules, edge cases, low precision and bad input."""

import math
import re

import pytest
import torch
import torch.nn.functional as F

from attn_course.masking import causal_mask, masked_softmax
from attn_course.sparse import (
    attention_mass_kept,
    block_sparse_attention,
    lightning_indexer,
    native_sparse_attention,
    topk_attention,
)

F64 = torch.float64


def qkv(B=2, Q=5, K=9, D=4, V=3, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, n, d, generator=g, dtype=dtype) for n, d in ((Q, D), (K, D), (K, V)))


def gates_for(B, Q, seed=1, dtype=F64):
    return torch.rand(B, Q, 3, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ----------------------------------------------------------------------------------------------------------------------
# Loop references: for one batch entry b and one query i, the list of keys read, then a softmax over that list
# ----------------------------------------------------------------------------------------------------------------------


def position(i, Q, K):
    return i + K - Q  # bottom-right causal alignment


def visible(i, Q, K, causal):
    return [j for j in range(K) if not causal or j <= position(i, Q, K)]


def dot(a, b):
    return float(sum(float(x) * float(y) for x, y in zip(a, b, strict=True)))


def softmax_read(q, k, v, keys):
    """Softmax attention of one query q (D,) over the listed key indices only; zeros when the list is empty."""
    out = torch.zeros(v.shape[-1], dtype=v.dtype)
    if not keys:
        return out
    s = [dot(q, k[j]) / math.sqrt(q.shape[0]) for j in keys]
    top = max(s)
    e = [math.exp(x - top) for x in s]
    for w, j in zip(e, keys, strict=True):
        out += (w / sum(e)) * v[j]
    return out


def best_first(scores_by_index, candidates):
    """Candidates sorted by score, highest first; equal scores in increasing index."""
    return sorted(candidates, key=lambda j: (-scores_by_index[j], j))


def loop_attention(q, k, v, choose):
    """out (B, Q, V) and read (B, Q, K) for ``choose(b, i) -> list of key indices``."""
    B, Q, K = q.shape[0], q.shape[1], k.shape[1]
    out, read = torch.zeros(B, Q, v.shape[-1], dtype=v.dtype), torch.zeros(B, Q, K, dtype=torch.bool)
    for b in range(B):
        for i in range(Q):
            keys = sorted(choose(b, i))
            out[b, i] = softmax_read(q[b, i], k[b], v[b], keys)
            read[b, i, keys] = True
    return out, read


def topk_loop(q, k, v, top_k, causal):
    Q, K = q.shape[1], k.shape[1]

    def choose(b, i):
        allowed = visible(i, Q, K, causal)
        s = {j: dot(q[b, i], k[b, j]) for j in allowed}
        return best_first(s, allowed)[:top_k]

    return loop_attention(q, k, v, choose)


def blocks_of(K, size):
    return [list(range(start, min(start + size, K))) for start in range(0, K, size)]


def pick_blocks(block_score, p, size, n_blocks, top_blocks, causal):
    """MoBA's rule: the block indices chosen for a query at position p (blocks of ``size`` keys)."""
    if not causal:
        return best_first(block_score, range(n_blocks))[:top_blocks]
    if p < 0:
        return []
    own = p // size  # always read, and counted; the other slots go to the best blocks before it
    return [own] + best_first(block_score, range(own))[: top_blocks - 1]


def moba_loop(q, k, v, size, top_blocks, causal):
    Q, K = q.shape[1], k.shape[1]
    blocks = blocks_of(K, size)

    def choose(b, i):
        means = [k[b, blk].mean(0) for blk in blocks]
        score = {n: dot(q[b, i], m) for n, m in enumerate(means)}
        p = position(i, Q, K)
        chosen = pick_blocks(score, p, size, len(blocks), top_blocks, causal)
        return [j for n in chosen for j in blocks[n] if not causal or j <= p]

    return loop_attention(q, k, v, choose)


def nsa_loop(q, k, v, gates, size, top_blocks, window):
    """The three branches of simplified NSA and their gated sum, query by query."""
    B, Q, K, Vs = q.shape[0], q.shape[1], k.shape[1], v.shape[-1]
    blocks = blocks_of(K, size)
    branches = {name: torch.zeros(B, Q, Vs, dtype=v.dtype) for name in ("compressed", "selected", "window")}
    for b in range(B):
        complete = [blk for blk in blocks if len(blk) == size]
        k_cmp = torch.stack([k[b, blk].mean(0) for blk in complete]) if complete else k.new_zeros(0, k.shape[-1])
        v_cmp = torch.stack([v[b, blk].mean(0) for blk in complete]) if complete else v.new_zeros(0, Vs)
        for i in range(Q):
            p = position(i, Q, K)
            seen = [n for n, blk in enumerate(complete) if blk[-1] <= p]
            branches["compressed"][b, i] = softmax_read(q[b, i], k_cmp, v_cmp, seen)
            s = [dot(q[b, i], k_cmp[n]) / math.sqrt(q.shape[-1]) for n in seen]
            e = [math.exp(x - max(s)) for x in s]
            importance = {n: w / sum(e) for n, w in zip(seen, e, strict=True)}
            chosen = pick_blocks(importance, p, size, len(blocks), top_blocks, causal=True)
            read = [j for n in chosen for j in blocks[n] if j <= p]
            branches["selected"][b, i] = softmax_read(q[b, i], k[b], v[b], read)
            branches["window"][b, i] = softmax_read(q[b, i], k[b], v[b], [j for j in range(K) if p - window < j <= p])
    out = sum(gates[..., c, None] * branches[name] for c, name in enumerate(("compressed", "selected", "window")))
    return out, branches


def dense(q, k, v, causal):
    """Masked softmax attention, computed as the sparse functions compute it."""
    Q, K = q.shape[1], k.shape[1]
    mask = torch.tensor([[j in visible(i, Q, K, True) for j in range(K)] for i in range(Q)]) if causal else None
    return masked_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), mask=mask) @ v


# ----------------------------------------------------------------------------------------------------------------------
# attention_mass_kept
# ----------------------------------------------------------------------------------------------------------------------


def test_mass_kept_by_hand():
    w = torch.tensor([[[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]])
    sel = torch.tensor([[[True, False, True], [False, False, False]]])
    torch.testing.assert_close(attention_mass_kept(w, sel), torch.tensor([[0.7, 0.0]]))


def test_mass_kept_is_one_with_every_key_and_grows_with_top_k():
    q, k, v = qkv(Q=4, K=10)
    weights = torch.softmax(q @ k.transpose(-2, -1) / 2, dim=-1)
    everything = attention_mass_kept(weights, torch.ones_like(weights, dtype=torch.bool))
    torch.testing.assert_close(everything, torch.ones(2, 4, dtype=F64))
    kept = torch.stack([attention_mass_kept(weights, topk_attention(q, k, v, n)[1]) for n in range(1, 11)])
    assert bool((kept[1:] >= kept[:-1]).all()) and bool((kept[0] < 1).all())
    top1 = weights.max(-1).values  # the one key read by top-1 is the heaviest
    torch.testing.assert_close(kept[0], top1, rtol=0, atol=1e-15)


# ----------------------------------------------------------------------------------------------------------------------
# topk_attention
# ----------------------------------------------------------------------------------------------------------------------

SIZES = [(5, 9), (9, 9), (9, 5), (1, 7), (6, 1)]  # (Q, K): Q < K, Q = K, Q > K, one query, one key


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("Q, K", SIZES)
@pytest.mark.parametrize("top_k", [1, 3])
def test_topk_is_the_loop(Q, K, top_k, causal):
    q, k, v = qkv(Q=Q, K=K, seed=Q * 10 + K)
    out, sel = topk_attention(q, k, v, top_k, causal=causal)
    ref_out, ref_sel = topk_loop(q, k, v, top_k, causal)
    assert torch.equal(sel, ref_sel)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)


def test_topk_ties_go_to_the_lower_key_index():
    q, k, v = qkv(B=1, Q=2, K=6)
    k[0, 3] = k[0, 1]  # keys 1 and 3 equal, keys 2 and 5 equal: equal scores
    k[0, 5] = k[0, 2]
    for top_k in range(1, 7):
        _, sel = topk_attention(q, k, v, top_k)
        _, ref = topk_loop(q, k, v, top_k, False)
        assert torch.equal(sel, ref)
    k = torch.ones(1, 6, 4, dtype=F64)  # every score equal: the first top_k keys
    _, sel = topk_attention(q, k, v, 4)
    assert sel[0].tolist() == [[True] * 4 + [False] * 2] * 2


def test_topk_reads_min_of_top_k_and_the_allowed_keys():
    q, k, v = qkv(Q=6, K=8)
    _, sel = topk_attention(q, k, v, 4, causal=True)
    allowed = torch.tensor([position(i, 6, 8) + 1 for i in range(6)])  # 3, 4, ..., 8 keys allowed
    assert sel.sum(-1).tolist() == [allowed.clamp(max=4).tolist()] * 2
    assert not bool((sel & ~causal_mask(6, 8)).any())


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("Q, K", SIZES)
def test_topk_at_or_above_the_allowed_keys_is_dense_exactly(Q, K, causal):
    q, k, v = qkv(Q=Q, K=K, seed=3)
    reference = dense(q, k, v, causal)
    for top_k in (K, K + 5):
        out, sel = topk_attention(q, k, v, top_k, causal=causal)
        assert torch.equal(out, reference)
        expected = torch.tensor([[j in visible(i, Q, K, causal) for j in range(K)] for i in range(Q)])
        assert torch.equal(sel, expected.expand(2, Q, K))


@pytest.mark.parametrize("Q, K", [(5, 9), (9, 9), (1, 7)])
def test_dense_limit_agrees_with_torch_sdpa(Q, K):
    q, k, v = qkv(Q=Q, K=K, seed=4)
    for causal in (False, True):
        mask = causal_mask(Q, K) if causal else None
        out, _ = topk_attention(q, k, v, K, causal=causal)
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
        out, _ = block_sparse_attention(q, k, v, 2, K, causal=causal)
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_topk_queries_before_every_key_give_zero_rows():
    q, k, v = qkv(Q=7, K=3)
    out, sel = topk_attention(q, k, v, 2, causal=True)
    assert torch.equal(out[:, :4], torch.zeros(2, 4, 3, dtype=F64)) and not bool(sel[:, :4].any())
    assert bool(torch.isfinite(out).all()) and bool(sel[:, 4:].any(-1).all())


def test_top_one_returns_the_value_of_the_best_key():
    q, k, v = qkv()
    out, _ = topk_attention(q, k, v, 1)
    best = (q @ k.transpose(-2, -1)).argmax(-1)  # (B, Q)
    assert torch.equal(out, torch.stack([v[b, best[b]] for b in range(2)]))


# ----------------------------------------------------------------------------------------------------------------------
# block_sparse_attention (MoBA)
# ----------------------------------------------------------------------------------------------------------------------

MOBA_CASES = [  # (Q, K, block_size, top_blocks)
    (5, 11, 3, 2),  # block size that does not divide K
    (11, 11, 4, 2),
    (8, 12, 4, 1),
    (9, 4, 3, 2),  # Q > K
    (6, 10, 1, 3),  # one key per block
    (4, 10, 20, 1),  # one block, larger than K
]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("Q, K, size, top", MOBA_CASES)
def test_moba_is_the_loop(Q, K, size, top, causal):
    q, k, v = qkv(Q=Q, K=K, seed=K + size)
    out, sel = block_sparse_attention(q, k, v, size, top, causal=causal)
    ref_out, ref_sel = moba_loop(q, k, v, size, top, causal)
    assert torch.equal(sel, ref_sel)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)


def test_moba_always_reads_the_own_block_and_counts_it():
    q, k, v = qkv(B=1, Q=1, K=12, D=4)
    k[0, 8:] = -q[0, 0] * 5  # the query's own block (keys 8..11, it stands at 11) scores lowest of all
    _, sel = block_sparse_attention(q, k, v, 4, 1, causal=True)
    assert sel[0, 0].nonzero().flatten().tolist() == [8, 9, 10, 11]  # top_blocks = 1: the own block alone
    _, sel = block_sparse_attention(q, k, v, 4, 2, causal=True)
    assert sel[0, 0].sum() == 8 and bool(sel[0, 0, 8:].all())  # the own block and one earlier block
    _, full = block_sparse_attention(q, k, v, 4, 1, causal=False)
    assert not bool(full[0, 0, 8:].any())  # without causal the own block loses to better ones


def test_moba_causal_mask_applies_inside_the_own_block_and_no_later_block_is_read():
    q, k, v = qkv(B=1, Q=12, K=12, D=4)
    k[0, 9:] = q[0].sum(0) * 10  # late keys that every query would like
    _, sel = block_sparse_attention(q, k, v, 3, 2, causal=True)
    assert not bool((sel[0] & ~causal_mask(12)).any())
    for i in range(12):
        own = list(range(3 * (i // 3), i + 1))
        assert bool(sel[0, i, own].all())  # the own block up to the query itself


def test_moba_ties_go_to_the_lower_block_index():
    q, k, v = qkv(B=1, Q=2, K=12, D=4)
    k[0, 6:9] = k[0, 0:3]  # block 2 repeats block 0: equal gate scores
    k[0, 9:12] = k[0, 3:6]  # block 3 repeats block 1
    for top in (1, 2, 3):
        _, sel = block_sparse_attention(q, k, v, 3, top)
        chosen = [n for n in range(4) if bool(sel[0, 0, 3 * n])]
        score = {n: dot(q[0, 0], k[0, 3 * n : 3 * n + 3].mean(0)) for n in range(4)}
        assert chosen == sorted(best_first(score, range(4))[:top])
        assert torch.equal(sel, moba_loop(q, k, v, 3, top, False)[1])
    _, sel = block_sparse_attention(q, k, v, 3, 1)
    assert bool(sel[0, :, :3].any() or sel[0, :, 3:6].any()) and not bool(sel[0, :, 6:].any())


def test_moba_scores_a_short_last_block_by_the_mean_of_its_own_keys():
    q, k, v = qkv(B=1, Q=1, K=7, D=4)
    k[0, :3] = 0.5 * q[0, 0]  # block 0 scores |q|^2 / 2
    k[0, 3:6] = -q[0, 0]  # block 1 scores -|q|^2
    k[0, 6] = q[0, 0]  # block 2, one key: scores |q|^2 as a mean (|q|^2 / 3 if divided by the block size)
    _, sel = block_sparse_attention(q, k, v, 3, 1)
    assert sel[0, 0].tolist() == [False] * 6 + [True]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("Q, K, size", [(5, 11, 3), (11, 11, 4), (9, 4, 3), (3, 8, 8)])
def test_moba_with_every_block_is_dense_exactly(Q, K, size, causal):
    q, k, v = qkv(Q=Q, K=K, seed=5)
    n_blocks = -(-K // size)
    for top in (n_blocks, n_blocks + 2):
        out, _ = block_sparse_attention(q, k, v, size, top, causal=causal)
        assert torch.equal(out, dense(q, k, v, causal))


def test_moba_with_blocks_of_one_key_is_topk_without_causal():
    q, k, v = qkv(Q=6, K=10, seed=6)
    for n in (1, 4, 7):
        moba, topk = block_sparse_attention(q, k, v, 1, n), topk_attention(q, k, v, n)
        assert torch.equal(moba[0], topk[0]) and torch.equal(moba[1], topk[1])


# ----------------------------------------------------------------------------------------------------------------------
# lightning_indexer
# ----------------------------------------------------------------------------------------------------------------------


def indexer_inputs(B=2, Q=5, K=7, H=3, D=4, seed=7, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(B, Q, H, D, generator=g, dtype=dtype),
        torch.randn(B, K, D, generator=g, dtype=dtype),
        torch.randn(B, Q, H, generator=g, dtype=dtype),
    )


def test_indexer_is_the_loop():
    iq, ik, w = indexer_inputs()
    ref = torch.zeros(2, 5, 7, dtype=F64)
    for b in range(2):
        for t in range(5):
            for s in range(7):
                ref[b, t, s] = sum(float(w[b, t, j]) * max(0.0, dot(iq[b, t, j], ik[b, s])) for j in range(3))
    torch.testing.assert_close(lightning_indexer(iq, ik, w), ref, rtol=0, atol=1e-12)


def test_indexer_by_hand_relu_drops_negative_dot_products():
    iq = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]])  # (1, 1, 2 heads, 2)
    ik = torch.tensor([[[2.0, -3.0], [-1.0, 4.0]]])  # (1, 2 keys, 2)
    w = torch.tensor([[[0.5, 2.0]]])
    # key 0: 0.5 * relu(2) + 2 * relu(-3) = 1; key 1: 0.5 * relu(-1) + 2 * relu(4) = 8
    assert lightning_indexer(iq, ik, w).tolist() == [[[1.0, 8.0]]]


# ----------------------------------------------------------------------------------------------------------------------
# native_sparse_attention (NSA)
# ----------------------------------------------------------------------------------------------------------------------

NSA_CASES = [  # (Q, K, block_size, top_blocks, window)
    (10, 10, 3, 2, 4),
    (5, 13, 4, 2, 3),
    (8, 8, 2, 1, 1),
    (9, 5, 2, 2, 2),  # Q > K
    (6, 11, 3, 5, 20),  # every block and a window longer than K
]


@pytest.mark.parametrize("Q, K, size, top, window", NSA_CASES)
def test_nsa_branches_and_their_mix_are_the_loop(Q, K, size, top, window):
    q, k, v = qkv(Q=Q, K=K, seed=Q + K)
    gates = gates_for(2, Q)
    out, branches = native_sparse_attention(q, k, v, gates, size, top, window)
    ref_out, ref_branches = nsa_loop(q, k, v, gates, size, top, window)
    assert list(branches) == ["compressed", "selected", "window"]
    for name in ref_branches:
        torch.testing.assert_close(branches[name], ref_branches[name], rtol=0, atol=1e-12, msg=name)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)


def test_nsa_one_hot_gates_give_one_branch_and_the_mix_is_linear():
    q, k, v = qkv(Q=7, K=7)
    _, branches = native_sparse_attention(q, k, v, gates_for(2, 7), 2, 2, 3)
    for c, name in enumerate(("compressed", "selected", "window")):
        one_hot = torch.zeros(2, 7, 3, dtype=F64)
        one_hot[..., c] = 1
        assert torch.equal(native_sparse_attention(q, k, v, one_hot, 2, 2, 3)[0], branches[name])
    zero = native_sparse_attention(q, k, v, torch.zeros(2, 7, 3, dtype=F64), 2, 2, 3)[0]
    assert torch.equal(zero, torch.zeros_like(zero))


def test_nsa_compressed_branch_is_zero_before_the_first_complete_block():
    q, k, v = qkv(Q=9, K=9)
    _, branches = native_sparse_attention(q, k, v, gates_for(2, 9), 4, 1, 2)
    cmp = branches["compressed"]
    assert torch.equal(cmp[:, :3], torch.zeros(2, 3, 3, dtype=F64)) and bool((cmp[:, 3:] != 0).any(-1).all())
    torch.testing.assert_close(cmp[:, 3:7], v[:, :4].mean(1, keepdim=True).expand(2, 4, 3))  # one block: its mean


def test_nsa_window_of_one_reads_the_query_itself_and_a_long_window_is_dense():
    q, k, v = qkv(Q=6, K=10)
    _, branches = native_sparse_attention(q, k, v, gates_for(2, 6), 3, 1, 1)
    assert torch.equal(branches["window"], v[:, 4:])
    _, branches = native_sparse_attention(q, k, v, gates_for(2, 6), 3, 4, 10)
    assert torch.equal(branches["window"], dense(q, k, v, True))
    assert torch.equal(branches["selected"], dense(q, k, v, True))  # every block


def test_nsa_selects_the_block_the_compressed_branch_weighs_most():
    q, k, v = qkv(B=1, Q=1, K=12, D=4)
    k[0, 3:6] = q[0, 0] * 3  # block 1's mean key is aligned with the query: the heaviest compressed token
    _, branches = native_sparse_attention(q, k, v, gates_for(1, 1), 3, 2, 1)
    expected = softmax_read(q[0, 0], k[0], v[0], [3, 4, 5, 9, 10, 11])  # block 1 and the own block 3
    torch.testing.assert_close(branches["selected"][0, 0], expected, rtol=0, atol=1e-12)


def test_nsa_queries_before_every_key_give_zero_rows():
    q, k, v = qkv(Q=6, K=2)
    out, branches = native_sparse_attention(q, k, v, gates_for(2, 6), 1, 2, 2)
    for t in (out, *branches.values()):
        assert torch.equal(t[:, :4], torch.zeros(2, 4, 3, dtype=F64)) and bool(torch.isfinite(t).all())


# ----------------------------------------------------------------------------------------------------------------------
# Edge cases, low precision, inputs untouched
# ----------------------------------------------------------------------------------------------------------------------


def all_calls(q, k, v, gates, weights):
    """Every function on one set of inputs (gates (B, Q, 3), weights (B, Q, K)), each returning a tuple of tensors."""
    B, Q, K = q.shape[0], q.shape[1], k.shape[1]
    selected = torch.arange(K) % 2 == 0  # (K,): every other key
    nsa = native_sparse_attention(q, k, v, gates, 3, 2, 4)
    return {
        "mass": (attention_mass_kept(weights, selected.expand(B, Q, K)),),
        "topk": topk_attention(q, k, v, 2),
        "topk causal": topk_attention(q, k, v, 2, causal=True),
        "moba": block_sparse_attention(q, k, v, 3, 2),
        "moba causal": block_sparse_attention(q, k, v, 3, 2, causal=True),
        "indexer": (lightning_indexer(q.unsqueeze(2).expand(B, Q, 2, q.shape[-1]), k, gates[..., :2]),),
        "nsa": (nsa[0], *nsa[1].values()),
    }


def extras(q, k):
    """Gates and dense weights for ``all_calls``, in the dtype of ``q``."""
    weights = torch.softmax(q.double() @ k.double().transpose(-2, -1), -1)
    return gates_for(q.shape[0], q.shape[1]).to(q.dtype), weights.to(q.dtype)


def test_zero_keys_give_zero_rows_and_no_nan():
    q, k, v = qkv(Q=4, K=0)
    for name, results in all_calls(q, k, v, *extras(q, k)).items():
        for t in results:
            assert t.shape[:2] == (2, 4) and not bool(t.any()), name
    assert topk_attention(q, k, v, 3)[0].shape == (2, 4, 3)


@pytest.mark.parametrize("B, Q, K", [(0, 3, 4), (2, 0, 4), (2, 0, 0)], ids=["no batch", "no queries", "nothing"])
def test_empty_batch_or_queries_give_empty_results(B, Q, K):
    q, k, v = qkv(B=B, Q=Q, K=K)
    for name, results in all_calls(q, k, v, *extras(q, k)).items():
        for t in results:
            assert t.shape[:2] == (B, Q) and t.numel() == 0, name


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_is_computed_in_float32_and_returned_in_its_dtype(dtype):
    q, k, v = qkv(Q=7, K=11, dtype=dtype)
    gates, weights = extras(q, k)
    low = all_calls(q, k, v, gates, weights)
    high = all_calls(*(t.float() for t in (q, k, v, gates, weights)))  # the same numbers, in float32
    for name in low:
        for a, b in zip(low[name], high[name], strict=True):
            assert a.dtype == (torch.bool if b.dtype == torch.bool else dtype), name
            assert torch.equal(a, b.to(a.dtype)), name


def test_inputs_are_not_modified_and_gradients_are_finite():
    q, k, v = (t.requires_grad_() for t in qkv(Q=6, K=9))
    gates = gates_for(2, 6).requires_grad_()
    kept = [t.detach().clone() for t in (q, k, v, gates)]
    total = topk_attention(q, k, v, 3, causal=True)[0].sum() + block_sparse_attention(q, k, v, 2, 2, True)[0].sum()
    total = total + native_sparse_attention(q, k, v, gates, 2, 2, 3)[0].sum()
    total = total + lightning_indexer(q.unsqueeze(2), k, gates[..., :1]).sum()
    total.backward()
    assert all(torch.equal(t.detach(), c) for t, c in zip((q, k, v, gates), kept, strict=True))
    assert all(bool(torch.isfinite(t.grad).all()) for t in (q, k, v, gates))
    w, sel = torch.rand(2, 6, 9, dtype=F64), torch.rand(2, 6, 9) > 0.5
    w_kept, sel_kept = w.clone(), sel.clone()
    attention_mass_kept(w, sel)
    assert torch.equal(w, w_kept) and torch.equal(sel, sel_kept)


def test_huge_finite_input_is_refused_rather_than_nan():
    q, k, v = qkv(dtype=torch.float32)
    with pytest.raises(ValueError, match="overflowed"):
        topk_attention(q * 1e30, k * 1e30, v, 2)


# ----------------------------------------------------------------------------------------------------------------------
# Bad input: the course's words, naming the argument
# ----------------------------------------------------------------------------------------------------------------------

Qf, Kf, Vf = qkv(dtype=torch.float32)  # (2, 5, 4), (2, 9, 4), (2, 9, 3)
G = torch.full((2, 5, 3), 0.5)
W = torch.full((2, 5, 9), 1 / 9)
S = torch.ones(2, 5, 9, dtype=torch.bool)
IQ, IK, IW = indexer_inputs(dtype=torch.float32)


def nsa_with(gates):
    return native_sparse_attention(Qf, Kf, Vf, gates, 2, 2, 2)


NAN_K = Kf.clone()
NAN_K[0, 0, 0] = math.nan


def _int_cases(name, call):
    return [
        (lambda bad=bad: call(bad), error, rf"{name} must be an integer >= 1, got {re.escape(repr(bad))}")
        for bad, error in ((0, ValueError), (-2, ValueError), (2.0, TypeError), ("3", TypeError), (True, TypeError))
    ]


CASES = [
    *_int_cases("top_k", lambda x: topk_attention(Qf, Kf, Vf, x)),
    *_int_cases("block_size", lambda x: block_sparse_attention(Qf, Kf, Vf, x, 2)),
    *_int_cases("top_blocks", lambda x: block_sparse_attention(Qf, Kf, Vf, 3, x)),
    *_int_cases("block_size", lambda x: native_sparse_attention(Qf, Kf, Vf, G, x, 2, 3)),
    *_int_cases("top_blocks", lambda x: native_sparse_attention(Qf, Kf, Vf, G, 3, x, 3)),
    *_int_cases("window", lambda x: native_sparse_attention(Qf, Kf, Vf, G, 3, 2, x)),
    (lambda: topk_attention(Qf, Kf, Vf, 2, causal=1), TypeError, r"causal must be True or False"),
    (lambda: block_sparse_attention(Qf, Kf, Vf, 2, 2, causal="yes"), TypeError, r"causal must be True or False"),
    (lambda: topk_attention(Qf, Kf[:, :4], Vf, 2), ValueError, r"values must have one row per key"),
    (lambda: topk_attention(Qf, Kf[..., :3], Vf, 2), ValueError, r"queries and keys must have the same size D"),
    (lambda: block_sparse_attention(Qf[0], Kf, Vf, 2, 2), ValueError, r"queries must have shape \(B, Q, D\)"),
    (lambda: native_sparse_attention(Qf, Kf[:1], Vf[:1], G, 2, 2, 2), ValueError, r"must share the batch size B"),
    (lambda: topk_attention(Qf, Kf.double(), Vf, 2), TypeError, r"keys has dtype torch.float64 but queries"),
    (lambda: topk_attention(Qf.tolist(), Kf, Vf, 2), TypeError, r"queries must be a torch.Tensor, got list"),
    (lambda: block_sparse_attention(Qf, Kf, Vf.long(), 2, 2), TypeError, r"values must be a floating-point tensor"),
    (lambda: topk_attention(Qf, NAN_K, Vf, 2), ValueError, r"keys must be finite"),
    (lambda: block_sparse_attention(Qf * math.inf, Kf, Vf, 2, 2), ValueError, r"queries must be finite"),
    (lambda: native_sparse_attention(Qf, Kf, Vf * math.nan, G, 2, 2, 2), ValueError, r"values must be finite"),
    (lambda: nsa_with(G[..., :2]), ValueError, r"gates must have shape \(B, Q, 3\) = \(2, 5,"),
    (lambda: nsa_with(G[0]), ValueError, r"gates must have shape \(B, Q, 3\) \(3-D"),
    (lambda: nsa_with(G * 3), ValueError, r"gates must lie in \[0, 1\], got 1.5"),
    (lambda: nsa_with(-G), ValueError, r"gates must lie in \[0, 1\], got -0.5"),
    (lambda: nsa_with(G * math.nan), ValueError, r"gates must be finite"),
    (lambda: nsa_with(G.double()), TypeError, r"gates has dtype torch.float64"),
    (lambda: nsa_with(0.5), TypeError, r"gates must be a torch.Tensor, got float"),
    (lambda: attention_mass_kept(W, S[:, :, :4]), ValueError, r"selected must have the shape of w"),
    (lambda: attention_mass_kept(W, S.float()), TypeError, r"selected must be a bool tensor"),
    (lambda: attention_mass_kept(W[0], S[0]), ValueError, r"weights must have shape \(B, Q, K\) \(3-D\)"),
    (lambda: attention_mass_kept(W.long(), S), TypeError, r"weights must be a floating-point tensor"),
    (lambda: attention_mass_kept(-W, S), ValueError, r"weights must be >= 0"),
    (lambda: attention_mass_kept(W * math.inf, S), ValueError, r"weights must be finite"),
    (lambda: lightning_indexer(IQ, IK[..., :3], IW), ValueError, r"index_keys must have shape \(B, K, D_I\) = \(2,"),
    (lambda: lightning_indexer(IQ, IK[:1], IW), ValueError, r"index_keys must have shape \(B, K, D_I\) = \(2, K, 4\)"),
    (lambda: lightning_indexer(IQ, IK, IW[..., :2]), ValueError, r"head_weights must have shape \(B, Q, H_I\) ="),
    (lambda: lightning_indexer(IQ[:, :, 0], IK, IW), ValueError, r"index_queries must have shape \(B, Q, H_I, D_I\)"),
    (lambda: lightning_indexer(IQ, IK[0], IW), ValueError, r"index_keys must have shape \(B, K, D_I\) \(3-D\)"),
    (lambda: lightning_indexer(IQ, IK, IW.double()), TypeError, r"head_weights has dtype torch.float64"),
    (lambda: lightning_indexer(IQ, IK * math.nan, IW), ValueError, r"index_keys must be finite"),
]  # fmt: skip


@pytest.mark.parametrize("call, error, match", CASES)
def test_bad_input_is_refused_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()
