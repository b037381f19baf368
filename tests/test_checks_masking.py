"""attn_course.checks.masking, the checks of notebook 05 (masking):
"Correct" for a right answer, a hint for each mistake."""

import math

import numpy as np
import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course import checks
from attn_course.checks import (
    check_causal_mask,
    check_padding_causal_mask,
    check_padding_mask,
)

# ----------------------------------------------------------------------------------------------
# Notebook 05, masks: True = may attend
# ----------------------------------------------------------------------------------------------

T, F_ = True, False
PADDING = [[T, T, F_, F_, F_], [T, T, T, T, F_]]  # valid lengths 2 and 4 of 5 positions
CAUSAL = [[T, F_, F_, F_], [T, T, F_, F_], [T, T, T, F_], [T, T, T, T]]
PADDING_CAUSAL = [[T, F_, F_, F_], [T, T, F_, F_], [T, T, T, F_], [T, T, T, F_]]  # valid length 3: column 3 hidden


def _flip(rows):
    return [[not v for v in row] for row in rows]


@pytest.mark.parametrize(
    "mask",
    [
        pytest.param(torch.tensor(PADDING), id="literal"),
        pytest.param(torch.arange(5) < torch.tensor([[2], [4]]), id="comparison"),
    ],
)
def test_check_padding_mask_right_answer(mask):
    assert_correct(check_padding_mask(mask), "padding")


@pytest.mark.parametrize(
    "mask, words",
    [
        pytest.param(None, ["replace None", "(2, 5) bool tensor"], id="none"),
        pytest.param(PADDING, ["torch.Tensor", "list"], id="list"),
        pytest.param(torch.tensor(PADDING).T, ["expected shape (2, 5)", "got (5, 2)"], id="transposed"),
        pytest.param(torch.tensor(PADDING)[:, :4], ["expected shape (2, 5)", "got (2, 4)"], id="shape"),
        pytest.param(
            torch.tensor(PADDING).long(), ["bool tensor", "True = may attend", "torch.int64", ".bool()"], id="int"
        ),
        pytest.param(torch.tensor(PADDING).float(), ["bool tensor", "torch.float32"], id="float"),
        pytest.param(torch.tensor(_flip(PADDING)), ["polarity is reversed", "padding is False"], id="reversed"),
        pytest.param(
            torch.tensor([[T, T, T, F_, F_], [T, T, T, T, T]]), ["off by one", "use < rather than <="], id="off-by-one"
        ),
        pytest.param(torch.tensor([[T, T, F_, F_, F_], [T, T, T, F_, F_]]), ["k < valid_lens[b]"], id="other"),
    ],
)
def test_check_padding_mask_hints(mask, words):
    assert_hint(check_padding_mask(mask), *words)


@pytest.mark.parametrize(
    "mask",
    [
        pytest.param(torch.tensor(CAUSAL), id="literal"),
        pytest.param(torch.tril(torch.ones(4, 4)).bool(), id="tril"),
    ],
)
def test_check_causal_mask_right_answer(mask):
    assert_correct(check_causal_mask(mask), "never the future")


@pytest.mark.parametrize(
    "mask, words",
    [
        pytest.param(None, ["replace None", "(4, 4) bool tensor"], id="none"),
        pytest.param(np.array(CAUSAL), ["torch.Tensor", "ndarray"], id="numpy"),
        pytest.param(torch.tensor(CAUSAL)[:3], ["expected shape (4, 4)", "got (3, 4)"], id="shape"),
        pytest.param(torch.tensor(CAUSAL).int(), ["bool tensor", "torch.int32"], id="int"),
        pytest.param(torch.tensor(CAUSAL).double(), ["bool tensor", "torch.float64"], id="float"),
        pytest.param(torch.tensor(_flip(CAUSAL)), ["polarity is reversed"], id="reversed"),
        pytest.param(torch.tensor(CAUSAL).T.contiguous(), ["transposed", "torch.tril"], id="transposed"),
        pytest.param(
            torch.tensor([[F_, F_, F_, F_], [T, F_, F_, F_], [T, T, F_, F_], [T, T, T, F_]]),
            ["keep the diagonal"],
            id="tril-minus-1",
        ),
        pytest.param(torch.ones(4, 4, dtype=torch.bool), ["row i must be True in columns 0..i"], id="other"),
    ],
)
def test_check_causal_mask_hints(mask, words):
    assert_hint(check_causal_mask(mask), *words)


