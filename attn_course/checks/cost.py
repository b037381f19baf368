"""Checks for the exercises on what attention costs: the memory of its scores and a score's parameters (notebook 03),
the tiles that causal FlashAttention computes and the bytes it moves (notebook 10)."""

from __future__ import annotations

import math

from . import feedback as fb
from .feedback import Feedback

__all__ = ["check_attention_memory", "check_parameter_growth", "check_causal_tiles", "check_tiled_bytes"]

MIB = 2**20


def _two_numbers(answer, what: str) -> tuple[float, float] | Feedback:
    if answer is None:
        return fb.hint(f"replace None with {what}.")
    try:
        first, second = answer
        return float(first), float(second)
    except (TypeError, ValueError, RuntimeError):
        kind = fb.described(answer) if isinstance(answer, (list, tuple)) else type(answer).__name__
        return fb.hint(f"expected two numbers ({what}), got {kind}: {answer!r}.")


def check_attention_memory(answer) -> Feedback:
    """MiB of the (B, Q, K) scores and of additive attention's (B, Q, K, U) hidden tensor, float32,
    for B = 8, Q = K = 1024, U = 128: the pair ``(scores_mib, hidden_mib)``."""
    got = _two_numbers(answer, "(scores_mib, hidden_mib)")
    if isinstance(got, Feedback):
        return got
    scores, hidden = 8 * 1024 * 1024 * 4 / MIB, 8 * 1024 * 1024 * 128 * 4 / MIB  # 32, 4096

    def near(a, b):
        return math.isclose(a, b, rel_tol=1e-3)

    if near(got[0], scores) and near(got[1], hidden):
        return fb.ok("32 MiB of scores against 4096 MiB (4 GiB) of hidden units: U = 128 times more, for one layer.")
    if near(got[0], scores):  # the scores are right: what is off is the hidden tensor
        if near(got[1], scores):
            return fb.hint("the hidden tensor holds U = 128 numbers for every (query, key) pair, not one.")
        return fb.hint("the scores are right; the hidden tensor has shape (B, Q, K, U) = (8, 1024, 1024, 128).")
    if near(got[0], hidden) and near(got[1], scores):
        return fb.hint("the pair is swapped: the scores (B, Q, K) come first, then the hidden tensor (B, Q, K, U).")
    if near(got[0], scores * MIB):
        return fb.hint("these are in bytes; divide by 2**20 = 1,048,576 for MiB.")
    if near(got[0], scores * 2):
        return fb.hint("a float32 number takes 4 bytes, not 8 (that is float64).")
    if near(got[0], scores / 1024):
        return fb.hint("that is in GiB (2**30 bytes); the question asks for MiB, 2**20 bytes.")
    if near(got[0], scores / 4):
        return fb.hint("that counts numbers (in Mi); a float32 number takes 4 bytes.")
    if near(got[0], scores * MIB / 1e6):
        return fb.hint("a MiB is 2**20 = 1,048,576 bytes, not 10**6.")
    if near(got[0], scores / 8):
        return fb.hint("that is one sequence; the batch holds B = 8.")
    return fb.hint("bytes = B * Q * K (* U for the hidden tensor) * 4 for float32; divide by 2**20 for MiB.")


def check_parameter_growth(answer) -> Feedback:
    """Parameters at D = 512 with U fixed at 64: ``(additive, bilinear)`` for
    ``AdditiveAttention(key_size=D, query_size=D, num_hiddens=64)`` and a bilinear score ``M`` (D x D)."""
    got = _two_numbers(answer, "(additive, bilinear)")
    if isinstance(got, Feedback):
        return got
    d, units = 512, 64
    additive, bilinear = units * (2 * d + 1), d * d  # 65600, 262144
    if got == (additive, bilinear):
        return fb.ok(
            "65,600 against 262,144: U (2D + 1) grows linearly in D for a fixed U, D^2 quadratically; "
            "with U = 64 they are equal near D = 128 and the bilinear score costs more beyond."
        )
    if got == (bilinear, additive):
        return fb.hint("the pair is swapped: the additive count comes first, then the bilinear one.")
    if got == (units * (2 * 64 + 1), 64 * 64):
        return fb.hint("those are the counts at D = 64, the first row of the table; the question asks D = 512.")
    if got[0] == units * 2 * d:
        return fb.hint("W_q and W_k are counted; add w_v's U = 64 weights.")
    if got[0] == d * (2 * d + 1):
        return fb.hint("that is U = D; here U stays at 64 while D grows.")
    if got[0] == units * (2 * d + 1) + units + 1:
        return fb.hint("AdditiveAttention has no biases (bias=False in its three Linear layers).")
    if got[0] != additive:
        return fb.hint("additive: W_q (U x D) + W_k (U x D) + w_v (U) with U = 64, D = 512.")
    return fb.hint("the bilinear score q^T M k has one weight per entry of M, which is D x D.")


