"""Measuring a trained language model: losses, and which heads copy (notebooks 09 and 11).

On the repeat task (``attn_course.lmdata``), two heads working together copy the repeated half (an induction
circuit): a *previous-token* head writes into position ``i`` which token came before it; an *induction* head at
position ``n + i`` (token ``a_i``) looks for the earlier position whose previous token is ``a_i``, which is position
``i + 1``, and copies the token found there, ``a_{i+1}``. ``head_scores`` measures how much each head attends where
these two would; ``copying_scores`` how much its own output raises the next token's logit; ``half_losses`` the loss on
each half, with chosen heads switched off (ablation) by setting their outputs to 0 or to their mean.
``position_losses`` gives the loss at each position (notebook 11).

Shapes: ``B`` batch, ``n`` half length, ``T = 2 n + 1`` positions, ``C`` vocabulary size, ``L`` layers, ``H`` heads,
``D`` model size, ``dh`` head size.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate.lm import require_head_probe, require_repeat_logits, require_repeats, require_scored_tokens
from ._validate.models import require_ablate

__all__ = ["half_losses", "head_scores", "copying_scores", "position_losses"]


def half_losses_of_logits(logits: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean next-token loss over the first half's targets ``1 .. n`` and over the repeated half's copyable ones
    ``n + 2 .. 2n``, from the logits (B, T, C) of ``repeat_task`` tokens (B, T), as 0-d tensors (target ``n + 1``, the
    repeat's ``a_1``, counts in neither). :func:`half_losses` for a model; ``train_lm`` for its training batches."""
    require_repeat_logits(logits, tokens)
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
    first, second = half_losses_of_logits(_ablated_pass(model, tokens, ablate, ablation), tokens)
    return float(first), float(second)


def _ablated_pass(model: nn.Module, tokens: torch.Tensor, ablate, ablation: str, positions=None) -> torch.Tensor:
    """The logits (B, T, C) of ``model(tokens)`` with the heads of ``ablate`` set to 0 (``"zero"``) or to their mean
    over ``tokens`` at each position (``"mean"``); with ``positions`` (a list of ints), only at those positions."""
    if not ablate or (ablation == "zero" and positions is None):
        return model(tokens, ablate=ablate)
    chosen: dict[int, list[int]] = {}
    for layer, head in require_ablate(ablate, len(model.blocks), model.num_heads):
        chosen.setdefault(layer, []).append(head)
    projections = [block.attention.W_o for block in model.blocks]  # they take the heads side by side
    rows = slice(None) if positions is None else torch.tensor(positions, dtype=torch.long)  # the positions ablated
    means: dict[int, torch.Tensor] = {}
    if ablation == "mean":

        def record(layer):  # the mean over the sequences of W_o's input, (T, H * dh): the heads side by side
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
        logits = (centred * scale.unsqueeze(1)) @ model.lm_head.weight.T  # (B, H, n-1, D) x (D, C) -> (B, H, n-1, C)
        index = targets.unsqueeze(1).expand(-1, logits.shape[1], -1).unsqueeze(-1)  # (B, H, n - 1, 1)
        right = logits.gather(-1, index).squeeze(-1)  # (B, H, n - 1): the logit given to the next token
        scores.append((right - logits.mean(dim=-1)).mean(dim=(0, 2)))  # (H,)
    return torch.stack(scores)  # (L, H)


@torch.no_grad()
def position_losses(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """The next-token loss (nats) at each target position, averaged over the batch: (T - 1,), entry ``t - 1`` for the
    prediction of token ``t`` (made at position ``t - 1``), ``t = 1 .. T - 1``."""
    require_scored_tokens(model, tokens)
    logits = model(tokens)  # (B, T, C)
    loss = nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")  # (B, T - 1)
    return loss.mean(dim=0)