@pytest.mark.parametrize(
    "mask",
    [
        pytest.param(torch.tensor(PADDING_CAUSAL), id="literal"),
        pytest.param(torch.tril(torch.ones(4, 4)).bool() & (torch.arange(4) < 3), id="tril-and-padding"),
    ],
)
def test_check_padding_causal_mask_right_answer(mask):
    assert_correct(check_padding_causal_mask(mask), "AND")


PADDING_ALONE = [[T, T, T, F_]] * 4
CAUSAL_OR_PADDING = [[T, T, T, F_], [T, T, T, F_], [T, T, T, F_], [T, T, T, T]]


@pytest.mark.parametrize(
    "mask, words",
    [
        pytest.param(None, ["replace None", "(4, 4) bool tensor"], id="none"),
        pytest.param(PADDING_CAUSAL, ["torch.Tensor", "list"], id="list"),
        pytest.param(torch.tensor([PADDING_CAUSAL]), ["expected shape (4, 4)", "got (1, 4, 4)"], id="3-D"),
        pytest.param(torch.tensor(PADDING_CAUSAL).long(), ["bool tensor", "torch.int64"], id="int"),
        pytest.param(torch.tensor(CAUSAL_OR_PADDING), ["OR lets a query see", "(&)"], id="or"),
        pytest.param(torch.tensor(CAUSAL), ["causal mask alone", "column 3"], id="causal-alone"),
        pytest.param(torch.tensor(PADDING_ALONE), ["padding mask alone", "torch.tril"], id="padding-alone"),
        pytest.param(torch.tensor(CAUSAL) & torch.tensor(PADDING_ALONE).T, ["column 3", "not row 3"], id="rows"),
        pytest.param(
            torch.tensor(PADDING_CAUSAL) & torch.tensor(PADDING_ALONE).T, ["column 3", "not row 3"], id="rows-too"
        ),
        pytest.param(
            torch.tensor(_flip(PADDING_CAUSAL)), ["combine the causal mask and the padding mask with &"], id="other"
        ),
    ],
)
def test_check_padding_causal_mask_hints(mask, words):
    assert_hint(check_padding_causal_mask(mask), *words)


# ----------------------------------------------------------------------------------------------
# check_key_padding_mask: nn.MultiheadAttention's key_padding_mask (True = ignore), valid lengths 3 and 5 of 5
# ----------------------------------------------------------------------------------------------

KEY_PADDING = [[F_, F_, F_, T, T], [F_, F_, F_, F_, F_]]


@pytest.mark.parametrize(
    "mask",
    [
        pytest.param(torch.tensor(KEY_PADDING), id="literal"),
        pytest.param(~torch.tensor([[T, T, T, F_, F_], [T, T, T, T, T]]), id="flipped"),
    ],
)
def test_check_key_padding_mask_right_answer(mask):
    assert_correct(checks.check_key_padding_mask(mask), "ignored")


@pytest.mark.parametrize(
    ("mask", "words"),
    [
        pytest.param(torch.tensor(_flip(KEY_PADDING)), ["polarity", "~"], id="course-polarity"),
        pytest.param(torch.tensor(KEY_PADDING).int(), ["bool", "key_padding_mask: True = ignore"], id="int"),
        pytest.param(torch.tensor(KEY_PADDING)[:1], ["shape"], id="shape"),
        pytest.param(torch.zeros(2, 5, dtype=torch.bool), ["flip it"], id="other"),
    ],
)
def test_check_key_padding_mask_hints(mask, words):
    assert_hint(checks.check_key_padding_mask(mask), *words)


