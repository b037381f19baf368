"""The recall race: the task's batches, the model around each memory, training, and bad input."""

import pytest
import torch

from attn_course.mqar import MEMORIES, RecallModel, mqar_batch, train_recall

MODEL = RecallModel(["delta"], 12, 7, width=16, head_size=4)


def batch(n=5, b=64, seed=0):
    return mqar_batch(n, b, 12, 7, torch.Generator().manual_seed(seed))


def test_a_batch_stores_distinct_keys_then_asks_each_once_with_its_value_as_target():
    keys, values, targets = batch()
    assert keys.shape == values.shape == targets.shape == (64, 10) and keys.dtype == torch.int64
    stored, asked = keys[:, :5], keys[:, 5:]
    assert all(len(set(row.tolist())) == 5 for row in stored)  # distinct keys in a sequence
    assert torch.equal(stored.sort(-1).values, asked.sort(-1).values)  # every key asked once
    assert (values[:, 5:] == 7).all() and (values[:, :5] < 7).all() and (targets[:, :5] == -100).all()
    for row in range(64):  # the target of a query is the value stored with its key
        store = dict(zip(stored[row].tolist(), values[row, :5].tolist(), strict=True))
        assert [store[k] for k in asked[row].tolist()] == targets[row, 5:].tolist()
    assert not (asked == stored).all(), "the queries come in another order than the pairs"


def test_a_batch_is_reproducible_from_its_generator_and_varies_with_it():
    assert all(torch.equal(a, b) for a, b in zip(batch(seed=3), batch(seed=3), strict=True))
    assert not torch.equal(batch(seed=3)[0], batch(seed=4)[0])


@pytest.mark.parametrize("memories", [[m] for m in MEMORIES] + [["gated", "softmax"]])
def test_every_model_is_causal_and_gives_one_logit_per_value(memories):
    torch.manual_seed(0)
    model = RecallModel(memories, 12, 7, width=16, head_size=4)
    keys, values, _ = batch(n=6, b=3)
    logits = model(keys, values)
    assert logits.shape == (3, 12, 7) and logits.isfinite().all()
    changed = values.clone()
    changed[:, 8:] = (changed[:, 8:] + 1) % 8  # change positions 8 onwards only
    torch.testing.assert_close(model(keys, changed)[:, :8], logits[:, :8], rtol=0, atol=1e-6)
    assert not torch.allclose(model(keys, changed)[:, 8:], logits[:, 8:])


def test_the_gates_start_where_the_module_says_and_only_gated_has_alpha():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16) * 0.01  # near zero: the gates show their starting biases
    delta, gated = (RecallModel([m], 12, 7, width=16).layers[0] for m in ("delta", "gated"))
    for layer in (delta, gated):
        torch.nn.init.zeros_(layer.W_gates.weight)
        torch.nn.init.zeros_(layer.W_gates.bias)
    beta, alpha = gated.gates(x)
    assert delta.gates(x)[1] is None
    torch.testing.assert_close(beta, torch.full_like(beta, torch.sigmoid(torch.tensor(2.0)).item()))
    torch.testing.assert_close(alpha, torch.full_like(alpha, torch.sigmoid(torch.tensor(5.0)).item()))


def test_softmax_attention_learns_the_task_and_an_untrained_model_does_not():
    run = train_recall(["softmax"], pairs=(4, 8), steps=120)
    assert min(run.accuracy.values()) > 0.9, run.accuracy
    untrained = train_recall(["softmax"], pairs=(4, 8), steps=1, lr=1e-9)
    assert max(untrained.accuracy.values()) < 0.5, untrained.accuracy
    assert run.memories == ("softmax",) and run.mean_alpha == () and run.seconds > 0


def test_a_run_is_reproducible_from_its_seed():
    first, again = (train_recall(["gated"], pairs=(4,), steps=5, seed=2) for _ in range(2))
    assert first.accuracy == again.accuracy and first.mean_alpha == again.mean_alpha
    assert len(first.mean_alpha) == 1 and 0 < first.mean_alpha[0] < 1


@pytest.mark.parametrize("memories", [[m] for m in MEMORIES])
def test_an_empty_sequence_gives_empty_logits(memories):
    model = RecallModel(memories, 12, 7, width=16, head_size=4)
    empty = torch.zeros(2, 0, dtype=torch.long)
    assert model(empty, empty).shape == (2, 0, 7)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: mqar_batch(13, 4, 12, 7), ValueError, r"num_pairs must be an integer in \[1, 12\]"),
        (lambda: mqar_batch(0, 4, 12, 7), ValueError, "num_pairs"),
        (lambda: mqar_batch(3.0, 4, 12, 7), TypeError, "num_pairs"),
        (lambda: mqar_batch(3, 0, 12, 7), ValueError, "batch_size"),
        (lambda: mqar_batch(3, 4, 12, 7, generator=0), TypeError, "generator"),
        (lambda: RecallModel([], 12, 7), ValueError, "memories must be a non-empty list"),
        (lambda: RecallModel("softmax", 12, 7), TypeError, "memories must be a non-empty list"),
        (lambda: RecallModel(["mamba"], 12, 7), ValueError, r"memories must be one of \['softmax'"),
        (lambda: RecallModel(["delta"], 12, 7, head_size=0), ValueError, "head_size"),
        (lambda: train_recall(["delta"], pairs=(4, 80)), ValueError, r"pairs must be an integer in \[1, 64\]"),
        (lambda: train_recall(["delta"], pairs=[]), ValueError, "pairs must be a non-empty list"),
        (lambda: train_recall(["delta"], steps=0), ValueError, "steps"),
        (lambda: train_recall(["delta"], lr=-1.0), ValueError, "lr must be a finite number > 0"),
        (lambda: train_recall(["delta"], seed=-1), ValueError, "seed"),
        (lambda: train_recall(["delta"], steps=3.0), TypeError, "steps must be an integer"),
        (lambda: train_recall(["delta"], pairs=torch.tensor([4])), TypeError, "pairs must be a non-empty list"),
        (
            lambda: MODEL(torch.full((2, 4), 12), torch.zeros(2, 4, dtype=torch.long)),
            ValueError,
            r"keys must .* \[0, 12\)",
        ),
        (
            lambda: MODEL(torch.zeros(2, 4), torch.zeros(2, 4, dtype=torch.long)),
            TypeError,
            "keys must be a .B, T. int64",
        ),
        (lambda: MODEL(torch.zeros(2, 4, dtype=torch.long), torch.full((2, 4), 8)), ValueError, r"values .* \[0, 8\)"),
        (
            lambda: MODEL(torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 5, dtype=torch.long)),
            ValueError,
            r"values must have the shape of keys \(B, T\) = \(2, 4\)",
        ),
    ],
)
def test_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
