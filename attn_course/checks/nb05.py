"""Checks for the exercises of notebook 05 (masking and attention heatmaps)."""

from __future__ import annotations

import torch

from ._feedback import Feedback, _hint, _ok, _tensor_problem

__all__ = ["check_padding_mask", "check_causal_mask", "check_padding_causal_mask"]


def _bool_problem(mask, shape: tuple[int, ...], what: str) -> Feedback | None:
    problem = _tensor_problem(mask, shape, what)
    if problem is not None:
        return problem
    if mask.dtype != torch.bool:
        return _hint(f"a mask is a bool tensor (True = may attend), got {mask.dtype}; compare with < or use .bool().")
    return None


def check_padding_mask(mask) -> Feedback:
    """The (2, 5) padding mask of two sequences of valid lengths 2 and 4: ``True`` = may attend."""
    problem = _bool_problem(mask, (2, 5), "a (2, 5) bool tensor: one row per sequence, one column per position")
    if problem is not None:
        return problem
    want = torch.arange(5) < torch.tensor([[2], [4]])
    if torch.equal(mask, want):
        return _ok("positions 0-1 of sequence 1 and 0-3 of sequence 2 may be attended to; the rest is padding.")
    if torch.equal(mask, ~want):
        return _hint("the polarity is reversed: in this course True means 'may attend', so padding is False.")
    if torch.equal(mask, torch.arange(5) <= torch.tensor([[2], [4]])):
        return _hint("off by one: a valid length of 2 means positions 0 and 1, so use < rather than <=.")
    return _hint("position k of sequence b may be attended to when k < valid_lens[b].")


def check_causal_mask(mask) -> Feedback:
    """The (4, 4) causal mask: query i may attend to keys 0..i."""
    problem = _bool_problem(mask, (4, 4), "a (4, 4) bool tensor: rows are queries, columns keys")
    if problem is not None:
        return problem
    want = torch.ones(4, 4, dtype=torch.bool).tril()
    if torch.equal(mask, want):
        return _ok("lower triangle, diagonal included: a position sees itself and the past, never the future.")
    if torch.equal(mask, ~want):
        return _hint("the polarity is reversed: True means 'may attend', and a query may attend to the past.")
    if torch.equal(mask, want.T):
        return _hint("transposed: rows are queries, so row i may be True up to column i (torch.tril).")
    if torch.equal(mask, torch.ones(4, 4, dtype=torch.bool).tril(-1)):
        return _hint("a position may attend to itself: keep the diagonal (tril(), not tril(-1)).")
    return _hint("row i must be True in columns 0..i and False after.")


def check_padding_causal_mask(mask) -> Feedback:
    """Padding and causal combined, one sequence of 4 positions with valid length 3: (4, 4)."""
    problem = _bool_problem(mask, (4, 4), "a (4, 4) bool tensor: rows are queries, columns keys")
    if problem is not None:
        return problem
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    padding = (torch.arange(4) < 3).expand(4, 4)
    if torch.equal(mask, causal & padding):
        return _ok("a key must pass both masks: AND them. Column 4 (padding) is False for every query.")
    if torch.equal(mask, causal | padding):
        return _hint("OR lets a query see a key that either mask allows; a key must pass both (&).")
    if torch.equal(mask, causal):
        return _hint("that is the causal mask alone; the padded position (column 4) must be hidden too.")
    if torch.equal(mask, padding):
        return _hint("that is the padding mask alone; also hide the future (torch.tril).")
    return _hint("combine the causal mask and the padding mask with &.")
