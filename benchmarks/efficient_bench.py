"""Efficient attention: attn_course's flash_attention against PyTorch's fused kernel and the materialised formula.

Time and peak memory at N = 1024 and 4096 (B = 1, H = 4, Q = K = N, D = 64, float32, no mask), on one thread:
the tiled loop makes many small calls, which a second thread only slows on a busy machine, and the fused kernel
allocates one buffer per thread, so one thread makes the memory the same everywhere.

Time (the fastest of a few rounds of ``Timer.blocked_autorange``) and peak memory (``attn_course.peak_memory``, from
the profiler's allocation and free events) as ``benchmarks/measure.py`` takes them.

Target: flash_attention's peak within 2x of the fused kernel's at N = 4096, where the materialised version needs more
than 10x. ``python benchmarks/efficient_bench.py`` prints the table; ``bench.py`` adds it to ``results.md``.
"""

from __future__ import annotations

import sys

import measure
import torch
import torch.nn.functional as F
from measure import Row, materialised, table_row

import attn_course as ac

SIZES = [(1, 4, 1024, 64), (1, 4, 4096, 64)]  # (B, H, N, D)
BLOCK = 64  # flash_attention's default block size
ROUNDS = 3
TARGET_FLASH = 2.0  # flash_attention's peak / the fused kernel's, at most
TARGET_MATERIALISED = 10.0  # the materialised version's peak / the fused kernel's, more than
HEADLINE_N = 4096  # the size the targets apply to


VERSIONS = {  # name -> statement, run with q, k, v in scope
    "materialised softmax(QK^T/sqrt(D)) V": "materialised(q, k, v)",
    "F.scaled_dot_product_attention (fused)": "F.scaled_dot_product_attention(q, k, v)",
    f"ac.flash_attention (block {BLOCK})": f"ac.flash_attention(q, k, v, {BLOCK})",
}


def _check(q, k, v) -> None:
    want = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(ac.flash_attention(q, k, v, BLOCK), want)
    torch.testing.assert_close(materialised(q, k, v), want)


def run(sizes=SIZES, rounds: int = ROUNDS, progress=None) -> list[Row]:
    names = {"F": F, "ac": ac, "materialised": materialised}
    return measure.run("efficient attention", sizes, lambda n: VERSIONS, names, _check, rounds, 0.5, progress)


def verdicts(rows: list[Row]) -> tuple[list[list[str]], list[str]]:
    """Table rows (version, size, ms, peak MB, peak / fused, verdict) and the targets missed."""
    table, misses = [], []
    fused = {r.size: r.peak_bytes for r in rows if "fused" in r.version}
    for r in rows:
        ratio = r.peak_bytes / fused[r.size]
        verdict = ""
        if r.size[2] == HEADLINE_N and "flash" in r.version:
            verdict = "pass" if ratio <= TARGET_FLASH else "MISS"
        elif r.size[2] == HEADLINE_N and "materialised" in r.version:
            verdict = "pass" if ratio > TARGET_MATERIALISED else "MISS"
        if verdict == "MISS":
            misses.append(f"{r.version} at N = {r.size[2]}")
        table.append(table_row(r, ratio, verdict))
    return table, misses


HEADER = ["version", "size", "time ms", "peak MB", "peak / fused", "flash <= 2x, materialised > 10x"]


if __name__ == "__main__":
    sys.exit(measure.main(run, verdicts, HEADER))
