"""A trained layer for sparse attention to work on, and DeepSeek-V3.2's lightning indexer trained to imitate it
(notebook 13).

**The task: repeated facts.** A sequence of T = 64 positions holds 4 facts (a key and its value), each written 8
times at shuffled positions 0..31, then 32 queries (a fact's key and a blank value). Every position asks two
questions: at a query, the value of its fact (the answer sits on 8 far copies); at every position after the first,
the key one position back (the answer is the previous position). One causal attention layer with 4 heads learns
both in seconds, and its heads split the work: a head that reads the previous position, heads that read the far
copies. Sparse attention needs attention worth sparsifying, and this layer has both kinds.

**The lightning indexer** (DeepSeek-AI, 2025, "DeepSeek-V3.2-Exp: Boosting Long-Context Efficiency with DeepSeek
Sparse Attention") scores every earlier key with a few small ReLU heads,
``I[t, s] = sum_j w[t, j] ReLU(q^I[t, j] . k^I[s])`` (``sparse.lightning_indexer``), and the layer then reads only
the top-k keys by that score. Its queries, keys and head weights are linear maps of the layer's input. In the dense
warm-up of DSA the model is frozen and the indexer is trained alone, by the KL divergence from the layer's attention
(summed over the heads and normalised) to the softmax of its scores: ``train_indexer`` does that stage. The report's
second stage (training the model and the indexer together with only the selected keys) is not done here.

Shapes: ``B`` batch, ``T`` positions, ``W`` width, ``H`` heads, ``H_I`` indexer heads, ``D_I`` indexer size.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._validate.indexer import require_facts_args, require_facts_inputs, require_indexer_args, require_train_args
from .causal import CausalSelfAttention
from .sparse import lightning_indexer

__all__ = ["facts_batch", "train_facts_model", "train_indexer"]

NUM_FACTS, COPIES, NUM_QUERIES = 4, 8, 32  # facts per sequence, copies of each, queries after them
NUM_KEYS, NUM_VALUES = 32, 16  # key and value ids; the value id NUM_VALUES is a query's blank
LENGTH = NUM_FACTS * COPIES + NUM_QUERIES  # T = 64
FIRST_QUERY = NUM_FACTS * COPIES  # 32: the positions from here on are queries


def facts_batch(
    batch_size: int, generator: torch.Generator | None = None, runs: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch of the repeated-facts task: ``(keys, values, recall, previous)``, each (B, T) int64.

    ``recall`` is the fact's value at the query positions and ``previous`` the key one position back at every
    position but the first; ``-100`` where there is no question. ``runs=True`` writes each fact's copies side by side
    (one run of 8 positions per fact) instead of shuffled: the same task, with its answers in blocks.
    """
    require_facts_args(batch_size, generator, runs)
    facts = torch.rand(batch_size, NUM_KEYS, generator=generator).argsort(-1)[:, :NUM_FACTS]  # (B, F) distinct
    stored = torch.randint(NUM_VALUES, (batch_size, NUM_FACTS), generator=generator)  # (B, F)
    if runs:
        order = torch.rand(batch_size, NUM_FACTS, generator=generator).argsort(-1).repeat_interleave(COPIES, 1)
    else:
        shuffle = torch.rand(batch_size, FIRST_QUERY, generator=generator).argsort(-1)  # (B, F r)
        order = torch.arange(NUM_FACTS).repeat_interleave(COPIES).expand(batch_size, -1).gather(1, shuffle)
    asked = torch.randint(NUM_FACTS, (batch_size, NUM_QUERIES), generator=generator)  # (B, Q): each query's fact
    keys = torch.cat([facts.gather(1, order), facts.gather(1, asked)], 1)  # (B, T)
    values = torch.cat([stored.gather(1, order), torch.full_like(asked, NUM_VALUES)], 1)  # (B, T)
    recall = torch.cat([torch.full((batch_size, FIRST_QUERY), -100), stored.gather(1, asked)], 1)  # (B, T)
    previous = torch.cat([torch.full((batch_size, 1), -100), keys[:, :-1]], 1)  # (B, T)
    return keys, values, recall, previous


