"""attn_course.tasks: the digit-reversal task (tokens, encode/to_text/labels, make_batch, reversal_task)."""

import pytest
import torch
from _helpers import refused

from attn_course import tasks
from attn_course._validate import require_tokens
from attn_course.tasks import (
    BOS,
    EOS,
    PAD,
    TOKENS,
    VOCAB_SIZE,
    Batch,
    Splits,
    encode,
    labels,
    make_batch,
    reversal_task,
    to_text,
)


def _strings(batch):
    """The source digit strings of a batch, read back through to_text."""
    return [to_text(row) for row in batch.src]


# ----------------------------------------------------------------------------------------------
# tokens, encode, to_text, labels
# ----------------------------------------------------------------------------------------------


def test_vocabulary_three_specials_then_the_ten_digits():
    assert (PAD, BOS, EOS) == (0, 1, 2)
    assert TOKENS == ("<pad>", "<bos>", "<eos>", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
    assert VOCAB_SIZE == 13 == len(TOKENS)
    assert tasks.__all__ and all(hasattr(tasks, name) for name in tasks.__all__)


def test_encode_hand_example():
    """Digit d has id 3 + d (after <pad>, <bos>, <eos>): "307" -> [6, 3, 10]."""
    assert encode("307") == [6, 3, 10]
    assert encode("9") == [12]
    assert [TOKENS[i] for i in encode("0123456789")] == list("0123456789")


@pytest.mark.parametrize("digits", ["0", "7", "42", "000", "9081726354", "1" * 30])
def test_encode_to_text_round_trip(digits):
    ids = encode(digits)
    assert len(ids) == len(digits) and all(3 <= i < VOCAB_SIZE for i in ids)
    assert to_text(ids) == digits
    assert to_text(torch.tensor(ids)) == digits
    assert to_text(torch.tensor([BOS] + ids + [EOS, PAD, PAD])) == digits


def test_to_text_stops_at_the_first_eos_and_skips_pad_and_bos():
    assert to_text([4, 5, EOS, 6, 7]) == "12"
    assert to_text([EOS, 4]) == ""
    assert to_text([BOS, 4, PAD, 5]) == "12"
    assert to_text([]) == ""


@pytest.mark.parametrize(
    "tokens, shown",
    [([4, 13], "13"), ([-1], "-1"), ([4.0], r"4\.0"), (torch.tensor([[4, 5]]), r"\[4, 5\]"), (["4"], "'4'")],
    ids=["too-large", "negative", "float", "2-D-tensor", "str"],
)
def test_to_text_error_messages(tokens, shown, int_error):
    bad = tokens.tolist()[0] if isinstance(tokens, torch.Tensor) else tokens[-1]  # the id the message names
    with pytest.raises(int_error(bad), match=rf"tokens must be an integer in \[0, 12\], got {shown}"):
        to_text(tokens)


def test_labels_names_tokens_and_cuts_at_length():
    tokens = torch.tensor([4, 5, EOS, PAD])
    assert labels(tokens) == ["1", "2", "<eos>", "<pad>"]
    assert labels(tokens, 3) == ["1", "2", "<eos>"]
    assert labels([BOS, 12], 1) == ["<bos>"]


@pytest.mark.parametrize("tokens", [[4, 13], [4, -1]], ids=["too-large", "negative"])
def test_labels_rejects_ids_outside_the_vocabulary(tokens):
    """STYLE 5: a ValueError that names the argument; not an IndexError, and not '9' for the id -1."""
    with pytest.raises(ValueError, match=r"tokens"):
        labels(tokens)


@pytest.mark.parametrize(
    "digits, shown",
    [("", "''"), ("12a", "'12a'"), ("-1", "'-1'"), (" 1", "' 1'"), ("\u0661\u0662", "'\u0661\u0662'"), (12, "12")],
    ids=["empty", "letter", "sign", "space", "arabic-indic-digits", "int"],
)
def test_encode_error_messages(digits, shown):
    error = ValueError if isinstance(digits, str) else TypeError
    with pytest.raises(error, match=rf"digits must be a non-empty string of the digits 0-9, got {shown}"):
        encode(digits)


# ----------------------------------------------------------------------------------------------
# make_batch and Batch
# ----------------------------------------------------------------------------------------------


def test_make_batch_hand_example():
    """ "12" -> ids [4, 5], "345" -> [6, 7, 8]; width = longest + 1 (for <eos>)."""
    batch = make_batch(["12", "345"])
    assert isinstance(batch, Batch) and len(batch) == 2
    assert torch.equal(batch.src, torch.tensor([[4, 5, EOS, PAD], [6, 7, 8, EOS]]))
    assert torch.equal(batch.src_len, torch.tensor([3, 4]))
    assert torch.equal(batch.tgt_in, torch.tensor([[BOS, 5, 4, PAD], [BOS, 8, 7, 6]]))
    assert torch.equal(batch.tgt_out, torch.tensor([[5, 4, EOS, PAD], [8, 7, 6, EOS]]))
    assert all(t.dtype == torch.int64 for t in batch)


@pytest.mark.parametrize("sources", [["5"], ["1", "22", "333", "4444"], ["98765", "0", "12"], ("31", "7")])
def test_make_batch_layout_for_every_row(sources):
    """src = digits + EOS, tgt_in = BOS + reversed, tgt_out = reversed + EOS, then PAD; src_len = digits + 1."""
    batch = make_batch(sources)
    width = max(map(len, sources)) + 1
    assert batch.src.shape == batch.tgt_in.shape == batch.tgt_out.shape == (len(sources), width)
    assert batch.src_len.shape == (len(sources),)
    for row, s in enumerate(sources):
        n, ids, pad = len(s), encode(s), [PAD] * (width - len(s) - 1)
        assert batch.src[row].tolist() == ids + [EOS] + pad
        assert batch.tgt_in[row].tolist() == [BOS] + ids[::-1] + pad
        assert batch.tgt_out[row].tolist() == ids[::-1] + [EOS] + pad
        assert int(batch.src_len[row]) == n + 1
        assert to_text(batch.tgt_out[row]) == s[::-1]


@pytest.mark.parametrize(
    "sources, match",
    [
        ([], r"sources must be a non-empty list of digit strings, got \[\]"),
        ("123", r"sources must be a non-empty list of digit strings, got '123'"),
        (None, r"sources must be a non-empty list of digit strings, got None"),
        (["12", ""], r"digits must be a non-empty string of the digits 0-9, got ''"),
        (["12", "3x"], r"digits must be a non-empty string of the digits 0-9, got '3x'"),
        ([12, 34], r"digits must be a non-empty string of the digits 0-9, got 12"),
    ],
    ids=["empty", "str", "none", "empty-string", "letter", "ints"],
)
def test_make_batch_error_messages(sources, match):
    wrong_type = not isinstance(sources, list) or not all(isinstance(s, str) for s in sources)
    with pytest.raises(TypeError if wrong_type else ValueError, match=match):
        make_batch(sources)


@pytest.mark.parametrize(
    "index, rows",
    [(slice(1, 3), [1, 2]), ([3, 0], [3, 0]), (torch.tensor([2, 2, 1]), [2, 2, 1]), (torch.tensor([0]), [0])],
    ids=["slice", "list", "tensor-repeats", "one"],
)
def test_batch_select_keeps_rows_in_order(index, rows):
    sources = ["1", "22", "333", "4444"]
    batch = make_batch(sources)
    picked = batch.select(index)
    assert isinstance(picked, Batch) and len(picked) == len(rows)
    for field, full in zip(picked, batch, strict=True):
        assert torch.equal(field, full[rows])
    assert _strings(picked) == [sources[r] for r in rows]


# ----------------------------------------------------------------------------------------------
# reversal_task
# ----------------------------------------------------------------------------------------------


def test_reversal_task_sizes_lengths_and_targets():
    data = reversal_task(num_train=300, num_valid=40, num_test=60, min_len=3, max_len=6, seed=5)
    assert isinstance(data, Splits) and data._fields == ("train", "valid", "test")
    assert [len(split) for split in data] == [300, 40, 60]
    for split in data:
        digits = split.src_len - 1
        assert int(digits.min()) >= 3 and int(digits.max()) <= 6
        assert split.src.shape[1] == int(split.src_len.max())  # padded to the longest, no wider
        strings = _strings(split)
        assert [len(s) for s in strings] == digits.tolist()
        assert [to_text(row) for row in split.tgt_out] == [s[::-1] for s in strings]
    assert set((data.train.src_len - 1).tolist()) == {3, 4, 5, 6}  # every allowed length shows up in 300 draws


def test_reversal_task_lengths_are_roughly_uniform():
    """Lengths 4..7 drawn uniformly (10^4 strings of each length: distinctness barely matters)."""
    data = reversal_task(num_train=2000, num_valid=1, num_test=1, min_len=4, max_len=7, seed=0)
    counts = torch.bincount(data.train.src_len - 1, minlength=8)[4:].double()
    assert counts.sum() == 2000
    assert ((counts - 500).abs() < 100).all(), counts  # binomial sd ~ 19


def test_reversal_task_splits_are_disjoint_and_have_no_duplicates():
    data = reversal_task(num_train=200, num_valid=50, num_test=50, min_len=1, max_len=3, seed=1)
    train, valid, test = (_strings(split) for split in data)
    assert len(set(train)) == 200 and len(set(valid)) == 50 and len(set(test)) == 50
    assert not set(train) & set(valid) and not set(train) & set(test) and not set(valid) & set(test)


def test_reversal_task_same_seed_same_data_other_seed_other_data():
    kwargs = {"num_train": 50, "num_valid": 10, "num_test": 10, "max_len": 8}
    first, again, other = (
        reversal_task(**kwargs, seed=3),
        reversal_task(**kwargs, seed=3),
        reversal_task(**kwargs, seed=4),
    )
    for a, b in zip(first, again, strict=True):
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert _strings(first.train) != _strings(other.train)


def test_reversal_task_leaves_the_global_rng_alone():
    state = torch.get_rng_state()
    reversal_task(num_train=20, num_valid=5, num_test=5)
    assert torch.equal(torch.get_rng_state(), state)


def test_reversal_task_defaults():
    data = reversal_task()
    assert [len(split) for split in data] == [4000, 500, 1000]
    assert int(data.train.src_len.min()) - 1 == 2 and int(data.train.src_len.max()) - 1 == 16


@pytest.mark.parametrize(
    "kwargs, match",
    [
        *refused("num_train", 0, True),
        *refused("num_valid", -1),
        *refused("num_test", 1.5),
        *refused("min_len", 0),
        *refused("max_len", 2, wanted="an integer >= 3", min_len=3),
        *refused("max_len", "8", wanted="an integer >= 2"),
        *refused("seed", -1, 0.0, wanted="an integer >= 0"),
        pytest.param(
            {"num_train": 9, "num_valid": 1, "num_test": 1, "min_len": 1, "max_len": 1},
            r"only 10 distinct strings of length 1-1; asked for 11",
            id="too-many",
        ),
    ],
)
def test_reversal_task_error_messages(kwargs, match, int_error):
    small = {"num_train": 5, "num_valid": 2, "num_test": 2}
    name = match.split()[0]
    with pytest.raises(int_error(kwargs[name]) if name in kwargs else ValueError, match=match):
        reversal_task(**{**small, **kwargs})


# ----------------------------------------------------------------------------------------------
# require_tokens (the check that every model runs on its token ids)
# ----------------------------------------------------------------------------------------------


def test_require_tokens_accepts_a_batch_of_ids():
    batch = make_batch(["12", "3"])
    for t in (batch.src, batch.tgt_in, batch.tgt_out, torch.zeros(2, 0, dtype=torch.long)):
        assert require_tokens(t, "src", VOCAB_SIZE) is t


@pytest.mark.parametrize(
    "tokens, error, match",
    [
        ([[4, 5]], TypeError, r"tgt_in must be a torch\.Tensor, got list"),
        (
            torch.tensor([[4.0, 5.0]]),
            TypeError,
            r"tgt_in must be a \(B, T\) int64 tensor of token ids, got torch\.float32",
        ),
        (
            torch.tensor([[4, 5]], dtype=torch.int32),
            TypeError,
            r"int64 tensor of token ids, got torch\.int32",
        ),
        (
            torch.tensor([4, 5]),
            ValueError,
            r"tgt_in must be a \(B, T\) int64 tensor of token ids, got shape \(2,\)",
        ),
        (torch.tensor([[4, 13]]), ValueError, r"tgt_in must hold token ids in \[0, 13\), got values 4\.\.13"),
        (torch.tensor([[-1, 5]]), ValueError, r"tgt_in must hold token ids in \[0, 13\), got values -1\.\.5"),
    ],
    ids=["list", "float", "int32", "1-D", "too-large", "negative"],
)
def test_require_tokens_error_messages(tokens, error, match):
    with pytest.raises(error, match=match):
        require_tokens(tokens, "tgt_in", VOCAB_SIZE)
