"""Training and scoring the sequence-to-sequence models of notebooks 07 and 08.

Every model here is called as ``model(src, src_len, tgt_in) -> logits (B, T, C)`` (teacher forcing) and
has ``model.greedy(src, src_len, max_len) -> (tokens (B, max_len), weights)``. Shapes as in
:mod:`attn_course.tasks`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from torch import nn

from ._validate import require_seq2seq_model
from ._validate.args import require_batch, require_training_args
from .tasks import EOS, PAD, Batch, Splits

__all__ = [
    "History",
    "train_seq2seq",
    "sequence_accuracy",
    "accuracy_by_length",
]


@dataclass
class History:
    """What :func:`train_seq2seq` measured: one entry per epoch (``step_loss``: one per optimiser step), and the
    wall-clock seconds in all."""

    train_loss: list[float] = field(default_factory=list)
    step_loss: list[float] = field(default_factory=list)
    valid_accuracy: list[float] = field(default_factory=list)
    seconds: float = 0.0


def train_seq2seq(
    model: nn.Module,
    data: Splits,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 5e-3,
    seed: int = 0,
    clip: float = 1.0,
    warmup: int = 0,
) -> History:
    """Train with Adam on the cross-entropy of the next token (``PAD`` ignored), teacher forcing.

    The learning rate starts at ``lr`` and decays to 0 along a half cosine over all the steps, which
    lets the last epochs settle instead of jumping around. With ``warmup`` > 0 it first rises linearly
    from ``lr / warmup`` to ``lr`` over ``warmup`` steps, then decays along the half cosine over the rest.
    The order of the examples comes from a generator seeded with ``seed``; gradients are clipped to norm
    ``clip``. Adam and the clipping treat all the tensors in a few batched (``foreach``) operations: the same
    numbers as tensor by tensor, in less time. After each epoch the model is scored on ``data.valid`` (sequence
    accuracy, greedy decoding).
    """
    steps, seed = require_training_args(model, data, Splits, epochs, batch_size, lr, clip, warmup, seed)
    gen = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)  # all tensors at once: same numbers, faster
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps - warmup)  # lr (1 + cos(pi t / T)) / 2
    schedule = cosine
    if warmup:
        rise = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / warmup, total_iters=warmup)
        schedule = torch.optim.lr_scheduler.SequentialLR(optimizer, [rise, cosine], milestones=[warmup])
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    history = History()
    start = time.perf_counter()
    for _ in range(epochs):
        model.train()
        total, count = 0.0, 0
        for index in torch.randperm(len(data.train), generator=gen).split(batch_size):
            batch = _trim(data.train.select(index))
            logits = model(batch.src, batch.src_len, batch.tgt_in)  # (B, T, C)
            loss = loss_fn(logits.flatten(0, 1), batch.tgt_out.flatten())  # (B * T, C) vs (B * T,)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip, foreach=True)
            optimizer.step()
            schedule.step()
            history.step_loss.append(loss.item())
            total += loss.item() * len(index)
            count += len(index)
        history.train_loss.append(total / count)
        history.valid_accuracy.append(sequence_accuracy(model, data.valid))
    history.seconds = time.perf_counter() - start
    model.eval()
    return history


def _trim(batch: Batch) -> Batch:
    """Drop the columns that are padding in every row of this batch (shorter loops, same result)."""
    width = int(batch.src_len.max())
    return Batch(batch.src[:, :width], batch.src_len, batch.tgt_in[:, :width], batch.tgt_out[:, :width])


def _until_eos(row: torch.Tensor) -> tuple[int, ...]:
    """The token ids of a row up to and with its first ``EOS`` (the whole row when it has none)."""
    ids = row.tolist()
    return tuple(ids[: ids.index(EOS) + 1]) if EOS in ids else tuple(ids)


def _hits(model: nn.Module, batch: Batch) -> list[bool]:
    """Per example: does the greedy output equal the target token for token, up to and with the ``EOS``?"""
    require_seq2seq_model(model)
    require_batch(batch, Batch)
    model.eval()
    tokens, _ = model.greedy(batch.src, batch.src_len, max_len=batch.tgt_out.shape[1] + 1)
    return [_until_eos(p) == _until_eos(t) for p, t in zip(tokens, batch.tgt_out, strict=True)]


def sequence_accuracy(model: nn.Module, batch: Batch) -> float:
    """Fraction of examples whose whole greedy output equals the target: every digit, then ``EOS``."""
    require_batch(batch, Batch, nonempty=True)
    hits = _hits(model, batch)
    return sum(hits) / len(hits)


def accuracy_by_length(model: nn.Module, batch: Batch) -> dict[int, float]:
    """Sequence accuracy for each source length (number of digits) present in ``batch``."""
    result: dict[int, list[bool]] = {}
    for hit, n in zip(_hits(model, batch), (batch.src_len - 1).tolist(), strict=True):
        result.setdefault(n, []).append(hit)
    return {n: sum(hits) / len(hits) for n, hits in sorted(result.items())}
