"""The recall race: multi-query associative recall (MQAR) learned by small models with different memories (notebook 12).

MQAR (Arora et al., 2023, "Zoology") shows a model ``N`` key-value pairs, then asks for the values of the same keys in
another order. Here a position holds a whole pair, the sum of a key's and a value's embeddings; a query position
holds its key and a blank value, and the model must name the value stored with that key:

    pairs:   (k_1, v_1) (k_2, v_2) ... (k_N, v_N)    queries:  (k_{pi(1)}, _) ... (k_{pi(N)}, _)

Zoology writes a pair as two tokens and gives its models a short convolution that puts the key beside its value;
giving the pair whole leaves the same information and spares the race that step. Every contender is the same model
around one memory layer (or two, for the hybrid): embeddings, then for each layer ``x = x + W_o memory(LayerNorm(x))``
with queries, keys and values of ``head_size`` numbers, then a read-out over the values. The memories:

* ``"softmax"``: causal softmax attention, which keeps every pair (PyTorch's fused kernel);
* ``"linear"``: causal linear attention with ``elu + 1`` features (``linear.linear_attention_chunked``);
* ``"sum"``: the plain sum ``S_t = sum_i k_i v_i^T`` read with ``S_t^T q_t``: unit keys and queries, no feature map
  and no normaliser (the linear memory of notebook 12's section 5), so that it differs from ``"delta"`` in the rule
  alone and from ``"linear"`` in the keys alone;
* ``"delta"``: the delta rule, unit keys and queries, ``beta_t = sigmoid(w_b . x_t + 2)`` (``delta_rule_chunked``);
* ``"gated"``: Gated DeltaNet, the delta rule with a forget gate ``alpha_t = sigmoid(w_a . x_t + 5)``, which starts
  near 1 (keep everything) and is learned.

The state of the three linear memories is ``head_size x head_size`` numbers, whatever ``N``.

Shapes: ``B`` batch, ``T`` positions (``2 N``), ``W`` model width, ``D`` head size, ``C`` number of values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ._validate.mqar import (
    require_mqar_batch_args,
    require_race_args,
    require_recall_inputs,
    require_recall_model_args,
)
from .delta_rule import delta_rule_chunked
from .linear import linear_attention_chunked

__all__ = ["train_recall"]  # mqar_batch and RecallModel are public too, for a reader who builds on the race

MEMORIES = ("softmax", "linear", "sum", "delta", "gated")  # the kinds of memory layer (as _validate.mqar.MEMORIES)
BETA_START = 2.0  # beta starts at sigmoid(2) = 0.88: the delta rules first write almost the whole error
GATE_START = 5.0  # alpha starts at sigmoid(5) = 0.993 per step: the gate first keeps almost everything


def mqar_batch(
    num_pairs: int, batch_size: int, num_keys: int, num_values: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch of the recall task: ``num_pairs`` distinct keys with random values, then every key once more, shuffled.

    Returns ``(keys, values, targets)``, each (B, 2 N) int64: key ids in ``[0, num_keys)``; value ids in
    ``[0, num_values)``, and ``num_values`` (the blank) at the N query positions; targets ``-100`` (no loss) at the
    pair positions and the stored value at each query position.
    """
    require_mqar_batch_args(num_pairs, batch_size, num_keys, num_values, generator)
    keys = torch.rand(batch_size, num_keys, generator=generator).argsort(-1)[:, :num_pairs]  # (B, N), distinct
    values = torch.randint(num_values, (batch_size, num_pairs), generator=generator)  # (B, N)
    order = torch.rand(batch_size, num_pairs, generator=generator).argsort(-1)  # (B, N): the order of the queries
    blank = torch.full_like(values, num_values)  # (B, N)
    return (
        torch.cat([keys, keys.gather(1, order)], 1),  # (B, 2 N)
        torch.cat([values, blank], 1),  # (B, 2 N)
        torch.cat([torch.full_like(values, -100), values.gather(1, order)], 1),  # (B, 2 N)
    )


