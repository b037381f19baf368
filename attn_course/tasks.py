"""A sequence-to-sequence task made in code: reverse a string of digits (notebooks 07 and 08).

Reversal is the task of choice for seeing attention work: the right alignment is known in advance
(output step ``t`` should look at source position ``L - 1 - t``, an anti-diagonal), and a model that
squeezes the whole source into one vector has to remember every digit, which gets harder as ``L`` grows.

Tokens are integers. ``PAD`` fills the end of short sequences, ``BOS`` starts the decoder's input,
``EOS`` ends the source and the target; the digits ``0``-``9`` follow.

Shapes: ``B`` batch, ``S`` source length (with ``EOS``), ``T`` target length (with ``BOS`` or ``EOS``).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ._validate import require_digit_string, require_int, require_nonempty_list, require_sequence
from ._validate.args import require_task_args

__all__ = [
    "PAD",
    "BOS",
    "EOS",
    "TOKENS",
    "VOCAB_SIZE",
    "Batch",
    "Splits",
    "encode",
    "to_text",
    "labels",
    "make_batch",
    "reversal_task",
]

PAD, BOS, EOS = 0, 1, 2
SPECIALS = ("<pad>", "<bos>", "<eos>")
DIGITS = tuple("0123456789")
TOKENS = SPECIALS + DIGITS  # token id -> text
VOCAB_SIZE = len(TOKENS)


class Batch(NamedTuple):
    """Padded tensors for one split (all int64).

    src (B, S): digits then ``EOS``, padded with ``PAD``. src_len (B,): valid source length (digits + 1).
    tgt_in (B, T): ``BOS`` then the reversed digits (the decoder's input under teacher forcing).
    tgt_out (B, T): the reversed digits then ``EOS`` (what the decoder must predict), padded with ``PAD``.
    """

    src: torch.Tensor
    src_len: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor

    def __len__(self) -> int:
        return self.src.shape[0]

    def select(self, index) -> Batch:
        """The examples at ``index`` (a slice, a list or a tensor of positions)."""
        return Batch(*(t[index] for t in self))


class Splits(NamedTuple):
    """The train, validation and test :class:`Batch` of a task, made from one seed, sharing no example."""

    train: Batch
    valid: Batch
    test: Batch


def encode(digits: str) -> list[int]:
    """Token ids of a string of digits, e.g. ``"307"`` -> ``[6, 3, 10]``."""
    require_digit_string(digits)
    return [len(SPECIALS) + int(c) for c in digits]


def _ids(tokens) -> list[int]:
    """A token sequence as a list of ids, each checked to be in ``[0, VOCAB_SIZE)``."""
    require_sequence(tokens, "tokens", "token ids")
    ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
    for i in ids:
        require_int(i, "tokens", 0, VOCAB_SIZE - 1)
    return ids


def to_text(tokens) -> str:
    """The digits of a token sequence, up to the first ``EOS``; ``PAD`` and ``BOS`` are skipped."""
    out = []
    for i in _ids(tokens):
        if i == EOS:
            break
        if i >= len(SPECIALS):
            out.append(TOKENS[i])
    return "".join(out)


def labels(tokens, length: int | None = None) -> list[str]:
    """Tick labels for a token sequence: ``'3'``, ``'<eos>'``, ... (the first ``length`` tokens)."""
    return [TOKENS[i] for i in _ids(tokens)[:length]]


def make_batch(sources: list[str]) -> Batch:
    """Pad a list of digit strings into a :class:`Batch` whose targets are the reversed strings."""
    require_nonempty_list(sources, "sources", "digit strings")
    encoded = [encode(s) for s in sources]
    width = max(map(len, encoded)) + 1
    src = torch.full((len(encoded), width), PAD, dtype=torch.long)
    tgt_in, tgt_out = src.clone(), src.clone()
    for row, ids in enumerate(encoded):
        n = len(ids)
        src[row, : n + 1] = torch.tensor(ids + [EOS])
        tgt_in[row, : n + 1] = torch.tensor([BOS] + ids[::-1])
        tgt_out[row, : n + 1] = torch.tensor(ids[::-1] + [EOS])
    src_len = torch.tensor([len(ids) + 1 for ids in encoded])
    return Batch(src, src_len, tgt_in, tgt_out)


def reversal_task(
    num_train: int = 4000,
    num_valid: int = 500,
    num_test: int = 1000,
    min_len: int = 2,
    max_len: int = 16,
    seed: int = 0,
) -> Splits:
    """Random digit strings with lengths uniform in ``[min_len, max_len]``, split into train/valid/test.

    The splits come from one seeded generator and never share a string.
    """
    seed = require_task_args(num_train, num_valid, num_test, min_len, max_len, seed)
    total = num_train + num_valid + num_test
    gen = torch.Generator().manual_seed(seed)
    seen: set[str] = set()
    strings: list[str] = []
    for _ in range(100 * total):
        if len(strings) == total:
            break
        n = int(torch.randint(min_len, max_len + 1, (1,), generator=gen))
        s = "".join(map(str, torch.randint(0, 10, (n,), generator=gen).tolist()))
        if s not in seen:
            seen.add(s)
            strings.append(s)
    if len(strings) < total:
        raise ValueError(f"only {len(strings)} distinct strings of length {min_len}-{max_len}; asked for {total}")
    cut1, cut2 = num_train, num_train + num_valid
    return Splits(make_batch(strings[:cut1]), make_batch(strings[cut1:cut2]), make_batch(strings[cut2:]))
