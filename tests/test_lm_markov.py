"""attn_course.lmdata, lmtrain and lmeval: the order-2 Markov source, training on given batches, the loss at each
position, and which targets of the repeat task each half's loss counts."""

import math

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attn_course import DecoderOnlyLM
from attn_course.lmdata import markov_task, repeat_task
from attn_course.lmeval import half_losses, half_losses_of_logits, position_losses
from attn_course.lmtrain import fit_lm, train_lm


def _table(vocab=5, seed=0):
    return torch.randint(0, vocab, (vocab, vocab), generator=torch.Generator().manual_seed(seed))


def test_markov_task_follows_the_table_always_when_follow_is_one():
    table = _table()
    tokens = markov_task(6, 12, table, 1.0, generator=torch.Generator().manual_seed(1))
    assert tokens.shape == (6, 12) and tokens.dtype == torch.long
    assert torch.equal(tokens[:, 2:], table[tokens[:, :-2], tokens[:, 1:-1]])


def test_markov_task_follows_the_table_with_the_stated_probability():
    vocab, follow = 6, 0.7
    table = _table(vocab)
    tokens = markov_task(400, 30, table, follow, generator=torch.Generator().manual_seed(2))
    hits = (tokens[:, 2:] == table[tokens[:, :-2], tokens[:, 1:-1]]).float().mean().item()
    expected = follow + (1 - follow) / vocab  # the uniform draw may pick the table's token too
    assert hits == pytest.approx(expected, abs=0.01)
    assert tokens.min() >= 0 and tokens.max() < vocab


def test_markov_task_is_reproducible_and_uniform_when_follow_is_zero():
    table = _table()
    a = markov_task(3, 8, table, 0.0, generator=torch.Generator().manual_seed(5))
    b = markov_task(3, 8, table, 0.0, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    counts = torch.bincount(markov_task(2000, 10, table, 0.0, generator=torch.Generator().manual_seed(6)).flatten())
    assert (counts.float() / counts.sum() - 0.2).abs().max() < 0.02


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((0, 5, _table(), 0.8), ValueError, "batch_size must be an integer >= 1"),
        ((2, 1, _table(), 0.8), ValueError, "length must be an integer >= 2"),
        ((2, 5, torch.zeros(3, 4, dtype=torch.long), 0.8), ValueError, r"table must be a \(C, C\) tensor"),
        ((2, 5, [[0, 1], [1, 0]], 0.8), ValueError, r"table must be a \(C, C\) tensor of tokens, got list"),
        ((2, 5, torch.full((3, 3), 3), 0.8), ValueError, r"table must hold token ids in \[0, 3\)"),
        ((2, 5, _table(), 1.5), ValueError, r"follow must be .*in \[0, 1\]"),
    ],
)
def test_markov_task_refuses_bad_arguments_by_name(args, error, match):
    with pytest.raises(error, match=match):
        markov_task(*args)


def _model(vocab=5, positional="rope", seed=0):
    torch.manual_seed(seed)
    return DecoderOnlyLM(vocab, 16, 2, 1, 20, positional=positional)


def test_position_losses_are_the_cross_entropy_at_each_target():
    model = _model().eval()
    tokens = markov_task(4, 9, _table(), 0.8, generator=torch.Generator().manual_seed(3))
    got = position_losses(model, tokens)
    assert got.shape == (8,)
    logits = model(tokens)
    for t in range(1, 9):
        expected = nn.functional.cross_entropy(logits[:, t - 1], tokens[:, t])
        assert_close(got[t - 1], expected)
    assert not got.requires_grad