@fb.number_answer("the number of tiles computed")
def check_causal_tiles(answer: float) -> Feedback:
    """Causal self-attention over N = 1000 positions in blocks of 128: how many tiles are computed?"""
    blocks = math.ceil(1000 / 128)  # 8 blocks, the last one 104 long
    want = blocks * (blocks + 1) // 2
    if answer == want:
        return fb.ok(
            f"{blocks} blocks per side: {blocks} diagonal tiles and {blocks * (blocks - 1) // 2} below: "
            f"{want} of {blocks * blocks}, and {blocks * (blocks - 1) // 2} skipped."
        )
    if answer == blocks * blocks:
        return fb.hint("that is every tile; the tiles wholly above the diagonal hold no allowed pair and are skipped.")
    if answer == blocks * (blocks - 1) // 2:  # 28: also what floor(1000 / 128) = 7 blocks per side would give
        return fb.hint(
            f"{answer:g} is {blocks} x {blocks - 1} / 2, which comes two ways: the tiles below the diagonal only (or "
            f"the skipped ones; the diagonal tiles are computed too, with a mask), or {blocks - 1} blocks per side "
            f"from floor(1000 / 128) (the last, shorter block is still a block: ceil(1000 / 128) = {blocks})."
        )
    if answer == 1000 / 128 * (1000 / 128 + 1) / 2 or answer == (1000 // 128) * (1000 // 128 + 1) // 2:
        return fb.hint("the last block is shorter (1000 is not a multiple of 128) but still a block: ceil(1000 / 128).")
    if answer == 1000 * 1001 // 2:
        return fb.hint("that counts the pairs of positions (N (N + 1) / 2), not the tiles of 128 x 128 pairs.")
    if answer == blocks:
        return fb.hint(
            f"{blocks} is the number of blocks per side, not tiles: count the tiles on and below the diagonal."
        )
    if answer == blocks * blocks / 2:
        return fb.hint(
            f"{answer:g} is half of the {blocks * blocks} tiles, but the {blocks} diagonal tiles are computed whole, "
            f"with a mask: n (n + 1) / 2 = {blocks} x {blocks + 1} / 2."
        )
    whole = math.isfinite(answer) and 0 < answer < 1e12 and answer == int(answer)
    side = (math.isqrt(8 * int(answer) + 1) - 1) // 2 if whole else 0
    if side and side * (side + 1) // 2 == answer:  # n (n + 1) / 2 for another n: another block size or length
        sides = f"{side} block{'s' if side != 1 else ''} per side"
        return fb.hint(
            f"{answer:g} = n (n + 1) / 2 for {sides}; here there are ceil(1000 / 128) = {blocks} blocks per side "
            "(N = 1000 positions in blocks of 128)."
        )
    return fb.hint("count the blocks per side with ceil(N / b), then the tiles on and below the diagonal.")


@fb.number_answer("a number of bytes")
def check_tiled_bytes(answer: float) -> Feedback:
    """Bytes moved by the tiled pass for one head: N = 4096, d = 64, b = 128, float32 (``io_cost``'s model)."""
    n, d, b = 4096, 64, 128
    elements = 2 * n * d + 2 * math.ceil(n / b) * n * d
    want = 4 * elements
    if math.isclose(answer, want, rel_tol=1e-9):
        return fb.ok(
            f"{want:,} bytes (about {want / 2**20:.0f} MiB): K and V are read {n // b} times, once per "
            f"query block, against {4 * (4 * n * d + 4 * n * n) / 2**20:.0f} MiB for the materialised pass."
        )
    if math.isclose(answer, want / 2**20, rel_tol=1e-3) or math.isclose(answer, want / 1e6, rel_tol=1e-3):
        return fb.hint("that is the count in MiB (or MB); give it in bytes.")
    if math.isclose(answer, want, rel_tol=1e-2):
        return fb.hint("close: give the exact number of bytes, not a rounded one.")
    if math.isclose(answer, elements, rel_tol=1e-9):
        return fb.hint("that is a number of elements; float32 takes 4 bytes each.")
    if math.isclose(answer, 4 * 2 * math.ceil(n / b) * n * d, rel_tol=1e-9):
        return fb.hint("add reading Q once and writing the output once: 2 N d more elements.")
    if math.isclose(answer, 4 * 4 * n * d, rel_tol=1e-9):
        return fb.hint("K and V are read once per query block, not once in all: n = ceil(N / b) times.")
    if math.isclose(answer, 2 * elements, rel_tol=1e-9):
        return fb.hint("that counts 2 bytes per element, float16's size; float32 takes 4 bytes each.")
    if math.isclose(answer, 4 * (4 * n * d + 4 * n * n), rel_tol=1e-3):
        return fb.hint(
            "that is the materialised pass (the N x N scores and weights written and read back); the tiled pass never "
            "writes them: count Q, the output, and K and V once per query block."
        )
    reads = (answer / 4 - 2 * n * d) / (2 * n * d)  # how many times this count reads K and V
    if math.isfinite(reads) and reads >= 1 and reads == int(reads) and reads <= n and reads != math.ceil(n / b):
        return fb.hint(
            f"that reads K and V {reads:g} times, once per query block of about {math.ceil(n / reads)} positions; "
            f"here the blocks are b = {b} long, so ceil({n} / {b}) = {math.ceil(n / b)} times."
        )
    return fb.hint(
        "elements: 2 N d (Q in, output out) + 2 n N d (K and V for each of n = ceil(N / b) query blocks); then bytes."
    )
