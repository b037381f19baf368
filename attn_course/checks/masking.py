"""Checks for the exercises on masking: padding and causal masks, masked attention (notebook 05)."""

from __future__ import annotations

import torch

from . import feedback as fb
from .feedback import Feedback

__all__ = [
    "check_padding_mask",
    "check_causal_mask",
    "check_padding_causal_mask",
    "check_key_padding_mask",
    "check_masked_attention",
]


def _bool_problem(mask, shape: tuple[int, ...], what: str, polarity: str) -> Feedback | None:
    problem = fb.tensor_problem(mask, shape, what)
    if problem is None and mask.dtype != torch.bool:
        return fb.hint(f"a mask is a bool tensor ({polarity}), got {mask.dtype}; compare with < or use .bool().")
    return problem


def _mask_answer(shape: tuple[int, ...], what: str, polarity: str = "True = may attend"):
    """The check runs only on a bool tensor of ``shape``; otherwise the answer gets ``_bool_problem``'s hint, which
    names the mask's ``polarity``."""
    return fb.answer_check(lambda mask: _bool_problem(mask, shape, what, polarity))


def _lengths(mask: torch.Tensor) -> list[int] | None:
    """The number of True at the start of each row when every row is True then False (a padding mask); else None."""
    counts = mask.sum(-1)  # (B,)
    if not torch.equal(mask, torch.arange(mask.shape[-1]) < counts.unsqueeze(-1)):
        return None
    return counts.tolist()


def _length_hint(mask: torch.Tensor, want: list[int], polarity: str) -> Feedback | None:
    """A hint naming the valid lengths the mask encodes when they are not ``want``; one for padding at the start."""
    if torch.equal(mask.flip(-1), torch.arange(mask.shape[-1]) < torch.tensor(want).unsqueeze(-1)):
        return fb.hint(
            f"the padding comes at the end of each sequence: positions 0 .. valid_len - 1 are valid ({polarity})."
        )
    got = _lengths(mask)
    if got is None or got == want or bool(mask.all()):  # all True: no lengths were used at all
        return None
    return fb.hint(
        f"your rows let the first {' and '.join(map(str, got))} positions be attended to; the valid lengths are "
        f"{' and '.join(map(str, want))}, in that order (position k of sequence b when k < valid_lens[b])."
    )


@_mask_answer((2, 5), "a (2, 5) bool tensor: one row per sequence, one column per position")
def check_padding_mask(mask) -> Feedback:
    """The (2, 5) padding mask of two sequences of valid lengths 2 and 4: ``True`` = may attend."""
    want = torch.arange(5) < torch.tensor([[2], [4]])
    if torch.equal(mask, want):
        return fb.ok("positions 0-1 of sequence 0 and 0-3 of sequence 1 may be attended to; the rest is padding.")
    if torch.equal(mask, ~want):
        return fb.hint("the polarity is reversed: in this course True means 'may attend', so padding is False.")
    if torch.equal(mask, torch.arange(5) <= torch.tensor([[2], [4]])):
        return fb.hint("off by one: a valid length of 2 means positions 0 and 1, so use < rather than <=.")
    hint = _length_hint(mask, [2, 4], "True = may attend")
    if hint is not None:
        return hint
    return fb.hint("position k of sequence b may be attended to when k < valid_lens[b].")


@_mask_answer((4, 4), "a (4, 4) bool tensor: rows are queries, columns keys")
def check_causal_mask(mask) -> Feedback:
    """The (4, 4) causal mask: query i may attend to keys 0..i."""
    want = torch.ones(4, 4, dtype=torch.bool).tril()
    if torch.equal(mask, want):
        return fb.ok("lower triangle, diagonal included: a position sees itself and the past, never the future.")
    if torch.equal(mask, ~want):
        return fb.hint("the polarity is reversed: True means 'may attend', and a query may attend to the past.")
    if torch.equal(mask, want.T):
        return fb.hint("transposed: rows are queries, so row i may be True up to column i (torch.tril).")
    if torch.equal(mask, torch.ones(4, 4, dtype=torch.bool).tril(-1)):
        return fb.hint("a position may attend to itself: keep the diagonal (tril(), not tril(-1)).")
    if bool(mask.all()):
        return fb.hint("all True lets every query see the future; row i must be True in columns 0..i and False after.")
    return fb.hint("row i must be True in columns 0..i and False after.")


