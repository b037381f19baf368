"""Language-modelling data made in code: the repeat task of notebook 09 and the Markov source of notebook 11.

``repeat_task`` makes sequences ``<bos> a_1 .. a_n a_1 .. a_n`` of random tokens: the first half cannot be predicted
(each token is a fresh draw), and the repeated half can, from its second token on, only by copying from the context.
Its first token, ``a_1`` at position ``n + 1``, cannot be copied: the earlier ``a_1`` follows ``<bos>``, not
``a_n``, so nothing in the context leads from ``a_n`` to it, and nothing tells that the repeat starts there.

``markov_task`` draws from an order-2 Markov source: the best prediction needs the two previous tokens only, at
any position, so a model's loss should be the same at every position (notebook 11's test of position schemes).

Shapes: ``B`` batch, ``n`` half length, ``T = 2 n + 1`` positions, ``C`` vocabulary size.
"""

from __future__ import annotations

import torch

from ._validate.lm import require_markov_args, require_repeat_args

__all__ = ["repeat_task", "markov_task"]

BOS_TOKEN = 0  # the first token of every sequence; the random tokens are 1 .. C - 1


def repeat_task(
    batch_size: int, half_len: int, vocab_size: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """(B, 2 n + 1) int64: ``BOS_TOKEN``, then n tokens drawn uniformly from ``1 .. C - 1``, then the same n again."""
    require_repeat_args(batch_size, half_len, vocab_size, generator)
    first = torch.randint(1, vocab_size, (batch_size, half_len), generator=generator)  # (B, n)
    bos = torch.full((batch_size, 1), BOS_TOKEN, dtype=torch.long)
    return torch.cat([bos, first, first], dim=1)  # (B, 1 + n + n)


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
