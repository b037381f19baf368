"""Time and peak memory of a few attention statements, on one thread: the loop ``efficient_bench`` and ``linear_bench``
share.

* time: ``torch.utils.benchmark.Timer.blocked_autorange``, the statements in turn for a few rounds, each keeping its
  fastest round (as ``kernel_ratios``);
* peak memory: ``attn_course.peak_memory``, the largest total of live allocations of PyTorch's CPU allocator during
  one call; the inputs existed before and are not counted.

One thread: the fused kernel allocates one buffer per thread, so one thread makes the memory the same everywhere.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import markdown
import torch
from torch.utils.benchmark import Timer

import attn_course as ac


def materialised(q, k, v):
    """The formula as written: (B, H, N, N) scores and weights stored."""
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # (B, H, N, N)
    return weights @ v  # (B, H, N, D)


@dataclass
class Row:
    version: str
    size: tuple[int, int, int, int]
    seconds: float
    peak_bytes: int


def run(
    label: str,
    sizes,
    versions_at: Callable[[int], dict[str, str]],
    names: dict,
    check: Callable,
    rounds: int,
    min_run_time: float,
    progress=None,
) -> list[Row]:
    """For each (B, H, N, D) of ``sizes``: random q, k, v (seed 0), ``check(q, k, v)`` (like is compared with like),
    then every statement of ``versions_at(N)`` (name -> statement, run with q, k, v and ``names`` in scope) timed and
    measured."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rows = []
    try:
        for size in sizes:
            gen = torch.Generator().manual_seed(0)
            q, k, v = (torch.randn(*size, generator=gen) for _ in range(3))  # (B, H, N, D) each
            env = {**names, "q": q, "k": k, "v": v}
            check(q, k, v)
            versions = versions_at(size[2])
            best = dict.fromkeys(versions, math.inf)
            for round_ in range(rounds):
                if progress:
                    progress(f"{label}: B, H, N, D = {size}, round {round_ + 1} of {rounds}")
                for name, stmt in versions.items():
                    timer = Timer(stmt=stmt, globals=env, num_threads=1)
                    best[name] = min(best[name], timer.blocked_autorange(min_run_time=min_run_time).median)
            for name, stmt in versions.items():
                peak = ac.peak_memory(lambda stmt=stmt, env=env: eval(stmt, env))  # noqa: S307 - our own statements
                rows.append(Row(name, size, best[name], peak))
    finally:
        torch.set_num_threads(threads)
    return rows


def table_row(r: Row, ratio: float, verdict: str) -> list[str]:
    """A row of the report: version, size, ms, peak MB, a ratio and the verdict."""
    size = "B={}, H={}, N={}, D={}".format(*r.size)
    return [
        r.version,
        size,
        f"{r.seconds * 1000:.1f}",
        f"{r.peak_bytes / 2**20:.2f}",
        f"{ratio:.2f}",
        verdict or "(info)",
    ]


def main(run: Callable, verdicts: Callable, header: list[str]) -> int:
    """``python <benchmark>.py``: run it with progress on stderr, print its table and the targets it missed."""
    rows = run(progress=lambda message: print(f"  ... {message}", file=sys.stderr, flush=True))
    table, misses = verdicts(rows)
    print(markdown.table(header, table))
    print(f"\nTargets missed: {', '.join(misses) if misses else 'none'}.")
    return 0