class FactsModel(nn.Module):
    """Embeddings (key + value + a learned position), a LayerNorm, one ``CausalSelfAttention`` with a residual, and
    two read-outs: the recalled value and the previous key. ``model(keys, values)`` -> logits (B, T, C_v) and
    (B, T, C_k); ``model.inputs(keys, values)`` is the (B, T, W) input of the attention layer (and of an indexer)."""

    def __init__(self, width: int = 64, heads: int = 4):
        super().__init__()
        self.key_embedding = nn.Embedding(NUM_KEYS, width)
        self.value_embedding = nn.Embedding(NUM_VALUES + 1, width)
        self.position_embedding = nn.Parameter(torch.randn(LENGTH, width))
        self.norm = nn.LayerNorm(width)
        self.attention = CausalSelfAttention(width, heads)  # keeps .attention_weights (B, H, T, T)
        self.recall_out, self.previous_out = nn.Linear(width, NUM_VALUES), nn.Linear(width, NUM_KEYS)

    def embed(self, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        require_facts_inputs(keys, values, NUM_KEYS, NUM_VALUES, LENGTH)
        return self.key_embedding(keys) + self.value_embedding(values) + self.position_embedding[: keys.shape[1]]

    def inputs(self, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        return self.norm(self.embed(keys, values))  # (B, T, W)

    def forward(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.embed(keys, values)  # (B, T, W)
        x = x + self.attention(self.norm(x))  # (B, T, W)
        return self.recall_out(x), self.previous_out(x)  # (B, T, C_v), (B, T, C_k)


def train_facts_model(steps: int = 150, *, seed: int = 0, lr: float = 2e-2, batch_size: int = 32) -> FactsModel:
    """Train a :class:`FactsModel` on fresh batches: the two questions' cross-entropies summed, AdamW with the rate up
    over the first tenth of the steps and down along a cosine (``OneCycleLR``), gradients clipped to norm 1.
    ``seed`` fixes the start and the batches. Returns the model in eval mode."""
    require_train_args(steps, seed, lr, batch_size)
    torch.manual_seed(seed)
    model, generator = FactsModel(), torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, lr, total_steps=steps, pct_start=0.1)
    for _ in range(steps):
        keys, values, recall, previous = facts_batch(batch_size, generator)
        recall_logits, previous_logits = model(keys, values)  # (B, T, C_v), (B, T, C_k)
        loss = F.cross_entropy(recall_logits.flatten(0, 1), recall.flatten(), ignore_index=-100)
        loss = loss + F.cross_entropy(previous_logits.flatten(0, 1), previous.flatten(), ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
    return model.eval()


class LightningIndexer(nn.Module):
    """``W_q`` (W -> H_I D_I), ``W_k`` (W -> D_I, one key shared by the indexer heads) and ``W_w`` (W -> H_I): linear
    maps of the layer's input. ``indexer(x)`` -> causal scores (B, T, T), ``-inf`` above the diagonal."""

    def __init__(self, width: int = 64, heads: int = 8, size: int = 16):
        super().__init__()
        self.heads, self.size = heads, size
        self.W_q, self.W_k, self.W_w = nn.Linear(width, heads * size), nn.Linear(width, size), nn.Linear(width, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        queries = self.W_q(x).reshape(batch, length, self.heads, self.size)  # (B, T, H_I, D_I)
        scores = lightning_indexer(queries, self.W_k(x), self.W_w(x))  # (B, T, T)
        future = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)  # (T, T)
        return scores.masked_fill(future, -math.inf)


def train_indexer(
    model: FactsModel, steps: int = 80, *, seed: int = 0, lr: float = 1e-2, batch_size: int = 32
) -> tuple[LightningIndexer, list[float]]:
    """DSA's dense warm-up: a :class:`LightningIndexer` trained alone, the model frozen, by
    ``KL(p || softmax(I))`` per query, p the layer's attention summed over its heads and normalised (their mean).
    Adam on fresh batches. Returns the indexer in eval mode and the loss of each step."""
    require_indexer_args(model, FactsModel, steps, seed, lr, batch_size)
    torch.manual_seed(seed + 1)
    indexer, generator = LightningIndexer(), torch.Generator().manual_seed(seed + 5000)
    optimizer = torch.optim.Adam(indexer.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        keys, values, _, _ = facts_batch(batch_size, generator)
        with torch.no_grad():
            x = model.inputs(keys, values)  # (B, T, W)
            model.attention(x)
            target = model.attention.attention_weights.mean(1)  # (B, H, T, T) -> (B, T, T), rows sum to 1
        log_p = torch.log_softmax(indexer(x), dim=-1)  # (B, T, T); -inf above the diagonal, where target is 0
        kl = torch.where(target > 0, target * (target.clamp_min(1e-30).log() - log_p), 0.0).sum(-1).mean()
        optimizer.zero_grad()
        kl.backward()
        optimizer.step()
        losses.append(kl.item())
    return indexer.eval(), losses
