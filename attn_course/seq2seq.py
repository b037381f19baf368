"""RNN encoder-decoders with and without Bahdanau attention (notebook 07).

Both models read the source with the same GRU encoder. They differ in what the decoder sees:

* :class:`RNNDecoder` gets one fixed context, the encoder's last state, at every step: the whole source
  squeezed into one vector of size ``U``.
* :class:`AttentionDecoder` (Bahdanau et al., 2015) computes a new context at every step: its previous
  hidden state is the query, the encoder's states are the keys and the values, and additive attention
  pools them (padded source positions masked out with the source's valid lengths).

Shapes: ``B`` batch, ``S`` source length, ``T`` target length, ``E`` embedding size, ``U`` hidden units,
``C`` vocabulary size (token classes). Tokens are int64 ids from :mod:`attn_course.tasks`.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ._validate import require_choice, require_int, require_source
from ._validate.args import require_greedy_call, require_seq2seq_call
from ._validate.models import require_decoder_choice, require_encoder_sizes
from .layers import AdditiveAttention
from .masking import masked_softmax
from .tasks import BOS, EOS, PAD, VOCAB_SIZE

__all__ = ["Seq2SeqEncoder", "RNNDecoder", "AttentionDecoder", "RNNSeq2Seq"]


class Seq2SeqEncoder(nn.Module):
    """Embedding, then a bidirectional GRU over the valid part of each source (padding is never read).

    Each direction has ``U / 2`` units; the state at position ``j`` is ``[forward h_j; backward h_j]`` (size U):
    what came up to ``j`` and what comes from ``j`` on, so it is centred on token ``j``, as in Bahdanau et al.
    The summary of the whole source is ``[forward state at the last token; backward state at the first]``.

    With ``bidirectional=False`` one forward GRU of ``U`` units reads the source: the state at ``j`` has read
    tokens ``0 .. j`` only, and the summary is its state at the last token (notebook 07, exercise 7).
    """

    def __init__(
        self, embed_size: int = 32, num_hiddens: int = 64, vocab_size: int = VOCAB_SIZE, bidirectional: bool = True
    ):
        super().__init__()
        require_encoder_sizes(embed_size, num_hiddens, vocab_size, bidirectional)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        units = num_hiddens // 2 if bidirectional else num_hiddens
        self.rnn = nn.GRU(embed_size, units, batch_first=True, bidirectional=bidirectional)

    def forward(self, src: torch.Tensor, src_len: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns the states at every position (B, S, U), zero past ``src_len``, and the summary (B, U)."""
        require_source(src, src_len, self.embedding.num_embeddings)
        x = self.embedding(src)  # (B, S) -> (B, S, E)
        if src.shape[0] == 0:  # nothing to read (PyTorch cannot pack an empty batch): no states, no summary
            units = self.rnn.hidden_size * (2 if self.rnn.bidirectional else 1)
            return x.new_zeros(0, src.shape[1], units), x.new_zeros(0, units)
        packed = pack_padded_sequence(x, src_len.cpu(), batch_first=True, enforce_sorted=False)
        outputs, last = self.rnn(packed)  # last: (2, B, U / 2), forward then backward; (1, B, U) forward-only
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.shape[1])  # (B, S, U)
        if not self.rnn.bidirectional:
            return outputs, last[0]  # (B, U)
        return outputs, torch.cat([last[0], last[1]], dim=-1)  # (B, U / 2) ++ (B, U / 2) -> (B, U)


class RNNDecoder(nn.Module):
    """GRU decoder whose input at every step is ``[embedding of the previous token; encoder's last state]``."""

    def __init__(self, embed_size: int = 32, num_hiddens: int = 64, vocab_size: int = VOCAB_SIZE):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.cell = nn.GRUCell(embed_size + num_hiddens, num_hiddens)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_last, src_len):
        return enc_last, enc_last  # (hidden state, fixed context), both (B, U)

    def step(self, prev: torch.Tensor, state):
        """One step: previous tokens (B,) -> logits (B, C), new state, no attention weights."""
        hidden, context = state
        x = torch.cat([self.embedding(prev), context], dim=-1)  # (B, E) ++ (B, U) -> (B, E + U)
        hidden = self.cell(x, hidden)  # (B, U)
        return self.dense(hidden), (hidden, context), None


