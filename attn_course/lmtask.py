"""A language-modelling task made in code, its training loop and the head scores (notebook 09).

``repeat_task`` makes sequences ``<bos> a_1 .. a_n a_1 .. a_n`` of random tokens: the first half cannot be predicted
(each token is a fresh draw), and the repeated half can, from its second token on, only by copying from the context.
Its first token, ``a_1`` at position ``n + 1``, cannot be copied: the earlier ``a_1`` follows ``<bos>``, not
``a_n``, so nothing in the context leads from ``a_n`` to it, and nothing tells that the repeat starts there. Two
heads working together copy the rest (an induction circuit): a *previous-token* head writes into position ``i``
which token came before it; an *induction* head at position ``n + i`` (token ``a_i``) looks for the earlier position
whose previous token is ``a_i``, which is position ``i + 1``, and copies the token found there, ``a_{i+1}``.

Notebook 11 adds an order-2 Markov source (``markov_task``), training on batches made once and shared between
models (``fit_lm``), and the loss at each target position (``position_losses``).

Shapes: ``B`` batch, ``n`` half length, ``T = 2 n + 1`` positions, ``C`` vocabulary size, ``L`` layers,
``H`` heads.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from ._validate_lm import (
    require_fit_args,
    require_head_probe,
    require_markov_args,
    require_repeat_args,
    require_repeats,
    require_scored_tokens,
    require_train_args,
)
from ._validate_models import require_ablate

__all__ = [
    "BOS_TOKEN",
    "repeat_task",
    "half_losses",
    "LMHistory",
    "train_lm",
    "head_scores",
    "copying_scores",
    "markov_task",
    "fit_lm",
    "position_losses",
]

BOS_TOKEN = 0  # the first token of every sequence; the random tokens are 1 .. C - 1


def repeat_task(
    batch_size: int, half_len: int, vocab_size: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """(B, 2 n + 1) int64: ``BOS_TOKEN``, then n tokens drawn uniformly from ``1 .. C - 1``, then the same n again."""
    require_repeat_args(batch_size, half_len, vocab_size, generator)
    first = torch.randint(1, vocab_size, (batch_size, half_len), generator=generator)  # (B, n)
    bos = torch.full((batch_size, 1), BOS_TOKEN, dtype=torch.long)
    return torch.cat([bos, first, first], dim=1)  # (B, 1 + n + n)


def _half_losses(logits: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean next-token loss over the first half's targets ``1 .. n`` and over the repeated half's copyable ones
    ``n + 2 .. 2n``, as tensors (target ``n + 1``, the repeat's ``a_1``, counts in neither)."""
    half = (tokens.shape[1] - 1) // 2
    loss = nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")  # (B, T-1)
    return loss[:, :half].mean(), loss[:, half + 1 :].mean()  # column t - 1 holds target t


@torch.no_grad()
def half_losses(model: nn.Module, tokens: torch.Tensor, ablate=(), ablation: str = "zero") -> tuple[float, float]:
    """Next-token loss (nats) on the first half's tokens and on the repeated half's, for sequences of
    ``repeat_task``: the mean over the targets ``a_1 .. a_n`` at positions ``1 .. n``, and over the targets that can be
    copied, ``a_2 .. a_n`` at positions ``n + 2 .. 2n``. The repeat's first token (position ``n + 1``) counts in
    neither: it cannot be copied (its earlier copy follows ``<bos>``, not ``a_n``), and nothing tells that the repeat
    starts there. Random guessing gives ``log(C - 1)`` on both.

    ``ablate``: (layer, head) pairs switched off. ``ablation="zero"`` sets their outputs to 0, as
    ``DecoderOnlyLM.forward`` does; ``"mean"`` replaces each one by its mean over ``tokens`` at the same position
    (measured in a first pass with every head on), which keeps the next layers' inputs closer to what they saw in
    training.
    """
    require_head_probe(model, tokens, ablation)  # n >= 2: the repeated half has a target to copy
    first, second = _half_losses(_ablated_pass(model, tokens, ablate, ablation), tokens)
    return float(first), float(second)


