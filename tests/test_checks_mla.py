"""attn_course.checks.mla, the check of notebook 09 on multi-head latent attention (scores from the latents):
"Correct" for a right answer, a hint for each mistake."""

import math

import pytest
import torch
from _check_helpers import assert_correct, assert_hint, attack

from attn_course.checks import check_absorbed_scores


def _absorbed(q, w_uk, latents):
    return torch.einsum("bhtd,hdc->bhtc", q, w_uk) @ latents.unsqueeze(1).transpose(-2, -1)


def _absorbed_in_place(q, w_uk, latents):
    latents.zero_()
    return _absorbed(q, w_uk, latents)


def test_check_absorbed_scores_right_answer():
    assert_correct(check_absorbed_scores(_absorbed), "every hidden case", "need no key")
    keys_built = lambda q, w, c: q @ torch.einsum("hdc,bkc->bhdk", w, c)  # noqa: E731  (the plain way passes too)
    feedback = check_absorbed_scores(keys_built)
    assert_correct(feedback, "equal q_h . (W_UK_h c_j)")
    assert "without building" not in feedback.message  # the praise does not claim what the answer may not do


@pytest.mark.parametrize(
    "answer, words",
    [
        (None, ["replace None"]),
        ("scores", ["expected a function"]),
        (lambda q, w, c: _absorbed(q, w, c).tolist(), ["must return a tensor", "list"]),
        (lambda q, w, c: _absorbed(q, w, c) / math.sqrt(q.shape[-1]), ["raw dot products"]),
        (lambda q, w, c: _absorbed(q, w, c).sum(1, keepdim=True).expand(-1, q.shape[1], -1, -1), ["own W_UK_h"]),
        (lambda q, w, c: _absorbed(q, w, c).transpose(-2, -1), ["expected scores of shape", "W_UK_h^T"]),
        (lambda q, w, c: _absorbed(q, w, c).round(decimals=2), ["rounded"]),
        (lambda q, w, c: _absorbed(q, w, c) * math.inf, ["infinity"]),
        (lambda q, w, c: _absorbed(q, w, c) + 1, ["differ from q_h"]),
        (lambda q, w, c: q @ w @ c.unsqueeze(1).transpose(-2, -1)[..., : q.shape[-1], :], ["raised"]),
        (_absorbed_in_place, ["in place", "latents"]),
    ],
)
def test_check_absorbed_scores_hints(answer, words):
    assert_hint(check_absorbed_scores(answer), *words)


# ----------------------------------------------------------------------------------------------
# Attack tables (tests/test_check_attacks.py runs them): plausible wrong answers, each with the words its hint must hold
# ----------------------------------------------------------------------------------------------


def _absorbed_head_zero(q, w_uk, latents):
    return torch.einsum("bhtd,dc->bhtc", q, w_uk[0]) @ latents.unsqueeze(1).transpose(-2, -1)  # one W_UK for all


def _absorbed_three_heads(q, w_uk, latents):
    c = latents.unsqueeze(1).expand(-1, 3, -1, -1)  # (B, 3, K, d_c): H = 3 written in, right only when H = 3
    return torch.einsum("bhtd,hdc->bhtc", q, w_uk) @ c.transpose(-2, -1)


ATTACKS = {
    "check_absorbed_scores": [
        attack("left as None", "replace None", None),
        attack("a string", "expected a function", "scores"),
        attack("a list", "list", lambda q, w, c: _absorbed(q, w, c).tolist()),
        attack(
            "scaled by 1/sqrt(d_h)", "raw dot products", lambda q, w, c: _absorbed(q, w, c) / math.sqrt(q.shape[-1])
        ),
        attack(
            "summed over the heads",
            "do not sum over the heads",
            lambda q, w, c: _absorbed(q, w, c).sum(1, keepdim=True).expand(-1, q.shape[1], -1, -1),
        ),
        attack("head 0's W_UK for every head", "W_UK[0]", _absorbed_head_zero),
        attack("(B, H, K, T): transposed", "transposed", lambda q, w, c: _absorbed(q, w, c).transpose(-2, -1)),
        attack("soft-maxed", "attention weights", lambda q, w, c: _absorbed(q, w, c).softmax(-1)),
        attack("rounded", "rounded", lambda q, w, c: _absorbed(q, w, c).round(decimals=2)),
        attack("H = 3 written in", "written in", _absorbed_three_heads),
        attack("zeroes the latents in place", "changed its input latents in place", _absorbed_in_place),
        attack("a NumPy array", "ndarray", lambda q, w, c: _absorbed(q, w, c).numpy()),
    ],
}