class MemoryLayer(nn.Module):
    """One memory layer: queries, keys and values of ``head_size`` numbers, one of ``MEMORIES``, and ``W_o``."""

    def __init__(self, kind: str, width: int, head_size: int):
        super().__init__()
        self.kind = kind
        self.W_qkv = nn.Linear(width, 3 * head_size, bias=False)
        self.W_gates = nn.Linear(width, 2)  # beta and alpha of the delta rules, one number each per position
        self.W_o = nn.Linear(head_size, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.W_qkv(x).chunk(3, dim=-1)  # (B, T, D) each
        if self.kind == "softmax":
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, T, D)
        elif self.kind == "linear":
            out = linear_attention_chunked(
                q, k, v, max(q.shape[1], 1)
            )  # one chunk: the causal parallel form, (B, T, D)
        elif self.kind == "sum":
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)  # unit queries and keys
            out = torch.tril(q @ k.transpose(1, 2)) @ v  # (B, T, T) x (B, T, D): sum_{i <= t} (q_t . k_i) v_i
        else:
            beta, alpha = self.gates(x)  # (B, T) each; alpha None for the plain delta rule
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)  # unit queries and keys
            out, _ = delta_rule_chunked(q, k, v, beta, max(q.shape[1], 1), alpha=alpha)  # one chunk: (B, T, D)
        return self.W_o(out)  # (B, T, D) x (D, W) -> (B, T, W)

    def gates(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The writing strength beta and, for ``"gated"``, the forget gate alpha: (B, T) each, in (0, 1)."""
        b, a = self.W_gates(x).unbind(-1)  # (B, T) each
        return torch.sigmoid(b + BETA_START), torch.sigmoid(a + GATE_START) if self.kind == "gated" else None


class RecallModel(nn.Module):
    """Embeddings of a pair (key + value), one memory layer per entry of ``memories``, each with a residual and a
    LayerNorm before it, and a read-out over the ``num_values`` values.

    ``model(keys, values)``: (B, T) int64 each -> logits (B, T, C).
    """

    def __init__(self, memories, num_keys: int, num_values: int, width: int = 64, head_size: int = 16):
        require_recall_model_args(memories, num_keys, num_values, width, head_size)
        super().__init__()
        self.memories, self.num_keys, self.num_values = tuple(memories), num_keys, num_values
        self.key_embedding = nn.Embedding(num_keys, width)
        self.value_embedding = nn.Embedding(num_values + 1, width)  # the last is the blank of a query position
        self.layers = nn.ModuleList(MemoryLayer(kind, width, head_size) for kind in self.memories)
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in self.memories)
        self.readout = nn.Linear(width, num_values)

    def forward(self, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        require_recall_inputs(keys, values, self.num_keys, self.num_values)
        x = self.key_embedding(keys) + self.value_embedding(values)  # (B, T, W)
        for layer, norm in zip(self.layers, self.norms, strict=True):
            x = x + layer(norm(x))  # (B, T, W)
        return self.readout(x)  # (B, T, W) x (W, C) -> (B, T, C)


@dataclass(frozen=True)
class RecallRun:
    """What :func:`train_recall` measured: accuracy at each number of pairs, the mean forget gate alpha of each
    ``"gated"`` layer on the test batches (empty for the others), and the training time in seconds."""

    memories: tuple[str, ...]
    accuracy: dict[int, float]
    mean_alpha: tuple[float, ...]
    seconds: float


def train_recall(
    memories,
    pairs=(4, 8, 16, 32),
    *,
    steps: int = 300,
    batch_size: int = 32,
    num_keys: int = 64,
    num_values: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
) -> RecallRun:
    """Train a :class:`RecallModel` with ``memories`` on the recall task, then measure its accuracy.

    The steps cycle through ``pairs`` (a batch of ``batch_size`` sequences of N pairs each); AdamW with the rate up
    over the first tenth of the steps and down along a cosine (``OneCycleLR``), gradients clipped to norm 1, the loss
    at the query positions only. Accuracy: the share of 256 fresh test sequences' queries, at each N, whose most
    likely value is the stored one. ``seed`` fixes the model's start, the training batches and the test batches.
    """
    require_race_args(memories, pairs, steps, batch_size, num_keys, num_values, lr, seed)
    torch.manual_seed(seed)
    model, generator = RecallModel(memories, num_keys, num_values), torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, lr, total_steps=steps, pct_start=0.1)
    started = time.perf_counter()
    for step in range(steps):
        keys, values, targets = mqar_batch(pairs[step % len(pairs)], batch_size, num_keys, num_values, generator)
        loss = F.cross_entropy(model(keys, values).flatten(0, 1), targets.flatten(), ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
    seconds = time.perf_counter() - started
    accuracy, alphas = _test(model, pairs, num_keys, num_values, torch.Generator().manual_seed(seed + 10_000))
    return RecallRun(tuple(memories), accuracy, alphas, seconds)


@torch.no_grad()
def _test(model: RecallModel, pairs, num_keys: int, num_values: int, generator: torch.Generator):
    """Accuracy at each N on 256 fresh sequences, and the mean alpha of each gated layer over them."""
    accuracy, alphas = {}, []
    for n in pairs:
        keys, values, targets = mqar_batch(n, 256, num_keys, num_values, generator)  # (256, 2 n) each
        asked = targets != -100  # (256, 2 n): the query positions
        accuracy[n] = (model(keys, values).argmax(-1)[asked] == targets[asked]).double().mean().item()
        x = model.key_embedding(keys) + model.value_embedding(values)  # (256, 2 n, W)
        for layer, norm in zip(model.layers, model.norms, strict=True):
            if layer.kind == "gated":
                alphas.append(layer.gates(norm(x))[1].mean().item())
            x = x + layer(norm(x))
    gated = sum(layer.kind == "gated" for layer in model.layers)
    return accuracy, tuple(sum(alphas[i::gated]) / len(pairs) for i in range(gated))