# ----------------------------------------------------------------------------------------------
# check_masked_attention (build it): masked scaled dot-product attention against F.scaled_dot_product_attention
# ----------------------------------------------------------------------------------------------


def _masked_attention(
    queries,
    keys,
    values,
    mask,
    *,
    transpose=False,
    scale=None,
    reverse=False,
    fill=None,
    dim=-1,
    in_place=False,
    in_place_mask=False,
):
    """A learner's masked attention: right with the defaults, each keyword one typical mistake."""
    scale = queries.shape[-1] ** -0.5 if scale is None else scale
    scores = (keys @ queries.transpose(-2, -1) if transpose else queries @ keys.transpose(-2, -1)) * scale
    blocked = mask if reverse else ~mask
    if in_place:
        queries.mul_(1.0).add_(1.0)
    if in_place_mask:  # computes the right answer, then fills the caller's mask
        mask.fill_(True)
    if fill is not None:  # a finite fill, or -inf without handling empty rows
        return torch.softmax(scores.masked_fill(blocked, fill), dim=dim) @ values
    empty = blocked.all(-1, keepdim=True)  # (B, Q, 1)
    weights = torch.softmax(scores.masked_fill(blocked & ~empty, -math.inf), dim=dim)
    return weights.masked_fill(blocked | empty, 0.0) @ values


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(_masked_attention, id="output"),
        pytest.param(lambda q, k, v, m: (_masked_attention(q, k, v, m), None), id="output-and-weights"),
        pytest.param(lambda q, k, v, m: _masked_attention(q.double(), k.double(), v.double(), m), id="float64"),
    ],
)
def test_check_masked_attention_right_answer(fn):
    assert_correct(checks.check_masked_attention(fn), "not NaN")


def _no_mask(q, k, v, m):
    return _masked_attention(q, k, v, torch.ones_like(m))


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        pytest.param(3, ["expected a function"], id="not-callable"),
        pytest.param(lambda q, k, v, m: _masked_attention(q, k, v, m, transpose=True), ["transposed"], id="transposed"),
        pytest.param(lambda q, k, v, m: _masked_attention(q, k, v, m, scale=1.0), ["scale is missing"], id="no-scale"),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m, scale=1 / q.shape[-1]), ["sqrt(D), not by D"], id="scale-D"
        ),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m, scale=v.shape[-1] ** -0.5),
            ["not of the values"],
            id="scale-V",
        ),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m, reverse=True), ["polarity is reversed"], id="polarity"
        ),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m, fill=-math.inf), ["NaN", "nothing to attend to"], id="nan"
        ),
        pytest.param(lambda q, k, v, m: _masked_attention(q, k, v, m, fill=-1e6), ["-1e6", "zeros"], id="finite-fill"),
        pytest.param(lambda q, k, v, m: _masked_attention(q, k, v, m, dim=-2), ["dim=-1"], id="softmax-axis"),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m, in_place=True),
            ["changed its input queries in place", "masked_fill_"],
            id="in-place",
        ),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m, scale=8**-0.5),
            ["wrong scale", "D = 6", "sqrt(8)", "queries.shape[-1]"],
            id="scale-sqrt-8",
        ),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m, scale=1 / math.isqrt(q.shape[-1])),
            ["wrong scale", "D = 6", "sqrt(4)", "math.isqrt"],
            id="scale-isqrt",
        ),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m) * math.nan,
            ["your output holds NaN"],
            id="nan-everywhere",
        ),
        pytest.param(
            lambda q, k, v, m: (lambda w: (w / w.sum(-1, keepdim=True)) @ v)(
                torch.exp(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5) * m
            ),
            ["NaN on the row with nothing to attend to", "0/0"],
            id="nan-empty-row",
        ),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m, in_place_mask=True), ["mask in place"], id="mask"
        ),
        pytest.param(_no_mask, ["not applied"], id="no-mask"),
        pytest.param(lambda q, k, v, m: q @ k.transpose(-2, -1), ["expected shape"], id="shape"),
        pytest.param(lambda q, k, v, m: q @ k, ["raised RuntimeError", "keys.transpose"], id="raises"),
        pytest.param(lambda q, k, v, m: _masked_attention(q, k, v, m) + 1.0, ["already differ"], id="other"),
        pytest.param(
            lambda q, k, v, m: _masked_attention(q, k, v, m) + (~m).sum(-1, keepdim=True) * 0.1,
            ["with the mask"],
            id="other-masked",
        ),
    ],
)
def test_check_masked_attention_hints(fn, words):
    assert_hint(checks.check_masked_attention(fn), *words)