def _ablated_pass(model: nn.Module, tokens: torch.Tensor, ablate, ablation: str, positions=None) -> torch.Tensor:
    """The logits (B, T, C) of ``model(tokens)`` with the heads of ``ablate`` set to 0 (``"zero"``) or to their mean
    over ``tokens`` at each position (``"mean"``); with ``positions`` (a list of ints), only at those positions."""
    if not ablate or (ablation == "zero" and positions is None):
        return model(tokens, ablate=ablate)
    chosen: dict[int, list[int]] = {}
    for layer, head in require_ablate(ablate, len(model.blocks), model.num_heads):
        chosen.setdefault(layer, []).append(head)
    projections = [_output_projection(block) for block in model.blocks]
    rows = slice(None) if positions is None else torch.tensor(positions, dtype=torch.long)  # the positions ablated
    means: dict[int, torch.Tensor] = {}
    if ablation == "mean":

        def record(layer):  # the mean over the sequences of W_O's input, (T, H * dh): the heads side by side
            return lambda module, inputs: means.update({layer: inputs[0].mean(dim=0)})

        _hooked(lambda: model(tokens), [(p, record(layer)) for layer, p in enumerate(projections)])

    def replace(layer, heads):
        def hook(module, inputs):
            x = inputs[0].clone()  # (B, T, H * dh)
            size = x.shape[-1] // model.num_heads  # dh
            for head in heads:
                part = slice(head * size, (head + 1) * size)
                x[:, rows, part] = means[layer][rows, part] if ablation == "mean" else 0.0
            return (x,)

        return hook

    return _hooked(
        lambda: model(tokens), [(projections[layer], replace(layer, heads)) for layer, heads in chosen.items()]
    )


def _hooked(run, hooks, pre: bool = True):
    """``run()`` with the ``(module, hook)`` pairs of ``hooks`` registered (forward pre-hooks, or forward hooks),
    removed afterwards even when ``run`` fails."""
    handles = [module.register_forward_pre_hook(h) if pre else module.register_forward_hook(h) for module, h in hooks]
    try:
        return run()
    finally:
        for handle in handles:
            handle.remove()


def _output_projection(block: nn.Module) -> nn.Module:
    """The linear layer that takes a block's heads, side by side (B, T, H * dh), to the residual stream."""
    att = block.attention
    return att.W_O if hasattr(att, "W_O") else att.W_o


@dataclass
class LMHistory:
    """What :func:`train_lm` measured, one entry per step: the loss on the first and on the repeated half of the
    step's training batch (as :func:`half_losses` counts them), and the wall-clock seconds in all."""

    first_half: list[float] = field(default_factory=list)
    second_half: list[float] = field(default_factory=list)
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
    history, started = LMHistory(), time.perf_counter()
    model.train()
    for _ in range(steps):
        n = low if low == high else int(torch.randint(low, high + 1, (1,), generator=generator))
        tokens = repeat_task(batch_size, n, model.vocab_size, generator=generator)  # (B, 2 n + 1)
        logits, loss = _step(model, optimizer, schedule, tokens)  # (B, T, C), the mean next-token loss
        first, second = _half_losses(logits.detach(), tokens)
        history.first_half.append(float(first))
        history.second_half.append(float(second))
    model.eval()
    history.seconds = time.perf_counter() - started
    return history


@torch.no_grad()
def head_scores(
    model: nn.Module, tokens: torch.Tensor, ablate=(), *, ablation: str = "zero", positions=None
) -> dict[str, torch.Tensor]:
    """How much each head behaves as a previous-token head and as an induction head, on ``repeat_task`` sequences.

    Returns ``{"previous": (L, H), "induction": (L, H)}``: the mean attention weight from position ``t`` to
    ``t - 1`` (over ``t = 1 .. 2n``), and from position ``n + i`` to ``i + 1`` (over ``i = 1 .. n - 1``), averaged
    over the batch. A head that always looks where the name says scores 1.

    ``ablate``: (layer, head) pairs switched off during the pass (how much a head's pattern depends on another
    head), set to 0 (``ablation="zero"``, as in ``DecoderOnlyLM.forward``) or to their mean over ``tokens`` at each
    position (``"mean"``). ``positions``: None (every position) or a list of the positions where they are switched
    off: the first half's positions ``1 .. n`` change only the keys that the repeated half's queries read, the
    repeated half's ``n + 1 .. 2n`` only those queries.
    """
    half, positions = require_head_probe(model, tokens, ablation, positions)  # n, and None or a list of positions
    _ablated_pass(model, tokens, ablate, ablation, positions)
    weights = model.attention_weights()  # (B, L, H, T, T)
    t = torch.arange(1, tokens.shape[1])
    previous = weights[..., t, t - 1].mean(dim=(0, -1))  # (B, L, H, 2n) -> (L, H)
    i = torch.arange(1, half)
    induction = weights[..., half + i, i + 1].mean(dim=(0, -1))  # (B, L, H, n - 1) -> (L, H)
    return {"previous": previous, "induction": induction}


