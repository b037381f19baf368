"""Attention layers: thin ``nn.Module`` wrappers around the pure functions.

Each layer keeps the weights of its last call in ``.attention_weights`` (detached, before dropout),
ready for ``show_heatmaps``.

* ``NWKernelRegression``: Nadaraya-Watson with a learnable bandwidth (notebook 01).
* ``DotProductAttention``, ``AdditiveAttention``: the two scoring functions (notebook 03).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import require_additive_layer_inputs, require_choice, require_int, require_positive, require_probability
from .pooling import KERNELS, nadaraya_watson
from .scoring import additive_scores, attention_pooling, scaled_dot_product_attention

__all__ = ["NWKernelRegression", "DotProductAttention", "AdditiveAttention"]

LOG_BANDWIDTH_LIMIT = math.log(1e6)  # |log h| <= this: h in [1e-6, 1e6]


class NWKernelRegression(nn.Module):
    """Nadaraya-Watson regression whose bandwidth ``h`` is learned by gradient descent.

    The parameter is ``log h`` so that ``h = exp(log h)`` stays positive whatever step the
    optimiser takes; ``h`` is kept within [1e-6, 1e6] so that it never rounds to 0 or infinity.
    ``1 / h`` is the ``w`` of the parametric form ``softmax(-((x - x_i) w)^2 / 2)``.

    Args:
        bandwidth: initial ``h > 0``.
        kernel: a kernel name of ``attn_course.KERNELS``.
    """

    def __init__(self, bandwidth: float = 1.0, kernel: str = "gaussian"):
        super().__init__()
        require_positive(bandwidth, "bandwidth")
        require_choice(kernel, "kernel", KERNELS)
        self.kernel = kernel
        self.log_bandwidth = nn.Parameter(torch.tensor(math.log(bandwidth)))
        self.attention_weights: torch.Tensor | None = None

    @property
    def bandwidth(self) -> torch.Tensor:
        """The current ``h`` (a 0-d tensor that carries gradients)."""
        return self.log_bandwidth.clamp(-LOG_BANDWIDTH_LIMIT, LOG_BANDWIDTH_LIMIT).exp()

    def forward(self, queries, keys, values, mask=None):
        """Shapes as in ``nadaraya_watson``; returns the predictions (Q,) or (Q, V)."""
        bandwidth = self.bandwidth.to(queries.dtype) if isinstance(queries, torch.Tensor) else self.bandwidth
        predictions, weights = nadaraya_watson(queries, keys, values, self.kernel, bandwidth, mask)
        self.attention_weights = weights.detach()
        return predictions

    def extra_repr(self) -> str:
        return f"kernel={self.kernel!r}, bandwidth={float(self.bandwidth.detach()):.4g}"


class DotProductAttention(nn.Module):
    """Scaled dot-product attention ``softmax(Q K^T / sqrt(D)) V`` with dropout on the weights.

    Called as ``(queries (B, Q, D), keys (B, K, D), values (B, K, V), valid_lens=None, mask=None)``;
    returns (B, Q, V). ``mask``: optional bool broadcastable to (B, Q, K), ``True`` = may attend.
    """

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(require_probability(dropout))
        self.attention_weights: torch.Tensor | None = None

    def forward(self, queries, keys, values, valid_lens=None, mask=None):
        output, weights = scaled_dot_product_attention(queries, keys, values, valid_lens, mask, self.dropout)
        self.attention_weights = weights.detach()
        return output  # (B, Q, V)


class AdditiveAttention(nn.Module):
    """Additive attention ``w_v . tanh(W_q q + W_k k)``: queries and keys may differ in size.

    Args:
        key_size: Dk, the size of each key.
        query_size: Dq, the size of each query.
        num_hiddens: U, the hidden units of the one-hidden-layer MLP.
        dropout: dropout probability on the attention weights.

    Called as ``(queries (B, Q, Dq), keys (B, K, Dk), values (B, K, V), valid_lens=None)``;
    returns (B, Q, V).
    """

    def __init__(self, key_size: int, query_size: int, num_hiddens: int, dropout: float = 0.0):
        super().__init__()
        self.W_k = nn.Linear(require_int(key_size, "key_size"), require_int(num_hiddens, "num_hiddens"), bias=False)
        self.W_q = nn.Linear(require_int(query_size, "query_size"), num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(require_probability(dropout))
        self.attention_weights: torch.Tensor | None = None

    def forward(self, queries, keys, values, valid_lens=None):
        require_additive_layer_inputs(queries, keys, values, self.W_q, self.W_k)
        scores = additive_scores(queries, keys, self.W_q.weight, self.W_k.weight, self.w_v.weight[0])  # (B, Q, K)
        output, weights = attention_pooling(scores, values, valid_lens, self.dropout)  # (B, Q, V), (B, Q, K)
        self.attention_weights = weights.detach()
        return output  # (B, Q, V)
