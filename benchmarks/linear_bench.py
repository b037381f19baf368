"""Linear attention: attn_course's linear_attention against PyTorch's fused kernel and the materialised softmax.

Time and peak memory at N = 1024, 4096 and 8192 (B = 1, H = 4, Q = K = N, D = V = 64, float32, no mask,
``elu + 1`` features), on one thread, as ``efficient_bench``: the fused kernel allocates one buffer per thread, so
one thread makes the memory the same everywhere. The materialised softmax is skipped at N = 8192, where its
(B, H, N, N) scores and weights would take 2 GiB.

Time (the fastest of a few rounds of ``Timer.blocked_autorange``) and peak memory (``attn_course.peak_memory``, from
the profiler's allocation and free events) as ``benchmarks/measure.py`` takes them.

Targets: at N = 8192 linear attention is faster than the fused kernel, whose time grows like N^2, and its own time per
token is at most twice what it is at N = 1024 (linear in N, with room for caches and a busy machine).
``python benchmarks/linear_bench.py`` prints the table; ``bench.py`` adds it to ``results.md``.
"""

from __future__ import annotations

import sys

import measure
import torch
import torch.nn.functional as F
from measure import Row, materialised, table_row

import attn_course as ac

SIZES = [(1, 4, 1024, 64), (1, 4, 4096, 64), (1, 4, 8192, 64)]  # (B, H, N, D)
ROUNDS = 3
MATERIALISED_UP_TO = 4096  # the materialised softmax is skipped above this N (2 GiB at 8192)
TARGET_PER_TOKEN = 2.0  # linear attention's time per token at HEADLINE_N / at the smallest N, at most
HEADLINE_N = 8192  # the size the targets apply to


def linear(q, k, v):
    """``ac.linear_attention`` on (B, H, N, D): the heads folded into the batch, (B H, N, D)."""
    b, h, n, d = q.shape
    out = ac.linear_attention(*(t.reshape(b * h, n, -1) for t in (q, k, v)))  # (B H, N, D)
    return out.reshape(b, h, n, -1)


VERSIONS = {  # name -> statement, run with q, k, v in scope
    "materialised softmax(QK^T/sqrt(D)) V": "materialised(q, k, v)",
    "F.scaled_dot_product_attention (fused)": "F.scaled_dot_product_attention(q, k, v)",
    "ac.linear_attention (elu + 1)": "linear(q, k, v)",
}


def _versions(n: int) -> dict[str, str]:
    return {name: stmt for name, stmt in VERSIONS.items() if n <= MATERIALISED_UP_TO or "materialised" not in name}


def _check(q, k, v) -> None:
    """Linear attention against the same formula with its (N, N) weights formed, on one head's first 256 tokens."""
    q, k, v = q[:, :1, :256], k[:, :1, :256], v[:, :1, :256]
    direct = (F.elu(q) + 1) @ (F.elu(k) + 1).transpose(-2, -1)  # (B, 1, 256, 256)
    torch.testing.assert_close(linear(q, k, v), (direct / direct.sum(-1, keepdim=True)) @ v)


def run(sizes=SIZES, rounds: int = ROUNDS, progress=None) -> list[Row]:
    names = {"F": F, "materialised": materialised, "linear": linear}
    return measure.run("linear attention", sizes, _versions, names, _check, rounds, 0.3, progress)


def verdicts(rows: list[Row]) -> tuple[list[list[str]], list[str]]:
    """Table rows (version, size, ms, peak MB, time / fused, verdict) and the targets missed."""
    table, misses = [], []
    fused = {r.size: r.seconds for r in rows if "fused" in r.version}
    linear_times = {r.size[2]: r.seconds for r in rows if "linear" in r.version}
    lengths = sorted(linear_times)
    for r in rows:
        ratio = r.seconds / fused[r.size]
        verdict = ""
        if r.size[2] == HEADLINE_N and "linear" in r.version:
            per_token = (linear_times[lengths[-1]] / lengths[-1]) / (linear_times[lengths[0]] / lengths[0])
            verdict = "pass" if ratio < 1 and per_token <= TARGET_PER_TOKEN else "MISS"
        if verdict == "MISS":
            misses.append(f"{r.version} at N = {r.size[2]}")
        table.append(table_row(r, ratio, verdict))
    return table, misses


HEADER = [
    "version",
    "size",
    "time ms",
    "peak MB",
    "time / fused",
    f"linear: faster than fused, time per token <= {TARGET_PER_TOKEN:g}x, at N = {HEADLINE_N}",
]


if __name__ == "__main__":
    sys.exit(measure.main(run, verdicts, HEADER))