def test_check_masked_attention_cases_have_one_empty_row_and_partly_masked_rows():
    """The hidden cases hold one row with nothing to attend to; every other row sees some keys and misses some."""
    from attn_course.checks.masking import _attention_cases

    for q, _, v, mask in _attention_cases():
        empty = (~mask).all(-1)
        assert empty.sum() == 1
        assert mask[~empty].any(-1).all() and (~mask[~empty]).any(-1).all()
        assert q.shape[-1] != v.shape[-1]  # a scale by sqrt(V) differs from sqrt(D)


def test_check_masked_attention_hidden_sizes_differ_and_are_not_perfect_squares():
    """A scale written as a number (math.sqrt(8)) or by math.isqrt(D) must fail on some hidden case."""
    from attn_course.checks.masking import _attention_cases

    sizes = [q.shape[-1] for q, _, _, _ in _attention_cases()]
    assert len(set(sizes)) == len(sizes)
    assert all(math.isqrt(d) ** 2 != d for d in sizes)
    assert len({v.shape[-1] for _, _, v, _ in _attention_cases()}) > 1


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words of its cause
# ----------------------------------------------------------------------------------------------


def _attention_in_place(q, k, v, m):
    q /= q.shape[-1] ** 0.5  # scales the caller's queries
    return _masked_attention(q, k, v, m, scale=1.0)


def _attention_first_case_always(q, k, v, m):
    from attn_course.checks.masking import _attention_cases

    return _masked_attention(*_attention_cases()[0])  # the right output of one case, whatever the input


def _attention_weights(q, k, v, m):
    scores = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(~m, -math.inf)
    return torch.softmax(scores, -1).nan_to_num(0.0)  # (B, Q, K): the weights, not the output


