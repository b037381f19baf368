"""A tiny encoder-decoder Transformer built from the course's pieces (notebook 08).

``MultiHeadAttention`` (notebook 06), ``positional_encoding`` (notebook 06) and ``causal_mask``
(notebook 05), plus the two pieces this module adds: the position-wise feed-forward network and
"add & norm" (a residual connection followed by layer normalisation). Post-norm by default, as in the
original Transformer (Vaswani et al., 2017): ``LayerNorm(x + f(x))``; ``norm_first=True`` gives pre-norm,
``x + f(LayerNorm(x))``, and the model then ends each stack with one more LayerNorm.

Shapes: ``B`` batch, ``S`` source length, ``T`` target length, ``D`` model size (``num_hiddens``),
``U`` hidden units of the feed-forward network, ``H`` heads, ``L`` layers, ``C`` vocabulary size.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import (
    require_bool,
    require_int,
)
from ._validate.args import (
    require_decoder_block_call,
    require_encoder_block_call,
    require_ffn_input,
    require_greedy_call,
    require_seq2seq_call,
)
from ._validate.models import require_called, require_max_len, require_residual
from .masking import causal_mask
from .multihead import MultiHeadAttention
from .positional import positional_encoding
from .tasks import BOS, EOS, PAD, VOCAB_SIZE

__all__ = [
    "PositionWiseFFN",
    "AddNorm",
    "EncoderBlock",
    "DecoderBlock",
    "TransformerSeq2Seq",
]


class PositionWiseFFN(nn.Module):
    """The same two-layer MLP applied to every position on its own: (B, T, D) -> (B, T, D)."""

    def __init__(self, num_hiddens: int, ffn_hiddens: int):
        super().__init__()
        self.dense1 = nn.Linear(require_int(num_hiddens, "num_hiddens"), require_int(ffn_hiddens, "ffn_hiddens"))
        self.dense2 = nn.Linear(ffn_hiddens, num_hiddens)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_ffn_input(x, self.dense1)
        return self.dense2(torch.relu(self.dense1(x)))  # (B, T, D) -> (B, T, U) -> (B, T, D)


class AddNorm(nn.Module):
    """``LayerNorm(x + dropout(y))``: a residual connection, then layer normalisation over the last axis."""

    def __init__(self, num_hiddens: int, dropout: float = 0.0):
        super().__init__()
        self.norm = nn.LayerNorm(require_int(num_hiddens, "num_hiddens"))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        require_residual(x, y, self.norm.normalized_shape[0], self.norm.weight)
        return self.norm(x + self.dropout(y))  # (B, T, D)


def _residual(x: torch.Tensor, addnorm: AddNorm, sublayer, norm_first: bool) -> torch.Tensor:
    """Post-norm ``LayerNorm(x + f(x))``, or pre-norm ``x + f(LayerNorm(x))`` (same LayerNorm, same dropout)."""
    if norm_first:
        return x + addnorm.dropout(sublayer(addnorm.norm(x)))  # (B, T, D): x itself passes through untouched
    return addnorm(x, sublayer(x))  # (B, T, D): every sum goes through the LayerNorm


class EncoderBlock(nn.Module):
    """Self-attention over the source (padding masked), then the feed-forward network, each with add & norm.

    ``norm_first=False`` (post-norm): ``y = LN(x + att(x))``, ``out = LN(y + ffn(y))``.
    ``norm_first=True`` (pre-norm): ``y = x + att(LN(x))``, ``out = y + ffn(LN(y))``.
    """

    def __init__(
        self, num_hiddens: int, num_heads: int, ffn_hiddens: int, dropout: float = 0.0, norm_first: bool = False
    ):
        super().__init__()
        self.norm_first = require_bool(norm_first, "norm_first")
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, x: torch.Tensor, src_len: torch.Tensor) -> torch.Tensor:
        require_encoder_block_call(x, src_len, self.attention.W_q.weight)
        y = _residual(x, self.addnorm1, lambda h: self.attention(h, h, h, src_len), self.norm_first)  # (B, S, D)
        return _residual(y, self.addnorm2, self.ffn, self.norm_first)  # (B, S, D)


class DecoderBlock(nn.Module):
    """Causal self-attention, then cross-attention to the encoder's output, then the feed-forward network.

    In the cross-attention the queries come from the target and the keys and values are the encoder's
    output ``memory`` (B, S, D), with the source's padding masked. ``norm_first`` as in :class:`EncoderBlock`
    (in pre-norm the LayerNorm applies to the queries' input; ``memory`` comes normalised from the encoder).
    """

    def __init__(
        self, num_hiddens: int, num_heads: int, ffn_hiddens: int, dropout: float = 0.0, norm_first: bool = False
    ):
        super().__init__()
        self.norm_first = require_bool(norm_first, "norm_first")
        self.self_attention = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.cross_attention = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm2 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_len: torch.Tensor) -> torch.Tensor:
        require_decoder_block_call(x, memory, src_len, self.self_attention.W_q.weight, self.cross_attention.W_q.weight)
        if x.shape[1] == 0:  # no target position: nothing attends, nothing to compute
            return x.clone()
        mask = causal_mask(x.shape[1], device=x.device)  # (T, T): position t sees positions 0..t
        y = _residual(x, self.addnorm1, lambda h: self.self_attention(h, h, h, mask=mask), self.norm_first)
        z = _residual(y, self.addnorm2, lambda h: self.cross_attention(h, memory, memory, src_len), self.norm_first)
        return _residual(z, self.addnorm3, self.ffn, self.norm_first)  # (B, T, D); z: (B, T, D) attended to (B, S, D)


class TransformerSeq2Seq(nn.Module):
    """Encoder-decoder Transformer: ``model(src, src_len, tgt_in)`` gives logits (B, T, C) (teacher forcing).

    Args:
        num_hiddens: D, the model size, divisible by ``num_heads``.
        num_heads: H. num_layers: L blocks in the encoder and L in the decoder.
        ffn_hiddens: U. dropout: on attention weights and sublayer outputs.
        max_len: longest sequence the positional encoding covers.
        norm_first: False for post-norm blocks (the original Transformer), True for pre-norm blocks; a pre-norm
            model normalises the output of each stack with one more LayerNorm (``encoder_norm``,
            ``decoder_norm``), since nothing else normalises the sum its residual stream carries.

    Source and target share one token embedding (same digits). As in the Transformer paper, embeddings
    start with standard deviation 1/sqrt(D) and are multiplied by sqrt(D), so that tokens and positions
    (entries in [-1, 1]) enter the sum on the same scale.
    """

    def __init__(
        self,
        num_hiddens: int = 32,
        num_heads: int = 4,
        num_layers: int = 2,
        ffn_hiddens: int = 64,
        dropout: float = 0.0,
        max_len: int = 64,
        norm_first: bool = False,
    ):
        super().__init__()
        require_int(num_layers, "num_layers")
        self.norm_first = require_bool(norm_first, "norm_first")
        self.num_hiddens = require_int(num_hiddens, "num_hiddens")
        self.embedding = nn.Embedding(VOCAB_SIZE, num_hiddens)
        nn.init.normal_(self.embedding.weight, std=num_hiddens**-0.5)  # times sqrt(D) below: entries ~ N(0, 1)
        self.register_buffer("pos", positional_encoding(require_int(max_len, "max_len"), num_hiddens), persistent=False)
        self.dropout = nn.Dropout(dropout)
        self.encoder = nn.ModuleList(
            EncoderBlock(num_hiddens, num_heads, ffn_hiddens, dropout, norm_first) for _ in range(num_layers)
        )
        self.decoder = nn.ModuleList(
            DecoderBlock(num_hiddens, num_heads, ffn_hiddens, dropout, norm_first) for _ in range(num_layers)
        )
        self.dense = nn.Linear(num_hiddens, VOCAB_SIZE)
        final = nn.LayerNorm if norm_first else nn.Identity  # post-norm blocks already end with a LayerNorm
        self.encoder_norm, self.decoder_norm = final(num_hiddens), final(num_hiddens)

    def _embed(self, tokens: torch.Tensor, name: str) -> torch.Tensor:
        require_max_len(tokens, name, self.pos.shape[0])
        x = self.embedding(tokens) * math.sqrt(self.num_hiddens)  # (B, T) -> (B, T, D)
        return self.dropout(x + self.pos[: tokens.shape[1]])  # + (T, D) broadcast over the batch

    def encode(self, src: torch.Tensor, src_len: torch.Tensor) -> torch.Tensor:
        """The encoder's output ``memory`` (B, S, D)."""
        x = self._embed(src, "src")
        for block in self.encoder:
            x = block(x, src_len)
        return self.encoder_norm(x)  # (B, S, D)

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_len: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, C) for every target position, each seeing only the target tokens up to itself."""
        y = self._embed(tgt_in, "tgt_in")
        for block in self.decoder:
            y = block(y, memory, src_len)
        return self.dense(self.decoder_norm(y))  # (B, T, D) -> (B, T, C)

    def forward(self, src: torch.Tensor, src_len: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        require_seq2seq_call(src, src_len, tgt_in, VOCAB_SIZE)
        if tgt_in.shape[1] == 0:  # no target step: no logits (and no causal mask of 0 queries to build)
            return self.embedding.weight.new_zeros(src.shape[0], 0, VOCAB_SIZE)  # (B, 0, C)
        return self.decode(tgt_in, self.encode(src, src_len), src_len)

    def attention_weights(self) -> dict[str, torch.Tensor]:
        """The last forward pass's weights, stacked over layers: each (B, L, H, queries, keys).

        ``"encoder"`` (source self-attention), ``"decoder"`` (causal self-attention) and ``"cross"``
        (target positions attending to source positions).
        """
        require_called(self.encoder[0].attention.attention_weights, "attention weights", "call the model (or greedy)")
        return {
            "encoder": torch.stack([b.attention.attention_weights for b in self.encoder], dim=1),
            "decoder": torch.stack([b.self_attention.attention_weights for b in self.decoder], dim=1),
            "cross": torch.stack([b.cross_attention.attention_weights for b in self.decoder], dim=1),
        }

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, src_len: torch.Tensor, max_len: int) -> tuple[torch.Tensor, dict]:
        """Decode by always taking the most likely token, feeding each prediction back in.

        The decoder re-reads the whole prefix at every step (simple, and cheap at these lengths).
        Returns the tokens (B, max_len), ``PAD`` after each sequence's ``EOS``, and
        :meth:`attention_weights` for the final prefix (causal masking makes every row the same as when
        that step was decoded).
        """
        require_greedy_call(src, src_len, max_len, VOCAB_SIZE)
        memory = self.encode(src, src_len)
        tgt = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=src.device)  # (B, 1)
        for _ in range(max_len):
            nxt = self.decode(tgt, memory, src_len)[:, -1].argmax(dim=-1)  # (B,)
            tgt = torch.cat([tgt, nxt.unsqueeze(1)], dim=1)  # (B, t + 1)
        self.decode(tgt[:, :-1], memory, src_len)  # weights for the decoded inputs BOS, y_1, .., y_{max_len - 1}
        tokens = tgt[:, 1:]
        after_eos = (tokens == EOS).long().cumsum(dim=1) - (tokens == EOS).long() > 0  # strictly after the 1st EOS
        return tokens.masked_fill(after_eos, PAD), self.attention_weights()
