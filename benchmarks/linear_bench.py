"""Linear attention: attn_course's linear_attention against PyTorch's fused kernel and the materialised softmax.

Time and peak memory at N = 1024, 4096 and 8192 (B = 1, H = 4, Q = K = N, D = V = 64, float32, no mask,
``elu + 1`` features), on one thread, as ``efficient_bench``: the fused kernel allocates one buffer per thread, so
one thread makes the memory the same everywhere. The materialised softmax is skipped at N = 8192, where its
(B, H, N, N) scores and weights would take 2 GiB.

* time: ``torch.utils.benchmark.Timer.blocked_autorange``, the statements in turn for a few rounds, each keeping its
  fastest round (as ``kernel_ratios``);
* peak memory: ``attn_course.peak_memory``, the largest total of live allocations of PyTorch's CPU allocator during
  one call; the inputs existed before and are not counted.

Targets: at N = 8192 linear attention is faster than the fused kernel, whose time grows like N^2, and its own time per
token is at most twice what it is at N = 1024 (linear in N, with room for caches and a busy machine).
``python benchmarks/linear_bench.py`` prints the table; ``bench.py`` adds it to ``results.md``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import markdown
import torch
import torch.nn.functional as F
from torch.utils.benchmark import Timer

import attn_course as ac

SIZES = [(1, 4, 1024, 64), (1, 4, 4096, 64), (1, 4, 8192, 64)]  # (B, H, N, D)
ROUNDS = 3
MATERIALISED_UP_TO = 4096  # the materialised softmax is skipped above this N (2 GiB at 8192)
TARGET_PER_TOKEN = 2.0  # linear attention's time per token at HEADLINE_N / at the smallest N, at most
HEADLINE_N = 8192  # the size the targets apply to


def materialised(q, k, v):
    """The formula as written: (B, H, N, N) scores and weights stored."""
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # (B, H, N, N)
    return weights @ v  # (B, H, N, D)


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


@dataclass
class Row:
    version: str
    size: tuple[int, int, int, int]
    seconds: float
    peak_bytes: int


def _versions(n: int) -> dict[str, str]:
    return {name: stmt for name, stmt in VERSIONS.items() if n <= MATERIALISED_UP_TO or "materialised" not in name}


def run(sizes=SIZES, rounds: int = ROUNDS, progress=None) -> list[Row]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rows = []
    try:
        for size in sizes:
            gen = torch.Generator().manual_seed(0)
            q, k, v = (torch.randn(*size, generator=gen) for _ in range(3))  # (B, H, N, D) each
            env = {"q": q, "k": k, "v": v, "F": F, "materialised": materialised, "linear": linear}
            versions = _versions(size[2])
            # like is compared with like: linear attention against the same formula with its (N, N) weights formed
            phi_q, phi_k = F.elu(q[:, :1, :256]) + 1, F.elu(k[:, :1, :256]) + 1
            direct = phi_q @ phi_k.transpose(-2, -1)  # (B, 1, 256, 256)
            want = (direct / direct.sum(-1, keepdim=True)) @ v[:, :1, :256]
            torch.testing.assert_close(linear(q[:, :1, :256], k[:, :1, :256], v[:, :1, :256]), want)
            best = dict.fromkeys(versions, math.inf)
            for round_ in range(rounds):
                if progress:
                    progress(f"linear attention: B, H, N, D = {size}, round {round_ + 1} of {rounds}")
                for name, stmt in versions.items():
                    timer = Timer(stmt=stmt, globals=env, num_threads=1)
                    best[name] = min(best[name], timer.blocked_autorange(min_run_time=0.3).median)
            for name, stmt in versions.items():
                peak = ac.peak_memory(lambda stmt=stmt, env=env: eval(stmt, env))  # noqa: S307 - our own statements
                rows.append(Row(name, size, best[name], peak))
    finally:
        torch.set_num_threads(threads)
    return rows


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
        table.append(
            [
                r.version,
                "B={}, H={}, N={}, D={}".format(*r.size),
                f"{r.seconds * 1000:.1f}",
                f"{r.peak_bytes / 2**20:.2f}",
                f"{ratio:.2f}",
                verdict or "(info)",
            ]
        )
    return table, misses


HEADER = [
    "version",
    "size",
    "time ms",
    "peak MB",
    "time / fused",
    f"linear: faster than fused, time per token <= {TARGET_PER_TOKEN:g}x, at N = {HEADLINE_N}",
]


def main() -> int:
    rows = run(progress=lambda message: print(f"  ... {message}", file=sys.stderr, flush=True))
    table, misses = verdicts(rows)
    print(markdown.table(HEADER, table))
    print(f"\nTargets missed: {', '.join(misses) if misses else 'none'}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
