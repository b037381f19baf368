"""The repeated-facts task, its one-layer model, and the lightning indexer's dense warm-up (attn_course.indexer)."""

import math

import pytest
import torch

from attn_course.indexer import (
    FIRST_QUERY,
    LENGTH,
    FactsModel,
    LightningIndexer,
    facts_batch,
    train_facts_model,
    train_indexer,
)
from attn_course.sparse import lightning_indexer


def batch(runs=False, seed=0, size=16):
    return facts_batch(size, torch.Generator().manual_seed(seed), runs=runs)


@pytest.mark.parametrize("runs", [False, True])
def test_a_batch_writes_four_facts_eight_times_then_asks_for_them(runs):
    keys, values, recall, previous = batch(runs)
    assert all(t.shape == (16, LENGTH) and t.dtype == torch.int64 for t in (keys, values, recall, previous))
    for row in range(16):
        stored = {}
        for k, v in zip(keys[row, :FIRST_QUERY].tolist(), values[row, :FIRST_QUERY].tolist(), strict=True):
            assert stored.setdefault(k, v) == v, "a fact keeps its value in every copy"
        assert len(stored) == 4 and sorted(keys[row, :FIRST_QUERY].tolist().count(k) for k in stored) == [8] * 4
        asked = keys[row, FIRST_QUERY:].tolist()
        assert set(asked) <= set(stored) and (values[row, FIRST_QUERY:] == 16).all()
        assert recall[row, FIRST_QUERY:].tolist() == [stored[k] for k in asked]
        if runs:  # each fact's copies side by side, one block of 8 each
            assert all(len(set(keys[row, b : b + 8].tolist())) == 1 for b in range(0, FIRST_QUERY, 8))
    assert (recall[:, :FIRST_QUERY] == -100).all() and (previous[:, 0] == -100).all()
    assert torch.equal(previous[:, 1:], keys[:, :-1])


def test_the_shuffled_layout_does_not_write_facts_in_runs():
    keys = batch(size=64)[0][:, :FIRST_QUERY]
    in_runs = all(len(set(r[b : b + 8].tolist())) == 1 for r in keys for b in range(0, FIRST_QUERY, 8))
    assert not in_runs


def test_the_model_is_causal_and_its_input_is_what_the_attention_reads():
    torch.manual_seed(0)
    model = FactsModel().eval()
    keys, values, _, _ = batch()
    with torch.no_grad():
        recall_logits, previous_logits = model(keys, values)
        changed = values.clone()
        changed[:, 40:] = 3
        later = model(keys, changed)
        x = model.inputs(keys, values)
        model.attention(x)
    assert recall_logits.shape == (16, LENGTH, 16) and previous_logits.shape == (16, LENGTH, 32)
    torch.testing.assert_close(later[0][:, :40], recall_logits[:, :40], rtol=0, atol=1e-6)
    assert not torch.allclose(later[0][:, 40:], recall_logits[:, 40:])
    weights = model.attention.attention_weights  # (B, H, T, T)
    assert weights.shape == (16, 4, LENGTH, LENGTH) and (weights.triu(1) == 0).all()


def test_the_indexer_scores_with_the_lightning_formula_and_hides_later_keys():
    torch.manual_seed(0)
    indexer = LightningIndexer()
    x = torch.randn(2, 10, 64)
    scores = indexer(x)
    queries = indexer.W_q(x).reshape(2, 10, 8, 16)
    expected = lightning_indexer(queries, indexer.W_k(x), indexer.W_w(x))
    allowed = torch.ones(10, 10, dtype=torch.bool).tril()
    torch.testing.assert_close(scores[:, allowed], expected[:, allowed])
    assert (scores[:, ~allowed] == -math.inf).all()


def test_training_teaches_both_questions_and_the_warm_up_lowers_the_kl():
    model = train_facts_model(150, seed=0)
    keys, values, recall, previous = batch(seed=99, size=128)
    with torch.no_grad():
        recall_logits, previous_logits = model(keys, values)
    assert (recall_logits.argmax(-1) == recall)[recall != -100].float().mean() > 0.95
    assert (previous_logits.argmax(-1) == previous)[previous != -100].float().mean() > 0.95
    indexer, losses = train_indexer(model, 40, seed=0)
    assert len(losses) == 40 and losses[-1] < 0.5 * losses[0], losses
    assert not indexer.training and not model.training


def test_an_untrained_model_does_not_recall():
    model = train_facts_model(1, seed=0, lr=1e-9)
    keys, values, recall, _ = batch(seed=99, size=128)
    with torch.no_grad():
        recall_logits, _ = model(keys, values)
    assert (recall_logits.argmax(-1) == recall)[recall != -100].float().mean() < 0.5


def test_the_warm_up_leaves_the_model_as_it_was():
    model = train_facts_model(2, seed=0)
    before = [p.detach().clone() for p in model.parameters()]
    train_indexer(model, 3, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: facts_batch(0), ValueError, "batch_size must be an integer >= 1"),
        (lambda: facts_batch(2.0), TypeError, "batch_size"),
        (lambda: facts_batch(2, generator=1), TypeError, "generator"),
        (lambda: facts_batch(2, runs="yes"), TypeError, "runs"),
        (
            lambda: FactsModel()(torch.full((2, 4), 32), torch.zeros(2, 4, dtype=torch.long)),
            ValueError,
            r"keys .*\[0, 32\)",
        ),
        (lambda: FactsModel()(torch.zeros(2, 4), torch.zeros(2, 4, dtype=torch.long)), TypeError, "keys must be"),
        (lambda: FactsModel()(torch.zeros(2, 4, dtype=torch.long), torch.full((2, 4), 17)), ValueError, "values"),
        (
            lambda: FactsModel()(torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 3, dtype=torch.long)),
            ValueError,
            r"values must have the shape of keys",
        ),
        (
            lambda: FactsModel()(torch.zeros(2, 65, dtype=torch.long), torch.zeros(2, 65, dtype=torch.long)),
            ValueError,
            "at most 64 positions",
        ),
        (lambda: train_facts_model(0), ValueError, "steps"),
        (lambda: train_facts_model(5, lr=0.0), ValueError, "lr must be a finite number > 0"),
        (lambda: train_facts_model(5, seed=-1), ValueError, "seed"),
        (lambda: train_indexer("model"), TypeError, "model must be a FactsModel"),
        (lambda: train_indexer(FactsModel(), batch_size=0), ValueError, "batch_size"),
    ],
)
def test_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