class AttentionDecoder(nn.Module):
    """GRU decoder with additive attention over the encoder states (Bahdanau attention).

    At step ``t``: query = previous hidden state ``s_{t-1}`` (B, U); keys = values = encoder states
    (B, S, U); context ``c_t`` = additive attention pooling, padded positions masked (B, U);
    ``s_t = GRU([embed(y_{t-1}); c_t], s_{t-1})``; logits from ``[s_t; c_t]``.

    The scores are those of ``self.attention`` (an :class:`AdditiveAttention`), with one saving: the keys'
    projection ``W_k k`` is the same at every step, so :meth:`init_state` computes it once per source.
    With ``score="dot"`` the scores are the scaled dot products ``s_{t-1} . h_j / sqrt(U)`` instead (no
    parameters, ``self.attention`` is None; notebook 07, exercise 6).
    """

    def __init__(
        self, embed_size: int = 32, num_hiddens: int = 64, vocab_size: int = VOCAB_SIZE, score: str = "additive"
    ):
        super().__init__()
        self.score = require_choice(score, "score", ("additive", "dot"))
        self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens) if score == "additive" else None
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.cell = nn.GRUCell(embed_size + num_hiddens, num_hiddens)
        self.dense = nn.Linear(2 * num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_last, src_len):
        if self.attention is None:  # dot product: the keys are the states themselves
            return enc_last, enc_outputs, enc_outputs, src_len
        keys = self.attention.W_k(enc_outputs)  # (B, S, U) -> (B, S, U), once per source
        return enc_last, enc_outputs, keys, src_len

    def step(self, prev: torch.Tensor, state):
        """One step: previous tokens (B,) -> logits (B, C), new state, attention weights (B, S)."""
        hidden, enc_outputs, keys, src_len = state
        att = self.attention
        if att is None:
            scores = torch.bmm(hidden.unsqueeze(1), keys.transpose(1, 2)) / keys.shape[-1] ** 0.5  # (B, 1, S)
        else:
            features = torch.tanh(att.W_q(hidden).unsqueeze(1) + keys)  # (B, 1, U) + (B, S, U) -> (B, S, U)
            scores = att.w_v(features).transpose(1, 2)  # (B, S, 1) -> (B, 1, S)
        weights = masked_softmax(scores, src_len)  # (B, 1, S), zero on padding
        context = torch.bmm(weights, enc_outputs)[:, 0]  # (B, 1, S) @ (B, S, U) -> (B, 1, U) -> (B, U)
        x = torch.cat([self.embedding(prev), context], dim=-1)  # (B, E) ++ (B, U) -> (B, E + U)
        hidden = self.cell(x, hidden)  # (B, U)
        logits = self.dense(torch.cat([hidden, context], dim=-1))  # (B, 2U) -> (B, C)
        return logits, (hidden, enc_outputs, keys, src_len), weights[:, 0]


class RNNSeq2Seq(nn.Module):
    """Encoder-decoder: ``model(src, src_len, tgt_in)`` gives logits (B, T, C) under teacher forcing.

    Args:
        attention: True for the Bahdanau decoder, False for the fixed-context decoder.
        embed_size, num_hiddens: E and U.
        score: ``"additive"`` (Bahdanau) or ``"dot"`` (scaled dot product), with ``attention=True`` only.
        bidirectional: False for a forward-only encoder GRU.
        vocab_size: C; token ids ``PAD``, ``BOS``, ``EOS`` of :mod:`attn_course.tasks` must keep their meaning.
    """

    def __init__(
        self,
        attention: bool = True,
        embed_size: int = 32,
        num_hiddens: int = 64,
        *,
        score: str = "additive",
        bidirectional: bool = True,
        vocab_size: int = VOCAB_SIZE,
    ):
        super().__init__()
        require_decoder_choice(attention, score, ("additive", "dot"))
        self.vocab_size = require_int(vocab_size, "vocab_size", EOS + 2)
        self.encoder = Seq2SeqEncoder(embed_size, num_hiddens, vocab_size, bidirectional)
        if attention:
            self.decoder = AttentionDecoder(embed_size, num_hiddens, vocab_size, score)
        else:
            self.decoder = RNNDecoder(embed_size, num_hiddens, vocab_size)

    def forward(self, src: torch.Tensor, src_len: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        require_seq2seq_call(src, src_len, tgt_in, self.vocab_size)
        state = self.decoder.init_state(*self.encoder(src, src_len), src_len)
        if tgt_in.shape[1] == 0:  # no target step: no logits
            return self.encoder.embedding.weight.new_zeros(src.shape[0], 0, self.vocab_size)  # (B, 0, C)
        logits = []
        for t in range(tgt_in.shape[1]):
            step_logits, state, _ = self.decoder.step(tgt_in[:, t], state)
            logits.append(step_logits)
        return torch.stack(logits, dim=1)  # T x (B, C) -> (B, T, C)

    @torch.no_grad()
    def greedy(
        self, src: torch.Tensor, src_len: torch.Tensor, max_len: int
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Decode by always taking the most likely token, feeding each prediction back in.

        Returns the tokens (B, max_len), ``PAD`` after each sequence's ``EOS``, and the attention weights
        (B, max_len, S) of every step (None without attention).
        """
        require_greedy_call(src, src_len, max_len, self.vocab_size)
        state = self.decoder.init_state(*self.encoder(src, src_len), src_len)
        prev = torch.full((src.shape[0],), BOS, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        tokens, weights = [], []
        for _ in range(max_len):
            logits, state, w = self.decoder.step(prev, state)
            prev = logits.argmax(dim=-1)  # (B,)
            tokens.append(torch.where(done, PAD, prev))
            done = done | (prev == EOS)
            if w is not None:
                weights.append(w)
        stacked = torch.stack(weights, dim=1) if weights else None  # (B, max_len, S)
        return torch.stack(tokens, dim=1), stacked