@torch.no_grad()
def copying_scores(model: nn.Module, tokens: torch.Tensor, ablate=()) -> torch.Tensor:
    """How much each head's own output raises the logit of the token that comes next, on ``repeat_task`` sequences.

    Returns (L, H): at each query ``n + i`` of the repeated half (``i = 1 .. n - 1``), the head's write into the
    residual stream is carried straight to the logits (through the final LayerNorm, with the scale that the pass
    itself used, and the output layer), and the score is the logit it gives the next token, ``a_{i+1}``, minus the
    mean logit it gives all ``C`` tokens; averaged over queries and sequences. A head that copies the token it
    attends to at position ``i + 1`` scores well above 0; a head that adds nothing for that token scores about 0.
    This is a direct logit attribution: it measures the head's direct path only, not what later layers make of it.
    """
    half = require_repeats(model, tokens)
    captured: dict[str, torch.Tensor] = {}
    keep = (model.norm, lambda module, inputs, output: captured.update(x=inputs[0].detach()))  # the final LN's input
    _hooked(lambda: model(tokens, ablate=ablate), [keep], pre=False)
    resid = captured["x"]  # (B, T, D): the residual stream the final LayerNorm read
    sigma = (resid.var(dim=-1, unbiased=False, keepdim=True) + model.norm.eps).sqrt()  # (B, T, 1)
    rows = half + torch.arange(1, half)  # (n - 1,): the queries n + 1 .. 2n - 1
    targets = tokens[:, rows + 1]  # (B, n - 1): the next tokens a_2 .. a_n
    scale = model.norm.weight / sigma[:, rows]  # (B, n - 1, D): LayerNorm at these positions, frozen
    scores = []
    for block in model.blocks:
        writes = block.head_writes()[:, :, rows]  # (B, H, n - 1, D)
        centred = writes - writes.mean(dim=-1, keepdim=True)  # LayerNorm subtracts the mean of the features
        logits = (centred * scale.unsqueeze(1)) @ model.head.weight.T  # (B, H, n - 1, D) x (D, C) -> (B, H, n - 1, C)
        index = targets.unsqueeze(1).expand(-1, logits.shape[1], -1).unsqueeze(-1)  # (B, H, n - 1, 1)
        right = logits.gather(-1, index).squeeze(-1)  # (B, H, n - 1): the logit given to the next token
        scores.append((right - logits.mean(dim=-1)).mean(dim=(0, 2)))  # (H,)
    return torch.stack(scores)  # (L, H)


def markov_task(
    batch_size: int, length: int, table: torch.Tensor, follow: float = 0.8, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """(B, length) int64 sequences of an order-2 Markov source over ``C`` tokens (notebook 11).

    The first two tokens are uniform; after them token ``t`` is ``table[x_{t-2}, x_{t-1}]`` with probability
    ``follow``, otherwise uniform over the ``C`` tokens (which may draw the table's token too). The structure is local:
    the best prediction needs the two previous tokens only, at any position, so its loss is the same at every
    position: ``-(f + u) ln(f + u) - (C - 1) u ln u`` nats with ``f = follow``, ``u = (1 - f) / C``.

    Args:
        table: (C, C) int64, entries in ``0 .. C - 1``: the token that follows each pair.
        follow: the probability f of the table's token, in [0, 1].
        generator: the random source (None: PyTorch's global one).
    """
    require_markov_args(batch_size, length, table, follow, generator)
    tokens = torch.randint(0, table.shape[0], (batch_size, length), generator=generator)  # (B, T): uniform draws
    keep = torch.rand(batch_size, length, generator=generator) < follow  # (B, T): where the table decides
    for t in range(2, length):
        tokens[:, t] = torch.where(keep[:, t], table[tokens[:, t - 2], tokens[:, t - 1]], tokens[:, t])
    return tokens


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


@torch.no_grad()
def position_losses(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """The next-token loss (nats) at each target position, averaged over the batch: (T - 1,), entry ``t - 1`` for the
    prediction of token ``t`` (made at position ``t - 1``), ``t = 1 .. T - 1``."""
    require_scored_tokens(model, tokens)
    logits = model(tokens)  # (B, T, C)
    loss = nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")  # (B, T - 1)
    return loss.mean(dim=0)


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