@_mask_answer((4, 4), "a (4, 4) bool tensor: rows are queries, columns keys")
def check_padding_causal_mask(mask) -> Feedback:
    """Padding and causal combined, one sequence of 4 positions with valid length 3: (4, 4)."""
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    padding = (torch.arange(4) < 3).expand(4, 4)
    if torch.equal(mask, causal & padding):
        return fb.ok("a key must pass both masks: AND them. Column 3 (padding) is False for every query.")
    if torch.equal(mask, causal | padding):
        return fb.hint("OR lets a query see a key that either mask allows; a key must pass both (&).")
    if torch.equal(mask, causal):
        return fb.hint("that is the causal mask alone; the padded position (column 3) must be hidden too.")
    if torch.equal(mask, padding):
        return fb.hint("that is the padding mask alone; also hide the future (torch.tril).")
    if torch.equal(mask, ~(causal & padding)):
        return fb.hint(
            "the polarity is reversed: True means 'may attend'; combine the causal mask and the padding mask with &."
        )
    if torch.equal(mask, (causal & padding).T):
        return fb.hint(
            "transposed: rows are queries and columns keys; the causal part is lower-triangular (torch.tril)."
        )
    for length in range(5):
        if length != 3 and torch.equal(mask, causal & (torch.arange(4) < length)):
            return fb.hint(f"the valid length is 3 (columns 0 to 2), not {length}: only column 3 is padding.")
    if torch.equal(mask, causal & padding.T) or torch.equal(mask, causal & padding & padding.T):
        return fb.hint(
            "padding hides a key, so it masks column 3 (the padded key) for every query, not row 3: the padding mask "
            "varies along the last axis, the keys. (A padded query's output is simply not used.)"
        )
    return fb.hint("combine the causal mask and the padding mask with &.")


@_mask_answer((2, 5), "a (2, 5) bool tensor: one row per sequence", polarity="key_padding_mask: True = ignore")
def check_key_padding_mask(key_padding_mask) -> Feedback:
    """``nn.MultiheadAttention``'s ``key_padding_mask`` for valid lengths 3 and 5 of 5 positions: True = ignore."""
    may_attend = torch.arange(5) < torch.tensor([[3], [5]])
    if torch.equal(key_padding_mask, ~may_attend):
        return fb.ok("~ac.sequence_mask(valid_lens, K): PyTorch's key_padding_mask is True where a key is ignored.")
    if torch.equal(key_padding_mask, may_attend):
        return fb.hint(
            "that is the course's polarity (True = may attend); key_padding_mask wants True = ignore: use ~."
        )
    if torch.equal(key_padding_mask, ~(torch.arange(5) <= torch.tensor([[3], [5]]))):
        return fb.hint("off by one: a valid length of 3 keeps positions 0 to 2, so ignore positions 3 and 4 (>= 3).")
    hint = _length_hint(~key_padding_mask, [3, 5], "True = ignore marks the rest")
    if hint is not None:
        return hint
    return fb.hint("start from ac.sequence_mask(valid_lens, 5) and flip it: True must mark the padded positions.")


# ---- build it: masked scaled dot-product attention ------------------------------------------------------------

_CASES_SEED = 20_525  # private: the learner does not see the cases


def _attention(q, k, v, mask, *, transpose=False, scale=None, dim=-1):
    """The reference and its typical mistakes: weights exactly 0 where masked, zeros on a row with nothing allowed."""
    scores = k @ q.transpose(-2, -1) if transpose else q @ k.transpose(-2, -1)  # (B, Q, K); transposed: Q = K only
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    scores = scores * scale
    empty = (~mask).all(-1, keepdim=True)  # (B, Q, 1): nothing to attend to
    weights = torch.softmax(scores.masked_fill(~mask | empty, float("-inf")).masked_fill(empty, 0.0), dim=dim)
    weights = weights.masked_fill(~mask, 0.0)
    return weights @ v  # (B, Q, K) @ (B, K, V) -> (B, Q, V)