ATTACKS = {
    "check_padding_mask": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", PADDING),
        attack("a NumPy array", "ndarray", np.array(PADDING)),
        attack("an integer 0/1 mask", "bool tensor", torch.tensor(PADDING).long()),
        attack("a float mask", "bool tensor", torch.tensor(PADDING).float()),
        attack("True = ignore", "polarity is reversed", torch.tensor(_flip(PADDING))),
        attack("<= instead of <", "off by one", torch.tensor([[T, T, T, F_, F_], [T, T, T, T, T]])),
        attack("transposed", "transposed", torch.tensor(PADDING).T),
        attack("padding at the start", "at the end", torch.tensor(PADDING).flip(1)),
        attack("the two lengths swapped", "valid lengths", torch.tensor(PADDING).flip(0)),
        attack("one sequence only", "(2, 5)", torch.tensor(PADDING)[:1]),
    ],
    "check_causal_mask": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", CAUSAL),
        attack("a NumPy array", "ndarray", np.array(CAUSAL)),
        attack(
            "an integer mask from torch.tril(torch.ones)", "bool tensor", torch.tril(torch.ones(4, 4, dtype=torch.long))
        ),
        attack("True = future, to be hidden", "polarity is reversed", torch.tensor(_flip(CAUSAL))),
        attack("upper triangle", "transposed", torch.tensor(CAUSAL).T.contiguous()),
        attack("diagonal left out", "keep the diagonal", torch.ones(4, 4, dtype=torch.bool).tril(-1)),
        attack("nothing hidden", "the future", torch.ones(4, 4, dtype=torch.bool)),
        attack("the size of the heatmap above, 3", "(4, 4)", torch.ones(3, 3, dtype=torch.bool).tril()),
        attack("with a batch axis", "got (1, 4, 4)", torch.ones(1, 4, 4, dtype=torch.bool).tril()),
    ],
    "check_padding_causal_mask": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", PADDING_CAUSAL),
        attack("an integer mask", "bool tensor", torch.tensor(PADDING_CAUSAL).long()),
        attack("OR instead of AND", "OR lets a query see", torch.tensor(CAUSAL_OR_PADDING)),
        attack("the causal mask alone", "causal mask alone", torch.tensor(CAUSAL)),
        attack("the padding mask alone", "padding mask alone", torch.tensor(PADDING_ALONE)),
        attack("padding on the rows", "not row 3", torch.tensor(CAUSAL) & torch.tensor(PADDING_ALONE).T),
        attack("True = ignore", "polarity is reversed", torch.tensor(_flip(PADDING_CAUSAL))),
        attack("transposed", "transposed", torch.tensor(PADDING_CAUSAL).T.contiguous()),
        attack(
            "valid length 2 of the padding exercise",
            "valid length",
            torch.tril(torch.ones(4, 4)).bool() & (torch.arange(4) < 2),
        ),
    ],
    "check_key_padding_mask": [
        attack("None left in place", "replace None", None),
        attack("a list", "list", KEY_PADDING),
        attack("a NumPy array", "ndarray", np.array(KEY_PADDING)),
        attack("the course's polarity", "polarity", torch.tensor(_flip(KEY_PADDING))),
        attack("an integer mask", "key_padding_mask: True = ignore", torch.tensor(KEY_PADDING).int()),
        attack("transposed", "transposed", torch.tensor(KEY_PADDING).T),
        attack("<= instead of <", "off by one", ~(torch.arange(5) <= torch.tensor([[3], [5]]))),
        attack(
            "the lengths of the padding exercise, 2 and 4",
            "valid lengths",
            ~(torch.arange(5) < torch.tensor([[2], [4]])),
        ),
        attack(
            "a float mask of -inf and 0", "bool", torch.zeros(2, 5).masked_fill(torch.tensor(KEY_PADDING), -math.inf)
        ),
        attack("nothing ignored", "flip it", torch.zeros(2, 5, dtype=torch.bool)),
    ],
    "check_masked_attention": [
        attack("None left in place", "replace None", None),
        attack("a string", "str", "attention"),
        attack(
            "mask polarity reversed",
            "polarity is reversed",
            lambda q, k, v, m: _masked_attention(q, k, v, m, reverse=True),
        ),
        attack("scores transposed", "transposed", lambda q, k, v, m: _masked_attention(q, k, v, m, transpose=True)),
        attack("no scale", "scale is missing", lambda q, k, v, m: _masked_attention(q, k, v, m, scale=1.0)),
        attack(
            "times sqrt(D)",
            "you multiplied",
            lambda q, k, v, m: _masked_attention(q, k, v, m, scale=q.shape[-1] ** 0.5),
        ),
        attack("softmax over the queries", "dim=-1", lambda q, k, v, m: _masked_attention(q, k, v, m, dim=-2)),
        attack("scales the queries in place", "changed its input queries in place", _attention_in_place),
        attack("finite fill -1e6", "finite fill", lambda q, k, v, m: _masked_attention(q, k, v, m, fill=-1e6)),
        attack(
            "NaN on the empty row",
            "NaN on the row with nothing to attend to",
            lambda q, k, v, m: _masked_attention(q, k, v, m, fill=-math.inf),
        ),
        attack("sqrt(8) written in", "sqrt(8)", lambda q, k, v, m: _masked_attention(q, k, v, m, scale=8**-0.5)),
        attack("the weights, not the output", "weights", _attention_weights),
        attack("the first case's output whatever the input", "earlier hidden case", _attention_first_case_always),
        attack("float16", "float16", lambda q, k, v, m: _masked_attention(q, k, v, m).half()),
        attack("a NumPy array", "ndarray", lambda q, k, v, m: _masked_attention(q, k, v, m).numpy()),
    ],
}