def test_position_losses_refuses_one_position_and_no_sequence():
    model = _model()
    with pytest.raises(ValueError, match="at least 2 positions"):
        position_losses(model, torch.zeros(3, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one sequence"):
        position_losses(model, torch.zeros(0, 4, dtype=torch.long))


def test_fit_lm_lowers_the_loss_and_is_reproducible():
    table = _table()
    batches = markov_task(40 * 8, 10, table, 0.9, generator=torch.Generator().manual_seed(4)).view(40, 8, 10)
    test = markov_task(64, 10, table, 0.9, generator=torch.Generator().manual_seed(5))
    model = _model()
    before = position_losses(model, test)[1:].mean()
    losses = fit_lm(model, batches, lr=1e-2, warmup=4)
    after = position_losses(model, test)[1:].mean()
    assert len(losses) == 40 and all(isinstance(v, float) for v in losses)
    assert after < before - 0.3
    assert not model.training
    again = _model()
    assert fit_lm(again, batches, lr=1e-2, warmup=4) == losses  # same start, same batches: same run
    u = 0.1 / 5
    entropy = -(0.9 + u) * math.log(0.9 + u) - 4 * u * math.log(u)
    assert after > entropy  # no model beats the source


@pytest.mark.parametrize(
    "model, batches, kwargs, error, match",
    [
        (nn.Linear(2, 2), torch.zeros(2, 2, 3, dtype=torch.long), {}, TypeError, "model must be a DecoderOnlyLM"),
        (None, torch.zeros(2, 3, dtype=torch.long), {}, ValueError, r"batches must be a \(S, B, T\) tensor"),
        (None, torch.zeros(2, 2, 1, dtype=torch.long), {}, ValueError, "T >= 2"),
        (None, torch.zeros(0, 2, 4, dtype=torch.long), {}, ValueError, "S, B >= 1"),
        (None, torch.full((2, 2, 4), 9), {}, ValueError, r"batches must hold token ids in \[0, 5\)"),
        (None, torch.zeros(2, 2, 4, dtype=torch.long), {"lr": 0.0}, ValueError, "lr must be"),
    ],
)
def test_fit_lm_refuses_bad_arguments_by_name(model, batches, kwargs, error, match):
    with pytest.raises(error, match=match):
        fit_lm(model if model is not None else _model(), batches, **kwargs)


@pytest.mark.parametrize(
    "table, error, match",
    [
        (torch.zeros(0, 0, dtype=torch.long), ValueError, r"table must hold at least one token \(C >= 1\)"),
        (torch.zeros(3, 3), TypeError, r"table must be a \(C, C\) int64 tensor of tokens, got torch.float32"),
        (torch.zeros(3, 3, dtype=torch.int32), TypeError, r"table must be a \(C, C\) int64 tensor"),
    ],
)
def test_markov_task_refuses_an_empty_or_non_integer_table(table, error, match):
    """An empty table used to reach torch.randint (a RuntimeError); a float table got the message of a (B, T) batch."""
    before = table.clone()
    with pytest.raises(error, match=match):
        markov_task(2, 5, table)
    assert torch.equal(table, before)


def test_fit_lm_names_float_batches_and_a_bad_foreach():
    with pytest.raises(TypeError, match=r"batches must be a \(S, B, T\) int64 tensor of tokens, got torch.float32"):
        fit_lm(_model(), torch.zeros(2, 2, 4))
    with pytest.raises(TypeError, match="foreach must be True, False or None"):
        fit_lm(_model(), torch.zeros(2, 2, 4, dtype=torch.long), foreach="yes")


def test_position_losses_refuses_what_is_not_a_model():
    with pytest.raises(TypeError, match="model must be a DecoderOnlyLM, got str"):
        position_losses("model", torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="model must be a DecoderOnlyLM, got Linear"):
        position_losses(nn.Linear(2, 2), torch.zeros(2, 4, dtype=torch.long))


def test_half_losses_leave_out_the_repeats_first_token_which_cannot_be_copied():
    """The first half counts targets 1..n; the repeated half only n + 2..2n, whose token followed the current one
    before. Target n + 1 (a_1 again) follows a_n, while the earlier a_1 followed <bos>: it counts in neither."""
    model = _model(vocab=9).eval()
    tokens = repeat_task(4, 5, 9, generator=torch.Generator().manual_seed(7))  # (4, 11): n = 5
    first, second = half_losses(model, tokens)
    target = position_losses(model, tokens)  # (10,): entry t - 1 is target t
    assert first == pytest.approx(float(target[:5].mean()))
    assert second == pytest.approx(float(target[6:].mean()))
    assert second != pytest.approx(float(target[5:].mean()))  # target n + 1 would change it
    logits = model(tokens).detach()
    bet = logits.clone()
    bet[:, 5, 1:] += 5.0 * torch.nn.functional.one_hot(tokens[:, 6] - 1, 8)  # column n: a sure bet on target n + 1
    assert half_losses_of_logits(bet, tokens) == half_losses_of_logits(logits, tokens)  # counted in neither half
    bet[:, 6, 1:] += 5.0 * torch.nn.functional.one_hot(tokens[:, 7] - 1, 8)  # column n + 1: target n + 2
    assert half_losses_of_logits(bet, tokens)[1] < half_losses_of_logits(logits, tokens)[1]


def test_half_losses_and_train_lm_ask_for_a_repeat_with_a_token_to_copy():
    """n = 1 leaves the repeated half no target to copy (its mean would be NaN): refused by name."""
    model = _model(vocab=9)
    with pytest.raises(ValueError, match=r"tokens must be repeat_task sequences of 2 n \+ 1 >= 5 positions"):
        half_losses(model, repeat_task(2, 1, 9))
    assert all(math.isfinite(v) for v in half_losses(model, repeat_task(2, 2, 9)))
    with pytest.raises(ValueError, match=r"half_len must be an integer >= 2, got 1"):
        train_lm(model, 1, half_len=1)
    with pytest.raises(ValueError, match=r"half_len\[0\] must be an integer >= 2, got 1"):
        train_lm(model, 1, half_len=(1, 4))
    history = train_lm(model, 3, batch_size=4, half_len=(2, 3), generator=torch.Generator().manual_seed(0))
    assert all(math.isfinite(v) for v in history.first_half + history.second_half)


def test_half_losses_of_logits_refuses_logits_that_do_not_fit_the_tokens():
    tokens = repeat_task(2, 3, 9, generator=torch.Generator().manual_seed(0))  # (2, 7)
    with pytest.raises(ValueError, match=r"logits must have shape \(B, T, C\) with the \(B, T\) = \(2, 7\) of tokens"):
        half_losses_of_logits(torch.zeros(2, 6, 9), tokens)
    with pytest.raises(TypeError, match="logits must be a floating-point tensor"):
        half_losses_of_logits(torch.zeros(2, 7, 9, dtype=torch.long), tokens)
    with pytest.raises(ValueError, match=r"tokens must be repeat_task sequences of 2 n \+ 1 >= 5 positions"):
        half_losses_of_logits(torch.zeros(2, 3, 9), tokens[:, :3])