def _attention_cases():
    """Hidden cases: (queries, keys, values, mask) with random sizes, padding, a causal part and one empty row."""
    gen = torch.Generator().manual_seed(_CASES_SEED)
    cases = []
    # square first: a transposed score matrix keeps its shape. D differs from case to case and is never a perfect
    # square, so a scale written as a number (math.sqrt(8)) or by math.isqrt fails; D != V, so a scale by sqrt(V) can
    # be told from sqrt(D)
    for num_q, num_k, d, v in ((5, 5, 6, 3), (3, 6, 10, 4), (6, 4, 7, 2)):
        batch = 2
        q = torch.randn(batch, num_q, d, generator=gen)
        k = torch.randn(batch, num_k, d, generator=gen)
        val = torch.randn(batch, num_k, v, generator=gen)
        mask = torch.rand(batch, num_q, num_k, generator=gen) < 0.7  # True = may attend
        mask[:, :, 0] = True  # every row but one sees at least one key ...
        mask[:, :, -1] = False  # ... and misses at least one
        mask[1, 1] = False  # query 1 of sequence 1 has nothing to attend to
        cases.append((q, k, val, mask))
    return cases


@fb.function_answer(
    "your function attention(queries, keys, values, mask)", "a function attention(queries, keys, values, mask)"
)
def check_masked_attention(attention) -> Feedback:
    """Build it: ``attention(queries (B, Q, D), keys (B, K, D), values (B, K, V), mask (B, Q, K))`` -> (B, Q, V).

    ``mask`` is bool with ``True`` = may attend. Compared with ``torch.nn.functional.scaled_dot_product_attention``
    on hidden random cases, on the rows that have something to attend to; a row with nothing to attend to must be
    zeros (there ``F.scaled_dot_product_attention`` gives NaN in older PyTorch versions, zeros in newer ones).
    """
    shapes = []  # the output shapes of the cases passed so far
    for q, k, v, mask in _attention_cases():
        # the reference first, from the original inputs
        reference = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
        out, problem = fb.call_on_copies(attention, {"queries": q, "keys": k, "values": v, "mask": mask})
        if problem is not None:
            if "in place" in problem.message:
                return fb.hint(problem.message + " (An operation ending in _, such as masked_fill_, writes into it.)")
            return fb.hint(
                f"{problem.message} Scores are queries @ keys.transpose(-2, -1), shape (B, Q, K) = {tuple(mask.shape)}."
            )
        if isinstance(out, tuple) and len(out) == 2:  # (output, weights) is fine too
            out = out[0]
        want_shape = (*q.shape[:2], v.shape[-1])
        if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(mask.shape) != want_shape:
            return fb.hint(
                f"expected shape {want_shape}, got {tuple(mask.shape)}: that is the shape of the weights (B, Q, K); "
                "the output is weights @ values, (B, Q, V)."
            )
        problem = fb.first_hint(
            fb.earlier_shape(out, want_shape, shapes), fb.tensor_problem(out, want_shape, "the output (B, Q, V)")
        )
        if problem is not None:
            if isinstance(out, torch.Tensor) and q.shape[1] != k.shape[1] and out.shape[1] == k.shape[1]:
                return fb.hint("one row per key: the scores are transposed, use queries @ keys.transpose(-2, -1).")
            return problem
        out = out.detach().double()
        empty = (~mask).all(-1)  # (B, Q)
        if torch.isnan(out[empty]).any() and bool(torch.isfinite(out[~empty]).all()):
            return fb.hint(
                "NaN on the row with nothing to attend to (its softmax is 0/0): give that row zeros, e.g. fill "
                "its weights with 0 after the softmax."
            )
        if not torch.allclose(out[~empty], reference[~empty], atol=1e-5, rtol=1e-4):
            return _diagnose_attention(attention, out, q, k, v, mask, empty)
        if not torch.allclose(out[empty], torch.zeros_like(out[empty]), atol=1e-6):
            if torch.allclose(out[empty][0], v[1].double().mean(0), atol=1e-5):
                return fb.hint(
                    "the row with nothing to attend to averages every value: a finite fill such as -1e6 ties all "
                    "its scores. Its output must be zeros."
                )
            return fb.hint("the row with nothing to attend to must give zeros.")
        shapes.append(want_shape)
    return fb.ok(
        "matches F.scaled_dot_product_attention on every row with keys to attend to, and gives zeros (not NaN) on "
        "the row with nothing to attend to."
    )


