"""Training a decoder-only language model: AdamW with warm-up and a cosine decay, on the next-token loss (notebooks
09 and 11).

``train_lm`` draws a fresh batch of the repeat task (``attn_course.lmdata``) at every step and records the loss on
each half; ``fit_lm`` trains on batches made once and shared between models, so that models that differ in one
option see the same data. Both take the same steps: the loss of every position's next token, gradients clipped to
norm 1, the rate up over a warm-up then down to 0 along a half cosine.

Shapes: ``B`` batch, ``T`` positions, ``S`` steps, ``C`` vocabulary size.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
from torch import nn

from ._validate.lm import require_fit_args, require_train_args
from .lmdata import repeat_task
from .lmeval import half_losses_of_logits

__all__ = ["train_lm", "fit_lm"]


@dataclass(frozen=True)
class LMHistory:
    """What :func:`train_lm` measured, one entry per step: the loss on the first and on the repeated half of the
    step's training batch (as :func:`~attn_course.lmeval.half_losses` counts them), and the wall-clock seconds in all.
    Frozen: the record of a finished run."""

    first_half: list[float]
    second_half: list[float]
    seconds: float = 0.0


def train_lm(
    model: nn.Module,
    steps: int,
    *,
    batch_size: int = 32,
    half_len: int | tuple[int, int] = 16,
    lr: float = 3e-3,
    generator: torch.Generator | None = None,
    warmup: int = 20,
    foreach: bool | None = None,
) -> LMHistory:
    """Train ``model`` with AdamW on the next-token loss of every position of fresh ``repeat_task`` batches.

    ``half_len``: n >= 2, or a range ``(low, high)`` from which each step draws its n (inclusive). With one n, the
    position alone tells where the copy lies (n - 1 places back) and a model may learn that instead of copying by
    content; a range of n rules this out. The learning rate rises linearly over ``warmup`` steps, then decays to 0
    along a half cosine. Each step draws a new batch from ``generator`` (so the model never sees a sequence twice);
    gradients are clipped to norm 1. ``foreach``: passed to ``torch.optim.AdamW`` (None, its default, updates
    tensor by tensor on the CPU; True updates all of them in a few batched operations, faster for a small model).
    """
    low, high = require_train_args(model, steps, batch_size, half_len, lr, warmup, generator, foreach)  # n's range
    optimizer, schedule = _optimizer(model, lr, warmup, steps, foreach)
    first_half, second_half, started = [], [], time.perf_counter()
    model.train()
    for _ in range(steps):
        n = low if low == high else int(torch.randint(low, high + 1, (1,), generator=generator))
        tokens = repeat_task(batch_size, n, model.vocab_size, generator=generator)  # (B, 2 n + 1)
        logits, loss = _step(model, optimizer, schedule, tokens)  # (B, T, C), the mean next-token loss
        first, second = half_losses_of_logits(logits.detach(), tokens)
        first_half.append(float(first))
        second_half.append(float(second))
    model.eval()
    return LMHistory(first_half, second_half, time.perf_counter() - started)


def fit_lm(
    model: nn.Module, batches: torch.Tensor, *, lr: float = 3e-3, warmup: int = 8, foreach: bool | None = None
) -> list[float]:
    """Train ``model`` with AdamW on the next-token loss of every position of the given batches, one step each.

    ``batches``: (S, B, T) tokens, S steps of B sequences (made once and shared, so that every model sees the same
    data). The schedule, clipping and weight decay are :func:`train_lm`'s. Returns the S training losses.
    """
    require_fit_args(model, batches, lr, warmup, foreach)
    optimizer, schedule = _optimizer(model, lr, warmup, batches.shape[0], foreach)  # one step per batch
    losses = []
    model.train()
    for tokens in batches:  # (B, T)
        _, loss = _step(model, optimizer, schedule, tokens)  # the mean next-token loss
        losses.append(loss.item())
    model.eval()
    return losses


def _optimizer(model: nn.Module, lr: float, warmup: int, steps: int, foreach: bool | None):
    """AdamW (weight decay 0.01) and its schedule: the rate up to ``lr`` over ``warmup`` steps, then down to 0 along
    a half cosine, over ``steps`` steps in all."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, foreach=foreach)
    warmup = min(warmup, steps - 1)

    def factor(step: int) -> float:  # of lr: up to 1 over the warmup, then down to 0 along a half cosine
        if step < warmup:
            return (step + 1) / (warmup + 1)
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (steps - warmup)))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _step(model: nn.Module, optimizer, schedule, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One training step on the next-token loss of every position of ``tokens`` (B, T), gradients clipped to norm 1."""
    logits = model(tokens)  # (B, T, C)
    loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    return logits, loss
