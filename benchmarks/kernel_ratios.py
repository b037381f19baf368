"""Attention kernels: attn_course against PyTorch's own operators, on the CPU, at a few sizes.

Heads fold into the batch for attn_course, whose functions take (B, Q, D): ``(B, H, Q, D)`` is viewed as
``(B * H, Q, D)``, the same memory PyTorch gets in four dimensions. Valid lengths are drawn in [K / 2, K]
(never 0: PyTorch's -inf mask turns an empty row into NaN where attn_course gives zeros); PyTorch gets the
equivalent boolean mask built beforehand, outside the timing, so it does strictly less work than
attn_course, which builds its mask from the lengths and checks them on every call.

Each statement is timed with ``torch.utils.benchmark.Timer.blocked_autorange``, all the statements of a size
in turn for a few rounds; each keeps its fastest round (the median of that round's blocks), the timing least
disturbed by other processes on the machine.

Usage (what ``bench.py`` does, in a process of its own so that its OpenMP settings stay its own):
``python kernel_ratios.py --threads N`` prints the comparisons as one JSON list.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils.benchmark import Timer

import attn_course as ac
from attn_course._validate import require_qkv

SIZES = [  # (B, H, Q = K, D)
    (2, 1, 10, 8),
    (4, 4, 64, 32),
    (8, 8, 256, 64),
    (8, 8, 1024, 64),
]
ROUNDS = 5  # alternating rounds of ours and PyTorch's
TARGET = 1.5  # ours / PyTorch's at most this


@dataclass
class Comparison:
    operation: str  # what is compared, in words
    reference: str  # PyTorch's side
    size: tuple[int, int, int, int]
    ours: float  # seconds per call
    theirs: float
    headline: bool  # one of the comparisons the target applies to

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs


def _inputs(batch: int, heads: int, length: int, d: int, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, length, d, generator=gen) for _ in range(3))  # (B, H, L, D) each
    lens = torch.randint(max(1, length // 2), length + 1, (batch,), generator=gen)  # (B,) in [K / 2, K]
    allowed = torch.arange(length) < lens[:, None, None, None]  # (B, 1, 1, K): True = may attend
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d)).reshape(batch * heads, length, length)  # (B * H, Q, K)
    return {
        "ac": ac,
        "require_qkv": require_qkv,
        "F": F,
        "torch": torch,
        "q": q,
        "k": k,
        "v": v,
        "q3": q.reshape(batch * heads, length, d),  # (B, H, Q, D) -> (B * H, Q, D): a view
        "k3": k.reshape(batch * heads, length, d),
        "v3": v.reshape(batch * heads, length, d),
        "lens3": lens.repeat_interleave(heads),  # (B * H,): one length per (sequence, head)
        "attn_mask": allowed.expand(batch, heads, 1, length),  # (B, H, 1, K), broadcast over the queries
        # The math kernel called directly takes an additive mask (F.scaled_dot_product_attention converts a
        # bool mask to this before calling it): 0 where a query may attend, -inf elsewhere.
        "float_mask": torch.zeros(batch, heads, 1, length).masked_fill(~allowed, float("-inf")),
        "blocked": ~allowed.expand(batch, heads, 1, length).reshape(batch * heads, 1, length),  # (B * H, 1, K)
        "scores": scores,
    }


# (operation, ours, PyTorch's reference, its name, headline). The two "(floor)" rows time a part of what any
# function that checks its inputs and returns the weights must do, against the whole fused kernel.
CASES = [
    (
        "scaled_dot_product_attention",
        "ac.scaled_dot_product_attention(q3, k3, v3)",
        "F.scaled_dot_product_attention(q, k, v)",
        "F.scaled_dot_product_attention (fused)",
        True,
    ),
    (
        "scaled_dot_product_attention",
        "ac.scaled_dot_product_attention(q3, k3, v3)",
        "torch.ops.aten._scaled_dot_product_attention_math(q, k, v)",
        "math path, returns weights too",
        False,
    ),
    (
        "scaled_dot_product_attention, valid_lens",
        "ac.scaled_dot_product_attention(q3, k3, v3, lens3)",
        "F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)",
        "F.scaled_dot_product_attention (fused), bool mask",
        True,
    ),
    (
        "scaled_dot_product_attention, valid_lens",
        "ac.scaled_dot_product_attention(q3, k3, v3, lens3)",
        "torch.ops.aten._scaled_dot_product_attention_math(q, k, v, attn_mask=float_mask)",
        "math path, returns weights too, bool mask",
        False,
    ),
    (
        "(floor) allocate and fill the weights only",
        "torch.empty_like(scores).fill_(0.0)",
        "F.scaled_dot_product_attention(q, k, v)",
        "F.scaled_dot_product_attention (fused)",
        False,
    ),
    (
        "(floor) input checks only",
        "require_qkv(q3, k3, v3)",
        "F.scaled_dot_product_attention(q, k, v)",
        "F.scaled_dot_product_attention (fused)",
        False,
    ),
    ("masked_softmax", "ac.masked_softmax(scores)", "torch.softmax(scores, -1)", "torch.softmax", True),
    (
        "masked_softmax, valid_lens",
        "ac.masked_softmax(scores, lens3)",
        "torch.softmax(scores.masked_fill(blocked, float('-inf')), -1)",
        "torch.softmax of masked_fill(-inf)",
        True,
    ),
]


def _best(stmt: str, env: dict, min_run_time: float) -> float:
    return (
        Timer(stmt=stmt, globals=env, num_threads=torch.get_num_threads())
        .blocked_autorange(min_run_time=min_run_time)
        .median
    )


def run(sizes=SIZES, rounds: int = ROUNDS, progress=None) -> list[Comparison]:
    """Time every case at every size; ``progress(str)`` is told what is being timed.

    At each size every distinct statement is timed once per round, all of them in turn, so that a burst of other
    work on the machine falls on all of them alike; each keeps its fastest round.
    """
    results = []
    with torch.inference_mode():
        for size in sizes:
            env = _inputs(*size)
            min_run_time = 0.05 if size[2] < 256 else 0.2
            statements = list(dict.fromkeys(stmt for _, ours, theirs, _, _ in CASES for stmt in (ours, theirs)))
            best = dict.fromkeys(statements, math.inf)
            for round_ in range(rounds):
                if progress:
                    progress(f"kernels: B, H, Q = K, D = {size}, round {round_ + 1} of {rounds}")
                for stmt in statements:
                    best[stmt] = min(best[stmt], _best(stmt, env, min_run_time))
            for operation, ours, theirs, reference, headline in CASES:
                results.append(Comparison(operation, reference, size, best[ours], best[theirs], headline))
    return results


def check_agreement(size=(2, 2, 16, 8)) -> None:
    """The compared calls compute the same numbers (so that the timings compare like with like)."""
    env = _inputs(*size)
    batch, heads, length, d = size
    out, weights = ac.scaled_dot_product_attention(env["q3"], env["k3"], env["v3"], env["lens3"])
    ref = F.scaled_dot_product_attention(env["q"], env["k"], env["v"], attn_mask=env["attn_mask"])
    torch.testing.assert_close(out, ref.reshape(batch * heads, length, d))
    _, ref_weights = torch.ops.aten._scaled_dot_product_attention_math(
        env["q"], env["k"], env["v"], attn_mask=env["float_mask"]
    )
    torch.testing.assert_close(weights, ref_weights.reshape(batch * heads, length, length))
    masked = ac.masked_softmax(env["scores"], env["lens3"])
    torch.testing.assert_close(masked, torch.softmax(env["scores"].masked_fill(env["blocked"], float("-inf")), -1))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="attn_course's attention kernels against PyTorch's")
    parser.add_argument("--threads", type=int, required=True, help="torch.set_num_threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    check_agreement()
    results = run(progress=lambda message: print(f"  ... {message}", file=sys.stderr, flush=True))
    json.dump([dataclasses.asdict(c) for c in results], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