def _diagnose_attention(attention, out, q, k, v, mask, empty) -> Feedback:
    """Which typical mistake the learner's function makes: first without a mask (every key allowed), where the
    scores, the scale and the softmax axis show alone, then with the mask, on the rows that have keys."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    full = torch.ones_like(mask)
    out_full, problem = fb.call_on_copies(attention, {"queries": q, "keys": k, "values": v, "mask": full})
    if isinstance(out_full, tuple):
        out_full = out_full[0]
    if problem is not None or not isinstance(out_full, torch.Tensor):
        out_full = None  # the masked comparison below still says something
    else:
        out_full = out_full.detach().double()

    def close(a, b) -> bool:
        return a.shape == b.shape and bool(torch.allclose(a, b, atol=1e-5, rtol=1e-4))

    if not bool(torch.isfinite(out).any()):  # nothing finite at all: no other hint would fit
        return fb.not_finite(out, "your output")
    if out_full is not None and not close(out_full, _attention(q64, k64, v64, full)):
        if torch.isnan(out_full).all() or close(out_full, torch.zeros_like(out_full)):
            return fb.hint(
                "with every key allowed (a mask of all True) your output is all zeros or NaN: the mask polarity is "
                "reversed. True means 'may attend', so fill where the mask is False."
            )
        d = q.shape[-1]
        mistakes = [
            (
                {"transpose": True},
                "the scores are transposed: score[b, i, j] = q_i . k_j = (queries @ keys.mT)[b, i, j].",
            ),
            ({"dim": -2}, "the softmax runs over the queries: normalise over the keys, dim=-1."),
            ({"scale": 1.0}, "the scale is missing: divide the scores by sqrt(D), D = queries.shape[-1]."),
            ({"scale": 1.0 / d}, "wrong scale: divide by sqrt(D), not by D."),
            ({"scale": v.shape[-1] ** -0.5}, "wrong scale: D is the size of the queries and keys, not of the values."),
            ({"scale": d**0.5}, "wrong scale: divide the scores by sqrt(D); you multiplied."),
        ]
        for kwargs, hint in mistakes:
            if (q.shape[1] == k.shape[1] or "transpose" not in kwargs) and close(
                out_full, _attention(q64, k64, v64, full, **kwargs)
            ):
                return fb.hint(hint)
        for size in range(1, 129):  # a scale by sqrt of a fixed number, or by math.isqrt(D)
            if size != d and close(out_full, _attention(q64, k64, v64, full, scale=size**-0.5)):
                return fb.hint(
                    f"wrong scale: these queries have D = {d}, so divide the scores by sqrt({d}) = {d**0.5:.4f}; "
                    f"yours are divided by sqrt({size}) = {size**0.5:.4g}. Read D from queries.shape[-1], and use "
                    "math.sqrt (or ** 0.5), not a fixed number nor math.isqrt: the hidden cases have other sizes."
                )
        problem = fb.not_finite(out_full, "with every key allowed (a mask of all True), your output")
        if problem is not None:
            return problem
        return fb.hint("without any mask your outputs already differ from F.scaled_dot_product_attention.")
    flipped = ~mask
    both = ~empty & ~flipped.all(-1)  # rows with keys under both polarities
    if close(out[both], _attention(q64, k64, v64, flipped)[both]):
        return fb.hint("the mask polarity is reversed: True means 'may attend', so fill where the mask is False.")
    if close(out[~empty], _attention(q64, k64, v64, full)[~empty]):
        return fb.hint("the mask is not applied: fill the scores where the mask is False with -inf before the softmax.")
    if not torch.isfinite(out[~empty]).all():
        return fb.hint("NaN or infinity on a row that has keys to attend to; check the mask and the fill value.")
    return fb.hint(
        "with the mask, the outputs differ from F.scaled_dot_product_attention on rows with keys to attend to."
    )
