"""Checks for the exercises of notebook 10 (efficient attention)."""

from __future__ import annotations

import math

import torch

from ._feedback import Feedback, _function_answer, _hint, _number_answer, _ok

__all__ = ["check_online_step", "check_causal_tiles", "check_tiled_bytes"]


def _reference_step(running_max, running_sum, block):
    new_max = torch.maximum(running_max, block.amax(dim=-1))  # (R,)
    new_sum = running_sum * torch.exp(running_max - new_max) + torch.exp(block - new_max.unsqueeze(-1)).sum(-1)
    return new_max, new_sum


def _cases() -> list[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Hidden cases: (what, running_max (R,), running_sum (R,), block (R, b)), float64."""
    gen = torch.Generator().manual_seed(1234)
    cases = []
    block = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    cases.append(
        (
            "the first block",
            torch.full((5,), -math.inf, dtype=torch.float64),
            torch.zeros(5, dtype=torch.float64),
            block,
        )
    )
    for scale, what in ((1.0, "scores near 0"), (1e4, "scores of size 1e4")):
        old = torch.randn(6, 3, generator=gen, dtype=torch.float64) * scale
        m, s = _reference_step(
            torch.full((6,), -math.inf, dtype=torch.float64), torch.zeros(6, dtype=torch.float64), old
        )
        new = torch.randn(6, 5, generator=gen, dtype=torch.float64) * scale
        new[:3] += 3.0 * scale  # rows 0-2: the new block raises the maximum; rows 3-5 mostly not
        cases.append((what, m, s, new))
    return cases


def _mistakes(running_max, running_sum, block, new_max):
    """(what a common mistake computes for new_sum, the hint that names it)."""
    fresh = torch.exp(block - new_max.unsqueeze(-1)).sum(-1)  # (R,)
    rescale = torch.exp(running_max - new_max)  # (R,)
    return [
        (
            running_sum + fresh,
            "the old sum is not rescaled: it was taken against the old maximum, so multiply it by "
            "exp(running_max - new_max) when the maximum rises.",
        ),
        (
            running_sum * rescale + torch.exp(block - running_max.unsqueeze(-1)).sum(-1),
            "exponentiate the block against the new maximum, exp(block - new_max), not the old one (on the first "
            "block the old one is -inf).",
        ),
        (
            running_sum * torch.exp(new_max - running_max) + fresh,
            "the rescaling is inverted: the old sum shrinks by exp(running_max - new_max) <= 1.",
        ),
        (
            running_sum * rescale + torch.exp(block).sum(-1),
            "subtract new_max before exp: exp(block) overflows for scores of 1e4; exp(block - new_max) <= 1 cannot.",
        ),
    ]


@_function_answer("your function step(running_max, running_sum, block)", "a function")
def check_online_step(step) -> Feedback:
    """Build it: ``step(running_max, running_sum, block) -> (new_max, new_sum)``, one update of the online softmax.

    ``running_max`` and ``running_sum`` are (R,), ``block`` is (R, b); checked on hidden random cases (the first
    block, with ``running_max = -inf``; a block that raises the maximum and one that does not; scores of 1e4).
    """
    for what, running_max, running_sum, block in _cases():
        inputs = (running_max.clone(), running_sum.clone(), block.clone())
        try:
            result = step(*inputs)
        except Exception as error:  # noqa: BLE001 - any failure of the learner's code becomes a hint
            return _hint(f"your function raised {type(error).__name__} on {what}: {error}")
        if isinstance(result, tuple) and any(t is None for t in result):
            return _hint("replace the None placeholders: new_max and new_sum must be tensors of shape (R,).")
        if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)):
            return _hint("return two tensors: (new_max, new_sum), each of shape (R,).")
        new_max, new_sum = result
        rows = (running_max.shape[0],)
        if tuple(new_max.shape) != rows or tuple(new_sum.shape) != rows:
            return _hint(
                f"new_max and new_sum must have shape {rows} (one per row), got {tuple(new_max.shape)} and "
                f"{tuple(new_sum.shape)}; reduce the block over its last axis (dim=-1)."
            )
        if not (torch.equal(inputs[0], running_max) and torch.equal(inputs[1], running_sum)):
            return _hint("your function changed running_max or running_sum in place; return new tensors instead.")
        want_max, want_sum = _reference_step(running_max, running_sum, block)
        if not torch.allclose(new_max.double(), want_max, rtol=1e-6, atol=1e-6):
            return _hint("new_max is off: it is the larger of running_max and the block's largest score, per row.")
        if torch.allclose(new_sum.double(), want_sum, rtol=1e-6):
            continue
        with torch.no_grad():
            candidates = _mistakes(running_max, running_sum, block, want_max)
        for candidate, hint in candidates:
            if torch.allclose(new_sum.double(), candidate, rtol=1e-9, equal_nan=True):
                return _hint(hint)
        if not bool(torch.isfinite(new_sum).all()):
            return _hint(f"new_sum has inf or NaN on {what}: subtract new_max before exp, so that exp(...) <= 1.")
        return _hint(
            f"new_sum is off on {what}: new_sum = running_sum * exp(running_max - new_max) + sum(exp(block - new_max))."
        )
    return _ok(
        "the running maximum and sum match on every hidden case, including the first block and scores of 1e4: "
        "this is the update inside online_softmax and flash_attention."
    )


@_number_answer("the number of tiles computed")
def check_causal_tiles(answer: float) -> Feedback:
    """Causal self-attention over N = 1000 positions in blocks of 128: how many tiles are computed?"""
    blocks = math.ceil(1000 / 128)  # 8 blocks, the last one 104 long
    want = blocks * (blocks + 1) // 2
    if answer == want:
        return _ok(
            f"{blocks} blocks per side: {blocks} diagonal tiles and {blocks * (blocks - 1) // 2} below: "
            f"{want} of {blocks * blocks}, and {blocks * (blocks - 1) // 2} skipped."
        )
    if answer == blocks * blocks:
        return _hint("that is every tile; the tiles wholly above the diagonal hold no allowed pair and are skipped.")
    if answer == blocks * (blocks - 1) // 2:
        return _hint(
            "that counts the tiles below the diagonal only, or the skipped ones; the diagonal tiles are "
            "computed too, with a mask."
        )
    if answer == 1000 / 128 * (1000 / 128 + 1) / 2 or answer == (1000 // 128) * (1000 // 128 + 1) // 2:
        return _hint("the last block is shorter (1000 is not a multiple of 128) but still a block: ceil(1000 / 128).")
    return _hint("count the blocks per side with ceil(N / b), then the tiles on and below the diagonal.")


@_number_answer("a number of bytes")
def check_tiled_bytes(answer: float) -> Feedback:
    """Bytes moved by the tiled pass for one head: N = 4096, d = 64, b = 128, float32 (``io_cost``'s model)."""
    n, d, b = 4096, 64, 128
    elements = 2 * n * d + 2 * math.ceil(n / b) * n * d
    want = 4 * elements
    if math.isclose(answer, want, rel_tol=1e-9):
        return _ok(
            f"{want:,} bytes (about {want / 2**20:.0f} MB): K and V are read {n // b} times, once per "
            f"query block, against {4 * (4 * n * d + 4 * n * n) / 2**20:.0f} MB for the materialised pass."
        )
    if math.isclose(answer, elements, rel_tol=1e-9):
        return _hint("that is a number of elements; float32 takes 4 bytes each.")
    if math.isclose(answer, 4 * 2 * math.ceil(n / b) * n * d, rel_tol=1e-9):
        return _hint("add reading Q once and writing the output once: 2 N d more elements.")
    if math.isclose(answer, 4 * 4 * n * d, rel_tol=1e-9):
        return _hint("K and V are read once per query block, not once in all: n = ceil(N / b) times.")
    return _hint(
        "elements: 2 N d (Q in, output out) + 2 n N d (K and V for each of n = ceil(N / b) query blocks); then bytes."
    )
